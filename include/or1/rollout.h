/* or1 rollout: batched sampling with a KV cache and continuous batching.
 *
 * Each request is one prompt and M samples. The prompt is prefilled once and its keys and
 * values are shared by all M samples (each sample keeps only its own generated tokens' KV).
 * Up to max_slots sequences decode together, one row per sequence in every matmul; a
 * finished sequence's slot is refilled at once from the waiting samples. A sample's tokens
 * depend only on its request's seed, the model and the sampling parameters: every kernel on
 * the decode path computes each row independently of the others. The engine is written once
 * over a model placed on any backend (or1_dmodel): the backend supplies only kernels and
 * memory, the scheduling here is the same on a CPU and a GPU. */
#ifndef OR1_ROLLOUT_H
#define OR1_ROLLOUT_H

#include <stdbool.h>
#include <stdint.h>

#include "or1/model.h"

typedef struct {
    float temperature; /* 0: greedy */
    float top_p;       /* 1: off */
    int top_k;         /* 0: off */
    int max_new_tokens;
    uint64_t seed; /* the request's seed; sample j draws from stream j */
    const int32_t *stop_ids; /* stop tokens besides the model's EOS ids (kept in the output) */
    int n_stop;
} or1_sampling;

/* Sample j of a request draws its t-th token from stream first_stream + j of the seed, at
 * counter first_counter + t (both 0: stream j, counters from 0). A continuation of a cut
 * sample (prompt = the original prompt + its n tokens so far, one sample, first_stream = the
 * original sample's index, first_counter = n, max_new_tokens = what is left) so draws exactly
 * the tokens the uninterrupted sample would have drawn under the same weights. */
typedef struct {
    const int32_t *prompt;
    int n_prompt, n_samples;
    or1_sampling s;
    int first_stream, first_counter;
} or1_request;

typedef struct {
    int32_t *ids;    /* generated tokens, the stop token included */
    float *logprobs; /* log-prob of each generated token at the request's temperature, before
                        top-p/top-k truncation (greedy: at temperature 1); 0 for a tool's token */
    uint8_t *mask;   /* with tools: 1 for each sampled token, 0 for each a tool's reply appended;
                        NULL without tools */
    int n;
    int tool_calls; /* tool calls the sample made */
    bool stopped;   /* finish reason: true = stop token, false = length */
    int switch_at;  /* the first token sampled after a weight switch's apply (or1_weight_switch);
                       n where the sample never crossed one (every sample without a switch) */
} or1_completion;

/* A tool's reply to a sample's call: tokens to append to the sample (prefilled, not sampled). */
typedef struct {
    int request, sample;
    const int32_t *ids;
    int n;
} or1_tool_reply;

/* Tool-integrated rollouts: the engine asks `call` after every sampled token that does not end
 * the sample whether its tokens now end a tool call; when they do, the hook has started the call
 * (it returns 1) and the sample waits, its decode slot given to another sample while its keys and
 * values stay in the pool. `collect` hands over finished calls (waiting up to wait_s seconds for
 * the first when wait_s > 0; the replies' ids stay valid until the next collect); each reply's
 * tokens are appended to its sample, run through the model in one pass with the next decode step
 * (an extend: the new rows attend to the sample's pool rows and to each other), and the sample
 * goes on sampling until it stops, calls again or reaches max_new_tokens, tool tokens included.
 * Both return -1 on error. */
typedef struct {
    int (*call)(void *ctx, int request, int sample, const int32_t *ids, int n);
    int (*collect)(void *ctx, double wait_s, or1_tool_reply *out, int max);
    void *ctx;
} or1_tool_hooks;

/* A weight update in the middle of a rollout, at a token count (never a time, so that a run
 * is reproducible): every sample's first `after` tokens are sampled under the weights the
 * model holds at the call; then apply(ctx) replaces them (it may block), once, even when every
 * sample ended before; then each sample not yet ended goes on under the new weights, drawing
 * from the same counters. How it goes on:
 * - keep_kv false (AReaL's way, or1_rollout_score's two-part path): its prompt and tokens so
 *   far are run through the model again (its keys and values recomputed), as a continuation
 *   request (or1_request's first_stream, first_counter), so every log-prob is that of the
 *   weights that sampled the token;
 * - keep_kv true (NeMo-RL's recompute_kv_cache_after_weight_updates: false, Magistral's; done
 *   inside one or1_generate, or1_engine_cfg.sw): a sample that has drawn `after` tokens parks
 *   with its keys and values; once no sample can run, apply is called and the parked samples go
 *   on, their new tokens attending to the keys and values the old weights wrote (a log-prob of
 *   neither policy; a parked sample whose blocks were taken back feeds its tokens again under
 *   the new weights). Samples not admitted before the switch start under the new weights.
 * apply returns 0, or -1 on error. */
typedef struct {
    int after;
    int (*apply)(void *ctx);
    void *ctx;
    bool keep_kv; /* false (zero-initialised): recompute */
} or1_weight_switch;

/* What a run of the engine did, for reports. */
typedef struct {
    int slots;         /* sequences decoded together */
    int blocks;        /* KV pool blocks (of block_rows rows each) */
    int block_rows;
    long preemptions;  /* sequences whose blocks were taken back, to be run through again later */
    long tool_calls;
} or1_engine_stats;

/* The engine's options, one row each: the trainer's config key, the flag of generate, eval and
 * difficulty, the field, its type, default, bounds and meaning. */
#define OR1_ENGINE_OPTIONS(X)                                                                                 \
    X("rollout.max_slots", "max-slots", max_slots, int, 256, 1, 65536,                                        \
      "sequences decoded together (continuous batching)")                                                     \
    X("rollout.kv_cache_gb", "kv-cache-gb", kv_cache_gb, double, 8, 1e-6, 1e6, "KV cache budget, GiB")        \
    X("rollout.prefill_chunk", "prefill-chunk", prefill_chunk, int, 0, 0, 1073741824,                         \
      "a prompt longer than this many tokens is prefilled in pieces of this many through the decode path, "   \
      "the same bits in a workspace of one piece (0: whole)")
#define OR1_ENGINE_FIELD(key, flag, field, type, def, lo, hi, help) type field;

typedef struct {
    OR1_ENGINE_OPTIONS(OR1_ENGINE_FIELD) /* 0 or less: the table's default (256 slots, 8 GiB, no pieces) */
} or1_engine_opts;

typedef struct {
    or1_engine_opts opts;
    /* Called as each sample finishes (from the calling thread), e.g. to stream output. */
    void (*on_done)(void *ctx, int request, int sample, const or1_completion *c);
    void *ctx;
    bool progress; /* a progress bar on stderr */
    or1_engine_stats *stats; /* filled in when not NULL */
    const or1_tool_hooks *tools; /* NULL: single-turn */
    const or1_weight_switch *sw; /* NULL: none; else a keep_kv switch (not with tools) */
} or1_engine_cfg;

/* Generates every sample of every request into out[offset(i) + j] (request-major, where
 * offset(i) is the sum of n_samples before i); out arrays are allocated here (free with
 * or1_completions_free). Fails before any work if a request cannot fit the KV budget. */
int or1_generate(or1_dmodel *dm, const or1_request *reqs, int n, const or1_engine_cfg *cfg,
                 or1_completion *out);
void or1_completions_free(or1_completion *c, int n);
/* The tokens of c the model sampled (its mask's ones; all n without tools). */
int or1_completion_sampled(const or1_completion *c);

/* True if tok ends a sample: one of the model's EOS ids or of the request's stop ids. */
bool or1_is_stop(const or1_model_config *c, const or1_sampling *s, int32_t tok);

#endif
