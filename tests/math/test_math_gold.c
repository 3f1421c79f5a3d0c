/* Every gold answer of the given data files, boxed as a response, must be accepted against
 * its own row; and every gold that parses as mathematics must also equal itself with the
 * string shortcut switched off (so the parser and evaluator, not strcmp, decide). Prints
 * how many distinct strings and normalised forms there are and how many parse as
 * mathematics. */
#include "or1/core.h"
#include "or1/io.h"
#include "or1/reward_math.h"
#include "reward/math_internal.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"

/* A set of strings (open addressing) to count distinct forms. */
typedef struct {
    char **slot;
    size_t cap, n;
} strset;

/* Inserts s (copied) if absent; true if it was new. */
static bool strset_add(strset *s, const char *v) {
    if (s->n * 2 >= s->cap) {
        strset bigger = {or1_calloc(s->cap ? s->cap * 2 : 1024, sizeof(char *)), s->cap ? s->cap * 2 : 1024, 0};
        for (size_t i = 0; i < s->cap; i++)
            if (s->slot[i]) {
                size_t h = 0;
                for (const char *q = s->slot[i]; *q; q++) h = h * 131 + (unsigned char)*q;
                while (bigger.slot[h % bigger.cap]) h++;
                bigger.slot[h % bigger.cap] = s->slot[i];
                bigger.n++;
            }
        free(s->slot);
        *s = bigger;
    }
    size_t h = 0;
    for (const char *q = v; *q; q++) h = h * 131 + (unsigned char)*q;
    while (s->slot[h % s->cap]) {
        if (strcmp(s->slot[h % s->cap], v) == 0) return false;
        h++;
    }
    s->slot[h % s->cap] = or1_strdup(v);
    s->n++;
    return true;
}

/* Frees the set. */
static void strset_free(strset *s) {
    for (size_t i = 0; i < s->cap; i++) free(s->slot[i]);
    free(s->slot);
}

/* True if the braces of s balance (a gold that does not cannot be boxed). */
static bool balanced(const char *s) {
    long d = 0;
    for (; *s && d >= 0; s++) {
        if (*s == '\\' && (s[1] == '{' || s[1] == '}')) s++;
        else if (*s == '{') d++;
        else if (*s == '}') d--;
    }
    return d == 0;
}

/* Adds the normalised string key of gold to keys. */
static void add_key(strset *keys, const char *gold, const or1_math_limits *lim) {
    mv_ctx c;
    mv_ctx_init(&c, lim);
    char *norm = mv_normalize(&c, gold, strlen(gold));
    char *key = norm ? mv_string_key(&c, norm) : NULL;
    if (key) strset_add(keys, key);
    mv_ctx_free(&c);
}

/* Checks one data file. */
static void check_file(const char *path, strset *forms, strset *keys, size_t *n_math, size_t *n_gold,
                      size_t *n_unbalanced) {
    or1_jsonl_reader r;
    if (!CHECK(or1_jsonl_open(&r, path) == 0, "%s", or1_error())) return;
    or1_math_limits lim;
    or1_math_limits_defaults(&lim);
    lim.time_limit_s = 0;
    cJSON *row;
    while (or1_jsonl_next(&r, &row) == 1) {
        const cJSON *rm = cJSON_GetObjectItemCaseSensitive(row, "reward_model");
        const cJSON *gt = cJSON_GetObjectItemCaseSensitive(rm, "ground_truth");
        cJSON *list = cJSON_IsString(gt) ? cJSON_Parse(gt->valuestring) : NULL;
        const cJSON *g;
        cJSON_ArrayForEach(g, list) {
            const char *gold = g->valuestring;
            size_t n = strlen(gold);
            char *resp = or1_malloc(n + 16);
            snprintf(resp, n + 16, "\\boxed{%s}", gold);
            or1_math_result res;
            if (!balanced(gold)) {
                (*n_unbalanced)++;
            } else {
                CHECK(or1_math_verify_json(resp, gt->valuestring, &lim, &res) == 0 && res.correct,
                      "%s:%zu: boxed gold not accepted: %s", path, r.line, gold);
                or1_math_result_free(&res);
            }
            (*n_gold)++;
            if (strset_add(forms, gold)) {
                add_key(keys, gold, &lim);
                if (mv_parses_as_math(gold, &lim)) {
                    (*n_math)++;
                    CHECK(mv_equal_strings(gold, n, gold, n, &lim, false, NULL),
                          "%s:%zu: parses but is not equal to itself: %s", path, r.line, gold);
                }
            }
            free(resp);
        }
        cJSON_Delete(list);
        cJSON_Delete(row);
    }
    or1_jsonl_close(&r);
}

/* Usage: test_math_gold DATA.jsonl... */
int main(int argc, char **argv) {
    strset forms = {0}, keys = {0};
    size_t n_math = 0, n_gold = 0, n_unbalanced = 0;
    for (int i = 1; i < argc; i++) check_file(argv[i], &forms, &keys, &n_math, &n_gold, &n_unbalanced);
    printf("gold answers: %zu (%zu with unbalanced braces, not boxable), distinct strings: %zu, distinct "
           "normalised forms: %zu, strings that parse as mathematics: %zu (%.1f%%)\n",
           n_gold, n_unbalanced, forms.n, keys.n, n_math, forms.n ? 100.0 * (double)n_math / (double)forms.n : 0.0);
    strset_free(&forms);
    strset_free(&keys);
    return check_report();
}
