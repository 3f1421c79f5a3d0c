/* Fuzz target: tokenizer.json (vocabulary, merges, added tokens, normalizer, pre-tokenizer
 * regexes, decoder, post-processor); when it loads, a text is encoded with and without the
 * special-token flags and decoded back. The text is what follows the first NUL byte of the
 * input, else a fixed one holding a long run of one letter, so that a catastrophic
 * pre-tokenizer regex shows up as a hang. A text that opens with '{' is also read as JSONL
 * rows, as `or1 tokenize` reads them (or1_tokenizer_read_text: U+0000 escapes kept), and each
 * row's "text" goes the same way. */
#include "fuzz.h"

#include "or1/core.h"
#include "or1/tokenizer.h"

static const char sample[] = "Hello world! 123 + 4567 = x\n<|im_start|>user caf\xc3\xa9 \xe4\xbd\xa0\xe5\xa5\xbd "
                             "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa! \\boxed{42}</s>";

/* Encodes the text with the given flags and decodes the ids both ways. */
static void round_trip(const or1_tokenizer *t, const char *text, size_t text_len, unsigned flags) {
    int32_t *ids = NULL;
    size_t n = 0, len = 0;
    if (or1_tokenizer_encode(t, text, text_len, flags, &ids, &n) != 0) return;
    for (int skip = 0; skip < 2; skip++) {
        char *text = NULL;
        if (or1_tokenizer_decode(t, ids, n, skip, &text, &len) == 0) free(text);
    }
    for (size_t i = 0; i < n; i++) or1_tokenizer_token_bytes(t, ids[i], &len);
    free(ids);
}

/* Reads text[0, len) as JSONL rows and round-trips the "text" of each until the first bad row. */
static void row_texts(const or1_tokenizer *t, const char *text, size_t len) {
    const char *path = fuzz_file((const uint8_t *)text, len, "rows.jsonl");
    or1_jsonl_reader r;
    if (or1_jsonl_open(&r, path) == 0) {
        char *s;
        size_t n;
        while (or1_tokenizer_read_text(&r, "text", &s, &n) == 1) {
            round_trip(t, s, n, 0);
            free(s);
        }
        or1_jsonl_close(&r);
    }
    unlink(path);
}

/* Loads the input up to its first NUL as tokenizer.json (alone in its folder) and round-trips
 * the text, and the texts of its rows when it opens with '{'. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    const uint8_t *nul = memchr(data, 0, n);
    size_t json_len = nul ? (size_t)(nul - data) : n;
    const char *text = nul ? (const char *)nul + 1 : sample;
    size_t text_len = nul ? n - json_len - 1 : sizeof sample - 1;
    const char *path = fuzz_file(data, json_len, "tokenizer.json");
    or1_tokenizer *t = or1_tokenizer_load(path);
    unlink(path);
    if (t) {
        int32_t bad[2] = {-1, (int32_t)or1_tokenizer_vocab_size(t)};
        char *decoded = NULL;
        size_t len;
        if (or1_tokenizer_decode(t, bad, 2, false, &decoded, &len) == 0) free(decoded);
        round_trip(t, text, text_len, OR1_TOK_ADD_SPECIAL | OR1_TOK_SPLIT_SPECIAL);
        round_trip(t, text, text_len, 0);
        if (text_len && text[0] == '{') row_texts(t, text, text_len);
        or1_tokenizer_free(t);
    }
    return 0;
}
