/* The MAGIC training loop (paper §3.1; Skywork-OR1 ray_trainer.py fit): rollout, rewards,
 * advantages with rejection, N_SGD updates of eq. (3.1), adaptive entropy control, metrics,
 * stages, checkpoints. */
#include "or1/train.h"

#include "or1/algo.h"
#include "or1/core.h"
#include "or1/io.h"
#include "or1/reward_sandbox.h"
#include "internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every weight finite after an update (a corrupt optimizer state or an overflow gets past the
 * gradient-norm check); fails naming the quantity and the mini-batch. */
static int finite_weights(trainer *t, int mini_batch) {
    double norm = train_update_param_norm(t);
    if (norm < 0) return -1;
    if (!isfinite(norm))
        return or1_fail("the weights are not finite after the update of mini-batch %d (their norm is %g)", mini_batch,
                        norm);
    return 0;
}

/* Sums over the ranks for the mini-batch selections (or1_reducer). */
static void dist_sum(void *ctx, double *buf, size_t n) { or1_dist_sum_f64((const or1_dist *)ctx, buf, n); }

/* This rank's sums behind the mini-batch's entropy estimate (or1_entropy_sums over the
 * sampler's log-probs of its samples: the per-step controller's quantity, per mini-batch). */
static void chunk_entropy_sums(const or1_sample *s, int n, double sums[2]) {
    const float **logp = or1_malloc((size_t)(n > 0 ? n : 1) * sizeof *logp);
    const uint8_t **mask = or1_malloc((size_t)(n > 0 ? n : 1) * sizeof *mask);
    int *len = or1_malloc((size_t)(n > 0 ? n : 1) * sizeof *len);
    for (int k = 0; k < n; k++) logp[k] = s[k].rollout_logp, len[k] = s[k].n_resp, mask[k] = s[k].mask;
    or1_entropy_sums(logp, len, mask, NULL, (size_t)n, sums);
    free(len);
    free(mask);
    free(logp);
}

/* After a mini-batch's update (ls: its loss statistics summed over the ranks, ent its two
 * entropy sums): records it, and with entropy.update: minibatch moves the controller by that
 * mini-batch's entropy, so the next mini-batch trains with the new alpha. */
static void minibatch_controller(trainer *t, step_batch *b, const or1_loss_stats *ls, const double ent[2],
                                 double alpha) {
    double nt = ls->tokens > 0 ? (double)ls->tokens : 1.0, e = ent[1] > 0 ? ent[0] / ent[1] : 0.0;
    b->mb[b->n_mb++] = (mb_record){.entropy = e, .alpha = alpha, .entropy_full = ls->entropy / nt,
                                   .loss = ls->loss / nt, .pg_loss = ls->pg_loss / nt};
    if (t->cfg->entropy.update == OR1_ENT_PER_MINIBATCH) or1_entropy_update(&t->ent, &t->cfg->entropy, e);
}

/* The loss settings of a stage: every row of the loss options (or1/algo.h) from its config
 * section, rounded to its field's type, then what the config's other sections give (alpha
 * starts at 0: each mini-batch sets it); loss.scale 0 is the stage's T. */
static or1_loss_cfg loss_cfg_of(const or1_train_config *c, const or1_stage_cfg *st) {
    or1_loss_cfg lc = {0};
#define FROM_TRAIN(key, flag, field, type, def, lo, hi, help) lc.field = (type)c->train.field;
#define FROM_CORRECTION(key, flag, field, type, def, lo, hi, help) lc.field = (type)c->correction.field;
#define FROM_LOSS(key, flag, field, type, def, lo, hi, help) lc.field = (type)c->loss.field;
    OR1_CLIP_OPTIONS(FROM_TRAIN)
    OR1_CORRECTION_OPTIONS(FROM_CORRECTION)
    OR1_LOSS_OPTIONS(FROM_LOSS)
#undef FROM_TRAIN
#undef FROM_CORRECTION
#undef FROM_LOSS
    if (!(lc.scale > 0)) lc.scale = (double)st->context_length;
    lc.temperature = (float)c->rollout.temperature;
    lc.kl_coef = c->kl.enabled ? (float)c->kl.coef : 0.0f;
    lc.kl = c->kl.estimator;
    lc.is = c->correction.is;
    lc.agg = c->loss.agg;
    lc.mode = c->loss.mode;
    lc.offpolicy_mask = c->correction.offpolicy_mask;
    lc.offpolicy_delta = c->correction.offpolicy_delta;
    return lc;
}

/* Mini-batch updates: groups in batch order split into N_SGD chunks, epochs times; each
 * chunk's loss is aggregated with its global kept-token and sequence counts (eq. 3.1 for
 * token-mean; loss.scale 0 is the stage's T). Each chunk trains with the controller's
 * current alpha (fixed over the step unless entropy.update is minibatch). *grad_norm gets
 * the mean pre-clip norm over the updates. */
static int update(trainer *t, size_t si, step_batch *b, or1_loss_stats *total, double *grad_norm) {
    const or1_stage_cfg *st = &t->cfg->stages[si];
    int n_sgd = st->prompts / st->mini_batch > 0 ? st->prompts / st->mini_batch : 1;
    or1_reducer reduce = {.sum = dist_sum, .ctx = (void *)t->d};
    or1_loss_cfg lc = loss_cfg_of(t->cfg, st);
    lc.reduce = &reduce;
    or1_adamw_cfg ac = {.lr = (float)t->cfg->train.lr, .beta1 = (float)t->cfg->train.beta1,
                        .beta2 = (float)t->cfg->train.beta2, .eps = (float)t->cfg->train.adam_eps,
                        .weight_decay = (float)t->cfg->train.weight_decay};
    int micro = or1_train_micro_tokens(t->cfg, si), updates = 0;
    *grad_norm = 0;
    b->mb = or1_malloc((size_t)(t->cfg->train.epochs * n_sgd) * sizeof *b->mb);
    for (int e = 0; e < t->cfg->train.epochs; e++)
        for (int c = 0; c < n_sgd; c++) {
            or1_sample *s;
            or1_loss_norm ln;
            int n = train_batch_chunk(b, t, c, n_sgd, &s, &ln);
            if (ln.tokens == 0) {
                free(s);
                continue;
            }
            or1_dmodel_zero_grad(t->dm);
            or1_loss_stats ls = {.entropies = total->entropies};
            /* Clip-Cov's draws: one seed per (run seed, step, epoch, mini-batch), the same on every rank */
            lc.seed = or1_rand_u64((uint64_t)t->cfg->seed, (uint64_t)t->step, (uint64_t)(e * n_sgd + c) + 0x636f76ULL);
            double alpha = or1_entropy_alpha(&t->ent, &t->cfg->entropy);
            lc.entropy_coef = (float)alpha;
            int rc = or1_policy_grad(t->dm, s, n, &ln, micro, &lc, &ls);
            /* one collective: the summed statistics, then the mini-batch's two entropy sums */
            double sums[OR1_LOSS_N_SUMS + 2];
            or1_loss_stats_pack(&ls, sums);
            chunk_entropy_sums(s, n, sums + OR1_LOSS_N_SUMS);
            free(s);
            if (rc) return -1;
            or1_dist_sum_f64(t->d, sums, OR1_LOSS_N_SUMS + 2);
            or1_loss_stats_unpack(sums, &ls);
            or1_loss_stats_add(total, &ls);
            if (updates == 0 && !b->old_logp) { /* no update yet: the sampling policy's weights */
                train_mismatch_over_ranks(t, &ls.mismatch);
                b->mismatch = ls.mismatch;
            }
            if (!isfinite(ls.loss))
                return or1_fail("the loss of mini-batch %d is %g (a diverging run or non-finite inputs), found "
                                "before its update", c + 1, ls.loss);
            double norm;
            if (train_update_apply(t, &ac, &norm) || finite_weights(t, c + 1)) return -1;
            *grad_norm += norm;
            updates++;
            minibatch_controller(t, b, &ls, sums + OR1_LOSS_N_SUMS, alpha);
        }
    if (updates > 0) *grad_norm /= updates;
    return 0;
}

/* p10, p50 and p90 of the full-vocabulary entropy of every token the step's updates saw (each
 * epoch's pass counted), over the ranks. */
static void entropy_percentiles(trainer *t, const or1_values *ents, double pct[3]) {
    or1_reducer r = {.sum = dist_sum, .ctx = (void *)t->d};
    const double q[3] = {0.1, 0.5, 0.9};
    for (int i = 0; i < 3; i++) pct[i] = or1_quantile(ents->v, ents->n, q[i], &r);
}

/* Runs one training step: collect, advantages, update, controller, metrics. */
static int train_step(trainer *t) {
    long in_stage;
    size_t si = (size_t)or1_train_stage_of(t->cfg, t->step, &in_stage);
    const or1_stage_cfg *st = &t->cfg->stages[si];
    if (!t->async.on && in_stage == 0 && si > 0 && si != t->filtered_stage) train_online_filter(t, si);
    step_batch b;
    train_batch_init(&b);
    double t0 = or1_now();
    or1_dist_phase(t->step + 1, "rollout and rewards");
    if (t->async.on ? train_async_next_batch(t, &b) : train_collect(t, st, NULL, &b)) {
        train_batch_free(&b);
        return -1;
    }
    if (!t->async.on) train_batch_finalize(&b, t, (size_t)st->prompts);
    double e_k = train_batch_entropy_estimate(&b, t), alpha = or1_entropy_alpha(&t->ent, &t->cfg->entropy);
    bool was_enabled = t->ent.enabled;
    or1_values ents = {0};
    or1_loss_stats ls = {.entropies = &ents};
    double grad_norm = 0, t_up = or1_now();
    bool skipped = b.loss_tokens == 0;
    if (!skipped) {
        or1_dist_phase(t->step + 1, "update");
        int micro = or1_train_micro_tokens(t->cfg, si);
        int rc = t->has_ref ? train_batch_ref_logprobs(&b, t, micro) : 0;
        if (rc == 0 && train_recompute_logprobs(t)) rc = train_batch_old_logprobs(&b, t, micro);
        if (rc == 0) rc = update(t, si, &b, &ls, &grad_norm);
        if (rc) {
            train_batch_free(&b);
            or1_values_free(&ents);
            return or1_fail_ctx("train: step %ld: stopped; no checkpoint is written from this step (latest is the "
                                "last good one)", t->step + 1);
        }
        if (t->cfg->entropy.update == OR1_ENT_PER_STEP) or1_entropy_update(&t->ent, &t->cfg->entropy, e_k);
        entropy_percentiles(t, &ents, b.ent_pct);
    }
    or1_values_free(&ents);
    t_up = or1_now() - t_up;
    t->step++;
    if (t->async.on && train_async_send_weights(t)) {
        train_batch_free(&b);
        return -1;
    }
    if (!t->async.on) train_track_solved(t, &b);
    step_record rec = {.stage = si, .st = st, .e_k = e_k, .alpha = alpha, .enabled = was_enabled, .ls = &ls,
                       .grad_norm = grad_norm, .skipped = skipped, .t_update = t_up,
                       .t_step = or1_now() - t0};
    int wrote = train_write_metrics(t, &b, &rec);
    train_batch_free(&b);
    if (wrote) return or1_fail_ctx("train: step %ld: stopped; no checkpoint of this step is written", t->step);
    if (t->has_ref && t->cfg->kl.reset_every > 0 && t->step % t->cfg->kl.reset_every == 0) return train_reset_reference(t);
    return 0;
}

/* The schedule: steps until the last stage ends, with validation and checkpoints. */
static int train_loop(trainer *t) {
    long total = or1_train_total_steps(t->cfg);
    while (t->step < total) {
        if (train_step(t)) return -1;
        bool last = t->step == total;
        or1_dist_phase(t->step, "validation");
        if (t->cfg->eval.every > 0 && (t->step % t->cfg->eval.every == 0 || last) && train_run_validation(t)) return -1;
        or1_dist_phase(t->step, "checkpoint");
        if ((t->cfg->checkpoint.every > 0 && t->step % t->cfg->checkpoint.every == 0) || last)
            if ((t->async.on && train_async_before_checkpoint(t)) || train_save_checkpoint(t)) return -1;
    }
    return 0;
}

/* Rank 0's status and error message on every rank (a collective): decisions about the run
 * folder are made once, before any rank writes into it. */
static int from_rank0(const or1_dist *d, int rc) {
    struct {
        int rc;
        char msg[1024];
    } b = {rc, ""};
    if (d->rank == 0 && rc) snprintf(b.msg, sizeof b.msg, "%s", or1_error());
    or1_dist_bcast_bytes(d, &b, sizeof b);
    if (d->rank != 0 && b.rc) or1_fail("%s", b.msg);
    return b.rc;
}

/* Sets up, optionally resumes, trains, cleans up. Failures on any rank end the job. */
int or1_train_run(const or1_train_config *cfg, const or1_train_start *start, const or1_dist *d) {
    or1_dist_set_timeout(d, cfg->dist.timeout_s);
    char *resume_dir = NULL;
    int rc = train_run_resume_dir(cfg, start ? start->resume : NULL, d->rank == 0, &resume_dir);
    rc = from_rank0(d, rc || d->rank != 0 ? rc : train_run_prepare_output(cfg, resume_dir != NULL, start && start->overwrite));
    if (rc) {
        free(resume_dir);
        return -1;
    }
    if (resume_dir && d->rank == 0) fprintf(stderr, "train: resuming from %s\n", resume_dir);
    async_state as = {0};
    or1_dist group = *d;
    if (cfg->train.async && train_async_roles(cfg, d, &as, &group)) {
        free(resume_dir);
        return -1;
    }
    trainer t;
    int opened = train_open(&t, cfg, &group, resume_dir, cfg->train.async ? &as : NULL);
    free(resume_dir);
    if (opened) {
        train_close(&t);
        return -1;
    }
    long total = or1_train_total_steps(cfg);
    if (t.step >= total) {
        if (d->rank == 0)
            fprintf(stderr, "train: the checkpoint is at step %ld and the schedule has %ld steps: nothing to train "
                            "(raise train.steps or the stages' steps to go on)\n", t.step, total);
        train_close(&t);
        return 0;
    }
    if (d->rank == 0)
        fprintf(stderr, "train: %zu prompts, %zu stages, %ld steps from step %ld, %d rank(s)\n", or1_data_active(t.data),
                cfg->n_stages, total, t.step, d->size);
    if (t.async.rollout) {
        rc = train_async_rollout_loop(&t);
        train_close(&t);
        return rc;
    }
    rc = t.step == 0 && cfg->eval.every > 0 ? train_run_validation(&t) : 0;
    t.first_step = t.step, t.started = or1_now();
    if (rc == 0) rc = train_loop(&t);
    train_close(&t);
    return rc;
}
