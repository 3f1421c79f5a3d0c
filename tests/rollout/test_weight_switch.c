/* A weight switch inside a rollout (or1_rollout_score with or1_weight_switch), on random
 * weights and a byte-level tokenizer the test writes: rows of random prompts, M samples each,
 * sampled at temperature 0.8 with stop ids that end some samples before the switch, some
 * after it, and leave others to their full length.
 * (a) With an apply that leaves the weights as they are, tokens, log-probs and finish reasons
 *     equal bit for bit a rollout without a switch (a cut sample's continuation draws what it
 *     would have drawn), for a switch after 0 tokens, in the middle and past the end; apply is
 *     called once in each, and switch_at is where each sample was cut or its length.
 * (b) With an apply that puts other weights in (or1_dmodel_push), the tokens before switch_at
 *     equal those of the rollout without a switch under the old weights, and each sample's
 *     log-probs equal bit for bit the training engine's (packed forward and head, as the
 *     trainer computes them) under the old weights before switch_at and under the new ones
 *     from it on; and those two disagree on every cut sample, so a switch at the wrong place
 *     would show.
 * (c) A switch with tool calls is refused.
 * (d) The same with keep_kv (the engine parks each sample at `after` tokens, calls apply once no
 *     sample can run, and the parked samples go on over the keys and values the old weights
 *     wrote): with the same weights, bit for bit the rollout without a switch for each `after`;
 *     with other weights, the tokens before switch_at and their log-probs as in (b), switch_at
 *     `after` on every cut sample, the samples ended before it untouched, and the log-prob at
 *     switch_at not the training engine's under the new weights (the recompute path's: stale
 *     keys and values), compared with the recompute path on the samples whose token there agrees.
 * (e) keep_kv against recompute where exactly known: new weights that differ only in the final
 *     norm leave every key and value as it was, so both give the same bits; new weights that
 *     differ only in the embeddings of tokens absent from the prompts leave the prompts' keys
 *     and values as they were but not those of a response holding such a token, so the
 *     recompute path's log-prob at switch_at is the training engine's under the new weights and
 *     the kept one's is not (dropping the parked samples' blocks at the switch would make it so). */
#include "../check.h"

#include "or1/core.h"
#include "or1/io.h"
#include "or1/model.h"
#include "or1/rollout.h"
#include "or1/tokenizer.h"
#include "or1/train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ROWS = 3, M = 3, N = ROWS * M, NEW = 40, AFTER = 12, PROMPT = 7, N_STOP = 8 };
static const float TEMP = 0.8f;

/* What apply does to the weights: nothing, random ones of seed 6, every parameter scaled by 1.01
 * (close enough that both paths often draw the same token), the final norm scaled, or the
 * embeddings of the tokens absent from every prompt rotated. */
typedef enum { SAME, RANDOM, NUDGE, NORM_ONLY, EMBED_ONLY } new_kind;

/* The switch's context: the weights apply puts in, the prompts (for EMBED_ONLY) and how often
 * it was called. */
typedef struct {
    or1_dmodel *dm;
    new_kind kind;
    const or1_data_row *const *rows;
    int calls;
} switch_ctx;

/* Puts random weights of seed on dm's host model and pushes them to the placed one. */
static int set_weights(or1_dmodel *dm, uint64_t seed) {
    or1_model_randomize(or1_dmodel_host(dm), seed, 0.3f);
    return or1_dmodel_push(dm);
}

/* Whether token t is in none of the prompts. */
static bool absent(const or1_data_row *const *rows, int32_t t) {
    for (int i = 0; i < ROWS; i++)
        for (int j = 0; j < rows[i]->n_ids; j++)
            if (rows[i]->ids[j] == t) return false;
    return true;
}

/* Changes dm's host weights (NUDGE, NORM_ONLY, EMBED_ONLY, see new_kind) and pushes them. */
static int edit_weights(or1_dmodel *dm, new_kind kind, const or1_data_row *const *rows) {
    or1_model *m = or1_dmodel_host(dm);
    int H = m->cfg.hidden;
    for (size_t i = 0; kind == NUDGE && i < m->n_floats; i++) m->params[i] *= 1.01f;
    if (kind == NORM_ONLY)
        for (int i = 0; i < H; i++) m->w.norm[i] *= 1.5f;
    for (int32_t t = 0; kind == EMBED_ONLY && t < m->cfg.vocab; t++) {
        float *e = m->w.embed + (size_t)t * H, first = e[0];
        if (!absent(rows, t)) continue;
        memmove(e, e + 1, (size_t)(H - 1) * sizeof *e);
        e[H - 1] = first;
    }
    return or1_dmodel_push(dm);
}

/* or1_weight_switch.apply: counts the call and puts in the context's weights. */
static int apply(void *p) {
    switch_ctx *s = p;
    s->calls++;
    return s->kind == SAME ? 0 : s->kind == RANDOM ? set_weights(s->dm, 6) : edit_weights(s->dm, s->kind, s->rows);
}

/* Writes a byte-level BPE tokenizer.json of 256 tokens (one per byte, no merges) into dir. */
static int write_tokenizer(const char *dir) {
    char path[512], *json = or1_malloc(64 * 1024);
    size_t n = (size_t)snprintf(json, 64 * 1024, "{\"model\":{\"type\":\"BPE\",\"merges\":[],\"vocab\":{");
    for (int b = 0; b < 256; b++) { /* the GPT-2 byte alphabet */
        int self = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF), cp = b;
        for (int x = 0, k = 0; !self && x <= b; x++)
            if (!((x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE && x <= 0xFF)))
                cp = 0x100 + k++;
        n += (size_t)snprintf(json + n, 64 * 1024 - n, "%s\"\\u%04x\":%d", b ? "," : "", cp, b);
    }
    n += (size_t)snprintf(json + n, 64 * 1024 - n,
                          "}},\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false},"
                          "\"decoder\":{\"type\":\"ByteLevel\"}}");
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    int rc = or1_write_file_atomic(path, json, n);
    free(json);
    return rc;
}

/* Runs the rows through or1_rollout_score with switch sw (NULL: none) and the engine's settings
 * into out. */
static int rollout_with(or1_dmodel *dm, const or1_tokenizer *tok, const or1_data_row *const *rows,
                        const or1_weight_switch *sw, const or1_tools_cfg *tools, const or1_engine_cfg *engine,
                        or1_scored *out) {
    static const int32_t stops[N_STOP] = {3, 17, 42, 77, 101, 150, 199, 250};
    or1_sampling s = {.temperature = TEMP, .top_p = 1.0f, .top_k = 0, .max_new_tokens = NEW, .seed = 0,
                      .stop_ids = stops, .n_stop = N_STOP};
    uint64_t seeds[ROWS];
    for (int i = 0; i < ROWS; i++) seeds[i] = or1_rand_u64(11, (uint64_t)i, 0);
    or1_reward_opts reward = {0};
    or1_rollout_job job = {.dm = dm, .tok = tok, .rows = rows, .n_rows = ROWS, .M = M, .sampling = &s,
                           .seeds = seeds, .engine = engine, .tools = tools, .pool = NULL, .reward = &reward,
                           .sw = sw};
    return or1_rollout_score(&job, out, NULL, NULL);
}

/* rollout_with 4 slots and the default KV budget. */
static int rollout(or1_dmodel *dm, const or1_tokenizer *tok, const or1_data_row *const *rows,
                   const or1_weight_switch *sw, const or1_tools_cfg *tools, or1_scored *out) {
    or1_engine_cfg engine = {.opts = {.max_slots = 4}};
    return rollout_with(dm, tok, rows, sw, tools, &engine, out);
}

/* Log-probs of prompt + response under dm's weights with the training engine's packed forward
 * and head at the rollout's temperature (what the trainer's batch_logprobs computes). */
static float *train_logprobs(or1_dmodel *dm, const or1_data_row *row, const or1_completion *c) {
    or1_sample x = {.prompt = row->ids, .resp = c->ids, .n_prompt = row->n_ids, .n_resp = c->n, .adv = 0.0f,
                    .old_logp = NULL, .ref_logp = NULL, .rollout_logp = NULL, .id = 0, .mask = NULL};
    or1_packed_samples p;
    or1_pack_samples(&p, &x, 1);
    float *lp = or1_malloc((size_t)2 * (p.b.n_scored + 1) * sizeof *lp);
    if (or1_dmodel_forward(dm, &p.b, false) || or1_dmodel_head(dm, &p.b, TEMP, lp, lp + p.b.n_scored)) {
        CHECK(0, "training forward: %s", or1_error());
        memset(lp, 0, (size_t)2 * (p.b.n_scored + 1) * sizeof *lp);
    }
    or1_packed_samples_free(&p);
    return lp;
}

/* Whether two rollouts' samples are the same bit for bit (tokens, log-probs, finish reason). */
static bool same(const or1_completion *a, const or1_completion *b) {
    return a->n == b->n && a->stopped == b->stopped && !memcmp(a->ids, b->ids, (size_t)a->n * sizeof *a->ids) &&
           !memcmp(a->logprobs, b->logprobs, (size_t)a->n * sizeof *a->logprobs);
}

/* (a), (d): a switch that keeps the weights gives the rollout without one, after `after` tokens,
 * keeping KV or not. */
static void same_weights(or1_dmodel *dm, const or1_tokenizer *tok, const or1_data_row *const *rows,
                         const or1_scored *plain, int after, bool keep) {
    switch_ctx ctx = {dm, SAME, rows, 0};
    or1_weight_switch sw = {.after = after, .apply = apply, .ctx = &ctx, .keep_kv = keep};
    or1_scored sc;
    if (CHECK(rollout(dm, tok, rows, &sw, NULL, &sc) == 0, "after %d: %s", after, or1_error())) {
        CHECK(ctx.calls == 1, "keep_kv %d, after %d: apply called %d times", keep, after, ctx.calls);
        for (int k = 0; k < N; k++) {
            const or1_completion *c = &sc.c[k];
            int want = c->n > after ? after : c->n; /* a cut sample goes on past `after` */
            CHECK(same(c, &plain->c[k]),
                  "keep_kv %d, after %d: sample %d (%d tokens) differs from the rollout without a switch", keep, after,
                  k, c->n);
            CHECK(sc.switch_at[k] == want && c->switch_at == want,
                  "keep_kv %d, after %d: sample %d of %d tokens has switch_at %d (completion %d), not %d", keep, after,
                  k, c->n, sc.switch_at[k], c->switch_at, want);
        }
    }
    or1_scored_free(&sc);
}

/* (b): a switch to other weights; old, fresh: the rollouts without a switch under the old and
 * the new weights. */
static void new_weights(or1_dmodel *dm, const or1_tokenizer *tok, const or1_data_row *const *rows,
                        const or1_scored *old, const or1_scored *fresh) {
    switch_ctx ctx = {dm, RANDOM, rows, 0};
    or1_weight_switch sw = {.after = AFTER, .apply = apply, .ctx = &ctx, .keep_kv = false};
    or1_scored sc;
    int cut = 0, stopped_before = 0, like_fresh = 0;
    if (CHECK(rollout(dm, tok, rows, &sw, NULL, &sc) == 0, "switch: %s", or1_error())) {
        CHECK(ctx.calls == 1, "switch: apply called %d times", ctx.calls);
        for (int k = 0; k < N; k++) {
            const or1_completion *c = &sc.c[k];
            int at = sc.switch_at[k];
            const or1_data_row *row = rows[k / M];
            cut += at < c->n, stopped_before += at == c->n && c->stopped;
            CHECK(at <= c->n && at <= old->c[k].n && !memcmp(c->ids, old->c[k].ids, (size_t)at * sizeof *c->ids),
                  "sample %d: its %d tokens before the switch differ from the old weights' rollout", k, at);
            like_fresh += at <= fresh->c[k].n && !memcmp(c->ids, fresh->c[k].ids, (size_t)at * sizeof *c->ids);
            float *now = train_logprobs(dm, row, c); /* dm holds the new weights until restored below */
            CHECK(!memcmp(c->logprobs + at, now + at, (size_t)(c->n - at) * sizeof *now),
                  "sample %d: log-probs of tokens %d..%d differ from the training engine's under the new weights",
                  k, at, c->n);
            if (at < c->n)
                CHECK(memcmp(c->logprobs, now, (size_t)at * sizeof *now) != 0 || at == 0,
                      "sample %d: the new weights give the same log-probs before the switch (no discrimination)", k);
            free(now);
        }
        set_weights(dm, 5); /* the old weights back */
        for (int k = 0; k < N; k++) {
            const or1_completion *c = &sc.c[k];
            int at = sc.switch_at[k];
            float *then = train_logprobs(dm, rows[k / M], c);
            CHECK(!memcmp(c->logprobs, then, (size_t)at * sizeof *then),
                  "sample %d: log-probs of tokens 0..%d differ from the training engine's under the old weights", k,
                  at);
            if (at < c->n)
                CHECK(memcmp(c->logprobs + at, then + at, (size_t)(c->n - at) * sizeof *then) != 0,
                      "sample %d: the old weights give the same log-probs after the switch (no discrimination)", k);
            free(then);
        }
        printf("switch after %d tokens: %d of %d samples cut, %d stopped before it\n", AFTER, cut, N, stopped_before);
        CHECK(cut > 0 && stopped_before > 0, "the case needs cut samples and samples ended before the switch");
        CHECK(like_fresh < N, "the tokens before the switch are those of the new weights' rollout as well "
                              "(the swapped check would pass: no discrimination)");
    }
    or1_scored_free(&sc);
}

/* (d): a keep_kv switch that keeps the weights, in a KV pool of 9 blocks (3 prompts, 4 slots, 9
 * samples parked at AFTER tokens would need 12): parked samples' blocks are taken back and fed
 * again, and the tokens and log-probs still equal the rollout without a switch bit for bit;
 * a sample not admitted before the switch (none fits) has switch_at 0. */
static void keep_tight(or1_dmodel *dm, const or1_tokenizer *tok, const or1_data_row *const *rows,
                       const or1_scored *plain) {
    switch_ctx ctx = {dm, SAME, rows, 0};
    or1_weight_switch sw = {.after = AFTER, .apply = apply, .ctx = &ctx, .keep_kv = true};
    or1_engine_stats st = {0};
    double block = 3.0 * 2 * 16 * 2 * 16 * sizeof(float); /* layers x K,V x rows x kv_heads x head_dim */
    or1_engine_cfg engine = {.opts = {.max_slots = 4, .kv_cache_gb = 9 * block / 1073741824.0}, .stats = &st};
    or1_scored sc;
    if (CHECK(rollout_with(dm, tok, rows, &sw, NULL, &engine, &sc) == 0, "tight keep_kv: %s", or1_error())) {
        CHECK(ctx.calls == 1, "tight keep_kv: apply called %d times", ctx.calls);
        int late = 0;
        for (int k = 0; k < N; k++) {
            int at = sc.switch_at[k], want = sc.c[k].n > AFTER ? AFTER : sc.c[k].n;
            late += at == 0;
            CHECK(same(&sc.c[k], &plain->c[k]) && (at == want || at == 0),
                  "tight keep_kv: sample %d (switch_at %d) differs from the rollout without a switch", k, at);
        }
        printf("tight keep_kv: %d blocks, %ld preemptions, %d samples admitted after the switch\n", st.blocks,
               st.preemptions, late);
        CHECK(st.blocks == 9 && st.preemptions > 0, "tight keep_kv: the pool took no parked sample's blocks back");
    }
    or1_scored_free(&sc);
}

/* Runs the rows with a switch after AFTER tokens to the weights of kind, keeping KV or not, into
 * out; dm holds the new weights after it. */
static bool switched(or1_dmodel *dm, const or1_tokenizer *tok, const or1_data_row *const *rows, new_kind kind,
                     bool keep, or1_scored *out) {
    switch_ctx ctx = {dm, kind, rows, 0};
    or1_weight_switch sw = {.after = AFTER, .apply = apply, .ctx = &ctx, .keep_kv = keep};
    if (!CHECK(rollout(dm, tok, rows, &sw, NULL, out) == 0, "kind %d, keep_kv %d: %s", kind, keep, or1_error()))
        return false;
    return CHECK(ctx.calls == 1, "kind %d, keep_kv %d: apply called %d times", kind, keep, ctx.calls);
}

/* The training engine's log-prob of sample k's token t under the weights dm holds. */
static float train_logprob_at(or1_dmodel *dm, const or1_data_row *const *rows, const or1_scored *sc, int k, int t) {
    float *lp = train_logprobs(dm, rows[k / M], &sc->c[k]), v = lp[t];
    free(lp);
    return v;
}

/* (d): keep_kv with other weights, against the rollout without a switch under the old weights
 * (old) and the recompute path on the same seeds. What holds exactly: both paths draw the
 * tokens before switch_at under the old weights from the same counters (so they agree), and
 * the token at switch_at from the same counter; the recompute path's log-prob there is the
 * training engine's under the new weights (b), while keep_kv's comes from the hidden state of
 * token switch_at - 1 fed under the new weights over the prompt's and tokens 0..switch_at-2's
 * keys and values written by the old weights, so it differs from it (every layer's keys and
 * values change with new weights of RANDOM or NUDGE), and where the two paths drew the same
 * token there (often with NUDGE's close weights), their log-probs of it differ. */
static void keep_new_weights(or1_dmodel *dm, const or1_tokenizer *tok, const or1_data_row *const *rows,
                             const or1_scored *old, new_kind kind) {
    or1_scored rec, kp;
    bool ok = switched(dm, tok, rows, kind, false, &rec);
    set_weights(dm, 5);
    if (ok && switched(dm, tok, rows, kind, true, &kp)) {
        int cut = 0, agree = 0;
        for (int k = 0; k < N; k++) {
            const or1_completion *c = &kp.c[k];
            int at = kp.switch_at[k];
            CHECK(at == c->switch_at && (at == c->n || at == AFTER),
                  "keep_kv: sample %d of %d tokens has switch_at %d (completion %d), not %d or its length", k, c->n, at,
                  c->switch_at, AFTER);
            if (at == c->n) { /* ended before the switch: untouched */
                CHECK(same(c, &old->c[k]) && same(c, &rec.c[k]), "keep_kv: sample %d ended before the switch "
                      "differs from the old weights' rollout", k);
                continue;
            }
            cut++;
            float now = train_logprob_at(dm, rows, &kp, k, at);
            CHECK(c->logprobs[at] != now, "keep_kv: sample %d: the log-prob at switch_at %d is the new weights' over "
                  "recomputed keys and values (%g): the old KV was not kept", k, at, (double)now);
            if (rec.switch_at[k] == at && rec.c[k].n > at && rec.c[k].ids[at] == c->ids[at]) {
                agree++;
                CHECK(rec.c[k].logprobs[at] != c->logprobs[at], "keep_kv: sample %d: the same log-prob %g at "
                      "switch_at as the recompute path's", k, (double)c->logprobs[at]);
            }
        }
        set_weights(dm, 5);
        for (int k = 0; k < N; k++) {
            const or1_completion *c = &kp.c[k];
            int at = kp.switch_at[k];
            float *then = train_logprobs(dm, rows[k / M], c);
            CHECK(at <= old->c[k].n && !memcmp(c->ids, old->c[k].ids, (size_t)at * sizeof *c->ids) &&
                      !memcmp(c->logprobs, then, (size_t)at * sizeof *then),
                  "keep_kv: sample %d: tokens or log-probs before switch_at %d are not the old weights'", k, at);
            free(then);
        }
        printf("keep_kv, kind %d: %d of %d samples cut, %d drew the recompute path's token at the switch\n", kind,
               cut, N, agree);
        CHECK(cut > 0 && (kind != NUDGE || agree > 0),
              "keep_kv: the case needs cut samples (with NUDGE, some drawing the same token at the switch)");
        or1_scored_free(&kp);
    }
    set_weights(dm, 5);
    or1_scored_free(&rec);
}

/* Whether any of tokens 0..n-1 of c is absent from every prompt (EMBED_ONLY changes its keys
 * and values). */
static bool holds_absent(const or1_data_row *const *rows, const or1_completion *c, int n) {
    for (int t = 0; t < n; t++)
        if (absent(rows, c->ids[t])) return true;
    return false;
}

/* (e): keep_kv against recompute where the outcome is known exactly (NORM_ONLY: the same bits;
 * EMBED_ONLY: recompute's log-prob at switch_at the training engine's under the new weights, keep_kv's
 * not, on each cut sample whose tokens before the last pre-switch one hold a changed embedding). */
static void keep_exact(or1_dmodel *dm, const or1_tokenizer *tok, const or1_data_row *const *rows, new_kind kind) {
    or1_scored rec, kp;
    bool ok = switched(dm, tok, rows, kind, false, &rec);
    set_weights(dm, 5);
    if (ok && switched(dm, tok, rows, kind, true, &kp)) {
        int cut = 0, stale = 0;
        for (int k = 0; k < N; k++) {
            const or1_completion *c = &kp.c[k];
            int at = kp.switch_at[k];
            cut += at < c->n;
            if (kind == NORM_ONLY) {
                CHECK(same(c, &rec.c[k]) && at == rec.switch_at[k], "norm only: sample %d differs between keep_kv "
                      "and recompute (the keys and values are the same)", k);
                continue;
            }
            if (at == c->n || !holds_absent(rows, c, at - 1)) continue;
            stale++;
            float now = train_logprob_at(dm, rows, &kp, k, at);
            float rnow = train_logprob_at(dm, rows, &rec, k, rec.switch_at[k]);
            CHECK(rec.c[k].logprobs[rec.switch_at[k]] == rnow, "embed only: sample %d: the recompute path's log-prob "
                  "at switch_at is not the training engine's under the new weights", k);
            CHECK(c->logprobs[at] != now, "embed only: sample %d: keep_kv's log-prob at switch_at %d is the new "
                  "weights' over recomputed keys and values (%g): the response's old keys and values were not kept",
                  k, at, (double)now);
        }
        printf("kind %d: %d samples cut, %d with a changed embedding before the switch\n", kind, cut,
               kind == NORM_ONLY ? cut : stale);
        CHECK(cut > 0 && (kind == NORM_ONLY || stale > 0), "kind %d: the case needs cut samples", kind);
        or1_scored_free(&kp);
    }
    set_weights(dm, 5);
    or1_scored_free(&rec);
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "test_weight_switch";
    or1_mkdir_p(dir);
    if (!CHECK(write_tokenizer(dir) == 0, "tokenizer.json: %s", or1_error())) return check_report();
    or1_tokenizer *tok = or1_tokenizer_load(dir);
    if (!CHECK(tok != NULL, "tokenizer: %s", or1_error())) return check_report();
    or1_model_config c;
    memset(&c, 0, sizeof c);
    c.arch = OR1_ARCH_QWEN2;
    c.hidden = 64, c.intermediate = 128, c.layers = 3, c.heads = 4, c.kv_heads = 2, c.head_dim = 16;
    c.vocab = 256, c.max_pos = 128, c.rms_eps = 1e-6f, c.rope_theta = 10000.0f, c.qkv_bias = true;
    or1_model m;
    or1_model_init(&m, &c);
    or1_model_randomize(&m, 5, 0.3f);
    or1_backend *be = or1_backend_cpu();
    or1_dmodel *dm = or1_dmodel_new(be, &m);
    if (!CHECK(dm != NULL, "model: %s", or1_error())) return check_report();
    int32_t ids[ROWS][PROMPT];
    or1_data_row row[ROWS];
    const or1_data_row *rows[ROWS];
    for (int i = 0; i < ROWS; i++) {
        for (int t = 0; t < PROMPT; t++) ids[i][t] = (int32_t)(or1_rand_u64(3, (uint64_t)i, (uint64_t)t) % 256);
        row[i] = (or1_data_row){.data_source = "switch", .ground_truth = "[\"1\"]", .index = i, .ids = ids[i],
                                .n_ids = PROMPT - i};
        rows[i] = &row[i];
    }
    or1_scored plain;
    if (CHECK(rollout(dm, tok, rows, NULL, NULL, &plain) == 0, "no switch: %s", or1_error())) {
        for (int k = 0; k < N; k++)
            CHECK(plain.switch_at[k] == plain.c[k].n, "no switch: sample %d has switch_at %d of %d tokens", k,
                  plain.switch_at[k], plain.c[k].n);
        for (int keep = 0; keep < 2; keep++) {
            same_weights(dm, tok, rows, &plain, 0, keep);
            same_weights(dm, tok, rows, &plain, AFTER, keep);
            same_weights(dm, tok, rows, &plain, NEW + 5, keep);
        }
        keep_tight(dm, tok, rows, &plain);
        or1_scored fresh;
        set_weights(dm, 6);
        CHECK(rollout(dm, tok, rows, NULL, NULL, &fresh) == 0, "new weights: %s", or1_error());
        set_weights(dm, 5);
        new_weights(dm, tok, rows, &plain, &fresh);
        or1_scored_free(&fresh);
        keep_new_weights(dm, tok, rows, &plain, RANDOM);
        keep_new_weights(dm, tok, rows, &plain, NUDGE);
        keep_exact(dm, tok, rows, NORM_ONLY);
        keep_exact(dm, tok, rows, EMBED_ONLY);
    }
    or1_scored_free(&plain);
    switch_ctx ctx = {dm, SAME, rows, 0};
    or1_weight_switch sw = {.after = AFTER, .apply = apply, .ctx = &ctx, .keep_kv = false};
    or1_tools_cfg tools = {.max_turns = 2};
    or1_scored sc;
    CHECK(rollout(dm, tok, rows, &sw, &tools, &sc) != 0 && strstr(or1_error(), "not supported") && ctx.calls == 0,
          "a switch with tool calls is refused (%s)", or1_error());
    or1_scored_free(&sc);
    sw.keep_kv = true;
    CHECK(rollout(dm, tok, rows, &sw, &tools, &sc) != 0 && strstr(or1_error(), "not supported") && ctx.calls == 0,
          "a keep_kv switch with tool calls is refused (%s)", or1_error());
    or1_scored_free(&sc);
    or1_dmodel_free(dm);
    or1_backend_free(be);
    or1_model_free(&m);
    or1_tokenizer_free(tok);
    return check_report();
}
