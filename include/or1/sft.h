/* or1 sft: supervised fine-tuning on (prompt, response) token sequences. The loss is the mean
 * negative log-likelihood of the response tokens, computed as the MAGIC policy loss with
 * advantage 1 and no old log-probs (or1_policy_grad), whose gradient is exactly that of the
 * NLL; AdamW with an optional linear warm-up, then a cosine decay from lr to min_lr (constant
 * when they are equal), the global
 * gradient norm clipped, batches drawn from a seeded shuffle of the examples epoch by epoch. */
#ifndef OR1_SFT_H
#define OR1_SFT_H

#include <stdint.h>

#include "or1/model.h"

/* One example: the response tokens are the targets, the prompt only conditions them. */
typedef struct {
    const int32_t *prompt, *resp;
    int n_prompt, n_resp;
} or1_sft_example;

typedef struct {
    int steps;          /* optimizer steps */
    int batch;          /* examples per step */
    int warmup;         /* steps of linear warm-up from lr/warmup to lr (0: none) */
    int micro_tokens;   /* packed tokens per forward/backward micro-batch */
    float lr, weight_decay, max_grad_norm;
    uint64_t seed;      /* the shuffle */
    int log_every;      /* measure the batch NLL every this many steps (and at the last) */
    float min_lr;       /* the rate the cosine decay ends at, on the last step */
} or1_sft_cfg;

/* What the progress callback sees after a step. nll is the batch's mean response-token NLL
 * before the step, measured only on logging steps (NaN otherwise). */
typedef struct {
    int step;           /* 1-based */
    double nll, grad_norm, lr, seconds;
    long tokens;        /* response tokens of this step's batch */
} or1_sft_progress;

typedef void (*or1_sft_callback)(void *ctx, const or1_sft_progress *p);

/* Trains m in place on n examples; calls cb (if any) after every step. Fails on an empty
 * set, a bad setting or an example longer than the model's context. */
int or1_sft_train(or1_model *m, const or1_sft_example *ex, int n, const or1_sft_cfg *cfg,
                  or1_sft_callback cb, void *ctx);

#endif
