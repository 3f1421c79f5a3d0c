/* Mini-batch token selections: Clip-Cov and KL-Cov (Cui et al. 2025, arXiv 2505.22617) and the
 * top-entropy share of the 80/20 rule (Wang et al. 2025, arXiv 2506.01939). Each is computed
 * over the whole mini-batch: its means and thresholds are sums over every micro-batch and rank,
 * so the marked tokens do not depend on how the mini-batch is split. */
#include "internal.h"
#include "or1/algo.h"
#include "or1/core.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Whether any selection is on. */
bool or1_loss_selects(const or1_loss_cfg *c) {
    return c->mode == OR1_PG_CLIP_COV || c->mode == OR1_PG_KL_COV || (c->top_entropy > 0 && c->top_entropy < 1);
}

/* Cov(y_t) of Cui et al.: the centred cross-product of log-prob and advantage. */
double or1_cov_token(double logp, double mean_logp, double adv, double mean_adv) {
    return (logp - mean_logp) * (adv - mean_adv);
}

/* Marks with `flag` the m tokens idx[] whose key is among the `want` largest over all ranks
 * (every one when there are no more than want of them). */
static void mark_largest(const uint64_t *key, const size_t *idx, size_t m, long want, const or1_reducer *r,
                         uint8_t flag, uint8_t *flags) {
    double total = (double)m;
    algo_sum(r, &total, 1);
    uint64_t k = total > (double)want ? or1_kth_largest_key(key, m, want, r) : 0;
    for (size_t i = 0; i < m; i++)
        if (key[i] >= k) flags[idx[i]] |= flag;
}

/* Clip-Cov's candidates (PPO clip not winning, lb < Cov < ub), each keyed by its own draw;
 * max(1, floor(ratio T)) of them are marked. */
static void clip_cov_select(const or1_sample *s, int n, const float *logp, const or1_loss_cfg *c, const double mean[2],
                            double T, uint64_t *key, size_t *idx, uint8_t *flags) {
    size_t m = 0;
    for (int i = 0, t = 0; i < n; i++)
        for (int j = 0; j < s[i].n_resp; j++, t++) {
            if (!or1_sample_trains(&s[i], j)) continue;
            double lr = s[i].old_logp ? (double)logp[t] - (double)s[i].old_logp[j] : 0.0, g;
            bool clipped;
            or1_clip_cov_token(exp(lr), s[i].adv, 1.0 - c->clip_low, 1.0 + c->clip_high, false, &g, &clipped);
            double cov = or1_cov_token(logp[t], mean[0], s[i].adv, mean[1]);
            if (clipped || !(cov > c->clip_cov_lb && cov < c->clip_cov_ub)) continue;
            key[m] = or1_rand_u64(c->seed, s[i].id, (uint64_t)j);
            idx[m++] = (size_t)t;
        }
    long want = (long)floor(c->clip_cov_ratio * T);
    mark_largest(key, idx, m, want > 1 ? want : 1, c->reduce, OR1_SEL_COV_CLIP, flags);
}

/* KL-Cov: the max(1, floor(ratio T)) tokens with the largest Cov are marked; equal values are
 * ordered by the token's own draw (the key's low half), so exactly that many are. */
static void kl_cov_select(const or1_sample *s, int n, const float *logp, const or1_loss_cfg *c, const double mean[2],
                          double T, uint64_t *key, size_t *idx, uint8_t *flags) {
    size_t m = 0;
    for (int i = 0, t = 0; i < n; i++)
        for (int j = 0; j < s[i].n_resp; j++, t++) {
            if (!or1_sample_trains(&s[i], j)) continue;
            uint64_t cov = or1_float_key((float)or1_cov_token(logp[t], mean[0], s[i].adv, mean[1]));
            key[m] = cov << 32 | or1_rand_u64(c->seed, s[i].id, (uint64_t)j) >> 32;
            idx[m++] = (size_t)t;
        }
    long want = (long)floor(c->kl_cov_ratio * T);
    mark_largest(key, idx, m, want > 1 ? want : 1, c->reduce, OR1_SEL_COV_KL, flags);
}

/* The 80/20 rule: trained tokens below the ceil(rho T)-th largest entropy lose their pg term
 * (the 1e-9 keeps a product like 0.7 * 10 from rounding up past an integer). */
static void entropy_select(const or1_sample *s, int n, const float *ent, const or1_loss_cfg *c, double T,
                           uint64_t *key, size_t *idx, uint8_t *flags) {
    size_t m = 0;
    for (int i = 0, t = 0; i < n; i++)
        for (int j = 0; j < s[i].n_resp; j++, t++)
            if (or1_sample_trains(&s[i], j)) key[m] = or1_float_key(ent[t]), idx[m++] = (size_t)t;
    long want = (long)ceil(c->top_entropy * T - 1e-9);
    uint64_t k = or1_kth_largest_key(key, m, want > 1 ? want : 1, c->reduce);
    for (size_t i = 0; i < m; i++)
        if (key[i] < k) flags[idx[i]] |= OR1_SEL_LOW_ENTROPY;
}

/* Means of log-prob and advantage over the mini-batch's trained tokens (on every rank), then
 * each configured selection (a token the mask drops is never chosen and never counted). */
void or1_select_tokens(const or1_sample *s, int n, const float *logp, const float *ent, const or1_loss_cfg *cfg,
                       uint8_t *flags) {
    size_t m = 0;
    double sums[3] = {0, 0, 0};
    for (int i = 0, t = 0; i < n; i++)
        for (int j = 0; j < s[i].n_resp; j++, t++, m++)
            if (or1_sample_trains(&s[i], j)) sums[0] += logp[t], sums[1] += s[i].adv, sums[2]++;
    algo_sum(cfg->reduce, sums, 3);
    memset(flags, 0, m);
    if (sums[2] == 0) return;
    double T = sums[2], mean[2] = {sums[0] / T, sums[1] / T};
    uint64_t *key = or1_malloc((m + 1) * sizeof *key);
    size_t *idx = or1_malloc((m + 1) * sizeof *idx);
    if (cfg->mode == OR1_PG_CLIP_COV) clip_cov_select(s, n, logp, cfg, mean, T, key, idx, flags);
    if (cfg->mode == OR1_PG_KL_COV) kl_cov_select(s, n, logp, cfg, mean, T, key, idx, flags);
    if (cfg->top_entropy > 0 && cfg->top_entropy < 1) entropy_select(s, n, ent, cfg, T, key, idx, flags);
    free(idx);
    free(key);
}
