/* Encode throughput of the tokenizer: reads JSONL {"text"} rows, encodes every row once
 * with an empty BPE cache (cold), then `reps` more times (warm), on one thread and on
 * `threads` threads sharing the tokenizer. Prints one JSON line of MB/s figures, per
 * second of wall clock and (single-threaded passes) per second of CPU time, which a busy
 * machine disturbs less.
 * usage: tokenizer_bench TOKENIZER CORPUS.jsonl [REPS] [THREADS] */
#include "or1/core.h"
#include "or1/io.h"
#include "or1/tokenizer.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* CPU seconds used by this process. */
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct {
    char **text;
    size_t *len, n, bytes;
} corpus;

/* Loads the "text" of every row. */
static int load_corpus(const char *path, corpus *c) {
    or1_jsonl_reader r;
    if (or1_jsonl_open(&r, path) != 0) return -1;
    cJSON *row;
    int got;
    size_t cap = 0;
    memset(c, 0, sizeof *c);
    while ((got = or1_jsonl_next(&r, &row)) == 1) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(row, "text");
        if (cJSON_IsString(t)) {
            if (c->n == cap) {
                cap = cap ? cap * 2 : 1024;
                c->text = or1_realloc(c->text, cap * sizeof *c->text);
                c->len = or1_realloc(c->len, cap * sizeof *c->len);
            }
            c->text[c->n] = or1_strdup(t->valuestring);
            c->len[c->n] = strlen(t->valuestring);
            c->bytes += c->len[c->n++];
        }
        cJSON_Delete(row);
    }
    or1_jsonl_close(&r);
    return got;
}

/* Encodes rows [lo, hi) of the corpus; returns the number of ids (or -1). */
static long encode_rows(const or1_tokenizer *t, const corpus *c, size_t lo, size_t hi) {
    long total = 0;
    for (size_t i = lo; i < hi; i++) {
        int32_t *ids;
        size_t n;
        if (or1_tokenizer_encode(t, c->text[i], c->len[i], 0, &ids, &n) != 0) return -1;
        total += (long)n;
        free(ids);
    }
    return total;
}

typedef struct {
    const or1_tokenizer *t;
    const corpus *c;
    int reps, k, nthreads;
    long ids;
} job;

/* One thread's share: every nthreads-th block of rows, reps times. */
static void *run_job(void *arg) {
    job *j = arg;
    size_t block = 64;
    for (int r = 0; r < j->reps; r++)
        for (size_t lo = (size_t)j->k * block; lo < j->c->n; lo += block * (size_t)j->nthreads) {
            size_t hi = lo + block < j->c->n ? lo + block : j->c->n;
            j->ids += encode_rows(j->t, j->c, lo, hi);
        }
    return NULL;
}

/* Loads the tokenizer and corpus, times the passes, prints the figures. */
int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: tokenizer_bench TOKENIZER CORPUS.jsonl [REPS] [THREADS]\n");
        return 2;
    }
    int reps = argc > 3 ? atoi(argv[3]) : 3, nth = argc > 4 ? atoi(argv[4]) : 2;
    if (reps < 1 || nth < 1 || nth > 256) return 2;
    double t0 = or1_now();
    or1_tokenizer *t = or1_tokenizer_load(argv[1]);
    if (!t) {
        fprintf(stderr, "tokenizer_bench: %s\n", or1_error());
        return 1;
    }
    double load_s = or1_now() - t0;
    corpus c;
    if (load_corpus(argv[2], &c) != 0) {
        fprintf(stderr, "tokenizer_bench: %s\n", or1_error());
        return 1;
    }
    double mb = (double)c.bytes / 1e6;
    t0 = or1_now();
    double c0 = cpu_now();
    long ids = encode_rows(t, &c, 0, c.n);
    double cold = or1_now() - t0, cold_cpu = cpu_now() - c0;
    t0 = or1_now();
    c0 = cpu_now();
    for (int r = 0; r < reps; r++) encode_rows(t, &c, 0, c.n);
    double warm = (or1_now() - t0) / reps, warm_cpu = (cpu_now() - c0) / reps;
    job jobs[256];
    pthread_t th[256];
    t0 = or1_now();
    for (int k = 0; k < nth; k++) {
        jobs[k] = (job){t, &c, reps, k, nth, 0};
        pthread_create(&th[k], NULL, run_job, &jobs[k]);
    }
    for (int k = 0; k < nth; k++) pthread_join(th[k], NULL);
    double par = (or1_now() - t0) / reps;
    printf("{\"impl\": \"or1\", \"rows\": %zu, \"mb\": %.3f, \"ids\": %ld, \"load_s\": %.3f, "
           "\"cold_mb_s\": %.2f, \"warm_mb_s\": %.2f, \"cold_mb_cpu_s\": %.2f, \"warm_mb_cpu_s\": %.2f, "
           "\"threads\": %d, \"threads_mb_s\": %.2f}\n",
           c.n, mb, ids, load_s, mb / cold, mb / warm, mb / cold_cpu, mb / warm_cpu, nth, mb / par);
    for (size_t i = 0; i < c.n; i++) free(c.text[i]);
    free(c.text);
    free(c.len);
    or1_tokenizer_free(t);
    return ids < 0 ? 1 : 0;
}
