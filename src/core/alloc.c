/* Checked allocation, timing and thread control. */
#include "or1/core.h"

#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* Prints the failed request and exits: a training run cannot continue without memory. */
static void out_of_memory(size_t n) {
    fprintf(stderr, "or1: out of memory allocating %zu bytes\n", n);
    exit(2);
}

/* malloc that exits on failure. */
void *or1_malloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) out_of_memory(n);
    return p;
}

/* calloc that exits on failure (and on count*size overflow). */
void *or1_calloc(size_t count, size_t size) {
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) out_of_memory(count * size);
    return p;
}

/* realloc that exits on failure. */
void *or1_realloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) out_of_memory(n);
    return q;
}

/* strdup that exits on failure. */
char *or1_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = or1_malloc(n);
    memcpy(d, s, n);
    return d;
}

/* See core.h. */
void or1_text_add(or1_text *t, const void *b, size_t n) {
    if (t->len + n + 1 > t->cap) {
        t->cap = 2 * (t->len + n + 1);
        t->s = or1_realloc(t->s, t->cap);
    }
    if (n) memcpy(t->s + t->len, b, n);
    t->len += n;
    t->s[t->len] = '\0';
}

/* Zeroed, 64-byte aligned float buffer (cache-line and AVX-512 friendly). */
float *or1_alloc_floats(size_t n) {
    if (n > SIZE_MAX / sizeof(float) - 64) out_of_memory(SIZE_MAX);
    size_t bytes = (n * sizeof(float) + 63) & ~(size_t)63;
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0) out_of_memory(bytes);
    memset(p, 0, bytes);
    return p;
}

/* Monotonic seconds. */
double or1_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Sets OpenMP and OpenBLAS to the same thread count. */
void or1_set_threads(int n) {
    if (n <= 0) return;
    omp_set_num_threads(n);
    openblas_set_num_threads(n);
}

/* Number of OpenMP threads a parallel region will use. */
int or1_threads(void) { return omp_get_max_threads(); }

/* The name of the core whose kernels OpenBLAS runs. */
const char *or1_blas_core(void) {
    const char *core = openblas_get_corename();
    return core ? core : "unknown";
}

/* OpenBLAS chooses its kernels by the CPU's model number when it loads. A model it does not
 * know (as virtual machines often report) gets an old SSE kernel: 30-57 GFLOP/s where the
 * AVX-512 kernel reaches about 280 on the same 2 cores. Names the core whose kernels the CPU's
 * features support when OpenBLAS fell back to one without AVX2, else NULL. */
const char *or1_blas_better_core(void) {
    static const char *const slow[] = {"prescott", "core2",  "penryn", "dunnington", "nehalem", "sandybridge",
                                       "atom",     "katmai", "banias", "northwood",  "coppermine"};
    const char *core = or1_blas_core();
    bool is_slow = false;
    for (size_t i = 0; i < sizeof slow / sizeof *slow; i++) is_slow |= strcasecmp(core, slow[i]) == 0;
    if (!is_slow) return NULL;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        return "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
    return NULL;
}
