/* Unbiased pass@k and avg@k of an evaluation, per data source and overall (paper §8.1;
 * the pass@k estimator of Chen et al. 2021, arXiv 2107.03374). */
#include "or1/algo.h"
#include "or1/core.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 1 - C(n-c, k)/C(n, k) as the product 1 - prod_{i=n-c+1..n} (1 - k/i) (Chen et al., 2021),
 * which never forms the binomials and so neither overflows nor cancels. */
double or1_pass_at_k(int n, int c, int k) {
    if (k < 1 || k > n || c < 0 || c > n) return NAN;
    if (n - c < k) return 1.0;
    double prod = 1.0;
    for (int i = n - c + 1; i <= n; i++) prod *= 1.0 - (double)k / (double)i;
    return 1.0 - prod;
}

/* Running sums of one aggregate (overall or one data source). */
typedef struct {
    const char *source;
    size_t problems; /* problems with at least one scored sample */
    double avg;      /* sum over problems of c/n */
    double *pass;    /* sum over problems of pass@k, per k */
    size_t *with_k;  /* problems with at least k scored samples, per k */
} agg;

/* Adds one problem to an aggregate; pass@k only where it has k scored samples. */
static void agg_add(agg *a, const or1_eval_result *r, const int *ks, size_t nk) {
    if (r->n == 0) return;
    a->problems++;
    a->avg += (double)r->correct / (double)r->n;
    for (size_t j = 0; j < nk; j++)
        if (r->n >= ks[j]) a->pass[j] += or1_pass_at_k(r->n, r->correct, ks[j]), a->with_k[j]++;
}

/* The JSON object of one aggregate: means over its problems (null where none qualifies). */
static cJSON *agg_json(const agg *a, int n, const int *ks, size_t nk) {
    cJSON *o = cJSON_CreateObject();
    char key[32];
    cJSON_AddNumberToObject(o, "problems", (double)a->problems);
    cJSON_AddNumberToObject(o, "n", n);
    snprintf(key, sizeof key, "avg@%d", n);
    if (a->problems) cJSON_AddNumberToObject(o, key, a->avg / (double)a->problems);
    else cJSON_AddNullToObject(o, key);
    for (size_t j = 0; j < nk; j++) {
        snprintf(key, sizeof key, "pass@%d", ks[j]);
        if (a->with_k[j]) cJSON_AddNumberToObject(o, key, a->pass[j] / (double)a->with_k[j]);
        else cJSON_AddNullToObject(o, key);
    }
    return o;
}

/* Whether every problem has 0 <= correct <= n <= n_drawn; fails naming the first that does not. */
static bool results_valid(const or1_eval_result *r, size_t n, int n_drawn) {
    if (n == 0) return or1_fail("pass@k: no evaluated problem"), false;
    if (n_drawn < 1) return or1_fail("pass@k: %d samples drawn per problem", n_drawn), false;
    for (size_t i = 0; i < n; i++)
        if (r[i].n < 0 || r[i].n > n_drawn || r[i].correct < 0 || r[i].correct > r[i].n) {
            or1_fail("pass@k: problem %zu has %d of %d scored samples correct, with %d drawn", i, r[i].correct,
                     r[i].n, n_drawn);
            return false;
        }
    return true;
}

/* Overall and per-source means of avg@n and pass@k for k = 1, 2, 4, ..., n_drawn. Sources
 * are listed in order of first appearance. */
cJSON *or1_passk_report(const or1_eval_result *r, size_t n, int n_drawn) {
    if (!results_valid(r, n, n_drawn)) return NULL;
    int ks[32];
    size_t nk = 0;
    for (int k = 1; k < n_drawn; k *= 2) ks[nk++] = k;
    ks[nk++] = n_drawn;
    agg *aggs = or1_calloc(n + 1, sizeof *aggs);
    size_t na = 1;
    double *sums = or1_calloc((n + 1) * nk, sizeof *sums);
    size_t *counts = or1_calloc((n + 1) * nk, sizeof *counts);
    aggs[0].pass = sums, aggs[0].with_k = counts;
    for (size_t i = 0; i < n; i++) {
        const char *src = r[i].data_source ? r[i].data_source : "";
        size_t a = 1;
        while (a < na && strcmp(aggs[a].source, src) != 0) a++;
        if (a == na) {
            aggs[na].source = src;
            aggs[na].pass = sums + na * nk, aggs[na].with_k = counts + na * nk;
            na++;
        }
        agg_add(&aggs[0], &r[i], ks, nk);
        agg_add(&aggs[a], &r[i], ks, nk);
    }
    cJSON *out = cJSON_CreateObject();
    cJSON_AddItemToObject(out, "overall", agg_json(&aggs[0], n_drawn, ks, nk));
    cJSON *by = cJSON_AddObjectToObject(out, "by_source");
    for (size_t a = 1; a < na; a++) cJSON_AddItemToObject(by, aggs[a].source, agg_json(&aggs[a], n_drawn, ks, nk));
    free(counts);
    free(sums);
    free(aggs);
    return out;
}
