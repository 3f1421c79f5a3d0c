/* The streaming log-prob + entropy head on the GPU: logits of a vocabulary chunk by one
 * GEMM into the context's scratch, then one block per row folds the chunk into a running
 * (max, sum exp, sum exp*z) kept in double, as the CPU head does. Backward recomputes each
 * chunk, turns it into dz in place and feeds two GEMMs (dh, dW). */
#include "internal.h"

#include <math.h>

enum { CHUNK = 16384, THREADS = 256 };

/* Block-wide max and sum helpers over THREADS threads. */
__device__ float block_max_f(float v, float *sh) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    __syncthreads();
    if (threadIdx.x % 32 == 0) sh[threadIdx.x / 32] = v;
    __syncthreads();
    float m = sh[0];
    for (int w = 1; w < THREADS / 32; w++) m = fmaxf(m, sh[w]);
    return m;
}

/* Block-wide sum in double over THREADS threads (valid in every thread). */
__device__ double block_sum_d(double v, double *sh) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    __syncthreads();
    if (threadIdx.x % 32 == 0) sh[threadIdx.x / 32] = v;
    __syncthreads();
    double s = 0;
    for (int w = 0; w < THREADS / 32; w++) s += sh[w];
    return s;
}

/* state rows: [m, s, sz, z_target] per row, in double. */
__global__ void k_head_init(double *st, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) st[4 * i] = -INFINITY, st[4 * i + 1] = 0, st[4 * i + 2] = 0, st[4 * i + 3] = 0;
}

/* Folds chunk [c0, c0+vc) of row blockIdx.x into its running state. */
__global__ void k_head_fold(double *st, const float *z, const int32_t *tgt, int vc, int c0) {
    __shared__ float shf[32];
    __shared__ double shd[32];
    int i = blockIdx.x;
    const float *zr = z + (size_t)i * vc;
    float cm = -INFINITY;
    for (int v = threadIdx.x; v < vc; v += THREADS) cm = fmaxf(cm, zr[v]);
    cm = block_max_f(cm, shf);
    double m = st[4 * i], nm = cm > m ? cm : m, a = 0, b = 0;
    for (int v = threadIdx.x; v < vc; v += THREADS) {
        double e = exp((double)zr[v] - nm);
        a += e;
        b += e * zr[v];
    }
    a = block_sum_d(a, shd);
    b = block_sum_d(b, shd);
    if (threadIdx.x) return;
    double scale = exp(m - nm);
    st[4 * i + 1] = st[4 * i + 1] * scale + a;
    st[4 * i + 2] = st[4 * i + 2] * scale + b;
    st[4 * i] = nm;
    int t = tgt[i];
    if (t >= c0 && t < c0 + vc) st[4 * i + 3] = zr[t - c0];
}

/* lse, E[z], log-prob and entropy of each row from its running state. */
__global__ void k_head_finish(float *logp, float *ent, float *lse, float *ez, const double *st, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double l = st[4 * i] + log(st[4 * i + 1]), e = st[4 * i + 2] / st[4 * i + 1];
    lse[i] = (float)l;
    ez[i] = (float)e;
    logp[i] = (float)(st[4 * i + 3] - l);
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
        cu_gemm_ex(g, true, false, vc, n, H, inv_t, w ? w + (size_t)c0 * H : NULL, wb ? wb + (size_t)c0 * H : NULL,
                   H, h, NULL, H, 0.0f, g->scratch, vc);
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
