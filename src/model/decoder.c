/* The decoder written once over a backend (or1_backend_ops): packed forward with saved
 * activations, the streaming head at scored positions, backward into the gradients, the
 * AdamW step, and the prefill / decode / sample steps the rollout engine drives. Each layer's
 * forward and backward sit side by side (llm.c style); every buffer lives in backend memory
 * and is sized once for the largest batch seen (growing only when a batch needs more). */
#include "or1/core.h"
#include "or1/model.h"

#include "arch.h"
#include "backend_impl.h"

#include <stdlib.h>
#include <string.h>

/* The bf16 views of one layer's matrices, by name or by or1_layer field (NULL for the vectors,
 * and all NULL in fp32 precision). */
typedef union {
    struct {
        const or1_bf16 *ln1, *wqkv, *bqkv, *qnorm, *knorm, *wo, *bo, *ln2, *wgu, *wd;
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
    float *kv;
    int pool_rows, block, rows_cap, prompt_cap, table_cap, n_states;
    float *logits, *states, *picked;
    int32_t *dec;
};

/* Floats one layer's saved activations need for T tokens. */
static size_t layer_acts_floats(const or1_model_config *c, size_t T) {
    size_t H = (size_t)c->hidden, qd = (size_t)c->heads * c->head_dim;
    size_t qkvd = qd + 2 * (size_t)c->kv_heads * c->head_dim;
    size_t qk = c->qk_norm ? qkvd + (size_t)c->heads + c->kv_heads : 0;
    return T * (4 * H + 2 + qkvd + qd + c->heads + 2 * (size_t)c->intermediate + qk);
}

/* Carves one layer's views out of a block of floats; returns the first float after them. */
static float *layer_acts_carve(layer_acts *l, float *p, const or1_model_config *c, size_t T) {
    size_t H = (size_t)c->hidden, qd = (size_t)c->heads * c->head_dim;
    size_t qkvd = qd + 2 * (size_t)c->kv_heads * c->head_dim;
    l->x = p, p += T * H;
    l->r1 = p, p += T;
    l->xn1 = p, p += T * H;
    l->qkv = p, p += T * qkvd;
    l->att = p, p += T * qd;
    l->lse = p, p += T * (size_t)c->heads;
    l->x2 = p, p += T * H;
    l->r2 = p, p += T;
    l->xn2 = p, p += T * H;
    l->gu = p, p += T * 2 * (size_t)c->intermediate;
    l->qkn = l->qkr = NULL;
    if (c->qk_norm) l->qkn = p, p += T * qkvd, l->qkr = p, p += T * (size_t)(c->heads + c->kv_heads);
    return p;
}

/* The device twin of a pointer into the host model's parameter buffer (NULL stays NULL). */
static float *twin(const float *host_base, const float *p, float *dev_base) {
    return p ? dev_base + (p - host_base) : NULL;
}

/* Weight (or gradient) views over dev_base in the host model's layout. */
static void bind_views(const or1_dmodel *dm, or1_weights *dst, float *dev_base) {
    const or1_weights *src = &dm->host->w;
    const float *hb = dm->host->params;
    dst->embed = twin(hb, src->embed, dev_base);
    dst->norm = twin(hb, src->norm, dev_base);
    dst->lm_head = twin(hb, src->lm_head, dev_base);
    dst->layer = or1_calloc((size_t)dm->cfg.layers, sizeof *dst->layer);
    for (int i = 0; i < dm->cfg.layers; i++)
        for (int f = 0; f < OR1_L_FIELDS; f++) dst->layer[i].f[f] = twin(hb, src->layer[i].f[f], dev_base);
}

/* The bf16 twin of a host parameter pointer (NULL stays NULL). */
static const or1_bf16 *twin_bf16(const or1_dmodel *dm, const float *p) {
    return p ? dm->wb + (p - dm->host->params) : NULL;
}

/* bf16 views of the matrices over wb (all NULL without wb). */
static void bind_bf16(or1_dmodel *dm) {
    const or1_weights *src = &dm->host->w;
    dm->h.layer = or1_calloc((size_t)dm->cfg.layers, sizeof *dm->h.layer);
    if (!dm->wb) return;
    dm->h.embed = twin_bf16(dm, src->embed), dm->h.lm_head = twin_bf16(dm, src->lm_head);
    for (int i = 0; i < dm->cfg.layers; i++)
        for (int f = 0; f < OR1_L_FIELDS; f++)
            if (layer_field_kind(f) == T_MATRIX) dm->h.layer[i].f[f] = twin_bf16(dm, src->layer[i].f[f]);
}

/* Appends the vector p of n floats (if the model has it) to the sharded model's fp32 copy. */
static void add_seg(or1_dmodel *dm, const float *p, size_t n) {
    if (!p) return;
    dm->segs[dm->n_segs++] = (vec_seg){(size_t)(p - dm->host->params), n, dm->vec_n};
    dm->vec_n += n;
}

/* The norms and biases a sharded model keeps in fp32 (every layer's vector fields, then the
 * final norm). */
static void list_segs(or1_dmodel *dm) {
    const or1_model_config *c = &dm->cfg;
    dm->segs = or1_calloc((size_t)OR1_L_FIELDS * c->layers + 1, sizeof *dm->segs);
    for (int i = 0; i < c->layers; i++)
        for (int f = 0; f < OR1_L_FIELDS; f++)
            if (layer_field_kind(f) != T_MATRIX) add_seg(dm, dm->host->w.layer[i].f[f], layer_field_numel(c, f));
    add_seg(dm, dm->host->w.norm, (size_t)c->hidden);
}

/* Where a host vector lives in the sharded model's fp32 copy (NULL: not a vector, or absent). */
static float *vec_at(const or1_dmodel *dm, const float *p) {
    for (int k = 0; p && k < dm->n_segs; k++)
        if (dm->segs[k].off == (size_t)(p - dm->host->params)) return dm->vec + dm->segs[k].at;
    return NULL;
}

/* A sharded model's fp32 views: its norms and biases in vec, no matrices. */
static void bind_vec_views(or1_dmodel *dm) {
    const or1_weights *src = &dm->host->w;
    dm->w.norm = vec_at(dm, src->norm);
    dm->w.layer = or1_calloc((size_t)dm->cfg.layers, sizeof *dm->w.layer);
    for (int i = 0; i < dm->cfg.layers; i++)
        for (int f = 0; f < OR1_L_FIELDS; f++)
            if (layer_field_kind(f) != T_MATRIX) dm->w.layer[i].f[f] = vec_at(dm, src->layer[i].f[f]);
}

/* The fp32 weights: the host arrays or a whole copy, or a sharded model's masters and vectors. */
static int alloc_weights(or1_dmodel *dm) {
    const or1_backend_ops *op = dm->op;
    if (!dm->sharded) {
        dm->params = op->host_memory ? dm->host->params : op->alloc(dm->be, dm->n * sizeof(float));
        if (dm->params) bind_views(dm, &dm->w, dm->params);
        return dm->params ? 0 : -1;
    }
    list_segs(dm);
    dm->master = op->alloc(dm->be, (dm->hi - dm->lo) * sizeof(float));
    dm->vec = dm->master ? op->alloc(dm->be, dm->vec_n * sizeof(float)) : NULL;
    if (!dm->vec) return -1;
    bind_vec_views(dm);
    return 0;
}

/* Places m on be: fp32 weights (or a shard of masters), bf16 weights in bf16 precision, and
 * the gradients unless frozen; the host arrays are used in place on a host-memory backend. */
static or1_dmodel *place(or1_backend *be, or1_model *m, bool sharded, size_t lo, size_t hi, bool frozen) {
    or1_dmodel *dm = or1_calloc(1, sizeof *dm);
    dm->be = be, dm->op = be->ops, dm->host = m, dm->cfg = m->cfg, dm->n = m->n_floats;
    dm->sharded = sharded, dm->lo = lo, dm->hi = hi;
    size_t bytes = dm->n * sizeof(float);
    if (!frozen) dm->grads = dm->op->host_memory ? or1_model_grads(m) : dm->op->alloc(be, bytes);
    int rc = frozen || dm->grads ? alloc_weights(dm) : -1;
    if (rc == 0 && be->bf16) {
        dm->wb = dm->op->alloc(be, dm->n * sizeof(or1_bf16));
        if (!dm->wb) rc = -1;
    }
    if (rc == 0) {
        if (dm->grads) bind_views(dm, &dm->g, dm->grads);
        bind_bf16(dm);
    }
    if (rc || or1_dmodel_push(dm)) {
        or1_fail_ctx("%s model (%.2f GiB of parameters)", dm->op->name, (double)bytes / (1 << 30));
        or1_dmodel_free(dm);
        return NULL;
    }
    return dm;
}

/* Places m on be with its whole fp32 weights. */
or1_dmodel *or1_dmodel_new(or1_backend *be, or1_model *m) { return place(be, m, false, 0, m->n_floats, false); }

/* Places m for inference: no gradients; in bf16 no fp32 matrices (a shard of no masters). */
or1_dmodel *or1_dmodel_new_frozen(or1_backend *be, or1_model *m) {
    return place(be, m, be->bf16, 0, be->bf16 ? 0 : m->n_floats, true);
}

/* Places m on a bf16 backend with fp32 masters of [lo, hi) alone. */
or1_dmodel *or1_dmodel_new_sharded(or1_backend *be, or1_model *m, size_t lo, size_t hi) {
    if (!be->bf16) {
        or1_fail("%s model: fp32 masters can be sharded only in bf16 precision (in fp32 they are the weights)",
                 be->ops->name);
        return NULL;
    }
    if (lo > hi || hi > m->n_floats) {
        or1_fail("%s model: a master shard [%zu, %zu) of %zu parameters", be->ops->name, lo, hi, m->n_floats);
        return NULL;
    }
    return place(be, m, true, lo, hi, false);
}

/* Releases every buffer the model owns (never the host model's arrays). */
void or1_dmodel_free(or1_dmodel *dm) {
    if (!dm) return;
    const or1_backend_ops *op = dm->op;
    op->sync(dm->be);
    if (!op->host_memory) {
        void *own[] = {dm->params, dm->grads, dm->m, dm->v};
        for (size_t i = 0; i < sizeof own / sizeof *own; i++) op->release(dm->be, own[i]);
    }
    void *ws[] = {dm->mem, dm->ibuf, dm->kv, dm->logits, dm->dec, dm->states, dm->wb, dm->master, dm->vec};
    for (size_t i = 0; i < sizeof ws / sizeof *ws; i++) op->release(dm->be, ws[i]);
    free(dm->w.layer);
    free(dm->g.layer);
    free(dm->h.layer);
    free(dm->segs);
    free(dm->l);
    free(dm);
}

/* The model's config.json settings. */
const or1_model_config *or1_dmodel_config(const or1_dmodel *dm) { return &dm->cfg; }

/* The backend the model lives on. */
or1_backend *or1_dmodel_backend(const or1_dmodel *dm) { return dm->be; }

/* The host mirror. */
or1_model *or1_dmodel_host(const or1_dmodel *dm) { return dm->host; }

/* A sharded model's norms and biases from the host parameters, packed and uploaded. */
static int upload_vec(or1_dmodel *dm) {
    float *pack = or1_alloc_floats(dm->vec_n ? dm->vec_n : 1);
    for (int k = 0; k < dm->n_segs; k++)
        memcpy(pack + dm->segs[k].at, dm->host->params + dm->segs[k].off, dm->segs[k].n * sizeof(float));
    int rc = dm->op->upload(dm->be, dm->vec, pack, dm->vec_n * sizeof(float));
    free(pack);
    return rc;
}

/* A sharded model's bf16 weights from the host parameters, rounded on the host a chunk at a
 * time (no whole fp32 copy on the device). */
static int upload_bf16(or1_dmodel *dm) {
    enum { CHUNK = 1 << 22 };
    or1_bf16 *buf = or1_malloc((dm->n < CHUNK ? dm->n : CHUNK) * sizeof *buf + 1);
    int rc = 0;
    for (size_t i = 0; i < dm->n && !rc; i += CHUNK) {
        size_t k = dm->n - i < CHUNK ? dm->n - i : CHUNK;
        or1_bf16_from_f32(buf, dm->host->params + i, k);
        rc = dm->op->upload(dm->be, dm->wb + i, buf, k * sizeof *buf);
    }
    free(buf);
    return rc;
}

/* Host parameters to the weights (a sharded model: its masters, vectors and bf16 weights;
 * else the fp32 weights and their bf16 copy), and attached moments. */
int or1_dmodel_push(or1_dmodel *dm) {
    const or1_backend_ops *op = dm->op;
    const float *hp = dm->host->params;
    if (dm->sharded) {
        if (op->upload(dm->be, dm->master, hp + dm->lo, (dm->hi - dm->lo) * sizeof(float)) || upload_vec(dm) ||
            upload_bf16(dm))
            return -1;
    } else {
        if (!op->host_memory && op->upload(dm->be, dm->params, hp, dm->n * sizeof(float))) return -1;
        if (dm->wb) op->to_bf16(dm->be, dm->wb, dm->params, dm->n);
    }
    size_t mb = dm->opt ? dm->opt->n * sizeof(float) : 0;
    if (!op->host_memory && dm->m &&
        (op->upload(dm->be, dm->m, dm->opt->m, mb) || op->upload(dm->be, dm->v, dm->opt->v, mb)))
        return -1;
    return op->sync(dm->be);
}

/* Whether the model has gradients; fails naming what needed them otherwise. */
static int has_grads(const or1_dmodel *dm, const char *what) {
    if (dm->grads) return 1;
    return or1_fail("%s model placed for inference has no gradients (%s)", dm->op->name, what);
}

/* Host gradients (e.g. summed across processes) to the backend. */
int or1_dmodel_push_grads(or1_dmodel *dm) {
    if (has_grads(dm, "push") < 0) return -1;
    if (dm->op->host_memory) return 0;
    return dm->op->upload(dm->be, dm->grads, or1_model_grads(dm->host), dm->n * sizeof(float));
}

/* Parameters (a sharded model: its master range) and attached moments back to the host mirror
 * (the gradients stay: or1_dmodel_pull_grads brings them). */
int or1_dmodel_pull(or1_dmodel *dm) {
    const or1_backend_ops *op = dm->op;
    if (dm->sharded &&
        op->download(dm->be, dm->host->params + dm->lo, dm->master, (dm->hi - dm->lo) * sizeof(float)))
        return -1;
    if (op->host_memory) return op->sync(dm->be);
    if (!dm->sharded && op->download(dm->be, dm->host->params, dm->params, dm->n * sizeof(float))) return -1;
    size_t mb = dm->opt ? dm->opt->n * sizeof(float) : 0;
    if (dm->m && (op->download(dm->be, dm->opt->m, dm->m, mb) || op->download(dm->be, dm->opt->v, dm->v, mb)))
        return -1;
    return 0;
}

/* The gradients alone back to the host mirror. */
int or1_dmodel_pull_grads(or1_dmodel *dm) {
    if (has_grads(dm, "pull") < 0) return -1;
    if (dm->op->host_memory) return dm->op->sync(dm->be);
    return dm->op->download(dm->be, or1_model_grads(dm->host), dm->grads, dm->n * sizeof(float));
}

/* Zeroes the gradients (queued). */
void or1_dmodel_zero_grad(or1_dmodel *dm) {
    if (dm->grads) dm->op->zero(dm->be, dm->grads, dm->n * sizeof(float));
}

/* Floats of a workspace for T tokens and positions below L (with train the backward scratch
 * and every layer's activations, or with recompute one layer's and every layer's input), with
 * head_rows rows per head call; workspace_new carves exactly this. */
static size_t workspace_floats(const or1_model_config *c, size_t T, size_t L, bool train, bool recompute, size_t R) {
    size_t H = (size_t)c->hidden, I = (size_t)c->intermediate;
    size_t qd = (size_t)c->heads * c->head_dim, qkvd = qd + 2 * (size_t)c->kv_heads * c->head_dim;
    size_t half = (size_t)c->head_dim / 2, scratch = train ? T * (4 * I + qd + qkvd + 2 * H) : T * I;
    size_t slots = train && !recompute ? (size_t)c->layers : 1, saved = train && recompute ? c->layers * T * H : 0;
    return slots * layer_acts_floats(c, T) + saved + T * (2 * H + 1) + 2 * L * half + scratch + 2 * R * H + 6 * T;
}

/* Bytes of the training workspace for micro-batches of `tokens` tokens (memory reports). */
size_t or1_dmodel_workspace_bytes(const or1_dmodel *dm, int tokens) {
    size_t T = (size_t)tokens;
    return workspace_floats(&dm->cfg, T, T, true, dm->recompute, (size_t)dm->op->head_rows) * sizeof(float);
}

/* Gradient checkpointing on or off (the workspace is remade at the next forward). */
void or1_dmodel_set_recompute(or1_dmodel *dm, bool on) {
    if (dm->recompute == on) return;
    dm->op->sync(dm->be);
    dm->op->release(dm->be, dm->mem);
    dm->mem = NULL, dm->ws_train = false, dm->recompute = on;
}

/* Frees the workspace and carves a new one for T tokens, positions below L, and with train
 * the backward scratch and every layer's activations (or their inputs, with recompute); RoPE
 * tables are filled on the host and uploaded. */
static int workspace_new(or1_dmodel *dm, int T0, int L0, bool train) {
    const or1_model_config *c = &dm->cfg;
    const or1_backend_ops *op = dm->op;
    op->sync(dm->be);
    op->release(dm->be, dm->mem);
    dm->mem = NULL;
    int slots = train && !dm->recompute ? c->layers : 1;
    size_t T = (size_t)T0, H = (size_t)c->hidden, I = (size_t)c->intermediate, R = (size_t)op->head_rows;
    size_t qd = (size_t)c->heads * c->head_dim, qkvd = qd + 2 * (size_t)c->kv_heads * c->head_dim;
    size_t half = (size_t)c->head_dim / 2;
    size_t total = workspace_floats(c, T, (size_t)L0, train, dm->recompute, R);
    float *p = dm->mem = op->alloc(dm->be, total * sizeof(float));
    dm->ws_train = false;
    if (!p) return or1_fail_ctx("%s activations for %d tokens", op->name, T0);
    dm->cap_tokens = T0, dm->cap_len = L0, dm->ws_train = train;
    free(dm->l);
    dm->l = or1_calloc((size_t)slots, sizeof *dm->l);
    for (int i = 0; i < slots; i++) p = layer_acts_carve(&dm->l[i], p, c, T);
    dm->saved = NULL;
    if (train && dm->recompute) dm->saved = p, p += (size_t)c->layers * T * H;
    dm->xf = p, p += T * H;
    dm->rf = p, p += T;
    dm->hf = p, p += T * H;
    dm->cos_t = p, p += (size_t)L0 * half;
    dm->sin_t = p, p += (size_t)L0 * half;
    dm->a = p, p += T * I;
    dm->da = dm->dgu = dm->datt = dm->dqkv = dm->dxn = dm->dres = NULL;
    if (train) {
        dm->da = p, p += T * I;
        dm->dgu = p, p += T * 2 * I;
        dm->datt = p, p += T * qd;
        dm->dqkv = p, p += T * qkvd;
        dm->dxn = p, p += T * H;
        dm->dres = p, p += T * H;
    }
    dm->hrows = p, p += R * H;
    dm->dhrows = p, p += R * H;
    float **sc[] = {&dm->sc_lse, &dm->sc_ez, &dm->sc_logp, &dm->sc_ent, &dm->sc_glp, &dm->sc_gent};
    for (size_t i = 0; i < sizeof sc / sizeof *sc; i++) *sc[i] = p, p += T;
    float *tab = or1_alloc_floats(2 * (size_t)L0 * half);
    or1_rope_table(tab, tab + (size_t)L0 * half, L0, c->head_dim, c->rope_theta, &c->rope);
    int rc = op->upload(dm->be, dm->cos_t, tab, 2 * (size_t)L0 * half * sizeof(float));
    free(tab);
    return rc;
}

/* Ensures the workspace holds tokens tokens and positions below len (train: what backward
 * needs); a training workspace stays one. */
static int reserve(or1_dmodel *dm, int tokens, int len, bool train) {
    if (dm->mem && dm->cap_tokens >= tokens && dm->cap_len >= len && (dm->ws_train || !train)) return 0;
    int T = tokens > dm->cap_tokens ? tokens : dm->cap_tokens, L = len > dm->cap_len ? len : dm->cap_len;
    return workspace_new(dm, T, L, train || dm->ws_train);
}

/* Points dst at n host ints in backend memory: the host array itself on a host-memory
 * backend, else a copy at *cursor (advanced). */
static int device_ints(or1_dmodel *dm, const int32_t **dst, const int32_t *src, size_t n, int32_t **cursor) {
    if (dm->op->host_memory) {
        *dst = src;
        return 0;
    }
    *dst = *cursor;
    *cursor += n;
    return n ? dm->op->upload(dm->be, (void *)*dst, src, n * sizeof(int32_t)) : 0;
}

/* Makes the batch's index arrays visible to the backend. */
static int bind_batch(or1_dmodel *dm, const or1_batch *b) {
    size_t need = 2 * (size_t)b->n_tokens + b->n_seqs + 1 + 2 * (size_t)b->n_scored;
    if (!dm->op->host_memory && need > dm->ibuf_n) {
        dm->op->sync(dm->be);
        dm->op->release(dm->be, dm->ibuf);
        dm->ibuf = dm->op->alloc(dm->be, need * sizeof(int32_t));
        dm->ibuf_n = dm->ibuf ? need : 0;
        if (!dm->ibuf) return -1;
    }
    int32_t *cur = dm->ibuf;
    if (device_ints(dm, &dm->ids, b->ids, (size_t)b->n_tokens, &cur) ||
        device_ints(dm, &dm->pos, b->pos, (size_t)b->n_tokens, &cur) ||
        device_ints(dm, &dm->seq_start, b->seq_start, (size_t)b->n_seqs + 1, &cur) ||
        device_ints(dm, &dm->sc_pos, b->sc_pos, (size_t)b->n_scored, &cur))
        return -1;
    return device_ints(dm, &dm->sc_tgt, b->sc_tgt, (size_t)b->n_scored, &cur);
}

/* Where a layer's keys and values go and how its attention runs: a packed batch b (causal
 * attention over its sequences) or, with b NULL, decode rows attending over seg. kv_rows
 * NULL: keys and values are not kept. */
typedef struct {
    const or1_batch *b;
    const int32_t *kv_rows, *seg, *blocks;
} layer_mode;

/* Layer i's keys (values at +pool) in the KV pool. */
static float *pool_keys(const or1_dmodel *dm, int i) {
    size_t kvd = (size_t)dm->cfg.kv_heads * dm->cfg.head_dim;
    return dm->kv + (size_t)i * 2 * dm->pool_rows * kvd;
}

/* One decoder layer forward: x -> x2 = x + attn(norm(x)) -> out = x2 + mlp(norm(x2)). Each
 * residual add is done by the norm that reads its sum: x += res (the previous layer's x2, NULL for
 * the first layer) by the first norm, x2 += x by the second; out gets mlp(...) alone, and the next
 * norm (next layer's first, or the final one) adds this layer's x2 into it. */
static void layer_forward(or1_dmodel *dm, int i, layer_acts *l, float *out, const float *res, int T,
                          const layer_mode *md) {
    const or1_model_config *c = &dm->cfg;
    const or1_backend_ops *op = dm->op;
    const or1_layer *w = &dm->w.layer[i];
    const layer_bf16 *wb = &dm->h.layer[i];
    or1_backend *be = dm->be;
    int H = c->hidden, I = c->intermediate, hd = c->head_dim, qd = c->heads * hd, kvd = c->kv_heads * hd;
    int qkvd = qd + 2 * kvd;
    /* every pass (prefill, decode, the trainer's forward) runs the row-independent matmul, so a
     * token's activations never depend on the thread count, on what else is in the batch, or on
     * the phase: the rollout's log-probs are the trainer's bits */
    void (*mm)(or1_backend *, float *, const float *, const float *, const or1_bf16 *, const float *, int, int,
               int) = op->matmul_rows;
    op->rmsnorm(be, l->xn1, l->r1, l->x, res, w->ln1, T, H, c->rms_eps);
    mm(be, l->qkv, l->xn1, w->wqkv, wb->wqkv, w->bqkv, T, H, qkvd);
    if (c->qk_norm) { /* Qwen3: each query and key head's RMSNorm, from the projections kept in qkn */
        op->copy(be, l->qkn, l->qkv, (size_t)T * qkvd * sizeof(float));
        op->head_norm(be, l->qkv, l->qkr, l->qkn, w->qnorm, T, c->heads, hd, qkvd, c->rms_eps);
        op->head_norm(be, l->qkv + qd, l->qkr + (size_t)T * c->heads, l->qkn + qd, w->knorm, T, c->kv_heads, hd, qkvd,
                      c->rms_eps);
    }
    op->rope(be, l->qkv, qkvd, c->heads + c->kv_heads, hd, dm->pos, T, dm->cos_t, dm->sin_t, 0);
    float *k = dm->kv ? pool_keys(dm, i) : NULL, *v = k ? k + (size_t)dm->pool_rows * kvd : NULL;
    if (md->kv_rows) op->kv_store(be, k, v, md->kv_rows, l->qkv, T, qd, kvd);
    if (md->b)
        op->attention(be, l->att, l->lse, l->qkv, dm->seq_start, md->b->n_seqs, T, md->b->max_len, c->heads,
                      c->kv_heads, hd);
    else
        op->attention_decode(be, l->att, l->qkv, T, k, v, md->seg, md->blocks, dm->block, c->heads, c->kv_heads, hd,
                             dm->cap_len);
    mm(be, l->x2, l->att, w->wo, wb->wo, w->bo, T, qd, H);
    op->rmsnorm(be, l->xn2, l->r2, l->x2, l->x, w->ln2, T, H, c->rms_eps);
    mm(be, l->gu, l->xn2, w->wgu, wb->wgu, NULL, T, H, 2 * I);
    op->swiglu(be, dm->a, l->gu, T, I);
    mm(be, out, dm->a, w->wd, wb->wd, NULL, T, I, H);
}

/* Every layer over T embedded rows in l[0].x, then the final norm into out. Each layer's x2 is
 * added into the next layer's input by that layer's first norm (the last one's by the final norm);
 * in one slot (no train, or recompute) x2 still holds it when the next layer starts. A training
 * forward keeps every layer's activations, or with recompute each layer's input after that add
 * (in saved, from which backward recomputes the rest). */
static void run_layers(or1_dmodel *dm, int T, bool train, const layer_mode *md, float *out) {
    const or1_model_config *c = &dm->cfg;
    const float *res = NULL;
    bool every = train && !dm->recompute;
    size_t TH = (size_t)T * c->hidden;
    for (int i = 0; i < c->layers; i++) {
        layer_acts *l = &dm->l[every ? i : 0];
        float *next = every && i + 1 < c->layers ? dm->l[i + 1].x : dm->xf;
        layer_forward(dm, i, l, next, res, T, md);
        if (train && !every) dm->op->copy(dm->be, dm->saved + i * TH, l->x, TH * sizeof(float));
        res = l->x2;
        if (!every && i + 1 < c->layers) dm->op->copy(dm->be, l->x, dm->xf, TH * sizeof(float));
    }
    dm->op->rmsnorm(dm->be, out, dm->rf, dm->xf, res, dm->w.norm, T, c->hidden, c->rms_eps);
}

/* Embedding lookup, every layer and the final norm for a packed batch. */
int or1_dmodel_forward(or1_dmodel *dm, const or1_batch *b, bool train) {
    if (reserve(dm, b->n_tokens, b->max_len, train) || bind_batch(dm, b)) return -1;
    dm->op->gather(dm->be, dm->l[0].x, dm->w.embed, dm->h.embed, dm->ids, b->n_tokens, dm->cfg.hidden);
    layer_mode md = {b, NULL, NULL, NULL};
    run_layers(dm, b->n_tokens, train, &md, dm->hf);
    return dm->op->sync(dm->be);
}

/* Rows [i0, i0+n) of the scored positions, head_rows at a time. */
static int head_block(const or1_dmodel *dm, int S, int i0) {
    return S - i0 < dm->op->head_rows ? S - i0 : dm->op->head_rows;
}

/* Gathers the scored rows block by block, runs the streaming head, returns the results. */
int or1_dmodel_head(or1_dmodel *dm, const or1_batch *b, float temperature, float *logp, float *entropy) {
    const or1_backend_ops *op = dm->op;
    int H = dm->cfg.hidden, S = b->n_scored;
    for (int i0 = 0; i0 < S; i0 += op->head_rows) {
        int n = head_block(dm, S, i0);
        op->gather(dm->be, dm->hrows, dm->hf, NULL, dm->sc_pos + i0, n, H);
        op->head(dm->be, dm->sc_logp + i0, dm->sc_ent + i0, dm->sc_lse + i0, dm->sc_ez + i0, dm->hrows,
                 dm->w.lm_head, dm->h.lm_head, dm->sc_tgt + i0, n, H, dm->cfg.vocab, temperature);
    }
    if (op->sync(dm->be)) return -1;
    if (S == 0) return 0;
    if (op->download(dm->be, logp, dm->sc_logp, (size_t)S * sizeof(float))) return -1;
    return op->download(dm->be, entropy, dm->sc_ent, (size_t)S * sizeof(float));
}

/* Head backward: d(hf) at the scored rows (zero elsewhere) into dhf and the lm_head gradient. */
static void head_backward(or1_dmodel *dm, const or1_batch *b, float temperature, float *dhf) {
    const or1_backend_ops *op = dm->op;
    int H = dm->cfg.hidden, S = b->n_scored;
    op->zero(dm->be, dhf, (size_t)b->n_tokens * H * sizeof(float));
    for (int i0 = 0; i0 < S; i0 += op->head_rows) {
        int n = head_block(dm, S, i0);
        op->gather(dm->be, dm->hrows, dm->hf, NULL, dm->sc_pos + i0, n, H);
        op->head_bwd(dm->be, dm->dhrows, dm->g.lm_head, dm->hrows, dm->w.lm_head, dm->h.lm_head, dm->sc_tgt + i0,
                     dm->sc_lse + i0, dm->sc_ez + i0, dm->sc_glp + i0, dm->sc_gent + i0, n, H, dm->cfg.vocab,
                     temperature);
        op->scatter_add(dm->be, dhf, dm->dhrows, dm->sc_pos + i0, n, H);
    }
}

/* Layer i's activations for its backward: its own slot, or with recompute its forward run
 * again in the one slot from its saved input (the output goes to xf, which the final norm's
 * backward has finished with). */
static const layer_acts *layer_acts_for_backward(or1_dmodel *dm, int i, const or1_batch *b) {
    if (!dm->recompute) return &dm->l[i];
    size_t TH = (size_t)b->n_tokens * dm->cfg.hidden;
    dm->op->copy(dm->be, dm->l[0].x, dm->saved + i * TH, TH * sizeof(float));
    layer_mode md = {b, NULL, NULL, NULL};
    layer_forward(dm, i, &dm->l[0], dm->xf, NULL, b->n_tokens, &md);
    return &dm->l[0];
}

/* One layer backward; dres holds d(out) on entry and d(x) on return. */
static void layer_backward(or1_dmodel *dm, int i, const or1_batch *b) {
    const or1_model_config *c = &dm->cfg;
    const or1_backend_ops *op = dm->op;
    const or1_layer *w = &dm->w.layer[i];
    const layer_bf16 *wb = &dm->h.layer[i];
    or1_layer *g = &dm->g.layer[i];
    const layer_acts *l = layer_acts_for_backward(dm, i, b);
    or1_backend *be = dm->be;
    int T = b->n_tokens, H = c->hidden, I = c->intermediate, hd = c->head_dim;
    int qd = c->heads * hd, qkvd = qd + 2 * c->kv_heads * hd;
    op->matmul_dx(be, dm->da, dm->dres, w->wd, wb->wd, T, I, H, 0);
    op->swiglu_bwd(be, dm->dgu, dm->a, dm->da, l->gu, T, I); /* the MLP's input a again, in the same pass */
    op->matmul_dw(be, g->wd, NULL, dm->dres, dm->a, T, I, H);
    op->matmul_dw(be, g->wgu, NULL, dm->dgu, l->xn2, T, H, 2 * I);
    op->matmul_dx(be, dm->dxn, dm->dgu, w->wgu, wb->wgu, T, H, 2 * I, 0);
    op->rmsnorm_bwd(be, dm->dres, g->ln2, dm->dxn, l->x2, l->r2, w->ln2, T, H);
    op->matmul_dw(be, g->wo, g->bo, dm->dres, l->att, T, qd, H);
    op->matmul_dx(be, dm->datt, dm->dres, w->wo, wb->wo, T, qd, H, 0);
    op->attention_bwd(be, dm->dqkv, dm->datt, l->qkv, l->att, l->lse, dm->seq_start, b->n_seqs, T, b->max_len,
                      c->heads, c->kv_heads, hd);
    op->rope(be, dm->dqkv, qkvd, c->heads + c->kv_heads, hd, dm->pos, T, dm->cos_t, dm->sin_t, 1);
    if (c->qk_norm) {
        op->head_norm_bwd(be, dm->dqkv, g->qnorm, l->qkn, l->qkr, w->qnorm, T, c->heads, hd, qkvd);
        op->head_norm_bwd(be, dm->dqkv + qd, g->knorm, l->qkn + qd, l->qkr + (size_t)T * c->heads, w->knorm, T,
                          c->kv_heads, hd, qkvd);
    }
    op->matmul_dw(be, g->wqkv, g->bqkv, dm->dqkv, l->xn1, T, H, qkvd);
    op->matmul_dx(be, dm->dxn, dm->dqkv, w->wqkv, wb->wqkv, T, H, qkvd, 0);
    op->rmsnorm_bwd(be, dm->dres, g->ln1, dm->dxn, l->x, l->r1, w->ln1, T, H);
}

/* Head, final norm, layers in reverse, then the embedding scatter-add. */
int or1_dmodel_backward(or1_dmodel *dm, const or1_batch *b, float temperature, const float *g_logp,
                        const float *g_entropy) {
    const or1_model_config *c = &dm->cfg;
    const or1_backend_ops *op = dm->op;
    int T = b->n_tokens, H = c->hidden, S = b->n_scored;
    if (has_grads(dm, "backward") < 0) return -1;
    if (!dm->ws_train) return or1_fail("%s model: backward needs a forward with train", op->name);
    if (S && (op->upload(dm->be, dm->sc_glp, g_logp, (size_t)S * sizeof(float)) ||
              op->upload(dm->be, dm->sc_gent, g_entropy, (size_t)S * sizeof(float))))
        return -1;
    head_backward(dm, b, temperature, dm->dxn);
    op->zero(dm->be, dm->dres, (size_t)T * H * sizeof(float));
    op->rmsnorm_bwd(dm->be, dm->dres, dm->g.norm, dm->dxn, dm->xf, dm->rf, dm->w.norm, T, H);
    for (int i = c->layers - 1; i >= 0; i--) layer_backward(dm, i, b);
    op->scatter_add(dm->be, dm->g.embed, dm->dres, dm->ids, T, H);
    return op->sync(dm->be);
}

/* The gradients' global L2 norm. */
double or1_dmodel_grad_norm(or1_dmodel *dm) {
    return has_grads(dm, "norm") < 0 ? -1 : dm->op->grad_norm(dm->be, dm->grads, dm->n);
}

/* The parameters' global L2 norm (a sharded model's: its masters'): NaN or infinite as soon as
 * one weight is. */
double or1_dmodel_param_norm(or1_dmodel *dm) {
    if (dm->sharded) return dm->op->grad_norm(dm->be, dm->master, dm->hi - dm->lo);
    return dm->op->grad_norm(dm->be, dm->params, dm->n);
}

/* The L2 norm of the gradients' range [lo, hi). */
double or1_dmodel_grad_norm_range(or1_dmodel *dm, size_t lo, size_t hi) {
    return has_grads(dm, "norm") < 0 ? -1 : dm->op->grad_norm(dm->be, dm->grads + lo, hi - lo);
}

/* Attaches opt's moments (for n parameters): used in place on a host-memory backend, else
 * copied to it. */
static int attach_optimizer(or1_dmodel *dm, or1_adamw *opt, size_t n) {
    if (dm->opt == opt) return 0;
    if (opt->n != n) return or1_fail("optimizer state for %zu parameters, the update covers %zu", opt->n, n);
    const or1_backend_ops *op = dm->op;
    size_t bytes = n * sizeof(float);
    if (!op->host_memory) {
        op->release(dm->be, dm->m);
        op->release(dm->be, dm->v);
        dm->m = op->alloc(dm->be, bytes);
        dm->v = dm->m ? op->alloc(dm->be, bytes) : NULL;
        if (!dm->v || op->upload(dm->be, dm->m, opt->m, bytes) || op->upload(dm->be, dm->v, opt->v, bytes))
            return or1_fail_ctx("%s model: AdamW moments", op->name);
    } else {
        dm->m = opt->m, dm->v = opt->v;
    }
    dm->opt = opt;
    return 0;
}

/* Norm, optional clipping, one AdamW step, refreshed weight copies, zeroed gradients. */
int or1_dmodel_step(or1_dmodel *dm, or1_adamw *opt, const or1_adamw_cfg *c, double max_norm, double *norm) {
    double gn = or1_dmodel_grad_norm(dm);
    if (gn < 0) return -1;
    if (norm) *norm = gn;
    return or1_dmodel_step_range(dm, opt, c, 0, dm->n, gn, max_norm);
}

/* A sharded model's norms and biases inside its master range, copied from the masters (the
 * rest of vec is left as it is). */
static void vec_from_masters(or1_dmodel *dm) {
    for (int k = 0; k < dm->n_segs; k++) {
        const vec_seg *s = &dm->segs[k];
        size_t a = s->off > dm->lo ? s->off : dm->lo, b = s->off + s->n < dm->hi ? s->off + s->n : dm->hi;
        if (a < b)
            dm->op->copy(dm->be, dm->vec + s->at + (a - s->off), dm->master + (a - dm->lo), (b - a) * sizeof(float));
    }
}

/* The compute weights of [lo, hi) after the fp32 ones changed there: the bf16 weights, and a
 * sharded model's vectors. */
static void refresh_range(or1_dmodel *dm, size_t lo, size_t hi) {
    if (!dm->wb) return;
    dm->op->to_bf16(dm->be, dm->wb + lo, dm->sharded ? dm->master : dm->params + lo, hi - lo);
    if (dm->sharded) vec_from_masters(dm);
}

/* Clipping of the range by the given global norm, AdamW on the range alone, then zeroed
 * gradients (the other ranges belong to other ranks under ZeRO stage 1). */
int or1_dmodel_step_range(or1_dmodel *dm, or1_adamw *opt, const or1_adamw_cfg *c, size_t lo, size_t hi,
                          double norm, double max_norm) {
    const or1_backend_ops *op = dm->op;
    if (has_grads(dm, "optimizer step") < 0) return -1;
    if (lo > hi || hi > dm->n) return or1_fail("optimizer step over [%zu, %zu) of %zu parameters", lo, hi, dm->n);
    if (dm->sharded && (lo != dm->lo || hi != dm->hi))
        return or1_fail("optimizer step over [%zu, %zu): this model holds the masters of [%zu, %zu) alone", lo, hi,
                        dm->lo, dm->hi);
    if (attach_optimizer(dm, opt, hi - lo)) return -1;
    if (max_norm > 0) op->clip(dm->be, dm->grads + lo, hi - lo, norm, max_norm);
    opt->step++;
    float *p = dm->sharded ? dm->master : dm->params + lo;
    op->adamw(dm->be, p, dm->m, dm->v, dm->grads + lo, hi - lo, (long)opt->step, c);
    refresh_range(dm, lo, hi);
    or1_dmodel_zero_grad(dm);
    return op->sync(dm->be);
}

/* Releases the KV pool, the decode buffers and the workspace (a training one included): what
 * the rollout holds is not kept through training, nor the reverse. */
void or1_dmodel_decode_release(or1_dmodel *dm) {
    const or1_backend_ops *op = dm->op;
    op->sync(dm->be);
    void *old[] = {dm->kv, dm->logits, dm->dec, dm->states, dm->mem};
    for (size_t i = 0; i < sizeof old / sizeof *old; i++) op->release(dm->be, old[i]);
    dm->kv = NULL, dm->logits = NULL, dm->dec = NULL, dm->states = NULL, dm->picked = NULL, dm->mem = NULL;
    dm->pool_rows = 0, dm->rows_cap = 0, dm->n_states = 0, dm->ws_train = false;
}

/* The paged KV pool, the logits of rows_cap rows, the step's index arrays (tokens,
 * positions, KV rows, segments, block table, a prompt's KV rows, the rows to sample), the hidden
 * states and a workspace (a training workspace is released first, so the pool does not sit
 * beside it). */
int or1_dmodel_decode_reserve(or1_dmodel *dm, int n_blocks, int block, int rows_cap, int prompt_cap, int pos_cap,
                              int table_cap, int n_states) {
    const or1_model_config *c = &dm->cfg;
    const or1_backend_ops *op = dm->op;
    if (pos_cap > c->max_pos)
        return or1_fail("decode: %d positions exceed max_position_embeddings %d", pos_cap, c->max_pos);
    or1_dmodel_decode_release(dm);
    size_t kvd = (size_t)c->kv_heads * c->head_dim, rows = (size_t)n_blocks * block;
    size_t ints = (size_t)8 * rows_cap + (size_t)table_cap + (size_t)prompt_cap;
    dm->kv = op->alloc(dm->be, (size_t)c->layers * 2 * rows * kvd * sizeof(float));
    dm->logits = dm->kv ? op->alloc(dm->be, (size_t)rows_cap * c->vocab * sizeof(float)) : NULL;
    dm->dec = dm->logits ? op->alloc(dm->be, ints * sizeof(int32_t)) : NULL;
    dm->states = dm->dec ? op->alloc(dm->be, ((size_t)n_states + rows_cap) * c->hidden * sizeof(float)) : NULL;
    if (!dm->states) return or1_fail_ctx("%s decode: KV cache of %d blocks of %d rows", op->name, n_blocks, block);
    dm->picked = dm->states + (size_t)n_states * c->hidden;
    dm->pool_rows = (int)rows, dm->block = block, dm->rows_cap = rows_cap, dm->n_states = n_states;
    dm->prompt_cap = prompt_cap, dm->table_cap = table_cap;
    return reserve(dm, rows_cap > prompt_cap ? rows_cap : prompt_cap, pos_cap, false);
}

/* Forward of one sequence keeping every layer's keys and values at the given pool rows. */
int or1_dmodel_prefill(or1_dmodel *dm, const or1_batch *b, const int32_t *kv_rows, int state) {
    const or1_model_config *c = &dm->cfg;
    if (!dm->kv || b->n_seqs != 1 || b->n_tokens > dm->prompt_cap)
        return or1_fail("prefill: %d tokens for prompts of %d", b->n_tokens, dm->prompt_cap);
    if (state < 0 || state >= dm->n_states) return or1_fail("prefill: state %d of %d", state, dm->n_states);
    for (int t = 0; t < b->n_tokens; t++)
        if (kv_rows[t] < 0 || kv_rows[t] >= dm->pool_rows)
            return or1_fail("prefill: token %d at KV row %d of %d", t, kv_rows[t], dm->pool_rows);
    const int32_t *rows_d;
    int32_t *cur = dm->dec + (size_t)7 * dm->rows_cap + dm->table_cap;
    if (reserve(dm, b->n_tokens, b->max_len, false) || bind_batch(dm, b) ||
        device_ints(dm, &rows_d, kv_rows, (size_t)b->n_tokens, &cur))
        return -1;
    dm->op->gather(dm->be, dm->l[0].x, dm->w.embed, dm->h.embed, dm->ids, b->n_tokens, c->hidden);
    layer_mode md = {b, rows_d, NULL, NULL};
    run_layers(dm, b->n_tokens, false, &md, dm->hf);
    dm->op->copy(dm->be, dm->states + (size_t)state * c->hidden, dm->hf + (size_t)(b->n_tokens - 1) * c->hidden,
                 (size_t)c->hidden * sizeof(float));
    return dm->op->sync(dm->be);
}

/* One token per row through every layer against the paged pool; final hidden states out
 * (queued on the backend: errors surface at the next sync or download). */
int or1_dmodel_decode(or1_dmodel *dm, int R, const int32_t *tokens, const int32_t *pos, const int32_t *kv_rows,
                      const int32_t *seg, const int32_t *blocks, int n_table, int state) {
    const or1_model_config *c = &dm->cfg;
    if (R < 1 || R > dm->rows_cap || n_table > dm->table_cap)
        return or1_fail("decode: %d rows and %d table entries for a workspace of %d and %d", R, n_table, dm->rows_cap,
                        dm->table_cap);
    if (state < 0 || state + R > dm->n_states)
        return or1_fail("decode: states %d..%d of %d", state, state + R - 1, dm->n_states);
    const int32_t *tok_d, *rows_d, *seg_d, *blk_d;
    int32_t *cur = dm->dec;
    if (device_ints(dm, &tok_d, tokens, (size_t)R, &cur) || device_ints(dm, &dm->pos, pos, (size_t)R, &cur) ||
        device_ints(dm, &rows_d, kv_rows, (size_t)R, &cur) || device_ints(dm, &seg_d, seg, (size_t)4 * R, &cur) ||
        device_ints(dm, &blk_d, blocks, (size_t)n_table, &cur))
        return -1;
    dm->op->gather(dm->be, dm->l[0].x, dm->w.embed, dm->h.embed, tok_d, R, c->hidden);
    layer_mode md = {NULL, rows_d, seg_d, blk_d};
    run_layers(dm, R, false, &md, dm->states + (size_t)state * c->hidden);
    return 0; /* queued: the sampler's download of the new tokens waits for it */
}

/* The states asked for gathered into rows, their full-vocabulary logits (row by row) and the
 * backend's draw for each. */
int or1_dmodel_sample(or1_dmodel *dm, int A, const int32_t *states, const or1_sample_row *rows, int32_t *next,
                      float *logp) {
    const or1_model_config *c = &dm->cfg;
    if (A < 1 || A > dm->rows_cap) return or1_fail("sample: %d rows for a workspace of %d", A, dm->rows_cap);
    for (int a = 0; a < A; a++)
        if (states[a] < 0 || states[a] >= dm->n_states)
            return or1_fail("sample: row %d asks for state %d of %d", a, states[a], dm->n_states);
    const int32_t *idx;
    int32_t *cur = dm->dec + (size_t)7 * dm->rows_cap + dm->table_cap + dm->prompt_cap;
    if (device_ints(dm, &idx, states, (size_t)A, &cur)) return -1;
    dm->op->gather(dm->be, dm->picked, dm->states, NULL, idx, A, c->hidden);
    dm->op->matmul_rows(dm->be, dm->logits, dm->picked, dm->w.lm_head, dm->h.lm_head, NULL, A, c->hidden, c->vocab);
    return dm->op->sample(dm->be, next, logp, dm->logits, A, c->vocab, rows);
}

/* Whether the backend samples with row's settings (fails naming the device otherwise). */
int or1_dmodel_sample_check(or1_dmodel *dm, const or1_sample_row *row) {
    if (dm->op->sample_check(dm->be, row)) return or1_fail_ctx("%s sampler", dm->op->name);
    return 0;
}

/* Rank 0's id of a device communicator (its size), or 0 when the backend has no device
 * collectives (the trainer then sums through the host over MPI). */
int or1_dmodel_comm_id(or1_dmodel *dm, void *id, size_t cap) {
    const or1_backend_ops *op = dm->op;
    if (!op->comm_id || !op->comm_init || !op->allreduce) return 0;
    return op->comm_id(dm->be, id, cap);
}

/* Joins the ranks' device communicator (a collective over them). */
int or1_dmodel_comm_init(or1_dmodel *dm, const void *id, int rank, int size) {
    if (!dm->op->comm_init) return or1_fail("%s backend: no device collectives", dm->op->name);
    return dm->op->comm_init(dm->be, id, rank, size);
}

/* Whether the backend runs collectives itself (and the model has gradients); fails naming
 * what is missing otherwise. */
static int has_collectives(const or1_dmodel *dm) {
    if (has_grads(dm, "collectives") < 0) return -1;
    if (dm->op->allreduce && dm->op->reduce_scatter && dm->op->allgather) return 1;
    return or1_fail("%s backend: no device collectives (the host and MPI sum instead)", dm->op->name);
}

/* The gradients summed over the ranks on the device. */
int or1_dmodel_allreduce_grads(or1_dmodel *dm) {
    return has_collectives(dm) > 0 ? dm->op->allreduce(dm->be, dm->grads, dm->n) : -1;
}

/* Each rank's shard of the gradients summed over the ranks, in place. */
int or1_dmodel_reduce_scatter_grads(or1_dmodel *dm, const size_t *starts) {
    return has_collectives(dm) > 0 ? dm->op->reduce_scatter(dm->be, dm->grads, starts) : -1;
}

/* Every rank's shard of the weights to every rank: the fp32 ones and a fresh bf16 copy, or a
 * sharded model's bf16 weights and its vectors (each rank adds its masters' part into a zeroed
 * copy, so the sum is exact). */
int or1_dmodel_allgather_params(or1_dmodel *dm, const size_t *starts) {
    const or1_backend_ops *op = dm->op;
    if (has_collectives(dm) < 0) return -1;
    if (!dm->sharded) {
        if (op->allgather(dm->be, dm->params, sizeof(float), starts)) return -1;
        if (dm->wb) op->to_bf16(dm->be, dm->wb, dm->params, dm->n);
        return op->sync(dm->be);
    }
    if (op->allgather(dm->be, dm->wb, sizeof(or1_bf16), starts)) return -1;
    op->zero(dm->be, dm->vec, dm->vec_n * sizeof(float));
    vec_from_masters(dm);
    return op->allreduce(dm->be, dm->vec, dm->vec_n);
}
