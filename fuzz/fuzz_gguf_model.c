/* libFuzzer target: a GGUF file read as a model and a tokenizer (src/model/gguf.c,
 * src/tokenizer/gguf.c): the metadata turned into config.json and tokenizer.json objects and
 * validated, the vocabulary, merges, special ids and chat template loaded, and, for a config of at
 * most 2^20 parameters, every tensor found, shape-checked, dequantized and un-permuted. Seeds
 * (fuzz/corpus/gguf_model/) are the demo model's tokenizer with tiny random Llama and Qwen2 weights,
 * written by `or1 convert` in F32 and Q8_0. */
#include "fuzz.h"

#include "or1/core.h"
#include "or1/model.h"
#include "or1/tokenizer.h"

/* Parameters of a config (embedding, layers, head), as or1_model_init would allocate them. */
static double params(const or1_model_config *c) {
    double layer = (double)c->hidden * ((double)(c->heads + 2 * c->kv_heads) * c->head_dim) +
                   (double)c->heads * c->head_dim * c->hidden + 3.0 * c->hidden * c->intermediate;
    return (double)c->vocab * c->hidden * (c->tied ? 1 : 2) + c->layers * layer;
}

/* Loads the input as a GGUF tokenizer, then as a model when its config is small. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    const char *path = fuzz_file(data, n, "model.gguf");
    or1_tokenizer_free(or1_tokenizer_load(path));
    or1_model_config c;
    if (or1_model_config_read(&c, path) == 0 && params(&c) <= (1 << 20)) {
        or1_model m;
        if (or1_model_load(&m, path) == 0) or1_model_free(&m);
    }
    unlink(path);
    return 0;
}
