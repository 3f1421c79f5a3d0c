/* Shared by the CUDA sources: the context, sticky error recording, launch helpers. */
#ifndef OR1_CUDA_INTERNAL_H
#define OR1_CUDA_INTERNAL_H

#include "cuda_kernels.h"

#include "backend_impl.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

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
/* Linear forward and input gradient with an optional bf16 copy of the weight. */
void cu_matmul(or1_cuda *g, float *y, const float *x, const float *w, const __nv_bfloat16 *wb, const float *b,
               int T, int in, int out);
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
/* Column sums acc[j] += sum_t a[t,j] (* b[t,j] * scale[t] when b) over a [T, n] operand. */
void cu_colsum(or1_cuda *g, float *acc, const float *a, const float *b, const float *scale, int T, int n);

/* y[t, :] = b for every row t of a [T, n] buffer (bias before an accumulating GEMM). */
void cu_bias_rows(or1_cuda *g, float *y, const float *b, int T, int n);

/* Blocks needed to cover n items with threads-wide blocks (capped to a grid-stride size). */
static inline unsigned cu_blocks(size_t n, unsigned threads) {
    size_t b = (n + threads - 1) / threads;
    return (unsigned)(b < 65535u * 16u ? (b ? b : 1) : 65535u * 16u);
}

#endif
