/* Helpers shared by the CUDA test programs: GPU detection with ctest's skip code, random
 * host data, device copies and a scaled max-error check (a CHECK of tests/check.h). */
#ifndef OR1_TESTS_CUDA_COMMON_H
#define OR1_TESTS_CUDA_COMMON_H

#include "or1/core.h"
#include "cuda_kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"

enum { SKIP_CODE = 77 };

/* Exits with the skip code and says why when no GPU is visible. */
static inline void require_gpu(const char *test) {
    if (or1_cuda_device_count() > 0) return;
    printf("SKIP %s: no CUDA GPU visible (cudaGetDeviceCount reports none); this test needs one\n", test);
    exit(SKIP_CODE);
}

/* Uniform values in [-scale, scale) from a counter-based stream. */
static inline float *rand_floats(size_t n, uint64_t seed, float scale) {
    float *x = or1_alloc_floats(n);
    for (size_t i = 0; i < n; i++) x[i] = (float)((2 * or1_rand_uniform(seed, 1, i) - 1) * scale);
    return x;
}

/* Device copy of a host buffer; exits on failure (a test cannot go on without it). */
static inline void *to_dev(or1_cuda *g, const void *h, size_t bytes) {
    void *d = or1_cuda_alloc(bytes);
    if (!d || or1_cuda_upload(g, d, h, bytes)) {
        fprintf(stderr, "FAIL upload: %s\n", or1_error());
        exit(1);
    }
    return d;
}

/* Host copy of n floats of device memory (synchronises and reports pending errors). */
static inline float *from_dev(or1_cuda *g, const void *d, size_t n) {
    float *h = or1_alloc_floats(n);
    if (or1_cuda_sync(g) || or1_cuda_download(g, h, d, n * sizeof *h)) {
        fprintf(stderr, "FAIL download: %s\n", or1_error());
        exit(1);
    }
    return h;
}

/* Checks max|got - want| / max(max|want|, floor) against tol; prints the error when it holds
 * too, to show the margin. The floor keeps results that should be zero (and are rounding noise
 * on both sides) from being compared to their own noise. */
static inline void expect_close_floor(const char *what, const float *got, const float *want, size_t n, double tol,
                                      double floor) {
    double err = 0, ref = floor;
    size_t worst = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]);
        if (isnan(d)) d = INFINITY; /* a NaN anywhere fails, and stays the worst */
        if (d > err) err = d, worst = i;
        if (fabs(want[i]) > ref) ref = fabs(want[i]);
    }
    double rel = err / ref;
    if (CHECK(rel <= tol, "%s: scaled max error %.3g (tol %.1g) at %zu: got %g want %g", what, rel, tol, worst,
              got[worst], want[worst]))
        printf("ok   %-40s scaled max error %.3g (tol %.1g)\n", what, rel, tol);
}

/* expect_close_floor with a floor of 1e-6. */
static inline void expect_close(const char *what, const float *got, const float *want, size_t n, double tol) {
    expect_close_floor(what, got, want, n, tol, 1e-6);
}

/* Downloads n floats from d and compares them with want; frees the host copy. */
static inline void expect_dev(or1_cuda *g, const char *what, const void *d, const float *want, size_t n, double tol) {
    float *got = from_dev(g, d, n);
    expect_close(what, got, want, n, tol);
    free(got);
}

#endif
