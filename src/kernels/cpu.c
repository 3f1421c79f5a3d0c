/* CPU kernels: OpenBLAS sgemm for every matmul, OpenMP loops for the rest. */
#include "or1/kernels.h"

#include "or1/core.h"
#include "internal.h"

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

/* dx = dy W with W in bf16: W widened DX_ROWS rows at a time, each block's product summed into
 * dx by sgemm (the backward of a bf16 matmul uses the weights its forward used). */
void or1_matmul_dx_bf16(float *dx, const float *dy, const or1_bf16 *w, int T, int in, int out, int acc) {
    enum { DX_ROWS = 256 };
    if (out == 0 && !acc) memset(dx, 0, (size_t)T * in * sizeof *dx);
    if (T == 0 || in == 0 || out == 0) return;
    float *wf = or1_alloc_floats((size_t)(out < DX_ROWS ? out : DX_ROWS) * in);
    for (int k0 = 0; k0 < out; k0 += DX_ROWS) {
        int k = out - k0 < DX_ROWS ? out - k0 : DX_ROWS;
        or1_f32_from_bf16(wf, w + (size_t)k0 * in, (size_t)k * in);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, in, k, 1.0f, dy + k0, out, wf, in,
                    acc || k0 ? 1.0f : 0.0f, dx, in);
    }
    free(wf);
}

/* Column sums over T rows (a bias gradient, RMSNorm's weight gradient) run in ROW_CHUNKS fixed
 * row chunks in parallel, each into its own partial sum, and the partials are added in chunk
 * order: cache-friendly, and the result does not depend on the thread count. */
enum { ROW_CHUNKS = 32 };

/* The first row of chunk k of T rows (chunk k is rows [chunk_row(T, k), chunk_row(T, k + 1))). */
static inline int chunk_row(int T, int k) { return (int)((long)T * k / ROW_CHUNKS); }

/* acc[j] += the ROW_CHUNKS partial sums of part ([ROW_CHUNKS, n]) in chunk order; frees part. */
static void add_partials(float *acc, float *part, int n) {
    for (int k = 0; k < ROW_CHUNKS; k++)
        for (int j = 0; j < n; j++) acc[j] += part[(size_t)k * n + j];
    free(part);
}

/* acc[j] += sum_t a[t,j] over a [T, n] row-major operand, by row chunks. */
static void colsum(float *acc, const float *a, int T, int n) {
    float *part = or1_alloc_floats((size_t)ROW_CHUNKS * n);
    #pragma omp parallel for schedule(static)
    for (int k = 0; k < ROW_CHUNKS; k++) {
        float *p = part + (size_t)k * n;
        for (int t = chunk_row(T, k); t < chunk_row(T, k + 1); t++)
            for (int j = 0; j < n; j++) p[j] += a[(size_t)t * n + j];
    }
    add_partials(acc, part, n);
}

/* dW += dy^T x and db += column sums of dy (weight gradients of a linear layer). */
void or1_matmul_dw(float *dw, float *db, const float *dy, const float *x, int T, int in, int out) {
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, T, 1.0f, dy, out, x, in, 1.0f, dw, in);
    if (db) colsum(db, dy, T, out);
}

/* RMSNorm forward, one row per token, after adding the residual res (if any) into x. */
void or1_rmsnorm(float *y, float *rstd, float *x, const float *res, const float *w, int T, int H, float eps) {
    #pragma omp parallel for schedule(static)
    for (int t = 0; t < T; t++) {
        float *xr = x + (size_t)t * H, *yr = y + (size_t)t * H;
        if (res)
            for (int i = 0; i < H; i++) xr[i] += res[(size_t)t * H + i];
        float r = 1.0f / sqrtf(dot(xr, xr, H) / (float)H + eps);
        rstd[t] = r;
        for (int i = 0; i < H; i++) yr[i] = xr[i] * r * w[i];
    }
}

/* One row of RMSNorm backward: dx += r*(dy*w) - x*r^3*sum(dy*w*x)/H, and the row's share of
 * the weight gradient dy*x*r added into part. */
static void rmsnorm_bwd_row(float *restrict dx, float *restrict part, const float *restrict dy,
                            const float *restrict x, const float *restrict w, float r, int H) {
    float acc[8] = {0}, s = 0;
    int i = 0; /* sum(dy*w*x) in eight lanes, as in dot */
    for (; i + 8 <= H; i += 8)
        for (int l = 0; l < 8; l++) acc[l] += dy[i + l] * w[i + l] * x[i + l];
    for (; i < H; i++) s += dy[i] * w[i] * x[i];
    for (int l = 0; l < 8; l++) s += acc[l];
    float c = r * r * r * s / (float)H;
    for (int i = 0; i < H; i++) {
        dx[i] += r * dy[i] * w[i] - c * x[i];
        part[i] += dy[i] * x[i] * r;
    }
}

/* RMSNorm backward in one pass over dy and x, by row chunks (see colsum): each chunk adds its
 * rows' weight-gradient shares into its own partial sum. */
void or1_rmsnorm_bwd(float *dx, float *dw, const float *dy, const float *x, const float *rstd,
                     const float *w, int T, int H) {
    float *part = or1_alloc_floats((size_t)ROW_CHUNKS * H);
    #pragma omp parallel for schedule(static)
    for (int k = 0; k < ROW_CHUNKS; k++)
        for (int t = chunk_row(T, k); t < chunk_row(T, k + 1); t++)
            rmsnorm_bwd_row(dx + (size_t)t * H, part + (size_t)k * H, dy + (size_t)t * H, x + (size_t)t * H, w,
                            rstd[t], H);
    add_partials(dw, part, H);
}

/* Per-head RMSNorm inside strided rows (Qwen3's q_norm and k_norm): head h of token t, the hd
 * floats at x + t*stride + h*hd, scaled by its reciprocal RMS and by w into y at the same place
 * (y may be x), as or1_rmsnorm does a row. */
void or1_head_norm(float *y, float *rstd, const float *x, const float *w, int T, int n_heads, int hd, int stride,
                   float eps) {
    #pragma omp parallel for schedule(static)
    for (int t = 0; t < T; t++)
        for (int h = 0; h < n_heads; h++) {
            size_t at = (size_t)t * stride + (size_t)h * hd;
            const float *xr = x + at;
            float *yr = y + at, r = 1.0f / sqrtf(dot(xr, xr, hd) / (float)hd + eps);
            rstd[(size_t)t * n_heads + h] = r;
            for (int i = 0; i < hd; i++) yr[i] = xr[i] * r * w[i];
        }
}

/* Its backward: each head's dy (in d, at the same places) becomes its dx in place, by
 * rmsnorm_bwd_row, and the weight gradient of every token and head is added into dw by row
 * chunks (see colsum). */
void or1_head_norm_bwd(float *d, float *dw, const float *x, const float *rstd, const float *w, int T, int n_heads,
                       int hd, int stride) {
    float *part = or1_alloc_floats((size_t)ROW_CHUNKS * hd);
    #pragma omp parallel for schedule(static)
    for (int k = 0; k < ROW_CHUNKS; k++) {
        float *dx = or1_alloc_floats((size_t)hd);
        for (int t = chunk_row(T, k); t < chunk_row(T, k + 1); t++)
            for (int h = 0; h < n_heads; h++) {
                size_t at = (size_t)t * stride + (size_t)h * hd;
                memset(dx, 0, (size_t)hd * sizeof *dx);
                rmsnorm_bwd_row(dx, part + (size_t)k * hd, d + at, x + at, w, rstd[(size_t)t * n_heads + h], hd);
                memcpy(d + at, dx, (size_t)hd * sizeof *dx);
            }
        free(dx);
    }
    add_partials(dw, part, hd);
}

/* YaRN's mscale (eq. 21 of its paper): 0.1 m ln(scale) + 1, and 1 for a scale <= 1. */
static double yarn_mscale(double scale, double m) {
    return scale <= 1 ? 1.0 : 0.1 * m * log(scale) + 1.0;
}

/* What cos and sin are multiplied by: yarn's attention_factor when the config gives one, else
 * its mscale of factor (the mscale over the mscale_all_dim one when both are non-zero, as
 * transformers tests them); 1 for every other scaling. */
static double rope_attention_factor(const or1_rope_scaling *s) {
    if (!s || s->type != OR1_ROPE_YARN) return 1.0;
    if (s->attention_factor > 0) return s->attention_factor;
    if (s->mscale != 0 && s->mscale_all_dim != 0)
        return yarn_mscale(s->factor, s->mscale) / yarn_mscale(s->factor, s->mscale_all_dim);
    return yarn_mscale(s->factor, 1.0);
}

/* YaRN's correction dimension: the (fractional) dimension of a head of hd under theta whose
 * pair turns rot times over n positions. */
static double yarn_correction_dim(double rot, int hd, double theta, int n) {
    return hd * log(n / (rot * 2 * M_PI)) / (2 * log(theta));
}

/* YaRN's ramp at pair i, as transformers computes it: 0 up to the beta_fast dimension, 1 from
 * the beta_slow one, linear between; the two floored and ceiled when truncate, then clamped to
 * [0, hd - 1], a zero-width ramp widened by 0.001 (transformers' guard). */
static double yarn_ramp(int i, int hd, double theta, const or1_rope_scaling *s) {
    double lo = yarn_correction_dim(s->beta_fast, hd, theta, s->original_max_pos);
    double hi = yarn_correction_dim(s->beta_slow, hd, theta, s->original_max_pos);
    if (s->truncate) lo = floor(lo), hi = ceil(hi);
    lo = lo > 0 ? lo : 0;
    hi = hi < hd - 1 ? hi : hd - 1;
    if (lo == hi) hi += 0.001;
    double r = (i - lo) / (hi - lo);
    return r < 0 ? 0 : r > 1 ? 1 : r;
}

/* The inverse frequency of pair i of a head of hd under theta and the scaling s (NULL: none). */
static double rope_inv_freq(int i, int hd, double theta, const or1_rope_scaling *s) {
    double inv = pow(theta, -2.0 * i / hd);
    if (!s || s->type == OR1_ROPE_NONE) return inv;
    if (s->type == OR1_ROPE_LINEAR) return inv / s->factor;
    if (s->type == OR1_ROPE_YARN) { /* interpolated (divided by factor) by the ramp, kept by the rest */
        double r = yarn_ramp(i, hd, theta, s);
        return r * inv / s->factor + (1 - r) * inv;
    }
    double wavelen = 2 * M_PI / inv, low_wavelen = s->original_max_pos / s->low_freq_factor;
    double high_wavelen = s->original_max_pos / s->high_freq_factor;
    if (wavelen < high_wavelen) return inv;
    if (wavelen > low_wavelen) return inv / s->factor;
    double smooth = (s->original_max_pos / wavelen - s->low_freq_factor) / (s->high_freq_factor - s->low_freq_factor);
    return (1 - smooth) * inv / s->factor + smooth * inv;
}

/* RoPE tables in double precision, stored as float; cos and sin both carry the attention
 * factor, as transformers' rotary embeddings multiply them by attention_scaling. */
void or1_rope_table(float *cos_t, float *sin_t, int max_pos, int hd, float theta, const or1_rope_scaling *s) {
    int half = hd / 2;
    double m = rope_attention_factor(s);
    for (int i = 0; i < half; i++) {
        double inv = rope_inv_freq(i, hd, theta, s);
        for (int p = 0; p < max_pos; p++) {
            double a = p * inv;
            cos_t[(size_t)p * half + i] = (float)(m * cos(a));
            sin_t[(size_t)p * half + i] = (float)(m * sin(a));
        }
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

enum { LANES = 16 }; /* independent accumulators of the row reductions below */

/* Largest of x[0..n) (NaN entries are passed over, as a scalar `x > m` loop would), VL lanes
 * at a time: a comparison and a select per vector (the scalar select does not vectorise). */
static inline float row_max(const float *x, int n) {
    typedef int32_t vi __attribute__((vector_size(sizeof(vf))));
    vf mx = {0};
    mx -= INFINITY;
    int i = 0;
    for (; i + VL <= n; i += VL) {
        vf v = loadv(x + i);
        vi gt = v > mx;
        mx = (vf)(((vi)v & gt) | ((vi)mx & ~gt));
    }
    float m = -INFINITY;
    for (; i < n; i++) m = x[i] > m ? x[i] : m;
    for (int l = 0; l < VL; l++) m = mx[l] > m ? mx[l] : m;
    return m;
}

/* x[j] = exp(x[j] - m) over x[0..n), returning their sum: LANES partial sums, since a single
 * float sum is an in-order chain the compiler must not reassociate (one add latency per element). */
static inline float exp_sum(float *x, int n, float m) {
    float acc[LANES] = {0};
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int l = 0; l < LANES; l++) {
            float e = fast_exp(x[i + l] - m);
            x[i + l] = e;
            acc[l] += e;
        }
    float s = 0;
    for (; i < n; i++) {
        x[i] = fast_exp(x[i] - m);
        s += x[i];
    }
    for (int l = 0; l < LANES; l++) s += acc[l];
    return s;
}

/* Causal softmax of M stacked score rows (row stride ld): row r is query token i0 + r / G (G
 * heads per token, see attn_geom) and may see keys <= that token. s is overwritten with
 * probabilities, 0 from the row's last key up to ld; lse gets each row's log-sum-exp, token
 * r / G's at lse + (r / G) * lse_stride + r % G. */
OR1_ONE_COPY static void causal_softmax(float *s, int M, int ld, int i0, int G, float *lse, int lse_stride) {
    for (int r = 0; r < M; r++) {
        float *row = s + (size_t)r * ld;
        int n = i0 + r / G + 1;
        float m = row_max(row, n), sum = exp_sum(row, n, m), inv = 1.0f / sum;
        for (int j = 0; j < n; j++) row[j] *= inv;
        for (int j = n; j < ld; j++) row[j] = 0;
        lse[(size_t)(r / G) * lse_stride + r % G] = m + logf(sum);
    }
}

/* Shapes of packed causal GQA attention. A unit of work is one query block of one sequence for
 * one KV head: its G query heads over nb tokens are taken as M = G * nb stacked rows, token-major
 * (row r is token r / G, head r % G: a token's G heads are adjacent in qkv and in out, so row r
 * lies at (r / G) * row stride + (r % G) * hd from the block's first), and every product below
 * runs over all M rows, loading a key once for G heads. */
typedef struct {
    int nh, nkv, hd, G, w;   /* heads, KV heads, head size, query heads per KV head, G * hd */
    int stride, ostride, nb; /* qkv and out row strides; tokens per query block */
    float scale;
} attn_geom;

/* Stacked rows a query block aims at (scores of 256 x a few hundred keys stay in L2), and the
 * floats a score block may take: 1 MiB, or 64 rows of the longest sequence (the per-head blocks
 * before) where that is more, so that long sequences take no more memory per thread than they did. */
enum { ATT_ROWS = 256, ATT_BLOCK_FLOATS = 1 << 18 };

/* The shapes for nh query heads, nkv KV heads of hd each and sequences of up to maxlen tokens:
 * query blocks of 16 to 64 tokens, fewer where the score block would outgrow its budget. */
static attn_geom attn_geom_of(int nh, int nkv, int hd, int maxlen) {
    attn_geom g = {nh, nkv, hd, nh / nkv, nh / nkv * hd, (nh + 2 * nkv) * hd, nh * hd, 0, 1.0f / sqrtf((float)hd)};
    long ld = (maxlen > 0 ? maxlen : 1) + 2L * VL, budget = 64 * ld > ATT_BLOCK_FLOATS ? 64 * ld : ATT_BLOCK_FLOATS;
    long nb = ATT_ROWS / g.G, fit = budget / ld / g.G;
    nb = nb < 16 ? 16 : nb > 64 ? 64 : nb;
    g.nb = (int)(nb < fit ? nb : fit > 0 ? fit : 1);
    return g;
}

/* Stacked row r of a block at x whose tokens are rs floats apart (see attn_geom). */
static inline const float *srow(const float *x, size_t rs, int r, int G, int hd) {
    return x + (size_t)(r / G) * rs + (size_t)(r % G) * hd;
}

/* The attention products are small (head size 32-128, a few hundred keys), where sgemm spends
 * more on packing and dispatch than on arithmetic; these kernels run them in registers. A tile is
 * AR stacked rows by KT keys (scores) or by two vectors of the head (the others): AR * 2
 * independent vector accumulators, one broadcast per row and input. */
enum { AR = 6, KT = 2 * VL };

/* Keys of a score row stride: kl rounded up to whole tiles (the rest of a row is zero). */
static int keys_ld(int kl) { return (kl + KT - 1) / KT * KT; }

/* bt[d][j] = b[j][d] (rows ldb apart) for the first n keys, zero from n up to ld: keys made
 * contiguous for the score tiles. Key rows are read whole (a column walk would touch one cache
 * line per element). */
static void keys_transpose(float *bt, int ld, const float *b, int ldb, int n, int hd) {
    for (int j = 0; j < n; j++) {
        const float *row = b + (size_t)j * ldb;
        for (int d = 0; d < hd; d++) bt[(size_t)d * ld + j] = row[d];
    }
    for (int d = 0; d < hd; d++) memset(bt + (size_t)d * ld + n, 0, (size_t)(ld - n) * sizeof *bt);
}

/* The first n rows of hd floats of b (rows ldb apart) packed contiguously: the value (or key)
 * rows att_pv streams through, one cache line pair each instead of one every ldb floats. */
static void keys_pack(float *bp, const float *b, int ldb, int n, int hd) {
    for (int j = 0; j < n; j++) memcpy(bp + (size_t)j * hd, b + (size_t)j * ldb, (size_t)hd * sizeof *bp);
}

/* s[r][j] = scale * a_r . b_j (s rows ld apart) for the M stacked rows of the block at a (tokens
 * ars apart) against the keys of bt (b transposed by keys_transpose, stride ldb), tile by tile up
 * to each tile's last row's causal limit (entries past a row's own limit are zeroed later by the
 * softmax). Any head size. */
OR1_ONE_COPY static void att_scores(float *s, int ld, const float *a, size_t ars, const float *bt, int ldb, int M, int i0, int G,
                       int hd, float scale) {
    for (int r0 = 0; r0 < M; r0 += AR) {
        int nr = M - r0 < AR ? M - r0 : AR, n = i0 + (r0 + nr - 1) / G + 1;
        const float *ar[AR];
        for (int i = 0; i < AR; i++) ar[i] = srow(a, ars, r0 + (i < nr ? i : nr - 1), G, hd);
        for (int j0 = 0; j0 < n; j0 += KT) {
            vf acc[AR][2];
            for (int i = 0; i < AR; i++) acc[i][0] = acc[i][1] = (vf){0};
            for (int d = 0; d < hd; d++) {
                vf b0 = loadv(bt + (size_t)d * ldb + j0), b1 = loadv(bt + (size_t)d * ldb + j0 + VL);
                for (int i = 0; i < AR; i++) {
                    vf a = splatv(ar[i][d]);
                    acc[i][0] = fmav(a, b0, acc[i][0]), acc[i][1] = fmav(a, b1, acc[i][1]);
                }
            }
            for (int i = 0; i < nr; i++) {
                storev(s + (size_t)(r0 + i) * ld + j0, acc[i][0] * scale);
                storev(s + (size_t)(r0 + i) * ld + j0 + VL, acc[i][1] * scale);
            }
        }
    }
}

/* o_r[d] = sum_j p[r][j] v[j][d] over a row's keys for the M stacked rows of p (stride ld, zero
 * past each row's limit) and value rows ldv apart, into the stacked rows of the block at o
 * (tokens ors apart). Head sizes beyond a multiple of KT take a scalar tail. */
OR1_ONE_COPY static void att_pv(float *o, size_t ors, const float *p, int ld, const float *v, int ldv, int M, int i0, int G,
                   int hd) {
    int hv = hd - hd % KT;
    for (int r0 = 0; r0 < M; r0 += AR) {
        int nr = M - r0 < AR ? M - r0 : AR, n = i0 + (r0 + nr - 1) / G + 1;
        const float *pr[AR];
        float *orow[AR];
        for (int i = 0; i < AR; i++) {
            int r = r0 + (i < nr ? i : nr - 1);
            pr[i] = p + (size_t)r * ld;
            orow[i] = o + (size_t)(r / G) * ors + (size_t)(r % G) * hd;
        }
        for (int d0 = 0; d0 < hv; d0 += KT) {
            vf acc[AR][2];
            for (int i = 0; i < AR; i++) acc[i][0] = acc[i][1] = (vf){0};
            for (int j = 0; j < n; j++) {
                vf v0 = loadv(v + (size_t)j * ldv + d0), v1 = loadv(v + (size_t)j * ldv + d0 + VL);
                for (int i = 0; i < AR; i++) {
                    vf p = splatv(pr[i][j]);
                    acc[i][0] = fmav(p, v0, acc[i][0]), acc[i][1] = fmav(p, v1, acc[i][1]);
                }
            }
            for (int i = 0; i < nr; i++) storev(orow[i] + d0, acc[i][0]), storev(orow[i] + d0 + VL, acc[i][1]);
        }
        for (int i = 0; i < nr; i++)
            for (int d = hv; d < hd; d++) {
                float acc = 0;
                for (int j = 0; j < n; j++) acc = fmaf(pr[i][j], v[(size_t)j * ldv + d], acc);
                orow[i][d] = acc;
            }
    }
}

/* out[j][d] += sum_r p[r][j] x_r[d] for keys j < kl (out rows ldo apart; x: the stacked rows of
 * the block at x, tokens xrs apart): the key-side gradients dK += dS^T Q and dV += P^T dO. Rows
 * whose token comes before a tile's first key hold zeros there and are skipped. Scalar tail as in
 * att_pv. */
static void att_tn(float *out, int ldo, const float *p, int ld, const float *x, size_t xrs, int M, int kl, int i0,
                   int G, int hd) {
    enum { AJ = 4 };
    int hv = hd - hd % KT;
    for (int j0 = 0; j0 < kl; j0 += AJ) {
        int nj = kl - j0 < AJ ? kl - j0 : AJ, r1 = j0 > i0 ? (j0 - i0) * G : 0;
        for (int d0 = 0; d0 < hv; d0 += KT) {
            vf acc[AJ][2];
            for (int j = 0; j < AJ; j++) acc[j][0] = acc[j][1] = (vf){0};
            for (int t = r1 / G; t < M / G; t++) /* token by token: no division per row */
                for (int h = 0; h < G; h++) {
                    const float *pr = p + (size_t)(t * G + h) * ld + j0, *xr = x + (size_t)t * xrs + (size_t)h * hd + d0;
                    vf x0 = loadv(xr), x1 = loadv(xr + VL);
                    for (int j = 0; j < AJ; j++) acc[j][0] += pr[j] * x0, acc[j][1] += pr[j] * x1;
                }
            for (int j = 0; j < nj; j++) {
                float *o = out + (size_t)(j0 + j) * ldo + d0;
                storev(o, loadv(o) + acc[j][0]);
                storev(o + VL, loadv(o + VL) + acc[j][1]);
            }
        }
        for (int j = 0; j < nj; j++)
            for (int d = hv; d < hd; d++) {
                float acc = 0;
                for (int r = r1; r < M; r++) acc += p[(size_t)r * ld + j0 + j] * srow(x, xrs, r, G, hd)[d];
                out[(size_t)(j0 + j) * ldo + d] += acc;
            }
    }
}

/* Forward of one unit (the sequence at `start`, KV head kvh, query tokens i0..): scores, causal
 * softmax, P V. buf holds the transposed keys, the packed values and a score block
 * (attend_scratch). */
static void attend_block(float *out, float *lse, const float *qkv, const attn_geom *g, int start, int len, int kvh,
                         int i0, float *buf) {
    int nb = len - i0 < g->nb ? len - i0 : g->nb, kl = i0 + nb, M = nb * g->G, ld = keys_ld(kl);
    float *kt = buf, *vp = kt + (size_t)g->hd * ld, *s = vp + (size_t)g->hd * ld;
    const float *base = qkv + (size_t)start * g->stride, *k = base + (size_t)(g->nh + kvh) * g->hd;
    keys_transpose(kt, ld, k, g->stride, kl, g->hd);
    keys_pack(vp, k + (size_t)g->nkv * g->hd, g->stride, kl, g->hd);
    att_scores(s, ld, base + (size_t)i0 * g->stride + (size_t)kvh * g->w, g->stride, kt, ld, M, i0, g->G, g->hd,
               g->scale);
    causal_softmax(s, M, ld, i0, g->G, lse + (size_t)(start + i0) * g->nh + (size_t)kvh * g->G, g->nh);
    att_pv(out + (size_t)(start + i0) * g->ostride + (size_t)kvh * g->w, g->ostride, s, ld, vp, g->hd, M, i0, g->G,
           g->hd);
}

/* Floats of a thread's attention scratch for sequences of up to maxlen tokens: three blocks of
 * keys or values (transposed or packed) and `scores` score blocks. */
static size_t attend_scratch(const attn_geom *g, int maxlen, int scores) {
    size_t ld = (size_t)keys_ld(maxlen > 0 ? maxlen : 1);
    return 3 * (size_t)g->hd * ld + (size_t)scores * g->nb * g->G * ld;
}

/* Longest sequence of a packed batch. */
static int longest(const int32_t *seq_start, int n_seqs) {
    int m = 0;
    for (int s = 0; s < n_seqs; s++)
        if (seq_start[s + 1] - seq_start[s] > m) m = seq_start[s + 1] - seq_start[s];
    return m;
}

/* Causal attention: parallel over units (sequence, KV head, query block), the largest blocks
 * (the last, which see the most keys) handed out first; one scratch block per thread. */
void or1_attention(float *out, float *lse, const float *qkv, const int32_t *seq_start, int n_seqs,
                   int nh, int nkv, int hd) {
    int maxlen = longest(seq_start, n_seqs);
    attn_geom g = attn_geom_of(nh, nkv, hd, maxlen);
    int max_blocks = (maxlen + g.nb - 1) / g.nb;
    #pragma omp parallel
    {
        float *buf = or1_malloc(attend_scratch(&g, maxlen, 1) * sizeof *buf);
        #pragma omp for schedule(dynamic, 1) collapse(3)
        for (int b = max_blocks - 1; b >= 0; b--)
            for (int q = 0; q < n_seqs; q++)
                for (int kvh = 0; kvh < nkv; kvh++) {
                    int len = seq_start[q + 1] - seq_start[q];
                    if (b * g.nb < len) attend_block(out, lse, qkv, &g, seq_start[q], len, kvh, b * g.nb, buf);
                }
        free(buf);
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

/* A decode row's context for one KV head gathered from the pool into the layout attend_block
 * uses: keys transposed into kt (stride ld = keys_ld(n), zero past n) and values packed into vp. */
static void context_gather(float *kt, float *vp, int ld, const float *k, const float *v, const int32_t *seg,
                           const int32_t *blocks, int block, int kv_stride, int hd) {
    int n = seg[1] + seg[3];
    context_walk w = {seg, blocks, block, 0, 0, 0};
    for (int j = 0; j < n; j++) {
        size_t r = context_next(&w);
        const float *kr = k + r * kv_stride;
        for (int d = 0; d < hd; d++) kt[(size_t)d * ld + j] = kr[d];
        memcpy(vp + (size_t)j * hd, v + r * kv_stride, (size_t)hd * sizeof *vp);
    }
    for (int d = 0; d < hd; d++) memset(kt + (size_t)d * ld + n, 0, (size_t)(ld - n) * sizeof *kt);
}

/* One decode row's G query heads of one KV head against its context, through the kernels of the
 * packed attention (att_scores, causal_softmax, att_pv) as the last token of a block of one: each
 * head's output is the same bits the packed attention gives that token at that position. buf
 * holds or1_attention_decode_scratch floats. */
static void decode_group(float *o, const float *q, const float *k, const float *v, const int32_t *seg,
                         const int32_t *blocks, int block, int kv_stride, int G, int hd, float *buf) {
    int n = seg[1] + seg[3], ld = keys_ld(n);
    float *kt = buf, *vp = kt + (size_t)hd * ld, *s = vp + (size_t)hd * ld, *lse = s + (size_t)G * ld;
    context_gather(kt, vp, ld, k, v, seg, blocks, block, kv_stride, hd);
    att_scores(s, ld, q, 0, kt, ld, G, n - 1, G, hd, 1.0f / sqrtf((float)hd));
    causal_softmax(s, G, ld, n - 1, G, lse, 0);
    att_pv(o, 0, s, ld, vp, hd, G, n - 1, G, hd);
}

/* Floats of decode scratch per OpenMP thread for contexts of up to ctx_cap tokens. */
size_t or1_attention_decode_scratch(int nh, int nkv, int hd, int ctx_cap) {
    size_t ld = (size_t)keys_ld(ctx_cap > 0 ? ctx_cap : 1);
    return 2 * (size_t)hd * ld + (size_t)(nh / nkv) * (ld + 1);
}

/* Decode attention: parallel over (row, KV head); each row's result depends on that row alone,
 * and is the packed attention's for that token (the same kernels in the same order). */
void or1_attention_decode(float *out, const float *qkv, int B, const float *k, const float *v, const int32_t *seg,
                          const int32_t *blocks, int block, int nh, int nkv, int hd, float *scratch, int ctx_cap) {
    int stride = (nh + 2 * nkv) * hd, kv_stride = nkv * hd, G = nh / nkv;
    size_t per_thread = or1_attention_decode_scratch(nh, nkv, hd, ctx_cap);
    #pragma omp parallel
    {
        float *buf = scratch + (size_t)omp_get_thread_num() * per_thread;
        #pragma omp for schedule(dynamic, 1) collapse(2)
        for (int b = 0; b < B; b++)
            for (int kvh = 0; kvh < nkv; kvh++) {
                size_t koff = (size_t)kvh * hd, qoff = (size_t)b * stride + (size_t)kvh * G * hd;
                decode_group(out + (size_t)b * nh * hd + (size_t)kvh * G * hd, qkv + qoff, k + koff, v + koff,
                             seg + 4 * b, blocks, block, kv_stride, G, hd, buf);
            }
    }
}

/* Backward of one query block of one KV head's stacked rows (see attn_geom): P from the saved
 * lse, dP = dO V^T, dS = P * (dP - rowsum(dO * O)) * scale, then dQ = dS K (written), dK += dS^T Q
 * and dV += P^T dO, each one product over all G heads. kt and vt: the sequence's keys and values
 * transposed (stride keys_ld(len)), kp its keys packed; p: room for the blocks P and dP. */
static void attend_block_bwd(float *dqkv, const float *dout, const float *qkv, const float *out, const float *lse,
                             const attn_geom *g, int start, int len, int kvh, int i0, const float *kt,
                             const float *vt, const float *kp, float *p) {
    int nb = len - i0 < g->nb ? len - i0 : g->nb, kl = i0 + nb, M = nb * g->G, hd = g->hd, ldt = keys_ld(len);
    int ld = keys_ld(kl);
    size_t koff = (size_t)(g->nh + kvh) * hd, voff = koff + (size_t)g->nkv * hd, qcol = (size_t)kvh * g->w;
    float *dp = p + (size_t)g->nb * g->G * ld, *dbase = dqkv + (size_t)start * g->stride;
    const float *base = qkv + (size_t)start * g->stride, *q = base + (size_t)i0 * g->stride + qcol;
    const float *o = out + (size_t)(start + i0) * g->ostride + qcol, *dO = dout + (size_t)(start + i0) * g->ostride + qcol;
    att_scores(p, ld, q, g->stride, kt, ldt, M, i0, g->G, hd, g->scale);
    att_scores(dp, ld, dO, g->ostride, vt, ldt, M, i0, g->G, hd, 1.0f);
    for (int r = 0; r < M; r++) {
        int n = i0 + r / g->G + 1;
        float *pr = p + (size_t)r * ld, *dpr = dp + (size_t)r * ld;
        float l = lse[(size_t)(start + i0 + r / g->G) * g->nh + (size_t)kvh * g->G + r % g->G];
        float D = dot(srow(dO, g->ostride, r, g->G, hd), srow(o, g->ostride, r, g->G, hd), hd);
        for (int j = 0; j < n; j++) {
            pr[j] = fast_exp(pr[j] - l);
            dpr[j] = pr[j] * (dpr[j] - D) * g->scale;
        }
        for (int j = n; j < ld; j++) pr[j] = dpr[j] = 0;
    }
    att_pv(dbase + (size_t)i0 * g->stride + qcol, g->stride, dp, ld, kp, hd, M, i0, g->G, hd);
    att_tn(dbase + koff, g->stride, dp, ld, q, g->stride, M, kl, i0, g->G, hd);
    att_tn(dbase + voff, g->stride, p, ld, dO, g->ostride, M, kl, i0, g->G, hd);
}

/* Attention backward, parallel over (sequence, KV head) pairs, each running its query blocks in
 * turn, so that a KV head's dK/dV rows are written by one thread only: each pair zeroes its dK/dV
 * columns and accumulates into them; every dQ row is written once by its query block. */
void or1_attention_bwd(float *dqkv, const float *dout, const float *qkv, const float *out,
                       const float *lse, const int32_t *seq_start, int n_seqs, int nh, int nkv, int hd) {
    int maxlen = longest(seq_start, n_seqs);
    attn_geom g = attn_geom_of(nh, nkv, hd, maxlen);
    #pragma omp parallel
    {
        float *buf = or1_malloc(attend_scratch(&g, maxlen, 2) * sizeof *buf);
        size_t ldmax = (size_t)keys_ld(maxlen > 0 ? maxlen : 1);
        float *kt = buf, *vt = kt + (size_t)hd * ldmax, *kp = vt + (size_t)hd * ldmax, *p = kp + (size_t)hd * ldmax;
        #pragma omp for schedule(dynamic, 1) collapse(2)
        for (int s = 0; s < n_seqs; s++)
            for (int kvh = 0; kvh < nkv; kvh++) {
                int len = seq_start[s + 1] - seq_start[s], ldt = keys_ld(len);
                const float *k = qkv + (size_t)seq_start[s] * g.stride + (size_t)(nh + kvh) * hd;
                keys_transpose(kt, ldt, k, g.stride, len, hd);
                keys_transpose(vt, ldt, k + (size_t)nkv * hd, g.stride, len, hd);
                keys_pack(kp, k, g.stride, len, hd);
                float *dk = dqkv + (size_t)seq_start[s] * g.stride + (size_t)(nh + kvh) * hd;
                for (int j = 0; j < len; j++) {
                    memset(dk + (size_t)j * g.stride, 0, (size_t)hd * sizeof *dk);
                    memset(dk + (size_t)j * g.stride + (size_t)nkv * hd, 0, (size_t)hd * sizeof *dk);
                }
                for (int i0 = 0; i0 < len; i0 += g.nb)
                    attend_block_bwd(dqkv, dout, qkv, out, lse, &g, seq_start[s], len, kvh, i0, kt, vt, kp, p);
            }
        free(buf);
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

/* One row of swiglu_bwd: d/dg = da*u*sig*(1 + g*(1-sig)), d/du = da*silu(g), and a =
 * silu(g)*u from the same exp, computed as or1_swiglu does so that it is the forward's value to
 * the bit. restrict parameters: six streams are more than the vectoriser's overlap checks allow. */
static void swiglu_bwd_row(float *restrict a, float *restrict dg, float *restrict du, const float *restrict g,
                           const float *restrict u, const float *restrict d, int inter) {
    for (int i = 0; i < inter; i++) {
        float e = 1.0f + fast_exp(-g[i]), sig = 1.0f / e;
        a[i] = g[i] / e * u[i];
        dg[i] = d[i] * u[i] * sig * (1.0f + g[i] * (1.0f - sig));
        du[i] = d[i] * g[i] * sig;
    }
}

/* SwiGLU backward (and the forward's a again), rows in parallel. */
void or1_swiglu_bwd(float *dgu, float *a, const float *da, const float *gu, int T, int inter) {
    #pragma omp parallel for schedule(static)
    for (int t = 0; t < T; t++) {
        size_t r2 = (size_t)t * 2 * inter;
        swiglu_bwd_row(a + (size_t)t * inter, dgu + r2, dgu + r2 + inter, gu + r2, gu + r2 + inter,
                       da + (size_t)t * inter, inter);
    }
}

/* Logits of vocabulary rows [c0, c0+vc) for n hidden rows, times 1/temperature: the rollout's
 * row kernel (or1_matmul_rows, or its bf16 twin over the bf16 weights), then each logit scaled,
 * so that a row's logits are the bits the sampler scales (or1_head_logprob). With fast (the
 * backward's recomputation, whose logits feed only gradients) sgemm in fp32. */
static void chunk_logits(float *z, const float *h, const float *w, const or1_bf16 *wb, int n, int H, int c0, int vc,
                         float inv_t, bool fast) {
    if (fast && !wb) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, vc, H, inv_t, h, H, w + (size_t)c0 * H, H, 0.0f, z,
                    vc);
        return;
    }
    if (wb) or1_matmul_rows_bf16(z, h, wb + (size_t)c0 * H, NULL, n, H, vc);
    else or1_matmul_rows(z, h, w + (size_t)c0 * H, NULL, n, H, vc);
    size_t m = (size_t)n * vc;
    for (size_t i = 0; i < m; i++) z[i] *= inv_t;
}

/* Scratch floats for the head: one [n x VOCAB_CHUNK] logits block, then one vocabulary chunk
 * of H-wide weight rows (bf16 weights widened for the backward's dh). */
long or1_head_scratch(int n, int H) { return (long)n * VOCAB_CHUNK + (long)VOCAB_CHUNK * H; }

/* sum(e) and sum(e * z) with e = exp(z - m) over a logits chunk, in LANES float lanes (the
 * vectorised exp; a chunk's sums are then carried across chunks in double). */
static void exp_moments(const float *z, int n, float m, double *a, double *b) {
    float sa[LANES] = {0}, sb[LANES] = {0};
    int v = 0;
    for (; v + LANES <= n; v += LANES)
        for (int l = 0; l < LANES; l++) {
            float e = fast_exp(z[v + l] - m);
            sa[l] += e;
            sb[l] += e * z[v + l];
        }
    double ta = 0, tb = 0;
    for (; v < n; v++) {
        float e = fast_exp(z[v] - m);
        ta += e;
        tb += (double)e * z[v];
    }
    for (int l = 0; l < LANES; l++) ta += sa[l], tb += sb[l];
    *a = ta, *b = tb;
}

/* One row's running state over the vocabulary chunks: max, sum(exp(z - max)), sum(exp * z) in
 * double, and the target's logit. */
typedef struct {
    double m, s, sz;
    float zt;
} head_state;

/* Folds the chunk z[0..vc) of vocabulary ids [c0, c0+vc) into st (its sums in float lanes, the
 * running ones in double): the one order every log-prob of or1 is computed in. */
OR1_ONE_COPY static void head_fold(head_state *st, const float *z, int vc, int c0, int32_t tgt) {
    float cm = row_max(z, vc);
    double nm = cm > st->m ? cm : st->m, scale = exp(st->m - nm), a, b;
    exp_moments(z, vc, (float)nm, &a, &b); /* nm is one of the chunks' float maxima */
    st->s = st->s * scale + a;
    st->sz = st->sz * scale + b;
    st->m = nm;
    if (tgt >= c0 && tgt < c0 + vc) st->zt = z[tgt - c0];
}

/* Log-sum-exp, E[z], the target's log-prob and the entropy from a row's state. */
static void head_finish(const head_state *st, float *lse, float *ez, float *logp, float *entropy) {
    double l = st->m + log(st->s);
    *lse = (float)l;
    *ez = (float)(st->sz / st->s);
    *logp = (float)(st->zt - l);
    *entropy = (float)(l - st->sz / st->s);
}

/* Streams vocabulary chunks: logits by the row kernel, then each row's chunk folded into its
 * running state. */
void or1_head(float *logp, float *entropy, float *lse, float *ez, const float *h, const float *w,
              const or1_bf16 *wb, const int32_t *tgt, int n, int H, int V, float temperature, float *scratch) {
    head_state st[n];
    for (int i = 0; i < n; i++) st[i] = (head_state){-INFINITY, 0, 0, 0};
    float inv_t = 1.0f / temperature;
    for (int c0 = 0; c0 < V; c0 += VOCAB_CHUNK) {
        int vc = V - c0 < VOCAB_CHUNK ? V - c0 : VOCAB_CHUNK;
        chunk_logits(scratch, h, w, wb, n, H, c0, vc, inv_t, false);
        #pragma omp parallel for schedule(static)
        for (int i = 0; i < n; i++) head_fold(&st[i], scratch + (size_t)i * vc, vc, c0, tgt[i]);
    }
    for (int i = 0; i < n; i++) head_finish(&st[i], &lse[i], &ez[i], &logp[i], &entropy[i]);
}

/* The log-prob of token tok under one row of raw logits at a temperature, computed as or1_head
 * computes it from the same logits (each scaled by 1/temperature, folded chunk by chunk). */
float or1_head_logprob(const float *logits, int V, float temperature, int32_t tok, float *scratch) {
    head_state st = {-INFINITY, 0, 0, 0};
    float inv_t = 1.0f / temperature, lse, ez, logp, ent;
    for (int c0 = 0; c0 < V; c0 += VOCAB_CHUNK) {
        int vc = V - c0 < VOCAB_CHUNK ? V - c0 : VOCAB_CHUNK;
        for (int v = 0; v < vc; v++) scratch[v] = logits[c0 + v] * inv_t;
        head_fold(&st, scratch, vc, c0, tok);
    }
    head_finish(&st, &lse, &ez, &logp, &ent);
    return logp;
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
        chunk_logits(scratch, h, w, wb, n, H, c0, vc, inv_t, true);
        #pragma omp parallel for schedule(static)
        for (int i = 0; i < n; i++) {
            float *z = scratch + (size_t)i * vc;
            for (int v = 0; v < vc; v++) {
                float p = fast_exp(z[v] - lse[i]);
                z[v] = (-g_logp[i] * p - g_entropy[i] * p * (z[v] - ez[i])) * inv_t;
            }
            if (tgt[i] >= c0 && tgt[i] < c0 + vc) z[tgt[i] - c0] += g_logp[i] * inv_t;
        }
        const float *wc = w ? w + (size_t)c0 * H : NULL;
        if (wb) {
            float *wide = scratch + (size_t)n * VOCAB_CHUNK;
            or1_f32_from_bf16(wide, wb + (size_t)c0 * H, (size_t)vc * H);
            wc = wide;
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, H, vc, 1.0f, scratch, vc, wc, H, 1.0f, dh, H);
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
