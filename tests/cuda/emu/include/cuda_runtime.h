/* The CUDA runtime as the emulator provides it (tests only): the part of the API src/cuda uses,
 * and the kernel-side spellings (thread indices, __syncthreads, warp shuffles, atomics, launches)
 * that the sources rewritten by rewrite.cmake compile against with the host C++ compiler. A
 * function not declared here is a build error in the emulated build, so new API use is noticed. */
#ifndef OR1_EMU_CUDA_RUNTIME_H
#define OR1_EMU_CUDA_RUNTIME_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include <tuple>
#include <type_traits>
#include <utility>

/* ---- Types and error codes ------------------------------------------------------------------ */

struct uint3 {
    unsigned x, y, z;
};

/* The 16-byte vector types, 16-byte aligned as CUDA's (kernels' vector loads and stores; dynamic
 * shared memory declared as uint4). */
struct alignas(16) float4 {
    float x, y, z, w;
};
struct alignas(16) uint4 {
    unsigned x, y, z, w;
};

struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
};

/* The codes the emulator returns (values as CUDA's). */
enum cudaError_t {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInvalidDevicePointer = 17,
    cudaErrorInvalidMemcpyDirection = 21,
    cudaErrorInvalidDevice = 101,
    cudaErrorInvalidResourceHandle = 400,
};

enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
};

enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };

typedef struct CUstream_st *cudaStream_t;
enum { cudaStreamNonBlocking = 1 };

struct cudaDeviceProp {
    char name[256];
    size_t totalGlobalMem;
    int major, minor;
};

/* ---- Host API ------------------------------------------------------------------------------- */

cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaMalloc(void **p, size_t bytes);
cudaError_t cudaFree(void *p);
cudaError_t cudaMemset(void *p, int value, size_t bytes);
cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t stream);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaGetLastError(void);
const char *cudaGetErrorString(cudaError_t e);

namespace emu {
cudaError_t func_set_attribute(const void *kernel, cudaFuncAttribute attr, int value);
}

/* Sets a kernel's attribute (only the dynamic shared-memory limit exists here). */
template <class K> cudaError_t cudaFuncSetAttribute(K *kernel, cudaFuncAttribute attr, int value) {
    return emu::func_set_attribute(reinterpret_cast<const void *>(kernel), attr, value);
}

/* ---- Kernel side ---------------------------------------------------------------------------- */

/* Sources see that they are built for the emulator (src/cuda/tc.cuh calls its models of the
 * tensor-core instructions, which a host compiler cannot assemble). */
#define OR1_CUDA_EMU 1

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)

namespace emu {

/* The running CUDA thread's indices and its launch's shape (values: no memory the kernel reads). */
uint3 thread_idx();
uint3 block_idx();
dim3 block_dim();
dim3 grid_dim();
void syncthreads(const char *file, int line);
uint64_t shuffle(const char *file, int line, unsigned mask, uint64_t bits, int kind, int lane_arg, int width);
void *dynamic_shared();
void static_shared(void *p, size_t bytes);
float atomic_add(float *p, float v);
double atomic_add(double *p, double v);

enum { SHFL_IDX = 0, SHFL_XOR = 1 };

/* The warp-wide tensor-core instructions of src/cuda/tc.cuh (the PTX ISA's fragment layouts):
 * mma.sync.m16n8k16 with bf16 operands and fp32 accumulation (d may be c), ldmatrix of n 8 x 8
 * bf16 matrices (transposed when trans) from the row addresses lanes 0 .. 8n-1 give; and a
 * thread's asynchronous global-to-shared copies (cp.async), which land at its wait. */
void mma_m16n8k16(const char *file, int line, float *d, const uint32_t *a, const uint32_t *b, const float *c);
void ldmatrix(const char *file, int line, uint32_t *r, int n, bool trans, const void *row);
void cp_async(const char *file, int line, void *smem, const void *gmem, int bytes, int src_bytes);
void cp_async_commit();
void cp_async_wait(const char *file, int line, int n);
/* Adds n to the running kernel's declared CUDA-core FLOPs (the cost model's counters). */
void count_flops(uint64_t n);

/* A shuffle of a 4- or 8-byte value: its bits travel between the lanes. */
template <class T> T shfl(const char *file, int line, unsigned mask, T v, int kind, int lane_arg, int width) {
    static_assert(sizeof(T) == 4 || sizeof(T) == 8, "shuffles move 4 or 8 bytes");
    uint64_t bits = 0;
    __builtin_memcpy(&bits, &v, sizeof v);
    bits = shuffle(file, line, mask, bits, kind, lane_arg, width);
    T out;
    __builtin_memcpy(&out, &bits, sizeof out);
    return out;
}

/* What a launch needs: the kernel, its name and place, the configuration, and the arguments
 * converted to the kernel's parameter types (as a real launch converts them). */
void launch(const char *name, const char *file, int line, const void *kernel, dim3 grid, dim3 block, size_t smem,
            cudaStream_t stream, void (*thunk)(void *), void *ctx, const void *const *ptrs, int n_ptrs);

template <class... P> struct launcher {
    void (*fn)(P...);
    const char *name, *file;
    int line;
    dim3 grid, block;
    size_t smem;
    cudaStream_t stream;

    /* Runs the kernel over the grid (or records why it cannot start). */
    template <class... A> void operator()(A &&...a) const {
        struct call {
            void (*fn)(P...);
            std::tuple<P...> args;
        } c{fn, std::tuple<P...>(std::forward<A>(a)...)};
        const void *ptrs[sizeof...(P) + 1];
        int n = 0;
        std::apply([&](const auto &...x) { ((n = collect(ptrs, n, x)), ...); }, c.args);
        launch(name, file, line, reinterpret_cast<const void *>(fn), grid, block, smem, stream,
               [](void *p) { std::apply(static_cast<call *>(p)->fn, static_cast<call *>(p)->args); }, &c, ptrs, n);
    }

    /* Appends a pointer argument's value (checked against the device allocations). */
    template <class X> static int collect(const void **ptrs, int n, const X &x) {
        if constexpr (std::is_pointer_v<X>) ptrs[n++] = static_cast<const void *>(x);
        return n;
    }
};

template <class... P>
launcher<P...> make_launcher(void (*fn)(P...), const char *name, const char *file, int line, dim3 grid, dim3 block,
                             size_t smem = 0, cudaStream_t stream = nullptr) {
    return launcher<P...>{fn, name, file, line, grid, block, smem, stream};
}

} // namespace emu

#define threadIdx (::emu::thread_idx())
#define blockIdx (::emu::block_idx())
#define blockDim (::emu::block_dim())
#define gridDim (::emu::grid_dim())
#define __syncthreads() ::emu::syncthreads(__FILE__, __LINE__)
#define __shfl_sync(mask, v, ...) ::emu::shfl(__FILE__, __LINE__, mask, v, ::emu::SHFL_IDX, __VA_ARGS__, 32)
#define __shfl_xor_sync(mask, v, ...) ::emu::shfl(__FILE__, __LINE__, mask, v, ::emu::SHFL_XOR, __VA_ARGS__, 32)
/* The rewritten spelling of kernel<<<grid, block, smem, stream>>>(args). */
#define EMU_LAUNCH(kernel, ...) ::emu::make_launcher(kernel, #kernel, __FILE__, __LINE__, __VA_ARGS__)

static inline float atomicAdd(float *p, float v) { return emu::atomic_add(p, v); }
static inline double atomicAdd(double *p, double v) { return emu::atomic_add(p, v); }

/* Device math the host library lacks (the fast intrinsics as their exact forms). */
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
#define __expf(x) expf(x) /* glibc declares __expf itself */
#define __logf(x) logf(x)
/* IEEE operations nvcc never contracts into an FMA (the host compiler of the emulator has no FMA
 * contraction without -mfma, which these sources do not get). */
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline int min(int a, int b) { return a < b ? a : b; }
static inline int max(int a, int b) { return a > b ? a : b; }
static inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
static inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
static inline long long min(long long a, long long b) { return a < b ? a : b; }
static inline long long max(long long a, long long b) { return a > b ? a : b; }
static inline size_t min(size_t a, size_t b) { return a < b ? a : b; }
static inline size_t max(size_t a, size_t b) { return a > b ? a : b; }

#endif
