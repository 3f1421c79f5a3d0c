/* What the CPU kernels' files share: the vector type of their hand-vectorised loops, its loads
 * and stores, and the mark of a kernel every phase must run as one compiled copy. */
#ifndef OR1_KERNELS_INTERNAL_H
#define OR1_KERNELS_INTERNAL_H

#include <immintrin.h>
#include <math.h>
#include <string.h>

/* 16 float lanes where the CPU has AVX-512, else 8 (AVX2). */
#if defined(__AVX512F__)
enum { VL = 16 };
#else
enum { VL = 8 };
#endif
typedef float vf __attribute__((vector_size(VL * sizeof(float))));

/* Loads VL floats from any alignment. */
static inline vf loadv(const float *p) {
    vf v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Stores VL floats to any alignment. */
static inline void storev(float *p, vf v) { memcpy(p, &v, sizeof v); }

/* a * b + c rounded once, lane by lane: an FMA written out. Under -ffp-contract=fast the compiler
 * fuses a * b + c where it likes, and may fuse a loop's body but not its remainder (measured: the
 * decode and packed attentions parted in the last bit when one summed an odd number of terms
 * through att_pv's unrolled loop); the kernels both sides of the rollout/trainer boundary run
 * spell their multiply-adds with fmav and fmaf, so that every term rounds the same way wherever
 * it falls. */
static inline vf fmav(vf a, vf b, vf c) {
#if defined(__AVX512F__)
    return (vf)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
#elif defined(__FMA__) && defined(__AVX__)
    return (vf)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
#else
    vf r;
    for (int l = 0; l < VL; l++) r[l] = fmaf(a[l], b[l], c[l]);
    return r;
#endif
}

/* The same lane broadcast from a float. */
static inline vf splatv(float x) { return (vf){0} + x; }

/* A kernel the trainer and the rollout both run (attention's products and softmax, the head's
 * fold) is compiled once and called, never inlined, cloned or specialised per caller, so that
 * one machine code serves both. Clang (the fuzz build) lacks noipa; noinline is its nearest. */
#if defined(__clang__)
#define OR1_ONE_COPY __attribute__((noinline))
#else
#define OR1_ONE_COPY __attribute__((noipa))
#endif

#endif
