/* CPU kernels: OpenBLAS sgemm for every matmul, OpenMP loops for the rest. */
#include "or1/kernels.h"

#include "or1/core.h"

#include <cblas.h>
#include <math.h>
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

/* y += alpha * x over n floats. */
static inline void axpy(float *y, float alpha, const float *x, int n) {
    for (int i = 0; i < n; i++) y[i] += alpha * x[i];
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

/* dW += dy^T x and db += column sums of dy (weight gradients of a linear layer). */
void or1_matmul_dw(float *dw, float *db, const float *dy, const float *x, int T, int in, int out) {
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, T, 1.0f, dy, out, x, in, 1.0f, dw, in);
    if (!db) return;
    #pragma omp parallel for schedule(static)
    for (int o = 0; o < out; o++) {
        float s = 0;
        for (int t = 0; t < T; t++) s += dy[(size_t)t * out + o];
        db[o] += s;
    }
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
 * The weight gradient is reduced per column so threads never share an output. */
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
    #pragma omp parallel for schedule(static)
    for (int i = 0; i < H; i++) {
        float s = 0;
        for (int t = 0; t < T; t++) s += dy[(size_t)t * H + i] * x[(size_t)t * H + i] * rstd[t];
        dw[i] += s;
    }
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

/* Forward for one (sequence, head): each query row attends to keys 0..i of its sequence. */
static void attend_head(float *out, float *lse, const float *qkv, int start, int len, int h, int nh,
                        int nkv, int hd, float *p) {
    int stride = (nh + 2 * nkv) * hd, kvh = h / (nh / nkv);
    float scale = 1.0f / sqrtf((float)hd);
    const float *kbase = qkv + (size_t)start * stride + (size_t)(nh + kvh) * hd;
    const float *vbase = kbase + (size_t)nkv * hd;
    for (int i = 0; i < len; i++) {
        const float *q = qkv + (size_t)(start + i) * stride + (size_t)h * hd;
        float m = -INFINITY;
        for (int j = 0; j <= i; j++) {
            p[j] = dot(q, kbase + (size_t)j * stride, hd) * scale;
            if (p[j] > m) m = p[j];
        }
        float sum = 0;
        for (int j = 0; j <= i; j++) {
            p[j] = expf(p[j] - m);
            sum += p[j];
        }
        float *o = out + (size_t)(start + i) * nh * hd + (size_t)h * hd, inv = 1.0f / sum;
        memset(o, 0, (size_t)hd * sizeof *o);
        for (int j = 0; j <= i; j++) axpy(o, p[j] * inv, vbase + (size_t)j * stride, hd);
        lse[(size_t)(start + i) * nh + h] = m + logf(sum);
    }
}

/* Longest sequence of a packed batch. */
static int longest(const int32_t *seq_start, int n_seqs) {
    int m = 0;
    for (int s = 0; s < n_seqs; s++)
        if (seq_start[s + 1] - seq_start[s] > m) m = seq_start[s + 1] - seq_start[s];
    return m;
}

/* Causal attention: parallel over (sequence, head) pairs, one score row per thread. */
void or1_attention(float *out, float *lse, const float *qkv, const int32_t *seq_start, int n_seqs,
                   int nh, int nkv, int hd) {
    int maxlen = longest(seq_start, n_seqs);
    #pragma omp parallel
    {
        float *p = or1_malloc((size_t)(maxlen > 0 ? maxlen : 1) * sizeof *p);
        #pragma omp for schedule(dynamic, 1) collapse(2)
        for (int s = 0; s < n_seqs; s++)
            for (int h = 0; h < nh; h++)
                attend_head(out, lse, qkv, seq_start[s], seq_start[s + 1] - seq_start[s], h, nh, nkv,
                            hd, p);
        free(p);
    }
}

/* Backward for one (sequence, kv head) and all query heads sharing it, so dK/dV rows
 * are written by one thread only. dS = P * (dP - rowsum(dO * O)). */
static void attend_group_bwd(float *dqkv, const float *dout, const float *qkv, const float *out,
                             const float *lse, int start, int len, int kvh, int nh, int nkv, int hd) {
    int stride = (nh + 2 * nkv) * hd, group = nh / nkv;
    float scale = 1.0f / sqrtf((float)hd);
    const float *kbase = qkv + (size_t)start * stride + (size_t)(nh + kvh) * hd;
    const float *vbase = kbase + (size_t)nkv * hd;
    float *dkbase = dqkv + (size_t)start * stride + (size_t)(nh + kvh) * hd;
    float *dvbase = dkbase + (size_t)nkv * hd;
    for (int h = kvh * group; h < (kvh + 1) * group; h++) {
        for (int i = 0; i < len; i++) {
            size_t row = (size_t)(start + i);
            const float *q = qkv + row * stride + (size_t)h * hd;
            const float *dO = dout + row * nh * hd + (size_t)h * hd, *O = out + row * nh * hd + (size_t)h * hd;
            float *dq = dqkv + row * stride + (size_t)h * hd;
            float D = dot(dO, O, hd), l = lse[row * nh + h];
            for (int j = 0; j <= i; j++) {
                const float *k = kbase + (size_t)j * stride, *v = vbase + (size_t)j * stride;
                float p = expf(dot(q, k, hd) * scale - l);
                float ds = p * (dot(dO, v, hd) - D) * scale;
                axpy(dq, ds, k, hd);
                axpy(dkbase + (size_t)j * stride, ds, q, hd);
                axpy(dvbase + (size_t)j * stride, p, dO, hd);
            }
        }
    }
}

/* Attention backward: zero dqkv, then parallel over (sequence, kv head) pairs. */
void or1_attention_bwd(float *dqkv, const float *dout, const float *qkv, const float *out,
                       const float *lse, const int32_t *seq_start, int n_seqs, int nh, int nkv, int hd) {
    size_t stride = (size_t)(nh + 2 * nkv) * hd;
    memset(dqkv, 0, (size_t)seq_start[n_seqs] * stride * sizeof *dqkv);
    #pragma omp parallel for schedule(dynamic, 1) collapse(2)
    for (int s = 0; s < n_seqs; s++)
        for (int g = 0; g < nkv; g++)
            attend_group_bwd(dqkv, dout, qkv, out, lse, seq_start[s], seq_start[s + 1] - seq_start[s], g,
                             nh, nkv, hd);
}

/* silu(g) * u per element. */
void or1_swiglu(float *a, const float *gu, int T, int inter) {
    #pragma omp parallel for schedule(static)
    for (int t = 0; t < T; t++) {
        const float *g = gu + (size_t)t * 2 * inter, *u = g + inter;
        float *ar = a + (size_t)t * inter;
        for (int i = 0; i < inter; i++) ar[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
    }
}

/* d/dg = da*u*sig*(1 + g*(1-sig)),  d/du = da*silu(g). */
void or1_swiglu_bwd(float *dgu, const float *da, const float *gu, int T, int inter) {
    #pragma omp parallel for schedule(static)
    for (int t = 0; t < T; t++) {
        const float *g = gu + (size_t)t * 2 * inter, *u = g + inter, *d = da + (size_t)t * inter;
        float *dg = dgu + (size_t)t * 2 * inter, *du = dg + inter;
        for (int i = 0; i < inter; i++) {
            float sig = 1.0f / (1.0f + expf(-g[i]));
            dg[i] = d[i] * u[i] * sig * (1.0f + g[i] * (1.0f - sig));
            du[i] = d[i] * g[i] * sig;
        }
    }
}

/* Scratch floats for the head: one [n x VOCAB_CHUNK] logits block. */
long or1_head_scratch(int n) { return (long)n * VOCAB_CHUNK; }

/* Streams vocabulary chunks: logits by sgemm, then an online max / sum(exp) / sum(exp*z)
 * per row in double precision, and the target's logit when it falls in the chunk. */
void or1_head(float *logp, float *entropy, float *lse, float *ez, const float *h, const float *w,
              const int32_t *tgt, int n, int H, int V, float temperature, float *scratch) {
    double m[n], s[n], sz[n];
    float zt[n];
    for (int i = 0; i < n; i++) m[i] = -INFINITY, s[i] = 0, sz[i] = 0, zt[i] = 0;
    float inv_t = 1.0f / temperature;
    for (int c0 = 0; c0 < V; c0 += VOCAB_CHUNK) {
        int vc = V - c0 < VOCAB_CHUNK ? V - c0 : VOCAB_CHUNK;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, vc, H, inv_t, h, H, w + (size_t)c0 * H, H,
                    0.0f, scratch, vc);
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
void or1_head_bwd(float *dh, float *dw, const float *h, const float *w, const int32_t *tgt,
                  const float *lse, const float *ez, const float *g_logp, const float *g_entropy,
                  int n, int H, int V, float temperature, float *scratch) {
    float inv_t = 1.0f / temperature;
    memset(dh, 0, (size_t)n * H * sizeof *dh);
    for (int c0 = 0; c0 < V; c0 += VOCAB_CHUNK) {
        int vc = V - c0 < VOCAB_CHUNK ? V - c0 : VOCAB_CHUNK;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, vc, H, inv_t, h, H, w + (size_t)c0 * H, H,
                    0.0f, scratch, vc);
        #pragma omp parallel for schedule(static)
        for (int i = 0; i < n; i++) {
            float *z = scratch + (size_t)i * vc;
            for (int v = 0; v < vc; v++) {
                float p = expf(z[v] - lse[i]);
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
