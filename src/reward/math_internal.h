/* Private parts of the math verifier: scratch arena, normaliser, parser, evaluator.
 * One mv_ctx per answer comparison; nothing here is shared between threads. */
#ifndef OR1_MATH_INTERNAL_H
#define OR1_MATH_INTERNAL_H

#include "or1/reward_math.h"

#include <complex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A bump allocator in chunks, capped in total; it never returns memory one piece at a time. */
typedef struct mv_chunk mv_chunk;
typedef struct {
    mv_chunk *head;
    size_t used_total, cap_total;
} mv_arena;

/* Expression node kinds. */
enum {
    N_NUM, N_SYM, N_PI, N_E, N_I, N_INF,
    N_ADD, N_SUB, N_MUL, N_DIV, N_POW, N_NEG, N_PM,
    N_FN, N_ROOT, N_LOG, N_FACT, N_ABS, N_FLOOR, N_CEIL, N_BINOM
};

/* Functions of one argument (N_FN). */
enum {
    F_SIN, F_COS, F_TAN, F_SEC, F_CSC, F_COT, F_ASIN, F_ACOS, F_ATAN,
    F_SINH, F_COSH, F_TANH, F_LN, F_EXP, F_SQRT
};

/* An expression node. Numbers carry their exact value when it fits (num/den). */
typedef struct mv_node mv_node;
struct mv_node {
    uint8_t kind, fn;
    bool exact;   /* N_NUM: num/den hold the value */
    bool decimal; /* N_NUM: written with a decimal point or exponent */
    bool mp;      /* N_PM: written \mp (minus first) */
    uint8_t pm;   /* N_PM: index of this +- among the expression's */
    int64_t num, den;
    double val;
    uint64_t hash; /* N_SYM: hash of the name; N_NUM: of the digits of a long integer */
    mv_node *a, *b;
};

/* Answer shapes above expressions. */
enum {
    A_EXPR, A_TEXT, A_TUPLE, A_PAIR, A_INTERVAL, A_SET, A_UNION, A_REL, A_MATRIX
};

/* Relation operators of A_REL. */
enum { R_EQ, R_LT, R_LE, R_GT, R_GE, R_NE, R_IN, R_APPROX /* parsed, then dropped */ };

/* A parsed answer: an expression, a text, or a structure of answers. */
typedef struct mv_ans mv_ans;
struct mv_ans {
    uint8_t kind;
    bool lopen, ropen; /* A_INTERVAL */
    uint8_t npm;       /* A_EXPR: number of +- signs (each doubles the answer) */
    uint8_t mask;      /* A_EXPR: which sign of each +- this answer takes */
    mv_node *expr;     /* A_EXPR */
    const char *text;  /* A_TEXT: the comparison key */
    const char *src;   /* A_EXPR: its normalised source text (src_len bytes) */
    size_t src_len;
    int n;             /* items of a structure / parts of a relation / cells of a matrix */
    mv_ans **items;
    uint8_t *ops;      /* A_REL: n - 1 operators */
    int rows, cols;    /* A_MATRIX */
};

/* State of one comparison: scratch memory and the budgets shared by its steps. */
typedef struct {
    mv_arena arena;
    const or1_math_limits *lim;
    uint64_t work;    /* node evaluations left */
    double deadline;  /* or1_now() value past which checks give up; 0 = none */
    bool bounded;     /* some bound was hit */
    bool malformed;   /* the last mv_parse failed on the syntax (not a word, not a bound) */
} mv_ctx;

void mv_ctx_init(mv_ctx *c, const or1_math_limits *lim);
void mv_ctx_free(mv_ctx *c);
/* Arena allocation, zero-filled; NULL (and c->bounded) once the cap is reached. */
void *mv_alloc(mv_ctx *c, size_t n);
/* True (and c->bounded) once the wall-clock deadline has passed. */
bool mv_expired(mv_ctx *c);

/* Normalises an answer's LaTeX into the arena (units, spacing, \left, \dfrac, \text...). */
char *mv_normalize(mv_ctx *c, const char *s, size_t n);
/* Math-Verify's unit at the end of an extracted answer (math_norm.c): cut, or kept as a factor
 * when the answer ends in whitespace; text is malloc'd, the result replaces it. */
char *mv_answer_units(char *text);
/* The string-comparison key of a normalised answer (no whitespace). */
char *mv_string_key(mv_ctx *c, const char *norm);
/* Parses a normalised answer; on any failure a text answer holding the string key. */
mv_ans *mv_parse(mv_ctx *c, const char *norm);

/* Equality of two expressions under their +- masks: exact, else numeric (see math_eval.c). */
bool mv_scalar_equal(mv_ctx *c, const mv_node *g, unsigned gmask, const mv_node *p, unsigned pmask);
/* True if d1 = k * d2 for a constant k != 0 (sign 1: k > 0; -1: k < 0; 0: any). */
bool mv_scalar_proportional(mv_ctx *c, const mv_node *d1, const mv_node *d2, int sign);
/* The sign of a constant expression (-1, 0, 1), or 2 when it has none (see math_eval.c). */
int mv_scalar_sign(mv_ctx *c, const mv_node *x);
/* Structural and mathematical equality of gold and pred. */
bool mv_ans_equal(mv_ctx *c, const mv_ans *gold, const mv_ans *pred);
/* Builds a binary node in the arena (NULL when it is full). */
mv_node *mv_node_new(mv_ctx *c, int kind, mv_node *a, mv_node *b);

/* Most parts of one extracted answer (boxes chained by "and", "or" or commas). */
#define MV_MAX_PARTS 6

/* The extracted answer: n spans of the response, read as one answer joined by commas;
 * number is set when it is a bare number taken from prose (thousands separators and a
 * decimal comma are then rewritten). */
typedef struct {
    size_t start[MV_MAX_PARTS], len[MV_MAX_PARTS];
    int n;
    bool number;
} mv_spans;

/* Extraction of the final answer from a response; false if none. When the answer is the
 * last math span, alt gets the candidate to read instead if that span does not parse (the
 * last fraction or number); otherwise alt->n is 0. */
bool mv_extract(const char *s, size_t n, mv_spans *out, mv_spans *alt);
/* The strict rule: the content of the last \boxed{...} of the answer region alone; false if
 * there is none (or1_math_limits.strict_box). */
bool mv_extract_last_box(const char *s, size_t n, mv_spans *out);

/* Equality of two answer strings; with use_strings false the string shortcut is skipped,
 * so that tests can check the mathematical path alone. *bounded reports a hit bound. */
bool mv_equal_strings(const char *gold, size_t gn, const char *pred, size_t pn,
                      const or1_math_limits *lim, bool use_strings, bool *bounded);
/* For tests: whether the normalised answer parses into a mathematical object (not text). */
bool mv_parses_as_math(const char *answer, const or1_math_limits *lim);
/* True if the parser rejects the answer as malformed LaTeX ("? just about 1", an unknown
 * command): not a word answer, and no bound cut the parse short. */
bool mv_malformed(const char *answer, const or1_math_limits *lim);

#endif
