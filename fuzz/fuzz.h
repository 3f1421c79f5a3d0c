/* Shared by the fuzz targets: the input as a NUL-terminated string, as a file in a private
 * scratch folder (for the parsers that take a path), and cut into lines. Each target's
 * LLVMFuzzerTestOneInput feeds one parser, which must return an error or a value for any
 * input, never crash, hang, leak or read out of bounds. The same targets run under libFuzzer
 * (make fuzz) and under fuzz/replay.c, which replays the committed corpora in the test suite. */
#ifndef OR1_FUZZ_H
#define OR1_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);

/* A malloc'd copy of the input with a terminating NUL. */
static inline char *fuzz_text(const uint8_t *data, size_t n) {
    char *s = malloc(n + 1);
    if (!s) abort();
    memcpy(s, data, n);
    s[n] = '\0';
    return s;
}

/* This process's scratch folder (made once under /tmp; a folder of its own, so a parser that
 * reads files beside its input, such as tokenizer_config.json, sees only what the target put
 * there). */
static inline const char *fuzz_dir(void) {
    static char dir[64];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/or1-fuzz-XXXXXX");
        if (!mkdtemp(dir)) abort();
    }
    return dir;
}

/* Writes n bytes to the file `name` of the scratch folder and returns its path (valid until
 * the next call with another name). */
static inline const char *fuzz_file(const uint8_t *data, size_t n, const char *name) {
    static char path[128];
    snprintf(path, sizeof path, "%s/%s", fuzz_dir(), name);
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (n && fwrite(data, 1, n, f) != n) abort();
    fclose(f);
    return path;
}

/* Cuts text (modified in place) at each newline into at most max lines; returns how many. */
static inline size_t fuzz_lines(char *text, const char **lines, size_t max) {
    size_t k = 0;
    for (char *p = text; p && k < max; k++) {
        lines[k] = p;
        p = strchr(p, '\n');
        if (p) *p++ = '\0';
    }
    return k;
}

#endif
