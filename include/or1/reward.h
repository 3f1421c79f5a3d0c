/* or1 reward: the verifiable reward of one response, dispatched by the row's ability
 * (paper §7; Skywork-OR1's compute_score): math through the math verifier, code through the
 * sandbox pool. Rewards are binary, 1 for a correct response and 0 otherwise; a reward that
 * could not be decided ends as an error status instead. */
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

/* How one reward ended. Only OR1_REWARD_OK carries a score; every other status is a failure
 * of the reward machinery, never a verdict on the response, and must never count as 0. */
typedef enum {
    OR1_REWARD_OK,
    OR1_REWARD_TIMEOUT,        /* the verifier's clock ran out before a verdict */
    OR1_REWARD_VERIFIER_ERROR, /* the ground truth (or a test list) cannot be used */
    OR1_REWARD_SANDBOX_ERROR,  /* the sandbox itself failed (not the program it ran) */
    OR1_REWARD_RESOURCE,       /* a memory, work or depth bound cut the verification short */
    OR1_REWARD_N_STATUS
} or1_reward_status;

/* The status's name as metrics and logs spell it ("ok", "timeout", ...). */
const char *or1_reward_status_name(or1_reward_status s);

/* One response's reward: score is 0 or 1 when status is OR1_REWARD_OK, NaN otherwise;
 * seconds is how long its verification took (math: the verifier's call; code: the sandbox run
 * of its tests), 0 for code that never reached the sandbox. */
typedef struct {
    float score;
    or1_reward_status status;
    float seconds;
} or1_reward;

/* Parsed code test lists kept by ground-truth string (the address the jobs pass), so that the
 * tests of a row are parsed once however many samples it has. Not thread-safe: one caller. */
typedef struct or1_reward_cache or1_reward_cache;
or1_reward_cache *or1_reward_cache_new(void);
void or1_reward_cache_free(or1_reward_cache *c);
/* How many ground truths the cache has parsed (each once). */
size_t or1_reward_cache_parsed(const or1_reward_cache *c);

/* Scores n responses: math in parallel threads, code in the sandbox pool (which must be
 * non-NULL when any job is code; time_limit_s per test). cache may be NULL (then each code
 * job parses its tests). A failure is reported in out[i].status and named on stderr, never
 * turned into a score. */
void or1_reward_batch(const or1_reward_job *jobs, size_t n, or1_sandbox_pool *pool, double time_limit_s,
                      or1_reward_cache *cache, or1_reward *out);

#endif
