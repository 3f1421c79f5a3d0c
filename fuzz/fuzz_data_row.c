/* libFuzzer target: one dataset row (JSON, then the Skywork-OR1-RL-Data shape check, math
 * answers and code tests through the sandbox's own test parser). */
#include "fuzz.h"

#include "or1/core.h"
#include "or1/data.h"
#include "or1/io.h"

#include <cjson/cJSON.h>

/* Parses the input as one row, with and without an offline-difficulty key. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    cJSON *j = or1_json_parse((const char *)data, n, "fuzz:1");
    if (!j) return 0;
    or1_data_row r;
    if (or1_data_row_parse(j, "fuzz:1", NULL, &r) == 0) or1_data_row_free(&r);
    if (or1_data_row_parse(j, "fuzz:1", "DeepSeek-R1-Distill-Qwen-7B", &r) == 0) or1_data_row_free(&r);
    cJSON_Delete(j);
    return 0;
}
