/* Runs the labelled cases of tests/math/cases.jsonl ({"response", "gold", "expected",
 * "reason"}) through or1_math_verify and reports every verdict that differs. With
 * "--threads N" every thread runs all cases at once, checking that the verifier is
 * reentrant (the verdicts must not change). */
#include "or1/core.h"
#include "or1/io.h"
#include "or1/reward_math.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"

typedef struct {
    char *response;
    char **gold;
    size_t n_gold;
    bool expected;
    char *reason;
    size_t line;
} mcase;

typedef struct {
    const mcase *cases;
    size_t n;
    int wrong;
} job;

/* Loads the cases; exits on a malformed file (the file is part of the test). */
static mcase *load(const char *path, size_t *n) {
    or1_jsonl_reader r;
    if (or1_jsonl_open(&r, path) != 0) {
        fprintf(stderr, "%s\n", or1_error());
        exit(2);
    }
    size_t cap = 1024;
    mcase *cs = or1_malloc(cap * sizeof *cs);
    *n = 0;
    cJSON *row;
    int got;
    while ((got = or1_jsonl_next(&r, &row)) == 1) {
        const cJSON *resp = cJSON_GetObjectItemCaseSensitive(row, "response");
        const cJSON *gold = cJSON_GetObjectItemCaseSensitive(row, "gold");
        const cJSON *exp = cJSON_GetObjectItemCaseSensitive(row, "expected");
        const cJSON *why = cJSON_GetObjectItemCaseSensitive(row, "reason");
        if (!cJSON_IsString(resp) || !cJSON_IsBool(exp) || !cJSON_IsString(why) ||
            !(cJSON_IsString(gold) || cJSON_IsArray(gold))) {
            fprintf(stderr, "%s:%zu: malformed case\n", path, r.line);
            exit(2);
        }
        if (*n == cap) cs = or1_realloc(cs, (cap *= 2) * sizeof *cs);
        mcase *c = &cs[(*n)++];
        c->response = or1_strdup(resp->valuestring);
        c->expected = cJSON_IsTrue(exp);
        c->reason = or1_strdup(why->valuestring);
        c->line = r.line;
        c->n_gold = cJSON_IsString(gold) ? 1 : (size_t)cJSON_GetArraySize(gold);
        c->gold = or1_malloc((c->n_gold ? c->n_gold : 1) * sizeof *c->gold);
        if (cJSON_IsString(gold)) c->gold[0] = or1_strdup(gold->valuestring);
        for (size_t k = 0; cJSON_IsArray(gold) && k < c->n_gold; k++)
            c->gold[k] = or1_strdup(cJSON_GetArrayItem(gold, (int)k)->valuestring);
        cJSON_Delete(row);
    }
    if (got < 0) {
        fprintf(stderr, "%s\n", or1_error());
        exit(2);
    }
    or1_jsonl_close(&r);
    return cs;
}

/* True when the case's verdict is the labelled one; otherwise, when why is given, writes there
 * what went wrong. */
static bool verdict_ok(const mcase *c, char *why, size_t cap) {
    or1_math_result res;
    if (or1_math_verify(c->response, (const char *const *)c->gold, c->n_gold, NULL, &res) != 0) {
        if (why) snprintf(why, cap, "error %s", or1_error());
        return false;
    }
    bool ok = res.correct == c->expected;
    if (!ok && why)
        snprintf(why, cap, "expected %s, got %s (extracted \"%s\", gold \"%s\"): %s", c->expected ? "true" : "false",
                 res.correct ? "true" : "false", res.extracted, c->n_gold ? c->gold[0] : "", c->reason);
    or1_math_result_free(&res);
    return ok;
}

/* Counts the wrong verdicts of every case (a thread's share of the reentrancy run). */
static int count_wrong(const mcase *cs, size_t n) {
    int wrong = 0;
    for (size_t i = 0; i < n; i++) wrong += !verdict_ok(&cs[i], NULL, 0);
    return wrong;
}

/* Checks every case's verdict, saying what went wrong with each failing one. */
static void check_cases(const mcase *cs, size_t n) {
    char why[4096];
    for (size_t i = 0; i < n; i++) CHECK(verdict_ok(&cs[i], why, sizeof why), "line %zu: %s", cs[i].line, why);
}

/* Thread body: all cases, quietly. */
static void *thread_main(void *arg) {
    job *j = arg;
    j->wrong = count_wrong(j->cases, j->n);
    return NULL;
}

/* Usage: test_math_cases CASES.jsonl [--threads N] */
int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_math_cases CASES.jsonl [--threads N]\n");
        return 2;
    }
    size_t n;
    mcase *cs = load(argv[1], &n);
    int threads = argc >= 4 && strcmp(argv[2], "--threads") == 0 ? atoi(argv[3]) : 0;
    if (threads <= 0) {
        check_cases(cs, n);
        size_t pos = 0;
        for (size_t i = 0; i < n; i++) pos += cs[i].expected;
        printf("math cases: %zu (%zu expected true)\n", n, pos);
    } else {
        pthread_t *t = or1_malloc((size_t)threads * sizeof *t);
        job *jobs = or1_calloc((size_t)threads, sizeof *jobs);
        for (int k = 0; k < threads; k++) {
            jobs[k] = (job){cs, n, 0};
            pthread_create(&t[k], NULL, thread_main, &jobs[k]);
        }
        for (int k = 0; k < threads; k++) {
            pthread_join(t[k], NULL);
            CHECK(jobs[k].wrong == 0, "thread %d: %d wrong verdicts of %zu", k, jobs[k].wrong, n);
        }
        printf("math cases on %d threads: %zu each\n", threads, n);
        free(t);
        free(jobs);
    }
    for (size_t i = 0; i < n; i++) {
        free(cs[i].response);
        free(cs[i].reason);
        for (size_t k = 0; k < cs[i].n_gold; k++) free(cs[i].gold[k]);
        free(cs[i].gold);
    }
    free(cs);
    return check_report();
}
