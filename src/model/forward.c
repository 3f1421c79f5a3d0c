/* Decoder forward and backward over a packed batch, layer by layer (llm.c style):
 * every activation backward needs is saved per layer in buffers sized once. */
#include "or1/core.h"
#include "or1/kernels.h"
#include "or1/model.h"
#include "layer_acts.h"

#include <stdlib.h>
#include <string.h>

enum { HEAD_ROWS = 128 };

typedef or1_layer_acts layer_acts;

struct or1_acts {
    or1_model_config cfg;
    int cap_tokens, cap_len, n_slots;
    float *mem;
    layer_acts *l; /* n_slots: every layer when training, one reused slot otherwise */
    float *xf, *rf, *hf;              /* final residual, its rstd, normed output */
    float *cos_t, *sin_t;             /* RoPE tables for cap_len positions */
    float *a, *da, *dgu, *datt, *dqkv, *dxn, *dres; /* scratch */
    float *hrows, *dhrows, *head_scratch;
    float *lse, *ez;                  /* per scored position, for the head backward */
};

/* Floats one layer's saved activations need for T tokens. */
size_t or1_layer_acts_floats(const or1_model_config *c, size_t T) {
    size_t H = (size_t)c->hidden, qd = (size_t)c->heads * c->head_dim;
    size_t qkvd = qd + 2 * (size_t)c->kv_heads * c->head_dim;
    return T * (4 * H + 2 + qkvd + qd + c->heads + 2 * (size_t)c->intermediate);
}

/* Carves one layer's views out of a block of memory. */
float *or1_layer_acts_carve(or1_layer_acts *l, float *p, const or1_model_config *c, size_t T) {
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
    return p;
}

/* Sizes every buffer for cap_tokens tokens and sequences of at most cap_len. */
or1_acts *or1_acts_new(const or1_model_config *c, int cap_tokens, int cap_len, bool train) {
    or1_acts *a = or1_calloc(1, sizeof *a);
    a->cfg = *c;
    a->cap_tokens = cap_tokens;
    a->cap_len = cap_len;
    a->n_slots = train ? c->layers : 1;
    size_t T = (size_t)cap_tokens, H = (size_t)c->hidden, I = (size_t)c->intermediate;
    size_t qd = (size_t)c->heads * c->head_dim, qkvd = qd + 2 * (size_t)c->kv_heads * c->head_dim;
    size_t half = (size_t)c->head_dim / 2, scratch = train ? T * (4 * I + qd + qkvd + 2 * H) : T * I;
    size_t total = (size_t)a->n_slots * or1_layer_acts_floats(c, T) + T * (2 * H + 1) + 2 * (size_t)cap_len * half +
                   scratch + 2 * HEAD_ROWS * H + (size_t)or1_head_scratch(HEAD_ROWS) + 2 * T;
    float *p = a->mem = or1_alloc_floats(total);
    a->l = or1_calloc((size_t)a->n_slots, sizeof *a->l);
    for (int i = 0; i < a->n_slots; i++) p = or1_layer_acts_carve(&a->l[i], p, c, T);
    a->xf = p, p += T * H;
    a->rf = p, p += T;
    a->hf = p, p += T * H;
    a->cos_t = p, p += (size_t)cap_len * half;
    a->sin_t = p, p += (size_t)cap_len * half;
    a->a = p, p += T * I;
    if (train) {
        a->da = p, p += T * I;
        a->dgu = p, p += T * 2 * I;
        a->datt = p, p += T * qd;
        a->dqkv = p, p += T * qkvd;
        a->dxn = p, p += T * H;
        a->dres = p, p += T * H;
    }
    a->hrows = p, p += HEAD_ROWS * H;
    a->dhrows = p, p += HEAD_ROWS * H;
    a->head_scratch = p, p += or1_head_scratch(HEAD_ROWS);
    a->lse = p, p += T;
    a->ez = p;
    or1_rope_table(a->cos_t, a->sin_t, cap_len, c->head_dim, c->rope_theta);
    return a;
}

void or1_acts_free(or1_acts *a) {
    if (!a) return;
    free(a->mem);
    free(a->l);
    free(a);
}

/* y += x elementwise (residual connections), in parallel. */
static void add_inplace(float *y, const float *x, size_t n) {
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) y[i] += x[i];
}

/* Copies each token's rotated keys and values into a KV region laid out [2][cap][kvd]
 * (keys, then values) at the token's position. */
static void save_kv(float *kv, int cap, const float *qkv, const or1_batch *b, const or1_model_config *c) {
    size_t kvd = (size_t)c->kv_heads * c->head_dim, qd = (size_t)c->heads * c->head_dim, stride = qd + 2 * kvd;
    for (int t = 0; t < b->n_tokens; t++) {
        memcpy(kv + (size_t)b->pos[t] * kvd, qkv + t * stride + qd, kvd * sizeof *kv);
        memcpy(kv + ((size_t)cap + b->pos[t]) * kvd, qkv + t * stride + qd + kvd, kvd * sizeof *kv);
    }
}

/* One decoder layer forward: x -> x2 = x + attn(norm(x)) -> out = x2 + mlp(norm(x2)). */
static void layer_forward(const or1_model_config *c, const or1_layer *w, layer_acts *l, float *out,
                          const or1_acts *a, const or1_batch *b, float *scratch_a, float *kv, int kv_cap) {
    int T = b->n_tokens, H = c->hidden, I = c->intermediate, hd = c->head_dim;
    int qd = c->heads * hd, qkvd = qd + 2 * c->kv_heads * hd;
    or1_rmsnorm(l->xn1, l->r1, l->x, w->ln1, T, H, c->rms_eps);
    or1_matmul(l->qkv, l->xn1, w->wqkv, w->bqkv, T, H, qkvd);
    or1_rope(l->qkv, qkvd, c->heads + c->kv_heads, hd, b->pos, T, a->cos_t, a->sin_t, 0);
    if (kv) save_kv(kv, kv_cap, l->qkv, b, c);
    or1_attention(l->att, l->lse, l->qkv, b->seq_start, b->n_seqs, c->heads, c->kv_heads, hd);
    or1_matmul(l->x2, l->att, w->wo, w->bo, T, qd, H);
    add_inplace(l->x2, l->x, (size_t)T * H);
    or1_rmsnorm(l->xn2, l->r2, l->x2, w->ln2, T, H, c->rms_eps);
    or1_matmul(l->gu, l->xn2, w->wgu, NULL, T, H, 2 * I);
    or1_swiglu(scratch_a, l->gu, T, I);
    or1_matmul(out, scratch_a, w->wd, NULL, T, I, H);
    add_inplace(out, l->x2, (size_t)T * H);
}

/* Embedding lookup, every layer, final RMSNorm into a->hf; with kv, each layer's keys and
 * values also go to kv + layer * 2 * kv_cap * kvd. */
static void forward_impl(const or1_model *m, or1_acts *a, const or1_batch *b, bool train, float *kv,
                         int kv_cap) {
    const or1_model_config *c = &m->cfg;
    int T = b->n_tokens, H = c->hidden;
    float *x = a->l[0].x;
    #pragma omp parallel for schedule(static)
    for (int t = 0; t < T; t++) memcpy(x + (size_t)t * H, m->w.embed + (size_t)b->ids[t] * H, (size_t)H * 4);
    for (int i = 0; i < c->layers; i++) {
        layer_acts *l = &a->l[train ? i : 0];
        float *out = train && i + 1 < c->layers ? a->l[i + 1].x : a->xf;
        size_t kv_layer = (size_t)2 * kv_cap * c->kv_heads * c->head_dim;
        layer_forward(c, &m->w.layer[i], l, out, a, b, a->a, kv ? kv + (size_t)i * kv_layer : NULL, kv_cap);
        if (!train && i + 1 < c->layers) memcpy(l->x, a->xf, (size_t)T * H * sizeof(float));
    }
    or1_rmsnorm(a->hf, a->rf, a->xf, m->w.norm, T, H, c->rms_eps);
}

/* The decoder forward (see forward_impl). */
void or1_forward(const or1_model *m, or1_acts *a, const or1_batch *b, bool train) {
    forward_impl(m, a, b, train, NULL, 0);
}

/* Forward that also fills a KV region (for a prompt's prefill). */
void or1_prefill(const or1_model *m, or1_acts *a, const or1_batch *b, float *kv, int kv_cap) {
    forward_impl(m, a, b, false, kv, kv_cap);
}

/* Final-norm output of packed row t from the last forward. */
const float *or1_acts_hidden(const or1_acts *a, int t) { return a->hf + (size_t)t * a->cfg.hidden; }

/* Gathers the scored rows of hf block by block and runs the streaming head on them. */
void or1_head_forward(const or1_model *m, or1_acts *a, const or1_batch *b, float temperature,
                      float *logp, float *entropy) {
    int H = m->cfg.hidden;
    for (int i0 = 0; i0 < b->n_scored; i0 += HEAD_ROWS) {
        int n = b->n_scored - i0 < HEAD_ROWS ? b->n_scored - i0 : HEAD_ROWS;
        for (int i = 0; i < n; i++)
            memcpy(a->hrows + (size_t)i * H, a->hf + (size_t)b->sc_pos[i0 + i] * H, (size_t)H * 4);
        or1_head(logp + i0, entropy + i0, a->lse + i0, a->ez + i0, a->hrows, m->w.lm_head,
                 b->sc_tgt + i0, n, H, m->cfg.vocab, temperature, a->head_scratch);
    }
}

/* Head backward: d(hf) at scored rows (zero elsewhere) and the lm_head gradient. */
static void head_backward(or1_model *m, or1_acts *a, const or1_batch *b, float temperature,
                          const float *g_logp, const float *g_entropy, float *dhf) {
    int H = m->cfg.hidden;
    memset(dhf, 0, (size_t)b->n_tokens * H * sizeof *dhf);
    for (int i0 = 0; i0 < b->n_scored; i0 += HEAD_ROWS) {
        int n = b->n_scored - i0 < HEAD_ROWS ? b->n_scored - i0 : HEAD_ROWS;
        for (int i = 0; i < n; i++)
            memcpy(a->hrows + (size_t)i * H, a->hf + (size_t)b->sc_pos[i0 + i] * H, (size_t)H * 4);
        or1_head_bwd(a->dhrows, m->g.lm_head, a->hrows, m->w.lm_head, b->sc_tgt + i0, a->lse + i0,
                     a->ez + i0, g_logp + i0, g_entropy + i0, n, H, m->cfg.vocab, temperature,
                     a->head_scratch);
        for (int i = 0; i < n; i++) {
            float *d = dhf + (size_t)b->sc_pos[i0 + i] * H, *s = a->dhrows + (size_t)i * H;
            for (int k = 0; k < H; k++) d[k] += s[k];
        }
    }
}

/* One layer backward; dres holds d(out) on entry and d(x) on return. */
static void layer_backward(const or1_model_config *c, const or1_layer *w, or1_layer *g, const layer_acts *l,
                           or1_acts *a, const or1_batch *b) {
    int T = b->n_tokens, H = c->hidden, I = c->intermediate, hd = c->head_dim;
    int qd = c->heads * hd, qkvd = qd + 2 * c->kv_heads * hd;
    or1_swiglu(a->a, l->gu, T, I);
    or1_matmul_dw(g->wd, NULL, a->dres, a->a, T, I, H);
    or1_matmul_dx(a->da, a->dres, w->wd, T, I, H, 0);
    or1_swiglu_bwd(a->dgu, a->da, l->gu, T, I);
    or1_matmul_dw(g->wgu, NULL, a->dgu, l->xn2, T, H, 2 * I);
    or1_matmul_dx(a->dxn, a->dgu, w->wgu, T, H, 2 * I, 0);
    or1_rmsnorm_bwd(a->dres, g->ln2, a->dxn, l->x2, l->r2, w->ln2, T, H);
    or1_matmul_dw(g->wo, g->bo, a->dres, l->att, T, qd, H);
    or1_matmul_dx(a->datt, a->dres, w->wo, T, qd, H, 0);
    or1_attention_bwd(a->dqkv, a->datt, l->qkv, l->att, l->lse, b->seq_start, b->n_seqs, c->heads,
                      c->kv_heads, hd);
    or1_rope(a->dqkv, qkvd, c->heads + c->kv_heads, hd, b->pos, T, a->cos_t, a->sin_t, 1);
    or1_matmul_dw(g->wqkv, g->bqkv, a->dqkv, l->xn1, T, H, qkvd);
    or1_matmul_dx(a->dxn, a->dqkv, w->wqkv, T, H, qkvd, 0);
    or1_rmsnorm_bwd(a->dres, g->ln1, a->dxn, l->x, l->r1, w->ln1, T, H);
}

/* Full backward from the scored positions' loss derivatives into m->grads. */
void or1_backward(or1_model *m, or1_acts *a, const or1_batch *b, float temperature,
                  const float *g_logp, const float *g_entropy) {
    const or1_model_config *c = &m->cfg;
    int T = b->n_tokens, H = c->hidden;
    head_backward(m, a, b, temperature, g_logp, g_entropy, a->dxn);
    memset(a->dres, 0, (size_t)T * H * sizeof(float));
    or1_rmsnorm_bwd(a->dres, m->g.norm, a->dxn, a->xf, a->rf, m->w.norm, T, H);
    for (int i = c->layers - 1; i >= 0; i--) layer_backward(c, &m->w.layer[i], &m->g.layer[i], &a->l[i], a, b);
    for (int t = 0; t < T; t++) {
        float *d = m->g.embed + (size_t)b->ids[t] * H, *s = a->dres + (size_t)t * H;
        for (int k = 0; k < H; k++) d[k] += s[k];
    }
}

/* Grows the workspace when a batch needs more tokens or a longer sequence than it holds. */
void or1_acts_reserve(or1_acts **a, const or1_model_config *cfg, int tokens, int len, bool train) {
    if (*a && (*a)->cap_tokens >= tokens && (*a)->cap_len >= len && (*a)->n_slots >= (train ? cfg->layers : 1))
        return;
    int t = *a && (*a)->cap_tokens > tokens ? (*a)->cap_tokens : tokens;
    int l = *a && (*a)->cap_len > len ? (*a)->cap_len : len;
    or1_acts_free(*a);
    *a = or1_acts_new(cfg, t, l, train);
}
