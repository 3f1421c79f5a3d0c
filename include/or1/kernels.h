/* or1 kernels: the numeric ops of the decoder, forward and backward side by side (CPU:
 * OpenBLAS for matmuls, OpenMP for the rest). Row-major; T = tokens of a packed batch.
 * Backward kernels add into their gradient outputs unless said otherwise. */
#ifndef OR1_KERNELS_H
#define OR1_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* y[T,out] = x[T,in] W[out,in]^T (+ b[out] if b) */
void or1_matmul(float *y, const float *x, const float *w, const float *b, int T, int in, int out);
/* dx[T,in] = dy[T,out] W[out,in] (accumulate when acc != 0) */
void or1_matmul_dx(float *dx, const float *dy, const float *w, int T, int in, int out, int acc);
/* dW[out,in] += dy[T,out]^T x[T,in];  db[out] += sum_t dy (if db) */
void or1_matmul_dw(float *dw, float *db, const float *dy, const float *x, int T, int in, int out);

/* y[B,out] = x[B,in] W[out,in]^T (+ b) with a summation order fixed per element, so each row's
 * result is bitwise the same whatever B and the thread count (BLAS picks kernels by shape).
 * Used by the rollout engine, whose samples must not depend on batch composition. */
void or1_matmul_rows(float *y, const float *x, const float *w, const float *b, int B, int in, int out);

/* bf16 (bfloat16) values as their 16 bits: the upper half of the float they round to. */
typedef uint16_t or1_bf16;
/* n floats to bf16, rounding to nearest, ties to even (NaN stays NaN, overflow gives inf). */
void or1_bf16_from_f32(or1_bf16 *dst, const float *src, size_t n);
/* x rounded to the nearest bf16 value, as a float. */
float or1_bf16_round(float x);
/* n bf16 values widened to floats (exact). */
void or1_f32_from_bf16(float *dst, const or1_bf16 *src, size_t n);
/* or1_matmul_dx with W in bf16 (its values widened exactly, blocks of rows at a time). */
void or1_matmul_dx_bf16(float *dx, const float *dy, const or1_bf16 *w, int T, int in, int out, int acc);
/* or1_matmul_rows with bf16 weights: each input is rounded to bf16, each product of two bf16
 * values is formed exactly and summed in fp32 in or1_matmul_rows' order (the bias, fp32, added
 * last). Batch-invariant as or1_matmul_rows; the trainer's forward and the rollout both use it
 * under `precision: bf16`, so their matmuls agree bit for bit. */
void or1_matmul_rows_bf16(float *y, const float *x, const or1_bf16 *w, const float *b, int B, int in, int out);

/* Intel AMX tiles (src/kernels/amx.c). Whether this process can run AMX bf16 tile instructions:
 * the CPU has AMX-TILE and AMX-BF16 and Linux granted the tile state (asked on the first call);
 * when not, *why (if not NULL) says why. Not yet used by the model: the tile kernel has not run. */
bool or1_amx_usable(const char **why);
/* bf16 values of W (out x in, row-major) in the tile layout: or1_amx_packed_len values. */
size_t or1_amx_packed_len(int in, int out);
void or1_amx_pack(or1_bf16 *dst, const or1_bf16 *w, int in, int out);
/* y = x W^T + b on tiles (only where or1_amx_usable): inputs rounded to bf16, each output
 * accumulated in fp32 over the inputs in order, two products per step (TDPBF16PS), the bias
 * added last. Batch-invariant. */
void or1_amx_matmul_rows_bf16(float *y, const float *x, const or1_bf16 *packed, const float *b, int B, int in,
                              int out);
/* The same arithmetic without tiles (W unpacked), in the order the SDM's pseudocode of
 * TDPBF16PS gives, denormals flushed: the tile kernel must equal it bit for bit. */
void or1_amx_matmul_rows_ref(float *y, const float *x, const or1_bf16 *w, const float *b, int B, int in, int out);

/* x += res first when res is not NULL (the residual connection into this norm, in the same pass),
 * then y = x * rstd * w with rstd = 1/sqrt(mean(x^2) + eps) saved per row. */
void or1_rmsnorm(float *y, float *rstd, float *x, const float *res, const float *w, int T, int H, float eps);
/* dx += d(y)/d(x)^T dy;  dw += sum_t dy * x * rstd */
void or1_rmsnorm_bwd(float *dx, float *dw, const float *dy, const float *x, const float *rstd,
                     const float *w, int T, int H);

/* Per-head RMSNorm inside strided rows (Qwen3's q_norm / k_norm): head h of token t is the hd
 * floats at x + t*stride + h*hd, normalised by its RMS and scaled by w (shared by the heads) into
 * y at the same place (y may be x); rstd[t*n_heads + h] gets the factor. The backward turns dy
 * (in d, at the same places) into dx in place and adds the weight gradient into dw[hd]. */
void or1_head_norm(float *y, float *rstd, const float *x, const float *w, int T, int n_heads, int hd, int stride,
                   float eps);
void or1_head_norm_bwd(float *d, float *dw, const float *x, const float *rstd, const float *w, int T, int n_heads,
                       int hd, int stride);
/* RoPE's frequency scaling (config.json's rope_scaling / rope_parameters), as transformers
 * computes the inverse frequencies: none; linear (each divided by factor); llama3 (Llama 3.1:
 * low frequencies divided by factor, high ones kept, those between blended, by wavelength
 * against original_max_pos / low_freq_factor and / high_freq_factor); yarn (YaRN: pairs below
 * the dimension where original_max_pos makes beta_fast rotations kept, those above the one of
 * beta_slow rotations divided by factor, a linear ramp between, its ends floored and ceiled when
 * truncate; cos and sin multiplied by the attention factor: attention_factor when given (> 0),
 * else 0.1 ln(factor) + 1, or the ratio of that with mscale and with mscale_all_dim in place of
 * 1 when both are non-zero). */
typedef enum { OR1_ROPE_NONE, OR1_ROPE_LINEAR, OR1_ROPE_LLAMA3, OR1_ROPE_YARN } or1_rope_type;
typedef struct {
    or1_rope_type type;
    double factor, low_freq_factor, high_freq_factor;
    double beta_fast, beta_slow, mscale, mscale_all_dim, attention_factor; /* yarn (attention_factor 0: derived) */
    bool truncate;                                                         /* yarn */
    int original_max_pos;
} or1_rope_scaling;
/* cos/sin tables [max_pos, hd/2] for RoPE with inv_freq = theta^(-2i/hd) under the scaling s
 * (NULL: none), both times its attention factor (the yarn one; 1 for the others). */
void or1_rope_table(float *cos_t, float *sin_t, int max_pos, int hd, float theta, const or1_rope_scaling *s);
/* Rotates n_heads heads of hd dims per row (rotate_half form) at each row's position;
 * inverse=1 applies the transpose (used by backward; with yarn's attention factor in the tables
 * it is not the inverse). */
void or1_rope(float *x, int row_stride, int n_heads, int hd, const int32_t *pos, int T,
              const float *cos_t, const float *sin_t, int inverse);

/* Causal GQA attention over packed sequences. qkv rows hold [q heads | k heads | v heads];
 * out[T, nh*hd]; lse[T, nh] = log-sum-exp of each softmax row (kept for backward). */
void or1_attention(float *out, float *lse, const float *qkv, const int32_t *seq_start, int n_seqs,
                   int nh, int nkv, int hd);
/* Decode attention over a paged KV pool: for each of B rows, one query (qkv row b, already
 * rotated) attends to its prompt's seg[4b+1] keys then its own seg[4b+3] keys. Keys and values
 * are rows of nkv*hd floats of the pools k and v, kept in blocks of `block` rows: the prompt's
 * block ids are blocks[seg[4b]...], the row's own blocks[seg[4b+2]...]. out[B, nh*hd]. Each
 * head's output is the same bits or1_attention gives the same token over the same keys (the same
 * kernels, in the same order). scratch holds or1_attention_decode_scratch(...) floats per OpenMP
 * thread, ctx_cap >= every row's context (the caller sizes it once: no allocation per step). */
void or1_attention_decode(float *out, const float *qkv, int B, const float *k, const float *v, const int32_t *seg,
                          const int32_t *blocks, int block, int nh, int nkv, int hd, float *scratch, int ctx_cap);
size_t or1_attention_decode_scratch(int nh, int nkv, int hd, int ctx_cap);
/* dqkv (overwritten) from dout, recomputing probabilities from lse (no [T x T] matrix). */
void or1_attention_bwd(float *dqkv, const float *dout, const float *qkv, const float *out,
                       const float *lse, const int32_t *seq_start, int n_seqs, int nh, int nkv, int hd);

/* a[T,inter] = silu(g) * u where gu rows are [g | u]. */
void or1_swiglu(float *a, const float *gu, int T, int inter);
/* dgu (overwritten) from da; a (overwritten) gets the forward's silu(g) * u again in the same
 * pass over gu (backward recomputes it rather than keeping it for every layer). */
void or1_swiglu_bwd(float *dgu, float *a, const float *da, const float *gu, int T, int inter);

/* Streaming log-prob + entropy head over vocabulary chunks.
 * For n rows h[n,H] (final hidden states), logits z = h W^T / temperature with W[V,H]:
 * logp[i] = z[tgt[i]] - lse_i, entropy[i] = lse_i - E_p[z]; lse and ez are saved for backward.
 * With wb (W's bf16 copy, else NULL) the logits are or1_matmul_rows_bf16's. */
void or1_head(float *logp, float *entropy, float *lse, float *ez, const float *h, const float *w,
              const or1_bf16 *wb, const int32_t *tgt, int n, int H, int V, float temperature, float *scratch);
/* Given g_logp, g_entropy per row: dh[n,H] (overwritten) and dW[V,H] (accumulated). With wb the
 * logits are recomputed as the forward made them and dh is taken against the bf16 W (w may then
 * be NULL); dW is taken against the fp32 h (the rounding passes the weight gradient straight
 * through). */
void or1_head_bwd(float *dh, float *dw, const float *h, const float *w, const or1_bf16 *wb, const int32_t *tgt,
                  const float *lse, const float *ez, const float *g_logp, const float *g_entropy,
                  int n, int H, int V, float temperature, float *scratch);
/* Floats of scratch or1_head / or1_head_bwd need for n rows of width H. */
long or1_head_scratch(int n, int H);
/* The log-prob of token tok under one row of raw logits at temperature, computed exactly as
 * or1_head computes it from the same logits (the sampler reports this one, so that the rollout's
 * log-probs are the trainer's bits). scratch holds 4096 floats. */
float or1_head_logprob(const float *logits, int V, float temperature, int32_t tok, float *scratch);

/* The sampling settings of one row of logits (one decoding sequence). */
typedef struct {
    float temperature; /* 0: greedy */
    float top_p;       /* 1: off */
    int top_k;         /* 0: off */
    uint64_t seed;     /* the request's seed; with stream (the sample) and counter (the token
                          index) it names the row's random draw */
    int32_t stream, counter;
} or1_sample_row;

/* Samples one token from logits[V] (temperature, top-k, top-p; greedy at temperature 0)
 * with the uniform u in [0,1); returns the token and sets *logp to its log-prob at the
 * temperature before truncation. scratch holds 2*V floats (the probabilities and a list of
 * token ids). O(V) work, no sort: see src/kernels/sample.c. Logits that form no
 * distribution (a NaN or +inf among them, or all -inf) give token 0 and a NaN *logp. */
int32_t or1_sample_token(const float *logits, int V, const or1_sample_row *s, double u, float *logp,
                         float *scratch);

/* AdamW's update of n parameters with moments m, v at step `step` (1-based), in
 * torch.optim.AdamW's order: decoupled decay, moments, bias-corrected update. */
void or1_adamw_update(float *params, float *m, float *v, const float *grads, size_t n, long step, float lr,
                      float beta1, float beta2, float eps, float weight_decay);

#endif
