/* The emulator's own test program: one case per run (selftest CASE), each a small CUDA program
 * that either must work (exit 0 after checking its results) or must be reported by the emulator
 * (an abort with a message test_selftest.py looks for, or a CUDA error the case checks). Built
 * through the same rewrite as src/cuda, so it also tests the rewrite. */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "tc.cuh"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Ends the case with a failure message unless cond holds. */
#define EXPECT(cond, ...)                                                                                              \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            printf("selftest: expectation failed at line %d: ", __LINE__);                                             \
            printf(__VA_ARGS__);                                                                                       \
            printf("\n");                                                                                              \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

/* Device memory of n floats, filled from host values when given. */
static float *dev(size_t n, const float *h = nullptr) {
    void *p = nullptr;
    EXPECT(cudaMalloc(&p, n * sizeof(float)) == cudaSuccess, "cudaMalloc");
    if (h) EXPECT(cudaMemcpyAsync(p, h, n * sizeof(float), cudaMemcpyHostToDevice, nullptr) == cudaSuccess, "upload");
    return (float *)p;
}

/* n floats back from the device. */
static void get(float *h, const float *d, size_t n) {
    EXPECT(cudaMemcpyAsync(h, d, n * sizeof(float), cudaMemcpyDeviceToHost, nullptr) == cudaSuccess, "download");
}

/* Warp sums inside branches and loops that only some warps take: warp w sums its lanes' values
 * w + 2 times (a shuffle-based reduction per pass), warp 3 not at all. */
__global__ void k_warp_loops(float *out) {
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (warp == 3) return;
    float acc = 0;
    for (int pass = 0; pass < warp + 2; pass++) {
        float v = (float)lane;
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        acc += v;
    }
    if (warp == 1) acc += __shfl_sync(0xffffffffu, (float)lane, 7);
    if (lane == 0) out[warp] = acc;
}

/* Half the block leaves before the barrier, which the other half then passes. */
__global__ void k_barrier_after_exit(float *out) {
    __shared__ float sh[64];
    if (threadIdx.x >= 64) return;
    sh[threadIdx.x] = (float)threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = sh[63 - threadIdx.x];
}

/* Two warps reach two different __syncthreads. */
__global__ void k_divergent_barrier(float *out) {
    if (threadIdx.x < 32) {
        __syncthreads();
    } else {
        __syncthreads();
    }
    out[threadIdx.x] = 1;
}

/* Lane 0 skips the shuffle its warp-mates wait at and waits at a barrier instead. */
__global__ void k_shuffle_deadlock(float *out) {
    float v = 1;
    if (threadIdx.x % 32) v = __shfl_xor_sync(0xffffffffu, v, 1);
    __syncthreads();
    out[threadIdx.x] = v;
}

/* The upper half of the warp has left; the lower half reads it. */
__global__ void k_shuffle_exited(float *out) {
    if (threadIdx.x >= 16) return;
    out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, (float)threadIdx.x, 16);
}

/* Thread 0 writes a shared word that thread 1 reads without a barrier in between. */
__global__ void k_shared_race(float *out) {
    __shared__ float sh[32];
    if (threadIdx.x == 0) sh[0] = 5;
    if (threadIdx.x == 1) out[0] = sh[0];
}

/* Reads one float past the end of an allocation. */
__global__ void k_oob(float *out, const float *in, int n) { out[0] = in[n]; }

/* Copies its input; used with bad arguments and configurations. */
__global__ void k_copy(float *out, const float *in) { out[threadIdx.x] = in[threadIdx.x]; }

/* Fills its dynamic shared memory and sums it. */
__global__ void k_big_shared(float *out, int n) {
    extern __shared__ float big[];
    for (int i = threadIdx.x; i < n; i += blockDim.x) big[i] = 1;
    __syncthreads();
    if (threadIdx.x) return;
    float s = 0;
    for (int i = 0; i < n; i++) s += big[i];
    out[0] = s;
}

/* Whether fresh device memory and fresh shared memory read as NaN. */
__global__ void k_fresh(float *out, const float *fresh) {
    __shared__ float sh[4];
    out[0] = isnan(fresh[0]) ? 1.0f : 0.0f;
    out[1] = isnan(sh[threadIdx.x]) ? 1.0f : 0.0f;
}

/* Spins for ever (the watchdog's case). */
__global__ void k_spin(float *out) {
    volatile float x = 0;
    while (x >= 0) x = x + 1;
    out[0] = x;
}

/* Every thread stores its index in one word: the last to run wins. */
__global__ void k_last_writer(float *out) { out[0] = (float)threadIdx.x; }

/* D = A B + C for one m16n8k16 tile, two ways: A (16 x 16, row-major) and B (given as Bt, 8 x 16:
 * its columns as rows) through ldmatrix from shared memory staged by cp.async, and B again from
 * a 16 x 8 row-major copy Bk through ldmatrix .trans; out gets both products (2 x 128). */
__global__ void k_mma(float *out, const __nv_bfloat16 *A, const __nv_bfloat16 *Bt, const __nv_bfloat16 *Bk,
                      const float *C) {
    __shared__ __align__(16) __nv_bfloat16 as[16 * 16];
    __shared__ __align__(16) __nv_bfloat16 bs[8 * 16];
    __shared__ __align__(16) __nv_bfloat16 bks[16 * 8];
    int lane = threadIdx.x;
    for (int i = lane; i < 16 * 16 / 8; i += 32) tc_cp_async16(as + 8 * i, A + 8 * i, 16);
    tc_cp_commit();
    if (lane < 16) tc_cp_async16(bs + 8 * lane, Bt + 8 * lane, 16);
    else tc_cp_async16(bks + 8 * (lane - 16), Bk + 8 * (lane - 16), 16);
    tc_cp_commit();
    tc_cp_wait<0>();
    __syncthreads();
    uint32_t a[4], b[2], bt[2];
    int i = lane / 8, j = lane % 8;
    tc_ldmatrix<4, false>(a, as + ((i % 2) * 8 + j) * 16 + (i / 2) * 8);
    tc_ldmatrix<2, false>(b, bs + j * 16 + (i % 2) * 8);
    tc_ldmatrix<2, true>(bt, bks + ((i % 2) * 8 + j) * 8);
    int g = lane / 4, t = lane % 4;
    float c[4] = {C[g * 8 + 2 * t], C[g * 8 + 2 * t + 1], C[(g + 8) * 8 + 2 * t], C[(g + 8) * 8 + 2 * t + 1]}, d[4], e[4];
    tc_mma(d, a, b, c);
    tc_mma(e, a, bt, c);
    for (int k = 0; k < 4; k++) {
        int r = g + 8 * (k / 2), n = 2 * t + k % 2;
        out[r * 8 + n] = d[k];
        out[128 + r * 8 + n] = e[k];
    }
}

/* An ldmatrix whose row addresses are 8 bytes off the 16-byte alignment. */
__global__ void k_ldmatrix_misaligned(float *out) {
    __shared__ __align__(16) __nv_bfloat16 sh[16 * 24];
    for (int i = threadIdx.x; i < 16 * 24; i += 32) sh[i] = __float2bfloat16(1.0f);
    __syncthreads();
    uint32_t r[4];
    tc_ldmatrix<4, false>(r, sh + 4 + (threadIdx.x % 16) * 16);
    out[threadIdx.x] = (float)r[0];
}

/* Half the warp has left when the other half reaches mma.sync. */
__global__ void k_mma_partial(float *out) {
    if (threadIdx.x >= 16) return;
    uint32_t a[4] = {}, b[2] = {};
    float c[4] = {}, d[4];
    tc_mma(d, a, b, c);
    out[threadIdx.x] = d[0];
}

/* ldmatrix over rows 16 bytes apart (conflict-free) and 128 bytes apart (all in one bank group:
 * 8 wavefronts a matrix), for the counters. */
__global__ void k_ldmatrix_banks(float *out) {
    __shared__ __align__(16) __nv_bfloat16 sh[8 * 64 * 4];
    for (int i = threadIdx.x; i < 8 * 64 * 4; i += 32) sh[i] = __float2bfloat16(0.0f);
    __syncthreads();
    uint32_t r[4], q[4];
    tc_ldmatrix<4, false>(r, sh + threadIdx.x * 8);
    tc_ldmatrix<4, false>(q, sh + threadIdx.x * 64);
    out[threadIdx.x] = (float)(r[0] + q[0]);
}

/* The cases. */
static int case_warp_loops() {
    float *d = dev(4), h[3];
    k_warp_loops<<<1, 128>>>(d);
    EXPECT(cudaGetLastError() == cudaSuccess, "launch");
    get(h, d, 3);
    EXPECT(h[0] == 2 * 496 && h[1] == 3 * 496 + 7 && h[2] == 4 * 496, "warp sums %g %g %g", h[0], h[1], h[2]);
    return 0;
}

static int case_barrier_after_exit() {
    float *d = dev(64), h[64];
    k_barrier_after_exit<<<1, 128>>>(d);
    get(h, d, 64);
    for (int i = 0; i < 64; i++) EXPECT(h[i] == 63 - i, "out[%d] = %g", i, h[i]);
    return 0;
}

static int case_launch_limits() {
    float *d = dev(2048);
    k_copy<<<1, 1025>>>(d, d);
    EXPECT(cudaGetLastError() == cudaErrorInvalidConfiguration, "1025 threads per block must be refused");
    k_copy<<<dim3(1, 65536), 1>>>(d, d);
    EXPECT(cudaGetLastError() == cudaErrorInvalidConfiguration, "grid.y 65536 must be refused");
    k_copy<<<1, dim3(1, 1, 65)>>>(d, d);
    EXPECT(cudaGetLastError() == cudaErrorInvalidConfiguration, "block.z 65 must be refused");
    int n = 16384; /* 64 KiB */
    k_big_shared<<<1, 256, n * sizeof(float)>>>(d, n);
    EXPECT(cudaGetLastError() == cudaErrorInvalidValue, "64 KiB of dynamic shared memory without the attribute");
    EXPECT(cudaFuncSetAttribute(k_big_shared, cudaFuncAttributeMaxDynamicSharedMemorySize, n * 4) == cudaSuccess,
           "attribute");
    k_big_shared<<<1, 256, n * sizeof(float)>>>(d, n);
    EXPECT(cudaGetLastError() == cudaSuccess, "64 KiB with the attribute");
    float h;
    get(&h, d, 1);
    EXPECT(h == n, "shared sum %g", h);
    return 0;
}

static int case_fresh_nan() {
    float *d = dev(2), *fresh = dev(1), h[2];
    k_fresh<<<1, 4>>>(d, fresh);
    get(h, d, 2);
    EXPECT(h[0] == 1 && h[1] == 1, "fresh device %g, fresh shared %g", h[0], h[1]);
    return 0;
}

static int case_memcpy_checks() {
    float host[4] = {0}, *d = dev(4);
    EXPECT(cudaMemcpyAsync(host, d, 16, cudaMemcpyHostToDevice, nullptr) == cudaErrorInvalidValue, "H2D into host");
    EXPECT(cudaMemcpyAsync(d, host, 32, cudaMemcpyHostToDevice, nullptr) == cudaErrorInvalidValue, "H2D past the end");
    EXPECT(cudaMemcpyAsync(d, d, 16, cudaMemcpyDeviceToHost, nullptr) == cudaErrorInvalidValue, "D2H into device");
    EXPECT(cudaMemsetAsync(host, 0, 16, nullptr) == cudaErrorInvalidValue, "memset of host memory");
    EXPECT(cudaFree(d + 1) == cudaErrorInvalidDevicePointer, "free inside an allocation");
    return 0;
}

static int case_cublas() {
    cublasHandle_t h;
    EXPECT(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS, "create");
    float A[6] = {1, 2, 3, 4, 5, 6}, B[3] = {1, 1, 1}, one = 1, zero = 0, C[2];
    float *a = dev(6, A), *b = dev(3, B), *c = dev(2); /* C is fresh: NaN */
    /* C[2x1] = A[2x3] B[3x1] with beta 0: C is not read, so its NaN does not propagate */
    EXPECT(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 1, 3, &one, a, 2, b, 3, &zero, c, 2) == CUBLAS_STATUS_SUCCESS,
           "sgemm");
    get(C, c, 2);
    EXPECT(C[0] == 9 && C[1] == 12, "C = %g %g", C[0], C[1]);
    EXPECT(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 1, 3, &one, a, 1, b, 3, &zero, c, 2) == CUBLAS_STATUS_INVALID_VALUE,
           "lda 1 < m 2");
    EXPECT(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, 3, 1, 2, &one, a, 1, b, 3, &zero, c, 3) == CUBLAS_STATUS_INVALID_VALUE,
           "lda 1 < k 2 with A transposed");
    /* bf16 rounding to nearest even: 1 + 2^-8 is a tie that rounds down to 1, 1 + 3*2^-8 up */
    EXPECT(__bfloat162float(__float2bfloat16(1.0f + 1.0f / 256)) == 1.0f, "tie to even (down)");
    EXPECT(__bfloat162float(__float2bfloat16(1.0f + 3.0f / 256)) == 1.0f + 4.0f / 256, "tie to even (up)");
    cublasDestroy(h);
    return 0;
}

static int case_gemm_extent() {
    cublasHandle_t h;
    cublasCreate(&h);
    float one = 1, zero = 0, *a = dev(6), *b = dev(2), *c = dev(2);
    /* B must hold 3 floats (k = 3) but holds 2 */
    cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 1, 3, &one, a, 2, b, 3, &zero, c, 2);
    return 0;
}

static int case_order() {
    float *d = dev(1), h;
    k_last_writer<<<1, 64>>>(d);
    get(&h, d, 1);
    printf("last writer %g\n", h);
    return 0;
}

static int case_divergent_barrier() {
    k_divergent_barrier<<<1, 64>>>(dev(64));
    return 0;
}

static int case_shuffle_deadlock() {
    k_shuffle_deadlock<<<1, 64>>>(dev(64));
    return 0;
}

static int case_shuffle_exited() {
    k_shuffle_exited<<<1, 32>>>(dev(32));
    return 0;
}

static int case_shared_race() {
    k_shared_race<<<1, 32>>>(dev(1));
    return 0;
}

static int case_oob() {
    float *in = dev(10);
    k_oob<<<1, 1>>>(dev(1), in, 10);
    return 0;
}

static int case_host_pointer() {
    static float host[32];
    k_copy<<<1, 32>>>(dev(32), host);
    return 0;
}

/* bf16 device copy of n host floats (rounded); the rounded values back in h. */
static __nv_bfloat16 *dev_bf16(float *h, size_t n) {
    __nv_bfloat16 b[256];
    for (size_t i = 0; i < n; i++) b[i] = __float2bfloat16(h[i]), h[i] = __bfloat162float(b[i]);
    void *p = nullptr;
    EXPECT(cudaMalloc(&p, n * 2) == cudaSuccess, "cudaMalloc");
    EXPECT(cudaMemcpyAsync(p, b, n * 2, cudaMemcpyHostToDevice, nullptr) == cudaSuccess, "upload");
    return (__nv_bfloat16 *)p;
}

static int case_mma() {
    float A[256], B[128], Bt[128], C[128], out[256];
    unsigned s = 7;
    auto rnd = [&] { return (s = s * 1103515245u + 12345u, (float)((s >> 8) % 2001) / 1000.0f - 1.0f); };
    for (float &x : A) x = rnd();
    for (float &x : B) x = rnd(); /* B[k][n], 16 x 8 */
    for (float &x : C) x = rnd();
    for (int k = 0; k < 16; k++)
        for (int n = 0; n < 8; n++) Bt[n * 16 + k] = B[k * 8 + n];
    __nv_bfloat16 *a = dev_bf16(A, 256), *bk = dev_bf16(B, 128), *bt = dev_bf16(Bt, 128);
    float *c = dev(128, C), *d = dev(256);
    k_mma<<<1, 32>>>(d, a, bt, bk, c);
    EXPECT(cudaGetLastError() == cudaSuccess, "launch");
    get(out, d, 256);
    for (int r = 0; r < 16; r++)
        for (int n = 0; n < 8; n++) {
            double want = C[r * 8 + n];
            for (int k = 0; k < 16; k++) want += (double)A[r * 16 + k] * B[k * 8 + n];
            EXPECT(out[r * 8 + n] == (float)want, "D[%d][%d] = %.9g, want %.9g", r, n, out[r * 8 + n], want);
            EXPECT(out[128 + r * 8 + n] == (float)want, "D[%d][%d] via .trans = %.9g, want %.9g", r, n,
                   out[128 + r * 8 + n], want);
        }
    return 0;
}

static int case_ldmatrix_misaligned() {
    k_ldmatrix_misaligned<<<1, 32>>>(dev(32));
    return 0;
}

static int case_mma_partial() {
    k_mma_partial<<<1, 32>>>(dev(32));
    return 0;
}

static int case_ldmatrix_banks() {
    k_ldmatrix_banks<<<1, 32>>>(dev(32));
    return 0;
}

static int case_watchdog() {
    k_spin<<<1, 1>>>(dev(1));
    return 0;
}

int main(int argc, char **argv) {
    static const struct {
        const char *name;
        int (*run)();
    } cases[] = {
        {"warp_loops", case_warp_loops},       {"barrier_after_exit", case_barrier_after_exit},
        {"launch_limits", case_launch_limits}, {"fresh_nan", case_fresh_nan},
        {"memcpy_checks", case_memcpy_checks}, {"cublas", case_cublas},
        {"gemm_extent", case_gemm_extent},     {"order", case_order},
        {"divergent_barrier", case_divergent_barrier}, {"shuffle_deadlock", case_shuffle_deadlock},
        {"shuffle_exited", case_shuffle_exited}, {"shared_race", case_shared_race},
        {"oob", case_oob},                     {"host_pointer", case_host_pointer},
        {"watchdog", case_watchdog},           {"mma", case_mma},
        {"ldmatrix_misaligned", case_ldmatrix_misaligned}, {"mma_partial", case_mma_partial},
        {"ldmatrix_banks", case_ldmatrix_banks},
    };
    for (const auto &c : cases)
        if (argc == 2 && strcmp(argv[1], c.name) == 0) return c.run();
    fprintf(stderr, "usage: selftest CASE (");
    for (const auto &c : cases) fprintf(stderr, " %s", c.name);
    fprintf(stderr, " )\n");
    return 2;
}
