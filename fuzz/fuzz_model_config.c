/* Fuzz target: a model's config.json (architecture, dimensions, end-of-sequence ids) and the
 * same text read as generation_config.json for its extra end-of-sequence ids. */
#include "fuzz.h"

#include "or1/core.h"
#include "or1/model.h"

/* Loads the input as config.json, then (when it loads) as generation_config.json too. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    const char *path = fuzz_file(data, n, "config.json");
    or1_model_config c;
    if (or1_model_config_load(&c, path) == 0) or1_model_config_add_generation_eos(&c, path);
    unlink(path);
    return 0;
}
