/* Hostile and malformed inputs: huge powers, 100 KB of braces, deep nesting, oversized
 * answers and responses, sets past the item bound, invalid UTF-8, expensive comparisons
 * that must stop at the work bound; and invalid arguments of the API. Each verdict is
 * checked; the test's own time limit (tests.cmake) catches a hang. */
#include "or1/core.h"
#include "or1/reward_math.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"

/* A string of count copies of piece between prefix and suffix (malloc'd). */
static char *repeat(const char *prefix, const char *piece, size_t count, const char *suffix) {
    size_t pl = strlen(prefix), kl = strlen(piece), sl = strlen(suffix);
    char *s = or1_malloc(pl + kl * count + sl + 1), *q = s;
    memcpy(q, prefix, pl), q += pl;
    for (size_t i = 0; i < count; i++) memcpy(q, piece, kl), q += kl;
    memcpy(q, suffix, sl), q += sl;
    *q = '\0';
    return s;
}

/* Verifies response against one gold, prints the verdict and its time, and checks the verdict
 * (and, unless bounded < 0, the bound flag); returns the time taken. */
static double expect(const char *name, const char *response, const char *gold, bool correct, int bounded) {
    or1_math_result r;
    double t0 = or1_now();
    if (!CHECK(or1_math_verify(response, &gold, 1, NULL, &r) == 0, "%s: error %s", name, or1_error())) return 0;
    double dt = or1_now() - t0;
    printf("%s: correct=%d bounded=%d (%.4f s)\n", name, r.correct, r.bounded, dt);
    CHECK(r.correct == correct && (bounded < 0 || r.bounded == (bounded == 1)), "%s: want correct=%d bounded=%d", name,
          correct, bounded);
    or1_math_result_free(&r);
    return dt;
}

/* The hostile answers. */
static void hostile(void) {
    expect("power tower vs 1", "\\boxed{10^{10^{10}}}", "1", false, -1);
    expect("power tower vs other tower", "\\boxed{10^{10^{10}}}", "10^{10^{11}}", false, -1);
    expect("2^2^2^2^2^2", "\\boxed{2^{2^{2^{2^{2^{2}}}}}}", "65536", false, -1);
    expect("factorial chain", "\\boxed{3!!!!!!}", "720", false, -1);
    expect("huge binomial", "\\boxed{\\binom{10^{9}}{5\\cdot 10^{8}}}", "1", false, -1);
    char *s = repeat("\\boxed{", "{", 100000, "}");
    expect("100 KB of open braces", s, "1", false, -1);
    free(s);
    s = repeat("\\boxed{", "{", 50000, "");
    char *t = repeat(s, "}", 50001, "");
    expect("50000 nested braces", t, "1", false, 1);
    free(s), free(t);
    s = repeat("", "\\boxed{", 20000, "");
    expect("20000 unclosed boxed", s, "1", false, -1);
    free(s);
    s = repeat("\\boxed{", "(", 30000, "1}");
    expect("30000 open parentheses", s, "1", false, -1);
    free(s);
    s = repeat("\\boxed{", "\\sqrt{", 2000, "");
    t = repeat(s, "}", 2001, "");
    expect("2000 nested roots", t, "1", false, 1);
    free(s), free(t);
    s = repeat("\\boxed{", "9", 8000, "}");
    expect("8000-digit number", s, "9", false, -1);
    free(s);
    s = repeat("\\boxed{", "1+", 10000, "1}");
    expect("answer over the size bound", s, "10001", false, 1);
    free(s);
    s = repeat("\\boxed{", "1+", 3000, "1}");
    expect("3001 terms within bounds", s, "3001", true, 0);
    free(s);
    s = repeat("\\boxed{", "1,", 5000, "1}");
    t = repeat("", "1,", 5000, "2");
    expect("set past the item bound", s, t, false, -1);
    free(s), free(t);
    s = repeat("\\boxed{", "1;", 200, "1}");
    expect("semicolon groups past the item bound", s, "1", false, -1);
    free(s);
    expect("too many +-", "\\boxed{1\\pm1\\pm1\\pm1\\pm1}", "1\\pm1\\pm1\\pm1\\pm1 ", true, -1);
    s = repeat("\\boxed{", "\\begin{pmatrix}1 & 1 \\\\ 1 & 0\\end{pmatrix}", 40, "}");
    /* each product doubles the tree of a cell (its text does not grow): the work bound stops it */
    double dt = expect("product of 40 matrices", s, "\\begin{pmatrix}1 & 0 \\\\ 0 & 1\\end{pmatrix}", false, 1);
    CHECK(dt < 5.0, "product of 40 matrices took %.2f s", dt);
    free(s);
    expect("log base past 64 bits", "\\boxed{12\\log_34569012345678901234567890}", "1", false, -1);
    expect("invalid UTF-8", "\\boxed{\xff\xfe\x80}", "1", false, -1);
    expect("NUL-free control bytes", "\\boxed{\x01\x02\x03}", "\x01\x02\x03", true, -1);
}

/* Big inputs that are fine: a long response with the answer at the end, and a set whose
 * comparison is long enough to hit the work bound. */
static void big(void) {
    char *s = repeat("", "blah ", 600000, "so \\boxed{42}");
    expect("3 MB response, answer at the end", s, "42", true, -1);
    free(s);
    s = repeat("", "\\boxed{1} ", 200000, "");
    expect("200000 boxed answers", s, "1", true, -1);
    free(s);
    /* linear: 0.05 s here, 0.5 s under ASan; the quadratic scan it replaced took minutes */
    s = repeat("", "\\[ \\( ", 170000, "so 7");
    double dt = expect("340000 unclosed \\[ and \\( (1 MB), then a number", s, "7", true, -1);
    CHECK(dt < 5.0, "unclosed openers took %.2f s: the span scan is not linear", dt);
    free(s);
    s = repeat("", "\\( \\[ ", 170000, "so \\boxed{7}");
    dt = expect("340000 unclosed \\( and \\[ (1 MB), then a box", s, "7", true, -1);
    CHECK(dt < 5.0, "unclosed openers before a box took %.2f s: the span scan is not linear", dt);
    free(s);
    char piece[64], *g = or1_strdup(""), *p = or1_strdup("");
    for (int k = 0; k < 120; k++) {
        snprintf(piece, sizeof piece, "%s\\sin(x+%d)^{2}", k ? "," : "", k);
        g = or1_realloc(g, strlen(g) + strlen(piece) + 1);
        strcat(g, piece);
        snprintf(piece, sizeof piece, "%s\\sin(x+%d)^{2}", k ? "," : "", 1000 + k);
        p = or1_realloc(p, strlen(p) + strlen(piece) + 1);
        strcat(p, piece);
    }
    char *resp = repeat("\\boxed{", p, 1, "}");
    expect("120-element sets of expressions, all different", resp, g, false, -1);
    free(resp), free(p);
    p = or1_strdup("");
    for (int k = 119; k >= 0; k--) {
        snprintf(piece, sizeof piece, "%s1-\\cos(x+%d)^{2}", k < 119 ? "," : "", k);
        p = or1_realloc(p, strlen(p) + strlen(piece) + 1);
        strcat(p, piece);
    }
    resp = repeat("\\boxed{", p, 1, "}");
    expect("120-element sets in reverse order", resp, g, true, 0);
    or1_math_limits lim;
    or1_math_limits_defaults(&lim);
    lim.max_work = 20000;
    const char *gold = g;
    or1_math_result r;
    or1_math_verify(resp, &gold, 1, &lim, &r);
    CHECK(!r.correct && r.bounded, "same sets under a 20000-evaluation budget: correct=%d bounded=%d", r.correct,
          r.bounded);
    or1_math_result_free(&r);
    free(resp), free(g), free(p);
}

/* Invalid arguments fail with a message; a ground truth is read by or1_math_gold_parse's rule:
 * Skywork's JSON-encoded list of strings, a JSON string, else one answer as written. */
static void api(void) {
    or1_math_result r;
    const char *gold[] = {"1", NULL};
    CHECK(or1_math_verify(NULL, gold, 1, NULL, &r) == -1, "NULL response accepted");
    CHECK(or1_math_verify("\\boxed{1}", gold, 2, NULL, &r) == -1, "NULL gold accepted");
    static const char *const refused[][2] = {
        {"[\"1\", {}]", "element 1"}, {"[\"2\", 1]", "element 1"}, {"[\"1\", \"\"]", "empty"},
        {"[]", "must not be empty"}, {"{\"a\": 1}", "JSON object"}, {"", "empty"}, {"\"\"", "empty"},
        {"[\"a\\u0000b\"]", "U+0000"},
    };
    for (size_t k = 0; k < sizeof refused / sizeof refused[0]; k++) {
        memset(&r, 0, sizeof r);
        CHECK(or1_math_verify_json("\\boxed{1}", refused[k][0], NULL, &r) == -1 && strstr(or1_error(), refused[k][1]) &&
                  strstr(or1_error(), "ground truth"),
              "ground truth %s: want an error naming \"%s\", got \"%s\"", refused[k][0], refused[k][1], or1_error());
    }
    const struct {
        const char *truth, *response;
        bool correct;
    } read[] = {
        {"1", "\\boxed{1}", true},                  /* a plain number (verl's GSM8K rows) */
        {"72", "\\boxed{72}", true},
        {"\"1\"", "\\boxed{1}", true},             /* a JSON string: its one answer */
        {"[\"2\", \"1\"]", "\\boxed{1}", true},     /* Skywork's list: any of its answers */
        {"[1, 2]", "\\boxed{[1, 2]}", true},        /* no string inside: an interval, one answer */
        {"[1, 2]", "\\boxed{1}", false},            /* ... not the answers 1 and 2 */
        {"[0, 1)", "\\boxed{[0,1)}", true},         /* not JSON: as written */
        {"[\"1\"", "\\boxed{1}", false},           /* a cut list is text that no box equals */
        {"\"1\" or \"2\"", "\\boxed{1}", false},    /* JSON must be the whole text */
        {"\\frac{2}{2}", "\\boxed{1}", true},
        {"x^2 + 1", "\\boxed{1 + x^2}", true},
    };
    for (size_t k = 0; k < sizeof read / sizeof read[0]; k++) {
        CHECK(or1_math_verify_json(read[k].response, read[k].truth, NULL, &r) == 0 && r.correct == read[k].correct,
              "ground truth %s, response %s: want correct=%d", read[k].truth, read[k].response, read[k].correct);
        or1_math_result_free(&r);
    }
    char *e = or1_math_extract("<think>\\boxed{1}</think> The answer is \\boxed{\\frac{3}{4}}.", NULL);
    CHECK(strcmp(e, "\\frac{3}{4}") == 0, "extract gave %s", e);
    free(e);
    CHECK(or1_math_equal("0.5", "\\frac{1}{2}", NULL) && !or1_math_equal("0.5", "\\frac{1}{3}", NULL), "or1_math_equal");
}

/* Runs the three groups; the exit status is the verdict. */
int main(void) {
    hostile();
    big();
    api();
    return check_report();
}
