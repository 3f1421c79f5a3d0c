/* Row- and element-wise kernels: embedding, residual add, RMSNorm, RoPE, SwiGLU, AdamW,
 * gradient norm, column sums. Same formulas as src/kernels/cpu.c. */
#include "internal.h"

#include <math.h>

#define GRID_STRIDE(i, n) \
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

/* Gathers embedding rows, one thread per element. */
__global__ void k_embed(float *x, const float *emb, const int32_t *ids, size_t T, int H) {
    GRID_STRIDE(i, T * H) x[i] = emb[(size_t)ids[i / H] * H + i % H];
}

/* Launches the gather. */
void or1_cuda_embed(or1_cuda *g, float *x, const float *emb, const int32_t *ids, int T, int H) {
    k_embed<<<cu_blocks((size_t)T * H, 256), 256, 0, g->stream>>>(x, emb, ids, (size_t)T, H);
    cu_launched(g, "embed");
}

/* Gathers rows of a bf16 table widened to fp32, one thread per element. */
__global__ void k_embed_bf16(float *x, const __nv_bfloat16 *emb, const int32_t *ids, size_t T, int H) {
    GRID_STRIDE(i, T * H) x[i] = __bfloat162float(emb[(size_t)ids[i / H] * H + i % H]);
}

/* Launches the bf16 gather. */
void cu_embed_bf16(or1_cuda *g, float *x, const __nv_bfloat16 *emb, const int32_t *ids, int T, int H) {
    k_embed_bf16<<<cu_blocks((size_t)T * H, 256), 256, 0, g->stream>>>(x, emb, ids, (size_t)T, H);
    cu_launched(g, "embed_bf16");
}

/* Scatter-add: repeated ids add through atomics. */
__global__ void k_embed_bwd(float *demb, const float *dx, const int32_t *ids, size_t T, int H) {
    GRID_STRIDE(i, T * H) atomicAdd(&demb[(size_t)ids[i / H] * H + i % H], dx[i]);
}

/* Launches the scatter-add. */
void or1_cuda_embed_bwd(or1_cuda *g, float *demb, const float *dx, const int32_t *ids, int T, int H) {
    k_embed_bwd<<<cu_blocks((size_t)T * H, 256), 256, 0, g->stream>>>(demb, dx, ids, (size_t)T, H);
    cu_launched(g, "embed_bwd");
}

/* One block per row: the residual res (if any) added into x, rstd from the mean square, then the
 * scaled copy (each thread reads back only the elements it updated). */
__global__ void k_rmsnorm(float *y, float *rstd, float *x, const float *res, const float *w, int H, float eps) {
    __shared__ float sh[32];
    float *xr = x + (size_t)blockIdx.x * H, *yr = y + (size_t)blockIdx.x * H, s = 0;
    if (res)
        for (int i = threadIdx.x; i < H; i += blockDim.x) xr[i] += res[(size_t)blockIdx.x * H + i];
    for (int i = threadIdx.x; i < H; i += blockDim.x) s += xr[i] * xr[i];
    float r = rsqrtf(block_sum(s, sh) / (float)H + eps);
    if (threadIdx.x == 0) rstd[blockIdx.x] = r;
    for (int i = threadIdx.x; i < H; i += blockDim.x) yr[i] = xr[i] * r * w[i];
}

/* One 256-thread block per token. */
void or1_cuda_rmsnorm(or1_cuda *g, float *y, float *rstd, float *x, const float *res, const float *w, int T, int H,
                      float eps) {
    if (T <= 0) return;
    k_rmsnorm<<<T, 256, 0, g->stream>>>(y, rstd, x, res, w, H, eps);
    cu_launched(g, "rmsnorm");
}

/* dx += r*(dy*w) - x*r^3*sum(dy*w*x)/H, one block per row. */
__global__ void k_rmsnorm_bwd(float *dx, const float *dy, const float *x, const float *rstd, const float *w,
                              int H) {
    __shared__ float sh[32];
    size_t off = (size_t)blockIdx.x * H;
    float s = 0, r = rstd[blockIdx.x];
    for (int i = threadIdx.x; i < H; i += blockDim.x) s += dy[off + i] * w[i] * x[off + i];
    float c = r * r * r * block_sum(s, sh) / (float)H;
    for (int i = threadIdx.x; i < H; i += blockDim.x) dx[off + i] += r * dy[off + i] * w[i] - c * x[off + i];
}

/* dx per row, then dw by column sums of dy * x * rstd. */
void or1_cuda_rmsnorm_bwd(or1_cuda *g, float *dx, float *dw, const float *dy, const float *x,
                          const float *rstd, const float *w, int T, int H) {
    if (T <= 0) return;
    k_rmsnorm_bwd<<<T, 256, 0, g->stream>>>(dx, dy, x, rstd, w, H);
    cu_launched(g, "rmsnorm_bwd");
    cu_colsum(g, dw, dy, x, rstd, T, H);
}

enum { CS_COLS = 32, CS_ROWS = 8, CS_CHUNKS = 128 };

/* Partial column sums over a strided set of rows, reduced in shared memory, one atomic add
 * per (block, column). */
__global__ void k_colsum(float *acc, const float *a, const float *b, const float *scale, int T, int n) {
    __shared__ float sh[CS_ROWS][CS_COLS];
    int j = blockIdx.x * CS_COLS + threadIdx.x;
    float s = 0;
    if (j < n)
        for (int t = blockIdx.y * CS_ROWS + threadIdx.y; t < T; t += CS_ROWS * gridDim.y) {
            size_t o = (size_t)t * n + j;
            s += b ? a[o] * b[o] * scale[t] : a[o];
        }
    sh[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y || j >= n) return;
    for (int r = 1; r < CS_ROWS; r++) s += sh[r][threadIdx.x];
    atomicAdd(&acc[j], s);
}

/* Grid: 32-column tiles x up to 128 row chunks. */
void cu_colsum(or1_cuda *g, float *acc, const float *a, const float *b, const float *scale, int T, int n) {
    int chunks = (T + CS_ROWS - 1) / CS_ROWS;
    dim3 grid((n + CS_COLS - 1) / CS_COLS, chunks < CS_CHUNKS ? (chunks ? chunks : 1) : CS_CHUNKS);
    k_colsum<<<grid, dim3(CS_COLS, CS_ROWS), 0, g->stream>>>(acc, a, b, scale, T, n);
    cu_launched(g, "colsum");
}

/* One thread per (token, head, pair i): rotates (i, i + hd/2). */
__global__ void k_rope(float *x, int row_stride, int n_heads, int hd, const int32_t *pos, int T,
                       const float *cos_t, const float *sin_t, float sgn) {
    int half = hd / 2;
    size_t n = (size_t)T * n_heads * half;
    GRID_STRIDE(k, n) {
        int i = (int)(k % half), h = (int)(k / half % n_heads);
        size_t t = k / half / n_heads;
        float c = cos_t[(size_t)pos[t] * half + i], s = sin_t[(size_t)pos[t] * half + i];
        float *v = x + t * row_stride + (size_t)h * hd;
        float a = v[i], b = v[i + half];
        v[i] = a * c - sgn * b * s;
        v[i + half] = b * c + sgn * a * s;
    }
}

/* Launches one thread per rotated pair. */
void or1_cuda_rope(or1_cuda *g, float *x, int row_stride, int n_heads, int hd, const int32_t *pos, int T,
                   const float *cos_t, const float *sin_t, int inverse) {
    size_t n = (size_t)T * n_heads * (hd / 2);
    k_rope<<<cu_blocks(n, 256), 256, 0, g->stream>>>(x, row_stride, n_heads, hd, pos, T, cos_t, sin_t,
                                                     inverse ? -1.0f : 1.0f);
    cu_launched(g, "rope");
}

/* Sum over the 32 lanes of a warp (every lane gets it). */
__device__ __forceinline__ float lane_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* One warp per (token, head): the head's RMS by a warp sum, then the scaled copy (each lane
 * writes only the elements it read, so y may be x). */
__global__ void k_head_norm(float *y, float *rstd, const float *x, const float *w, int T, int nh, int hd, int stride,
                            float eps) {
    size_t wi = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (wi >= (size_t)T * nh) return;
    size_t at = wi / nh * (size_t)stride + wi % nh * (size_t)hd;
    float s = 0;
    for (int i = lane; i < hd; i += 32) s += x[at + i] * x[at + i];
    float r = rsqrtf(lane_sum(s) / (float)hd + eps);
    if (lane == 0) rstd[wi] = r;
    for (int i = lane; i < hd; i += 32) y[at + i] = x[at + i] * r * w[i];
}

/* Launches one warp per (token, head). */
void or1_cuda_head_norm(or1_cuda *g, float *y, float *rstd, const float *x, const float *w, int T, int n_heads, int hd,
                        int stride, float eps) {
    size_t threads = (size_t)T * n_heads * 32;
    if (!threads) return;
    k_head_norm<<<cu_blocks(threads, 256), 256, 0, g->stream>>>(y, rstd, x, w, T, n_heads, hd, stride, eps);
    cu_launched(g, "head_norm");
}

/* One warp per (token, head): dx = r*dy*w - x*r^3*sum(dy*w*x)/hd in place of dy, and the weight
 * gradient dy*x*r added into dw through atomics. */
__global__ void k_head_norm_bwd(float *d, float *dw, const float *x, const float *rstd, const float *w, int T, int nh,
                                int hd, int stride) {
    size_t wi = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (wi >= (size_t)T * nh) return;
    size_t at = wi / nh * (size_t)stride + wi % nh * (size_t)hd;
    float s = 0, r = rstd[wi];
    for (int i = lane; i < hd; i += 32) s += d[at + i] * w[i] * x[at + i];
    float c = r * r * r * lane_sum(s) / (float)hd;
    for (int i = lane; i < hd; i += 32) {
        float dy = d[at + i];
        atomicAdd(&dw[i], dy * x[at + i] * r);
        d[at + i] = r * dy * w[i] - c * x[at + i];
    }
}

/* Launches one warp per (token, head). */
void or1_cuda_head_norm_bwd(or1_cuda *g, float *d, float *dw, const float *x, const float *rstd, const float *w, int T,
                            int n_heads, int hd, int stride) {
    size_t threads = (size_t)T * n_heads * 32;
    if (!threads) return;
    k_head_norm_bwd<<<cu_blocks(threads, 256), 256, 0, g->stream>>>(d, dw, x, rstd, w, T, n_heads, hd, stride);
    cu_launched(g, "head_norm_bwd");
}

/* a = silu(g) * u, one thread per element. */
__global__ void k_swiglu(float *a, const float *gu, size_t T, int inter) {
    GRID_STRIDE(k, T * inter) {
        size_t t = k / inter, i = k % inter;
        float gv = gu[t * 2 * inter + i], u = gu[t * 2 * inter + inter + i];
        a[k] = gv / (1.0f + expf(-gv)) * u;
    }
}

/* Launches the SwiGLU forward. */
void or1_cuda_swiglu(or1_cuda *g, float *a, const float *gu, int T, int inter) {
    k_swiglu<<<cu_blocks((size_t)T * inter, 256), 256, 0, g->stream>>>(a, gu, (size_t)T, inter);
    cu_launched(g, "swiglu");
}

/* dg and du of silu(g) * u, and the forward's a again, one thread per element. */
__global__ void k_swiglu_bwd(float *dgu, float *a, const float *da, const float *gu, size_t T, int inter) {
    GRID_STRIDE(k, T * inter) {
        size_t t = k / inter, i = k % inter, o = t * 2 * inter + i;
        float gv = gu[o], u = gu[o + inter], d = da[k], sig = 1.0f / (1.0f + expf(-gv));
        dgu[o] = d * u * sig * (1.0f + gv * (1.0f - sig));
        dgu[o + inter] = d * gv * sig;
        a[k] = gv / (1.0f + expf(-gv)) * u;
    }
}

/* Launches the SwiGLU backward. */
void or1_cuda_swiglu_bwd(or1_cuda *g, float *dgu, float *a, const float *da, const float *gu, int T, int inter) {
    k_swiglu_bwd<<<cu_blocks((size_t)T * inter, 256), 256, 0, g->stream>>>(dgu, a, da, gu, (size_t)T, inter);
    cu_launched(g, "swiglu_bwd");
}

/* torch.optim.AdamW's order: decay, moments, bias-corrected update. */
__global__ void k_adamw(float *p, float *m, float *v, const float *gr, size_t n, float decay, float b1,
                        float b2, float eps, float step_size, float bc2_sqrt) {
    GRID_STRIDE(i, n) {
        float gi = gr[i], pi = p[i] * decay;
        float mi = m[i] * b1 + (1.0f - b1) * gi, vi = v[i] * b2 + (1.0f - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        p[i] = pi - step_size * mi / (sqrtf(vi) / bc2_sqrt + eps);
    }
}

/* Bias corrections on the host, the update on the device. */
void or1_cuda_adamw(or1_cuda *g, float *params, float *m, float *v, const float *grads, size_t n, long step,
                    const or1_adamw_cfg *c) {
    double bc1 = 1.0 - pow(c->beta1, (double)step), bc2 = 1.0 - pow(c->beta2, (double)step);
    k_adamw<<<cu_blocks(n, 256), 256, 0, g->stream>>>(params, m, v, grads, n, 1.0f - c->lr * c->weight_decay,
                                                       c->beta1, c->beta2, c->eps, (float)(c->lr / bc1),
                                                       (float)sqrt(bc2));
    cu_launched(g, "adamw");
}

enum { NORM_BLOCKS = 1024 };

/* Per-block partial sums of g^2 in double over a fixed grid-stride partition. */
__global__ void k_sumsq(double *part, const float *gr, size_t n) {
    __shared__ double sh[32];
    double s = 0;
    GRID_STRIDE(i, n) s += (double)gr[i] * gr[i];
    s = block_sum(s, sh);
    if (threadIdx.x == 0) part[blockIdx.x] = s;
}

/* Adds the partials in index order: the same result on every run. */
__global__ void k_sum_parts(double *part, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += part[i];
    part[n] = s;
}

/* Partials, their ordered sum, then one 8-byte download. */
double or1_cuda_grad_norm(or1_cuda *g, const float *grads, size_t n) {
    if (cu_reserve(g, 0, NORM_BLOCKS + 1)) return or1_cuda_sync(g);
    k_sumsq<<<NORM_BLOCKS, 256, 0, g->stream>>>(g->red, grads, n);
    k_sum_parts<<<1, 1, 0, g->stream>>>(g->red, NORM_BLOCKS);
    cu_launched(g, "grad_norm");
    double s = 0;
    if (or1_cuda_download(g, &s, g->red + NORM_BLOCKS, sizeof s)) return -1;
    return sqrt(s);
}

/* x *= c element-wise. */
__global__ void k_scale(float *x, size_t n, float c) {
    GRID_STRIDE(i, n) x[i] *= c;
}

/* Scales only when the norm exceeds max_norm, as clip_grad_norm_. */
void or1_cuda_clip(or1_cuda *g, float *grads, size_t n, double norm, double max_norm) {
    double coef = max_norm / (norm + 1e-6);
    if (coef >= 1.0) return;
    k_scale<<<cu_blocks(n, 256), 256, 0, g->stream>>>(grads, n, (float)coef);
    cu_launched(g, "clip");
}
