/* Fuzz target: --set overrides (one per input line, key=value with a YAML value) applied to
 * the repository's configs/quickstart.yaml, then the schema check and the dump of the result. */
#include "fuzz.h"

#include "or1/core.h"
#include "or1/train.h"

enum { MAX_OVERRIDES = 64 };

/* Loads the fixed config with the input's lines as overrides. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    char *text = fuzz_text(data, n);
    const char *over[MAX_OVERRIDES];
    size_t k = fuzz_lines(text, over, MAX_OVERRIDES);
    or1_train_config c;
    if (or1_train_config_load(OR1_FUZZ_ROOT "/configs/quickstart.yaml", over, k, &c) == 0) {
        free(or1_train_config_yaml(&c));
        or1_train_config_free(&c);
    }
    free(text);
    return 0;
}
