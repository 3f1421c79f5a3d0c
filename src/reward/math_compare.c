/* Math verifier, step four: equality of parsed answers, shape by shape, after
 * Math-Verify's rules: "x = 3" equals "3"; an equation equals any non-zero multiple of
 * itself;
 * an inequality in one variable equals the interval it describes; sets are unordered,
 * tuples ordered, a gold tuple against a predicted set keeps the written order; "(a, b)"
 * is a pair or an open interval; intervals need the same open and closed ends; a +- is
 * the set of both signs; words compare without case. */
#include "math_internal.h"

#include <ctype.h>
#include <string.h>

/* True if a is an expression made only of letters multiplied together (x, f(x), xy; the
 * letters e and i count, as Math-Verify's symbol comparison does). */
static bool only_symbols(const mv_node *x) {
    if (!x) return false;
    if (x->kind == N_SYM || x->kind == N_E || x->kind == N_I) return true;
    return x->kind == N_MUL && only_symbols(x->a) && only_symbols(x->b);
}

/* True if x names a quantity without numbers or sums: a symbol, a product or ratio of
 * them, their absolute value ("|AB|", "V_1:V_2", "\\frac{NO}{BO}"), the left side of a
 * labelled answer. */
static bool label_node(const mv_node *x) {
    if (!x) return false;
    if (x->kind == N_SYM || x->kind == N_E || x->kind == N_I) return true;
    if (x->kind == N_ABS) return label_node(x->a);
    return (x->kind == N_MUL || x->kind == N_DIV) && label_node(x->a) && label_node(x->b);
}

/* True if every operator of the relation is op. */
static bool all_ops(const mv_ans *a, int op) {
    for (int k = 0; k + 1 < a->n; k++)
        if (a->ops[k] != op) return false;
    return true;
}

/* True if a is a variable, a product of variables, or a tuple of such: the left side of
 * an assignment. */
static bool symbols_answer(const mv_ans *a) {
    if (a->kind == A_EXPR) return label_node(a->expr);
    if (a->kind != A_PAIR && a->kind != A_TUPLE) return false;
    for (int k = 0; k < a->n; k++)
        if (a->items[k]->kind != A_EXPR || !only_symbols(a->items[k]->expr)) return false;
    return true;
}

/* An assignment: "x = ..." (chains allowed), "(m, n) = (4, 2)" or "x \in S". */
static bool is_assignment(const mv_ans *a) {
    if (a->kind != A_REL || !symbols_answer(a->items[0])) return false;
    return all_ops(a, R_EQ) || (a->n == 2 && a->ops[0] == R_IN);
}

/* True if a is an equation: only '=' signs, or "x \in S" (Math-Verify reads it as x = S). */
static bool is_equation(const mv_ans *a) {
    return a->kind == A_REL && (all_ops(a, R_EQ) || (a->n == 2 && a->ops[0] == R_IN));
}

/* True for the shapes compared as collections. */
static bool is_setlike(const mv_ans *a) {
    return a->kind == A_TUPLE || a->kind == A_PAIR || a->kind == A_INTERVAL || a->kind == A_SET ||
           a->kind == A_UNION;
}

/* A new answer in the arena (NULL when it is full). */
static mv_ans *new_ans(mv_ctx *c, int kind, int n) {
    mv_ans *a = mv_alloc(c, sizeof *a);
    mv_ans **items = mv_alloc(c, sizeof *items * (size_t)(n ? n : 1));
    if (!a || !items) return NULL;
    a->kind = (uint8_t)kind;
    a->items = items;
    a->n = n;
    return a;
}

/* An expression answer for node x. */
static mv_ans *expr_ans(mv_ctx *c, mv_node *x) {
    mv_ans *a = new_ans(c, A_EXPR, 0);
    if (a) a->expr = x;
    return a;
}

/* The difference l - r of two expression answers as a node (NULL if either is no expression). */
static mv_node *difference(mv_ctx *c, const mv_ans *l, const mv_ans *r) {
    if (l->kind != A_EXPR || r->kind != A_EXPR || l->npm || r->npm) return NULL;
    return mv_node_new(c, N_SUB, l->expr, r->expr);
}

/* The operator that reads the same with both sides swapped (< for >). */
static int flipped(int op) {
    switch (op) {
    case R_LT: return R_GT;
    case R_GT: return R_LT;
    case R_LE: return R_GE;
    case R_GE: return R_LE;
    default: return op;
    }
}

/* Equality of the relations l1 op1 r1 and l2 op2 r2: the same operator and equal sides;
 * else, as Math-Verify normalises equations, differences l - r that are proportional: by
 * any non-zero constant for = and !=, a positive one for the same inequality, a negative
 * one for the swapped inequality (x < 1 and -x > -1). */
static bool relation2_equal(mv_ctx *c, int op1, const mv_ans *l1, const mv_ans *r1, int op2,
                            const mv_ans *l2, const mv_ans *r2) {
    if (op1 == op2 && mv_ans_equal(c, l1, l2) && mv_ans_equal(c, r1, r2)) return true;
    if (op1 == R_IN || op2 == R_IN) return false;
    mv_node *d1 = difference(c, l1, r1), *d2 = difference(c, l2, r2);
    if (!d1 || !d2) return false;
    if (op1 == R_EQ || op1 == R_NE) {
        if (op1 != op2) return false;
        if (mv_scalar_equal(c, d1, 0, d2, 0)) return true;
        return mv_scalar_proportional(c, d1, d2, 0);
    }
    if (op1 == op2) return mv_scalar_proportional(c, d1, d2, 1);
    return op1 == flipped(op2) && mv_scalar_proportional(c, d1, d2, -1);
}

/* Equality of two relation chains, link by link. */
static bool relation_equal(mv_ctx *c, const mv_ans *g, const mv_ans *p) {
    if (g->n != p->n) return false;
    for (int k = 0; k + 1 < g->n; k++)
        if (!relation2_equal(c, g->ops[k], g->items[k], g->items[k + 1], p->ops[k], p->items[k],
                             p->items[k + 1]))
            return false;
    return true;
}

/* The first-left-side = last-right-side form of an assignment chain. */
static mv_ans *truncate_chain(mv_ctx *c, const mv_ans *a) {
    if (a->n == 2) return (mv_ans *)a;
    mv_ans *r = new_ans(c, A_REL, 2);
    if (!r) return NULL;
    r->items[0] = a->items[0];
    r->items[1] = a->items[a->n - 1];
    r->ops = a->ops;
    return r;
}

/* One bound of an interval from an inequality: the other side, or +-infinity. */
static mv_ans *bound(mv_ctx *c, mv_ans *given, bool negative_inf) {
    if (given) return given;
    mv_node *inf = mv_node_new(c, N_INF, NULL, NULL);
    if (inf && negative_inf) inf = mv_node_new(c, N_NEG, inf, NULL);
    return inf ? expr_ans(c, inf) : NULL;
}

/* The interval from lo to hi (NULL ends: infinite) with the given open ends; NULL when the
 * arena is full. */
static mv_ans *interval_of(mv_ctx *c, mv_ans *lo, mv_ans *hi, bool lopen, bool ropen) {
    mv_ans *iv = new_ans(c, A_INTERVAL, 2);
    if (!iv) return NULL;
    iv->items[0] = bound(c, lo, true);
    iv->items[1] = bound(c, hi, false);
    iv->lopen = lopen;
    iv->ropen = ropen;
    return iv->items[0] && iv->items[1] ? iv : NULL;
}

/* The negated expression answer -a (a bound mirrored for |x|); NULL if a is no expression. */
static mv_ans *negated(mv_ctx *c, const mv_ans *a) {
    if (!a || a->kind != A_EXPR) return NULL;
    mv_node *x = mv_node_new(c, N_NEG, a->expr, NULL);
    return x ? expr_ans(c, x) : NULL;
}

/* The set where lo < |x| < hi (missing ends: no bound; open flags as read), as Math-Verify
 * solves it: (-hi, hi) when lo does not bind, else [-hi, -lo] U [lo, hi]; NULL when lo is not
 * a constant or nothing bounds |x|. */
static mv_ans *abs_set(mv_ctx *c, mv_ans *lo, mv_ans *hi, bool lopen, bool ropen) {
    int sign = !lo ? -1 : lo->kind == A_EXPR ? mv_scalar_sign(c, lo->expr) : 2;
    if (sign == 2 || (sign < 0 && !hi)) return NULL;
    if (sign < 0 || (sign == 0 && !lopen)) return interval_of(c, negated(c, hi), hi, ropen, ropen);
    mv_ans *u = new_ans(c, A_UNION, 2), *neg_lo = negated(c, lo), *neg_hi = hi ? negated(c, hi) : NULL;
    if (!u || !neg_lo || (hi && !neg_hi)) return NULL;
    u->items[0] = interval_of(c, neg_hi, neg_lo, ropen, lopen);
    u->items[1] = interval_of(c, lo, hi, lopen, ropen);
    return u->items[0] && u->items[1] ? u : NULL;
}

/* True if s[0..n) (trailing spaces aside) reads f(...): one letter applied to a bracket that
 * closes at the end. */
static bool applied(const char *s, size_t n) {
    while (n > 0 && isspace((unsigned char)s[n - 1])) n--;
    if (n < 4 || !isalpha((unsigned char)s[0]) || s[1] != '(' || s[n - 1] != ')') return false;
    int depth = 0;
    for (size_t i = 1; i < n; i++) {
        depth += s[i] == '(' ? 1 : s[i] == ')' ? -1 : 0;
        if (depth == 0 && i + 1 < n) return false;
    }
    return depth == 0;
}

/* What an inequality side is: 1 the variable (a symbol, or f(x), which Math-Verify turns
 * into one symbol before solving), 2 the absolute value of a symbol, 0 neither. */
static int variable_kind(const mv_ans *a) {
    if (a->kind != A_EXPR || !a->expr) return 0;
    const mv_node *x = a->expr;
    if (x->kind == N_SYM || (x->kind == N_MUL && x->a->kind == N_SYM && applied(a->src, a->src_len))) return 1;
    return x->kind == N_ABS && x->a && x->a->kind == N_SYM ? 2 : 0;
}

/* The set an inequality in one variable describes (x > 2, 1 <= x < 3, 1 <= |x| <= 2), or NULL. */
static mv_ans *relation_interval(mv_ctx *c, const mv_ans *r) {
    if (r->n < 2 || r->n > 3) return NULL;
    for (int k = 0; k + 1 < r->n; k++)
        if (r->ops[k] == R_EQ || r->ops[k] == R_NE || r->ops[k] == R_IN) return NULL;
    int var = -1, kind = 0;
    for (int k = 0; k < r->n; k++) {
        int v = variable_kind(r->items[k]);
        if (v) var = var < 0 ? k : 99, kind = v;
    }
    if (var < 0 || var == 99 || (r->n == 3 && var != 1)) return NULL;
    mv_ans *lo = NULL, *hi = NULL;
    bool lopen = true, ropen = true;
    for (int k = 0; k + 1 < r->n; k++) {
        int op = r->ops[k];
        bool left_is_var = k == var;
        mv_ans *other = r->items[left_is_var ? k + 1 : k];
        if (!left_is_var) op = flipped(op); /* now reads "var op other" */
        if (op == R_LT || op == R_LE) hi = other, ropen = op == R_LT;
        else lo = other, lopen = op == R_GT;
    }
    return kind == 2 ? abs_set(c, lo, hi, lopen, ropen) : interval_of(c, lo, hi, lopen, ropen);
}

/* The answers an expression with +- stands for (one per sign choice), as a set. */
static mv_ans *expand_pm(mv_ctx *c, const mv_ans *a) {
    int n = 1 << a->npm;
    mv_ans *s = new_ans(c, A_SET, n);
    if (!s) return NULL;
    for (int m = 0; m < n; m++) {
        mv_ans *e = new_ans(c, A_EXPR, 0);
        if (!e) return NULL;
        e->expr = a->expr;
        e->mask = (uint8_t)m;
        s->items[m] = e;
    }
    return s;
}

/* The set s with each +- element replaced by its sign choices ({1 \pm 2, 0} has 3 items). */
static const mv_ans *flatten_pm(mv_ctx *c, const mv_ans *s) {
    int n = 0;
    for (int k = 0; k < s->n; k++) n += s->items[k]->kind == A_EXPR ? 1 << s->items[k]->npm : 1;
    if (n == s->n) return s;
    mv_ans *f = new_ans(c, A_SET, n);
    if (!f) return NULL;
    int j = 0;
    for (int k = 0; k < s->n; k++) {
        const mv_ans *it = s->items[k];
        if (it->kind != A_EXPR || !it->npm) {
            f->items[j++] = (mv_ans *)it;
            continue;
        }
        mv_ans *e = expand_pm(c, it);
        if (!e) return NULL;
        for (int m = 0; m < e->n; m++) f->items[j++] = e->items[m];
    }
    return f;
}

/* True if every item of a equals some item of b (sets ignore repeats). */
static bool covers(mv_ctx *c, mv_ans *const *a, int an, mv_ans *const *b, int bn) {
    for (int k = 0; k < an; k++) {
        bool hit = false;
        for (int j = 0; j < bn && !hit; j++) hit = mv_ans_equal(c, a[k], b[j]);
        if (!hit) return false;
    }
    return true;
}

/* Equality of two item lists in order. */
static bool ordered_equal(mv_ctx *c, mv_ans *const *g, int gn, mv_ans *const *p, int pn) {
    if (gn != pn) return false;
    for (int k = 0; k < gn; k++)
        if (!mv_ans_equal(c, g[k], p[k])) return false;
    return true;
}

/* Equality of two item lists as multisets (greedy matching). */
static bool unordered_equal(mv_ctx *c, mv_ans *const *g, int gn, mv_ans *const *p, int pn) {
    if (gn != pn) return covers(c, g, gn, p, pn) && covers(c, p, pn, g, gn);
    bool *used = mv_alloc(c, (size_t)pn + 1);
    if (!used) return false;
    for (int k = 0; k < gn; k++) {
        int hit = -1;
        for (int j = 0; j < pn && hit < 0; j++)
            if (!used[j] && mv_ans_equal(c, g[k], p[j])) hit = j;
        if (hit < 0) return false;
        used[hit] = true;
    }
    return true;
}

/* True if the interval end a is an infinity, signed or not: such an end is open whatever its
 * bracket, as in SymPy and so in Math-Verify ((2,\infty] is (2,\infty)). */
static bool infinite_end(const mv_ans *a) {
    if (a->kind != A_EXPR || a->npm || !a->expr) return false;
    const mv_node *e = a->expr;
    while (e->kind == N_NEG) e = e->a;
    return e->kind == N_INF;
}

/* Equality of two intervals: the same ends open or closed (an infinite end is open) and equal
 * end points. */
static bool interval_equal(mv_ctx *c, const mv_ans *g, bool glo, bool gro, const mv_ans *p, bool plo,
                           bool pro) {
    glo = glo || infinite_end(g->items[0]), gro = gro || infinite_end(g->items[1]);
    plo = plo || infinite_end(p->items[0]), pro = pro || infinite_end(p->items[1]);
    return glo == plo && gro == pro && ordered_equal(c, g->items, 2, p->items, 2);
}

/* Equality when at least one side is a collection; a lone value is a one-element set. */
static bool collection_equal(mv_ctx *c, const mv_ans *g, const mv_ans *p) {
    if (!is_setlike(g)) {
        mv_ans *s = g->kind == A_EXPR && g->npm ? expand_pm(c, g) : new_ans(c, A_SET, 1);
        if (!s) return false;
        if (!(g->kind == A_EXPR && g->npm)) s->items[0] = (mv_ans *)g;
        g = s;
    }
    if (!is_setlike(p)) {
        mv_ans *s = p->kind == A_EXPR && p->npm ? expand_pm(c, p) : new_ans(c, A_SET, 1);
        if (!s) return false;
        if (!(p->kind == A_EXPR && p->npm)) s->items[0] = (mv_ans *)p;
        p = s;
    }
    if (g->kind == A_SET) g = flatten_pm(c, g);
    if (p->kind == A_SET) p = flatten_pm(c, p);
    if (!g || !p) return false;
    int gk = g->kind, pk = p->kind;
    bool g_iv = gk == A_INTERVAL || gk == A_PAIR, p_iv = pk == A_INTERVAL || pk == A_PAIR;
    if (gk == A_UNION || pk == A_UNION)
        return gk == pk && unordered_equal(c, g->items, g->n, p->items, p->n);
    if (g_iv && p_iv && (gk == A_INTERVAL || pk == A_INTERVAL))
        return interval_equal(c, g, gk == A_PAIR || g->lopen, gk == A_PAIR || g->ropen, p,
                              pk == A_PAIR || p->lopen, pk == A_PAIR || p->ropen);
    if (gk == A_INTERVAL || pk == A_INTERVAL) {
        const mv_ans *iv = gk == A_INTERVAL ? g : p;
        if (!iv->lopen || !iv->ropen) return false;
    }
    if (gk == A_SET && pk == A_SET) return unordered_equal(c, g->items, g->n, p->items, p->n);
    if (gk == A_SET) return unordered_equal(c, g->items, g->n, p->items, p->n);
    return ordered_equal(c, g->items, g->n, p->items, p->n);
}

/* Equality of two matrices of the same shape, cell by cell. */
static bool matrix_equal(mv_ctx *c, const mv_ans *g, const mv_ans *p) {
    return g->kind == A_MATRIX && p->kind == A_MATRIX && g->rows == p->rows && g->cols == p->cols &&
           ordered_equal(c, g->items, g->n, p->items, p->n);
}

/* Equality when one side is text: the other must be text with the same key, or an
 * expression made of variables whose source spells the key ("\text{east}" = "east"). */
static bool text_equal(const mv_ans *g, const mv_ans *p) {
    if (g->kind == A_TEXT && p->kind == A_TEXT) return strcmp(g->text, p->text) == 0;
    const mv_ans *t = g->kind == A_TEXT ? g : p, *e = g->kind == A_TEXT ? p : g;
    if (e->kind != A_EXPR || !only_symbols(e->expr)) return false;
    size_t j = 0, n = strlen(t->text);
    bool fold = n > 1;
    for (size_t i = 0; i < e->src_len; i++) {
        char ch = e->src[i];
        if (isspace((unsigned char)ch)) continue;
        if (fold) ch = (char)tolower((unsigned char)ch);
        if (j >= n || t->text[j++] != ch) return false;
    }
    return j == n;
}

/* Equality of gold and pred answers (see the file comment for the rules). */
bool mv_ans_equal(mv_ctx *c, const mv_ans *g, const mv_ans *p) {
    if (!g || !p || mv_expired(c)) return false;
    bool ga = is_assignment(g), pa = is_assignment(p);
    if (ga && pa) {
        g = truncate_chain(c, g);
        p = truncate_chain(c, p);
        if (!g || !p) return false;
    } else if (ga && p->kind != A_REL) {
        g = g->items[g->n - 1];
    } else if (is_equation(p) && !is_equation(g)) {
        p = p->items[p->n - 1];
    }
    if (g->kind == A_TEXT || p->kind == A_TEXT) return text_equal(g, p);
    if (g->kind == A_REL && p->kind == A_REL) return relation_equal(c, g, p);
    if (g->kind == A_REL || p->kind == A_REL) {
        const mv_ans *rel = g->kind == A_REL ? g : p, *other = g->kind == A_REL ? p : g;
        if (!is_setlike(other)) return false;
        mv_ans *iv = relation_interval(c, rel);
        if (!iv) return false;
        return rel == g ? mv_ans_equal(c, iv, other) : mv_ans_equal(c, other, iv);
    }
    if (g->kind == A_MATRIX || p->kind == A_MATRIX) return matrix_equal(c, g, p);
    if (is_setlike(g) || is_setlike(p) || g->npm || p->npm) return collection_equal(c, g, p);
    return mv_scalar_equal(c, g->expr, g->mask, p->expr, p->mask);
}
