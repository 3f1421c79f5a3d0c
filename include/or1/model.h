/* or1 model: the Qwen2-family decoder (Qwen2 / DeepSeek-R1-Distill-Qwen, Llama) in fp32.
 *
 * Parameters live in one allocation and gradients in another (llm.c style); each layer's
 * q/k/v projections and gate/up projections are adjacent so one GEMM computes them.
 * Forward runs on packed variable-length sequences (no padding, a causal mask per sequence,
 * positions from 0). The head computes, at chosen positions, the log-prob of a target token
 * and the entropy of the whole next-token distribution at a temperature, streaming over
 * vocabulary chunks so no [tokens x vocab] matrix exists. */
#ifndef OR1_MODEL_H
#define OR1_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "or1/io_safetensors.h"

typedef enum { OR1_ARCH_QWEN2, OR1_ARCH_LLAMA } or1_arch;

enum { OR1_MAX_EOS = 8 };

typedef struct {
    or1_arch arch;
    int hidden, intermediate, layers, heads, kv_heads, head_dim, vocab, max_pos;
    float rms_eps, rope_theta;
    bool tied, qkv_bias, o_bias; /* Llama's attention_bias also gives o_proj a bias */
    int32_t eos[OR1_MAX_EOS]; /* end-of-sequence ids from config.json, if any */
    int n_eos;
} or1_model_config;

/* Parses and validates a Hugging Face config.json (errors name the file and the key). */
int or1_model_config_load(or1_model_config *c, const char *path);
/* Adds the end-of-sequence ids of a generation_config.json, if the file exists. */
int or1_model_config_add_generation_eos(or1_model_config *c, const char *path);

/* Pointers into the parameter (or gradient) buffer for one decoder layer. */
typedef struct {
    float *ln1, *wqkv, *bqkv, *wo, *bo, *ln2, *wgu, *wd;
} or1_layer;

typedef struct {
    float *embed, *norm, *lm_head; /* lm_head == embed when tied */
    or1_layer *layer;
} or1_weights;

/* A named tensor in the parameter buffer, under its Hugging Face name. */
typedef struct {
    char name[96];
    int ndim;
    int64_t shape[2];
    size_t offset, numel;
} or1_param;

typedef struct {
    or1_model_config cfg;
    size_t n_floats;
    float *params, *grads;
    or1_weights w, g;
    or1_param *p;
    int n_p;
} or1_model;

/* Lays out a model for cfg with zeroed parameters and gradients. */
void or1_model_init(or1_model *m, const or1_model_config *cfg);
/* Loads config.json and the safetensors weights (single file or sharded with an index). */
int or1_model_load(or1_model *m, const char *dir);
/* Writes model.safetensors (F32 or BF16) and copies config.json and tokenizer files from src_dir. */
int or1_model_save(const or1_model *m, const char *dir, or1_dtype dtype, const char *src_dir);
void or1_model_free(or1_model *m);
/* Random weights as Hugging Face initialises them: N(0, std) matrices, unit norms, zero biases. */
void or1_model_randomize(or1_model *m, uint64_t seed, float std);
/* Lists the parameters as safetensors tensors over buf (params, grads or optimizer state). */
void or1_model_tensors(const or1_model *m, const float *buf, or1_st_tensor *out);

/* A packed micro-batch. Scored positions are where a next-token log-prob is wanted:
 * sc_pos[i] is the packed index whose output predicts sc_tgt[i]. */
typedef struct {
    int n_tokens, n_seqs, max_len;
    int32_t *ids;       /* [n_tokens] */
    int32_t *seq_start; /* [n_seqs + 1] */
    int32_t *pos;       /* [n_tokens] position inside its sequence */
    int n_scored;
    int32_t *sc_pos, *sc_tgt; /* [n_scored] */
} or1_batch;

/* Activations saved for backward plus scratch, sized once for the largest micro-batch. */
typedef struct or1_acts or1_acts;

or1_acts *or1_acts_new(const or1_model_config *cfg, int cap_tokens, int cap_len, bool train);
void or1_acts_free(or1_acts *a);

/* Runs the decoder; with train it keeps what or1_backward needs. */
void or1_forward(const or1_model *m, or1_acts *a, const or1_batch *b, bool train);
/* Forward without saving activations that also writes every layer's rotated keys and values
 * into kv: layer l's block is kv + l*2*kv_cap*kvd, keys [kv_cap][kvd] then values, row = position. */
void or1_prefill(const or1_model *m, or1_acts *a, const or1_batch *b, float *kv, int kv_cap);
/* The final-norm hidden state of packed row t after the last forward. */
const float *or1_acts_hidden(const or1_acts *a, int t);
/* Log-prob of each scored target and entropy of each scored distribution at temperature. */
void or1_head_forward(const or1_model *m, or1_acts *a, const or1_batch *b, float temperature,
                      float *logp, float *entropy);
/* Backpropagates d(loss)/d(logp) and d(loss)/d(entropy) of the scored positions through the
 * head and every layer, adding into m->grads. Needs or1_forward(train) and or1_head_forward. */
void or1_backward(or1_model *m, or1_acts *a, const or1_batch *b, float temperature,
                  const float *g_logp, const float *g_entropy);

/* AdamW with PyTorch semantics (decoupled weight decay, bias correction). */
typedef struct {
    float lr, beta1, beta2, eps, weight_decay;
} or1_adamw_cfg;

typedef struct {
    float *m, *v;
    int64_t step;
    size_t n;
} or1_adamw;

void or1_adamw_init(or1_adamw *o, size_t n);
void or1_adamw_free(or1_adamw *o);
void or1_adamw_step(or1_adamw *o, float *params, const float *grads, const or1_adamw_cfg *c);
/* Global L2 norm of a gradient buffer (double accumulation). */
double or1_grad_norm(const float *g, size_t n);
/* Scales g as torch.nn.utils.clip_grad_norm_ does: by min(1, max_norm / (norm + 1e-6)). */
void or1_clip_grad_norm(float *g, size_t n, double norm, double max_norm);
/* Optimizer state beside a checkpoint: optimizer.safetensors with exp_avg.* / exp_avg_sq.*. */
int or1_adamw_save(const or1_adamw *o, const or1_model *m, const char *dir);
/* Loads the state if dir holds optimizer.safetensors: 1 loaded, 0 absent, -1 error. */
int or1_adamw_load(or1_adamw *o, const or1_model *m, const char *dir);


/* One sequence to pack: positions n_prompt-1 .. n-2 are scored (each predicts the next id). */
typedef struct {
    const int32_t *ids;
    int n, n_prompt;
} or1_seq;

/* Packs seqs into b (arrays allocated to fit; call or1_batch_free when done). */
void or1_batch_pack(or1_batch *b, const or1_seq *seqs, int n);
void or1_batch_free(or1_batch *b);
/* Ensures *a holds a workspace for at least tokens/len (re-allocating only to grow). */
void or1_acts_reserve(or1_acts **a, const or1_model_config *cfg, int tokens, int len, bool train);

#endif
