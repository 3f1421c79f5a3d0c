/* or1 model: the Qwen2-family decoder (Qwen2 / DeepSeek-R1-Distill-Qwen, Qwen3, Llama) in fp32 or bf16.
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

#include "or1/io_gguf.h"
#include "or1/io_safetensors.h"
#include "or1/kernels.h"

typedef struct cJSON cJSON;

typedef enum { OR1_ARCH_QWEN2, OR1_ARCH_LLAMA, OR1_ARCH_QWEN3 } or1_arch;

enum { OR1_MAX_EOS = 8 };

typedef struct {
    or1_arch arch;
    int hidden, intermediate, layers, heads, kv_heads, head_dim, vocab, max_pos;
    float rms_eps, rope_theta;
    or1_rope_scaling rope; /* rope_scaling / rope_parameters (none by default) */
    bool tied, qkv_bias, o_bias; /* Llama's attention_bias also gives o_proj a bias */
    bool qk_norm;                /* RMSNorm of each query and key head before RoPE (Qwen3) */
    int32_t eos[OR1_MAX_EOS]; /* end-of-sequence ids from config.json, if any */
    int n_eos;
} or1_model_config;

/* Parses and validates a Hugging Face config.json (errors name the file and the key). */
int or1_model_config_load(or1_model_config *c, const char *path);
/* The same checks on a config.json object; where names it in messages. */
int or1_model_config_parse(or1_model_config *c, const cJSON *j, const char *where);
/* The config of a model: model/config.json (and generation_config.json's EOS ids) for a
 * Hugging Face folder, the metadata for a GGUF file. */
int or1_model_config_read(or1_model_config *c, const char *model);
/* The sampling settings of a generation_config.json (has_*: the file gives that key). */
typedef struct {
    bool has_temperature, has_top_p, has_top_k;
    double temperature, top_p;
    int top_k;
} or1_generation_sampling;

/* Reads temperature, top_p and top_k of the generation_config.json at path into *g (all unset
 * when the file does not exist); a value out of range is an error naming the file and key. */
int or1_generation_sampling_load(const char *path, or1_generation_sampling *g);

/* Adds the end-of-sequence ids of a generation_config.json, if the file exists. */
int or1_model_config_add_generation_eos(or1_model_config *c, const char *path);

/* The tensors of a decoder layer a computation reads (fused ones by their first: q/k/v in wqkv
 * and bqkv, gate/up in wgu); src/model/arch.c lists each field's tensors and shapes. */
typedef enum {
    OR1_L_LN1, OR1_L_WQKV, OR1_L_BQKV, OR1_L_QNORM, OR1_L_KNORM, OR1_L_WO, OR1_L_BO, OR1_L_LN2, OR1_L_WGU,
    OR1_L_WD, OR1_L_FIELDS
} or1_layer_field;

/* Pointers into the parameter (or gradient) buffer for one decoder layer, by name or by field
 * (NULL where the architecture lacks the tensor). */
typedef union {
    struct {
        float *ln1, *wqkv, *bqkv, *qnorm, *knorm, *wo, *bo, *ln2, *wgu, *wd;
    };
    float *f[OR1_L_FIELDS];
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
    float *params, *grads; /* grads NULL until or1_model_grads */
    or1_weights w;
    or1_param *p;
    int n_p, cap_p;
} or1_model;

/* Lays out a model for cfg with zeroed parameters (the gradients come with or1_model_grads). */
void or1_model_init(or1_model *m, const or1_model_config *cfg);
/* The host gradients, allocated zeroed at the first call: a model that is only run (eval, a
 * KL reference, a GPU run summing on the device) never holds them. */
float *or1_model_grads(or1_model *m);
/* Loads a model: a Hugging Face folder (config.json and the safetensors weights, single file or
 * sharded with an index) or a GGUF file (or1_model_load_gguf). */
int or1_model_load(or1_model *m, const char *dir);

/* GGUF files (llama.cpp's format; src/model/gguf.c). */
/* The config.json object the metadata of f stands for (new *config: cJSON_Delete), errors naming
 * the key: the architecture, dimensions, tied head, biases and special-token ids. */
int or1_model_gguf_config(const or1_gguf_file *f, cJSON **config);
/* Loads a GGUF model file: every tensor dequantized to fp32, Llama's q/k rows un-permuted. */
int or1_model_load_gguf(or1_model *m, const char *path);
/* Writes the config.json of a GGUF file's metadata to path. */
int or1_model_gguf_write_config(const char *gguf_path, const char *path);
/* Adds the model's metadata and tensors to w (matrices in type: F32, F16, BF16 or Q8_0; vectors
 * F32); *keep holds permuted copies w reads at write time (free() after or1_gguf_write). */
int or1_model_gguf_add(const or1_model *m, or1_gguf_writer *w, uint32_t type, float **keep);
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

/* ---- Backends ----------------------------------------------------------------------------
 *
 * A backend supplies memory and the numeric kernels (the CPU backend runs those of
 * or1/kernels.h on host memory, the CUDA backend of or1/cuda.h runs them on one GPU); the
 * decoder, the head's blocking, the optimizer step and the decode step are written once, in
 * src/model, over them. Its operation table is private to src/model and the backends
 * (src/model/impl/backend_impl.h): everything else goes through a placed model, or1_dmodel. */

typedef struct or1_backend or1_backend;

/* The backend's device name ("cpu", "cuda"), for messages. */
const char *or1_backend_name(const or1_backend *be);
/* Whether its matmuls run over the models' bf16 weights (the fp32 ones stay the masters). */
bool or1_backend_bf16(const or1_backend *be);
/* Bytes of one element of its KV cache: 4 (floats) or 2 (bf16: the CUDA backend in bf16). */
int or1_backend_kv_bytes(const or1_backend *be);

/* The CPU backend (OpenBLAS + OpenMP); never fails. */
or1_backend *or1_backend_cpu(void);
/* The CPU backend with its forward matmuls (trainer and rollout, the head's logits) in bf16
 * over bf16 copies of the weights when bf16 is true (see or1_matmul_rows_bf16). */
or1_backend *or1_backend_cpu_prec(bool bf16);
/* Releases a backend made by any constructor. */
void or1_backend_free(or1_backend *be);

/* Opens a device's backend with bf16 matmuls (1), fp32 ones (0), or the device's own default
 * (-1); NULL with or1_fail when the device cannot be opened. */
typedef or1_backend *(*or1_backend_opener)(int bf16);
/* Makes a device name known to or1_backend_open (replacing an opener of the same name). The
 * CPU needs none; the program registers the devices it links beyond it (or1_cuda_register of
 * or1/cuda.h), so that the modules in between open backends by name alone. name must outlive
 * the registry. 0, or -1 with or1_fail when the table is full. */
int or1_backend_register(const char *name, or1_backend_opener open);
/* The backend for a device name and a matmul precision: "cpu" (or empty) or a registered device;
 * precision "fp32", "bf16", or "auto" / empty / NULL for the device's own (fp32 on the CPU).
 * NULL with or1_fail for an unknown name or precision, or a device that cannot be opened. */
or1_backend *or1_backend_open(const char *device, const char *precision);

/* ---- A model placed on a backend ----------------------------------------------------------
 *
 * Parameters, gradients, AdamW moments and the activation workspace in backend memory, with
 * the host model (m) as its mirror for loading and saving: on a host-memory backend they are
 * the same arrays, elsewhere push/pull copy them. Every call returns 0, or -1 with or1_fail. */

typedef struct or1_dmodel or1_dmodel;

/* Places m on be (m must outlive the result). */
or1_dmodel *or1_dmodel_new(or1_backend *be, or1_model *m);
/* Places m for inference (forward, head, decode; no gradients, backward or steps): in bf16
 * only the bf16 weights and the fp32 norms and biases (2 bytes per parameter), in fp32 the
 * fp32 weights. */
or1_dmodel *or1_dmodel_new_frozen(or1_backend *be, or1_model *m);
/* Places m on a bf16 backend keeping fp32 master weights for the parameters [lo, hi) alone
 * (ZeRO stage 1's shard of a rank): the model computes with its bf16 weights, the norms' and
 * biases' fp32 values and the whole fp32 gradients; step_range must cover [lo, hi), pull
 * brings back that range of the host parameters only, and allgather_params gathers the bf16
 * weights (a host path gathers the host parameters and pushes). */
or1_dmodel *or1_dmodel_new_sharded(or1_backend *be, or1_model *m, size_t lo, size_t hi);
void or1_dmodel_free(or1_dmodel *dm);
const or1_model_config *or1_dmodel_config(const or1_dmodel *dm);
or1_backend *or1_dmodel_backend(const or1_dmodel *dm);
/* The host model it mirrors. */
or1_model *or1_dmodel_host(const or1_dmodel *dm);
/* Host -> device: the parameters (after the host model changed) / the gradients (after a
 * sum across processes). Device -> host: parameters and attached AdamW moments (before
 * saving) / the gradients. No copies on a host-memory backend. */
int or1_dmodel_push(or1_dmodel *dm);
int or1_dmodel_push_grads(or1_dmodel *dm);
int or1_dmodel_pull(or1_dmodel *dm);
int or1_dmodel_pull_grads(or1_dmodel *dm);
void or1_dmodel_zero_grad(or1_dmodel *dm);

/* Gradient checkpointing: with on, a training forward keeps each layer's input alone (T x
 * hidden floats per layer instead of every activation) and backward runs each layer's forward
 * again before its backward: one more forward of compute, the same gradients bit for bit. */
void or1_dmodel_set_recompute(or1_dmodel *dm, bool on);
/* Runs the decoder on a host-packed batch; with train it keeps what backward needs. */
int or1_dmodel_forward(or1_dmodel *dm, const or1_batch *b, bool train);
/* Log-prob of each scored target and entropy of each scored distribution at temperature,
 * into host arrays of b->n_scored (after or1_dmodel_forward of b). */
int or1_dmodel_head(or1_dmodel *dm, const or1_batch *b, float temperature, float *logp, float *entropy);
/* Backpropagates d(loss)/d(logp) and d(loss)/d(entropy) (host arrays) through the head and
 * every layer, adding into the gradients. Needs forward(train) and head of b. */
int or1_dmodel_backward(or1_dmodel *dm, const or1_batch *b, float temperature, const float *g_logp,
                        const float *g_entropy);
/* Clips the gradients to max_norm (<= 0: no clipping), one AdamW step on the moments of opt
 * (attached at the first step; on a device backend they live there until a pull), then
 * zeroes the gradients; *norm gets the norm before clipping. */
int or1_dmodel_step(or1_dmodel *dm, or1_adamw *opt, const or1_adamw_cfg *c, double max_norm, double *norm);
/* The gradients' global L2 norm, and the norm of the range [lo, hi) of them. */
double or1_dmodel_grad_norm(or1_dmodel *dm);
double or1_dmodel_grad_norm_range(or1_dmodel *dm, size_t lo, size_t hi);
/* The parameters' global L2 norm (a finiteness check of every weight; -1 on error); of the
 * master shard alone in a sharded model. */
double or1_dmodel_param_norm(or1_dmodel *dm);
/* or1_dmodel_step over the parameters [lo, hi) alone, clipped by a norm the caller computed
 * (the global one): opt holds hi - lo moments. ZeRO stage 1 runs it on each rank's shard. */
int or1_dmodel_step_range(or1_dmodel *dm, or1_adamw *opt, const or1_adamw_cfg *c, size_t lo, size_t hi,
                          double norm, double max_norm);

/* The ranks' device communicator: rank 0 gets its id (returns its size in bytes, at most cap;
 * 0 when the backend has no device collectives, the trainer then summing through the host over
 * MPI) and every rank joins with it (a collective over the ranks). */
int or1_dmodel_comm_id(or1_dmodel *dm, void *id, size_t cap);
int or1_dmodel_comm_init(or1_dmodel *dm, const void *id, int rank, int size);
/* The ranks' collectives on the model's gradients (sum) and parameters (gather), on the
 * device; -1 with or1_fail where the backend has none. */
int or1_dmodel_allreduce_grads(or1_dmodel *dm);
int or1_dmodel_reduce_scatter_grads(or1_dmodel *dm, const size_t *starts);
int or1_dmodel_allgather_params(or1_dmodel *dm, const size_t *starts);

/* Bytes of the training workspace for micro-batches of `tokens` tokens (memory reports). */
size_t or1_dmodel_workspace_bytes(const or1_dmodel *dm, int tokens);

/* Decode support, for the rollout engine. A paged KV pool holds n_blocks blocks of `block`
 * rows of keys and values in every layer; a sequence's rows are wherever its blocks are. The
 * workspace is sized for rows_cap decode rows, prompts of up to prompt_cap tokens, positions
 * below pos_cap and block tables of up to table_cap entries per step; n_states final hidden
 * states (numbered from 0) hold what prefill and decode leave for the sampler. */
int or1_dmodel_decode_reserve(or1_dmodel *dm, int n_blocks, int block, int rows_cap, int prompt_cap, int pos_cap,
                              int table_cap, int n_states);
/* Frees the pool, the decode buffers and the workspace (the next call makes what it needs). */
void or1_dmodel_decode_release(or1_dmodel *dm);
/* Prefills one packed sequence: token t's key and value go to pool row kv_rows[t] (host
 * array), the final hidden state of its last token to state `state`. */
int or1_dmodel_prefill(or1_dmodel *dm, const or1_batch *b, const int32_t *kv_rows, int state);
/* One decode step for R rows (host arrays): row r embeds tokens[r] at position pos[r],
 * stores its key and value at pool row kv_rows[r], attends over its prompt's seg[4r+1] keys
 * (block ids at blocks[seg[4r]]) then its own seg[4r+3] (block ids at blocks[seg[4r+2]]) of
 * blocks[0..n_table), and leaves its final hidden state in state `state + r`. In each layer
 * every row's key and value is stored before any row attends, so rows of one sequence at
 * consecutive positions extend it in one pass, each attending to the rows before it. */
int or1_dmodel_decode(or1_dmodel *dm, int R, const int32_t *tokens, const int32_t *pos, const int32_t *kv_rows,
                      const int32_t *seg, const int32_t *blocks, int n_table, int state);
/* Logits of the hidden states states[0..A) and one draw per row (host arrays). */
int or1_dmodel_sample(or1_dmodel *dm, int A, const int32_t *states, const or1_sample_row *rows, int32_t *next,
                      float *logp);

#endif
