/* Token sampling: temperature, top-k, top-p over one row of logits. */
#include "or1/kernels.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Index of the largest logit (the lowest index among equals). */
static int32_t argmax(const float *x, int n) {
    int32_t best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* log-sum-exp of x/t over n values, in double. */
static double lse_scaled(const float *x, int n, float t) {
    float m = -INFINITY;
    for (int i = 0; i < n; i++) m = x[i] / t > m ? x[i] / t : m;
    double s = 0;
    for (int i = 0; i < n; i++) s += exp((double)(x[i] / t - m));
    return m + log(s);
}

/* qsort_r order: probability descending, then token id ascending (a total order). */
static int by_prob_desc(const void *a, const void *b, void *probs) {
    const float *p = probs;
    int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
    if (p[i] != p[j]) return p[i] > p[j] ? -1 : 1;
    return i < j ? -1 : i > j;
}

/* Candidates with p >= cut, lowering the cut until they hold the top-k set and top-p mass;
 * since they form a prefix of the sorted order, sorting only them is exact. */
static int candidates(const float *p, int V, const or1_sample_row *s, int32_t *idx) {
    float pmax = 0;
    for (int v = 0; v < V; v++) pmax = p[v] > pmax ? p[v] : pmax;
    for (float cut = pmax * 1e-3f;; cut *= 1.0f / 64) {
        int n = 0;
        double mass = 0;
        for (int v = 0; v < V; v++)
            if (p[v] >= cut) idx[n++] = v, mass += p[v];
        bool enough_k = s->top_k <= 0 || n >= s->top_k, enough_p = s->top_p >= 1 || mass >= s->top_p;
        if ((enough_k && enough_p) || cut == 0 || n == V) return n;
        if (cut < 1e-30f) cut = 0;
    }
}

/* Draws from p restricted to the first n entries of idx (in that order) with uniform u. */
static int32_t draw(const float *p, const int32_t *idx, int n, double u) {
    double total = 0;
    for (int i = 0; i < n; i++) total += p[idx[i]];
    double target = u * total, c = 0;
    for (int i = 0; i < n; i++) {
        c += p[idx[i]];
        if (c > target) return idx[i];
    }
    return idx[n - 1];
}

/* Temperature, then top-k, then top-p on the renormalised remainder (Hugging Face's order);
 * the reported log-prob is the untruncated one at the temperature, as the trainer computes. */
int32_t or1_sample_token(const float *logits, int V, const or1_sample_row *s, double u, float *logp,
                         float *scratch) {
    float t = s->temperature > 0 ? s->temperature : 1.0f, *p = scratch;
    int32_t *idx = (int32_t *)(scratch + V);
    double lse = lse_scaled(logits, V, t);
    if (!isfinite(lse)) { /* a NaN or +inf logit, or none above -inf: no distribution to draw from */
        *logp = NAN;
        return 0;
    }
    if (s->temperature <= 0) {
        int32_t a = argmax(logits, V);
        *logp = (float)(logits[a] - lse);
        return a;
    }
    for (int v = 0; v < V; v++) p[v] = (float)exp((double)(logits[v] / t) - lse);
    int32_t tok;
    if (s->top_k <= 0 && s->top_p >= 1) {
        for (int v = 0; v < V; v++) idx[v] = v;
        tok = draw(p, idx, V, u);
    } else {
        int n = candidates(p, V, s, idx);
        qsort_r(idx, (size_t)n, sizeof *idx, by_prob_desc, p);
        if (s->top_k > 0 && n > s->top_k) n = s->top_k;
        if (s->top_p < 1) {
            double total = 0, c = 0;
            for (int i = 0; i < n; i++) total += p[idx[i]];
            int keep = 0;
            while (keep < n && c < s->top_p * total) c += p[idx[keep++]];
            n = keep > 0 ? keep : 1;
        }
        tok = draw(p, idx, n, u);
    }
    *logp = (float)((double)(logits[tok] / t) - lse);
    return tok;
}
