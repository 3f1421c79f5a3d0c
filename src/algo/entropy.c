/* Adaptive entropy control of Skywork-OR1 (paper §3.2.5, eq. (3.2)), as EntController in
 * core_algos.py of Skywork-OR1's verl fork computes it with the final training scripts. */
#include "internal.h"
#include "or1/algo.h"
#include "or1/core.h"
#include "or1/io.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* The values of the final training scripts (or1_scripts/train/ of the Skywork-OR1 repo). */
or1_entropy_params or1_entropy_defaults(void) {
    return (or1_entropy_params){.mode = OR1_ENT_ADAPTIVE, .target = OR1_ENT_TARGET, .delta = OR1_ENT_DELTA,
                                .c_min = OR1_ENT_C_MIN, .c_max = OR1_ENT_C_MAX, .initial = OR1_ENT_INITIAL,
                                .update = OR1_ENT_PER_STEP};
}

/* The entropy modes (entropy.mode) and cadences (entropy.update). */
ALGO_REGISTRY_NAMES(OR1_ENTROPY_MODES, or1_entropy_mode, entropy_mode, "entropy mode")
ALGO_REGISTRY_NAMES(OR1_ENTROPY_CADENCES, or1_entropy_cadence, entropy_cadence, "entropy update cadence")

/* EntController's constructor: value = entropy_coeff, entropy_loss_enabled = 1. */
void or1_entropy_init(or1_entropy_ctl *s, const or1_entropy_params *p) {
    s->coef = p->initial;
    s->enabled = true;
}

/* alpha_k = c_k * 1{enabled} (eq. (3.2) with the code's gate); the constant mode ignores the
 * gate, the off mode gives 0. */
double or1_entropy_alpha(const or1_entropy_ctl *s, const or1_entropy_params *p) {
    switch (p->mode) {
    case OR1_ENT_ADAPTIVE: return s->enabled ? s->coef : 0.0;
    case OR1_ENT_CONSTANT: return p->initial;
    default: return 0.0;
    }
}

/* EntController.update (paper §3.2.5, eq. (3.2): c_{k+1} = c_k + delta if e_k < tgt-ent, else
 * c_k - delta; alpha = c * 1{e_k < tgt-ent}), called once after each completed step, or with
 * entropy.update: minibatch after each mini-batch with that mini-batch's e: a strict "<"
 * decides both the direction of the step and the gate (at e == target: decrease and disable). */
void or1_entropy_update(or1_entropy_ctl *s, const or1_entropy_params *p, double e) {
    if (p->mode != OR1_ENT_ADAPTIVE) return;
    bool low = e < p->target;
    double c = low ? s->coef + p->delta : s->coef - p->delta;
    if (c < p->c_min) c = p->c_min;
    if (c > p->c_max) c = p->c_max;
    s->coef = c;
    s->enabled = low;
}

/* The two sums behind the estimate, kept apart so that ranks can add theirs before dividing. */
void or1_entropy_sums(const float *const *logp, const int *len, const uint8_t *const *mask, const bool *use, size_t n,
                      double sums[2]) {
    sums[0] = sums[1] = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (use && !use[i]) continue;
        const uint8_t *m = mask ? mask[i] : NULL;
        for (int t = 0; t < len[i]; t++)
            if (!m || m[t]) sums[0] -= logp[i][t], sums[1] += 1;
    }
}

/* -masked_mean(old_log_probs, response_mask) over the batch, token-weighted
 * (the controller's input in Skywork-OR1's dp_actor.py / ray_trainer.py). */
double or1_entropy_estimate(const float *const *logp, const int *len, const bool *use, size_t n) {
    double s[2];
    or1_entropy_sums(logp, len, NULL, use, n, s);
    return s[1] > 0 ? s[0] / s[1] : 0.0;
}

/* {"coef": c, "enabled": b}; c printed with 17 significant digits so that a resumed run
 * continues from exactly the same value (cJSON's own printing may drop the last bits). */
cJSON *or1_entropy_state_json(const or1_entropy_ctl *s) {
    cJSON *j = cJSON_CreateObject();
    char num[40];
    snprintf(num, sizeof num, "%.17g", s->coef);
    cJSON_AddRawToObject(j, "coef", num);
    cJSON_AddBoolToObject(j, "enabled", s->enabled);
    return j;
}

/* Reads the object written above; both keys are required. */
int or1_entropy_state_load(or1_entropy_ctl *s, const cJSON *j, const char *where) {
    double c;
    if (or1_json_num(j, "coef", &c, where) != 0) return -1;
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "enabled");
    if (!cJSON_IsBool(e)) return or1_fail("%s: key \"enabled\" must be true or false", where);
    if (c < 0.0) return or1_fail("%s: key \"coef\" = %g is negative", where, c);
    s->coef = c;
    s->enabled = cJSON_IsTrue(e);
    return 0;
}
