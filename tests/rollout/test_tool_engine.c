/* The rollout engine with samples that pause on a tool call, on random weights: a hook calls a
 * "tool" after 3 and then 5 sampled tokens (per sample, up to two calls), and its replies (6 and
 * 37 token ids drawn from the sample's seed) come back late and out of order, so slots are given
 * to other samples meanwhile and a reply longer than a step's rows is fed over several steps.
 * Each sample's tokens and log-probs after its last reply must equal, bit for bit, those of a
 * single-turn greedy rollout whose prompt is the same history (prompt, sampled tokens and
 * replies): the extend through the paged pool computes what a prefill computes. Replies carry
 * mask 0 and log-prob 0, sampled tokens mask 1. The same with a KV budget so small that waiting
 * and running samples lose their blocks and feed their tokens again, and on 1 and 4 slots. */
#include "../check.h"

#include "or1/core.h"
#include "or1/model.h"
#include "or1/rollout.h"

#include <stdlib.h>
#include <string.h>

enum { REQS = 3, M = 3, NEW = 60, MAX_CALLS = 2, PENDING = REQS * M };

static const int call_after[MAX_CALLS] = {3, 5}; /* sampled tokens since the last reply */
static const int reply_len[MAX_CALLS] = {6, 37};

/* A call waiting for its reply, and when it is due (the collect count that returns it). */
typedef struct {
    int req, sample, call, n; /* n: the sample's tokens at the call */
    long due;
} waiting;

/* The hook's state: per sample, its calls and where its last reply ended; the calls not yet
 * answered; the current replies' ids. */
typedef struct {
    int calls[REQS][M], since[REQS][M];
    waiting pend[PENDING];
    int n_pend;
    long collects;
    int32_t ids[PENDING][64];
    int vocab;
} hooks_ctx;

/* The engine's question after each sampled token: a call when the sample has drawn enough since
 * its last reply. */
static int on_token(void *p, int req, int sample, const int32_t *ids, int n) {
    hooks_ctx *h = p;
    (void)ids;
    int c = h->calls[req][sample];
    if (c >= MAX_CALLS || n - h->since[req][sample] != call_after[c]) return 0;
    /* later samples' replies come sooner, so they overtake earlier calls */
    h->pend[h->n_pend++] = (waiting){req, sample, c, n, h->collects + 2 + (M - sample) * 3};
    h->calls[req][sample]++;
    return 1;
}

/* The replies that are due (all of them when the engine has nothing else to run). */
static int on_collect(void *p, double wait_s, or1_tool_reply *out, int max) {
    hooks_ctx *h = p;
    h->collects++;
    int k = 0;
    for (int i = 0; i < h->n_pend && k < max;) {
        waiting w = h->pend[i];
        if (w.due > h->collects && wait_s <= 0) {
            i++;
            continue;
        }
        for (int t = 0; t < reply_len[w.call]; t++)
            h->ids[k][t] = (int32_t)(or1_rand_u64(99, (uint64_t)(w.req * M + w.sample), (uint64_t)(w.call * 64 + t)) %
                                     (uint64_t)h->vocab);
        out[k] = (or1_tool_reply){.request = w.req, .sample = w.sample, .ids = h->ids[k],
                                  .n = reply_len[w.call]};
        h->since[w.req][w.sample] = w.n + reply_len[w.call];
        k++;
        h->pend[i] = h->pend[--h->n_pend];
    }
    return k;
}

/* Where the ids after the last reply begin: a sample's history ends there. */
static int last_reply_end(const or1_completion *c) {
    int end = 0;
    for (int t = 0; t < c->n; t++)
        if (!c->mask[t]) end = t + 1;
    return end;
}

/* The masks and log-probs of a tool rollout: 0 exactly on the replies' tokens. */
static void check_masks(const or1_completion *c, const char *tag, int req, int sample) {
    int calls = 0, sampled = 0, replied = 0;
    for (int t = 0; t < c->n; t++) {
        if (c->mask[t]) {
            sampled++;
            continue;
        }
        replied++;
        CHECK(c->logprobs[t] == 0.0f, "%s: request %d sample %d: reply token %d has log-prob %g", tag, req, sample, t,
              (double)c->logprobs[t]);
        if (t == 0 || c->mask[t - 1]) calls++;
    }
    int want_replied = 0;
    for (int i = 0; i < c->tool_calls; i++) want_replied += reply_len[i];
    CHECK(c->tool_calls == MAX_CALLS && calls == MAX_CALLS && replied == want_replied && c->n == NEW,
          "%s: request %d sample %d: %d calls (%d replies), %d reply tokens, %d sampled, %d in all", tag, req, sample,
          c->tool_calls, calls, replied, sampled, c->n);
}

/* Runs every request with the hooks into out, then each sample's history alone as a single-turn
 * prompt, comparing what follows the last reply; and, given the first run, every sample with
 * its. */
static void run_case(or1_dmodel *dm, int32_t prompts[REQS][9], int slots, double kv_gb, const char *tag,
                     or1_completion *out, const or1_completion *first) {
    hooks_ctx h = {.vocab = or1_dmodel_config(dm)->vocab};
    or1_tool_hooks hooks = {.call = on_token, .collect = on_collect, .ctx = &h};
    or1_request reqs[REQS];
    for (int i = 0; i < REQS; i++)
        reqs[i] = (or1_request){.prompt = prompts[i], .n_prompt = 4 + 2 * i, .n_samples = M,
                                .s = {.temperature = 0.0f, .top_p = 1.0f, .top_k = 0,
                                      .max_new_tokens = NEW, .seed = (uint64_t)i, .stop_ids = NULL, .n_stop = 0},
                                .first_stream = 0, .first_counter = 0};
    or1_engine_stats st = {0};
    or1_engine_cfg cfg = {.opts = {.max_slots = slots, .kv_cache_gb = kv_gb}, .stats = &st, .tools = &hooks};
    if (!CHECK(or1_generate(dm, reqs, REQS, &cfg, out) == 0, "%s: generate: %s", tag, or1_error())) exit(1);
    CHECK(st.tool_calls == REQS * M * MAX_CALLS, "%s: %ld tool calls", tag, st.tool_calls);
    printf("%s: %d slots, %d blocks, %ld preemptions, %ld tool calls\n", tag, st.slots, st.blocks, st.preemptions,
           st.tool_calls);
    for (int q = 0; q < REQS * M; q++) {
        const or1_completion *c = &out[q];
        int req = q / M, sample = q % M;
        check_masks(c, tag, req, sample);
        int end = last_reply_end(c), n_hist = reqs[req].n_prompt + end;
        int32_t *hist = or1_malloc((size_t)n_hist * sizeof *hist);
        memcpy(hist, prompts[req], (size_t)reqs[req].n_prompt * sizeof *hist);
        memcpy(hist + reqs[req].n_prompt, c->ids, (size_t)end * sizeof *hist);
        or1_request single = {.prompt = hist, .n_prompt = n_hist, .n_samples = 1,
                              .s = {.temperature = 0.0f, .top_p = 1.0f, .top_k = 0,
                                    .max_new_tokens = NEW - end, .seed = 7, .stop_ids = NULL, .n_stop = 0},
                              .first_stream = 0, .first_counter = 0};
        or1_completion alone;
        or1_engine_cfg plain = {.opts = {.max_slots = 1}};
        if (CHECK(or1_generate(dm, &single, 1, &plain, &alone) == 0, "%s: single-turn: %s", tag, or1_error())) {
            CHECK(alone.n == c->n - end && !memcmp(alone.ids, c->ids + end, (size_t)alone.n * sizeof *alone.ids) &&
                      !memcmp(alone.logprobs, c->logprobs + end, (size_t)alone.n * sizeof *alone.logprobs),
                  "%s: request %d sample %d: the %d tokens after the last reply differ from a single-turn rollout "
                  "fed the same %d-token history",
                  tag, req, sample, c->n - end, n_hist);
            or1_completions_free(&alone, 1);
        }
        free(hist);
        if (first)
            CHECK(!memcmp(first[q].ids, c->ids, NEW * sizeof *c->ids) && !memcmp(first[q].mask, c->mask, NEW) &&
                      !memcmp(first[q].logprobs, c->logprobs, NEW * sizeof *c->logprobs),
                  "%s: request %d sample %d differs from the first run's", tag, req, sample);
    }
}

int main(void) {
    or1_model_config c;
    memset(&c, 0, sizeof c);
    c.arch = OR1_ARCH_QWEN2;
    c.hidden = 64, c.intermediate = 128, c.layers = 3, c.heads = 4, c.kv_heads = 2, c.head_dim = 16;
    c.vocab = 300, c.max_pos = 256, c.rms_eps = 1e-6f, c.rope_theta = 10000.0f, c.qkv_bias = true;
    or1_model m;
    or1_model_init(&m, &c);
    or1_model_randomize(&m, 5, 0.3f);
    or1_backend *be = or1_backend_cpu();
    or1_dmodel *dm = or1_dmodel_new(be, &m);
    if (!CHECK(dm != NULL, "model: %s", or1_error())) return 1;
    int32_t prompts[REQS][9];
    for (int i = 0; i < REQS; i++)
        for (int t = 0; t < 9; t++) prompts[i][t] = (int32_t)(or1_rand_u64(3, (uint64_t)i, (uint64_t)t) % 300);
    /* KV per token: 3 layers x keys and values x 2 heads x 16 floats; the small pool holds the
     * three prompts and two whole samples */
    double tok_gb = 3.0 * 2 * 2 * 16 * 4 / 1073741824.0;
    or1_completion first[REQS * M], out[REQS * M];
    run_case(dm, prompts, 4, 0, "4 slots", first, NULL);
    run_case(dm, prompts, 1, 0, "1 slot", out, first);
    or1_completions_free(out, REQS * M);
    run_case(dm, prompts, 4, (3 * 16 + 2 * 64) * tok_gb, "4 slots, small pool", out, first);
    or1_completions_free(out, REQS * M);
    or1_completions_free(first, REQS * M);
    or1_dmodel_free(dm);
    or1_backend_free(be);
    or1_model_free(&m);
    return check_report();
}
