/* Thread-local error messages for the whole library. */
#include "or1/core.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum { ERR_MAX = 2048 };
static _Thread_local char err_msg[ERR_MAX];

/* Records a formatted message as this thread's error. */
int or1_fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err_msg, sizeof err_msg, fmt, ap);
    va_end(ap);
    return -1;
}

/* Prefixes the current message with context, so errors read outer-to-inner. */
int or1_fail_ctx(const char *fmt, ...) {
    char ctx[ERR_MAX], old[ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx, sizeof ctx, fmt, ap);
    va_end(ap);
    memcpy(old, err_msg, sizeof old);
    size_t n = strnlen(ctx, ERR_MAX - 3);
    memcpy(err_msg, ctx, n);
    memcpy(err_msg + n, ": ", 2);
    size_t room = ERR_MAX - n - 2;
    size_t m = strnlen(old, room - 1);
    memcpy(err_msg + n + 2, old, m);
    err_msg[n + 2 + m] = '\0';
    return -1;
}

/* Returns the last recorded message. */
const char *or1_error(void) { return err_msg; }
