/* The check harness of the C unit tests: CHECK(cond, fmt, ...) counts a pass or prints the
 * failure with its line; near() compares numbers; check_report() prints the closing line
 * `N passed, N failed` and gives the test's exit status. Counting is single-threaded: a test's
 * threads count their own disagreements and the main thread checks the counts. */
#ifndef OR1_TESTS_CHECK_H
#define OR1_TESTS_CHECK_H

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

static int passed, failed;

/* Records one check; prints the failure with its line. Returns ok, so a test can skip what a
 * failed check makes meaningless. */
static inline bool check(bool ok, int line, const char *fmt, ...) {
    if (ok) {
        passed++;
        return true;
    }
    failed++;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL line %d: ", line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return false;
}
#define CHECK(c, ...) check((c) != 0, __LINE__, __VA_ARGS__)

/* |got - want| <= atol + rtol * |want|; a NaN is never near anything. */
static inline bool near(double got, double want, double atol, double rtol) {
    return fabs(got - want) <= atol + rtol * fabs(want);
}

/* Prints the closing line `N passed, N failed`; returns the exit status (1 if any failed). */
static inline int check_report(void) {
    fflush(stderr);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

#endif
