/* Replays fuzz inputs through a target's LLVMFuzzerTestOneInput without libFuzzer, so the test
 * suite runs the committed corpora (and generated pathological inputs) under any compiler and
 * under ASan/UBSan. Usage: replay_<name> [--max-seconds S] [--verbose] PATH... where each PATH
 * is an input file or a folder of them. A crash or sanitizer report ends the process; an input
 * that takes longer than S seconds (default 5) is a failure. --verbose prints, per input, its
 * time and the last error message the library recorded while it ran. */
#include "fuzz.h"

#include "../tests/check.h"
#include "or1/core.h"

#include <dirent.h>
#include <sys/stat.h>
#include <time.h>

static double max_seconds = 5;
static size_t replayed;
static int verbose;

/* Seconds on the monotonic clock. */
static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Runs one input file through the target and checks that it ended in time. */
static void replay_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!CHECK(f != NULL, "%s: cannot open", path)) return;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    rewind(f);
    uint8_t *data = malloc(size > 0 ? (size_t)size : 1);
    if (!data) abort();
    size_t n = fread(data, 1, size > 0 ? (size_t)size : 0, f);
    fclose(f);
    if (CHECK(n == (size_t)(size > 0 ? size : 0), "%s: short read", path)) {
        or1_fail("%s", "no error");
        double t0 = now();
        LLVMFuzzerTestOneInput(data, n);
        double dt = now() - t0;
        CHECK(dt <= max_seconds, "%s: took %.2f s (limit %.0f s)", path, dt, max_seconds);
        if (verbose) fprintf(stderr, "replay: %s: %.3f s: %s\n", path, dt, or1_error());
        replayed++;
    }
    free(data);
}

/* Replays a file, or every file of a folder (not recursing). */
static void replay_path(const char *path) {
    struct stat st;
    if (!CHECK(stat(path, &st) == 0, "%s: not found", path)) return;
    if (!S_ISDIR(st.st_mode)) {
        replay_file(path);
        return;
    }
    DIR *d = opendir(path);
    if (!CHECK(d != NULL, "%s: cannot list", path)) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char file[4096];
        snprintf(file, sizeof file, "%s/%s", path, e->d_name);
        replay_file(file);
    }
    closedir(d);
}

/* Replays every path given; fails when none held an input. */
int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--max-seconds") == 0 && i + 1 < argc) max_seconds = atof(argv[++i]);
        else if (strcmp(argv[i], "--verbose") == 0) verbose = 1;
        else replay_path(argv[i]);
    }
    CHECK(replayed > 0, "no inputs replayed");
    fprintf(stderr, "%zu inputs replayed\n", replayed);
    return check_report();
}
