/* The eq. (3.1) gradient on the device model, micro-batch by micro-batch, with the same
 * packing and per-token loss terms as src/rl/policy_grad.c (which stays the reference):
 * the forward, head and backward run on the GPU, the per-token formulas on the host over
 * the scored log-probs and entropies. */
#include "internal.h"

extern "C" {
#include "or1/core.h"
#include "or1/train.h"
}

#include <stdlib.h>
#include <string.h>

/* Forward, loss terms (shared with the CPU path) and backward for samples [i0, i1). */
static int micro_step(or1_cuda_model *dm, const or1_sample *s, int i0, int i1, double inv_total,
                      const or1_loss_cfg *cfg, or1_loss_stats *st) {
    or1_packed_samples p;
    or1_pack_samples(&p, s + i0, i1 - i0);
    int ns = p.b.n_scored;
    float *buf = (float *)or1_malloc((size_t)4 * (ns + 1) * sizeof *buf);
    float *logp = buf, *ent = logp + ns, *g_lp = ent + ns, *g_h = g_lp + ns;
    int rc = or1_cuda_model_forward(dm, &p.b, true) || or1_cuda_model_head(dm, &p.b, cfg->temperature, logp, ent);
    if (!rc) or1_policy_token_grads(s + i0, i1 - i0, logp, ent, inv_total, cfg, g_lp, g_h, st);
    if (!rc) rc = or1_cuda_model_backward(dm, &p.b, cfg->temperature, g_lp, g_h);
    free(buf);
    or1_packed_samples_free(&p);
    return rc ? -1 : 0;
}

/* Micro-batch by micro-batch over the CPU path's greedy packing. */
int or1_cuda_policy_grad(or1_cuda_model *dm, const or1_sample *s, int n, long total_tokens, int micro_tokens,
                         const or1_loss_cfg *cfg, or1_loss_stats *st) {
    double inv_total = total_tokens > 0 ? 1.0 / (double)total_tokens : 0.0;
    for (int i0 = 0, i1; i0 < n; i0 = i1) {
        i1 = or1_micro_batch_end(s, n, i0, micro_tokens);
        if (micro_step(dm, s, i0, i1, inv_total, cfg, st)) return -1;
    }
    return 0;
}
