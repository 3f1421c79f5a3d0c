/* Length shaping of the outcome reward: DAPO's soft overlong punishment and a fixed penalty for
 * responses that stop without EOS (truncated at the length limit). */
#include "or1/algo.h"

#include <math.h>

/* DAPO (Yu et al. 2025, arXiv 2503.14476) eq. (13), the soft overlong punishment, times the
 * penalty factor (verl's DAPO reward manager, overlong_buffer.penalty_factor):
 *   R_length(y) = 0                                      |y| <= L_max - L_cache
 *               = ((L_max - L_cache) - |y|) / L_cache    L_max - L_cache < |y| <= L_max
 *               = -1                                     L_max < |y|                      */
double or1_overlong_penalty(int len, int max_len, int buffer, double factor) {
    double exceed = (double)len - ((double)max_len - (double)buffer);
    if (exceed <= 0 || buffer <= 0) return 0.0;
    double r = -exceed / (double)buffer;
    return factor * (r < -1.0 ? -1.0 : r);
}

/* Each decided score plus the overlong term (when on) and, for a truncated response, minus the
 * truncation penalty; a failed reward (NaN) stays NaN. */
void or1_length_rewards(const or1_length_cfg *c, const float *scores, const int *len, const bool *truncated,
                        size_t n, int max_len, float *out) {
    for (size_t i = 0; i < n; i++) {
        double r = scores[i];
        if (!isnan(r) && c->overlong) r += or1_overlong_penalty(len[i], max_len, c->overlong_len, c->overlong_penalty);
        if (!isnan(r) && truncated && truncated[i]) r -= c->truncation_penalty;
        out[i] = (float)r;
    }
}
