/* The MAGIC policy loss of Skywork-OR1, eq. (3.1), token by token. */
#include "internal.h"
#include "or1/algo.h"
#include "or1/core.h"

#include <math.h>
#include <string.h>

/* Eq. (3.1) per token: PPO-clip surrogate on the ratio, minus the entropy bonus.
 * Gradient of the surrogate w.r.t. logp: d(-A*rho)/dlogp = -A*rho on the unclipped branch;
 * on the clipped branch -A*rho only while rho lies inside the clip range (torch.clamp passes
 * the gradient on [lo, hi] inclusive), else 0. At a tie torch.maximum gives each side half. */
double or1_magic_token_loss(float logp, float old_logp, float adv, const or1_loss_cfg *c,
                            float *d_logp, float *d_entropy, bool *clipped) {
    double rho = exp((double)logp - (double)old_logp);
    double lo = 1.0 - c->clip_low, hi = 1.0 + c->clip_high;
    double rho_c = rho < lo ? lo : rho > hi ? hi : rho;
    double l1 = -adv * rho, l2 = -adv * rho_c;
    double g1 = -adv * rho, g2 = (rho >= lo && rho <= hi) ? -adv * rho : 0.0;
    double g = l1 > l2 ? g1 : l2 > l1 ? g2 : 0.5 * (g1 + g2);
    *d_logp = (float)g;
    *d_entropy = -c->entropy_coef;
    *clipped = l2 > l1;
    return l1 > l2 ? l1 : l2;
}

/* Eq. (3.1) token by token: PPO-clip term, entropy bonus, optional KL; gradients scaled by
 * the global 1/T. */
void or1_policy_token_grads(const or1_sample *s, int n, const float *logp, const float *ent, double inv_total,
                            const or1_loss_cfg *cfg, float *g_logp, float *g_entropy, or1_loss_stats *st) {
    for (int i = 0, k = 0; i < n; i++) {
        const or1_sample *x = &s[i];
        for (int j = 0; j < x->n_resp; j++, k++) {
            float old = x->old_logp ? x->old_logp[j] : logp[k], dlp, dh;
            bool clipped;
            double pg = or1_magic_token_loss(logp[k], old, x->adv, cfg, &dlp, &dh, &clipped);
            if (x->rollout_logp) {
                or1_mismatch_add(&st->mismatch, logp[k], x->rollout_logp[j]);
                if (cfg->is != OR1_IS_NONE) {
                    double w = or1_rollout_is_weight(cfg->is, cfg->is_low, cfg->is_high, old, x->rollout_logp[j]);
                    pg *= w, dlp = (float)(dlp * w);
                    st->is_weight += w, st->is_masked += w == 0;
                }
            }
            double kl = 0, dkl = 0;
            if (cfg->kl_coef != 0 && x->ref_logp) kl = or1_kl_token(&cfg->kl, logp[k], x->ref_logp[j], &dkl);
            dlp += (float)(cfg->kl_coef * dkl);
            st->pg_loss += pg;
            st->entropy += ent[k];
            st->kl += kl;
            st->logp += logp[k];
            st->loss += pg - cfg->entropy_coef * ent[k] + cfg->kl_coef * kl;
            st->clipped += clipped;
            st->tokens++;
            g_logp[k] = (float)(dlp * inv_total);
            g_entropy[k] = (float)(dh * inv_total);
        }
    }
}

static const char *const IS_NAMES[] = {"none", "tis", "mis"};

/* Parses "none" | "tis" | "mis". */
int or1_rollout_is_parse(const char *s, or1_rollout_is_mode *out, const char *where) {
    int i = algo_name_index(IS_NAMES, 3, s, "rollout correction", where);
    if (i >= 0) *out = (or1_rollout_is_mode)i;
    return i < 0 ? -1 : 0;
}

const char *or1_rollout_is_name(or1_rollout_is_mode m) { return IS_NAMES[m]; }

/* The token's weight from r = exp(old - rollout): 1, min(r, high), or [low <= r <= high]. */
double or1_rollout_is_weight(or1_rollout_is_mode mode, double low, double high, float old_logp, float rollout_logp) {
    double r = exp((double)old_logp - (double)rollout_logp);
    if (mode == OR1_IS_TIS) return r < high ? r : high;
    if (mode == OR1_IS_MIS) return r >= low && r <= high ? 1.0 : 0.0;
    return 1.0;
}

/* One token's |difference| and k3 term, d = train - rollout: exp(d) - 1 - d >= 0. */
void or1_mismatch_add(or1_mismatch *m, float train_logp, float rollout_logp) {
    double d = (double)train_logp - (double)rollout_logp, a = fabs(d);
    m->abs_sum += a;
    if (a > m->abs_max) m->abs_max = a;
    m->k3_sum += expm1(d) - d;
    m->tokens++;
}
