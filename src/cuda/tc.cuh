/* The tensor-core primitives the kernels use, each one PTX instruction on a GPU (sm_80 and
 * later) and the emulator's warp-collective model of it in the tests (tests/cuda/emu): the
 * bf16 matrix multiply-accumulate mma.sync.m16n8k16, ldmatrix and cp.async. Fragments follow the
 * PTX ISA's layouts ("Matrix fragments for mma.m16n8k16 with floating point type"), with
 * g = lane / 4 and t = lane % 4:
 *   A (16 x 16, row-major), 4 registers of two bf16 (the lower index in the low half):
 *     a[0] = A[g][2t, 2t+1], a[1] = A[g+8][2t, 2t+1], a[2] = A[g][2t+8, 2t+9], a[3] = A[g+8][2t+8, 2t+9]
 *   B (16 x 8, column-major: k runs along a column), 2 registers:
 *     b[0] = B[2t, 2t+1][g], b[1] = B[2t+8, 2t+9][g]
 *   C and D (16 x 8, fp32): c[0], c[1] = C[g][2t, 2t+1], c[2], c[3] = C[g+8][2t, 2t+1]
 * ldmatrix loads 8 x 8 bf16 matrices from shared memory, lanes 8i .. 8i+7 giving the 16-byte
 * aligned addresses of matrix i's rows: register i of lane l holds row l/4, columns 2(l%4) and
 * 2(l%4)+1 of matrix i (.trans: column l/4, rows 2(l%4) and 2(l%4)+1), which is A's fragment for
 * four matrices of a 16 x 16 tile and B's for two. */
#ifndef OR1_CUDA_TC_CUH
#define OR1_CUDA_TC_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

/* Two floats as a bf16 pair (round to nearest even), lo in the low half. */
__device__ __forceinline__ uint32_t tc_pack(float lo, float hi) {
    return (uint32_t)__bfloat16_as_ushort(__float2bfloat16(lo)) |
           (uint32_t)__bfloat16_as_ushort(__float2bfloat16(hi)) << 16;
}

/* d = a b + c: one m16n8k16 bf16 product with fp32 accumulation, a warp-wide instruction (every
 * lane of the warp must reach it together). d may be c. */
__device__ __forceinline__ void tc_mma(float d[4], const uint32_t a[4], const uint32_t b[2], const float c[4]) {
#if defined(OR1_CUDA_EMU)
    ::emu::mma_m16n8k16(__FILE__, __LINE__, d, a, b, c);
#elif defined(__CUDA_ARCH__)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%10,%11,%12,%13};\n"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]),
                   "f"(c[2]), "f"(c[3]));
#else
    (void)d, (void)a, (void)b, (void)c;
#endif
}

/* ldmatrix of N (1, 2 or 4) 8 x 8 bf16 matrices, transposed when T; row is this lane's row
 * address in shared memory (16-byte aligned; lanes past 8N give none that is read). */
template <int N, bool T> __device__ __forceinline__ void tc_ldmatrix(uint32_t r[N], const void *row) {
    static_assert(N == 1 || N == 2 || N == 4, "ldmatrix loads 1, 2 or 4 matrices");
#if defined(OR1_CUDA_EMU)
    ::emu::ldmatrix(__FILE__, __LINE__, r, N, T, row);
#elif defined(__CUDA_ARCH__)
    unsigned s = (unsigned)__cvta_generic_to_shared(row);
    if constexpr (N == 4 && !T)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s));
    else if constexpr (N == 4)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s));
    else if constexpr (N == 2 && !T)
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(s));
    else if constexpr (N == 2)
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(s));
    else if constexpr (!T)
        asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(s));
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n" : "=r"(r[0]) : "r"(s));
#else
    (void)r, (void)row;
#endif
}

/* Starts an asynchronous copy of 16 bytes from global to shared memory (both 16-byte aligned),
 * of which the first src_bytes (0 or 16) are read and the rest zero-filled; it lands at the
 * wait for its group. */
__device__ __forceinline__ void tc_cp_async16(void *smem, const void *gmem, int src_bytes) {
#if defined(OR1_CUDA_EMU)
    ::emu::cp_async(__FILE__, __LINE__, smem, gmem, 16, src_bytes);
#elif defined(__CUDA_ARCH__)
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(src_bytes));
#else
    (void)smem, (void)gmem, (void)src_bytes;
#endif
}

/* Closes this thread's group of asynchronous copies started since the last commit. */
__device__ __forceinline__ void tc_cp_commit() {
#if defined(OR1_CUDA_EMU)
    ::emu::cp_async_commit();
#elif defined(__CUDA_ARCH__)
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}

/* Waits until at most N of this thread's committed groups are still in flight (their copies
 * then visible to this thread; a barrier shares them with the block). */
template <int N> __device__ __forceinline__ void tc_cp_wait() {
#if defined(OR1_CUDA_EMU)
    ::emu::cp_async_wait(__FILE__, __LINE__, N);
#elif defined(__CUDA_ARCH__)
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

/* Declares n CUDA-core FLOPs of this thread to the emulator's counters (the cost model's);
 * nothing on a GPU. Called once per thread per tile, not per operation. */
__device__ __forceinline__ void tc_flops(unsigned long long n) {
#if defined(OR1_CUDA_EMU)
    ::emu::count_flops(n);
#else
    (void)n;
#endif
}

#endif
