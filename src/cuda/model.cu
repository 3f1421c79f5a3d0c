/* The decoder on the GPU, mirroring src/model/forward.c layer by layer: packed forward with
 * saved activations, the streaming head at scored positions, backward into device gradients,
 * AdamW on fp32 master weights, and batched decode with a per-slot KV cache and sampling.
 * Device weight pointers keep the host model's layout: a parameter's device address is the
 * device buffer plus its offset in m->params. */
#include "internal.h"

extern "C" {
#include "or1/core.h"
#include "or1/kernels.h"
#include "model/layer_acts.h"
}

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { HEAD_ROWS = 1024 };

/* Saved activations of one layer (views into the workspace). */
typedef or1_layer_acts layer_acts;

struct or1_cuda_model {
    or1_cuda *g;
    or1_model_config cfg;
    size_t n;
    float *params, *grads, *m, *v;
    __nv_bfloat16 *pb; /* bf16 copy of params */
    long step;
    or1_weights w, gw; /* device pointers */
    /* workspace, sized for cap_tokens / cap_len / train */
    int cap_tokens, cap_len, n_slots_acts;
    float *mem;
    layer_acts *l;
    float *xf, *rf, *hf, *cos_t, *sin_t, *a, *da, *dgu, *datt, *dqkv, *dxn, *dres;
    float *hrows, *dhrows, *hl, *hez, *hlp, *hent, *hglp, *hgH;
    int32_t *ibuf; /* ids, pos, seq_start, sc_pos, sc_tgt */
    size_t ibuf_n;
    int32_t *ids, *pos, *seq_start, *sc_pos, *sc_tgt;
    /* decode */
    int kv_slots, kv_cap;
    float *kv;          /* per layer: K [slots][cap][kvd] then V */
    int32_t *dec_i;     /* tokens, pos, n_ctx, next, stream, counter: [slots] each */
    uint64_t *dec_u;    /* seeds [slots] */
    float *dec_f;       /* logits [slots][V] then logp */
    int *slot_len;      /* host */
};

/* Device twin of a host pointer into m->params (NULL stays NULL). */
static float *dev_of(const float *host_base, const float *p, float *dev_base) {
    return p ? dev_base + (p - host_base) : NULL;
}

/* Device weight views in the host layout. */
static void bind(or1_cuda_model *dm, or1_weights *dst, const or1_weights *src, const float *host_base,
                 float *dev_base) {
    dst->embed = dev_of(host_base, src->embed, dev_base);
    dst->norm = dev_of(host_base, src->norm, dev_base);
    dst->lm_head = dev_of(host_base, src->lm_head, dev_base);
    dst->layer = (or1_layer *)or1_calloc((size_t)dm->cfg.layers, sizeof *dst->layer);
    for (int i = 0; i < dm->cfg.layers; i++) {
        const or1_layer *s = &src->layer[i];
        or1_layer *d = &dst->layer[i];
        d->ln1 = dev_of(host_base, s->ln1, dev_base), d->wqkv = dev_of(host_base, s->wqkv, dev_base);
        d->bqkv = dev_of(host_base, s->bqkv, dev_base), d->wo = dev_of(host_base, s->wo, dev_base);
        d->bo = dev_of(host_base, s->bo, dev_base), d->ln2 = dev_of(host_base, s->ln2, dev_base);
        d->wgu = dev_of(host_base, s->wgu, dev_base), d->wd = dev_of(host_base, s->wd, dev_base);
    }
}

/* bf16 twin of a device parameter pointer. */
static const __nv_bfloat16 *bf(const or1_cuda_model *dm, const float *p) { return dm->pb + (p - dm->params); }

/* Refreshes the bf16 copy (kept in step whatever the context's precision, which may change). */
static void refresh_bf16(or1_cuda_model *dm) { cu_to_bf16(dm->g, dm->pb, dm->params, dm->n); }

/* Device buffers in the host layout, then parameters uploaded and cast to bf16. */
or1_cuda_model *or1_cuda_model_new(or1_cuda *g, const or1_model *m) {
    or1_cuda_model *dm = (or1_cuda_model *)or1_calloc(1, sizeof *dm);
    dm->g = g;
    dm->cfg = m->cfg;
    dm->n = m->n_floats;
    size_t bytes = dm->n * sizeof(float);
    dm->params = (float *)or1_cuda_alloc(bytes);
    dm->grads = dm->params ? (float *)or1_cuda_alloc(bytes) : NULL;
    dm->pb = dm->grads ? (__nv_bfloat16 *)or1_cuda_alloc(dm->n * sizeof(__nv_bfloat16)) : NULL;
    bind(dm, &dm->w, &m->w, m->params, dm->params);
    bind(dm, &dm->gw, &m->w, m->params, dm->grads);
    if (!dm->pb || or1_cuda_model_upload(dm, m)) {
        or1_fail_ctx("cuda model (%.2f GiB of parameters)", (double)bytes / (1 << 30));
        or1_cuda_model_free(dm);
        return NULL;
    }
    return dm;
}

/* Releases every device buffer once queued work is done. */
void or1_cuda_model_free(or1_cuda_model *dm) {
    if (!dm) return;
    or1_cuda_sync(dm->g);
    void *dev[] = {dm->params, dm->grads, dm->m,     dm->v,     dm->pb,   dm->mem,
                   dm->ibuf,   dm->kv,    dm->dec_i, dm->dec_u, dm->dec_f};
    for (size_t i = 0; i < sizeof dev / sizeof *dev; i++) or1_cuda_release(dev[i]);
    free(dm->w.layer);
    free(dm->gw.layer);
    free(dm->l);
    free(dm->slot_len);
    free(dm);
}

/* Parameters to the device, with a fresh bf16 copy. */
int or1_cuda_model_upload(or1_cuda_model *dm, const or1_model *m) {
    if (or1_cuda_upload(dm->g, dm->params, m->params, dm->n * sizeof(float))) return -1;
    refresh_bf16(dm);
    return or1_cuda_sync(dm->g);
}

/* Parameters and gradients back to the host model. */
int or1_cuda_model_download(or1_cuda_model *dm, or1_model *m) {
    if (or1_cuda_download(dm->g, m->params, dm->params, dm->n * sizeof(float))) return -1;
    return or1_cuda_download(dm->g, m->grads, dm->grads, dm->n * sizeof(float));
}

/* Gradients from the host model. */
int or1_cuda_model_set_grads(or1_cuda_model *dm, const or1_model *m) {
    return or1_cuda_upload(dm->g, dm->grads, m->grads, dm->n * sizeof(float));
}

/* Queued zeroing of the gradients. */
void or1_cuda_model_zero_grad(or1_cuda_model *dm) { or1_cuda_zero(dm->g, dm->grads, dm->n * sizeof(float)); }

/* (Re)allocates the workspace for T tokens, sequences up to len, every layer when training. */
static int reserve(or1_cuda_model *dm, int tokens, int len, bool train) {
    const or1_model_config *c = &dm->cfg;
    int slots = train ? c->layers : 1;
    if (dm->mem && dm->cap_tokens >= tokens && dm->cap_len >= len && dm->n_slots_acts >= slots) return 0;
    int T0 = tokens > dm->cap_tokens ? tokens : dm->cap_tokens, L0 = len > dm->cap_len ? len : dm->cap_len;
    if (slots < dm->n_slots_acts) slots = dm->n_slots_acts;
    or1_cuda_sync(dm->g);
    or1_cuda_release(dm->mem);
    dm->mem = NULL;
    size_t T = (size_t)T0, H = (size_t)c->hidden, I = (size_t)c->intermediate;
    size_t qd = (size_t)c->heads * c->head_dim, qkvd = qd + 2 * (size_t)c->kv_heads * c->head_dim;
    size_t half = (size_t)c->head_dim / 2, R = HEAD_ROWS;
    size_t total = (size_t)slots * or1_layer_acts_floats(c, T) + T * (2 * H + 1) + 2 * (size_t)L0 * half +
                   T * (4 * I + qd + qkvd + 2 * H) + 2 * R * H + 6 * T;
    float *p = dm->mem = (float *)or1_cuda_alloc(total * sizeof(float));
    if (!p) return or1_fail_ctx("cuda activations for %d tokens", T0);
    dm->cap_tokens = T0, dm->cap_len = L0, dm->n_slots_acts = slots;
    free(dm->l);
    dm->l = (layer_acts *)or1_calloc((size_t)slots, sizeof *dm->l);
    for (int i = 0; i < slots; i++) p = or1_layer_acts_carve(&dm->l[i], p, c, T);
    dm->xf = p, p += T * H;
    dm->rf = p, p += T;
    dm->hf = p, p += T * H;
    dm->cos_t = p, p += (size_t)L0 * half;
    dm->sin_t = p, p += (size_t)L0 * half;
    dm->a = p, p += T * I;
    dm->da = p, p += T * I;
    dm->dgu = p, p += T * 2 * I;
    dm->datt = p, p += T * qd;
    dm->dqkv = p, p += T * qkvd;
    dm->dxn = p, p += T * H;
    dm->dres = p, p += T * H;
    dm->hrows = p, p += R * H;
    dm->dhrows = p, p += R * H;
    dm->hl = p, p += T;
    dm->hez = p, p += T;
    dm->hlp = p, p += T;
    dm->hent = p, p += T;
    dm->hglp = p, p += T;
    dm->hgH = p;
    float *tab = or1_alloc_floats(2 * (size_t)L0 * half);
    or1_rope_table(tab, tab + (size_t)L0 * half, L0, c->head_dim, c->rope_theta);
    int rc = or1_cuda_upload(dm->g, dm->cos_t, tab, 2 * (size_t)L0 * half * sizeof(float));
    free(tab);
    return rc;
}

/* Uploads the batch's index arrays into one device buffer. */
static int upload_batch(or1_cuda_model *dm, const or1_batch *b) {
    size_t need = 2 * (size_t)b->n_tokens + b->n_seqs + 1 + 2 * (size_t)b->n_scored;
    if (need > dm->ibuf_n) {
        or1_cuda_sync(dm->g);
        or1_cuda_release(dm->ibuf);
        dm->ibuf = (int32_t *)or1_cuda_alloc(need * sizeof(int32_t));
        dm->ibuf_n = dm->ibuf ? need : 0;
        if (!dm->ibuf) return -1;
    }
    int32_t *p = dm->ibuf;
    struct {
        int32_t **dst;
        const int32_t *src;
        size_t n;
    } parts[] = {{&dm->ids, b->ids, (size_t)b->n_tokens},
                 {&dm->pos, b->pos, (size_t)b->n_tokens},
                 {&dm->seq_start, b->seq_start, (size_t)b->n_seqs + 1},
                 {&dm->sc_pos, b->sc_pos, (size_t)b->n_scored},
                 {&dm->sc_tgt, b->sc_tgt, (size_t)b->n_scored}};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
        *parts[i].dst = p;
        if (parts[i].n && or1_cuda_upload(dm->g, p, parts[i].src, parts[i].n * sizeof(int32_t))) return -1;
        p += parts[i].n;
    }
    return 0;
}

/* Writes each row's rotated key and value into a cache at its position: row r goes to
 * kc + r*slot_stride + pos[r]*kvd (slot_stride 0: every row into one slot). */
__global__ void k_save_kv(float *kc, float *vc, size_t slot_stride, const float *qkv, const int32_t *pos, int T,
                          int qd, int kvd) {
    size_t n = (size_t)T * kvd, stride = (size_t)qd + 2 * kvd;
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < n; k += (size_t)gridDim.x * blockDim.x) {
        size_t r = k / kvd, d = k % kvd, dst = r * slot_stride + (size_t)pos[r] * kvd + d;
        kc[dst] = qkv[r * stride + qd + d];
        vc[dst] = qkv[r * stride + qd + kvd + d];
    }
}

/* Where a layer's keys and values go during a forward (kc == NULL: nowhere). */
typedef struct {
    float *kc, *vc;
    size_t slot_stride;
} kv_dst;

/* One decoder layer forward (layer_forward in forward.c), saving keys and values to kv. */
static void layer_forward(or1_cuda_model *dm, const or1_layer *w, layer_acts *l, float *out, const or1_batch *b,
                          int T, kv_dst kv) {
    const or1_model_config *c = &dm->cfg;
    or1_cuda *g = dm->g;
    int H = c->hidden, I = c->intermediate, hd = c->head_dim;
    int qd = c->heads * hd, qkvd = qd + 2 * c->kv_heads * hd;
    or1_cuda_rmsnorm(g, l->xn1, l->r1, l->x, w->ln1, T, H, c->rms_eps);
    cu_matmul(g, l->qkv, l->xn1, w->wqkv, bf(dm, w->wqkv), w->bqkv, T, H, qkvd);
    or1_cuda_rope(g, l->qkv, qkvd, c->heads + c->kv_heads, hd, dm->pos, T, dm->cos_t, dm->sin_t, 0);
    if (kv.kc) {
        int kvd = c->kv_heads * hd;
        k_save_kv<<<cu_blocks((size_t)T * kvd, 256), 256, 0, g->stream>>>(kv.kc, kv.vc, kv.slot_stride, l->qkv,
                                                                          dm->pos, T, qd, kvd);
        cu_launched(g, "save_kv");
    }
    if (b)
        or1_cuda_attention(g, l->att, l->lse, l->qkv, dm->seq_start, b->n_seqs, b->max_len, c->heads, c->kv_heads,
                           hd);
    else
        or1_cuda_attention_decode(g, l->att, l->qkv, T, kv.kc, kv.vc, kv.slot_stride, dm->dec_i + 2 * T, c->heads,
                                  c->kv_heads, hd);
    cu_matmul(g, l->x2, l->att, w->wo, bf(dm, w->wo), w->bo, T, qd, H);
    or1_cuda_add(g, l->x2, l->x, (size_t)T * H);
    or1_cuda_rmsnorm(g, l->xn2, l->r2, l->x2, w->ln2, T, H, c->rms_eps);
    cu_matmul(g, l->gu, l->xn2, w->wgu, bf(dm, w->wgu), NULL, T, H, 2 * I);
    or1_cuda_swiglu(g, dm->a, l->gu, T, I);
    cu_matmul(g, out, dm->a, w->wd, bf(dm, w->wd), NULL, T, I, H);
    or1_cuda_add(g, out, l->x2, (size_t)T * H);
}

/* Keys and values of layer i for slot s (or for slot 0 with per-row slots when s < 0). */
static kv_dst layer_kv(const or1_cuda_model *dm, int i, int s) {
    size_t kvd = (size_t)dm->cfg.kv_heads * dm->cfg.head_dim, slot = (size_t)dm->kv_cap * kvd;
    float *k = dm->kv + (size_t)i * 2 * dm->kv_slots * slot;
    kv_dst d = {k + (s > 0 ? s : 0) * slot, k + (size_t)dm->kv_slots * slot + (s > 0 ? s : 0) * slot,
                s < 0 ? slot : 0};
    return d;
}

/* Every layer over T rows of dm->l[..].x (already embedded); a batch b means packed causal
 * attention, none means decode against the KV cache (one row per slot). Output in dm->hf. */
static void run_layers(or1_cuda_model *dm, const or1_batch *b, int T, bool train, int kv_slot) {
    const or1_model_config *c = &dm->cfg;
    int H = c->hidden;
    for (int i = 0; i < c->layers; i++) {
        layer_acts *l = &dm->l[train ? i : 0];
        float *out = train && i + 1 < c->layers ? dm->l[i + 1].x : dm->xf;
        kv_dst kv = {NULL, NULL, 0};
        if (!b || kv_slot >= 0) kv = layer_kv(dm, i, b ? kv_slot : -1);
        layer_forward(dm, &dm->w.layer[i], l, out, b, T, kv);
        if (!train && i + 1 < c->layers)
            cu_check(dm->g, cudaMemcpyAsync(l->x, dm->xf, (size_t)T * H * sizeof(float), cudaMemcpyDeviceToDevice,
                                            dm->g->stream), "residual copy");
    }
    or1_cuda_rmsnorm(dm->g, dm->hf, dm->rf, dm->xf, dm->w.norm, T, H, c->rms_eps);
}

/* Embedding, every layer and the final norm for a packed batch. */
int or1_cuda_model_forward(or1_cuda_model *dm, const or1_batch *b, bool train) {
    if (reserve(dm, b->n_tokens, b->max_len, train) || upload_batch(dm, b)) return -1;
    or1_cuda_embed(dm->g, dm->l[0].x, dm->w.embed, dm->ids, b->n_tokens, dm->cfg.hidden);
    run_layers(dm, b, b->n_tokens, train, -1);
    return or1_cuda_sync(dm->g);
}

/* Gathers scored rows in blocks, runs the head, downloads log-probs and entropies. */
int or1_cuda_model_head(or1_cuda_model *dm, const or1_batch *b, float temperature, float *logp, float *entropy) {
    int H = dm->cfg.hidden, S = b->n_scored;
    for (int i0 = 0; i0 < S; i0 += HEAD_ROWS) {
        int n = S - i0 < HEAD_ROWS ? S - i0 : HEAD_ROWS;
        or1_cuda_embed(dm->g, dm->hrows, dm->hf, dm->sc_pos + i0, n, H);
        cu_head(dm->g, dm->hlp + i0, dm->hent + i0, dm->hl + i0, dm->hez + i0, dm->hrows, dm->w.lm_head,
                bf(dm, dm->w.lm_head), dm->sc_tgt + i0, n, H, dm->cfg.vocab, temperature);
    }
    if (or1_cuda_sync(dm->g)) return -1;
    if (S && (or1_cuda_download(dm->g, logp, dm->hlp, (size_t)S * sizeof(float)) ||
              or1_cuda_download(dm->g, entropy, dm->hent, (size_t)S * sizeof(float))))
        return -1;
    return 0;
}

/* Head backward: d(hf) at scored rows, zero elsewhere, and the lm_head gradient. */
static void head_backward(or1_cuda_model *dm, const or1_batch *b, float temperature, float *dhf) {
    int H = dm->cfg.hidden, S = b->n_scored;
    or1_cuda_zero(dm->g, dhf, (size_t)b->n_tokens * H * sizeof(float));
    for (int i0 = 0; i0 < S; i0 += HEAD_ROWS) {
        int n = S - i0 < HEAD_ROWS ? S - i0 : HEAD_ROWS;
        or1_cuda_embed(dm->g, dm->hrows, dm->hf, dm->sc_pos + i0, n, H);
        cu_head_bwd(dm->g, dm->dhrows, dm->gw.lm_head, dm->hrows, dm->w.lm_head, bf(dm, dm->w.lm_head),
                    dm->sc_tgt + i0, dm->hl + i0, dm->hez + i0, dm->hglp + i0, dm->hgH + i0, n, H, dm->cfg.vocab,
                    temperature);
        or1_cuda_embed_bwd(dm->g, dhf, dm->dhrows, dm->sc_pos + i0, n, H);
    }
}

/* One layer backward (layer_backward in forward.c); dres holds d(out) on entry, d(x) on return. */
static void layer_backward(or1_cuda_model *dm, const or1_layer *w, or1_layer *gw, const layer_acts *l,
                           const or1_batch *b) {
    const or1_model_config *c = &dm->cfg;
    or1_cuda *g = dm->g;
    int T = b->n_tokens, H = c->hidden, I = c->intermediate, hd = c->head_dim;
    int qd = c->heads * hd, qkvd = qd + 2 * c->kv_heads * hd;
    or1_cuda_swiglu(g, dm->a, l->gu, T, I);
    or1_cuda_matmul_dw(g, gw->wd, NULL, dm->dres, dm->a, T, I, H);
    cu_matmul_dx(g, dm->da, dm->dres, w->wd, bf(dm, w->wd), T, I, H, 0);
    or1_cuda_swiglu_bwd(g, dm->dgu, dm->da, l->gu, T, I);
    or1_cuda_matmul_dw(g, gw->wgu, NULL, dm->dgu, l->xn2, T, H, 2 * I);
    cu_matmul_dx(g, dm->dxn, dm->dgu, w->wgu, bf(dm, w->wgu), T, H, 2 * I, 0);
    or1_cuda_rmsnorm_bwd(g, dm->dres, gw->ln2, dm->dxn, l->x2, l->r2, w->ln2, T, H);
    or1_cuda_matmul_dw(g, gw->wo, gw->bo, dm->dres, l->att, T, qd, H);
    cu_matmul_dx(g, dm->datt, dm->dres, w->wo, bf(dm, w->wo), T, qd, H, 0);
    or1_cuda_attention_bwd(g, dm->dqkv, dm->datt, l->qkv, l->att, l->lse, dm->seq_start, b->n_seqs, b->n_tokens,
                           b->max_len, c->heads, c->kv_heads, hd);
    or1_cuda_rope(g, dm->dqkv, qkvd, c->heads + c->kv_heads, hd, dm->pos, T, dm->cos_t, dm->sin_t, 1);
    or1_cuda_matmul_dw(g, gw->wqkv, gw->bqkv, dm->dqkv, l->xn1, T, H, qkvd);
    cu_matmul_dx(g, dm->dxn, dm->dqkv, w->wqkv, bf(dm, w->wqkv), T, H, qkvd, 0);
    or1_cuda_rmsnorm_bwd(g, dm->dres, gw->ln1, dm->dxn, l->x, l->r1, w->ln1, T, H);
}

/* Head, final norm, layers in reverse, then the embedding scatter-add. */
int or1_cuda_model_backward(or1_cuda_model *dm, const or1_batch *b, float temperature, const float *g_logp,
                            const float *g_entropy) {
    const or1_model_config *c = &dm->cfg;
    int T = b->n_tokens, H = c->hidden, S = b->n_scored;
    if (dm->n_slots_acts < c->layers) return or1_fail("cuda model: backward needs a forward with train");
    if (S && (or1_cuda_upload(dm->g, dm->hglp, g_logp, (size_t)S * sizeof(float)) ||
              or1_cuda_upload(dm->g, dm->hgH, g_entropy, (size_t)S * sizeof(float))))
        return -1;
    head_backward(dm, b, temperature, dm->dxn);
    or1_cuda_zero(dm->g, dm->dres, (size_t)T * H * sizeof(float));
    or1_cuda_rmsnorm_bwd(dm->g, dm->dres, dm->gw.norm, dm->dxn, dm->xf, dm->rf, dm->w.norm, T, H);
    for (int i = c->layers - 1; i >= 0; i--) layer_backward(dm, &dm->w.layer[i], &dm->gw.layer[i], &dm->l[i], b);
    or1_cuda_embed_bwd(dm->g, dm->gw.embed, dm->dres, dm->ids, T, H);
    return or1_cuda_sync(dm->g);
}

/* AdamW moments are allocated at the first step, so a sampling-only model never holds them. */
int or1_cuda_model_step(or1_cuda_model *dm, const or1_adamw_cfg *c, double max_norm, double *norm) {
    if (!dm->m) dm->m = (float *)or1_cuda_alloc(dm->n * sizeof(float));
    if (dm->m && !dm->v) dm->v = (float *)or1_cuda_alloc(dm->n * sizeof(float));
    if (!dm->v) return or1_fail_ctx("cuda model: AdamW moments");
    double gn = or1_cuda_grad_norm(dm->g, dm->grads, dm->n);
    if (gn < 0) return -1;
    if (norm) *norm = gn;
    if (max_norm > 0) or1_cuda_clip(dm->g, dm->grads, dm->n, gn, max_norm);
    or1_cuda_adamw(dm->g, dm->params, dm->m, dm->v, dm->grads, dm->n, ++dm->step, c);
    refresh_bf16(dm);
    or1_cuda_model_zero_grad(dm);
    return or1_cuda_sync(dm->g);
}

/* Allocates the cache, decode buffers and a workspace for one row per slot. */
int or1_cuda_model_kv(or1_cuda_model *dm, int slots, int cap) {
    const or1_model_config *c = &dm->cfg;
    if (slots < 1 || cap < 1 || cap > c->max_pos)
        return or1_fail("cuda decode: %d slots of %d tokens (max_position_embeddings %d)", slots, cap, c->max_pos);
    or1_cuda_sync(dm->g);
    void *old[] = {dm->kv, dm->dec_i, dm->dec_u, dm->dec_f};
    for (size_t i = 0; i < sizeof old / sizeof *old; i++) or1_cuda_release(old[i]);
    dm->kv = NULL, dm->dec_i = NULL, dm->dec_u = NULL, dm->dec_f = NULL, dm->kv_slots = 0;
    size_t kvd = (size_t)c->kv_heads * c->head_dim, floats = (size_t)c->layers * 2 * slots * (size_t)cap * kvd;
    dm->kv = (float *)or1_cuda_alloc(floats * sizeof(float));
    dm->dec_i = dm->kv ? (int32_t *)or1_cuda_alloc((size_t)6 * slots * sizeof(int32_t)) : NULL;
    dm->dec_u = dm->dec_i ? (uint64_t *)or1_cuda_alloc((size_t)slots * sizeof(uint64_t)) : NULL;
    dm->dec_f = dm->dec_u ? (float *)or1_cuda_alloc(((size_t)slots * c->vocab + slots) * sizeof(float)) : NULL;
    if (!dm->dec_f) return or1_fail_ctx("cuda decode: KV cache for %d slots of %d tokens", slots, cap);
    dm->kv_slots = slots, dm->kv_cap = cap;
    free(dm->slot_len);
    dm->slot_len = (int *)or1_calloc((size_t)slots, sizeof(int));
    return reserve(dm, slots, cap, false);
}

/* Tokens in slot s's cache. */

/* Empties slot s (its old keys are overwritten as it refills). */
void or1_cuda_model_slot_reset(or1_cuda_model *dm, int s) { dm->slot_len[s] = 0; }

/* The model's config. */
const or1_model_config *or1_cuda_model_config(const or1_cuda_model *dm) { return &dm->cfg; }

/* Packs ids as one sequence and runs the layers, writing keys and values into slot s. */
int or1_cuda_model_prefill(or1_cuda_model *dm, int s, const int32_t *ids, int n) {
    if (s < 0 || s >= dm->kv_slots) return or1_fail("cuda prefill: slot %d of %d", s, dm->kv_slots);
    if (n < 1 || n > dm->kv_cap) return or1_fail("cuda prefill: %d tokens for a cache of %d", n, dm->kv_cap);
    or1_seq q = {ids, n, n};
    or1_batch b;
    or1_batch_pack(&b, &q, 1);
    int rc = reserve(dm, n, dm->kv_cap, false);
    if (!rc) rc = upload_batch(dm, &b);
    if (!rc) {
        or1_cuda_embed(dm->g, dm->l[0].x, dm->w.embed, dm->ids, n, dm->cfg.hidden);
        run_layers(dm, &b, n, false, s);
        rc = or1_cuda_sync(dm->g);
    }
    if (!rc) dm->slot_len[s] = n;
    or1_batch_free(&b);
    return rc;
}

/* splitmix64's finaliser (as src/core/rng.c). */
__device__ __forceinline__ uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* One block per row: z/temperature, its log-sum-exp, and the argmax of z/temperature plus
 * Gumbel noise from (seed, stream, counter, token) of the row — an exact draw from the
 * softmax — or of z when greedy. Writes the token and its log-prob. */
__global__ void k_sample(int32_t *next, float *logp, const float *logits, int V, float temperature,
                         const uint64_t *seed, const int32_t *stream, const int32_t *counter) {
    __shared__ float sv[32];
    __shared__ int si[32];
    __shared__ double sd[32];
    int b = blockIdx.x, lane = threadIdx.x % 32, warp = threadIdx.x / 32, nw = blockDim.x / 32;
    const float *z = logits + (size_t)b * V;
    float inv = temperature > 0 ? 1.0f / temperature : 1.0f, m = -INFINITY, best = -INFINITY;
    int arg = 0;
    uint64_t key = mix64(mix64(seed[b] + 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)stream[b] + 0x632be59bd9b4e019ULL));
    key = mix64(key ^ ((uint64_t)counter[b] * 0x9e3779b97f4a7c15ULL));
    for (int v = threadIdx.x; v < V; v += blockDim.x) {
        float zt = z[v] * inv, score = zt;
        m = fmaxf(m, zt);
        if (temperature > 0) {
            double u = ((double)(mix64(key ^ (uint64_t)v) >> 11) + 0.5) * 0x1.0p-53;
            score = zt - (float)log(-log(u));
        }
        if (score > best) best = score, arg = v;
    }
    for (int o = 16; o > 0; o >>= 1) {
        float ob = __shfl_xor_sync(0xffffffffu, best, o), om = __shfl_xor_sync(0xffffffffu, m, o);
        int oa = __shfl_xor_sync(0xffffffffu, arg, o);
        if (ob > best || (ob == best && oa < arg)) best = ob, arg = oa;
        m = fmaxf(m, om);
    }
    if (lane == 0) sv[warp] = m, si[warp] = arg, sd[warp] = best;
    __syncthreads();
    float mm = sv[0];
    int a = si[0];
    double bb = sd[0];
    for (int w = 1; w < nw; w++) {
        mm = fmaxf(mm, sv[w]);
        if (sd[w] > bb || (sd[w] == bb && si[w] < a)) bb = sd[w], a = si[w];
    }
    double s = 0;
    for (int v = threadIdx.x; v < V; v += blockDim.x) s += exp((double)(z[v] * inv) - mm);
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    __syncthreads();
    if (lane == 0) sd[warp] = s;
    __syncthreads();
    if (threadIdx.x) return;
    double tot = 0;
    for (int w = 0; w < nw; w++) tot += sd[w];
    next[b] = a;
    logp[b] = (float)((double)(z[a] * inv) - mm - log(tot));
}

/* Embeds the slots' tokens, runs every layer against the cache, the full-vocabulary logits
 * by one GEMM, and samples on the device; only tokens and log-probs come back. */
int or1_cuda_model_decode(or1_cuda_model *dm, const int32_t *tokens, float temperature, const uint64_t *seeds,
                          const int32_t *streams, const int32_t *counters, int32_t *next, float *logp) {
    const or1_model_config *c = &dm->cfg;
    int B = dm->kv_slots, V = c->vocab, H = c->hidden;
    if (B < 1) return or1_fail("cuda decode: no KV cache (or1_cuda_model_kv first)");
    int32_t *host = (int32_t *)or1_malloc((size_t)6 * B * sizeof(int32_t));
    for (int b = 0; b < B; b++) {
        if (dm->slot_len[b] >= dm->kv_cap) {
            free(host);
            return or1_fail("cuda decode: slot %d is full (%d tokens)", b, dm->kv_cap);
        }
        host[b] = tokens[b], host[B + b] = dm->slot_len[b], host[2 * B + b] = dm->slot_len[b] + 1;
        host[3 * B + b] = 0, host[4 * B + b] = streams[b], host[5 * B + b] = counters[b];
    }
    int rc = or1_cuda_upload(dm->g, dm->dec_i, host, (size_t)6 * B * sizeof(int32_t));
    if (!rc) rc = or1_cuda_upload(dm->g, dm->dec_u, seeds, (size_t)B * sizeof(uint64_t));
    free(host);
    if (rc) return -1;
    dm->pos = dm->dec_i + B;
    or1_cuda_embed(dm->g, dm->l[0].x, dm->w.embed, dm->dec_i, B, H);
    run_layers(dm, NULL, B, false, -1);
    float *logits = dm->dec_f;
    cu_matmul(dm->g, logits, dm->hf, dm->w.lm_head, bf(dm, dm->w.lm_head), NULL, B, H, V);
    k_sample<<<B, 256, 0, dm->g->stream>>>(dm->dec_i + 3 * B, logits + (size_t)B * V, logits, V, temperature,
                                           dm->dec_u, dm->dec_i + 4 * B, dm->dec_i + 5 * B);
    cu_launched(dm->g, "sample");
    if (or1_cuda_sync(dm->g) || or1_cuda_download(dm->g, next, dm->dec_i + 3 * B, (size_t)B * sizeof(int32_t)) ||
        or1_cuda_download(dm->g, logp, logits + (size_t)B * V, (size_t)B * sizeof(float)))
        return -1;
    for (int b = 0; b < B; b++) dm->slot_len[b]++;
    return 0;
}
