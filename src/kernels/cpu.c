/* CPU kernels: OpenBLAS sgemm for every matmul, OpenMP loops for the rest. */
#include "or1/kernels.h"

#include "or1/core.h"

#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

enum { VOCAB_CHUNK = 4096 };

/* Dot product with eight independent lanes so the compiler vectorises it. */
static inline float dot(const float *a, const float *b, int n) {
    float acc[8] = {0};
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++) acc[l] += a[i + l] * b[i + l];
    float s = 0;
    for (; i < n; i++) s += a[i] * b[i];
    for (int l = 0; l < 8; l++) s += acc[l];
    return s;
}

/* y = x W^T + b: one sgemm, bias broadcast first so sgemm accumulates onto it. */
void or1_matmul(float *y, const float *x, const float *w, const float *b, int T, int in, int out) {
    if (b) {
        #pragma omp parallel for schedule(static)
        for (int t = 0; t < T; t++) memcpy(y + (size_t)t * out, b, (size_t)out * sizeof *y);
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, out, in, 1.0f, x, in, w, in, b ? 1.0f : 0.0f,
                y, out);
}

/* dx = dy W (input gradient of a linear layer). */
void or1_matmul_dx(float *dx, const float *dy, const float *w, int T, int in, int out, int acc) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, in, out, 1.0f, dy, out, w, in,
                acc ? 1.0f : 0.0f, dx, in);
}

enum { ROW_CHUNKS = 32 };

/* acc[j] += sum_t a[t,j] * b[t,j] * scale[t] over a [T, n] row-major operand (b and scale
 * optional). Fixed row chunks run in parallel and their partial sums are added in chunk
 * order: cache-friendly, and the result does not depend on the thread count. */
static void colsum(float *acc, const float *a, const float *b, const float *row_scale, int T, int n) {
    float *part = or1_alloc_floats((size_t)ROW_CHUNKS * n);
    #pragma omp parallel for schedule(static)
    for (int k = 0; k < ROW_CHUNKS; k++) {
        float *p = part + (size_t)k * n;
        for (int t = (int)((long)T * k / ROW_CHUNKS); t < (int)((long)T * (k + 1) / ROW_CHUNKS); t++) {
            const float *ar = a + (size_t)t * n, *br = b ? b + (size_t)t * n : NULL;
            float sc = row_scale ? row_scale[t] : 1.0f;
            if (br)
                for (int j = 0; j < n; j++) p[j] += ar[j] * br[j] * sc;
            else
                for (int j = 0; j < n; j++) p[j] += ar[j];
        }
    }
    for (int k = 0; k < ROW_CHUNKS; k++)
        for (int j = 0; j < n; j++) acc[j] += part[(size_t)k * n + j];
    free(part);
}

/* dW += dy^T x and db += column sums of dy (weight gradients of a linear layer). */
void or1_matmul_dw(float *dw, float *db, const float *dy, const float *x, int T, int in, int out) {
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, T, 1.0f, dy, out, x, in, 1.0f, dw, in);
    if (db) colsum(db, dy, NULL, NULL, T, out);
}

/* RMSNorm forward, one row per token. */
void or1_rmsnorm(float *y, float *rstd, const float *x, const float *w, int T, int H, float eps) {
    #pragma omp parallel for schedule(static)
    for (int t = 0; t < T; t++) {
        const float *xr = x + (size_t)t * H;
        float *yr = y + (size_t)t * H;
        float r = 1.0f / sqrtf(dot(xr, xr, H) / (float)H + eps);
        rstd[t] = r;
        for (int i = 0; i < H; i++) yr[i] = xr[i] * r * w[i];
    }
}

/* RMSNorm backward: dx += r*(dy*w) - x*r^3*sum(dy*w*x)/H;  dw += sum_t dy*x*r.
 * The weight gradient is reduced over fixed row chunks (colsum). */
void or1_rmsnorm_bwd(float *dx, float *dw, const float *dy, const float *x, const float *rstd,
                     const float *w, int T, int H) {
    #pragma omp parallel for schedule(static)
    for (int t = 0; t < T; t++) {
        const float *xr = x + (size_t)t * H, *dyr = dy + (size_t)t * H;
        float *dxr = dx + (size_t)t * H, r = rstd[t], s = 0;
        for (int i = 0; i < H; i++) s += dyr[i] * w[i] * xr[i];
        float c = r * r * r * s / (float)H;
        for (int i = 0; i < H; i++) dxr[i] += r * dyr[i] * w[i] - c * xr[i];
    }
    colsum(dw, dy, x, rstd, T, H);
}

/* RoPE tables in double precision, stored as float. */
void or1_rope_table(float *cos_t, float *sin_t, int max_pos, int hd, float theta) {
    int half = hd / 2;
    for (int p = 0; p < max_pos; p++)
        for (int i = 0; i < half; i++) {
            double inv = pow((double)theta, -2.0 * i / hd), a = p * inv;
            cos_t[(size_t)p * half + i] = (float)cos(a);
            sin_t[(size_t)p * half + i] = (float)sin(a);
        }
}

/* Rotates pairs (i, i + hd/2) of each head by the position's angle (or its inverse). */
void or1_rope(float *x, int row_stride, int n_heads, int hd, const int32_t *pos, int T,
              const float *cos_t, const float *sin_t, int inverse) {
    int half = hd / 2;
    float sgn = inverse ? -1.0f : 1.0f;
    #pragma omp parallel for schedule(static)
    for (int t = 0; t < T; t++) {
        const float *c = cos_t + (size_t)pos[t] * half, *s = sin_t + (size_t)pos[t] * half;
        for (int h = 0; h < n_heads; h++) {
            float *v = x + (size_t)t * row_stride + (size_t)h * hd;
            for (int i = 0; i < half; i++) {
                float a = v[i], b = v[i + half];
                v[i] = a * c[i] - sgn * b * s[i];
                v[i + half] = b * c[i] + sgn * a * s[i];
            }
        }
    }
}

enum { QBLOCK = 64 };

/* exp(x) for float, vectorisable: x = n*ln2 + r with |r| <= ln2/2 (n rounded by the 1.5*2^23 trick), a degree-6 polynomial for
 * e^r, then 2^n through the exponent bits. Relative error about 2e-7; inputs below -87 give 0, above 88 e^88. The
 * clamp turns a NaN into a bound (a comparison with NaN is false), so the integer conversion and the shift always see
 * a finite n in [-126, 127] (defined behaviour); a NaN input is then returned as it came. The clamp is written as
 * comparisons rather than fmaxf/fminf, which GCC calls in libm and which kept every loop using this from vectorising. */
static inline float fast_exp(float x) {
    float c = x > -87.0f ? x : -87.0f;
    c = c < 88.0f ? c : 88.0f;
    float n = (c * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round to nearest */
    float r = c - n * 0.693145751953125f - n * 1.42860682030941723e-6f;
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (0.166666672f + r * (0.0416666679f +
                       r * (0.00833336077f + r * 0.00138890173f)))));
    int32_t bits = (int32_t)((uint32_t)((int32_t)n + 127) << 23);
    float scale;
    memcpy(&scale, &bits, 4);
    float e = c <= -87.0f ? 0.0f : p * scale;
    return x != x ? x : e;
}

/* Causal softmax of score rows i0..i0+nb-1 against keys 0..kl-1 (row r may see keys <= i0+r):
 * s is overwritten with probabilities (0 beyond the diagonal) and lse gets each row's
 * log-sum-exp at out-stride lse_stride. */
static void causal_softmax(float *s, int nb, int kl, int i0, float *lse, int lse_stride) {
    for (int r = 0; r < nb; r++) {
        float *row = s + (size_t)r * kl, m = -INFINITY, sum = 0;
        int n = i0 + r + 1;
        for (int j = 0; j < n; j++) m = row[j] > m ? row[j] : m;
        for (int j = 0; j < n; j++) {
            row[j] = fast_exp(row[j] - m);
            sum += row[j];
        }
        float inv = 1.0f / sum;
        for (int j = 0; j < n; j++) row[j] *= inv;
        for (int j = n; j < kl; j++) row[j] = 0;
        lse[(size_t)r * lse_stride] = m + logf(sum);
    }
}

/* Forward for one (sequence, head) in query blocks: S = Q K^T by sgemm, causal softmax,
 * O = P V by sgemm. Only a [QBLOCK x len] score block exists at a time. */
static void attend_head(float *out, float *lse, const float *qkv, int start, int len, int h, int nh,
                        int nkv, int hd, float *s) {
    int stride = (nh + 2 * nkv) * hd, kvh = h / (nh / nkv), ostride = nh * hd;
    float scale = 1.0f / sqrtf((float)hd);
    const float *q = qkv + (size_t)start * stride + (size_t)h * hd;
    const float *k = qkv + (size_t)start * stride + (size_t)(nh + kvh) * hd, *v = k + (size_t)nkv * hd;
    for (int i0 = 0; i0 < len; i0 += QBLOCK) {
        int nb = len - i0 < QBLOCK ? len - i0 : QBLOCK, kl = i0 + nb;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nb, kl, hd, scale, q + (size_t)i0 * stride,
                    stride, k, stride, 0.0f, s, kl);
        causal_softmax(s, nb, kl, i0, lse + (size_t)(start + i0) * nh + h, nh);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nb, hd, kl, 1.0f, s, kl, v, stride, 0.0f,
                    out + (size_t)(start + i0) * ostride + (size_t)h * hd, ostride);
    }
}

/* Longest sequence of a packed batch. */
static int longest(const int32_t *seq_start, int n_seqs) {
    int m = 0;
    for (int s = 0; s < n_seqs; s++)
        if (seq_start[s + 1] - seq_start[s] > m) m = seq_start[s + 1] - seq_start[s];
    return m;
}

/* Causal attention: parallel over (sequence, head) pairs, one score block per thread. */
void or1_attention(float *out, float *lse, const float *qkv, const int32_t *seq_start, int n_seqs,
                   int nh, int nkv, int hd) {
    int maxlen = longest(seq_start, n_seqs);
    #pragma omp parallel
    {
        float *s = or1_malloc((size_t)QBLOCK * (size_t)(maxlen > 0 ? maxlen : 1) * sizeof *s);
        #pragma omp for schedule(dynamic, 1) collapse(2)
        for (int q = 0; q < n_seqs; q++)
            for (int h = 0; h < nh; h++)
                attend_head(out, lse, qkv, seq_start[q], seq_start[q + 1] - seq_start[q], h, nh, nkv,
                            hd, s);
        free(s);
    }
}

/* Pool row of context position j of a decode row: its prompt's blocks hold positions
 * 0 .. n_pre-1, its own blocks the rest; tables list block ids, block rows each. */
static size_t context_row(const int32_t *seg, const int32_t *blocks, int block, int j) {
    int i = j < seg[1] ? j : j - seg[1];
    const int32_t *table = blocks + (j < seg[1] ? seg[0] : seg[2]);
    return (size_t)table[i / block] * (size_t)block + (size_t)(i % block);
}

/* A walk over a decode row's context positions in order, looking a block up only when it
 * enters one (positions inside a block are consecutive pool rows). */
typedef struct {
    const int32_t *seg, *blocks;
    int block, j, left;
    size_t row;
} context_walk;

/* The pool row of the walk's next position. */
static inline size_t context_next(context_walk *w) {
    if (w->left == 0 || w->j == w->seg[1]) {
        w->row = context_row(w->seg, w->blocks, w->block, w->j);
        w->left = w->block - (int)(w->row % (size_t)w->block);
    }
    w->left--, w->j++;
    return w->row++;
}

/* One decode query against its prompt keys then its own keys; scores in p. */
static void decode_head(float *o, const float *q, const float *k, const float *v, const int32_t *seg,
                        const int32_t *blocks, int block, int kv_stride, int hd, float *p) {
    int n = seg[1] + seg[3];
    float scale = 1.0f / sqrtf((float)hd), m = -INFINITY, sum = 0;
    context_walk w = {seg, blocks, block, 0, 0, 0};
    for (int j = 0; j < n; j++) {
        p[j] = dot(q, k + context_next(&w) * kv_stride, hd) * scale;
        m = p[j] > m ? p[j] : m;
    }
    for (int j = 0; j < n; j++) {
        p[j] = fast_exp(p[j] - m);
        sum += p[j];
    }
    memset(o, 0, (size_t)hd * sizeof *o);
    w = (context_walk){seg, blocks, block, 0, 0, 0};
    for (int j = 0; j < n; j++) {
        const float *vr = v + context_next(&w) * kv_stride;
        float c = p[j] / sum;
        for (int i = 0; i < hd; i++) o[i] += c * vr[i];
    }
}

/* Decode attention: parallel over (row, head); each row's result depends on that row alone. */
void or1_attention_decode(float *out, const float *qkv, int B, const float *k, const float *v, const int32_t *seg,
                          const int32_t *blocks, int block, int nh, int nkv, int hd, float *scratch, int ctx_cap) {
    int stride = (nh + 2 * nkv) * hd, kv_stride = nkv * hd, group = nh / nkv;
    #pragma omp parallel
    {
        float *p = scratch + (size_t)omp_get_thread_num() * (size_t)ctx_cap;
        #pragma omp for schedule(dynamic, 1) collapse(2)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < nh; h++) {
                size_t koff = (size_t)(h / group) * hd;
                decode_head(out + (size_t)b * nh * hd + (size_t)h * hd, qkv + (size_t)b * stride + (size_t)h * hd,
                            k + koff, v + koff, seg + 4 * b, blocks, block, kv_stride, hd, p);
            }
    }
}

/* Backward of one query block of one head: P from the saved lse, dP = dO V^T,
 * dS = P * (dP - rowsum(dO * O)) * scale, then dQ = dS K, dK += dS^T Q, dV += P^T dO. */
static void attend_block_bwd(float *dq, float *dk, float *dv, const float *q, const float *k,
                             const float *v, const float *dO, const float *O, const float *lse, int nb,
                             int kl, int i0, int stride, int ostride, int lse_stride, int hd, float *p,
                             float *dp) {
    float scale = 1.0f / sqrtf((float)hd);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nb, kl, hd, scale, q, stride, k, stride, 0.0f, p, kl);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nb, kl, hd, 1.0f, dO, ostride, v, stride, 0.0f, dp, kl);
    for (int r = 0; r < nb; r++) {
        float *pr = p + (size_t)r * kl, *dpr = dp + (size_t)r * kl, l = lse[(size_t)r * lse_stride];
        float D = dot(dO + (size_t)r * ostride, O + (size_t)r * ostride, hd);
        int n = i0 + r + 1;
        for (int j = 0; j < n; j++) {
            pr[j] = fast_exp(pr[j] - l);
            dpr[j] = pr[j] * (dpr[j] - D) * scale;
        }
        for (int j = n; j < kl; j++) pr[j] = dpr[j] = 0;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nb, hd, kl, 1.0f, dp, kl, k, stride, 1.0f, dq, stride);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, kl, hd, nb, 1.0f, dp, kl, q, stride, 1.0f, dk, stride);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, kl, hd, nb, 1.0f, p, kl, dO, ostride, 1.0f, dv, stride);
}

/* Backward for one (sequence, kv head) and all query heads sharing it, so dK/dV rows
 * are written by one thread only. */
static void attend_group_bwd(float *dqkv, const float *dout, const float *qkv, const float *out,
                             const float *lse, int start, int len, int kvh, int nh, int nkv, int hd,
                             float *p, float *dp) {
    int stride = (nh + 2 * nkv) * hd, ostride = nh * hd, group = nh / nkv;
    size_t base = (size_t)start * stride, koff = (size_t)(nh + kvh) * hd, voff = koff + (size_t)nkv * hd;
    for (int h = kvh * group; h < (kvh + 1) * group; h++) {
        for (int i0 = 0; i0 < len; i0 += QBLOCK) {
            int nb = len - i0 < QBLOCK ? len - i0 : QBLOCK;
            size_t qrow = base + (size_t)i0 * stride + (size_t)h * hd;
            size_t orow = (size_t)(start + i0) * ostride + (size_t)h * hd;
            attend_block_bwd(dqkv + qrow, dqkv + base + koff, dqkv + base + voff, qkv + qrow, qkv + base + koff,
                             qkv + base + voff, dout + orow, out + orow, lse + (size_t)(start + i0) * nh + h,
                             nb, i0 + nb, i0, stride, ostride, nh, hd, p, dp);
        }
    }
}

/* Attention backward: zero dqkv, then parallel over (sequence, kv head) pairs. */
void or1_attention_bwd(float *dqkv, const float *dout, const float *qkv, const float *out,
                       const float *lse, const int32_t *seq_start, int n_seqs, int nh, int nkv, int hd) {
    size_t stride = (size_t)(nh + 2 * nkv) * hd;
    int maxlen = longest(seq_start, n_seqs);
    memset(dqkv, 0, (size_t)seq_start[n_seqs] * stride * sizeof *dqkv);
    #pragma omp parallel
    {
        size_t cap = (size_t)QBLOCK * (size_t)(maxlen > 0 ? maxlen : 1);
        float *p = or1_malloc(2 * cap * sizeof *p);
        #pragma omp for schedule(dynamic, 1) collapse(2)
        for (int s = 0; s < n_seqs; s++)
            for (int g = 0; g < nkv; g++)
                attend_group_bwd(dqkv, dout, qkv, out, lse, seq_start[s], seq_start[s + 1] - seq_start[s], g,
                                 nh, nkv, hd, p, p + cap);
        free(p);
    }
}

/* silu(g) * u per element. */
void or1_swiglu(float *a, const float *gu, int T, int inter) {
    #pragma omp parallel for schedule(static)
    for (int t = 0; t < T; t++) {
        const float *g = gu + (size_t)t * 2 * inter, *u = g + inter;
        float *ar = a + (size_t)t * inter;
        for (int i = 0; i < inter; i++) ar[i] = g[i] / (1.0f + fast_exp(-g[i])) * u[i];
    }
}

/* d/dg = da*u*sig*(1 + g*(1-sig)),  d/du = da*silu(g). */
void or1_swiglu_bwd(float *dgu, const float *da, const float *gu, int T, int inter) {
    #pragma omp parallel for schedule(static)
    for (int t = 0; t < T; t++) {
        const float *g = gu + (size_t)t * 2 * inter, *u = g + inter, *d = da + (size_t)t * inter;
        float *dg = dgu + (size_t)t * 2 * inter, *du = dg + inter;
        for (int i = 0; i < inter; i++) {
            float sig = 1.0f / (1.0f + fast_exp(-g[i]));
            dg[i] = d[i] * u[i] * sig * (1.0f + g[i] * (1.0f - sig));
            du[i] = d[i] * g[i] * sig;
        }
    }
}

/* Logits of vocabulary rows [c0, c0+vc) for n hidden rows, already divided by the temperature:
 * sgemm, or with bf16 weights (wb) the bf16 row kernel that the rollout's sampler also uses. */
static void chunk_logits(float *z, const float *h, const float *w, const or1_bf16 *wb, int n, int H, int c0, int vc,
                         float inv_t) {
    if (!wb) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, vc, H, inv_t, h, H, w + (size_t)c0 * H, H, 0.0f, z,
                    vc);
        return;
    }
    or1_matmul_rows_bf16(z, h, wb + (size_t)c0 * H, NULL, n, H, vc);
    size_t m = (size_t)n * vc;
    for (size_t i = 0; i < m; i++) z[i] *= inv_t;
}

/* Scratch floats for the head: one [n x VOCAB_CHUNK] logits block. */
long or1_head_scratch(int n) { return (long)n * VOCAB_CHUNK; }

/* Streams vocabulary chunks: logits by sgemm, then an online max / sum(exp) / sum(exp*z)
 * per row in double precision, and the target's logit when it falls in the chunk. */
void or1_head(float *logp, float *entropy, float *lse, float *ez, const float *h, const float *w,
              const or1_bf16 *wb, const int32_t *tgt, int n, int H, int V, float temperature, float *scratch) {
    double m[n], s[n], sz[n];
    float zt[n];
    for (int i = 0; i < n; i++) m[i] = -INFINITY, s[i] = 0, sz[i] = 0, zt[i] = 0;
    float inv_t = 1.0f / temperature;
    for (int c0 = 0; c0 < V; c0 += VOCAB_CHUNK) {
        int vc = V - c0 < VOCAB_CHUNK ? V - c0 : VOCAB_CHUNK;
        chunk_logits(scratch, h, w, wb, n, H, c0, vc, inv_t);
        #pragma omp parallel for schedule(static)
        for (int i = 0; i < n; i++) {
            const float *z = scratch + (size_t)i * vc;
            float cm = -INFINITY;
            for (int v = 0; v < vc; v++) cm = z[v] > cm ? z[v] : cm;
            double nm = cm > m[i] ? cm : m[i], scale = exp(m[i] - nm), a = 0, b = 0;
            for (int v = 0; v < vc; v++) {
                double e = exp((double)z[v] - nm);
                a += e;
                b += e * z[v];
            }
            s[i] = s[i] * scale + a;
            sz[i] = sz[i] * scale + b;
            m[i] = nm;
            if (tgt[i] >= c0 && tgt[i] < c0 + vc) zt[i] = z[tgt[i] - c0];
        }
    }
    for (int i = 0; i < n; i++) {
        double l = m[i] + log(s[i]);
        lse[i] = (float)l;
        ez[i] = (float)(sz[i] / s[i]);
        logp[i] = (float)(zt[i] - l);
        entropy[i] = (float)(l - sz[i] / s[i]);
    }
}

/* Recomputes each logits chunk, forms dz = g_lp*(onehot - p) - g_H*p*(z - E[z]), scales by
 * 1/temperature, and feeds two sgemms: dh += dz W_chunk, dW_chunk += dz^T h. */
void or1_head_bwd(float *dh, float *dw, const float *h, const float *w, const or1_bf16 *wb, const int32_t *tgt,
                  const float *lse, const float *ez, const float *g_logp, const float *g_entropy,
                  int n, int H, int V, float temperature, float *scratch) {
    float inv_t = 1.0f / temperature;
    memset(dh, 0, (size_t)n * H * sizeof *dh);
    for (int c0 = 0; c0 < V; c0 += VOCAB_CHUNK) {
        int vc = V - c0 < VOCAB_CHUNK ? V - c0 : VOCAB_CHUNK;
        chunk_logits(scratch, h, w, wb, n, H, c0, vc, inv_t);
        #pragma omp parallel for schedule(static)
        for (int i = 0; i < n; i++) {
            float *z = scratch + (size_t)i * vc;
            for (int v = 0; v < vc; v++) {
                float p = fast_exp(z[v] - lse[i]);
                z[v] = (-g_logp[i] * p - g_entropy[i] * p * (z[v] - ez[i])) * inv_t;
            }
            if (tgt[i] >= c0 && tgt[i] < c0 + vc) z[tgt[i] - c0] += g_logp[i] * inv_t;
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, H, vc, 1.0f, scratch, vc,
                    w + (size_t)c0 * H, H, 1.0f, dh, H);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, vc, H, n, 1.0f, scratch, vc, h, H, 1.0f,
                    dw + (size_t)c0 * H, H);
    }
}

/* AdamW in torch.optim.AdamW's order: decay, moments, bias-corrected update. */
void or1_adamw_update(float *params, float *m, float *v, const float *grads, size_t n, long step, float lr,
                      float beta1, float beta2, float eps, float weight_decay) {
    double bc1 = 1.0 - pow(beta1, (double)step), bc2 = 1.0 - pow(beta2, (double)step);
    float step_size = (float)(lr / bc1), bc2_sqrt = (float)sqrt(bc2);
    float decay = 1.0f - lr * weight_decay, b1 = beta1, b2 = beta2;
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        float g = grads[i];
        params[i] *= decay;
        m[i] = m[i] * b1 + (1.0f - b1) * g;
        v[i] = v[i] * b2 + (1.0f - b2) * g * g;
        float denom = sqrtf(v[i]) / bc2_sqrt + eps;
        params[i] -= step_size * m[i] / denom;
    }
}
