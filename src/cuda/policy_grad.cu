/* The eq. (3.1) gradient on the device model, micro-batch by micro-batch, with the same
 * packing and per-token loss terms as src/rl/policy_grad.c (which stays the reference):
 * the forward, head and backward run on the GPU, the per-token formulas on the host over
 * the scored log-probs and entropies. */
#include "internal.h"

extern "C" {
#include "or1/core.h"
}

#include <stdlib.h>
#include <string.h>

/* Forward, loss terms and backward for samples [i0, i1). */
static int micro_step(or1_cuda_model *dm, const or1_sample *s, int i0, int i1, double inv_total,
                      const or1_loss_cfg *cfg, or1_loss_stats *st) {
    int n = i1 - i0;
    or1_seq *seqs = (or1_seq *)or1_malloc((size_t)n * sizeof *seqs);
    int32_t **joined = (int32_t **)or1_malloc((size_t)n * sizeof *joined);
    for (int i = 0; i < n; i++) {
        const or1_sample *x = &s[i0 + i];
        joined[i] = (int32_t *)or1_malloc((size_t)(x->n_prompt + x->n_resp) * sizeof(int32_t));
        memcpy(joined[i], x->prompt, (size_t)x->n_prompt * sizeof(int32_t));
        memcpy(joined[i] + x->n_prompt, x->resp, (size_t)x->n_resp * sizeof(int32_t));
        seqs[i] = (or1_seq){joined[i], x->n_prompt + x->n_resp, x->n_prompt};
    }
    or1_batch b;
    or1_batch_pack(&b, seqs, n);
    float *buf = (float *)or1_malloc((size_t)4 * (b.n_scored + 1) * sizeof *buf);
    float *logp = buf, *ent = logp + b.n_scored, *g_lp = ent + b.n_scored, *g_h = g_lp + b.n_scored;
    int rc = or1_cuda_model_forward(dm, &b, true) || or1_cuda_model_head(dm, &b, cfg->temperature, logp, ent);
    for (int i = 0, k = 0; i < n && !rc; i++) {
        const or1_sample *x = &s[i0 + i];
        for (int j = 0; j < x->n_resp; j++, k++) {
            float old = x->old_logp ? x->old_logp[j] : logp[k], dlp, dh;
            bool clipped;
            double pg = or1_magic_token_loss(logp[k], old, x->adv, cfg, &dlp, &dh, &clipped);
            double kl = 0, dkl = 0;
            if (cfg->kl_coef != 0 && x->ref_logp) kl = or1_kl_token(&cfg->kl, logp[k], x->ref_logp[j], &dkl);
            dlp += (float)(cfg->kl_coef * dkl);
            st->pg_loss += pg;
            st->entropy += ent[k];
            st->kl += kl;
            st->loss += pg - cfg->entropy_coef * ent[k] + cfg->kl_coef * kl;
            st->clipped += clipped;
            st->tokens++;
            g_lp[k] = (float)(dlp * inv_total);
            g_h[k] = (float)(dh * inv_total);
        }
    }
    if (!rc) rc = or1_cuda_model_backward(dm, &b, cfg->temperature, g_lp, g_h);
    free(buf);
    or1_batch_free(&b);
    for (int i = 0; i < n; i++) free(joined[i]);
    free(joined);
    free(seqs);
    return rc ? -1 : 0;
}

/* Greedy packing in order: a micro-batch closes when the next sample would overflow it. */
int or1_cuda_policy_grad(or1_cuda_model *dm, const or1_sample *s, int n, long total_tokens, int micro_tokens,
                         const or1_loss_cfg *cfg, or1_loss_stats *st) {
    double inv_total = total_tokens > 0 ? 1.0 / (double)total_tokens : 0.0;
    for (int i0 = 0; i0 < n;) {
        int i1 = i0, tokens = 0;
        while (i1 < n && (i1 == i0 || tokens + s[i1].n_prompt + s[i1].n_resp <= micro_tokens)) {
            tokens += s[i1].n_prompt + s[i1].n_resp;
            i1++;
        }
        if (micro_step(dm, s, i0, i1, inv_total, cfg, st)) return -1;
        i0 = i1;
    }
    return 0;
}
