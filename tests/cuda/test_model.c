/* The device model against the CPU model on random weights: log-probs, entropies and every
 * parameter's gradient for a packed batch of three sequences, one AdamW step, and decode
 * (prefill + batched steps; each sampled token's log-prob against the CPU head over the
 * whole sequence, and greedy tokens against the CPU's argmax).
 * Tolerances, on errors scaled by each tensor's largest magnitude:
 *   fp32: log-probs / entropies 1e-4, gradients 1e-3, AdamW parameters 1e-5, decode 1e-4;
 *   bf16 matmuls: log-probs / entropies 3e-2, gradients 1e-1 (8-bit mantissas through
 *   two layers; the bf16 check shows the path runs and stays close, fp32 shows it is right).
 * Exits 77 (ctest's skip) when no GPU is visible. */
#include "common.h"

#include "or1/kernels.h"
#include "or1/model.h"

/* A small Qwen2 (q/k/v biases, untied) or Llama (o_proj bias, tied embeddings) config. */
static or1_model_config tiny(bool llama) {
    or1_model_config c;
    memset(&c, 0, sizeof c);
    c.arch = llama ? OR1_ARCH_LLAMA : OR1_ARCH_QWEN2;
    c.hidden = 64, c.intermediate = 128, c.layers = 2, c.heads = 4, c.kv_heads = 2, c.head_dim = 16;
    c.vocab = 300, c.max_pos = 256, c.rms_eps = 1e-6f, c.rope_theta = 10000.0f;
    c.tied = llama, c.qkv_bias = !llama, c.o_bias = llama;
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
        seqs[s] = (or1_seq){seq_ids[s], seq_len[s], seq_prompt[s]};
    }
    or1_batch_pack(b, seqs, 3);
}

/* Forward, head and backward on both backends; compares outputs and every parameter's grad. */
static void check_grads(const or1_model_config *c, or1_cuda_prec prec, double tol_lp, double tol_g, const char *tag) {
    or1_cuda *g = or1_cuda_new(prec);
    or1_model m, mg;
    or1_model_init(&m, c);
    or1_model_init(&mg, c);
    or1_model_randomize(&m, 11, 0.1f);
    or1_batch b;
    make_batch(&b, c->vocab);
    int S = b.n_scored;
    float *lp = or1_alloc_floats((size_t)2 * S), *ent = lp + S;
    float *glp = rand_floats(S, 90, 1), *gH = rand_floats(S, 91, 1);
    float *lp_g = or1_alloc_floats((size_t)2 * S), *ent_g = lp_g + S;
    or1_acts *a = or1_acts_new(c, b.n_tokens, b.max_len, true);
    or1_forward(&m, a, &b, true);
    or1_head_forward(&m, a, &b, 0.9f, lp, ent);
    or1_backward(&m, a, &b, 0.9f, glp, gH);
    or1_cuda_model *dm = g ? or1_cuda_model_new(g, &m) : NULL;
    bool ran = dm && !or1_cuda_model_forward(dm, &b, true) && !or1_cuda_model_head(dm, &b, 0.9f, lp_g, ent_g) &&
               !or1_cuda_model_backward(dm, &b, 0.9f, glp, gH) && !or1_cuda_model_download(dm, &mg);
    if (CHECK(ran, "%s: %s", tag, or1_error())) {
        char name[160];
        snprintf(name, sizeof name, "%s logp", tag);
        expect_close(name, lp_g, lp, S, tol_lp);
        snprintf(name, sizeof name, "%s entropy", tag);
        expect_close(name, ent_g, ent, S, tol_lp);
        for (int i = 0; i < m.n_p; i++) {
            const or1_param *p = &m.p[i];
            snprintf(name, sizeof name, "%s grad %s", tag, p->name);
            expect_close(name, mg.grads + p->offset, m.grads + p->offset, p->numel, tol_g);
        }
    }
    or1_cuda_model_free(dm);
    or1_cuda_free(g);
    or1_acts_free(a);
    or1_batch_free(&b);
    or1_model_free(&m);
    or1_model_free(&mg);
    free(lp), free(glp), free(gH), free(lp_g);
}

/* One clipped AdamW step on both sides from the same gradients. */
static void check_step(const or1_model_config *c) {
    or1_cuda *g = or1_cuda_new(OR1_CUDA_FP32);
    or1_model m, mg;
    or1_model_init(&m, c);
    or1_model_init(&mg, c);
    or1_model_randomize(&m, 12, 0.1f);
    float *gr = rand_floats(m.n_floats, 92, 1);
    memcpy(m.grads, gr, m.n_floats * sizeof(float));
    or1_adamw_cfg ac = {1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f};
    or1_cuda_model *dm = g ? or1_cuda_model_new(g, &m) : NULL;
    double norm = 0;
    or1_adamw o;
    or1_adamw_init(&o, m.n_floats);
    double want = or1_grad_norm(m.grads, m.n_floats);
    or1_clip_grad_norm(m.grads, m.n_floats, want, 1.0);
    or1_adamw_step(&o, m.params, m.grads, &ac);
    memcpy(mg.grads, gr, m.n_floats * sizeof(float));
    bool ran = dm && !or1_cuda_model_set_grads(dm, &mg) && !or1_cuda_model_step(dm, &ac, 1.0, &norm) &&
               !or1_cuda_model_download(dm, &mg);
    if (CHECK(ran, "adamw step: %s", or1_error())) {
        CHECK(near(norm, want, 0, 1e-9), "model grad norm %.12g vs CPU %.12g", norm, want);
        expect_close("model adamw step (clipped)", mg.params, m.params, m.n_floats, 1e-5);
    }
    or1_adamw_free(&o);
    or1_cuda_model_free(dm);
    or1_cuda_free(g);
    or1_model_free(&m);
    or1_model_free(&mg);
    free(gr);
}

/* Prefills three slots with different prompts, decodes `steps` tokens, then scores each
 * slot's whole sequence on the CPU: log-probs must match; greedy tokens must be the argmax. */
static void check_decode(const or1_model_config *c, float temperature) {
    enum { SLOTS = 3, STEPS = 6 };
    or1_cuda *g = or1_cuda_new(OR1_CUDA_FP32);
    or1_model m;
    or1_model_init(&m, c);
    or1_model_randomize(&m, 13, 0.1f);
    or1_cuda_model *dm = g ? or1_cuda_model_new(g, &m) : NULL;
    int32_t seqs[SLOTS][64], tok[SLOTS], next[SLOTS];
    float lp[SLOTS][STEPS], lpd[SLOTS];
    int np[SLOTS] = {4, 11, 1};
    char name[96];
    int rc = !dm || or1_cuda_model_kv(dm, SLOTS, 32);
    for (int s = 0; s < SLOTS && !rc; s++) {
        for (int t = 0; t < np[s]; t++) seqs[s][t] = (int32_t)(or1_rand_u64(8, (uint64_t)s, (uint64_t)t) % c->vocab);
        /* the prompt's last token is fed by the first decode step */
        rc = np[s] > 1 ? or1_cuda_model_prefill(dm, s, seqs[s], np[s] - 1) : 0;
        tok[s] = seqs[s][np[s] - 1];
    }
    uint64_t seeds[SLOTS] = {5, 5, 6};
    int32_t streams[SLOTS] = {0, 1, 0}, counters[SLOTS];
    for (int k = 0; k < STEPS && !rc; k++) {
        for (int s = 0; s < SLOTS; s++) counters[s] = k;
        rc = or1_cuda_model_decode(dm, tok, temperature, seeds, streams, counters, next, lpd);
        for (int s = 0; s < SLOTS && !rc; s++) {
            seqs[s][np[s] + k] = tok[s] = next[s];
            lp[s][k] = lpd[s];
        }
    }
    CHECK(!rc, "decode: %s", or1_error());
    float t_cpu = temperature > 0 ? temperature : 1.0f;
    for (int s = 0; s < SLOTS && !rc; s++) {
        or1_seq q = {seqs[s], np[s] + STEPS, np[s]};
        or1_batch b;
        or1_batch_pack(&b, &q, 1);
        or1_acts *a = or1_acts_new(c, b.n_tokens, b.n_tokens, false);
        float want[STEPS], went[STEPS];
        or1_forward(&m, a, &b, false);
        or1_head_forward(&m, a, &b, t_cpu, want, went);
        snprintf(name, sizeof name, "decode logp slot %d T=%.1f", s, temperature);
        expect_close(name, lp[s], want, STEPS, 1e-4);
        if (temperature == 0) {
            float *logits = or1_alloc_floats(c->vocab);
            for (int k = 0; k < STEPS; k++) {
                or1_matmul(logits, or1_acts_hidden(a, np[s] - 1 + k), m.w.lm_head, NULL, 1, c->hidden, c->vocab);
                int best = 0;
                for (int v = 1; v < c->vocab; v++) best = logits[v] > logits[best] ? v : best;
                int got = seqs[s][np[s] + k];
                CHECK(got == best || fabsf(logits[got] - logits[best]) < 1e-4f,
                      "greedy slot %d step %d: token %d, CPU argmax %d", s, k, got, best);
            }
            free(logits);
        }
        or1_acts_free(a);
        or1_batch_free(&b);
    }
    or1_cuda_model_free(dm);
    or1_cuda_free(g);
    or1_model_free(&m);
}

int main(void) {
    require_gpu("cuda_model");
    or1_set_threads(2);
    for (int llama = 0; llama < 2; llama++) {
        or1_model_config c = tiny(llama);
        const char *arch = llama ? "llama" : "qwen2";
        char tag[32];
        snprintf(tag, sizeof tag, "%s fp32", arch);
        check_grads(&c, OR1_CUDA_FP32, 1e-4, 1e-3, tag);
        snprintf(tag, sizeof tag, "%s bf16", arch);
        check_grads(&c, OR1_CUDA_BF16, 3e-2, 1e-1, tag);
        check_step(&c);
        check_decode(&c, 0);
        check_decode(&c, 0.8f);
    }
    return check_report();
}
