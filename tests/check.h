/* The check harness of the C unit tests: CHECK(cond, fmt, ...) counts a pass or prints the
 * failure with its line; the test's main reports `passed` and `failed` and exits on them. */
#ifndef OR1_TESTS_CHECK_H
#define OR1_TESTS_CHECK_H

#include <stdarg.h>
#include <stdio.h>

static int passed, failed;

/* Records one check; prints the failure with its line. */
static void check(int ok, int line, const char *fmt, ...) {
    if (ok) {
        passed++;
        return;
    }
    failed++;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL line %d: ", line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}
#define CHECK(c, ...) check((c) != 0, __LINE__, __VA_ARGS__)

#endif
