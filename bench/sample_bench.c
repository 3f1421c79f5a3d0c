/* Milliseconds per sampled token on a Qwen-sized vocabulary: or1_sample_token against the
 * sort-based sampler it replaced (kept below as the baseline), one row on one thread, and the
 * CPU backend's sample op over 128 rows on the OpenMP threads (OMP_NUM_THREADS) against the
 * baseline's step run the way the backend ran it. One row is timed in thread CPU time, the
 * 128-row step in wall time.
 *
 * usage: sample_bench [V (151936)] [rows (128)]; prints one JSON line per case. */
#include "or1/core.h"
#include "or1/kernels.h"
#include "or1/model.h"

#include "backend_impl.h" /* the backend's sampler, measured on its own */

#include <math.h>
#include <omp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* ---- the baseline: the sampler as it was before the O(V) one ------------------------------ */

/* Index of the largest logit (the lowest index among equals). */
static int32_t old_argmax(const float *x, int n) {
    int32_t best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* log-sum-exp of x/t over n values, in double. */
static double old_lse(const float *x, int n, float t) {
    float m = -INFINITY;
    for (int i = 0; i < n; i++) m = x[i] / t > m ? x[i] / t : m;
    double s = 0;
    for (int i = 0; i < n; i++) s += exp((double)(x[i] / t - m));
    return m + log(s);
}

/* qsort_r order: probability descending, then token id ascending. */
static int old_by_prob_desc(const void *a, const void *b, void *probs) {
    const float *p = probs;
    int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
    if (p[i] != p[j]) return p[i] > p[j] ? -1 : 1;
    return i < j ? -1 : i > j;
}

/* Candidates with p >= cut, the cut lowered until they hold the top-k set and top-p mass. */
static int old_candidates(const float *p, int V, const or1_sample_row *s, int32_t *idx) {
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

/* Inverse CDF over the first n entries of idx. */
static int32_t old_draw(const float *p, const int32_t *idx, int n, double u) {
    double total = 0;
    for (int i = 0; i < n; i++) total += p[idx[i]];
    double target = u * total, c = 0;
    for (int i = 0; i < n; i++) {
        c += p[idx[i]];
        if (c > target) return idx[i];
    }
    return idx[n - 1];
}

/* The former or1_sample_token (scratch: V floats + V ints). */
static int32_t old_sample_token(const float *logits, int V, const or1_sample_row *s, double u, float *logp,
                                float *scratch) {
    float t = s->temperature > 0 ? s->temperature : 1.0f, *p = scratch;
    int32_t *idx = (int32_t *)(scratch + V);
    double lse = old_lse(logits, V, t);
    if (!isfinite(lse)) {
        *logp = NAN;
        return 0;
    }
    if (s->temperature <= 0) {
        int32_t a = old_argmax(logits, V);
        *logp = (float)(logits[a] - lse);
        return a;
    }
    for (int v = 0; v < V; v++) p[v] = (float)exp((double)(logits[v] / t) - lse);
    int32_t tok;
    if (s->top_k <= 0 && s->top_p >= 1) {
        for (int v = 0; v < V; v++) idx[v] = v;
        tok = old_draw(p, idx, V, u);
    } else {
        int n = old_candidates(p, V, s, idx);
        qsort_r(idx, (size_t)n, sizeof *idx, old_by_prob_desc, p);
        if (s->top_k > 0 && n > s->top_k) n = s->top_k;
        if (s->top_p < 1) {
            double total = 0, c = 0;
            for (int i = 0; i < n; i++) total += p[idx[i]];
            int keep = 0;
            while (keep < n && c < s->top_p * total) c += p[idx[keep++]];
            n = keep > 0 ? keep : 1;
        }
        tok = old_draw(p, idx, n, u);
    }
    *logp = (float)((double)(logits[tok] / t) - lse);
    return tok;
}

/* ---- the measurement ------------------------------------------------------------------------ */

typedef int32_t (*sampler)(const float *, int, const or1_sample_row *, double, float *, float *);

/* rows x V logits: "flat" N(0, 1) each; "peaked" N(0, 2) with ten tokens raised by 16 (they hold
 * about 99% of the mass, as a trained model's next-token distribution often does). */
static void make_logits(float *x, int rows, int V, bool peaked) {
    for (int r = 0; r < rows; r++)
        for (int v = 0; v < V; v++) {
            double z = or1_rand_normal(7 + (uint64_t)r, (uint64_t)peaked, (uint64_t)v);
            x[(size_t)r * V + v] = (float)(peaked ? 2 * z + (v % (V / 10) == 17 ? 16 : 0) : z);
        }
}

/* This thread's CPU time in seconds (other jobs on the machine move it less than wall time). */
static double thread_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Mean CPU-ms per token of f on row 0, over at least 0.3 s (and 3 draws). */
static double ms_per_token(sampler f, const float *x, int V, const or1_sample_row *s, float *scratch) {
    int n = 0;
    float logp;
    double t0 = thread_seconds(), dt;
    do {
        volatile int32_t tok = f(x, V, s, or1_rand_uniform(1, 0, (uint64_t)n), &logp, scratch);
        (void)tok;
        n++;
        dt = thread_seconds() - t0;
    } while (dt < 0.3 || n < 3);
    return 1e3 * dt / n;
}

/* The baseline's decode step as the CPU backend ran it: rows in parallel, scratch per thread. */
static void old_step(int32_t *next, float *logp, const float *x, int rows, int V, const or1_sample_row *rs,
                     float *scratch) {
    #pragma omp parallel for schedule(dynamic, 1)
    for (int r = 0; r < rows; r++) {
        double u = or1_rand_uniform(rs[r].seed, (uint64_t)rs[r].stream, (uint64_t)rs[r].counter);
        float *s = scratch + (size_t)omp_get_thread_num() * 2 * V;
        next[r] = old_sample_token(x + (size_t)r * V, V, &rs[r], u, &logp[r], s);
    }
}

/* Mean wall-ms per decode step over `rows` rows (at least 0.5 s): the CPU backend's sample op,
 * or the baseline's step when be is NULL. */
static double ms_per_step(or1_backend *be, const float *x, int rows, int V, or1_sample_row *rs) {
    int32_t *next = malloc((size_t)rows * sizeof *next);
    float *logp = malloc((size_t)rows * sizeof *logp);
    float *scratch = be ? NULL : or1_alloc_floats((size_t)omp_get_max_threads() * 2 * V);
    int n = 0;
    double t0 = or1_now(), dt;
    do {
        for (int r = 0; r < rows; r++) rs[r].counter = n;
        if (be)
            be->ops->sample(be, next, logp, x, rows, V, rs);
        else
            old_step(next, logp, x, rows, V, rs, scratch);
        n++;
        dt = or1_now() - t0;
    } while (dt < 0.5 || n < 2);
    free(next), free(logp), free(scratch);
    return 1e3 * dt / n;
}

int main(int argc, char **argv) {
    int V = argc > 1 ? atoi(argv[1]) : 151936, rows = argc > 2 ? atoi(argv[2]) : 128;
    if (V < 16 || rows < 1) {
        fprintf(stderr, "sample_bench: V must be at least 16 and rows at least 1\n");
        return 2;
    }
    static const struct {
        const char *name;
        float top_p;
        int top_k;
    } settings[] = {{"plain", 1, 0}, {"top-p 0.95", 0.95f, 0}, {"top-k 50", 1, 50}, {"top-k 50 top-p 0.95", 0.95f, 50}};
    float *x = or1_alloc_floats((size_t)rows * V), *scratch = or1_alloc_floats((size_t)2 * V);
    or1_sample_row *rs = malloc((size_t)rows * sizeof *rs);
    or1_backend *be = or1_backend_cpu();
    for (int peaked = 0; peaked < 2; peaked++) {
        make_logits(x, rows, V, peaked);
        for (size_t k = 0; k < sizeof settings / sizeof *settings; k++) {
            or1_sample_row s = {.temperature = 1.0f, .top_p = settings[k].top_p, .top_k = settings[k].top_k,
                                .seed = 1, .stream = 0, .counter = 0};
            for (int r = 0; r < rows; r++) rs[r] = s, rs[r].stream = r;
            double before = ms_per_token(old_sample_token, x, V, &s, scratch);
            double after = ms_per_token(or1_sample_token, x, V, &s, scratch);
            double step_before = ms_per_step(NULL, x, rows, V, rs), step = ms_per_step(be, x, rows, V, rs);
            printf("{\"logits\":\"%s\",\"sampling\":\"%s\",\"V\":%d,\"before_ms\":%.3f,\"after_ms\":%.3f,"
                   "\"speedup\":%.1f,\"rows\":%d,\"threads\":%d,\"step_ms_before\":%.1f,\"step_ms\":%.1f,"
                   "\"step_speedup\":%.1f}\n",
                   peaked ? "peaked" : "flat", settings[k].name, V, before, after, before / after, rows,
                   or1_threads(), step_before, step, step_before / step);
            fflush(stdout);
        }
    }
    or1_backend_free(be);
    free(x), free(scratch), free(rs);
    return 0;
}
