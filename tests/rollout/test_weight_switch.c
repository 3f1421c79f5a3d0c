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
 * (c) A switch with tool calls is refused. */
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

/* The switch's context: the weights apply puts in (a seed of or1_model_randomize; 0: none) and
 * how often it was called. */
typedef struct {
    or1_dmodel *dm;
    uint64_t seed;
    int calls;
} switch_ctx;

/* Puts random weights of seed on dm's host model and pushes them to the placed one. */
static int set_weights(or1_dmodel *dm, uint64_t seed) {
    or1_model_randomize(or1_dmodel_host(dm), seed, 0.3f);
    return or1_dmodel_push(dm);
}

/* or1_weight_switch.apply: counts the call and puts in the context's weights, if any. */
static int apply(void *p) {
    switch_ctx *s = p;
    s->calls++;
    return s->seed == 0 ? 0 : set_weights(s->dm, s->seed);
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

/* Runs the rows through or1_rollout_score with switch sw (NULL: none) into out. */
static int rollout(or1_dmodel *dm, const or1_tokenizer *tok, const or1_data_row *const *rows,
                   const or1_weight_switch *sw, const or1_tools_cfg *tools, or1_scored *out) {
    static const int32_t stops[N_STOP] = {3, 17, 42, 77, 101, 150, 199, 250};
    or1_sampling s = {TEMP, 1.0f, 0, NEW, 0, stops, N_STOP};
    uint64_t seeds[ROWS];
    for (int i = 0; i < ROWS; i++) seeds[i] = or1_rand_u64(11, (uint64_t)i, 0);
    or1_engine_cfg engine = {.opts = {.max_slots = 4}};
    or1_reward_opts reward = {0};
    or1_rollout_job job = {dm, tok, rows, ROWS, M, &s, seeds, &engine, tools, NULL, &reward, sw};
    return or1_rollout_score(&job, out, NULL, NULL);
}

/* Log-probs of prompt + response under dm's weights with the training engine's packed forward
 * and head at the rollout's temperature (what the trainer's batch_logprobs computes). */
static float *train_logprobs(or1_dmodel *dm, const or1_data_row *row, const or1_completion *c) {
    or1_sample x = {row->ids, c->ids, row->n_ids, c->n, 0.0f, NULL, NULL, NULL, 0, NULL};
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

/* (a): a switch that keeps the weights gives the rollout without one, after `after` tokens. */
static void same_weights(or1_dmodel *dm, const or1_tokenizer *tok, const or1_data_row *const *rows,
                         const or1_scored *plain, int after) {
    switch_ctx ctx = {dm, 0, 0};
    or1_weight_switch sw = {after, apply, &ctx, false};
    or1_scored sc;
    if (CHECK(rollout(dm, tok, rows, &sw, NULL, &sc) == 0, "after %d: %s", after, or1_error())) {
        CHECK(ctx.calls == 1, "after %d: apply called %d times", after, ctx.calls);
        for (int k = 0; k < N; k++) {
            const or1_completion *c = &sc.c[k];
            int want = c->n > after ? after : c->n; /* a cut sample goes on past `after` */
            CHECK(same(c, &plain->c[k]), "after %d: sample %d (%d tokens) differs from the rollout without a switch",
                  after, k, c->n);
            CHECK(sc.switch_at[k] == want, "after %d: sample %d of %d tokens has switch_at %d, not %d", after, k,
                  c->n, sc.switch_at[k], want);
        }
    }
    or1_scored_free(&sc);
}

/* (b): a switch to other weights; old, fresh: the rollouts without a switch under the old and
 * the new weights. */
static void new_weights(or1_dmodel *dm, const or1_tokenizer *tok, const or1_data_row *const *rows,
                        const or1_scored *old, const or1_scored *fresh) {
    switch_ctx ctx = {dm, 6, 0};
    or1_weight_switch sw = {AFTER, apply, &ctx, false};
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
        same_weights(dm, tok, rows, &plain, 0);
        same_weights(dm, tok, rows, &plain, AFTER);
        same_weights(dm, tok, rows, &plain, NEW + 5);
        or1_scored fresh;
        set_weights(dm, 6);
        CHECK(rollout(dm, tok, rows, NULL, NULL, &fresh) == 0, "new weights: %s", or1_error());
        set_weights(dm, 5);
        new_weights(dm, tok, rows, &plain, &fresh);
        or1_scored_free(&fresh);
    }
    or1_scored_free(&plain);
    switch_ctx ctx = {dm, 0, 0};
    or1_weight_switch sw = {AFTER, apply, &ctx, false};
    or1_tools_cfg tools = {.max_turns = 2};
    or1_scored sc;
    CHECK(rollout(dm, tok, rows, &sw, &tools, &sc) != 0 && strstr(or1_error(), "not supported") && ctx.calls == 0,
          "a switch with tool calls is refused (%s)", or1_error());
    or1_scored_free(&sc);
    or1_dmodel_free(dm);
    or1_backend_free(be);
    or1_model_free(&m);
    or1_tokenizer_free(tok);
    return check_report();
}
