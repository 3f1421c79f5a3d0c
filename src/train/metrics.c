/* What a step reports: its metrics row in metrics.jsonl (written whole or not at all) and its
 * progress line, validation during training, and the per-prompt solved counts of the online
 * filter. */
#include "or1/core.h"
#include "or1/io.h"
#include "or1/reward_sandbox.h"
#include "internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Records every group's number of correct samples with the sampler (paper §3.1's
 * online filter). */
void train_track_solved(trainer *t, const step_batch *b) {
    if (!t->cfg->data.online_filter) return;
    for (size_t g = 0; g < b->n_groups; g++) {
        int correct = 0;
        /* a failed reward (NaN) is not a solve: such a prompt is never taken for solved by all */
        for (int j = 0; j < b->M; j++) correct += b->score[g * (size_t)b->M + (size_t)j] > 0.5f;
        if (or1_data_record(t->data, b->row[g], correct, b->M) != 0) or1_dist_abort(t->d, or1_error());
    }
}

/* Online filter (paper §3.1): at a stage start, prompts every sample solved in the
 * previous stage go. */
void train_online_filter(trainer *t, size_t stage) {
    t->filtered_stage = stage;
    if (!t->cfg->data.online_filter) return;
    size_t before = or1_data_active(t->data), dropped = or1_data_stage_filter(t->data);
    if (t->d->rank == 0)
        fprintf(stderr, "train: stage %zu starts: online filter dropped %zu solved prompts (%zu -> %zu active)\n", stage,
                dropped, before, or1_data_active(t->data));
}

/* Appends one JSON row to metrics.jsonl and flushes it (rank 0). A row that cannot be written
 * whole (a full disk) is cut off again, so the file keeps whole rows only, and the run stops
 * naming the file: a run whose metrics are lost does not go on. */
static int emit(trainer *t, cJSON *row) {
    int rc = 0;
    if (t->metrics) {
        char *text = cJSON_PrintUnformatted(row);
        struct stat st;
        off_t before = fstat(fileno(t->metrics), &st) == 0 ? st.st_size : -1;
        if (fprintf(t->metrics, "%s\n", text) < 0 || fflush(t->metrics) != 0) {
            int err = errno;
            char *path = or1_path_join(t->cfg->output_dir, "metrics.jsonl");
            fclose(t->metrics); /* drops what stdio still holds, before the cut */
            t->metrics = NULL;
            if (before >= 0 && truncate(path, before) != 0) err = errno;
            rc = or1_fail("%s: cannot write the metrics row of step %ld: %s (the rows before it are kept)", path,
                          t->step, strerror(err));
            free(path);
        }
        free(text);
    }
    cJSON_Delete(row);
    return rc;
}

/* The rollout/training mismatch of the step's sampled tokens (all of them when the old
 * log-probs were recomputed, else the first mini-batch, taken before any update) and the
 * rollout correction's weights. */
static void add_mismatch(cJSON *row, const trainer *t, const step_batch *b, const or1_loss_stats *ls, double nt) {
    const or1_mismatch *m = &b->mismatch;
    double n = m->tokens > 0 ? (double)m->tokens : 1.0;
    cJSON_AddNumberToObject(row, "mismatch_abs_mean", m->abs_sum / n);
    cJSON_AddNumberToObject(row, "mismatch_abs_max", m->abs_max);
    cJSON_AddNumberToObject(row, "mismatch_k3", m->k3_sum / n);
    cJSON_AddNumberToObject(row, "mismatch_tokens", (double)m->tokens);
    cJSON_AddStringToObject(row, "mismatch_over", b->old_logp ? "recomputed" : "first_mini_batch");
    if (t->cfg->correction.is == OR1_IS_NONE) return;
    cJSON_AddNumberToObject(row, "rollout_is_weight_mean", ls->is_weight / nt);
    cJSON_AddNumberToObject(row, "rollout_is_masked_frac", (double)ls->is_masked / nt);
}

/* Per-step diagnostics: the clip fraction by advantage sign (shares of all tokens), the share
 * of groups whose (shaped) rewards are all equal, the token entropy percentiles of the update,
 * and the effective sample size of the train/rollout importance weights (beside the mismatch). */
static void add_diagnostics(cJSON *row, const step_batch *b, const or1_loss_stats *ls, double nt, bool skipped) {
    cJSON_AddNumberToObject(row, "clip_frac_pos", (double)ls->clipped_pos / nt);
    cJSON_AddNumberToObject(row, "clip_frac_neg", (double)ls->clipped_neg / nt);
    const or1_rejection *r = &b->rej;
    double groups = r->n_groups ? (double)r->n_groups : 1.0;
    cJSON_AddNumberToObject(row, "zero_variance_ratio", (double)(r->solve_none + r->solve_all + r->constant) / groups);
    cJSON_AddNumberToObject(row, "is_ess", or1_mismatch_ess(&b->mismatch));
    if (skipped) return;
    cJSON_AddNumberToObject(row, "entropy_p10", b->ent_pct[0]);
    cJSON_AddNumberToObject(row, "entropy_p50", b->ent_pct[1]);
    cJSON_AddNumberToObject(row, "entropy_p90", b->ent_pct[2]);
}

/* With entropy.update: minibatch, the step's mini-batch updates in order as lists: the
 * controller's input (entropy_mb), the alpha each trained with (alpha_mb), and their token
 * means of the full entropy, the loss and the pg term. */
static void add_minibatch_trace(cJSON *row, const trainer *t, const step_batch *b) {
    if (t->cfg->entropy.update != OR1_ENT_PER_MINIBATCH) return;
    static const char *const names[] = {"entropy_mb", "alpha_mb", "entropy_full_mb", "loss_mb", "pg_loss_mb"};
    for (size_t f = 0; f < sizeof names / sizeof names[0]; f++) {
        cJSON *list = cJSON_AddArrayToObject(row, names[f]);
        for (int k = 0; k < b->n_mb; k++) {
            const mb_record *m = &b->mb[k];
            double v[] = {m->entropy, m->alpha, m->entropy_full, m->loss, m->pg_loss};
            cJSON_AddItemToArray(list, cJSON_CreateNumber(v[f]));
        }
    }
}

/* The step's failed rewards by status, and a loud warning when they pass the configured share
 * (they are left out of the loss, so many of them leave the step training on a biased few). */
static void add_reward_errors(cJSON *row, const trainer *t, const step_batch *b) {
    cJSON *o = cJSON_AddObjectToObject(row, "reward_errors");
    long total = 0;
    for (int k = 1; k < OR1_REWARD_N_STATUS; k++) {
        cJSON_AddNumberToObject(o, or1_reward_status_name((or1_reward_status)k), (double)b->reward_errors[k]);
        total += b->reward_errors[k];
    }
    cJSON_AddNumberToObject(row, "reward_error_groups", (double)b->rej.reward_errors);
    static const char *const cls[2] = {"reward_ms_math", "reward_ms_code"};
    for (int k = 0; k < 2; k++) /* mean verification time per reward of the class that ran */
        if (b->reward_count[k] > 0)
            cJSON_AddNumberToObject(row, cls[k], 1e3 * b->reward_seconds[k] / (double)b->reward_count[k]);
    double share = b->n_samples ? (double)total / (double)b->n_samples : 0.0;
    if (total > 0 && share > t->cfg->reward.max_error_ratio)
        fprintf(stderr, "WARNING: step %ld: %ld of %zu rewards failed (timeout %ld, verifier_error %ld, sandbox_error "
                        "%ld, resource %ld): above reward.max_error_ratio %.3g; they are left out of the loss\n",
                t->step, total, b->n_samples, b->reward_errors[OR1_REWARD_TIMEOUT],
                b->reward_errors[OR1_REWARD_VERIFIER_ERROR], b->reward_errors[OR1_REWARD_SANDBOX_ERROR],
                b->reward_errors[OR1_REWARD_RESOURCE], t->cfg->reward.max_error_ratio);
}

/* Seconds as "1h02m", "3m07s" or "42s". */
static void hms(double sec, char *buf, size_t cap) {
    long s = sec > 0 ? (long)(sec + 0.5) : 0;
    if (s >= 3600) snprintf(buf, cap, "%ldh%02ldm", s / 3600, s / 60 % 60);
    else if (s >= 60) snprintf(buf, cap, "%ldm%02lds", s / 60, s % 60);
    else snprintf(buf, cap, "%lds", s);
}

/* "elapsed E, eta R": time since this process's first step, and the rest of the schedule at
 * the mean step time so far. */
static void run_clock(const trainer *t, char *buf, size_t cap) {
    double elapsed = or1_now() - t->started;
    long done = t->step - t->first_step, left = or1_train_total_steps(t->cfg) - t->step;
    char e[48], r[48];
    hms(elapsed, e, sizeof e);
    hms(done > 0 ? elapsed / (double)done * (double)left : 0, r, sizeof r);
    snprintf(buf, cap, "elapsed %s, eta %s", e, r);
}

/* Asynchronous training's columns: trained tokens by staleness (versions behind the policy
 * trained), samples left out for exceeding max_staleness, each role's seconds waiting on the
 * other, and each role's tokens per second (sampled tokens over the rollout's wall time for the
 * batch; trained tokens over the update's). */
static void add_async(cJSON *row, const step_batch *b, double t_update) {
    cJSON *h = cJSON_AddArrayToObject(row, "async_staleness_tokens");
    for (int k = 0; k < b->n_stale; k++) cJSON_AddItemToArray(h, cJSON_CreateNumber((double)b->stale[k]));
    cJSON_AddNumberToObject(row, "async_stale_dropped", (double)b->stale_dropped);
    cJSON_AddNumberToObject(row, "seconds_trainer_wait", b->t_wait);
    cJSON_AddNumberToObject(row, "seconds_rollout_wait", b->rollout_wait);
    cJSON_AddNumberToObject(row, "rollout_tokens_per_s", b->rollout_seconds > 0 ? b->rollout_tokens / b->rollout_seconds : 0.0);
    cJSON_AddNumberToObject(row, "train_tokens_per_s", t_update > 0 ? (double)b->loss_tokens / t_update : 0.0);
}

/* The per-step metrics row, a progress line, and loud warnings; fails when the row cannot be
 * written. */
int train_write_metrics(trainer *t, const step_batch *b, const step_record *r) {
    size_t stage = r->stage;
    const or1_stage_cfg *st = r->st;
    const or1_loss_stats *ls = r->ls;
    double e_k = r->e_k, alpha = r->alpha, grad_norm = r->grad_norm, t_update = r->t_update, t_step = r->t_step;
    bool enabled = r->enabled, skipped = r->skipped;
    if (t->d->rank != 0) return 0;
    int32_t *group = or1_malloc((b->n_samples ? b->n_samples : 1) * sizeof *group);
    for (size_t i = 0; i < b->n_samples; i++) group[i] = (int32_t)(i / (size_t)b->M);
    or1_batch_stats bs;
    or1_batch_stats_compute(b->score, group, b->len, b->trained, b->trunc, b->in_loss, b->n_samples, &b->rej, &bs);
    free(group);
    double nt = ls->tokens > 0 ? (double)ls->tokens : 1.0;
    cJSON *row = cJSON_CreateObject();
    cJSON_AddNumberToObject(row, "step", (double)t->step);
    cJSON_AddNumberToObject(row, "stage", (double)stage);
    cJSON_AddStringToObject(row, "stage_name", st->name ? st->name : "");
    cJSON_AddNumberToObject(row, "context_length", st->context_length);
    or1_batch_stats_json(&bs, row);
    cJSON_AddNumberToObject(row, "entropy_sampled", e_k);
    cJSON_AddNumberToObject(row, "entropy_full", ls->entropy / nt);
    cJSON_AddNumberToObject(row, "entropy_target", t->cfg->entropy.target);
    cJSON_AddNumberToObject(row, "alpha", alpha);
    cJSON_AddBoolToObject(row, "entropy_enabled", enabled);
    cJSON_AddNumberToObject(row, "entropy_coef_next", t->ent.coef);
    add_minibatch_trace(row, t, b);
    cJSON_AddNumberToObject(row, "loss", ls->loss / nt);
    cJSON_AddNumberToObject(row, "pg_loss", ls->pg_loss / nt);
    cJSON_AddNumberToObject(row, "clip_frac", (double)ls->clipped / nt);
    add_diagnostics(row, b, ls, nt, skipped);
    cJSON_AddNumberToObject(row, "grad_norm", grad_norm);
    if (t->cfg->kl.enabled) cJSON_AddNumberToObject(row, "kl", ls->kl / nt);
    const or1_length_cfg *lc = &t->cfg->reward.length;
    if (lc->overlong || lc->truncation_penalty > 0) {
        size_t decided = 0;
        for (size_t i = 0; i < b->n_samples; i++) decided += !isnan(b->score[i]);
        cJSON_AddNumberToObject(row, "length_penalty_mean", decided ? b->length_penalty / (double)decided : 0.0);
    }
    if (t->cfg->loss.mode == OR1_PG_CLIP_COV || t->cfg->loss.mode == OR1_PG_KL_COV)
        cJSON_AddNumberToObject(row, "cov_selected_frac", (double)ls->cov_selected / nt);
    if (t->cfg->loss.top_entropy < 1) cJSON_AddNumberToObject(row, "low_entropy_frac", (double)ls->low_entropy / nt);
    if (t->cfg->correction.offpolicy_mask)
        cJSON_AddNumberToObject(row, "offpolicy_masked_frac", (double)ls->offpolicy_masked / nt);
    add_mismatch(row, t, b, ls, nt);
    add_reward_errors(row, t, b);
    bool tools = t->cfg->rollout.tools.max_turns > 0;
    if (tools) or1_tools_stats_json(&b->tools, b->n_samples, row, "tool_");
    if (t->async.on) add_async(row, b, t_update);
    cJSON_AddBoolToObject(row, "skipped", skipped);
    cJSON_AddNumberToObject(row, "seconds_rollout", b->t_rollout);
    cJSON_AddNumberToObject(row, "seconds_reward", b->t_reward);
    cJSON_AddNumberToObject(row, "seconds_update", t_update);
    cJSON_AddNumberToObject(row, "seconds_step", t_step);
    if (emit(t, row)) return -1;
    char clock[128], calls[64] = "";
    run_clock(t, clock, sizeof clock);
    if (tools)
        snprintf(calls, sizeof calls, " tools %.2f/sample", b->n_samples ? (double)b->tools.calls / (double)b->n_samples : 0.0);
    fprintf(stderr, "step %ld/%ld [%s] reward %.3f kept %zu/%zu len %.0f trunc %.2f ent %.3f alpha %.2e gnorm %.3f%s "
                    "%.1fs %s\n",
            t->step, or1_train_total_steps(t->cfg), st->name ? st->name : "", bs.reward_mean, bs.kept_groups, bs.groups,
            bs.resp_len_mean, bs.truncated_ratio, e_k, alpha, grad_norm, calls, t_step, clock);
    if (bs.truncated_ratio >= 1.0)
        fprintf(stderr, "WARNING: step %ld: every response was truncated at %d tokens: rewards are all 0; raise the "
                        "context length\n", t->step, st->context_length);
    if (skipped)
        fprintf(stderr, "WARNING: step %ld: every group was rejected (all rewards equal in each): no update this step\n",
                t->step);
    return 0;
}

/* Validation on the eval files at every configured temperature; a metrics row each. */
int train_run_validation(trainer *t) {
    if (!t->eval_data) return 0;
    size_t n = or1_data_rows(t->eval_data);
    const or1_data_row **rows = or1_malloc(n * sizeof *rows);
    for (size_t i = 0; i < n; i++) rows[i] = or1_data_row_at(t->eval_data, (uint32_t)i);
    int stage = or1_train_stage_of(t->cfg, t->step > 0 ? t->step - 1 : 0, NULL);
    int T = t->cfg->eval.max_new_tokens > 0 ? t->cfg->eval.max_new_tokens : t->cfg->stages[stage < 0 ? 0 : stage].context_length;
    for (size_t k = 0; k < t->cfg->eval.n_temperatures; k++) {
        or1_eval_opts o = {.n = t->cfg->eval.n, .temperature = (float)t->cfg->eval.temperatures[k],
                           .top_p = (float)t->cfg->eval.top_p, .top_k = 0, .max_new_tokens = T,
                           .engine = t->cfg->rollout.engine, .seed = (uint64_t)t->cfg->seed ^ 0x5a5a,
                           .reward = t->cfg->reward.opts, .tools = t->cfg->rollout.tools};
        cJSON *rep = or1_eval(t->dm, t->tok, rows, n, &o, t->pool, t->d, NULL, NULL, NULL);
        if (!rep) {
            free(rows);
            return -1;
        }
        if (t->d->rank == 0) {
            cJSON *overall = cJSON_GetObjectItemCaseSensitive(rep, "overall");
            char key[32];
            snprintf(key, sizeof key, "avg@%d", o.n);
            const cJSON *avg = cJSON_GetObjectItemCaseSensitive(overall, key);
            fprintf(stderr, "eval step %ld T=%.2f: %s %.4f\n", t->step, o.temperature, key, avg ? avg->valuedouble : -1);
        }
        cJSON *row = cJSON_CreateObject();
        cJSON_AddStringToObject(row, "type", "eval");
        cJSON_AddNumberToObject(row, "step", (double)t->step);
        cJSON_AddNumberToObject(row, "temperature", t->cfg->eval.temperatures[k]);
        cJSON_AddItemToObject(row, "report", rep);
        int rc = t->d->rank == 0 ? emit(t, row) : (cJSON_Delete(row), 0);
        if (rc) {
            free(rows);
            return -1;
        }
    }
    free(rows);
    return 0;
}
