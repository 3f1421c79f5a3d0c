/* or1 algo: the per-step formulas of the Skywork-OR1 (MAGIC) recipe around the policy loss,
 * as small pure functions, the policy loss of eq. (3.1) among them.
 *
 * Citations: "paper" is the Skywork-OR1 technical report, arXiv 2505.22312 (section, equation,
 * table); code is named by file and function, in verl or in Skywork-OR1's fork of it, and
 * DAPO / Dr. GRPO by their papers and public code.
 *
 * Samples are indexed 0..n-1; a group is the set of samples of one prompt, named by an
 * arbitrary int id per sample (a group's samples need not be adjacent).
 * Group statistics are computed in double precision. */
#ifndef OR1_ALGO_H
#define OR1_ALGO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct cJSON cJSON;

/* ---- Registries --------------------------------------------------------------------------
 * Every enumerated setting is one table of rows X(ENUM, "name", function): the enum, the names
 * that its or1_*_parse accepts and or1_*_name returns, and the choices that the config schema
 * and the or1 flags list are all made from the rows, so a new mode is its row and, where the
 * table names one, its function (the column is empty where the callers dispatch on the enum). */
#define OR1_ROW_NAME(e, name, x) name,
#define OR1_ROW_BAR(e, name, x) "|" name
#define OR1_ROW_SPACED(e, name, x) " | " name
/* "a|b|c" and "a | b | c" of a table (the joined literal past its first separator). */
#define OR1_CHOICES(TABLE) (&(TABLE(OR1_ROW_BAR))[1])
#define OR1_CHOICES_SPACED(TABLE) (&(TABLE(OR1_ROW_SPACED))[3])

/* ---- GRPO advantages (paper eq. (2.5); verl compute_grpo_outcome_advantage) ------------- */

/* The GRPO epsilon added to the group standard deviation. */
#define OR1_GRPO_EPS 1e-6

/* Outcome advantage per sample:
 *   GRPO:     A_j = (s_j - mean_g) / (std_g + eps),  std unbiased (divisor m-1);
 *   Dr. GRPO: A_j =  s_j - mean_g                     (norm_by_std = false);
 * over the m samples of the group that have use[j] set (use NULL: all). A group with one
 * used sample has mean 0 and std 1 (its advantage is its raw score, as verl does). Samples
 * with use[j] false get A_j = 0 and do not enter any group's statistics. */
void or1_grpo_advantages(const float *scores, const int32_t *group, const bool *use, size_t n,
                         bool norm_by_std, double eps, float *adv);

/* ---- Outcome-advantage estimators: a registry --------------------------------------------- */

/* The estimator of a step's advantages (used samples: use[j] set, use NULL: all; others get 0;
 * mean_g over the group's used samples, 0 for a group of one; len: response lengths). Each row
 * names its definition in src/algo/adv_est.c: its function and whether it divides by a std.
 *   GRPO            (s - mean_g) / (std_g + eps)             or1_grpo_advantages
 *   DRGRPO           s - mean_g                              or1_grpo_advantages
 *   RLOO             s - mean of the other samples of g = (s - mean_g) m / (m - 1), the raw
 *                    score for a group of one (Ahmadian et al. 2024, arXiv 2402.14740 eq. (7);
 *                    verl compute_rloo_outcome_advantage)
 *   RPP_BASELINE     x = s - mean_g, whitened over the batch as verl's masked_whiten does over
 *                    response tokens, each sample weighted by len: (x - mu) / sqrt(var + 1e-8),
 *                    mu = sum len x / (L + 1e-8), var = sum len (x - mu)^2 / (L + 1e-8) L / (L - 1),
 *                    L = sum len over used samples; var 1 with L < 2 (verl raises)
 *                    (REINFORCE++-baseline, Hu et al., arXiv 2501.03262; verl
 *                    compute_reinforce_plus_plus_baseline_outcome_advantage)
 *   GRPO_BATCH_STD  (s - mean_g) / (std_batch + eps), std_batch the unbiased std of the used
 *                    scores of the batch, 1 with fewer than two (LitePPO, Liu et al. 2025,
 *                    arXiv 2508.08221 §4.1)
 *   OPO              s - sum_g len s / sum_g len, the length-weighted mean of the group; 0 for a
 *                    group of one, the plain mean where the lengths sum to 0 (Hao et al. 2025,
 *                    arXiv 2505.23585; verl compute_opo_outcome_advantage) */
#define OR1_ADV_ESTIMATORS(X)                                 \
    X(GRPO, "grpo", adv_grpo)                                 \
    X(DRGRPO, "drgrpo", adv_drgrpo)                           \
    X(RLOO, "rloo", adv_rloo)                                 \
    X(RPP_BASELINE, "reinforce++-baseline", adv_rpp_baseline) \
    X(GRPO_BATCH_STD, "grpo-batch-std", adv_grpo_batch_std)   \
    X(OPO, "opo", adv_opo)
#define OR1_ADV_ROW_ENUM(e, name, x) OR1_ADV_##e,
typedef enum { OR1_ADV_ESTIMATORS(OR1_ADV_ROW_ENUM) } or1_adv_estimator;

int or1_adv_estimator_parse(const char *s, or1_adv_estimator *out, const char *where);
const char *or1_adv_estimator_name(or1_adv_estimator e);

/* The estimator's advantages. */
void or1_outcome_advantages(or1_adv_estimator est, const float *scores, const int32_t *group, const bool *use,
                            const int *len, size_t n, double eps, float *adv);

/* ---- Truncated-response advantage mask (paper §3.2.3, Table 2) -------------------------- */

/* What happens to responses that hit the length limit without EOS ("truncated"):
 *   NONE   (the Skywork recipe): nothing; a truncated response keeps its score (0 from the
 *          verifier, as it has no final answer), enters its group's mean/std, gets its
 *          advantage, and its tokens count in the loss and in the normaliser T_k.
 *   BEFORE ("Adv-Mask-Before"): truncated responses are removed before the group statistics:
 *          mean/std (and the rejection test) use the group's non-truncated responses only;
 *          truncated responses get A = 0 and are masked out of the loss: their tokens are in
 *          neither the PG sum, the entropy term, nor T_k. A group left with one non-truncated
 *          response has mean 0, std 1 (A = its score); one left with none is all-masked.
 *   AFTER  ("Adv-Mask-After"): advantages (and the rejection test) use every response of the
 *          group, truncated included; then truncated responses get A = 0 and are masked out of
 *          the loss and of T_k, as for BEFORE. */
#define OR1_TRUNC_MASKS(X) \
    X(NONE, "none", )      \
    X(BEFORE, "before", )  \
    X(AFTER, "after", )
#define OR1_TRUNC_ROW_ENUM(e, name, x) OR1_TRUNC_##e,
typedef enum { OR1_TRUNC_MASKS(OR1_TRUNC_ROW_ENUM) } or1_trunc_mask;

/* Parses "none" | "before" | "after"; -1 with an error naming `where` otherwise. */
int or1_trunc_mask_parse(const char *s, or1_trunc_mask *out, const char *where);
const char *or1_trunc_mask_name(or1_trunc_mask m);

/* Which samples enter the group statistics (in_stats) and which count in the loss and its
 * normaliser (in_loss), for the mode above; truncated NULL means none is. */
void or1_trunc_masks(const bool *truncated, size_t n, or1_trunc_mask mode, bool *in_stats,
                     bool *in_loss);

/* ---- Rejection of zero-advantage groups (paper §3.1) ------------------------------------ */

/* Verdict on one group. */
typedef enum {
    OR1_GROUP_KEPT,
    OR1_GROUP_SOLVE_NONE, /* every counted reward is 0 */
    OR1_GROUP_SOLVE_ALL,  /* every counted reward is 1 */
    OR1_GROUP_CONSTANT,   /* every counted reward equal, neither 0 nor 1 */
    OR1_GROUP_EMPTY,      /* no counted sample (e.g. all truncated under mask BEFORE) */
    OR1_GROUP_REWARD_ERRORS, /* rewards failed, fewer than two decided ones left (always rejected) */
} or1_group_verdict;

/* Groups of one batch in first-appearance order, and their verdicts. */
typedef struct {
    size_t n_groups;
    int32_t *ids;               /* group id of each group, first-appearance order */
    or1_group_verdict *verdict; /* per group */
    size_t kept, solve_none, solve_all, constant, empty, reward_errors;
} or1_rejection;

/* Paper §3.1: a group whose counted rewards are all equal has zero advantage everywhere and
 * is rejected (kept[j] false for its samples); the others are kept. Counted samples are those
 * with use[j] (NULL: all). With keep_single, a group with exactly one counted sample is kept
 * (DAPO's dynamic sampling keeps them; its GRPO advantage is its raw score); without it
 * (Skywork: all-0 / all-1) it is rejected like any constant group. Fills *r (free with
 * or1_rejection_free) and kept[n]. */
void or1_reject_groups(const float *scores, const int32_t *group, const bool *use, size_t n,
                       bool keep_single, or1_rejection *r, bool *kept);
void or1_rejection_free(or1_rejection *r);
const char *or1_group_verdict_name(or1_group_verdict v);

/* ---- DAPO-style refill of rejected groups (verl recipe/dapo dapo_ray_trainer.py) -------- */

/* What the trainer does after a generation round. */
typedef enum {
    OR1_REFILL_TRAIN, /* enough kept groups (or no round left): train on the taken ones */
    OR1_REFILL_MORE,  /* sample another round of prompts and add its kept groups */
    OR1_REFILL_SKIP,  /* no group kept and no round left: skip the step */
} or1_refill_action;

/* Decides after `rounds_done` rounds (>= 1) that together kept `kept_groups` groups, when
 * `need` groups are wanted (the step's N) and at most `max_rounds` rounds are allowed
 * (max_rounds 1 = no refill, the Skywork recipe: train on what was kept). Never loops
 * forever: with rounds_done >= max_rounds the answer is TRAIN or SKIP, and it is never
 * TRAIN with no kept group. */
or1_refill_action or1_refill_decide(size_t kept_groups, int rounds_done, size_t need, int max_rounds);

/* Marks in take[] the first `need` kept groups in order (group_kept[g] true), i.e. DAPO's
 * truncation to the train batch size; returns how many were taken. */
size_t or1_refill_take(const bool *group_kept, size_t n_groups, size_t need, bool *take);

/* ---- Length shaping of the reward ------------------------------------------------------ */

/* DAPO's soft overlong punishment (Yu et al. 2025, arXiv 2503.14476 eq. (13)) of a response of
 * len tokens under the limit max_len (L_max) with a buffer of L_cache tokens, times factor:
 * 0 up to L_max - L_cache, then falling linearly to -factor at L_max (-factor beyond). */
double or1_overlong_penalty(int len, int max_len, int buffer, double factor);

/* The reward settings that shape the verifier's score by length. */
typedef struct {
    bool overlong;             /* reward.overlong_buffer.enable */
    int overlong_len;          /* reward.overlong_buffer.len: L_cache */
    double overlong_penalty;   /* reward.overlong_buffer.penalty: the factor */
    double truncation_penalty; /* reward.truncation_penalty: subtracted from a truncated response */
} or1_length_cfg;

/* out[i] = scores[i] + or1_overlong_penalty (if on) - truncation_penalty * truncated[i]
 * (truncated NULL: none is); NaN (a failed reward) stays NaN. */
void or1_length_rewards(const or1_length_cfg *c, const float *scores, const int *len, const bool *truncated,
                        size_t n, int max_len, float *out);

/* ---- Whole-step advantage pipeline ------------------------------------------------------ */

/* Settings of the advantage stage of one step. */
typedef struct {
    or1_adv_estimator estimator; /* GRPO (the recipe) or another, see above */
    double eps;         /* OR1_GRPO_EPS */
    or1_trunc_mask trunc;
    bool reject;        /* drop zero-advantage groups (paper §3.1) */
    bool keep_single;   /* see or1_reject_groups */
} or1_adv_cfg;

/* Refuses (-1, an error naming `where`, the eps key) eps 0 for an estimator that divides by a
 * standard deviation while groups of equal scores are not rejected (their std is 0). */
int or1_adv_cfg_check(const or1_adv_cfg *c, const char *where);

/* The recipe's order for one step: truncation masks, then rejection, then advantages over
 * the kept groups' counted samples (len: response lengths, for the estimators that read them).
 * Outputs per sample: adv (0 where not in_loss or
 * rejected), in_loss (the sample's tokens count in eq. (3.1) and T_k: kept and not masked).
 * The verdicts go to *r (free with or1_rejection_free). Without cfg->reject the verdicts
 * are still reported (for the metrics) but every group enters the loss. A NaN score marks a
 * sample whose reward failed (reward.h): it is in neither the statistics nor the loss, and a
 * group it leaves with fewer than two decided samples is rejected (reward_errors) even without
 * cfg->reject. */
void or1_step_advantages(const or1_adv_cfg *cfg, const float *scores, const int32_t *group,
                         const bool *truncated, const int *len, size_t n, float *adv, bool *in_loss,
                         or1_rejection *r);

/* ---- Adaptive entropy control (Skywork-OR1 core_algos.py EntController) ----------------- */

#define OR1_ENTROPY_MODES(X)  \
    X(ADAPTIVE, "adaptive", ) \
    X(CONSTANT, "constant", ) \
    X(OFF, "off", )
#define OR1_ENT_ROW_ENUM(e, name, x) OR1_ENT_##e,
typedef enum { OR1_ENTROPY_MODES(OR1_ENT_ROW_ENUM) } or1_entropy_mode;
/* When the adaptive controller moves: once per step from the step's entropy (the paper), or
 * after every mini-batch from that mini-batch's entropy (entropy.update: minibatch). */
#define OR1_ENTROPY_CADENCES(X)     \
    X(PER_STEP, "step", )           \
    X(PER_MINIBATCH, "minibatch", )
typedef enum { OR1_ENTROPY_CADENCES(OR1_ENT_ROW_ENUM) } or1_entropy_cadence;

typedef struct {
    or1_entropy_mode mode;
    double target;  /* tgt-ent, 0.2 */
    double delta;   /* step of the coefficient, 1e-4 (final scripts) */
    double c_min;   /* 0 */
    double c_max;   /* 5e-3 */
    double initial; /* c_0 (adaptive), or the constant coefficient; 0 */
    or1_entropy_cadence update; /* per step (default) or per mini-batch */
} or1_entropy_params;

/* The controller's state, saved in checkpoints. */
typedef struct {
    double coef;  /* c_k */
    bool enabled; /* the enable gate */
} or1_entropy_ctl;

/* The final training scripts' values (adaptive mode), written once: or1_entropy_defaults
 * returns them and the trainer's config schema takes its defaults from them. */
#define OR1_ENT_TARGET 0.2
#define OR1_ENT_DELTA 1e-4
#define OR1_ENT_C_MIN 0
#define OR1_ENT_C_MAX 5e-3
#define OR1_ENT_INITIAL 0
or1_entropy_params or1_entropy_defaults(void);
int or1_entropy_mode_parse(const char *s, or1_entropy_mode *out, const char *where);
const char *or1_entropy_mode_name(or1_entropy_mode m);
/* "step" | "minibatch" (entropy.update); errors name `where`. */
int or1_entropy_cadence_parse(const char *s, or1_entropy_cadence *out, const char *where);
const char *or1_entropy_cadence_name(or1_entropy_cadence c);
/* c = initial, enabled = 1 (so the first step's alpha is c_0). */
void or1_entropy_init(or1_entropy_ctl *s, const or1_entropy_params *p);
/* alpha_k for the current step: c * enabled (adaptive), the constant, or 0 (off). */
double or1_entropy_alpha(const or1_entropy_ctl *s, const or1_entropy_params *p);
/* After a completed step (or mini-batch, per mini-batch cadence) with entropy estimate e (as
 * EntController): c += delta if e < target else c -= delta; c = clip(c, c_min, c_max);
 * enabled = (e < target). No-op unless adaptive. */
void or1_entropy_update(or1_entropy_ctl *s, const or1_entropy_params *p, double e);
/* The entropy estimate the controller reads: -(token mean of the sampled tokens' log-probs
 * under the pre-update policy) over the used responses (use NULL: all). 0 if no token. */
double or1_entropy_estimate(const float *const *logp, const int *len, const bool *use, size_t n);
/* Its numerator and denominator: sums[0] = -(sum of the log-probs), sums[1] = their count,
 * over the tokens the model sampled (mask NULL, or mask[i] NULL: every token of response i;
 * else those whose mask is 1). */
void or1_entropy_sums(const float *const *logp, const int *len, const uint8_t *const *mask, const bool *use, size_t n,
                      double sums[2]);
/* State as a small JSON object {"coef": c, "enabled": b}, and back (errors name `where`). */
cJSON *or1_entropy_state_json(const or1_entropy_ctl *s);
int or1_entropy_state_load(or1_entropy_ctl *s, const cJSON *j, const char *where);

/* ---- KL to a frozen reference, as verl core_algos.py kl_penalty defines them ------------ */

typedef enum { OR1_KL_K1, OR1_KL_ABS, OR1_KL_K2, OR1_KL_K3 } or1_kl_kind;

typedef struct {
    or1_kl_kind kind;
    bool straight_through; /* name ends in '+': value of kind, gradient of k2 */
} or1_kl_estimator;

/* Parses "k1"|"kl", "abs", "k2"|"mse", "k3"|"low_var_kl", optionally with a '+' suffix. */
int or1_kl_parse(const char *s, or1_kl_estimator *out, const char *where);
const char *or1_kl_name(or1_kl_kind k);
/* One token's estimate with d = logp - ref_logp:
 *   k1 = d;  abs = |d|;  k2 = d^2/2;  k3 = clamp(e^x - x - 1, -10, 10), x = clamp(-d, -20, 20).
 * Sets *d_logp to its derivative w.r.t. logp (clamps pass the gradient on their closed
 * range, as torch.clamp; |d| has gradient 0 at 0). The trainer adds beta * d_logp / T_k to
 * the token's loss gradient. */
double or1_kl_token(const or1_kl_estimator *e, double logp, double ref_logp, double *d_logp);

/* ---- pass@k and avg@k (paper §8.1; Chen et al. 2021) ------------------------------------ */

/* Unbiased pass@k from n samples with c correct: 1 - C(n-c, k) / C(n, k), computed as
 * 1 - prod_{i=n-c+1..n} (1 - k/i). NaN unless 1 <= k <= n and 0 <= c <= n. */
double or1_pass_at_k(int n, int c, int k);

/* One evaluated problem. */
typedef struct {
    const char *data_source;
    int n, correct; /* samples scored (drawn, less those whose reward failed), samples correct */
} or1_eval_result;

/* Aggregates problems overall and per data_source into a JSON object
 *   {"overall": G, "by_source": {"<source>": G, ...}},
 *   G = {"problems": P, "n": n, "avg@n": mean c/n, "pass@1": .., "pass@2": .., "pass@4": ..,
 *        ..., "pass@n": ..}
 * with n = n_drawn and k = 1, 2, 4, ... below n, then n itself. Each problem counts with its
 * own scored n_i <= n_drawn: avg@n is the mean of c_i/n_i over problems with n_i >= 1 (P of
 * them), pass@k the mean over problems with n_i >= k (null when none), so that a sample whose
 * reward failed is left out instead of counted wrong. NULL with an error when there is no
 * problem or some correct > n_i or n_i > n_drawn. */
cJSON *or1_passk_report(const or1_eval_result *r, size_t n, int n_drawn);

/* ---- Per-step batch metrics ----------------------------------------------------------------- */

/* What the metrics row reports about one step's rollout batch (before rejection unless
 * stated). */
typedef struct {
    size_t samples, groups;
    double reward_mean;     /* mean score */
    double accuracy;        /* fraction of samples with score >= 1 (correct) */
    double solve_none_ratio, solve_all_ratio; /* of groups */
    size_t kept_groups, kept_samples;
    double resp_len_mean;
    int resp_len_max;
    double truncated_ratio;
    size_t loss_tokens;     /* T_k: response tokens of the samples in the loss */
    size_t acc_hist[10];    /* groups by accuracy in 10% bins: [0,.1), ..., [.9,1] */
} or1_batch_stats;

/* Fills *st from per-sample scores, lengths, the tokens the loss trains (trained NULL: every
 * token; with tools a reply's tokens count in len only), truncation flags, loss inclusion
 * (in_loss NULL: all) and the rejection verdicts of the same batch. Samples with a NaN score
 * (reward failed) are left out of the reward mean, the accuracy and the histogram. */
void or1_batch_stats_compute(const float *scores, const int32_t *group, const int *len, const int *trained,
                             const bool *truncated, const bool *in_loss, size_t n,
                             const or1_rejection *r, or1_batch_stats *st);
/* Adds the fields of *st to a JSON object (the trainer's metrics row). */
void or1_batch_stats_json(const or1_batch_stats *st, cJSON *row);

/* ---- The policy loss, eq. (3.1) (paper §3.1) -------------------------------------------- */

/* ---- Rollout / training mismatch (verl's rollout_correction, token level) -------------- */

/* The sampler (rollout engine) and the trainer compute log-probs with different kernels; on a
 * GPU in different precisions. With the training engine's log-prob of the sampling policy,
 * old_logp, and the sampler's, rollout_logp, each token gets the importance weight of
 * r = exp(old_logp - rollout_logp):
 *   NONE: 1;  TIS (truncated importance sampling, Yao et al. 2025): min(r, high);
 *   MIS (masked importance sampling): 1 when low <= r <= high, else 0 (the token stays in the
 *   token count T_k, contributing nothing);
 *   MIS_GEO: MIS on the sequence's geometric-mean ratio exp(mean_t log r_t): every token of a
 *   sequence outside [low, high] gets 0 (verl rollout_rs "geometric");
 *   DECOUPLED: r itself, untruncated and ignoring low and high: the decoupled PPO objective
 *   (Hilton et al., arXiv 2110.00641; AReaL's use_decoupled_loss) for asynchronous training,
 *   where old_logp is pi_prox (the trainer's weights at the start of the step) and rollout_logp
 *   pi_behav (the possibly stale weights that sampled): each token's term is
 *   w * min(rho*A, clip(rho, 1-clip_low, 1+clip_high)*A) with w = pi_prox/pi_behav, a constant
 *   (no gradient flows through it), and rho = pi_theta/pi_prox, so the clip is centred on
 *   pi_prox rather than on the stale sampler.
 * The weight multiplies the policy-gradient term of eq. (3.1). Each row names its definition in
 * src/algo/correction.c: the token's weight, for a sequence-level mode the statistic of each
 * sequence that the weight reads, and whether it keeps ratios inside [low, high]. */
#define OR1_ROLLOUT_IS_MODES(X)       \
    X(NONE, "none", is_none)          \
    X(TIS, "tis", is_tis)             \
    X(MIS, "mis", is_mis)             \
    X(MIS_GEO, "mis-geo", is_mis_geo) \
    X(DECOUPLED, "decoupled", is_decoupled)
#define OR1_IS_ROW_ENUM(e, name, x) OR1_IS_##e,
typedef enum { OR1_ROLLOUT_IS_MODES(OR1_IS_ROW_ENUM) } or1_rollout_is_mode;

int or1_rollout_is_parse(const char *s, or1_rollout_is_mode *out, const char *where);
const char *or1_rollout_is_name(or1_rollout_is_mode m);
/* The statistic of a sequence of n tokens that mode's weight reads (MIS_GEO: the mean of
 * old - rollout over the tokens mask keeps, NULL: all; 0 for none); 0 for a token-level mode. */
double or1_rollout_is_seq_stat(or1_rollout_is_mode mode, const float *old_logp, const float *rollout_logp, int n,
                               const uint8_t *mask);
/* One token's weight under mode, seq its sequence's statistic (or1_rollout_is_seq_stat). */
double or1_rollout_is_weight(or1_rollout_is_mode mode, double low, double high, float old_logp, float rollout_logp,
                             double seq);
/* Refuses (-1, an error naming `where`) low above high for a mode that keeps ratios inside
 * [low, high] (MIS, MIS_GEO): it would keep none. */
int or1_rollout_is_check(or1_rollout_is_mode mode, double low, double high, const char *where);

/* DeepSeek-V3.2's off-policy sequence mask (arXiv 2512.02556, its eq. for M_i,t): a sequence
 * with A < 0 whose mean log(pi_behaviour / pi_theta) over its n tokens exceeds delta is
 * dropped from the policy-gradient term:
 *   M_i = 0 if A_i < 0 and (1/|o_i|) sum_t log(pi_old(o_t) / pi_theta(o_t)) > delta, else 1,
 * pi_old being the policy that sampled o_i (the sampler's log-probs), |o_i| the tokens mask keeps
 * (NULL: all). True when masked. */
bool or1_offpolicy_seq_masked(const float *behaviour_logp, const float *logp, int n, const uint8_t *mask, float adv,
                              double delta);

/* Sums measuring the mismatch over tokens: |train - rollout| log-prob (sum and max), the
 * k3 estimate of KL(rollout || train), exp(d) - 1 - d with d = train - rollout, and the sums
 * of the importance weights w = exp(d) and w^2 for their effective sample size. */
typedef struct {
    double abs_sum, abs_max, k3_sum;
    double w_sum, w2_sum;
    long tokens;
} or1_mismatch;

void or1_mismatch_add(or1_mismatch *m, float train_logp, float rollout_logp);
/* The normalised effective sample size of the weights, (sum w)^2 / (n sum w^2) in (0, 1]
 * (Kong 1992; 1 when every weight is equal; 1 with no token). */
double or1_mismatch_ess(const or1_mismatch *m);

/* ---- The policy loss, eq. (3.1) --------------------------------------------------------- */

/* How the per-token terms of a mini-batch of N sequences (those with at least one response
 * token), T tokens in all, sequence i having L_i tokens, add up to the loss (verl
 * core_algos.py agg_loss, loss_agg_mode, as its dp_actor.py update_policy scales it to the
 * mini-batch). Each token of sequence i is weighted:
 *   TOKEN_MEAN               1 / T          (eq. (3.1); DAPO)
 *   SEQ_MEAN_TOKEN_MEAN      1 / (N L_i)    (original GRPO)
 *   SEQ_MEAN_TOKEN_SUM       1 / N
 *   SEQ_MEAN_TOKEN_SUM_NORM  1 / (N C)      (Dr. GRPO; C a constant, loss_scale_factor)
 * The entropy and KL terms are aggregated the same way (verl aggregates them with the same
 * mode). N and T count the whole mini-batch, so any micro-batch split gives the same sum. */
#define OR1_LOSS_AGGS(X)                                             \
    X(TOKEN_MEAN, "token-mean", agg_token_mean)                      \
    X(SEQ_MEAN_TOKEN_MEAN, "seq-mean-token-mean", agg_seq_mean)      \
    X(SEQ_MEAN_TOKEN_SUM, "seq-mean-token-sum", agg_seq_sum)         \
    X(SEQ_MEAN_TOKEN_SUM_NORM, "seq-mean-token-sum-norm", agg_seq_sum_norm)
#define OR1_AGG_ROW_ENUM(e, name, fn) OR1_AGG_##e,
typedef enum { OR1_LOSS_AGGS(OR1_AGG_ROW_ENUM) } or1_loss_agg;

int or1_loss_agg_parse(const char *s, or1_loss_agg *out, const char *where);
const char *or1_loss_agg_name(or1_loss_agg a);

/* The normalisers of one mini-batch: response tokens T and sequences N (with >= 1 token). */
typedef struct {
    long tokens, seqs;
} or1_loss_norm;

/* The weight of each token of a sequence of len tokens under agg (scale: C). */
double or1_agg_token_weight(or1_loss_agg agg, int len, const or1_loss_norm *norm, double scale);

/* The policy-gradient term per token (verl policy_loss.loss_mode), rho = pi/pi_old:
 *   PPO        max(-A rho, -A clip(rho, 1-eps_low, 1+eps_high))         (eq. (3.1); "vanilla")
 *   DUAL_CLIP  as PPO; for A < 0 then min(that, -A c)  (Ye et al. 2019; verl clip_ratio_c)
 *   CISPO      -sg(clip(rho, 1-eps_low, 1+eps_high)) A log pi           (MiniMax-M1 eq. (4))
 *   GSPO       PPO on the sequence ratio s_i = exp(mean_t log(pi/pi_old)) with the token-level
 *              straight-through form s_i,t = sg(s_i) pi_t / sg(pi_t) (GSPO eq. (7)-(10)),
 *              aggregated seq-mean-token-mean whatever the configured aggregation (verl).
 *   CLIP_COV   as PPO, but 0 (no value, no gradient) on the tokens the mini-batch selection
 *              marks OR1_SEL_COV_CLIP (Clip-Cov, Cui et al. 2025, arXiv 2505.22617)
 *   KL_COV     -A rho without clipping, plus kl_cov_coef |log rho| on the tokens marked
 *              OR1_SEL_COV_KL (KL-Cov, the same paper)
 * See or1_select_tokens for the selections. */
#define OR1_PG_MODES(X)                       \
    X(PPO, "ppo", pg_ppo)                     \
    X(DUAL_CLIP, "dual-clip", pg_dual_clip)   \
    X(CISPO, "cispo", pg_cispo)               \
    X(GSPO, "gspo", pg_gspo)                  \
    X(CLIP_COV, "clip-cov", pg_clip_cov)      \
    X(KL_COV, "kl-cov", pg_kl_cov)            \
    X(GMPO, "gmpo", pg_gmpo)
#define OR1_PG_ROW_ENUM(e, name, fn) OR1_PG_##e,
typedef enum { OR1_PG_MODES(OR1_PG_ROW_ENUM) } or1_pg_mode;

int or1_pg_mode_parse(const char *s, or1_pg_mode *out, const char *where);
const char *or1_pg_mode_name(or1_pg_mode m);

/* The published defaults of the modes' own settings. */
#define OR1_DUAL_CLIP_C 3.0
#define OR1_GSPO_CLIP_LOW 3e-4
#define OR1_GSPO_CLIP_HIGH 4e-4
#define OR1_CISPO_CLIP_LOW 10.0
#define OR1_CISPO_CLIP_HIGH 0.2
/* Clip-Cov and KL-Cov as the paper's Qwen2.5-7B runs and verl's recipe/entropy scripts set
 * them (verl's PolicyLossConfig defaults kl_cov_ratio to 2e-4 and ppo_kl_coef to 0.1; the
 * paper uses k = 2e-4 for its 32B model). */
#define OR1_CLIP_COV_RATIO 2e-4
#define OR1_CLIP_COV_LB 1.0
#define OR1_CLIP_COV_UB 5.0
#define OR1_KL_COV_RATIO 2e-3
#define OR1_KL_COV_COEF 1.0

/* Sums over the ranks that share a mini-batch: adds buf[0..n) of every rank in place on every
 * rank (a collective). NULL where one process holds the whole mini-batch. */
typedef struct {
    void (*sum)(void *ctx, double *buf, size_t n);
    void *ctx;
} or1_reducer;

/* ---- Percentiles over ranks ------------------------------------------------------------ */

/* A growable list of floats (the step's token entropies, for their percentiles). */
typedef struct {
    float *v;
    size_t n, cap;
} or1_values;

void or1_values_push(or1_values *l, float x);
void or1_values_free(or1_values *l);
/* The float whose key is k (or1_float_key's inverse). */
float or1_key_float(uint64_t k);
/* The nearest-rank q-quantile of the values of every rank: the ceil(q T)-th smallest of their
 * T values (at least the first; q in [0, 1]); NaN when there is none. Collective over r. */
double or1_quantile(const float *v, size_t n, double q, const or1_reducer *r);

/* Settings of the policy loss, eq. (3.1). */
typedef struct {
    float clip_low, clip_high; /* PPO ratio clip: [1 - clip_low, 1 + clip_high] */
    float entropy_coef;        /* alpha_k */
    float temperature;         /* logits are divided by it before log-probs and entropy */
    float kl_coef;             /* beta of the optional KL-to-reference term (0: off) */
    or1_kl_estimator kl;       /* its estimator (k1, k2, k3, abs as verl defines them) */
    or1_rollout_is_mode is;    /* rollout correction of each token's PPO term */
    float is_low, is_high;     /* its bounds (TIS: the cap is is_high) */
    or1_loss_agg agg;          /* aggregation of the token terms (token-mean: eq. (3.1)) */
    double scale;              /* C of SEQ_MEAN_TOKEN_SUM_NORM */
    or1_pg_mode mode;          /* the policy-gradient term */
    float clip_c;              /* DUAL_CLIP: c (> 1) */
    float gspo_low, gspo_high; /* GSPO: clip of the sequence ratio */
    float cispo_low, cispo_high; /* CISPO: clip of the (detached) weight */
    double clip_cov_ratio, clip_cov_lb, clip_cov_ub; /* CLIP_COV: share of tokens, covariance range */
    double kl_cov_ratio, kl_cov_coef;                /* KL_COV: share of tokens, penalty coefficient */
    double top_entropy;        /* rho of the 80/20 rule: pg only on the top rho by entropy (1: all) */
    uint64_t seed;             /* this mini-batch's seed of the Clip-Cov draws */
    bool offpolicy_mask;       /* DeepSeek-V3.2's off-policy sequence mask, with its delta */
    double offpolicy_delta;
    const or1_reducer *reduce; /* the ranks sharing the mini-batch (NULL: this process alone) */
} or1_loss_cfg;

/* ---- The loss options: one row each ----------------------------------------------------
 * X(key, flag, field, type, def, lo, hi, help): the trainer's config key, or1 grad's --flag,
 * the or1_loss_cfg field it sets and that field's type, the default, the accepted range and
 * the help. The config schema (or1 train --help-config), the config struct and its printer,
 * or1 grad's flags and their help, and the table of docs/algorithms.md are all made from these
 * rows; one table per config section, as the schema keeps sections together. */
#define OR1_BIG 1e9
#define OR1_CLIP_OPTIONS(X)                                                                                   \
    X("train.clip_low", "clip-low", clip_low, float, 0.2, 0, 1, "PPO ratio clip below: 1 - this")             \
    X("train.clip_high", "clip-high", clip_high, float, 0.2, 0, OR1_BIG, "PPO ratio clip above: 1 + this")
#define OR1_CORRECTION_OPTIONS(X)                                                                             \
    X("rollout_correction.low", "rollout-is-low", is_low, float, 0.5, 0, OR1_BIG, "MIS: lowest ratio kept")   \
    X("rollout_correction.high", "rollout-is-high", is_high, float, 2.0, 1e-9, OR1_BIG,                       \
      "TIS: the cap of the weight; MIS: highest ratio kept")
/* The loss's choices, one row each, X(key, flag, field, type, TABLE, name, def, help): as an
 * option row, with the field's enum type, the registry TABLE it names one row of, and the NAME
 * of its or1_NAME_parse and or1_NAME_name. Both parsers read and print them from these rows. */
#define OR1_CORRECTION_CHOICES(X)                                                                          \
    X("rollout_correction.mode", "rollout-is", is, or1_rollout_is_mode, OR1_ROLLOUT_IS_MODES, rollout_is, "none", \
      "weight (TIS) or mask (MIS: each token, mis-geo: each sequence by its geometric mean) by pi_train/pi_rollout; " \
      "decoupled: weight by it untruncated (decoupled PPO, for asynchronous training)")
#define OR1_LOSS_CHOICES(X)                                                                                \
    X("loss.agg", "loss-agg", agg, or1_loss_agg, OR1_LOSS_AGGS, loss_agg, "token-mean",                    \
      "how the token terms add up to the loss")                                                           \
    X("loss.mode", "loss-mode", mode, or1_pg_mode, OR1_PG_MODES, pg_mode, "ppo", "the policy-gradient term")
/* A choice row's field, declared with its enum type. */
#define OR1_CHOICE_FIELD(key, flag, field, type, TABLE, name, def, help) type field;
#define OR1_LOSS_OPTIONS(X)                                                                                   \
    X("loss.scale", "loss-scale", scale, double, 0, 0, OR1_BIG,                                           \
      "seq-mean-token-sum-norm: the constant C; 0: the stage's T in training, the longest response in or1 grad")           \
    X("loss.clip_ratio_c", "clip-ratio-c", clip_c, float, OR1_DUAL_CLIP_C, 1, OR1_BIG,                        \
      "dual-clip: cap -A*c of the term when A < 0 (c > 1)")                                                  \
    X("loss.gspo_clip_low", "gspo-clip-low", gspo_low, float, OR1_GSPO_CLIP_LOW, 0, 1,                        \
      "gspo: sequence ratio clip below, 1 - this")                                                           \
    X("loss.gspo_clip_high", "gspo-clip-high", gspo_high, float, OR1_GSPO_CLIP_HIGH, 0, OR1_BIG,              \
      "gspo: sequence ratio clip above, 1 + this")                                                           \
    X("loss.cispo_clip_low", "cispo-clip-low", cispo_low, float, OR1_CISPO_CLIP_LOW, 0, OR1_BIG,              \
      "cispo: weight clip below, 1 - this (large: none)")                                                    \
    X("loss.cispo_clip_high", "cispo-clip-high", cispo_high, float, OR1_CISPO_CLIP_HIGH, 0, OR1_BIG,          \
      "cispo: weight clip above, 1 + this")                                                                  \
    X("loss.clip_cov_ratio", "clip-cov-ratio", clip_cov_ratio, double, OR1_CLIP_COV_RATIO, 1e-12, 1,          \
      "clip-cov: share of the mini-batch's tokens drawn")                                                    \
    X("loss.clip_cov_lb", "clip-cov-lb", clip_cov_lb, double, OR1_CLIP_COV_LB, -OR1_BIG, OR1_BIG,             \
      "clip-cov: candidates have lb < Cov < ub")                                                             \
    X("loss.clip_cov_ub", "clip-cov-ub", clip_cov_ub, double, OR1_CLIP_COV_UB, -OR1_BIG, OR1_BIG,             \
      "clip-cov: candidates have lb < Cov < ub")                                                             \
    X("loss.kl_cov_ratio", "kl-cov-ratio", kl_cov_ratio, double, OR1_KL_COV_RATIO, 1e-12, 1,                  \
      "kl-cov: share of the mini-batch's tokens penalised")                                                  \
    X("loss.ppo_kl_coef", "ppo-kl-coef", kl_cov_coef, double, OR1_KL_COV_COEF, 0, OR1_BIG,                    \
      "kl-cov: coefficient of |log(pi/pi_old)|")                                                             \
    X("loss.top_entropy_quantile", "top-entropy-quantile", top_entropy, double, 1.0, 1e-12, 1,                \
      "80/20 rule: pg only on this top share of tokens by entropy; 1: all")
/* A row's default as text, and its field declared as a double (the config keeps doubles). */
#define OR1_TEXT_(x) #x
#define OR1_TEXT(x) OR1_TEXT_(x)
#define OR1_OPTION_DOUBLE(key, flag, field, type, def, lo, hi, help) double field;

/* One response token's term of the MAGIC loss, eq. (3.1), before the aggregation weight:
 *   loss_t = pg_t - alpha * H_t,  pg_t the term of c->mode (PPO: max(-A*rho,
 *   -A*clip(rho, 1-eps_low, 1+eps_high)), rho = exp(logp - old_logp)).
 * Returns the pg term and sets d(loss_t)/d(logp), d(loss_t)/d(H_t), and whether the token
 * counts as clipped. Ties split the gradient as torch.maximum / torch.minimum do. */
double or1_magic_token_loss(float logp, float old_logp, float adv, const or1_loss_cfg *c,
                            float *d_logp, float *d_entropy, bool *clipped);
/* The pg term alone, given log_ratio: log(pi/pi_old) of the token, and seq: its sequence's
 * statistic for a sequence-level mode (or1_pg_seq_stat; GSPO: the mean log_ratio). */
double or1_pg_token_loss(const or1_loss_cfg *c, double log_ratio, double seq, float logp, float adv, uint8_t sel,
                         float *d_logp, bool *clipped);

/* Clip-Cov (Cui et al. 2025, arXiv 2505.22617; verl compute_policy_loss_clip_cov):
 *   L_t = 0 for t in I_clip (drawn), else max(-A rho, -A clip(rho, 1-eps_low, 1+eps_high)). */
double or1_clip_cov_token(double rho, double adv, double lo, double hi, bool cov_clipped, double *g, bool *clipped);
/* KL-Cov (the same paper; verl compute_policy_loss_kl_cov), rho = exp(log_ratio):
 *   L_t = -A rho + coef |log rho| for t in I_KL (selected), else -A rho. */
double or1_kl_cov_token(double log_ratio, double adv, double coef, bool selected, double *g);

/* One sampled response and its advantage (old_logp NULL: rho = 1 with logp detached;
 * ref_logp: the frozen reference's log-probs, needed when kl_coef != 0; rollout_logp: the
 * sampler's log-probs, for the mismatch sums and the rollout correction, or NULL). */
typedef struct {
    const int32_t *prompt, *resp;
    int n_prompt, n_resp;
    float adv;
    const float *old_logp, *ref_logp, *rollout_logp;
    uint64_t id; /* the sample's index in its step (or batch file): keys its Clip-Cov draws */
    /* 1 for each response token the policy sampled, 0 for one it did not (a tool's output, a
     * template's glue): a 0 token is context only, with no term, weight, statistic or count in
     * the loss, as if absent from the response (verl's response_mask). NULL: every token is 1. */
    const uint8_t *mask;
} or1_sample;

/* Whether response token j of x is trained (its mask is 1). */
static inline bool or1_sample_trains(const or1_sample *x, int j) { return !x->mask || x->mask[j]; }
/* L_i of x: its trained response tokens. */
int or1_sample_len(const or1_sample *x);
/* Adds x to a mini-batch's normalisers (its trained tokens to T; to N when it has one). */
void or1_loss_norm_add(or1_loss_norm *norm, const or1_sample *x);

/* The statistic of sequence x (logp: its current log-probs) that c->mode's term reads, for a
 * sequence-level mode (GSPO: the mean log(pi/pi_old)); 0 for a token-level one. */
double or1_pg_seq_stat(const or1_loss_cfg *c, const or1_sample *x, const float *logp);
/* Whether c->mode is sequence-level: its term is aggregated seq-mean-token-mean. */
bool or1_pg_seq_level(const or1_loss_cfg *c);

/* Sums over response tokens (divide by tokens for means), but objective; logp is the sum of
 * the tokens' log-probs under the current weights (its negative mean is the NLL SFT reports); mismatch
 * compares the current log-probs with rollout_logp; is_weight sums the rollout-correction
 * weights and is_masked counts the zero ones. */
typedef struct {
    double loss, pg_loss, entropy, kl, logp;
    double objective; /* the aggregated loss itself: each token's terms times its weight */
    long tokens, clipped;
    or1_mismatch mismatch;
    double is_weight;
    long is_masked;
    long cov_selected, low_entropy; /* tokens Clip-Cov drew or KL-Cov penalised; tokens below the
                                     * top-entropy threshold (see or1_select_tokens) */
    long offpolicy_masked;          /* tokens of sequences the off-policy mask dropped */
    long clipped_pos, clipped_neg;  /* clipped tokens with A > 0, with A < 0 */
    or1_values *entropies;          /* when set, every token's entropy is appended (percentiles) */
} or1_loss_stats;

/* The fields of or1_loss_stats that add up over micro-batches and ranks, one row each: a new
 * summed statistic is its field and its row here. */
#define OR1_LOSS_SUMS(X)                                                                                  \
    X(loss) X(pg_loss) X(entropy) X(kl) X(tokens) X(clipped) X(is_weight) X(is_masked) X(cov_selected) \
    X(low_entropy) X(offpolicy_masked) X(clipped_pos) X(clipped_neg)
/* How many rows OR1_LOSS_SUMS has: the length of a packed array. */
#define OR1_LOSS_SUM_ONE(f) +1
enum { OR1_LOSS_N_SUMS = 0 OR1_LOSS_SUMS(OR1_LOSS_SUM_ONE) };
#undef OR1_LOSS_SUM_ONE

/* The summed statistics of st as doubles, in the rows' order (buf holds OR1_LOSS_N_SUMS), and
 * back: so that one collective sums them over the ranks. */
void or1_loss_stats_pack(const or1_loss_stats *st, double *buf);
void or1_loss_stats_unpack(const double *buf, or1_loss_stats *st);
/* dst += src over the summed statistics. */
void or1_loss_stats_add(or1_loss_stats *dst, const or1_loss_stats *src);

/* ---- Mini-batch token selections ------------------------------------------------------------ */

/* Flags of one response token, set over the whole mini-batch before its gradient pass. */
enum {
    OR1_SEL_COV_CLIP = 1,    /* Clip-Cov: its pg term is 0 */
    OR1_SEL_COV_KL = 2,      /* KL-Cov: its term carries the |log rho| penalty */
    OR1_SEL_LOW_ENTROPY = 4, /* below the top-rho entropy threshold: no pg term */
};

/* Whether cfg needs the selection (Clip-Cov, KL-Cov, or a top-entropy share below 1). */
bool or1_loss_selects(const or1_loss_cfg *cfg);

/* The token's centred cross-product of Cui et al. 2025 (its Cov(y_i) for Clip-Cov and KL-Cov):
 * (log pi - mean log pi) (A - mean A), the means over the mini-batch's response tokens. */
double or1_cov_token(double logp, double mean_logp, double adv, double mean_adv);

/* An order-preserving map of floats to unsigned keys (a < b iff key(a) < key(b); -0 < +0). */
uint32_t or1_float_key(float v);
/* The k-th largest of the keys of every rank (k >= 1, at most their total count): bisection
 * on the key's bits, one sum of counts over r per bit, so each rank holds only its own. */
uint64_t or1_kth_largest_key(const uint64_t *key, size_t n, long k, const or1_reducer *r);

/* Marks the tokens of a mini-batch (flags, one per response token in sample order) from the
 * current log-probs and entropies of its tokens, with cfg->reduce summing over the ranks that
 * hold the rest of it. Everything is computed over the whole mini-batch, T response tokens
 * (never over a micro-batch), so a micro-batch or rank split marks the same tokens:
 *   CLIP_COV: candidates are the tokens whose PPO clip does not already win and whose
 *     covariance term lies strictly inside (clip_cov_lb, clip_cov_ub); max(1, floor(ratio T))
 *     of them (all when fewer) are drawn uniformly: the ones with the largest key
 *     or1_rand_u64(cfg->seed, sample id, token index).
 *   KL_COV: the max(1, floor(kl_cov_ratio T)) tokens with the largest covariance term (equal
 *     ones ordered by the high half of the same draw).
 *   top_entropy rho < 1: tokens whose entropy is below the ceil(rho T)-th largest entropy
 *     (Wang et al. 2025, arXiv 2506.01939: the indicator H_t >= tau_rho of the batch) are
 *     marked LOW_ENTROPY; ties at tau are kept. */
void or1_select_tokens(const or1_sample *s, int n, const float *logp, const float *ent, const or1_loss_cfg *cfg,
                       uint8_t *flags);

/* The per-token terms of eq. (3.1) (plus the optional KL) for n packed samples, given the
 * scored log-probs and entropies in sample order and the selection flags (sel NULL: none,
 * see or1_select_tokens): the gradients w.r.t. logp and entropy,
 * weighted by cfg->agg over the mini-batch whose normalisers are *norm, go to g_logp and
 * g_entropy; the loss sums are added into *st. Shared by every backend, so each runs the
 * same formulas. */
void or1_policy_token_grads(const or1_sample *s, int n, const float *logp, const float *ent, const uint8_t *sel,
                            const or1_loss_norm *norm, const or1_loss_cfg *cfg, float *g_logp, float *g_entropy,
                            or1_loss_stats *st);

#endif
