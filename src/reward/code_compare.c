/* Code rewards, output side: LiveCodeBench's stdout comparison and Python equality on JSON. */
#include "or1/core.h"
#include "or1/io.h"
#include "or1/reward_sandbox.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Python's str.strip()/split() whitespace, restricted to ASCII and the C0 separators. */
static bool is_ws(unsigned char c) {
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

/* A span of text. */
typedef struct {
    const char *p;
    size_t n;
} span;

/* The span without leading and trailing whitespace. */
static span strip(span s) {
    while (s.n && is_ws((unsigned char)s.p[0])) s.p++, s.n--;
    while (s.n && is_ws((unsigned char)s.p[s.n - 1])) s.n--;
    return s;
}

/* The next '\n'-separated line of *rest (which advances); false when none is left. */
static bool next_line(span *rest, bool *done, span *line) {
    if (*done) return false;
    const char *nl = memchr(rest->p, '\n', rest->n);
    if (!nl) {
        *line = *rest;
        *done = true;
        return true;
    }
    line->p = rest->p;
    line->n = (size_t)(nl - rest->p);
    rest->n -= line->n + 1;
    rest->p = nl + 1;
    return true;
}

/* The next whitespace-separated token of *rest; false when none is left. */
static bool next_token(span *rest, span *tok) {
    while (rest->n && is_ws((unsigned char)rest->p[0])) rest->p++, rest->n--;
    if (!rest->n) return false;
    tok->p = rest->p;
    while (rest->n && !is_ws((unsigned char)rest->p[0])) rest->p++, rest->n--;
    tok->n = (size_t)(rest->p - tok->p);
    return true;
}

/* A decimal as Python's Decimal reads it, reduced so that equal values compare equal:
 * significant digits without leading or trailing zeros and the exponent of the last one. */
typedef struct {
    int kind; /* 0 finite, 1 infinity, 2 NaN (never equal to anything) */
    bool neg;
    char digits[128];
    size_t nd;
    bool long_digits; /* more significant digits than kept: compare the text instead */
    long long exp;
} decimal;

/* Case-insensitive equality of a span with a lower-case word. */
static bool word_eq(span s, const char *w) {
    size_t n = strlen(w);
    if (s.n != n) return false;
    for (size_t i = 0; i < n; i++)
        if ((s.p[i] | 0x20) != w[i]) return false;
    return true;
}

/* Parses sign? (digits [. digits] | . digits) ([eE] sign? digits)?, with '_' allowed between
 * digits, or inf/infinity/nan/snan. False if the token is not a decimal. */
static bool parse_decimal(span s, decimal *d) {
    memset(d, 0, sizeof *d);
    size_t i = 0;
    if (i < s.n && (s.p[i] == '+' || s.p[i] == '-')) d->neg = s.p[i++] == '-';
    span rest = {s.p + i, s.n - i};
    if (word_eq(rest, "inf") || word_eq(rest, "infinity")) return d->kind = 1, true;
    if (word_eq(rest, "nan") || word_eq(rest, "snan")) return d->kind = 2, true;
    long long frac = 0;
    bool any = false, dot = false, prev_digit = false;
    for (; i < s.n; i++) {
        char c = s.p[i];
        if (c >= '0' && c <= '9') {
            any = prev_digit = true;
            if (dot) frac++;
            if (d->nd == 0 && c == '0') continue;
            if (d->nd < sizeof d->digits) d->digits[d->nd++] = c;
            else if (!dot) d->exp++, d->long_digits = true;
            else frac--, d->long_digits = true;
        } else if (c == '_' && prev_digit && i + 1 < s.n && s.p[i + 1] >= '0' && s.p[i + 1] <= '9') {
            prev_digit = false;
        } else if (c == '.' && !dot) {
            dot = true;
            prev_digit = false;
        } else {
            break;
        }
    }
    if (!any) return false;
    long long e = 0;
    if (i < s.n && (s.p[i] == 'e' || s.p[i] == 'E')) {
        i++;
        bool eneg = false;
        if (i < s.n && (s.p[i] == '+' || s.p[i] == '-')) eneg = s.p[i++] == '-';
        size_t start = i;
        for (; i < s.n && s.p[i] >= '0' && s.p[i] <= '9'; i++) {
            if (e > 100000000000000LL) return false;
            e = e * 10 + (s.p[i] - '0');
        }
        if (i == start) return false;
        if (eneg) e = -e;
    }
    if (i != s.n) return false;
    d->exp += e - frac;
    while (d->nd && d->digits[d->nd - 1] == '0') d->nd--, d->exp++;
    if (d->nd == 0) d->neg = false, d->exp = 0;
    return true;
}

/* Decimal equality (Python: NaN equals nothing, -0 == 0). */
static bool decimal_equal(const decimal *a, const decimal *b) {
    if (a->kind == 2 || b->kind == 2 || a->kind != b->kind) return false;
    if (a->kind == 1) return a->neg == b->neg;
    if (a->long_digits || b->long_digits) return false;
    return a->neg == b->neg && a->nd == b->nd && a->exp == b->exp &&
           memcmp(a->digits, b->digits, a->nd) == 0;
}

/* math.isclose-style closeness; used only when a tolerance was given. */
static bool close_enough(double a, double b, double abs_tol, double rel_tol) {
    if (a == b) return true;
    if (!isfinite(a) || !isfinite(b)) return false;
    double diff = fabs(a - b);
    return diff <= abs_tol || diff <= rel_tol * fmax(fabs(a), fabs(b));
}

/* A token as a double (for tolerance comparison); false if it is not a plain number. */
static bool token_double(span t, double *out) {
    char buf[128];
    if (t.n == 0 || t.n >= sizeof buf) return false;
    memcpy(buf, t.p, t.n);
    buf[t.n] = '\0';
    char *end;
    *out = strtod(buf, &end);
    return *end == '\0';
}

/* Two stripped lines that differ as strings: equal as lists of decimals (or within tolerance)? */
static bool tokens_equal(span a, span b, double abs_tol, double rel_tol) {
    bool tol = abs_tol > 0 || rel_tol > 0;
    span ta, tb;
    for (;;) {
        bool ha = next_token(&a, &ta), hb = next_token(&b, &tb);
        if (!ha || !hb) return ha == hb;
        decimal da, db;
        if (!parse_decimal(ta, &da) || !parse_decimal(tb, &db)) return false;
        if (decimal_equal(&da, &db)) continue;
        if (da.long_digits && db.long_digits && ta.n == tb.n && memcmp(ta.p, tb.p, ta.n) == 0) continue;
        double x, y;
        if (!tol || !token_double(ta, &x) || !token_double(tb, &y) || !close_enough(x, y, abs_tol, rel_tol))
            return false;
    }
}

/* See sandbox.h: LiveCodeBench's grade_stdio rule. */
bool or1_code_stdout_equal(const char *got, const char *want, double abs_tol, double rel_tol) {
    span g = strip((span){got, strlen(got)}), w = strip((span){want, strlen(want)});
    bool gdone = false, wdone = false;
    span gl, wl;
    for (;;) {
        bool hg = next_line(&g, &gdone, &gl), hw = next_line(&w, &wdone, &wl);
        if (!hg || !hw) return hg == hw;
        gl = strip(gl);
        wl = strip(wl);
        if (gl.n == wl.n && memcmp(gl.p, wl.p, gl.n) == 0) continue;
        if (!tokens_equal(gl, wl, abs_tol, rel_tol)) return false;
    }
}

/* A JSON number or bool as a Python number (True == 1). */
static bool as_number(const cJSON *v, double *out) {
    if (cJSON_IsNumber(v)) *out = v->valuedouble;
    else if (cJSON_IsBool(v)) *out = cJSON_IsTrue(v) ? 1.0 : 0.0;
    else return false;
    return true;
}

/* Python's == on two decoded JSON values. */
static bool json_equal(const cJSON *a, const cJSON *b, double abs_tol, double rel_tol) {
    double x, y;
    if (as_number(a, &x) && as_number(b, &y)) {
        if (abs_tol > 0 || rel_tol > 0) return close_enough(x, y, abs_tol, rel_tol);
        return x == y;
    }
    if (cJSON_IsNull(a) || cJSON_IsNull(b)) return cJSON_IsNull(a) && cJSON_IsNull(b);
    if (cJSON_IsString(a) || cJSON_IsString(b))
        return cJSON_IsString(a) && cJSON_IsString(b) && strcmp(a->valuestring, b->valuestring) == 0;
    if (cJSON_IsArray(a) && cJSON_IsArray(b)) {
        if (cJSON_GetArraySize(a) != cJSON_GetArraySize(b)) return false;
        for (const cJSON *p = a->child, *q = b->child; p && q; p = p->next, q = q->next)
            if (!json_equal(p, q, abs_tol, rel_tol)) return false;
        return true;
    }
    if (cJSON_IsObject(a) && cJSON_IsObject(b)) {
        if (cJSON_GetArraySize(a) != cJSON_GetArraySize(b)) return false;
        const cJSON *p;
        cJSON_ArrayForEach(p, a) {
            const cJSON *q = cJSON_GetObjectItemCaseSensitive(b, p->string);
            if (!q || !json_equal(p, q, abs_tol, rel_tol)) return false;
        }
        return true;
    }
    return false;
}

/* See sandbox.h: the call-based rule. Text that is not exactly one JSON value (trailing text
 * included) equals nothing. */
bool or1_code_json_equal(const char *got, const char *want, double abs_tol, double rel_tol) {
    /* a U+0000 escape would end cJSON's strings early, so such values compare as exact text */
    if (or1_json_nul_at(got, strlen(got)) >= 0 || or1_json_nul_at(want, strlen(want)) >= 0)
        return strcmp(got, want) == 0;
    cJSON *a = cJSON_ParseWithOpts(got, NULL, true);
    cJSON *b = a ? cJSON_ParseWithOpts(want, NULL, true) : NULL;
    bool eq = a && b && json_equal(a, b, abs_tol, rel_tol);
    cJSON_Delete(a);
    cJSON_Delete(b);
    return eq;
}
