/* Token sampling: temperature, top-k, top-p over one row of logits, in O(V) with no sort.
 *
 * Three vectorised passes give the scaled logits y = x / T, their max, the log-sum-exp and the
 * probabilities p = exp(y - lse) (double-precision exp, rounded to float as before). Plain
 * sampling draws by inverse CDF in token-id order. Truncated sampling works in the order
 * (p descending, id ascending): top-k, top-p and the draw are each a search for the first
 * element whose running count or mass crosses a target, done by a radix descent over the bits
 * of p (a histogram of the top bits, then finer digits inside the crossing bucket until its
 * members share their bits or number at most 32, which are sorted), so no more than a short
 * list is ever sorted and only the crossing bucket's members are revisited. */
#include "or1/kernels.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));
typedef double v8d __attribute__((vector_size(64)));
typedef int64_t v8l __attribute__((vector_size(64)));

/* Eight floats from p (any alignment). */
static inline v8f load8(const float *p) {
    v8f v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Eight doubles broadcast from one. */
static inline v8d splat8d(double x) { return (v8d){x, x, x, x, x, x, x, x}; }

/* e^d for eight doubles, within about 1 ulp of the C library's exp (so that the float
 * probabilities and log-probs come out as they did with exp): Cody-Waite reduction by ln 2
 * (the high part exact in any product with the exponent), a degree-13 Taylor polynomial on
 * |r| <= ln2/2 (truncation error under 1e-17), and 2^n put into the exponent bits. Inputs
 * below -708 (down to -inf) give 0; no input here is NaN or above 0 by more than rounding. */
static inline v8d exp8(v8d d) {
    const double shift = 0x1.8p52, ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
    v8l tiny = d < -708.0;
    v8l big = d > 709.0;
    d = (v8d)(((v8l)d & ~(tiny | big)) | ((v8l)splat8d(709.0) & big));
    v8d t = d * 1.44269504088896338700e+00 + shift, n = t - shift;
    v8d r = (d - n * ln2_hi) - n * ln2_lo;
    v8d q = splat8d(1.0 / 6227020800.0);
    q = q * r + 1.0 / 479001600.0;
    q = q * r + 1.0 / 39916800.0;
    q = q * r + 1.0 / 3628800.0;
    q = q * r + 1.0 / 362880.0;
    q = q * r + 1.0 / 40320.0;
    q = q * r + 1.0 / 5040.0;
    q = q * r + 1.0 / 720.0;
    q = q * r + 1.0 / 120.0;
    q = q * r + 1.0 / 24.0;
    q = q * r + 1.0 / 6.0;
    q = q * r + 0.5;
    q = q * r + 1.0;
    q = q * r + 1.0;
    v8l scale = (((v8l)t - (v8l)splat8d(shift)) + 1023) << 52;
    return (v8d)((v8l)(q * (v8d)scale) & ~tiny);
}

/* e^d for one double, the same arithmetic as exp8 (for the tails of the passes). */
static double exp1(double d) { return exp8(splat8d(d))[0]; }

/* Writes y[v] = x[v] / t and returns max y; *nan is set when any y is NaN. */
static float scale_max(float *y, const float *x, int V, float t, bool *nan) {
    v8f m8 = (v8f){0} - INFINITY;
    v8i bad = {0};
    int v = 0;
    for (; v + 8 <= V; v += 8) {
        v8f yv = load8(x + v) / t;
        memcpy(y + v, &yv, sizeof yv);
        v8i gt = yv > m8;
        m8 = (v8f)(((v8i)yv & gt) | ((v8i)m8 & ~gt));
        bad |= yv != yv;
    }
    float m = -INFINITY;
    bool any = false;
    for (int l = 0; l < 8; l++) m = m8[l] > m ? m8[l] : m, any |= bad[l] != 0;
    for (; v < V; v++) {
        y[v] = x[v] / t;
        m = y[v] > m ? y[v] : m;
        any |= y[v] != y[v];
    }
    *nan = any;
    return m;
}

/* log-sum-exp of y given its max m: m + log sum exp(y - m), the differences taken in float
 * as before, the sum in double over eight lanes (combined in a fixed order). */
static double lse_of(const float *y, int V, float m) {
    v8d s8 = {0};
    int v = 0;
    for (; v + 8 <= V; v += 8) s8 += exp8(__builtin_convertvector(load8(y + v) - m, v8d));
    double s = 0;
    for (int l = 0; l < 8; l++) s += s8[l];
    for (; v < V; v++) s += exp1((double)(y[v] - m));
    return m + log(s);
}

/* Overwrites y[v] with p[v] = (float)exp(y[v] - lse) for v in [v0, v1) (v1 - v0 a multiple
 * of 8) and returns their sum in double (lanes combined in a fixed order). */
static double probs8(float *y, int v0, int v1, double lse) {
    v8d s8 = {0};
    for (int v = v0; v < v1; v += 8) {
        v8f pv = __builtin_convertvector(exp8(__builtin_convertvector(load8(y + v), v8d) - lse), v8f);
        memcpy(y + v, &pv, sizeof pv);
        s8 += __builtin_convertvector(pv, v8d);
    }
    double s = 0;
    for (int l = 0; l < 8; l++) s += s8[l];
    return s;
}

/* The tail [v0, V) of probs8, one at a time. */
static double probs_tail(float *y, int v0, int V, double lse) {
    double s = 0;
    for (int v = v0; v < V; v++) y[v] = (float)exp1((double)y[v] - lse), s += y[v];
    return s;
}

/* Sum in double of p[v0..v1), over eight lanes then the tail (a fixed order). */
static double sum_range(const float *p, int v0, int v1) {
    v8d s8 = {0};
    int v = v0;
    for (; v + 8 <= v1; v += 8) s8 += __builtin_convertvector(load8(p + v), v8d);
    double s = 0;
    for (int l = 0; l < 8; l++) s += s8[l];
    for (; v < v1; v++) s += p[v];
    return s;
}

/* Plain sampling: probabilities in place, then the first token (in id order) whose running
 * mass exceeds u * total, found chunk by chunk; rounding that leaves no crossing gives the
 * last token with mass. */
static int32_t draw_plain(float *p, int V, double lse, double u) {
    enum { CHUNK = 512 };
    int body = V / 8 * 8;
    double total = probs8(p, 0, body, lse) + probs_tail(p, body, V, lse);
    double target = u * total, c = 0;
    int last_chunk = 0;
    for (int v0 = 0; v0 < V; v0 += CHUNK) {
        int v1 = v0 + CHUNK < V ? v0 + CHUNK : V;
        double cs = sum_range(p, v0, v1), run = c;
        if (c + cs > target)
            for (int v = v0; v < v1; v++)
                if ((run += p[v]) > target) return v;
        last_chunk = cs > 0 ? v0 : last_chunk;
        c += cs;
    }
    int v = last_chunk + CHUNK < V ? last_chunk + CHUNK - 1 : V - 1;
    while (v > last_chunk && !(p[v] > 0)) v--;
    return v;
}

/* The order of truncated sampling is (p descending, id ascending); since p >= +0, the float
 * bits of p order like p. A radix digit of those bits: (bits >> shift) & (n - 1). */
typedef struct {
    int shift, n;
} digit;

static const digit LEVELS[4] = {{20, 1024}, {12, 256}, {4, 256}, {0, 16}}; /* p < 2: bits >> 20 < 1024 */

/* Count and mass of the elements in each bucket of a digit; buckets outside [lo, hi] are
 * empty (and not stored). */
typedef struct {
    int lo, hi;
    int32_t count[1024];
    double mass[1024];
} histogram;

/* A position in the order: the element with these bits and id; "at or before" it means
 * bits greater, or equal bits and id at most this one. */
typedef struct {
    uint32_t bits;
    int32_t id;
} place;

/* What is searched for: the first element whose running count reaches `target` (top-k), whose
 * running mass reaches it (top-p), or whose running mass exceeds it (the draw). */
typedef enum { BY_COUNT, MASS_REACHES, MASS_EXCEEDS } criterion;

typedef struct {
    long count;
    double mass;
} running;

static const place EVERYTHING = {0, INT32_MAX}; /* at or before the very last position */

/* Float bits of p[v]. */
static inline uint32_t bits_of(const float *p, int32_t v) {
    uint32_t b;
    memcpy(&b, p + v, 4);
    return b;
}

/* Whether element (b, v) is at or before lim. */
static inline bool within(uint32_t b, int32_t v, place lim) { return b > lim.bits || (b == lim.bits && v <= lim.id); }

/* Whether adding (count, mass) to c reaches the criterion's target. */
static inline bool crosses(criterion cr, double target, running c, long count, double mass) {
    if (cr == BY_COUNT) return (double)(c.count + count) >= target;
    return cr == MASS_REACHES ? c.mass + mass >= target : c.mass + mass > target;
}

/* Whether a bucket with this count and mass may stand in when nothing crosses (rounding):
 * the last one with mass (any non-empty one when counting). */
static inline bool fallback_ok(criterion cr, long count, double mass) {
    return count > 0 && (cr == BY_COUNT || mass > 0);
}

/* Walks buckets hi down to lo of h, skipping empty ones, adding each to *c until one crosses;
 * returns it with *c the running total before it. If none crosses, returns the last bucket
 * that may stand in (with *c before it), or -1 with *c after them all. */
static int walk(const histogram *h, int hi, int lo, criterion cr, double target, running *c) {
    int back = -1;
    hi = hi < h->hi ? hi : h->hi, lo = lo > h->lo ? lo : h->lo;
    running before_back = *c;
    for (int b = hi; b >= lo; b--) {
        long n = h->count[b];
        if (n == 0) continue;
        if (crosses(cr, target, *c, n, h->mass[b])) return b;
        if (fallback_ok(cr, n, h->mass[b])) back = b, before_back = *c;
        c->count += n, c->mass += h->mass[b];
    }
    if (back >= 0) *c = before_back;
    return back;
}

enum { WAYS = 4 };

/* Per-thread partial histograms, all zero between uses (each use clears what it touched). */
static _Thread_local histogram partial[WAYS];

/* Adds element i (bucket b, mass m) to partial histogram i mod WAYS: runs of one bucket then do
 * not wait on each other's additions. */
static inline void tally(int i, int b, double m, int *lo, int *hi) {
    partial[i % WAYS].count[b]++;
    partial[i % WAYS].mass[b] += m;
    *lo = b < *lo ? b : *lo, *hi = b > *hi ? b : *hi;
}

/* h as the sum of the partial histograms over [lo, hi] (in a fixed order), which are cleared;
 * returns the total mass, added from the top bucket down. */
static double merge_partials(histogram *h, int lo, int hi) {
    double total = 0;
    h->lo = lo, h->hi = hi;
    for (int b = hi; b >= lo; b--) {
        h->count[b] = partial[0].count[b] + partial[1].count[b] + partial[2].count[b] + partial[3].count[b];
        h->mass[b] = ((partial[0].mass[b] + partial[1].mass[b]) + partial[2].mass[b]) + partial[3].mass[b];
        total += h->mass[b];
        for (int w = 0; w < WAYS; w++) partial[w].count[b] = 0, partial[w].mass[b] = 0;
    }
    return total;
}

/* Histogram of p over the ids list[0..n) at digit d. */
static void histogram_of(histogram *h, const float *p, const int32_t *list, int n, digit d) {
    int lo = d.n, hi = -1;
    for (int i = 0; i < n; i++)
        tally(i, (int)((bits_of(p, list[i]) >> d.shift) & (uint32_t)(d.n - 1)), p[list[i]], &lo, &hi);
    merge_partials(h, lo, hi);
}

/* Whether element a comes before element b in the order (p descending, id ascending). */
static inline bool before(const float *p, int32_t a, int32_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); }

/* Insertion sort of a short list into the order. */
static void sort_short(int32_t *list, int n, const float *p) {
    for (int i = 1; i < n; i++) {
        int32_t v = list[i];
        int j = i;
        for (; j > 0 && before(p, v, list[j - 1]); j--) list[j] = list[j - 1];
        list[j] = v;
    }
}

/* Keeps (in place, in order) the ids of list[0..n) whose digit d is b; returns how many. */
static int keep_digit(int32_t *list, int n, const float *p, digit d, int b) {
    int k = 0;
    for (int i = 0; i < n; i++)
        if ((int)((bits_of(p, list[i]) >> d.shift) & (uint32_t)(d.n - 1)) == b) list[k++] = list[i];
    return k;
}

/* The ids (ascending) of top-level bucket b that are at or before lim, with their count and
 * mass; returns how many. Eight tokens at a time are tested at once and skipped together when
 * none is in the bucket (most of them, for any one bucket). */
static int gather(int32_t *list, const float *p, int V, int b, place lim, running *sum) {
    int n = 0;
    *sum = (running){0, 0};
    int32_t v = 0;
    for (; v < V; v++) {
        if (v % 8 == 0 && v + 8 <= V) {
            v8i bits8;
            memcpy(&bits8, p + v, sizeof bits8);
            v8i hit = (bits8 >> LEVELS[0].shift) == b;
            if (!(hit[0] | hit[1] | hit[2] | hit[3] | hit[4] | hit[5] | hit[6] | hit[7])) {
                v += 7;
                continue;
            }
        }
        uint32_t bits = bits_of(p, v);
        if ((int)(bits >> LEVELS[0].shift) == b && within(bits, v, lim)) {
            list[n++] = v;
            sum->count++, sum->mass += p[v];
        }
    }
    return n;
}

/* The element found by a search and the running mass through it. */
typedef struct {
    place at;
    double mass;
} found;

/* Finishes a search inside list[0..n) (one top-level bucket, ids ascending) with c the running
 * total before it: unless its members all share their bits (then they are in the order
 * already: ids ascending), one digit after another narrows the list to the crossing bucket
 * until they do or are few enough to sort; the list is then walked in order. Without a crossing (rounding) the last
 * element that may stand in is taken. */
static found descend(const float *p, int32_t *list, int n, criterion cr, double target, running c) {
    enum { SHORT = 32 }; /* a list this short is sorted rather than narrowed */
    histogram h;
    uint32_t least = UINT32_MAX, most = 0;
    for (int i = 0; i < n; i++) {
        uint32_t b = bits_of(p, list[i]);
        least = b < least ? b : least, most = b > most ? b : most;
    }
    for (int l = 1; l < 4 && n > SHORT && least != most; l++) {
        histogram_of(&h, p, list, n, LEVELS[l]);
        int b = walk(&h, LEVELS[l].n - 1, 0, cr, target, &c);
        if (b < 0) { /* nothing with mass (cannot happen for a bucket chosen above): the lowest */
            b = h.lo;
            c.count -= h.count[b], c.mass -= h.mass[b];
        }
        n = keep_digit(list, n, p, LEVELS[l], b);
    }
    sort_short(list, n <= SHORT && least != most ? n : 0, p);
    int pick = -1;
    for (int i = 0; i < n && pick < 0; i++) {
        if (crosses(cr, target, c, 1, p[list[i]]))
            pick = i;
        else
            c.count++, c.mass += p[list[i]];
    }
    if (pick < 0) { /* no crossing (rounding): the last one that may stand in, with c before it */
        pick = n - 1;
        while (pick > 0 && !fallback_ok(cr, 1, p[list[pick]])) pick--;
        for (int i = n - 1; i >= pick; i--) c.count--, c.mass -= p[list[i]];
    }
    int32_t id = list[pick];
    return (found){{bits_of(p, id), id}, c.mass + p[id]};
}

/* The first element at or before lim (in the order) whose running count or mass crosses the
 * target. The top level uses h, the histogram of all V, for the buckets above lim's, and
 * gathers lim's own bucket up to lim; only the chosen bucket's members are listed (in list). */
static found search(const float *p, int V, const histogram *h, place lim, criterion cr, double target,
                    int32_t *list) {
    running c = {0, 0};
    int top = LEVELS[0].n - 1, blim = (int)(lim.bits >> LEVELS[0].shift);
    int b = walk(h, top, blim + 1, cr, target, &c);
    running before = c, part;
    if (b >= 0 && crosses(cr, target, c, h->count[b], h->mass[b])) {
        int n = gather(list, p, V, b, EVERYTHING, &part);
        return descend(p, list, n, cr, target, c);
    }
    if (b >= 0) { /* no crossing above lim's bucket: c is before b; move it past b */
        c.count += h->count[b], c.mass += h->mass[b];
        for (int k = b - 1; k > blim && k >= h->lo; k--) c.count += h->count[k], c.mass += h->mass[k];
    }
    int n = gather(list, p, V, blim, lim, &part);
    if (n > 0 && (crosses(cr, target, c, part.count, part.mass) || fallback_ok(cr, part.count, part.mass) || b < 0))
        return descend(p, list, n, cr, target, c);
    n = gather(list, p, V, b, EVERYTHING, &part);
    return descend(p, list, n, cr, target, before);
}

/* Probabilities in place and their top-level histogram (as histogram_of, over every token);
 * returns their sum (bucket by bucket). */
static double probs_histogram(float *p, int V, double lse, histogram *h) {
    int body = V / 8 * 8;
    probs8(p, 0, body, lse);
    probs_tail(p, body, V, lse);
    int lo = LEVELS[0].n, hi = -1;
    for (int32_t v = 0; v < V; v++) tally(v, (int)(bits_of(p, v) >> LEVELS[0].shift), p[v], &lo, &hi);
    return merge_partials(h, lo, hi);
}

/* Truncated sampling: the top-k prefix of the order, then the top-p prefix of that (its mass
 * against top_p times the kept mass), then the draw by u over what is left. */
static int32_t draw_truncated(float *p, int V, const or1_sample_row *s, double lse, double u, int32_t *list) {
    histogram h;
    place lim = EVERYTHING;
    double kept = probs_histogram(p, V, lse, &h);
    if (s->top_k > 0 && s->top_k < V) {
        found f = search(p, V, &h, lim, BY_COUNT, s->top_k, list);
        lim = f.at, kept = f.mass;
    }
    if (s->top_p < 1) {
        found f = search(p, V, &h, lim, MASS_REACHES, s->top_p * kept, list);
        lim = f.at, kept = f.mass;
    }
    return search(p, V, &h, lim, MASS_EXCEEDS, u * kept, list).at.id;
}

/* Temperature, then top-k, then top-p on the renormalised remainder (Hugging Face's order);
 * the reported log-prob is the untruncated one at the temperature, computed as the trainer's
 * head computes it (or1_head_logprob), whatever the sampler's own sums. */
int32_t or1_sample_token(const float *logits, int V, const or1_sample_row *s, double u, float *logp,
                         float *scratch) {
    float t = s->temperature > 0 ? s->temperature : 1.0f, *p = scratch;
    int32_t *list = (int32_t *)(scratch + V);
    bool nan;
    float m = scale_max(p, logits, V, t, &nan);
    if (nan || isinf(m)) { /* a NaN or +inf logit, or none above -inf: no distribution to draw from */
        *logp = NAN;
        return 0;
    }
    double lse = lse_of(p, V, m);
    int32_t tok = 0;
    if (s->temperature <= 0) {
        while (p[tok] != m) tok++; /* the first maximum */
    } else if (s->top_k <= 0 && s->top_p >= 1) {
        tok = draw_plain(p, V, lse, u);
    } else {
        tok = draw_truncated(p, V, s, lse, u, list);
    }
    *logp = or1_head_logprob(logits, V, t, tok, p); /* the trainer's bits, from the same logits */
    return tok;
}
