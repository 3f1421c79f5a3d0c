/* A decoder layer's tensors, written once: each row names a tensor under its Hugging Face name,
 * its shape from the config, the or1_layer field it fills and when the architecture has it.
 * The parameter layout, loading and saving, random initialisation and the placed model's views
 * (fp32, bf16, a sharded model's fp32 vectors) all walk this table, so a new tensor is a row
 * here and its use in the decoder. Private to src/model. */
#ifndef OR1_MODEL_ARCH_H
#define OR1_MODEL_ARCH_H

#include "or1/model.h"

#include <stddef.h>

/* A dimension of a tensor, read off the config. */
typedef enum { DIM_NONE, DIM_HIDDEN, DIM_Q, DIM_KV, DIM_INTER, DIM_HEAD } layer_dim;

/* What a tensor is: a matrix (a bf16 copy in bf16 precision) or a vector (a norm weight or a
 * bias: kept in fp32 by a sharded model; 1 or 0 at random initialisation). */
typedef enum { T_MATRIX, T_NORM, T_BIAS } tensor_kind;

/* The fields of a decoder layer, one row each in or1_layer order: the field's name and its
 * or1_layer_field. The bf16 views (layer_bf16, dmodel.h) are made from these rows, and arch.c
 * checks at compile time that the public or1_layer and or1_layer_field (include/or1/model.h)
 * agree with them row for row. */
#define LAYER_FIELDS(X)                                                                          \
    X(ln1, OR1_L_LN1)                                                                            \
    X(wqkv, OR1_L_WQKV)                                                                          \
    X(bqkv, OR1_L_BQKV)                                                                          \
    X(qnorm, OR1_L_QNORM)                                                                        \
    X(knorm, OR1_L_KNORM)                                                                        \
    X(wo, OR1_L_WO)                                                                              \
    X(bo, OR1_L_BO)                                                                              \
    X(ln2, OR1_L_LN2)                                                                            \
    X(wgu, OR1_L_WGU)                                                                            \
    X(wd, OR1_L_WD)

/* The optional features of a decoder layer, one row each: the feature's name and the
 * or1_model_config flag that turns it on. tensor_when and model_layer_feature are made from these
 * rows, and both a layer's tensors (MODEL_LAYER_TENSORS) and its saved activations (LAYER_ACTS,
 * dmodel.h) say by one of them when they are there. */
#define LAYER_FEATURES(X)                                                                        \
    X(HAS_QKV_BIAS, qkv_bias)                                                                    \
    X(HAS_O_BIAS, o_bias)                                                                        \
    X(HAS_QK_NORM, qk_norm)

/* When an architecture has a tensor (or an activation): always, or with a feature's flag. */
typedef enum {
    HAS_ALWAYS,
#define X(name, flag) name,
    LAYER_FEATURES(X)
#undef X
} tensor_when;

/* One row: the name after "model.layers.N.", its shape, the or1_layer field it starts (or
 * NO_FIELD: it follows the row before it in the same buffer, as k and v follow q), its kind,
 * when it is present, its name after "blk.N." in a GGUF file, and whether llama.cpp's converter
 * permuted its rows within each head (the RoPE halves interleaved: Llama's q and k). */
typedef struct {
    const char *name;
    layer_dim d0, d1;
    int field;
    tensor_kind kind;
    tensor_when when;
    const char *gguf;
    bool rope_rows;
} layer_tensor;

enum { NO_FIELD = -1 };

extern const layer_tensor MODEL_LAYER_TENSORS[];
extern const int MODEL_N_LAYER_TENSORS;

/* Whether a layer under c has what comes with w (true for HAS_ALWAYS). */
bool model_layer_feature(const or1_model_config *c, tensor_when w);
/* Whether the architecture of c has row t. */
bool model_layer_has(const or1_model_config *c, const layer_tensor *t);
/* The size of dimension d under c (0 for DIM_NONE). */
int64_t model_layer_dim_size(const or1_model_config *c, layer_dim d);
/* Floats of row t under c. */
size_t model_layer_numel(const or1_model_config *c, const layer_tensor *t);
/* The kind of the tensors behind or1_layer field f (the same for a whole fused group). */
tensor_kind model_layer_field_kind(int f);
/* Floats behind field f under c: its row and the continuation rows after it (0 when absent). */
size_t model_layer_field_numel(const or1_model_config *c, int f);
/* Entries of the model's parameter table under c: every present layer row of every layer, the
 * embedding, the final norm and an untied head. */
int model_tensor_count(const or1_model_config *c);

/* One architecture: the model_type config.json names it by (GGUF's general.architecture is the
 * same word), whether its q, k and v biases are always there (Qwen2) or follow attention_bias
 * with o_proj's (Llama, Qwen3), whether each query and key head is RMS-normalised before RoPE
 * (Qwen3), and whether GGUF files hold its q and k rows permuted (llama.cpp's Llama converter). */
typedef struct {
    const char *model_type;
    or1_arch arch;
    bool fixed_qkv_bias, qk_norm, gguf_permuted;
} arch_row;

extern const arch_row MODEL_ARCHS[];
extern const int MODEL_N_ARCHS;

/* The row of model_type, or NULL. */
const arch_row *model_arch_find(const char *model_type);
/* The model_type of a; "a, b, c" lists them all into buf for messages. */
const char *model_arch_name(or1_arch a);
const char *model_arch_list(char *buf, size_t n);

#endif
