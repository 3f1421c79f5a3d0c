/* Measures this machine's OpenBLAS fp32 GEMM rate: the ceiling the model kernels are judged by. */
#include "or1/core.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>

/* Times square sgemms of size n (argv[1], default 2048) and prints GFLOP/s as JSON. */
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 2048;
    if (n < 16 || n > 16384) {
        fprintf(stderr, "bench_sgemm: size must be in [16, 16384]\n");
        return 2;
    }
    float *a = or1_alloc_floats((size_t)n * n), *b = or1_alloc_floats((size_t)n * n);
    float *c = or1_alloc_floats((size_t)n * n);
    for (size_t i = 0; i < (size_t)n * n; i++) a[i] = (float)(i % 7) * 0.1f, b[i] = (float)(i % 5) * 0.1f;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c, n);
    int reps = 0;
    double t0 = or1_now(), dt;
    do {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c, n);
        reps++;
        dt = or1_now() - t0;
    } while (dt < 2.0);
    printf("{\"n\":%d,\"gflops\":%.1f,\"threads\":%d}\n", n, 2.0 * n * n * (double)n * reps / dt / 1e9,
           or1_threads());
    free(a);
    free(b);
    free(c);
    return 0;
}
