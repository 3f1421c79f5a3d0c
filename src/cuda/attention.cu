/* Flash-style causal GQA attention over packed sequences, forward, backward and decode.
 *
 * A block holds ROWS query rows (one warp each) of one head of one sequence. Keys and values
 * stream through shared memory 32 at a time: lane j scores key j of the tile against its
 * warp's query, the warp keeps a running max and sum (online softmax), and each lane owns
 * output dims lane, lane+32, ... so P V needs no reduction. Only lse [T, nh] is saved;
 * backward recomputes probabilities from it, dQ query-major and dK/dV key-major (the latter
 * over every query head of the group, so no two blocks write the same row). */
#include "internal.h"

#include <math.h>

enum { ROWS = 8, TILE = 32, MAX_HD = 256, NDIM = MAX_HD / 32 };

/* Dot product of two hd-long vectors in shared memory. */
__device__ __forceinline__ float sdot(const float *a, const float *b, int hd) {
    float s = 0;
    for (int d = 0; d < hd; d++) s += a[d] * b[d];
    return s;
}

/* Maximum over the 32 lanes of a warp (every lane gets it). */
__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* Sum over the 32 lanes of a warp (every lane gets it). */
__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* Copies rows [r0, r0+n) of a strided matrix (row r at src + r*stride) into shared rows
 * of ld floats, zero-filling rows at or past limit. */
__device__ void load_rows(float *dst, int ld, const float *src, size_t stride, int r0, int n, int limit,
                          int hd) {
    for (int k = threadIdx.x; k < n * hd; k += blockDim.x) {
        int r = k / hd, d = k % hd;
        dst[r * ld + d] = r0 + r < limit ? src[(size_t)(r0 + r) * stride + d] : 0.0f;
    }
}

/* Forward: grid (query tiles, heads, sequences). */
__global__ void k_attn_fwd(float *out, float *lse, const float *qkv, const int32_t *seq_start, int nh, int nkv,
                           int hd) {
    extern __shared__ float sm[];
    int start = seq_start[blockIdx.z], len = seq_start[blockIdx.z + 1] - start, i0 = blockIdx.x * ROWS;
    if (i0 >= len) return;
    int h = blockIdx.y, kvh = h / (nh / nkv), warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    size_t stride = (size_t)(nh + 2 * nkv) * hd;
    const float *base = qkv + (size_t)start * stride;
    float *qs = sm, *ks = qs + ROWS * hd, *vs = ks + TILE * (hd + 1);
    load_rows(qs, hd, base + (size_t)h * hd, stride, i0, ROWS, len, hd);
    int row = i0 + warp, kend = min(len, i0 + ROWS);
    float scale = rsqrtf((float)hd), m = -INFINITY, l = 0, o[NDIM];
    for (int k = 0; k < NDIM; k++) o[k] = 0;
    for (int k0 = 0; k0 < kend; k0 += TILE) {
        __syncthreads();
        load_rows(ks, hd + 1, base + (size_t)(nh + kvh) * hd, stride, k0, TILE, len, hd);
        load_rows(vs, hd, base + (size_t)(nh + nkv + kvh) * hd, stride, k0, TILE, len, hd);
        __syncthreads();
        if (row >= len || k0 > row) continue;
        int j = k0 + lane;
        float s = j <= row ? sdot(qs + warp * hd, ks + lane * (hd + 1), hd) * scale : -INFINITY;
        float nm = fmaxf(m, warp_max(s)), p = j <= row ? __expf(s - nm) : 0.0f, corr = __expf(m - nm);
        l = l * corr + warp_sum(p);
        m = nm;
        int nj = min(TILE, row - k0 + 1);
        for (int k = 0; k < NDIM; k++) o[k] *= corr;
        for (int jj = 0; jj < nj; jj++) {
            float pj = __shfl_sync(0xffffffffu, p, jj);
            for (int k = 0; k < NDIM; k++)
                if (lane + 32 * k < hd) o[k] += pj * vs[jj * hd + lane + 32 * k];
        }
    }
    if (row >= len) return;
    float *orow = out + (size_t)(start + row) * nh * hd + (size_t)h * hd, inv = 1.0f / l;
    for (int k = 0; k < NDIM; k++)
        if (lane + 32 * k < hd) orow[lane + 32 * k] = o[k] * inv;
    if (lane == 0) lse[(size_t)(start + row) * nh + h] = m + logf(l);
}

/* Sets the dynamic shared-memory limit a kernel needs above the 48 KiB default. */
template <typename K> static void allow_smem(or1_cuda *g, K kernel, size_t bytes) {
    if (bytes > 48 * 1024)
        cu_check(g, cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes),
                 "attention shared memory");
}

/* Launches the forward over (query tiles, heads, sequences) with shared memory sized by hd. */
void or1_cuda_attention(or1_cuda *g, float *out, float *lse, const float *qkv, const int32_t *seq_start,
                        int n_seqs, int max_len, int nh, int nkv, int hd) {
    if (hd > MAX_HD || hd < 1 || n_seqs <= 0 || max_len <= 0) {
        if (hd > MAX_HD || hd < 1) cu_error(g, "attention: head_dim %d outside 1..%d", hd, MAX_HD);
        return;
    }
    size_t smem = (size_t)(ROWS * hd + TILE * (hd + 1) + TILE * hd) * sizeof(float);
    allow_smem(g, k_attn_fwd, smem);
    dim3 grid((max_len + ROWS - 1) / ROWS, nh, n_seqs);
    k_attn_fwd<<<grid, ROWS * 32, smem, g->stream>>>(out, lse, qkv, seq_start, nh, nkv, hd);
    cu_launched(g, "attention");
}

/* D[t, h] = dot(dO[t, h], O[t, h]), one warp per (t, h). */
__global__ void k_attn_delta(float *D, const float *dout, const float *out, size_t n, int hd) {
    size_t w = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (w >= n) return;
    float s = 0;
    for (int d = lane; d < hd; d += 32) s += dout[w * hd + d] * out[w * hd + d];
    s = warp_sum(s);
    if (lane == 0) D[w] = s;
}

/* dQ: grid as the forward. Lane j recomputes p and dS for key j of the tile; the warp then
 * accumulates dq += dS_j k_j in its lanes' dims. */
__global__ void k_attn_dq(float *dqkv, const float *dout, const float *qkv, const float *lse, const float *D,
                          const int32_t *seq_start, int nh, int nkv, int hd) {
    extern __shared__ float sm[];
    int start = seq_start[blockIdx.z], len = seq_start[blockIdx.z + 1] - start, i0 = blockIdx.x * ROWS;
    if (i0 >= len) return;
    int h = blockIdx.y, kvh = h / (nh / nkv), warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    size_t stride = (size_t)(nh + 2 * nkv) * hd, ostride = (size_t)nh * hd;
    const float *base = qkv + (size_t)start * stride;
    float *qs = sm, *dos = qs + ROWS * hd, *ks = dos + ROWS * hd, *vs = ks + TILE * (hd + 1);
    load_rows(qs, hd, base + (size_t)h * hd, stride, i0, ROWS, len, hd);
    load_rows(dos, hd, dout + (size_t)start * ostride + (size_t)h * hd, ostride, i0, ROWS, len, hd);
    int row = i0 + warp, kend = min(len, i0 + ROWS);
    float scale = rsqrtf((float)hd), dq[NDIM], L = 0, Dr = 0;
    if (row < len) L = lse[(size_t)(start + row) * nh + h], Dr = D[(size_t)(start + row) * nh + h];
    for (int k = 0; k < NDIM; k++) dq[k] = 0;
    for (int k0 = 0; k0 < kend; k0 += TILE) {
        __syncthreads();
        load_rows(ks, hd + 1, base + (size_t)(nh + kvh) * hd, stride, k0, TILE, len, hd);
        load_rows(vs, hd + 1, base + (size_t)(nh + nkv + kvh) * hd, stride, k0, TILE, len, hd);
        __syncthreads();
        if (row >= len || k0 > row) continue;
        int j = k0 + lane;
        float ds = 0;
        if (j <= row) {
            float p = __expf(sdot(qs + warp * hd, ks + lane * (hd + 1), hd) * scale - L);
            ds = p * (sdot(dos + warp * hd, vs + lane * (hd + 1), hd) - Dr) * scale;
        }
        int nj = min(TILE, row - k0 + 1);
        for (int jj = 0; jj < nj; jj++) {
            float dj = __shfl_sync(0xffffffffu, ds, jj);
            for (int k = 0; k < NDIM; k++)
                if (lane + 32 * k < hd) dq[k] += dj * ks[jj * (hd + 1) + lane + 32 * k];
        }
    }
    if (row >= len) return;
    float *dst = dqkv + (size_t)(start + row) * stride + (size_t)h * hd;
    for (int k = 0; k < NDIM; k++)
        if (lane + 32 * k < hd) dst[lane + 32 * k] = dq[k];
}

/* dK, dV: grid (key tiles, kv heads, sequences), one warp per key row. Query rows of every
 * head in the group stream through shared memory; lane i takes query i of the tile. */
__global__ void k_attn_dkv(float *dqkv, const float *dout, const float *qkv, const float *lse, const float *D,
                           const int32_t *seq_start, int nh, int nkv, int hd) {
    extern __shared__ float sm[];
    int start = seq_start[blockIdx.z], len = seq_start[blockIdx.z + 1] - start, j0 = blockIdx.x * ROWS;
    if (j0 >= len) return;
    int kvh = blockIdx.y, group = nh / nkv, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    size_t stride = (size_t)(nh + 2 * nkv) * hd, ostride = (size_t)nh * hd;
    const float *base = qkv + (size_t)start * stride;
    float *ks = sm, *vs = ks + ROWS * hd, *qs = vs + ROWS * hd, *dos = qs + TILE * (hd + 1);
    float *ls = dos + TILE * (hd + 1), *ds_ = ls + TILE;
    load_rows(ks, hd, base + (size_t)(nh + kvh) * hd, stride, j0, ROWS, len, hd);
    load_rows(vs, hd, base + (size_t)(nh + nkv + kvh) * hd, stride, j0, ROWS, len, hd);
    int kr = j0 + warp;
    float scale = rsqrtf((float)hd), dk[NDIM], dv[NDIM];
    for (int k = 0; k < NDIM; k++) dk[k] = dv[k] = 0;
    for (int h = kvh * group; h < (kvh + 1) * group; h++)
        for (int q0 = j0; q0 < len; q0 += TILE) {
            __syncthreads();
            load_rows(qs, hd + 1, base + (size_t)h * hd, stride, q0, TILE, len, hd);
            load_rows(dos, hd + 1, dout + (size_t)start * ostride + (size_t)h * hd, ostride, q0, TILE, len, hd);
            for (int i = threadIdx.x; i < TILE; i += blockDim.x) {
                bool in = q0 + i < len;
                ls[i] = in ? lse[(size_t)(start + q0 + i) * nh + h] : 0.0f;
                ds_[i] = in ? D[(size_t)(start + q0 + i) * nh + h] : 0.0f;
            }
            __syncthreads();
            if (kr >= len || q0 + TILE <= kr) continue;
            int qi = q0 + lane;
            float p = 0, ds = 0;
            if (qi >= kr && qi < len) {
                p = __expf(sdot(qs + lane * (hd + 1), ks + warp * hd, hd) * scale - ls[lane]);
                ds = p * (sdot(dos + lane * (hd + 1), vs + warp * hd, hd) - ds_[lane]) * scale;
            }
            for (int ii = 0; ii < TILE; ii++) {
                float pi = __shfl_sync(0xffffffffu, p, ii), di = __shfl_sync(0xffffffffu, ds, ii);
                for (int k = 0; k < NDIM; k++)
                    if (lane + 32 * k < hd) {
                        dv[k] += pi * dos[ii * (hd + 1) + lane + 32 * k];
                        dk[k] += di * qs[ii * (hd + 1) + lane + 32 * k];
                    }
            }
        }
    if (kr >= len) return;
    float *dkr = dqkv + (size_t)(start + kr) * stride + (size_t)(nh + kvh) * hd, *dvr = dkr + (size_t)nkv * hd;
    for (int k = 0; k < NDIM; k++)
        if (lane + 32 * k < hd) dkr[lane + 32 * k] = dk[k], dvr[lane + 32 * k] = dv[k];
}

/* D = rowsum(dO * O) into scratch, then the dQ and dK/dV kernels; T comes from the caller so
 * the stream never waits on the host. */
void or1_cuda_attention_bwd(or1_cuda *g, float *dqkv, const float *dout, const float *qkv, const float *out,
                            const float *lse, const int32_t *seq_start, int n_seqs, int T, int max_len, int nh,
                            int nkv, int hd) {
    if (hd > MAX_HD || hd < 1) {
        cu_error(g, "attention: head_dim %d outside 1..%d", hd, MAX_HD);
        return;
    }
    if (n_seqs <= 0 || max_len <= 0 || T <= 0) return;
    size_t n = (size_t)T * nh;
    if (cu_reserve(g, n, 0)) return;
    float *D = g->scratch;
    k_attn_delta<<<cu_blocks(n * 32, 256), 256, 0, g->stream>>>(D, dout, out, n, hd);
    size_t s_dq = (size_t)(2 * ROWS * hd + 2 * TILE * (hd + 1)) * sizeof(float);
    size_t s_dkv = (size_t)(2 * ROWS * hd + 2 * TILE * (hd + 1) + 2 * TILE) * sizeof(float);
    allow_smem(g, k_attn_dq, s_dq);
    allow_smem(g, k_attn_dkv, s_dkv);
    k_attn_dq<<<dim3((max_len + ROWS - 1) / ROWS, nh, n_seqs), ROWS * 32, s_dq, g->stream>>>(
        dqkv, dout, qkv, lse, D, seq_start, nh, nkv, hd);
    k_attn_dkv<<<dim3((max_len + ROWS - 1) / ROWS, nkv, n_seqs), ROWS * 32, s_dkv, g->stream>>>(
        dqkv, dout, qkv, lse, D, seq_start, nh, nkv, hd);
    cu_launched(g, "attention_bwd");
}

/* Pool row of context position j of a decode row (see or1_attention_decode): the prompt's
 * blocks hold positions 0 .. n_pre-1, the row's own blocks the rest. */
__device__ __forceinline__ size_t ctx_row(int j, const int32_t *seg, const int32_t *blocks, int block) {
    int n_pre = seg[1], i = j < n_pre ? j : j - n_pre;
    const int32_t *table = blocks + (j < n_pre ? seg[0] : seg[2]);
    return (size_t)table[i / block] * (size_t)block + (size_t)(i % block);
}

/* Decode: one warp per (row, head); lane j scores key k0+j of the row's context, its prompt
 * followed by its own tokens, found through the block tables. */
__global__ void k_attn_decode(float *out, const float *qkv, const float *kpool, const float *vpool,
                              const int32_t *seg_all, const int32_t *blocks, int block, int B, int nh, int nkv,
                              int hd) {
    int w = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
    if (w >= B * nh) return;
    int b = w / nh, h = w % nh, kvh = h / (nh / nkv);
    const int32_t *seg = seg_all + 4 * b;
    int n = seg[1] + seg[3];
    size_t kvd = (size_t)nkv * hd;
    const float *q = qkv + (size_t)b * (nh + 2 * nkv) * hd + (size_t)h * hd;
    const float *K = kpool + (size_t)kvh * hd, *V = vpool + (size_t)kvh * hd;
    float scale = rsqrtf((float)hd), m = -INFINITY, l = 0, o[NDIM];
    for (int k = 0; k < NDIM; k++) o[k] = 0;
    for (int k0 = 0; k0 < n; k0 += TILE) {
        int j = k0 + lane;
        float s = -INFINITY;
        if (j < n) {
            size_t row = ctx_row(j, seg, blocks, block);
            s = 0;
            for (int d = 0; d < hd; d++) s += q[d] * K[row * kvd + d];
            s *= scale;
        }
        float nm = fmaxf(m, warp_max(s)), p = j < n ? __expf(s - nm) : 0.0f, corr = __expf(m - nm);
        l = l * corr + warp_sum(p);
        m = nm;
        for (int k = 0; k < NDIM; k++) o[k] *= corr;
        for (int jj = 0; jj < min(TILE, n - k0); jj++) {
            float pj = __shfl_sync(0xffffffffu, p, jj);
            size_t row = ctx_row(k0 + jj, seg, blocks, block);
            for (int k = 0; k < NDIM; k++)
                if (lane + 32 * k < hd) o[k] += pj * V[row * kvd + lane + 32 * k];
        }
    }
    float *orow = out + (size_t)b * nh * hd + (size_t)h * hd, inv = l > 0 ? 1.0f / l : 0.0f;
    for (int k = 0; k < NDIM; k++)
        if (lane + 32 * k < hd) orow[lane + 32 * k] = o[k] * inv;
}

enum { MAX_GROUP = 8 };

/* Decode under GQA: one warp per (row, KV head) serves the group of G query heads that share
 * it, so each key and value row is read once per KV head rather than once per query head.
 * Lane j scores key k0+j against every head of the group (online softmax per head). */
__global__ void k_attn_decode_gqa(float *out, const float *qkv, const float *kpool, const float *vpool,
                                  const int32_t *seg_all, const int32_t *blocks, int block, int B, int nh, int nkv,
                                  int hd) {
    int w = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
    if (w >= B * nkv) return;
    int b = w / nkv, kvh = w % nkv, G = nh / nkv;
    const int32_t *seg = seg_all + 4 * b;
    int n = seg[1] + seg[3];
    size_t kvd = (size_t)nkv * hd;
    const float *q = qkv + (size_t)b * (nh + 2 * nkv) * hd + (size_t)kvh * G * hd;
    const float *K = kpool + (size_t)kvh * hd, *V = vpool + (size_t)kvh * hd;
    float scale = rsqrtf((float)hd), m[MAX_GROUP], l[MAX_GROUP], o[MAX_GROUP][NDIM];
#pragma unroll
    for (int g = 0; g < MAX_GROUP; g++) {
        m[g] = -INFINITY, l[g] = 0;
        for (int k = 0; k < NDIM; k++) o[g][k] = 0;
    }
    for (int k0 = 0; k0 < n; k0 += TILE) {
        int j = k0 + lane;
        float s[MAX_GROUP], p[MAX_GROUP];
#pragma unroll
        for (int g = 0; g < MAX_GROUP; g++) s[g] = j < n ? 0.0f : -INFINITY;
        if (j < n) {
            const float *kr = K + ctx_row(j, seg, blocks, block) * kvd;
            for (int d = 0; d < hd; d++) {
                float kd = kr[d];
#pragma unroll
                for (int g = 0; g < MAX_GROUP; g++)
                    if (g < G) s[g] += q[(size_t)g * hd + d] * kd;
            }
        }
#pragma unroll
        for (int g = 0; g < MAX_GROUP; g++) {
            if (g >= G) continue;
            float sg = j < n ? s[g] * scale : -INFINITY, nm = fmaxf(m[g], warp_max(sg));
            float corr = __expf(m[g] - nm);
            p[g] = j < n ? __expf(sg - nm) : 0.0f;
            l[g] = l[g] * corr + warp_sum(p[g]);
            m[g] = nm;
            for (int k = 0; k < NDIM; k++) o[g][k] *= corr;
        }
        for (int jj = 0; jj < min(TILE, n - k0); jj++) {
            const float *vr = V + ctx_row(k0 + jj, seg, blocks, block) * kvd;
            float pj[MAX_GROUP];
#pragma unroll
            for (int g = 0; g < MAX_GROUP; g++) pj[g] = __shfl_sync(0xffffffffu, p[g], jj);
            for (int k = 0; k < NDIM; k++) {
                if (lane + 32 * k >= hd) continue;
                float v = vr[lane + 32 * k];
#pragma unroll
                for (int g = 0; g < MAX_GROUP; g++)
                    if (g < G) o[g][k] += pj[g] * v;
            }
        }
    }
#pragma unroll
    for (int g = 0; g < MAX_GROUP; g++) {
        if (g >= G) continue;
        float *orow = out + (size_t)b * nh * hd + (size_t)(kvh * G + g) * hd, inv = l[g] > 0 ? 1.0f / l[g] : 0.0f;
        for (int k = 0; k < NDIM; k++)
            if (lane + 32 * k < hd) orow[lane + 32 * k] = o[g][k] * inv;
    }
}

/* Launches one warp per (row, KV head) when a group fits the registers, else one warp per
 * (row, query head). */
void or1_cuda_attention_decode(or1_cuda *g, float *out, const float *qkv, int B, const float *k_pool,
                               const float *v_pool, const int32_t *seg, const int32_t *blocks, int block, int nh,
                               int nkv, int hd) {
    if (hd > MAX_HD || hd < 1) {
        cu_error(g, "attention: head_dim %d outside 1..%d", hd, MAX_HD);
        return;
    }
    if (B <= 0) return;
    if (nh / nkv <= MAX_GROUP) {
        size_t threads = (size_t)B * nkv * 32;
        k_attn_decode_gqa<<<cu_blocks(threads, 256), 256, 0, g->stream>>>(out, qkv, k_pool, v_pool, seg, blocks, block, B,
                                                                          nh, nkv, hd);
    } else {
        size_t threads = (size_t)B * nh * 32;
        k_attn_decode<<<cu_blocks(threads, 256), 256, 0, g->stream>>>(out, qkv, k_pool, v_pool, seg, blocks, block, B,
                                                                       nh, nkv, hd);
    }
    cu_launched(g, "attention_decode");
}
