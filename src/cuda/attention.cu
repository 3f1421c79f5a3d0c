/* Flash-style causal GQA attention over packed sequences, forward, backward and decode.
 *
 * fp32 (CUDA cores): a block holds ROWS query rows (one warp each) of one head of one sequence.
 * Keys and values stream through shared memory 32 at a time: lane j scores key j of the tile
 * against its warp's query, the warp keeps a running max and sum (online softmax), and each lane
 * owns output dims lane, lane+32, ... so P V needs no reduction.
 *
 * bf16 (tensor cores, FlashAttention-2 style, below): query rows and keys in tiles of 64 counted
 * from each sequence's start; the packed forward and decode run the same per-tile functions
 * (fa_scores, fa_pv) in the same key order (chunks of FA_SPLIT keys merged by fa_merge), so a
 * query's output is the same bits whichever computes it; decode runs the chunks in parallel.
 *
 * Only lse [T, nh] is saved; backward (CUDA cores in both precisions) recomputes probabilities
 * from it, dQ query-major and dK/dV key-major (the latter over every query head of the group, so
 * no two blocks write the same row). */
#include "internal.h"
#include "tc.cuh"

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
 * of ld floats, zero-filling rows at or past limit; rounded to bf16 values when rnd (the bf16
 * backward recomputes scores from the q, k, v the tensor-core forward saw). */
__device__ void load_rows(float *dst, int ld, const float *src, size_t stride, int r0, int n, int limit, int hd,
                          bool rnd = false) {
    for (int k = threadIdx.x; k < n * hd; k += blockDim.x) {
        int r = k / hd, d = k % hd;
        float x = r0 + r < limit ? src[(size_t)(r0 + r) * stride + d] : 0.0f;
        dst[r * ld + d] = rnd ? __bfloat162float(__float2bfloat16(x)) : x;
    }
}

/* Sets the dynamic shared-memory limit a kernel needs above the 48 KiB default. */
template <typename K> static void allow_smem(or1_cuda *g, K kernel, size_t bytes) {
    if (bytes > 48 * 1024)
        cu_check(g, cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes),
                 "attention shared memory");
}

/* Pool row of context position j of a decode row (see or1_attention_decode): the prompt's
 * blocks hold positions 0 .. n_pre-1, the row's own blocks the rest. */
__device__ __forceinline__ size_t ctx_row(int j, const int32_t *seg, const int32_t *blocks, int block) {
    int n_pre = seg[1], i = j < n_pre ? j : j - n_pre;
    const int32_t *table = blocks + (j < n_pre ? seg[0] : seg[2]);
    return (size_t)table[i / block] * (size_t)block + (size_t)(i % block);
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

/* ---- bf16: tensor-core forward and decode ---------------------------------------------------
 *
 * FlashAttention-2 style. Query rows and keys are tiled in FA_T = 64 positions counted from each
 * sequence's start, so a key tile is the same positions for the packed forward and for decode.
 * Both stage a tile's keys and values in shared memory as bf16 rows (the forward rounds the
 * fp32 qkv rows to nearest even; decode copies the bf16 pool's rows, which kv_store rounded the
 * same way) and then run fa_scores and fa_pv for one warp's 16 query rows (one mma fragment): S =
 * Q K^T by mma over the head dim in steps of 16 in order, the scale, the causal mask, the online
 * softmax in fp32, and O += P V with P rounded to bf16, by mma over the tile's keys in steps of 16
 * in order. An mma's output row depends only on that row of A, so a query's output is the same
 * bits whether it is a row of a 64-row forward tile or one of the G query heads of a decode
 * fragment. */

enum { FA_T = 64, FA_WARPS = FA_T / 16, FA_SPLIT = 8 * FA_T };

/* The head width rounded up to the mma's k step (16): columns past hd are staged as zeros. */
__host__ __device__ constexpr int fa_hdp(int hd) { return (hd + 15) / 16 * 16; }

/* Row pitch of a staged tile in bf16: 8 past the padded width, an odd number of 16-byte pieces,
 * so the 8 rows an ldmatrix matrix reads fall in 8 distinct groups of four banks. */
__host__ __device__ constexpr int fa_ld(int hd) { return fa_hdp(hd) + 8; }

/* One warp's running state for its 16 query rows: this lane's part of O (8-column n-tiles: rows
 * g and g+8, columns 2t and 2t+1, g = lane / 4, t = lane % 4), and the running max and sum of
 * rows g (index 0) and g+8 (index 1). D bounds the padded head width. */
template <int D> struct fa_acc {
    float o[D / 8][4];
    float m[2], l[2];
};

/* The empty state: O = 0, max -inf, sum 0 (the first tile's rescale multiplies 0 by 0). */
template <int D> __device__ __forceinline__ void fa_init(fa_acc<D> &a) {
#pragma unroll
    for (int n = 0; n < D / 8; n++)
        for (int e = 0; e < 4; e++) a.o[n][e] = 0.0f;
    a.m[0] = a.m[1] = -INFINITY;
    a.l[0] = a.l[1] = 0.0f;
}

/* Rows r0 .. r0+n-1 of a strided fp32 matrix (row r at src + r*stride, hd wide) into n shared
 * rows of ld bf16, rounded to nearest even; rows at or past limit and the columns from hd to the
 * padded width are zeros. The block's threads share the work. */
__device__ void fa_stage(__nv_bfloat16 *dst, int ld, const float *src, size_t stride, int r0, int n, int limit,
                         int hd) {
    int half = fa_hdp(hd) / 2;
    for (int k = threadIdx.x; k < n * half; k += blockDim.x) {
        int r = k / half, c = 2 * (k % half);
        float x = 0.0f, y = 0.0f;
        if (r0 + r < limit) {
            const float *row = src + (size_t)(r0 + r) * stride;
            if (c < hd) x = row[c];
            if (c + 1 < hd) y = row[c + 1];
        }
        *reinterpret_cast<uint32_t *>(dst + r * ld + c) = tc_pack(x, y);
    }
}

/* The A fragments of 16 staged query rows (q: the first, pitch ld), one per 16 columns of the
 * head: ldmatrix x4 of the 8 x 8 quarters (rows 0-7 | 8-15) x (columns 0-7 | 8-15). */
template <int D> __device__ __forceinline__ void fa_load_q(uint32_t (&qf)[D / 16][4], const __nv_bfloat16 *q, int ld,
                                                           int nks) {
    int lane = threadIdx.x % 32, i = lane / 8, j = lane % 8;
#pragma unroll
    for (int kd = 0; kd < D / 16; kd++)
        if (kd < nks) tc_ldmatrix<4, false>(qf[kd], q + ((i % 2) * 8 + j) * ld + kd * 16 + (i / 2) * 8);
}

/* One key tile's scores and online-softmax step for a warp's 16 rows: s = (Q K^T)[row][key] *
 * scale by mma over the head in steps of 16 in order (the tile's keys ks[0..63] are B in the
 * "col" layout: ldmatrix of key rows, not transposed); key k0 + c is masked (probability exactly
 * 0) unless below lim0 (row g) or lim1 (row g+8); the new max, the rescale of O and of the sum
 * (exactly 1 when the max does not move, so a fully masked tile changes nothing and -inf never
 * meets -inf), and p = exp(s - max) left in p, the tile's C fragments (n-tile c / 8). */
template <int D>
__device__ __forceinline__ void fa_scores(fa_acc<D> &a, float (&p)[8][4], const uint32_t (&qf)[D / 16][4],
                                          const __nv_bfloat16 *ks, int ld, int nks, int k0, int lim0, int lim1,
                                          float scale) {
    int lane = threadIdx.x % 32, i = lane / 8, j = lane % 8, t = lane % 4;
#pragma unroll
    for (int n = 0; n < 8; n++)
        for (int e = 0; e < 4; e++) p[n][e] = 0.0f;
#pragma unroll
    for (int kd = 0; kd < D / 16; kd++) {
        if (kd >= nks) continue;
#pragma unroll
        for (int kp = 0; kp < 4; kp++) {
            uint32_t b[4];
            tc_ldmatrix<4, false>(b, ks + (kp * 16 + (i / 2) * 8 + j) * ld + kd * 16 + (i % 2) * 8);
            tc_mma(p[2 * kp], qf[kd], b, p[2 * kp]);
            tc_mma(p[2 * kp + 1], qf[kd], b + 2, p[2 * kp + 1]);
        }
    }
    int lim[2] = {lim0, lim1};
    float mx[2] = {-INFINITY, -INFINITY}, nm[2], corr[2], rs[2] = {0.0f, 0.0f};
#pragma unroll
    for (int n = 0; n < 8; n++)
        for (int e = 0; e < 4; e++) {
            int h = e / 2;
            p[n][e] = k0 + n * 8 + 2 * t + e % 2 < lim[h] ? __fmul_rn(p[n][e], scale) : -INFINITY;
            mx[h] = fmaxf(mx[h], p[n][e]);
        }
#pragma unroll
    for (int h = 0; h < 2; h++) {
        mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
        mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
        nm[h] = fmaxf(a.m[h], mx[h]);
        corr[h] = nm[h] == a.m[h] ? 1.0f : __expf(__fsub_rn(a.m[h], nm[h]));
    }
#pragma unroll
    for (int n = 0; n < 8; n++)
        for (int e = 0; e < 4; e++) {
            int h = e / 2;
            p[n][e] = k0 + n * 8 + 2 * t + e % 2 < lim[h] ? __expf(__fsub_rn(p[n][e], nm[h])) : 0.0f;
            rs[h] = __fadd_rn(rs[h], p[n][e]);
        }
#pragma unroll
    for (int h = 0; h < 2; h++) {
        rs[h] = __fadd_rn(rs[h], __shfl_xor_sync(0xffffffffu, rs[h], 1));
        rs[h] = __fadd_rn(rs[h], __shfl_xor_sync(0xffffffffu, rs[h], 2));
        a.l[h] = fmaf(a.l[h], corr[h], rs[h]);
        a.m[h] = nm[h];
    }
#pragma unroll
    for (int n = 0; n < D / 8; n++)
        if (n < 2 * nks)
            for (int e = 0; e < 4; e++) a.o[n][e] = __fmul_rn(a.o[n][e], corr[e / 2]);
    /* per thread: 32 scales, masks and maxima, 32 subtractions and exps, 32 sums, the quad
     * reductions and rescales (2 x 6), the O rescale */
    tc_flops(32 * 5 + 12 + 4 * 2 * nks);
}

/* O += P V for one key tile: P (fa_scores' p, rounded to bf16) is the A operand, its C
 * fragments of n-tiles 2kk and 2kk+1 forming the A fragment of keys 16kk .. 16kk+15; the staged
 * values vs[key][dim] are B through ldmatrix .trans; keys in steps of 16 in order. */
template <int D>
__device__ __forceinline__ void fa_pv(fa_acc<D> &a, const float (&p)[8][4], const __nv_bfloat16 *vs, int ld,
                                      int nks) {
    int lane = threadIdx.x % 32, i = lane / 8, j = lane % 8;
#pragma unroll
    for (int kk = 0; kk < 4; kk++) {
        uint32_t pa[4] = {tc_pack(p[2 * kk][0], p[2 * kk][1]), tc_pack(p[2 * kk][2], p[2 * kk][3]),
                          tc_pack(p[2 * kk + 1][0], p[2 * kk + 1][1]), tc_pack(p[2 * kk + 1][2], p[2 * kk + 1][3])};
#pragma unroll
        for (int dp = 0; dp < D / 16; dp++) {
            if (dp >= nks) continue;
            uint32_t b[4];
            tc_ldmatrix<4, true>(b, vs + (kk * 16 + (i % 2) * 8 + j) * ld + dp * 16 + (i / 2) * 8);
            tc_mma(a.o[2 * dp], pa, b, a.o[2 * dp]);
            tc_mma(a.o[2 * dp + 1], pa, b + 2, a.o[2 * dp + 1]);
        }
    }
}

/* Merges a chunk's state c into the running total t (rows g and g+8 of the warp): the new max
 * m, each side scaled by exp(its max - m), exactly 1 when its max is m (two empty sides: 1 and
 * 1, so -inf never meets -inf) and exactly 0 for an empty side under a finite m; the one merge of
 * the forward and of decode's chunks, so both give a query the same bits. */
template <int D> __device__ __forceinline__ void fa_merge(fa_acc<D> &t, const fa_acc<D> &c, int nks) {
    float ft[2], fc[2];
#pragma unroll
    for (int h = 0; h < 2; h++) {
        float m = fmaxf(t.m[h], c.m[h]);
        ft[h] = t.m[h] == m ? 1.0f : __expf(__fsub_rn(t.m[h], m));
        fc[h] = c.m[h] == m ? 1.0f : __expf(__fsub_rn(c.m[h], m));
        t.l[h] = __fadd_rn(__fmul_rn(t.l[h], ft[h]), __fmul_rn(c.l[h], fc[h]));
        t.m[h] = m;
    }
#pragma unroll
    for (int n = 0; n < D / 8; n++)
        if (n < 2 * nks)
            for (int e = 0; e < 4; e++)
                t.o[n][e] = __fadd_rn(__fmul_rn(t.o[n][e], ft[e / 2]), __fmul_rn(c.o[n][e], fc[e / 2]));
}

/* Row h (0: g, 1: g+8) of the warp's O divided by its sum into dst[0 .. hd). */
template <int D> __device__ __forceinline__ void fa_store(float *dst, const fa_acc<D> &a, int h, int hd) {
    int t = threadIdx.x % 4;
#pragma unroll
    for (int n = 0; n < D / 8; n++)
        for (int e = 0; e < 2; e++) {
            int d = n * 8 + 2 * t + e;
            if (d < hd) dst[d] = __fdiv_rn(a.o[n][2 * h + e], a.l[h]);
        }
}

/* Forward: grid (query tiles of FA_T rows, heads, sequences), FA_WARPS warps of 16 rows. Key
 * tiles 0 .. the query tile's own (the diagonal), each staged by the whole block, in chunks of
 * FA_SPLIT keys: a chunk's tiles run from the empty state, and each chunk is merged into the
 * total in order (decode's key order, chunk by chunk in parallel). */
template <int D>
__global__ void __launch_bounds__(FA_WARPS * 32) k_fa_fwd(float *out, float *lse, const float *qkv,
                                                          const int32_t *seq_start, int nh, int nkv, int hd) {
    extern __shared__ uint4 fa_sm[];
    int start = seq_start[blockIdx.z], len = seq_start[blockIdx.z + 1] - start, i0 = blockIdx.x * FA_T;
    if (i0 >= len) return;
    int h = blockIdx.y, kvh = h / (nh / nkv), warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int ld = fa_ld(hd), nks = fa_hdp(hd) / 16, r0 = i0 + warp * 16 + lane / 4;
    size_t stride = (size_t)(nh + 2 * nkv) * hd;
    const float *base = qkv + (size_t)start * stride;
    __nv_bfloat16 *qs = reinterpret_cast<__nv_bfloat16 *>(fa_sm), *ks = qs + FA_T * ld, *vs = ks + FA_T * ld;
    fa_stage(qs, ld, base + (size_t)h * hd, stride, i0, FA_T, len, hd);
    __syncthreads();
    bool active = i0 + warp * 16 < len;
    uint32_t qf[D / 16][4];
    if (active) fa_load_q<D>(qf, qs + warp * 16 * ld, ld, nks);
    fa_acc<D> a, tot;
    fa_init(a);
    fa_init(tot);
    float scale = rsqrtf((float)hd), p[8][4];
    for (int k0 = 0; k0 <= i0; k0 += FA_T) {
        if (k0 > 0 && k0 % FA_SPLIT == 0) {
            fa_merge<D>(tot, a, nks);
            fa_init(a);
        }
        __syncthreads();
        fa_stage(ks, ld, base + (size_t)(nh + kvh) * hd, stride, k0, FA_T, len, hd);
        fa_stage(vs, ld, base + (size_t)(nh + nkv + kvh) * hd, stride, k0, FA_T, len, hd);
        __syncthreads();
        if (!active) continue;
        fa_scores<D>(a, p, qf, ks, ld, nks, k0, r0 + 1, r0 + 9, scale);
        fa_pv<D>(a, p, vs, ld, nks);
    }
    if (!active) return;
    fa_merge<D>(tot, a, nks);
    for (int hh = 0; hh < 2; hh++) {
        int row = r0 + 8 * hh;
        if (row >= len) continue;
        fa_store<D>(out + (size_t)(start + row) * nh * hd + (size_t)h * hd, tot, hh, hd);
        if (lane % 4 == 0) lse[(size_t)(start + row) * nh + h] = __fadd_rn(tot.m[hh], logf(tot.l[hh]));
    }
}

/* Keys (or values) at context positions k0 .. k0+FA_T-1 of a decode row (position j's vector
 * at pool + ctx_row(j) * kvd) into FA_T shared rows of ld bf16, zeros at positions from n on,
 * so nothing unwritten reaches P V. vec: rows 16-byte aligned (hd a multiple of 8), copied by
 * cp.async (the caller commits and waits; padding columns were zeroed once); else element by
 * element, padding columns included. */
__device__ void fa_fetch(__nv_bfloat16 *dst, int ld, const __nv_bfloat16 *pool, size_t kvd, int k0, int n,
                         const int32_t *seg, const int32_t *blocks, int block, int hd, bool vec) {
    if (vec) {
        int per = hd / 8;
        for (int k = threadIdx.x; k < FA_T * per; k += blockDim.x) {
            int r = k / per, c = 8 * (k % per), j = k0 + r;
            const __nv_bfloat16 *src = j < n ? pool + ctx_row(j, seg, blocks, block) * kvd + c : pool;
            tc_cp_async16(dst + r * ld + c, src, j < n ? 16 : 0);
        }
        return;
    }
    int hdp = fa_hdp(hd);
    for (int k = threadIdx.x; k < FA_T * hdp; k += blockDim.x) {
        int r = k / hdp, c = k % hdp, j = k0 + r;
        dst[r * ld + c] = j < n && c < hd ? pool[ctx_row(j, seg, blocks, block) * kvd + c] : __float2bfloat16(0.0f);
    }
}

/* Floats of one warp's state in decode's chunk buffer: per lane, its O fragments, then m and l
 * of its two rows. */
__host__ __device__ constexpr int fa_part(int D) { return 32 * (D / 2 + 4); }

/* A warp's state into part (fa_part(D) floats, lane-interleaved so a field's 32 lanes are
 * adjacent): O's n-tiles below 2 nks, then m and l of rows g and g+8. */
template <int D> __device__ __forceinline__ void fa_put(float *part, const fa_acc<D> &a, int nks) {
    int lane = threadIdx.x % 32;
#pragma unroll
    for (int n = 0; n < D / 8; n++)
        if (n < 2 * nks)
            for (int e = 0; e < 4; e++) part[(4 * n + e) * 32 + lane] = a.o[n][e];
    for (int h = 0; h < 2; h++) part[(D / 2 + 2 * h) * 32 + lane] = a.m[h], part[(D / 2 + 2 * h + 1) * 32 + lane] = a.l[h];
}

/* The state fa_put wrote at part back into a (n-tiles from 2 nks on are left as they are). */
template <int D> __device__ __forceinline__ void fa_get(fa_acc<D> &a, const float *part, int nks) {
    int lane = threadIdx.x % 32;
#pragma unroll
    for (int n = 0; n < D / 8; n++)
        if (n < 2 * nks)
            for (int e = 0; e < 4; e++) a.o[n][e] = part[(4 * n + e) * 32 + lane];
    for (int h = 0; h < 2; h++) a.m[h] = part[(D / 2 + 2 * h) * 32 + lane], a.l[h] = part[(D / 2 + 2 * h + 1) * 32 + lane];
}

/* Decode, first pass: one warp (block) per (row, KV head, 16 of the group's query heads, chunk
 * of FA_SPLIT keys); blocks past the row's chunks return. The A fragment's rows are those heads'
 * queries (rows past the group zeros), the chunk's key tiles are fetched from the pool (values
 * in a second cp.async group that lands while the scores are computed), fa_scores / fa_pv run
 * from the empty state as in the forward with every row's limit at the context length n, and
 * the chunk's state goes to part (fa_part(D) floats per block) for k_fa_decode_merge. */
template <int D>
__global__ void __launch_bounds__(32) k_fa_decode(float *part, const float *qkv, const __nv_bfloat16 *kpool,
                                                  const __nv_bfloat16 *vpool, const int32_t *seg_all,
                                                  const int32_t *blocks, int block, int nh, int nkv, int hd, int nsp,
                                                  bool vec) {
    extern __shared__ uint4 fa_sm[];
    int G = nh / nkv, nch = (G + 15) / 16, lane = threadIdx.x, w = blockIdx.x / nsp, ck = blockIdx.x % nsp;
    int b = w / (nkv * nch), kvh = w / nch % nkv, c0 = w % nch * 16;
    const int32_t *seg = seg_all + 4 * b;
    int n = seg[1] + seg[3], ld = fa_ld(hd), hdp = fa_hdp(hd), nks = hdp / 16, kbeg = ck * FA_SPLIT;
    if (kbeg >= n) return;
    int kend = min(n, kbeg + FA_SPLIT);
    size_t kvd = (size_t)nkv * hd;
    __nv_bfloat16 *qs = reinterpret_cast<__nv_bfloat16 *>(fa_sm), *ks = qs + 16 * ld, *vs = ks + FA_T * ld;
    fa_stage(qs, ld, qkv + (size_t)b * (nh + 2 * nkv) * hd + (size_t)(kvh * G + c0) * hd, hd, 0, 16, G - c0, hd);
    if (vec)
        for (int k = lane; k < 2 * FA_T * (hdp - hd); k += 32) {
            int r = k / (hdp - hd), c = hd + k % (hdp - hd);
            ks[r * ld + c] = __float2bfloat16(0.0f); /* rows FA_T.. of ks are vs's */
        }
    __syncthreads();
    uint32_t qf[D / 16][4];
    fa_load_q<D>(qf, qs, ld, nks);
    fa_acc<D> a;
    fa_init(a);
    float scale = rsqrtf((float)hd), p[8][4];
    const __nv_bfloat16 *K = kpool + (size_t)kvh * hd, *V = vpool + (size_t)kvh * hd;
    for (int k0 = kbeg; k0 < kend; k0 += FA_T) {
        __syncthreads();
        fa_fetch(ks, ld, K, kvd, k0, n, seg, blocks, block, hd, vec);
        tc_cp_commit();
        fa_fetch(vs, ld, V, kvd, k0, n, seg, blocks, block, hd, vec);
        tc_cp_commit();
        tc_cp_wait<1>();
        __syncthreads();
        fa_scores<D>(a, p, qf, ks, ld, nks, k0, n, n, scale);
        tc_cp_wait<0>();
        __syncthreads();
        fa_pv<D>(a, p, vs, ld, nks);
    }
    fa_put<D>(part + (size_t)blockIdx.x * fa_part(D), a, nks);
}

/* Decode, second pass: one warp (block) per (row, KV head, 16 query heads) merges the row's
 * chunks from part into the empty state in order with fa_merge, as the forward does, and stores
 * O / l as the forward does. */
template <int D>
__global__ void __launch_bounds__(32) k_fa_decode_merge(float *out, const float *part, const int32_t *seg_all, int nh,
                                                        int nkv, int hd, int nsp) {
    int G = nh / nkv, nch = (G + 15) / 16, lane = threadIdx.x;
    int b = blockIdx.x / (nkv * nch), kvh = blockIdx.x / nch % nkv, c0 = blockIdx.x % nch * 16;
    int n = seg_all[4 * b + 1] + seg_all[4 * b + 3], nks = fa_hdp(hd) / 16;
    fa_acc<D> tot, c;
    fa_init(tot);
    fa_init(c); /* its n-tiles from 2 nks on, which fa_get leaves, are then defined */
    for (int ck = 0; ck * FA_SPLIT < n; ck++) {
        fa_get<D>(c, part + ((size_t)blockIdx.x * nsp + ck) * fa_part(D), nks);
        fa_merge<D>(tot, c, nks);
    }
    for (int hh = 0; hh < 2; hh++) {
        int r = lane / 4 + 8 * hh;
        if (c0 + r < G) fa_store<D>(out + (size_t)b * nh * hd + (size_t)(kvh * G + c0 + r) * hd, tot, hh, hd);
    }
}

/* The tensor-core forward for head widths up to D (64, 128 or 256). */
template <int D>
static void fa_forward(or1_cuda *g, float *out, float *lse, const float *qkv, const int32_t *seq_start, int n_seqs,
                       int max_len, int nh, int nkv, int hd) {
    size_t smem = (size_t)3 * FA_T * fa_ld(hd) * sizeof(__nv_bfloat16);
    allow_smem(g, k_fa_fwd<D>, smem);
    dim3 grid((max_len + FA_T - 1) / FA_T, nh, n_seqs);
    k_fa_fwd<D><<<grid, FA_WARPS * 32, smem, g->stream>>>(out, lse, qkv, seq_start, nh, nkv, hd);
}

/* The tensor-core decode for head widths up to D over the bf16 pool: ceil(ctx_cap / FA_SPLIT)
 * chunk blocks per (row, KV head, 16 query heads) into the context's scratch, then the merge. */
template <int D>
static void fa_decode(or1_cuda *g, float *out, const float *qkv, int B, const __nv_bfloat16 *k_pool,
                      const __nv_bfloat16 *v_pool, const int32_t *seg, const int32_t *blocks, int block, int nh,
                      int nkv, int hd, int ctx_cap) {
    size_t smem = (size_t)(16 + 2 * FA_T) * fa_ld(hd) * sizeof(__nv_bfloat16);
    bool vec = hd % 8 == 0 && ((uintptr_t)k_pool | (uintptr_t)v_pool) % 16 == 0;
    int nsp = ctx_cap > FA_SPLIT ? (ctx_cap + FA_SPLIT - 1) / FA_SPLIT : 1;
    size_t warps = (size_t)B * nkv * ((nh / nkv + 15) / 16);
    if (cu_reserve(g, warps * nsp * fa_part(D), 0)) return;
    allow_smem(g, k_fa_decode<D>, smem);
    k_fa_decode<D><<<(unsigned)(warps * nsp), 32, smem, g->stream>>>(g->scratch, qkv, k_pool, v_pool, seg, blocks,
                                                                     block, nh, nkv, hd, nsp, vec);
    k_fa_decode_merge<D><<<(unsigned)warps, 32, 0, g->stream>>>(out, g->scratch, seg, nh, nkv, hd, nsp);
}

/* Launches the forward over (query tiles, heads, sequences) with shared memory sized by hd: the
 * tensor-core kernel in bf16 precision, the CUDA-core one in fp32. */
void or1_cuda_attention(or1_cuda *g, float *out, float *lse, const float *qkv, const int32_t *seq_start,
                        int n_seqs, int max_len, int nh, int nkv, int hd) {
    if (hd > MAX_HD || hd < 1 || n_seqs <= 0 || max_len <= 0) {
        if (hd > MAX_HD || hd < 1) cu_error(g, "attention: head_dim %d outside 1..%d", hd, MAX_HD);
        return;
    }
    if (g->prec != OR1_CUDA_FP32) {
        if (hd <= 64) fa_forward<64>(g, out, lse, qkv, seq_start, n_seqs, max_len, nh, nkv, hd);
        else if (hd <= 128) fa_forward<128>(g, out, lse, qkv, seq_start, n_seqs, max_len, nh, nkv, hd);
        else fa_forward<256>(g, out, lse, qkv, seq_start, n_seqs, max_len, nh, nkv, hd);
    } else {
        size_t smem = (size_t)(ROWS * hd + TILE * (hd + 1) + TILE * hd) * sizeof(float);
        allow_smem(g, k_attn_fwd, smem);
        dim3 grid((max_len + ROWS - 1) / ROWS, nh, n_seqs);
        k_attn_fwd<<<grid, ROWS * 32, smem, g->stream>>>(out, lse, qkv, seq_start, nh, nkv, hd);
    }
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
                          const int32_t *seq_start, int nh, int nkv, int hd, bool rnd) {
    extern __shared__ float sm[];
    int start = seq_start[blockIdx.z], len = seq_start[blockIdx.z + 1] - start, i0 = blockIdx.x * ROWS;
    if (i0 >= len) return;
    int h = blockIdx.y, kvh = h / (nh / nkv), warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    size_t stride = (size_t)(nh + 2 * nkv) * hd, ostride = (size_t)nh * hd;
    const float *base = qkv + (size_t)start * stride;
    float *qs = sm, *dos = qs + ROWS * hd, *ks = dos + ROWS * hd, *vs = ks + TILE * (hd + 1);
    load_rows(qs, hd, base + (size_t)h * hd, stride, i0, ROWS, len, hd, rnd);
    load_rows(dos, hd, dout + (size_t)start * ostride + (size_t)h * hd, ostride, i0, ROWS, len, hd);
    int row = i0 + warp, kend = min(len, i0 + ROWS);
    float scale = rsqrtf((float)hd), dq[NDIM], L = 0, Dr = 0;
    if (row < len) L = lse[(size_t)(start + row) * nh + h], Dr = D[(size_t)(start + row) * nh + h];
    for (int k = 0; k < NDIM; k++) dq[k] = 0;
    for (int k0 = 0; k0 < kend; k0 += TILE) {
        __syncthreads();
        load_rows(ks, hd + 1, base + (size_t)(nh + kvh) * hd, stride, k0, TILE, len, hd, rnd);
        load_rows(vs, hd + 1, base + (size_t)(nh + nkv + kvh) * hd, stride, k0, TILE, len, hd, rnd);
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
        /* per thread: two dot products of hd, the probability and its gradient, dq's FMAs */
        tc_flops((j <= row ? 4 * hd + 8 : 0) + 2 * nj * ((hd - lane + 31) / 32));
    }
    if (row >= len) return;
    float *dst = dqkv + (size_t)(start + row) * stride + (size_t)h * hd;
    for (int k = 0; k < NDIM; k++)
        if (lane + 32 * k < hd) dst[lane + 32 * k] = dq[k];
}

/* dK, dV: grid (key tiles, kv heads, sequences), one warp per key row. Query rows of every
 * head in the group stream through shared memory; lane i takes query i of the tile. */
__global__ void k_attn_dkv(float *dqkv, const float *dout, const float *qkv, const float *lse, const float *D,
                           const int32_t *seq_start, int nh, int nkv, int hd, bool rnd) {
    extern __shared__ float sm[];
    int start = seq_start[blockIdx.z], len = seq_start[blockIdx.z + 1] - start, j0 = blockIdx.x * ROWS;
    if (j0 >= len) return;
    int kvh = blockIdx.y, group = nh / nkv, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    size_t stride = (size_t)(nh + 2 * nkv) * hd, ostride = (size_t)nh * hd;
    const float *base = qkv + (size_t)start * stride;
    float *ks = sm, *vs = ks + ROWS * hd, *qs = vs + ROWS * hd, *dos = qs + TILE * (hd + 1);
    float *ls = dos + TILE * (hd + 1), *ds_ = ls + TILE;
    load_rows(ks, hd, base + (size_t)(nh + kvh) * hd, stride, j0, ROWS, len, hd, rnd);
    load_rows(vs, hd, base + (size_t)(nh + nkv + kvh) * hd, stride, j0, ROWS, len, hd, rnd);
    int kr = j0 + warp;
    float scale = rsqrtf((float)hd), dk[NDIM], dv[NDIM];
    for (int k = 0; k < NDIM; k++) dk[k] = dv[k] = 0;
    for (int h = kvh * group; h < (kvh + 1) * group; h++)
        for (int q0 = j0; q0 < len; q0 += TILE) {
            __syncthreads();
            load_rows(qs, hd + 1, base + (size_t)h * hd, stride, q0, TILE, len, hd, rnd);
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
            /* per thread: two dot products of hd, the probability and its gradient, dk's and
             * dv's FMAs */
            tc_flops((qi >= kr && qi < len ? 4 * hd + 8 : 0) + 4 * TILE * ((hd - lane + 31) / 32));
        }
    if (kr >= len) return;
    float *dkr = dqkv + (size_t)(start + kr) * stride + (size_t)(nh + kvh) * hd, *dvr = dkr + (size_t)nkv * hd;
    for (int k = 0; k < NDIM; k++)
        if (lane + 32 * k < hd) dkr[lane + 32 * k] = dk[k], dvr[lane + 32 * k] = dv[k];
}

/* D = rowsum(dO * O) into scratch, then the dQ and dK/dV kernels (over bf16-rounded q, k, v in
 * bf16 precision); T comes from the caller so the stream never waits on the host. */
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
    bool rnd = g->prec != OR1_CUDA_FP32;
    k_attn_dq<<<dim3((max_len + ROWS - 1) / ROWS, nh, n_seqs), ROWS * 32, s_dq, g->stream>>>(
        dqkv, dout, qkv, lse, D, seq_start, nh, nkv, hd, rnd);
    k_attn_dkv<<<dim3((max_len + ROWS - 1) / ROWS, nkv, n_seqs), ROWS * 32, s_dkv, g->stream>>>(
        dqkv, dout, qkv, lse, D, seq_start, nh, nkv, hd, rnd);
    cu_launched(g, "attention_bwd");
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

/* Launches decode over the pool: in bf16 precision (a bf16 pool) the tensor-core kernels (chunks
 * of FA_SPLIT keys up to ctx_cap, then their merge); in
 * fp32 one warp per (row, KV head) when a group fits the registers, else one warp per (row,
 * query head). */
void or1_cuda_attention_decode(or1_cuda *g, float *out, const float *qkv, int B, const void *kp, const void *vp,
                               const int32_t *seg, const int32_t *blocks, int block, int nh, int nkv, int hd,
                               int ctx_cap) {
    if (hd > MAX_HD || hd < 1) {
        cu_error(g, "attention: head_dim %d outside 1..%d", hd, MAX_HD);
        return;
    }
    if (B <= 0) return;
    const float *k_pool = static_cast<const float *>(kp), *v_pool = static_cast<const float *>(vp);
    if (g->prec != OR1_CUDA_FP32) {
        const __nv_bfloat16 *kb = static_cast<const __nv_bfloat16 *>(kp), *vb = static_cast<const __nv_bfloat16 *>(vp);
        if (hd <= 64) fa_decode<64>(g, out, qkv, B, kb, vb, seg, blocks, block, nh, nkv, hd, ctx_cap);
        else if (hd <= 128) fa_decode<128>(g, out, qkv, B, kb, vb, seg, blocks, block, nh, nkv, hd, ctx_cap);
        else fa_decode<256>(g, out, qkv, B, kb, vb, seg, blocks, block, nh, nkv, hd, ctx_cap);
    } else if (nh / nkv <= MAX_GROUP) {
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
