/* Shared by the fuzz targets: the input as a NUL-terminated string, as a file in a private
 * scratch folder (for the parsers that take a path), and cut into lines. Each target's
 * LLVMFuzzerTestOneInput feeds one parser, which must return an error or a value for any
 * input, never crash, hang, leak or read out of bounds. The same targets run under libFuzzer
 * (make fuzz) and under fuzz/replay.c, which replays the committed corpora in the test suite. */
#ifndef OR1_FUZZ_H
#define OR1_FUZZ_H

#include <dirent.h>
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

static char fuzz_scratch[64];

/* Removes the scratch folder and what is left in it (at exit). */
static inline void fuzz_dir_remove(void) {
    DIR *d = opendir(fuzz_scratch);
    struct dirent *e;
    char path[128];
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.' && snprintf(path, sizeof path, "%s/%s", fuzz_scratch, e->d_name) > 0) unlink(path);
    if (d) closedir(d);
    rmdir(fuzz_scratch);
}

/* This process's scratch folder (made once under /tmp, removed at exit; a folder of its own,
 * so a parser that reads files beside its input, such as tokenizer_config.json, sees only
 * what the target put there). */
static inline const char *fuzz_dir(void) {
    if (!fuzz_scratch[0]) {
        snprintf(fuzz_scratch, sizeof fuzz_scratch, "/tmp/or1-fuzz-XXXXXX");
        if (!mkdtemp(fuzz_scratch)) abort();
        atexit(fuzz_dir_remove);
    }
    return fuzz_scratch;
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
