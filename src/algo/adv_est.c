/* Outcome-advantage estimators other than GRPO's (RLOO, REINFORCE++-baseline, group mean with
 * batch std), and the dispatch over all of them. Each follows the verl function or paper
 * equation named in algo.h; group statistics in double precision. */
#include "internal.h"
#include "or1/algo.h"
#include "or1/core.h"

#include <math.h>
#include <stdlib.h>

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

/* verl compute_rloo_outcome_advantage: s m/(m-1) - mean m/(m-1), the raw score when m = 1. */
void or1_rloo_advantages(const float *scores, const int32_t *group, const bool *use, size_t n, float *adv) {
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

/* verl compute_reinforce_plus_plus_baseline_outcome_advantage: group mean removed, then
 * masked_whiten over the response tokens (each sample weighted by its length). */
void or1_rpp_baseline_advantages(const float *scores, const int32_t *group, const bool *use, const int *len,
                                 size_t n, float *adv) {
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

/* LitePPO's normalisation: group mean removed, divided by the batch std of the scores + eps. */
void or1_grpo_batch_std_advantages(const float *scores, const int32_t *group, const bool *use, size_t n,
                                   double eps, float *adv) {
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

/* Dispatches to the estimator's function. */
void or1_outcome_advantages(or1_adv_estimator est, const float *scores, const int32_t *group, const bool *use,
                            const int *len, size_t n, double eps, float *adv) {
    switch (est) {
    case OR1_ADV_RLOO: or1_rloo_advantages(scores, group, use, n, adv); break;
    case OR1_ADV_RPP_BASELINE: or1_rpp_baseline_advantages(scores, group, use, len, n, adv); break;
    case OR1_ADV_GRPO_BATCH_STD: or1_grpo_batch_std_advantages(scores, group, use, n, eps, adv); break;
    default: or1_grpo_advantages(scores, group, use, n, est == OR1_ADV_GRPO, eps, adv); break;
    }
}

/* The estimator names (advantage.estimator). */
ALGO_REGISTRY_NAMES(OR1_ADV_ESTIMATORS, or1_adv_estimator, adv_estimator, "advantage estimator")
