/* The Jinja evaluator: statements and expressions over values, with Jinja's scoping (a for
 * loop's body is a new scope each iteration, so "set" there does not leak out; namespaces
 * carry state), Python's operator typing, and Jinja's undefined (prints as nothing,
 * iterates as empty, fails when used in arithmetic or looked into). */
#include "jinja.h"
#include "tok.h"

#include "or1/core.h"
#include "or1/tokenizer.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

struct jx_frame {
    jx_frame *parent;
    jx_dict vars;
};

enum { FLOW_NEXT, FLOW_BREAK, FLOW_CONTINUE };

static jv eval(jx_eval *E, jx_frame *f, const jx_node *x);
static int exec_body(jx_eval *E, jx_frame *f, const jx_nodes *body);

/* A new scope under parent. */
static jx_frame *frame_new(jx_eval *E, jx_frame *parent) {
    jx_frame *f = jx_alloc(E->c, sizeof *f);
    f->parent = parent;
    return f;
}

/* Binds name in scope f. */
static void bind(jx_eval *E, jx_frame *f, const char *name, jv v) { jx_dict_set(E->c, &f->vars, jv_cstr(name), v); }

/* A variable: the innermost scope's, else a global function, else undefined. */
static jv lookup(jx_eval *E, jx_frame *f, const char *name) {
    for (; f; f = f->parent) {
        jv *v = jx_dict_gets(&f->vars, name);
        if (v) return *v;
    }
    int id = jx_func_id(name);
    if (id >= 0) return (jv){.kind = JV_FUNC, .u.func = id};
    char *msg = jx_alloc(E->c, strlen(name) + 32);
    sprintf(msg, "'%s' is undefined", name);
    return jv_undef(msg);
}

/* Python slice bounds (PySlice_AdjustIndices): start, step and count of x[a:b:c] over n items. */
static size_t slice_bounds(jx_eval *E, const jx_node *at, jv a, jv b, jv c, size_t n, int64_t *start, int64_t *step) {
    for (int i = 0; i < 3; i++) {
        jv v = i == 0 ? a : i == 1 ? b : c;
        if (v.kind != JV_NONE && v.kind != JV_UNDEF && v.kind != JV_INT && v.kind != JV_BOOL)
            jx_fail(E->c, at->line, at->col, "slice indices must be integers or None, not %s", jx_type_name(v));
    }
    int64_t len = (int64_t)n, st = jv_is_int(c) ? jv_int_of(c) : 1;
    if (st == 0) jx_fail(E->c, at->line, at->col, "slice step cannot be zero");
    bool has_a = jv_is_int(a), has_b = jv_is_int(b);
    int64_t lo = st < 0 ? -1 : 0, hi = st < 0 ? len - 1 : len;
    int64_t s = has_a ? jv_int_of(a) : (st < 0 ? hi : lo);
    int64_t e = has_b ? jv_int_of(b) : (st < 0 ? lo : hi);
    if (has_a) s = s < 0 ? (s + len < lo ? lo : s + len) : (s > hi ? hi : s);
    if (has_b) e = e < 0 ? (e + len < lo ? lo : e + len) : (e > hi ? hi : e);
    *start = s;
    *step = st;
    if (st > 0) return e > s ? (size_t)((e - s - 1) / st + 1) : 0;
    return s > e ? (size_t)((s - e - 1) / -st + 1) : 0;
}

/* x[a:b:c] of a list or a string. */
static jv slice(jx_eval *E, const jx_node *at, jv x, jv a, jv b, jv c) {
    if (x.kind == JV_UNDEF) jx_undef_fail(E, at, x);
    int64_t s, st;
    if (x.kind == JV_LIST) {
        size_t k = slice_bounds(E, at, a, b, c, x.u.list->n, &s, &st);
        jv l = jv_list(E->c, k);
        l.tuple = x.tuple;
        for (size_t i = 0; i < k; i++) jx_list_push(E->c, l.u.list, x.u.list->v[s + (int64_t)i * st]);
        return l;
    }
    if (x.kind == JV_STR) {
        jx_list *chars = jx_iter(E, at, x);
        size_t k = slice_bounds(E, at, a, b, c, chars->n, &s, &st);
        jx_buf o = {0};
        jx_buf_add(E->c, &o, "", 0);
        for (size_t i = 0; i < k; i++) {
            jv ch = chars->v[s + (int64_t)i * st];
            jx_buf_add(E->c, &o, ch.u.str.s, ch.u.str.n);
        }
        return jv_str(o.s, o.n);
    }
    jx_fail(E->c, at->line, at->col, "'%s' object is not subscriptable", jx_type_name(x));
}

/* A number as (is_float, int, double); false when x is not a number. */
static bool number(jv x, bool *fl, int64_t *i, double *d) {
    if (jv_is_int(x)) {
        *fl = false;
        *i = jv_int_of(x);
        *d = (double)*i;
        return true;
    }
    if (x.kind == JV_FLOAT) {
        *fl = true;
        *d = x.u.f;
        return true;
    }
    return false;
}

/* seq * n for a string or list (refused up front past the output limit). */
static jv repeat(jx_eval *E, const jx_node *at, jv seq, int64_t n) {
    size_t unit = seq.kind == JV_STR ? seq.u.str.n : seq.u.list->n * sizeof(jv);
    if (n > 0 && unit && (uint64_t)n > JX_MAX_OUTPUT / unit)
        jx_fail(E->c, at->line, at->col, "a repeated string or list exceeds %d MiB", JX_MAX_OUTPUT >> 20);
    if (seq.kind == JV_STR) {
        jx_buf b = {0};
        jx_buf_add(E->c, &b, "", 0);
        for (int64_t k = 0; k < n; k++) jx_buf_add(E->c, &b, seq.u.str.s, seq.u.str.n);
        return jv_str(b.s, b.n);
    }
    jv l = jv_list(E->c, 0);
    l.tuple = seq.tuple;
    for (int64_t k = 0; k < n; k++)
        for (size_t i = 0; i < seq.u.list->n; i++) jx_list_push(E->c, l.u.list, seq.u.list->v[i]);
    return l;
}

/* Integer a op b, failing on overflow (Python's integers do not overflow). */
static jv int_op(jx_eval *E, const jx_node *at, jx_op op, int64_t a, int64_t b) {
    int64_t r = 0;
    bool over = false;
    switch (op) {
    case OP_ADD: over = __builtin_add_overflow(a, b, &r); break;
    case OP_SUB: over = __builtin_sub_overflow(a, b, &r); break;
    case OP_MUL: over = __builtin_mul_overflow(a, b, &r); break;
    case OP_FLOORDIV:
    case OP_MOD:
        if (b == 0) jx_fail(E->c, at->line, at->col, "integer division or modulo by zero");
        if (a == INT64_MIN && b == -1) over = true;
        else if (op == OP_FLOORDIV) r = a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
        else r = a % b + ((a % b != 0 && (a % b < 0) != (b < 0)) ? b : 0);
        break;
    case OP_POW:
        if (b < 0) return jv_float(pow((double)a, (double)b));
        r = 1;
        for (int64_t k = 0; k < b && !over; k++) {
            over = __builtin_mul_overflow(r, a, &r);
            if (r == 0 || r == 1) break;
            if (r == -1) { r = (b - k - 1) % 2 ? -r : r; break; }
        }
        break;
    default: break;
    }
    if (over) jx_fail(E->c, at->line, at->col, "integer overflow (beyond 64 bits)");
    return jv_int(r);
}

/* a op b for the arithmetic operators, typed as Python types them. */
static jv arith(jx_eval *E, const jx_node *at, jx_op op, jv a, jv b) {
    if (a.kind == JV_UNDEF) jx_undef_fail(E, at, a);
    if (b.kind == JV_UNDEF) jx_undef_fail(E, at, b);
    bool fa, fb;
    int64_t ia = 0, ib = 0;
    double da, db;
    if (number(a, &fa, &ia, &da) && number(b, &fb, &ib, &db)) {
        if (op == OP_DIV) {
            if (db == 0) jx_fail(E->c, at->line, at->col, "division by zero");
            return jv_float(da / db);
        }
        if (!fa && !fb) return int_op(E, at, op, ia, ib);
        switch (op) {
        case OP_ADD: return jv_float(da + db);
        case OP_SUB: return jv_float(da - db);
        case OP_MUL: return jv_float(da * db);
        case OP_POW: return jv_float(pow(da, db));
        default:
            if (db == 0) jx_fail(E->c, at->line, at->col, "float division or modulo by zero");
            double m = fmod(da, db);
            if (m != 0 && (m < 0) != (db < 0)) m += db;
            return op == OP_MOD ? jv_float(m) : jv_float(floor((da - m) / db + 0.5));
        }
    }
    if (op == OP_ADD && a.kind == JV_STR && b.kind == JV_STR) {
        jx_buf o = {0};
        jx_buf_add(E->c, &o, a.u.str.s, a.u.str.n);
        jx_buf_add(E->c, &o, b.u.str.s, b.u.str.n);
        return jv_str(o.s, o.n);
    }
    if (op == OP_ADD && a.kind == JV_LIST && b.kind == JV_LIST && a.tuple == b.tuple) {
        jv l = jv_list(E->c, a.u.list->n + b.u.list->n);
        l.tuple = a.tuple;
        for (size_t i = 0; i < a.u.list->n; i++) jx_list_push(E->c, l.u.list, a.u.list->v[i]);
        for (size_t i = 0; i < b.u.list->n; i++) jx_list_push(E->c, l.u.list, b.u.list->v[i]);
        return l;
    }
    if (op == OP_MUL && (a.kind == JV_STR || a.kind == JV_LIST) && jv_is_int(b))
        return repeat(E, at, a, jv_int_of(b));
    if (op == OP_MUL && (b.kind == JV_STR || b.kind == JV_LIST) && jv_is_int(a))
        return repeat(E, at, b, jv_int_of(a));
    static const char *const sym[] = {"+", "-", "*", "/", "//", "%", "**"};
    if (op == OP_MOD && a.kind == JV_STR) jx_fail(E->c, at->line, at->col, "'%%' string formatting is not supported");
    jx_fail(E->c, at->line, at->col, "unsupported operand type(s) for %s: '%s' and '%s'", sym[op], jx_type_name(a),
            jx_type_name(b));
}

/* a in b, as Python tests membership. */
static bool contains(jx_eval *E, const jx_node *at, jv a, jv b) {
    if (b.kind == JV_UNDEF) return false;
    if (b.kind == JV_STR) {
        if (a.kind != JV_STR)
            jx_fail(E->c, at->line, at->col, "'in <string>' requires string as left operand, not %s", jx_type_name(a));
        if (a.u.str.n == 0) return true;
        for (size_t i = 0; i + a.u.str.n <= b.u.str.n; i++)
            if (memcmp(b.u.str.s + i, a.u.str.s, a.u.str.n) == 0) return true;
        return false;
    }
    if (b.kind == JV_LIST) {
        for (size_t i = 0; i < b.u.list->n; i++)
            if (jx_eq(a, b.u.list->v[i])) return true;
        return false;
    }
    if (b.kind == JV_DICT) return jx_dict_get(b.u.dict, a) != NULL;
    jx_fail(E->c, at->line, at->col, "argument of type '%s' is not iterable", jx_type_name(b));
}

/* One comparison a op b. */
static bool compare(jx_eval *E, const jx_node *at, jx_op op, jv a, jv b) {
    switch (op) {
    case OP_EQ: return jx_eq(a, b);
    case OP_NE: return !jx_eq(a, b);
    case OP_LT: return jx_cmp(E->c, a, b, at->line, at->col) < 0;
    case OP_LE: return jx_cmp(E->c, a, b, at->line, at->col) <= 0;
    case OP_GT: return jx_cmp(E->c, a, b, at->line, at->col) > 0;
    case OP_GE: return jx_cmp(E->c, a, b, at->line, at->col) >= 0;
    case OP_IN: return contains(E, at, a, b);
    default: return !contains(E, at, a, b);
    }
}

/* The evaluated arguments of a call, filter or test node (first: the piped value, or none). */
static jx_args eval_args(jx_eval *E, jx_frame *f, const jx_node *x) {
    jx_args a = {.npos = x->args.n, .nkw = x->kw.n, .kwn = x->kwnames, .at = x};
    jv *pos = jx_alloc(E->c, (x->args.n + 1) * sizeof *pos), *kw = jx_alloc(E->c, (x->kw.n + 1) * sizeof *kw);
    for (size_t i = 0; i < x->args.n; i++) pos[i] = eval(E, f, x->args.v[i]);
    for (size_t i = 0; i < x->kw.n; i++) kw[i] = eval(E, f, x->kw.v[i]);
    a.pos = pos;
    a.kw = kw;
    return a;
}

static jv call_macro(jx_eval *E, const jx_node *at, const jx_macro *m, const jx_args *a) {
    const jx_node *d = m->def;
    if (a->npos > d->nkwnames)
        jx_fail(E->c, at->line, at->col, "macro '%s' takes not more than %zu argument(s)", d->name, d->nkwnames);
    jx_args_check(E, a, d->name, d->nkwnames, d->kwnames);
    jx_frame *f = frame_new(E, m->frame);
    for (size_t i = 0; i < d->nkwnames; i++) {
        jv v = jx_arg(E, a, i, d->kwnames[i], (jv){.kind = JV_UNDEF, .u.undef = NULL});
        if (v.kind == JV_UNDEF && !v.u.undef) {
            char *msg = jx_alloc(E->c, strlen(d->kwnames[i]) + 64);
            sprintf(msg, "parameter '%s' was not provided", d->kwnames[i]);
            v = d->kw.v[i] ? eval(E, f, d->kw.v[i]) : jv_undef(msg);
        }
        bind(E, f, d->kwnames[i], v);
    }
    jx_buf out = {0}, *saved = E->out;
    jx_buf_add(E->c, &out, "", 0);
    E->out = &out;
    exec_body(E, f, &d->body);
    E->out = saved;
    return jv_str(out.s, out.n);
}

/* callee(args). */
static jv call(jx_eval *E, jx_frame *f, const jx_node *x) {
    jv callee = eval(E, f, x->a);
    jx_args a = eval_args(E, f, x);
    switch (callee.kind) {
    case JV_FUNC: return jx_call_func(E, callee.u.func, &a);
    case JV_METHOD: return jx_call_method(E, callee.u.method, &a);
    case JV_MACRO: return call_macro(E, x, callee.u.macro, &a);
    case JV_UNDEF: jx_undef_fail(E, x, callee);
    default: jx_fail(E->c, x->line, x->col, "'%s' object is not callable", jx_type_name(callee));
    }
}

/* A chained comparison: each operand evaluated once, stopping at the first false. */
static jv eval_compare(jx_eval *E, jx_frame *f, const jx_node *x) {
    jv left = eval(E, f, x->args.v[0]);
    for (size_t i = 1; i < x->args.n; i++) {
        jv right = eval(E, f, x->args.v[i]);
        if (!compare(E, x, x->ops[i - 1], left, right)) return jv_bool(false);
        left = right;
    }
    return jv_bool(true);
}

/* A list, tuple or dict display. */
static jv eval_display(jx_eval *E, jx_frame *f, const jx_node *x) {
    if (x->kind == JN_DICT) {
        jv d = jv_dict(E->c, x->args.n / 2);
        for (size_t i = 0; i + 1 < x->args.n; i += 2)
            jx_dict_set(E->c, d.u.dict, eval(E, f, x->args.v[i]), eval(E, f, x->args.v[i + 1]));
        return d;
    }
    jv l = jv_list(E->c, x->args.n);
    l.tuple = x->kind == JN_TUPLE;
    for (size_t i = 0; i < x->args.n; i++) jx_list_push(E->c, l.u.list, eval(E, f, x->args.v[i]));
    return l;
}

/* Counts a step and a level of recursion against the render's budgets; notes the node's
 * place for errors raised below it without one (memory, output). */
static void enter(jx_eval *E, const jx_node *x) {
    if (++E->c->steps > JX_MAX_STEPS) jx_fail(E->c, x->line, x->col, "the template runs too long (over %ld steps)", JX_MAX_STEPS);
    if (++E->c->depth > JX_MAX_DEPTH) jx_fail(E->c, x->line, x->col, "the template recurses too deeply");
    E->c->line = x->line;
    E->c->col = x->col;
}

/* The value of an expression. */
static jv eval(jx_eval *E, jx_frame *f, const jx_node *x) {
    enter(E, x);
    jv v, a;
    switch (x->kind) {
    case JN_LIT: v = x->lit; break;
    case JN_NAME: v = lookup(E, f, x->name); break;
    case JN_ATTR: v = jx_getattr(E, x, eval(E, f, x->a), x->name); break;
    case JN_ITEM: a = eval(E, f, x->a); v = jx_getitem(E, x, a, eval(E, f, x->b)); break;
    case JN_SLICE: {
        a = eval(E, f, x->a);
        jv p[3];
        for (int i = 0; i < 3; i++) p[i] = x->args.v[i] ? eval(E, f, x->args.v[i]) : jv_none();
        v = slice(E, x, a, p[0], p[1], p[2]);
        break;
    }
    case JN_CALL: v = call(E, f, x); break;
    case JN_FILTER: {
        a = eval(E, f, x->a);
        jx_args args = eval_args(E, f, x);
        v = jx_filter(E, x->name, a, &args);
        break;
    }
    case JN_TEST: {
        a = eval(E, f, x->a);
        jx_args args = eval_args(E, f, x);
        v = jv_bool(jx_test(E, x->name, a, &args) != x->negate);
        break;
    }
    case JN_BINOP:
        a = eval(E, f, x->a);
        if (x->op == OP_CONCAT) {
            jx_buf b = {0};
            jx_buf_add(E->c, &b, "", 0);
            jx_str_of(E->c, &b, a);
            jx_str_of(E->c, &b, eval(E, f, x->b));
            v = jv_str(b.s, b.n);
        } else {
            v = arith(E, x, x->op, a, eval(E, f, x->b));
        }
        break;
    case JN_NEG:
    case JN_POS:
        a = eval(E, f, x->a);
        if (a.kind == JV_UNDEF) jx_undef_fail(E, x, a);
        if (a.kind == JV_FLOAT) v = jv_float(x->kind == JN_NEG ? -a.u.f : a.u.f);
        else if (jv_is_int(a)) v = x->kind == JN_NEG ? int_op(E, x, OP_SUB, 0, jv_int_of(a)) : jv_int(jv_int_of(a));
        else jx_fail(E->c, x->line, x->col, "bad operand type for unary %c: '%s'", x->kind == JN_NEG ? '-' : '+', jx_type_name(a));
        break;
    case JN_NOT: v = jv_bool(!jx_truthy(eval(E, f, x->a))); break;
    case JN_AND: a = eval(E, f, x->a); v = jx_truthy(a) ? eval(E, f, x->b) : a; break;
    case JN_OR: a = eval(E, f, x->a); v = jx_truthy(a) ? a : eval(E, f, x->b); break;
    case JN_COND:
        if (jx_truthy(eval(E, f, x->a))) v = eval(E, f, x->b);
        else v = x->c ? eval(E, f, x->c) : jv_undef("the inline if's condition was false and it has no else");
        break;
    case JN_COMPARE: v = eval_compare(E, f, x); break;
    case JN_LIST: case JN_TUPLE: case JN_DICT: v = eval_display(E, f, x); break;
    default: jx_fail(E->c, x->line, x->col, "internal: a statement where an expression was expected");
    }
    E->c->depth--;
    return v;
}

/* Binds assignment targets: one name takes v; several unpack a sequence of that length. */
static void assign(jx_eval *E, jx_frame *f, const jx_node *x, jv v) {
    if (x->nkwnames == 1) return bind(E, f, x->kwnames[0], v);
    jx_list *l = jx_iter(E, x, v);
    if (l->n != x->nkwnames)
        jx_fail(E->c, x->line, x->col, "cannot unpack %zu values into %zu names", l->n, x->nkwnames);
    for (size_t i = 0; i < l->n; i++) bind(E, f, x->kwnames[i], l->v[i]);
}

/* The "loop" variable of item i of n. */
static jv loop_var(jx_eval *E, jx_list *items, size_t i) {
    size_t n = items->n;
    jv d = jv_dict(E->c, 12);
    jx_dict *l = d.u.dict;
    jx_dict_set(E->c, l, jv_cstr("index"), jv_int((int64_t)i + 1));
    jx_dict_set(E->c, l, jv_cstr("index0"), jv_int((int64_t)i));
    jx_dict_set(E->c, l, jv_cstr("revindex"), jv_int((int64_t)(n - i)));
    jx_dict_set(E->c, l, jv_cstr("revindex0"), jv_int((int64_t)(n - i - 1)));
    jx_dict_set(E->c, l, jv_cstr("first"), jv_bool(i == 0));
    jx_dict_set(E->c, l, jv_cstr("last"), jv_bool(i + 1 == n));
    jx_dict_set(E->c, l, jv_cstr("length"), jv_int((int64_t)n));
    jx_dict_set(E->c, l, jv_cstr("depth"), jv_int(1));
    jx_dict_set(E->c, l, jv_cstr("depth0"), jv_int(0));
    if (i > 0) jx_dict_set(E->c, l, jv_cstr("previtem"), items->v[i - 1]);
    if (i + 1 < n) jx_dict_set(E->c, l, jv_cstr("nextitem"), items->v[i + 1]);
    return d;
}

/* {% for %}: each item in a new scope under f; the else body when nothing was iterated. */
static void exec_for(jx_eval *E, jx_frame *f, const jx_node *x) {
    jx_list *items = jx_iter(E, x, eval(E, f, x->a));
    if (x->b) { /* {% for a in b if cond %}: the loop sees only the items that pass */
        jx_list *kept = jv_list(E->c, items->n).u.list;
        for (size_t i = 0; i < items->n; i++) {
            jx_frame *g = frame_new(E, f);
            assign(E, g, x, items->v[i]);
            if (jx_truthy(eval(E, g, x->b))) jx_list_push(E->c, kept, items->v[i]);
        }
        items = kept;
    }
    for (size_t i = 0; i < items->n; i++) {
        jx_frame *g = frame_new(E, f);
        assign(E, g, x, items->v[i]);
        bind(E, g, "loop", loop_var(E, items, i));
        if (exec_body(E, g, &x->body) == FLOW_BREAK) break;
    }
    if (!items->n) exec_body(E, f, &x->orelse);
}

/* {% set %}: a name (or names) in the current scope, or a namespace's attribute. */
static void exec_set(jx_eval *E, jx_frame *f, const jx_node *x) {
    if (x->kind == JN_SET_BLOCK) {
        jx_buf out = {0}, *saved = E->out;
        jx_buf_add(E->c, &out, "", 0);
        E->out = &out;
        exec_body(E, f, &x->body);
        E->out = saved;
        return bind(E, f, x->kwnames[0], jv_str(out.s, out.n));
    }
    jv v = eval(E, f, x->a);
    if (!x->c) return assign(E, f, x, v);
    jv ns = eval(E, f, x->c);
    if (ns.kind != JV_NS) jx_fail(E->c, x->line, x->col, "cannot assign attribute on non-namespace object");
    if (x->name[0] == '_') jx_fail(E->c, x->line, x->col, "namespace attribute '%s' may not start with '_'", x->name);
    jx_dict_set(E->c, ns.u.dict, jv_cstr(x->name), v);
}

/* {{ v }}: str(v) appended; a function has no text Python would print alike (an address). */
static void output(jx_eval *E, const jx_node *x, jv v) {
    if (v.kind == JV_FUNC || v.kind == JV_METHOD || v.kind == JV_MACRO)
        jx_fail(E->c, x->line, x->col, "printing a function or method is not supported");
    jx_str_of(E->c, E->out, v);
}

/* Runs statements; returns how control leaves them (break/continue inside loops). */
static int exec_body(jx_eval *E, jx_frame *f, const jx_nodes *body) {
    for (size_t i = 0; i < body->n; i++) {
        const jx_node *x = body->v[i];
        enter(E, x);
        int flow = FLOW_NEXT;
        switch (x->kind) {
        case JN_TEXT: jx_buf_add(E->c, E->out, x->lit.u.str.s, x->lit.u.str.n); break;
        case JN_OUTPUT: output(E, x, eval(E, f, x->a)); break;
        case JN_IF: flow = exec_body(E, f, jx_truthy(eval(E, f, x->a)) ? &x->body : &x->orelse); break;
        case JN_FOR: exec_for(E, f, x); break;
        case JN_SET: case JN_SET_BLOCK: exec_set(E, f, x); break;
        case JN_MACRO: {
            jx_macro *m = jx_alloc(E->c, sizeof *m);
            m->def = x;
            m->frame = f;
            bind(E, f, x->name, (jv){.kind = JV_MACRO, .u.macro = m});
            break;
        }
        case JN_BREAK: flow = FLOW_BREAK; break;
        case JN_CONTINUE: flow = FLOW_CONTINUE; break;
        default: jx_fail(E->c, x->line, x->col, "internal: an expression where a statement was expected");
        }
        E->c->depth--;
        if (flow != FLOW_NEXT) return flow;
    }
    return FLOW_NEXT;
}

/* Runs the template with vars as the top scope. */
void jx_render(jx_ctx *c, const jx_nodes *prog, jx_dict *vars, jx_buf *out) {
    jx_eval E = {.c = c, .out = out};
    E.root = frame_new(&E, NULL);
    E.root->vars = *vars;
    exec_body(&E, E.root, prog);
}

/* The source as Jinja reads it: every \r\n and \r made \n, one final newline dropped
 * (keep_trailing_newline off). */
static char *normalise(jx_ctx *c, const char *src, size_t len, size_t *n) {
    char *s = jx_alloc(c, len + 1);
    size_t k = 0;
    for (size_t i = 0; i < len; i++) {
        if (src[i] == '\r') {
            s[k++] = '\n';
            if (i + 1 < len && src[i + 1] == '\n') i++;
        } else {
            s[k++] = src[i];
        }
    }
    if (k && s[k - 1] == '\n') k--;
    s[k] = '\0';
    *n = k;
    return s;
}

/* Lexes, parses and renders in one arena; the output is copied out before the arena goes. */
static int render(jx_ctx *c, const char *src, size_t len, const cJSON *vars, char **out, size_t *out_len) {
    size_t n, nt;
    const char *s = normalise(c, src, len, &n);
    c->src = s;
    jx_token *t = jx_lex(c, s, n, &nt);
    jx_nodes prog = jx_parse(c, t, nt);
    jv v = jx_from_json(c, vars, 0);
    jx_buf b = {0};
    jx_buf_add(c, &b, "", 0);
    jx_render(c, &prog, v.u.dict, &b);
    *out = or1_malloc(b.n + 1);
    memcpy(*out, b.s, b.n + 1);
    *out_len = b.n;
    return 0;
}

/* Runs render under the error exit: 0, or 1 when it failed (message in c->err). Nothing
 * here is used after a longjmp but c, which does not change. */
static int guarded(jx_ctx *c, const char *src, size_t len, const cJSON *vars, char **out, size_t *out_len) {
    if (setjmp(c->fail) != 0) return 1;
    return render(c, src, len, vars, out, out_len);
}

/* Checks the input, renders under the error exit, and reports an error with where:line:col. */
int or1_jinja_render(const char *src, size_t len, const cJSON *vars, const char *where, char **out, size_t *out_len) {
    *out = NULL;
    *out_len = 0;
    if (!where) where = "template";
    if (!cJSON_IsObject(vars)) return or1_fail("%s: the template variables must be a JSON object", where);
    if (len > JX_MAX_SOURCE) return or1_fail("%s: the template is larger than %d MiB", where, JX_MAX_SOURCE >> 20);
    size_t bad = tok_utf8_check(src, len);
    if (bad < len) return or1_fail("%s: the template is not valid UTF-8 (byte %zu)", where, bad);
    jx_ctx *c = or1_calloc(1, sizeof *c);
    int rc = 0;
    if (guarded(c, src, len, vars, out, out_len) != 0) {
        if (c->err_line) rc = or1_fail("%s:%d:%d: %s", where, c->err_line, c->err_col, c->err);
        else rc = or1_fail("%s: %s", where, c->err);
    }
    jx_arena_free(c);
    free(c);
    return rc;
}
