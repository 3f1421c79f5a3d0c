/* KL estimators to a frozen reference policy, as verl's kl_penalty defines them
 * (verl/trainer/ppo/core_algos.py). */
#include "or1/algo.h"
#include "or1/core.h"

#include <math.h>
#include <string.h>

static const struct {
    const char *name;
    or1_kl_kind kind;
} KL_NAMES[] = {{"k1", OR1_KL_K1}, {"kl", OR1_KL_K1},  {"abs", OR1_KL_ABS},
                {"k2", OR1_KL_K2}, {"mse", OR1_KL_K2}, {"k3", OR1_KL_K3},
                {"low_var_kl", OR1_KL_K3}};

/* Parses verl's estimator names; a trailing '+' asks for the straight-through gradient. */
int or1_kl_parse(const char *s, or1_kl_estimator *out, const char *where) {
    size_t len = strlen(s);
    bool st = len > 0 && s[len - 1] == '+';
    if (st) len--;
    for (size_t i = 0; i < sizeof KL_NAMES / sizeof KL_NAMES[0]; i++)
        if (strlen(KL_NAMES[i].name) == len && strncmp(s, KL_NAMES[i].name, len) == 0) {
            *out = (or1_kl_estimator){.kind = KL_NAMES[i].kind, .straight_through = st};
            return 0;
        }
    return or1_fail("%s: KL estimator \"%.64s\" is not one of k1 (kl), abs, k2 (mse), "
                    "k3 (low_var_kl), optionally with a '+' suffix", where, s);
}

/* The estimator's canonical name. */
const char *or1_kl_name(or1_kl_kind k) {
    static const char *const names[] = {"k1", "abs", "k2", "k3"};
    return names[k];
}

/* Value and d/dlogp of one token's estimate, d = logp - ref_logp:
 * k1 = d (grad 1); abs = |d| (grad sign d, 0 at 0); k2 = d^2/2 (grad d);
 * k3 = clamp(e^x - x - 1, -10, 10) with x = clamp(-d, -20, 20): grad -(e^x - 1) while both
 * clamps pass (x and the value inside their closed ranges), else 0. With the straight-through
 * option the value is the named one and the gradient k2's. */
double or1_kl_token(const or1_kl_estimator *e, double logp, double ref_logp, double *d_logp) {
    double d = logp - ref_logp, v, g;
    switch (e->kind) {
    case OR1_KL_K1:
        v = d;
        g = 1.0;
        break;
    case OR1_KL_ABS:
        v = fabs(d);
        g = d > 0.0 ? 1.0 : d < 0.0 ? -1.0 : 0.0;
        break;
    case OR1_KL_K2:
        v = 0.5 * d * d;
        g = d;
        break;
    default: {
        double x = -d, pass = 1.0;
        if (x < -20.0 || x > 20.0) {
            x = x < -20.0 ? -20.0 : 20.0;
            pass = 0.0;
        }
        double ex = exp(x);
        v = ex - x - 1.0;
        if (v < -10.0 || v > 10.0) {
            v = v < -10.0 ? -10.0 : 10.0;
            pass = 0.0;
        }
        g = -(ex - 1.0) * pass;
        break;
    }
    }
    *d_logp = e->straight_through ? d : g;
    return v;
}
