/* Rollout corrections (verl's rollout_correction) and their registry: the rows of
 * OR1_ROLLOUT_IS_MODES (or1/algo.h) name each one's definition here. Also the off-policy
 * sequence mask and the rollout / training mismatch sums, which read the same log-probs. */
#include "internal.h"
#include "or1/algo.h"
#include "or1/core.h"

#include <math.h>

/* The mean of a[j] - b[j] over the tokens mask keeps (NULL: all); *kept counts them. */
double algo_masked_mean_diff(const float *a, const float *b, int n, const uint8_t *mask, int *kept) {
    double sum = 0.0;
    *kept = 0;
    for (int j = 0; j < n; j++)
        if (!mask || mask[j]) sum += (double)a[j] - (double)b[j], ++*kept;
    return *kept ? sum / *kept : 0.0;
}

/* A rollout correction: the weight of one token from its log r = log(old / rollout) and its
 * sequence's statistic; for a sequence-level correction the statistic of one sequence (NULL: a
 * token-level one); and whether it keeps ratios inside [low, high] (then low must not be above
 * high, or it keeps none). */
typedef struct {
    double (*weight)(double low, double high, double log_r, double seq);
    double (*seq)(const float *old_logp, const float *rollout_logp, int n, const uint8_t *mask);
    bool bounded;
} rollout_correction;

/* No correction: every token weighs 1. */
static double none_weight(double low, double high, double log_r, double seq) {
    (void)low, (void)high, (void)log_r, (void)seq;
    return 1.0;
}
static const rollout_correction is_none = {.weight = none_weight, .seq = NULL, .bounded = false};

/* TIS: min(r, high). */
static double tis_weight(double low, double high, double log_r, double seq) {
    (void)low, (void)seq;
    double r = exp(log_r);
    return r < high ? r : high;
}
static const rollout_correction is_tis = {.weight = tis_weight, .seq = NULL, .bounded = false};

/* MIS: 1 when low <= r <= high, else 0. */
static double mis_weight(double low, double high, double log_r, double seq) {
    (void)seq;
    double r = exp(log_r);
    return r >= low && r <= high ? 1.0 : 0.0;
}
static const rollout_correction is_mis = {.weight = mis_weight, .seq = NULL, .bounded = true};

/* mis-geo's statistic: the sequence's mean log r, the log of its geometric-mean ratio. */
static double geo_seq(const float *old_logp, const float *rollout_logp, int n, const uint8_t *mask) {
    int kept;
    return algo_masked_mean_diff(old_logp, rollout_logp, n, mask, &kept);
}

/* mis-geo: MIS on the sequence's geometric-mean ratio, the same for each of its tokens. */
static double geo_weight(double low, double high, double log_r, double seq) {
    (void)log_r;
    return mis_weight(low, high, seq, 0.0);
}
static const rollout_correction is_mis_geo = {.weight = geo_weight, .seq = geo_seq, .bounded = true};

/* decoupled: r = pi_prox / pi_behav itself, untruncated (decoupled PPO, Hilton et al. 2021, AReaL's
 * use_decoupled_loss): the clip of eq. (3.1) is centred on old = pi_prox, and this constant weight
 * carries the step from the sampler's policy to it; low and high play no part. */
static double decoupled_weight(double low, double high, double log_r, double seq) {
    (void)low, (void)high, (void)seq;
    return exp(log_r);
}
static const rollout_correction is_decoupled = {.weight = decoupled_weight, .seq = NULL, .bounded = false};

/* Each correction, in the order of OR1_ROLLOUT_IS_MODES. */
#define IS_ROW_CORRECTION(e, name, corr) &corr,
static const rollout_correction *const CORRECTIONS[] = {OR1_ROLLOUT_IS_MODES(IS_ROW_CORRECTION)};

/* The sequence's statistic from the mode's row; 0 for a token-level mode. */
double or1_rollout_is_seq_stat(or1_rollout_is_mode mode, const float *old_logp, const float *rollout_logp, int n,
                               const uint8_t *mask) {
    return CORRECTIONS[mode]->seq ? CORRECTIONS[mode]->seq(old_logp, rollout_logp, n, mask) : 0.0;
}

/* The token's weight from the mode's row. */
double or1_rollout_is_weight(or1_rollout_is_mode mode, double low, double high, float old_logp, float rollout_logp,
                             double seq) {
    return CORRECTIONS[mode]->weight(low, high, (double)old_logp - (double)rollout_logp, seq);
}

/* Refuses low above high for a mode that keeps ratios inside [low, high]. */
int or1_rollout_is_check(or1_rollout_is_mode mode, double low, double high, const char *where) {
    if (CORRECTIONS[mode]->bounded && low > high) return or1_fail("%s: low %g is above high %g", where, low, high);
    return 0;
}

/* The correction names (rollout_correction.mode). */
ALGO_REGISTRY_NAMES(OR1_ROLLOUT_IS_MODES, or1_rollout_is_mode, rollout_is, "rollout correction")

/* DeepSeek-V3.2's M_i: negative advantage and a mean log ratio behaviour/current above delta. */
bool or1_offpolicy_seq_masked(const float *behaviour_logp, const float *logp, int n, const uint8_t *mask, float adv,
                              double delta) {
    int kept;
    double mean = algo_masked_mean_diff(behaviour_logp, logp, n, mask, &kept);
    return adv < 0 && kept > 0 && mean > delta;
}

/* One token's |difference| and k3 term, d = train - rollout: exp(d) - 1 - d >= 0. */
void or1_mismatch_add(or1_mismatch *m, float train_logp, float rollout_logp) {
    double d = (double)train_logp - (double)rollout_logp, a = fabs(d);
    m->abs_sum += a;
    if (a > m->abs_max) m->abs_max = a;
    m->k3_sum += expm1(d) - d;
    m->w_sum += exp(d);
    m->w2_sum += exp(2.0 * d);
    m->tokens++;
}

/* Kong's effective sample size over n, (sum w)^2 / sum w^2, divided by n. */
double or1_mismatch_ess(const or1_mismatch *m) {
    if (m->tokens == 0 || !(m->w2_sum > 0)) return 1.0;
    return m->w_sum * m->w_sum / ((double)m->tokens * m->w2_sum);
}
