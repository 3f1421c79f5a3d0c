/* Agreement of or1_math_verify with Math-Verify's own verdicts: runs the labelled cases of
 * tests/math/parity.jsonl ({"category", "gold", "response", "expected", "source"}), prints the
 * agreement per category and overall and every disagreement, and fails when the overall
 * agreement is under the floor (97% unless "--min PCT" says otherwise) or when one case runs
 * longer than the verifier's own time bound. */
#include "or1/core.h"
#include "or1/io.h"
#include "or1/reward_math.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"

#define MAX_CATEGORIES 32

typedef struct {
    char name[48];
    int total, agree;
} category;

typedef struct {
    category cats[MAX_CATEGORIES];
    int ncat, total, agree;
    double slowest_s;
} tally;

/* The category slot named name, added when new (exits past MAX_CATEGORIES: the file is part
 * of the test). */
static category *category_of(tally *t, const char *name) {
    for (int i = 0; i < t->ncat; i++)
        if (strcmp(t->cats[i].name, name) == 0) return &t->cats[i];
    if (t->ncat == MAX_CATEGORIES) {
        fprintf(stderr, "more than %d categories\n", MAX_CATEGORIES);
        exit(2);
    }
    category *c = &t->cats[t->ncat++];
    snprintf(c->name, sizeof c->name, "%s", name);
    return c;
}

/* The string member key of row, or exits naming the line (a malformed case file). */
static const char *member(const cJSON *row, const char *key, const char *path, size_t line) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(row, key);
    if (!cJSON_IsString(v)) {
        fprintf(stderr, "%s:%zu: \"%s\" missing or not a string\n", path, line, key);
        exit(2);
    }
    return v->valuestring;
}

/* Verifies one case, timing it; counts it in t and prints it when the verdict differs. */
static void run_case(tally *t, const cJSON *row, const char *path, size_t line, const or1_math_limits *lim) {
    const char *gold = member(row, "gold", path, line), *response = member(row, "response", path, line);
    const cJSON *exp = cJSON_GetObjectItemCaseSensitive(row, "expected");
    if (!cJSON_IsBool(exp)) {
        fprintf(stderr, "%s:%zu: \"expected\" missing or not a boolean\n", path, line);
        exit(2);
    }
    or1_math_result res;
    double t0 = or1_now();
    int rc = or1_math_verify(response, &gold, 1, lim, &res);
    double took = or1_now() - t0;
    if (took > t->slowest_s) t->slowest_s = took;
    CHECK(took <= lim->time_limit_s + 0.5, "%s:%zu took %.2f s, over the bound of %.1f s", path, line, took,
          lim->time_limit_s);
    bool agree = rc == 0 && res.correct == cJSON_IsTrue(exp);
    category *c = category_of(t, member(row, "category", path, line));
    c->total++, t->total++;
    c->agree += agree, t->agree += agree;
    if (!agree)
        printf("DISAGREE %s:%zu [%s] expected %s, extracted \"%.120s\", gold \"%.120s\" (%s)\n", path, line, c->name,
               cJSON_IsTrue(exp) ? "true" : "false", rc == 0 ? res.extracted : "", gold,
               member(row, "source", path, line));
    if (rc == 0) or1_math_result_free(&res);
}

/* Runs every case of the file into t; exits on an unreadable file. */
static void run_file(tally *t, const char *path) {
    or1_math_limits lim;
    or1_math_limits_defaults(&lim);
    or1_jsonl_reader r;
    if (or1_jsonl_open(&r, path) != 0) {
        fprintf(stderr, "%s\n", or1_error());
        exit(2);
    }
    cJSON *row;
    int got;
    while ((got = or1_jsonl_next(&r, &row)) == 1) {
        run_case(t, row, path, r.line, &lim);
        cJSON_Delete(row);
    }
    if (got < 0) {
        fprintf(stderr, "%s\n", or1_error());
        exit(2);
    }
    or1_jsonl_close(&r);
}

/* Prints the agreement table (a Markdown table, as docs/rewards.md shows it). */
static void print_table(const tally *t) {
    printf("\n| category | cases | agree | agreement |\n|---|---:|---:|---:|\n");
    for (int i = 0; i < t->ncat; i++)
        printf("| %s | %d | %d | %.1f%% |\n", t->cats[i].name, t->cats[i].total, t->cats[i].agree,
               100.0 * t->cats[i].agree / t->cats[i].total);
    printf("| **overall** | %d | %d | %.1f%% |\n", t->total, t->agree, t->total ? 100.0 * t->agree / t->total : 0.0);
    printf("slowest case: %.3f s\n", t->slowest_s);
}

/* Usage: test_math_parity PARITY.jsonl [--min PCT] */
int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_math_parity PARITY.jsonl [--min PCT]\n");
        return 2;
    }
    double floor_pct = argc >= 4 && strcmp(argv[2], "--min") == 0 ? atof(argv[3]) : 97.0;
    tally t = {0};
    run_file(&t, argv[1]);
    print_table(&t);
    CHECK(t.total >= 300, "only %d cases (at least 300 wanted)", t.total);
    CHECK(t.total > 0 && 100.0 * t.agree >= floor_pct * t.total, "agreement %.1f%% under the floor of %.1f%%",
          t.total ? 100.0 * t.agree / t.total : 0.0, floor_pct);
    return check_report();
}
