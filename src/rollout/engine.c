/* The rollout engine, written once over a model on any backend: prompt prefill once per
 * request, batched decode over slots, continuous refill of finished slots, per-sample
 * counter-based sampling, and a paged KV cache. The backend holds the KV pool and the hidden
 * states; the host keeps the schedule, the block tables, token ids and log-probs.
 *
 * Paging: the pool is cut into blocks of KV_BLOCK rows. A prompt's keys and values take the
 * blocks its length needs, shared by its samples; a sample takes a block each time its own
 * tokens fill the last one, and gives them all back when it ends. So the number of live
 * sequences follows their actual lengths, not the longest possible. The pool always keeps
 * room for every live prompt plus one sequence at full length; when a growing sequence finds
 * the pool empty, the most recently admitted other sequence is preempted: its blocks return
 * to the pool and it starts again later from its first token. Its draws are counter-based
 * and every decode kernel computes each row on its own, so it regenerates the same tokens. */
#include "or1/core.h"
#include "or1/rollout.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { KV_BLOCK = 16 };

/* A prompt's blocks and the hidden state that gives its first token (row `index` of the
 * engine's hidden buffer); refs counts its samples not yet finished. */
typedef struct {
    int req, refs; /* req < 0: free */
    int32_t *blocks;
    int n_blocks;
} prefix;

/* One decoding sequence and its own blocks. */
typedef struct {
    int req, sample, prefix, n_gen; /* req < 0: free */
    or1_completion *out;
    int32_t *blocks;
    int n_blocks;
    long admitted; /* admission order: preemption takes the latest */
} slot;

/* A sample waiting to run: a preempted one, to start again. */
typedef struct {
    int req, sample;
} pending;

/* Everything the engine allocates once, sized from the config and the requests. */
typedef struct {
    or1_dmodel *dm;
    const or1_model_config *c;
    const or1_request *reqs;
    int n_reqs, n_slots, n_prefix, pcap, ncap, pblocks, sblocks;
    prefix *pre;
    slot *slots;
    int32_t *free_blocks; /* a stack of free block ids */
    int n_free, n_blocks;
    pending *retry; /* preempted samples, oldest first */
    int n_retry;
    long admissions, preemptions;
    /* host: the decode step's rows, block table, the model's hidden states to sample (states 0
     * to n_prefix-1 are the prefixes', then one per decode row), sampling settings, draws */
    int32_t *tokens, *pos, *kv_rows, *seg, *row_slot, *idx, *next, *table, *prompt_rows;
    float *logp;
    or1_sample_row *rows;
    bool bar_shown; /* the progress bar is on stderr's current line */
} engine;

/* Floats of KV for n tokens of every layer. */
static size_t kv_floats(const or1_model_config *c, size_t n) {
    return (size_t)c->layers * 2 * n * c->kv_heads * c->head_dim;
}

/* Blocks that hold n tokens. */
static int blocks_for(int n) { return (n + KV_BLOCK - 1) / KV_BLOCK; }

/* Formats a byte count with a unit that keeps three significant figures visible. */
static const char *human_bytes(double b, char *buf, size_t cap) {
    const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (b >= 1024 && u < 4) b /= 1024, u++;
    snprintf(buf, cap, "%.3g %s", b, units[u]);
    return buf;
}

/* Picks the slot count whose live prompts and one full-length sequence fit the KV budget,
 * and the pool: the budget's blocks, no more than every slot at full length could use. */
static int plan_slots(engine *e, const or1_engine_cfg *cfg, long total) {
    double budget = (cfg->kv_cache_gb > 0 ? cfg->kv_cache_gb : 8.0) * 1073741824.0;
    double block_bytes = 4.0 * kv_floats(e->c, KV_BLOCK);
    e->pblocks = blocks_for(e->pcap), e->sblocks = blocks_for(e->ncap);
    int s = cfg->max_slots > 0 ? cfg->max_slots : 64;
    if (s > total) s = (int)total;
    for (; s >= 1; s--)
        if (((double)(s + 1) * e->pblocks + e->sblocks) * block_bytes <= budget) break;
    if (s < 1) {
        char need[32], have[32];
        double bytes = (2.0 * e->pblocks + e->sblocks) * block_bytes;
        return or1_fail("generate: a %d-token prompt with %d new tokens needs %s of KV cache, over the %s budget",
                        e->pcap, e->ncap, human_bytes(bytes, need, sizeof need), human_bytes(budget, have, sizeof have));
    }
    e->n_slots = s;
    e->n_prefix = s + 1; /* live prompts: those of active slots plus the one being admitted */
    double most = (double)e->n_prefix * e->pblocks + (double)s * e->sblocks, fit = budget / block_bytes;
    e->n_blocks = (int)(fit < most ? fit : most);
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
        if (or1_dmodel_sample_check(e->dm, &row))
            return or1_fail_ctx("generate --device %s: request %d", or1_backend_name(or1_dmodel_backend(e->dm)), i);
        if (r->n_prompt > e->pcap) e->pcap = r->n_prompt;
        if (r->s.max_new_tokens > e->ncap) e->ncap = r->s.max_new_tokens;
    }
    return 0;
}

/* Sizes the model's paged pool and workspace, and allocates slots, block lists and step
 * buffers in one go. */
static int engine_alloc(engine *e) {
    size_t S = (size_t)e->n_slots, P = (size_t)e->n_prefix;
    int table_cap = e->n_slots * (e->pblocks + e->sblocks);
    if (or1_dmodel_decode_reserve(e->dm, e->n_blocks, KV_BLOCK, e->n_slots, e->pcap, e->pcap + e->ncap, table_cap,
                                  e->n_prefix + e->n_slots))
        return -1;
    int32_t *lists = or1_malloc((P * (size_t)e->pblocks + S * (size_t)e->sblocks + (size_t)e->n_blocks + 1) *
                                sizeof *lists);
    e->pre = or1_calloc(P, sizeof *e->pre);
    for (size_t i = 0; i < P; i++) e->pre[i] = (prefix){-1, 0, lists + i * (size_t)e->pblocks, 0};
    e->slots = or1_calloc(S, sizeof *e->slots);
    for (size_t i = 0; i < S; i++)
        e->slots[i] = (slot){.req = -1, .blocks = lists + P * (size_t)e->pblocks + i * (size_t)e->sblocks};
    e->free_blocks = lists + P * (size_t)e->pblocks + S * (size_t)e->sblocks;
    for (int b = 0; b < e->n_blocks; b++) e->free_blocks[b] = e->n_blocks - 1 - b; /* block 0 on top */
    e->n_free = e->n_blocks;
    e->tokens = or1_malloc((10 * S + (size_t)table_cap + (size_t)e->pcap) * sizeof(int32_t));
    e->pos = e->tokens + S, e->kv_rows = e->pos + S, e->seg = e->kv_rows + S, e->row_slot = e->seg + 4 * S;
    e->idx = e->row_slot + S, e->next = e->idx + S, e->table = e->next + S, e->prompt_rows = e->table + table_cap;
    e->logp = or1_malloc(S * sizeof(float));
    e->rows = or1_malloc(S * sizeof *e->rows);
    e->retry = or1_malloc(S * sizeof *e->retry);
    return 0;
}

/* Frees what engine_alloc made. */
static void engine_free(engine *e) {
    or1_dmodel_decode_release(e->dm);
    if (e->pre) free(e->pre[0].blocks); /* the one allocation behind every block list */
    free(e->pre);
    free(e->slots);
    free(e->tokens);
    free(e->logp);
    free(e->rows);
    free(e->retry);
}

/* A block from the pool, or -1 when it is empty. */
static int32_t take_block(engine *e) { return e->n_free > 0 ? e->free_blocks[--e->n_free] : -1; }

/* Returns n blocks to the pool. */
static void give_blocks(engine *e, const int32_t *blocks, int n) {
    for (int i = 0; i < n; i++) e->free_blocks[e->n_free++] = blocks[i];
}

/* The pool row of position t of a sequence whose blocks are `blocks`. */
static int32_t block_row(const int32_t *blocks, int t) { return blocks[t / KV_BLOCK] * KV_BLOCK + t % KV_BLOCK; }

/* The prefix region holding request req, if any. */
static int resident_prefix(const engine *e, int req) {
    for (int i = 0; i < e->n_prefix; i++)
        if (e->pre[i].req == req) return i;
    return -1;
}

/* Prefills request req's prompt alone (so its KV never depends on what else runs) into
 * blocks of a free prefix region; returns the region, -2 when the pool or the regions are
 * full, -1 on error. */
static int acquire_prefix(engine *e, int req) {
    int k = resident_prefix(e, req);
    if (k >= 0) return k;
    const or1_request *r = &e->reqs[req];
    int need = blocks_for(r->n_prompt);
    k = 0;
    while (k < e->n_prefix && e->pre[k].req >= 0) k++;
    if (k == e->n_prefix || e->n_free < need + 1) return -2; /* + 1: room for a first own block */
    prefix *p = &e->pre[k];
    for (p->n_blocks = 0; p->n_blocks < need; p->n_blocks++) p->blocks[p->n_blocks] = take_block(e);
    for (int t = 0; t < r->n_prompt; t++) e->prompt_rows[t] = block_row(p->blocks, t);
    or1_seq seq = {r->prompt, r->n_prompt, r->n_prompt};
    or1_batch b;
    or1_batch_pack(&b, &seq, 1);
    int rc = or1_dmodel_prefill(e->dm, &b, e->prompt_rows, k);
    or1_batch_free(&b);
    if (rc) return -1;
    p->req = req;
    p->refs = r->n_samples;
    return k;
}

/* Frees a prefix region once no sample of its request is left. */
static void release_prefix(engine *e, int k) {
    prefix *p = &e->pre[k];
    if (--p->refs > 0) return;
    give_blocks(e, p->blocks, p->n_blocks);
    p->n_blocks = 0;
    p->req = -1;
}

/* Stops slot i and queues its sample to start again (its prompt stays resident). */
static void preempt(engine *e, int i) {
    slot *s = &e->slots[i];
    give_blocks(e, s->blocks, s->n_blocks);
    e->retry[e->n_retry++] = (pending){s->req, s->sample};
    s->out->n = 0;
    s->n_blocks = 0;
    s->req = -1;
    e->preemptions++;
}

/* The most recently admitted active slot other than `keep`, or -1. */
static int latest_other(const engine *e, int keep) {
    int best = -1;
    for (int i = 0; i < e->n_slots; i++)
        if (i != keep && e->slots[i].req >= 0 && (best < 0 || e->slots[i].admitted > e->slots[best].admitted))
            best = i;
    return best;
}

/* Gives every sequence about to write a key and value past its last block a new block,
 * oldest sequences first, preempting the latest admitted ones while the pool is empty. */
static int grow_blocks(engine *e) {
    for (;;) {
        int pick = -1; /* the oldest active slot that needs a block */
        for (int i = 0; i < e->n_slots; i++) {
            slot *s = &e->slots[i];
            if (s->req < 0 || s->n_gen == 0 || (s->n_gen - 1) / KV_BLOCK < s->n_blocks) continue;
            if (pick < 0 || s->admitted < e->slots[pick].admitted) pick = i;
        }
        if (pick < 0) return 0;
        while (e->n_free == 0) {
            int victim = latest_other(e, pick);
            if (victim < 0) return or1_fail("generate: the KV pool cannot hold one sequence (internal error)");
            preempt(e, victim);
        }
        slot *s = &e->slots[pick];
        s->blocks[s->n_blocks++] = take_block(e);
    }
}

/* Runs every active slot with at least one generated token through the model (its newest
 * token's key and value go to its own blocks); their hidden states land after the prefixes'. */
static int decode_step(engine *e) {
    if (grow_blocks(e)) return -1;
    int R = 0, n_table = 0;
    for (int i = 0; i < e->n_slots; i++) {
        slot *s = &e->slots[i];
        if (s->req < 0 || s->n_gen == 0) continue;
        const prefix *p = &e->pre[s->prefix];
        int n_prompt = e->reqs[s->req].n_prompt;
        e->row_slot[R] = i;
        e->tokens[R] = s->out->ids[s->n_gen - 1];
        e->pos[R] = n_prompt + s->n_gen - 1;
        e->kv_rows[R] = block_row(s->blocks, s->n_gen - 1);
        int32_t *g = e->seg + 4 * R;
        g[0] = n_table, g[1] = n_prompt;
        memcpy(e->table + n_table, p->blocks, (size_t)p->n_blocks * sizeof *e->table);
        n_table += p->n_blocks;
        g[2] = n_table, g[3] = s->n_gen;
        memcpy(e->table + n_table, s->blocks, (size_t)s->n_blocks * sizeof *e->table);
        n_table += s->n_blocks;
        R++;
    }
    if (R == 0) return 0;
    return or1_dmodel_decode(e->dm, R, e->tokens, e->pos, e->kv_rows, e->seg, e->table, n_table, e->n_prefix);
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
    if (or1_dmodel_sample(e->dm, A, e->idx, e->rows, e->next, e->logp)) return -1;
    for (int a = 0; a < A; a++) {
        slot *s = &e->slots[e->row_slot[a]];
        if (isnan(e->logp[a]))
            return or1_fail("rollout: request %d, sample %d, token %d: the logits are not finite (NaN or infinite "
                            "weights or activations); stopping instead of sampling from them",
                            s->req, (int)s->sample, s->n_gen);
        s->out->ids[s->n_gen] = e->next[a];
        s->out->logprobs[s->n_gen] = e->logp[a];
        s->n_gen++;
    }
    return 0;
}

/* Draws the one-line progress bar over itself on stderr (a terminal), leaving the cursor at
 * its end; nothing else may be printed until bar_clear. */
static void progress(engine *e, long done, long total, long tokens, double t0) {
    int width = 30, fill = total ? (int)(width * done / total) : width;
    fprintf(stderr, "\rgenerate [%.*s%*s] %ld/%ld samples, %.0f tok/s", fill, "##############################",
            width - fill, "", done, total, tokens / (or1_now() - t0 + 1e-9));
    e->bar_shown = true;
}

/* Erases the bar before anything else is printed, so that a caller's output (a sample's line
 * on stdout, the same terminal) never lands on the bar's line; the next step redraws it. */
static void bar_clear(engine *e) {
    if (!e->bar_shown) return;
    fputs("\r\033[K", stderr);
    e->bar_shown = false;
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
        if (cfg->on_done) {
            bar_clear(e);
            cfg->on_done(cfg->ctx, s->req, s->sample, s->out);
        }
        give_blocks(e, s->blocks, s->n_blocks);
        s->n_blocks = 0;
        release_prefix(e, s->prefix);
        s->req = -1;
        done++;
    }
    return done;
}

/* Starts sample (req, j) in free slot i, its prompt resident in region k. */
static void start(engine *e, int i, int req, int j, int k, or1_completion *out) {
    slot *s = &e->slots[i];
    *s = (slot){req, j, k, 0, out, s->blocks, 0, e->admissions++};
}

/* Puts waiting samples into free slots: preempted ones first (their prompts are resident),
 * then new ones in order while their prompts fit. */
static int admit(engine *e, or1_completion *out, const long *first, int *next_req, int *next_sample) {
    for (int i = 0; i < e->n_slots; i++) {
        if (e->slots[i].req >= 0) continue;
        if (e->n_retry > 0) {
            pending p = e->retry[0];
            memmove(e->retry, e->retry + 1, (size_t)--e->n_retry * sizeof *e->retry);
            start(e, i, p.req, p.sample, resident_prefix(e, p.req), &out[first[p.req] + p.sample]);
            continue;
        }
        if (*next_req >= e->n_reqs) return 0;
        int k = acquire_prefix(e, *next_req);
        if (k == -2) return 0; /* no room for its prompt yet: wait for sequences to end */
        if (k < 0) return -1;
        start(e, i, *next_req, *next_sample, k, &out[first[*next_req] + *next_sample]);
        if (++*next_sample == e->reqs[*next_req].n_samples) *next_sample = 0, ++*next_req;
    }
    return 0;
}

/* The continuous-batching loop: admit waiting samples into free slots, decode, sample, retire. */
static int run(engine *e, const or1_engine_cfg *cfg, or1_completion *out, long total) {
    int next_req = 0, next_sample = 0;
    long done = 0, tokens = 0, *first = or1_malloc(((size_t)e->n_reqs + 1) * sizeof *first);
    first[0] = 0; /* out index of each request's first sample */
    for (int i = 0; i < e->n_reqs; i++) first[i + 1] = first[i] + e->reqs[i].n_samples;
    double t0 = or1_now();
    bool bar = cfg->progress && isatty(2);
    int rc = 0;
    while (rc == 0 && done < total) {
        rc = admit(e, out, first, &next_req, &next_sample);
        if (rc == 0) rc = decode_step(e);
        if (rc == 0) rc = sample_all(e);
        if (rc == 0) done += retire(e, cfg, &tokens);
        if (bar) progress(e, done, total, tokens, t0);
    }
    if (e->bar_shown) fputc('\n', stderr); /* the bar's last state stays, on a line of its own */
    e->bar_shown = false;
    free(first);
    return rc;
}

/* Validates, sizes the cache, allocates outputs and runs the engine. */
int or1_generate(or1_dmodel *dm, const or1_request *reqs, int n, const or1_engine_cfg *cfg, or1_completion *out) {
    engine e = {.dm = dm, .c = or1_dmodel_config(dm), .reqs = reqs, .n_reqs = n};
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
    if (cfg->stats) *cfg->stats = (or1_engine_stats){e.n_slots, e.n_blocks, KV_BLOCK, e.preemptions};
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
