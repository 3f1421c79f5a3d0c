/* Math verifier: the public entry points. A response is cut to its answer, each gold
 * answer is read the way Skywork-OR1 reads it (wrapped in \boxed{} and extracted again),
 * and the pair is compared as normalised strings, then as parsed mathematics, inside a
 * fresh scratch context with its own memory, work and time bounds. */
#include "math_internal.h"

#include "or1/core.h"
#include "or1/io.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The default bounds (see the header). */
void or1_math_limits_defaults(or1_math_limits *l) {
    l->max_response_bytes = 1 << 20;
    l->max_answer_bytes = 8192;
    l->max_memory_bytes = 8 << 20;
    l->max_depth = 64;
    l->max_work = 4000000;
    l->time_limit_s = 2.0;
    l->strict_box = false;
    l->keep_base = false;
}

/* Equality of two answer strings: same normalised string, else same mathematics. */
bool mv_equal_strings(const char *gold, size_t gn, const char *pred, size_t pn,
                      const or1_math_limits *lim, bool use_strings, bool *bounded) {
    mv_ctx c;
    mv_ctx_init(&c, lim);
    bool eq = false;
    if (gn <= lim->max_answer_bytes && pn <= lim->max_answer_bytes) {
        char *gnorm = mv_normalize(&c, gold, gn), *pnorm = mv_normalize(&c, pred, pn);
        if (gnorm && pnorm) {
            char *gk = mv_string_key(&c, gnorm), *pk = mv_string_key(&c, pnorm);
            eq = use_strings && gk && pk && gk[0] && strcmp(gk, pk) == 0;
            if (!eq && gk && pk && gk[0] && pk[0]) eq = mv_ans_equal(&c, mv_parse(&c, gnorm), mv_parse(&c, pnorm));
        }
    } else {
        c.bounded = true;
        eq = use_strings && gn == pn && gn > 0 && memcmp(gold, pred, gn) == 0;
    }
    if (bounded) *bounded = c.bounded;
    mv_ctx_free(&c);
    return eq;
}

/* Parses the normalised answer in a scratch context: true if it is mathematics (not text);
 * *malformed tells whether the parser rejected its syntax. */
static bool parse_answer(const char *answer, const or1_math_limits *lim, bool *malformed) {
    mv_ctx c;
    mv_ctx_init(&c, lim);
    char *norm = mv_normalize(&c, answer, strlen(answer));
    mv_ans *a = norm ? mv_parse(&c, norm) : NULL;
    bool math = a && a->kind != A_TEXT;
    *malformed = a && c.malformed;
    mv_ctx_free(&c);
    return math;
}

/* True if the normalised answer parses into something other than text. */
bool mv_parses_as_math(const char *answer, const or1_math_limits *lim) {
    bool malformed;
    return parse_answer(answer, lim, &malformed);
}

/* True if the normalised answer fails to parse as LaTeX (see math_internal.h). */
bool mv_malformed(const char *answer, const or1_math_limits *lim) {
    bool malformed;
    parse_answer(answer, lim, &malformed);
    return malformed;
}

/* The limits to use: the caller's, or the defaults. */
static const or1_math_limits *limits(const or1_math_limits *lim, or1_math_limits *buf) {
    if (lim) return lim;
    or1_math_limits_defaults(buf);
    return buf;
}

/* The response span read: all of it, or its last max_response_bytes. */
static const char *response_tail(const char *response, const or1_math_limits *lim, size_t *n) {
    size_t len = strlen(response);
    if (len > lim->max_response_bytes) {
        response += len - lim->max_response_bytes;
        len = lim->max_response_bytes;
    }
    *n = len;
    return response;
}

/* True if the comma at s[i] separates thousands: three digits follow and then no digit, and
 * the number does not start "0," (Math-Verify reads "1,000" as 1000 and "1,22" as 1.22). */
static bool thousands_comma(const char *s, size_t n, size_t i, size_t begin) {
    for (size_t k = 1; k <= 3; k++)
        if (i + k >= n || !isdigit((unsigned char)s[i + k])) return false;
    if (i + 4 < n && isdigit((unsigned char)s[i + 4])) return false;
    size_t d = begin;
    while (d < i && !isdigit((unsigned char)s[d])) d++;
    return !(i - d == 1 && s[d] == '0');
}

/* Appends the number s[0..n) taken from prose, without thousands separators and with a
 * decimal comma written as a point. */
static size_t put_number(char *out, const char *s, size_t n) {
    size_t j = 0;
    bool point = memchr(s, '.', n) != NULL;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == ' ') continue;
        if (s[i] == ',' && (point || thousands_comma(s, n, i, 0))) continue;
        out[j++] = s[i] == ',' ? '.' : s[i];
    }
    return j;
}

/* The extracted answer as one new string: its spans joined by ", " ("" when there are none). */
static char *answer_text(const char *s, const mv_spans *sp) {
    size_t total = 1;
    for (int k = 0; k < sp->n; k++) total += sp->len[k] + 2;
    char *out = or1_malloc(total), *w = out;
    for (int k = 0; k < sp->n; k++) {
        if (k) memcpy(w, ", ", 2), w += 2;
        if (sp->number) {
            w += put_number(w, s + sp->start[k], sp->len[k]);
        } else {
            memcpy(w, s + sp->start[k], sp->len[k]);
            w += sp->len[k];
        }
    }
    *w = '\0';
    return out;
}

/* An extracted answer: the text Math-Verify matched first (its fallback string when it does
 * not parse) and, when that text is a math span that does not parse, the candidate read in
 * its place (NULL otherwise). Both are malloc'd. */
typedef struct {
    char *text, *alt;
} answer;

/* The answer of the text s[0..n) ("" if none): with lim->strict_box the last box's content
 * alone, else Math-Verify's order of patterns. */
static answer extract_answer(const char *s, size_t n, const or1_math_limits *lim) {
    mv_spans sp, alt;
    answer a = {NULL, NULL};
    alt.n = 0;
    if (!(lim->strict_box ? mv_extract_last_box(s, n, &sp) : mv_extract(s, n, &sp, &alt))) {
        a.text = or1_strdup("");
        return a;
    }
    a.text = mv_answer_units(answer_text(s, &sp));
    if (alt.n > 0 && mv_malformed(a.text, lim)) a.alt = mv_answer_units(answer_text(s, &alt));
    return a;
}

/* Frees both texts of an answer. */
static void answer_free(answer *a) {
    free(a->text);
    free(a->alt);
}

/* The answer a reads as, taking its strings: the candidate that parses when there is one. */
static char *answer_read(answer *a) {
    if (!a->alt) return a->text;
    free(a->text);
    return a->alt;
}

/* The answer of a response, as a new string ("" if none). */
char *or1_math_extract(const char *response, const or1_math_limits *lim) {
    or1_math_limits buf;
    lim = limits(lim, &buf);
    size_t n;
    const char *s = response_tail(response ? response : "", lim, &n);
    answer a = extract_answer(s, n, lim);
    return answer_read(&a);
}

/* Equality of two answer strings (public form). */
bool or1_math_equal(const char *gold, const char *pred, const or1_math_limits *lim) {
    or1_math_limits buf;
    lim = limits(lim, &buf);
    return mv_equal_strings(gold, strlen(gold), pred, strlen(pred), lim, true, NULL);
}

/* True if a gold answer is written as text around its answer (a box, a math span, an
 * "answer" phrase), so that it is read the way a response is. */
static bool gold_needs_extraction(const char *gold, size_t n) {
    if (memmem(gold, n, "boxed", 5) || memmem(gold, n, "fbox", 4)) return true;
    for (size_t i = 0; i < n; i++)
        if (gold[i] == '$' && (i == 0 || gold[i - 1] != '\\')) return true; /* "\\$5" is currency */
    if (memmem(gold, n, "\\(", 2) || memmem(gold, n, "\\[", 2)) return true;
    for (size_t i = 0; i + 6 <= n; i++)
        if (strncasecmp(gold + i, "answer", 6) == 0) return true;
    return false;
}

/* The gold answer as Skywork-OR1 reads it: "\boxed{" gold "}" passed through extraction, which
 * unwraps a gold that is itself boxed or written in a math span. */
static answer gold_answer(const char *gold, const or1_math_limits *lim) {
    size_t n = strlen(gold);
    if (gold_needs_extraction(gold, n)) {
        or1_math_limits full = *lim;
        full.strict_box = false; /* the strict rule reads responses; a gold is read as always */
        answer a = extract_answer(gold, n, &full);
        if (a.text[0]) return a;
        answer_free(&a);
    }
    return (answer){mv_answer_units(or1_strdup(gold)), NULL};
}

/* The limits of one step of a call started at t0: lim with the time left (false, and
 * *bounded set, when none is left). */
static bool time_left(const or1_math_limits *lim, double t0, or1_math_limits *each, bool *bounded) {
    *each = *lim;
    if (lim->time_limit_s <= 0) return true;
    each->time_limit_s = lim->time_limit_s - (or1_now() - t0);
    if (each->time_limit_s > 0) return true;
    *bounded = true;
    return false;
}

/* True if gold equals pred in some pairing of their texts and alternatives (Math-Verify
 * compares each parsed answer and fallback string of one with each of the other's). */
static bool answers_equal(const answer *g, const answer *p, const or1_math_limits *lim, double t0, bool *bounded) {
    const char *gs[2] = {g->text, g->alt}, *ps[2] = {p->text, p->alt};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            or1_math_limits each;
            if (!gs[i] || !ps[j]) continue;
            if (!time_left(lim, t0, &each, bounded)) return false;
            bool b = false, eq = mv_equal_strings(gs[i], strlen(gs[i]), ps[j], strlen(ps[j]), &each, true, &b);
            *bounded = *bounded || b;
            if (eq) return true;
        }
    return false;
}

/* Scores a response against gold answers (see the header). */
int or1_math_verify(const char *response, const char *const *gold, size_t n_gold,
                    const or1_math_limits *lim, or1_math_result *out) {
    memset(out, 0, sizeof *out);
    out->matched_gold = -1;
    if (!response || (n_gold && !gold)) return or1_fail("or1_math_verify: NULL response or gold list");
    for (size_t g = 0; g < n_gold; g++)
        if (!gold[g]) return or1_fail("or1_math_verify: gold answer %zu is NULL", g);
    or1_math_limits buf, each;
    lim = limits(lim, &buf);
    double t0 = or1_now();
    size_t n;
    const char *s = response_tail(response, lim, &n);
    time_left(lim, t0, &each, &out->bounded);
    answer pred = extract_answer(s, n, &each);
    for (size_t g = 0; g < n_gold && !out->correct && pred.text[0]; g++) {
        if (!time_left(lim, t0, &each, &out->bounded)) break;
        answer ga = gold_answer(gold[g], &each);
        if (answers_equal(&ga, &pred, lim, t0, &out->bounded)) {
            out->correct = true;
            out->matched_gold = (int)g;
        }
        answer_free(&ga);
    }
    out->extracted = answer_read(&pred);
    return 0;
}

/* True if the decoded ground truth is Skywork-OR1's list form: an array that is empty or
 * holds a string (an array of numbers alone, "[1, 2]", is an interval written as text). */
static bool gold_is_list(const cJSON *j) {
    if (!cJSON_IsArray(j)) return false;
    if (!j->child) return true;
    for (const cJSON *e = j->child; e; e = e->next)
        if (cJSON_IsString(e)) return true;
    return false;
}

/* The answers of a list-form ground truth into g (every element a non-empty string). */
static int gold_from_list(cJSON *j, const char *where, or1_math_gold *g) {
    size_t n = (size_t)cJSON_GetArraySize(j), k = 0;
    if (n == 0) return or1_fail("%s: a JSON list of answers must not be empty", where);
    g->answers = or1_malloc(n * sizeof *g->answers);
    for (const cJSON *e = j->child; e; e = e->next, k++) {
        if (!cJSON_IsString(e)) return or1_fail("%s: element %zu of the JSON list of answers is not a string", where, k);
        if (!e->valuestring[0]) return or1_fail("%s: element %zu of the JSON list of answers is empty", where, k);
        g->answers[k] = e->valuestring;
    }
    g->n = n;
    return 0;
}

/* Reads a math ground truth (the rule is in the header). */
int or1_math_gold_parse(const char *truth, const char *where, or1_math_gold *g) {
    memset(g, 0, sizeof *g);
    if (!truth || !truth[0]) return or1_fail("%s: the ground truth is empty", where);
    cJSON *j = cJSON_ParseWithOpts(truth, NULL, true); /* the whole text, or it is no JSON form */
    bool list = gold_is_list(j), one = cJSON_IsString(j);
    if (cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return or1_fail("%s: a JSON object is not a math answer (code tests under ability math?)", where);
    }
    if (!list && !one) {
        cJSON_Delete(j);
        g->answers = or1_malloc(sizeof *g->answers);
        g->answers[0] = truth;
        g->n = 1;
        return 0;
    }
    g->json = j;
    int rc = 0;
    if (or1_json_nul_at(truth, strlen(truth)) >= 0)
        rc = or1_fail("%s: a \\u0000 escape (U+0000) would truncate a gold answer", where);
    else if (list)
        rc = gold_from_list(j, where, g);
    else if (!j->valuestring[0])
        rc = or1_fail("%s: the JSON string of the answer is empty", where);
    else {
        g->answers = or1_malloc(sizeof *g->answers);
        g->answers[0] = j->valuestring;
        g->n = 1;
    }
    if (rc != 0) or1_math_gold_free(g);
    return rc;
}

/* Frees what or1_math_gold_parse kept. */
void or1_math_gold_free(or1_math_gold *g) {
    cJSON_Delete(g->json);
    free(g->answers);
    memset(g, 0, sizeof *g);
}

/* Scores a response against the row's ground truth. */
int or1_math_verify_json(const char *response, const char *ground_truth,
                         const or1_math_limits *lim, or1_math_result *out) {
    memset(out, 0, sizeof *out);
    out->matched_gold = -1;
    or1_math_gold g;
    if (or1_math_gold_parse(ground_truth, "ground truth", &g) != 0) return -1;
    int rc = or1_math_verify(response, g.answers, g.n, lim, out);
    or1_math_gold_free(&g);
    return rc;
}

/* Frees the extracted answer. */
void or1_math_result_free(or1_math_result *r) {
    free(r->extracted);
    r->extracted = NULL;
}
