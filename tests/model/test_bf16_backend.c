/* A model placed on the CPU in bf16 keeps its weight copy current: after an optimizer step (and after a
 * push of changed host weights) the forward sees the new weights, bit for bit what a fresh bf16
 * backend placed on the same weights computes; before the step the results differ; and bf16 and
 * fp32 backends differ (the copy is used at all).
 *
 * A model keeping fp32 masters of a range alone (ZeRO-1's shard in bf16) computes the whole
 * model's log-probs and gradients bit for bit, steps its range to the whole model's masters and
 * compute weights (the range cuts through a norm weight at each end), pushes alike, reports the
 * norm of its masters, and refuses another range and an fp32 backend. A frozen model (inference:
 * no gradients, in bf16 no fp32 matrices) gives the whole model's log-probs in both precisions,
 * follows a push, and refuses backward and steps. */
#include "or1/core.h"
#include "or1/model.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"

enum { N_TOK = 24, N_SC = N_TOK - 1 };

/* Log-probs and entropies of the scored positions of b under m on a backend of the given
 * precision (a fresh backend, so no copy from an earlier call can be reused). */
static void fresh_logprobs(or1_model *m, const or1_batch *b, bool bf16, float *logp) {
    or1_backend *be = or1_backend_cpu_prec(bf16);
    or1_dmodel *dm = or1_dmodel_new(be, m);
    float ent[N_SC];
    CHECK(dm && !or1_dmodel_forward(dm, b, false) && !or1_dmodel_head(dm, b, 1.0f, logp, ent),
          "fresh %s backend: forward failed", bf16 ? "bf16" : "fp32");
    or1_dmodel_free(dm);
    or1_backend_free(be);
}

/* Log-probs of b on an existing placed model. */
static void placed_logprobs(or1_dmodel *dm, const or1_batch *b, float *logp) {
    float ent[N_SC];
    CHECK(!or1_dmodel_forward(dm, b, false) && !or1_dmodel_head(dm, b, 1.0f, logp, ent), "forward failed");
}

/* Whether two arrays of log-probs are the same bits. */
static bool same(const float *a, const float *b) { return memcmp(a, b, N_SC * sizeof *a) == 0; }

/* Gradients of a made-up loss over b's log-probs and entropies, added into the model's. */
static void backward(or1_dmodel *dm, const or1_batch *b) {
    float logp[N_SC], ent[N_SC], g_logp[N_SC], g_ent[N_SC];
    for (int i = 0; i < N_SC; i++) g_logp[i] = 0.1f * (float)(i % 5) - 0.2f, g_ent[i] = 0.01f;
    CHECK(!or1_dmodel_forward(dm, b, true) && !or1_dmodel_head(dm, b, 1.0f, logp, ent) &&
              !or1_dmodel_backward(dm, b, 1.0f, g_logp, g_ent),
          "backward failed");
}

/* The same made-up gradients in both host models, one AdamW step of [lo, hi) on each. */
static void step_both(or1_dmodel *whole, or1_dmodel *part, or1_model *a, or1_model *s, size_t lo, size_t hi,
                      or1_adamw *oa, or1_adamw *os) {
    or1_adamw_cfg ac = {.lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .weight_decay = 0.1f};
    for (size_t i = 0; i < a->n_floats; i++) a->grads[i] = s->grads[i] = sinf((float)i);
    CHECK(!or1_dmodel_step_range(whole, oa, &ac, lo, hi, 10.0, 0.0) &&
              !or1_dmodel_step_range(part, os, &ac, lo, hi, 10.0, 0.0),
          "step of the range failed");
    CHECK(or1_dmodel_step_range(part, os, &ac, 0, hi, 10.0, 0.0) != 0, "a sharded model stepped a range it lacks");
}

/* The sharded model against the whole one (see the file comment). */
static void sharded_masters(const or1_model_config *cfg, const or1_batch *b) {
    or1_model a, s;
    or1_model_init(&a, cfg), or1_model_init(&s, cfg);
    or1_model_randomize(&a, 7, 0.5f), or1_model_randomize(&s, 7, 0.5f);
    size_t lo = (size_t)(a.w.layer[1].ln1 - a.params) + 5, hi = (size_t)(a.w.norm - a.params) + 3;
    or1_backend *be = or1_backend_cpu_prec(true), *fp32 = or1_backend_cpu();
    CHECK(!or1_dmodel_new_sharded(fp32, &s, lo, hi), "masters sharded on an fp32 backend");
    or1_dmodel *whole = or1_dmodel_new(be, &a), *part = or1_dmodel_new_sharded(be, &s, lo, hi);
    CHECK(whole && part, "placement failed");
    float la[N_SC], ls[N_SC], before[N_SC];
    placed_logprobs(whole, b, la), placed_logprobs(part, b, ls);
    CHECK(same(la, ls), "sharded masters: log-probs differ from the whole model's");
    memcpy(before, la, sizeof before);
    backward(whole, b), backward(part, b);
    CHECK(!memcmp(a.grads, s.grads, a.n_floats * sizeof(float)), "sharded masters: gradients differ");

    or1_adamw oa, os;
    or1_adamw_init(&oa, hi - lo), or1_adamw_init(&os, hi - lo);
    step_both(whole, part, &a, &s, lo, hi, &oa, &os);
    CHECK(!or1_dmodel_pull(whole) && !or1_dmodel_pull(part), "pull failed");
    CHECK(!memcmp(a.params + lo, s.params + lo, (hi - lo) * sizeof(float)), "the stepped masters differ");
    placed_logprobs(whole, b, la), placed_logprobs(part, b, ls);
    CHECK(!same(la, before), "the step did not change the whole model");
    CHECK(same(la, ls), "after a step the sharded model's compute weights differ from the whole model's");
    double pn = or1_dmodel_param_norm(part), want = or1_grad_norm(s.params + lo, hi - lo);
    CHECK(fabs(pn - want) <= 1e-12 * want, "param norm %.17g, the masters' is %.17g", pn, want);

    for (size_t i = 0; i < a.n_floats; i++) a.params[i] *= 0.9f, s.params[i] *= 0.9f;
    CHECK(!or1_dmodel_push(whole) && !or1_dmodel_push(part), "push failed");
    placed_logprobs(whole, b, la), placed_logprobs(part, b, ls);
    CHECK(same(la, ls), "after a push the sharded model differs from the whole model");

    or1_adamw_free(&oa), or1_adamw_free(&os);
    or1_dmodel_free(whole), or1_dmodel_free(part);
    or1_backend_free(be), or1_backend_free(fp32);
    or1_model_free(&a), or1_model_free(&s);
}

/* A frozen model against a whole one on a backend of the given precision. */
static void frozen(or1_model *m, const or1_batch *b, bool bf16) {
    or1_backend *be = or1_backend_cpu_prec(bf16);
    or1_dmodel *whole = or1_dmodel_new(be, m), *inf = or1_dmodel_new_frozen(be, m);
    CHECK(whole && inf, "placement failed");
    float lw[N_SC], lf[N_SC], g[N_SC] = {0};
    placed_logprobs(whole, b, lw), placed_logprobs(inf, b, lf);
    CHECK(same(lw, lf), "frozen %s model: log-probs differ from the whole model's", bf16 ? "bf16" : "fp32");
    for (size_t i = 0; i < m->n_floats; i++) m->params[i] *= 1.01f;
    CHECK(!or1_dmodel_push(whole) && !or1_dmodel_push(inf), "push failed");
    placed_logprobs(whole, b, lw), placed_logprobs(inf, b, lf);
    CHECK(same(lw, lf), "frozen %s model: differs from the whole model after a push", bf16 ? "bf16" : "fp32");
    CHECK(!or1_dmodel_forward(inf, b, true), "frozen forward with train failed");
    CHECK(or1_dmodel_head(inf, b, 1.0f, lf, lf) == 0 && or1_dmodel_backward(inf, b, 1.0f, g, g) != 0,
          "a frozen model ran backward");
    or1_adamw opt;
    or1_adamw_init(&opt, m->n_floats);
    or1_adamw_cfg ac = {.lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f};
    CHECK(or1_dmodel_step(inf, &opt, &ac, 0.0, NULL) != 0, "a frozen model took an optimizer step");
    or1_adamw_free(&opt);
    or1_dmodel_free(whole), or1_dmodel_free(inf);
    or1_backend_free(be);
}

int main(void) {
    or1_model_config cfg = {.arch = OR1_ARCH_QWEN2, .hidden = 64, .intermediate = 96, .layers = 2, .heads = 4,
                            .kv_heads = 2, .head_dim = 16, .vocab = 301, .max_pos = 128, .rms_eps = 1e-6f,
                            .rope_theta = 10000.0f, .tied = false, .qkv_bias = true};
    or1_model m;
    or1_model_init(&m, &cfg);
    or1_model_randomize(&m, 7, 0.5f);
    int32_t ids[N_TOK];
    for (int t = 0; t < N_TOK; t++) ids[t] = (t * 37 + 11) % cfg.vocab;
    or1_seq seq = {.ids = ids, .n = N_TOK, .n_prompt = 1};
    or1_batch b;
    or1_batch_pack(&b, &seq, 1);

    float fp32[N_SC], before[N_SC], after[N_SC], fresh[N_SC];
    fresh_logprobs(&m, &b, false, fp32);
    or1_backend *be = or1_backend_cpu_prec(true);
    or1_dmodel *dm = or1_dmodel_new(be, &m);
    placed_logprobs(dm, &b, before);
    CHECK(!same(before, fp32), "bf16 and fp32 backends give the same log-probs: the bf16 copy is not used");

    /* an AdamW step on made-up gradients: the copy must follow the new masters */
    for (size_t i = 0; i < m.n_floats; i++) m.grads[i] = sinf((float)i);
    or1_adamw opt;
    or1_adamw_init(&opt, m.n_floats);
    or1_adamw_cfg ac = {.lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .weight_decay = 0.0f};
    CHECK(!or1_dmodel_step(dm, &opt, &ac, 0.0, NULL), "step failed");
    placed_logprobs(dm, &b, after);
    fresh_logprobs(&m, &b, true, fresh);
    CHECK(!same(after, before), "the step did not change the bf16 forward");
    CHECK(same(after, fresh), "after a step the bf16 copy is stale: log-probs differ from a fresh backend's");

    /* host weights changed and pushed (a resume, a broadcast, a reference reset) */
    for (size_t i = 0; i < m.n_floats; i++) m.params[i] *= 0.9f;
    CHECK(!or1_dmodel_push(dm), "push failed");
    placed_logprobs(dm, &b, after);
    fresh_logprobs(&m, &b, true, fresh);
    CHECK(same(after, fresh), "after a push the bf16 copy is stale");

    or1_adamw_free(&opt);
    or1_dmodel_free(dm);
    or1_backend_free(be);
    sharded_masters(&cfg, &b);
    frozen(&m, &b, true);
    frozen(&m, &b, false);
    or1_batch_free(&b);
    or1_model_free(&m);
    return check_report();
}
