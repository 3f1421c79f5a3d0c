/* The CPU backend: the kernels of or1/kernels.h (OpenBLAS, OpenMP) on host memory. Copies
 * are memcpy, nothing is queued, so sync never fails. Scratch the kernels need (the head's
 * logits block, decode attention scores, sampling buffers) is owned here and grows only when
 * a call needs more than any before it.
 *
 * In bf16 precision the model hands every matmul its bf16 weight: the forward (the trainer's
 * and the rollout's alike) and the head's logits run through or1_matmul_rows_bf16, the input
 * gradients and the head's dh use the same bf16 values widened, the embedding rows are read
 * from the bf16 table; weight gradients and the optimizer stay fp32. */
#include "or1/core.h"
#include "or1/kernels.h"
#include "or1/model.h"

#include "backend_impl.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

enum { CPU_HEAD_ROWS = 128 };

typedef struct {
    or1_backend base;
    float *head_scratch; /* or1_head_scratch(CPU_HEAD_ROWS, head_h) floats */
    int head_h;
    float *scratch; /* decode attention and sampling, per thread */
    size_t scratch_n;
} cpu_backend;

/* The instance behind be. */
static cpu_backend *cpu(or1_backend *be) { return (cpu_backend *)be; }

/* Ensures the per-call scratch holds n floats. */
static float *cpu_scratch(or1_backend *be, size_t n) {
    cpu_backend *c = cpu(be);
    if (n > c->scratch_n) {
        free(c->scratch);
        c->scratch = or1_alloc_floats(n);
        c->scratch_n = n;
    }
    return c->scratch;
}

/* Zeroed host memory. */
static void *cpu_alloc(or1_backend *be, size_t bytes) {
    (void)be;
    return or1_calloc(1, bytes ? bytes : 1);
}

static void cpu_release(or1_backend *be, void *p) {
    (void)be;
    free(p);
}

/* Host to host: every copy direction is memcpy. */
static int cpu_upload(or1_backend *be, void *dst, const void *src, size_t bytes) {
    (void)be;
    if (bytes && dst != src) memcpy(dst, src, bytes);
    return 0;
}

static void cpu_copy(or1_backend *be, void *dst, const void *src, size_t bytes) { cpu_upload(be, dst, src, bytes); }

static void cpu_zero(or1_backend *be, void *p, size_t bytes) {
    (void)be;
    memset(p, 0, bytes);
}

/* Nothing is ever queued. */
static int cpu_sync(or1_backend *be) {
    (void)be;
    return 0;
}

/* The model's bf16 weights from its fp32 ones. */
static void cpu_to_bf16(or1_backend *be, or1_bf16 *dst, const float *src, size_t n) {
    (void)be;
    or1_bf16_from_f32(dst, src, n);
}

/* The head's scratch for rows of width H (grown when a wider model comes). */
static float *head_scratch(or1_backend *be, int H) {
    cpu_backend *c = cpu(be);
    if (H > c->head_h) {
        free(c->head_scratch);
        c->head_scratch = or1_alloc_floats((size_t)or1_head_scratch(CPU_HEAD_ROWS, H));
        c->head_h = H;
    }
    return c->head_scratch;
}

/* Every forward matmul: the batch-invariant row kernel, in bf16 over the bf16 weight when given. */
static void cpu_matmul_rows(or1_backend *be, float *y, const float *x, const float *w, const or1_bf16 *wb,
                            const float *b, int T, int in, int out) {
    (void)be;
    if (wb) or1_matmul_rows_bf16(y, x, wb, b, T, in, out);
    else or1_matmul_rows(y, x, w, b, T, in, out);
}

/* The input gradient against the weight the forward used. */
static void cpu_matmul_dx(or1_backend *be, float *dx, const float *dy, const float *w, const or1_bf16 *wb, int T,
                          int in, int out, int acc) {
    (void)be;
    if (wb) or1_matmul_dx_bf16(dx, dy, wb, T, in, out, acc);
    else or1_matmul_dx(dx, dy, w, T, in, out, acc);
}

static void cpu_matmul_dw(or1_backend *be, float *dw, float *db, const float *dy, const float *x, int T, int in,
                          int out) {
    (void)be;
    or1_matmul_dw(dw, db, dy, x, T, in, out);
}

/* y[i] = src[idx[i]] (or srcb's row widened) row by row, rows in parallel. */
static void cpu_gather(or1_backend *be, float *y, const float *src, const or1_bf16 *srcb, const int32_t *idx, int n,
                       int H) {
    (void)be;
    #pragma omp parallel for schedule(static) if (n > 16)
    for (int i = 0; i < n; i++) {
        size_t at = (size_t)idx[i] * H;
        if (srcb) or1_f32_from_bf16(y + (size_t)i * H, srcb + at, (size_t)H);
        else memcpy(y + (size_t)i * H, src + at, (size_t)H * sizeof(float));
    }
}

/* dst[idx[i]] += src[i] in row order (indices may repeat, so rows are not parallel). */
static void cpu_scatter_add(or1_backend *be, float *dst, const float *src, const int32_t *idx, int n, int H) {
    (void)be;
    for (int i = 0; i < n; i++) {
        float *d = dst + (size_t)idx[i] * H;
        const float *s = src + (size_t)i * H;
        for (int k = 0; k < H; k++) d[k] += s[k];
    }
}

static void cpu_rmsnorm(or1_backend *be, float *y, float *rstd, float *x, const float *res, const float *w, int T,
                        int H, float eps) {
    (void)be;
    or1_rmsnorm(y, rstd, x, res, w, T, H, eps);
}

static void cpu_rmsnorm_bwd(or1_backend *be, float *dx, float *dw, const float *dy, const float *x,
                            const float *rstd, const float *w, int T, int H) {
    (void)be;
    or1_rmsnorm_bwd(dx, dw, dy, x, rstd, w, T, H);
}

static void cpu_rope(or1_backend *be, float *x, int row_stride, int n_heads, int hd, const int32_t *pos, int T,
                     const float *cos_t, const float *sin_t, int inverse) {
    (void)be;
    or1_rope(x, row_stride, n_heads, hd, pos, T, cos_t, sin_t, inverse);
}

static void cpu_head_norm(or1_backend *be, float *y, float *rstd, const float *x, const float *w, int T, int n_heads,
                          int hd, int stride, float eps) {
    (void)be;
    or1_head_norm(y, rstd, x, w, T, n_heads, hd, stride, eps);
}

static void cpu_head_norm_bwd(or1_backend *be, float *d, float *dw, const float *x, const float *rstd, const float *w,
                              int T, int n_heads, int hd, int stride) {
    (void)be;
    or1_head_norm_bwd(d, dw, x, rstd, w, T, n_heads, hd, stride);
}

static void cpu_attention(or1_backend *be, float *out, float *lse, const float *qkv, const int32_t *seq_start,
                          int n_seqs, int T, int max_len, int nh, int nkv, int hd) {
    (void)be, (void)T, (void)max_len;
    or1_attention(out, lse, qkv, seq_start, n_seqs, nh, nkv, hd);
}

static void cpu_attention_bwd(or1_backend *be, float *dqkv, const float *dout, const float *qkv, const float *out,
                              const float *lse, const int32_t *seq_start, int n_seqs, int T, int max_len, int nh,
                              int nkv, int hd) {
    (void)be, (void)T, (void)max_len;
    or1_attention_bwd(dqkv, dout, qkv, out, lse, seq_start, n_seqs, nh, nkv, hd);
}

/* Copies each row's rotated key and value into its pool row (a float pool: kv_bytes 4). */
static void cpu_kv_store(or1_backend *be, void *kp, void *vp, const int32_t *rows, const float *qkv, int T, int qd,
                         int kvd) {
    (void)be;
    float *k = kp, *v = vp;
    size_t stride = (size_t)qd + 2 * (size_t)kvd;
    for (int t = 0; t < T; t++) {
        memcpy(k + (size_t)rows[t] * kvd, qkv + t * stride + qd, (size_t)kvd * sizeof(float));
        memcpy(v + (size_t)rows[t] * kvd, qkv + t * stride + qd + kvd, (size_t)kvd * sizeof(float));
    }
}

/* The paged decode attention over the float pool with this backend's per-thread score scratch. */
static void cpu_attention_decode(or1_backend *be, float *out, const float *qkv, int B, const void *k,
                                 const void *v, const int32_t *seg, const int32_t *blocks, int block, int nh, int nkv,
                                 int hd, int ctx_cap) {
    size_t per_thread = or1_attention_decode_scratch(nh, nkv, hd, ctx_cap);
    float *scratch = cpu_scratch(be, (size_t)omp_get_max_threads() * per_thread);
    or1_attention_decode(out, qkv, B, k, v, seg, blocks, block, nh, nkv, hd, scratch, ctx_cap);
}

static void cpu_swiglu(or1_backend *be, float *a, const float *gu, int T, int inter) {
    (void)be;
    or1_swiglu(a, gu, T, inter);
}

static void cpu_swiglu_bwd(or1_backend *be, float *dgu, float *a, const float *da, const float *gu, int T,
                           int inter) {
    (void)be;
    or1_swiglu_bwd(dgu, a, da, gu, T, inter);
}

static void cpu_head(or1_backend *be, float *logp, float *entropy, float *lse, float *ez, const float *h,
                     const float *w, const or1_bf16 *wb, const int32_t *tgt, int n, int H, int V, float temperature) {
    or1_head(logp, entropy, lse, ez, h, w, wb, tgt, n, H, V, temperature, head_scratch(be, H));
}

static void cpu_head_bwd(or1_backend *be, float *dh, float *dw, const float *h, const float *w, const or1_bf16 *wb,
                         const int32_t *tgt, const float *lse, const float *ez, const float *g_logp,
                         const float *g_entropy, int n, int H, int V, float temperature) {
    or1_head_bwd(dh, dw, h, w, wb, tgt, lse, ez, g_logp, g_entropy, n, H, V, temperature, head_scratch(be, H));
}

static void cpu_adamw(or1_backend *be, float *params, float *m, float *v, const float *grads, size_t n, long step,
                      const or1_adamw_cfg *c) {
    (void)be;
    or1_adamw_update(params, m, v, grads, n, step, c->lr, c->beta1, c->beta2, c->eps, c->weight_decay);
}

static double cpu_grad_norm(or1_backend *be, const float *grads, size_t n) {
    (void)be;
    return or1_grad_norm(grads, n);
}

static void cpu_clip(or1_backend *be, float *grads, size_t n, double norm, double max_norm) {
    (void)be;
    or1_clip_grad_norm(grads, n, norm, max_norm);
}

/* Inverse-CDF draws, rows in parallel, each from its own counter-based uniform. */
static int cpu_sample(or1_backend *be, int32_t *next, float *logp, const float *logits, int B, int V,
                      const or1_sample_row *rows) {
    float *scratch = cpu_scratch(be, (size_t)omp_get_max_threads() * 2 * (size_t)V);
    #pragma omp parallel for schedule(dynamic, 1)
    for (int b = 0; b < B; b++) {
        const or1_sample_row *r = &rows[b];
        double u = or1_rand_uniform(r->seed, (uint64_t)r->stream, (uint64_t)r->counter);
        float *s = scratch + (size_t)omp_get_thread_num() * 2 * V;
        next[b] = or1_sample_token(logits + (size_t)b * V, V, r, u, &logp[b], s);
    }
    return 0;
}

/* Frees the instance and its scratch. */
static void cpu_destroy(or1_backend *be) {
    cpu_backend *c = cpu(be);
    free(c->head_scratch);
    free(c->scratch);
    free(c);
}

static const or1_backend_ops CPU_OPS = {
    .name = "cpu",
    .host_memory = true,
    .head_rows = CPU_HEAD_ROWS,
    .alloc = cpu_alloc,
    .release = cpu_release,
    .upload = cpu_upload,
    .download = cpu_upload,
    .copy = cpu_copy,
    .zero = cpu_zero,
    .sync = cpu_sync,
    .to_bf16 = cpu_to_bf16,
    .matmul_rows = cpu_matmul_rows,
    .matmul_dx = cpu_matmul_dx,
    .matmul_dw = cpu_matmul_dw,
    .gather = cpu_gather,
    .scatter_add = cpu_scatter_add,
    .rmsnorm = cpu_rmsnorm,
    .rmsnorm_bwd = cpu_rmsnorm_bwd,
    .rope = cpu_rope,
    .head_norm = cpu_head_norm,
    .head_norm_bwd = cpu_head_norm_bwd,
    .attention = cpu_attention,
    .attention_bwd = cpu_attention_bwd,
    .kv_store = cpu_kv_store,
    .attention_decode = cpu_attention_decode,
    .swiglu = cpu_swiglu,
    .swiglu_bwd = cpu_swiglu_bwd,
    .head = cpu_head,
    .head_bwd = cpu_head_bwd,
    .adamw = cpu_adamw,
    .grad_norm = cpu_grad_norm,
    .clip = cpu_clip,
    .sample = cpu_sample,
    .destroy = cpu_destroy,
};

/* A CPU backend instance with fp32 matmuls. */
or1_backend *or1_backend_cpu(void) { return or1_backend_cpu_prec(false); }

/* A CPU backend instance, its forward matmuls in bf16 when asked. */
or1_backend *or1_backend_cpu_prec(bool bf16) {
    cpu_backend *c = or1_calloc(1, sizeof *c);
    c->base.ops = &CPU_OPS;
    c->base.bf16 = bf16;
    c->base.kv_bytes = 4; /* the pool stays fp32 in both precisions */
    return &c->base;
}

/* Destroys any backend through its own ops. */
void or1_backend_free(or1_backend *be) {
    if (be) be->ops->destroy(be);
}

/* The backend's device name. */
const char *or1_backend_name(const or1_backend *be) { return be->ops->name; }

/* Whether its matmuls run over bf16 weights. */
bool or1_backend_bf16(const or1_backend *be) { return be->bf16; }

/* Bytes of one element of its KV pool. */
int or1_backend_kv_bytes(const or1_backend *be) { return be->kv_bytes; }
