/* Asynchronous MAGIC (train.async): rollout ranks sample while trainer ranks train.
 *
 * The schedule is fixed by step counts, never by wall time, so a run is the same whatever the
 * ranks' speeds and a resumed run equals one never stopped. With s = train.max_staleness, the
 * batch of step j is sampled by the policy of version max(0, j-1-s) (version v: the weights
 * after v updates): s = 0 is the synchronous loop in lockstep, s = 1 one-step-off. With
 * train.partial_tokens P, each sample of step j's first round takes version j-s after its first
 * P tokens (its KV recomputed), so its later tokens are one step fresher. The first rollout rank
 * sends each finished batch to every trainer rank; the first trainer rank sends the weights of
 * every version a rollout rank will need, right after the update, while the rollout ranks are
 * still sampling. A checkpoint of step k keeps the batches k+1..k+s (sampled by versions the
 * checkpoint no longer holds) and the sampler's state after them; everything after them is
 * sampled again from the checkpoint's own weights. */
#include "or1/core.h"
#include "or1/io.h"
#include "internal.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The tags of the two message streams. */
enum { TAG_BATCH = 41, TAG_WEIGHTS = 42 };

/* The file of a checkpoint that holds its pending batches, and its mark. */
#define PENDING_FILE "async_pending.bin"
static const char PENDING_MAGIC[8] = {'O', 'R', '1', 'P', 'E', 'N', 'D', '1'};

/* See internal.h: trainer ranks first, then rollout_ranks of them (a count, or a share of the
 * job rounded, at least 1); at least one of each. */
int train_async_roles(const or1_train_config *c, const or1_dist *world, async_state *a, or1_dist *group) {
    if (world->size < 2)
        return or1_fail("train.async needs 2 ranks or more, one to sample and one to train (launch with mpirun -np 2 "
                        "or more, or set train.async false)");
    double r = c->train.rollout_ranks;
    int R = r >= 1 ? (int)r : (int)lround(r * world->size);
    if (R < 1) R = 1;
    if (R >= world->size)
        return or1_fail("train.rollout_ranks %g leaves no trainer rank among %d ranks", r, world->size);
    a->on = true, a->world = *world, a->n_train = world->size - R;
    a->rollout = world->rank >= a->n_train;
    a->received = -1;
    return or1_dist_split(world, a->rollout ? 1 : 0, group);
}

/* The newest version any rollout rank will ask for: the first-round switch of the last step
 * with partial rollouts, else the version sampling it. */
static long newest_needed(const trainer *t) {
    long total = or1_train_total_steps(t->cfg), s = t->cfg->train.max_staleness;
    long v = t->cfg->train.partial_tokens > 0 ? total - s : total - 1 - s;
    return v > 0 ? v : 0;
}

/* Rollout ranks: receives versions in order until the weights hold `want` (nothing when they
 * already do: after a resume from a synchronous checkpoint the first batches are fresher);
 * adds the seconds waited. */
static int take_version(trainer *t, long want, double *waited) {
    async_state *a = &t->async;
    double t0 = or1_now();
    while (a->version < want) {
        or1_dist_phase(a->version + 1, "receiving weights");
        or1_dist_recv_into(&a->world, 0, TAG_WEIGHTS, t->m.params, t->m.n_floats * sizeof(float));
        if (or1_dmodel_push(t->dm)) return -1;
        a->version++;
    }
    *waited += or1_now() - t0;
    return 0;
}

/* The switch of a partial rollout: the next policy, version a->partial_target. */
static int partial_switch(void *ctx) {
    trainer *t = ctx;
    return take_version(t, t->async.partial_target, &t->async.round_wait);
}

/* The sampled tokens of a batch (what the rollout made, tools' replies left out). */
static long sampled_tokens(const step_batch *b) {
    long n = 0;
    for (size_t i = 0; i < b->n_samples; i++) n += b->trained[i];
    return n;
}

/* The batches a rollout rank has sent and whose sends may be in flight: each one's step, bytes
 * and one send per trainer rank, oldest first. */
typedef struct {
    long *index;
    char **buf;
    or1_dist_send ***sends;
    size_t n;
    int ranks;
} shipments;

/* Waits for and frees the shipments of steps up to `upto` (all when upto is LONG_MAX). */
static void shipments_settle(shipments *s, long upto) {
    size_t k = 0;
    for (; k < s->n && s->index[k] <= upto; k++) {
        for (int r = 0; r < s->ranks; r++) or1_dist_send_wait(s->sends[k][r]);
        free(s->sends[k]);
        free(s->buf[k]);
    }
    if (k == 0) return;
    memmove(s->index, s->index + k, (s->n - k) * sizeof *s->index);
    memmove(s->buf, s->buf + k, (s->n - k) * sizeof *s->buf);
    memmove(s->sends, s->sends + k, (s->n - k) * sizeof *s->sends);
    s->n -= k;
}

/* Rollout ranks: every rank's completions to the first one, which packs step j's batch with the
 * sampler's state and sends it to every trainer rank (kept in *s until settled). */
static int ship_batch(trainer *t, step_batch *b, long j, double waited, double t0, shipments *s, int max_len) {
    async_state *a = &t->async;
    size_t len, all_len;
    char *mine = train_wire_pack_owned(b, &len), *all;
    or1_dist_gather_bytes(t->d, mine, len, &all, &all_len);
    free(mine);
    /* the first rank's own records lead the gathered bytes and are already in b */
    int rc = t->d->rank == 0 ? train_wire_unpack_owned(all + len, all_len - len, b, max_len) : 0;
    free(all);
    if (rc || t->d->rank != 0) return rc;
    cJSON *ds = or1_data_state_json(t->data);
    char *state = cJSON_PrintUnformatted(ds);
    cJSON_Delete(ds);
    async_batch ab = {.index = j, .rollout_wait = waited, .rollout_seconds = or1_now() - t0,
                      .rollout_tokens = sampled_tokens(b), .data_state = state,
                      .filtered_stage = t->filtered_stage};
    char *msg = train_wire_pack_batch(b, &ab, t->data, &len);
    free(state);
    s->index = or1_realloc(s->index, (s->n + 1) * sizeof *s->index);
    s->buf = or1_realloc(s->buf, (s->n + 1) * sizeof *s->buf);
    s->sends = or1_realloc(s->sends, (s->n + 1) * sizeof *s->sends);
    s->index[s->n] = j, s->buf[s->n] = msg, s->ranks = a->n_train;
    s->sends[s->n] = or1_malloc((size_t)a->n_train * sizeof **s->sends);
    for (int r = 0; r < a->n_train; r++) s->sends[s->n][r] = or1_dist_isend(&a->world, r, TAG_BATCH, msg, len);
    s->n++;
    return 0;
}

/* See internal.h: step j's batch from version max(0, j-1-s) (or the loaded one when newer),
 * with the online filter at a stage start and the solved records, as the synchronous loop. Once
 * version j-1-s is here the trainer has received every batch up to step j-1-s, so their sends
 * are done and their bytes freed. */
int train_async_rollout_loop(trainer *t) {
    async_state *a = &t->async;
    const or1_train_config *c = t->cfg;
    long total = or1_train_total_steps(c), s = c->train.max_staleness;
    a->version = t->step;
    long first = a->next_batch > 0 ? a->next_batch : t->step + 1;
    shipments sent = {0};
    int rc = 0;
    for (long j = first; j <= total && rc == 0; j++) {
        double t0 = or1_now(), waited = 0;
        long want = j - 1 - s;
        if (take_version(t, want > 0 ? want : 0, &waited)) return -1;
        shipments_settle(&sent, want);
        long in_stage;
        t->step = j - 1;
        size_t si = (size_t)or1_train_stage_of(c, t->step, &in_stage);
        const or1_stage_cfg *st = &c->stages[si];
        if (in_stage == 0 && si > 0 && si != t->filtered_stage) train_online_filter(t, si);
        a->partial_target = j - s > 0 ? j - s : 0;
        a->round_wait = 0;
        step_batch b;
        train_batch_init(&b);
        or1_dist_phase(j, "rollout and rewards");
        or1_weight_switch sw = {.after = c->train.partial_tokens, .apply = partial_switch, .ctx = t,
                                .keep_kv = !c->train.partial_recompute_kv}; /* partial rollouts */
        rc = train_collect(t, st, c->train.partial_tokens > 0 ? &sw : NULL, &b);
        if (rc == 0) {
            train_batch_finalize(&b, t, (size_t)st->prompts);
            train_track_solved(t, &b);
            rc = ship_batch(t, &b, j, waited + a->round_wait, t0, &sent, st->context_length);
        }
        train_batch_free(&b);
    }
    shipments_settle(&sent, LONG_MAX);
    free(sent.index);
    free(sent.buf);
    free(sent.sends);
    return rc;
}

/* Trainer ranks: appends bytes of step received+1 to the pending batches after reading them
 * whole (where names them in errors); keeps the sampler state they carry. */
static int add_pending(trainer *t, char *buf, size_t len, const char *where) {
    async_state *a = &t->async;
    step_batch b;
    async_batch ab;
    size_t max_len = 0;
    for (size_t i = 0; i < t->cfg->n_stages; i++)
        if ((size_t)t->cfg->stages[i].context_length > max_len) max_len = (size_t)t->cfg->stages[i].context_length;
    if (train_wire_unpack_batch(buf, len, where, t->data, (int)max_len, &b, &ab)) {
        free(buf);
        return -1;
    }
    train_batch_free(&b);
    long want = a->received < 0 ? t->step + 1 : a->received + 1;
    if (ab.index != want) {
        free(ab.data_state);
        free(buf);
        return or1_fail("%s: holds the batch of step %ld where step %ld's was expected", where, ab.index, want);
    }
    if (a->n_pending == 0) a->pending_first = ab.index;
    a->pending = or1_realloc(a->pending, (a->n_pending + 1) * sizeof *a->pending);
    a->pending_len = or1_realloc(a->pending_len, (a->n_pending + 1) * sizeof *a->pending_len);
    a->pending[a->n_pending] = buf, a->pending_len[a->n_pending++] = len;
    a->received = ab.index;
    free(a->data_state);
    a->data_state = ab.data_state;
    a->filtered_stage = ab.filtered_stage;
    return 0;
}

/* Trainer ranks: receives the next batch from the first rollout rank. */
static int receive_batch(trainer *t) {
    async_state *a = &t->async;
    size_t len;
    or1_dist_phase(a->received + 1, "receiving a batch");
    char *buf = or1_dist_recv(&a->world, a->n_train, TAG_BATCH, &len);
    char where[64];
    snprintf(where, sizeof where, "the batch from rank %d", a->n_train);
    return add_pending(t, buf, len, where);
}

/* The staleness of every trained token of b (trained at version `at`), counted per lag into
 * b->stale (lags 0..s); samples older than s leave the loss (counted in b->stale_dropped). */
static void staleness(step_batch *b, long at, int s) {
    b->n_stale = s + 1;
    b->stale = or1_calloc((size_t)b->n_stale, sizeof *b->stale);
    for (size_t i = 0; i < b->n_samples; i++) {
        if (!b->in_loss[i]) continue;
        const or1_completion *c = &b->c[i];
        long oldest = at - b->version[i];
        if (oldest > s) {
            b->in_loss[i] = false, b->loss_tokens -= b->trained[i], b->stale_dropped++;
            continue;
        }
        for (int k = 0; k < c->n; k++) {
            long lag = oldest - (k >= b->switch_at[i]);
            if ((!c->mask || c->mask[k]) && lag >= 0) b->stale[lag]++;
        }
    }
}

/* Keeps the completions this trainer rank owns, as the synchronous loop owns them: each round
 * of `prompts` groups spread over the trainer ranks by train_batch_assign_ranks. */
static void own_share(const trainer *t, step_batch *b, size_t prompts) {
    int *owner = or1_malloc((prompts ? prompts : 1) * sizeof *owner);
    for (size_t g0 = 0; g0 < b->n_groups; g0 += prompts) {
        size_t n = b->n_groups - g0 < prompts ? b->n_groups - g0 : prompts;
        train_batch_assign_ranks(t->data, b->row + g0, n, t->d->size, owner);
        for (size_t g = 0; g < n; g++)
            for (int j = 0; j < b->M && owner[g] != t->d->rank; j++) {
                size_t i = (g0 + g) * (size_t)b->M + (size_t)j;
                or1_completions_free(&b->c[i], 1);
                memset(&b->c[i], 0, sizeof b->c[i]);
                b->owned[i] = false;
            }
    }
    free(owner);
}

/* See internal.h. */
int train_async_next_batch(trainer *t, step_batch *b) {
    async_state *a = &t->async;
    long j = t->step + 1;
    double t0 = or1_now();
    while (a->received < j)
        if (receive_batch(t)) return -1;
    if (a->n_pending == 0 || a->pending_first != j) return or1_fail("train.async: no batch for step %ld (internal error)", j);
    char where[64];
    snprintf(where, sizeof where, "the batch of step %ld", j);
    async_batch ab;
    size_t si = (size_t)or1_train_stage_of(t->cfg, t->step, NULL);
    int rc = train_wire_unpack_batch(a->pending[0], a->pending_len[0], where, t->data, t->cfg->stages[si].context_length,
                               b, &ab);
    free(a->pending[0]);
    memmove(a->pending, a->pending + 1, --a->n_pending * sizeof *a->pending);
    memmove(a->pending_len, a->pending_len + 1, a->n_pending * sizeof *a->pending_len);
    a->pending_first++;
    if (rc) return -1;
    free(ab.data_state);
    b->t_wait = or1_now() - t0;
    b->rollout_wait = ab.rollout_wait, b->rollout_seconds = ab.rollout_seconds, b->rollout_tokens = ab.rollout_tokens;
    staleness(b, t->step, t->cfg->train.max_staleness);
    own_share(t, b, (size_t)t->cfg->stages[si].prompts);
    return 0;
}

/* See internal.h: after update v, its weights go from the first trainer rank to every rollout
 * rank when one will ask for v; two buffers alternate, each reused once its sends are done. */
int train_async_send_weights(trainer *t) {
    async_state *a = &t->async;
    if (t->step > newest_needed(t)) return 0;
    if (train_update_params_to_host(t)) return -1;
    if (t->d->rank != 0) return 0;
    int R = a->world.size - a->n_train, slot = (int)(t->step % 2);
    for (int r = 0; a->sends[slot] && r < R; r++) or1_dist_send_wait(a->sends[slot][r]);
    size_t bytes = t->m.n_floats * sizeof(float);
    if (!a->send_buf[slot]) a->send_buf[slot] = or1_malloc(bytes);
    if (!a->sends[slot]) a->sends[slot] = or1_calloc((size_t)R, sizeof *a->sends[slot]);
    memcpy(a->send_buf[slot], t->m.params, bytes);
    for (int r = 0; r < R; r++) a->sends[slot][r] = or1_dist_isend(&a->world, a->n_train + r, TAG_WEIGHTS, a->send_buf[slot], bytes);
    return 0;
}

/* See internal.h: the batches of steps k+1..k+s (k the step just completed), within the run. */
int train_async_before_checkpoint(trainer *t) {
    long total = or1_train_total_steps(t->cfg), upto = t->step + t->cfg->train.max_staleness;
    if (upto > total) upto = total;
    while (t->async.received < upto)
        if (receive_batch(t)) return -1;
    return 0;
}

/* See internal.h: the mark, the count, then each batch's length and bytes. */
int train_async_save_pending(const trainer *t, const char *dir) {
    const async_state *a = &t->async;
    if (!a->on) return 0;
    size_t total = sizeof PENDING_MAGIC + 8;
    for (size_t i = 0; i < a->n_pending; i++) total += 8 + a->pending_len[i];
    char *buf = or1_malloc(total), *p = buf;
    uint64_t n = a->n_pending;
    memcpy(p, PENDING_MAGIC, sizeof PENDING_MAGIC), p += sizeof PENDING_MAGIC;
    memcpy(p, &n, 8), p += 8;
    for (size_t i = 0; i < a->n_pending; i++) {
        uint64_t len = a->pending_len[i];
        memcpy(p, &len, 8), p += 8;
        memcpy(p, a->pending[i], a->pending_len[i]), p += a->pending_len[i];
    }
    char *path = or1_path_join(dir, PENDING_FILE);
    int rc = or1_write_file_atomic(path, buf, total);
    free(path);
    free(buf);
    return rc;
}

/* See internal.h: a checkpoint without the file (a synchronous run's) has none pending. */
int train_async_load_pending(trainer *t, const char *dir) {
    char *path = or1_path_join(dir, PENDING_FILE), *buf = NULL;
    size_t len = 0;
    int rc = 0;
    if (!or1_is_file(path) || or1_read_file(path, (size_t)1 << 40, &buf, &len)) {
        rc = or1_is_file(path) ? -1 : 0;
        free(path);
        return rc;
    }
    uint64_t n = 0;
    size_t at = sizeof PENDING_MAGIC + 8;
    if (len < at || memcmp(buf, PENDING_MAGIC, sizeof PENDING_MAGIC) != 0)
        rc = or1_fail("%s: not a file of pending batches (no OR1PEND1 mark)", path);
    else
        memcpy(&n, buf + sizeof PENDING_MAGIC, 8);
    for (uint64_t i = 0; rc == 0 && i < n; i++) {
        uint64_t m = 0;
        if (len - at < 8 || (memcpy(&m, buf + at, 8), m > len - at - 8)) {
            rc = or1_fail("%s: byte %zu: batch %llu of %llu runs past the end of the file", path, at,
                          (unsigned long long)i + 1, (unsigned long long)n);
            break;
        }
        char *one = or1_malloc(m ? m : 1), where[96];
        memcpy(one, buf + at + 8, m);
        snprintf(where, sizeof where, "%.40s, batch %llu at byte %zu", path, (unsigned long long)i + 1, at);
        at += 8 + m;
        rc = add_pending(t, one, m, where);
    }
    if (rc == 0 && at != len) rc = or1_fail("%s: %zu bytes follow the last batch", path, len - at);
    free(buf);
    free(path);
    return rc;
}

/* See internal.h. */
void train_async_close(trainer *t) {
    async_state *a = &t->async;
    int R = a->world.size - a->n_train;
    for (int s = 0; s < 2; s++) {
        for (int r = 0; a->sends[s] && r < R; r++) or1_dist_send_wait(a->sends[s][r]);
        free(a->sends[s]);
        free(a->send_buf[s]);
    }
    for (size_t i = 0; i < a->n_pending; i++) free(a->pending[i]);
    free(a->pending);
    free(a->pending_len);
    free(a->data_state);
    memset(a, 0, sizeof *a);
}
