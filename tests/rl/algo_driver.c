/* Test driver for or1/algo.h: reads cases (one JSON object per line, "fn" naming the
 * function) and prints one JSON result per case, for tests/rl/test_algo.py to compare with
 * its Python and PyTorch references. Exits non-zero on a malformed case. */
#include "or1/algo.h"
#include "or1/core.h"
#include "or1/io.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A case's numeric (or boolean) array as doubles (missing key: NULL, *n = 0). */
static double *nums(const cJSON *c, const char *key, size_t *n) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(c, key);
    *n = (size_t)cJSON_GetArraySize(a);
    double *x = or1_malloc((*n ? *n : 1) * sizeof *x);
    for (size_t i = 0; i < *n; i++) {
        const cJSON *v = cJSON_GetArrayItem(a, (int)i);
        x[i] = cJSON_IsBool(v) ? (double)cJSON_IsTrue(v) : cJSON_IsNull(v) ? NAN : v->valuedouble;
    }
    return a ? x : (free(x), NULL);
}

/* Float copy of a double array. */
static float *to_f(const double *x, size_t n) {
    float *y = or1_malloc((n ? n : 1) * sizeof *y);
    for (size_t i = 0; i < n; i++) y[i] = (float)x[i];
    return y;
}
/* Int32 copy of a double array. */
static int32_t *to_i(const double *x, size_t n) {
    int32_t *y = or1_malloc((n ? n : 1) * sizeof *y);
    for (size_t i = 0; i < n; i++) y[i] = (int32_t)x[i];
    return y;
}
/* Bool copy of a double array (NULL stays NULL). */
static bool *to_b(const double *x, size_t n) {
    if (!x) return NULL;
    bool *y = or1_malloc((n ? n : 1) * sizeof *y);
    for (size_t i = 0; i < n; i++) y[i] = x[i] != 0.0;
    return y;
}

/* A float array as JSON. */
static cJSON *jf(const float *x, size_t n) {
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(x[i]));
    return a;
}
/* A bool array as JSON. */
static cJSON *jb(const bool *x, size_t n) {
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateBool(x[i]));
    return a;
}

/* Verdicts of a rejection as names, plus the counts. */
static void add_rejection(cJSON *out, const or1_rejection *r) {
    cJSON *v = cJSON_AddArrayToObject(out, "verdicts"), *ids = cJSON_AddArrayToObject(out, "group_ids");
    for (size_t k = 0; k < r->n_groups; k++) {
        cJSON_AddItemToArray(v, cJSON_CreateString(or1_group_verdict_name(r->verdict[k])));
        cJSON_AddItemToArray(ids, cJSON_CreateNumber(r->ids[k]));
    }
    cJSON_AddNumberToObject(out, "kept_groups", (double)r->kept);
    cJSON_AddNumberToObject(out, "solve_none", (double)r->solve_none);
    cJSON_AddNumberToObject(out, "solve_all", (double)r->solve_all);
    cJSON_AddNumberToObject(out, "constant", (double)r->constant);
    cJSON_AddNumberToObject(out, "empty", (double)r->empty);
    cJSON_AddNumberToObject(out, "reward_errors", (double)r->reward_errors);
}

/* Reads the entropy parameters of a case. */
static int entropy_params(const cJSON *c, or1_entropy_params *p) {
    *p = or1_entropy_defaults();
    const cJSON *mode = cJSON_GetObjectItemCaseSensitive(c, "mode");
    if (mode && or1_entropy_mode_parse(mode->valuestring, &p->mode, "case") != 0) return -1;
    if (or1_json_num_opt(c, "target", &p->target, "case") || or1_json_num_opt(c, "delta", &p->delta, "case") ||
        or1_json_num_opt(c, "c_min", &p->c_min, "case") || or1_json_num_opt(c, "c_max", &p->c_max, "case") ||
        or1_json_num_opt(c, "initial", &p->initial, "case"))
        return -1;
    return 0;
}

/* The entropy controller over a trajectory of entropy estimates: alpha used at each step,
 * then the state after its update; the state also goes through its JSON form each step. */
static int run_entropy(const cJSON *c, cJSON *out) {
    or1_entropy_params p;
    if (entropy_params(c, &p) != 0) return -1;
    size_t n;
    double *e = nums(c, "entropies", &n);
    or1_entropy_ctl s;
    or1_entropy_init(&s, &p);
    cJSON *alpha = cJSON_AddArrayToObject(out, "alpha"), *coef = cJSON_AddArrayToObject(out, "coef"),
          *en = cJSON_AddArrayToObject(out, "enabled");
    for (size_t i = 0; i < n; i++) {
        cJSON_AddItemToArray(alpha, cJSON_CreateNumber(or1_entropy_alpha(&s, &p)));
        or1_entropy_update(&s, &p, e[i]);
        cJSON *j = or1_entropy_state_json(&s);
        char *txt = cJSON_PrintUnformatted(j);
        cJSON *back = cJSON_Parse(txt);
        or1_entropy_ctl s2;
        int rc = or1_entropy_state_load(&s2, back, "state");
        if (rc != 0 || s2.coef != s.coef || s2.enabled != s.enabled) {
            fprintf(stderr, "entropy state does not round-trip: %s\n", txt);
            rc = -1;
        }
        cJSON_Delete(back);
        cJSON_Delete(j);
        free(txt);
        if (rc != 0) {
            free(e);
            return -1;
        }
        s = s2;
        cJSON_AddItemToArray(coef, cJSON_CreateNumber(s.coef));
        cJSON_AddItemToArray(en, cJSON_CreateBool(s.enabled));
    }
    free(e);
    return 0;
}

/* Token-weighted entropy estimate over ragged log-prob rows. */
static void run_entropy_estimate(const cJSON *c, cJSON *out) {
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(c, "logp");
    size_t n = (size_t)cJSON_GetArraySize(rows), nu;
    float **lp = or1_malloc((n ? n : 1) * sizeof *lp);
    int *len = or1_malloc((n ? n : 1) * sizeof *len);
    for (size_t i = 0; i < n; i++) {
        const cJSON *r = cJSON_GetArrayItem(rows, (int)i);
        len[i] = cJSON_GetArraySize(r);
        lp[i] = or1_malloc(((size_t)len[i] + 1) * sizeof **lp);
        for (int t = 0; t < len[i]; t++) lp[i][t] = (float)cJSON_GetArrayItem(r, t)->valuedouble;
    }
    double *u = nums(c, "use", &nu);
    bool *use = to_b(u, nu);
    cJSON_AddNumberToObject(out, "estimate", or1_entropy_estimate((const float *const *)lp, len, use, n));
    for (size_t i = 0; i < n; i++) free(lp[i]);
    free(lp);
    free(len);
    free(u);
    free(use);
}

/* KL estimator value and gradient at logp, and the values at logp +- h for a finite
 * difference. */
static int run_kl(const cJSON *c, cJSON *out) {
    or1_kl_estimator e;
    if (or1_kl_parse(cJSON_GetObjectItemCaseSensitive(c, "kind")->valuestring, &e, "case") != 0) return -1;
    double lp, ref, h, g, gp;
    if (or1_json_num(c, "logp", &lp, "case") || or1_json_num(c, "ref", &ref, "case") ||
        or1_json_num(c, "h", &h, "case"))
        return -1;
    cJSON_AddNumberToObject(out, "value", or1_kl_token(&e, lp, ref, &g));
    cJSON_AddNumberToObject(out, "grad", g);
    cJSON_AddNumberToObject(out, "value_plus", or1_kl_token(&e, lp + h, ref, &gp));
    cJSON_AddNumberToObject(out, "value_minus", or1_kl_token(&e, lp - h, ref, &gp));
    return 0;
}

/* pass@k report over (source, n, correct) rows, n_drawn given or the largest n. */
static int run_report(const cJSON *c, cJSON *out) {
    const cJSON *rows = cJSON_GetObjectItemCaseSensitive(c, "rows");
    size_t n = (size_t)cJSON_GetArraySize(rows);
    or1_eval_result *r = or1_malloc((n ? n : 1) * sizeof *r);
    for (size_t i = 0; i < n; i++) {
        const cJSON *x = cJSON_GetArrayItem(rows, (int)i);
        r[i] = (or1_eval_result){.data_source = cJSON_GetArrayItem(x, 0)->valuestring,
                                 .n = cJSON_GetArrayItem(x, 1)->valueint,
                                 .correct = cJSON_GetArrayItem(x, 2)->valueint};
    }
    const cJSON *drawn = cJSON_GetObjectItemCaseSensitive(c, "n_drawn");
    int n_drawn = 0;
    for (size_t i = 0; i < n; i++) n_drawn = r[i].n > n_drawn ? r[i].n : n_drawn;
    if (cJSON_IsNumber(drawn)) n_drawn = drawn->valueint;
    cJSON *rep = or1_passk_report(r, n, n_drawn);
    free(r);
    if (!rep) {
        cJSON_AddStringToObject(out, "error", or1_error());
        return 0;
    }
    cJSON_AddItemToObject(out, "report", rep);
    return 0;
}

/* Per-sample inputs shared by the batch-level functions. */
typedef struct {
    size_t n;
    double *s, *g, *u, *t, *l;
    float *scores;
    int32_t *group;
    bool *use, *trunc;
} batch;

/* Reads the per-sample arrays of a case. */
static void batch_read(const cJSON *c, batch *b) {
    size_t n2;
    b->s = nums(c, "scores", &b->n);
    b->g = nums(c, "group", &n2);
    b->u = nums(c, "use", &n2);
    b->t = nums(c, "truncated", &n2);
    b->l = nums(c, "len", &n2);
    b->scores = to_f(b->s, b->n);
    b->group = to_i(b->g, b->n);
    b->use = to_b(b->u, b->n);
    b->trunc = to_b(b->t, b->n);
}

/* Frees them. */
static void batch_free(batch *b) {
    free(b->s), free(b->g), free(b->u), free(b->t), free(b->l);
    free(b->scores), free(b->group), free(b->use), free(b->trunc);
}

/* Advantage-stage settings of a case. */
static int adv_cfg(const cJSON *c, or1_adv_cfg *cfg) {
    *cfg = (or1_adv_cfg){.estimator = OR1_ADV_GRPO, .eps = OR1_GRPO_EPS, .trunc = OR1_TRUNC_NONE,
                         .reject = true, .keep_single = false};
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(c, "mode");
    if (m && or1_trunc_mask_parse(m->valuestring, &cfg->trunc, "case") != 0) return -1;
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(c, "estimator");
    if (e && or1_adv_estimator_parse(e->valuestring, &cfg->estimator, "case") != 0) return -1;
    bool norm_by_std = cfg->estimator != OR1_ADV_DRGRPO;
    if (or1_json_bool_opt(c, "norm_by_std", &norm_by_std, "case") ||
        or1_json_num_opt(c, "eps", &cfg->eps, "case") || or1_json_bool_opt(c, "reject", &cfg->reject, "case") ||
        or1_json_bool_opt(c, "keep_single", &cfg->keep_single, "case"))
        return -1;
    if (cfg->estimator == OR1_ADV_GRPO || cfg->estimator == OR1_ADV_DRGRPO)
        cfg->estimator = norm_by_std ? OR1_ADV_GRPO : OR1_ADV_DRGRPO;
    return 0;
}

/* Runs the batch-level functions: advantages, masks, rejection, the step pipeline, stats. */
static int run_batch(const char *fn, const cJSON *c, cJSON *out) {
    batch b;
    batch_read(c, &b);
    or1_adv_cfg cfg;
    int rc = adv_cfg(c, &cfg);
    size_t n = b.n;
    float *adv = or1_malloc((n ? n : 1) * sizeof *adv);
    bool *m1 = or1_malloc((n ? n : 1) * sizeof *m1), *m2 = or1_malloc((n ? n : 1) * sizeof *m2);
    int *len = or1_malloc((n ? n : 1) * sizeof *len);
    for (size_t i = 0; i < n; i++) len[i] = b.l ? (int)b.l[i] : 0;
    or1_rejection r;
    if (rc != 0) {
    } else if (!strcmp(fn, "adv")) {
        or1_grpo_advantages(b.scores, b.group, b.use, n, cfg.estimator == OR1_ADV_GRPO, cfg.eps, adv);
        cJSON_AddItemToObject(out, "adv", jf(adv, n));
    } else if (!strcmp(fn, "outcome")) {
        or1_outcome_advantages(cfg.estimator, b.scores, b.group, b.use, len, n, cfg.eps, adv);
        cJSON_AddItemToObject(out, "adv", jf(adv, n));
    } else if (!strcmp(fn, "trunc")) {
        or1_trunc_masks(b.trunc, n, cfg.trunc, m1, m2);
        cJSON_AddItemToObject(out, "in_stats", jb(m1, n));
        cJSON_AddItemToObject(out, "in_loss", jb(m2, n));
    } else if (!strcmp(fn, "reject")) {
        or1_reject_groups(b.scores, b.group, b.use, n, cfg.keep_single, &r, m1);
        cJSON_AddItemToObject(out, "kept", jb(m1, n));
        add_rejection(out, &r);
        or1_rejection_free(&r);
    } else if (!strcmp(fn, "length")) {
        const cJSON *o = cJSON_GetObjectItem(c, "overlong");
        or1_length_cfg lc = {.overlong = cJSON_IsTrue(o),
                             .overlong_len = cJSON_GetObjectItem(c, "buffer")->valueint,
                             .overlong_penalty = cJSON_GetObjectItem(c, "factor")->valuedouble,
                             .truncation_penalty = cJSON_GetObjectItem(c, "truncation_penalty")->valuedouble};
        or1_length_rewards(&lc, b.scores, len, b.trunc, n, cJSON_GetObjectItem(c, "max_len")->valueint, adv);
        cJSON_AddItemToObject(out, "reward", jf(adv, n));
    } else if (!strcmp(fn, "step") || !strcmp(fn, "stats")) {
        or1_step_advantages(&cfg, b.scores, b.group, b.trunc, len, n, adv, m1, &r);
        cJSON_AddItemToObject(out, "adv", jf(adv, n));
        cJSON_AddItemToObject(out, "in_loss", jb(m1, n));
        add_rejection(out, &r);
        if (!strcmp(fn, "stats")) {
            or1_batch_stats st;
            or1_batch_stats_compute(b.scores, b.group, len, NULL, b.trunc, m1, n, &r, &st);
            cJSON *row = cJSON_AddObjectToObject(out, "stats");
            or1_batch_stats_json(&st, row);
        }
        or1_rejection_free(&r);
    }
    free(adv), free(m1), free(m2), free(len);
    batch_free(&b);
    return rc;
}

/* Refill decision and selection. */
static void run_refill(const cJSON *c, cJSON *out) {
    size_t n;
    double *k = nums(c, "group_kept", &n);
    if (k) {
        bool *kept = to_b(k, n), *take = or1_malloc((n ? n : 1) * sizeof *take);
        size_t taken = or1_refill_take(kept, n, (size_t)cJSON_GetObjectItem(c, "need")->valuedouble, take);
        cJSON_AddItemToObject(out, "take", jb(take, n));
        cJSON_AddNumberToObject(out, "taken", (double)taken);
        free(kept), free(take), free(k);
        return;
    }
    static const char *const names[] = {"train", "more", "skip"};
    or1_refill_action a = or1_refill_decide((size_t)cJSON_GetObjectItem(c, "kept")->valuedouble,
                                            cJSON_GetObjectItem(c, "rounds_done")->valueint,
                                            (size_t)cJSON_GetObjectItem(c, "need")->valuedouble,
                                            cJSON_GetObjectItem(c, "max_rounds")->valueint);
    cJSON_AddStringToObject(out, "action", names[a]);
}

/* Dispatches one case. */
static int run_case(const cJSON *c, cJSON *out) {
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(c, "fn");
    if (!cJSON_IsString(f)) return or1_fail("case without \"fn\"");
    const char *fn = f->valuestring;
    if (!strcmp(fn, "entropy")) return run_entropy(c, out);
    if (!strcmp(fn, "entropy_estimate")) {
        run_entropy_estimate(c, out);
        return 0;
    }
    if (!strcmp(fn, "kl")) return run_kl(c, out);
    if (!strcmp(fn, "passk")) {
        const cJSON *n = cJSON_GetObjectItem(c, "n"), *k = cJSON_GetObjectItem(c, "k"),
                    *cc = cJSON_GetObjectItem(c, "c");
        double v = or1_pass_at_k(n->valueint, cc->valueint, k->valueint);
        if (isnan(v)) cJSON_AddNullToObject(out, "value");
        else cJSON_AddNumberToObject(out, "value", v);
        return 0;
    }
    if (!strcmp(fn, "report")) return run_report(c, out);
    if (!strcmp(fn, "refill")) {
        run_refill(c, out);
        return 0;
    }
    if (!strcmp(fn, "parse")) {
        const char *kind = cJSON_GetObjectItem(c, "kind")->valuestring, *s = cJSON_GetObjectItem(c, "s")->valuestring;
        int rc = -1;
        char name[64] = "";
        if (!strcmp(kind, "kl")) {
            or1_kl_estimator e;
            if ((rc = or1_kl_parse(s, &e, "case")) == 0)
                snprintf(name, sizeof name, "%s%s", or1_kl_name(e.kind), e.straight_through ? "+" : "");
        } else if (!strcmp(kind, "trunc")) {
            or1_trunc_mask m;
            if ((rc = or1_trunc_mask_parse(s, &m, "case")) == 0) snprintf(name, sizeof name, "%s", or1_trunc_mask_name(m));
        } else {
            or1_entropy_mode m;
            if ((rc = or1_entropy_mode_parse(s, &m, "case")) == 0) snprintf(name, sizeof name, "%s", or1_entropy_mode_name(m));
        }
        if (rc == 0) cJSON_AddStringToObject(out, "name", name);
        else cJSON_AddStringToObject(out, "error", or1_error());
        return 0;
    }
    return run_batch(fn, c, out);
}

/* Runs every case of the file given, printing one result line per case. */
int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: algo_driver CASES.jsonl\n");
        return 2;
    }
    or1_jsonl_reader rd;
    if (or1_jsonl_open(&rd, argv[1]) != 0) {
        fprintf(stderr, "%s\n", or1_error());
        return 1;
    }
    cJSON *c;
    int rc, status = 0;
    while ((rc = or1_jsonl_next(&rd, &c)) == 1) {
        cJSON *out = cJSON_CreateObject();
        if (run_case(c, out) != 0) {
            fprintf(stderr, "%s:%zu: %s\n", argv[1], rd.line, or1_error());
            status = 1;
        }
        char *txt = cJSON_PrintUnformatted(out);
        puts(txt);
        free(txt);
        cJSON_Delete(out);
        cJSON_Delete(c);
    }
    if (rc < 0) {
        fprintf(stderr, "%s\n", or1_error());
        status = 1;
    }
    or1_jsonl_close(&rd);
    return status;
}
