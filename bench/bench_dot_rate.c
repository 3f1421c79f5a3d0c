/* The peak rate of the two ways a core can form bf16 dot products: AVX512-BF16's VDPBF16PS (32
 * bf16 products summed into 16 fp32 lanes per instruction) against fp32 FMAs (16 products per
 * instruction) on bf16 values widened to fp32, each as 24 independent accumulator chains (no
 * latency limit), in register only (no memory limit). The bf16 matmul uses whichever is faster;
 * on the machine the docs describe it is the FMA (VDPBF16PS retires one per two cycles).
 * usage: bench_dot_rate  (one JSON line; exit 77 where the CPU or compiler lacks AVX512-BF16) */
#include "or1/core.h"

#include <immintrin.h>
#include <stdio.h>

#if defined(__AVX512BF16__)
enum { ITERS = 50000000 };
#define REP24(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9) M(10) M(11) M(12) M(13) M(14) M(15) M(16) M(17) \
    M(18) M(19) M(20) M(21) M(22) M(23)

/* Seconds for ITERS x 24 VDPBF16PS (seed keeps the compiler from folding the loop). */
static double dp_seconds(int seed, float *sink) {
#define DECL(i) __m512 a##i = _mm512_set1_ps((float)(seed * i));
    REP24(DECL)
    __m512bh x = (__m512bh)_mm512_set1_epi16((short)0x3f80), y = (__m512bh)_mm512_set1_epi16((short)(0x3000 + seed));
    double t0 = or1_now();
    for (long n = 0; n < ITERS; n++) {
#define STEP(i) a##i = _mm512_dpbf16_ps(a##i, x, y);
        REP24(STEP)
    }
    double dt = or1_now() - t0;
#define SUM(i) *sink += _mm512_reduce_add_ps(a##i);
    REP24(SUM)
    return dt;
}

/* Seconds for ITERS x 24 fp32 FMAs. */
static double fma_seconds(int seed, float *sink) {
    REP24(DECL)
    __m512 x = _mm512_set1_ps(1e-8f * (float)seed), y = _mm512_set1_ps(1.0f);
    double t0 = or1_now();
    for (long n = 0; n < ITERS; n++) {
#define FSTEP(i) a##i = _mm512_fmadd_ps(x, y, a##i);
        REP24(FSTEP)
    }
    double dt = or1_now() - t0;
    REP24(SUM)
    return dt;
}

/* Both rates, in instructions and in multiply-adds per second on one core. */
int main(int argc, char **argv) {
    (void)argv;
    float sink = 0;
    double dp = dp_seconds(argc, &sink), fm = fma_seconds(argc, &sink), n = 24.0 * ITERS;
    printf("{\"vdpbf16ps_ginstr\":%.2f,\"vdpbf16ps_gmac\":%.1f,\"fma_ginstr\":%.2f,\"fma_gmac\":%.1f,"
           "\"bf16_over_fma_mac\":%.2f,\"sink\":%g}\n",
           n / dp / 1e9, 32 * n / dp / 1e9, n / fm / 1e9, 16 * n / fm / 1e9, 2 * fm / dp, (double)sink);
    return 0;
}
#else
/* Nothing to measure without AVX512-BF16. */
int main(void) {
    fprintf(stderr, "bench_dot_rate: built without AVX512-BF16 (-march=native on a CPU without it)\n");
    return 77;
}
#endif
