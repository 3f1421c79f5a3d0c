/* Reward dispatch: math verifier or code sandbox, per the row's ability. Every reward ends as
 * a score or as an error status (reward.h); a failure of the machinery is never a 0. */
#include "or1/reward.h"

#include "or1/core.h"
#include "or1/reward_math.h"
#include "or1/reward_sandbox.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The status names, in enum order. */
const char *or1_reward_status_name(or1_reward_status s) {
    static const char *const names[] = {"ok", "timeout", "verifier_error", "sandbox_error", "resource"};
    return (unsigned)s < OR1_REWARD_N_STATUS ? names[s] : "unknown";
}

/* A decided reward. */
static or1_reward scored(bool correct) { return (or1_reward){.score = correct ? 1.0f : 0.0f,
                                                             .status = OR1_REWARD_OK, .seconds = 0.0f}; }

/* An undecided one, named on stderr with its cause. */
static or1_reward failed(or1_reward_status st, const char *why) {
    fprintf(stderr, "or1: warning: reward %s: %s\n", or1_reward_status_name(st), why);
    return (or1_reward){.score = NAN, .status = st, .seconds = 0.0f};
}

/* Math: the verifier against the row's gold answers, started at t0. A check that a bound cut
 * short without a match is undecided: past the clock it timed out, else it ran out of memory
 * or work. */
static or1_reward verify_math(const or1_reward_job *j, const or1_reward_opts *o, double t0) {
    or1_math_limits lim;
    or1_math_limits_defaults(&lim);
    lim.strict_box = o->strict_box;
    lim.keep_base = o->keep_base;
    or1_math_result r;
    if (or1_math_verify_json(j->response, j->ground_truth, &lim, &r) != 0)
        return failed(OR1_REWARD_VERIFIER_ERROR, or1_error());
    bool correct = r.correct, cut = r.bounded && !r.correct;
    or1_math_result_free(&r);
    if (!cut) return scored(correct);
    if (or1_now() - t0 >= lim.time_limit_s)
        return failed(OR1_REWARD_TIMEOUT, "the math verifier's clock ran out before a verdict");
    return failed(OR1_REWARD_RESOURCE, "a memory, work or depth bound cut the math verification short");
}

/* verify_math with the time it took (one clock read serves both). */
static or1_reward score_math(const or1_reward_job *j, const or1_reward_opts *o) {
    double t0 = or1_now();
    or1_reward r = verify_math(j, o, t0);
    r.seconds = (float)(or1_now() - t0);
    return r;
}

/* One ground truth's parsed tests, or the error that refused them. */
typedef struct {
    const char *key;
    or1_code_tests tests;
    char *error; /* NULL when the tests parsed */
} cache_entry;

struct or1_reward_cache {
    cache_entry *e;
    size_t n, cap;
};

or1_reward_cache *or1_reward_cache_new(void) { return or1_calloc(1, sizeof(or1_reward_cache)); }

/* Frees every parsed test list. */
void or1_reward_cache_free(or1_reward_cache *c) {
    if (!c) return;
    for (size_t i = 0; i < c->n; i++) {
        if (c->e[i].error) free(c->e[i].error);
        else or1_code_tests_free(&c->e[i].tests);
    }
    free(c->e);
    free(c);
}

/* How many ground truths were parsed. */
size_t or1_reward_cache_parsed(const or1_reward_cache *c) { return c->n; }

/* The entry of one ground truth, parsing it on first sight (the row's tests, once). */
static const cache_entry *cache_get(or1_reward_cache *c, const char *truth) {
    for (size_t i = 0; i < c->n; i++)
        if (c->e[i].key == truth) return &c->e[i];
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 16;
        c->e = or1_realloc(c->e, c->cap * sizeof *c->e);
    }
    cache_entry *e = &c->e[c->n++];
    memset(e, 0, sizeof *e);
    e->key = truth;
    cJSON *gt = cJSON_CreateString(truth);
    if (or1_code_tests_parse(gt, &e->tests, "ground_truth") != 0) e->error = or1_strdup(or1_error());
    cJSON_Delete(gt);
    return e;
}

/* Code: each job's tests from the cache, every usable job through the pool at once. */
static void score_code(const or1_reward_job *jobs, const size_t *idx, size_t n, or1_sandbox_pool *pool,
                       double time_limit_s, or1_reward_cache *cache, or1_reward *out) {
    or1_code_job *cj = or1_calloc(n, sizeof *cj);
    or1_code_result *res = or1_calloc(n, sizeof *res);
    size_t *map = or1_malloc(n * sizeof *map), m = 0;
    for (size_t i = 0; i < n; i++) {
        const cache_entry *e = cache_get(cache, jobs[idx[i]].ground_truth);
        if (e->error) {
            out[idx[i]] = failed(OR1_REWARD_VERIFIER_ERROR, e->error);
            continue;
        }
        cj[m] = (or1_code_job){.response = jobs[idx[i]].response, .tests = &e->tests,
                               .time_limit_s = time_limit_s};
        map[m++] = idx[i];
    }
    if (m > 0 && or1_sandbox_pool_run(pool, cj, res, m) != 0)
        fprintf(stderr, "or1: warning: %s\n", or1_error());
    for (size_t k = 0; k < m; k++) {
        out[map[k]] = res[k].sandbox_failed ? (or1_reward){.score = NAN, .status = OR1_REWARD_SANDBOX_ERROR,
                                                           .seconds = 0.0f} : scored(res[k].correct);
        out[map[k]].seconds = (float)res[k].wall_s;
        or1_code_result_free(&res[k]);
    }
    free(map);
    free(res);
    free(cj);
}

/* Math jobs run on OpenMP threads (the verifier is reentrant); code jobs go to the pool. */
void or1_reward_batch(const or1_reward_job *jobs, size_t n, or1_sandbox_pool *pool, const or1_reward_opts *opts,
                      or1_reward_cache *cache, or1_reward *out) {
    double time_limit_s = opts->code_timeout;
    size_t *code = or1_malloc((n ? n : 1) * sizeof *code), n_code = 0;
    for (size_t i = 0; i < n; i++)
        if (jobs[i].ability == OR1_ABILITY_CODE) code[n_code++] = i;
    #pragma omp parallel for schedule(dynamic, 4)
    for (size_t i = 0; i < n; i++)
        if (jobs[i].ability == OR1_ABILITY_MATH) out[i] = score_math(&jobs[i], opts);
    if (n_code > 0 && !pool) {
        for (size_t k = 0; k < n_code; k++) out[code[k]] = failed(OR1_REWARD_SANDBOX_ERROR, "no sandbox pool for code");
    } else if (n_code > 0) {
        or1_reward_cache *own = cache ? NULL : or1_reward_cache_new();
        score_code(jobs, code, n_code, pool, time_limit_s, cache ? cache : own, out);
        or1_reward_cache_free(own);
    }
    free(code);
}
