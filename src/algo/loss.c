/* The MAGIC policy loss of Skywork-OR1, eq. (3.1), token by token. */
#include "internal.h"
#include "or1/algo.h"
#include "or1/core.h"

#include <math.h>
#include <string.h>

/* The PPO-clip surrogate max(-A*rho, -A*clip(rho, lo, hi)) on a ratio whose derivative
 * w.r.t. the token's log-prob is drho. On the unclipped branch the gradient is -A*drho; on
 * the clipped one -A*drho only while rho lies inside [lo, hi] (torch.clamp passes the gradient
 * on its closed range), else 0; at a tie torch.maximum gives each side half. */
static double ppo_clip(double rho, double drho, double adv, double lo, double hi, double *g, bool *clipped) {
    double rho_c = rho < lo ? lo : rho > hi ? hi : rho;
    double l1 = -adv * rho, l2 = -adv * rho_c;
    double g1 = -adv * drho, g2 = (rho >= lo && rho <= hi) ? -adv * drho : 0.0;
    *g = l1 > l2 ? g1 : l2 > l1 ? g2 : 0.5 * (g1 + g2);
    *clipped = l2 > l1;
    return l1 > l2 ? l1 : l2;
}

/* One token's inputs to a policy-gradient term: log_ratio is log(pi/pi_old) of the token,
 * rho = exp(log_ratio), seq its sequence's statistic (sequence-level modes), sel its selection
 * flags. */
typedef struct {
    double log_ratio, rho, seq, adv;
    float logp;
    uint8_t sel;
} pg_token;

/* A policy-loss mode: its per-token term and, for a sequence-level mode, the statistic of each
 * sequence that the term reads (pg_token.seq; NULL: a token-level mode). A sequence-level
 * mode's term is aggregated seq-mean-token-mean whatever loss.agg says. */
typedef struct {
    double (*term)(const or1_loss_cfg *c, const pg_token *t, double *g, bool *clipped);
    double (*seq)(const or1_loss_cfg *c, const or1_sample *x, const float *logp);
} pg_mode;

/* PPO-clip, eq. (3.1) (verl "vanilla" without the dual clip). */
static double ppo_term(const or1_loss_cfg *c, const pg_token *t, double *g, bool *clipped) {
    return ppo_clip(t->rho, t->rho, t->adv, 1.0 - c->clip_low, 1.0 + c->clip_high, g, clipped);
}
static const pg_mode pg_ppo = {ppo_term, NULL};

/* Dual-clip PPO (Ye et al. 2019, arXiv 1912.09729 eq. (5); verl compute_policy_loss_vanilla
 * with clip_ratio_c): for A < 0 the PPO term is capped at -A*c, a constant with no gradient;
 * at a tie torch.minimum gives each side half. */
static double dual_clip_term(const or1_loss_cfg *c, const pg_token *t, double *g, bool *clipped) {
    double v = ppo_term(c, t, g, clipped);
    if (t->adv >= 0) return v;
    double cap = -t->adv * c->clip_c;
    if (v > cap) *g = 0.0;
    else if (v == cap) *g *= 0.5;
    return v < cap ? v : cap;
}
static const pg_mode pg_dual_clip = {dual_clip_term, NULL};

/* CISPO (MiniMax-M1, arXiv 2506.13585 eq. (4); verl compute_policy_loss_cispo):
 * -sg(clip(rho, 1-eps_low, 1+eps_high)) * A * logp; the weight is detached, so every token's
 * gradient is -weight * A. A token counts as clipped when the weight differs from rho. */
static double cispo_term(const or1_loss_cfg *c, const pg_token *t, double *g, bool *clipped) {
    double lo = 1.0 - c->cispo_low, hi = 1.0 + c->cispo_high;
    double w = t->rho < lo ? lo : t->rho > hi ? hi : t->rho;
    *g = -w * t->adv;
    *clipped = w != t->rho;
    return -w * t->adv * (double)t->logp;
}
static const pg_mode pg_cispo = {cispo_term, NULL};

/* The mean log(pi/pi_old) of one sequence's trained tokens (0 without old log-probs or such a
 * token), GSPO's log s_i. */
static double seq_log_ratio(const or1_loss_cfg *c, const or1_sample *x, const float *logp) {
    (void)c;
    int kept;
    return x->old_logp ? algo_masked_mean_diff(logp, x->old_logp, x->n_resp, x->mask, &kept) : 0.0;
}

/* GSPO (arXiv 2507.18071 eq. (7)-(10); verl compute_policy_loss_gspo): the token ratio
 * s_i,t = sg(s_i) * pi_t / sg(pi_t) has the value s_i = exp(mean log-ratio of the sequence)
 * and d s_i,t / d logp_t = s_i; its log is clamped at 10 as verl does (no gradient above). */
static double gspo_term(const or1_loss_cfg *c, const pg_token *t, double *g, bool *clipped) {
    double rho = exp(t->seq < 10.0 ? t->seq : 10.0);
    double drho = t->seq <= 10.0 ? rho : 0.0;
    return ppo_clip(rho, drho, t->adv, 1.0 - c->gspo_low, 1.0 + c->gspo_high, g, clipped);
}
static const pg_mode pg_gspo = {gspo_term, seq_log_ratio};

/* Clip-Cov: the PPO term, dropped (value and gradient) on a drawn token. */
double or1_clip_cov_token(double rho, double adv, double lo, double hi, bool cov_clipped, double *g, bool *clipped) {
    double v = ppo_clip(rho, rho, adv, lo, hi, g, clipped);
    if (!cov_clipped) return v;
    *g = 0.0;
    return 0.0;
}

/* Clip-Cov on a token, its draw read from the selection flags. */
static double clip_cov_term(const or1_loss_cfg *c, const pg_token *t, double *g, bool *clipped) {
    return or1_clip_cov_token(t->rho, t->adv, 1.0 - c->clip_low, 1.0 + c->clip_high, t->sel & OR1_SEL_COV_CLIP, g,
                              clipped);
}
static const pg_mode pg_clip_cov = {clip_cov_term, NULL};

/* KL-Cov: the unclipped surrogate, plus coef |log rho| on a selected token (its gradient
 * coef sign(log rho), 0 at 0 as torch.abs gives). */
double or1_kl_cov_token(double log_ratio, double adv, double coef, bool selected, double *g) {
    double rho = exp(log_ratio);
    *g = -adv * rho;
    if (!selected) return -adv * rho;
    *g += coef * (double)((log_ratio > 0) - (log_ratio < 0));
    return -adv * rho + coef * fabs(log_ratio);
}

/* KL-Cov on a token, its selection read from the flags (no clip). */
static double kl_cov_term(const or1_loss_cfg *c, const pg_token *t, double *g, bool *clipped) {
    (void)clipped;
    return or1_kl_cov_token(t->log_ratio, t->adv, c->kl_cov_coef, t->sel & OR1_SEL_COV_KL, g);
}
static const pg_mode pg_kl_cov = {kl_cov_term, NULL};

/* GMPO's token log-ratio l clipped to [-clip_low, clip_high] on the side the sign of A makes
 * binding: sgn(A) min(sgn(A) l, sgn(A) clip(l)); 0 when A = 0 (verl compute_policy_loss_geo_mean). */
static double gmpo_clip(const or1_loss_cfg *c, double lr, double adv) {
    double cl = lr < -c->clip_low ? -c->clip_low : lr > c->clip_high ? c->clip_high : lr;
    if (adv > 0) return lr < cl ? lr : cl;
    if (adv < 0) return lr > cl ? lr : cl;
    return 0.0;
}

/* GMPO's log r_i: the mean of the clipped log-ratios of the sequence's trained tokens (0 without
 * old log-probs or such a token). */
static double gmpo_seq(const or1_loss_cfg *c, const or1_sample *x, const float *logp) {
    int len = or1_sample_len(x);
    if (!x->old_logp || len == 0) return 0.0;
    double sum = 0.0;
    for (int j = 0; j < x->n_resp; j++)
        if (or1_sample_trains(x, j)) sum += gmpo_clip(c, (double)logp[j] - (double)x->old_logp[j], x->adv);
    return sum / (double)len;
}

/* GMPO (Zhao et al. 2025, arXiv 2507.20673): -A r_i on every token of the sequence, r_i =
 * exp(gmpo_seq) the geometric mean of the clipped token ratios; its derivative in a token's
 * log-prob is -A r_i / L_i where the clip lets the log-ratio through, else 0 (the 1 / L_i comes
 * with the seq-mean-token-mean weight). */
static double gmpo_term(const or1_loss_cfg *c, const pg_token *t, double *g, bool *clipped) {
    double v = -t->adv * exp(t->seq);
    *clipped = t->adv != 0 && gmpo_clip(c, t->log_ratio, t->adv) != t->log_ratio;
    *g = *clipped ? 0.0 : v;
    return v;
}
static const pg_mode pg_gmpo = {gmpo_term, gmpo_seq};

/* Each policy-loss mode, in the order of OR1_PG_MODES. */
#define PG_ROW_MODE(e, name, mode) &mode,
static const pg_mode *const PG_MODES[] = {OR1_PG_MODES(PG_ROW_MODE)};

/* The statistic of sequence x (its log-probs logp) that c->mode's term reads; 0 for a
 * token-level mode. */
double or1_pg_seq_stat(const or1_loss_cfg *c, const or1_sample *x, const float *logp) {
    return PG_MODES[c->mode]->seq ? PG_MODES[c->mode]->seq(c, x, logp) : 0.0;
}

/* Whether c->mode's term is sequence-level (aggregated seq-mean-token-mean). */
bool or1_pg_seq_level(const or1_loss_cfg *c) { return PG_MODES[c->mode]->seq != NULL; }

/* One token's policy-gradient term under c->mode: log_ratio is log(pi/pi_old) of the token,
 * seq its sequence's statistic (or1_pg_seq_stat), sel its selection flags. A token below the
 * top-entropy threshold has no pg term at all. */
double or1_pg_token_loss(const or1_loss_cfg *c, double log_ratio, double seq, float logp, float adv, uint8_t sel,
                         float *d_logp, bool *clipped) {
    pg_token t = {log_ratio, exp(log_ratio), seq, adv, logp, sel};
    double g = 0.0;
    *clipped = false;
    double v = PG_MODES[c->mode]->term(c, &t, &g, clipped);
    if (sel & OR1_SEL_LOW_ENTROPY) v = 0.0, g = 0.0, *clipped = false;
    *d_logp = (float)g;
    return v;
}

/* Eq. (3.1) per token: the policy-gradient term of c->mode on rho = exp(logp - old_logp)
 * (GSPO reads it as a one-token sequence), minus the entropy bonus. */
double or1_magic_token_loss(float logp, float old_logp, float adv, const or1_loss_cfg *c,
                            float *d_logp, float *d_entropy, bool *clipped) {
    *d_entropy = -c->entropy_coef;
    double lr = (double)logp - (double)old_logp;
    return or1_pg_token_loss(c, lr, lr, logp, adv, 0, d_logp, clipped);
}

/* token-mean: 1 / T. */
static double agg_token_mean(int len, const or1_loss_norm *norm, double scale) {
    (void)len, (void)scale;
    return norm->tokens > 0 ? 1.0 / (double)norm->tokens : 0.0;
}

/* The sequence count N of a mini-batch (1 when it has none). */
static double agg_seqs(const or1_loss_norm *norm) { return norm->seqs > 0 ? (double)norm->seqs : 1.0; }

/* seq-mean-token-mean: 1 / (N L_i). */
static double agg_seq_mean(int len, const or1_loss_norm *norm, double scale) {
    (void)scale;
    return len > 0 ? 1.0 / (agg_seqs(norm) * (double)len) : 0.0;
}

/* seq-mean-token-sum: 1 / N. */
static double agg_seq_sum(int len, const or1_loss_norm *norm, double scale) {
    (void)len, (void)scale;
    return 1.0 / agg_seqs(norm);
}

/* seq-mean-token-sum-norm: 1 / (N C). */
static double agg_seq_sum_norm(int len, const or1_loss_norm *norm, double scale) {
    (void)len;
    return scale > 0 ? 1.0 / (agg_seqs(norm) * scale) : 0.0;
}

/* The token weight of each aggregation, in the order of OR1_LOSS_AGGS. */
typedef double (*agg_weight_fn)(int len, const or1_loss_norm *norm, double scale);
#define AGG_ROW_FN(e, name, fn) fn,
static const agg_weight_fn AGG_WEIGHTS[] = {OR1_LOSS_AGGS(AGG_ROW_FN)};

/* verl agg_loss as dp_actor.py scales it to the mini-batch: the weight of each token of a
 * sequence of len tokens (see or1_loss_agg). */
double or1_agg_token_weight(or1_loss_agg agg, int len, const or1_loss_norm *norm, double scale) {
    return AGG_WEIGHTS[agg](len, norm, scale);
}


/* L_i: the response tokens the mask keeps. */
int or1_sample_len(const or1_sample *x) {
    if (!x->mask) return x->n_resp;
    int n = 0;
    for (int j = 0; j < x->n_resp; j++) n += x->mask[j] != 0;
    return n;
}

/* T and N of a mini-batch grow by x's trained tokens (and by x when it has any). */
void or1_loss_norm_add(or1_loss_norm *norm, const or1_sample *x) {
    int len = or1_sample_len(x);
    norm->tokens += len;
    norm->seqs += len > 0;
}

/* Eq. (3.1) token by token: the policy-gradient term, entropy bonus, optional KL; gradients
 * weighted as cfg->agg aggregates them over the mini-batch (GSPO's term seq-mean-token-mean).
 * A token the mask drops gets no term, no gradient and no place in the statistics. */
void or1_policy_token_grads(const or1_sample *s, int n, const float *logp, const float *ent, const uint8_t *sel,
                            const or1_loss_norm *norm, const or1_loss_cfg *cfg, float *g_logp, float *g_entropy,
                            or1_loss_stats *st) {
    for (int i = 0, k = 0; i < n; i++) {
        const or1_sample *x = &s[i];
        int len = or1_sample_len(x);
        double w = or1_agg_token_weight(cfg->agg, len, norm, cfg->scale);
        double w_pg = or1_pg_seq_level(cfg) ? or1_agg_token_weight(OR1_AGG_SEQ_MEAN_TOKEN_MEAN, len, norm, 0) : w;
        double seq = or1_pg_seq_stat(cfg, x, logp + k);
        const float *behaviour = x->rollout_logp ? x->rollout_logp : x->old_logp;
        bool dropped = cfg->offpolicy_mask && behaviour &&
                       or1_offpolicy_seq_masked(behaviour, logp + k, x->n_resp, x->mask, x->adv, cfg->offpolicy_delta);
        double seq_is = x->rollout_logp ? or1_rollout_is_seq_stat(cfg->is, x->old_logp ? x->old_logp : logp + k,
                                                                  x->rollout_logp, x->n_resp, x->mask)
                                        : 0.0;
        for (int j = 0; j < x->n_resp; j++, k++) {
            if (!or1_sample_trains(x, j)) {
                g_logp[k] = g_entropy[k] = 0.0f;
                continue;
            }
            float old = x->old_logp ? x->old_logp[j] : logp[k], dlp;
            bool clipped;
            uint8_t f = sel ? sel[k] : 0;
            double pg = or1_pg_token_loss(cfg, (double)logp[k] - (double)old, seq, logp[k], x->adv, f, &dlp, &clipped);
            st->cov_selected += (f & (OR1_SEL_COV_CLIP | OR1_SEL_COV_KL)) != 0;
            st->low_entropy += (f & OR1_SEL_LOW_ENTROPY) != 0;
            if (x->rollout_logp) {
                or1_mismatch_add(&st->mismatch, logp[k], x->rollout_logp[j]);
                if (cfg->is != OR1_IS_NONE) {
                    double wis = or1_rollout_is_weight(cfg->is, cfg->is_low, cfg->is_high, old, x->rollout_logp[j], seq_is);
                    pg *= wis, dlp = (float)(dlp * wis);
                    st->is_weight += wis, st->is_masked += wis == 0;
                }
            }
            if (dropped) pg = 0.0, dlp = 0.0f, st->offpolicy_masked++;
            double kl = 0, dkl = 0;
            if (cfg->kl_coef != 0 && x->ref_logp) kl = or1_kl_token(&cfg->kl, logp[k], x->ref_logp[j], &dkl);
            st->pg_loss += pg;
            st->entropy += ent[k];
            st->kl += kl;
            st->logp += logp[k];
            st->loss += pg - cfg->entropy_coef * ent[k] + cfg->kl_coef * kl;
            st->objective += w_pg * pg + w * (cfg->kl_coef * kl - cfg->entropy_coef * ent[k]);
            st->clipped += clipped;
            st->clipped_pos += clipped && x->adv > 0;
            st->clipped_neg += clipped && x->adv < 0;
            if (st->entropies) or1_values_push(st->entropies, ent[k]);
            st->tokens++;
            g_logp[k] = (float)(w_pg * dlp + w * cfg->kl_coef * dkl);
            g_entropy[k] = (float)(w * -cfg->entropy_coef);
        }
    }
}

/* The names of the aggregations (as verl spells loss_agg_mode) and policy-loss modes. */
ALGO_REGISTRY_NAMES(OR1_LOSS_AGGS, or1_loss_agg, loss_agg, "loss aggregation")
ALGO_REGISTRY_NAMES(OR1_PG_MODES, or1_pg_mode, pg_mode, "policy loss mode")

