/* The rollout engine: prompt prefill once per request, batched decode over slots,
 * continuous refill of finished slots, per-sample counter-based sampling. */
#include "or1/core.h"
#include "or1/kernels.h"
#include "or1/rollout.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A prompt's shared KV and the hidden state that gives its first token. */
typedef struct {
    int req, refs;
    float *kv, *hidden;
} prefix;

/* One decoding sequence. */
typedef struct {
    int req, sample, prefix, n_gen; /* req < 0: free */
    or1_completion *out;
    float *kv;
} slot;

/* Everything the engine allocates once, sized from the config and the requests. */
typedef struct {
    const or1_model *m;
    const or1_request *reqs;
    int n_reqs, n_slots, n_prefix, pcap, ncap;
    size_t kvd, region_p, region_s; /* floats per prefix / sample KV region */
    prefix *pre;
    slot *slots;
    float *kv_mem;
    float *x, *xn, *rstd, *qkv, *att, *x2, *gu, *act, *logits, *cos_t, *sin_t, *scratch, *att_scratch;
    int32_t *pos, *row_slot;
    const float **kp, **vp, **ko, **vo;
    int *n_pre, *n_own;
    or1_acts *acts;
} engine;

/* Floats of KV for n tokens of every layer. */
static size_t kv_floats(const or1_model_config *c, size_t n) { return (size_t)c->layers * 2 * n * c->kv_heads * c->head_dim; }

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
    const or1_model_config *c = &e->m->cfg;
    double budget = (cfg->kv_cache_gb > 0 ? cfg->kv_cache_gb : 8.0) * 1073741824.0;
    int s = cfg->max_slots > 0 ? cfg->max_slots : 64;
    if (s > total) s = (int)total;
    for (; s >= 1; s--) {
        double bytes = 4.0 * ((double)(s + 1) * kv_floats(c, (size_t)e->pcap) + (double)s * kv_floats(c, (size_t)e->ncap));
        if (bytes <= budget) break;
    }
    if (s < 1) {
        char need[32], have[32];
        double bytes = 4.0 * (2.0 * kv_floats(c, (size_t)e->pcap) + kv_floats(c, (size_t)e->ncap));
        return or1_fail("generate: a %d-token prompt with %d new tokens needs %s of KV cache, over the %s budget",
                        e->pcap, e->ncap, human_bytes(bytes, need, sizeof need), human_bytes(budget, have, sizeof have));
    }
    e->n_slots = s;
    e->n_prefix = s + 1; /* live prompts: those of active slots plus the one being admitted */
    return 0;
}

/* Checks every request and finds the longest prompt and generation. */
static int check_requests(engine *e) {
    const or1_model_config *c = &e->m->cfg;
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
        if (r->n_prompt > e->pcap) e->pcap = r->n_prompt;
        if (r->s.max_new_tokens > e->ncap) e->ncap = r->s.max_new_tokens;
    }
    return 0;
}

/* Allocates the KV cache, slots and decode buffers in one go. */
static void engine_alloc(engine *e) {
    const or1_model_config *c = &e->m->cfg;
    size_t S = (size_t)e->n_slots, H = (size_t)c->hidden, I = (size_t)c->intermediate, V = (size_t)c->vocab;
    size_t qd = (size_t)c->heads * c->head_dim, qkvd = qd + 2 * (size_t)c->kv_heads * c->head_dim;
    int maxpos = e->pcap + e->ncap, threads = omp_get_max_threads();
    e->kvd = (size_t)c->kv_heads * c->head_dim;
    e->region_p = kv_floats(c, (size_t)e->pcap);
    e->region_s = kv_floats(c, (size_t)e->ncap);
    e->kv_mem = or1_alloc_floats((size_t)e->n_prefix * (e->region_p + H) + S * e->region_s);
    e->pre = or1_calloc((size_t)e->n_prefix, sizeof *e->pre);
    for (int i = 0; i < e->n_prefix; i++) {
        e->pre[i].req = -1;
        e->pre[i].kv = e->kv_mem + (size_t)i * e->region_p;
        e->pre[i].hidden = e->kv_mem + (size_t)e->n_prefix * e->region_p + (size_t)i * H;
    }
    e->slots = or1_calloc(S, sizeof *e->slots);
    for (size_t i = 0; i < S; i++) {
        e->slots[i].req = -1;
        e->slots[i].kv = e->kv_mem + (size_t)e->n_prefix * (e->region_p + H) + i * e->region_s;
    }
    float *p = or1_alloc_floats(S * (4 * H + 1 + qkvd + qd + 3 * I + V) + (size_t)maxpos * c->head_dim +
                                (size_t)threads * (2 * V + (size_t)maxpos));
    e->x = p, p += S * H;
    e->xn = p, p += S * H;
    e->x2 = p, p += S * H;
    e->rstd = p, p += S;
    e->qkv = p, p += S * qkvd;
    e->att = p, p += S * qd;
    e->gu = p, p += S * 2 * I;
    e->act = p, p += S * I;
    e->logits = p, p += S * V + S * H; /* the extra S*H rows hold final hidden states */
    e->cos_t = p, p += (size_t)maxpos * c->head_dim / 2;
    e->sin_t = p, p += (size_t)maxpos * c->head_dim / 2;
    e->scratch = p, p += (size_t)threads * 2 * V;
    e->att_scratch = p; /* maxpos scores per thread for decode attention */
    or1_rope_table(e->cos_t, e->sin_t, maxpos, c->head_dim, c->rope_theta);
    e->pos = or1_malloc(2 * S * sizeof(int32_t));
    e->row_slot = e->pos + S;
    e->kp = or1_malloc(4 * S * sizeof(float *));
    e->vp = e->kp + S, e->ko = e->vp + S, e->vo = e->ko + S;
    e->n_pre = or1_malloc(2 * S * sizeof(int));
    e->n_own = e->n_pre + S;
    e->acts = or1_acts_new(c, e->pcap, e->pcap, false);
}

/* Frees what engine_alloc made. */
static void engine_free(engine *e) {
    free(e->kv_mem);
    free(e->pre);
    free(e->slots);
    free(e->x);
    free(e->pos);
    free(e->kp);
    free(e->n_pre);
    or1_acts_free(e->acts);
}

/* Prefills request i's prompt alone (so its KV never depends on what else runs) into a free
 * prefix region; returns the region. */
static int acquire_prefix(engine *e, int req) {
    for (int i = 0; i < e->n_prefix; i++)
        if (e->pre[i].req == req) return i;
    int k = 0;
    while (e->pre[k].req >= 0) k++;
    const or1_request *r = &e->reqs[req];
    or1_seq seq = {r->prompt, r->n_prompt, r->n_prompt};
    or1_batch b;
    or1_batch_pack(&b, &seq, 1);
    or1_prefill(e->m, e->acts, &b, e->pre[k].kv, e->pcap);
    memcpy(e->pre[k].hidden, or1_acts_hidden(e->acts, r->n_prompt - 1), (size_t)e->m->cfg.hidden * sizeof(float));
    or1_batch_free(&b);
    e->pre[k].req = req;
    e->pre[k].refs = r->n_samples;
    return k;
}

/* Pointer to layer l's keys (values follow at +cap*kvd) in a region of capacity cap. */
static float *kv_layer(float *region, int l, int cap, size_t kvd) { return region + (size_t)l * 2 * cap * kvd; }

/* One transformer layer for the decode rows; writes each row's new key and value first. */
static void decode_layer(engine *e, int l, int R) {
    const or1_model_config *c = &e->m->cfg;
    const or1_layer *w = &e->m->w.layer[l];
    int H = c->hidden, I = c->intermediate, hd = c->head_dim, qd = c->heads * hd, qkvd = qd + 2 * (int)e->kvd;
    or1_rmsnorm(e->xn, e->rstd, e->x, w->ln1, R, H, c->rms_eps);
    or1_matmul_rows(e->qkv, e->xn, w->wqkv, w->bqkv, R, H, qkvd);
    or1_rope(e->qkv, qkvd, c->heads + c->kv_heads, hd, e->pos, R, e->cos_t, e->sin_t, 0);
    for (int r = 0; r < R; r++) {
        slot *s = &e->slots[e->row_slot[r]];
        float *k = kv_layer(s->kv, l, e->ncap, e->kvd), *pk = kv_layer(e->pre[s->prefix].kv, l, e->pcap, e->kvd);
        memcpy(k + (size_t)(s->n_gen - 1) * e->kvd, e->qkv + (size_t)r * qkvd + qd, e->kvd * sizeof(float));
        memcpy(k + (size_t)(e->ncap + s->n_gen - 1) * e->kvd, e->qkv + (size_t)r * qkvd + qd + e->kvd, e->kvd * sizeof(float));
        e->kp[r] = pk, e->vp[r] = pk + (size_t)e->pcap * e->kvd, e->ko[r] = k, e->vo[r] = k + (size_t)e->ncap * e->kvd;
        e->n_pre[r] = e->reqs[s->req].n_prompt, e->n_own[r] = s->n_gen;
    }
    or1_attention_decode(e->att, e->qkv, R, e->kp, e->vp, e->n_pre, e->ko, e->vo, e->n_own, c->heads, c->kv_heads, hd,
                         e->att_scratch, e->pcap + e->ncap);
    or1_matmul_rows(e->x2, e->att, w->wo, w->bo, R, qd, H);
    for (size_t i = 0; i < (size_t)R * H; i++) e->x2[i] += e->x[i];
    or1_rmsnorm(e->xn, e->rstd, e->x2, w->ln2, R, H, c->rms_eps);
    or1_matmul_rows(e->gu, e->xn, w->wgu, NULL, R, H, 2 * I);
    or1_swiglu(e->act, e->gu, R, I);
    or1_matmul_rows(e->x, e->act, w->wd, NULL, R, I, H);
    for (size_t i = 0; i < (size_t)R * H; i++) e->x[i] += e->x2[i];
}

/* Runs every active slot with at least one generated token through the model and leaves
 * each active slot's final hidden state in its row of hid (first tokens: the prompt's). */
static void decode_step(engine *e, float *hid) {
    const or1_model_config *c = &e->m->cfg;
    int H = c->hidden, R = 0;
    for (int i = 0; i < e->n_slots; i++) {
        slot *s = &e->slots[i];
        if (s->req < 0 || s->n_gen == 0) continue;
        e->row_slot[R] = i;
        e->pos[R] = e->reqs[s->req].n_prompt + s->n_gen - 1;
        memcpy(e->x + (size_t)R * H, e->m->w.embed + (size_t)s->out->ids[s->n_gen - 1] * H, (size_t)H * sizeof(float));
        R++;
    }
    if (R > 0) {
        for (int l = 0; l < c->layers; l++) decode_layer(e, l, R);
        or1_rmsnorm(e->xn, e->rstd, e->x, e->m->w.norm, R, H, c->rms_eps);
    }
    for (int r = 0; r < R; r++) memcpy(hid + (size_t)e->row_slot[r] * H, e->xn + (size_t)r * H, (size_t)H * sizeof(float));
    for (int i = 0; i < e->n_slots; i++)
        if (e->slots[i].req >= 0 && e->slots[i].n_gen == 0)
            memcpy(hid + (size_t)i * H, e->pre[e->slots[i].prefix].hidden, (size_t)H * sizeof(float));
}

/* A model EOS id or one of the request's stop ids. */
bool or1_is_stop(const or1_model_config *c, const or1_sampling *s, int32_t tok) {
    for (int i = 0; i < c->n_eos; i++)
        if (c->eos[i] == tok) return true;
    for (int i = 0; i < s->n_stop; i++)
        if (s->stop_ids[i] == tok) return true;
    return false;
}

/* Samples the next token of every active slot (in parallel; each from its own counters).
 * Logits are computed for the active rows only, gathered into e->x2. */
static void sample_all(engine *e, const float *hid) {
    const or1_model_config *c = &e->m->cfg;
    int V = c->vocab, H = c->hidden, A = 0;
    for (int i = 0; i < e->n_slots; i++)
        if (e->slots[i].req >= 0) {
            memcpy(e->x2 + (size_t)A * H, hid + (size_t)i * H, (size_t)H * sizeof(float));
            e->row_slot[A++] = i;
        }
    or1_matmul_rows(e->logits, e->x2, e->m->w.lm_head, NULL, A, H, V);
    #pragma omp parallel for schedule(dynamic, 1)
    for (int a = 0; a < A; a++) {
        slot *s = &e->slots[e->row_slot[a]];
        const or1_sampling *sp = &e->reqs[s->req].s;
        double u = or1_rand_uniform(sp->seed, (uint64_t)s->sample, (uint64_t)s->n_gen);
        float *scratch = e->scratch + (size_t)omp_get_thread_num() * 2 * V;
        s->out->ids[s->n_gen] = or1_sample_token(e->logits + (size_t)a * V, V, sp, u, &s->out->logprobs[s->n_gen], scratch);
        s->n_gen++;
    }
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
        bool stop = or1_is_stop(&e->m->cfg, &r->s, s->out->ids[s->n_gen - 1]);
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

/* The continuous-batching loop: admit waiting samples into free slots, decode, sample, retire. */
static void run(engine *e, const or1_engine_cfg *cfg, or1_completion *out, long total) {
    int next_req = 0, next_sample = 0;
    long done = 0, tokens = 0, offset = 0;
    double t0 = or1_now();
    bool bar = cfg->progress && isatty(2);
    float *hid = e->logits + (size_t)e->n_slots * e->m->cfg.vocab;
    while (done < total) {
        for (int i = 0; i < e->n_slots && next_req < e->n_reqs; i++) {
            slot *s = &e->slots[i];
            if (s->req >= 0) continue;
            *s = (slot){next_req, next_sample, acquire_prefix(e, next_req), 0, &out[offset + next_sample], s->kv};
            if (++next_sample == e->reqs[next_req].n_samples) offset += next_sample, next_sample = 0, next_req++;
        }
        decode_step(e, hid);
        sample_all(e, hid);
        done += retire(e, cfg, &tokens);
        if (bar) progress(done, total, tokens, t0);
    }
    if (bar) fputc('\n', stderr);
}

/* Validates, sizes the cache, allocates outputs and runs the engine. */
int or1_generate(const or1_model *m, const or1_request *reqs, int n, const or1_engine_cfg *cfg, or1_completion *out) {
    engine e = {.m = m, .reqs = reqs, .n_reqs = n};
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
        }
    engine_alloc(&e);
    run(&e, cfg, out, total);
    engine_free(&e);
    return 0;
}

/* Frees the arrays of n completions. */
void or1_completions_free(or1_completion *c, int n) {
    for (int i = 0; i < n; i++) {
        free(c[i].ids);
        free(c[i].logprobs);
    }
}
