/* The groups of a batch (internal.h): the one grouping of samples by prompt id that the
 * estimators, the rejection and the batch metrics all read. */
#include "internal.h"
#include "or1/core.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    int32_t id;
    size_t i;
} keyed;

/* Orders samples by group id, then by sample index. */
static int cmp_keyed(const void *a, const void *b) {
    const keyed *x = a, *y = b;
    if (x->id != y->id) return x->id < y->id ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

typedef struct {
    size_t first, from, to; /* first sample index; run [from, to) in the sorted array */
} run;

/* Orders runs by their first sample, so groups come out in first-appearance order. */
static int cmp_run(const void *a, const void *b) {
    const run *x = a, *y = b;
    return x->first < y->first ? -1 : x->first > y->first;
}

/* Sorts (id, index) pairs, cuts them into runs of equal id, and lists the runs in order of
 * their first sample: O(n log n) for any id values. */
void or1_groups_build(const int32_t *group, size_t n, or1_groups *g) {
    keyed *k = or1_malloc((n ? n : 1) * sizeof *k);
    for (size_t i = 0; i < n; i++) k[i] = (keyed){group[i], i};
    qsort(k, n, sizeof *k, cmp_keyed);
    run *runs = or1_malloc((n ? n : 1) * sizeof *runs);
    size_t nr = 0;
    for (size_t a = 0; a < n;) {
        size_t b = a + 1;
        while (b < n && k[b].id == k[a].id) b++;
        runs[nr++] = (run){k[a].i, a, b};
        a = b;
    }
    qsort(runs, nr, sizeof *runs, cmp_run);
    g->n_groups = nr;
    g->idx = or1_malloc((n ? n : 1) * sizeof *g->idx);
    g->start = or1_malloc((nr + 1) * sizeof *g->start);
    size_t at = 0;
    for (size_t r = 0; r < nr; r++) {
        g->start[r] = at;
        for (size_t j = runs[r].from; j < runs[r].to; j++) g->idx[at++] = k[j].i;
    }
    g->start[nr] = at;
    free(runs);
    free(k);
}

/* Frees the index arrays. */
void or1_groups_free(or1_groups *g) {
    free(g->idx);
    free(g->start);
    memset(g, 0, sizeof *g);
}
