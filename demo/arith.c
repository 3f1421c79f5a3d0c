/* The built-in demo task: arithmetic expressions, their values and step-by-step traces. */
#include "demo.h"

#include "or1/core.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_DEPTH = 32, MAX_LEAVES = 64, MAX_NODES = 2 * MAX_LEAVES, MAX_DIGITS = 9 };

/* A parse-tree node: a number (op 0) or a binary operation on two nodes. */
typedef struct {
    char op;
    int l, r;
    int64_t v;
} node;

/* Recursive-descent parser state over one expression. */
typedef struct {
    const char *s;
    size_t i;
    node n[MAX_NODES];
    int nn, depth, leaves;
} parser;

static int parse_sum(parser *p);

/* Skips blanks. */
static void skip_space(parser *p) {
    while (p->s[p->i] == ' ') p->i++;
}

/* Appends a node, failing when the expression has too many operands. */
static int add_node(parser *p, char op, int l, int r, int64_t v) {
    if (op == 0 && ++p->leaves > MAX_LEAVES)
        return or1_fail("arith: \"%.64s\": more than %d operands", p->s, MAX_LEAVES);
    if (p->nn == MAX_NODES) return or1_fail("arith: \"%.64s\": too many operations", p->s);
    p->n[p->nn] = (node){op, l, r, v};
    return p->nn++;
}

/* factor := digits | '(' sum ')' */
static int parse_factor(parser *p) {
    skip_space(p);
    char c = p->s[p->i];
    if (c == '(') {
        if (++p->depth > MAX_DEPTH)
            return or1_fail("arith: \"%.64s\": parentheses nested deeper than %d", p->s, MAX_DEPTH);
        p->i++;
        int e = parse_sum(p);
        if (e < 0) return -1;
        skip_space(p);
        if (p->s[p->i] != ')') return or1_fail("arith: \"%.64s\": expected ')' at byte %zu", p->s, p->i);
        p->i++;
        p->depth--;
        return e;
    }
    if (c < '0' || c > '9') return or1_fail("arith: \"%.64s\": expected a number at byte %zu", p->s, p->i);
    int64_t v = 0;
    size_t start = p->i;
    while (p->s[p->i] >= '0' && p->s[p->i] <= '9') {
        if (p->i - start == MAX_DIGITS)
            return or1_fail("arith: \"%.64s\": number of more than %d digits at byte %zu", p->s, MAX_DIGITS, start);
        v = v * 10 + (p->s[p->i++] - '0');
    }
    return add_node(p, 0, -1, -1, v);
}

/* term := factor ('*' factor)* (left-associative) */
static int parse_term(parser *p) {
    int l = parse_factor(p);
    for (;;) {
        if (l < 0) return -1;
        skip_space(p);
        if (p->s[p->i] != '*') return l;
        p->i++;
        int r = parse_factor(p);
        if (r < 0) return -1;
        l = add_node(p, '*', l, r, 0);
    }
}

/* sum := term (('+' | '-') term)* (left-associative) */
static int parse_sum(parser *p) {
    int l = parse_term(p);
    for (;;) {
        if (l < 0) return -1;
        skip_space(p);
        char op = p->s[p->i];
        if (op != '+' && op != '-') return l;
        p->i++;
        int r = parse_term(p);
        if (r < 0) return -1;
        l = add_node(p, op, l, r, 0);
    }
}

/* Parses the whole text into p; returns the root node or -1. */
static int parse(parser *p, const char *expr) {
    memset(p, 0, sizeof *p);
    p->s = expr;
    size_t n = strnlen(expr, OR1_ARITH_MAX_TEXT);
    if (n == OR1_ARITH_MAX_TEXT) return or1_fail("arith: expression longer than %d bytes", OR1_ARITH_MAX_TEXT - 1);
    int root = parse_sum(p);
    if (root < 0) return -1;
    skip_space(p);
    if (p->s[p->i]) return or1_fail("arith: \"%.64s\": unexpected '%c' at byte %zu", expr, p->s[p->i], p->i);
    return root;
}

/* a op b with an overflow check. */
static int apply(char op, int64_t a, int64_t b, int64_t *out) {
    bool ovf = op == '+' ? __builtin_add_overflow(a, b, out)
             : op == '-' ? __builtin_sub_overflow(a, b, out)
                         : __builtin_mul_overflow(a, b, out);
    return ovf ? or1_fail("arith: %lld %c %lld overflows", (long long)a, op, (long long)b) : 0;
}

int or1_arith_eval(const char *expr, int64_t *value) {
    parser *p = or1_malloc(sizeof *p);
    int root = parse(p, expr), rc = root < 0 ? -1 : 0;
    /* Children always precede their parent, so one pass in index order evaluates the tree. */
    for (int k = 0; rc == 0 && k < p->nn; k++)
        if (p->n[k].op) rc = apply(p->n[k].op, p->n[p->n[k].l].v, p->n[p->n[k].r].v, &p->n[k].v);
    if (rc == 0) *value = p->n[root].v;
    free(p);
    return rc;
}

/* FNV-1a of the text, mixed, decides the split: one in eight expressions is test. */
or1_arith_split or1_arith_split_of(const char *expr) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const unsigned char *c = (const unsigned char *)expr; *c; c++) h = (h ^ *c) * 0x100000001b3ULL;
    return or1_rand_u64(h, 0x5eed5b117ULL, 0) % 8 == 0 ? OR1_ARITH_TEST : OR1_ARITH_TRAIN;
}

/* Random draws of one generation attempt: (seed, index) names the stream. */
typedef struct {
    uint64_t seed, stream, counter;
} draws;

/* Uniform integer in [0, n). */
static int draw(draws *d, int n) { return (int)(or1_rand_u64(d->seed, d->stream, d->counter++) % (uint64_t)n); }

/* True when a child with operator `child` under `parent` needs parentheses to keep the tree:
 * a sum under a product, or a sum as the right side of a subtraction. */
static bool needs_parens(char parent, char child, bool right) {
    if (child != '+' && child != '-') return false;
    return parent == '*' || (parent == '-' && right);
}

/* Writes a random expression tree of k leaves into buf at *len; returns its top operator
 * (0 for a number). */
static char gen_tree(draws *d, int k, char *buf, size_t *len) {
    if (k == 1) {
        *len += (size_t)snprintf(buf + *len, OR1_ARITH_MAX_TEXT - *len, "%d", draw(d, 100));
        return 0;
    }
    int left = 1 + draw(d, k - 1);
    char op = "+-*"[draw(d, 3)];
    char lbuf[OR1_ARITH_MAX_TEXT], rbuf[OR1_ARITH_MAX_TEXT];
    size_t ln = 0, rn = 0;
    char lop = gen_tree(d, left, lbuf, &ln), rop = gen_tree(d, k - left, rbuf, &rn);
    bool lp = needs_parens(op, lop, false), rp = needs_parens(op, rop, true);
    *len += (size_t)snprintf(buf + *len, OR1_ARITH_MAX_TEXT - *len, "%s%s%s%c%s%s%s", lp ? "(" : "", lbuf,
                             lp ? ")" : "", op, rp ? "(" : "", rbuf, rp ? ")" : "");
    return op;
}

int or1_arith_generate(uint64_t seed, uint64_t index, int min_operands, int max_operands,
                       or1_arith_split split, or1_arith_problem *p) {
    if (min_operands < 2 || max_operands < min_operands || max_operands > OR1_ARITH_MAX_OPERANDS)
        return or1_fail("arith: operand counts must satisfy 2 <= min <= max <= %d (got %d..%d)",
                        OR1_ARITH_MAX_OPERANDS, min_operands, max_operands);
    draws d = {seed, index, 0};
    for (;;) {
        int k = min_operands + draw(&d, max_operands - min_operands + 1);
        size_t len = 0;
        gen_tree(&d, k, p->expr, &len);
        if (or1_arith_split_of(p->expr) == split) return or1_arith_eval(p->expr, &p->value);
    }
}

/* Changes one digit of |v| (the leading one never to 0), keeping the sign: a plausible slip. */
static int64_t corrupt(int64_t v, draws *d) {
    int64_t a = v < 0 ? -v : v, scale = 1;
    int digits = 1;
    while (a / scale >= 10) scale *= 10, digits++;
    int j = draw(d, digits);
    for (int i = 0; i < j; i++) scale /= 10;
    int old = (int)(a / scale % 10), lo = (j == 0 && digits > 1) ? 1 : 0;
    int nd = lo + draw(d, 9 - lo);
    if (nd >= old) nd++;
    a += (int64_t)(nd - old) * scale;
    return v < 0 ? -a : a;
}

/* A growable string. */
typedef struct {
    char *s;
    size_t n, cap;
} text;

/* Appends printf-formatted text. */
OR1_PRINTF(2, 3) static void put(text *t, const char *fmt, ...) {
    char line[128];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (t->n + (size_t)k + 1 > t->cap) {
        t->cap = 2 * (t->n + (size_t)k + 1);
        t->s = or1_realloc(t->s, t->cap);
    }
    memcpy(t->s + t->n, line, (size_t)k + 1);
    t->n += (size_t)k;
}

/* Number of decimal digits of |v|. */
static int digits_of(int64_t v) {
    int d = 1;
    for (uint64_t a = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v; a >= 10; a /= 10) d++;
    return d;
}

/* Writes "=P1+P2..." (or "=-P1-P2..." for a negative product): the partial products of a*b
 * by the digits of the factor with fewer digits, highest first, zero digits skipped. Nothing
 * when that factor has a single nonzero digit. */
static void put_partials(text *t, int64_t a, int64_t b) {
    if (a == INT64_MIN || b == INT64_MIN) return;
    int64_t x = a < 0 ? -a : a, y = b < 0 ? -b : b;
    if (digits_of(y) > digits_of(x)) {
        int64_t s = x;
        x = y, y = s;
    }
    int64_t part[20];
    int n = 0;
    for (int64_t scale = 1, r = y; r > 0; r /= 10, scale *= 10)
        if (r % 10) part[n++] = x * (r % 10) * scale;
    if (n < 2) return;
    bool neg = (a < 0) != (b < 0);
    put(t, "=");
    for (int i = n - 1; i >= 0; i--)
        put(t, neg ? "-%lld" : i == n - 1 ? "%lld" : "+%lld", (long long)part[i]);
}

int or1_arith_trace(const char *expr, const or1_arith_trace_cfg *cfg, char **out, int64_t *answer) {
    parser *p = or1_malloc(sizeof *p);
    int root = parse(p, expr), rc = root < 0 ? -1 : 0;
    text t = {0};
    draws d = {cfg->seed, cfg->stream, 0};
    put(&t, "<think>\n");
    bool lazy = cfg->guess > 0 && or1_rand_uniform(cfg->seed, cfg->stream ^ 0x6e55ULL, 0) < cfg->guess;
    for (int k = 0; rc == 0 && k < p->nn; k++) {
        node *x = &p->n[k];
        if (!x->op) continue;
        int64_t a = p->n[x->l].v, b = p->n[x->r].v;
        rc = apply(x->op, a, b, &x->v);
        if (lazy) continue;
        if (rc == 0 && cfg->noise > 0 && or1_rand_uniform(cfg->seed, cfg->stream ^ 0x70157ULL, (uint64_t)k) < cfg->noise)
            x->v = corrupt(x->v, &d);
        put(&t, b < 0 ? "%lld%c(%lld)" : "%lld%c%lld", (long long)a, x->op, (long long)b);
        if (rc == 0 && x->op == '*' && cfg->split_products) put_partials(&t, a, b);
        put(&t, "=%lld\n", (long long)x->v);
    }
    if (rc == 0 && lazy) p->n[root].v = corrupt(p->n[root].v, &d);
    if (rc == 0) {
        put(&t, "</think>\n\\boxed{%lld}", (long long)p->n[root].v);
        *answer = p->n[root].v;
        *out = t.s;
    } else {
        free(t.s);
    }
    free(p);
    return rc;
}
