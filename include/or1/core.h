/* or1 core: error reporting, checked allocation, timing.
 *
 * Errors: a failing library function records a message with or1_fail() and returns -1
 * (or NULL). Callers may prepend context with or1_fail_ctx(); the CLI prints
 * or1_error() and exits non-zero. Messages name the file and the place. */
#ifndef OR1_CORE_H
#define OR1_CORE_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define OR1_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define OR1_PRINTF(a, b)
#endif

/* Records an error message (printf-style) for this thread; always returns -1. */
int or1_fail(const char *fmt, ...) OR1_PRINTF(1, 2);
/* Prepends "context: " to the current error message; always returns -1. */
int or1_fail_ctx(const char *fmt, ...) OR1_PRINTF(1, 2);
/* The last error message recorded on this thread ("" if none). */
const char *or1_error(void);

/* Allocation that never returns NULL: on exhaustion it prints the size and exits(2). */
void *or1_malloc(size_t n);
void *or1_calloc(size_t count, size_t size);
void *or1_realloc(void *p, size_t n);
char *or1_strdup(const char *s);

/* A growing byte buffer, kept NUL-terminated (s is NULL until the first append; free(s)). */
typedef struct {
    char *s;
    size_t len, cap;
} or1_text;
/* Appends n bytes of b, doubling the room when it runs out. */
void or1_text_add(or1_text *t, const void *b, size_t n);
/* 64-byte aligned allocation for numeric buffers, zero-filled; free with free(). */
float *or1_alloc_floats(size_t n);

/* The name closest to word by edit distance among n items of `stride` bytes, each a struct
 * whose first member is its name (const char *), or NULL when none is close ("did you
 * mean"). */
const char *or1_closest_name(const char *word, const void *items, size_t n, size_t stride);

/* Wall-clock seconds from a monotonic clock. */
double or1_now(void);

/* Sets the number of worker threads for OpenMP and BLAS (n <= 0: leave the default). */
void or1_set_threads(int n);
/* The number of worker threads in use. */
int or1_threads(void);
/* The name of the core whose kernels OpenBLAS runs (as OPENBLAS_CORETYPE spells it). */
const char *or1_blas_core(void);
/* The OpenBLAS core (for OPENBLAS_CORETYPE) this CPU should use where OpenBLAS did not recognise
 * the CPU and fell back to kernels without AVX2; NULL when its own choice stands. */
const char *or1_blas_better_core(void);

/* Counter-based random numbers: each value depends only on (seed, stream, counter), so a
 * sequence's samples never depend on batch composition, slot order or thread count. */
uint64_t or1_rand_u64(uint64_t seed, uint64_t stream, uint64_t counter);
/* Uniform in [0, 1) with 53 random bits. */
double or1_rand_uniform(uint64_t seed, uint64_t stream, uint64_t counter);
/* Standard normal (Box-Muller over counters 2k and 2k+1). */
double or1_rand_normal(uint64_t seed, uint64_t stream, uint64_t counter);

#endif
