/* The reward runtime (reward.h): every reward ends as a score or as an error status, and no
 * failure of the machinery is a 0. Math: a verdict, a ground truth that cannot be used
 * (verifier_error), a comparison cut short by the depth bound (resource). Code: programs that
 * print the right output and then raise, exit non-zero or kill their own harness (where it is
 * within reach: without namespaces) fail with a score of 0 (a verdict on the program); unusable tests are verifier_error, no pool and a
 * broken sandbox are sandbox_error; a row's tests are parsed once for all its samples.
 * Usage: test_reward ok (under each isolation mode) | broken-sandbox (run with OR1_SANDBOX_ISOLATION=rlimits and a TMPDIR
 * that does not exist, so that the sandbox itself cannot start). */
#include "or1/core.h"
#include "or1/reward.h"
#include "or1/reward_sandbox.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"

static const char *STDIO_TESTS = "{\"inputs\": [\"2 3\\n\"], \"outputs\": [\"5\\n\"]}";

/* A response holding one fenced Python program. */
static char *program(const char *code) {
    size_t n = strlen(code) + 64;
    char *s = or1_malloc(n);
    snprintf(s, n, "<think>x</think>\n```python\n%s\n```\n", code);
    return s;
}

/* True if r is a decided reward with the given score. */
static bool decided(or1_reward r, float score) { return r.status == OR1_REWARD_OK && r.score == score; }

/* True if r is an undecided reward of the given status (never a number). */
static bool undecided(or1_reward r, or1_reward_status st) { return r.status == st && isnan(r.score); }

/* A string of n nested braces around x, deeper than the verifier's depth bound. */
static char *nested(int n, const char *x) {
    size_t len = strlen(x);
    char *s = or1_malloc(2 * (size_t)n + len + 1);
    memset(s, '{', (size_t)n);
    memcpy(s + n, x, len);
    memset(s + n + len, '}', (size_t)n);
    s[2 * (size_t)n + len] = '\0';
    return s;
}

/* Math: right, wrong, an unusable ground truth, and a bound that cuts the check short. */
static void test_math(void) {
    char *deep = nested(200, "2"), *deep_truth = or1_malloc(strlen(deep) + 8);
    sprintf(deep_truth, "[\"%s\"]", deep);
    or1_reward_job jobs[] = {
        {OR1_ABILITY_MATH, "so \\boxed{4}", "[\"4\"]"},
        {OR1_ABILITY_MATH, "so \\boxed{5}", "[\"4\"]"},
        {OR1_ABILITY_MATH, "so \\boxed{4}", "[\"4\", 7, {\"a\": 1}]"},
        {OR1_ABILITY_MATH, "so \\boxed{2}", deep_truth},
        {OR1_ABILITY_MATH, "no answer at all", "[\"4\"]"},
    };
    or1_reward out[5];
    or1_reward_batch(jobs, 5, NULL, &(or1_reward_opts){.code_timeout = 6}, NULL, out);
    CHECK(decided(out[0], 1), "right answer: status %d score %g", out[0].status, out[0].score);
    CHECK(decided(out[1], 0), "wrong answer: status %d score %g", out[1].status, out[1].score);
    CHECK(undecided(out[2], OR1_REWARD_VERIFIER_ERROR), "bad ground truth: status %d", out[2].status);
    CHECK(undecided(out[3], OR1_REWARD_RESOURCE), "depth bound: status %d", out[3].status);
    CHECK(decided(out[4], 0), "no extracted answer is a real 0: status %d", out[4].status);
    for (int i = 0; i < 5; i++)
        CHECK(out[i].seconds > 0 && out[i].seconds < 60, "job %d: verification time %g s", i, out[i].seconds);
    CHECK(strcmp(or1_reward_status_name(OR1_REWARD_SANDBOX_ERROR), "sandbox_error") == 0, "status names");
    /* reward.strict_box: the last box alone; a restated question is paid only without it */
    or1_reward_job strict[] = {
        {OR1_ABILITY_MATH, "The answer to 20 - 83.", "-63"},
        {OR1_ABILITY_MATH, "\\boxed{-63} then \\boxed{5}", "[\"5\"]"},
    };
    or1_reward_batch(strict, 2, NULL, &(or1_reward_opts){.code_timeout = 6}, NULL, out);
    CHECK(decided(out[0], 1) && decided(out[1], 1), "default reading: %g %g", out[0].score, out[1].score);
    or1_reward_batch(strict, 2, NULL, &(or1_reward_opts){.strict_box = true, .code_timeout = 6}, NULL, out);
    CHECK(decided(out[0], 0) && decided(out[1], 1), "strict_box: %g %g", out[0].score, out[1].score);
    free(deep);
    free(deep_truth);
}

/* Code through a working pool: hostile endings fail as verdicts; each row parsed once. */
static void test_code(void) {
    char *right = program("a, b = map(int, input().split())\nprint(a + b)");
    char *raises = program("a, b = map(int, input().split())\nprint(a + b, flush=True)\nraise SystemExit('late')");
    char *exits = program("import sys\na, b = map(int, input().split())\nprint(a + b, flush=True)\nsys.exit(3)");
    char *kills = program("import os, signal\na, b = map(int, input().split())\nprint(a + b, flush=True)\n"
                          "os.kill(os.getppid(), signal.SIGKILL)");
    char *truth = or1_strdup(STDIO_TESTS);
    or1_reward_job jobs[] = {
        {OR1_ABILITY_CODE, right, truth},   {OR1_ABILITY_CODE, raises, truth},
        {OR1_ABILITY_CODE, exits, truth},   {OR1_ABILITY_CODE, kills, truth},
        {OR1_ABILITY_CODE, right, "{\"inputs\": [1]}"},
    };
    or1_sandbox_pool *pool = or1_sandbox_pool_new(2);
    or1_reward_cache *cache = or1_reward_cache_new();
    or1_reward out[5];
    if (!CHECK(pool != NULL, "pool: %s", or1_error())) return;
    or1_reward_batch(jobs, 5, pool, &(or1_reward_opts){.code_timeout = 4}, cache, out);
    CHECK(decided(out[0], 1), "right program: status %d score %g", out[0].status, out[0].score);
    CHECK(decided(out[1], 0), "raises after the right output: status %d score %g", out[1].status, out[1].score);
    CHECK(decided(out[2], 0), "exits non-zero after the right output: status %d score %g", out[2].status, out[2].score);
    /* the harness is pid 1 of its namespace where there are namespaces, and SIGKILL from inside
     * does not reach it; with rlimits alone the kill lands, and the test must then fail */
    if (or1_sandbox_isolation() == OR1_ISOLATION_RLIMITS)
        CHECK(decided(out[3], 0), "kills its harness after the right output: status %d score %g", out[3].status,
              out[3].score);
    else
        CHECK(decided(out[3], 1), "a harness out of the program's reach stands: status %d score %g", out[3].status,
              out[3].score);
    CHECK(undecided(out[4], OR1_REWARD_VERIFIER_ERROR), "unusable tests: status %d", out[4].status);
    CHECK(out[0].seconds > 0 && out[0].seconds < 60 && out[4].seconds == 0, "sandbox times %g, %g (none for unusable tests)",
          out[0].seconds, out[4].seconds);
    CHECK(or1_reward_cache_parsed(cache) == 2, "two ground truths parsed %zu times", or1_reward_cache_parsed(cache));
    or1_reward_batch(jobs, 1, NULL, &(or1_reward_opts){.code_timeout = 4}, cache, out);
    CHECK(undecided(out[0], OR1_REWARD_SANDBOX_ERROR), "no pool: status %d", out[0].status);
    or1_reward_cache_free(cache);
    or1_sandbox_pool_free(pool);
    free(right), free(raises), free(exits), free(kills), free(truth);
}

/* The sandbox cannot start: every code reward is a sandbox_error, never a 0. */
static void test_broken_sandbox(void) {
    char *right = program("print(5)");
    or1_reward_job jobs[] = {{OR1_ABILITY_CODE, right, STDIO_TESTS}, {OR1_ABILITY_CODE, right, STDIO_TESTS}};
    or1_sandbox_pool *pool = or1_sandbox_pool_new(1);
    or1_reward out[2];
    if (!CHECK(pool != NULL, "pool: %s", or1_error())) return;
    or1_reward_batch(jobs, 2, pool, &(or1_reward_opts){.code_timeout = 4}, NULL, out);
    for (int i = 0; i < 2; i++)
        CHECK(undecided(out[i], OR1_REWARD_SANDBOX_ERROR), "job %d: status %d score %g", i, out[i].status, out[i].score);
    or1_sandbox_pool_free(pool);
    free(right);
}

int main(int argc, char **argv) {
    if (argc != 2 || (strcmp(argv[1], "ok") && strcmp(argv[1], "broken-sandbox"))) {
        fprintf(stderr, "usage: test_reward ok | broken-sandbox\n");
        return 2;
    }
    if (strcmp(argv[1], "ok") == 0) {
        test_math();
        test_code();
    } else {
        test_broken_sandbox();
    }
    return check_report();
}
