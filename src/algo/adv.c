/* The advantage stage of a step around the estimators of adv_est.c: truncation masks,
 * rejection of zero-advantage groups and refill decisions (paper §3.1, §3.2.3; the rejection
 * in Skywork-OR1's ray_trainer.py fit; DAPO's dynamic sampling, verl recipe/dapo). */
#include "internal.h"
#include "or1/algo.h"
#include "or1/core.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The truncation-mask names (advantage.truncation_mask). */
ALGO_REGISTRY_NAMES(OR1_TRUNC_MASKS, or1_trunc_mask, trunc_mask, "truncation mask")

/* Paper §3.2.3 (Table 2): NONE counts everything; BEFORE drops truncated samples from
 * statistics and loss; AFTER keeps them in the statistics but drops them from the loss. */
void or1_trunc_masks(const bool *truncated, size_t n, or1_trunc_mask mode, bool *in_stats,
                     bool *in_loss) {
    for (size_t i = 0; i < n; i++) {
        bool t = truncated && truncated[i];
        in_stats[i] = mode == OR1_TRUNC_BEFORE ? !t : true;
        in_loss[i] = mode == OR1_TRUNC_NONE ? true : !t;
    }
}

/* Per group (paper §3.1; Skywork-OR1 ray_trainer.py fit): all counted rewards equal ->
 * rejected, named after the value. */
void or1_reject_groups(const float *scores, const int32_t *group, const bool *use, size_t n,
                       bool keep_single, or1_rejection *r, bool *kept) {
    or1_groups g;
    or1_groups_build(group, n, &g);
    memset(r, 0, sizeof *r);
    r->n_groups = g.n_groups;
    r->ids = or1_malloc((g.n_groups ? g.n_groups : 1) * sizeof *r->ids);
    r->verdict = or1_malloc((g.n_groups ? g.n_groups : 1) * sizeof *r->verdict);
    for (size_t k = 0; k < g.n_groups; k++) {
        size_t m = 0;
        bool equal = true;
        float first = 0.0f;
        for (size_t j = g.start[k]; j < g.start[k + 1]; j++) {
            size_t i = g.idx[j];
            if (use && !use[i]) continue;
            if (m == 0) first = scores[i];
            else if (scores[i] != first) equal = false;
            m++;
        }
        or1_group_verdict v = OR1_GROUP_KEPT;
        if (m == 0) v = OR1_GROUP_EMPTY;
        else if (equal && !(keep_single && m == 1))
            v = first == 0.0f ? OR1_GROUP_SOLVE_NONE : first == 1.0f ? OR1_GROUP_SOLVE_ALL : OR1_GROUP_CONSTANT;
        r->ids[k] = group[g.idx[g.start[k]]];
        r->verdict[k] = v;
        r->kept += v == OR1_GROUP_KEPT;
        r->solve_none += v == OR1_GROUP_SOLVE_NONE;
        r->solve_all += v == OR1_GROUP_SOLVE_ALL;
        r->constant += v == OR1_GROUP_CONSTANT;
        r->empty += v == OR1_GROUP_EMPTY;
        for (size_t j = g.start[k]; j < g.start[k + 1]; j++) kept[g.idx[j]] = v == OR1_GROUP_KEPT;
    }
    or1_groups_free(&g);
}

/* Frees the verdict arrays. */
void or1_rejection_free(or1_rejection *r) {
    free(r->ids);
    free(r->verdict);
    memset(r, 0, sizeof *r);
}

/* The verdict's name as the metrics spell it. */
const char *or1_group_verdict_name(or1_group_verdict v) {
    static const char *const names[] = {"kept", "solve_none", "solve_all", "constant", "empty", "reward_errors"};
    return names[v];
}

/* DAPO's dynamic sampling loop, bounded: stop once enough groups are kept or the rounds are
 * spent; an empty result after the last round skips the step, as Skywork-OR1's fit does. */
or1_refill_action or1_refill_decide(size_t kept_groups, int rounds_done, size_t need, int max_rounds) {
    if (kept_groups >= need && kept_groups > 0) return OR1_REFILL_TRAIN;
    if (rounds_done < max_rounds) return OR1_REFILL_MORE;
    return kept_groups > 0 ? OR1_REFILL_TRAIN : OR1_REFILL_SKIP;
}

/* The first `need` kept groups, in order. */
size_t or1_refill_take(const bool *group_kept, size_t n_groups, size_t need, bool *take) {
    size_t taken = 0;
    for (size_t k = 0; k < n_groups; k++) {
        take[k] = group_kept[k] && taken < need;
        taken += take[k];
    }
    return taken;
}

/* A sample whose reward failed: its score is NaN (reward.h), never a verdict. */
static bool failed_reward(float score) { return isnan(score); }

/* Rejects (verdict reward_errors, kept false) each group that had a failed reward and is left
 * with fewer than two samples whose rewards were decided: its advantages would rest on too
 * little, and the failures must not count as anything. */
static void reject_failed_groups(const float *scores, const int32_t *group, size_t n, or1_rejection *r, bool *kept) {
    or1_groups g;
    or1_groups_build(group, n, &g);
    for (size_t k = 0; k < g.n_groups; k++) {
        size_t ok = 0, failed = 0;
        for (size_t j = g.start[k]; j < g.start[k + 1]; j++) {
            bool f = failed_reward(scores[g.idx[j]]);
            failed += f, ok += !f;
        }
        if (failed == 0 || ok >= 2) continue;
        or1_group_verdict *v = &r->verdict[k];
        r->kept -= *v == OR1_GROUP_KEPT, r->solve_none -= *v == OR1_GROUP_SOLVE_NONE;
        r->solve_all -= *v == OR1_GROUP_SOLVE_ALL, r->constant -= *v == OR1_GROUP_CONSTANT;
        r->empty -= *v == OR1_GROUP_EMPTY;
        *v = OR1_GROUP_REWARD_ERRORS;
        r->reward_errors++;
        for (size_t j = g.start[k]; j < g.start[k + 1]; j++) kept[g.idx[j]] = false;
    }
    or1_groups_free(&g);
}

/* Masks, rejection, advantages over the kept and counted samples (see algo.h). Samples whose
 * reward failed leave the statistics and the loss before anything is decided. */
void or1_step_advantages(const or1_adv_cfg *cfg, const float *scores, const int32_t *group,
                         const bool *truncated, const int *len, size_t n, float *adv, bool *in_loss,
                         or1_rejection *r) {
    bool *in_stats = or1_malloc((n ? n : 1) * sizeof *in_stats);
    bool *kept = or1_malloc((n ? n : 1) * sizeof *kept);
    or1_trunc_masks(truncated, n, cfg->trunc, in_stats, in_loss);
    for (size_t i = 0; i < n; i++)
        if (failed_reward(scores[i])) in_stats[i] = in_loss[i] = false;
    or1_reject_groups(scores, group, in_stats, n, cfg->keep_single, r, kept);
    if (!cfg->reject)
        for (size_t i = 0; i < n; i++) kept[i] = true;
    reject_failed_groups(scores, group, n, r, kept);
    for (size_t i = 0; i < n; i++) in_stats[i] = in_stats[i] && kept[i];
    or1_outcome_advantages(cfg->estimator, scores, group, in_stats, len, n, cfg->eps, adv);
    for (size_t i = 0; i < n; i++) {
        in_loss[i] = in_loss[i] && kept[i];
        if (!in_loss[i]) adv[i] = 0.0f;
    }
    free(kept);
    free(in_stats);
}
