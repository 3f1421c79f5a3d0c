/* The CUDA backend behind the seam of or1/model.h: memory and the kernels of this folder; in
 * bf16 mode the matmuls and the head use the model's bf16 weights as they are handed in. The
 * decoder, the head's blocking, the optimizer step and the rollout engine are the ones the
 * CPU runs (src/model/decoder.c, src/rollout/engine.c). */
#include "internal.h"

extern "C" {
#include "or1/core.h"
}

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef OR1_NCCL
#include <nccl.h>
#endif

enum { CUDA_HEAD_ROWS = 1024 };

typedef struct {
    or1_backend base;
    or1_cuda *g;
    /* sampling, for B <= rows_cap rows: seeds; floats laid out [temperature | top-p | log-prob]
     * and ints [stream | counter | top-k | next token], B apart, on the device and (but the
     * results) in the host staging */
    uint64_t *seed;
    float *f;
    int32_t *i;
    int rows_cap;
    /* host staging of the sampling rows (no allocation per decode step) */
    uint64_t *h_seed;
    float *h_f;   /* temperatures, then top-p */
    int32_t *h_i; /* streams, counters, then top-k */
#ifdef OR1_NCCL
    ncclComm_t comm; /* the ranks' communicator (NULL until comm_init) */
    int rank, size;
#endif
} cuda_backend;

/* The instance behind be, and its context. */
static cuda_backend *cb(or1_backend *be) { return (cuda_backend *)be; }
static or1_cuda *ctx(or1_backend *be) { return cb(be)->g; }

/* The seam's bf16 weights as CUDA's type (the same 16 bits). */
static const __nv_bfloat16 *bf(const or1_bf16 *wb) { return (const __nv_bfloat16 *)wb; }

static void *cuda_alloc(or1_backend *be, size_t bytes) {
    (void)be;
    return or1_cuda_alloc(bytes ? bytes : 1);
}

static void cuda_release(or1_backend *be, void *p) {
    (void)be;
    if (p) or1_cuda_release(p);
}

static int cuda_upload(or1_backend *be, void *dst, const void *src, size_t bytes) {
    return bytes ? or1_cuda_upload(ctx(be), dst, src, bytes) : 0;
}

static int cuda_download(or1_backend *be, void *dst, const void *src, size_t bytes) {
    return bytes ? or1_cuda_download(ctx(be), dst, src, bytes) : 0;
}

/* Device to device, queued. */
static void cuda_copy(or1_backend *be, void *dst, const void *src, size_t bytes) {
    if (bytes)
        cu_check(ctx(be), cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, ctx(be)->stream), "copy");
}

static void cuda_zero(or1_backend *be, void *p, size_t bytes) { or1_cuda_zero(ctx(be), p, bytes); }

static int cuda_sync(or1_backend *be) { return or1_cuda_sync(ctx(be)); }

/* The model's bf16 weights from its fp32 ones. */
static void cuda_to_bf16(or1_backend *be, or1_bf16 *dst, const float *src, size_t n) {
    if (n) cu_to_bf16(ctx(be), (__nv_bfloat16 *)dst, src, n);
}

static void cuda_matmul(or1_backend *be, float *y, const float *x, const float *w, const or1_bf16 *wb,
                        const float *b, int T, int in, int out) {
    cu_matmul_rows(ctx(be), y, x, w, bf(wb), b, T, in, out, 1.0f);
}

static void cuda_matmul_dx(or1_backend *be, float *dx, const float *dy, const float *w, const or1_bf16 *wb, int T,
                           int in, int out, int acc) {
    cu_matmul_dx(ctx(be), dx, dy, w, bf(wb), T, in, out, acc);
}

static void cuda_matmul_dw(or1_backend *be, float *dw, float *db, const float *dy, const float *x, int T, int in,
                           int out) {
    or1_cuda_matmul_dw(ctx(be), dw, db, dy, x, T, in, out);
}

/* Rows of fp32 src, or of the bf16 table srcb widened. */
static void cuda_gather(or1_backend *be, float *y, const float *src, const or1_bf16 *srcb, const int32_t *idx, int n,
                        int H) {
    if (srcb) cu_embed_bf16(ctx(be), y, bf(srcb), idx, n, H);
    else or1_cuda_embed(ctx(be), y, src, idx, n, H);
}

static void cuda_scatter_add(or1_backend *be, float *dst, const float *src, const int32_t *idx, int n, int H) {
    or1_cuda_embed_bwd(ctx(be), dst, src, idx, n, H);
}

static void cuda_rmsnorm(or1_backend *be, float *y, float *rstd, float *x, const float *res, const float *w, int T,
                         int H, float eps) {
    or1_cuda_rmsnorm(ctx(be), y, rstd, x, res, w, T, H, eps);
}

static void cuda_rmsnorm_bwd(or1_backend *be, float *dx, float *dw, const float *dy, const float *x,
                             const float *rstd, const float *w, int T, int H) {
    or1_cuda_rmsnorm_bwd(ctx(be), dx, dw, dy, x, rstd, w, T, H);
}

static void cuda_rope(or1_backend *be, float *x, int row_stride, int n_heads, int hd, const int32_t *pos, int T,
                      const float *cos_t, const float *sin_t, int inverse) {
    or1_cuda_rope(ctx(be), x, row_stride, n_heads, hd, pos, T, cos_t, sin_t, inverse);
}

static void cuda_head_norm(or1_backend *be, float *y, float *rstd, const float *x, const float *w, int T, int n_heads,
                           int hd, int stride, float eps) {
    or1_cuda_head_norm(ctx(be), y, rstd, x, w, T, n_heads, hd, stride, eps);
}

static void cuda_head_norm_bwd(or1_backend *be, float *d, float *dw, const float *x, const float *rstd, const float *w,
                               int T, int n_heads, int hd, int stride) {
    or1_cuda_head_norm_bwd(ctx(be), d, dw, x, rstd, w, T, n_heads, hd, stride);
}

static void cuda_attention(or1_backend *be, float *out, float *lse, const float *qkv, const int32_t *seq_start,
                           int n_seqs, int T, int max_len, int nh, int nkv, int hd) {
    (void)T;
    or1_cuda_attention(ctx(be), out, lse, qkv, seq_start, n_seqs, max_len, nh, nkv, hd);
}

static void cuda_attention_bwd(or1_backend *be, float *dqkv, const float *dout, const float *qkv, const float *out,
                               const float *lse, const int32_t *seq_start, int n_seqs, int T, int max_len, int nh,
                               int nkv, int hd) {
    or1_cuda_attention_bwd(ctx(be), dqkv, dout, qkv, out, lse, seq_start, n_seqs, T, max_len, nh, nkv, hd);
}

/* A KV pool element from a float: the float itself, or its bf16 rounded to nearest even (as the
 * tensor-core forward rounds the keys and values it stages, so decode reads the same bits). */
template <typename E> __device__ __forceinline__ E kv_elem(float x);
template <> __device__ __forceinline__ float kv_elem<float>(float x) { return x; }
template <> __device__ __forceinline__ __nv_bfloat16 kv_elem<__nv_bfloat16>(float x) { return __float2bfloat16(x); }

/* Row r's rotated key and value go to pool row rows[r], as elements E (float or bf16). */
template <typename E>
__global__ void k_kv_store(E *k, E *v, const int32_t *rows, const float *qkv, int T, int qd, int kvd) {
    size_t n = (size_t)T * kvd, stride = (size_t)qd + 2 * kvd;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        size_t r = i / kvd, d = i % kvd, dst = (size_t)rows[r] * kvd + d;
        k[dst] = kv_elem<E>(qkv[r * stride + qd + d]);
        v[dst] = kv_elem<E>(qkv[r * stride + qd + kvd + d]);
    }
}

/* The pool's element follows the precision (see or1_backend_cuda's kv_bytes). */
static void cuda_kv_store(or1_backend *be, void *k, void *v, const int32_t *rows, const float *qkv, int T, int qd,
                          int kvd) {
    if (T < 1) return;
    unsigned nb = cu_blocks((size_t)T * kvd, 256);
    if (be->kv_bytes == 2)
        k_kv_store<__nv_bfloat16><<<nb, 256, 0, ctx(be)->stream>>>(
            static_cast<__nv_bfloat16 *>(k), static_cast<__nv_bfloat16 *>(v), rows, qkv, T, qd, kvd);
    else
        k_kv_store<float><<<nb, 256, 0, ctx(be)->stream>>>(static_cast<float *>(k), static_cast<float *>(v), rows, qkv,
                                                          T, qd, kvd);
    cu_launched(ctx(be), "kv_store");
}

static void cuda_attention_decode(or1_backend *be, float *out, const float *qkv, int B, const void *k,
                                  const void *v, const int32_t *seg, const int32_t *blocks, int block, int nh, int nkv,
                                  int hd, int ctx_cap) {
    or1_cuda_attention_decode(ctx(be), out, qkv, B, k, v, seg, blocks, block, nh, nkv, hd, ctx_cap);
}

static void cuda_swiglu(or1_backend *be, float *a, const float *gu, int T, int inter) {
    or1_cuda_swiglu(ctx(be), a, gu, T, inter);
}

static void cuda_swiglu_bwd(or1_backend *be, float *dgu, float *a, const float *da, const float *gu, int T,
                            int inter) {
    or1_cuda_swiglu_bwd(ctx(be), dgu, a, da, gu, T, inter);
}

static void cuda_head(or1_backend *be, float *logp, float *entropy, float *lse, float *ez, const float *h,
                      const float *w, const or1_bf16 *wb, const int32_t *tgt, int n, int H, int V, float temperature) {
    cu_head(ctx(be), logp, entropy, lse, ez, h, w, bf(wb), tgt, n, H, V, temperature);
}

static void cuda_head_bwd(or1_backend *be, float *dh, float *dw, const float *h, const float *w, const or1_bf16 *wb,
                          const int32_t *tgt, const float *lse, const float *ez, const float *g_logp,
                          const float *g_entropy, int n, int H, int V, float temperature) {
    cu_head_bwd(ctx(be), dh, dw, h, w, bf(wb), tgt, lse, ez, g_logp, g_entropy, n, H, V, temperature);
}

static void cuda_adamw(or1_backend *be, float *params, float *m, float *v, const float *grads, size_t n, long step,
                       const or1_adamw_cfg *c) {
    or1_cuda_adamw(ctx(be), params, m, v, grads, n, step, c);
}

static double cuda_grad_norm(or1_backend *be, const float *grads, size_t n) {
    return or1_cuda_grad_norm(ctx(be), grads, n);
}

static void cuda_clip(or1_backend *be, float *grads, size_t n, double norm, double max_norm) {
    or1_cuda_clip(ctx(be), grads, n, norm, max_norm);
}

/* splitmix64's finaliser (as src/core/rng.c). */
__device__ __forceinline__ uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Maximum (sign +1) or minimum (sign -1) over the block; sh holds 32 doubles. */
__device__ float block_extreme(float v, float sign, double *sh) {
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nw = blockDim.x / 32;
    float x = sign * v;
    for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
    __syncthreads();
    if (lane == 0) sh[warp] = x;
    __syncthreads();
    float r = (float)sh[0];
    for (int w = 1; w < nw; w++) r = fmaxf(r, (float)sh[w]);
    return sign * r;
}

/* Probability mass (unnormalised, exp(zt - m)) and count of the tokens with zt >= t. */
__device__ void mass_above(const float *z, int V, float inv, float m, float t, double *sh, double *mass, double *count) {
    double s = 0, c = 0;
    for (int v = threadIdx.x; v < V; v += blockDim.x) {
        float zt = z[v] * inv;
        if (zt >= t) s += exp((double)(zt - m)), c += 1;
    }
    *mass = block_sum(s, sh);
    *count = block_sum(c, sh);
}

/* The lowest logit (at the temperature) a token may have to stay in the row's candidate set:
 * top-k keeps the k largest, then top-p the smallest head of those whose probability mass
 * reaches top_p (Hugging Face's order). Found by bisection over logit values, so tokens tied
 * at the boundary all stay. -INFINITY when nothing is truncated. */
__device__ float candidate_threshold(const float *z, int V, float inv, float m, float zmin, int top_k, float top_p,
                                     double *sh) {
    float thr = -INFINITY;
    double mass, count;
    if (top_k > 0 && top_k < V) {
        float lo = zmin, hi = m;
        for (int it = 0; it < 48 && lo < hi; it++) {
            float mid = lo + (hi - lo) * 0.5f;
            if (mid <= lo || mid >= hi) break;
            mass_above(z, V, inv, m, mid, sh, &mass, &count);
            if (count >= top_k) lo = mid;
            else hi = mid;
        }
        thr = lo;
    }
    if (top_p < 1) {
        double total;
        mass_above(z, V, inv, m, thr, sh, &total, &count);
        float lo = thr > zmin ? thr : zmin, hi = m;
        mass_above(z, V, inv, m, hi, sh, &mass, &count);
        if (mass >= top_p * total) return hi;
        for (int it = 0; it < 48 && lo < hi; it++) {
            float mid = lo + (hi - lo) * 0.5f;
            if (mid <= lo || mid >= hi) break;
            mass_above(z, V, inv, m, mid, sh, &mass, &count);
            if (mass >= top_p * total) lo = mid;
            else hi = mid;
        }
        thr = lo;
    }
    return thr;
}

/* One block per row: z/temperature, the candidate set of top-k/top-p, and the argmax over the
 * candidates of z/temperature plus Gumbel noise from (seed, stream, counter, token) of the row
 * (an exact draw from the truncated, renormalised softmax), or of z when greedy. Writes the
 * token and its log-prob at the temperature before truncation, folded as the head folds it
 * (head_fold_chunk over the head's chunks, each logit times the same 1/temperature), so it is
 * the trainer's bits. invs: 1/temperature per row, 1 when greedy (made on the host as the
 * head's). */
__global__ void k_sample(int32_t *next, float *logp, const float *logits, int V, const float *temps,
                         const float *invs, const float *top_ps, const int32_t *top_ks, const uint64_t *seed,
                         const int32_t *stream, const int32_t *counter) {
    __shared__ double sh[32];
    __shared__ float sv[32];
    __shared__ int si[32];
    int b = blockIdx.x, lane = threadIdx.x % 32, warp = threadIdx.x / 32, nw = blockDim.x / 32;
    const float *z = logits + (size_t)b * V;
    float temperature = temps[b], inv = invs[b];
    float m = -INFINITY, zmin = INFINITY;
    for (int v = threadIdx.x; v < V; v += blockDim.x) m = fmaxf(m, z[v] * inv), zmin = fminf(zmin, z[v] * inv);
    m = block_extreme(m, 1.0f, sh);
    zmin = block_extreme(zmin, -1.0f, sh);
    float thr = temperature > 0 ? candidate_threshold(z, V, inv, m, zmin, top_ks[b], top_ps[b], sh) : -INFINITY;
    uint64_t key = mix64(mix64(seed[b] + 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)stream[b] + 0x632be59bd9b4e019ULL));
    key = mix64(key ^ ((uint64_t)counter[b] * 0x9e3779b97f4a7c15ULL));
    float best = -INFINITY;
    int arg = V;
    for (int v = threadIdx.x; v < V; v += blockDim.x) {
        float zt = z[v] * inv, score = zt;
        if (zt < thr) continue;
        if (temperature > 0) {
            double u = ((double)(mix64(key ^ (uint64_t)v) >> 11) + 0.5) * 0x1.0p-53;
            score = zt - (float)log(-log(u));
        }
        if (score > best || (score == best && v < arg)) best = score, arg = v;
    }
    for (int o = 16; o > 0; o >>= 1) {
        float ob = __shfl_xor_sync(0xffffffffu, best, o);
        int oa = __shfl_xor_sync(0xffffffffu, arg, o);
        if (ob > best || (ob == best && oa < arg)) best = ob, arg = oa;
    }
    __syncthreads();
    if (lane == 0) sv[warp] = best, si[warp] = arg;
    __syncthreads();
    float bb = sv[0];
    int a = si[0];
    for (int w = 1; w < nw; w++)
        if (sv[w] > bb || (sv[w] == bb && si[w] < a)) bb = sv[w], a = si[w];
    head_run r = {-INFINITY, 0, 0, 0};
    for (int c0 = 0; c0 < V; c0 += HEAD_CHUNK)
        head_fold_chunk(&r, z + c0, inv, V - c0 < HEAD_CHUNK ? V - c0 : HEAD_CHUNK, c0, a, sv, sh);
    if (threadIdx.x) return;
    next[b] = a;
    logp[b] = (float)(r.zt - head_lse(&r));
}

/* Ensures the sampling buffers hold B rows. */
static int sample_reserve(cuda_backend *c, int B) {
    if (B <= c->rows_cap) return 0;
    or1_cuda_sync(c->g);
    void *old[] = {c->seed, c->f, c->i};
    for (size_t k = 0; k < sizeof old / sizeof *old; k++)
        if (old[k]) or1_cuda_release(old[k]);
    size_t n = (size_t)B;
    c->seed = (uint64_t *)or1_cuda_alloc(n * sizeof(uint64_t));
    c->f = (float *)or1_cuda_alloc(4 * n * sizeof(float));
    c->i = (int32_t *)or1_cuda_alloc(4 * n * sizeof(int32_t));
    free(c->h_seed), free(c->h_f), free(c->h_i);
    c->h_seed = (uint64_t *)or1_malloc(n * sizeof *c->h_seed);
    c->h_f = (float *)or1_malloc(3 * n * sizeof *c->h_f);
    c->h_i = (int32_t *)or1_malloc(3 * n * sizeof *c->h_i);
    c->rows_cap = c->seed && c->f && c->i ? B : 0;
    return c->rows_cap ? 0 : or1_fail_ctx("cuda: sampling buffers for %d rows", B);
}

/* Uploads the rows' settings, draws on the device, brings back tokens and log-probs. */
static int cuda_sample(or1_backend *be, int32_t *next, float *logp, const float *logits, int B, int V,
                       const or1_sample_row *rows) {
    cuda_backend *c = cb(be);
    if (sample_reserve(c, B)) return -1;
    uint64_t *seed = c->h_seed;
    float *f = c->h_f;
    int32_t *in = c->h_i;
    for (int b = 0; b < B; b++) {
        const or1_sample_row *r = &rows[b];
        seed[b] = r->seed, f[b] = r->temperature, f[B + b] = r->top_p;
        f[2 * B + b] = 1.0f / (r->temperature > 0 ? r->temperature : 1.0f); /* as the head's 1/temperature */
        in[b] = r->stream, in[B + b] = r->counter, in[2 * B + b] = r->top_k;
    }
    /* three copies: the seeds, the floats (temperature, top-p, 1/temperature), the ints (stream,
     * counter, top-k) */
    int rc = or1_cuda_upload(c->g, c->seed, seed, (size_t)B * sizeof *seed) ||
             or1_cuda_upload(c->g, c->f, f, (size_t)3 * B * sizeof *f) ||
             or1_cuda_upload(c->g, c->i, in, (size_t)3 * B * sizeof *in);
    if (rc) return -1;
    float *d_logp = c->f + 3 * B;
    int32_t *d_next = c->i + 3 * B;
    k_sample<<<B, HEAD_THREADS, 0, c->g->stream>>>(d_next, d_logp, logits, V, c->f, c->f + 2 * B, c->f + B,
                                                   c->i + 2 * B, c->seed, c->i, c->i + B);
    cu_launched(c->g, "sample");
    /* the only waits of a decode step: the new tokens and their log-probs coming back */
    if (or1_cuda_download(c->g, next, d_next, (size_t)B * sizeof(int32_t))) return -1;
    return or1_cuda_download(c->g, logp, d_logp, (size_t)B * sizeof(float));
}

#ifdef OR1_NCCL
/* A failed NCCL call as an or1 error (the id of the call names it). */
static int nccl_ok(ncclResult_t r, const char *what) {
    return r == ncclSuccess ? 0 : or1_fail("cuda: %s: %s", what, ncclGetErrorString(r));
}

/* Rank 0's unique id for the communicator. */
static int cuda_comm_id(or1_backend *be, void *id, size_t cap) {
    (void)be;
    ncclUniqueId u;
    if (cap < sizeof u) return or1_fail("cuda: NCCL id needs %zu bytes", sizeof u);
    if (nccl_ok(ncclGetUniqueId(&u), "ncclGetUniqueId")) return -1;
    memcpy(id, &u, sizeof u);
    return (int)sizeof u;
}

/* Joins the communicator of size ranks (a collective over the ranks). */
static int cuda_comm_init(or1_backend *be, const void *id, int rank, int size) {
    cuda_backend *c = cb(be);
    ncclUniqueId u;
    memcpy(&u, id, sizeof u);
    if (nccl_ok(ncclCommInitRank(&c->comm, size, u, rank), "ncclCommInitRank")) return -1;
    c->rank = rank, c->size = size;
    return 0;
}

/* In-place sum over the ranks on the backend's stream. */
static int cuda_allreduce(or1_backend *be, float *buf, size_t n) {
    cuda_backend *c = cb(be);
    if (nccl_ok(ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, c->comm, c->g->stream), "ncclAllReduce")) return -1;
    return or1_cuda_sync(c->g);
}

/* Shards of different sizes: one ncclReduce per rank to that rank, in one group. */
static int cuda_reduce_scatter(or1_backend *be, float *buf, const size_t *starts) {
    cuda_backend *c = cb(be);
    int rc = nccl_ok(ncclGroupStart(), "ncclGroupStart");
    for (int r = 0; r < c->size && !rc; r++)
        rc = nccl_ok(ncclReduce(buf + starts[r], buf + starts[r], starts[r + 1] - starts[r], ncclFloat, ncclSum, r,
                                c->comm, c->g->stream),
                     "ncclReduce");
    if (nccl_ok(ncclGroupEnd(), "ncclGroupEnd")) rc = -1;
    return rc ? -1 : or1_cuda_sync(c->g);
}

/* Each rank broadcasts its shard (as bytes: fp32 or bf16 elements alike), in one group. */
static int cuda_allgather(or1_backend *be, void *buf, size_t elem, const size_t *starts) {
    cuda_backend *c = cb(be);
    char *b = (char *)buf;
    int rc = nccl_ok(ncclGroupStart(), "ncclGroupStart");
    for (int r = 0; r < c->size && !rc; r++)
        rc = nccl_ok(ncclBroadcast(b + starts[r] * elem, b + starts[r] * elem, (starts[r + 1] - starts[r]) * elem,
                                   ncclChar, r, c->comm, c->g->stream),
                     "ncclBroadcast");
    if (nccl_ok(ncclGroupEnd(), "ncclGroupEnd")) rc = -1;
    return rc ? -1 : or1_cuda_sync(c->g);
}
#endif

/* Releases the sampling buffers, the communicator and the context. */
static void cuda_destroy(or1_backend *be) {
    cuda_backend *c = cb(be);
    or1_cuda_sync(c->g);
#ifdef OR1_NCCL
    if (c->comm) ncclCommDestroy(c->comm);
#endif
    free(c->h_seed), free(c->h_f), free(c->h_i);
    void *bufs[] = {c->seed, c->f, c->i};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        if (bufs[i]) or1_cuda_release(bufs[i]);
    or1_cuda_free(c->g);
    free(c);
}

/* The operation table, by designated initialisers (C++20) in the seam's field order; the
 * collectives only where NCCL was found. */
static const or1_backend_ops CUDA_OPS = {
    .name = "cuda",
    .host_memory = false,
    .head_rows = CUDA_HEAD_ROWS,
    .alloc = cuda_alloc,
    .release = cuda_release,
    .upload = cuda_upload,
    .download = cuda_download,
    .copy = cuda_copy,
    .zero = cuda_zero,
    .sync = cuda_sync,
    .to_bf16 = cuda_to_bf16,
    .matmul_rows = cuda_matmul,
    .matmul_dx = cuda_matmul_dx,
    .matmul_dw = cuda_matmul_dw,
    .gather = cuda_gather,
    .scatter_add = cuda_scatter_add,
    .rmsnorm = cuda_rmsnorm,
    .rmsnorm_bwd = cuda_rmsnorm_bwd,
    .rope = cuda_rope,
    .head_norm = cuda_head_norm,
    .head_norm_bwd = cuda_head_norm_bwd,
    .attention = cuda_attention,
    .attention_bwd = cuda_attention_bwd,
    .kv_store = cuda_kv_store,
    .attention_decode = cuda_attention_decode,
    .swiglu = cuda_swiglu,
    .swiglu_bwd = cuda_swiglu_bwd,
    .head = cuda_head,
    .head_bwd = cuda_head_bwd,
    .adamw = cuda_adamw,
    .grad_norm = cuda_grad_norm,
    .clip = cuda_clip,
    .sample = cuda_sample,
#ifdef OR1_NCCL
    .comm_id = cuda_comm_id,
    .comm_init = cuda_comm_init,
    .allreduce = cuda_allreduce,
    .reduce_scatter = cuda_reduce_scatter,
    .allgather = cuda_allgather,
#else
    .comm_id = NULL,
    .comm_init = NULL,
    .allreduce = NULL,
    .reduce_scatter = NULL,
    .allgather = NULL,
#endif
    .destroy = cuda_destroy,
};

/* A backend on GPU 0 with matmuls in prec. */
or1_backend *or1_backend_cuda(or1_cuda_prec prec) {
    or1_cuda *g = or1_cuda_new(prec);
    if (!g) return NULL;
    cuda_backend *c = (cuda_backend *)or1_calloc(1, sizeof *c);
    c->base.ops = &CUDA_OPS;
    c->base.bf16 = prec == OR1_CUDA_BF16;
    c->base.kv_bytes = prec == OR1_CUDA_BF16 ? 2 : 4; /* bf16: the tensor-core decode's pool */
    c->g = g;
    return &c->base;
}

/* The context's device description. */
const char *or1_backend_cuda_device(or1_backend *be) { return or1_cuda_device_name(ctx(be)); }
