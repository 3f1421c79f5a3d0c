/* The Jinja interpreter's arena and values: construction, Python's str() and repr(), the
 * json.dumps that transformers installs as tojson, equality and ordering, and the UTF-8
 * helpers Python's code-point semantics need. */
#include "jinja.h"

#include "or1/core.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

enum { BLOCK_SIZE = 64 << 10 };

struct jx_block {
    jx_block *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

/* Records the message and its place and leaves through the render's error exit. */
_Noreturn void jx_fail(jx_ctx *c, int line, int col, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    c->err_line = line ? line : c->line;
    c->err_col = line ? col : c->col;
    longjmp(c->fail, 1);
}

/* Bump allocation from the current block; a new block (or a block of its own for a large
 * request) when it is full. The total is capped: the template is untrusted. */
void *jx_alloc(jx_ctx *c, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (n > JX_MAX_ARENA || c->used + n > JX_MAX_ARENA)
        jx_fail(c, 0, 0, "the template needs more than %d MiB of memory", JX_MAX_ARENA >> 20);
    jx_block *b = c->blocks;
    if (!b || b->used + n > b->cap) {
        size_t cap = n > BLOCK_SIZE ? n : BLOCK_SIZE;
        b = or1_malloc(sizeof *b + cap);
        b->used = 0;
        b->cap = cap;
        if (n > BLOCK_SIZE && c->blocks) { /* keep filling the current block afterwards */
            b->next = c->blocks->next;
            c->blocks->next = b;
        } else {
            b->next = c->blocks;
            c->blocks = b;
        }
    }
    void *p = b->data + b->used;
    b->used += n;
    c->used += n;
    memset(p, 0, n);
    return p;
}

/* Frees every block of the arena. */
void jx_arena_free(jx_ctx *c) {
    for (jx_block *b = c->blocks, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    c->blocks = NULL;
    c->used = 0;
}

/* An arena copy of s[0, n), NUL-terminated. */
char *jx_strndup(jx_ctx *c, const char *s, size_t n) {
    char *p = jx_alloc(c, n + 1);
    if (n) memcpy(p, s, n);
    return p;
}

jv jv_undef(const char *what) { return (jv){.kind = JV_UNDEF, .u.undef = what}; }
jv jv_none(void) { return (jv){.kind = JV_NONE}; }
jv jv_bool(bool b) { return (jv){.kind = JV_BOOL, .u.b = b}; }
jv jv_int(int64_t i) { return (jv){.kind = JV_INT, .u.i = i}; }
jv jv_float(double f) { return (jv){.kind = JV_FLOAT, .u.f = f}; }
jv jv_str(const char *s, size_t n) { return (jv){.kind = JV_STR, .u.str = {s, n}}; }
jv jv_cstr(const char *s) { return jv_str(s, strlen(s)); }

/* An empty list with room for cap items. */
jv jv_list(jx_ctx *c, size_t cap) {
    jx_list *l = jx_alloc(c, sizeof *l);
    l->cap = cap;
    l->v = cap ? jx_alloc(c, cap * sizeof *l->v) : NULL;
    return (jv){.kind = JV_LIST, .u.list = l};
}

/* An empty dict with room for cap entries. */
jv jv_dict(jx_ctx *c, size_t cap) {
    jx_dict *d = jx_alloc(c, sizeof *d);
    d->cap = cap;
    d->k = cap ? jx_alloc(c, cap * sizeof *d->k) : NULL;
    d->v = cap ? jx_alloc(c, cap * sizeof *d->v) : NULL;
    return (jv){.kind = JV_DICT, .u.dict = d};
}

/* Room for one more element of size sz in *v (doubling, in the arena). */
static void *grow(jx_ctx *c, void *v, size_t n, size_t *cap, size_t sz) {
    if (n < *cap) return v;
    size_t nc = *cap ? *cap * 2 : 4;
    void *p = jx_alloc(c, nc * sz);
    if (n) memcpy(p, v, n * sz);
    *cap = nc;
    return p;
}

/* Appends v. */
void jx_list_push(jx_ctx *c, jx_list *l, jv v) {
    l->v = grow(c, l->v, l->n, &l->cap, sizeof *l->v);
    l->v[l->n++] = v;
}

/* The value under key (Python equality), or NULL. */
jv *jx_dict_get(const jx_dict *d, jv key) {
    for (size_t i = 0; i < d->n; i++)
        if (jx_eq(d->k[i], key)) return &d->v[i];
    return NULL;
}

/* The value under a string key, or NULL. */
jv *jx_dict_gets(const jx_dict *d, const char *key) {
    size_t n = strlen(key);
    for (size_t i = 0; i < d->n; i++)
        if (d->k[i].kind == JV_STR && d->k[i].u.str.n == n && memcmp(d->k[i].u.str.s, key, n) == 0) return &d->v[i];
    return NULL;
}

/* Sets key to v: an equal key is replaced in place, a new one appended (insertion order). */
void jx_dict_set(jx_ctx *c, jx_dict *d, jv key, jv v) {
    jv *old = jx_dict_get(d, key);
    if (old) {
        *old = v;
        return;
    }
    size_t cap = d->cap;
    d->k = grow(c, d->k, d->n, &cap, sizeof *d->k);
    d->v = grow(c, d->v, d->n, &d->cap, sizeof *d->v);
    d->k[d->n] = key;
    d->v[d->n++] = v;
}

/* Appends s[0, n), failing past the output limit (no string of a render may be longer). */
void jx_buf_add(jx_ctx *c, jx_buf *b, const char *s, size_t n) {
    if (n > JX_MAX_OUTPUT || b->n + n > JX_MAX_OUTPUT)
        jx_fail(c, 0, 0, "the template's output (or a string it builds) exceeds %d MiB", JX_MAX_OUTPUT >> 20);
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (b->n + n + 1 > cap) cap *= 2;
        char *p = jx_alloc(c, cap);
        if (b->n) memcpy(p, b->s, b->n);
        b->s = p;
        b->cap = cap;
    }
    if (n) memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = '\0';
}

void jx_buf_adds(jx_ctx *c, jx_buf *b, const char *s) { jx_buf_add(c, b, s, strlen(s)); }

/* Bytes of the UTF-8 code point at s (1 for an invalid byte). */
size_t jx_cp_len(const char *s, size_t n) {
    unsigned char c = (unsigned char)s[0];
    size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    if (k > n) return 1;
    for (size_t i = 1; i < k; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80) return 1;
    return k;
}

/* Code points of s[0, n) (Python's len of a str). */
size_t jx_cp_count(const char *s, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i += jx_cp_len(s + i, n - i)) k++;
    return k;
}

/* The code point at s (an invalid byte stands for itself); its length in *len. */
static int32_t cp_at(const char *s, size_t n, size_t *len) {
    utf8proc_int32_t cp;
    utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &cp);
    if (k <= 0) {
        *len = 1;
        return (unsigned char)s[0];
    }
    *len = (size_t)k;
    return cp;
}

/* Python's str.isspace(): the whitespace characters of Unicode (bidi WS, B, S, or Zs). */
static bool py_space(int32_t cp) {
    if (cp == ' ' || (cp >= 9 && cp <= 13) || (cp >= 0x1C && cp <= 0x1F) || cp == 0x85 || cp == 0xA0) return true;
    if (cp < 0x1680) return false;
    return cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
           cp == 0x205F || cp == 0x3000;
}

bool jx_space_at(const char *s, size_t n, size_t *len) { return py_space(cp_at(s, n, len)); }

/* Python float repr: the shortest digits that read back the same, in fixed notation for
 * decimal exponents -4..15 (with ".0" when integral), else d.ddde+XX. */
void jx_float_repr(double f, char *buf) {
    if (isnan(f)) {
        strcpy(buf, "nan");
        return;
    }
    if (isinf(f)) {
        strcpy(buf, f < 0 ? "-inf" : "inf");
        return;
    }
    char e[40];
    for (int p = 0; p < 17; p++) {
        snprintf(e, sizeof e, "%.*e", p, f);
        if (strtod(e, NULL) == f) break;
    }
    char digits[24], *w = digits, *x = strchr(e, 'e');
    int exp = atoi(x + 1);
    for (const char *r = e; r < x; r++)
        if (*r >= '0' && *r <= '9') *w++ = *r;
    *w = '\0';
    size_t nd = strlen(digits);
    while (nd > 1 && digits[nd - 1] == '0') digits[--nd] = '\0';
    char *o = buf;
    if (signbit(f)) *o++ = '-';
    if (exp < -4 || exp >= 16) {
        *o++ = digits[0];
        if (nd > 1) {
            *o++ = '.';
            memcpy(o, digits + 1, nd - 1);
            o += nd - 1;
        }
        sprintf(o, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    } else if (exp < 0) {
        o += sprintf(o, "0.");
        for (int i = -1; i > exp; i--) *o++ = '0';
        strcpy(o, digits);
    } else {
        for (int i = 0; i <= exp; i++) *o++ = (size_t)i < nd ? digits[i] : '0';
        *o++ = '.';
        if ((size_t)exp + 1 < nd) strcpy(o, digits + exp + 1);
        else strcpy(o, "0");
    }
}

/* Python's name of v's type, for error messages. */
const char *jx_type_name(jv v) {
    static const char *const names[] = {"Undefined", "NoneType", "bool", "int", "float", "str", "list",
                                        "dict", "Namespace", "builtin_function_or_method", "method", "Macro"};
    return v.kind == JV_LIST && v.tuple ? "tuple" : names[v.kind];
}

/* Python's str.isprintable() for one code point (what repr() leaves unescaped). */
static bool py_printable(int32_t cp) {
    if (cp == ' ') return true;
    if (cp < 0x20 || cp == 0x7F) return false;
    if (cp < 0x7F) return true;
    utf8proc_category_t k = utf8proc_category(cp);
    return !(k == UTF8PROC_CATEGORY_CC || k == UTF8PROC_CATEGORY_CF || k == UTF8PROC_CATEGORY_CS ||
             k == UTF8PROC_CATEGORY_CO || k == UTF8PROC_CATEGORY_CN || k == UTF8PROC_CATEGORY_ZL ||
             k == UTF8PROC_CATEGORY_ZP || k == UTF8PROC_CATEGORY_ZS);
}

/* Python repr of a string: single quotes unless it holds ' and no ", escapes as Python writes them. */
static void repr_str(jx_ctx *c, jx_buf *b, const char *s, size_t n) {
    char q = memchr(s, '\'', n) && !memchr(s, '"', n) ? '"' : '\'';
    jx_buf_add(c, b, &q, 1);
    for (size_t i = 0, k; i < n; i += k) {
        int32_t cp = cp_at(s + i, n - i, &k);
        char esc[16];
        if (cp == q || cp == '\\') snprintf(esc, sizeof esc, "\\%c", (char)cp);
        else if (cp == '\n') strcpy(esc, "\\n");
        else if (cp == '\r') strcpy(esc, "\\r");
        else if (cp == '\t') strcpy(esc, "\\t");
        else if (py_printable(cp)) {
            jx_buf_add(c, b, s + i, k);
            continue;
        } else if (cp < 0x100) snprintf(esc, sizeof esc, "\\x%02x", (unsigned)cp);
        else if (cp < 0x10000) snprintf(esc, sizeof esc, "\\u%04x", (unsigned)cp);
        else snprintf(esc, sizeof esc, "\\U%08x", (unsigned)cp);
        jx_buf_adds(c, b, esc);
    }
    jx_buf_add(c, b, &q, 1);
}

/* Appends a scalar's Python str() (shared by str and repr); false for containers and strings. */
static bool scalar_str(jx_ctx *c, jx_buf *b, jv v) {
    char num[40];
    switch (v.kind) {
    case JV_UNDEF: return true;
    case JV_NONE: jx_buf_adds(c, b, "None"); return true;
    case JV_BOOL: jx_buf_adds(c, b, v.u.b ? "True" : "False"); return true;
    case JV_INT: snprintf(num, sizeof num, "%lld", (long long)v.u.i); jx_buf_adds(c, b, num); return true;
    case JV_FLOAT: jx_float_repr(v.u.f, num); jx_buf_adds(c, b, num); return true;
    case JV_FUNC: case JV_METHOD: case JV_MACRO: /* Python prints an address: no text to match */
        jx_fail(c, 0, 0, "printing a function or method is not supported");
    default: return false;
    }
}

/* Appends Python's repr(v) (nesting bounded: a namespace may hold itself). */
void jx_repr(jx_ctx *c, jx_buf *b, jv v) {
    if (++c->depth > JX_MAX_DEPTH) jx_fail(c, 0, 0, "values nested too deeply to print");
    if (v.kind == JV_STR) {
        repr_str(c, b, v.u.str.s, v.u.str.n);
    } else if (v.kind == JV_LIST) {
        jx_buf_adds(c, b, v.tuple ? "(" : "[");
        for (size_t i = 0; i < v.u.list->n; i++) {
            if (i) jx_buf_adds(c, b, ", ");
            jx_repr(c, b, v.u.list->v[i]);
        }
        jx_buf_adds(c, b, v.tuple ? (v.u.list->n == 1 ? ",)" : ")") : "]");
    } else if (v.kind == JV_DICT || v.kind == JV_NS) {
        jx_buf_adds(c, b, v.kind == JV_NS ? "<Namespace {" : "{");
        for (size_t i = 0; i < v.u.dict->n; i++) {
            if (i) jx_buf_adds(c, b, ", ");
            jx_repr(c, b, v.u.dict->k[i]);
            jx_buf_adds(c, b, ": ");
            jx_repr(c, b, v.u.dict->v[i]);
        }
        jx_buf_adds(c, b, v.kind == JV_NS ? "}>" : "}");
    } else if (v.kind == JV_UNDEF) {
        jx_buf_adds(c, b, "Undefined");
    } else {
        scalar_str(c, b, v);
    }
    c->depth--;
}

/* Appends Python's str(v): strings as they are, containers as repr. */
void jx_str_of(jx_ctx *c, jx_buf *b, jv v) {
    if (v.kind == JV_STR) jx_buf_add(c, b, v.u.str.s, v.u.str.n);
    else if (!scalar_str(c, b, v)) jx_repr(c, b, v);
}

/* str(v) as a string value. */
jv jx_to_str(jx_ctx *c, jv v) {
    if (v.kind == JV_STR) return v;
    jx_buf b = {0};
    jx_str_of(c, &b, v);
    return jv_str(b.s ? b.s : "", b.n);
}

/* A JSON string literal as json.dumps writes it (ensure_ascii: \uXXXX, surrogate pairs). */
static void json_str(jx_ctx *c, jx_buf *b, const char *s, size_t n, bool ascii) {
    jx_buf_adds(c, b, "\"");
    for (size_t i = 0, k; i < n; i += k) {
        int32_t cp = cp_at(s + i, n - i, &k);
        char esc[16];
        switch (cp) {
        case '"': strcpy(esc, "\\\""); break;
        case '\\': strcpy(esc, "\\\\"); break;
        case '\n': strcpy(esc, "\\n"); break;
        case '\r': strcpy(esc, "\\r"); break;
        case '\t': strcpy(esc, "\\t"); break;
        case '\b': strcpy(esc, "\\b"); break;
        case '\f': strcpy(esc, "\\f"); break;
        default:
            if (cp < 0x20 || (ascii && cp > 0x7E && cp < 0x10000)) {
                snprintf(esc, sizeof esc, "\\u%04x", (unsigned)cp);
            } else if (ascii && cp >= 0x10000) {
                unsigned v = (unsigned)cp - 0x10000;
                snprintf(esc, sizeof esc, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
            } else {
                jx_buf_add(c, b, s + i, k);
                continue;
            }
        }
        jx_buf_adds(c, b, esc);
    }
    jx_buf_adds(c, b, "\"");
}

/* A newline and indent spaces per level, where json.dumps puts them with indent set. */
static void json_newline(jx_ctx *c, jx_buf *b, const jx_json_opts *o, int depth) {
    if (o->indent < 0) return;
    jx_buf_adds(c, b, "\n");
    for (long i = 0; i < (long)o->indent * depth; i++) jx_buf_adds(c, b, " ");
}

/* A dict key as json.dumps writes it: strings quoted, numbers/bools/None stringified. */
static void json_key(jx_ctx *c, jx_buf *b, jv k, const jx_json_opts *o, int line, int col) {
    char num[40];
    if (k.kind == JV_STR) return json_str(c, b, k.u.str.s, k.u.str.n, o->ensure_ascii);
    if (k.kind == JV_NONE) strcpy(num, "null");
    else if (k.kind == JV_BOOL) strcpy(num, k.u.b ? "true" : "false");
    else if (k.kind == JV_INT) snprintf(num, sizeof num, "%lld", (long long)k.u.i);
    else if (k.kind == JV_FLOAT) jx_float_repr(k.u.f, num);
    else jx_fail(c, line, col, "tojson: keys must be str, int, float, bool or None, not %s", jx_type_name(k));
    json_str(c, b, num, strlen(num), false);
}

/* The order json.dumps writes a dict's entries in: insertion order, or sorted by key. */
static size_t *json_order(jx_ctx *c, const jx_dict *d, bool sort, int line, int col) {
    size_t *ix = jx_alloc(c, (d->n + 1) * sizeof *ix);
    for (size_t i = 0; i < d->n; i++) ix[i] = i;
    for (size_t i = 1; sort && i < d->n; i++) /* insertion sort: stable, and dicts are small */
        for (size_t j = i; j > 0 && jx_cmp(c, d->k[ix[j - 1]], d->k[ix[j]], line, col) > 0; j--) {
            size_t t = ix[j];
            ix[j] = ix[j - 1];
            ix[j - 1] = t;
        }
    return ix;
}

/* Appends json.dumps(v) with transformers' tojson options. */
void jx_json(jx_ctx *c, jx_buf *b, jv v, const jx_json_opts *o, int depth, int line, int col) {
    if (depth > JX_MAX_DEPTH) jx_fail(c, line, col, "tojson: values nested too deeply");
    char num[40];
    switch (v.kind) {
    case JV_NONE: jx_buf_adds(c, b, "null"); return;
    case JV_BOOL: jx_buf_adds(c, b, v.u.b ? "true" : "false"); return;
    case JV_INT: snprintf(num, sizeof num, "%lld", (long long)v.u.i); jx_buf_adds(c, b, num); return;
    case JV_FLOAT:
        if (isnan(v.u.f)) jx_buf_adds(c, b, "NaN");
        else if (isinf(v.u.f)) jx_buf_adds(c, b, v.u.f < 0 ? "-Infinity" : "Infinity");
        else jx_float_repr(v.u.f, num), jx_buf_adds(c, b, num);
        return;
    case JV_STR: json_str(c, b, v.u.str.s, v.u.str.n, o->ensure_ascii); return;
    case JV_LIST:
        if (!v.u.list->n) return jx_buf_adds(c, b, "[]");
        jx_buf_adds(c, b, "[");
        for (size_t i = 0; i < v.u.list->n; i++) {
            if (i) jx_buf_adds(c, b, o->item_sep);
            json_newline(c, b, o, depth + 1);
            jx_json(c, b, v.u.list->v[i], o, depth + 1, line, col);
        }
        json_newline(c, b, o, depth);
        jx_buf_adds(c, b, "]");
        return;
    case JV_DICT: {
        const jx_dict *d = v.u.dict;
        if (!d->n) return jx_buf_adds(c, b, "{}");
        size_t *ix = json_order(c, d, o->sort_keys, line, col);
        jx_buf_adds(c, b, "{");
        for (size_t i = 0; i < d->n; i++) {
            if (i) jx_buf_adds(c, b, o->item_sep);
            json_newline(c, b, o, depth + 1);
            json_key(c, b, d->k[ix[i]], o, line, col);
            jx_buf_adds(c, b, o->key_sep);
            jx_json(c, b, d->v[ix[i]], o, depth + 1, line, col);
        }
        json_newline(c, b, o, depth);
        jx_buf_adds(c, b, "}");
        return;
    }
    default: jx_fail(c, line, col, "tojson: Object of type %s is not JSON serializable", jx_type_name(v));
    }
}

/* Python truthiness; undefined is false. */
bool jx_truthy(jv v) {
    switch (v.kind) {
    case JV_UNDEF: case JV_NONE: return false;
    case JV_BOOL: return v.u.b;
    case JV_INT: return v.u.i != 0;
    case JV_FLOAT: return v.u.f != 0;
    case JV_STR: return v.u.str.n != 0;
    case JV_LIST: return v.u.list->n != 0;
    case JV_DICT: return v.u.dict->n != 0;
    default: return true;
    }
}

/* True for bool, int and float (Python's numbers: bool is an int). */
static bool is_num(jv v) { return v.kind == JV_BOOL || v.kind == JV_INT || v.kind == JV_FLOAT; }

/* A number's value as a double (ints exact below 2^53, as in Python's mixed comparisons
 * for the values templates see). */
static double num_f(jv v) { return v.kind == JV_BOOL ? v.u.b : v.kind == JV_INT ? (double)v.u.i : v.u.f; }

/* Python ==: numbers across int/float/bool, containers item by item. */
bool jx_eq(jv a, jv b) {
    if (is_num(a) && is_num(b)) {
        if (a.kind != JV_FLOAT && b.kind != JV_FLOAT)
            return jv_int_of(a) == jv_int_of(b);
        return num_f(a) == num_f(b);
    }
    if (a.kind != b.kind) return false;
    switch (a.kind) {
    case JV_UNDEF: case JV_NONE: return true;
    case JV_STR: return a.u.str.n == b.u.str.n && memcmp(a.u.str.s, b.u.str.s, a.u.str.n) == 0;
    case JV_LIST:
        if (a.tuple != b.tuple || a.u.list->n != b.u.list->n) return false;
        for (size_t i = 0; i < a.u.list->n; i++)
            if (!jx_eq(a.u.list->v[i], b.u.list->v[i])) return false;
        return true;
    case JV_DICT:
        if (a.u.dict->n != b.u.dict->n) return false;
        for (size_t i = 0; i < a.u.dict->n; i++) {
            jv *o = jx_dict_get(b.u.dict, a.u.dict->k[i]);
            if (!o || !jx_eq(a.u.dict->v[i], *o)) return false;
        }
        return true;
    case JV_NS: return a.u.dict == b.u.dict;
    case JV_FUNC: return a.u.func == b.u.func;
    case JV_MACRO: return a.u.macro == b.u.macro;
    default: return false;
    }
}

/* Python ordering of numbers, strings and lists; other types fail as Python's TypeError. */
int jx_cmp(jx_ctx *c, jv a, jv b, int line, int col) {
    if (is_num(a) && is_num(b)) {
        if (a.kind != JV_FLOAT && b.kind != JV_FLOAT) {
            int64_t x = jv_int_of(a), y = jv_int_of(b);
            return (x > y) - (x < y);
        }
        double x = num_f(a), y = num_f(b);
        return (x > y) - (x < y);
    }
    if (a.kind == JV_STR && b.kind == JV_STR) { /* UTF-8 byte order is code-point order */
        size_t n = a.u.str.n < b.u.str.n ? a.u.str.n : b.u.str.n;
        int r = n ? memcmp(a.u.str.s, b.u.str.s, n) : 0;
        return r ? (r > 0) - (r < 0) : (a.u.str.n > b.u.str.n) - (a.u.str.n < b.u.str.n);
    }
    if (a.kind == JV_LIST && b.kind == JV_LIST && a.tuple == b.tuple) {
        for (size_t i = 0; i < a.u.list->n && i < b.u.list->n; i++)
            if (!jx_eq(a.u.list->v[i], b.u.list->v[i])) return jx_cmp(c, a.u.list->v[i], b.u.list->v[i], line, col);
        return (a.u.list->n > b.u.list->n) - (a.u.list->n < b.u.list->n);
    }
    if (a.kind == JV_UNDEF || b.kind == JV_UNDEF)
        jx_fail(c, line, col, "'%s' is undefined", a.kind == JV_UNDEF ? a.u.undef : b.u.undef);
    jx_fail(c, line, col, "'<' not supported between instances of '%s' and '%s'", jx_type_name(a), jx_type_name(b));
}

/* The value of a cJSON tree (integral numbers within 2^53 become ints). */
jv jx_from_json(jx_ctx *c, const cJSON *j, int depth) {
    if (depth > JX_MAX_DEPTH) jx_fail(c, 0, 0, "the variables are nested too deeply");
    if (cJSON_IsNull(j) || !j) return jv_none();
    if (cJSON_IsBool(j)) return jv_bool(cJSON_IsTrue(j));
    if (cJSON_IsString(j)) return jv_str(j->valuestring, strlen(j->valuestring));
    if (cJSON_IsNumber(j)) {
        double d = j->valuedouble;
        if (d == floor(d) && fabs(d) < 9007199254740992.0) return jv_int((int64_t)d);
        return jv_float(d);
    }
    if (cJSON_IsArray(j)) {
        jv l = jv_list(c, (size_t)cJSON_GetArraySize(j));
        for (const cJSON *e = j->child; e; e = e->next) jx_list_push(c, l.u.list, jx_from_json(c, e, depth + 1));
        return l;
    }
    if (cJSON_IsObject(j)) {
        jv d = jv_dict(c, (size_t)cJSON_GetArraySize(j));
        for (const cJSON *e = j->child; e; e = e->next)
            jx_dict_set(c, d.u.dict, jv_cstr(e->string ? e->string : ""), jx_from_json(c, e, depth + 1));
        return d;
    }
    jx_fail(c, 0, 0, "the variables hold a JSON value of no known type");
}
