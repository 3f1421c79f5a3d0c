/* libFuzzer target: the math verifier on a hostile response and ground truth (the input split
 * at its first NUL byte, or at its middle): the ground truth's reader, extraction (Math-Verify's
 * order and the strict last-box rule), normalisation, parsing, comparison. */
#include "fuzz.h"

#include "or1/core.h"
#include "or1/reward_math.h"

/* Scores one (response, ground truth) pair both ways round, and under the strict rule. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    char *text = fuzz_text(data, n);
    size_t cut = strlen(text) < n ? strlen(text) + 1 : n / 2;
    char *gold = fuzz_text(data + cut, n - cut), *resp = fuzz_text(data, cut);
    or1_math_result r;
    if (or1_math_verify_json(resp, gold, NULL, &r) == 0) or1_math_result_free(&r);
    or1_math_limits strict;
    or1_math_limits_defaults(&strict);
    strict.strict_box = true;
    if (or1_math_verify_json(resp, gold, &strict, &r) == 0) or1_math_result_free(&r);
    const char *golds[1] = {resp};
    if (or1_math_verify(gold, golds, 1, NULL, &r) == 0) or1_math_result_free(&r);
    free(text), free(gold), free(resp);
    return 0;
}
