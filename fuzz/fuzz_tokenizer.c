/* Fuzz target: tokenizer.json (vocabulary, merges, added tokens, normalizer, pre-tokenizer
 * regexes, decoder, post-processor); when it loads, a fixed text is encoded with and without
 * the special-token flags and decoded back. The text holds a long run of one letter so that a
 * catastrophic pre-tokenizer regex shows up as a hang. */
#include "fuzz.h"

#include "or1/core.h"
#include "or1/tokenizer.h"

static const char sample[] = "Hello world! 123 + 4567 = x\n<|im_start|>user caf\xc3\xa9 \xe4\xbd\xa0\xe5\xa5\xbd "
                             "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa! \\boxed{42}</s>";

/* Encodes the sample with the given flags and decodes the ids both ways. */
static void round_trip(const or1_tokenizer *t, unsigned flags) {
    int32_t *ids = NULL;
    size_t n = 0, len = 0;
    if (or1_tokenizer_encode(t, sample, sizeof sample - 1, flags, &ids, &n) != 0) return;
    for (int skip = 0; skip < 2; skip++) {
        char *text = NULL;
        if (or1_tokenizer_decode(t, ids, n, skip, &text, &len) == 0) free(text);
    }
    for (size_t i = 0; i < n; i++) or1_tokenizer_token_bytes(t, ids[i], &len);
    free(ids);
}

/* Loads the input as tokenizer.json (alone in its folder) and round-trips the sample. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    const char *path = fuzz_file(data, n, "tokenizer.json");
    or1_tokenizer *t = or1_tokenizer_load(path);
    if (t) {
        int32_t bad[2] = {-1, (int32_t)or1_tokenizer_vocab_size(t)};
        char *text = NULL;
        size_t len;
        if (or1_tokenizer_decode(t, bad, 2, false, &text, &len) == 0) free(text);
        round_trip(t, OR1_TOK_ADD_SPECIAL | OR1_TOK_SPLIT_SPECIAL);
        round_trip(t, 0);
        or1_tokenizer_free(t);
    }
    unlink(path);
    return 0;
}
