/* Mutation test: every answer of the labelled cases, cut, spliced and sprinkled with LaTeX
 * punctuation by a fixed-seed generator, is verified against the original and against
 * another answer. Nothing may crash, leak or trip the sanitizers, every call must return
 * 0, and an unmutated answer must still equal itself.
 * Usage: test_math_fuzz CASES.jsonl [ROUNDS] */
#include "or1/core.h"
#include "or1/io.h"
#include "or1/reward_math.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"

/* xorshift64*: the fixed-seed source of mutations. */
static uint64_t next(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

/* Pieces spliced into answers: the characters and commands the parser cares about. */
static const char *const PIECES[] = {
    "{", "}", "(", ")", "[", "]", "\\{", "\\}", "\\frac", "\\sqrt", "^", "_", ",", "=", "<", "\\le",
    "\\pm", "\\cup", "\\infty", "|", "!", "\\left(", "\\right)", "\\text{", "\\begin{pmatrix}",
    "\\end{pmatrix}", "&", "\\\\", ".", "-", "e", "i", "x", "0", "9", "\\overline{", "$", "%",
    "\\boxed{", "</think>", "\xc3", "\\approx", "\\in", "1,000", "\\binom", "\\log_", "10^{10^{",
};

/* A mutated copy of s (malloc'd). */
static char *mutate(const char *s, uint64_t *seed) {
    size_t n = strlen(s), cap = 2 * n + 256, len = 0;
    char *out = or1_malloc(cap);
    int edits = 1 + (int)(next(seed) % 4);
    memcpy(out, s, n + 1);
    len = n;
    for (int e = 0; e < edits; e++) {
        size_t at = len ? next(seed) % (len + 1) : 0;
        switch (next(seed) % 3) {
        case 0: { /* delete a span */
            size_t k = at < len ? 1 + next(seed) % (len - at < 4 ? len - at : 4) : 0;
            memmove(out + at, out + at + k, len - at - k + 1);
            len -= k;
            break;
        }
        case 1: { /* insert a piece */
            const char *p = PIECES[next(seed) % (sizeof PIECES / sizeof PIECES[0])];
            size_t k = strlen(p);
            if (len + k + 1 > cap) break;
            memmove(out + at + k, out + at, len - at + 1);
            memcpy(out + at, p, k);
            len += k;
            break;
        }
        default: /* truncate */
            out[at] = '\0';
            len = at;
        }
    }
    return out;
}

/* Loads the answers, then runs the mutated verifications round by round. */
int main(int argc, char **argv) {
    if (argc < 2) return fprintf(stderr, "usage: test_math_fuzz CASES.jsonl [ROUNDS]\n"), 2;
    int rounds = argc > 2 ? atoi(argv[2]) : 8;
    or1_jsonl_reader r;
    if (or1_jsonl_open(&r, argv[1]) != 0) return fprintf(stderr, "%s\n", or1_error()), 2;
    char **answers = NULL;
    size_t n = 0;
    cJSON *row;
    while (or1_jsonl_next(&r, &row) == 1) {
        const cJSON *g = cJSON_GetObjectItemCaseSensitive(row, "gold");
        const cJSON *first = cJSON_IsArray(g) ? cJSON_GetArrayItem(g, 0) : g;
        if (cJSON_IsString(first)) {
            answers = or1_realloc(answers, (n + 1) * sizeof *answers);
            answers[n++] = or1_strdup(first->valuestring);
        }
        cJSON_Delete(row);
    }
    or1_jsonl_close(&r);
    uint64_t seed = 0x9E3779B97F4A7C15ULL;
    size_t calls = 0, accepted = 0;
    for (int round = 0; round < rounds; round++)
        for (size_t k = 0; k < n; k++) {
            char *m = mutate(answers[k], &seed);
            size_t resp_len = strlen(m) + 16;
            char *resp = or1_malloc(resp_len);
            snprintf(resp, resp_len, "\\boxed{%s}", m);
            const char *golds[2] = {answers[k], answers[(k + 1) % n]};
            or1_math_result res;
            for (int way = 0; way < 2; way++) {
                const char *response = way ? resp : m;
                if (!CHECK(or1_math_verify(response, golds, 2, NULL, &res) == 0, "error on %s: %s", response, or1_error()))
                    continue;
                accepted += res.correct;
                calls++;
                or1_math_result_free(&res);
            }
            free(m);
            free(resp);
        }
    for (size_t k = 0; k < n; k++) {
        CHECK(or1_math_equal(answers[k], answers[k], NULL), "unmutated answer not equal to itself: %s", answers[k]);
        free(answers[k]);
    }
    free(answers);
    printf("math fuzz: %zu calls on mutated answers (%zu accepted)\n", calls, accepted);
    return check_report();
}
