/* The streaming log-prob + entropy head on the GPU: logits of a vocabulary chunk by the
 * batch-invariant matmul (cu_matmul_rows, as the rollout's logits) into the context's scratch,
 * then one block per row folds the chunk into a running (max, sum exp, sum exp*z) kept in
 * double (head_fold_chunk, which the sampler runs too). Backward recomputes each chunk, turns it
 * into dz in place and feeds two GEMMs (dh, dW). */
#include "internal.h"

enum { CHUNK = HEAD_CHUNK, THREADS = HEAD_THREADS };

/* state rows: [m, s, sz, z_target] per row, in double. */
__global__ void k_head_init(double *st, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) st[4 * i] = -INFINITY, st[4 * i + 1] = 0, st[4 * i + 2] = 0, st[4 * i + 3] = 0;
}

/* Folds chunk [c0, c0+vc) of row blockIdx.x (rows vc apart) into its running state. */
__global__ void k_head_fold(double *st, const float *z, const int32_t *tgt, int vc, int c0) {
    __shared__ float shf[32];
    __shared__ double shd[32];
    int i = blockIdx.x;
    head_run r = {st[4 * i], st[4 * i + 1], st[4 * i + 2], st[4 * i + 3]};
    head_fold_chunk(&r, z + (size_t)i * vc, 1.0f, vc, c0, tgt[i], shf, shd);
    if (threadIdx.x) return;
    st[4 * i] = r.m, st[4 * i + 1] = r.s, st[4 * i + 2] = r.sz, st[4 * i + 3] = r.zt;
}

/* lse, E[z], log-prob and entropy of each row from its running state. */
__global__ void k_head_finish(float *logp, float *ent, float *lse, float *ez, const double *st, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    head_run r = {st[4 * i], st[4 * i + 1], st[4 * i + 2], st[4 * i + 3]};
    double l = head_lse(&r), e = r.sz / r.s;
    lse[i] = (float)l;
    ez[i] = (float)e;
    logp[i] = (float)(r.zt - l);
    ent[i] = (float)(l - e);
}

/* Scratch for an [n x CHUNK] block and 4 doubles of state per row. */
static int head_reserve(or1_cuda *g, int n) { return cu_reserve(g, (size_t)n * CHUNK, (size_t)4 * n); }

/* The forward with an optional bf16 copy wb of the head weight (used by bf16 matmuls). */
void cu_head(or1_cuda *g, float *logp, float *entropy, float *lse, float *ez, const float *h, const float *w,
             const __nv_bfloat16 *wb, const int32_t *tgt, int n, int H, int V, float temperature) {
    if (n <= 0 || head_reserve(g, n)) return;
    float inv_t = 1.0f / temperature;
    k_head_init<<<(n + 255) / 256, 256, 0, g->stream>>>(g->red, n);
    for (int c0 = 0; c0 < V; c0 += CHUNK) {
        int vc = V - c0 < CHUNK ? V - c0 : CHUNK;
        cu_matmul_rows(g, g->scratch, h, w ? w + (size_t)c0 * H : NULL, wb ? wb + (size_t)c0 * H : NULL, NULL, n, H,
                       vc, inv_t);
        k_head_fold<<<n, THREADS, 0, g->stream>>>(g->red, g->scratch, tgt, vc, c0);
    }
    k_head_finish<<<(n + 255) / 256, 256, 0, g->stream>>>(logp, entropy, lse, ez, g->red, n);
    cu_launched(g, "head");
}

/* Public head forward: weights cast on the fly in bf16 mode. */
void or1_cuda_head(or1_cuda *g, float *logp, float *entropy, float *lse, float *ez, const float *h,
                   const float *w, const int32_t *tgt, int n, int H, int V, float temperature) {
    cu_head(g, logp, entropy, lse, ez, h, w, NULL, tgt, n, H, V, temperature);
}

/* dz = (g_lp*(onehot - p) - g_H*p*(z - E[z])) / temperature, in place over the chunk. */
__global__ void k_head_dz(float *z, const int32_t *tgt, const float *lse, const float *ez, const float *glp,
                          const float *gH, int n, int vc, int c0, float inv_t) {
    size_t total = (size_t)n * vc;
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < total; k += (size_t)gridDim.x * blockDim.x) {
        int i = (int)(k / vc), v = (int)(k % vc);
        float p = __expf(z[k] - lse[i]), d = (-glp[i] * p - gH[i] * p * (z[k] - ez[i])) * inv_t;
        if (tgt[i] == c0 + v) d += glp[i] * inv_t;
        z[k] = d;
    }
}

/* The backward with an optional bf16 copy wb of the head weight. */
void cu_head_bwd(or1_cuda *g, float *dh, float *dw, const float *h, const float *w, const __nv_bfloat16 *wb,
                 const int32_t *tgt, const float *lse, const float *ez, const float *g_logp, const float *g_entropy,
                 int n, int H, int V, float temperature) {
    if (n <= 0 || head_reserve(g, n)) return;
    float inv_t = 1.0f / temperature;
    or1_cuda_zero(g, dh, (size_t)n * H * sizeof(float));
    for (int c0 = 0; c0 < V; c0 += CHUNK) {
        int vc = V - c0 < CHUNK ? V - c0 : CHUNK;
        const float *wc = w ? w + (size_t)c0 * H : NULL;
        const __nv_bfloat16 *wbc = wb ? wb + (size_t)c0 * H : NULL;
        cu_gemm_ex(g, true, false, vc, n, H, inv_t, wc, wbc, H, h, NULL, H, 0.0f, g->scratch, vc);
        k_head_dz<<<cu_blocks((size_t)n * vc, 256), 256, 0, g->stream>>>(g->scratch, tgt, lse, ez, g_logp,
                                                                        g_entropy, n, vc, c0, inv_t);
        /* dh[n,H] += dz[n,vc] W_c[vc,H];  dW_c[vc,H] += dz^T h */
        cu_gemm_ex(g, false, false, H, n, vc, 1.0f, wc, wbc, H, g->scratch, NULL, vc, 1.0f, dh, H);
        cu_gemm(g, false, true, H, vc, n, 1.0f, h, H, g->scratch, vc, 1.0f, dw + (size_t)c0 * H, H);
    }
    cu_launched(g, "head_bwd");
}

/* Public head backward: weights cast on the fly in bf16 mode. */
void or1_cuda_head_bwd(or1_cuda *g, float *dh, float *dw, const float *h, const float *w, const int32_t *tgt,
                       const float *lse, const float *ez, const float *g_logp, const float *g_entropy, int n,
                       int H, int V, float temperature) {
    cu_head_bwd(g, dh, dw, h, w, NULL, tgt, lse, ez, g_logp, g_entropy, n, H, V, temperature);
}
