/* Gradient checkpointing (or1_dmodel_set_recompute): with it a training forward keeps each
 * layer's input alone and backward recomputes the layer's activations from it. Checked, in fp32
 * and in bf16, on a 3-layer GQA model with q/k/v biases and a packed batch of three sequences:
 * log-probs, entropies and every gradient equal the ones without recompute bit for bit (the
 * recomputed forward runs the same kernels on the same inputs); switching it on and off on one
 * placed model keeps that; a decode-sized prefill after a recompute backward still works; and the
 * training workspace is smaller with recompute. */
#include "or1/core.h"
#include "or1/model.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"

enum { N_SEQ = 3 };

/* Log-probs, entropies and gradients of a made-up loss over b, from zeroed gradients. */
static void grads(or1_dmodel *dm, or1_model *m, const or1_batch *b, float *logp, float *ent, float *g) {
    int S = b->n_scored;
    float *glp = or1_alloc_floats((size_t)S), *gent = or1_alloc_floats((size_t)S);
    for (int i = 0; i < S; i++) glp[i] = 0.05f * (float)(i % 7) - 0.1f, gent[i] = 0.02f;
    or1_dmodel_zero_grad(dm);
    CHECK(!or1_dmodel_forward(dm, b, true) && !or1_dmodel_head(dm, b, 0.8f, logp, ent) &&
              !or1_dmodel_backward(dm, b, 0.8f, glp, gent),
          "training pass failed: %s", or1_error());
    memcpy(g, m->grads, m->n_floats * sizeof *g);
    free(glp), free(gent);
}

/* With and without recompute on one placed model, in the given precision. */
static void compare(or1_model *m, const or1_batch *b, bool bf16) {
    const char *tag = bf16 ? "bf16" : "fp32";
    size_t S = (size_t)b->n_scored, n = m->n_floats;
    float *l0 = or1_alloc_floats(2 * S), *l1 = or1_alloc_floats(2 * S);
    float *g0 = or1_alloc_floats(n), *g1 = or1_alloc_floats(n), *g2 = or1_alloc_floats(n);
    or1_backend *be = or1_backend_cpu_prec(bf16);
    or1_dmodel *dm = or1_dmodel_new(be, m);
    size_t full = or1_dmodel_workspace_bytes(dm, b->n_tokens);
    grads(dm, m, b, l0, l0 + S, g0);
    or1_dmodel_set_recompute(dm, true);
    size_t lean = or1_dmodel_workspace_bytes(dm, b->n_tokens);
    grads(dm, m, b, l1, l1 + S, g1);
    CHECK(!memcmp(l0, l1, 2 * S * sizeof *l0), "%s: log-probs or entropies differ with recompute", tag);
    CHECK(!memcmp(g0, g1, n * sizeof *g0), "%s: gradients differ with recompute", tag);
    double norm = 0;
    for (size_t i = 0; i < n; i++) norm += (double)g0[i] * g0[i];
    CHECK(norm > 0 && isfinite(norm), "%s: the gradients are zero or not finite (%g)", tag, norm);
    CHECK(lean < full, "%s: the recompute workspace (%zu bytes) is not smaller than %zu", tag, lean, full);

    int32_t ids[5] = {3, 1, 4, 1, 5}, rows[5] = {0, 1, 2, 3, 4};
    or1_seq seq = {.ids = ids, .n = 5, .n_prompt = 5};
    or1_batch p;
    or1_batch_pack(&p, &seq, 1);
    CHECK(!or1_dmodel_decode_reserve(dm, 1, 8, 1, 8, 16, 1, 1) && !or1_dmodel_prefill(dm, &p, rows, 0),
          "%s: prefill after a recompute backward failed: %s", tag, or1_error());
    or1_dmodel_set_recompute(dm, false);
    grads(dm, m, b, l1, l1 + S, g2);
    CHECK(!memcmp(g0, g2, n * sizeof *g0), "%s: gradients differ after switching recompute off again", tag);
    or1_batch_free(&p);
    free(l0), free(l1), free(g0), free(g1), free(g2);
    or1_dmodel_free(dm);
    or1_backend_free(be);
}

int main(void) {
    or1_model_config cfg = {.arch = OR1_ARCH_QWEN2, .hidden = 64, .intermediate = 96, .layers = 3, .heads = 4,
                            .kv_heads = 2, .head_dim = 16, .vocab = 301, .max_pos = 256, .rms_eps = 1e-6f,
                            .rope_theta = 10000.0f, .tied = false, .qkv_bias = true};
    or1_model m;
    or1_model_init(&m, &cfg);
    or1_model_randomize(&m, 11, 0.5f);
    int lens[N_SEQ] = {40, 7, 23}, prompts[N_SEQ] = {5, 2, 9};
    int32_t ids[N_SEQ][40];
    or1_seq seqs[N_SEQ];
    for (int s = 0; s < N_SEQ; s++) {
        for (int t = 0; t < lens[s]; t++) ids[s][t] = (t * 37 + 11 * s + 5) % cfg.vocab;
        seqs[s] = (or1_seq){.ids = ids[s], .n = lens[s], .n_prompt = prompts[s]};
    }
    or1_batch b;
    or1_batch_pack(&b, seqs, N_SEQ);
    compare(&m, &b, false);
    compare(&m, &b, true);
    or1_batch_free(&b);
    or1_model_free(&m);
    return check_report();
}
