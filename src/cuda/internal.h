/* Shared by the CUDA sources: the context, sticky error recording, launch helpers, block
 * reductions and the head's fold step. */
#ifndef OR1_CUDA_INTERNAL_H
#define OR1_CUDA_INTERNAL_H

#include "cuda_kernels.h"

#include "backend_impl.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>

struct or1_cuda {
    int device; /* the GPU's index */
    cudaStream_t stream;
    cublasHandle_t blas;
    or1_cuda_prec prec;
    char err[256];       /* first failure since the last sync ("" if none) */
    char name[640];      /* device name and memory */
    __nv_bfloat16 *cast; /* bf16 copies of GEMM operands */
    size_t cast_n;
    float *scratch;      /* the head's logits block */
    size_t scratch_n;
    double *red;         /* reduction partials and the head's per-row running state */
    size_t red_n;
};

/* Keeps the first error (printf-style) until or1_cuda_sync reports it. */
void cu_error(or1_cuda *g, const char *fmt, ...);
/* Records a CUDA runtime failure; returns nonzero if there was one. */
int cu_check(or1_cuda *g, cudaError_t e, const char *what);
/* Records the last kernel launch's failure, if any. */
void cu_launched(or1_cuda *g, const char *kernel);
/* Ensures the head's scratch holds n floats and the reduction buffer nd doubles. */
int cu_reserve(or1_cuda *g, size_t n, size_t nd);

/* Column-major GEMM C = alpha op(A) op(B) + beta C with fp32 C, in the context's precision. */
void cu_gemm(or1_cuda *g, bool ta, bool tb, int m, int n, int k, float alpha, const float *A, int lda,
             const float *B, int ldb, float beta, float *C, int ldc);
/* cu_gemm with optional ready bf16 copies of A and B (used in bf16 mode instead of casting). */
void cu_gemm_ex(or1_cuda *g, bool ta, bool tb, int m, int n, int k, float alpha, const float *A,
                const __nv_bfloat16 *Ab, int lda, const float *B, const __nv_bfloat16 *Bb, int ldb, float beta,
                float *C, int ldc);
/* The batch-invariant linear forward y = alpha x W^T (+ b), with an optional bf16 copy of the
 * weight: a row's bits do not depend on the other rows; and the input gradient. */
void cu_matmul_rows(or1_cuda *g, float *y, const float *x, const float *w, const __nv_bfloat16 *wb, const float *b,
                    int T, int in, int out, float alpha);
void cu_matmul_dx(or1_cuda *g, float *dx, const float *dy, const float *w, const __nv_bfloat16 *wb, int T, int in,
                  int out, int acc);
/* dst = bf16(src) over n floats. */
void cu_to_bf16(or1_cuda *g, __nv_bfloat16 *dst, const float *src, size_t n);
/* Rows ids[0..T) of a bf16 table of width H, widened into x. */
void cu_embed_bf16(or1_cuda *g, float *x, const __nv_bfloat16 *emb, const int32_t *ids, int T, int H);
/* The head forward and backward with an optional bf16 copy of the head weight. */
void cu_head(or1_cuda *g, float *logp, float *entropy, float *lse, float *ez, const float *h, const float *w,
             const __nv_bfloat16 *wb, const int32_t *tgt, int n, int H, int V, float temperature);
void cu_head_bwd(or1_cuda *g, float *dh, float *dw, const float *h, const float *w, const __nv_bfloat16 *wb,
                 const int32_t *tgt, const float *lse, const float *ez, const float *g_logp, const float *g_entropy,
                 int n, int H, int V, float temperature);
/* The head's vocabulary chunk and block size, which k_head_fold and the sampler's fold share:
 * head_fold_chunk's sums depend on both. */
enum { HEAD_CHUNK = 16384, HEAD_THREADS = 256 };
/* Column sums acc[j] += sum_t a[t,j] (* b[t,j] * scale[t] when b) over a [T, n] operand. */
void cu_colsum(or1_cuda *g, float *acc, const float *a, const float *b, const float *scale, int T, int n);


/* Sum over a block of any power-of-two size up to 1024 (result valid in every thread); sh holds
 * 32 values. */
template <typename T> __device__ T block_sum(T v, T *sh) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nw = blockDim.x / 32;
    __syncthreads();
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    T s = 0;
    for (int w = 0; w < nw; w++) s += sh[w];
    return s;
}

/* Maximum over a block as block_sum sums. */
__device__ inline float block_max(float v, float *sh) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nw = blockDim.x / 32;
    __syncthreads();
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    float m = sh[0];
    for (int w = 1; w < nw; w++) m = fmaxf(m, sh[w]);
    return m;
}

/* A row's running state over the head's vocabulary chunks, in double: max, sum of exp(z - max),
 * sum of exp(z - max) z, and the target's logit. */
struct head_run {
    double m, s, sz, zt;
};

/* Folds the chunk [c0, c0 + vc) of a row's logits zr (each times scale when scale is not 1:
 * raw logits at 1/temperature) into r, held alike in every thread of the block: the one fold
 * of the head's forward (k_head_fold) and of the sampler's log-prob (k_sample), so the two give
 * a token the same bits. shf and shd hold 32 values each. */
__device__ inline void head_fold_chunk(head_run *r, const float *zr, float scale, int vc, int c0, int tgt, float *shf,
                                       double *shd) {
    float cm = -INFINITY;
    for (int v = threadIdx.x; v < vc; v += blockDim.x) cm = fmaxf(cm, zr[v] * scale);
    cm = block_max(cm, shf);
    double nm = cm > r->m ? cm : r->m, a = 0, b = 0;
    for (int v = threadIdx.x; v < vc; v += blockDim.x) {
        double zv = zr[v] * scale, e = exp(zv - nm);
        a += e;
        b = fma(e, zv, b);
    }
    a = block_sum(a, shd);
    b = block_sum(b, shd);
    double k = exp(r->m - nm);
    r->s = fma(r->s, k, a), r->sz = fma(r->sz, k, b), r->m = nm;
    if (tgt >= c0 && tgt < c0 + vc) r->zt = zr[tgt - c0] * scale;
}

/* The log-sum-exp of a folded row. */
__device__ inline double head_lse(const head_run *r) { return r->m + log(r->s); }

/* Blocks needed to cover n items with threads-wide blocks (capped to a grid-stride size). */
static inline unsigned cu_blocks(size_t n, unsigned threads) {
    size_t b = (n + threads - 1) / threads;
    return (unsigned)(b < 65535u * 16u ? (b ? b : 1) : 65535u * 16u);
}

#endif
