/* The decoder written once over a backend (or1_backend_ops): packed forward with saved
 * activations, the streaming head at scored positions, backward into the gradients, and the
 * prefill / decode / sample steps the rollout engine drives. Each layer's forward and backward
 * sit side by side (llm.c style); every buffer lives in backend memory and is sized once for
 * the largest batch seen (growing only when a batch needs more). Where the weights live and how
 * they are stepped: placement.c. */
#include "or1/core.h"
#include "or1/model.h"

#include "dmodel.h"

#include <stdlib.h>
#include <string.h>

/* The widths of c's activations (the act_dims the rows of LAYER_ACTS are written in). */
static act_dims act_dims_of(const or1_model_config *c) {
    size_t q = (size_t)c->heads * c->head_dim;
    return (act_dims){.hidden = (size_t)c->hidden,
                      .q = q,
                      .qkv = q + 2 * (size_t)c->kv_heads * c->head_dim,
                      .heads = (size_t)c->heads,
                      .kv_heads = (size_t)c->kv_heads,
                      .inter = (size_t)c->intermediate};
}

/* Floats one layer's saved activations need for T tokens: the rows of LAYER_ACTS it has. */
static size_t layer_acts_floats(const or1_model_config *c, size_t T) {
    const act_dims d = act_dims_of(c);
    size_t n = 0;
#define X(name, width, when) n += model_layer_feature(c, when) ? T * (width) : 0;
    LAYER_ACTS(X)
#undef X
    return n;
}

/* A block of floats being carved into views: cap floats at base, used of them handed out; over
 * once a view did not fit. */
typedef struct {
    float *base;
    size_t used, cap;
    bool over;
} carver;

/* The next n floats of k's block, or NULL with k over when they do not fit (and for every view
 * after): a view sized past its block fails loudly instead of overlapping the next one. */
static float *carve(carver *k, size_t n) {
    if (k->over || n > k->cap - k->used) {
        k->over = true;
        return NULL;
    }
    float *p = k->base + k->used;
    k->used += n;
    return p;
}

/* Carves one layer's views for T tokens out of k, one per row of LAYER_ACTS it has (NULL for
 * the others). */
static void layer_acts_carve(layer_acts *l, carver *k, const or1_model_config *c, size_t T) {
    const act_dims d = act_dims_of(c);
#define X(name, width, when) l->name = model_layer_feature(c, when) ? carve(k, T * (width)) : NULL;
    LAYER_ACTS(X)
#undef X
}

/* The sizes of a workspace for T tokens, positions below L and R rows per head call, with
 * train the backward scratch and every layer's activations (or with recompute one layer's and
 * every layer's input). */
static ws_dims ws_dims_of(const or1_model_config *c, size_t T, size_t L, bool train, bool recompute, size_t R) {
    const act_dims d = act_dims_of(c);
    return (ws_dims){.T = T,
                     .L = L,
                     .R = R,
                     .hidden = d.hidden,
                     .inter = d.inter,
                     .q = d.q,
                     .qkv = d.qkv,
                     .half = (size_t)c->head_dim / 2,
                     .layers = (size_t)c->layers,
                     .train = train,
                     .recompute = recompute};
}

/* Layers whose activations a workspace keeps at once: every one to train without recompute,
 * else the one running. */
static size_t act_slots(const ws_dims *w) {
    return w->train && !w->recompute ? w->layers : 1;
}

/* Floats of the workspace w under c: its layers' activations, then the rows of WORKSPACE_BUFS
 * it has; workspace_new carves exactly this. */
static size_t workspace_floats(const or1_model_config *c, ws_dims w) {
    size_t n = act_slots(&w) * layer_acts_floats(c, w.T);
#define X(name, floats, when) n += (when) ? (floats) : 0;
    WORKSPACE_BUFS(X)
#undef X
    return n;
}

/* Bytes of the training workspace for micro-batches of `tokens` tokens (memory reports). */
size_t or1_dmodel_workspace_bytes(const or1_dmodel *dm, int tokens) {
    size_t T = (size_t)tokens;
    const ws_dims w = ws_dims_of(&dm->cfg, T, T, true, dm->recompute, (size_t)dm->op->head_rows);
    return workspace_floats(&dm->cfg, w) * sizeof(float);
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
    const ws_dims w = ws_dims_of(c, (size_t)T0, (size_t)L0, train, dm->recompute, (size_t)op->head_rows);
    size_t total = workspace_floats(c, w), half = w.half;
    dm->mem = op->alloc(dm->be, total * sizeof(float));
    dm->ws_train = false;
    if (!dm->mem) return or1_fail_ctx("%s activations for %d tokens", op->name, T0);
    free(dm->l);
    dm->l = or1_calloc(act_slots(&w), sizeof *dm->l);
    carver k = {.base = dm->mem, .cap = total};
    for (size_t i = 0; i < act_slots(&w); i++) layer_acts_carve(&dm->l[i], &k, c, w.T);
#define X(name, floats, when) dm->name = (when) ? carve(&k, floats) : NULL;
    WORKSPACE_BUFS(X)
#undef X
    if (k.over || k.used != total) {
        op->release(dm->be, dm->mem);
        dm->mem = NULL;
        if (k.over) return or1_fail("%s workspace: its views do not fit in the %zu floats sized", op->name, total);
        return or1_fail("%s workspace: its views take %zu of the %zu floats sized", op->name, k.used, total);
    }
    dm->cap_tokens = T0, dm->cap_len = L0, dm->ws_train = train;
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

/* Layer i's keys (values one pool of rows later) in the KV pool, whose elements take the
 * backend's kv_bytes. */
static char *pool_keys(const or1_dmodel *dm, int i) {
    size_t kvd = (size_t)dm->cfg.kv_heads * dm->cfg.head_dim;
    return (char *)dm->kv + (size_t)i * 2 * dm->pool_rows * kvd * (size_t)dm->be->kv_bytes;
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
    char *k = dm->kv ? pool_keys(dm, i) : NULL, *v = k ? k + (size_t)dm->pool_rows * kvd * (size_t)be->kv_bytes : NULL;
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
    if (model_has_grads(dm, "backward") < 0) return -1;
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
    dm->kv = op->alloc(dm->be, (size_t)c->layers * 2 * rows * kvd * (size_t)dm->be->kv_bytes);
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

