/* How the evaluator and the library reach into values: the attributes each Python type has,
 * Python iteration, item and attribute lookup (with Jinja's undefined for what is missing),
 * and the arguments of a call, filter or test. Below both jinja_eval.c and jinja_lib.c. */
#include "jinja.h"

#include <string.h>

/* Methods by Python type; the ones that mutate exist (so lookups find them first, as in
 * Python) but refuse to run, as Jinja's immutable sandbox does. */
static const char *const STR_METHODS[] = {"split", "strip", "lstrip", "rstrip", "startswith", "endswith", "upper",
                                          "lower", "title", "capitalize", "replace", "find", "count", "join",
                                          "format", "rsplit", "isdigit", "isalpha", "isspace", "index", NULL};
static const char *const DICT_METHODS[] = {"items", "keys", "values", "get", "copy", "pop", "popitem", "setdefault",
                                           "update", "clear", "fromkeys", NULL};
static const char *const NUM_ATTRS[] = {"real", "imag", "numerator", "denominator", "conjugate", "bit_length",
                                       "bit_count", "to_bytes", "from_bytes", "as_integer_ratio", "is_integer",
                                       "hex", "fromhex", NULL};
static const char *const LIST_METHODS[] = {"append", "extend", "insert", "remove", "pop", "clear", "index", "count",
                                           "copy", "reverse", "sort", NULL};

/* Index of name in a NULL-terminated list, or -1. */
int jx_name_index(const char *const *list, const char *name) {
    for (int i = 0; list[i]; i++)
        if (!strcmp(list[i], name)) return i;
    return -1;
}

/* True when x's Python type has an attribute called name (found before a dict key). */
bool jx_has_method(jv x, const char *name) {
    if (x.kind == JV_STR) return jx_name_index(STR_METHODS, name) >= 0;
    if (x.kind == JV_DICT) return jx_name_index(DICT_METHODS, name) >= 0;
    if (x.kind == JV_LIST) return jx_name_index(LIST_METHODS, name) >= 0;
    if (x.kind == JV_INT || x.kind == JV_FLOAT || x.kind == JV_BOOL) return jx_name_index(NUM_ATTRS, name) >= 0;
    return false;
}

/* Fails with the message an undefined value carries (what was missing, and where). */
_Noreturn void jx_undef_fail(jx_eval *E, const jx_node *at, jv v) {
    jx_fail(E->c, at->line, at->col, "%s", v.u.undef ? v.u.undef : "undefined value");
}

/* An undefined value for a missing attribute or item of x. */
static jv missing(jx_eval *E, jv x, jv key) {
    jx_buf b = {0};
    jx_buf_adds(E->c, &b, "'");
    jx_buf_adds(E->c, &b, x.kind == JV_DICT ? "dict object" : jx_type_name(x));
    jx_buf_adds(E->c, &b, key.kind == JV_STR ? "' has no attribute " : "' has no element ");
    jx_repr(E->c, &b, key);
    return jv_undef(b.s);
}

/* Python iteration: list items, dict keys, string characters; undefined is empty. */
jx_list *jx_iter(jx_eval *E, const jx_node *at, jv v) {
    if (v.kind == JV_LIST) return v.u.list;
    jv l = jv_list(E->c, 0);
    if (v.kind == JV_UNDEF) return l.u.list;
    if (v.kind == JV_DICT) {
        for (size_t i = 0; i < v.u.dict->n; i++) jx_list_push(E->c, l.u.list, v.u.dict->k[i]);
    } else if (v.kind == JV_STR) {
        for (size_t i = 0, k; i < v.u.str.n; i += k) {
            k = jx_cp_len(v.u.str.s + i, v.u.str.n - i);
            jx_list_push(E->c, l.u.list, jv_str(v.u.str.s + i, k));
        }
    } else {
        jx_fail(E->c, at->line, at->col, "'%s' object is not iterable", jx_type_name(v));
    }
    return l.u.list;
}

/* Byte offset of code point i of s (n: past the end). */
static size_t cp_offset(jv s, size_t i) {
    size_t o = 0;
    for (; i > 0 && o < s.u.str.n; i--) o += jx_cp_len(s.u.str.s + o, s.u.str.n - o);
    return o;
}

/* Python index of a sequence of n: negative from the end; false when out of range. */
static bool seq_index(jv key, size_t n, size_t *i) {
    int64_t k = jv_int_of(key);
    if (k < 0) k += (int64_t)n;
    if (k < 0 || (uint64_t)k >= n) return false;
    *i = (size_t)k;
    return true;
}

/* x[key] as Jinja looks it up: the item first, then a method of that name. */
jv jx_getitem(jx_eval *E, const jx_node *at, jv x, jv key) {
    if (x.kind == JV_UNDEF) jx_undef_fail(E, at, x);
    bool intkey = jv_is_int(key);
    if (x.kind == JV_DICT || x.kind == JV_NS) {
        jv *v = jx_dict_get(x.u.dict, key);
        if (v) return *v;
    } else if (x.kind == JV_LIST && intkey) {
        size_t i;
        if (seq_index(key, x.u.list->n, &i)) return x.u.list->v[i];
    } else if (x.kind == JV_STR && intkey) {
        size_t i;
        if (seq_index(key, jx_cp_count(x.u.str.s, x.u.str.n), &i)) {
            size_t o = cp_offset(x, i);
            return jv_str(x.u.str.s + o, jx_cp_len(x.u.str.s + o, x.u.str.n - o));
        }
    }
    if (key.kind == JV_STR && x.kind != JV_NS) {
        const char *name = jx_strndup(E->c, key.u.str.s, key.u.str.n);
        if (jx_has_method(x, name)) return jx_getattr(E, at, x, name);
    }
    return missing(E, x, key);
}

/* x.name as Jinja looks it up: a method of x's Python type first (d.items is the method), then the key. */
jv jx_getattr(jx_eval *E, const jx_node *at, jv x, const char *name) {
    if (x.kind == JV_UNDEF) jx_undef_fail(E, at, x);
    if ((x.kind == JV_INT || x.kind == JV_FLOAT || x.kind == JV_BOOL) && jx_has_method(x, name))
        jx_fail(E->c, at->line, at->col, "attribute '%s' of a number is not supported", name);
    if (x.kind != JV_NS && jx_has_method(x, name)) {
        jx_method *m = jx_alloc(E->c, sizeof *m);
        m->self = x;
        m->name = name;
        return (jv){.kind = JV_METHOD, .u.method = m};
    }
    if (x.kind == JV_DICT || x.kind == JV_NS) {
        jv *v = jx_dict_gets(x.u.dict, name);
        if (v) return *v;
    }
    return missing(E, x, jv_cstr(name));
}
/* Argument i, or the keyword argument called name, or def. */
jv jx_arg(jx_eval *E, const jx_args *a, size_t i, const char *name, jv def) {
    (void)E;
    if (i < a->npos) return a->pos[i];
    for (size_t k = 0; name && k < a->nkw; k++)
        if (!strcmp(a->kwn[k], name)) return a->kw[k];
    return def;
}

/* Refuses more than max positional arguments and keywords not among names. */
void jx_args_check(jx_eval *E, const jx_args *a, const char *what, size_t max, const char *const *names) {
    if (a->npos > max) jx_fail(E->c, a->at->line, a->at->col, "%s takes at most %zu positional argument(s)", what, max);
    for (size_t k = 0; k < a->nkw; k++) {
        bool ok = false;
        for (size_t j = 0; names && names[j]; j++) ok |= !strcmp(names[j], a->kwn[k]);
        if (!ok) jx_fail(E->c, a->at->line, a->at->col, "%s got an unexpected keyword argument '%s'", what, a->kwn[k]);
    }
}

/* A macro call: the parameters bound in a new scope under the macro's, the body rendered
 * into a string. */
