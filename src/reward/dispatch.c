/* Reward dispatch: math verifier or code sandbox, per the row's ability. */
#include "or1/reward.h"

#include "or1/core.h"
#include "or1/reward_math.h"
#include "or1/reward_sandbox.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Math: the verifier against the row's gold answers. */
static float score_math(const or1_reward_job *j) {
    or1_math_result r;
    if (or1_math_verify_json(j->response, j->ground_truth, NULL, &r) != 0) {
        fprintf(stderr, "or1: warning: math ground truth not usable (%s)\n", or1_error());
        return 0.0f;
    }
    float s = r.correct ? 1.0f : 0.0f;
    or1_math_result_free(&r);
    return s;
}

/* Code: parse each job's tests, run all jobs through the pool, 1 when every test passed. */
static void score_code(const or1_reward_job *jobs, const size_t *idx, size_t n, or1_sandbox_pool *pool,
                       double time_limit_s, float *scores) {
    or1_code_tests *tests = or1_calloc(n, sizeof *tests);
    or1_code_job *cj = or1_calloc(n, sizeof *cj);
    or1_code_result *res = or1_calloc(n, sizeof *res);
    bool *ok = or1_calloc(n, sizeof *ok);
    size_t m = 0;
    size_t *map = or1_malloc(n * sizeof *map);
    for (size_t i = 0; i < n; i++) {
        cJSON *gt = cJSON_CreateString(jobs[idx[i]].ground_truth);
        ok[i] = or1_code_tests_parse(gt, &tests[i], "ground_truth") == 0;
        cJSON_Delete(gt);
        if (!ok[i]) {
            fprintf(stderr, "or1: warning: code tests not usable (%s)\n", or1_error());
            continue;
        }
        cj[m] = (or1_code_job){.response = jobs[idx[i]].response, .tests = &tests[i], .time_limit_s = time_limit_s};
        map[m++] = i;
    }
    if (m > 0 && or1_sandbox_pool_run(pool, cj, res, m) != 0)
        fprintf(stderr, "or1: warning: a sandbox run failed (%s); such responses score 0\n", or1_error());
    for (size_t i = 0; i < n; i++) scores[idx[i]] = 0.0f;
    for (size_t k = 0; k < m; k++) {
        scores[idx[map[k]]] = res[k].correct ? 1.0f : 0.0f;
        or1_code_result_free(&res[k]);
    }
    for (size_t i = 0; i < n; i++)
        if (ok[i]) or1_code_tests_free(&tests[i]);
    free(map);
    free(ok);
    free(res);
    free(cj);
    free(tests);
}

/* Math jobs run on OpenMP threads (the verifier is reentrant); code jobs go to the pool. */
void or1_reward_batch(const or1_reward_job *jobs, size_t n, or1_sandbox_pool *pool, double time_limit_s,
                      float *scores) {
    size_t *code = or1_malloc((n ? n : 1) * sizeof *code), n_code = 0;
    for (size_t i = 0; i < n; i++)
        if (jobs[i].ability == OR1_ABILITY_CODE) code[n_code++] = i;
    #pragma omp parallel for schedule(dynamic, 4)
    for (size_t i = 0; i < n; i++)
        if (jobs[i].ability == OR1_ABILITY_MATH) scores[i] = score_math(&jobs[i]);
    if (n_code > 0) {
        if (pool) score_code(jobs, code, n_code, pool, time_limit_s, scores);
        else
            for (size_t k = 0; k < n_code; k++) scores[code[k]] = 0.0f;
    }
    free(code);
}
