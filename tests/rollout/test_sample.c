/* Unit test of or1_sample_token: the exact distribution it draws from, found by sweeping u.
 *
 * The sampler maps u in [0,1) to a token through a cumulative sum, so over a uniform grid of G
 * values of u each token must come up G*q[v] times, within a couple of grid steps, where q is
 * the expected distribution: softmax(logits/T), then the top-k most likely, then the smallest
 * set of most likely tokens whose renormalised mass reaches top-p (Hugging Face's order),
 * renormalised. q is computed here independently, in double. Every draw's log-prob must be
 * log softmax(logits/T)[token], untruncated. Greedy (T = 0) must be the argmax, the lowest id
 * among equals, with its log-prob at temperature 1.
 *
 * The sampler selects without sorting; `agree` checks it token for token, over a grid of u,
 * against the sort-based algorithm it replaced (kept here as the reference: double exp, a full
 * qsort by probability descending then id ascending, top-k, top-p against the kept mass, inverse
 * CDF), on the cases its selection paths must get right: flat and exactly tied logits over
 * 151,936 tokens, top-k beyond the vocabulary, a tiny top-p, -inf logits. */
#include "or1/core.h"
#include "or1/rollout.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"

/* Random logits with a few nats of spread (splitmix-based normal draws via Box-Muller). */
static void random_logits(float *x, int V, double scale, uint64_t seed) {
    for (int v = 0; v < V; v++) {
        double u1 = or1_rand_uniform(seed, 1, (uint64_t)v) + 1e-300, u2 = or1_rand_uniform(seed, 2, (uint64_t)v);
        x[v] = (float)(scale * sqrt(-2 * log(u1)) * cos(2 * M_PI * u2));
    }
}

static const double *sort_p; /* the probabilities by_desc compares */

/* Order for qsort: probability descending, then id ascending. */
static int by_desc(const void *a, const void *b) {
    int i = *(const int *)a, j = *(const int *)b;
    if (sort_p[i] != sort_p[j]) return sort_p[i] > sort_p[j] ? -1 : 1;
    return (i > j) - (i < j);
}

/* The expected distribution q[V] and the untruncated log-probs lp[V] at temperature t. */
static void expected(const float *x, int V, double t, int top_k, double top_p, double *q, double *lp) {
    double m = -INFINITY, s = 0;
    for (int v = 0; v < V; v++) m = fmax(m, x[v] / t);
    for (int v = 0; v < V; v++) s += exp(x[v] / t - m);
    for (int v = 0; v < V; v++) lp[v] = x[v] / t - m - log(s), q[v] = exp(lp[v]);
    int *idx = malloc((size_t)V * sizeof *idx), n = V;
    for (int v = 0; v < V; v++) idx[v] = v;
    sort_p = q;
    qsort(idx, (size_t)V, sizeof *idx, by_desc);
    if (top_k > 0 && top_k < n) n = top_k;
    if (top_p < 1) {
        double total = 0, c = 0;
        for (int i = 0; i < n; i++) total += q[idx[i]];
        int keep = 0;
        while (keep < n && c < top_p * total) c += q[idx[keep++]];
        n = keep;
    }
    double kept = 0;
    for (int i = 0; i < n; i++) kept += q[idx[i]];
    double *out = calloc((size_t)V, sizeof *out);
    for (int i = 0; i < n; i++) out[idx[i]] = q[idx[i]] / kept;
    memcpy(q, out, (size_t)V * sizeof *q);
    free(out);
    free(idx);
}

/* The sort-based sampler that or1_sample_token replaced, prepared for one row: probabilities as
 * it computed them and, when truncating, every token sorted by (p desc, id asc) (plain sampling
 * draws in id order), the kept prefix n and its mass. */
typedef struct {
    float *p;
    int *idx, n;
    double lse, kept, cut_margin; /* cut_margin: how near top-p's running mass came to its bar */
} reference;

/* Prepares the reference for logits x (temperature t > 0, top_k, top_p). */
static reference reference_prepare(const float *x, int V, float t, int top_k, float top_p) {
    reference r = {malloc((size_t)V * sizeof(float)), malloc((size_t)V * sizeof(int)), V, 0, 0, INFINITY};
    float m = -INFINITY;
    for (int v = 0; v < V; v++) m = x[v] / t > m ? x[v] / t : m;
    double s = 0;
    for (int v = 0; v < V; v++) s += exp((double)(x[v] / t - m));
    r.lse = m + log(s);
    double *pd = malloc((size_t)V * sizeof *pd);
    for (int v = 0; v < V; v++) r.p[v] = (float)exp((double)(x[v] / t) - r.lse), pd[v] = r.p[v], r.idx[v] = v;
    sort_p = pd;
    if (top_k > 0 || top_p < 1) qsort(r.idx, (size_t)V, sizeof *r.idx, by_desc);
    if (top_k > 0 && top_k < V) r.n = top_k;
    for (int i = 0; i < r.n; i++) r.kept += r.p[r.idx[i]];
    if (top_p < 1) {
        double bar = top_p * r.kept, c = 0;
        int keep = 0;
        while (keep < r.n && c < bar) {
            r.cut_margin = fmin(r.cut_margin, fabs(c - bar));
            c += r.p[r.idx[keep++]];
        }
        r.cut_margin = fmin(r.cut_margin, fabs(c - bar));
        r.n = keep > 0 ? keep : 1;
        r.kept = 0;
        for (int i = 0; i < r.n; i++) r.kept += r.p[r.idx[i]];
    }
    free(pd);
    return r;
}

/* The reference's draw by u; *margin is how near the running mass came to u * kept at the
 * decision (a tie there is rounding's to break). */
static int reference_draw(const reference *r, double u, double *margin) {
    double target = u * r->kept, c = 0;
    *margin = INFINITY;
    for (int i = 0; i < r->n; i++) {
        *margin = fmin(*margin, fabs(c - target));
        c += r->p[r->idx[i]];
        if (c > target) {
            *margin = fmin(*margin, fabs(c - target));
            return r->idx[i];
        }
    }
    return r->idx[r->n - 1];
}

/* or1_sample_token against the reference on G values of u: the same token (unless the
 * reference's running mass was within 1e-12 of a bar, where rounding decides), the log-prob the
 * trainer's head computes from the same logits, bit for bit (or1_head_logprob), and that one
 * within 1e-5 (relative) of the reference's double log-sum-exp (the head sums its exponentials
 * in float lanes, chunk by chunk; measured up to 2.5e-6). */
static void agree(const char *what, const float *x, int V, float t, int top_k, float top_p, int G) {
    reference r = reference_prepare(x, V, t, top_k, top_p);
    float *scratch = malloc((size_t)2 * V * sizeof *scratch);
    or1_sample_row s = {.temperature = t, .top_p = top_p, .top_k = top_k, .seed = 0, .stream = 0,
                        .counter = 0};
    int differ = 0, close = 0, first = -1, got = -1, want = -1, not_head = 0;
    double worst_lp = 0;
    for (int i = 0; i < G; i++) {
        double u = (i + 0.37) / G, margin;
        float logp;
        int32_t tok = or1_sample_token(x, V, &s, u, &logp, scratch);
        int ref = reference_draw(&r, u, &margin);
        if (margin < 1e-12 || r.cut_margin < 1e-12)
            close++;
        else if (tok != ref && differ++ == 0)
            first = i, got = tok, want = ref;
        if (tok >= 0 && tok < V && isfinite(x[tok]))
            worst_lp = fmax(worst_lp, fabs(logp - (float)((double)(x[tok] / t) - r.lse)) / fmax(1, fabs(logp)));
        else
            worst_lp = INFINITY;
        if (tok >= 0 && tok < V) not_head += logp != or1_head_logprob(x, V, t, tok, scratch);
    }
    CHECK(differ == 0, "%s: %d of %d draws differ from the sort-based reference (first: u index %d, token %d, want %d)",
          what, differ, G, first, got, want);
    CHECK(close <= G / 100, "%s: %d of %d draws too near a bar to compare", what, close, G);
    CHECK(worst_lp <= 1e-5, "%s: log-prob off the reference's by %g (relative)", what, worst_lp);
    CHECK(not_head == 0, "%s: %d of %d log-probs are not the head's bits", what, not_head, G);
    free(r.p), free(r.idx), free(scratch);
}

/* Sweeps G values of u through the sampler and compares frequencies and log-probs with q. */
static void sweep(const char *what, const float *x, int V, float t, int top_k, float top_p, int G) {
    double *q = malloc((size_t)V * sizeof *q), *lp = malloc((size_t)V * sizeof *lp);
    long *count = calloc((size_t)V, sizeof *count);
    float *scratch = malloc((size_t)2 * V * sizeof *scratch);
    expected(x, V, t, top_k, top_p, q, lp);
    or1_sample_row s = {.temperature = t, .top_p = top_p, .top_k = top_k, .seed = 0, .stream = 0,
                        .counter = 0};
    double worst_lp = 0;
    for (int i = 0; i < G; i++) {
        float logp;
        int32_t tok = or1_sample_token(x, V, &s, (i + 0.5) / G, &logp, scratch);
        if (tok < 0 || tok >= V) {
            CHECK(false, "%s: token %d out of range (u index %d)", what, tok, i);
            break;
        }
        count[tok]++;
        worst_lp = fmax(worst_lp, fabs(logp - lp[tok]));
    }
    double worst = 0;
    int bad = -1;
    for (int v = 0; v < V; v++) {
        if (q[v] == 0 && count[v] > 0) bad = v;
        worst = fmax(worst, fabs((double)count[v] / G - q[v]));
    }
    CHECK(bad < 0, "%s: token %d (outside the truncated set) drawn %ld times", what, bad, bad < 0 ? 0 : count[bad]);
    CHECK(worst <= 2.0 / G + 1e-5, "%s: frequency off the expected probability by %g (grid step %g)", what, worst,
          1.0 / G);
    CHECK(worst_lp <= 2e-5, "%s: log-prob off the untruncated log-softmax by %g", what, worst_lp);
    free(q), free(lp), free(count), free(scratch);
}

/* Greedy: argmax with the lowest id among equals, log-prob at temperature 1, flags ignored. */
static void greedy(void) {
    float x[6] = {0.5f, 2.0f, -1.0f, 2.0f, 1.0f, 0.0f}, scratch[18], logp;
    or1_sample_row s = {.temperature = 0, .top_p = 0.5f, .top_k = 2, .seed = 0, .stream = 0, .counter = 0};
    double lse = 0;
    for (int v = 0; v < 6; v++) lse += exp(x[v]);
    for (int k = 0; k < 3; k++) {
        double u = k / 3.0;
        int32_t tok = or1_sample_token(x, 6, &s, u, &logp, scratch);
        CHECK(tok == 1, "greedy: token %d, want 1 (first of two equal maxima)", tok);
        CHECK(fabs(logp - (2.0 - log(lse))) < 1e-6, "greedy log-prob: %g, want %g", logp, 2.0 - log(lse));
    }
}

/* Draws at the ends of [0,1) stay inside the kept set. */
static void extremes(void) {
    float x[5] = {3.0f, 1.0f, 0.5f, 0.25f, -2.0f}, scratch[15], logp;
    double us[2] = {0.0, 1.0 - 0x1p-53};
    for (int k = 0; k < 2; k++) {
        or1_sample_row plain = {.temperature = 1.0f, .top_p = 1.0f, .top_k = 0, .seed = 0, .stream = 0,
                                .counter = 0}, trunc = {1.0f, 0.7f, 3, 0, 0, 0};
        int32_t a = or1_sample_token(x, 5, &plain, us[k], &logp, scratch);
        int32_t b = or1_sample_token(x, 5, &trunc, us[k], &logp, scratch);
        CHECK(a >= 0 && a < 5, "u at an end, plain: token %d (u %g)", a, us[k]);
        CHECK(b >= 0 && b < 2, "u at an end, top-p 0.7 top-k 3: token %d (u %g); only 0 and 1 are kept", b, us[k]);
    }
}

/* The selection paths on a 151,936-token vocabulary, against the reference and (coarsely) the
 * float64 distribution: flat logits (all in a few buckets of the histogram, so the search goes
 * down every digit), exact ties (the top-k cut inside a run of equal probabilities: lowest ids
 * first), top-k beyond the vocabulary, a tiny top-p, and -inf logits (p = 0 tokens inside the
 * top-k set, never drawn). */
static void selection(void) {
    int V = 151936;
    float *x = malloc((size_t)V * sizeof *x);
    random_logits(x, V, 0.01, 11); /* nearly flat */
    agree("flat, plain", x, V, 1.0f, 0, 1.0f, 64);
    agree("flat, top-p 0.95", x, V, 1.0f, 0, 0.95f, 64);
    agree("flat, top-k 50", x, V, 1.0f, 50, 1.0f, 64);
    agree("flat, T=0.7 top-k 50 top-p 0.95", x, V, 0.7f, 50, 0.95f, 64);
    agree("flat, top-k 100000 top-p 0.5", x, V, 1.0f, 100000, 0.5f, 64);
    sweep("flat, top-p 0.95 (distribution)", x, V, 1.0f, 0, 0.95f, 100);
    for (int v = 0; v < V; v++) x[v] = 0;
    agree("all equal, top-k 50", x, V, 1.0f, 50, 1.0f, 64);
    agree("all equal, top-p 0.3", x, V, 1.0f, 0, 0.3f, 64);
    sweep("4096 equal, top-k 1000 top-p 0.5", x, 4096, 1.0f, 1000, 0.5f, 2000);
    for (int v = 0; v < V; v++) x[v] = (float)(v % 7) * 0.25f; /* seven values, ~21,705 tokens each */
    agree("7 tied values, top-k 30000", x, V, 1.0f, 30000, 1.0f, 64);
    agree("7 tied values, top-k 30000 top-p 0.9", x, V, 1.0f, 30000, 0.9f, 64);
    agree("7 tied values, top-p 0.6", x, V, 1.3f, 0, 0.6f, 64);
    random_logits(x, V, 3.0, 12);
    agree("spread, top-k 200000 (> vocab)", x, V, 1.0f, 200000, 1.0f, 64);
    agree("spread, top-p 1e-7", x, V, 1.0f, 0, 1e-7f, 64);
    agree("spread, T=0.6 top-k 40", x, V, 0.6f, 40, 1.0f, 64);
    agree("spread, T=1.2 top-k 2000 top-p 0.5", x, V, 1.2f, 2000, 0.5f, 64);
    for (int v = 0; v < V; v++) x[v] = v % 1000 == 3 ? x[v] : -INFINITY; /* 152 finite logits */
    agree("-inf, top-k 500 (past the finite ones)", x, V, 1.0f, 500, 1.0f, 64);
    agree("-inf, top-k 500 top-p 0.99", x, V, 1.0f, 500, 0.99f, 64);
    agree("-inf, plain", x, V, 1.0f, 0, 1.0f, 64);
    sweep("-inf, top-k 500 (distribution)", x, V, 1.0f, 500, 1.0f, 500);
    free(x);
}

/* Top-p measures the kept mass against top_p times all of it: here p = 0.88, 0.07 and a tail of
 * small ones, so top-p 0.9 keeps the first two (a bar of 0.9 x their mass alone would keep one). */
static void top_p_whole_mass(void) {
    enum { V = 1000 };
    float x[V];
    x[0] = logf(0.88f), x[1] = logf(0.07f);
    for (int v = 2; v < V; v++) x[v] = logf(0.05f / (V - 2));
    sweep("top-p against the whole mass", x, V, 1.0f, 0, 0.9f, 20000);
    agree("top-p against the whole mass (reference)", x, V, 1.0f, 0, 0.9f, 2000);
}

int main(void) {
    float small[12] = {1.5f, -0.5f, 0.2f, 2.1f, 0.0f, -3.0f, 1.1f, 0.7f, -1.2f, 0.4f, 1.9f, -0.1f};
    sweep("12 tokens, T=1", small, 12, 1.0f, 0, 1.0f, 100000);
    sweep("12 tokens, T=0.5", small, 12, 0.5f, 0, 1.0f, 100000);
    sweep("12 tokens, T=2 top-k 4", small, 12, 2.0f, 4, 1.0f, 100000);
    sweep("12 tokens, top-p 0.8", small, 12, 1.0f, 0, 0.8f, 100000);
    sweep("12 tokens, T=0.7 top-k 5 top-p 0.9", small, 12, 0.7f, 5, 0.9f, 100000);
    sweep("12 tokens, top-k 1", small, 12, 1.0f, 1, 1.0f, 1000);
    sweep("12 tokens, top-k 50 (> vocab)", small, 12, 1.0f, 50, 1.0f, 100000);
    sweep("12 tokens, top-p 1e-6", small, 12, 1.0f, 0, 1e-6f, 1000);
    float one = 0.3f;
    sweep("one token", &one, 1, 1.0f, 0, 0.5f, 100);
    float peaked[8] = {10.0f, 0, 0, 0, 0, 0, 0, 0}; /* the tail (4.5e-5 each) is under 1e-3 of the top */
    sweep("peaked, top-p 0.9", peaked, 8, 1.0f, 0, 0.9f, 1000);
    sweep("peaked, top-p 0.9999 (5 tail tokens needed)", peaked, 8, 1.0f, 0, 0.9999f, 100000);
    int V = 151936;
    float *big = malloc((size_t)V * sizeof *big);
    random_logits(big, V, 3.0, 7);
    sweep("151936 tokens, top-p 0.95", big, V, 1.0f, 0, 0.95f, 300);
    sweep("151936 tokens, T=0.6 top-k 40", big, V, 0.6f, 40, 1.0f, 300);
    sweep("151936 tokens, T=1.2 top-k 2000 top-p 0.5", big, V, 1.2f, 2000, 0.5f, 300);
    free(big);
    greedy();
    extremes();
    selection();
    top_p_whole_mass();
    return check_report();
}
