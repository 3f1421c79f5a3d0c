/* The rollout engine, written once over a model on any backend: prompt prefill once per
 * request, batched decode over slots, continuous refill of finished slots, per-sample
 * counter-based sampling, a paged KV cache, and samples that pause on a tool call. The backend
 * holds the KV pool and the hidden states; the host keeps the schedule, the block tables, token
 * ids and log-probs.
 *
 * A sample's tokens are fed (their keys and values written to the pool) by decode steps: a
 * decoding sample feeds its newest token, one row; a sample with more tokens than it has fed (a
 * tool's reply appended, or one whose blocks were taken back) feeds several rows of one step, up
 * to the step's row budget, each row attending to the sample's pool rows and the rows before it.
 * A sample draws its next token once every token it holds is fed. A prompt longer than the
 * configured chunk is prefilled the same way, in pieces that extend its prefix blocks.
 *
 * Paging: the pool is cut into blocks of KV_BLOCK rows. A prompt's keys and values take the
 * blocks its length needs, shared by its samples; a sample takes a block each time its own
 * tokens fill the last one, and gives them all back when it ends. So the number of live
 * sequences follows their actual lengths, not the longest possible. The pool always keeps room
 * for every live prompt plus one sequence at full length; when a growing sequence finds the pool
 * empty, a waiting sample's blocks, else those of the running sample admitted last (the grower
 * itself when it is), are taken back: it keeps its tokens and feeds them again later. Its draws are counter-based and every
 * decode kernel computes each row on its own, so it goes on exactly as it would have.
 *
 * A weight switch that keeps KV (or1_engine_cfg.sw): a sample that has drawn `after` tokens
 * parks like one waiting on a tool (its slot given up, its blocks and prompt region kept); once
 * no sample can run, apply puts the new weights in and the parked samples are queued again, in
 * order of first admission, to go on over the keys and values the old weights wrote. */
#include "or1/core.h"
#include "or1/rollout.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* KV_BLOCK: rows of a pool block. EXTEND_ROWS: rows a decode step holds beyond one per slot,
 * so that a reply or a taken-back sample is fed in long runs even when every slot decodes. */
enum { KV_BLOCK = 16, EXTEND_ROWS = 64 };

/* A prompt's blocks and the hidden state that gives its first token (row `index` of the
 * engine's hidden buffer); refs counts its samples not yet finished. */
typedef struct {
    int req, refs; /* req < 0: free */
    int32_t *blocks;
    int n_blocks;
} prefix;

/* Where a sample is in its life. */
typedef enum { SEQ_NEW, SEQ_QUEUED, SEQ_ACTIVE, SEQ_TOOL, SEQ_PARKED, SEQ_DONE } seq_state;

/* One sample: its tokens (in out), how many are fed, its own blocks and its prompt's region. */
typedef struct {
    int req, sample, prefix; /* prefix: the region of its prompt, -1 before admission */
    int n_gen, n_fed;        /* tokens held (sampled and appended), tokens with keys in the pool */
    or1_completion *out;
    int32_t *blocks;
    int n_blocks;
    long admitted;           /* first admission (-1 before): the lower, the higher its priority */
    seq_state state;
    int feed;                /* rows this step feeds; row: the first of them */
    int row;
} seq;

/* Everything the engine allocates once, sized from the config and the requests. */
typedef struct {
    or1_dmodel *dm;
    const or1_model_config *c;
    const or1_request *reqs;
    const or1_tool_hooks *tools;
    const or1_weight_switch *sw; /* a keep_kv switch not yet made, NULL: none (or made) */
    int n_reqs, n_slots, n_rows, n_prefix, pcap, ncap, pblocks, sblocks; /* n_rows: a step's rows at most */
    int chunk; /* prompts longer than this are prefilled in pieces (0: none is) */
    long n_seqs;
    prefix *pre;
    seq *seqs;   /* request-major: request i's samples from first[i] on */
    long *first;
    int *slots; /* the sample in each slot, -1: free */
    int32_t *free_blocks; /* a stack of free block ids */
    int n_free, n_blocks;
    long *queue; /* samples ready to take a slot again (back from a tool or taken back), oldest first */
    long n_queue, next_new; /* next_new: the first sample never admitted */
    long admissions, preemptions, tool_calls, waiting; /* waiting: samples on a tool now */
    or1_tool_reply *replies;
    /* host: the decode step's rows, block table, the model's hidden states to sample (states 0
     * to n_prefix-1 are the prefixes', then one per decode row), sampling settings, draws */
    int32_t *tokens, *pos, *kv_rows, *seg, *row_slot, *idx, *next, *table, *prompt_rows;
    float *logp;
    or1_sample_row *rows;
    bool bar_shown; /* the progress bar is on stderr's current line */
} engine;

/* Elements of KV (floats, or bf16 on a bf16 GPU: the backend's kv_bytes each) for n tokens of every layer. */
static size_t kv_elems(const or1_model_config *c, size_t n) {
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

/* The table's defaults (OR1_ENGINE_OPTIONS), what an option of 0 or less means. */
#define ENGINE_DEFAULT(key, flag, field, type, def, lo, hi, help) .field = def,
static const or1_engine_opts ENGINE_DEFAULTS = {OR1_ENGINE_OPTIONS(ENGINE_DEFAULT)};
#undef ENGINE_DEFAULT

/* Picks the slot count whose live prompts and one full-length sequence fit the KV budget,
 * and the pool: the budget's blocks, no more than every slot at full length could use (with
 * tools, every sample: those waiting on a tool keep their blocks). */
static int plan_slots(engine *e, const or1_engine_cfg *cfg, long total) {
    double budget = (cfg->opts.kv_cache_gb > 0 ? cfg->opts.kv_cache_gb : ENGINE_DEFAULTS.kv_cache_gb) * 1073741824.0;
    double block_bytes = (double)or1_backend_kv_bytes(or1_dmodel_backend(e->dm)) * kv_elems(e->c, KV_BLOCK);
    e->pblocks = blocks_for(e->pcap), e->sblocks = blocks_for(e->ncap);
    int s = cfg->opts.max_slots > 0 ? cfg->opts.max_slots : ENGINE_DEFAULTS.max_slots;
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
    double holders = cfg->tools ? (double)total : (double)s;
    double most = (double)e->n_prefix * e->pblocks + holders * e->sblocks, fit = budget / block_bytes;
    e->n_blocks = (int)(fit < most ? fit : most);
    return 0;
}

/* The sampling settings of a request as the backend sees them (stream and counter unset). */
static or1_sample_row sample_row(const or1_sampling *s) {
    return (or1_sample_row){.temperature = s->temperature, .top_p = s->top_p, .top_k = s->top_k,
                            .seed = s->seed, .stream = 0, .counter = 0};
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
        if (r->first_stream < 0 || r->first_counter < 0)
            return or1_fail("generate: request %d has a negative first stream or counter", i);
        if ((long)r->n_prompt + r->s.max_new_tokens > c->max_pos)
            return or1_fail("generate: request %d: %d prompt + %d new tokens exceed max_position_embeddings %d", i,
                            r->n_prompt, r->s.max_new_tokens, c->max_pos);
        for (int t = 0; t < r->n_prompt; t++)
            if (r->prompt[t] < 0 || r->prompt[t] >= c->vocab)
                return or1_fail("generate: request %d: token id %d outside the vocabulary", i, r->prompt[t]);
        if (r->n_prompt > e->pcap) e->pcap = r->n_prompt;
        if (r->s.max_new_tokens > e->ncap) e->ncap = r->s.max_new_tokens;
    }
    return 0;
}

/* Sizes the model's paged pool and workspace, and allocates samples, block lists and step
 * buffers in one go. Rows of one sample share its block-table entries, so the table never needs
 * more than one prompt and one sample's blocks per slot. */
static int engine_alloc(engine *e, or1_completion *out) {
    e->n_rows = e->n_slots + EXTEND_ROWS;
    if (e->chunk > e->n_rows) e->n_rows = e->chunk; /* a step may hold one piece of a prompt */
    size_t S = (size_t)e->n_slots, R = (size_t)e->n_rows, P = (size_t)e->n_prefix, N = (size_t)e->n_seqs;
    int table_cap = e->n_slots * (e->pblocks + e->sblocks), prompt_cap = e->pcap; /* >= a prompt's blocks */
    if (e->chunk > 0 && e->chunk < prompt_cap) prompt_cap = e->chunk;
    if (or1_dmodel_decode_reserve(e->dm, e->n_blocks, KV_BLOCK, e->n_rows, prompt_cap, e->pcap + e->ncap, table_cap,
                                  e->n_prefix + e->n_rows))
        return -1;
    int32_t *lists = or1_malloc((P * (size_t)e->pblocks + N * (size_t)e->sblocks + (size_t)e->n_blocks + 1) *
                                sizeof *lists);
    e->pre = or1_calloc(P, sizeof *e->pre);
    for (size_t i = 0; i < P; i++) e->pre[i] = (prefix){-1, 0, lists + i * (size_t)e->pblocks, 0};
    e->seqs = or1_calloc(N, sizeof *e->seqs);
    e->first = or1_malloc(((size_t)e->n_reqs + 1) * sizeof *e->first);
    for (int i = 0, q = 0; i < e->n_reqs; i++)
        for (int j = (e->first[i] = q, 0); j < e->reqs[i].n_samples; j++, q++)
            e->seqs[q] = (seq){.req = i, .sample = j, .prefix = -1, .out = &out[q], .admitted = -1,
                               .blocks = lists + P * (size_t)e->pblocks + (size_t)q * (size_t)e->sblocks};
    e->free_blocks = lists + P * (size_t)e->pblocks + N * (size_t)e->sblocks;
    for (int b = 0; b < e->n_blocks; b++) e->free_blocks[b] = e->n_blocks - 1 - b; /* block 0 on top */
    e->n_free = e->n_blocks;
    e->slots = or1_malloc(S * sizeof *e->slots);
    for (size_t i = 0; i < S; i++) e->slots[i] = -1;
    e->queue = or1_malloc(N * sizeof *e->queue);
    e->replies = or1_malloc(N * sizeof *e->replies);
    e->tokens = or1_malloc((7 * R + 3 * S + (size_t)table_cap + (size_t)e->pcap) * sizeof(int32_t));
    e->pos = e->tokens + R, e->kv_rows = e->pos + R, e->seg = e->kv_rows + R, e->row_slot = e->seg + 4 * R;
    e->idx = e->row_slot + S, e->next = e->idx + S, e->table = e->next + S, e->prompt_rows = e->table + table_cap;
    e->logp = or1_malloc(S * sizeof(float));
    e->rows = or1_malloc(S * sizeof *e->rows);
    return 0;
}

/* Frees what engine_alloc made. */
static void engine_free(engine *e) {
    or1_dmodel_decode_release(e->dm);
    if (e->pre) free(e->pre[0].blocks); /* the one allocation behind every block list */
    free(e->pre);
    free(e->seqs);
    free(e->first);
    free(e->slots);
    free(e->queue);
    free(e->replies);
    free(e->tokens);
    free(e->logp);
    free(e->rows);
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

/* Writes prompt r's keys and values to region k's blocks and its last token's hidden state to
 * state k: at once through the prefill, or, past the chunk, by decode steps of up to `chunk`
 * rows that each extend it (the last token alone, as a step's states start after the regions'). */
static int fill_prefix(engine *e, int k, const or1_request *r) {
    const prefix *p = &e->pre[k];
    if (e->chunk == 0 || r->n_prompt <= e->chunk) {
        for (int t = 0; t < r->n_prompt; t++) e->prompt_rows[t] = block_row(p->blocks, t);
        or1_seq seq = {.ids = r->prompt, .n = r->n_prompt, .n_prompt = r->n_prompt};
        or1_batch b;
        or1_batch_pack(&b, &seq, 1);
        int rc = or1_dmodel_prefill(e->dm, &b, e->prompt_rows, k);
        or1_batch_free(&b);
        return rc;
    }
    memcpy(e->table, p->blocks, (size_t)p->n_blocks * sizeof *e->table);
    for (int t0 = 0, last = r->n_prompt - 1; t0 <= last;) {
        int n = t0 < last ? (last - t0 < e->chunk ? last - t0 : e->chunk) : 1;
        for (int j = 0; j < n; j++) {
            int t = t0 + j;
            e->tokens[j] = r->prompt[t], e->pos[j] = t, e->kv_rows[j] = block_row(p->blocks, t);
            int32_t *g = e->seg + 4 * j;
            g[0] = 0, g[1] = 0, g[2] = 0, g[3] = t + 1; /* no shared part: its own blocks up to t */
        }
        if (or1_dmodel_decode(e->dm, n, e->tokens, e->pos, e->kv_rows, e->seg, e->table, p->n_blocks,
                              t0 < last ? e->n_prefix : k))
            return -1;
        t0 += n;
    }
    return 0;
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
    if (fill_prefix(e, k, r)) return -1;
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

/* Takes back sample q's blocks: it keeps its tokens and feeds them all again later. */
static void drop_blocks(engine *e, seq *q) {
    give_blocks(e, q->blocks, q->n_blocks);
    q->n_blocks = q->n_fed = q->feed = 0;
    e->preemptions++;
}

/* Puts sample q at the back of the queue for a slot. */
static void enqueue(engine *e, seq *q) {
    q->state = SEQ_QUEUED;
    e->queue[e->n_queue++] = q - e->seqs;
}

/* Frees blocks for the sample in slot `keep`: from the latest admitted sample that waits (on a
 * tool, for a slot or for a weight switch) and holds blocks, else by stopping the latest
 * admitted running sample, `keep` itself when it is the latest (queued to go on later). Priority
 * stays with the first admission, so the earliest samples always progress and two cannot keep
 * stopping each other. */
static int preempt_one(engine *e, int keep) {
    seq *best = NULL;
    for (long q = 0; q < e->n_seqs; q++) {
        seq *x = &e->seqs[q];
        if ((x->state == SEQ_TOOL || x->state == SEQ_QUEUED || x->state == SEQ_PARKED) && x->n_blocks > 0 &&
            (!best || x->admitted > best->admitted))
            best = x;
    }
    if (best) {
        drop_blocks(e, best);
        return 0;
    }
    int victim = -1, running = 0;
    for (int i = 0; i < e->n_slots; i++)
        if (e->slots[i] >= 0) {
            running++;
            if (victim < 0 || e->seqs[e->slots[i]].admitted > e->seqs[e->slots[victim]].admitted) victim = i;
        }
    if (running == 1 && victim == keep)
        return or1_fail("generate: the KV pool cannot hold one sequence (internal error)");
    seq *x = &e->seqs[e->slots[victim]];
    drop_blocks(e, x);
    e->slots[victim] = -1;
    enqueue(e, x);
    return 0;
}

/* Rows each active sample feeds this step, within the workspace's rows: one for every sample
 * with unfed tokens first, then the rest of the budget to longer feeds, in slot order. */
static void plan_feeds(engine *e) {
    int budget = e->n_rows;
    for (int i = 0; i < e->n_slots; i++) {
        if (e->slots[i] < 0) continue;
        seq *q = &e->seqs[e->slots[i]];
        q->feed = q->n_gen > q->n_fed ? 1 : 0;
        budget -= q->feed;
    }
    for (int i = 0; i < e->n_slots && budget > 0; i++) {
        if (e->slots[i] < 0) continue;
        seq *q = &e->seqs[e->slots[i]];
        int more = q->n_gen - q->n_fed - q->feed;
        if (more > budget) more = budget;
        if (more > 0) q->feed += more, budget -= more;
    }
}

/* Gives every active sample the blocks this step's rows write to, oldest admitted first,
 * taking blocks back (preempt_one) while the pool is empty; after each, the neediest sample is
 * picked again (the one that was may have been stopped). */
static int grow_blocks(engine *e) {
    for (;;) {
        int pick = -1; /* the oldest active slot that needs a block */
        for (int i = 0; i < e->n_slots; i++) {
            if (e->slots[i] < 0) continue;
            const seq *q = &e->seqs[e->slots[i]];
            if (q->feed == 0 || blocks_for(q->n_fed + q->feed) <= q->n_blocks) continue;
            if (pick < 0 || q->admitted < e->seqs[e->slots[pick]].admitted) pick = i;
        }
        if (pick < 0) return 0;
        if (e->n_free == 0) {
            if (preempt_one(e, pick)) return -1;
            continue;
        }
        seq *q = &e->seqs[e->slots[pick]];
        q->blocks[q->n_blocks++] = take_block(e);
    }
}

/* Runs every active sample's unfed tokens planned for this step through the model (their keys
 * and values go to its own blocks); their hidden states land after the prefixes'. */
static int decode_step(engine *e) {
    plan_feeds(e);
    if (grow_blocks(e)) return -1;
    int R = 0, n_table = 0;
    for (int i = 0; i < e->n_slots; i++) {
        if (e->slots[i] < 0) continue;
        seq *q = &e->seqs[e->slots[i]];
        if (q->feed == 0) continue;
        const prefix *p = &e->pre[q->prefix];
        int n_prompt = e->reqs[q->req].n_prompt, pt = n_table;
        memcpy(e->table + n_table, p->blocks, (size_t)p->n_blocks * sizeof *e->table);
        n_table += p->n_blocks;
        int ot = n_table;
        memcpy(e->table + n_table, q->blocks, (size_t)q->n_blocks * sizeof *e->table);
        n_table += q->n_blocks;
        q->row = R;
        for (int t = q->n_fed; t < q->n_fed + q->feed; t++, R++) {
            e->tokens[R] = q->out->ids[t];
            e->pos[R] = n_prompt + t;
            e->kv_rows[R] = block_row(q->blocks, t);
            int32_t *g = e->seg + 4 * R;
            g[0] = pt, g[1] = n_prompt, g[2] = ot, g[3] = t + 1;
        }
    }
    if (R == 0) return 0;
    if (or1_dmodel_decode(e->dm, R, e->tokens, e->pos, e->kv_rows, e->seg, e->table, n_table, e->n_prefix))
        return -1;
    for (int i = 0; i < e->n_slots; i++)
        if (e->slots[i] >= 0) e->seqs[e->slots[i]].n_fed += e->seqs[e->slots[i]].feed;
    return 0;
}

/* A model EOS id or one of the request's stop ids. */
bool or1_is_stop(const or1_model_config *c, const or1_sampling *s, int32_t tok) {
    for (int i = 0; i < c->n_eos; i++)
        if (c->eos[i] == tok) return true;
    for (int i = 0; i < s->n_stop; i++)
        if (s->stop_ids[i] == tok) return true;
    return false;
}

/* Whether active sample q draws this step: every token it holds is fed (none yet: its
 * prompt's state gives the first). */
static bool draws(const seq *q) { return q->n_gen == 0 || (q->feed > 0 && q->n_fed == q->n_gen); }

/* Samples the next token of every active sample that draws, each from its own counters (its
 * request's first stream and counter on, rollout.h): its hidden state is its last fed row's, or
 * its prompt's when it holds no token yet. */
static int sample_all(engine *e) {
    int A = 0;
    for (int i = 0; i < e->n_slots; i++) {
        if (e->slots[i] < 0) continue;
        const seq *q = &e->seqs[e->slots[i]];
        if (!draws(q)) continue;
        e->idx[A] = q->n_gen == 0 ? q->prefix : e->n_prefix + q->row + q->feed - 1;
        const or1_request *r = &e->reqs[q->req];
        e->rows[A] = sample_row(&r->s);
        e->rows[A].stream = r->first_stream + q->sample, e->rows[A].counter = r->first_counter + q->n_gen;
        e->row_slot[A++] = i;
    }
    if (A == 0) return 0;
    if (or1_dmodel_sample(e->dm, A, e->idx, e->rows, e->next, e->logp)) return -1;
    for (int a = 0; a < A; a++) {
        seq *q = &e->seqs[e->slots[e->row_slot[a]]];
        if (isnan(e->logp[a]))
            return or1_fail("rollout: request %d, sample %d, token %d: the logits are not finite (NaN or infinite "
                            "weights or activations); stopping instead of sampling from them",
                            q->req, q->sample, q->n_gen);
        q->out->ids[q->n_gen] = e->next[a];
        q->out->logprobs[q->n_gen] = e->logp[a];
        if (q->out->mask) q->out->mask[q->n_gen] = 1;
        q->n_gen++;
        q->feed = -1; /* drew this step: retire_or_call looks at it */
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

/* Ends sample q (stop token or length): reports it and gives back its blocks and its share of
 * its prompt. */
static void finish(engine *e, const or1_engine_cfg *cfg, seq *q, bool stopped, long *tokens) {
    q->out->n = q->n_gen;
    q->out->stopped = stopped;
    if (q->out->switch_at < 0) q->out->switch_at = q->n_gen; /* it never crossed a switch */
    *tokens += q->n_gen;
    if (cfg->on_done) {
        bar_clear(e);
        cfg->on_done(cfg->ctx, q->req, q->sample, q->out);
    }
    give_blocks(e, q->blocks, q->n_blocks);
    q->n_blocks = 0;
    release_prefix(e, q->prefix);
    q->state = SEQ_DONE;
}

/* After the draws: a sample whose token stops it or fills its budget ends; one that has drawn a
 * pending switch's `after` tokens parks for it; one whose tokens now end a tool call gives up its
 * slot and waits. Returns the samples ended, or -1. */
static long retire_or_call(engine *e, const or1_engine_cfg *cfg, long *tokens) {
    long done = 0;
    for (int i = 0; i < e->n_slots; i++) {
        if (e->slots[i] < 0) continue;
        seq *q = &e->seqs[e->slots[i]];
        if (q->feed != -1) continue;
        q->feed = 0;
        const or1_request *r = &e->reqs[q->req];
        bool stop = or1_is_stop(e->c, &r->s, q->out->ids[q->n_gen - 1]);
        if (stop || q->n_gen >= r->s.max_new_tokens) {
            finish(e, cfg, q, stop, tokens);
            e->slots[i] = -1;
            done++;
            continue;
        }
        if (e->sw && q->n_gen >= e->sw->after) {
            q->state = SEQ_PARKED;
            e->slots[i] = -1;
            continue;
        }
        if (!e->tools) continue;
        int rc = e->tools->call(e->tools->ctx, q->req, q->sample, q->out->ids, q->n_gen);
        if (rc < 0) return -1;
        if (rc == 0) continue;
        q->state = SEQ_TOOL;
        q->out->tool_calls++;
        e->tool_calls++, e->waiting++;
        e->slots[i] = -1;
    }
    return done;
}

/* Appends finished tool calls' replies to their samples (within max_new_tokens: a sample the
 * reply fills ends at its length) and queues them for a slot; wait_s as in or1_tool_hooks.
 * Returns the samples ended, or -1. */
static long take_replies(engine *e, const or1_engine_cfg *cfg, double wait_s, long *tokens) {
    int n = e->tools->collect(e->tools->ctx, wait_s, e->replies, (int)e->n_seqs);
    if (n < 0) return -1;
    long done = 0;
    for (int k = 0; k < n; k++) {
        const or1_tool_reply *r = &e->replies[k];
        bool known = r->request >= 0 && r->request < e->n_reqs && r->sample >= 0 &&
                     r->sample < e->reqs[r->request].n_samples;
        long q = known ? e->first[r->request] + r->sample : -1;
        if (q < 0 || e->seqs[q].state != SEQ_TOOL || r->n < 0)
            return or1_fail("generate: a tool reply for request %d, sample %d, which waits on no tool", r->request,
                            r->sample);
        seq *s = &e->seqs[q];
        e->waiting--;
        int room = e->reqs[s->req].s.max_new_tokens - s->n_gen, m = r->n < room ? r->n : room;
        for (int t = 0; t < m; t++, s->n_gen++) {
            s->out->ids[s->n_gen] = r->ids[t];
            s->out->logprobs[s->n_gen] = 0.0f;
            s->out->mask[s->n_gen] = 0;
        }
        if (s->n_gen >= e->reqs[s->req].s.max_new_tokens) {
            finish(e, cfg, s, false, tokens);
            done++;
        } else {
            enqueue(e, s);
        }
    }
    return done;
}

/* Puts waiting samples into free slots: queued ones first (their prompts are resident), then
 * new ones in order while their prompts fit. */
static int admit(engine *e) {
    for (int i = 0; i < e->n_slots; i++) {
        if (e->slots[i] >= 0) continue;
        long q;
        if (e->n_queue > 0) {
            q = e->queue[0];
            memmove(e->queue, e->queue + 1, (size_t)--e->n_queue * sizeof *e->queue);
        } else {
            if (e->next_new >= e->n_seqs) return 0;
            q = e->next_new;
            int k = acquire_prefix(e, e->seqs[q].req);
            if (k == -2) return 0; /* no room for its prompt yet: wait for sequences to end */
            if (k < 0) return -1;
            e->seqs[q].prefix = k;
            e->next_new++;
        }
        e->seqs[q].state = SEQ_ACTIVE;
        if (e->seqs[q].admitted < 0) e->seqs[q].admitted = e->admissions++;
        e->slots[i] = (int)q;
    }
    return 0;
}

/* Makes the pending weight switch: apply, then every parked sample queued again in order of
 * first admission (e->queue, empty now, first holds every admitted sample at its admission
 * index), its first token under the new weights its next; a sample never admitted has all of
 * its tokens under them. */
static int switch_weights(engine *e) {
    const or1_weight_switch *sw = e->sw;
    e->sw = NULL;
    if (sw->apply(sw->ctx)) return or1_fail_ctx("generate: the weight switch after %d tokens", sw->after);
    for (long q = 0; q < e->n_seqs; q++) {
        seq *x = &e->seqs[q];
        if (x->admitted >= 0) e->queue[x->admitted] = q;
        if (x->state == SEQ_NEW) x->out->switch_at = 0;
    }
    long n = 0;
    for (long a = 0; a < e->admissions; a++) {
        seq *x = &e->seqs[e->queue[a]];
        if (x->state != SEQ_PARKED) continue;
        x->out->switch_at = x->n_gen;
        x->state = SEQ_QUEUED;
        e->queue[n++] = e->queue[a];
    }
    e->n_queue = n;
    return 0;
}

/* Whether any slot holds a sample. */
static bool any_active(const engine *e) {
    for (int i = 0; i < e->n_slots; i++)
        if (e->slots[i] >= 0) return true;
    return false;
}

/* One turn of the loop: take finished tool calls, admit, then decode, sample and retire; with
 * no sample able to run, make a pending weight switch (and admit again), else wait for a tool.
 * Returns the samples ended, or -1. */
static long turn(engine *e, const or1_engine_cfg *cfg, long *tokens) {
    long done = 0;
    if (e->waiting > 0 && (done = take_replies(e, cfg, 0, tokens)) < 0) return -1;
    if (admit(e)) return -1;
    if (!any_active(e) && e->sw && (switch_weights(e) || admit(e))) return -1;
    if (!any_active(e)) {
        if (e->waiting == 0) return or1_fail("generate: no sample can run (internal error)");
        long d = take_replies(e, cfg, 1.0, tokens);
        return d < 0 ? -1 : done + d;
    }
    if (decode_step(e) || sample_all(e)) return -1;
    long d = retire_or_call(e, cfg, tokens);
    return d < 0 ? -1 : done + d;
}

/* The continuous-batching loop until every sample has ended; a switch after 0 tokens is made
 * before it, one no sample reached after it (its apply is called once in any case). */
static int run(engine *e, const or1_engine_cfg *cfg) {
    long done = 0, tokens = 0;
    double t0 = or1_now();
    bool bar = cfg->progress && isatty(2);
    if (e->sw && e->sw->after == 0 && switch_weights(e)) return -1;
    while (done < e->n_seqs) {
        long d = turn(e, cfg, &tokens);
        if (d < 0) break;
        done += d;
        if (bar) progress(e, done, e->n_seqs, tokens, t0);
    }
    if (e->bar_shown) fputc('\n', stderr); /* the bar's last state stays, on a line of its own */
    e->bar_shown = false;
    if (done < e->n_seqs) return -1;
    return e->sw ? switch_weights(e) : 0;
}

/* Refuses a weight switch the engine cannot make: one that recomputes KV (or1_rollout_score's
 * two-part path), one without apply or with a negative count, one with tool calls. */
static int check_switch(const or1_engine_cfg *cfg) {
    const or1_weight_switch *sw = cfg->sw;
    if (!sw) return 0;
    if (!sw->keep_kv) return or1_fail("generate: the engine makes only a weight switch that keeps KV (keep_kv)");
    if (sw->after < 0 || !sw->apply) return or1_fail("generate: a weight switch needs after >= 0 and apply");
    if (cfg->tools) return or1_fail("generate: a weight switch is not supported with tool calls");
    return 0;
}

/* Validates, sizes the cache, allocates outputs and runs the engine. */
int or1_generate(or1_dmodel *dm, const or1_request *reqs, int n, const or1_engine_cfg *cfg, or1_completion *out) {
    engine e = {.dm = dm, .c = or1_dmodel_config(dm), .reqs = reqs, .n_reqs = n, .tools = cfg->tools,
                .sw = cfg->sw, .chunk = cfg->opts.prefill_chunk > 0 ? cfg->opts.prefill_chunk : 0};
    if (check_switch(cfg) || check_requests(&e)) return -1;
    for (int i = 0; i < n; i++) e.n_seqs += reqs[i].n_samples;
    if (e.n_seqs == 0) return e.sw ? switch_weights(&e) : 0; /* apply is called even then */
    if (plan_slots(&e, cfg, e.n_seqs)) return -1;
    for (int i = 0, k = 0; i < n; i++)
        for (int j = 0; j < reqs[i].n_samples; j++, k++) {
            size_t m = (size_t)reqs[i].s.max_new_tokens;
            out[k] = (or1_completion){.ids = or1_malloc(m * sizeof(int32_t)),
                                      .logprobs = or1_malloc(m * sizeof(float)),
                                      .mask = cfg->tools ? or1_malloc(m) : NULL, .n = 0, .tool_calls = 0,
                                      .stopped = false, .switch_at = -1};
        }
    int rc = engine_alloc(&e, out);
    if (rc == 0) rc = run(&e, cfg);
    if (cfg->stats) *cfg->stats = (or1_engine_stats){.slots = e.n_slots, .blocks = e.n_blocks,
                                                     .block_rows = KV_BLOCK, .preemptions = e.preemptions,
                                                     .tool_calls = e.tool_calls};
    engine_free(&e);
    return rc;
}

/* Frees the arrays of n completions. */
int or1_completion_sampled(const or1_completion *c) {
    if (!c->mask) return c->n;
    int k = 0;
    for (int j = 0; j < c->n; j++) k += c->mask[j] != 0;
    return k;
}

/* See rollout.h. */
void or1_completions_free(or1_completion *c, int n) {
    for (int i = 0; i < n; i++) {
        free(c[i].ids);
        free(c[i].logprobs);
        free(c[i].mask);
    }
}
