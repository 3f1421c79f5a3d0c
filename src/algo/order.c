/* Order statistics over the ranks that share a mini-batch: an order-preserving key of a float,
 * the k-th largest key and the quantile found by bisection on its bits with one sum per bit, and
 * the growable list of values they are taken from. Below loss.c and select.c, which both read it. */
#include "internal.h"
#include "or1/algo.h"
#include "or1/core.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Sums over the ranks sharing the values (nothing to do for one process). */
void algo_sum(const or1_reducer *r, double *buf, size_t n) {
    if (r && r->sum) r->sum(r->ctx, buf, n);
}

/* IEEE order as unsigned order: negatives flipped whole, positives get the top bit. */
uint32_t or1_float_key(float v) {
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return (u & 0x80000000u) ? ~u : u | 0x80000000u;
}

/* The largest K with at least k keys >= K over all ranks, found bit by bit from the top:
 * that K is the k-th largest key. 64 sums of one count each. */
uint64_t or1_kth_largest_key(const uint64_t *key, size_t n, long k, const or1_reducer *r) {
    uint64_t best = 0;
    for (int bit = 63; bit >= 0; bit--) {
        uint64_t cand = best | (1ULL << bit);
        double count = 0;
        for (size_t i = 0; i < n; i++) count += key[i] >= cand;
        algo_sum(r, &count, 1);
        if (count >= (double)k) best = cand;
    }
    return best;
}

/* Appends one value, doubling the room when full. */
void or1_values_push(or1_values *l, float x) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 1024;
        l->v = or1_realloc(l->v, l->cap * sizeof *l->v);
    }
    l->v[l->n++] = x;
}

/* Frees the values and empties the list. */
void or1_values_free(or1_values *l) {
    free(l->v);
    memset(l, 0, sizeof *l);
}

/* Undoes or1_float_key. */
float or1_key_float(uint64_t k) {
    uint32_t u = (uint32_t)k;
    u = (u & 0x80000000u) ? u & 0x7fffffffu : ~u;
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
}

/* The ceil(q T)-th smallest is the (T - that + 1)-th largest, found over the ranks. */
double or1_quantile(const float *v, size_t n, double q, const or1_reducer *r) {
    double T = (double)n;
    algo_sum(r, &T, 1);
    if (T == 0) return NAN;
    long k = (long)ceil(q * T - 1e-9);
    k = k < 1 ? 1 : k > (long)T ? (long)T : k;
    uint64_t *key = or1_malloc((n + 1) * sizeof *key);
    for (size_t i = 0; i < n; i++) key[i] = or1_float_key(v[i]);
    uint64_t kth = or1_kth_largest_key(key, n, (long)T - k + 1, r);
    free(key);
    return or1_key_float(kth);
}
