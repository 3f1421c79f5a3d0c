/* or1 reward: the verifiable reward of one response, dispatched by the row's ability
 * (paper §7; Skywork-OR1's compute_score): math through the math verifier, code through the
 * sandbox pool. Rewards are binary, 1 for a correct response and 0 otherwise. */
#ifndef OR1_REWARD_H
#define OR1_REWARD_H

#include <stdbool.h>
#include <stddef.h>

typedef struct or1_sandbox_pool or1_sandbox_pool;

typedef enum { OR1_ABILITY_MATH, OR1_ABILITY_CODE } or1_ability;

/* One response to score against its row's ground truth (the row's JSON string). */
typedef struct {
    or1_ability ability;
    const char *response;     /* decoded text, special tokens skipped */
    const char *ground_truth; /* math: JSON list of answers or one string; code: JSON tests */
} or1_reward_job;

/* Scores n responses: math in parallel threads, code in the sandbox pool (which must be
 * non-NULL when any job is code; time_limit_s per test). A malformed ground truth scores 0
 * with a warning naming it. */
void or1_reward_batch(const or1_reward_job *jobs, size_t n, or1_sandbox_pool *pool, double time_limit_s,
                      float *scores);

#endif
