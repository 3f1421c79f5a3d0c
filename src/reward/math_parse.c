/* Math verifier, step two: a recursive-descent parser from normalised LaTeX (or plain
 * text maths) to answers: expressions, tuples, intervals, sets, unions, relations and
 * matrices. It never backtracks, bounds its depth and its memory, and on any failure the
 * caller falls back to comparing strings. */
#include "math_internal.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MV_MAX_ITEMS 128 /* elements of one tuple, set or matrix */
#define MV_MAX_PM 3      /* +- signs per expression (each doubles the answer) */

typedef struct {
    mv_ctx *c;
    const char *s;
    size_t n, i;
    int depth;
    int abs_open; /* |...| bars currently open, so a bar closes instead of opening */
    int in_list;  /* inside (a, b), [a, b], {a, b}: a comma separates, never groups thousands */
    uint8_t npm;
    bool fail;
} mv_parser;

/* Named functions, with and without a backslash. */
static const struct {
    const char *name;
    uint8_t fn;
} FUNCS[] = {
    {"sin", F_SIN},     {"cos", F_COS},       {"tan", F_TAN},       {"sec", F_SEC},
    {"csc", F_CSC},     {"cot", F_COT},       {"arcsin", F_ASIN},   {"arccos", F_ACOS},
    {"arctan", F_ATAN}, {"sinh", F_SINH},     {"cosh", F_COSH},     {"tanh", F_TANH},
    {"ln", F_LN},       {"exp", F_EXP},       {"sqrt", F_SQRT},     {"tg", F_TAN},
    {"ctg", F_COT},     {"asin", F_ASIN},     {"acos", F_ACOS},     {"atan", F_ATAN},
};

/* Greek letters and other commands that name a variable. */
static const char *const GREEK[] = {
    "alpha", "beta", "gamma", "delta", "epsilon", "varepsilon", "zeta", "eta", "theta",
    "vartheta", "iota", "kappa", "lambda", "mu", "nu", "xi", "rho", "sigma", "tau",
    "upsilon", "phi", "varphi", "chi", "psi", "omega", "Gamma", "Delta", "Theta", "Lambda",
    "Xi", "Sigma", "Phi", "Psi", "Omega", "ell",
};

/* Marks the parse as failed; returns NULL for convenience. */
static void *bad(mv_parser *p) {
    p->fail = true;
    return NULL;
}

/* Skips whitespace. */
static void ws(mv_parser *p) {
    while (p->i < p->n && isspace((unsigned char)p->s[p->i])) p->i++;
}

/* The next non-space character (0 at the end). */
static char peek(mv_parser *p) {
    ws(p);
    return p->i < p->n ? p->s[p->i] : 0;
}

/* Consumes the literal text t if it comes next. */
static bool accept(mv_parser *p, const char *t) {
    ws(p);
    size_t k = strlen(t);
    if (p->i + k > p->n || strncmp(p->s + p->i, t, k) != 0) return false;
    p->i += k;
    return true;
}

/* True if the command \name comes next (not followed by another letter). */
static bool at_cmd(mv_parser *p, const char *name) {
    ws(p);
    size_t k = strlen(name);
    if (p->i + 1 + k > p->n || p->s[p->i] != '\\' || strncmp(p->s + p->i + 1, name, k) != 0) return false;
    return p->i + 1 + k == p->n || !isalpha((unsigned char)p->s[p->i + 1 + k]);
}

/* Consumes the command \name if it comes next. */
static bool accept_cmd(mv_parser *p, const char *name) {
    if (!at_cmd(p, name)) return false;
    p->i += 1 + strlen(name);
    return true;
}

/* Enters one nesting level; fails beyond the depth bound. */
static bool enter(mv_parser *p) {
    if (++p->depth > p->c->lim->max_depth || mv_expired(p->c)) {
        p->c->bounded = true;
        p->fail = true;
        return false;
    }
    return true;
}

/* A new node of the given kind with children a and b. */
mv_node *mv_node_new(mv_ctx *c, int kind, mv_node *a, mv_node *b) {
    mv_node *x = mv_alloc(c, sizeof *x);
    if (!x) return NULL;
    x->kind = (uint8_t)kind;
    x->a = a;
    x->b = b;
    return x;
}

/* A node, failing the parse when memory runs out. */
static mv_node *node(mv_parser *p, int kind, mv_node *a, mv_node *b) {
    mv_node *x = mv_node_new(p->c, kind, a, b);
    return x ? x : bad(p);
}

/* 64-bit FNV-1a hash, used to give each variable name its own pseudo-random values. */
static uint64_t fnv(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

/* A variable node named by name[0..n) plus an optional subscript and primes that follow. */
static mv_node *symbol(mv_parser *p, const char *name, size_t n) {
    char buf[96];
    size_t k = n < 48 ? n : 48;
    memcpy(buf, name, k);
    if (p->i < p->n && p->s[p->i] == '_') {
        p->i++;
        buf[k++] = '_';
        ws(p);
        if (p->i < p->n && p->s[p->i] == '{') {
            size_t j = p->i + 1;
            int d = 1;
            while (j < p->n && d > 0) {
                if (p->s[j] == '{') d++;
                if (p->s[j] == '}') d--;
                if (d > 0 && !isspace((unsigned char)p->s[j]) && k < sizeof buf - 4) buf[k++] = p->s[j];
                j++;
            }
            if (d) return bad(p);
            p->i = j;
        } else if (p->i < p->n && isalnum((unsigned char)p->s[p->i])) {
            buf[k++] = p->s[p->i++];
        } else {
            return bad(p);
        }
    }
    while (p->i < p->n && p->s[p->i] == '\'' && k < sizeof buf - 1) buf[k++] = p->s[p->i++];
    mv_node *x = node(p, N_SYM, NULL, NULL);
    if (x) x->hash = fnv(buf, k);
    return x;
}

/* Hash of an integer's digits without leading zeros: how integers too long for exact
 * arithmetic are compared (a 30-digit answer off by one must not pass as "close"). */
static uint64_t integer_hash(const char *digits) {
    while (digits[0] == '0' && digits[1]) digits++;
    return fnv(digits, strlen(digits));
}

/* Multiplies an exact accumulator by 10 and adds a digit; false on overflow. */
static bool acc_digit(int64_t *m, int digit) {
    if (*m > (INT64_MAX - digit) / 10) return false;
    *m = *m * 10 + digit;
    return true;
}

/* A repeating decimal 0.1\overline{6}: the digits m (with frac of them after the point)
 * followed by the repeating block that starts at s[i]; kept exact. */
static mv_node *repeating(mv_parser *p, size_t i, int64_t m, size_t frac, bool exact) {
    int64_t rep = 0, nines = 0;
    size_t r = 0;
    while (i < p->n && isdigit((unsigned char)p->s[i])) {
        exact = exact && acc_digit(&rep, p->s[i] - '0') && acc_digit(&nines, 9);
        r++, i++;
    }
    if (r == 0 || i >= p->n || p->s[i] != '}') return bad(p);
    p->i = i + 1;
    __int128 den = nines;
    for (size_t k = 0; k < frac && den < ((__int128)1 << 100); k++) den *= 10;
    __int128 num = (__int128)m * nines + rep;
    mv_node *x = node(p, N_NUM, NULL, NULL);
    if (!x) return NULL;
    x->exact = exact && den <= INT64_MAX && num <= INT64_MAX;
    x->num = (int64_t)(x->exact ? num : 0);
    x->den = (int64_t)(x->exact ? den : 1);
    x->val = (double)num / (double)den;
    return x;
}

/* True if s[i..n) starts with a comma and three digits that no digit follows (a thousands
 * group, or after a lone 0 a decimal comma). */
static bool comma_group(const char *s, size_t n, size_t i) {
    return i + 3 < n && s[i] == ',' && isdigit((unsigned char)s[i + 1]) && isdigit((unsigned char)s[i + 2]) &&
           isdigit((unsigned char)s[i + 3]) && (i + 4 >= n || !isdigit((unsigned char)s[i + 4]));
}

/* The end of a base subscript "_8" or "_{8}" at s[i] == '_', or 0 if digits do not follow. */
static size_t base_subscript_end(const char *s, size_t n, size_t i) {
    bool brace = i + 1 < n && s[i + 1] == '{';
    size_t k = i + 1 + brace, d = k;
    while (k < n && isdigit((unsigned char)s[k])) k++;
    if (k == d || (brace && (k >= n || s[k] != '}'))) return 0;
    return k + brace;
}

/* A number: digits with thousands commas (or spaces: "1 000"), a decimal part, an exponent, or a base
 * subscript (2516_8: dropped, as Math-Verify drops it; kept as an opaque name with keep_base). */
static mv_node *number(mv_parser *p) {
    const char *s = p->s;
    size_t i = p->i, n = p->n, start = i;
    char digits[400];
    size_t nd = 0, frac = 0;
    bool exact = true, decimal = false;
    int64_t m = 0;
    size_t group = 0;
    while (i < n && isdigit((unsigned char)s[i])) {
        if (nd < sizeof digits - 1) digits[nd++] = s[i];
        exact = exact && acc_digit(&m, s[i] - '0');
        i++, group++;
    }
    /* "0,111" is 0.111: no thousands group starts with 0 (Math-Verify's parser reads it so) */
    bool zero_comma = !p->in_list && nd == 1 && digits[0] == '0' && comma_group(s, n, i);
    while (!zero_comma && !p->in_list && group >= 1 && group <= 3 && comma_group(s, n, i)) {
        for (int k = 1; k <= 3; k++) {
            if (nd < sizeof digits - 1) digits[nd++] = s[i + k];
            exact = exact && acc_digit(&m, s[i + k] - '0');
        }
        i += 4;
        group = 3;
    }
    while (group >= 1 && group <= 3 && i + 3 < n && s[i] == ' ' && isdigit((unsigned char)s[i + 1]) &&
           isdigit((unsigned char)s[i + 2]) && isdigit((unsigned char)s[i + 3]) &&
           (i + 4 >= n || !(isdigit((unsigned char)s[i + 4]) || s[i + 4] == '.'))) {
        for (int k = 1; k <= 3; k++) {
            if (nd < sizeof digits - 1) digits[nd++] = s[i + k];
            exact = exact && acc_digit(&m, s[i + k] - '0');
        }
        i += 4;
        group = 3;
    }
    if (zero_comma || (i + 1 < n && s[i] == '.' && isdigit((unsigned char)s[i + 1]))) {
        decimal = true;
        if (nd < sizeof digits - 1) digits[nd++] = '.';
        i++;
        while (i < n && isdigit((unsigned char)s[i])) {
            if (nd < sizeof digits - 1) digits[nd++] = s[i];
            exact = exact && acc_digit(&m, s[i] - '0');
            frac++, i++;
        }
    }
    if (i + 9 < n && (s[i] == '.' || decimal) && strncmp(s + i + (s[i] == '.'), "\\overline{", 10) == 0)
        return repeating(p, i + (s[i] == '.') + 10, m, frac, exact);
    long ex = 0;
    if (i + 1 < n && (s[i] == 'e' || s[i] == 'E') &&
        (isdigit((unsigned char)s[i + 1]) ||
         (i + 2 < n && (s[i + 1] == '-' || s[i + 1] == '+') && isdigit((unsigned char)s[i + 2])))) {
        size_t k = i + 1;
        bool neg = s[k] == '-' || s[k] == '+' ? s[k++] == '-' : false;
        while (k < n && isdigit((unsigned char)s[k])) {
            if (ex < 100000) ex = ex * 10 + (s[k] - '0');
            k++;
        }
        if (neg) ex = -ex;
        decimal = true;
        i = k;
    }
    digits[nd] = '\0';
    if (nd >= sizeof digits - 1) return bad(p);
    if (i < n && s[i] == '_' && !decimal) {
        size_t e = base_subscript_end(s, n, i);
        if (p->c->lim->keep_base || !e) {
            p->i = i;
            return symbol(p, s + start, i - start);
        }
        i = e; /* Math-Verify's parser drops a base: 2516_8 is 2516 */
    }
    p->i = i;
    mv_node *x = node(p, N_NUM, NULL, NULL);
    if (!x) return NULL;
    char buf[420];
    snprintf(buf, sizeof buf, "%se%ld", digits, ex);
    x->val = strtod(buf, NULL);
    x->decimal = decimal;
    long scale = (long)frac - ex;
    int64_t den = 1;
    while (exact && scale > 0) exact = den <= INT64_MAX / 10 && (den *= 10, scale--, true);
    while (exact && scale < 0) exact = m <= INT64_MAX / 10 && (m *= 10, scale++, true);
    x->exact = exact;
    x->num = m;
    x->den = den;
    if (!exact && !decimal) x->hash = integer_hash(digits);
    return x;
}

static mv_node *expr(mv_parser *p);
static mv_node *unary(mv_parser *p);
static mv_node *power_of(mv_parser *p, mv_node *base);

/* A braced group {expr}, or for \frac-style arguments a single digit, letter or command. */
static mv_node *argument(mv_parser *p) {
    char ch = peek(p);
    if (ch == '{') {
        p->i++;
        mv_node *x = expr(p);
        if (!accept(p, "}")) return bad(p);
        return x;
    }
    if (isdigit((unsigned char)ch)) {
        mv_node *x = node(p, N_NUM, NULL, NULL);
        if (!x) return NULL;
        x->exact = true;
        x->num = p->s[p->i] - '0';
        x->den = 1;
        x->val = (double)x->num;
        p->i++;
        return x;
    }
    if (isalpha((unsigned char)ch)) {
        p->i++;
        if (ch == 'e') return node(p, N_E, NULL, NULL);
        if (ch == 'i') return node(p, N_I, NULL, NULL);
        return symbol(p, p->s + p->i - 1, 1);
    }
    if (ch == '\\') return unary(p);
    return bad(p);
}

/* A run of digits as an integer (exponents and bases: no separators, no decimals). */
static mv_node *digit_run(mv_parser *p) {
    int64_t m = 0;
    bool exact = true;
    size_t start = p->i;
    for (; p->i < p->n && isdigit((unsigned char)p->s[p->i]); p->i++) /* the index moves even once inexact */
        exact = exact && acc_digit(&m, p->s[p->i] - '0');
    mv_node *x = node(p, N_NUM, NULL, NULL);
    if (!x) return NULL;
    x->exact = exact;
    x->num = m;
    x->den = 1;
    x->val = strtod(p->s + start, NULL);
    if (!exact) x->hash = fnv(p->s + start, p->i - start);
    return x;
}

/* The exponent after '^' (or a log base after '_'): a group, a whole integer, a signed
 * exponent or one atom. */
static mv_node *exponent(mv_parser *p) {
    char ch = peek(p);
    if (ch == '{') return argument(p);
    if (isdigit((unsigned char)ch)) return digit_run(p);
    if (ch == '-' || ch == '+') {
        p->i++;
        if (!enter(p)) return NULL;
        mv_node *x = exponent(p);
        p->depth--;
        return ch == '-' ? node(p, N_NEG, x, NULL) : x;
    }
    if (ch == '(') {
        p->i++;
        mv_node *x = expr(p);
        return accept(p, ")") ? x : bad(p);
    }
    return argument(p);
}

/* The argument of a named function: a parenthesised or braced expression, else the
 * implicit product of the atoms that follow (\sin 2x is sin(2x)). */
static mv_node *fn_argument(mv_parser *p) {
    char ch = peek(p);
    if (ch == '(' || ch == '{' || ch == '[') {
        p->i++;
        mv_node *x = expr(p);
        if (!accept(p, ch == '(' ? ")" : ch == '{' ? "}" : "]")) return bad(p);
        return x;
    }
    mv_node *x = power_of(p, NULL);
    for (;;) {
        ch = peek(p);
        if (!(isalnum((unsigned char)ch) || (ch == '\\' && (at_cmd(p, "pi") || at_cmd(p, "frac") || at_cmd(p, "sqrt")))))
            return x;
        if (p->fail) return NULL;
        x = node(p, N_MUL, x, power_of(p, NULL));
    }
}

/* A named function application with an optional power (\sin^2 x) or log base. */
static mv_node *function(mv_parser *p, int fn, bool is_log) {
    mv_node *base = NULL, *pw = NULL;
    if (is_log && accept(p, "_")) base = exponent(p);
    if (accept(p, "^")) pw = exponent(p);
    mv_node *arg = fn_argument(p);
    if (p->fail) return NULL;
    mv_node *x = is_log ? node(p, N_LOG, arg, base) : node(p, N_FN, arg, NULL);
    if (x && !is_log) x->fn = (uint8_t)fn;
    return pw ? node(p, N_POW, x, pw) : x;
}

/* Looks up a function name; -1 when it is none. */
static int func_index(const char *s, size_t k) {
    for (size_t f = 0; f < sizeof FUNCS / sizeof FUNCS[0]; f++)
        if (strlen(FUNCS[f].name) == k && strncmp(s, FUNCS[f].name, k) == 0) return FUNCS[f].fn;
    return -1;
}

/* A backslash command in an expression. */
static mv_node *command(mv_parser *p) {
    const char *s = p->s + p->i + 1;
    size_t k = 0;
    while (p->i + 1 + k < p->n && isalpha((unsigned char)s[k])) k++;
    if (k == 0) return bad(p);
    p->i += 1 + k;
    if (k == 4 && !strncmp(s, "frac", 4)) {
        mv_node *a = argument(p);
        mv_node *b = argument(p);
        return p->fail ? NULL : node(p, N_DIV, a, b);
    }
    if (k == 5 && !strncmp(s, "binom", 5)) {
        mv_node *a = argument(p);
        mv_node *b = argument(p);
        return p->fail ? NULL : node(p, N_BINOM, a, b);
    }
    if (k == 4 && !strncmp(s, "sqrt", 4)) {
        mv_node *idx = NULL;
        if (accept(p, "[")) {
            idx = expr(p);
            if (!accept(p, "]")) return bad(p);
        }
        mv_node *a = argument(p);
        if (p->fail) return NULL;
        if (!idx) {
            mv_node *x = node(p, N_FN, a, NULL);
            if (x) x->fn = F_SQRT;
            return x;
        }
        return node(p, N_ROOT, a, idx);
    }
    if ((k == 2 && !strncmp(s, "pi", 2))) return node(p, N_PI, NULL, NULL);
    if ((k == 5 && !strncmp(s, "infty", 5)) || (k == 3 && !strncmp(s, "inf", 3)))
        return node(p, N_INF, NULL, NULL);
    if (k == 3 && !strncmp(s, "log", 3)) return function(p, 0, true);
    if (k == 2 && !strncmp(s, "lg", 2)) return function(p, 0, true);
    int fn = func_index(s, k);
    if (fn >= 0) return function(p, fn, false);
    if ((k == 6 && !strncmp(s, "lfloor", 6)) || (k == 5 && !strncmp(s, "lceil", 5))) {
        bool fl = k == 6;
        mv_node *a = expr(p);
        if (!accept_cmd(p, fl ? "rfloor" : "rceil")) return bad(p);
        return node(p, fl ? N_FLOOR : N_CEIL, a, NULL);
    }
    for (size_t g = 0; g < sizeof GREEK / sizeof GREEK[0]; g++)
        if (strlen(GREEK[g]) == k && strncmp(s, GREEK[g], k) == 0) return symbol(p, s - 1, k + 1);
    return bad(p);
}

/* An atom: number (with mixed fractions 1\frac{1}{2}), variable, constant, bracketed
 * expression, |absolute value|, or command. */
static mv_node *atom(mv_parser *p) {
    char ch = peek(p);
    if (!enter(p)) return NULL;
    mv_node *x = NULL;
    if (isdigit((unsigned char)ch) || (ch == '.' && p->i + 1 < p->n && isdigit((unsigned char)p->s[p->i + 1]))) {
        x = number(p);
        if (x && x->kind == N_NUM && !x->decimal && at_cmd(p, "frac")) {
            mv_node *f = command(p);
            if (f && f->a && f->b && f->a->kind == N_NUM && f->b->kind == N_NUM && !f->a->decimal && !f->b->decimal)
                x = node(p, N_ADD, x, f);
            else
                x = f ? node(p, N_MUL, x, f) : NULL;
        }
    } else if (ch == '(' || ch == '[' || ch == '{') {
        p->i++;
        int saved = p->abs_open;
        p->abs_open = 0;
        x = expr(p);
        p->abs_open = saved;
        if (!accept(p, ch == '(' ? ")" : ch == '[' ? "]" : "}")) x = bad(p);
    } else if (ch == '|') {
        p->i++;
        p->abs_open++;
        mv_node *a = expr(p);
        p->abs_open--;
        x = accept(p, "|") ? node(p, N_ABS, a, NULL) : bad(p);
    } else if (ch == '\\') {
        x = command(p);
    } else if ((unsigned char)ch >= 0x80) {
        size_t k = p->i;
        while (k < p->n && (unsigned char)p->s[k] >= 0x80) k++;
        const char *name = p->s + p->i;
        p->i = k;
        x = symbol(p, name, (size_t)(p->s + k - name));
    } else if (isalpha((unsigned char)ch)) {
        size_t k = p->i;
        while (k < p->n && isalpha((unsigned char)p->s[k])) k++;
        int fn = func_index(p->s + p->i, k - p->i);
        bool is_log = k - p->i == 3 && !strncmp(p->s + p->i, "log", 3);
        if (fn >= 0 || is_log) {
            p->i = k;
            x = function(p, fn, is_log);
        } else if (k - p->i == 2 && !strncmp(p->s + p->i, "pi", 2)) {
            p->i = k;
            x = node(p, N_PI, NULL, NULL);
        } else {
            p->i++;
            bool sub = p->i < p->n && (p->s[p->i] == '_' || p->s[p->i] == '\'');
            if (ch == 'e' && !sub) x = node(p, N_E, NULL, NULL);
            else if (ch == 'i' && !sub) x = node(p, N_I, NULL, NULL);
            else x = symbol(p, p->s + p->i - 1, 1);
        }
    } else {
        x = bad(p);
    }
    p->depth--;
    return p->fail ? NULL : x;
}

/* Postfix factorials and a right-associative power chain on base (parsed here if NULL). */
static mv_node *power_of(mv_parser *p, mv_node *base) {
    mv_node *x = base ? base : atom(p);
    if (p->fail) return NULL;
    while (p->i < p->n && p->s[p->i] == '!' && (p->i + 1 >= p->n || p->s[p->i + 1] != '=')) {
        p->i++;
        x = node(p, N_FACT, x, NULL);
    }
    if (accept(p, "^") || accept(p, "**")) {
        if (!enter(p)) return NULL;
        mv_node *e = exponent(p);
        if (!p->fail && peek(p) == '^') {
            p->i++;
            e = node(p, N_POW, e, exponent(p));
        }
        p->depth--;
        x = p->fail ? NULL : node(p, N_POW, x, e);
    }
    return x;
}

/* A signed factor: -x^2 is -(x^2). */
static mv_node *unary(mv_parser *p) {
    char ch = peek(p);
    if (ch == '-' || ch == '+') {
        p->i++;
        if (!enter(p)) return NULL;
        mv_node *x = unary(p);
        p->depth--;
        return ch == '-' ? node(p, N_NEG, x, NULL) : x;
    }
    return power_of(p, NULL);
}

/* True if the next character starts a factor of an implicit product. */
static bool starts_factor(mv_parser *p) {
    char ch = peek(p);
    if (isalnum((unsigned char)ch) || ch == '(' || ch == '{' || (unsigned char)ch >= 0x80) return true;
    if (ch == '.' && p->i + 1 < p->n && isdigit((unsigned char)p->s[p->i + 1])) return true;
    if (ch == '|') return p->abs_open == 0;
    if (ch == '[') return false;
    if (ch != '\\') return false;
    static const char *const stop[] = {"cdot", "times", "div", "pm", "mp", "le", "leq", "ge", "geq",
                                       "lt", "gt", "ne", "neq", "approx", "in", "cup", "rfloor",
                                       "rceil", "end", "leqslant", "geqslant", "equiv", "to", "rangle"};
    for (size_t k = 0; k < sizeof stop / sizeof stop[0]; k++)
        if (at_cmd(p, stop[k])) return false;
    return p->i + 1 < p->n && isalpha((unsigned char)p->s[p->i + 1]);
}

/* Products and quotients, explicit (* / \cdot \times \div) or implicit (2x, 2\sqrt{3}). */
static mv_node *term(mv_parser *p) {
    mv_node *x = unary(p);
    while (!p->fail) {
        if (accept(p, "*") || accept_cmd(p, "cdot") || accept_cmd(p, "times") || accept_cmd(p, "ast")) {
            x = node(p, N_MUL, x, unary(p));
        } else if (accept(p, "/") || accept_cmd(p, "div") || accept(p, ":")) { /* a ratio a:b is a/b */
            x = node(p, N_DIV, x, unary(p));
        } else if (starts_factor(p)) {
            x = node(p, N_MUL, x, power_of(p, NULL));
        } else {
            break;
        }
    }
    return p->fail ? NULL : x;
}

/* Sums, differences and +- (each +- is numbered so its two signs can be enumerated). */
static mv_node *expr(mv_parser *p) {
    if (!enter(p)) return NULL;
    mv_node *x;
    if (at_cmd(p, "pm") || at_cmd(p, "mp")) {
        x = node(p, N_NUM, NULL, NULL);
        if (x) x->exact = true, x->den = 1;
    } else {
        x = term(p);
    }
    while (!p->fail) {
        if (accept(p, "+")) {
            x = node(p, N_ADD, x, term(p));
        } else if (accept(p, "-")) {
            x = node(p, N_SUB, x, term(p));
        } else if (at_cmd(p, "pm") || at_cmd(p, "mp")) {
            bool mp = at_cmd(p, "mp");
            p->i += 3;
            if (p->npm >= MV_MAX_PM) return bad(p);
            x = node(p, N_PM, x, term(p));
            if (x) x->pm = p->npm++, x->mp = mp;
        } else {
            break;
        }
    }
    p->depth--;
    return p->fail ? NULL : x;
}

/* An answer holding one expression (its +- count recorded). */
static mv_ans *expr_answer(mv_parser *p) {
    uint8_t before = p->npm;
    p->npm = 0;
    ws(p);
    size_t start = p->i;
    mv_node *e = expr(p);
    if (p->fail) return NULL;
    mv_ans *a = mv_alloc(p->c, sizeof *a);
    if (!a) return bad(p);
    a->kind = A_EXPR;
    a->expr = e;
    a->npm = p->npm;
    a->src = p->s + start;
    a->src_len = p->i - start;
    p->npm = before;
    return a;
}

/* A structure answer with the given items, copied into the arena. */
static mv_ans *structure(mv_parser *p, int kind, mv_ans **items, int n) {
    mv_ans *a = mv_alloc(p->c, sizeof *a);
    mv_ans **copy = mv_alloc(p->c, sizeof *copy * (size_t)(n ? n : 1));
    if (!a || !copy) return bad(p);
    memcpy(copy, items, sizeof *copy * (size_t)n);
    a->kind = (uint8_t)kind;
    a->items = copy;
    a->n = n;
    return a;
}

static mv_ans *item(mv_parser *p);

/* Closers of item lists: one of some characters, a literal text, or a command. */
enum { CLOSE_CHARS, CLOSE_TEXT, CLOSE_CMD };

/* True if the closer comes next (not consumed). */
static bool at_close(mv_parser *p, const char *close, int how) {
    char ch = peek(p);
    if (how == CLOSE_CHARS) return ch && strchr(close, ch) != NULL;
    if (how == CLOSE_CMD) return at_cmd(p, close);
    return strncmp(p->s + p->i, close, strlen(close)) == 0;
}

/* Items separated by commas up to the closer (left for the caller); count in *n. */
static bool item_list(mv_parser *p, mv_ans **items, int *n, const char *close, int how) {
    *n = 0;
    if (at_close(p, close, how)) return true;
    p->in_list++;
    bool ok = false;
    for (;;) {
        if (*n >= MV_MAX_ITEMS) {
            p->c->bounded = true;
            bad(p);
            break;
        }
        items[(*n)++] = item(p);
        if (p->fail) break;
        if (accept(p, ",") || accept(p, ";")) continue;
        ok = at_close(p, close, how);
        if (!ok) bad(p);
        break;
    }
    p->in_list--;
    return ok;
}

/* True if the bracket at p->i encloses a comma or semicolon at its own level (a tuple or
 * interval: (0;-2;6)). */
static bool bracket_has_comma(mv_parser *p) {
    int d = 0;
    for (size_t k = p->i; k < p->n; k++) {
        char ch = p->s[k];
        if (ch == '\\' && k + 1 < p->n) {
            k++;
            continue;
        }
        if (ch == '(' || ch == '[' || ch == '{') d++;
        else if (ch == ')' || ch == ']' || ch == '}') {
            if (--d == 0) return false;
        } else if ((ch == ',' || ch == ';') && d == 1) {
            return true;
        }
    }
    return false;
}

/* A matrix environment: rows split by \\, cells by &. */
static mv_ans *matrix(mv_parser *p, const char *env, size_t envlen) {
    mv_ans *cells[MV_MAX_ITEMS];
    int n = 0, rows = 0, cols = -1, col = 0;
    for (;;) {
        if (accept(p, "\\end{")) {
            if (p->i + envlen + 1 > p->n || strncmp(p->s + p->i, env, envlen) != 0 || p->s[p->i + envlen] != '}')
                return bad(p);
            p->i += envlen + 1;
            if (col > 0) {
                if (cols >= 0 && col != cols) return bad(p);
                cols = col, rows++;
            }
            break;
        }
        if (n >= MV_MAX_ITEMS) return bad(p);
        cells[n++] = expr_answer(p);
        if (p->fail) return NULL;
        col++;
        if (accept(p, "&")) continue;
        if (accept(p, "\\\\")) {
            if (cols >= 0 && col != cols) return bad(p);
            cols = col, rows++, col = 0;
            continue;
        }
        if (!at_cmd(p, "end")) return bad(p);
    }
    if (rows == 0) return bad(p);
    mv_ans *a = structure(p, A_MATRIX, cells, n);
    if (a) a->rows = rows, a->cols = cols;
    return a;
}

/* A matrix environment after "\begin{": pmatrix, bmatrix, matrix... or array (whose
 * column specification is skipped). */
static mv_ans *environment(mv_parser *p) {
    size_t e = p->i;
    while (e < p->n && isalpha((unsigned char)p->s[e])) e++;
    if (e >= p->n || p->s[e] != '}') return bad(p);
    const char *env = p->s + p->i;
    size_t envlen = e - p->i;
    bool array = envlen == 5 && strncmp(env, "array", 5) == 0;
    if (!array && (envlen < 6 || strncmp(env + envlen - 6, "matrix", 6) != 0)) return bad(p);
    p->i = e + 1;
    if (array) {
        if (!accept(p, "{")) return bad(p);
        while (p->i < p->n && p->s[p->i] != '}') p->i++;
        if (!accept(p, "}")) return bad(p);
    }
    return matrix(p, env, envlen);
}

/* An expression cell for node x (a cell of a computed matrix). */
static mv_ans *cell(mv_parser *p, mv_node *x) {
    mv_ans *a = x ? mv_alloc(p->c, sizeof *a) : NULL;
    if (!a) return bad(p);
    a->kind = A_EXPR;
    a->expr = x;
    return a;
}

/* True if matrix m has a cell with +- (left out of matrix arithmetic). */
static bool has_pm_cell(const mv_ans *m) {
    for (int k = 0; k < m->n; k++)
        if (m->items[k]->npm) return true;
    return false;
}

/* The matrix a + b or a - b (kind N_ADD or N_SUB), cell by cell; fails unless the shapes match. */
static mv_ans *matrix_sum(mv_parser *p, const mv_ans *a, const mv_ans *b, int kind) {
    if (a->rows != b->rows || a->cols != b->cols || has_pm_cell(a) || has_pm_cell(b)) return bad(p);
    mv_ans *cells[MV_MAX_ITEMS];
    for (int k = 0; k < a->n && !p->fail; k++) cells[k] = cell(p, node(p, kind, a->items[k]->expr, b->items[k]->expr));
    mv_ans *m = p->fail ? NULL : structure(p, A_MATRIX, cells, a->n);
    if (m) m->rows = a->rows, m->cols = a->cols;
    return m;
}

/* The matrix product a b, each cell the sum of row-by-column products; fails unless a's
 * columns match b's rows and the result has at most MV_MAX_ITEMS cells. */
static mv_ans *matrix_product(mv_parser *p, const mv_ans *a, const mv_ans *b) {
    if (a->cols != b->rows || a->rows * b->cols > MV_MAX_ITEMS || has_pm_cell(a) || has_pm_cell(b)) return bad(p);
    mv_ans *cells[MV_MAX_ITEMS];
    for (int i = 0; i < a->rows; i++)
        for (int j = 0; j < b->cols && !p->fail; j++) {
            mv_node *sum = NULL;
            for (int k = 0; k < a->cols; k++) {
                mv_node *t = node(p, N_MUL, a->items[i * a->cols + k]->expr, b->items[k * b->cols + j]->expr);
                sum = sum ? node(p, N_ADD, sum, t) : t;
            }
            cells[i * b->cols + j] = cell(p, sum);
        }
    mv_ans *m = p->fail ? NULL : structure(p, A_MATRIX, cells, a->rows * b->cols);
    if (m) m->rows = a->rows, m->cols = b->cols;
    return m;
}

/* Matrix m followed by sums, differences and products (written \cdot, \times or side by
 * side) with further matrix environments, evaluated as Math-Verify evaluates them before
 * comparing; m itself when no matrix follows. */
static mv_ans *matrix_ops(mv_parser *p, mv_ans *m) {
    while (m && !p->fail) {
        size_t save = p->i;
        int kind = accept(p, "+") ? N_ADD : accept(p, "-") ? N_SUB : N_MUL;
        if (kind == N_MUL && !accept_cmd(p, "cdot")) accept_cmd(p, "times");
        if (!accept(p, "\\begin{")) {
            p->i = save;
            return m;
        }
        mv_ans *b = environment(p);
        if (!b) return NULL;
        m = kind == N_MUL ? matrix_product(p, m, b) : matrix_sum(p, m, b, kind);
    }
    return m;
}

/* A set-level atom: \{...\}, a matrix, \langle tuple\rangle, a bracketed list (tuple,
 * pair or interval), the empty set, or an expression. */
static mv_ans *set_atom(mv_parser *p) {
    mv_ans *items[MV_MAX_ITEMS];
    int n;
    char ch = peek(p);
    if (accept(p, "\\{")) {
        if (!item_list(p, items, &n, "\\}", CLOSE_TEXT)) return NULL;
        if (!accept(p, "\\}")) return bad(p);
        return structure(p, A_SET, items, n);
    }
    if (accept_cmd(p, "emptyset") || accept_cmd(p, "varnothing")) return structure(p, A_SET, items, 0);
    if (ch == '{' && bracket_has_comma(p)) {
        p->i++;
        if (!item_list(p, items, &n, "}", CLOSE_CHARS) || !accept(p, "}")) return bad(p);
        return structure(p, A_SET, items, n);
    }
    if (accept(p, "\\begin{")) return matrix_ops(p, environment(p));
    if ((ch == '[' || ch == '(') && strncmp(p->s + p->i + 1, "\\begin{", 7) == 0 && !bracket_has_comma(p)) {
        p->i++;
        mv_ans *m = accept(p, "\\begin{") ? environment(p) : bad(p);
        return m && accept(p, ch == '[' ? "]" : ")") ? m : bad(p);
    }
    if (accept_cmd(p, "langle")) {
        if (!item_list(p, items, &n, "rangle", CLOSE_CMD)) return NULL;
        accept_cmd(p, "rangle");
        return structure(p, A_TUPLE, items, n);
    }
    if ((ch == '(' || ch == '[') && bracket_has_comma(p)) {
        p->i++;
        if (!item_list(p, items, &n, ")]", CLOSE_CHARS)) return NULL;
        char close = p->s[p->i++];
        if (n == 2 && ch == '(' && close == ')') return structure(p, A_PAIR, items, 2);
        if (n == 2) {
            mv_ans *a = structure(p, A_INTERVAL, items, 2);
            if (a) a->lopen = ch == '(', a->ropen = close == ')';
            return a;
        }
        if ((ch == '(') != (close == ')')) return bad(p); /* (1,2,3]: no tuple, no interval */
        return structure(p, A_TUPLE, items, n);
    }
    return expr_answer(p);
}

/* Unions of set atoms. */
static mv_ans *set_expr(mv_parser *p) {
    mv_ans *items[MV_MAX_ITEMS];
    int n = 0;
    items[n++] = set_atom(p);
    while (!p->fail && accept_cmd(p, "cup")) {
        if (n >= MV_MAX_ITEMS) return bad(p);
        items[n++] = set_atom(p);
    }
    if (p->fail) return NULL;
    return n == 1 ? items[0] : structure(p, A_UNION, items, n);
}

/* The relation operator that comes next (consumed), or -1. */
static int relop(mv_parser *p) {
    static const struct {
        const char *t;
        int op;
        bool cmd;
    } ops[] = {
        {"<=", R_LE, false},      {">=", R_GE, false},      {"!=", R_NE, false},
        {"=", R_EQ, false},       {"<", R_LT, false},       {">", R_GT, false},
        {"leqslant", R_LE, true}, {"geqslant", R_GE, true}, {"leq", R_LE, true},
        {"geq", R_GE, true},      {"le", R_LE, true},       {"ge", R_GE, true},
        {"lt", R_LT, true},       {"gt", R_GT, true},       {"neq", R_NE, true},
        {"ne", R_NE, true},       {"approx", R_APPROX, true},   {"in", R_IN, true},
        {"equiv", R_EQ, true},
    };
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
        if (ops[k].cmd ? accept_cmd(p, ops[k].t) : accept(p, ops[k].t)) return ops[k].op;
    return -1;
}

/* True if the expression holds a number (its depth is bounded by the parser's). */
static bool has_number(const mv_node *x) {
    if (!x) return false;
    if (x->kind == N_NUM) return true;
    return has_number(x->a) || has_number(x->b);
}

/* A relation chain (a < b <= c, x = 3, x \in [1,2]) or a single set expression. */
static mv_ans *item(mv_parser *p) {
    mv_ans *parts[MV_MAX_ITEMS];
    uint8_t ops[MV_MAX_ITEMS];
    if (!enter(p)) return NULL;
    int n = 0, op;
    parts[n++] = set_expr(p);
    while (!p->fail && (op = relop(p)) >= 0) {
        bool value_first = n == 1 && parts[0] && parts[0]->kind == A_EXPR && has_number(parts[0]->expr);
        if (op == R_APPROX && (n > 1 || value_first)) { /* "1/3 \approx 0.33": the exact value counts */
            set_expr(p);
            continue;
        }
        if (op == R_APPROX) op = R_EQ; /* "x \approx 11" alone reads as x = 11 */
        if (n >= MV_MAX_ITEMS) return bad(p);
        ops[n - 1] = (uint8_t)op;
        parts[n++] = set_expr(p);
    }
    p->depth--;
    if (p->fail) return NULL;
    if (n == 1) return parts[0];
    mv_ans *a = structure(p, A_REL, parts, n);
    uint8_t *o = mv_alloc(p->c, (size_t)n);
    if (!a || !o) return bad(p);
    memcpy(o, ops, (size_t)(n - 1));
    a->ops = o;
    return a;
}

/* True if s is only letters and spaces with at least two letters (a word answer). */
static bool is_word_answer(const char *s) {
    size_t letters = 0;
    for (; *s; s++) {
        if (isalpha((unsigned char)*s) || (unsigned char)*s >= 0x80) letters++;
        else if (*s != ' ' && *s != '\'') return false;
    }
    return letters >= 2;
}

/* A text answer keyed by the string: lower-cased when longer than one character. */
static mv_ans *text_answer(mv_ctx *c, const char *norm) {
    mv_ans *a = mv_alloc(c, sizeof *a);
    char *k = mv_string_key(c, norm);
    if (!a || !k) return NULL;
    if (strlen(k) > 1)
        for (char *q = k; *q; q++) *q = (char)tolower((unsigned char)*q);
    a->kind = A_TEXT;
    a->text = k;
    return a;
}

/* The answer of k top-level items in ng groups split by semicolons (first[g]: the first item
 * of group g): one item is itself; if a group holds several items (p=5,q=2;p=7,q=2) each group
 * is a tuple and the answer the set of them, as Math-Verify's parser groups them; else a set. */
static mv_ans *grouped(mv_parser *p, mv_ans **items, int k, const int *first, int ng) {
    if (k == 1) return items[0];
    bool tuples = false;
    for (int g = 0; g < ng; g++) tuples = tuples || (g + 1 < ng ? first[g + 1] : k) - first[g] > 1;
    if (ng == 1 || !tuples) return structure(p, A_SET, items, k);
    mv_ans *groups[MV_MAX_ITEMS];
    for (int g = 0; g < ng; g++)
        if (!(groups[g] = structure(p, A_TUPLE, items + first[g], (g + 1 < ng ? first[g + 1] : k) - first[g])))
            return NULL;
    return structure(p, A_SET, groups, ng);
}

/* Parses a normalised answer: a comma list is a set; a word or anything unparsable is text. */
mv_ans *mv_parse(mv_ctx *c, const char *norm) {
    size_t n = strlen(norm);
    c->malformed = false;
    if (n == 0 || n > c->lim->max_answer_bytes) {
        if (n) c->bounded = true;
        return text_answer(c, norm);
    }
    bool fn_word = func_index(norm, n) >= 0 || !strcmp(norm, "pi");
    if (is_word_answer(norm) && !fn_word) return text_answer(c, norm);
    mv_parser p = {c, norm, n, 0, 0, 0, 0, 0, false};
    mv_ans *items[MV_MAX_ITEMS];
    int k = 0, first[MV_MAX_ITEMS + 1] = {0}, ng = 1; /* a semicolon may follow the last item */
    for (;;) {
        if (k >= MV_MAX_ITEMS) {
            p.fail = true;
            break;
        }
        items[k++] = item(&p);
        if (p.fail) break;
        if (accept(&p, ",")) continue;
        if (!accept(&p, ";")) break;
        first[ng++] = k;
    }
    if (!p.fail && peek(&p) != 0) p.fail = true;
    c->malformed = p.fail && !c->bounded;
    if (p.fail) return text_answer(c, norm);
    mv_ans *a = grouped(&p, items, k, first, ng);
    return a ? a : text_answer(c, norm);
}
