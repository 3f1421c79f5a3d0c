/* or1 math verifier: extracts the final answer of a response and decides whether it equals
 * one of the gold answers, the way Skywork-OR1 scores math with Math-Verify (paper §7.1).
 *
 * Extraction: the text after the first "</think>" (up to a second one, as the recipe's
 * split()[1]; the whole text when there is none); in it, in Math-Verify's order, "final answer
 * is X. I hope", the last \boxed{...} or \fbox{...} with balanced braces (with the boxes that
 * "and", "or" or a comma chain to it), "final answer ... is X", the value after an "answer"
 * anchor, the last math span (and, when it does not parse, the last fraction or number up to
 * its end, as Math-Verify tries its next candidate; both are compared), the last number; else
 * nothing. A gold written as text around its answer ($...$, a box, an "answer" phrase) is read
 * the same way.
 * Equality: equal normalised strings, else equal mathematical values: exact rational
 * arithmetic where it applies, complex floating point at fixed pseudo-random points
 * otherwise, with tuples, intervals, sets, unions, equations, inequalities and matrices
 * compared structurally.
 *
 * Every call is reentrant and thread-safe (no global mutable state) and bounded in
 * memory, work and wall-clock time by or1_math_limits: a hostile answer returns false. */
#ifndef OR1_MATH_VERIFY_H
#define OR1_MATH_VERIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bounds of one verification (all of them per call). */
typedef struct {
    size_t max_response_bytes; /* longer responses: only the last this many bytes are read */
    size_t max_answer_bytes;   /* longer extracted or gold answers compare as strings only */
    size_t max_memory_bytes;   /* scratch memory for parsing and comparing one answer pair */
    int max_depth;             /* nesting depth of brackets, braces and operators */
    uint64_t max_work;         /* expression-node evaluations per answer pair */
    double time_limit_s;       /* wall clock per call; <= 0 means no clock check */
    bool strict_box;           /* read only the content of the last \boxed{...} (no box: no answer);
                                  not a bound but how far the reading goes (or1_reward_opts) */
    bool keep_base;            /* a base subscript is part of its number (2516_9 != 2516_8); off:
                                  Math-Verify drops it (2516_9 = 2516_8 = 2516) (or1_reward_opts) */
} or1_math_limits;

/* The default bounds: 1 MiB responses, 8 KiB answers, 8 MiB scratch, depth 64,
 * 4M node evaluations and 2 s per call; Math-Verify's extraction (strict_box off). */
void or1_math_limits_defaults(or1_math_limits *l);

/* The verdict of one response. */
typedef struct {
    bool correct;     /* equals one of the gold answers */
    char *extracted;  /* the extracted answer (malloc'd, "" when none); free with or1_math_result_free */
    int matched_gold; /* index of the first gold answer it equals, -1 if none */
    bool bounded;     /* a bound (memory, work, depth, time, size) cut a check short */
} or1_math_result;

/* Scores response against n_gold gold answers. lim may be NULL (defaults). Returns 0 (the
 * verdict is in *out), or -1 with an error only for invalid arguments. */
int or1_math_verify(const char *response, const char *const *gold, size_t n_gold,
                    const or1_math_limits *lim, or1_math_result *out);

/* The gold answers of a math row's reward_model.ground_truth (or1_math_gold_parse). */
typedef struct {
    const char **answers; /* n answers, pointing into ground_truth or into json */
    size_t n;
    void *json;           /* the decoded JSON the answers live in (NULL for a plain answer) */
} or1_math_gold;

/* Reads a math ground truth, the one rule of every reader (data rows, the reward, verify-math):
 * - JSON text (the whole string) for an array that is empty or holds a string is Skywork-OR1's list form (its
 *   data scripts json.loads it to the list of accepted answers): it must be a non-empty list
 *   of non-empty strings;
 * - JSON text for a string ("\"72\"") is that one answer; JSON text for an object is refused
 *   (a code row's tests under ability math);
 * - any other text is one answer, as written: "72", "x^2+1", an interval "[1, 2]" or "[0, 1)",
 *   a JSON array of numbers (verl's GSM8K and MATH rows store the answer so, and Skywork's and
 *   verl's math rewards take a plain string as the one answer).
 * Empty text and a \u0000 escape inside the JSON forms are refused. Returns 0, or -1 with an
 * error that starts with where. Free with or1_math_gold_free. */
int or1_math_gold_parse(const char *ground_truth, const char *where, or1_math_gold *g);
void or1_math_gold_free(or1_math_gold *g);

/* Same as or1_math_verify, with the row's ground truth read by or1_math_gold_parse (an
 * unusable one is an error, -1). */
int or1_math_verify_json(const char *response, const char *ground_truth,
                         const or1_math_limits *lim, or1_math_result *out);

/* Releases the extracted answer. */
void or1_math_result_free(or1_math_result *r);

/* The answer or1_math_verify would extract from response (malloc'd; "" when none): the
 * fallback number when the last math span does not parse. */
char *or1_math_extract(const char *response, const or1_math_limits *lim);

/* True if the answer strings gold and pred are equal (no extraction: both are answers,
 * e.g. the contents of a \boxed{}). */
bool or1_math_equal(const char *gold, const char *pred, const or1_math_limits *lim);

#endif
