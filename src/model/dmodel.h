/* The placed model, or1_dmodel, as the files of src/model that place it (placement.c) and run
 * it (decoder.c) both see it: its weight views in fp32 and bf16, a sharded model's fp32
 * vectors, the workspace and the decode buffers. Private to src/model. */
#ifndef OR1_MODEL_DMODEL_H
#define OR1_MODEL_DMODEL_H

#include "or1/model.h"

#include "arch.h"
#include "backend_impl.h"

/* The bf16 views of one layer's matrices, by name or by or1_layer field (NULL for the vectors,
 * and all NULL in fp32 precision). */
typedef union {
    struct {
#define X(name, field) const or1_bf16 *name;
        LAYER_FIELDS(X)
#undef X
    };
    const or1_bf16 *f[OR1_L_FIELDS];
} layer_bf16;

typedef struct {
    const or1_bf16 *embed, *lm_head;
    layer_bf16 *layer;
} weights_bf16;

/* A norm weight or bias of a sharded model: floats [off, off + n) of the host layout, kept in
 * fp32 at [at, at + n) of the compact copy vec. */
typedef struct {
    size_t off, n, at;
} vec_seg;

/* The widths a layer's activations are made of, read off the config: the hidden size, the
 * query and fused q/k/v rows, the query and key/value heads, the MLP's intermediate size. */
typedef struct {
    size_t hidden, q, qkv, heads, kv_heads, inter;
} act_dims;

/* The saved activations of one decoder layer, one row each in workspace order: the layer_acts
 * field, its floats per token (an expression in d, the act_dims of the config) and when the
 * layer has it. layer_acts_floats sizes a layer's block and layer_acts_carve carves it from
 * these rows alone (decoder.c), so a new activation is a row here and its use in the decoder. */
#define LAYER_ACTS(X)                                                                            \
    X(x, d.hidden, HAS_ALWAYS)              /* the layer's input */                              \
    X(r1, 1, HAS_ALWAYS)                    /* input_layernorm's reciprocal RMS */               \
    X(xn1, d.hidden, HAS_ALWAYS)            /* input_layernorm's output */                       \
    X(qkv, d.qkv, HAS_ALWAYS)               /* q, k and v after bias, q/k norm and RoPE */       \
    X(att, d.q, HAS_ALWAYS)                 /* attention's output */                             \
    X(lse, d.heads, HAS_ALWAYS)             /* attention's log-sum-exp per query head */         \
    X(x2, d.hidden, HAS_ALWAYS)             /* the residual after attention */                   \
    X(r2, 1, HAS_ALWAYS)                    /* post_attention_layernorm's reciprocal RMS */      \
    X(xn2, d.hidden, HAS_ALWAYS)            /* post_attention_layernorm's output */              \
    X(gu, 2 * d.inter, HAS_ALWAYS)          /* gate and up projections */                        \
    X(qkn, d.qkv, HAS_QK_NORM)              /* the projections before the q/k norms (Qwen3) */   \
    X(qkr, d.heads + d.kv_heads, HAS_QK_NORM) /* the q/k norms' factors, queries' then keys' */

/* Views into the workspace, one per row of LAYER_ACTS (NULL where the layer lacks it). */
typedef struct {
#define X(name, width, when) float *name;
    LAYER_ACTS(X)
#undef X
} layer_acts;

/* The sizes a workspace is made of: T tokens, positions below L, R rows per head call, the
 * model's hidden and intermediate sizes, query and fused q/k/v rows, half a head and layers;
 * train: the backward scratch too; recompute: every layer's input kept (in saved). */
typedef struct {
    size_t T, L, R, hidden, inter, q, qkv, half, layers;
    bool train, recompute;
} ws_dims;

/* The workspace's buffers after the layers' activations, one row each in workspace order: the
 * or1_dmodel field, its floats (an expression in w, the ws_dims of the workspace) and when the
 * workspace has it (NULL otherwise). workspace_floats sizes and workspace_new carves from these
 * rows alone (decoder.c). */
#define WORKSPACE_BUFS(X)                                                                        \
    X(saved, w.layers * w.T * w.hidden, w.train && w.recompute) /* each layer's input */         \
    X(xf, w.T * w.hidden, true)         /* the final norm's input */                             \
    X(rf, w.T, true)                    /* the final norm's reciprocal RMS */                    \
    X(hf, w.T * w.hidden, true)         /* the final norm's output */                            \
    X(cos_t, w.L * w.half, true)        /* RoPE's cosines */                                     \
    X(sin_t, w.L * w.half, true)        /* RoPE's sines (uploaded with cos_t, right after it) */ \
    X(a, w.T * w.inter, true)           /* SwiGLU's output */                                    \
    X(da, w.T * w.inter, w.train)       /* backward: its gradient */                             \
    X(dgu, w.T * 2 * w.inter, w.train)  /* backward: the gate and up projections' */             \
    X(datt, w.T * w.q, w.train)         /* backward: attention's output's */                     \
    X(dqkv, w.T * w.qkv, w.train)       /* backward: q, k and v's */                             \
    X(dxn, w.T * w.hidden, w.train)     /* backward: a norm's output's */                        \
    X(dres, w.T * w.hidden, w.train)    /* backward: the residual stream's */                    \
    X(hrows, w.R * w.hidden, true)      /* the head's rows of hidden states */                   \
    X(dhrows, w.R * w.hidden, true)     /* their gradients */                                    \
    X(sc_lse, w.T, true)                /* per scored position: the head's log-sum-exp, */       \
    X(sc_ez, w.T, true)                 /* the softmax's mean logit (for the entropy), */        \
    X(sc_logp, w.T, true)               /* the target's log-prob, */                             \
    X(sc_ent, w.T, true)                /* the entropy, */                                       \
    X(sc_glp, w.T, true)                /* the gradients of the log-prob */                      \
    X(sc_gent, w.T, true)               /* and of the entropy */

struct or1_dmodel {
    or1_backend *be;
    const or1_backend_ops *op;
    or1_model *host;
    or1_model_config cfg;
    size_t n;
    float *params, *grads; /* backend memory; the host model's arrays on a host-memory backend */
    float *m, *v;          /* AdamW moments of the attached optimizer */
    or1_adamw *opt;
    or1_weights w, g; /* views into params (a sharded model: its norms and biases in vec) and grads */
    or1_bf16 *wb;     /* bf16 weights in bf16 precision (owned) */
    weights_bf16 h;   /* views into wb */
    /* a sharded model: no params; fp32 masters of [lo, hi), norms and biases in fp32 */
    bool sharded;
    size_t lo, hi, vec_n;
    float *master, *vec;
    vec_seg *segs;
    int n_segs;
    /* workspace for cap_tokens tokens, positions below cap_len; with ws_train the backward
     * scratch and every layer's activations, or (recompute) each layer's input in saved */
    int cap_tokens, cap_len;
    bool ws_train, recompute;
    float *mem;
    layer_acts *l;
#define X(name, floats, when) float *name;
    WORKSPACE_BUFS(X)
#undef X
    /* the current batch's index arrays (aliases of host arrays on a host-memory backend) */
    int32_t *ibuf;
    size_t ibuf_n;
    const int32_t *ids, *pos, *seq_start, *sc_pos, *sc_tgt;
    /* decode: the paged KV pool, logits of rows_cap rows, the step's index arrays, the hidden
     * states the engine addresses by row (n_states of them, then rows_cap gathered to sample) */
    void *kv; /* the KV pool: elements of the backend's kv_bytes */
    int pool_rows, block, rows_cap, prompt_cap, table_cap, n_states;
    float *logits, *states, *picked;
    int32_t *dec;
};

/* Whether dm has gradients; fails naming what needed them (`what`) otherwise. */
int model_has_grads(const or1_dmodel *dm, const char *what);

#endif
