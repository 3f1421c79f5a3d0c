/* The decoder on the CUDA backend against the same decoder on the CPU backend (one model
 * API, or1_dmodel, over both) on random weights: log-probs, entropies and every parameter's
 * gradient for a packed batch of three sequences, one AdamW step, and the rollout engine
 * (shared prompts, continuous batching; each sampled token's log-prob against the CPU head
 * over the whole sequence, and greedy tokens against the CPU's argmax), samples paused on a
 * tool call and extended with its reply, and the GPU sampler's top-k / top-p truncation).
 * Tolerances, on errors scaled by each tensor's largest magnitude:
 *   fp32: log-probs / entropies 1e-4, gradients 1e-3, AdamW parameters 1e-5, decode 1e-4;
 *   bf16 matmuls: log-probs / entropies 3e-2, gradients 1e-1 (8-bit mantissas through
 *   two layers; the bf16 check shows the path runs and stays close, fp32 shows it is right).
 * Exits 77 (ctest's skip) when no GPU is visible. */
#include "common.h"

#include "or1/kernels.h"
#include "or1/model.h"
#include "or1/rollout.h"

/* A small Qwen2 (q/k/v biases, untied, YaRN RoPE scaling), Llama (o_proj bias, tied embeddings,
 * Llama 3.1 RoPE scaling) or Qwen3 (q/k norms, head_dim apart from hidden / heads, tied) config;
 * the scalings' original contexts are short enough for these sequences to cross their bands. */
static or1_model_config tiny(or1_arch arch) {
    or1_model_config c;
    memset(&c, 0, sizeof c);
    c.arch = arch;
    c.hidden = 64, c.intermediate = 128, c.layers = 2, c.heads = 4, c.kv_heads = 2, c.head_dim = 16;
    c.vocab = 300, c.max_pos = 256, c.rms_eps = 1e-6f, c.rope_theta = 10000.0f;
    c.tied = arch != OR1_ARCH_QWEN2, c.qkv_bias = arch == OR1_ARCH_QWEN2, c.o_bias = arch == OR1_ARCH_LLAMA;
    c.qk_norm = arch == OR1_ARCH_QWEN3;
    if (c.qk_norm) c.head_dim = 24;
    if (arch == OR1_ARCH_LLAMA)
        c.rope = (or1_rope_scaling){.type = OR1_ROPE_LLAMA3, .factor = 8, .low_freq_factor = 1,
                                    .high_freq_factor = 4, .original_max_pos = 16};
    if (arch == OR1_ARCH_QWEN2)
        c.rope = (or1_rope_scaling){.type = OR1_ROPE_YARN, .factor = 4, .beta_fast = 32, .beta_slow = 1,
                                    .truncate = true, .original_max_pos = 16};
    return c;
}

/* Three sequences of random ids with their prompt lengths. */
static int32_t seq_ids[3][40];
static const int seq_len[3] = {17, 40, 9}, seq_prompt[3] = {5, 10, 3};

static void make_batch(or1_batch *b, int vocab) {
    or1_seq seqs[3];
    for (int s = 0; s < 3; s++) {
        for (int t = 0; t < seq_len[s]; t++)
            seq_ids[s][t] = (int32_t)(or1_rand_u64(7, (uint64_t)s, (uint64_t)t) % vocab);
        seqs[s] = (or1_seq){.ids = seq_ids[s], .n = seq_len[s], .n_prompt = seq_prompt[s]};
    }
    or1_batch_pack(b, seqs, 3);
}

/* A second host model holding m's parameters (the GPU side's mirror). */
static void twin_model(or1_model *mg, const or1_model *m) {
    or1_model_init(mg, &m->cfg);
    memcpy(mg->params, m->params, m->n_floats * sizeof(float));
}

/* One random model on the CPU backend and a copy of it on the GPU backend. */
typedef struct {
    or1_model m, mg;
    or1_backend *cpu, *gpu;
    or1_dmodel *dc, *dg; /* dg NULL when the GPU cannot be opened */
} pair;

/* Randomises a model for c (seed) and places it on both backends (the GPU's in prec). */
static void pair_open(pair *p, const or1_model_config *c, uint64_t seed, or1_cuda_prec prec) {
    or1_model_init(&p->m, c);
    or1_model_randomize(&p->m, seed, 0.1f);
    twin_model(&p->mg, &p->m);
    p->cpu = or1_backend_cpu();
    p->gpu = or1_backend_cuda(prec);
    p->dc = or1_dmodel_new(p->cpu, &p->m);
    p->dg = p->gpu ? or1_dmodel_new(p->gpu, &p->mg) : NULL;
}

/* Frees both placements, both backends and both host models. */
static void pair_close(pair *p) {
    or1_dmodel_free(p->dg);
    or1_dmodel_free(p->dc);
    or1_backend_free(p->gpu);
    or1_backend_free(p->cpu);
    or1_model_free(&p->m);
    or1_model_free(&p->mg);
}

/* Forward, head and backward on both backends; compares outputs and every parameter's grad. */
static void check_grads(const or1_model_config *c, or1_cuda_prec prec, double tol_lp, double tol_g, const char *tag) {
    pair P;
    pair_open(&P, c, 11, prec);
    or1_model *mp = &P.m, *mgp = &P.mg;
    or1_dmodel *dc = P.dc, *dg = P.dg;
    or1_batch b;
    make_batch(&b, c->vocab);
    int S = b.n_scored;
    float *lp = or1_alloc_floats((size_t)2 * S), *ent = lp + S;
    float *glp = rand_floats(S, 90, 1), *gH = rand_floats(S, 91, 1);
    float *lp_g = or1_alloc_floats((size_t)2 * S), *ent_g = lp_g + S;
    bool cpu_ran = dc && !or1_dmodel_forward(dc, &b, true) && !or1_dmodel_head(dc, &b, 0.9f, lp, ent) &&
                   !or1_dmodel_backward(dc, &b, 0.9f, glp, gH);
    bool ran = dg && !or1_dmodel_forward(dg, &b, true) && !or1_dmodel_head(dg, &b, 0.9f, lp_g, ent_g) &&
               !or1_dmodel_backward(dg, &b, 0.9f, glp, gH) && !or1_dmodel_pull_grads(dg);
    if (CHECK(cpu_ran && ran, "%s: %s", tag, or1_error())) {
        char name[160];
        snprintf(name, sizeof name, "%s logp", tag);
        expect_close(name, lp_g, lp, S, tol_lp);
        snprintf(name, sizeof name, "%s entropy", tag);
        expect_close(name, ent_g, ent, S, tol_lp);
        for (int i = 0; i < mp->n_p; i++) {
            const or1_param *p = &mp->p[i];
            snprintf(name, sizeof name, "%s grad %s", tag, p->name);
            expect_close(name, mgp->grads + p->offset, mp->grads + p->offset, p->numel, tol_g);
        }
    }
    pair_close(&P);
    or1_batch_free(&b);
    free(lp), free(glp), free(gH), free(lp_g);
}

/* One clipped AdamW step on both backends from the same gradients. */
static void check_step(const or1_model_config *c) {
    pair P;
    pair_open(&P, c, 12, OR1_CUDA_FP32);
    or1_model *mp = &P.m, *mgp = &P.mg;
    or1_dmodel *dc = P.dc, *dg = P.dg;
    float *gr = rand_floats(mp->n_floats, 92, 1);
    memcpy(or1_model_grads(mp), gr, mp->n_floats * sizeof(float));
    memcpy(or1_model_grads(mgp), gr, mp->n_floats * sizeof(float));
    or1_adamw_cfg ac = {.lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f};
    or1_adamw o, og;
    or1_adamw_init(&o, mp->n_floats);
    or1_adamw_init(&og, mp->n_floats);
    double want = 0, norm = 0;
    bool cpu_ran = dc && !or1_dmodel_step(dc, &o, &ac, 1.0, &want);
    bool ran = dg && !or1_dmodel_push_grads(dg) && !or1_dmodel_step(dg, &og, &ac, 1.0, &norm) && !or1_dmodel_pull(dg);
    if (CHECK(cpu_ran && ran, "adamw step: %s", or1_error())) {
        CHECK(near(norm, want, 0, 1e-9), "model grad norm %.12g vs CPU %.12g", norm, want);
        expect_close("model adamw step (clipped)", mgp->params, mp->params, mp->n_floats, 1e-5);
        expect_close("model adamw moments", og.v, o.v, mp->n_floats, 1e-5);
    }
    pair_close(&P);
    or1_adamw_free(&o);
    or1_adamw_free(&og);
    free(gr);
}

/* The rollout engine on the GPU: three prompts (one of a single token) with two samples each
 * through two slots, so prompts are shared and slots refilled; then each sample's whole
 * sequence is scored on the CPU: log-probs must match, greedy tokens must be the argmax. */
static void check_generate(const or1_model_config *c, float temperature) {
    enum { REQS = 3, M = 2, STEPS = 6 };
    pair P;
    pair_open(&P, c, 13, OR1_CUDA_FP32);
    or1_dmodel *dc = P.dc, *dg = P.dg;
    int32_t prompts[REQS][16];
    int np[REQS] = {4, 11, 1};
    or1_request reqs[REQS];
    for (int r = 0; r < REQS; r++) {
        for (int t = 0; t < np[r]; t++) prompts[r][t] = (int32_t)(or1_rand_u64(8, (uint64_t)r, (uint64_t)t) % c->vocab);
        reqs[r] = (or1_request){.prompt = prompts[r], .n_prompt = np[r], .n_samples = M,
                                .s = {.temperature = temperature, .top_p = 1.0f, .top_k = 0,
                                      .max_new_tokens = STEPS, .seed = (uint64_t)(5 + r), .stop_ids = NULL, .n_stop = 0},
                                .first_stream = 0, .first_counter = 0};
    }
    or1_completion out[REQS * M];
    memset(out, 0, sizeof out);
    or1_engine_cfg ec = {.opts = {.max_slots = 2, .kv_cache_gb = 1}};
    or1_completion cpu_out[REQS * M];
    memset(cpu_out, 0, sizeof cpu_out);
    int rc = !dg || or1_generate(dg, reqs, REQS, &ec, out) || or1_generate(dc, reqs, REQS, &ec, cpu_out);
    char name[96];
    CHECK(!rc, "generate: %s", or1_error());
    float t_cpu = temperature > 0 ? temperature : 1.0f;
    for (int k = 0; k < REQS * M && !rc; k++) {
        int r = k / M, n = out[k].n;
        int32_t seq[32];
        memcpy(seq, prompts[r], (size_t)np[r] * sizeof *seq);
        memcpy(seq + np[r], out[k].ids, (size_t)n * sizeof *seq);
        or1_seq q = {.ids = seq, .n = np[r] + n, .n_prompt = np[r]};
        or1_batch b;
        or1_batch_pack(&b, &q, 1);
        float want[STEPS], went[STEPS];
        bool ok = !or1_dmodel_forward(dc, &b, false) && !or1_dmodel_head(dc, &b, t_cpu, want, went);
        snprintf(name, sizeof name, "generate logp request %d sample %d T=%.1f", r, k % M, temperature);
        if (CHECK(ok, "%s: %s", name, or1_error())) expect_close(name, out[k].logprobs, want, (size_t)n, 1e-4);
        if (temperature == 0 && ok) {
            /* greedy: the same tokens as the CPU engine, until a near-tie (equal log-probs) */
            for (int s = 0; s < n && s < cpu_out[k].n; s++) {
                int32_t got = out[k].ids[s], cpu_tok = cpu_out[k].ids[s];
                CHECK(got == cpu_tok || fabsf(out[k].logprobs[s] - cpu_out[k].logprobs[s]) < 1e-4f,
                      "greedy request %d sample %d step %d: token %d, CPU engine %d", r, k % M, s, got, cpu_tok);
                if (got != cpu_tok) break;
            }
        }
        or1_batch_free(&b);
    }
    or1_completions_free(out, REQS * M);
    or1_completions_free(cpu_out, REQS * M);
    pair_close(&P);
}

/* Tool hooks for check_tools: a call after a sample's second token, answered at the next
 * collection by 20 ids (more than a step's rows, so the reply is fed over several steps). */
enum { TOOL_SAMPLES = 4, TOOL_REPLY = 20 };
typedef struct {
    int pending[TOOL_SAMPLES][2], n_pending;
    int32_t ids[TOOL_REPLY];
} tool_ctx;

/* A call when the sample holds exactly two tokens (its first two draws). */
static int tool_call(void *p, int req, int sample, const int32_t *ids, int n) {
    tool_ctx *t = p;
    (void)ids;
    if (n != 2) return 0;
    t->pending[t->n_pending][0] = req, t->pending[t->n_pending][1] = sample;
    t->n_pending++;
    return 1;
}

/* Every pending call's reply. */
static int tool_collect(void *p, double wait_s, or1_tool_reply *out, int max) {
    tool_ctx *t = p;
    (void)wait_s;
    int k = 0;
    for (; k < t->n_pending && k < max; k++)
        out[k] = (or1_tool_reply){.request = t->pending[k][0], .sample = t->pending[k][1], .ids = t->ids,
                                  .n = TOOL_REPLY};
    t->n_pending = 0;
    return k;
}

/* The engine with tool calls on the GPU: each sample pauses after two tokens and takes a
 * 20-token reply, fed through the paged pool in a few multi-row steps; then every sampled
 * token's log-prob (mask 1) against the CPU's forward over the whole sequence, and the replies
 * (mask 0) where they belong. */
static void check_tools(const or1_model_config *c) {
    enum { REQS = 2, M = 2, STEPS = 24 };
    pair P;
    pair_open(&P, c, 15, OR1_CUDA_FP32);
    or1_dmodel *dc = P.dc, *dg = P.dg;
    tool_ctx t = {.n_pending = 0};
    for (int i = 0; i < TOOL_REPLY; i++) t.ids[i] = (int32_t)(or1_rand_u64(12, 0, (uint64_t)i) % c->vocab);
    or1_tool_hooks hooks = {.call = tool_call, .collect = tool_collect, .ctx = &t};
    int32_t prompts[REQS][8];
    or1_request reqs[REQS];
    for (int r = 0; r < REQS; r++) {
        for (int i = 0; i < 8; i++) prompts[r][i] = (int32_t)(or1_rand_u64(10, (uint64_t)r, (uint64_t)i) % c->vocab);
        reqs[r] = (or1_request){.prompt = prompts[r], .n_prompt = 3 + 2 * r, .n_samples = M,
                                .s = {.temperature = 0.8f, .top_p = 1.0f, .top_k = 0,
                                      .max_new_tokens = STEPS, .seed = (uint64_t)r, .stop_ids = NULL, .n_stop = 0},
                                .first_stream = 0, .first_counter = 0};
    }
    or1_completion out[REQS * M];
    memset(out, 0, sizeof out);
    or1_engine_cfg ec = {.opts = {.max_slots = 2, .kv_cache_gb = 1}, .tools = &hooks};
    int rc = !dg || or1_generate(dg, reqs, REQS, &ec, out);
    CHECK(!rc, "tools: generate: %s", or1_error());
    for (int k = 0; k < REQS * M && !rc; k++) {
        int r = k / M, n = out[k].n, np = reqs[r].n_prompt;
        CHECK(out[k].tool_calls == 1 && n == STEPS && !memcmp(out[k].ids + 2, t.ids, sizeof t.ids) &&
                  !out[k].mask[2] && !out[k].mask[2 + TOOL_REPLY - 1] && out[k].mask[1] && out[k].mask[2 + TOOL_REPLY],
              "tools: request %d sample %d: %d calls, %d tokens, the reply not at tokens 2-21", r, k % M,
              out[k].tool_calls, n);
        int32_t seq[8 + STEPS];
        memcpy(seq, prompts[r], (size_t)np * sizeof *seq);
        memcpy(seq + np, out[k].ids, (size_t)n * sizeof *seq);
        or1_seq q = {.ids = seq, .n = np + n, .n_prompt = np};
        or1_batch b;
        or1_batch_pack(&b, &q, 1);
        float want[STEPS], went[STEPS], got[STEPS];
        bool ok = !or1_dmodel_forward(dc, &b, false) && !or1_dmodel_head(dc, &b, 0.8f, want, went);
        int m = 0;
        for (int s = 0; s < n; s++)
            if (out[k].mask[s]) got[m] = out[k].logprobs[s], want[m++] = want[s];
        char name[96];
        snprintf(name, sizeof name, "tools logp request %d sample %d", r, k % M);
        if (CHECK(ok, "%s: %s", name, or1_error())) expect_close(name, got, want, (size_t)m, 1e-4);
        or1_batch_free(&b);
    }
    or1_completions_free(out, REQS * M);
    pair_close(&P);
}

/* Truncation on the GPU sampler: at temperature 0.8, top-k 1 and top-p 1e-6 each leave only
 * the most likely token, so both must give the CPU engine's greedy tokens (but at near-ties). */
static void check_truncation(const or1_model_config *c) {
    enum { REQS = 2, M = 2, STEPS = 6 };
    pair P;
    pair_open(&P, c, 14, OR1_CUDA_FP32);
    or1_dmodel *dc = P.dc, *dg = P.dg;
    int32_t prompts[REQS][8];
    for (int r = 0; r < REQS; r++)
        for (int i = 0; i < 8; i++) prompts[r][i] = (int32_t)(or1_rand_u64(9, (uint64_t)r, (uint64_t)i) % c->vocab);
    or1_engine_cfg ec = {.opts = {.max_slots = 4, .kv_cache_gb = 1}};
    or1_request greedy[REQS], trunc[REQS];
    for (int cut = 0; cut < 2; cut++) {
        for (int r = 0; r < REQS; r++) {
            greedy[r] = (or1_request){.prompt = prompts[r], .n_prompt = 8, .n_samples = M,
                                      .s = {.temperature = 0.0f, .top_p = 1.0f, .top_k = 0,
                                            .max_new_tokens = STEPS, .seed = 3, .stop_ids = NULL, .n_stop = 0},
                                      .first_stream = 0, .first_counter = 0};
            trunc[r] =
                (or1_request){.prompt = prompts[r], .n_prompt = 8, .n_samples = M,
                              .s = {.temperature = 0.8f, .top_p = cut ? 1e-6f : 1.0f, .top_k = cut ? 0 : 1,
                                    .max_new_tokens = STEPS, .seed = 3, .stop_ids = NULL, .n_stop = 0},
                              .first_stream = 0, .first_counter = 0};
        }
        or1_completion want[REQS * M], got[REQS * M];
        memset(want, 0, sizeof want), memset(got, 0, sizeof got);
        int rc = !dg || or1_generate(dc, greedy, REQS, &ec, want) || or1_generate(dg, trunc, REQS, &ec, got);
        if (CHECK(!rc, "truncation %s: %s", cut ? "top-p" : "top-k", or1_error()))
            for (int k = 0; k < REQS * M; k++)
                for (int s = 0; s < got[k].n && s < want[k].n; s++) {
                    CHECK(got[k].ids[s] == want[k].ids[s], "%s sample %d step %d: token %d, greedy %d",
                          cut ? "top-p 1e-6" : "top-k 1", k, s, got[k].ids[s], want[k].ids[s]);
                    if (got[k].ids[s] != want[k].ids[s]) break;
                }
        or1_completions_free(want, REQS * M);
        or1_completions_free(got, REQS * M);
    }
    pair_close(&P);
}

int main(void) {
    require_gpu("cuda_model");
    or1_set_threads(2);
    static const or1_arch archs[] = {OR1_ARCH_QWEN2, OR1_ARCH_LLAMA, OR1_ARCH_QWEN3};
    static const char *const names[] = {"qwen2", "llama", "qwen3"};
    for (int k = 0; k < 3; k++) {
        or1_model_config c = tiny(archs[k]);
        const char *arch = names[k];
        char tag[32];
        snprintf(tag, sizeof tag, "%s fp32", arch);
        check_grads(&c, OR1_CUDA_FP32, 1e-4, 1e-3, tag);
        snprintf(tag, sizeof tag, "%s bf16", arch);
        check_grads(&c, OR1_CUDA_BF16, 3e-2, 1e-1, tag);
        check_step(&c);
        check_generate(&c, 0);
        check_generate(&c, 0.8f);
        check_truncation(&c);
        check_tools(&c);
    }
    return check_report();
}
