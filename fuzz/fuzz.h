/* Shared by the libFuzzer targets: the input as a NUL-terminated string, and as a file (for
 * the parsers that take a path). Each target's LLVMFuzzerTestOneInput feeds one parser, which
 * must return an error or a value for any input, never crash, leak or read out of bounds. */
#ifndef OR1_FUZZ_H
#define OR1_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A malloc'd copy of the input with a terminating NUL. */
static inline char *fuzz_text(const uint8_t *data, size_t n) {
    char *s = malloc(n + 1);
    if (!s) abort();
    memcpy(s, data, n);
    s[n] = '\0';
    return s;
}

/* Writes the input to this process's scratch file (made once, removed at exit) and returns
 * its path with the given suffix. */
static inline const char *fuzz_file(const uint8_t *data, size_t n, const char *suffix) {
    static char path[64];
    snprintf(path, sizeof path, "/tmp/or1-fuzz-%d%s", (int)getpid(), suffix);
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (n && fwrite(data, 1, n, f) != n) abort();
    fclose(f);
    return path;
}

#endif
