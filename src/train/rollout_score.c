/* The rollout-and-score stage of a step (and of evaluation): M samples per dataset row through
 * the rollout engine, with tool calls or a weight switch when asked, each scored by its row's
 * verifier on a thread of its own as soon as the engine ends it. */
#include "or1/core.h"
#include "or1/reward.h"
#include "or1/train.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Scores samples as the engine finishes them, on a thread of its own, so verification
 * (code runs above all) overlaps the rest of the decoding. */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t *queue, head, tail;
    bool closed;
    const or1_tokenizer *tok;
    const or1_data_row *const *rows;
    int M;
    or1_scored *out;
    or1_sandbox_pool *pool;
    or1_reward_cache *cache; /* each row's code tests, parsed once */
    const or1_reward_opts *reward;
} reward_stream;

/* Queues sample k of out for scoring. */
static void stream_queue(reward_stream *r, size_t k) {
    pthread_mutex_lock(&r->mu);
    r->queue[r->tail++] = k;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

/* Engine callback: queue the finished sample for scoring. */
static void stream_push(void *ctx, int req, int sample, const or1_completion *c) {
    (void)c;
    reward_stream *r = ctx;
    stream_queue(r, (size_t)req * (size_t)r->M + (size_t)sample);
}

/* The text a sample's reward reads: its sampled tokens alone, decoded with special tokens
 * skipped as the recipe scores (a tool's reply is left out: a program printing a boxed answer
 * must not answer for the model). "" where the tokens do not decode. */
static char *sampled_text(const or1_tokenizer *tok, const or1_completion *c) {
    int32_t *ids = c->ids;
    size_t n = (size_t)c->n, len;
    if (c->mask) {
        ids = or1_malloc(((size_t)c->n + 1) * sizeof *ids), n = 0;
        for (int j = 0; j < c->n; j++)
            if (c->mask[j]) ids[n++] = c->ids[j];
    }
    char *text = NULL;
    if (or1_tokenizer_decode(tok, ids, n, true, &text, &len) != 0) text = or1_strdup("");
    if (ids != c->ids) free(ids);
    return text;
}

/* Scores queue[a..b) on their sampled text. */
static void score_range(reward_stream *r, size_t a, size_t b) {
    size_t n = b - a;
    or1_reward_job *jobs = or1_calloc(n, sizeof *jobs);
    char **texts = or1_calloc(n, sizeof *texts);
    or1_reward *res = or1_calloc(n, sizeof *res);
    for (size_t i = 0; i < n; i++) {
        size_t k = r->queue[a + i];
        const or1_data_row *row = r->rows[k / (size_t)r->M];
        texts[i] = sampled_text(r->tok, &r->out->c[k]);
        jobs[i] = (or1_reward_job){.ability = row->code ? OR1_ABILITY_CODE : OR1_ABILITY_MATH,
                                   .response = texts[i], .ground_truth = row->ground_truth};
    }
    or1_reward_batch(jobs, n, r->pool, r->reward, r->cache, res);
    for (size_t i = 0; i < n; i++) {
        r->out->scores[r->queue[a + i]] = res[i].score;
        r->out->status[r->queue[a + i]] = res[i].status;
        r->out->seconds[r->queue[a + i]] = res[i].seconds;
        free(texts[i]);
    }
    free(res);
    free(texts);
    free(jobs);
}

/* The scoring thread: takes whatever has been queued, scores it, until closed and empty. */
static void *stream_worker(void *arg) {
    reward_stream *r = arg;
    pthread_mutex_lock(&r->mu);
    for (;;) {
        while (r->head == r->tail && !r->closed) pthread_cond_wait(&r->cv, &r->mu);
        if (r->head == r->tail) break;
        size_t a = r->head, b = r->tail;
        r->head = b;
        pthread_mutex_unlock(&r->mu);
        score_range(r, a, b);
        pthread_mutex_lock(&r->mu);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

/* Allocates out's arrays for n samples (one element at least, so that none is NULL); every
 * switch_at is -1 (not cut) until switch_at_fill. */
static void scored_alloc(or1_scored *out, size_t n) {
    memset(out, 0, sizeof *out);
    out->n = n;
    out->c = or1_calloc(n ? n : 1, sizeof *out->c);
    out->scores = or1_calloc(n ? n : 1, sizeof *out->scores);
    out->status = or1_calloc(n ? n : 1, sizeof *out->status);
    out->seconds = or1_calloc(n ? n : 1, sizeof *out->seconds);
    out->switch_at = or1_malloc((n ? n : 1) * sizeof *out->switch_at);
    for (size_t k = 0; k < n; k++) out->switch_at[k] = -1;
}

/* Fills switch_at (or1_scored) where the two-part path's continuations did not: the engine's
 * (a keep_kv switch, or none: the length), the length where that is unset (the two-part path's
 * uncut samples, or a run that failed); each completion's switch_at is then the same. */
static void switch_at_fill(or1_scored *out) {
    for (size_t k = 0; k < out->n; k++) {
        or1_completion *c = &out->c[k];
        if (out->switch_at[k] < 0) out->switch_at[k] = c->switch_at >= 0 && c->switch_at <= c->n ? c->switch_at : c->n;
        c->switch_at = out->switch_at[k];
    }
}

/* Starts the reward thread on out's samples. */
static int stream_start(reward_stream *rs, pthread_t *worker, const or1_rollout_job *job, or1_scored *out) {
    *rs = (reward_stream){.tok = job->tok, .rows = job->rows, .M = job->M, .out = out, .pool = job->pool,
                          .reward = job->reward};
    rs->cache = or1_reward_cache_new();
    rs->queue = or1_malloc((out->n ? out->n : 1) * sizeof *rs->queue);
    pthread_mutex_init(&rs->mu, NULL);
    pthread_cond_init(&rs->cv, NULL);
    if (pthread_create(worker, NULL, stream_worker, rs) == 0) return 0;
    pthread_cond_destroy(&rs->cv);
    pthread_mutex_destroy(&rs->mu);
    free(rs->queue);
    or1_reward_cache_free(rs->cache);
    return or1_fail("rollout: cannot start the reward thread");
}

/* Closes the queue, waits for the reward thread to score what is left and frees the stream. */
static void stream_stop(reward_stream *rs, pthread_t worker) {
    pthread_mutex_lock(&rs->mu);
    rs->closed = true;
    pthread_cond_signal(&rs->cv);
    pthread_mutex_unlock(&rs->mu);
    pthread_join(worker, NULL);
    pthread_cond_destroy(&rs->cv);
    pthread_mutex_destroy(&rs->mu);
    free(rs->queue);
    or1_reward_cache_free(rs->cache);
}

/* Generates every request straight into out (each sample scored as the engine ends it), with
 * the tool hooks of tt when given, and the job's switch when it keeps KV (the engine makes it). */
static int generate_whole(const or1_rollout_job *job, const or1_request *req, or1_tools *tt, reward_stream *rs,
                          or1_scored *out) {
    or1_engine_cfg cfg = *job->engine;
    cfg.on_done = stream_push, cfg.ctx = rs, cfg.sw = job->sw;
    if (tt) cfg.tools = or1_tools_hooks(tt);
    return or1_generate(job->dm, req, (int)job->n_rows, &cfg, out->c);
}

/* One part of a switched rollout: out's index of each part request's first sample, and the
 * response length that ends a sample (max_new_tokens). */
typedef struct {
    reward_stream *rs;
    const size_t *at;
    int full;
} switch_part;

/* Engine callback of a part: appends the part's tokens to the sample's in out and queues it
 * for scoring when it has ended (a stop token, or its whole length), not when the switch cut it. */
static void part_done(void *ctx, int req, int sample, const or1_completion *c) {
    switch_part *p = ctx;
    size_t k = p->at[req] + (size_t)sample;
    or1_completion *d = &p->rs->out->c[k];
    memcpy(d->ids + d->n, c->ids, (size_t)c->n * sizeof *d->ids);
    memcpy(d->logprobs + d->n, c->logprobs, (size_t)c->n * sizeof *d->logprobs);
    d->n += c->n;
    d->stopped = c->stopped;
    if (d->stopped || d->n >= p->full) stream_queue(p->rs, k);
}

/* Runs n part requests through the engine, each ending sample appended to out (part_done). */
static int generate_part(const or1_rollout_job *job, const or1_request *req, const size_t *at, int n,
                         reward_stream *rs) {
    if (n == 0) return 0;
    switch_part p = {rs, at, job->sampling->max_new_tokens};
    or1_engine_cfg cfg = *job->engine;
    cfg.on_done = part_done, cfg.ctx = &p, cfg.sw = NULL;
    long total = 0;
    for (int i = 0; i < n; i++) total += req[i].n_samples;
    or1_completion *parts = or1_calloc((size_t)total, sizeof *parts);
    int rc = or1_generate(job->dm, req, n, &cfg, parts);
    or1_completions_free(parts, (int)total);
    free(parts);
    return rc;
}

/* The continuations of the samples the switch cut (not stopped, shorter than max_new_tokens):
 * for each, one request whose prompt is its row's prompt and its tokens so far, drawing on
 * from its own stream and counter; at[q] is its index in out, its switch_at its length now.
 * The prompts are one allocation, *ids. Returns the count. */
static int continuations(const or1_rollout_job *job, or1_scored *out, or1_request *req, size_t *at, int32_t **ids) {
    int full = job->sampling->max_new_tokens, n = 0;
    size_t len = 0;
    for (size_t k = 0; k < out->n; k++)
        if (!out->c[k].stopped && out->c[k].n < full)
            len += (size_t)job->rows[k / (size_t)job->M]->n_ids + (size_t)out->c[k].n;
    int32_t *buf = *ids = or1_malloc((len ? len : 1) * sizeof *buf);
    for (size_t k = 0; k < out->n; k++) {
        const or1_completion *c = &out->c[k];
        if (c->stopped || c->n >= full) continue;
        const or1_data_row *row = job->rows[k / (size_t)job->M];
        memcpy(buf, row->ids, (size_t)row->n_ids * sizeof *buf);
        memcpy(buf + row->n_ids, c->ids, (size_t)c->n * sizeof *buf);
        req[n] = (or1_request){.prompt = buf, .n_prompt = row->n_ids + c->n, .n_samples = 1,
                               .s = *job->sampling, .first_stream = (int)(k % (size_t)job->M),
                               .first_counter = c->n};
        req[n].s.seed = job->seeds[k / (size_t)job->M], req[n].s.max_new_tokens = full - c->n;
        out->switch_at[k] = c->n;
        at[n++] = k;
        buf += row->n_ids + c->n;
    }
    return n;
}

/* Generates across a weight switch: every sample's first `after` tokens under the weights dm
 * holds, apply, then each cut sample's continuation under the new ones (or1_weight_switch). */
static int generate_switched(const or1_rollout_job *job, const or1_request *req, reward_stream *rs,
                             or1_scored *out) {
    const or1_weight_switch *sw = job->sw;
    int full = job->sampling->max_new_tokens;
    for (size_t k = 0; k < out->n; k++)
        out->c[k] = (or1_completion){.ids = or1_malloc((size_t)full * sizeof(int32_t)),
                                     .logprobs = or1_malloc((size_t)full * sizeof(float)), .mask = NULL,
                                     .n = 0, .tool_calls = 0, .stopped = false, .switch_at = -1};
    size_t *at = or1_malloc((out->n ? out->n : 1) * sizeof *at);
    or1_request *first = or1_malloc(job->n_rows * sizeof *first), *next = or1_malloc(out->n * sizeof *next);
    for (size_t i = 0; i < job->n_rows; i++) {
        first[i] = req[i];
        first[i].s.max_new_tokens = sw->after < full ? sw->after : full;
        at[i] = i * (size_t)job->M;
    }
    int32_t *ids = NULL;
    int rc = sw->after > 0 ? generate_part(job, first, at, (int)job->n_rows, rs) : 0;
    if (rc == 0 && sw->apply(sw->ctx)) rc = or1_fail_ctx("rollout: the weight switch after %d tokens", sw->after);
    if (rc == 0) rc = generate_part(job, next, at, continuations(job, out, next, at, &ids), rs);
    free(ids);
    free(next);
    free(first);
    free(at);
    return rc;
}

/* Refuses a weight switch the rollout cannot do: with tool calls, or without apply. */
static int check_switch(const or1_rollout_job *job) {
    if (!job->sw) return 0;
    if (job->tools && job->tools->max_turns > 0)
        return or1_fail("rollout: a weight switch inside a rollout is not supported with tool calls "
                        "(rollout.tools.max_turns %d)", job->tools->max_turns);
    if (job->sw->after < 0 || !job->sw->apply) return or1_fail("rollout: a weight switch needs after >= 0 and apply");
    return 0;
}

/* One request per row, M samples each, with tools or a weight switch when asked; rewards
 * overlap decoding. */
int or1_rollout_score(const or1_rollout_job *job, or1_scored *out, double *t_rollout, double *t_reward) {
    scored_alloc(out, job->n_rows * (size_t)job->M);
    if (job->n_rows == 0) return 0;
    if (check_switch(job)) return -1;
    or1_request *req = or1_calloc(job->n_rows, sizeof *req);
    for (size_t i = 0; i < job->n_rows; i++) {
        req[i] = (or1_request){.prompt = job->rows[i]->ids, .n_prompt = job->rows[i]->n_ids,
                               .n_samples = job->M, .s = *job->sampling, .first_stream = 0,
                               .first_counter = 0};
        req[i].s.seed = job->seeds[i];
    }
    reward_stream rs;
    pthread_t worker;
    if (stream_start(&rs, &worker, job, out)) {
        free(req);
        return -1;
    }
    bool want_tools = job->tools && job->tools->max_turns > 0;
    or1_tools *tt = want_tools ? or1_tools_new(job->tools, job->tok, req, (int)job->n_rows) : NULL;
    double t0 = or1_now();
    bool recompute = job->sw && !job->sw->keep_kv; /* a keep_kv switch is the engine's */
    int rc = want_tools && !tt ? -1
             : recompute       ? generate_switched(job, req, &rs, out)
                               : generate_whole(job, req, tt, &rs, out);
    double t1 = or1_now();
    if (tt) out->tools = or1_tools_stats_of(tt);
    or1_tools_free(tt);
    stream_stop(&rs, worker);
    switch_at_fill(out);
    free(req);
    if (t_rollout) *t_rollout += t1 - t0;
    if (t_reward) *t_reward += or1_now() - t1; /* scoring left after the last sample */
    return rc;
}

/* Frees completions and scores. */
void or1_scored_free(or1_scored *s) {
    or1_completions_free(s->c, (int)s->n);
    free(s->c);
    free(s->scores);
    free(s->status);
    free(s->seconds);
    free(s->switch_at);
    memset(s, 0, sizeof *s);
}

