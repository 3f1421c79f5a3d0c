/* The rollout engine, written once over a model on any backend: prompt prefill once per
 * request, batched decode over slots, continuous refill of finished slots, per-sample
 * counter-based sampling. The backend holds the KV pool and the hidden states; the host
 * keeps only the schedule, token ids and log-probs. */
#include "or1/core.h"
#include "or1/rollout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A prompt's shared KV (pool rows row0 .. row0+pcap) and the hidden state that gives its
 * first token (row `index` of the engine's hidden buffer). */
typedef struct {
    int req, refs, row0;
} prefix;

/* One decoding sequence; its own tokens' keys and values are pool rows row0 .. row0+ncap. */
typedef struct {
    int req, sample, prefix, n_gen, row0; /* req < 0: free */
    or1_completion *out;
} slot;

/* Everything the engine allocates once, sized from the config and the requests. */
typedef struct {
    or1_dmodel *dm;
    const or1_backend_ops *op;
    const or1_model_config *c;
    const or1_request *reqs;
    int n_reqs, n_slots, n_prefix, pcap, ncap;
    prefix *pre;
    slot *slots;
    /* backend memory: hidden states (prefixes, then decode rows) and the rows sampled */
    float *hid, *x;
    int32_t *idx_dev;
    /* host: the decode step's rows, the gather indices, sampling settings and draws */
    int32_t *tokens, *pos, *kv_rows, *seg, *row_slot, *idx, *next;
    float *logp;
    or1_sample_row *rows;
} engine;

/* Floats of KV for n tokens of every layer. */
static size_t kv_floats(const or1_model_config *c, size_t n) {
    return (size_t)c->layers * 2 * n * c->kv_heads * c->head_dim;
}

/* Formats a byte count with a unit that keeps three significant figures visible. */
static const char *human_bytes(double b, char *buf, size_t cap) {
    const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (b >= 1024 && u < 4) b /= 1024, u++;
    snprintf(buf, cap, "%.3g %s", b, units[u]);
    return buf;
}

/* Picks the slot count that fits the KV budget; fails if not even one sequence fits. */
static int plan_slots(engine *e, const or1_engine_cfg *cfg, long total) {
    double budget = (cfg->kv_cache_gb > 0 ? cfg->kv_cache_gb : 8.0) * 1073741824.0;
    int s = cfg->max_slots > 0 ? cfg->max_slots : 64;
    if (s > total) s = (int)total;
    for (; s >= 1; s--) {
        double bytes = 4.0 * ((double)(s + 1) * kv_floats(e->c, (size_t)e->pcap) +
                              (double)s * kv_floats(e->c, (size_t)e->ncap));
        if (bytes <= budget) break;
    }
    if (s < 1) {
        char need[32], have[32];
        double bytes = 4.0 * (2.0 * kv_floats(e->c, (size_t)e->pcap) + kv_floats(e->c, (size_t)e->ncap));
        return or1_fail("generate: a %d-token prompt with %d new tokens needs %s of KV cache, over the %s budget",
                        e->pcap, e->ncap, human_bytes(bytes, need, sizeof need), human_bytes(budget, have, sizeof have));
    }
    e->n_slots = s;
    e->n_prefix = s + 1; /* live prompts: those of active slots plus the one being admitted */
    return 0;
}

/* The sampling settings of a request as the backend sees them (stream and counter unset). */
static or1_sample_row sample_row(const or1_sampling *s) {
    return (or1_sample_row){s->temperature, s->top_p, s->top_k, s->seed, 0, 0};
}

/* Checks every request (and that the backend can sample it); finds the longest prompt and
 * generation. */
static int check_requests(engine *e) {
    const or1_model_config *c = e->c;
    for (int i = 0; i < e->n_reqs; i++) {
        const or1_request *r = &e->reqs[i];
        if (r->n_prompt < 1) return or1_fail("generate: request %d has an empty prompt", i);
        if (r->n_samples < 1 || r->s.max_new_tokens < 1)
            return or1_fail("generate: request %d needs n >= 1 and max_new_tokens >= 1", i);
        if ((long)r->n_prompt + r->s.max_new_tokens > c->max_pos)
            return or1_fail("generate: request %d: %d prompt + %d new tokens exceed max_position_embeddings %d", i,
                            r->n_prompt, r->s.max_new_tokens, c->max_pos);
        for (int t = 0; t < r->n_prompt; t++)
            if (r->prompt[t] < 0 || r->prompt[t] >= c->vocab)
                return or1_fail("generate: request %d: token id %d outside the vocabulary", i, r->prompt[t]);
        or1_sample_row row = sample_row(&r->s);
        if (e->op->sample_check(or1_dmodel_backend(e->dm), &row))
            return or1_fail_ctx("generate --device %s: request %d", e->op->name, i);
        if (r->n_prompt > e->pcap) e->pcap = r->n_prompt;
        if (r->s.max_new_tokens > e->ncap) e->ncap = r->s.max_new_tokens;
    }
    return 0;
}

/* Sizes the model's KV pool and workspace, and allocates slots and step buffers in one go. */
static int engine_alloc(engine *e) {
    or1_backend *be = or1_dmodel_backend(e->dm);
    size_t S = (size_t)e->n_slots, H = (size_t)e->c->hidden;
    int pool = e->n_prefix * e->pcap + e->n_slots * e->ncap;
    if (or1_dmodel_decode_reserve(e->dm, pool, e->n_slots, e->pcap, e->pcap + e->ncap)) return -1;
    e->pre = or1_calloc((size_t)e->n_prefix, sizeof *e->pre);
    for (int i = 0; i < e->n_prefix; i++) e->pre[i] = (prefix){-1, 0, i * e->pcap};
    e->slots = or1_calloc(S, sizeof *e->slots);
    for (size_t i = 0; i < S; i++)
        e->slots[i] = (slot){.req = -1, .row0 = e->n_prefix * e->pcap + (int)i * e->ncap};
    e->hid = e->op->alloc(be, ((size_t)e->n_prefix + 2 * S) * H * sizeof(float));
    e->idx_dev = e->hid ? e->op->alloc(be, S * sizeof(int32_t)) : NULL;
    if (!e->idx_dev) return or1_fail_ctx("generate: hidden states of %zu slots", S);
    e->x = e->hid + ((size_t)e->n_prefix + S) * H;
    e->tokens = or1_malloc(10 * S * sizeof(int32_t));
    e->pos = e->tokens + S, e->kv_rows = e->pos + S, e->seg = e->kv_rows + S, e->row_slot = e->seg + 4 * S;
    e->idx = e->row_slot + S, e->next = e->idx + S;
    e->logp = or1_malloc(S * sizeof(float));
    e->rows = or1_malloc(S * sizeof *e->rows);
    return 0;
}

/* Frees what engine_alloc made. */
static void engine_free(engine *e) {
    or1_backend *be = or1_dmodel_backend(e->dm);
    e->op->sync(be);
    e->op->release(be, e->hid);
    e->op->release(be, e->idx_dev);
    free(e->pre);
    free(e->slots);
    free(e->tokens);
    free(e->logp);
    free(e->rows);
}

/* Prefills request req's prompt alone (so its KV never depends on what else runs) into a
 * free prefix region, unless one holds it already; returns the region, -1 on error. */
static int acquire_prefix(engine *e, int req) {
    for (int i = 0; i < e->n_prefix; i++)
        if (e->pre[i].req == req) return i;
    int k = 0;
    while (e->pre[k].req >= 0) k++;
    const or1_request *r = &e->reqs[req];
    or1_seq seq = {r->prompt, r->n_prompt, r->n_prompt};
    or1_batch b;
    or1_batch_pack(&b, &seq, 1);
    int rc = or1_dmodel_prefill(e->dm, &b, e->pre[k].row0, e->hid + (size_t)k * e->c->hidden);
    or1_batch_free(&b);
    if (rc) return -1;
    e->pre[k].req = req;
    e->pre[k].refs = r->n_samples;
    return k;
}

/* Runs every active slot with at least one generated token through the model (its newest
 * token's key and value go to its own rows); their hidden states land after the prefixes'. */
static int decode_step(engine *e) {
    int R = 0;
    for (int i = 0; i < e->n_slots; i++) {
        slot *s = &e->slots[i];
        if (s->req < 0 || s->n_gen == 0) continue;
        int n_prompt = e->reqs[s->req].n_prompt;
        e->row_slot[R] = i;
        e->tokens[R] = s->out->ids[s->n_gen - 1];
        e->pos[R] = n_prompt + s->n_gen - 1;
        e->kv_rows[R] = s->row0 + s->n_gen - 1;
        int32_t *g = e->seg + 4 * R;
        g[0] = e->pre[s->prefix].row0, g[1] = n_prompt, g[2] = s->row0, g[3] = s->n_gen;
        R++;
    }
    if (R == 0) return 0;
    return or1_dmodel_decode(e->dm, R, e->tokens, e->pos, e->kv_rows, e->seg,
                             e->hid + (size_t)e->n_prefix * e->c->hidden);
}

/* A model EOS id or one of the request's stop ids. */
bool or1_is_stop(const or1_model_config *c, const or1_sampling *s, int32_t tok) {
    for (int i = 0; i < c->n_eos; i++)
        if (c->eos[i] == tok) return true;
    for (int i = 0; i < s->n_stop; i++)
        if (s->stop_ids[i] == tok) return true;
    return false;
}

/* Samples the next token of every active slot, each from its own counters: a slot's hidden
 * state is its decode row, or its prompt's when it has generated nothing yet. */
static int sample_all(engine *e) {
    int A = 0, R = 0;
    for (int i = 0; i < e->n_slots; i++) {
        slot *s = &e->slots[i];
        if (s->req < 0) continue;
        bool decoded = s->n_gen > 0;
        e->idx[A] = decoded ? e->n_prefix + R++ : s->prefix;
        e->rows[A] = sample_row(&e->reqs[s->req].s);
        e->rows[A].stream = s->sample, e->rows[A].counter = s->n_gen;
        e->row_slot[A++] = i;
    }
    if (A == 0) return 0;
    or1_backend *be = or1_dmodel_backend(e->dm);
    if (e->op->upload(be, e->idx_dev, e->idx, (size_t)A * sizeof(int32_t))) return -1;
    e->op->gather(be, e->x, e->hid, e->idx_dev, A, e->c->hidden);
    if (or1_dmodel_sample(e->dm, A, e->x, e->rows, e->next, e->logp)) return -1;
    for (int a = 0; a < A; a++) {
        slot *s = &e->slots[e->row_slot[a]];
        s->out->ids[s->n_gen] = e->next[a];
        s->out->logprobs[s->n_gen] = e->logp[a];
        s->n_gen++;
    }
    return 0;
}

/* Prints a one-line progress bar on stderr. */
static void progress(long done, long total, long tokens, double t0) {
    int width = 30, fill = total ? (int)(width * done / total) : width;
    fprintf(stderr, "\rgenerate [%.*s%*s] %ld/%ld samples, %.0f tok/s", fill, "##############################",
            width - fill, "", done, total, tokens / (or1_now() - t0 + 1e-9));
}

/* Retires finished slots (stop token or length), reporting each completion. */
static long retire(engine *e, const or1_engine_cfg *cfg, long *tokens) {
    long done = 0;
    for (int i = 0; i < e->n_slots; i++) {
        slot *s = &e->slots[i];
        if (s->req < 0 || s->n_gen == 0) continue;
        const or1_request *r = &e->reqs[s->req];
        bool stop = or1_is_stop(e->c, &r->s, s->out->ids[s->n_gen - 1]);
        if (!stop && s->n_gen < r->s.max_new_tokens) continue;
        s->out->n = s->n_gen;
        s->out->stopped = stop;
        *tokens += s->n_gen;
        if (cfg->on_done) cfg->on_done(cfg->ctx, s->req, s->sample, s->out);
        if (--e->pre[s->prefix].refs == 0) e->pre[s->prefix].req = -1;
        s->req = -1;
        done++;
    }
    return done;
}

/* Puts waiting samples into free slots (prefilling their prompts as needed). */
static int admit(engine *e, or1_completion *out, int *next_req, int *next_sample, long *offset) {
    for (int i = 0; i < e->n_slots && *next_req < e->n_reqs; i++) {
        slot *s = &e->slots[i];
        if (s->req >= 0) continue;
        int k = acquire_prefix(e, *next_req);
        if (k < 0) return -1;
        *s = (slot){*next_req, *next_sample, k, 0, s->row0, &out[*offset + *next_sample]};
        if (++*next_sample == e->reqs[*next_req].n_samples) *offset += *next_sample, *next_sample = 0, ++*next_req;
    }
    return 0;
}

/* The continuous-batching loop: admit waiting samples into free slots, decode, sample, retire. */
static int run(engine *e, const or1_engine_cfg *cfg, or1_completion *out, long total) {
    int next_req = 0, next_sample = 0;
    long done = 0, tokens = 0, offset = 0;
    double t0 = or1_now();
    bool bar = cfg->progress && isatty(2);
    int rc = 0;
    while (rc == 0 && done < total) {
        rc = admit(e, out, &next_req, &next_sample, &offset);
        if (rc == 0) rc = decode_step(e);
        if (rc == 0) rc = sample_all(e);
        if (rc == 0) done += retire(e, cfg, &tokens);
        if (bar) progress(done, total, tokens, t0);
    }
    if (bar) fputc('\n', stderr);
    return rc;
}

/* Validates, sizes the cache, allocates outputs and runs the engine. */
int or1_generate(or1_dmodel *dm, const or1_request *reqs, int n, const or1_engine_cfg *cfg, or1_completion *out) {
    engine e = {.dm = dm, .op = or1_dmodel_backend(dm)->ops, .c = or1_dmodel_config(dm), .reqs = reqs, .n_reqs = n};
    long total = 0;
    if (check_requests(&e)) return -1;
    for (int i = 0; i < n; i++) total += reqs[i].n_samples;
    if (total == 0) return 0;
    if (plan_slots(&e, cfg, total)) return -1;
    for (int i = 0, k = 0; i < n; i++)
        for (int j = 0; j < reqs[i].n_samples; j++, k++) {
            out[k].ids = or1_malloc((size_t)reqs[i].s.max_new_tokens * sizeof(int32_t));
            out[k].logprobs = or1_malloc((size_t)reqs[i].s.max_new_tokens * sizeof(float));
            out[k].n = 0;
            out[k].stopped = false;
        }
    int rc = engine_alloc(&e);
    if (rc == 0) rc = run(&e, cfg, out, total);
    engine_free(&e);
    return rc;
}

/* Frees the arrays of n completions. */
void or1_completions_free(or1_completion *c, int n) {
    for (int i = 0; i < n; i++) {
        free(c[i].ids);
        free(c[i].logprobs);
    }
}
