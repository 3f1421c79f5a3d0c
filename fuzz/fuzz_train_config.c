/* libFuzzer target: the trainer's YAML config (libyaml into the or1_yaml tree, the schema
 * check, the typed fill of or1_train_config and its YAML dump), with the input's first line
 * also tried as a --set override. */
#include "fuzz.h"

#include "or1/core.h"
#include "or1/train.h"

/* One config file (and one override) through the whole loader. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    const char *path = fuzz_file(data, n, "config.yaml");
    char *text = fuzz_text(data, n), *nl = strchr(text, '\n');
    if (nl) *nl = '\0';
    const char *over[1] = {text};
    or1_train_config c;
    for (int with_override = 0; with_override < 2; with_override++) {
        if (or1_train_config_load(path, over, with_override && strchr(text, '=') ? 1 : 0, &c) == 0) {
            free(or1_train_config_yaml(&c));
            or1_train_config_free(&c);
        }
    }
    unlink(path);
    free(text);
    return 0;
}
