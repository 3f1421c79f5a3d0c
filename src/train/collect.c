/* A step's samples: generation rounds of N prompts, each sampled and scored on the ranks that
 * own its groups (rollout_score.c), until N groups are kept (refill) or the round limit. The
 * synchronous loop and the rollout ranks of asynchronous training both collect this way. */
#include "or1/core.h"
#include "internal.h"

#include <stdlib.h>

/* One generation round (sw: a weight switch inside it, or NULL): this rank samples and scores its prompts; every per-sample number
 * the decisions need is then summed over ranks (each entry has one owner). */
static int round_rollout(trainer *t, const or1_stage_cfg *st, const uint32_t *ids, size_t n,
                         const or1_weight_switch *sw, uint64_t round_seed, step_batch *b) {
    int M = st->samples;
    int *owner = or1_malloc((n ? n : 1) * sizeof *owner);
    train_batch_assign_ranks(t->data, ids, n, t->d->size, owner);
    const or1_data_row **rows = or1_malloc((n ? n : 1) * sizeof *rows);
    uint64_t *seeds = or1_malloc((n ? n : 1) * sizeof *seeds);
    size_t mine = 0, *pos = or1_malloc((n ? n : 1) * sizeof *pos);
    for (size_t i = 0; i < n; i++)
        if (owner[i] == t->d->rank) {
            rows[mine] = or1_data_row_at(t->data, ids[i]);
            seeds[mine] = or1_rand_u64(round_seed, i, 0);
            pos[mine++] = i;
        }
    or1_sampling s = {.temperature = (float)t->cfg->rollout.temperature,
                      .top_p = (float)t->cfg->rollout.top_p, .top_k = t->cfg->rollout.top_k,
                      .max_new_tokens = st->context_length, .seed = 0, .stop_ids = NULL, .n_stop = 0};
    or1_scored sc;
    t->async.round_version = t->async.on ? t->async.version : t->step; /* the weights sampling this round */
    or1_engine_cfg engine = {.opts = t->cfg->rollout.engine, .progress = t->d->rank == 0};
    or1_rollout_job job = {.dm = t->dm, .tok = t->tok, .rows = rows, .n_rows = mine, .M = M, .sampling = &s,
                           .seeds = seeds, .engine = &engine, .tools = &t->cfg->rollout.tools,
                           .pool = t->pool, .reward = &t->cfg->reward.opts, .sw = sw};
    int rc = or1_rollout_score(&job, &sc, &b->t_rollout, &b->t_reward);
    for (size_t k = 0; rc == 0 && sw && t->async.version == t->async.round_version && k < sc.n; k++)
        sc.switch_at[k] = sc.c[k].n; /* the switch kept the weights (an early step): no token is newer */
    if (rc == 0) train_batch_add_round(b, t, ids, n, M, &sc, pos, mine);
    else or1_scored_free(&sc);
    free(pos);
    free(seeds);
    free(rows);
    free(owner);
    return rc;
}

/* Generation rounds until N kept groups (refill) or the round limit; then picks the groups. */
int train_collect(trainer *t, const or1_stage_cfg *st, const or1_weight_switch *sw, step_batch *b) {
    int max_rounds = t->cfg->rejection.enabled ? t->cfg->rejection.max_rounds : 1;
    for (int round = 1;; round++) {
        uint32_t *ids = or1_malloc((size_t)st->prompts * sizeof *ids);
        if (or1_data_next(t->data, (size_t)st->prompts, ids)) {
            free(ids);
            return -1;
        }
        uint64_t seed = or1_rand_u64((uint64_t)t->cfg->seed, (uint64_t)t->step, (uint64_t)round);
        int rc = round_rollout(t, st, ids, (size_t)st->prompts, round == 1 ? sw : NULL, seed, b);
        free(ids);
        if (rc) return -1;
        train_batch_decide(b, t, st->context_length);
        or1_refill_action act = or1_refill_decide(b->kept_groups, round, (size_t)st->prompts, max_rounds);
        if (act != OR1_REFILL_MORE) return 0;
    }
}

