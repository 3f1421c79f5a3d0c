/* Supervised fine-tuning: the NLL of response tokens through the policy-gradient path. */
#include "or1/train.h"

#include "or1/core.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* See train.h: counted as a sample's (or1_sample_len). */
int or1_sft_example_len(const or1_sft_example *x) {
    return or1_sample_len(&(or1_sample){.n_resp = x->n_resp, .mask = x->mask});
}

/* Checks the settings and that every example fits the model's context. */
static int check(const or1_model_config *mc, const or1_sft_example *ex, int n, const or1_sft_cfg *c) {
    if (n <= 0) return or1_fail("sft: no examples");
    if (c->steps < 0 || c->batch < 1 || c->warmup < 0 || c->micro_tokens < 1 || !(c->lr >= 0) || !(c->min_lr >= 0) ||
        !(c->weight_decay >= 0) || !(c->max_grad_norm > 0) || c->log_every < 0)
        return or1_fail("sft: invalid settings (steps %d, batch %d, warmup %d, micro-batch tokens %d)", c->steps,
                        c->batch, c->warmup, c->micro_tokens);
    for (int i = 0; i < n; i++) {
        if (ex[i].n_prompt < 1 || or1_sft_example_len(&ex[i]) < 1)
            return or1_fail("sft: example %d has an empty prompt or no trained response token", i);
        if (ex[i].n_prompt + ex[i].n_resp > mc->max_pos)
            return or1_fail("sft: example %d has %d tokens, over the model's %d positions", i,
                            ex[i].n_prompt + ex[i].n_resp, mc->max_pos);
    }
    return 0;
}

/* Fisher-Yates shuffle of 0..n-1 for one epoch, from (seed, epoch). */
static void shuffle(int *order, int n, uint64_t seed, uint64_t epoch) {
    for (int i = 0; i < n; i++) order[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(or1_rand_u64(seed, epoch, (uint64_t)i) % (uint64_t)(i + 1));
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

/* The learning rate of step s (0-based): linear warm-up, then a cosine from lr down to min_lr
 * at the last step, which lets a long run settle instead of hovering at its peak rate. */
static float step_lr(const or1_sft_cfg *c, int s) {
    if (s < c->warmup) return c->lr * (float)(s + 1) / (float)c->warmup;
    int span = c->steps - c->warmup - 1;
    double f = span > 0 ? (double)(s - c->warmup) / span : 1.0;
    return c->min_lr + (c->lr - c->min_lr) * (float)(0.5 * (1.0 + cos(M_PI * f)));
}

/* The next batch of the shuffled stream, reshuffling at each epoch's end. */
static void next_batch(const or1_sft_example *ex, int n, const or1_sft_cfg *c, int *order, int *cursor,
                       uint64_t *epoch, or1_sample *s, long *tokens) {
    *tokens = 0;
    for (int i = 0; i < c->batch; i++) {
        if (*cursor == n) shuffle(order, n, c->seed, ++*epoch), *cursor = 0;
        const or1_sft_example *x = &ex[order[(*cursor)++]];
        s[i] = (or1_sample){.prompt = x->prompt, .resp = x->resp, .n_prompt = x->n_prompt,
                            .n_resp = x->n_resp, .adv = 1.0f, .old_logp = NULL, .mask = x->mask};
        *tokens += or1_sample_len(&s[i]);
    }
}

/* Steps of shuffled batches: eq. (3.1) reduced to the NLL, clipping, AdamW on a cosine rate. */
int or1_sft_train(or1_dmodel *dm, const or1_sft_example *ex, int n, const or1_sft_cfg *c,
                  or1_sft_callback cb, void *ctx) {
    const or1_model_config *mc = or1_dmodel_config(dm);
    if (check(mc, ex, n, c)) return -1;
    int *order = or1_malloc((size_t)n * sizeof *order), cursor = 0, rc = 0;
    uint64_t epoch = 0;
    shuffle(order, n, c->seed, epoch);
    or1_sample *s = or1_malloc((size_t)c->batch * sizeof *s);
    or1_adamw opt;
    or1_adamw_init(&opt, or1_dmodel_host(dm)->n_floats);
    /* Advantage 1, no old log-probs, no entropy term: eq. (3.1) reduces to -mean log-prob. */
    or1_loss_cfg loss = {.clip_low = 0.2f, .clip_high = 0.2f, .entropy_coef = 0.0f, .temperature = 1.0f};
    double t0 = or1_now();
    for (int step = 0; step < c->steps && rc == 0; step++) {
        long tokens;
        next_batch(ex, n, c, order, &cursor, &epoch, s, &tokens);
        bool log = c->log_every > 0 && ((step + 1) % c->log_every == 0 || step + 1 == c->steps || step == 0);
        or1_dmodel_zero_grad(dm);
        or1_loss_stats st = {0};
        double norm = 0;
        or1_adamw_cfg ac = {.lr = step_lr(c, step), .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f,
                            .weight_decay = c->weight_decay};
        or1_loss_norm ln = {.tokens = tokens, .seqs = c->batch};
        rc = or1_policy_grad(dm, s, c->batch, &ln, c->micro_tokens, &loss, &st) ||
             or1_dmodel_step(dm, &opt, &ac, c->max_grad_norm, &norm);
        /* The gradient pass already holds the batch's log-probs under the weights before the step. */
        double nll = log && st.tokens ? -st.logp / (double)st.tokens : NAN;
        if (cb && rc == 0) {
            or1_sft_progress p = {.step = step + 1, .nll = nll, .grad_norm = norm, .lr = ac.lr,
                                  .seconds = or1_now() - t0, .tokens = tokens};
            cb(ctx, &p);
        }
    }
    if (rc == 0) rc = or1_dmodel_pull(dm);
    or1_adamw_free(&opt);
    free(s);
    free(order);
    return rc ? -1 : 0;
}
