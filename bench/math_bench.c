/* Math verifier throughput: verifications per second over (response, gold) pairs made by
 * bench/math_ref.py, on one thread and on all cores, split by kind of pair; writes one
 * verdict (0/1) per pair for the reference comparison.
 * Usage: math_bench PAIRS.jsonl VERDICTS.txt */
#include "or1/core.h"
#include "or1/io.h"
#include "or1/reward_math.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    char *response, *gold;
    bool expected, ref;
} pair;

typedef struct {
    const pair *pairs;
    size_t n;
} job;

/* Loads the pairs (first gold of each). */
static pair *load(const char *path, size_t *n) {
    or1_jsonl_reader r;
    if (or1_jsonl_open(&r, path) != 0) return NULL;
    size_t cap = 1024;
    pair *ps = or1_malloc(cap * sizeof *ps);
    *n = 0;
    cJSON *row;
    while (or1_jsonl_next(&r, &row) == 1) {
        if (*n == cap) ps = or1_realloc(ps, (cap *= 2) * sizeof *ps);
        pair *p = &ps[(*n)++];
        p->response = or1_strdup(cJSON_GetObjectItem(row, "response")->valuestring);
        p->gold = or1_strdup(cJSON_GetArrayItem(cJSON_GetObjectItem(row, "gold"), 0)->valuestring);
        p->expected = cJSON_IsTrue(cJSON_GetObjectItem(row, "expected"));
        p->ref = cJSON_IsTrue(cJSON_GetObjectItem(row, "ref"));
        cJSON_Delete(row);
    }
    or1_jsonl_close(&r);
    return ps;
}

/* Verifies pairs[k] for k = first, first + step, ... whose filter matches; returns the count. */
static size_t sweep(const pair *ps, size_t n, size_t first, size_t step, int only_ref, bool *verdicts) {
    size_t done = 0;
    for (size_t k = first; k < n; k += step) {
        if (only_ref && !ps[k].ref) continue;
        const char *g = ps[k].gold;
        or1_math_result res;
        or1_math_verify(ps[k].response, &g, 1, NULL, &res);
        if (verdicts) verdicts[k] = res.correct;
        or1_math_result_free(&res);
        done++;
    }
    return done;
}

/* Verifications per second of one sweep kind, repeated for at least 0.5 s. */
static double rate(const pair *ps, size_t n, size_t first, size_t step, int only_ref) {
    size_t done = 0;
    double t0 = or1_now(), dt;
    do done += sweep(ps, n, first, step, only_ref, NULL);
    while ((dt = or1_now() - t0) < 0.5);
    return (double)done / dt;
}

/* Thread body: every pair once. */
static void *worker(void *arg) {
    job *j = arg;
    sweep(j->pairs, j->n, 0, 1, 0, NULL);
    return NULL;
}

/* All pairs on every core at once: total verifications per second. */
static double parallel_rate(const pair *ps, size_t n, int threads) {
    pthread_t t[256];
    job j = {ps, n};
    int rounds = 0;
    double t0 = or1_now(), dt;
    do {
        for (int k = 0; k < threads; k++) pthread_create(&t[k], NULL, worker, &j);
        for (int k = 0; k < threads; k++) pthread_join(t[k], NULL);
        rounds++;
    } while ((dt = or1_now() - t0) < 0.5);
    return (double)n * threads * rounds / dt;
}

/* Loads the pairs, writes the verdicts, prints the rates. */
int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: math_bench PAIRS.jsonl VERDICTS.txt\n");
        return 2;
    }
    size_t n;
    pair *ps = load(argv[1], &n);
    if (!ps) {
        fprintf(stderr, "math_bench: %s\n", or1_error());
        return 1;
    }
    bool *verdicts = or1_calloc(n, sizeof *verdicts);
    sweep(ps, n, 0, 1, 0, verdicts);
    size_t as_built = 0, n_ref = 0;
    FILE *f = fopen(argv[2], "w");
    for (size_t k = 0; k < n; k++) {
        as_built += verdicts[k] == ps[k].expected;
        n_ref += ps[k].ref;
        if (f) fprintf(f, "%d\n", verdicts[k]);
    }
    if (f) fclose(f);
    int threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (threads < 1) threads = 1;
    if (threads > 256) threads = 256;
    printf("or1 math: %zu pairs, verdict as constructed on %zu\n", n, as_built);
    printf("or1 math: boxed gold after 2 KB of reasoning: %.0f verifications/s (1 thread)\n", rate(ps, n, 0, 3, 0));
    printf("or1 math: 0+gold (parsed, equal):              %.0f verifications/s (1 thread)\n", rate(ps, n, 1, 3, 0));
    printf("or1 math: (gold)+1 (parsed, wrong):            %.0f verifications/s (1 thread)\n", rate(ps, n, 2, 3, 0));
    printf("or1 math: all pairs:                           %.0f verifications/s (1 thread)\n", rate(ps, n, 0, 1, 0));
    printf("or1 math: all pairs:                           %.0f verifications/s (%d threads)\n",
           parallel_rate(ps, n, threads), threads);
    printf("or1 math: the %zu reference pairs:             %.0f verifications/s (1 thread)\n", n_ref,
           rate(ps, n, 0, 1, 1));
    for (size_t k = 0; k < n; k++) free(ps[k].response), free(ps[k].gold);
    free(ps);
    free(verdicts);
    return 0;
}
