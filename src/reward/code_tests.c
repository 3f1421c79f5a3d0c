/* Code rewards, input side: the solution's code from a response, and the four test shapes of
 * Skywork-OR1-RL-Data parsed into one form. */
#include "or1/core.h"
#include "or1/io.h"
#include "or1/reward_sandbox.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_TESTS = 100000, MAX_NAME = 256 };
#define MAX_TESTS_TEXT ((size_t)256 << 20)

/* Skywork-OR1's assert_case prefix: star imports of the usual modules plus math, datetime, inf. */
static const char assert_prelude[] =
    "from typing import *\nfrom functools import *\nfrom collections import *\n"
    "from itertools import *\nfrom heapq import *\nfrom bisect import *\nfrom string import *\n"
    "from operator import *\nfrom math import *\nimport math\nimport datetime\n"
    "inf = float('inf')\n\n";

/* The last ```python\n ... ``` block of the text between the first and second </think> (the
 * whole response without one), matched left to right like Skywork-OR1's non-greedy regex. */
char *or1_code_extract(const char *response) {
    const char *start = response, *end = response + strlen(response);
    const char *think = strstr(response, "</think>");
    if (think) {
        start = think + strlen("</think>");
        const char *second = strstr(start, "</think>");
        if (second) end = second;
    }
    static const char open[] = "```python\n";
    const char *best = NULL;
    size_t best_len = 0;
    const char *p = start;
    for (;;) {
        const char *o = strstr(p, open);
        if (!o || o + strlen(open) > end) break;
        const char *body = o + strlen(open);
        const char *c = strstr(body, "```");
        if (!c || c + 3 > end) break;
        best = body;
        best_len = (size_t)(c - body);
        p = c + 3;
    }
    if (!best) return NULL;
    char *code = or1_malloc(best_len + 1);
    memcpy(code, best, best_len);
    code[best_len] = '\0';
    return code;
}

/* A new string holding a + b + c. */
static char *concat3(const char *a, const char *b, const char *c) {
    size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
    char *s = or1_malloc(la + lb + lc + 1);
    memcpy(s, a, la);
    memcpy(s + la, b, lb);
    memcpy(s + la + lb, c, lc + 1);
    return s;
}

/* A JSON value as test text: strings as they are; other values (TACO-style argument lists,
 * non-string outputs) as JSON, arrays of arguments one per line. */
static char *test_text(const cJSON *v, bool args) {
    if (cJSON_IsString(v)) return or1_strdup(v->valuestring);
    if (args && cJSON_IsArray(v)) {
        char *acc = or1_strdup("");
        const cJSON *e;
        cJSON_ArrayForEach(e, v) {
            char *one = cJSON_PrintUnformatted(e);
            if (!one) continue;
            char *next = concat3(acc, one, "\n");
            free(one);
            free(acc);
            acc = next;
        }
        return acc;
    }
    char *s = cJSON_PrintUnformatted(v);
    char *r = or1_strdup(s ? s : "null");
    free(s);
    return r;
}

/* An optional non-negative finite number. */
static int opt_tol(const cJSON *j, const char *key, double *out, const char *where) {
    if (or1_json_num_opt(j, key, out, where) != 0) return -1;
    if (*out < 0) return or1_fail("%s: \"%s\" must be >= 0", where, key);
    return 0;
}

/* An array of strings (at least one, at most MAX_TESTS) into a new array. */
static int string_list(const cJSON *j, const char *key, char ***out, size_t *n, const char *where) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!cJSON_IsArray(a)) return or1_fail("%s: \"%s\" must be an array", where, key);
    int len = cJSON_GetArraySize(a);
    if (len < 1 || len > MAX_TESTS)
        return or1_fail("%s: \"%s\" has %d entries (expected 1..%d)", where, key, len, MAX_TESTS);
    char **v = or1_calloc((size_t)len, sizeof *v);
    size_t i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, a) {
        if (!cJSON_IsString(e)) {
            for (size_t k = 0; k < i; k++) free(v[k]);
            free(v);
            return or1_fail("%s: \"%s\"[%zu] must be a string", where, key, i);
        }
        v[i++] = or1_strdup(e->valuestring);
    }
    *out = v;
    *n = i;
    return 0;
}

/* A short single-line string field (function names, entry points). */
static const char *short_name(const cJSON *j, const char *key, const char *where) {
    const char *s = or1_json_str(j, key, where);
    if (!s) return NULL;
    if (!*s || strlen(s) > MAX_NAME || strpbrk(s, "\n\r")) {
        or1_fail("%s: \"%s\" must be a non-empty single line of at most %d bytes", where, key,
                 MAX_NAME);
        return NULL;
    }
    return s;
}

/* inputs/outputs (stdin or call-based). */
static int parse_io(const cJSON *j, or1_code_tests *t, const char *where) {
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(j, "inputs");
    const cJSON *out = cJSON_GetObjectItemCaseSensitive(j, "outputs");
    if (!cJSON_IsArray(in) || !cJSON_IsArray(out))
        return or1_fail("%s: \"inputs\" and \"outputs\" must be arrays", where);
    int n = cJSON_GetArraySize(in);
    if (n < 1 || n > MAX_TESTS || n != cJSON_GetArraySize(out))
        return or1_fail("%s: %d inputs and %d outputs (expected equal counts in 1..%d)", where, n,
                        cJSON_GetArraySize(out), MAX_TESTS);
    const cJSON *fn = cJSON_GetObjectItemCaseSensitive(j, "fn_name");
    if (fn && !cJSON_IsNull(fn)) {
        const char *name = short_name(j, "fn_name", where);
        if (!name) return -1;
        t->kind = OR1_TESTS_CALL;
        t->fn_name = or1_strdup(name);
    } else {
        t->kind = OR1_TESTS_STDIO;
    }
    t->inputs = or1_calloc((size_t)n, sizeof *t->inputs);
    t->outputs = or1_calloc((size_t)n, sizeof *t->outputs);
    t->n = (size_t)n;
    /* the two lists walked in step: cJSON_GetArrayItem(i) walks from the head each time */
    const cJSON *a = in->child, *b = out->child;
    for (int i = 0; i < n; i++, a = a->next, b = b->next) {
        if (t->kind == OR1_TESTS_STDIO && (!cJSON_IsString(a) || !cJSON_IsString(b)))
            return or1_fail("%s: test %d: stdin/stdout tests must be strings", where, i);
        t->inputs[i] = test_text(a, true);
        t->outputs[i] = test_text(b, false);
    }
    return 0;
}

/* import_prefix + test_code + entry_point: one program per non-empty line after the first,
 * built as Skywork-OR1 builds it (line 0 and line i joined without a newline). */
static int parse_check(const cJSON *j, or1_code_tests *t, const char *where) {
    const char *prefix = or1_json_str(j, "import_prefix", where);
    const char *code = prefix ? or1_json_str(j, "test_code", where) : NULL;
    const char *entry = code ? short_name(j, "entry_point", where) : NULL;
    if (!entry) return -1;
    size_t lines = 0;
    char *copy = or1_strdup(code), *save = NULL;
    for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) lines++;
    if (lines < 2) {
        free(copy);
        return or1_fail("%s: \"test_code\" needs a header line and at least one test line", where);
    }
    free(copy);
    copy = or1_strdup(code);
    t->kind = OR1_TESTS_CHECK;
    t->n = lines - 1;
    t->asserts = or1_calloc(t->n, sizeof *t->asserts);
    char *head = strtok_r(copy, "\n", &save);
    for (size_t i = 0; i < t->n; i++) t->asserts[i] = concat3(head, strtok_r(NULL, "\n", &save), "");
    free(copy);
    t->prefix = or1_strdup(prefix);
    t->suffix = concat3("\ncheck(", entry, ")");
    return 0;
}

/* The optional extensions beyond Skywork-OR1: tolerance and a checker program. */
static int parse_extras(const cJSON *j, or1_code_tests *t, const char *where) {
    if (opt_tol(j, "abs_tol", &t->abs_tol, where) != 0 || opt_tol(j, "rel_tol", &t->rel_tol, where) != 0)
        return -1;
    const cJSON *ck = cJSON_GetObjectItemCaseSensitive(j, "checker");
    if (ck && !cJSON_IsNull(ck)) {
        if (!cJSON_IsString(ck) || !*ck->valuestring)
            return or1_fail("%s: \"checker\" must be Python source text", where);
        if (t->kind != OR1_TESTS_STDIO)
            return or1_fail("%s: \"checker\" applies to stdin/stdout tests only", where);
        t->checker = or1_strdup(ck->valuestring);
    }
    return 0;
}

/* Dispatches on the keys in Skywork-OR1's order: import_prefix, inputs, assert_case. */
static int parse_object(const cJSON *j, or1_code_tests *t, const char *where) {
    if (!cJSON_IsObject(j)) return or1_fail("%s: tests must be a JSON object", where);
    int rc;
    if (cJSON_HasObjectItem(j, "import_prefix")) {
        rc = parse_check(j, t, where);
    } else if (cJSON_HasObjectItem(j, "inputs")) {
        rc = parse_io(j, t, where);
    } else if (cJSON_HasObjectItem(j, "assert_case")) {
        t->kind = OR1_TESTS_ASSERT;
        rc = string_list(j, "assert_case", &t->asserts, &t->n, where);
        if (rc == 0) t->prefix = or1_strdup(assert_prelude);
    } else {
        rc = or1_fail("%s: tests need one of \"inputs\", \"assert_case\", \"import_prefix\"", where);
    }
    return rc == 0 ? parse_extras(j, t, where) : rc;
}

/* See sandbox.h. */
int or1_code_tests_parse(const cJSON *j, or1_code_tests *t, const char *where) {
    memset(t, 0, sizeof *t);
    int rc;
    if (cJSON_IsString(j)) {
        size_t len = strlen(j->valuestring);
        if (len > MAX_TESTS_TEXT) return or1_fail("%s: tests text of %zu bytes is too large", where, len);
        cJSON *inner = or1_json_parse(j->valuestring, len, where);
        if (!inner) return -1;
        rc = parse_object(inner, t, where);
        cJSON_Delete(inner);
    } else {
        rc = parse_object(j, t, where);
    }
    if (rc != 0) or1_code_tests_free(t);
    return rc;
}

/* Frees everything a parse allocated (safe on a zeroed or partly filled struct). */
void or1_code_tests_free(or1_code_tests *t) {
    for (size_t i = 0; i < t->n; i++) {
        if (t->inputs) free(t->inputs[i]);
        if (t->outputs) free(t->outputs[i]);
        if (t->asserts) free(t->asserts[i]);
    }
    free(t->inputs);
    free(t->outputs);
    free(t->asserts);
    free(t->fn_name);
    free(t->prefix);
    free(t->suffix);
    free(t->checker);
    memset(t, 0, sizeof *t);
}
