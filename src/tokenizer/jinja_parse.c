/* The Jinja parser: tokens into a syntax tree, by Jinja's own grammar and precedence
 * (filters and tests bind tighter than any binary operator; "not" looser than comparisons).
 * A tag or construct outside the supported subset is an error naming it and its place. */
#include "jinja.h"

#include <string.h>

/* The parser's cursor. */
typedef struct {
    jx_ctx *c;
    const jx_token *t;
    size_t n, i;
    int depth, loops;
} parser;

static jx_node *parse_expr(parser *P);
static jx_node *parse_or(parser *P);
static jx_node *parse_unary(parser *P, bool with_filter);
static jx_node *parse_primary(parser *P);
static jx_nodes parse_body(parser *P, const char *const *stops, const char **stopped);

static const jx_token *cur(parser *P) { return &P->t[P->i]; }

/* Fails at the current token. */
#define FAIL(P, ...) jx_fail((P)->c, cur(P)->line, cur(P)->col, __VA_ARGS__)

/* True when the current token is the operator op. */
static bool is_op(parser *P, const char *op) {
    const jx_token *t = cur(P);
    return t->kind == JT_OP && t->n == strlen(op) && memcmp(t->s, op, t->n) == 0;
}

/* True when the current token is the name nm. */
static bool is_name(parser *P, const char *nm) {
    const jx_token *t = cur(P);
    return t->kind == JT_NAME && t->n == strlen(nm) && memcmp(t->s, nm, t->n) == 0;
}

/* True when the token after the current one is the name nm. */
static bool next_is_name(parser *P, const char *nm) {
    const jx_token *t = &P->t[P->i + 1];
    return cur(P)->kind != JT_EOF && t->kind == JT_NAME && t->n == strlen(nm) && memcmp(t->s, nm, t->n) == 0;
}

/* Consumes operator op or fails saying what was expected. */
static void expect_op(parser *P, const char *op) {
    if (!is_op(P, op)) FAIL(P, "expected '%s'", op);
    P->i++;
}

/* Consumes a name token and returns it NUL-terminated. */
static const char *expect_name(parser *P) {
    const jx_token *t = cur(P);
    if (t->kind != JT_NAME) FAIL(P, "expected a name");
    P->i++;
    return jx_strndup(P->c, t->s, t->n);
}

/* Consumes the end of a block tag. */
static void expect_block_end(parser *P) {
    if (cur(P)->kind != JT_BLOCK_END) FAIL(P, "expected the end of the tag ('%%}')");
    P->i++;
}

/* A node of kind k placed at token t. */
static jx_node *node(parser *P, jn_kind k, const jx_token *t) {
    jx_node *x = jx_alloc(P->c, sizeof *x);
    x->kind = k;
    x->line = t->line;
    x->col = t->col;
    return x;
}

/* Appends x to a node list whose room is *cap. */
static void push(parser *P, jx_nodes *l, size_t *cap, jx_node *x) {
    if (l->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 4;
        jx_node **v = jx_alloc(P->c, nc * sizeof *v);
        if (l->n) memcpy(v, l->v, l->n * sizeof *v);
        l->v = v;
        *cap = nc;
    }
    l->v[l->n++] = x;
}

/* Appends a name to a list of names whose room is *cap. */
static void push_name(parser *P, const char ***v, size_t *n, size_t *cap, const char *s) {
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 4;
        const char **w = jx_alloc(P->c, nc * sizeof *w);
        if (*n) memcpy(w, *v, *n * sizeof *w);
        *v = w;
        *cap = nc;
    }
    (*v)[(*n)++] = s;
}

/* Guards the recursion of the parser (the template is untrusted). */
static void enter(parser *P) {
    if (++P->depth > JX_MAX_DEPTH) FAIL(P, "the template is nested too deeply");
}

/* Call arguments after "(": positional, then name=value. */
static void parse_args(parser *P, jx_node *x) {
    size_t cap = 0, kcap = 0, ncap = 0;
    expect_op(P, "(");
    while (!is_op(P, ")")) {
        if (x->args.n + x->kw.n) expect_op(P, ",");
        if (is_op(P, ")")) break;
        if (is_op(P, "*") || is_op(P, "**")) FAIL(P, "*args and **kwargs in calls are not supported");
        if (cur(P)->kind == JT_NAME && P->t[P->i + 1].kind == JT_OP && P->t[P->i + 1].n == 1 && P->t[P->i + 1].s[0] == '=') {
            push_name(P, &x->kwnames, &x->nkwnames, &ncap, expect_name(P));
            P->i++;
            push(P, &x->kw, &kcap, parse_expr(P));
        } else {
            if (x->kw.n) FAIL(P, "a positional argument after a keyword argument");
            push(P, &x->args, &cap, parse_expr(P));
        }
    }
    P->i++;
}

/* "|name(args)" filters, "is [not] name args" tests and calls after an operand. */
static jx_node *parse_filters(parser *P, jx_node *x) {
    for (;;) {
        const jx_token *t = cur(P);
        if (is_op(P, "|")) {
            P->i++;
            jx_node *f = node(P, JN_FILTER, cur(P));
            f->name = expect_name(P);
            if (!jx_filter_known(f->name)) jx_fail(P->c, f->line, f->col, "filter '%s' is not supported", f->name);
            f->a = x;
            if (is_op(P, "(")) parse_args(P, f);
            x = f;
        } else if (is_name(P, "is")) {
            P->i++;
            jx_node *f = node(P, JN_TEST, t);
            if (is_name(P, "not")) f->negate = true, P->i++;
            const jx_token *nt = cur(P);
            f->name = expect_name(P);
            if (!jx_test_known(f->name)) jx_fail(P->c, nt->line, nt->col, "test '%s' is not supported", f->name);
            f->a = x;
            jt_kind k = cur(P)->kind;
            if (is_op(P, "(")) {
                parse_args(P, f);
            } else if ((k == JT_NAME || k == JT_STRING || k == JT_INT || k == JT_FLOAT || is_op(P, "[") || is_op(P, "{")) &&
                       !is_name(P, "else") && !is_name(P, "or") && !is_name(P, "and")) {
                if (is_name(P, "is")) FAIL(P, "tests cannot be chained with 'is'");
                size_t cap = 0;
                jx_node *arg = parse_primary(P);
                push(P, &f->args, &cap, arg);
            }
            x = f;
        } else if (is_op(P, "(")) {
            jx_node *f = node(P, JN_CALL, t);
            f->a = x;
            parse_args(P, f);
            x = f;
        } else {
            return x;
        }
    }
}

/* ".name", ".0", "[index]", "[a:b:c]" and calls after a primary. */
static jx_node *parse_postfix(parser *P, jx_node *x) {
    for (;;) {
        const jx_token *t = cur(P);
        if (is_op(P, ".")) {
            P->i++;
            if (cur(P)->kind == JT_INT) {
                jx_node *f = node(P, JN_ITEM, t), *k = node(P, JN_LIT, cur(P));
                k->lit = jv_int(cur(P)->i);
                P->i++;
                f->a = x;
                f->b = k;
                x = f;
                continue;
            }
            jx_node *f = node(P, JN_ATTR, t);
            f->name = expect_name(P);
            f->a = x;
            x = f;
        } else if (is_op(P, "[")) {
            P->i++;
            jx_node *parts[3] = {NULL, NULL, NULL};
            int k = 0;
            bool slice = false;
            for (;;) {
                if (is_op(P, ":")) {
                    if (++k > 2) FAIL(P, "a slice has at most three parts");
                    slice = true;
                    P->i++;
                } else if (is_op(P, "]")) {
                    break;
                } else {
                    if (parts[k]) FAIL(P, "expected ']'");
                    parts[k] = parse_expr(P);
                    if (is_op(P, ",")) FAIL(P, "tuple subscripts are not supported");
                }
            }
            P->i++;
            jx_node *f = node(P, slice ? JN_SLICE : JN_ITEM, t);
            f->a = x;
            if (!slice && !parts[0]) jx_fail(P->c, t->line, t->col, "empty subscript");
            if (slice) {
                size_t cap = 0;
                for (int j = 0; j < 3; j++) push(P, &f->args, &cap, parts[j]);
            } else {
                f->b = parts[0];
            }
            x = f;
        } else if (is_op(P, "(")) {
            jx_node *f = node(P, JN_CALL, t);
            f->a = x;
            parse_args(P, f);
            x = f;
        } else {
            return x;
        }
    }
}

/* Literals, names, (parenthesised) expressions and tuples, [lists], {dicts}. */
static jx_node *parse_primary(parser *P) {
    enter(P);
    const jx_token *t = cur(P);
    jx_node *x;
    if (t->kind == JT_NAME) {
        P->i++;
        x = node(P, JN_LIT, t);
        const char *nm = jx_strndup(P->c, t->s, t->n);
        if (!strcmp(nm, "true") || !strcmp(nm, "True")) x->lit = jv_bool(true);
        else if (!strcmp(nm, "false") || !strcmp(nm, "False")) x->lit = jv_bool(false);
        else if (!strcmp(nm, "none") || !strcmp(nm, "None")) x->lit = jv_none();
        else x->kind = JN_NAME, x->name = nm;
    } else if (t->kind == JT_STRING) {
        jx_buf b = {0};
        while (cur(P)->kind == JT_STRING) { /* adjacent literals join, as in Python */
            jx_buf_add(P->c, &b, cur(P)->s, cur(P)->n);
            P->i++;
        }
        x = node(P, JN_LIT, t);
        x->lit = jv_str(b.s ? b.s : "", b.n);
    } else if (t->kind == JT_INT || t->kind == JT_FLOAT) {
        P->i++;
        x = node(P, JN_LIT, t);
        x->lit = t->kind == JT_INT ? jv_int(t->i) : jv_float(t->f);
    } else if (is_op(P, "(")) {
        P->i++;
        x = node(P, JN_TUPLE, t);
        size_t cap = 0;
        bool comma = false;
        while (!is_op(P, ")")) {
            if (x->args.n) expect_op(P, ","), comma = true;
            if (is_op(P, ")")) break;
            push(P, &x->args, &cap, parse_expr(P));
        }
        P->i++;
        if (x->args.n == 1 && !comma) x = x->args.v[0];
    } else if (is_op(P, "[")) {
        P->i++;
        x = node(P, JN_LIST, t);
        size_t cap = 0;
        while (!is_op(P, "]")) {
            if (x->args.n) expect_op(P, ",");
            if (is_op(P, "]")) break;
            push(P, &x->args, &cap, parse_expr(P));
        }
        P->i++;
    } else if (is_op(P, "{")) {
        P->i++;
        x = node(P, JN_DICT, t);
        size_t cap = 0;
        while (!is_op(P, "}")) {
            if (x->args.n) expect_op(P, ",");
            if (is_op(P, "}")) break;
            push(P, &x->args, &cap, parse_expr(P));
            expect_op(P, ":");
            push(P, &x->args, &cap, parse_expr(P));
        }
        P->i++;
    } else {
        FAIL(P, "unexpected %s", t->kind == JT_OP ? "operator" : t->kind == JT_EOF ? "end of template" : "end of tag");
    }
    P->depth--;
    return x;
}

/* Unary minus and plus, then postfix, then (when with_filter) filters and tests. */
static jx_node *parse_unary(parser *P, bool with_filter) {
    enter(P);
    const jx_token *t = cur(P);
    jx_node *x;
    if (is_op(P, "-") || is_op(P, "+")) {
        P->i++;
        x = node(P, t->s[0] == '-' ? JN_NEG : JN_POS, t);
        x->a = parse_unary(P, false);
    } else {
        x = parse_primary(P);
    }
    x = parse_postfix(P, x);
    if (with_filter) x = parse_filters(P, x);
    P->depth--;
    return x;
}

/* A binary node. */
static jx_node *binop(parser *P, const jx_token *t, jx_op op, jx_node *a, jx_node *b) {
    jx_node *x = node(P, JN_BINOP, t);
    x->op = op;
    x->a = a;
    x->b = b;
    return x;
}

/* "**" (left-associative in Jinja). */
static jx_node *parse_pow(parser *P) {
    jx_node *x = parse_unary(P, true);
    while (is_op(P, "**")) {
        const jx_token *t = cur(P);
        P->i++;
        x = binop(P, t, OP_POW, x, parse_unary(P, true));
    }
    return x;
}

/* "*", "/", "//", "%". */
static jx_node *parse_math2(parser *P) {
    jx_node *x = parse_pow(P);
    for (;;) {
        const jx_token *t = cur(P);
        jx_op op = is_op(P, "*") ? OP_MUL : is_op(P, "/") ? OP_DIV : is_op(P, "//") ? OP_FLOORDIV : is_op(P, "%") ? OP_MOD : OP_EQ;
        if (op == OP_EQ) return x;
        P->i++;
        x = binop(P, t, op, x, parse_pow(P));
    }
}

/* "~" (string concatenation). */
static jx_node *parse_concat(parser *P) {
    jx_node *x = parse_math2(P);
    while (is_op(P, "~")) {
        const jx_token *t = cur(P);
        P->i++;
        x = binop(P, t, OP_CONCAT, x, parse_math2(P));
    }
    return x;
}

/* "+", "-". */
static jx_node *parse_math1(parser *P) {
    jx_node *x = parse_concat(P);
    while (is_op(P, "+") || is_op(P, "-")) {
        const jx_token *t = cur(P);
        P->i++;
        x = binop(P, t, t->s[0] == '+' ? OP_ADD : OP_SUB, x, parse_concat(P));
    }
    return x;
}

/* Comparisons, chained as in Python (a < b < c), with "in" and "not in". */
static jx_node *parse_compare(parser *P) {
    const jx_token *t = cur(P);
    jx_node *first = parse_math1(P), *x = NULL;
    size_t cap = 0, nops = 0, opcap = 0;
    for (;;) {
        jx_op op;
        if (is_op(P, "==")) op = OP_EQ;
        else if (is_op(P, "!=")) op = OP_NE;
        else if (is_op(P, "<")) op = OP_LT;
        else if (is_op(P, "<=")) op = OP_LE;
        else if (is_op(P, ">")) op = OP_GT;
        else if (is_op(P, ">=")) op = OP_GE;
        else if (is_name(P, "in")) op = OP_IN;
        else if (is_name(P, "not") && next_is_name(P, "in")) op = OP_NOTIN, P->i++;
        else break;
        P->i++;
        if (!x) {
            x = node(P, JN_COMPARE, t);
            push(P, &x->args, &cap, first);
        }
        if (nops == opcap) {
            opcap = opcap ? opcap * 2 : 4;
            jx_op *o = jx_alloc(P->c, opcap * sizeof *o);
            if (nops) memcpy(o, x->ops, nops * sizeof *o);
            x->ops = o;
        }
        x->ops[nops++] = op;
        push(P, &x->args, &cap, parse_math1(P));
    }
    return x ? x : first;
}

/* "not" (looser than comparisons). */
static jx_node *parse_not(parser *P) {
    if (is_name(P, "not")) {
        enter(P);
        jx_node *x = node(P, JN_NOT, cur(P));
        P->i++;
        x->a = parse_not(P);
        P->depth--;
        return x;
    }
    return parse_compare(P);
}

/* A left-associative chain of operands (parsed by next) joined by the keyword op into kind nodes:
 * "and" and "or", one level each. */
static jx_node *parse_chain(parser *P, const char *op, jn_kind kind, jx_node *(*next)(parser *)) {
    jx_node *x = next(P);
    while (is_name(P, op)) {
        jx_node *y = node(P, kind, cur(P));
        P->i++;
        y->a = x;
        y->b = next(P);
        x = y;
    }
    return x;
}

/* "and". */
static jx_node *parse_and(parser *P) { return parse_chain(P, "and", JN_AND, parse_not); }

/* "or". */
static jx_node *parse_or(parser *P) { return parse_chain(P, "or", JN_OR, parse_and); }

/* A full expression: "a if cond else b" (the else optional: undefined). */
static jx_node *parse_expr(parser *P) {
    enter(P);
    jx_node *x = parse_or(P);
    while (is_name(P, "if")) {
        jx_node *y = node(P, JN_COND, cur(P));
        P->i++;
        y->b = x;
        y->a = parse_or(P);
        if (is_name(P, "else")) {
            P->i++;
            y->c = parse_expr(P);
        }
        x = y;
    }
    P->depth--;
    return x;
}

/* Assignment targets: "a", "a, b" (names into *names). */
static void parse_targets(parser *P, jx_node *x) {
    size_t cap = 0;
    bool paren = is_op(P, "(");
    if (paren) P->i++;
    do {
        if (x->nkwnames) P->i++;
        push_name(P, &x->kwnames, &x->nkwnames, &cap, expect_name(P));
    } while (is_op(P, ","));
    if (paren) expect_op(P, ")");
}

/* {% if %} ... {% elif %} ... {% else %} ... {% endif %} (after "if"). */
static jx_node *parse_if(parser *P, const jx_token *t) {
    static const char *const stops[] = {"elif", "else", "endif", NULL};
    jx_node *x = node(P, JN_IF, t);
    x->a = parse_expr(P);
    expect_block_end(P);
    const char *stop;
    x->body = parse_body(P, stops, &stop);
    if (!strcmp(stop, "elif")) {
        const jx_token *e = &P->t[P->i - 1];
        size_t cap = 0;
        push(P, &x->orelse, &cap, parse_if(P, e));
        return x;
    }
    expect_block_end(P);
    if (!strcmp(stop, "else")) {
        static const char *const end[] = {"endif", NULL};
        x->orelse = parse_body(P, end, &stop);
        expect_block_end(P);
    }
    return x;
}

/* {% for a[, b] in seq [if cond] %} ... [{% else %} ...] {% endfor %} (after "for"). */
static jx_node *parse_for(parser *P, const jx_token *t) {
    static const char *const stops[] = {"else", "endfor", NULL}, *const end[] = {"endfor", NULL};
    jx_node *x = node(P, JN_FOR, t);
    parse_targets(P, x);
    if (!is_name(P, "in")) FAIL(P, "expected 'in'");
    P->i++;
    x->a = parse_or(P);
    if (is_name(P, "if")) {
        P->i++;
        x->b = parse_expr(P);
    }
    if (is_name(P, "recursive")) FAIL(P, "recursive loops are not supported");
    expect_block_end(P);
    const char *stop;
    P->loops++;
    x->body = parse_body(P, stops, &stop);
    P->loops--;
    expect_block_end(P);
    if (!strcmp(stop, "else")) {
        x->orelse = parse_body(P, end, &stop);
        expect_block_end(P);
    }
    return x;
}

/* {% set a = expr %}, {% set ns.attr = expr %}, {% set a, b = expr %}, {% set a %}...{% endset %}. */
static jx_node *parse_set(parser *P, const jx_token *t) {
    jx_node *x = node(P, JN_SET, t);
    if (cur(P)->kind == JT_NAME && P->t[P->i + 1].kind == JT_OP && P->t[P->i + 1].s[0] == '.') {
        jx_node *obj = node(P, JN_NAME, cur(P));
        obj->name = expect_name(P);
        P->i++;
        x->c = obj;
        x->name = expect_name(P);
    } else {
        parse_targets(P, x);
    }
    if (is_op(P, "=")) {
        P->i++;
        x->a = parse_expr(P);
        if (is_op(P, ",")) FAIL(P, "tuple values in set are not supported; use a list");
        expect_block_end(P);
        return x;
    }
    if (x->c || x->nkwnames != 1) FAIL(P, "expected '='");
    if (is_op(P, "|")) FAIL(P, "filtered set blocks are not supported");
    static const char *const end[] = {"endset", NULL};
    const char *stop;
    expect_block_end(P);
    x->kind = JN_SET_BLOCK;
    x->body = parse_body(P, end, &stop);
    expect_block_end(P);
    return x;
}

/* {% macro name(a, b=default) %} ... {% endmacro %}. */
static jx_node *parse_macro(parser *P, const jx_token *t) {
    static const char *const end[] = {"endmacro", NULL};
    jx_node *x = node(P, JN_MACRO, t);
    x->name = expect_name(P);
    expect_op(P, "(");
    size_t ncap = 0, dcap = 0;
    while (!is_op(P, ")")) {
        if (x->nkwnames) expect_op(P, ",");
        if (is_op(P, ")")) break;
        push_name(P, &x->kwnames, &x->nkwnames, &ncap, expect_name(P));
        jx_node *def = NULL;
        if (is_op(P, "=")) {
            P->i++;
            def = parse_expr(P);
        } else if (x->kw.n && x->kw.v[x->kw.n - 1]) {
            FAIL(P, "a macro parameter without a default after one with a default");
        }
        push(P, &x->kw, &dcap, def);
    }
    P->i++;
    expect_block_end(P);
    const char *stop;
    int loops = P->loops;
    P->loops = 0;
    x->body = parse_body(P, end, &stop);
    P->loops = loops;
    expect_block_end(P);
    return x;
}

/* One {% tag %} statement (the cursor after "{%"); *stopped set instead when the tag is one
 * of stops (the cursor then after its name). */
static jx_node *parse_tag(parser *P, const char *const *stops, const char **stopped) {
    const jx_token *t = cur(P);
    if (t->kind != JT_NAME) FAIL(P, "expected a tag name");
    const char *name = jx_strndup(P->c, t->s, t->n);
    for (int i = 0; stops && stops[i]; i++)
        if (!strcmp(name, stops[i])) {
            P->i++;
            *stopped = stops[i];
            return NULL;
        }
    P->i++;
    if (!strcmp(name, "if")) return parse_if(P, t);
    if (!strcmp(name, "for")) return parse_for(P, t);
    if (!strcmp(name, "set")) return parse_set(P, t);
    if (!strcmp(name, "macro")) return parse_macro(P, t);
    if (!strcmp(name, "break") || !strcmp(name, "continue")) {
        if (!P->loops) jx_fail(P->c, t->line, t->col, "'%s' outside a loop", name);
        expect_block_end(P);
        return node(P, name[0] == 'b' ? JN_BREAK : JN_CONTINUE, t);
    }
    if (!strcmp(name, "generation")) { /* transformers' AssistantTracker: the body as it is */
        static const char *const end[] = {"endgeneration", NULL};
        const char *stop;
        expect_block_end(P);
        jx_node *x = node(P, JN_IF, t);
        x->a = node(P, JN_LIT, t);
        x->a->lit = jv_bool(true);
        x->body = parse_body(P, end, &stop);
        expect_block_end(P);
        return x;
    }
    static const char *const known[] = {"elif", "else", "endif", "endfor", "endset", "endmacro", "endgeneration", NULL};
    for (int i = 0; known[i]; i++)
        if (!strcmp(name, known[i])) jx_fail(P->c, t->line, t->col, "unexpected '%s'", name);
    jx_fail(P->c, t->line, t->col, "tag '%s' is not supported", name);
}

/* Statements up to one of the stop tags (NULL: the end of the template). */
static jx_nodes parse_body(parser *P, const char *const *stops, const char **stopped) {
    jx_nodes out = {0};
    size_t cap = 0;
    enter(P);
    for (;;) {
        const jx_token *t = cur(P);
        if (t->kind == JT_EOF) {
            if (stops) {
                size_t k = 0;
                while (stops[k + 1]) k++;
                FAIL(P, "unexpected end of template: expected '%s'", stops[k]);
            }
            break;
        }
        if (t->kind == JT_TEXT) {
            jx_node *x = node(P, JN_TEXT, t);
            x->lit = jv_str(t->s, t->n);
            push(P, &out, &cap, x);
            P->i++;
        } else if (t->kind == JT_VAR_BEGIN) {
            P->i++;
            jx_node *x = node(P, JN_OUTPUT, t);
            x->a = parse_expr(P);
            if (cur(P)->kind != JT_VAR_END) FAIL(P, "expected the end of the expression ('}}')");
            P->i++;
            push(P, &out, &cap, x);
        } else if (t->kind == JT_BLOCK_BEGIN) {
            P->i++;
            const char *stop = NULL;
            jx_node *x = parse_tag(P, stops, &stop);
            if (stop) {
                *stopped = stop;
                break;
            }
            push(P, &out, &cap, x);
        } else {
            FAIL(P, "unexpected token");
        }
    }
    P->depth--;
    return out;
}

/* The whole template as a list of statements. */
jx_nodes jx_parse(jx_ctx *c, const jx_token *t, size_t n) {
    parser P = {.c = c, .t = t, .n = n};
    return parse_body(&P, NULL, NULL);
}
