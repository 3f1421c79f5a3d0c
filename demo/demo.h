/* or1 arith: the built-in demo task. Integer expressions of 2 to 4 operands (each 0..99)
 * joined by + - * with parentheses where the expression tree needs them; the answer is the
 * value under the usual precedence (* before + and -, left to right). Problems are drawn
 * deterministically from (seed, index); a hash of the expression text assigns each one to the
 * train or the test split, so the two splits never share an expression whatever the seeds.
 * A trace is the step-by-step computation a model is taught to write before its answer. */
#ifndef OR1_ARITH_H
#define OR1_ARITH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    OR1_ARITH_MAX_OPERANDS = 8, /* generator bound (the task uses 2..4) */
    OR1_ARITH_MAX_TEXT = 256,   /* longest expression the evaluator accepts, in bytes */
};

typedef enum { OR1_ARITH_TRAIN, OR1_ARITH_TEST } or1_arith_split;

/* One problem: the expression text and its value. */
typedef struct {
    char expr[OR1_ARITH_MAX_TEXT];
    int64_t value;
} or1_arith_problem;

/* The split an expression belongs to (about one in eight is test). */
or1_arith_split or1_arith_split_of(const char *expr);

/* Draws problem number `index` of the stream for seed: operand count uniform in
 * [min_operands, max_operands], operands uniform in 0..99, operators uniform over + - *,
 * a random tree shape (each node splits its operands at a uniform point). Draws again
 * (deterministically) until the expression falls in the wanted split. Fails on operand counts outside 2..OR1_ARITH_MAX_OPERANDS. */
int or1_arith_generate(uint64_t seed, uint64_t index, int min_operands, int max_operands,
                       or1_arith_split split, or1_arith_problem *p);

/* Evaluates an expression of non-negative integers, + - * and parentheses. Fails (naming
 * the byte offset) on a syntax error, nesting deeper than 32, more than 64 operands, a
 * number of more than 9 digits or a value outside int64. */
int or1_arith_eval(const char *expr, int64_t *value);

/* How traces are written. */
typedef struct {
    double noise;        /* probability that a step's result is replaced by a wrong one */
    double guess;        /* probability that the trace skips the working and guesses wrong */
    bool split_products; /* write products of multi-digit factors as partial products */
    uint64_t seed, stream; /* the noise draws */
} or1_arith_trace_cfg;

/* The step-by-step trace of expr: "<think>\n", one line "a op b=c" per operation in the
 * order precedence and parentheses give (a negative right operand in parentheses), then
 * "</think>\n\\boxed{value}". With split_products, a product whose factors both have two or
 * more digits shows the partial products of the factor with fewer digits, highest first,
 * before its value ("48*69=2880+432=3312", "-52*13=-520-156=-676"). With noise > 0 each
 * step's result is, with that probability, replaced by a wrong one (one digit changed) that
 * later steps carry on with, so the trace stays self-consistent but ends in a wrong answer.
 * With guess > 0 the whole trace is, with that probability, an answer without working:
 * "<think>\n</think>\n\\boxed{g}" where g is the value with one digit changed.
 * Writes a new string to *out (free()) and the boxed value to *answer. */
int or1_arith_trace(const char *expr, const or1_arith_trace_cfg *cfg, char **out, int64_t *answer);

#endif
