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

/* The saved activations of one decoder layer (views into the workspace); with q/k norms (Qwen3)
 * also the projections before the norms (qkn) and the norms' factors (qkr, queries' then keys'). */
typedef struct {
    float *x, *r1, *xn1, *qkv, *att, *lse, *x2, *r2, *xn2, *gu, *qkn, *qkr;
} layer_acts;

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
    float *mem, *saved;
    layer_acts *l;
    float *xf, *rf, *hf, *cos_t, *sin_t, *a, *da, *dgu, *datt, *dqkv, *dxn, *dres, *hrows, *dhrows;
    float *sc_lse, *sc_ez, *sc_logp, *sc_ent, *sc_glp, *sc_gent; /* per scored position */
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
int dmodel_has_grads(const or1_dmodel *dm, const char *what);

#endif
