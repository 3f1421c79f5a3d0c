/* Gradient of the MAGIC objective over a batch of samples, micro-batch by micro-batch. */
#include "or1/core.h"
#include "or1/train.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Concatenates each sample's prompt and response and packs them. */
void or1_pack_samples(or1_packed_samples *p, const or1_sample *s, int n) {
    p->n = n;
    p->seqs = or1_malloc((size_t)(n ? n : 1) * sizeof *p->seqs);
    p->joined = or1_malloc((size_t)(n ? n : 1) * sizeof *p->joined);
    for (int i = 0; i < n; i++) {
        const or1_sample *x = &s[i];
        p->joined[i] = or1_malloc((size_t)(x->n_prompt + x->n_resp) * sizeof(int32_t));
        memcpy(p->joined[i], x->prompt, (size_t)x->n_prompt * sizeof(int32_t));
        memcpy(p->joined[i] + x->n_prompt, x->resp, (size_t)x->n_resp * sizeof(int32_t));
        p->seqs[i] = (or1_seq){.ids = p->joined[i], .n = x->n_prompt + x->n_resp, .n_prompt = x->n_prompt};
    }
    or1_batch_pack(&p->b, p->seqs, n);
}

/* Frees what or1_pack_samples made. */
void or1_packed_samples_free(or1_packed_samples *p) {
    or1_batch_free(&p->b);
    for (int i = 0; i < p->n; i++) free(p->joined[i]);
    free(p->joined);
    free(p->seqs);
}


/* Forward, per-token loss terms (eq. 3.1) and backward for samples [i0, i1); sel: their
 * tokens' selection flags (or NULL). */
static int micro_step(or1_dmodel *dm, const or1_sample *s, int i0, int i1, const or1_loss_norm *norm,
                      const or1_loss_cfg *cfg, const uint8_t *sel, or1_loss_stats *st) {
    or1_packed_samples p;
    or1_pack_samples(&p, s + i0, i1 - i0);
    int ns = p.b.n_scored;
    float *buf = or1_malloc((size_t)4 * (ns + 1) * sizeof *buf);
    float *logp = buf, *ent = logp + ns, *g_lp = ent + ns, *g_h = g_lp + ns;
    int rc = or1_dmodel_forward(dm, &p.b, true) || or1_dmodel_head(dm, &p.b, cfg->temperature, logp, ent);
    if (!rc) or1_policy_token_grads(s + i0, i1 - i0, logp, ent, sel, norm, cfg, g_lp, g_h, st);
    if (!rc) rc = or1_dmodel_backward(dm, &p.b, cfg->temperature, g_lp, g_h);
    free(buf);
    or1_packed_samples_free(&p);
    return rc ? -1 : 0;
}

/* Greedy packing in order: a micro-batch closes when the next sample would overflow it. */
int or1_micro_batch_end(const or1_sample *s, int n, int i0, int micro_tokens) {
    int i1 = i0, tokens = 0;
    while (i1 < n && (i1 == i0 || tokens + s[i1].n_prompt + s[i1].n_resp <= micro_tokens)) {
        tokens += s[i1].n_prompt + s[i1].n_resp;
        i1++;
    }
    return i1;
}

/* Response tokens of samples [i0, i1). */
static long resp_tokens(const or1_sample *s, int i0, int i1) {
    long n = 0;
    for (int i = i0; i < i1; i++) n += s[i].n_resp;
    return n;
}

/* The mini-batch selections (or1_select_tokens) need every token's current log-prob and
 * entropy before any gradient: one forward pass without gradients over the same
 * micro-batches gives them, then *sel gets the flags of every response token in order. */
static int select_pass(or1_dmodel *dm, const or1_sample *s, int n, int micro_tokens, const or1_loss_cfg *cfg,
                       uint8_t **sel) {
    long total = resp_tokens(s, 0, n);
    float *logp = or1_malloc((size_t)(2 * total + 1) * sizeof *logp), *ent = logp + total;
    int rc = 0;
    for (int i0 = 0, i1; i0 < n && rc == 0; i0 = i1) {
        i1 = or1_micro_batch_end(s, n, i0, micro_tokens);
        long off = resp_tokens(s, 0, i0);
        or1_packed_samples p;
        or1_pack_samples(&p, s + i0, i1 - i0);
        rc = or1_dmodel_forward(dm, &p.b, false) || or1_dmodel_head(dm, &p.b, cfg->temperature, logp + off, ent + off);
        or1_packed_samples_free(&p);
    }
    *sel = or1_malloc((size_t)total + 1);
    if (rc == 0) or1_select_tokens(s, n, logp, ent, cfg, *sel);
    free(logp);
    return rc ? -1 : 0;
}

/* Micro-batch by micro-batch over the greedy packing, after the mini-batch's selections. */
int or1_policy_grad(or1_dmodel *dm, const or1_sample *s, int n, const or1_loss_norm *norm, int micro_tokens,
                    const or1_loss_cfg *cfg, or1_loss_stats *st) {
    uint8_t *sel = NULL;
    int rc = or1_loss_selects(cfg) ? select_pass(dm, s, n, micro_tokens, cfg, &sel) : 0;
    for (int i0 = 0, i1; i0 < n && rc == 0; i0 = i1) {
        i1 = or1_micro_batch_end(s, n, i0, micro_tokens);
        rc = micro_step(dm, s, i0, i1, norm, cfg, sel ? sel + resp_tokens(s, 0, i0) : NULL, st);
    }
    free(sel);
    return rc;
}
