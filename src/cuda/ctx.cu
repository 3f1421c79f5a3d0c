/* The CUDA context: device, stream, cuBLAS, scratch, errors, memory and the GEMM wrapper. */
#include "internal.h"
#include "tc.cuh"

extern "C" {
#include "or1/core.h"
}

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Keeps the first message; later failures are usually its consequences. */
void cu_error(or1_cuda *g, const char *fmt, ...) {
    if (g->err[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->err, sizeof g->err, fmt, ap);
    va_end(ap);
}

/* Records e if it is a failure. */
int cu_check(or1_cuda *g, cudaError_t e, const char *what) {
    if (e == cudaSuccess) return 0;
    cu_error(g, "cuda: %s: %s", what, cudaGetErrorString(e));
    return 1;
}

/* Picks up a failed launch (bad configuration, too much shared memory). */
void cu_launched(or1_cuda *g, const char *kernel) { cu_check(g, cudaGetLastError(), kernel); }

/* Built in: nothing to load. */
const char *or1_cuda_load_error(void) { return NULL; }

/* Zero when no device or driver is present; clears the runtime's sticky error either way. */
int or1_cuda_device_count(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return n;
}

/* The GPU of this process: its local rank (one MPI rank per GPU on a node) modulo the GPUs it
 * sees, or 0 outside mpirun. */
static int local_device(int count) {
    const char *names[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "LOCAL_RANK"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const char *v = getenv(names[i]);
        if (v && *v) return atoi(v) % count;
    }
    return 0;
}

/* Context on this process's GPU with its own stream and cuBLAS handle bound to it. */
or1_cuda *or1_cuda_new(or1_cuda_prec prec) {
    int count = or1_cuda_device_count();
    if (count < 1) {
        or1_fail("cuda: no GPU is visible (cudaGetDeviceCount found none)");
        return NULL;
    }
    or1_cuda *g = (or1_cuda *)or1_calloc(1, sizeof *g);
    g->prec = prec;
    g->device = local_device(count);
    cudaDeviceProp p;
    cudaError_t e = cudaSetDevice(g->device);
    if (e == cudaSuccess) e = cudaGetDeviceProperties(&p, g->device);
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        or1_fail("cuda: device 0: %s", cudaGetErrorString(e));
        free(g);
        return NULL;
    }
    snprintf(g->name, sizeof g->name, "%s (sm_%d%d, %.1f GiB)", p.name, p.major, p.minor,
             (double)p.totalGlobalMem / (1 << 30));
    if (cublasCreate(&g->blas) != CUBLAS_STATUS_SUCCESS) {
        or1_fail("cuda: cublasCreate failed");
        cudaStreamDestroy(g->stream);
        free(g);
        return NULL;
    }
    cublasSetStream(g->blas, g->stream);
    cublasSetMathMode(g->blas, CUBLAS_DEFAULT_MATH); /* no TF32 for sgemm; tensor cores for bf16 */
    return g;
}

/* Waits for queued work, then releases scratch, cuBLAS and the stream. */
void or1_cuda_free(or1_cuda *g) {
    if (!g) return;
    cudaStreamSynchronize(g->stream);
    cudaFree(g->cast);
    cudaFree(g->scratch);
    cudaFree(g->red);
    cublasDestroy(g->blas);
    cudaStreamDestroy(g->stream);
    free(g);
}

/* Precision of later matmuls. */
void or1_cuda_set_prec(or1_cuda *g, or1_cuda_prec prec) { g->prec = prec; }
/* Device description filled in by or1_cuda_new. */
const char *or1_cuda_device_name(const or1_cuda *g) { return g->name; }

/* Drains the stream and turns the first recorded or pending failure into or1_fail. */
int or1_cuda_sync(or1_cuda *g) {
    cu_check(g, cudaStreamSynchronize(g->stream), "stream");
    cu_launched(g, "kernel");
    if (!g->err[0]) return 0;
    or1_fail("%s", g->err);
    g->err[0] = 0;
    return -1;
}

/* cudaMalloc + zero fill. */
void *or1_cuda_alloc(size_t bytes) {
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
    if (e == cudaSuccess) e = cudaMemset(p, 0, bytes);
    /* the memset runs on the legacy stream, which contexts' non-blocking streams do not wait for */
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        cudaGetLastError();
        cudaFree(p);
        or1_fail("cuda: cannot allocate %.1f MiB of device memory: %s", (double)bytes / (1 << 20),
                 cudaGetErrorString(e));
        return NULL;
    }
    return p;
}

/* cudaFree (NULL is fine). */
void or1_cuda_release(void *p) { cudaFree(p); }

/* Queues a copy on the stream; a failure to queue it is reported at once (with any earlier one). */
static int copy(or1_cuda *g, void *dst, const void *src, size_t bytes, cudaMemcpyKind kind) {
    if (!bytes) return 0;
    cu_check(g, cudaMemcpyAsync(dst, src, bytes, kind, g->stream), "memcpy");
    return g->err[0] ? or1_cuda_sync(g) : 0;
}

/* Host -> device without waiting for the stream: the host buffer is pageable (or1 never
 * pins memory), so the driver has staged it before the call returns and the caller may
 * reuse or free it at once; the copy runs in stream order, and a failure surfaces at the
 * next sync. This keeps a decode step to one synchronisation (copying its tokens back). */
int or1_cuda_upload(or1_cuda *g, void *dst, const void *src, size_t bytes) {
    return copy(g, dst, src, bytes, cudaMemcpyHostToDevice);
}

/* Device -> host, waiting for completion. */
int or1_cuda_download(or1_cuda *g, void *dst, const void *src, size_t bytes) {
    if (copy(g, dst, src, bytes, cudaMemcpyDeviceToHost)) return -1;
    return bytes ? or1_cuda_sync(g) : 0;
}

/* Queued memset to zero. */
void or1_cuda_zero(or1_cuda *g, void *p, size_t bytes) {
    cu_check(g, cudaMemsetAsync(p, 0, bytes, g->stream), "memset");
}

/* Grows a device buffer (contents are not kept). */
static int grow(or1_cuda *g, void **buf, size_t *have, size_t want, size_t elem) {
    if (*have >= want) return 0;
    cudaStreamSynchronize(g->stream);
    cudaFree(*buf);
    *buf = NULL;
    *have = 0;
    if (cu_check(g, cudaMalloc(buf, want * elem), "scratch allocation")) return -1;
    *have = want;
    return 0;
}

/* Grows the head scratch and the double reduction buffer as needed. */
int cu_reserve(or1_cuda *g, size_t n, size_t nd) {
    if (grow(g, (void **)&g->scratch, &g->scratch_n, n, sizeof(float))) return -1;
    return grow(g, (void **)&g->red, &g->red_n, nd, sizeof(double));
}

/* bf16 copy of a column-major rows x cols operand with leading dimension ld (packed). */
__global__ void k_to_bf16(__nv_bfloat16 *dst, const float *src, int rows, int cols, int ld) {
    size_t n = (size_t)rows * cols;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        size_t c = i / rows, r = i % rows;
        dst[i] = __float2bfloat16(src[c * ld + r]);
    }
}

/* Rows x cols of op(X): the stored shape before transposition. */
static void stored_shape(bool t, int m, int k, int *rows, int *cols) {
    *rows = t ? k : m;
    *cols = t ? m : k;
}

/* fp32: cublasSgemm (default math: no TF32). bf16: operands without a bf16 copy (Ab, Bb) are
 * cast into the context's cast buffer, then cublasGemmEx with fp32 compute and an fp32 C. */
void cu_gemm_ex(or1_cuda *g, bool ta, bool tb, int m, int n, int k, float alpha, const float *A,
                const __nv_bfloat16 *Ab, int lda, const float *B, const __nv_bfloat16 *Bb, int ldb, float beta,
                float *C, int ldc) {
    if (m <= 0 || n <= 0) return;
    cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasStatus_t s;
    if (g->prec == OR1_CUDA_FP32) {
        s = cublasSgemm(g->blas, oa, ob, m, n, k, &alpha, A, lda, B, ldb, &beta, C, ldc);
    } else {
        int ar, ac, br, bc;
        stored_shape(ta, m, k, &ar, &ac);
        stored_shape(tb, k, n, &br, &bc);
        size_t na = Ab ? 0 : (size_t)ar * ac, nb = Bb ? 0 : (size_t)br * bc;
        if (grow(g, (void **)&g->cast, &g->cast_n, na + nb, sizeof(__nv_bfloat16))) return;
        if (!Ab) k_to_bf16<<<cu_blocks(na, 256), 256, 0, g->stream>>>(g->cast, A, ar, ac, lda);
        if (!Bb) k_to_bf16<<<cu_blocks(nb, 256), 256, 0, g->stream>>>(g->cast + na, B, br, bc, ldb);
        cu_launched(g, "to_bf16");
        const __nv_bfloat16 *a = Ab ? Ab : g->cast, *b = Bb ? Bb : g->cast + na;
        s = cublasGemmEx(g->blas, oa, ob, m, n, k, &alpha, a, CUDA_R_16BF, Ab ? lda : ar, b, CUDA_R_16BF,
                         Bb ? ldb : br, &beta, C, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    }
    if (s != CUBLAS_STATUS_SUCCESS)
        cu_error(g, "cublas: gemm %dx%dx%d failed: %s", m, n, k, cublasGetStatusString(s));
}

/* cu_gemm_ex without ready bf16 copies. */
void cu_gemm(or1_cuda *g, bool ta, bool tb, int m, int n, int k, float alpha, const float *A, int lda,
             const float *B, int ldb, float beta, float *C, int ldc) {
    cu_gemm_ex(g, ta, tb, m, n, k, alpha, A, NULL, lda, B, NULL, ldb, beta, C, ldc);
}

/* The batch-invariant matmul of fp32 precision. Two kernels share one reduction order per output:
 * an fmaf chain over k = 0, 1, ..., in - 1 from 0, then times alpha, then plus the bias. Nothing
 * in that order depends on how many rows a call has or which tile a row falls in, so a token's
 * row is the same bits whether it is decoded alone, prefilled with others or trained in a packed
 * batch (the CPU's or1_matmul_rows holds the same invariant with its own order).
 * k_matmul_rows_tiled takes RT_TILE rows x RT_TILE outputs per block of RT_THREADS x RT_THREADS
 * threads (RT_PER x RT_PER outputs per thread); k_matmul_rows_few, for calls of at most FEW_MAX
 * rows (decode), takes FEW_ROWS rows x FEW_OUT outputs per block, one output per thread. Both
 * step through the inner dimension through shared memory. bf16 precision has its own kernels
 * (the tensor-core ones below). */
enum { RT_THREADS = 16, RT_TILE = 64, RT_K = 16, RT_PER = RT_TILE / RT_THREADS };
enum { FEW_OUT = 64, FEW_ROWS = 8, FEW_K = 32, FEW_MAX = 16 };

/* x[r, k] of an R x K row-major operand as the fp32 kernels multiply it: 0 outside. */
__device__ float rows_operand(const float *x, int R, int K, int r, int k) {
    return r < R && k < K ? x[(size_t)r * K + k] : 0.0f;
}

/* An output of the chain: acc times alpha, plus the bias of output o when there is one. */
__device__ void rows_store(float *y, float acc, float alpha, const float *b, int t, int o, int out) {
    float v = acc * alpha;
    y[(size_t)t * out + o] = b ? v + b[o] : v;
}

/* The tiled kernel: y[T,out] = alpha (x W^T) (+ b) for calls of many rows. */
__global__ void k_matmul_rows_tiled(float *y, const float *x, const float *w, const float *b, int T, int in, int out,
                                    float alpha) {
    __shared__ float xs[RT_K][RT_TILE];
    __shared__ float ws[RT_K][RT_TILE];
    int tx = threadIdx.x, ty = threadIdx.y, tid = ty * RT_THREADS + tx;
    int o0 = blockIdx.x * RT_TILE, t0 = blockIdx.y * RT_TILE;
    float acc[RT_PER][RT_PER] = {};
    for (int k0 = 0; k0 < in; k0 += RT_K) {
        for (int e = tid; e < RT_TILE * RT_K; e += RT_THREADS * RT_THREADS) {
            int r = e / RT_K, kk = e % RT_K;
            xs[kk][r] = rows_operand(x, T, in, t0 + r, k0 + kk);
            ws[kk][r] = rows_operand(w, out, in, o0 + r, k0 + kk);
        }
        __syncthreads();
        int kn = in - k0 < RT_K ? in - k0 : RT_K;
        for (int kk = 0; kk < kn; kk++) {
            float a[RT_PER], c[RT_PER];
            for (int i = 0; i < RT_PER; i++) a[i] = xs[kk][ty + RT_THREADS * i], c[i] = ws[kk][tx + RT_THREADS * i];
            for (int i = 0; i < RT_PER; i++)
                for (int j = 0; j < RT_PER; j++) acc[i][j] = fmaf(a[i], c[j], acc[i][j]);
        }
        __syncthreads();
    }
    for (int i = 0; i < RT_PER; i++)
        for (int j = 0; j < RT_PER; j++) {
            int t = t0 + ty + RT_THREADS * i, o = o0 + tx + RT_THREADS * j;
            if (t < T && o < out) rows_store(y, acc[i][j], alpha, b, t, o, out);
        }
}

/* The kernel for few rows: each thread one output over the block's FEW_ROWS rows, the weights'
 * FEW_K-wide slices staged through shared memory (coalesced reads of the weight rows). */
__global__ void k_matmul_rows_few(float *y, const float *x, const float *w, const float *b, int T, int in, int out,
                                  float alpha) {
    __shared__ float ws[FEW_K][FEW_OUT + 1];
    __shared__ float xs[FEW_ROWS][FEW_K];
    int tid = threadIdx.x, o0 = blockIdx.x * FEW_OUT, t0 = blockIdx.y * FEW_ROWS;
    int rows = T - t0 < FEW_ROWS ? T - t0 : FEW_ROWS;
    float acc[FEW_ROWS] = {};
    for (int k0 = 0; k0 < in; k0 += FEW_K) {
        for (int e = tid; e < FEW_OUT * FEW_K; e += FEW_OUT) {
            int r = e / FEW_K, kk = e % FEW_K;
            ws[kk][r] = rows_operand(w, out, in, o0 + r, k0 + kk);
        }
        for (int e = tid; e < FEW_ROWS * FEW_K; e += FEW_OUT)
            xs[e / FEW_K][e % FEW_K] = rows_operand(x, T, in, t0 + e / FEW_K, k0 + e % FEW_K);
        __syncthreads();
        int kn = in - k0 < FEW_K ? in - k0 : FEW_K;
        for (int kk = 0; kk < kn; kk++) {
            float c = ws[kk][tid];
            for (int r = 0; r < rows; r++) acc[r] = fmaf(xs[r][kk], c, acc[r]);
        }
        __syncthreads();
    }
    int o = o0 + tid;
    if (o < out)
        for (int r = 0; r < rows; r++) rows_store(y, acc[r], alpha, b, t0 + r, o, out);
}

/* The tensor-core matmul of bf16 precision. Every output keeps one chain: acc = 0; for k0 = 0,
 * 16, 32, ... while k0 < in, in order, acc = mma.m16n8k16(x[t, k0:k0+16], W[o, k0:k0+16], acc)
 * (elements past in are zero; no step lies wholly past in); then acc * alpha, then + b[o]. x is
 * rounded to bf16 (nearest even) as it is staged, W comes from its bf16 copy wb (or w rounded).
 * Tiles change which warp and which lanes hold an output, never that chain, so the two kernels
 * (k_matmul_tc_big for many rows, k_matmul_tc_few for at most TC_FEW_MAX) give the same bits
 * and a row's bits do not depend on the call. The inner dimension steps BK at a time through
 * double-buffered shared memory, rows padded by TC_PAD bf16 so that the row pitch is an odd
 * multiple of 16 bytes and ldmatrix's 8 rows fall in 8 distinct bank groups. */
enum { TC_PAD = 8, TC_FEW_MAX = 64 };
enum tc_wsrc { TC_W_ASYNC, TC_W_BF16, TC_W_FP32 }; /* cp.async from wb, plain loads of wb, w rounded */

/* Eight elements r, k .. k+7 of an R x K row-major fp32 operand as four bf16 pairs (0 outside),
 * by two float4 loads when vec (K % 4 == 0 and p 16-byte aligned), else one float at a time. */
__device__ __forceinline__ void tc_load8(uint32_t v[4], const float *p, int R, int K, int r, int k, bool vec) {
    float f[8] = {};
    if (r < R) {
        const float *row = p + (size_t)r * K;
        if (vec) {
            #pragma unroll
            for (int h = 0; h < 2; h++)
                if (k + 4 * h < K) {
                    float4 q = *reinterpret_cast<const float4 *>(row + k + 4 * h);
                    f[4 * h] = q.x, f[4 * h + 1] = q.y, f[4 * h + 2] = q.z, f[4 * h + 3] = q.w;
                }
        } else {
            #pragma unroll
            for (int i = 0; i < 8; i++)
                if (k + i < K) f[i] = row[k + i];
        }
    }
    #pragma unroll
    for (int i = 0; i < 4; i++) v[i] = tc_pack(f[2 * i], f[2 * i + 1]);
}

/* Eight bf16 r, k .. k+7 of an R x K row-major bf16 operand whose rows need not be 16-byte
 * aligned, as four pairs (0 outside). */
__device__ __forceinline__ void tc_load8_bf16(uint32_t v[4], const __nv_bfloat16 *p, int R, int K, int r, int k) {
    uint32_t h[8] = {};
    if (r < R) {
        #pragma unroll
        for (int i = 0; i < 8; i++)
            if (k + i < K) h[i] = __bfloat16_as_ushort(p[(size_t)r * K + k + i]);
    }
    #pragma unroll
    for (int i = 0; i < 4; i++) v[i] = h[2 * i] | h[2 * i + 1] << 16;
}

/* One kernel's body: a block takes BM rows x BN outputs with WM x WN warps (each MT 16-row x NT
 * 8-output mma tiles), BK of the inner dimension per stage. The next stage's x (and W, unless
 * cp.async brings it) is loaded into registers before the current stage's mmas and stored after
 * them; one barrier per stage. */
template <int BM, int BN, int WM, int WN, int BK>
__device__ __forceinline__ void tc_matmul(float *y, const float *x, const float *w, const __nv_bfloat16 *wb,
                                          const float *b, int T, int in, int out, float alpha, int wsrc, bool xvec,
                                          bool wvec) {
    constexpr int NTH = 32 * WM * WN, MT = BM / WM / 16, NT = BN / WN / 8, CH = BK / 8;
    constexpr int XPT = BM * CH / NTH, WPT = BN * CH / NTH;
    static_assert(MT >= 1 && NT % 2 == 0 && XPT * NTH == BM * CH && WPT * NTH == BN * CH, "tile shape");
    __shared__ __align__(16) uint4 xs[2][BM][CH + TC_PAD / 8]; /* 8 bf16 an element */
    __shared__ __align__(16) uint4 ws[2][BN][CH + TC_PAD / 8];
    int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    int wt = warp / WN * MT * 16, wo = warp % WN * NT * 8; /* the warp's first row and output in the tile */
    int t0 = blockIdx.y * BM, o0 = blockIdx.x * BN, stages = (in + BK - 1) / BK;
    uint32_t xr[XPT][4], wr[WPT][4];
    float acc[MT][NT][4] = {};
    /* the stage from k0 into registers, W by cp.async straight into buffer buf */
    auto fetch = [&](int k0, int buf) {
        #pragma unroll
        for (int i = 0; i < XPT; i++) {
            int c = tid + i * NTH;
            tc_load8(xr[i], x, T, in, t0 + c / CH, k0 + c % CH * 8, xvec);
        }
        #pragma unroll
        for (int i = 0; i < WPT; i++) {
            int c = tid + i * NTH, r = c / CH, k = k0 + c % CH * 8;
            if (wsrc == TC_W_ASYNC) {
                bool ok = o0 + r < out && k < in;
                tc_cp_async16(&ws[buf][r][c % CH], ok ? wb + (size_t)(o0 + r) * in + k : wb, ok ? 16 : 0);
            } else if (wsrc == TC_W_BF16) {
                tc_load8_bf16(wr[i], wb, out, in, o0 + r, k);
            } else {
                tc_load8(wr[i], w, out, in, o0 + r, k, wvec);
            }
        }
        tc_cp_commit();
    };
    /* the registers of fetch into buffer buf */
    auto put = [&](int buf) {
        #pragma unroll
        for (int i = 0; i < XPT; i++) {
            int c = tid + i * NTH;
            xs[buf][c / CH][c % CH] = uint4{xr[i][0], xr[i][1], xr[i][2], xr[i][3]};
        }
        if (wsrc != TC_W_ASYNC) {
            #pragma unroll
            for (int i = 0; i < WPT; i++) {
                int c = tid + i * NTH;
                ws[buf][c / CH][c % CH] = uint4{wr[i][0], wr[i][1], wr[i][2], wr[i][3]};
            }
        }
    };
    fetch(0, 0);
    put(0);
    tc_cp_wait<0>();
    __syncthreads();
    for (int s = 0; s < stages; s++) {
        int buf = s & 1, k0 = s * BK;
        bool next = s + 1 < stages;
        if (next) fetch(k0 + BK, buf ^ 1);
        #pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            if (k0 + kk >= in) break; /* the chain has no step wholly past in */
            uint32_t a[MT][4], bw[NT][2];
            #pragma unroll
            for (int m = 0; m < MT; m++) /* matrices: rows 0-7 / 8-15 of k 0-7, then of k 8-15 */
                tc_ldmatrix<4, false>(a[m], &xs[buf][wt + m * 16 + lane % 8 + lane / 8 % 2 * 8][kk / 8 + lane / 16]);
            #pragma unroll
            for (int n = 0; n < NT; n += 2) { /* matrices: outputs 0-7 at k 0-7, k 8-15, then outputs 8-15 */
                uint32_t r[4];
                tc_ldmatrix<4, false>(r, &ws[buf][wo + n * 8 + lane % 8 + lane / 16 * 8][kk / 8 + lane / 8 % 2]);
                bw[n][0] = r[0], bw[n][1] = r[1], bw[n + 1][0] = r[2], bw[n + 1][1] = r[3];
            }
            #pragma unroll
            for (int m = 0; m < MT; m++)
                #pragma unroll
                for (int n = 0; n < NT; n++) tc_mma(acc[m][n], a[m], bw[n], acc[m][n]);
        }
        if (next) put(buf ^ 1);
        tc_cp_wait<0>();
        __syncthreads();
    }
    int g = lane / 4, q = lane % 4;
    #pragma unroll
    for (int m = 0; m < MT; m++)
        #pragma unroll
        for (int n = 0; n < NT; n++)
            #pragma unroll
            for (int e = 0; e < 4; e++) {
                int t = t0 + wt + m * 16 + g + e / 2 * 8, o = o0 + wo + n * 8 + 2 * q + e % 2;
                if (t < T && o < out) rows_store(y, acc[m][n][e], alpha, b, t, o, out);
            }
}

/* Many rows (training, prefill): 128 x 128 outputs per block, 8 warps of 64 x 32, 32 of the inner
 * dimension per stage. */
__global__ void __launch_bounds__(256, 2)
    k_matmul_tc_big(float *y, const float *x, const float *w, const __nv_bfloat16 *wb, const float *b, int T, int in,
                    int out, float alpha, int wsrc, bool xvec, bool wvec) {
    tc_matmul<128, 128, 2, 4, 32>(y, x, w, wb, b, T, in, out, alpha, wsrc, xvec, wvec);
}

/* Few rows (decode): 16 x 64 outputs per block, 4 warps of 16 x 16, 64 of the inner dimension
 * per stage; each block streams its 64 weight rows once per 16 rows. */
__global__ void __launch_bounds__(128)
    k_matmul_tc_few(float *y, const float *x, const float *w, const __nv_bfloat16 *wb, const float *b, int T, int in,
                    int out, float alpha, int wsrc, bool xvec, bool wvec) {
    tc_matmul<16, 64, 1, 4, 64>(y, x, w, wb, b, T, in, out, alpha, wsrc, xvec, wvec);
}

/* The tensor-core matmul's launch: the kernel by row count, W's source by its alignment. */
static void tc_matmul_launch(or1_cuda *g, float *y, const float *x, const float *w, const __nv_bfloat16 *wb,
                             const float *b, int T, int in, int out, float alpha) {
    int wsrc = !wb ? TC_W_FP32 : in % 8 == 0 && (uintptr_t)wb % 16 == 0 ? TC_W_ASYNC : TC_W_BF16;
    bool xvec = in % 4 == 0 && (uintptr_t)x % 16 == 0, wvec = in % 4 == 0 && (uintptr_t)w % 16 == 0;
    if (T <= TC_FEW_MAX)
        k_matmul_tc_few<<<dim3((out + 63) / 64, (T + 15) / 16), 128, 0, g->stream>>>(y, x, w, wb, b, T, in, out, alpha,
                                                                                     wsrc, xvec, wvec);
    else
        k_matmul_tc_big<<<dim3((out + 127) / 128, (T + 127) / 128), 256, 0, g->stream>>>(y, x, w, wb, b, T, in, out,
                                                                                          alpha, wsrc, xvec, wvec);
}

/* y[T,out] = alpha x W^T (+ b), batch-invariant: every forward matmul and the head's logits, so
 * that rollout and trainer compute a token's activations alike (cuBLAS picks its algorithm and
 * split by shape, so its rows depend on the batch). bf16 precision runs the tensor-core kernels
 * (W from wb when given), fp32 the CUDA-core ones (W from w). */
void cu_matmul_rows(or1_cuda *g, float *y, const float *x, const float *w, const __nv_bfloat16 *wb, const float *b,
                    int T, int in, int out, float alpha) {
    if (T <= 0 || out <= 0) return;
    if (g->prec != OR1_CUDA_FP32) {
        tc_matmul_launch(g, y, x, w, wb, b, T, in, out, alpha);
    } else if (T <= FEW_MAX) {
        dim3 grid((out + FEW_OUT - 1) / FEW_OUT, (T + FEW_ROWS - 1) / FEW_ROWS);
        k_matmul_rows_few<<<grid, FEW_OUT, 0, g->stream>>>(y, x, w, b, T, in, out, alpha);
    } else {
        dim3 grid((out + RT_TILE - 1) / RT_TILE, (T + RT_TILE - 1) / RT_TILE);
        k_matmul_rows_tiled<<<grid, dim3(RT_THREADS, RT_THREADS), 0, g->stream>>>(y, x, w, b, T, in, out, alpha);
    }
    cu_launched(g, "matmul_rows");
}

/* Public linear forward: weights cast on the fly in bf16 mode. */
void or1_cuda_matmul(or1_cuda *g, float *y, const float *x, const float *w, const float *b, int T, int in,
                     int out) {
    cu_matmul_rows(g, y, x, w, NULL, b, T, in, out, 1.0f);
}

/* dx[T,in] (+)= dy W. */
void cu_matmul_dx(or1_cuda *g, float *dx, const float *dy, const float *w, const __nv_bfloat16 *wb, int T, int in,
                  int out, int acc) {
    cu_gemm_ex(g, false, false, in, T, out, 1.0f, w, wb, in, dy, NULL, out, acc ? 1.0f : 0.0f, dx, in);
}

/* Public input gradient: weights cast on the fly in bf16 mode. */
void or1_cuda_matmul_dx(or1_cuda *g, float *dx, const float *dy, const float *w, int T, int in, int out,
                        int acc) {
    cu_matmul_dx(g, dx, dy, w, NULL, T, in, out, acc);
}

/* dW[out,in] += dy^T x; db += column sums of dy. */
void or1_cuda_matmul_dw(or1_cuda *g, float *dw, float *db, const float *dy, const float *x, int T, int in,
                        int out) {
    cu_gemm(g, false, true, in, out, T, 1.0f, x, in, dy, out, 1.0f, dw, in);
    if (db) cu_colsum(g, db, dy, NULL, NULL, T, out);
}

/* Element-wise fp32 -> bf16 (round to nearest even). */
__global__ void k_flat_bf16(__nv_bfloat16 *dst, const float *src, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = __float2bfloat16(src[i]);
}

/* bf16 copy of n floats (the model's weight shadow). */
void cu_to_bf16(or1_cuda *g, __nv_bfloat16 *dst, const float *src, size_t n) {
    k_flat_bf16<<<cu_blocks(n, 256), 256, 0, g->stream>>>(dst, src, n);
    cu_launched(g, "to_bf16");
}
