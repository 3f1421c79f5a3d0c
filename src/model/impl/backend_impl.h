/* The backend seam: the operation table a backend fills and the instance it heads. Private to
 * src/model (the decoder written once over it, the CPU backend) and the backends (src/cuda),
 * which alone have this folder on their include path; tests reach it the same way. Everything
 * else goes through or1_dmodel (or1/model.h), as llama.cpp keeps its backend table in a
 * private -impl.h.
 *
 * A backend supplies memory and the numeric kernels, nothing else. Pointers passed to kernels
 * are backend memory (index arrays too); sizes are host integers. Kernels are queued and
 * return nothing; a failure is kept by the backend and returned by the next sync (or by any
 * call that returns int). A backend fills its table by designated initialisers, field by
 * field; tests/cuda/test_backend_ops.c walks every slot against the CPU backend. */
#ifndef OR1_BACKEND_IMPL_H
#define OR1_BACKEND_IMPL_H

#ifdef __cplusplus
extern "C" {
#endif

#include "or1/model.h"

typedef struct {
    const char *name;
    bool host_memory; /* buffers are host memory: a model placed here uses the host arrays */
    int head_rows;    /* scored rows per head call */

    /* Memory: zeroed allocation (NULL with or1_fail), release, copies, zeroing, and sync. An
     * upload is queued in order with the kernels (its host buffer may be reused at once); a
     * download waits for everything queued before it. */
    void *(*alloc)(or1_backend *be, size_t bytes);
    void (*release)(or1_backend *be, void *p);
    int (*upload)(or1_backend *be, void *dst, const void *src, size_t bytes);
    int (*download)(or1_backend *be, void *dst, const void *src, size_t bytes);
    void (*copy)(or1_backend *be, void *dst, const void *src, size_t bytes);
    void (*zero)(or1_backend *be, void *p, size_t bytes);
    int (*sync)(or1_backend *be);
    /* n floats to bf16, round to nearest even (the model's bf16 weights from its fp32 ones). */
    void (*to_bf16)(or1_backend *be, or1_bf16 *dst, const float *src, size_t n);

    /* The kernels of or1/kernels.h. A weight comes as fp32 (w) and, in bf16 precision, as the
     * model's bf16 copy (wb): the kernel then computes with wb alone (the forward, the input
     * gradient, the head's logits and dh), and w may be NULL. Weight gradients (matmul_dw, the
     * head's dW) accumulate in fp32 into fp32 buffers; in bf16 precision a backend may round
     * their operands to bf16 (the CUDA backend does, as autocast does; the CPU one does not).
     * matmul_rows is every forward matmul (prefill, decode, the trainer's forward, the
     * sampler's logits): each row is computed independently of the others, so that a token's
     * result is the same bits whatever else is in the batch (on the CPU; cuBLAS is not). gather
     * is y[i] = src[idx[i]] (rows of srcb, widened, when srcb is given), scatter_add
     * dst[idx[i]] += src[i]. */
    void (*matmul_rows)(or1_backend *be, float *y, const float *x, const float *w, const or1_bf16 *wb,
                        const float *b, int T, int in, int out);
    void (*matmul_dx)(or1_backend *be, float *dx, const float *dy, const float *w, const or1_bf16 *wb, int T, int in,
                      int out, int acc);
    void (*matmul_dw)(or1_backend *be, float *dw, float *db, const float *dy, const float *x, int T, int in,
                      int out);
    void (*gather)(or1_backend *be, float *y, const float *src, const or1_bf16 *srcb, const int32_t *idx, int n,
                   int H);
    void (*scatter_add)(or1_backend *be, float *dst, const float *src, const int32_t *idx, int n, int H);
    /* rmsnorm first adds res (NULL: nothing) into x: the decoder's residual connections. */
    void (*rmsnorm)(or1_backend *be, float *y, float *rstd, float *x, const float *res, const float *w, int T, int H,
                    float eps);
    void (*rmsnorm_bwd)(or1_backend *be, float *dx, float *dw, const float *dy, const float *x, const float *rstd,
                        const float *w, int T, int H);
    void (*rope)(or1_backend *be, float *x, int row_stride, int n_heads, int hd, const int32_t *pos, int T,
                 const float *cos_t, const float *sin_t, int inverse);
    /* Qwen3's per-head RMSNorm of queries and keys inside qkv rows (or1_head_norm's semantics):
     * y may be x; the backward turns d (dy) into dx in place and adds into dw. */
    void (*head_norm)(or1_backend *be, float *y, float *rstd, const float *x, const float *w, int T, int n_heads,
                      int hd, int stride, float eps);
    void (*head_norm_bwd)(or1_backend *be, float *d, float *dw, const float *x, const float *rstd, const float *w,
                          int T, int n_heads, int hd, int stride);
    void (*attention)(or1_backend *be, float *out, float *lse, const float *qkv, const int32_t *seq_start,
                      int n_seqs, int T, int max_len, int nh, int nkv, int hd);
    void (*attention_bwd)(or1_backend *be, float *dqkv, const float *dout, const float *qkv, const float *out,
                          const float *lse, const int32_t *seq_start, int n_seqs, int T, int max_len, int nh,
                          int nkv, int hd);
    /* Row t's rotated key and value (in qkv) go to row rows[t] of the pools k and v, whose
     * elements take the instance's kv_bytes (4: floats; 2: bf16, rounded to nearest even). */
    void (*kv_store)(or1_backend *be, void *k, void *v, const int32_t *rows, const float *qkv, int T, int qd,
                     int kvd);
    /* B single-token queries over the paged pool (or1_attention_decode's semantics): row b
     * attends to its prompt's seg[4b+1] keys (block ids at blocks[seg[4b]]) then its own
     * seg[4b+3] (block ids at blocks[seg[4b+2]]); ctx_cap bounds every row's total. */
    void (*attention_decode)(or1_backend *be, float *out, const float *qkv, int B, const void *k, const void *v,
                             const int32_t *seg, const int32_t *blocks, int block, int nh, int nkv, int hd,
                             int ctx_cap);
    void (*swiglu)(or1_backend *be, float *a, const float *gu, int T, int inter);
    void (*swiglu_bwd)(or1_backend *be, float *dgu, float *a, const float *da, const float *gu, int T, int inter);
    void (*head)(or1_backend *be, float *logp, float *entropy, float *lse, float *ez, const float *h,
                 const float *w, const or1_bf16 *wb, const int32_t *tgt, int n, int H, int V, float temperature);
    void (*head_bwd)(or1_backend *be, float *dh, float *dw, const float *h, const float *w, const or1_bf16 *wb,
                     const int32_t *tgt, const float *lse, const float *ez, const float *g_logp,
                     const float *g_entropy, int n, int H, int V, float temperature);
    void (*adamw)(or1_backend *be, float *params, float *m, float *v, const float *grads, size_t n, long step,
                  const or1_adamw_cfg *c);
    /* Global L2 norm in double (waits for queued work; -1 on error) and clip_grad_norm_. */
    double (*grad_norm)(or1_backend *be, const float *grads, size_t n);
    void (*clip)(or1_backend *be, float *grads, size_t n, double norm, double max_norm);
    /* Draws the next token of each of B rows of logits; next, logp and rows are host arrays. */
    int (*sample)(or1_backend *be, int32_t *next, float *logp, const float *logits, int B, int V,
                  const or1_sample_row *rows);
    /* Collectives over the ranks on backend memory (NCCL on GPUs). NULL where the backend has
     * none: the trainer then sums through the host mirror over MPI. comm_id writes rank 0's
     * id (at most cap bytes) and returns its size; every rank passes it to comm_init. The
     * reduce-scatter and all-gather split n floats at starts[0..size] (rank r's shard is
     * [starts[r], starts[r+1])); the reduce-scatter leaves each rank's summed shard in place.
     * The all-gather moves elements of elem bytes (4: fp32 weights, 2: bf16 weights). */
    int (*comm_id)(or1_backend *be, void *id, size_t cap);
    int (*comm_init)(or1_backend *be, const void *id, int rank, int size);
    int (*allreduce)(or1_backend *be, float *buf, size_t n);
    int (*reduce_scatter)(or1_backend *be, float *buf, const size_t *starts);
    int (*allgather)(or1_backend *be, void *buf, size_t elem, const size_t *starts);
    void (*destroy)(or1_backend *be);
} or1_backend_ops;

/* Every backend instance starts with this (its own state follows). */
struct or1_backend {
    const or1_backend_ops *ops;
    bool bf16;    /* matmuls over the model's bf16 weights (the fp32 ones stay the masters) */
    int kv_bytes; /* bytes of a KV pool element: 4 (floats) or 2 (bf16) */
};

#ifdef __cplusplus
}
#endif

#endif
