/* What the CPU kernels' files share: the vector type of their hand-vectorised loops, its loads
 * and stores. */
#ifndef OR1_KERNELS_INTERNAL_H
#define OR1_KERNELS_INTERNAL_H

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

#endif
