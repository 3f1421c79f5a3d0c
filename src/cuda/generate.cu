/* or1_generate on the device model: one slot per sample, prompt prefilled into its slot,
 * every slot decoded together each step, finished slots refilled at once. Sampling happens
 * on the GPU; the host sees only token ids and log-probs. */
#include "internal.h"

extern "C" {
#include "or1/core.h"
}

#include <stdlib.h>
#include <string.h>

/* One decoding sequence. */
typedef struct {
    int req, sample, n_gen; /* req < 0: idle */
    or1_completion *out;
} slot;

/* Checks what the GPU sampler supports and sizes the cache: the longest prompt plus its new
 * tokens per slot, as many slots as max_slots, the samples and the KV budget allow. */
static int plan(const or1_model_config *c, const or1_request *reqs, int n, const or1_engine_cfg *cfg, long total,
                int *slots, int *cap) {
    *cap = 1;
    for (int i = 0; i < n; i++) {
        const or1_sampling *s = &reqs[i].s;
        if (s->top_p < 1 || s->top_k > 0)
            return or1_fail("generate --device cuda: request %d asks for top-p/top-k; the GPU sampler does "
                            "temperature or greedy sampling only", i);
        if (s->temperature != reqs[0].s.temperature)
            return or1_fail("generate --device cuda: requests 0 and %d differ in temperature", i);
        if (reqs[i].n_prompt < 1) return or1_fail("generate --device cuda: request %d has an empty prompt", i);
        int need = reqs[i].n_prompt + s->max_new_tokens;
        if (need > *cap) *cap = need;
    }
    if (*cap > c->max_pos)
        return or1_fail("generate --device cuda: %d tokens exceed max_position_embeddings %d", *cap, c->max_pos);
    double budget = (cfg->kv_cache_gb > 0 ? cfg->kv_cache_gb : 8.0) * 1073741824.0;
    double per_slot = 4.0 * c->layers * 2.0 * *cap * c->kv_heads * c->head_dim;
    long s = cfg->max_slots > 0 ? cfg->max_slots : 64;
    if (s > total) s = total;
    if (s > (long)(budget / per_slot)) s = (long)(budget / per_slot);
    if (s < 1)
        return or1_fail("generate --device cuda: one %d-token sequence needs %.3g GiB of KV cache, over the "
                        "%.3g GiB budget", *cap, per_slot / 1073741824.0, budget / 1073741824.0);
    *slots = (int)s;
    return 0;
}

/* Puts sample (r, j) into slot b: prefills all but the last prompt token, which the next
 * decode step feeds. */
static int admit(or1_cuda_model *dm, slot *sl, int b, const or1_request *r, int ri, int j, or1_completion *out,
                 int32_t *tok) {
    sl->req = ri, sl->sample = j, sl->n_gen = 0, sl->out = out;
    out->ids = (int32_t *)or1_malloc((size_t)r->s.max_new_tokens * sizeof(int32_t));
    out->logprobs = (float *)or1_malloc((size_t)r->s.max_new_tokens * sizeof(float));
    out->n = 0, out->stopped = false;
    *tok = r->prompt[r->n_prompt - 1];
    if (r->n_prompt == 1) {
        or1_cuda_model_slot_reset(dm, b);
        return 0;
    }
    return or1_cuda_model_prefill(dm, b, r->prompt, r->n_prompt - 1);
}

/* Admit into free slots, decode all slots, append, finish on stop or length, repeat. */
int or1_cuda_generate(or1_cuda_model *dm, const or1_request *reqs, int n, const or1_engine_cfg *cfg,
                      or1_completion *out) {
    const or1_model_config *c = or1_cuda_model_config(dm);
    long total = 0;
    for (int i = 0; i < n; i++) total += reqs[i].n_samples;
    int B = 0, cap = 0;
    if (total == 0) return 0;
    if (plan(c, reqs, n, cfg, total, &B, &cap) || or1_cuda_model_kv(dm, B, cap)) return -1;
    slot *sl = (slot *)or1_calloc((size_t)B, sizeof *sl);
    int32_t *tok = (int32_t *)or1_calloc((size_t)B, sizeof(int32_t)), *next = (int32_t *)or1_calloc((size_t)B, 4);
    int32_t *streams = (int32_t *)or1_calloc((size_t)B, 4), *counters = (int32_t *)or1_calloc((size_t)B, 4);
    uint64_t *seeds = (uint64_t *)or1_calloc((size_t)B, sizeof(uint64_t));
    float *lp = (float *)or1_calloc((size_t)B, sizeof(float));
    int rc = 0, next_req = 0, next_sample = 0;
    long done = 0, offset = 0;
    for (int b = 0; b < B; b++) sl[b].req = -1;
    while (rc == 0 && done < total) {
        for (int b = 0; b < B && rc == 0; b++) {
            if (sl[b].req >= 0) continue;
            while (next_req < n && next_sample >= reqs[next_req].n_samples)
                offset += reqs[next_req].n_samples, next_req++, next_sample = 0;
            if (next_req < n) {
                rc = admit(dm, &sl[b], b, &reqs[next_req], next_req, next_sample, &out[offset + next_sample], &tok[b]);
                next_sample++;
            } else {
                or1_cuda_model_slot_reset(dm, b); /* idle: decodes a dummy token at position 0 */
                tok[b] = 0;
            }
        }
        for (int b = 0; b < B; b++) {
            const or1_request *r = sl[b].req >= 0 ? &reqs[sl[b].req] : NULL;
            seeds[b] = r ? r->s.seed : 0, streams[b] = r ? sl[b].sample : 0, counters[b] = r ? sl[b].n_gen : 0;
        }
        if (rc == 0) rc = or1_cuda_model_decode(dm, tok, reqs[0].s.temperature, seeds, streams, counters, next, lp);
        for (int b = 0; b < B && rc == 0; b++) {
            slot *s = &sl[b];
            if (s->req < 0) continue;
            const or1_request *r = &reqs[s->req];
            s->out->ids[s->n_gen] = next[b], s->out->logprobs[s->n_gen] = lp[b];
            s->n_gen++;
            tok[b] = next[b];
            bool stop = or1_is_stop(c, &r->s, next[b]);
            if (!stop && s->n_gen < r->s.max_new_tokens) continue;
            s->out->n = s->n_gen, s->out->stopped = stop;
            if (cfg->on_done) cfg->on_done(cfg->ctx, s->req, s->sample, s->out);
            s->req = -1, done++;
        }
    }
    free(sl), free(tok), free(next), free(streams), free(counters), free(seeds), free(lp);
    return rc ? -1 : 0;
}
