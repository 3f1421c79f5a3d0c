/* or1 rl: the formulas of the Skywork-OR1 (MAGIC) recipe, one named function each. */
#ifndef OR1_RL_H
#define OR1_RL_H

#include <stdbool.h>

#include "or1/algo.h"

/* Settings of the policy loss, eq. (3.1). */
typedef struct {
    float clip_low, clip_high; /* PPO ratio clip: [1 - clip_low, 1 + clip_high] */
    float entropy_coef;        /* alpha_k */
    float temperature;         /* logits are divided by it before log-probs and entropy */
    float kl_coef;             /* beta of the optional KL-to-reference term (0: off) */
    or1_kl_estimator kl;       /* its estimator (k1, k2, k3, abs as verl defines them) */
} or1_loss_cfg;

/* One response token's term of the MAGIC loss, eq. (3.1), before the 1/T_k normalisation:
 *   loss_t = max(-A*rho, -A*clip(rho, 1-eps_low, 1+eps_high)) - alpha * H_t,
 *   rho = exp(logp - old_logp).
 * Returns the PPO part (pg term) and sets d(loss_t)/d(logp), d(loss_t)/d(H_t), and whether
 * the clipped branch is the larger one. Ties split the gradient as torch.maximum does. */
double or1_magic_token_loss(float logp, float old_logp, float adv, const or1_loss_cfg *c,
                            float *d_logp, float *d_entropy, bool *clipped);


#include "or1/model.h"

/* One sampled response and its advantage (old_logp NULL: rho = 1 with logp detached;
 * ref_logp: the frozen reference's log-probs, needed when kl_coef != 0). */
typedef struct {
    const int32_t *prompt, *resp;
    int n_prompt, n_resp;
    float adv;
    const float *old_logp, *ref_logp;
} or1_sample;

/* Sums over response tokens (divide by tokens for means); logp is the sum of the tokens'
 * log-probs under the current weights (its negative mean is the NLL SFT reports). */
typedef struct {
    double loss, pg_loss, entropy, kl, logp;
    long tokens, clipped;
} or1_loss_stats;

/* Samples packed as prompt+response sequences (response positions scored). */
typedef struct {
    or1_batch b;
    int32_t **joined;
    or1_seq *seqs;
    int n;
} or1_packed_samples;

/* Packs samples s[0..n) into p->b (free with or1_packed_samples_free). */
void or1_pack_samples(or1_packed_samples *p, const or1_sample *s, int n);
void or1_packed_samples_free(or1_packed_samples *p);

/* The per-token terms of eq. (3.1) (plus the optional KL) for n packed samples, given the
 * scored log-probs and entropies in sample order: the gradients w.r.t. logp and entropy,
 * scaled by inv_total, go to g_logp and g_entropy; the loss sums are added into *st.
 * Shared by every backend, so each runs the same formulas. */
void or1_policy_token_grads(const or1_sample *s, int n, const float *logp, const float *ent, double inv_total,
                            const or1_loss_cfg *cfg, float *g_logp, float *g_entropy, or1_loss_stats *st);

/* The end of the micro-batch that starts at sample i0: samples are taken in order while their
 * prompt+response tokens fit in micro_tokens (always at least one). */
int or1_micro_batch_end(const or1_sample *s, int n, int i0, int micro_tokens);

/* Adds to m->grads the gradient of the eq. (3.1) loss over samples, each token weighted
 * 1/total_tokens (the global response-token count, so any micro-batch or rank split gives
 * the same sum). Samples are packed greedily into micro-batches of at most micro_tokens
 * tokens. *ws is a reusable workspace. Adds this call's sums into *st. */
void or1_policy_grad(or1_model *m, or1_acts **ws, const or1_sample *s, int n, long total_tokens,
                     int micro_tokens, const or1_loss_cfg *cfg, or1_loss_stats *st);

#endif
