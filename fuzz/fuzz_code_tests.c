/* Fuzz target: the code-test parser on the input as a JSON object and as a JSON string
 * holding it (the datasets' ground_truth form), and the code extractor on the raw text. */
#include "fuzz.h"

#include "or1/core.h"
#include "or1/io.h"
#include "or1/reward_sandbox.h"

#include <cjson/cJSON.h>

/* Parses one test object both ways and extracts the code block of the same text. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    char *text = fuzz_text(data, n);
    or1_code_tests t;
    cJSON *j = or1_json_parse(text, n, "fuzz:1");
    if (j && or1_code_tests_parse(j, &t, "fuzz:1") == 0) or1_code_tests_free(&t);
    cJSON_Delete(j);
    cJSON *s = cJSON_CreateString(text);
    if (s && or1_code_tests_parse(s, &t, "fuzz:1") == 0) or1_code_tests_free(&t);
    cJSON_Delete(s);
    free(or1_code_extract(text));
    free(text);
    return 0;
}
