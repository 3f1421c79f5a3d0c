/* The CUDA context: device, stream, cuBLAS, scratch, errors, memory and the GEMM wrapper. */
#include "internal.h"

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

/* The batch-invariant matmul. Two kernels share one reduction order per output: an fmaf chain
 * over k = 0, 1, ..., in - 1 from 0, then times alpha, then plus the bias. Nothing in that order
 * depends on how many rows a call has or which tile a row falls in, so a token's row is the
 * same bits whether it is decoded alone, prefilled with others or trained in a packed batch (the
 * CPU's or1_matmul_rows holds the same invariant with its own order). k_matmul_rows_tiled takes
 * RT_TILE rows x RT_TILE outputs per block of RT_THREADS x RT_THREADS threads (RT_PER x RT_PER
 * outputs per thread); k_matmul_rows_few, for calls of at most FEW_MAX rows (decode), takes
 * FEW_ROWS rows x FEW_OUT outputs per block, one output per thread. Both step through the inner
 * dimension through shared memory. */
enum { RT_THREADS = 16, RT_TILE = 64, RT_K = 16, RT_PER = RT_TILE / RT_THREADS };
enum { FEW_OUT = 64, FEW_ROWS = 8, FEW_K = 32, FEW_MAX = 16 };

/* x[r, k] of an R x K row-major operand as the kernels multiply it: 0 outside, and in bf16
 * precision rounded to bf16 (the weight's bf16 copy wb when there is one). */
__device__ float rows_operand(const float *x, const __nv_bfloat16 *xb, int R, int K, int r, int k, bool bf16) {
    if (r >= R || k >= K) return 0.0f;
    size_t i = (size_t)r * K + k;
    if (xb) return __bfloat162float(xb[i]);
    return bf16 ? __bfloat162float(__float2bfloat16(x[i])) : x[i];
}

/* An output of the chain: acc times alpha, plus the bias of output o when there is one. */
__device__ void rows_store(float *y, float acc, float alpha, const float *b, int t, int o, int out) {
    float v = acc * alpha;
    y[(size_t)t * out + o] = b ? v + b[o] : v;
}

/* The tiled kernel: y[T,out] = alpha (x W^T) (+ b) for calls of many rows. */
__global__ void k_matmul_rows_tiled(float *y, const float *x, const float *w, const __nv_bfloat16 *wb, const float *b,
                                    int T, int in, int out, float alpha, bool bf16) {
    __shared__ float xs[RT_K][RT_TILE];
    __shared__ float ws[RT_K][RT_TILE];
    int tx = threadIdx.x, ty = threadIdx.y, tid = ty * RT_THREADS + tx;
    int o0 = blockIdx.x * RT_TILE, t0 = blockIdx.y * RT_TILE;
    float acc[RT_PER][RT_PER] = {};
    for (int k0 = 0; k0 < in; k0 += RT_K) {
        for (int e = tid; e < RT_TILE * RT_K; e += RT_THREADS * RT_THREADS) {
            int r = e / RT_K, kk = e % RT_K;
            xs[kk][r] = rows_operand(x, nullptr, T, in, t0 + r, k0 + kk, bf16);
            ws[kk][r] = rows_operand(w, wb, out, in, o0 + r, k0 + kk, bf16);
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
__global__ void k_matmul_rows_few(float *y, const float *x, const float *w, const __nv_bfloat16 *wb, const float *b,
                                  int T, int in, int out, float alpha, bool bf16) {
    __shared__ float ws[FEW_K][FEW_OUT + 1];
    __shared__ float xs[FEW_ROWS][FEW_K];
    int tid = threadIdx.x, o0 = blockIdx.x * FEW_OUT, t0 = blockIdx.y * FEW_ROWS;
    int rows = T - t0 < FEW_ROWS ? T - t0 : FEW_ROWS;
    float acc[FEW_ROWS] = {};
    for (int k0 = 0; k0 < in; k0 += FEW_K) {
        for (int e = tid; e < FEW_OUT * FEW_K; e += FEW_OUT) {
            int r = e / FEW_K, kk = e % FEW_K;
            ws[kk][r] = rows_operand(w, wb, out, in, o0 + r, k0 + kk, bf16);
        }
        for (int e = tid; e < FEW_ROWS * FEW_K; e += FEW_OUT)
            xs[e / FEW_K][e % FEW_K] = rows_operand(x, nullptr, T, in, t0 + e / FEW_K, k0 + e % FEW_K, bf16);
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

/* y[T,out] = alpha x W^T (+ b), batch-invariant: every forward matmul and the head's logits, so
 * that rollout and trainer compute a token's activations alike (cuBLAS picks its algorithm and
 * split by shape, so its rows depend on the batch). */
void cu_matmul_rows(or1_cuda *g, float *y, const float *x, const float *w, const __nv_bfloat16 *wb, const float *b,
                    int T, int in, int out, float alpha) {
    if (T <= 0 || out <= 0) return;
    bool bf16 = g->prec != OR1_CUDA_FP32;
    if (T <= FEW_MAX) {
        dim3 grid((out + FEW_OUT - 1) / FEW_OUT, (T + FEW_ROWS - 1) / FEW_ROWS);
        k_matmul_rows_few<<<grid, FEW_OUT, 0, g->stream>>>(y, x, w, wb, b, T, in, out, alpha, bf16);
    } else {
        dim3 grid((out + RT_TILE - 1) / RT_TILE, (T + RT_TILE - 1) / RT_TILE);
        k_matmul_rows_tiled<<<grid, dim3(RT_THREADS, RT_THREADS), 0, g->stream>>>(y, x, w, wb, b, T, in, out, alpha,
                                                                                  bf16);
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
