/* The step batch: gathering rounds over ranks, advantages, mini-batches, reference log-probs. */
#include "or1/core.h"
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void train_batch_init(step_batch *b) { memset(b, 0, sizeof *b); }

/* Frees every array, the own completions included. */
void train_batch_free(step_batch *b) {
    or1_completions_free(b->c, (int)b->n_samples);
    for (size_t k = 0; b->ref_logp && k < b->n_samples; k++) free(b->ref_logp[k]);
    free(b->ref_logp);
    for (size_t k = 0; b->old_logp && k < b->n_samples; k++) free(b->old_logp[k]);
    free(b->old_logp);
    free(b->c);
    free(b->row);
    free(b->score);
    free(b->len);
    free(b->trained);
    free(b->trunc);
    free(b->owned);
    free(b->adv);
    free(b->in_loss);
    free(b->version);
    free(b->switch_at);
    free(b->stale);
    free(b->mb);
    or1_rejection_free(&b->rej);
    memset(b, 0, sizeof *b);
}

/* Grows the per-group and per-sample arrays to hold g groups of M samples. */
static void batch_grow(step_batch *b, size_t g, int M) {
    if (g <= b->cap_groups) return;
    size_t cap = g * 2, ns = cap * (size_t)M, old = b->cap_groups * (size_t)M;
    b->row = or1_realloc(b->row, cap * sizeof *b->row);
    b->score = or1_realloc(b->score, ns * sizeof *b->score);
    b->len = or1_realloc(b->len, ns * sizeof *b->len);
    b->trained = or1_realloc(b->trained, ns * sizeof *b->trained);
    b->trunc = or1_realloc(b->trunc, ns * sizeof *b->trunc);
    b->owned = or1_realloc(b->owned, ns * sizeof *b->owned);
    b->adv = or1_realloc(b->adv, ns * sizeof *b->adv);
    b->in_loss = or1_realloc(b->in_loss, ns * sizeof *b->in_loss);
    b->version = or1_realloc(b->version, ns * sizeof *b->version);
    b->switch_at = or1_realloc(b->switch_at, ns * sizeof *b->switch_at);
    b->c = or1_realloc(b->c, ns * sizeof *b->c);
    memset(b->c + old, 0, (ns - old) * sizeof *b->c);
    b->cap_groups = cap;
}

/* Assigns prompts to ranks, longest prompt first onto the least-loaded rank (expected
 * tokens ~ prompt length + T per sample), deterministically. owner[i] gets the rank. */
void train_batch_assign_ranks(const or1_dataset *data, const uint32_t *ids, size_t n, int ranks, int *owner) {
    double *load = or1_calloc((size_t)ranks, sizeof *load);
    size_t *order = or1_malloc((n ? n : 1) * sizeof *order);
    for (size_t i = 0; i < n; i++) order[i] = i;
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && or1_data_row_at(data, ids[order[j]])->n_ids > or1_data_row_at(data, ids[order[j - 1]])->n_ids; j--) {
            size_t t = order[j];
            order[j] = order[j - 1], order[j - 1] = t;
        }
    for (size_t k = 0; k < n; k++) {
        int best = 0;
        for (int r = 1; r < ranks; r++)
            if (load[r] < load[best]) best = r;
        owner[order[k]] = best;
        load[best] += or1_data_row_at(data, ids[order[k]])->n_ids + 1.0;
    }
    free(order);
    free(load);
}

/* Appends n groups; the rank that owns a group fills its numbers, a sum shares them. */
void train_batch_add_round(step_batch *b, const trainer *t, const uint32_t *ids, size_t n, int M, or1_scored *sc,
                           const size_t *pos, size_t mine) {
    b->M = M;
    batch_grow(b, b->n_groups + n, M);
    size_t g0 = b->n_groups, s0 = g0 * (size_t)M, ns = n * (size_t)M;
    /* per sample: score (0 where the reward failed), length, truncated, reward status, sampled
     * tokens, first token under the next policy; then the verification seconds and counts of
     * math and code rewards */
    double *shared = or1_calloc(6 * ns + 4, sizeof *shared), *lat = shared + 6 * ns;
    for (size_t k = 0; k < mine; k++)
        for (int j = 0; j < M; j++) {
            size_t local = k * (size_t)M + (size_t)j, global = pos[k] * (size_t)M + (size_t)j;
            const or1_completion *c = &sc->c[local];
            bool ok = sc->status[local] == OR1_REWARD_OK;
            shared[global] = ok ? sc->scores[local] : 0.0;
            shared[ns + global] = c->n;
            shared[2 * ns + global] = c->stopped ? 0 : 1;
            shared[3 * ns + global] = sc->status[local];
            shared[4 * ns + global] = or1_completion_sampled(c);
            shared[5 * ns + global] = sc->switch_at[local];
            int code = or1_data_row_at(t->data, ids[pos[k]])->code ? 1 : 0;
            lat[2 * code] += sc->seconds[local], lat[2 * code + 1] += sc->seconds[local] > 0;
        }
    or1_dist_sum_f64(t->d, shared, 6 * ns + 4);
    or1_tools_stats_sum(&sc->tools, t->d);
    or1_tools_stats_add(&b->tools, &sc->tools);
    for (int k = 0; k < 2; k++) b->reward_seconds[k] += lat[2 * k], b->reward_count[k] += (long)lat[2 * k + 1];
    for (size_t i = 0; i < ns; i++) {
        int st = (int)shared[3 * ns + i];
        b->score[s0 + i] = st == OR1_REWARD_OK ? (float)shared[i] : NAN;
        if (st > OR1_REWARD_OK && st < OR1_REWARD_N_STATUS) b->reward_errors[st]++;
        b->len[s0 + i] = (int)shared[ns + i];
        b->trained[s0 + i] = (int)shared[4 * ns + i];
        b->trunc[s0 + i] = shared[2 * ns + i] > 0.5;
        b->switch_at[s0 + i] = (int32_t)shared[5 * ns + i];
        b->version[s0 + i] = (int32_t)t->async.round_version;
        b->owned[s0 + i] = false;
    }
    for (size_t k = 0; k < mine; k++)
        for (int j = 0; j < M; j++) {
            size_t local = k * (size_t)M + (size_t)j, global = s0 + pos[k] * (size_t)M + (size_t)j;
            b->c[global] = sc->c[local];
            b->owned[global] = true;
            memset(&sc->c[local], 0, sizeof sc->c[local]);
        }
    for (size_t i = 0; i < n; i++) b->row[g0 + i] = ids[i];
    b->n_groups += n;
    b->n_samples = b->n_groups * (size_t)M;
    free(shared);
    or1_scored_free(sc);
}

/* Recipe order: the length-shaped rewards, then truncation masks, rejection, advantages
 * (or1_step_advantages) on them; max_len is the stage's T. */
void train_batch_decide(step_batch *b, const trainer *t, int max_len) {
    int32_t *group = or1_malloc(b->n_samples * sizeof *group);
    float *reward = or1_malloc(b->n_samples * sizeof *reward);
    for (size_t i = 0; i < b->n_samples; i++) group[i] = (int32_t)(i / (size_t)b->M);
    or1_length_rewards(&t->cfg->reward.length, b->score, b->len, b->trunc, b->n_samples, max_len, reward);
    b->length_penalty = 0;
    for (size_t i = 0; i < b->n_samples; i++)
        if (!isnan(b->score[i])) b->length_penalty += (double)reward[i] - (double)b->score[i];
    or1_rejection_free(&b->rej);
    or1_step_advantages(&t->cfg->advantage, reward, group, b->trunc, b->len, b->n_samples, b->adv, b->in_loss, &b->rej);
    b->kept_groups = b->rej.kept;
    free(reward);
    free(group);
}

/* With refill, only the first `need` kept groups train (DAPO's truncation to the batch
 * size); then T_k, the loss-token count. */
void train_batch_finalize(step_batch *b, const trainer *t, size_t need) {
    if (t->cfg->rejection.enabled && t->cfg->rejection.max_rounds > 1) {
        size_t g = b->n_groups ? b->n_groups : 1;
        bool *kept = or1_calloc(g, sizeof *kept), *take = or1_calloc(g, sizeof *take);
        for (size_t k = 0; k < b->n_groups; k++) kept[k] = b->rej.verdict[k] == OR1_GROUP_KEPT;
        or1_refill_take(kept, b->n_groups, need, take);
        for (size_t i = 0; i < b->n_samples; i++)
            if (!take[i / (size_t)b->M]) b->in_loss[i] = false;
        free(kept);
        free(take);
    }
    b->loss_tokens = 0;
    for (size_t i = 0; i < b->n_samples; i++)
        if (b->in_loss[i]) b->loss_tokens += b->trained[i];
}

/* or1_entropy_estimate over the samples in the loss on every rank: each rank's sums, added. */
double train_batch_entropy_estimate(const step_batch *b, const trainer *t) {
    size_t n = b->n_samples ? b->n_samples : 1;
    const float **logp = or1_calloc(n, sizeof *logp);
    const uint8_t **mask = or1_calloc(n, sizeof *mask);
    bool *use = or1_calloc(n, sizeof *use);
    for (size_t i = 0; i < b->n_samples; i++) {
        use[i] = b->owned[i] && b->in_loss[i];
        if (use[i]) logp[i] = b->c[i].logprobs, mask[i] = b->c[i].mask;
    }
    double s[2];
    or1_entropy_sums(logp, b->len, mask, use, b->n_samples, s);
    free(mask);
    free(logp);
    free(use);
    or1_dist_sum_f64(t->d, s, 2);
    return s[1] > 0 ? s[0] / s[1] : 0.0;
}

/* Groups [c*G/n, (c+1)*G/n) of the groups in the loss; T over all ranks, samples own only. */
int train_batch_chunk(const step_batch *b, const trainer *t, int c, int n, or1_sample **s, or1_loss_norm *norm) {
    size_t G = 0, M = (size_t)b->M;
    size_t *groups = or1_malloc((b->n_groups ? b->n_groups : 1) * sizeof *groups);
    for (size_t g = 0; g < b->n_groups; g++)
        for (size_t j = 0; j < M; j++)
            if (b->in_loss[g * M + j]) {
                groups[G++] = g;
                break;
            }
    size_t g0 = G * (size_t)c / (size_t)n, g1 = G * (size_t)(c + 1) / (size_t)n;
    *s = or1_malloc(((g1 - g0) * M + 1) * sizeof **s);
    *norm = (or1_loss_norm){.tokens = 0, .seqs = 0};
    int k = 0;
    for (size_t q = g0; q < g1; q++)
        for (size_t j = 0; j < M; j++) {
            size_t i = groups[q] * M + j;
            if (!b->in_loss[i]) continue;
            norm->tokens += b->trained[i];
            norm->seqs += b->trained[i] > 0;
            if (!b->owned[i]) continue;
            const or1_data_row *r = or1_data_row_at(t->data, b->row[groups[q]]);
            const float *rollout = b->c[i].logprobs, *old = b->old_logp ? b->old_logp[i] : rollout;
            (*s)[k++] = (or1_sample){.prompt = r->ids, .resp = b->c[i].ids, .n_prompt = r->n_ids,
                                     .n_resp = b->c[i].n, .adv = b->adv[i], .old_logp = old,
                                     .ref_logp = b->ref_logp ? b->ref_logp[i] : NULL, .rollout_logp = rollout,
                                     .id = (uint64_t)i, .mask = b->c[i].mask};
        }
    free(groups);
    return k;
}

/* Log-probs of the own loss samples under dm's weights, with the training kernels, packed
 * into micro-batches of the stage's size as the update packs them, into (*out)[i]. */
static int batch_logprobs(step_batch *b, trainer *t, or1_dmodel *dm, int micro_tokens, float ***out) {
    size_t n = b->n_samples ? b->n_samples : 1;
    *out = or1_calloc(n, sizeof **out);
    or1_sample *s = or1_malloc(n * sizeof *s);
    size_t *owner = or1_malloc(n * sizeof *owner);
    int k = 0;
    for (size_t i = 0; i < b->n_samples; i++) {
        if (!b->owned[i] || !b->in_loss[i]) continue;
        const or1_data_row *r = or1_data_row_at(t->data, b->row[i / (size_t)b->M]);
        s[k] = (or1_sample){.prompt = r->ids, .resp = b->c[i].ids, .n_prompt = r->n_ids, .n_resp = b->c[i].n,
                            .adv = 0.0f, .old_logp = NULL, .ref_logp = NULL, .rollout_logp = NULL,
                            .id = (uint64_t)i, .mask = NULL};
        (*out)[i] = or1_malloc((size_t)(b->c[i].n ? b->c[i].n : 1) * sizeof(float));
        owner[k++] = i;
    }
    int rc = 0;
    for (int i0 = 0, i1; i0 < k && rc == 0; i0 = i1) {
        i1 = or1_micro_batch_end(s, k, i0, micro_tokens);
        or1_packed_samples p;
        or1_pack_samples(&p, s + i0, i1 - i0);
        float *lp = or1_malloc((size_t)2 * (p.b.n_scored + 1) * sizeof *lp);
        rc = or1_dmodel_forward(dm, &p.b, false) ||
             or1_dmodel_head(dm, &p.b, (float)t->cfg->rollout.temperature, lp, lp + p.b.n_scored);
        for (int j = i0, off = 0; j < i1 && rc == 0; off += s[j].n_resp, j++) /* sample by sample */
            memcpy((*out)[owner[j]], lp + off, (size_t)s[j].n_resp * sizeof *lp);
        free(lp);
        or1_packed_samples_free(&p);
    }
    free(owner);
    free(s);
    return rc ? -1 : 0;
}

/* Under the frozen reference (the KL term). */
int train_batch_ref_logprobs(step_batch *b, trainer *t, int micro_tokens) {
    return batch_logprobs(b, t, t->ref_dm, micro_tokens, &b->ref_logp);
}

/* Under the policy before its update, with the mismatch sums summed over ranks. */
int train_batch_old_logprobs(step_batch *b, trainer *t, int micro_tokens) {
    if (batch_logprobs(b, t, t->dm, micro_tokens, &b->old_logp)) return -1;
    or1_mismatch m = {0};
    for (size_t i = 0; i < b->n_samples; i++)
        for (int j = 0; b->old_logp[i] && j < b->c[i].n; j++)
            if (!b->c[i].mask || b->c[i].mask[j]) or1_mismatch_add(&m, b->old_logp[i][j], b->c[i].logprobs[j]);
    train_mismatch_over_ranks(t, &m);
    b->mismatch = m;
    return 0;
}

/* Whether the update takes its old log-probs from the training engine. */
bool train_recompute_logprobs(const trainer *t) {
    return t->cfg->train.recompute_logprobs || t->cfg->correction.is != OR1_IS_NONE;
}

/* Sums and maxima of the mismatch over the ranks. */
void train_mismatch_over_ranks(const trainer *t, or1_mismatch *m) {
    double s[5] = {m->abs_sum, m->k3_sum, (double)m->tokens, m->w_sum, m->w2_sum};
    or1_dist_sum_f64(t->d, s, 5);
    or1_dist_max_f64(t->d, &m->abs_max, 1);
    m->abs_sum = s[0], m->k3_sum = s[1], m->tokens = (long)s[2], m->w_sum = s[3], m->w2_sum = s[4];
}
