/* The outcome-advantage estimators, one function each, and their registry: the rows of
 * OR1_ADV_ESTIMATORS (or1/algo.h) name each one's definition here. Each follows the verl
 * function or paper equation named in algo.h; group statistics in double precision. */
#include "internal.h"
#include "or1/algo.h"
#include "or1/core.h"

#include <math.h>
#include <stdlib.h>

/* An estimator: its function, and whether it divides by a standard deviation that a group or
 * batch of equal scores makes 0 (then eps must be above 0 unless such groups are rejected). */
typedef struct {
    void (*advantages)(const float *scores, const int32_t *group, const bool *use, const int *len, size_t n,
                       double eps, float *adv);
    bool divides;
} adv_estimator;

/* Eq. (2.5) of the paper as verl's compute_grpo_outcome_advantage computes it: per group,
 * mean and unbiased std (torch.std, divisor m-1) of the used scores, a single sample having
 * mean 0 and std 1; A = (s - mean) / (std + eps), or s - mean for Dr. GRPO. */
void or1_grpo_advantages(const float *scores, const int32_t *group, const bool *use, size_t n,
                         bool norm_by_std, double eps, float *adv) {
    or1_groups g;
    or1_groups_build(group, n, &g);
    for (size_t i = 0; i < n; i++) adv[i] = 0.0f;
    for (size_t k = 0; k < g.n_groups; k++) {
        double sum = 0.0, mean = 0.0, std = 1.0;
        size_t m = 0;
        for (size_t j = g.start[k]; j < g.start[k + 1]; j++) {
            size_t i = g.idx[j];
            if (use && !use[i]) continue;
            sum += scores[i];
            m++;
        }
        if (m == 0) continue;
        if (m > 1) {
            mean = sum / (double)m;
            double ss = 0.0;
            for (size_t j = g.start[k]; j < g.start[k + 1]; j++) {
                size_t i = g.idx[j];
                if (use && !use[i]) continue;
                ss += ((double)scores[i] - mean) * ((double)scores[i] - mean);
            }
            std = sqrt(ss / (double)(m - 1));
        }
        for (size_t j = g.start[k]; j < g.start[k + 1]; j++) {
            size_t i = g.idx[j];
            if (use && !use[i]) continue;
            double a = (double)scores[i] - mean;
            adv[i] = (float)(norm_by_std ? a / (std + eps) : a);
        }
    }
    or1_groups_free(&g);
}

/* GRPO, eq. (2.5): divided by the group std. */
static void grpo(const float *scores, const int32_t *group, const bool *use, const int *len, size_t n, double eps,
                 float *adv) {
    (void)len;
    or1_grpo_advantages(scores, group, use, n, true, eps, adv);
}
static const adv_estimator adv_grpo = {.advantages = grpo, .divides = true};

/* Dr. GRPO: the group mean removed, no division. */
static void drgrpo(const float *scores, const int32_t *group, const bool *use, const int *len, size_t n, double eps,
                   float *adv) {
    (void)len;
    or1_grpo_advantages(scores, group, use, n, false, eps, adv);
}
static const adv_estimator adv_drgrpo = {.advantages = drgrpo, .divides = false};


/* Per used sample, the mean of its group's used scores (0 for a one-sample group, as verl)
 * into mean[i] and the group's used count into m[i]. */
static void group_means(const float *scores, const int32_t *group, const bool *use, size_t n, double *mean,
                        size_t *m) {
    or1_groups g;
    or1_groups_build(group, n, &g);
    for (size_t k = 0; k < g.n_groups; k++) {
        double sum = 0.0;
        size_t c = 0;
        for (size_t j = g.start[k]; j < g.start[k + 1]; j++)
            if (!use || use[g.idx[j]]) sum += scores[g.idx[j]], c++;
        for (size_t j = g.start[k]; j < g.start[k + 1]; j++) {
            mean[g.idx[j]] = c > 1 ? sum / (double)c : 0.0;
            m[g.idx[j]] = c;
        }
    }
    or1_groups_free(&g);
}

/* RLOO as verl compute_rloo_outcome_advantage: s m/(m-1) - mean m/(m-1), the raw score when
 * m = 1. */
static void rloo(const float *scores, const int32_t *group, const bool *use, const int *len, size_t n, double eps,
                 float *adv) {
    (void)len, (void)eps;
    double *mean = or1_malloc((n ? n : 1) * sizeof *mean);
    size_t *m = or1_malloc((n ? n : 1) * sizeof *m);
    group_means(scores, group, use, n, mean, m);
    for (size_t i = 0; i < n; i++) {
        double f = m[i] > 1 ? (double)m[i] / (double)(m[i] - 1) : 1.0;
        adv[i] = use && !use[i] ? 0.0f : (float)((double)scores[i] * f - mean[i] * f);
    }
    free(m);
    free(mean);
}
static const adv_estimator adv_rloo = {.advantages = rloo, .divides = false};

/* REINFORCE++-baseline as verl compute_reinforce_plus_plus_baseline_outcome_advantage: group
 * mean removed, then masked_whiten over the response tokens (each sample weighted by its
 * length). */
static void rpp_baseline(const float *scores, const int32_t *group, const bool *use, const int *len, size_t n,
                         double eps, float *adv) {
    (void)eps;
    double *x = or1_malloc((n ? n : 1) * sizeof *x);
    size_t *m = or1_malloc((n ? n : 1) * sizeof *m);
    group_means(scores, group, use, n, x, m);
    double L = 0.0, sx = 0.0, ss = 0.0;
    for (size_t i = 0; i < n; i++) {
        x[i] = (double)scores[i] - x[i];
        if (!use || use[i]) L += len[i], sx += len[i] * x[i];
    }
    double mu = sx / (L + 1e-8);
    for (size_t i = 0; i < n; i++)
        if (!use || use[i]) ss += len[i] * (x[i] - mu) * (x[i] - mu);
    double var = L >= 2 ? ss / (L + 1e-8) * (L / (L - 1.0)) : 1.0;
    for (size_t i = 0; i < n; i++) adv[i] = use && !use[i] ? 0.0f : (float)((x[i] - mu) / sqrt(var + 1e-8));
    free(m);
    free(x);
}
static const adv_estimator adv_rpp_baseline = {.advantages = rpp_baseline, .divides = false};

/* LitePPO's normalisation: group mean removed, divided by the batch std of the scores + eps. */
static void grpo_batch_std(const float *scores, const int32_t *group, const bool *use, const int *len, size_t n,
                           double eps, float *adv) {
    (void)len;
    double *mean = or1_malloc((n ? n : 1) * sizeof *mean);
    size_t *m = or1_malloc((n ? n : 1) * sizeof *m);
    group_means(scores, group, use, n, mean, m);
    double c = 0.0, sum = 0.0, ss = 0.0;
    for (size_t i = 0; i < n; i++)
        if (!use || use[i]) c += 1.0, sum += scores[i];
    for (size_t i = 0; i < n; i++)
        if (!use || use[i]) ss += ((double)scores[i] - sum / c) * ((double)scores[i] - sum / c);
    double std = c >= 2 ? sqrt(ss / (c - 1.0)) : 1.0;
    for (size_t i = 0; i < n; i++)
        adv[i] = use && !use[i] ? 0.0f : (float)(((double)scores[i] - mean[i]) / (std + eps));
    free(m);
    free(mean);
}
static const adv_estimator adv_grpo_batch_std = {.advantages = grpo_batch_std, .divides = true};

/* OPO (Hao et al. 2025, arXiv 2505.23585; verl compute_opo_outcome_advantage): s minus the
 * length-weighted mean of its group's used scores, sum len s / sum len (0 for a group of one,
 * the plain mean where the lengths sum to 0). */
static void opo(const float *scores, const int32_t *group, const bool *use, const int *len, size_t n, double eps,
                float *adv) {
    (void)eps;
    or1_groups g;
    or1_groups_build(group, n, &g);
    for (size_t k = 0; k < g.n_groups; k++) {
        double sls = 0.0, sl = 0.0, ss = 0.0;
        size_t m = 0;
        for (size_t j = g.start[k]; j < g.start[k + 1]; j++) {
            size_t i = g.idx[j];
            if (use && !use[i]) continue;
            sls += (double)len[i] * scores[i], sl += len[i], ss += scores[i], m++;
        }
        double base = m < 2 ? 0.0 : sl > 0 ? sls / sl : ss / (double)m;
        for (size_t j = g.start[k]; j < g.start[k + 1]; j++) {
            size_t i = g.idx[j];
            adv[i] = use && !use[i] ? 0.0f : (float)((double)scores[i] - base);
        }
    }
    or1_groups_free(&g);
}
static const adv_estimator adv_opo = {.advantages = opo, .divides = false};

/* Each estimator, in the order of OR1_ADV_ESTIMATORS. */
#define ADV_ROW_ESTIMATOR(e, name, est) &est,
static const adv_estimator *const ADV_ESTIMATORS[] = {OR1_ADV_ESTIMATORS(ADV_ROW_ESTIMATOR)};

/* The estimator's function from its row. */
void or1_outcome_advantages(or1_adv_estimator est, const float *scores, const int32_t *group, const bool *use,
                            const int *len, size_t n, double eps, float *adv) {
    ADV_ESTIMATORS[est]->advantages(scores, group, use, len, n, eps, adv);
}

/* Refuses eps 0 for an estimator that divides by a std when equal-score groups stay in. */
int or1_adv_cfg_check(const or1_adv_cfg *c, const char *where) {
    if (ADV_ESTIMATORS[c->estimator]->divides && !(c->eps > 0) && !c->reject)
        return or1_fail("%s: eps 0 with rejection off divides a constant group's advantages by a std of 0", where);
    return 0;
}

/* The estimator names (advantage.estimator). */
ALGO_REGISTRY_NAMES(OR1_ADV_ESTIMATORS, or1_adv_estimator, adv_estimator, "advantage estimator")
