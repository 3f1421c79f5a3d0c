/* or1 trainer: the MAGIC training loop of Skywork-OR1 (recipe §2) and evaluation.
 *
 * One step: N prompts x M samples through the rollout engine, verifiable rewards, GRPO
 * advantages with rejection of zero-advantage groups (optional DAPO refill), N_SGD
 * mini-batch updates of the eq. (3.1) loss with AdamW, then the adaptive entropy controller;
 * a metrics row per step, checkpoints that resume exactly, stages with the online filter.
 * With several ranks each rank samples and scores whole prompt groups; per-sample results
 * are shared so that every rank takes the same decisions, and gradients are summed. */
#ifndef OR1_TRAINER_H
#define OR1_TRAINER_H

#include <stdio.h>

#include "or1/config.h"
#include "or1/data.h"
#include "or1/dist.h"
#include "or1/rollout.h"

typedef struct or1_sandbox_pool or1_sandbox_pool;

/* Runs the whole schedule of cfg; resume_dir (or NULL) is a checkpoint folder to continue. */
int or1_train_run(const or1_train_config *cfg, const char *resume_dir, const or1_dist *d);

/* Generated and scored samples of some rows (M per row, row-major). */
typedef struct {
    or1_completion *c;
    float *scores;
    size_t n;
} or1_scored;

/* Samples M responses for each row (request seed seeds[i]; max_new from s), decodes them and
 * scores them with the row's verifier on a thread that starts on each sample as soon as it
 * is finished. Seconds of generation go to t_rollout; the scoring left after the last sample
 * to t_reward. */
int or1_rollout_score(const or1_model *m, const or1_tokenizer *tok, const or1_data_row *const *rows, size_t n_rows,
                      int M, const or1_sampling *s, const uint64_t *seeds, int max_slots, or1_sandbox_pool *pool,
                      double code_timeout, or1_scored *out, double *t_rollout, double *t_reward);
void or1_scored_free(or1_scored *s);

/* Evaluation settings. */
typedef struct {
    int n;
    float temperature, top_p;
    int top_k, max_new_tokens, max_slots;
    uint64_t seed;
    double code_timeout;
} or1_eval_opts;

/* Samples n responses per row and returns the avg@n / pass@k report (per data_source and
 * overall) as JSON. Rows are split over ranks and the counts summed, so every rank returns
 * the same report. With dump (non-NULL on every rank, or on none), every sample of every rank
 * is written as a JSON line to rank 0's dump. */
cJSON *or1_eval(const or1_model *m, const or1_tokenizer *tok, const or1_data_row *const *rows, size_t n_rows,
                const or1_eval_opts *o, or1_sandbox_pool *pool, const or1_dist *d, FILE *dump, int *correct);

#endif
