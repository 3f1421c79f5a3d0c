/* The CUDA backend's context and kernels (src/cuda), for its own sources and its tests
 * (tests/cuda reach them with src/cuda on their include path); the rest of the program uses
 * the backend through or1/model.h (or1_backend_cuda, or1_dmodel).
 *
 * Every pointer argument named like a CPU kernel's is a device pointer (int32 index arrays
 * too); sizes stay host integers. Kernels are queued on the context's stream and return
 * nothing: a failure (launch, cuBLAS, allocation) is kept in the context and reported by the
 * next or1_cuda_sync, which records it with or1_fail and returns -1. */
#ifndef OR1_CUDA_KERNELS_H
#define OR1_CUDA_KERNELS_H

#include "or1/cuda.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct or1_cuda or1_cuda;

/* A context on device 0: stream, cuBLAS handle, scratch. NULL (with or1_fail) on error. */
or1_cuda *or1_cuda_new(or1_cuda_prec prec);
void or1_cuda_free(or1_cuda *g);
void or1_cuda_set_prec(or1_cuda *g, or1_cuda_prec prec);
/* Waits for queued work; -1 with the first pending error's message. */
int or1_cuda_sync(or1_cuda *g);
/* Name and memory of the context's device, for reports. */
const char *or1_cuda_device_name(const or1_cuda *g);

/* Zeroed device memory (NULL with or1_fail when out of memory) and its release. */
void *or1_cuda_alloc(size_t bytes);
void or1_cuda_release(void *p);
/* Host <-> device copies on the context's stream; -1 with or1_fail on error. An upload is
 * queued (the pageable host buffer may be reused when it returns); a download waits. */
int or1_cuda_upload(or1_cuda *g, void *dst, const void *src, size_t bytes);
int or1_cuda_download(or1_cuda *g, void *dst, const void *src, size_t bytes);
/* Device-side memset to zero, queued. */
void or1_cuda_zero(or1_cuda *g, void *p, size_t bytes);

/* Linear layers (semantics of or1_matmul / or1_matmul_dx / or1_matmul_dw). */
void or1_cuda_matmul(or1_cuda *g, float *y, const float *x, const float *w, const float *b, int T, int in,
                     int out);
void or1_cuda_matmul_dx(or1_cuda *g, float *dx, const float *dy, const float *w, int T, int in, int out,
                        int acc);
void or1_cuda_matmul_dw(or1_cuda *g, float *dw, float *db, const float *dy, const float *x, int T, int in,
                        int out);

/* x[t] = E[ids[t]] and dE[ids[t]] += dx[t] (embedding lookup and its gradient). */
void or1_cuda_embed(or1_cuda *g, float *x, const float *emb, const int32_t *ids, int T, int H);
void or1_cuda_embed_bwd(or1_cuda *g, float *demb, const float *dx, const int32_t *ids, int T, int H);

/* or1_rmsnorm: res (or NULL) added into x first (residual connections), then the norm. */
void or1_cuda_rmsnorm(or1_cuda *g, float *y, float *rstd, float *x, const float *res, const float *w, int T, int H,
                      float eps);
void or1_cuda_rmsnorm_bwd(or1_cuda *g, float *dx, float *dw, const float *dy, const float *x,
                          const float *rstd, const float *w, int T, int H);
void or1_cuda_rope(or1_cuda *g, float *x, int row_stride, int n_heads, int hd, const int32_t *pos, int T,
                   const float *cos_t, const float *sin_t, int inverse);

/* Per-head RMSNorm inside strided qkv rows and its backward (or1_head_norm's semantics). */
void or1_cuda_head_norm(or1_cuda *g, float *y, float *rstd, const float *x, const float *w, int T, int n_heads, int hd,
                        int stride, float eps);
void or1_cuda_head_norm_bwd(or1_cuda *g, float *d, float *dw, const float *x, const float *rstd, const float *w, int T,
                            int n_heads, int hd, int stride);

/* Flash-style causal GQA attention over packed sequences: keys stream through shared memory
 * with an online softmax, only lse [T, nh] is kept; max_len bounds every sequence's length. In
 * bf16 precision on tensor cores, over q, k, v rounded to bf16. */
void or1_cuda_attention(or1_cuda *g, float *out, float *lse, const float *qkv, const int32_t *seq_start,
                        int n_seqs, int max_len, int nh, int nkv, int hd);
/* dqkv (overwritten) from dout, recomputing probabilities from lse; T = seq_start[n_seqs]. */
void or1_cuda_attention_bwd(or1_cuda *g, float *dqkv, const float *dout, const float *qkv, const float *out,
                            const float *lse, const int32_t *seq_start, int n_seqs, int T, int max_len, int nh,
                            int nkv, int hd);
/* Decode attention over the paged KV pool, or1_attention_decode's semantics (seg and the
 * block table in device memory; ctx_cap >= every row's context). out[B, nh*hd]. The pool holds
 * floats in fp32 precision and bf16 in bf16 precision (where a query's output is the bits
 * or1_cuda_attention gives it). */
void or1_cuda_attention_decode(or1_cuda *g, float *out, const float *qkv, int B, const void *k_pool,
                               const void *v_pool, const int32_t *seg, const int32_t *blocks, int block, int nh,
                               int nkv, int hd, int ctx_cap);

void or1_cuda_swiglu(or1_cuda *g, float *a, const float *gu, int T, int inter);
void or1_cuda_swiglu_bwd(or1_cuda *g, float *dgu, float *a, const float *da, const float *gu, int T, int inter);

/* Streaming log-prob + entropy head (or1_head / or1_head_bwd) over vocabulary chunks; the
 * context holds the [n x chunk] logits block. dh is overwritten, dw accumulated. */
void or1_cuda_head(or1_cuda *g, float *logp, float *entropy, float *lse, float *ez, const float *h,
                   const float *w, const int32_t *tgt, int n, int H, int V, float temperature);
void or1_cuda_head_bwd(or1_cuda *g, float *dh, float *dw, const float *h, const float *w, const int32_t *tgt,
                       const float *lse, const float *ez, const float *g_logp, const float *g_entropy, int n,
                       int H, int V, float temperature);

/* AdamW (or1_adamw_step semantics) on fp32 master weights with moments m, v; step counts from 1. */
void or1_cuda_adamw(or1_cuda *g, float *params, float *m, float *v, const float *grads, size_t n, long step,
                    const or1_adamw_cfg *c);
/* Global L2 norm (double accumulation in a fixed order); synchronises; -1 on error. */
double or1_cuda_grad_norm(or1_cuda *g, const float *grads, size_t n);
/* grads *= min(1, max_norm / (norm + 1e-6)). */
void or1_cuda_clip(or1_cuda *g, float *grads, size_t n, double norm, double max_norm);

#ifdef __cplusplus
}
#endif

#endif
