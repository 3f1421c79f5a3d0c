/* The Jinja interpreter's library: the filters, tests, Python string and dict methods and
 * global functions chat templates use, as transformers' environment defines them (its
 * json.dumps tojson, raise_exception, strftime_now, an underscore-refusing namespace). */
#include "jinja.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <utf8proc.h>

enum { F_RANGE, F_NAMESPACE, F_DICT, F_RAISE, F_STRFTIME };

static const char *const FUNCS[] = {"range", "namespace", "dict", "raise_exception", "strftime_now", NULL};

static const char *const FILTERS[] = {"abs", "capitalize", "count", "d", "default", "first", "float", "int", "items",
                                      "join", "last", "length", "list", "lower", "map", "reject", "rejectattr",
                                      "replace", "reverse", "safe", "select", "selectattr", "string", "title",
                                      "tojson", "trim", "unique", "upper", NULL};

static const char *const TESTS[] = {"defined", "undefined", "none", "boolean", "false", "true", "integer", "float",
                                    "number", "string", "mapping", "iterable", "sequence", "callable", "sameas",
                                    "odd", "even", "divisibleby", "eq", "equalto", "ne", "lt", "le", "gt", "ge",
                                    "in", "lower", "upper", NULL};

bool jx_filter_known(const char *name) { return jx_name_index(FILTERS, name) >= 0; }
bool jx_test_known(const char *name) { return jx_name_index(TESTS, name) >= 0; }
int jx_func_id(const char *name) { return jx_name_index(FUNCS, name); }

#define FAIL_AT(E, a, ...) jx_fail((E)->c, (a)->at->line, (a)->at->col, __VA_ARGS__)

static const jv MISSING = {.kind = JV_UNDEF, .u.undef = NULL};

/* True when an optional argument was not given. */
static bool absent(jv v) { return v.kind == JV_UNDEF && !v.u.undef; }

/* A required string argument. */
static jv str_arg(jx_eval *E, const jx_args *a, size_t i, const char *name, const char *what) {
    jv v = jx_arg(E, a, i, name, MISSING);
    if (v.kind != JV_STR) FAIL_AT(E, a, "%s: argument %s must be a string, not %s", what, name ? name : "1", jx_type_name(v));
    return v;
}

/* Maps each code point of s through fn (utf8proc's simple case mappings). */
static jv map_case(jx_eval *E, jv s, utf8proc_int32_t (*fn)(utf8proc_int32_t), utf8proc_int32_t (*first)(utf8proc_int32_t),
                   bool words) {
    jx_buf b = {0};
    jx_buf_add(E->c, &b, "", 0);
    bool prev_cased = false;
    for (size_t i = 0; i < s.u.str.n;) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s.u.str.s + i, (utf8proc_ssize_t)(s.u.str.n - i), &cp);
        if (k <= 0) {
            jx_buf_add(E->c, &b, s.u.str.s + i, 1);
            i++;
            continue;
        }
        bool at_start = words ? !prev_cased : i == 0;
        utf8proc_int32_t m = first && at_start ? first(cp) : fn(cp);
        utf8proc_uint8_t enc[4];
        jx_buf_add(E->c, &b, (const char *)enc, (size_t)utf8proc_encode_char(m, enc));
        utf8proc_category_t cat = utf8proc_category(cp);
        prev_cased = cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT;
        i += (size_t)k;
    }
    return jv_str(b.s, b.n);
}

jv jx_lower(jx_eval *E, jv s) { return map_case(E, s, utf8proc_tolower, NULL, false); }

/* Python str.strip/lstrip/rstrip: whitespace, or any of the code points of chars. */
static jv strip(jx_eval *E, jv s, jv chars, bool left, bool right) {
    const char *p = s.u.str.s;
    size_t a = 0, b = s.u.str.n, k;
    bool ws = chars.kind != JV_STR;
    jx_list *set = ws ? NULL : jx_iter(E, NULL, chars);
    for (;;) { /* from the left */
        if (!left || a >= b) break;
        k = jx_cp_len(p + a, b - a);
        bool hit = false;
        if (ws) hit = jx_space_at(p + a, b - a, &k);
        else for (size_t i = 0; i < set->n && !hit; i++) hit = set->v[i].u.str.n == k && !memcmp(set->v[i].u.str.s, p + a, k);
        if (!hit) break;
        a += k;
    }
    while (right && b > a) {
        size_t st = b - 1;
        while (st > a && ((unsigned char)p[st] & 0xC0) == 0x80 && b - st < 4) st--;
        k = b - st;
        bool hit = false;
        size_t len;
        if (ws) hit = jx_space_at(p + st, b - st, &len) && len == k;
        else for (size_t i = 0; i < set->n && !hit; i++) hit = set->v[i].u.str.n == k && !memcmp(set->v[i].u.str.s, p + st, k);
        if (!hit) break;
        b = st;
    }
    return jv_str(p + a, b - a);
}

/* Python str.split(sep=None, maxsplit=-1). */
static jv split(jx_eval *E, const jx_args *a, jv s, jv sep, int64_t max) {
    jv out = jv_list(E->c, 0);
    const char *p = s.u.str.s;
    size_t n = s.u.str.n, i = 0, len;
    if (sep.kind == JV_STR) {
        if (!sep.u.str.n) FAIL_AT(E, a, "split: empty separator");
        size_t start = 0;
        for (i = 0; i + sep.u.str.n <= n && max != 0;) {
            if (!memcmp(p + i, sep.u.str.s, sep.u.str.n)) {
                jx_list_push(E->c, out.u.list, jv_str(p + start, i - start));
                i += sep.u.str.n;
                start = i;
                max--;
            } else {
                i++;
            }
        }
        jx_list_push(E->c, out.u.list, jv_str(p + start, n - start));
        return out;
    }
    for (;;) {
        while (i < n && jx_space_at(p + i, n - i, &len)) i += len;
        if (i >= n) break;
        if (max == 0) { /* the rest as it is */
            jx_list_push(E->c, out.u.list, jv_str(p + i, n - i));
            break;
        }
        size_t st = i;
        while (i < n && !jx_space_at(p + i, n - i, &len)) i += jx_cp_len(p + i, n - i);
        jx_list_push(E->c, out.u.list, jv_str(p + st, i - st));
        max--;
    }
    return out;
}

/* Python str.replace(old, new, count). */
static jv replace(jx_eval *E, jv s, jv old, jv new, int64_t count) {
    jx_buf b = {0};
    jx_buf_add(E->c, &b, "", 0);
    const char *p = s.u.str.s;
    size_t n = s.u.str.n, i = 0;
    if (!old.u.str.n) { /* inserted before each character and at the end */
        for (; i <= n; i += i < n ? jx_cp_len(p + i, n - i) : 1) {
            if (count-- != 0) jx_buf_add(E->c, &b, new.u.str.s, new.u.str.n);
            else { jx_buf_add(E->c, &b, p + i, n - i); break; }
            if (i < n) jx_buf_add(E->c, &b, p + i, jx_cp_len(p + i, n - i));
        }
        return jv_str(b.s, b.n);
    }
    while (i < n) {
        if (count != 0 && i + old.u.str.n <= n && !memcmp(p + i, old.u.str.s, old.u.str.n)) {
            jx_buf_add(E->c, &b, new.u.str.s, new.u.str.n);
            i += old.u.str.n;
            count--;
        } else {
            jx_buf_add(E->c, &b, p + i, 1);
            i++;
        }
    }
    return jv_str(b.s, b.n);
}

/* startswith/endswith with a string or a tuple of strings. */
static bool affix(jx_eval *E, const jx_args *a, jv s, jv x, bool end) {
    if (x.kind == JV_LIST) {
        for (size_t i = 0; i < x.u.list->n; i++)
            if (affix(E, a, s, x.u.list->v[i], end)) return true;
        return false;
    }
    if (x.kind != JV_STR) FAIL_AT(E, a, "startswith/endswith: expected a string, not %s", jx_type_name(x));
    if (x.u.str.n > s.u.str.n) return false;
    return !memcmp(s.u.str.s + (end ? s.u.str.n - x.u.str.n : 0), x.u.str.s, x.u.str.n);
}

/* An integer argument (bool counts), or def when absent. */
static int64_t int_arg(jx_eval *E, const jx_args *a, size_t i, const char *name, int64_t def) {
    jv v = jx_arg(E, a, i, name, MISSING);
    if (absent(v) || v.kind == JV_NONE) return def;
    if (v.kind != JV_INT && v.kind != JV_BOOL) FAIL_AT(E, a, "argument %s must be an integer", name);
    return jv_int_of(v);
}

/* Python str methods. */
static jv str_method(jx_eval *E, jv s, const char *m, const jx_args *a) {
    static const char *const sp[] = {"sep", "maxsplit", NULL}, *const ch[] = {"chars", NULL}, *const none[] = {NULL};
    static const char *const rp[] = {"count", NULL};
    if (!strcmp(m, "split")) {
        jx_args_check(E, a, "split", 2, sp);
        jv sep = jx_arg(E, a, 0, "sep", jv_none());
        if (sep.kind != JV_STR && sep.kind != JV_NONE) FAIL_AT(E, a, "split: the separator must be a string or None");
        return split(E, a, s, sep, int_arg(E, a, 1, "maxsplit", -1));
    }
    bool l = !strcmp(m, "strip") || !strcmp(m, "lstrip"), r = !strcmp(m, "strip") || !strcmp(m, "rstrip");
    if (l || r) {
        jx_args_check(E, a, m, 1, ch);
        jv c = jx_arg(E, a, 0, "chars", jv_none());
        if (c.kind != JV_STR && c.kind != JV_NONE) FAIL_AT(E, a, "%s: arg must be None or str", m);
        return strip(E, s, c, l, r);
    }
    if (!strcmp(m, "startswith") || !strcmp(m, "endswith")) {
        jx_args_check(E, a, m, 1, none);
        return jv_bool(affix(E, a, s, jx_arg(E, a, 0, NULL, jv_none()), m[0] == 'e'));
    }
    if (!strcmp(m, "upper") || !strcmp(m, "lower") || !strcmp(m, "title") || !strcmp(m, "capitalize")) {
        jx_args_check(E, a, m, 0, none);
        if (m[0] == 'u') return map_case(E, s, utf8proc_toupper, NULL, false);
        if (m[0] == 'l') return jx_lower(E, s);
        return map_case(E, s, utf8proc_tolower, utf8proc_totitle, m[0] == 't');
    }
    if (!strcmp(m, "replace")) {
        jx_args_check(E, a, m, 3, rp);
        return replace(E, s, str_arg(E, a, 0, NULL, m), str_arg(E, a, 1, NULL, m), int_arg(E, a, 2, "count", -1));
    }
    if (!strcmp(m, "find") || !strcmp(m, "count")) {
        jx_args_check(E, a, m, 1, none);
        jv sub = str_arg(E, a, 0, NULL, m);
        int64_t hits = 0;
        for (size_t i = 0, cp = 0; i + sub.u.str.n <= s.u.str.n; cp++) {
            if (!memcmp(s.u.str.s + i, sub.u.str.s, sub.u.str.n)) {
                if (m[0] == 'f') return jv_int((int64_t)cp);
                hits++;
                if (sub.u.str.n) {
                    cp += jx_cp_count(s.u.str.s + i, sub.u.str.n) - 1;
                    i += sub.u.str.n;
                    continue;
                }
            }
            if (i >= s.u.str.n) break;
            i += jx_cp_len(s.u.str.s + i, s.u.str.n - i);
        }
        if (m[0] == 'c' && !sub.u.str.n) hits = (int64_t)jx_cp_count(s.u.str.s, s.u.str.n) + 1;
        return jv_int(m[0] == 'f' ? -1 : hits);
    }
    if (!strcmp(m, "join")) {
        jx_args_check(E, a, m, 1, none);
        jx_list *items = jx_iter(E, a->at, jx_arg(E, a, 0, NULL, jv_none()));
        jx_buf b = {0};
        jx_buf_add(E->c, &b, "", 0);
        for (size_t i = 0; i < items->n; i++) {
            if (items->v[i].kind != JV_STR)
                FAIL_AT(E, a, "join: sequence item %zu: expected str instance, %s found", i, jx_type_name(items->v[i]));
            if (i) jx_buf_add(E->c, &b, s.u.str.s, s.u.str.n);
            jx_buf_add(E->c, &b, items->v[i].u.str.s, items->v[i].u.str.n);
        }
        return jv_str(b.s, b.n);
    }
    FAIL_AT(E, a, "str.%s() is not supported", m);
}

/* Python dict methods (the reading ones). */
static jv dict_method(jx_eval *E, jv d, const char *m, const jx_args *a) {
    static const char *const none[] = {NULL};
    const jx_dict *x = d.u.dict;
    if (!strcmp(m, "get")) {
        jx_args_check(E, a, m, 2, none);
        jv *v = jx_dict_get(x, jx_arg(E, a, 0, NULL, jv_none()));
        return v ? *v : jx_arg(E, a, 1, NULL, jv_none());
    }
    if (!strcmp(m, "items") || !strcmp(m, "keys") || !strcmp(m, "values")) {
        jx_args_check(E, a, m, 0, none);
        jv out = jv_list(E->c, x->n);
        for (size_t i = 0; i < x->n; i++) {
            if (m[0] == 'k') jx_list_push(E->c, out.u.list, x->k[i]);
            else if (m[0] == 'v') jx_list_push(E->c, out.u.list, x->v[i]);
            else {
                jv pair = jv_list(E->c, 2);
                pair.tuple = true;
                jx_list_push(E->c, pair.u.list, x->k[i]);
                jx_list_push(E->c, pair.u.list, x->v[i]);
                jx_list_push(E->c, out.u.list, pair);
            }
        }
        return out;
    }
    FAIL_AT(E, a, "dict.%s() is not supported (the sandbox does not modify values)", m);
}

/* Calls a bound method of a str or dict (a list's mutate and are refused). */
jv jx_call_method(jx_eval *E, const jx_method *m, const jx_args *a) {
    if (m->self.kind == JV_STR) return str_method(E, m->self, m->name, a);
    if (m->self.kind == JV_DICT) return dict_method(E, m->self, m->name, a);
    FAIL_AT(E, a, "%s.%s() is not supported%s", jx_type_name(m->self), m->name,
            m->self.kind == JV_LIST ? " (the sandbox does not modify values)" : "");
}

/* range(stop), range(start, stop[, step]), within the sandbox's size limit. */
static jv range(jx_eval *E, const jx_args *a) {
    jx_args_check(E, a, "range", 3, NULL);
    if (!a->npos) FAIL_AT(E, a, "range expected at least 1 argument, got 0");
    int64_t v[3] = {0, 0, 1};
    for (size_t i = 0; i < a->npos; i++) {
        jv x = a->pos[i];
        if (!jv_is_int(x))
            FAIL_AT(E, a, "range: '%s' object cannot be interpreted as an integer", jx_type_name(x));
        v[a->npos == 1 ? 1 : i] = jv_int_of(x);
    }
    if (!v[2]) FAIL_AT(E, a, "range() arg 3 must not be zero");
    double n = v[2] > 0 ? ((double)v[1] - (double)v[0]) / (double)v[2] : ((double)v[0] - (double)v[1]) / -(double)v[2];
    if (n > JX_MAX_RANGE) FAIL_AT(E, a, "range too big, maximum size for range is %d", JX_MAX_RANGE);
    jv out = jv_list(E->c, 0);
    for (int64_t x = v[0]; v[2] > 0 ? x < v[1] : x > v[1]; x += v[2]) jx_list_push(E->c, out.u.list, jv_int(x));
    return out;
}

/* strftime_now(fmt): the local time, or the seconds since the epoch in OR1_JINJA_NOW (tests
 * pin the date with it). */
static jv strftime_now(jx_eval *E, const jx_args *a) {
    jx_args_check(E, a, "strftime_now", 1, NULL);
    jv fmt = str_arg(E, a, 0, NULL, "strftime_now");
    const char *pin = getenv("OR1_JINJA_NOW");
    time_t now = pin && *pin ? (time_t)strtoll(pin, NULL, 10) : time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    char out[512];
    size_t n = strftime(out, sizeof out, jx_strndup(E->c, fmt.u.str.s, fmt.u.str.n), &tm);
    if (!n && fmt.u.str.n) FAIL_AT(E, a, "strftime_now: the formatted date is empty or too long");
    return jv_str(jx_strndup(E->c, out, n), n);
}

/* Calls a global function: range, namespace, dict, raise_exception, strftime_now. */
jv jx_call_func(jx_eval *E, int func, const jx_args *a) {
    switch (func) {
    case F_RANGE: return range(E, a);
    case F_NAMESPACE:
    case F_DICT: {
        jv d = jv_dict(E->c, a->nkw);
        if (a->npos > 1) FAIL_AT(E, a, "%s takes at most one positional argument", FUNCS[func]);
        if (a->npos) {
            if (a->pos[0].kind != JV_DICT) FAIL_AT(E, a, "%s: the positional argument must be a dict", FUNCS[func]);
            const jx_dict *src = a->pos[0].u.dict;
            for (size_t i = 0; i < src->n; i++) jx_dict_set(E->c, d.u.dict, src->k[i], src->v[i]);
        }
        for (size_t i = 0; i < a->nkw; i++) jx_dict_set(E->c, d.u.dict, jv_cstr(a->kwn[i]), a->kw[i]);
        if (func == F_NAMESPACE) d.kind = JV_NS;
        return d;
    }
    case F_RAISE: {
        jv msg = jx_to_str(E->c, jx_arg(E, a, 0, NULL, jv_cstr("")));
        FAIL_AT(E, a, "raise_exception: %.*s", (int)(msg.u.str.n > 400 ? 400 : msg.u.str.n), msg.u.str.s);
    }
    default: return strftime_now(E, a);
    }
}

/* An attribute path "a.b.0" looked up as Jinja's filters do (items first, digits as indexes). */
static jv attr_path(jx_eval *E, const jx_args *a, jv x, jv path) {
    if (path.kind != JV_STR) return jx_getitem(E, a->at, x, path);
    const char *p = path.u.str.s, *end = p + path.u.str.n;
    while (p <= end) {
        const char *dot = memchr(p, '.', (size_t)(end - p));
        if (!dot) dot = end;
        jv key = jv_str(p, (size_t)(dot - p));
        bool digits = dot > p;
        for (const char *q = p; q < dot; q++) digits &= *q >= '0' && *q <= '9';
        if (digits && dot - p < 18) key = jv_int(strtoll(jx_strndup(E->c, p, (size_t)(dot - p)), NULL, 10));
        if (x.kind == JV_UNDEF) return x;
        x = jx_getitem(E, a->at, x, key);
        p = dot + 1;
    }
    return x;
}

/* select/reject/selectattr/rejectattr: the items for which the test (truthiness without one)
 * holds, or does not. */
static jv select_items(jx_eval *E, jv x, const jx_args *a, bool attr, bool keep) {
    jx_args_check(E, a, attr ? "selectattr" : "select", a->npos, NULL);
    jx_list *items = jx_iter(E, a->at, x);
    size_t t = attr ? 1 : 0;
    jv test = jx_arg(E, a, t, NULL, MISSING);
    if (!absent(test) && (test.kind != JV_STR || !jx_test_known(jx_strndup(E->c, test.u.str.s, test.u.str.n))))
        FAIL_AT(E, a, "select: no test named %s",
                test.kind == JV_STR ? jx_strndup(E->c, test.u.str.s, test.u.str.n) : "(not a string)");
    jx_args rest = {.pos = a->npos > t + 1 ? a->pos + t + 1 : NULL,
                    .npos = a->npos > t + 1 ? a->npos - t - 1 : 0, .at = a->at};
    jv out = jv_list(E->c, 0);
    for (size_t i = 0; i < items->n; i++) {
        jv v = attr ? attr_path(E, a, items->v[i], jx_arg(E, a, 0, NULL, jv_none())) : items->v[i];
        bool ok = absent(test) ? jx_truthy(v) : jx_test(E, jx_strndup(E->c, test.u.str.s, test.u.str.n), v, &rest);
        if (ok == keep) jx_list_push(E->c, out.u.list, items->v[i]);
    }
    return out;
}

/* map(attribute=...) or map('filter', args...). */
static jv map(jx_eval *E, jv x, const jx_args *a) {
    static const char *const kw[] = {"attribute", "default", NULL};
    jx_list *items = jx_iter(E, a->at, x);
    /* keyword-only: no positional index reaches SIZE_MAX */
    jv attr = jx_arg(E, a, SIZE_MAX, "attribute", MISSING), def = jx_arg(E, a, SIZE_MAX, "default", MISSING);
    jx_args_check(E, a, "map", absent(attr) ? a->npos : 0, absent(attr) ? NULL : kw);
    jv out = jv_list(E->c, items->n);
    if (absent(attr)) {
        jv name = jx_arg(E, a, 0, NULL, MISSING);
        if (name.kind != JV_STR) FAIL_AT(E, a, "map: expected a filter name or attribute=");
        const char *f = jx_strndup(E->c, name.u.str.s, name.u.str.n);
        if (!jx_filter_known(f)) FAIL_AT(E, a, "map: filter '%s' is not supported", f);
        jx_args rest = {.pos = a->pos + 1, .npos = a->npos - 1, .at = a->at};
        for (size_t i = 0; i < items->n; i++) jx_list_push(E->c, out.u.list, jx_filter(E, f, items->v[i], &rest));
        return out;
    }
    for (size_t i = 0; i < items->n; i++) {
        jv v = attr_path(E, a, items->v[i], attr);
        jx_list_push(E->c, out.u.list, v.kind == JV_UNDEF && !absent(def) ? def : v);
    }
    return out;
}

/* tojson as transformers defines it: json.dumps(x, ensure_ascii=False, indent=None,
 * separators=None, sort_keys=False). */
static jv tojson(jx_eval *E, jv x, const jx_args *a) {
    static const char *const names[] = {"ensure_ascii", "indent", "separators", "sort_keys", NULL};
    jx_args_check(E, a, "tojson", 4, names);
    jv asc = jx_arg(E, a, 0, "ensure_ascii", jv_bool(false)), ind = jx_arg(E, a, 1, "indent", jv_none());
    jv sep = jx_arg(E, a, 2, "separators", jv_none()), sort = jx_arg(E, a, 3, "sort_keys", jv_bool(false));
    jx_json_opts o = {.ensure_ascii = jx_truthy(asc), .sort_keys = jx_truthy(sort), .indent = -1};
    if (jv_is_int(ind)) {
        int64_t k = jv_int_of(ind);
        o.indent = k < 0 ? 0 : k > 64 ? 64 : (int)k;
    } else if (ind.kind != JV_NONE) {
        FAIL_AT(E, a, "tojson: indent must be an integer or None");
    }
    o.item_sep = o.indent >= 0 ? "," : ", ";
    o.key_sep = ": ";
    if (sep.kind != JV_NONE) {
        if (sep.kind != JV_LIST || sep.u.list->n != 2 || sep.u.list->v[0].kind != JV_STR || sep.u.list->v[1].kind != JV_STR)
            FAIL_AT(E, a, "tojson: separators must be a pair of strings");
        o.item_sep = jx_strndup(E->c, sep.u.list->v[0].u.str.s, sep.u.list->v[0].u.str.n);
        o.key_sep = jx_strndup(E->c, sep.u.list->v[1].u.str.s, sep.u.list->v[1].u.str.n);
    }
    jx_buf b = {0};
    jx_buf_add(E->c, &b, "", 0);
    jx_json(E->c, &b, x, &o, 0, a->at->line, a->at->col);
    return jv_str(b.s, b.n);
}

/* unique(case_sensitive=False, attribute=None): first occurrences, strings compared lowered. */
static jv unique(jx_eval *E, jv x, const jx_args *a) {
    static const char *const names[] = {"case_sensitive", "attribute", NULL};
    jx_args_check(E, a, "unique", 2, names);
    bool cs = jx_truthy(jx_arg(E, a, 0, "case_sensitive", jv_bool(false)));
    jv attr = jx_arg(E, a, 1, "attribute", MISSING);
    jx_list *items = jx_iter(E, a->at, x);
    jv out = jv_list(E->c, 0), seen = jv_list(E->c, 0);
    for (size_t i = 0; i < items->n; i++) {
        jv k = absent(attr) || attr.kind == JV_NONE ? items->v[i] : attr_path(E, a, items->v[i], attr);
        if (!cs && k.kind == JV_STR) k = jx_lower(E, k);
        bool dup = false;
        for (size_t j = 0; j < seen.u.list->n && !dup; j++) dup = jx_eq(seen.u.list->v[j], k);
        if (dup) continue;
        jx_list_push(E->c, seen.u.list, k);
        jx_list_push(E->c, out.u.list, items->v[i]);
    }
    return out;
}

/* Python len(). */
static jv length(jx_eval *E, jv x, const jx_args *a) {
    if (x.kind == JV_STR) return jv_int((int64_t)jx_cp_count(x.u.str.s, x.u.str.n));
    if (x.kind == JV_LIST) return jv_int((int64_t)x.u.list->n);
    if (x.kind == JV_DICT) return jv_int((int64_t)x.u.dict->n);
    if (x.kind == JV_UNDEF) return jv_int(0);
    FAIL_AT(E, a, "object of type '%s' has no len()", jx_type_name(x));
}

/* int() / float() as Jinja's filters convert (default on failure). */
static jv to_number(jx_eval *E, jv x, const jx_args *a, bool fl) {
    jv def = jx_arg(E, a, 0, "default", fl ? jv_float(0) : jv_int(0));
    if (jv_is_int(x)) return fl ? jv_float((double)jv_int_of(x)) : jv_int(jv_int_of(x));
    if (x.kind == JV_FLOAT) return fl ? x : (x.u.f >= -9.2e18 && x.u.f <= 9.2e18 ? jv_int((int64_t)x.u.f) : def);
    if (x.kind != JV_STR) return def;
    jv t = strip(E, x, jv_none(), true, true);
    const char *s = jx_strndup(E->c, t.u.str.s, t.u.str.n);
    char *end;
    if (!fl) {
        long long v = strtoll(s, &end, 10);
        if (*s && !*end) return jv_int(v);
    }
    double d = strtod(s, &end);
    if (!*s || *end) return def;
    return fl ? jv_float(d) : d >= -9.2e18 && d <= 9.2e18 ? jv_int((int64_t)d) : def;
}

/* first / last item (undefined when empty). */
static jv edge(jx_eval *E, jv x, const jx_args *a, bool last) {
    jx_list *items = jx_iter(E, a->at, x);
    if (!items->n) return jv_undef(last ? "No last item, sequence was empty." : "No first item, sequence was empty.");
    return items->v[last ? items->n - 1 : 0];
}

/* Applies the filter called f (known to exist: checked at parse) to x. */
jv jx_filter(jx_eval *E, const char *f, jv x, const jx_args *a) {
    static const char *const none[] = {NULL}, *const dflt[] = {"default_value", "boolean", NULL};
    static const char *const trim_kw[] = {"chars", NULL}, *const join_kw[] = {"d", "attribute", NULL};
    static const char *const num_kw[] = {"default", "base", NULL}, *const rep_kw[] = {"count", NULL};
    if (!strcmp(f, "default") || !strcmp(f, "d")) {
        jx_args_check(E, a, f, 2, dflt);
        bool boolean = jx_truthy(jx_arg(E, a, 1, "boolean", jv_bool(false)));
        return x.kind == JV_UNDEF || (boolean && !jx_truthy(x)) ? jx_arg(E, a, 0, "default_value", jv_cstr("")) : x;
    }
    if (!strcmp(f, "tojson")) return tojson(E, x, a);
    if (!strcmp(f, "map")) return map(E, x, a);
    if (!strcmp(f, "select") || !strcmp(f, "reject")) return select_items(E, x, a, false, f[0] == 's');
    if (!strcmp(f, "selectattr") || !strcmp(f, "rejectattr")) return select_items(E, x, a, true, f[0] == 's');
    if (!strcmp(f, "unique")) return unique(E, x, a);
    if (!strcmp(f, "join")) {
        jx_args_check(E, a, f, 2, join_kw);
        jv sep = jx_to_str(E->c, jx_arg(E, a, 0, "d", jv_cstr(""))), attr = jx_arg(E, a, 1, "attribute", MISSING);
        jx_list *items = jx_iter(E, a->at, x);
        jx_buf b = {0};
        jx_buf_add(E->c, &b, "", 0);
        for (size_t i = 0; i < items->n; i++) {
            if (i) jx_buf_add(E->c, &b, sep.u.str.s, sep.u.str.n);
            jx_str_of(E->c, &b, absent(attr) || attr.kind == JV_NONE ? items->v[i] : attr_path(E, a, items->v[i], attr));
        }
        return jv_str(b.s, b.n);
    }
    if (!strcmp(f, "int") || !strcmp(f, "float")) {
        jx_args_check(E, a, f, 2, num_kw);
        return to_number(E, x, a, f[0] == 'f');
    }
    if (!strcmp(f, "trim")) {
        jx_args_check(E, a, f, 1, trim_kw);
        jv c = jx_arg(E, a, 0, "chars", jv_none());
        return strip(E, jx_to_str(E->c, x), c.kind == JV_STR ? c : jv_none(), true, true);
    }
    if (!strcmp(f, "replace")) {
        jx_args_check(E, a, f, 3, rep_kw);
        return replace(E, jx_to_str(E->c, x), jx_to_str(E->c, jx_arg(E, a, 0, NULL, jv_cstr(""))),
                       jx_to_str(E->c, jx_arg(E, a, 1, NULL, jv_cstr(""))), int_arg(E, a, 2, "count", -1));
    }
    jx_args_check(E, a, f, 0, none);
    if (!strcmp(f, "length") || !strcmp(f, "count")) return length(E, x, a);
    if (!strcmp(f, "first") || !strcmp(f, "last")) return edge(E, x, a, f[0] == 'l');
    if (!strcmp(f, "string")) return jx_to_str(E->c, x);
    if (!strcmp(f, "safe")) return x;
    if (!strcmp(f, "list")) {
        jv l = jv_list(E->c, 0);
        l.u.list = jx_iter(E, a->at, x);
        return l;
    }
    if (!strcmp(f, "items")) {
        if (x.kind == JV_UNDEF) return jv_list(E->c, 0);
        if (x.kind != JV_DICT) FAIL_AT(E, a, "items: can only get item pairs from a mapping, not %s", jx_type_name(x));
        jx_method m = {.self = x, .name = "items"};
        return jx_call_method(E, &m, a);
    }
    if (!strcmp(f, "reverse")) {
        if (x.kind == JV_STR || x.kind == JV_LIST) {
            jx_list *items = jx_iter(E, a->at, x);
            jv out = jv_list(E->c, items->n);
            for (size_t i = items->n; i-- > 0;) jx_list_push(E->c, out.u.list, items->v[i]);
            if (x.kind == JV_LIST) return out;
            jx_buf b = {0};
            jx_buf_add(E->c, &b, "", 0);
            for (size_t i = 0; i < out.u.list->n; i++) jx_buf_add(E->c, &b, out.u.list->v[i].u.str.s, out.u.list->v[i].u.str.n);
            return jv_str(b.s, b.n);
        }
        FAIL_AT(E, a, "reverse: cannot reverse %s", jx_type_name(x));
    }
    if (!strcmp(f, "abs")) {
        if (jv_is_int(x)) {
            int64_t v = jv_int_of(x);
            if (v == INT64_MIN) FAIL_AT(E, a, "integer overflow (beyond 64 bits)");
            return jv_int(v < 0 ? -v : v);
        }
        if (x.kind == JV_FLOAT) return jv_float(x.u.f < 0 ? -x.u.f : x.u.f);
        FAIL_AT(E, a, "bad operand type for abs(): '%s'", jx_type_name(x));
    }
    return str_method(E, jx_to_str(E->c, x), f, a); /* lower, upper, title, capitalize */
}

/* A comparison test (eq, lt, ...) of x against the one argument. */
static bool cmp_test(jx_eval *E, const char *t, jv x, const jx_args *a) {
    jv y = jx_arg(E, a, 0, NULL, MISSING);
    if (absent(y)) FAIL_AT(E, a, "test '%s' needs an argument", t);
    if (!strcmp(t, "eq") || !strcmp(t, "equalto") || !strcmp(t, "sameas")) return jx_eq(x, y) && (t[0] != 's' || x.kind == y.kind);
    if (!strcmp(t, "ne")) return !jx_eq(x, y);
    if (!strcmp(t, "in")) {
        if (y.kind == JV_STR && x.kind == JV_STR) return memmem(y.u.str.s, y.u.str.n, x.u.str.s, x.u.str.n) != NULL || !x.u.str.n;
        if (y.kind == JV_LIST || y.kind == JV_DICT) {
            jx_list *items = jx_iter(E, a->at, y);
            for (size_t i = 0; i < items->n; i++)
                if (jx_eq(x, items->v[i])) return true;
            return false;
        }
        FAIL_AT(E, a, "test 'in': argument of type '%s' is not a container", jx_type_name(y));
    }
    if (!strcmp(t, "divisibleby")) {
        if ((x.kind != JV_INT && x.kind != JV_BOOL) || (y.kind != JV_INT && y.kind != JV_BOOL) || jv_int_of(y) == 0)
            FAIL_AT(E, a, "divisibleby: integers needed, with a non-zero divisor");
        int64_t p = jv_int_of(x), q = jv_int_of(y);
        return q == -1 || p % q == 0;
    }
    int c = jx_cmp(E->c, x, y, a->at->line, a->at->col);
    return !strcmp(t, "lt") ? c < 0 : !strcmp(t, "le") ? c <= 0 : !strcmp(t, "gt") ? c > 0 : c >= 0;
}

/* The test called t (checked at parse) applied to x. */
bool jx_test(jx_eval *E, const char *t, jv x, const jx_args *a) {
    jv_kind k = x.kind;
    if (!strcmp(t, "defined")) return k != JV_UNDEF;
    if (!strcmp(t, "undefined")) return k == JV_UNDEF;
    if (!strcmp(t, "none")) return k == JV_NONE;
    if (!strcmp(t, "boolean")) return k == JV_BOOL;
    if (!strcmp(t, "false")) return k == JV_BOOL && !x.u.b;
    if (!strcmp(t, "true")) return k == JV_BOOL && x.u.b;
    if (!strcmp(t, "integer")) return k == JV_INT;
    if (!strcmp(t, "float")) return k == JV_FLOAT;
    if (!strcmp(t, "number")) return k == JV_INT || k == JV_FLOAT || k == JV_BOOL;
    if (!strcmp(t, "string")) return k == JV_STR;
    if (!strcmp(t, "mapping")) return k == JV_DICT;
    if (!strcmp(t, "iterable")) return k == JV_STR || k == JV_LIST || k == JV_DICT || k == JV_UNDEF;
    if (!strcmp(t, "sequence")) return k == JV_STR || k == JV_LIST || k == JV_DICT;
    if (!strcmp(t, "callable")) return k == JV_FUNC || k == JV_METHOD || k == JV_MACRO;
    if (!strcmp(t, "odd") || !strcmp(t, "even")) {
        if (k != JV_INT && k != JV_BOOL) FAIL_AT(E, a, "test '%s' needs an integer, not %s", t, jx_type_name(x));
        int64_t v = k == JV_INT ? x.u.i : x.u.b;
        return (v % 2 != 0) == (t[0] == 'o');
    }
    if (!strcmp(t, "lower") || !strcmp(t, "upper")) {
        jv s = jx_to_str(E->c, x), m = t[0] == 'l' ? jx_lower(E, s) : map_case(E, s, utf8proc_toupper, NULL, false);
        bool cased = false;
        for (size_t i = 0; i < s.u.str.n; i++) cased |= (s.u.str.s[i] | 32) >= 'a' && (s.u.str.s[i] | 32) <= 'z';
        return cased && jx_eq(s, m);
    }
    return cmp_test(E, t, x, a);
}
