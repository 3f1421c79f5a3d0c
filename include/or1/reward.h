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
    const char *ground_truth; /* math: one answer or a JSON-encoded list (or1_math_gold_parse); code: JSON tests */
} or1_reward_job;

/* The reward's options, one row each: the trainer's config key, the flag of or1 eval,
 * or1 difficulty and or1 verify-math, the or1_reward_opts field, its type (bool, int or
 * double), default, range and help. The config schema, the flags and their help are made from
 * these rows. A bool row defaults to off (its flag is a switch that turns it on). */
#define OR1_REWARD_OPTIONS(X)                                                                                 \
    X("reward.strict_box", "strict-box", strict_box, bool, false, 0, 1,                                       \
      "math: a response's answer is the content of its last \\boxed{} alone and a response without one "    \
      "scores 0 (verl's DAPO strict_box_verify); off: the recipe's Math-Verify extraction")               \
    X("reward.keep_base", "keep-base", keep_base, bool, false, 0, 1,                                          \
      "math: a base subscript is part of its number (2516_9 is not 2516_8); off: Math-Verify drops it "       \
      "(2516_9 = 2516_8 = 2516)")
#define OR1_REWARD_FIELD(key, flag, field, type, def, lo, hi, help) type field;

/* How a batch is scored: the rows of OR1_REWARD_OPTIONS and the code sandbox's time limit. */
typedef struct {
    OR1_REWARD_OPTIONS(OR1_REWARD_FIELD) /* strict_box, keep_base */
    double code_timeout;                 /* CPU seconds per code test (reward.code_timeout) */
} or1_reward_opts;

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
 * non-NULL when any job is code) as opts says. cache may be NULL (then each code
 * job parses its tests). A failure is reported in out[i].status and named on stderr, never
 * turned into a score. */
void or1_reward_batch(const or1_reward_job *jobs, size_t n, or1_sandbox_pool *pool, const or1_reward_opts *opts,
                      or1_reward_cache *cache, or1_reward *out);

#endif
