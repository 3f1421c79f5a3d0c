/* Math verifier, step three: the value of an expression, exactly as a rational where
 * only integers, decimals and + - * / ^ are involved, otherwise in complex floating point
 * with every variable set to fixed pseudo-random values; and equality of two expressions
 * by those values, following Math-Verify's rules (a bare decimal on either side compares
 * after rounding both to 6 decimal places). */
#include "math_internal.h"

#include "or1/core.h"

#include <math.h>
#include <stdlib.h>

#define MV_POINTS 3     /* evaluation points for expressions with variables */
#define MV_REL_TOL 1e-11 /* relative tolerance of floating-point equality */

/* An exact rational number, reduced, with a positive denominator. */
typedef struct {
    int64_t n, d;
} mv_q;

/* Reduces n/d into *out; false if d is 0 or the result does not fit 64 bits. */
static bool q_make(__int128 n, __int128 d, mv_q *out) {
    if (d == 0) return false;
    if (d < 0) n = -n, d = -d;
    __int128 a = n < 0 ? -n : n, b = d;
    while (b) {
        __int128 t = a % b;
        a = b;
        b = t;
    }
    if (a > 1) n /= a, d /= a;
    if (n > INT64_MAX || n < -INT64_MAX || d > INT64_MAX) return false;
    out->n = (int64_t)n;
    out->d = (int64_t)d;
    return true;
}

/* Takes one unit of the evaluation budget; false (and bounded) when it is spent. */
static bool spend(mv_ctx *c) {
    if (c->work == 0) {
        c->bounded = true;
        return false;
    }
    c->work--;
    if ((c->work & 4095) == 0 && mv_expired(c)) {
        c->work = 0;
        return false;
    }
    return true;
}

/* The sign (+1 or -1) a +- node takes under mask. */
static int pm_sign(const mv_node *x, unsigned mask) {
    int s = (mask >> x->pm) & 1 ? -1 : 1;
    return x->mp ? -s : s;
}

/* Integer square root of a non-negative 64-bit number, or -1 if it is not a square. */
static int64_t exact_sqrt(int64_t v) {
    if (v < 0) return -1;
    int64_t r = (int64_t)sqrtl((long double)v);
    while (r > 0 && (__int128)r * r > v) r--;
    while ((__int128)(r + 1) * (r + 1) <= v) r++;
    return (__int128)r * r == v ? r : -1;
}

/* q to the integer power e (|e| <= 256), exactly; false on overflow or 0^-e. */
static bool q_pow(mv_q q, int64_t e, mv_q *out) {
    if (e < -256 || e > 256) return false;
    mv_q r = {1, 1};
    for (int64_t k = 0; k < (e < 0 ? -e : e); k++)
        if (!q_make((__int128)r.n * q.n, (__int128)r.d * q.d, &r)) return false;
    if (e < 0) return q_make(r.d, r.n, out);
    *out = r;
    return true;
}

/* The exact rational value of x under the +- mask, if it has one that fits. */
static bool exact(mv_ctx *c, const mv_node *x, unsigned mask, mv_q *out) {
    if (!x || !spend(c)) return false;
    mv_q a, b;
    switch (x->kind) {
    case N_NUM:
        return x->exact && q_make(x->num, x->den, out);
    case N_NEG:
        if (!exact(c, x->a, mask, &a)) return false;
        return q_make(-(__int128)a.n, a.d, out);
    case N_ADD:
    case N_SUB:
    case N_PM: {
        if (!exact(c, x->a, mask, &a) || !exact(c, x->b, mask, &b)) return false;
        int s = x->kind == N_ADD ? 1 : x->kind == N_SUB ? -1 : pm_sign(x, mask);
        return q_make((__int128)a.n * b.d + s * (__int128)b.n * a.d, (__int128)a.d * b.d, out);
    }
    case N_MUL:
        if (!exact(c, x->a, mask, &a) || !exact(c, x->b, mask, &b)) return false;
        return q_make((__int128)a.n * b.n, (__int128)a.d * b.d, out);
    case N_DIV:
        if (!exact(c, x->a, mask, &a) || !exact(c, x->b, mask, &b) || b.n == 0) return false;
        return q_make((__int128)a.n * b.d, (__int128)a.d * b.n, out);
    case N_POW:
        if (!exact(c, x->a, mask, &a) || !exact(c, x->b, mask, &b) || b.d != 1) return false;
        if (a.n == 0 && b.n <= 0) return false;
        return q_pow(a, b.n, out);
    case N_ABS:
        if (!exact(c, x->a, mask, &a)) return false;
        return q_make(a.n < 0 ? -(__int128)a.n : a.n, a.d, out);
    case N_FACT: {
        if (!exact(c, x->a, mask, &a) || a.d != 1 || a.n < 0 || a.n > 20) return false;
        int64_t f = 1;
        for (int64_t k = 2; k <= a.n; k++) f *= k;
        return q_make(f, 1, out);
    }
    case N_BINOM: {
        if (!exact(c, x->a, mask, &a) || !exact(c, x->b, mask, &b) || a.d != 1 || b.d != 1) return false;
        if (b.n < 0 || b.n > a.n || a.n > 66) return false;
        __int128 r = 1;
        for (int64_t k = 1; k <= b.n; k++) r = r * (a.n - b.n + k) / k;
        return q_make(r, 1, out);
    }
    case N_FLOOR:
    case N_CEIL: {
        if (!exact(c, x->a, mask, &a)) return false;
        int64_t f = a.n / a.d;
        if (a.n % a.d != 0 && (a.n < 0) == (x->kind == N_FLOOR)) f += x->kind == N_FLOOR ? -1 : 1;
        return q_make(f, 1, out);
    }
    case N_FN:
        if (x->fn != F_SQRT || !exact(c, x->a, mask, &a)) return false;
        {
            int64_t rn = exact_sqrt(a.n), rd = exact_sqrt(a.d);
            return rn >= 0 && rd > 0 && q_make(rn, rd, out);
        }
    default:
        return false;
    }
}

/* Pseudo-random value in [0.35, 1.95) of the variable with name hash h at point k. */
static double sym_value(uint64_t h, int k) {
    uint64_t z = h + 0x9E3779B97F4A7C15ULL * (uint64_t)(k + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    return 0.35 + 1.6 * (double)(z >> 11) / 9007199254740992.0;
}

/* True if z has no imaginary part. */
static bool is_real(double complex z) { return cimag(z) == 0.0; }

/* A named function of one complex argument (real functions on their real domains). */
static double complex apply_fn(int fn, double complex z) {
    double r = creal(z);
    bool real = is_real(z);
    switch (fn) {
    case F_SIN: return real ? sin(r) : csin(z);
    case F_COS: return real ? cos(r) : ccos(z);
    case F_TAN: return real ? tan(r) : ctan(z);
    case F_SEC: return real ? 1.0 / cos(r) : 1.0 / ccos(z);
    case F_CSC: return real ? 1.0 / sin(r) : 1.0 / csin(z);
    case F_COT: return real ? 1.0 / tan(r) : 1.0 / ctan(z);
    case F_ASIN: return real && fabs(r) <= 1 ? asin(r) : casin(z);
    case F_ACOS: return real && fabs(r) <= 1 ? acos(r) : cacos(z);
    case F_ATAN: return real ? atan(r) : catan(z);
    case F_SINH: return real ? sinh(r) : csinh(z);
    case F_COSH: return real ? cosh(r) : ccosh(z);
    case F_TANH: return real ? tanh(r) : ctanh(z);
    case F_LN: return real && r > 0 ? log(r) : clog(z);
    case F_EXP: return real ? exp(r) : cexp(z);
    case F_SQRT: return real && r >= 0 ? sqrt(r) : csqrt(z);
    default: return NAN;
    }
}

/* a to the power b; real where the real power is defined (odd roots of negatives too). */
static double complex power(double complex a, double complex b) {
    if (is_real(a) && is_real(b)) {
        double x = creal(a), y = creal(b);
        if (x > 0 || (x == 0 && y > 0) || y == floor(y)) return pow(x, y);
    }
    return cpow(a, b);
}

/* The n-th root, real for odd n of a negative real radicand (as a reader expects). */
static double complex root(double complex a, double complex n) {
    if (is_real(a) && is_real(n) && creal(a) < 0) {
        double k = creal(n);
        if (k == floor(k) && fmod(fabs(k), 2.0) == 1.0) return -pow(-creal(a), 1.0 / k);
    }
    return power(a, 1.0 / n);
}

/* Factorial (the gamma function), binomial, floor and ceiling on real values; NAN
 * outside their domain. */
static double complex integer_fn(int kind, double complex a, double complex b) {
    if (!is_real(a) || !is_real(b)) return NAN;
    double x = creal(a), y = creal(b);
    switch (kind) {
    case N_FACT: return x > 170 || (x < 0 && x == floor(x)) ? NAN : tgamma(x + 1);
    case N_FLOOR: return floor(x);
    case N_CEIL: return ceil(x);
    default:
        if (x == floor(x) && y == floor(y)) {
            if (y < 0 || y > x || x > 1e6) return y < 0 || (x >= 0 && y > x) ? 0 : NAN;
            return round(exp(lgamma(x + 1) - lgamma(y + 1) - lgamma(x - y + 1)));
        }
        if (x > 170 || y > 170 || x - y > 170) return NAN;
        return tgamma(x + 1) / (tgamma(y + 1) * tgamma(x - y + 1));
    }
}

/* True if the trees x and y are the same expression written the same way (the check that
 * still decides 2019! = 2019! when the value overflows); false once the work budget runs out. */
static bool same_tree(mv_ctx *c, const mv_node *x, const mv_node *y) {
    if (!x || !y) return x == y;
    if (!spend(c)) return false;
    if (x->kind != y->kind || x->fn != y->fn || x->mp != y->mp || x->pm != y->pm) return false;
    if (x->kind == N_NUM && (x->exact != y->exact || x->hash != y->hash ||
                             (x->exact ? x->num != y->num || x->den != y->den : x->val != y->val)))
        return false;
    if (x->kind == N_SYM && x->hash != y->hash) return false;
    return same_tree(c, x->a, y->a) && same_tree(c, x->b, y->b);
}

/* The complex value of x at evaluation point k under the +- mask; false when it is
 * undefined, overflows, or the budget is spent. Only \infty itself (and its negation)
 * may be infinite. */
static bool eval(mv_ctx *c, const mv_node *x, int k, unsigned mask, double complex *out) {
    if (!x || !spend(c)) return false;
    double complex a = 0, b = 0, r;
    if (x->a && !eval(c, x->a, k, mask, &a)) return false;
    if (x->b && !eval(c, x->b, k, mask, &b)) return false;
    switch (x->kind) {
    case N_NUM: r = x->exact ? (double)x->num / (double)x->den : x->val; break;
    case N_SYM: r = sym_value(x->hash, k); break;
    case N_PI: r = M_PI; break;
    case N_E: r = M_E; break;
    case N_I: r = I; break;
    case N_INF: *out = INFINITY; return true;
    case N_NEG:
        *out = cimag(a) == 0 ? -creal(a) : -a;
        return true;
    case N_ADD: r = a + b; break;
    case N_SUB: r = a - b; break;
    case N_PM: r = a + pm_sign(x, mask) * b; break;
    case N_MUL: r = a * b; break;
    case N_DIV:
        if (b == 0) return false;
        r = a / b;
        break;
    case N_POW: r = power(a, b); break;
    case N_FN: r = apply_fn(x->fn, a); break;
    case N_ROOT: r = root(a, b); break;
    case N_LOG:
        if (a == 0) return false;
        r = clog(a) / (x->b ? clog(b) : log(10.0));
        if (is_real(a) && creal(a) > 0 && (!x->b || (is_real(b) && creal(b) > 0)))
            r = log(creal(a)) / (x->b ? log(creal(b)) : log(10.0));
        break;
    case N_ABS: r = cabs(a); break;
    default: r = integer_fn(x->kind, a, b); break;
    }
    if (!isfinite(creal(r)) || !isfinite(cimag(r)) || !isfinite(creal(a)) || !isfinite(cimag(a)) ||
        !isfinite(creal(b)) || !isfinite(cimag(b)))
        return false;
    *out = cimag(r) == 0 ? creal(r) : r; /* no -0 imaginary part: it would flip branch cuts */
    return true;
}

/* True if x mentions a variable, or once the work budget runs out (the callers' numeric path
 * then fails): a computed matrix cell shares subtrees, so its tree may be far larger than
 * its text. */
static bool has_symbols(mv_ctx *c, const mv_node *x) {
    if (!x) return false;
    if (!spend(c)) return true;
    return x->kind == N_SYM || has_symbols(c, x->a) || has_symbols(c, x->b);
}

/* True if x is a bare decimal number (Math-Verify's Float), possibly negated. */
static bool bare_decimal(const mv_node *x) {
    while (x && x->kind == N_NEG) x = x->a;
    return x && x->kind == N_NUM && x->decimal;
}

/* The number of negations wrapped around x. */
static int negations(const mv_node *x) {
    int k = 0;
    for (; x && x->kind == N_NEG; x = x->a) k++;
    return k;
}

/* The integer literal under x's negations when it is too long for exact arithmetic. */
static const mv_node *bare_long_integer(const mv_node *x) {
    while (x && x->kind == N_NEG) x = x->a;
    return x && x->kind == N_NUM && !x->exact && !x->decimal ? x : NULL;
}

/* Equality after rounding both to 6 decimal places (Math-Verify's float_rounding). */
static bool rounded_eq(double a, double b) {
    if (fabs(a) < 1e12 && fabs(b) < 1e12) return llround(a * 1e6) == llround(b * 1e6);
    return fabs(a - b) <= 1e-12 * fmax(fabs(a), fabs(b));
}

/* Floating-point equality with a relative tolerance; infinities equal only themselves. */
static bool close(double complex a, double complex b) {
    if (isinf(creal(a)) || isinf(creal(b))) return creal(a) == creal(b) && cimag(a) == cimag(b);
    double scale = fmax(1.0, fmax(cabs(a), cabs(b)));
    return cabs(a - b) <= MV_REL_TOL * scale;
}

/* Scalar equality of g (under gmask) and p (under pmask). */
bool mv_scalar_equal(mv_ctx *c, const mv_node *g, unsigned gmask, const mv_node *p, unsigned pmask) {
    bool dec = bare_decimal(g) || bare_decimal(p);
    if (gmask == pmask && same_tree(c, g, p)) return true;
    const mv_node *gi = bare_long_integer(g), *pi = bare_long_integer(p);
    if (gi && pi) return gi->hash == pi->hash && negations(g) % 2 == negations(p) % 2;
    if (!has_symbols(c, g) && !has_symbols(c, p)) {
        mv_q qg, qp;
        if (exact(c, g, gmask, &qg) && exact(c, p, pmask, &qp)) {
            if (dec) return rounded_eq((double)qg.n / (double)qg.d, (double)qp.n / (double)qp.d);
            return qg.n == qp.n && qg.d == qp.d;
        }
        double complex zg, zp;
        if (!eval(c, g, 0, gmask, &zg) || !eval(c, p, 0, pmask, &zp)) return false;
        if (dec && !isinf(creal(zg)) && !isinf(creal(zp)))
            return rounded_eq(creal(zg), creal(zp)) && rounded_eq(cimag(zg), cimag(zp));
        return close(zg, zp);
    }
    int agree = 0;
    for (int k = 0; k < MV_POINTS; k++) {
        double complex zg, zp;
        if (!eval(c, g, k, gmask, &zg) || !eval(c, p, k, pmask, &zp)) {
            if (c->work == 0) return false;
            continue;
        }
        if (!close(zg, zp)) return false;
        agree++;
    }
    return agree >= 2;
}

/* The sign of a constant expression (-1, 0 or 1); 2 when it holds a variable, is not real
 * or cannot be evaluated. */
int mv_scalar_sign(mv_ctx *c, const mv_node *x) {
    double complex z;
    if (has_symbols(c, x) || !eval(c, x, 0, 0, &z) || cimag(z) != 0) return 2;
    return fabs(creal(z)) < 1e-12 ? 0 : creal(z) > 0 ? 1 : -1;
}

/* True if d1 = k * d2 for one constant k != 0 (k > 0 when sign is 1, k < 0 when -1): the
 * two sides of equal equations (2x + 4y - 3 = 0 and y = 3/4 - x/2) or inequalities. */
bool mv_scalar_proportional(mv_ctx *c, const mv_node *d1, const mv_node *d2, int sign) {
    if (!has_symbols(c, d1) && !has_symbols(c, d2)) return false;
    double complex k = 0;
    bool have_k = false;
    int agree = 0;
    for (int pt = 0; pt < MV_POINTS + 1; pt++) {
        double complex z1, z2;
        if (!eval(c, d1, pt, 0, &z1) || !eval(c, d2, pt, 0, &z2)) {
            if (c->work == 0) return false;
            continue;
        }
        if (cabs(z2) < 1e-12 || cabs(z1) < 1e-12) {
            if (cabs(z2) >= 1e-12 || cabs(z1) >= 1e-12) return false;
            agree++;
            continue;
        }
        if (!have_k) {
            k = z1 / z2;
            have_k = true;
            if (fabs(cimag(k)) > MV_REL_TOL * cabs(k) || (sign > 0 && creal(k) <= 0) || (sign < 0 && creal(k) >= 0))
                return false;
        } else if (!close(z1, k * z2)) {
            return false;
        }
        agree++;
    }
    return have_k && agree >= MV_POINTS;
}
