/* Fuzz target: the Jinja interpreter. The input is a template source, then optionally a NUL
 * and a JSON object of variables; the template is rendered with those variables (when they
 * parse as an object) and with a fixed conversation holding tools, tool calls and every JSON
 * type, so that mutated templates reach deep into the evaluator. */
#include "fuzz.h"

#include "or1/core.h"
#include "or1/tokenizer.h"

#include <cjson/cJSON.h>

static const char VARS[] =
    "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": \"user\", \"content\": \"2+3? é 😀\"},"
    " {\"role\": \"assistant\", \"content\": \"<think>r</think>5\", \"reasoning_content\": \"r\", \"tool_calls\":"
    " [{\"type\": \"function\", \"function\": {\"name\": \"f\", \"arguments\": {\"a\": 1, \"b\": [2.5, null, true]}}}]},"
    " {\"role\": \"tool\", \"content\": \"ok\"}], \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\","
    " \"parameters\": {\"type\": \"object\", \"properties\": {\"items\": {\"type\": \"array\"}}}}}],"
    " \"documents\": null, \"add_generation_prompt\": true, \"bos_token\": \"<s>\", \"eos_token\": \"</s>\","
    " \"enable_thinking\": false}";

/* Renders src with vars, freeing what comes back. */
static void render(const char *src, size_t len, const cJSON *vars) {
    char *out = NULL;
    size_t n;
    if (or1_jinja_render(src, len, vars, "fuzz", &out, &n) == 0 && out[n] != 0) abort(); /* NUL-terminated */
    free(out);
}

/* Splits the input at its first NUL and renders it with both sets of variables. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    static cJSON *fixed;
    if (!fixed && !(fixed = cJSON_Parse(VARS))) abort();
    const uint8_t *z = memchr(data, 0, n);
    size_t len = z ? (size_t)(z - data) : n;
    render((const char *)data, len, fixed);
    if (z) {
        cJSON *v = cJSON_ParseWithLength((const char *)z + 1, n - len - 1);
        if (cJSON_IsObject(v)) render((const char *)data, len, v);
        cJSON_Delete(v);
    }
    return 0;
}
