/* Unit tests of the tokenizer on a small tokenizer.json that the test writes itself:
 * BPE merges in both forms, added tokens and their flags, NFC, the post-processor
 * template, decoding of split characters, chat templates, concurrent encodes, long
 * inputs, hostile input (malformed files, invalid UTF-8), where or1 follows Hugging Face's
 * tokenizers over its own libraries' Unicode tables, and JSONL texts holding U+0000. */
#include "or1/core.h"
#include "or1/io.h"
#include "or1/tokenizer.h"

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../check.h"


static const char *dir; /* scratch directory */

/* UTF-8 of the byte-level character that stands for byte b (the GPT-2 alphabet). */
static void byte_char(int b, char *out) {
    int self = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    int cp = b;
    if (!self) {
        int k = 0;
        for (int x = 0; x < b; x++)
            if (!((x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE && x <= 0xFF))) k++;
        cp = 0x100 + k;
    }
    if (cp < 0x80) {
        out[0] = (char)cp;
        out[1] = 0;
    } else {
        out[0] = (char)(0xC0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3F));
        out[2] = 0;
    }
}

/* The merges of the small tokenizer (left, right); ids 256.. are their results. */
static const char *MERGES[][2] = {{"h", "e"},  {"l", "l"},   {"he", "ll"}, {"hell", "o"},
                                  {"Ġ", "w"},  {"Ġw", "o"},  {"a", "a"},   {"aa", "aa"},
                                  {"Ã", "©"},  {"b", "a"},   {"ba", "aa"}, {"a", "b"}};
enum { N_MERGES = sizeof MERGES / sizeof MERGES[0] };

/* Added tokens: content, special, lstrip, rstrip, single_word, normalized. */
static const struct {
    const char *content;
    int special, lstrip, rstrip, single_word, normalized;
} ADDED[] = {{"<|end|>", 1, 0, 0, 0, 0}, {"<tool>", 0, 0, 0, 0, 0}, {"[L]", 1, 1, 0, 0, 0},
             {"[R]", 1, 0, 1, 0, 0},     {"word", 0, 0, 0, 1, 0},   {"<|bos|>", 1, 0, 0, 0, 0},
             {"café", 0, 0, 0, 0, 1}};
enum { N_ADDED = sizeof ADDED / sizeof ADDED[0], FIRST_ADDED = 256 + N_MERGES };

/* The small tokenizer.json as a cJSON tree. */
static cJSON *small_json(void) {
    cJSON *root = cJSON_CreateObject(), *model = cJSON_AddObjectToObject(root, "model");
    cJSON_AddStringToObject(model, "type", "BPE");
    cJSON *vocab = cJSON_AddObjectToObject(model, "vocab");
    char c[4];
    for (int b = 0; b < 256; b++) {
        byte_char(b, c);
        cJSON_AddNumberToObject(vocab, c, b);
    }
    cJSON *merges = cJSON_AddArrayToObject(model, "merges");
    for (int i = 0; i < N_MERGES; i++) {
        char joined[64];
        snprintf(joined, sizeof joined, "%s%s", MERGES[i][0], MERGES[i][1]);
        cJSON_AddNumberToObject(vocab, joined, 256 + i);
        if (i % 2 == 0) { /* "a b" form */
            char s[64];
            snprintf(s, sizeof s, "%s %s", MERGES[i][0], MERGES[i][1]);
            cJSON_AddItemToArray(merges, cJSON_CreateString(s));
        } else { /* ["a", "b"] form */
            cJSON *pair = cJSON_CreateArray();
            cJSON_AddItemToArray(pair, cJSON_CreateString(MERGES[i][0]));
            cJSON_AddItemToArray(pair, cJSON_CreateString(MERGES[i][1]));
            cJSON_AddItemToArray(merges, pair);
        }
    }
    cJSON *added = cJSON_AddArrayToObject(root, "added_tokens");
    for (int i = 0; i < N_ADDED; i++) {
        cJSON *a = cJSON_CreateObject();
        cJSON_AddNumberToObject(a, "id", FIRST_ADDED + i);
        cJSON_AddStringToObject(a, "content", ADDED[i].content);
        cJSON_AddBoolToObject(a, "special", ADDED[i].special);
        cJSON_AddBoolToObject(a, "lstrip", ADDED[i].lstrip);
        cJSON_AddBoolToObject(a, "rstrip", ADDED[i].rstrip);
        cJSON_AddBoolToObject(a, "single_word", ADDED[i].single_word);
        cJSON_AddBoolToObject(a, "normalized", ADDED[i].normalized);
        cJSON_AddItemToArray(added, a);
    }
    cJSON_AddItemToObject(root, "normalizer", cJSON_Parse("{\"type\":\"NFC\"}"));
    cJSON_AddItemToObject(root, "pre_tokenizer", cJSON_Parse(
        "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":{\"Regex\":"
        "\"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}| ?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+\"},"
        "\"behavior\":\"Isolated\",\"invert\":false},{\"type\":\"ByteLevel\",\"add_prefix_space\":false,"
        "\"use_regex\":false}]}"));
    char post[512];
    snprintf(post, sizeof post,
             "{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":\"<|bos|>\",\"type_id\":0}},"
             "{\"Sequence\":{\"id\":\"A\",\"type_id\":0}}],\"special_tokens\":{\"<|bos|>\":{\"id\":\"<|bos|>\","
             "\"ids\":[%d],\"tokens\":[\"<|bos|>\"]}}}", FIRST_ADDED + 5);
    cJSON_AddItemToObject(root, "post_processor", cJSON_Parse(post));
    cJSON_AddItemToObject(root, "decoder", cJSON_Parse("{\"type\":\"ByteLevel\"}"));
    return root;
}

/* Writes text to dir/name and returns the path (static buffer). */
static const char *write_file(const char *sub, const char *name, const char *text, size_t len) {
    static char path[1024];
    char d[900];
    snprintf(d, sizeof d, "%s/%s", dir, sub);
    or1_mkdir_p(d);
    snprintf(path, sizeof path, "%s/%s", d, name);
    if (or1_write_file_atomic(path, text, len) != 0) {
        fprintf(stderr, "cannot write %s: %s\n", path, or1_error());
        exit(1);
    }
    return path;
}

/* Encodes a C string; returns the count, ids in out (caller frees). */
static size_t enc(const or1_tokenizer *t, const char *s, unsigned flags, int32_t **out) {
    size_t n = 0;
    if (or1_tokenizer_encode(t, s, strlen(s), flags, out, &n) != 0) {
        fprintf(stderr, "encode failed: %s\n", or1_error());
        *out = NULL;
        return (size_t)-1;
    }
    return n;
}

/* True if encoding s gives exactly the expected ids. */
static int enc_is(const or1_tokenizer *t, const char *s, unsigned flags, const int32_t *want,
                  size_t nw) {
    int32_t *ids;
    size_t n = enc(t, s, flags, &ids);
    int ok = n == nw && (nw == 0 || memcmp(ids, want, nw * sizeof *ids) == 0);
    if (!ok && n != (size_t)-1) {
        fprintf(stderr, "  encode(\"%s\") =", s);
        for (size_t i = 0; i < n; i++) fprintf(stderr, " %d", ids[i]);
        fputc('\n', stderr);
    }
    free(ids);
    return ok;
}
#define ENC_IS(t, s, flags, ...)                                                                  \
    do {                                                                                          \
        const int32_t want_[] = {__VA_ARGS__};                                                    \
        CHECK(enc_is(t, s, flags, want_, sizeof want_ / sizeof want_[0]), "encode \"%s\"", s);    \
    } while (0)

/* Decodes ids into a new string. */
static char *dec(const or1_tokenizer *t, const int32_t *ids, size_t n, bool skip) {
    char *s = NULL;
    size_t len;
    if (or1_tokenizer_decode(t, ids, n, skip, &s, &len) != 0) return NULL;
    return s;
}

/* Id of a merge result by its string. */
static int32_t mid(const char *l, const char *r) {
    for (int i = 0; i < N_MERGES; i++)
        if (!strcmp(MERGES[i][0], l) && !strcmp(MERGES[i][1], r)) return 256 + i;
    return -1;
}

/* Naive BPE over ASCII letters with this test's merges: the lowest-rank adjacent pair,
 * leftmost on ties, until none merges. An independent check of the library's BPE. */
static size_t naive_bpe(const char *w, int32_t *out) {
    char sym[512][16];
    size_t n = strlen(w);
    for (size_t i = 0; i < n; i++) {
        sym[i][0] = w[i];
        sym[i][1] = 0;
    }
    for (;;) {
        int best = -1;
        size_t at = 0;
        for (size_t i = 0; i + 1 < n; i++)
            for (int k = 0; k < N_MERGES; k++)
                if (!strcmp(sym[i], MERGES[k][0]) && !strcmp(sym[i + 1], MERGES[k][1]) &&
                    (best < 0 || k < best)) {
                    best = k;
                    at = i;
                }
        if (best < 0) break;
        size_t la = strlen(sym[at]), lb = strlen(sym[at + 1]);
        memcpy(sym[at] + la, sym[at + 1], lb + 1);
        memmove(sym[at + 1], sym[at + 2], (n - at - 2) * sizeof sym[0]);
        n--;
    }
    for (size_t i = 0; i < n; i++) {
        out[i] = -1;
        if (!sym[i][1]) out[i] = (unsigned char)sym[i][0];
        for (int k = 0; k < N_MERGES; k++) {
            char j[32];
            snprintf(j, sizeof j, "%s%s", MERGES[k][0], MERGES[k][1]);
            if (!strcmp(j, sym[i])) out[i] = 256 + k;
        }
    }
    return n;
}

/* BPE: merges in both forms, ranks, whole words, and the long-word path vs naive BPE. */
static void test_bpe(const or1_tokenizer *t) {
    ENC_IS(t, "hello", 0, mid("hell", "o"));
    ENC_IS(t, "hello world", 0, mid("hell", "o"), mid("Ġw", "o"), 'r', 'l', 'd');
    ENC_IS(t, "aaaaaaaaa", 0, mid("aa", "aa"), mid("aa", "aa"), 'a');
    ENC_IS(t, "é", 0, mid("Ã", "©"));
    ENC_IS(t, "", 0);
    srand(7);
    for (int trial = 0; trial < 300; trial++) {
        char w[400];
        size_t n = 1 + (size_t)(rand() % (trial < 150 ? 60 : 390));
        for (size_t i = 0; i < n; i++) w[i] = "abhelo"[rand() % 6];
        w[n] = 0;
        int32_t want[400], *got;
        size_t nw = naive_bpe(w, want), ng = enc(t, w, 0, &got);
        CHECK(ng == nw && memcmp(got, want, nw * sizeof *got) == 0, "BPE of %zu letters \"%.40s...\"", n, w);
        free(got);
    }
    CHECK(or1_tokenizer_token_id(t, "Ġw") == mid("Ġ", "w"), "token_id of Ġw");
    CHECK(or1_tokenizer_token_id(t, "hello") == mid("hell", "o"), "token_id of hello");
    CHECK(or1_tokenizer_token_id(t, "<|end|>") == FIRST_ADDED, "token_id of <|end|>");
    CHECK(or1_tokenizer_token_id(t, "nope") == -1, "token_id of an unknown token");
    CHECK(or1_tokenizer_vocab_size(t) == FIRST_ADDED + N_ADDED, "vocab size");
}

/* Added tokens: special / non-special, lstrip, rstrip, single_word, normalized (NFC). */
static void test_added(const or1_tokenizer *t) {
    const int32_t END = FIRST_ADDED, TOOL = END + 1, L = END + 2, R = END + 3, WORD = END + 4,
                  BOS = END + 5, CAFE = END + 6;
    ENC_IS(t, "x<|end|>y", 0, 'x', END, 'y');
    ENC_IS(t, "<tool><|end|>", OR1_TOK_SPLIT_SPECIAL, TOOL, '<', '|', 'e', 'n', 'd', '|', '>');
    ENC_IS(t, "a   [L]b", 0, 'a', L, 'b');
    ENC_IS(t, "a[R]   b", 0, 'a', R, 'b');
    ENC_IS(t, "a word b", 0, 'a', ' ', WORD, ' ', 'b');
    ENC_IS(t, "word", 0, WORD);
    ENC_IS(t, "swords", 0, 's', 'w', 'o', 'r', 'd', 's');
    ENC_IS(t, "_word", 0, '_', 'w', 'o', 'r', 'd');
    ENC_IS(t, "(word)", 0, '(', WORD, ')');
    ENC_IS(t, "cafe\xcc\x81!", 0, CAFE, '!');
    ENC_IS(t, "caf\xc3\xa9", 0, CAFE);
    ENC_IS(t, "hello", OR1_TOK_ADD_SPECIAL, BOS, mid("hell", "o"));
    ENC_IS(t, "<|end|><|end|>", 0, END, END);
    ENC_IS(t, "<|end|", 0, '<', '|', 'e', 'n', 'd', '|');
    CHECK(or1_tokenizer_is_special(t, END) && !or1_tokenizer_is_special(t, TOOL), "is_special");
}

/* Decoding: added tokens as written, split characters joined, invalid bytes as U+FFFD. */
static void test_decode(const or1_tokenizer *t) {
    const int32_t END = FIRST_ADDED;
    int32_t a[] = {mid("hell", "o"), mid("Ġw", "o"), END};
    char *s = dec(t, a, 3, false);
    CHECK(s && !strcmp(s, "hello wo<|end|>"), "decode with specials: %s", s ? s : or1_error());
    free(s);
    s = dec(t, a, 3, true);
    CHECK(s && !strcmp(s, "hello wo"), "decode skipping specials: %s", s ? s : or1_error());
    free(s);
    int32_t split[] = {0xE4, 0xB8, 0xAD, 0xC3}; /* 中 then a lone lead byte */
    s = dec(t, split, 4, false);
    CHECK(s && !strcmp(s, "中\xEF\xBF\xBD"), "decode of a split character");
    free(s);
    int32_t bad[] = {'h', 0xF0, 0x9F, 'h', 0xFF, 0xED, 0xA0, 0x80};
    s = dec(t, bad, 8, false);
    CHECK(s && !strcmp(s, "h\xEF\xBF\xBDh\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"),
          "maximal-subpart replacement: %s", s ? s : "");
    free(s);
    int32_t oob[] = {'a', 99999};
    CHECK(dec(t, oob, 2, false) == NULL && strstr(or1_error(), "99999"), "decode of a bad id fails");
    int32_t neg[] = {-1};
    CHECK(dec(t, neg, 1, false) == NULL, "decode of a negative id fails");
    size_t len;
    const char *b = or1_tokenizer_token_bytes(t, mid("Ã", "©"), &len);
    CHECK(b && len == 2 && !memcmp(b, "\xC3\xA9", 2), "token bytes of é");
}

/* Round trip: decode(encode(s)) == s for random NFC-stable text. */
static void test_roundtrip(const or1_tokenizer *t) {
    static const char *pieces[] = {"a", "b", " ", "  ", "\n", "\t", "é", "中", "😀", "<|end|>",
                                   "<tool>", "hello", "1", "22", "!", "'s", "\r\n", "word"};
    srand(11);
    for (int trial = 0; trial < 300; trial++) {
        char s[2048] = "";
        int k = rand() % 60;
        for (int i = 0; i < k; i++) strcat(s, pieces[rand() % (sizeof pieces / sizeof *pieces)]);
        int32_t *ids;
        size_t n = enc(t, s, 0, &ids);
        char *back = n == (size_t)-1 ? NULL : dec(t, ids, n, false);
        CHECK(back && !strcmp(back, s), "round trip of \"%s\"", s);
        free(back);
        free(ids);
    }
}

/* Hostile text: invalid UTF-8 is refused with its byte offset; long inputs encode. */
static void test_hostile_text(const or1_tokenizer *t) {
    int32_t *ids = NULL;
    size_t n;
    const char *bad[] = {"abc\xff", "ab\xc3", "\xed\xa0\x80", "\xc0\xaf", "ok\xf4\x90\x80\x80"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int rc = or1_tokenizer_encode(t, bad[i], strlen(bad[i]), 0, &ids, &n);
        CHECK(rc != 0 && strstr(or1_error(), "invalid UTF-8 at byte"), "invalid UTF-8 %zu refused", i);
    }
    size_t big = 3 << 20;
    char *s = or1_malloc(big + 1);
    for (size_t i = 0; i < big; i++) s[i] = i < big / 3 ? 'a' : i < 2 * big / 3 ? ' ' : "ab\n \xc3\xa9"[(i - 2 * big / 3) % 6];
    s[big] = 0;
    int rc = or1_tokenizer_encode(t, s, big, 0, &ids, &n);
    char *back = rc == 0 ? dec(t, ids, n, false) : NULL;
    CHECK(back && !strcmp(back, s), "3 MB input round trip (rc %d: %s)", rc, rc ? or1_error() : "");
    free(back);
    free(ids);
    free(s);
}

/* Tokenizer files that must be refused with a message, never crash. */
static void test_bad_files(void) {
    cJSON *good = small_json();
    char *good_text = cJSON_PrintUnformatted(good);
    static const struct {
        const char *what, *path, *json; /* path: a dotted path to replace with json */
    } cases[] = {
        {"vocab id negative", "model.vocab.a", "-1"},
        {"vocab id too large", "model.vocab.a", "1e12"},
        {"vocab id not a number", "model.vocab.a", "\"7\""},
        {"vocab not an object", "model.vocab", "[]"},
        {"merges not an array", "model.merges", "{}"},
        {"merge with unknown token", "model.merges", "[\"zz q\"]"},
        {"merge without a space", "model.merges", "[\"hello\"]"},
        {"merge with three parts", "model.merges", "[[\"a\",\"b\",\"c\"]]"},
        {"merge of a number", "model.merges", "[7]"},
        {"unsupported model", "model.type", "\"Unigram\""},
        {"byte fallback", "model.byte_fallback", "true"},
        {"subword prefix", "model.continuing_subword_prefix", "\"##\""},
        {"added content not a string", "added_tokens", "[{\"id\":3,\"content\":5}]"},
        {"added id out of range", "added_tokens", "[{\"id\":-4,\"content\":\"x\"}]"},
        {"added empty", "added_tokens", "[{\"id\":3,\"content\":\"\"}]"},
        {"unknown normalizer", "normalizer", "{\"type\":\"Precompiled\"}"},
        {"normalizer without type", "normalizer", "{\"x\":1}"},
        {"unknown pre-tokenizer", "pre_tokenizer", "{\"type\":\"Metaspace\"}"},
        {"bad regex", "pre_tokenizer", "{\"type\":\"Split\",\"pattern\":{\"Regex\":\"(\"},\"behavior\":\"Isolated\"}"},
        {"bad behavior", "pre_tokenizer", "{\"type\":\"Split\",\"pattern\":{\"Regex\":\"a\"},\"behavior\":\"Sideways\"}"},
        {"unknown decoder", "decoder", "{\"type\":\"WordPiece\"}"},
        {"missing decoder", "decoder", "null"},
        {"template with unknown token", "post_processor", "{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":\"?\"}},{\"Sequence\":{\"id\":\"A\"}}],\"special_tokens\":{}}"},
        {"template with id out of range", "post_processor", "{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":\"x\"}},{\"Sequence\":{\"id\":\"A\"}}],\"special_tokens\":{\"x\":{\"ids\":[999999]}}}"},
        {"unknown post-processor", "post_processor", "{\"type\":\"BertProcessing\"}"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cJSON *j = cJSON_Duplicate(good, 1), *parent = j;
        char path[128];
        snprintf(path, sizeof path, "%s", cases[i].path);
        char *key = path, *dot;
        while ((dot = strchr(key, '.'))) {
            *dot = 0;
            parent = cJSON_GetObjectItemCaseSensitive(parent, key);
            key = dot + 1;
        }
        cJSON_DeleteItemFromObjectCaseSensitive(parent, key);
        cJSON_AddItemToObject(parent, key, cJSON_Parse(cases[i].json));
        char *text = cJSON_PrintUnformatted(j);
        const char *p = write_file("bad", "tokenizer.json", text, strlen(text));
        or1_tokenizer *t = or1_tokenizer_load(p);
        CHECK(!t && strstr(or1_error(), "tokenizer.json"), "%s is refused (%s)", cases[i].what, or1_error());
        or1_tokenizer_free(t);
        free(text);
        cJSON_Delete(j);
    }
    const char *raw[] = {"", "not json", "[]", "{\"model\":", "{}", "{\"model\":{\"vocab\":{},\"merges\":[]}}"};
    for (size_t i = 0; i < sizeof raw / sizeof *raw; i++) {
        const char *p = write_file("bad", "tokenizer.json", raw[i], strlen(raw[i]));
        or1_tokenizer *t = or1_tokenizer_load(p);
        CHECK(!t && *or1_error(), "raw case %zu refused", i);
        or1_tokenizer_free(t);
    }
    CHECK(!or1_tokenizer_load("/nonexistent/tok") && strstr(or1_error(), "/nonexistent"), "missing path");
    /* Truncations and byte flips: load must fail cleanly or succeed, never crash. */
    size_t n = strlen(good_text);
    char *m = or1_malloc(n + 1);
    srand(3);
    for (int trial = 0; trial < 160; trial++) {
        memcpy(m, good_text, n + 1);
        size_t len = n;
        if (trial % 2) len = (size_t)rand() % n;
        else
            for (int k = 0; k < 4; k++) m[rand() % n] = (char)(rand() % 256);
        const char *p = write_file("fuzz", "tokenizer.json", m, len);
        or1_tokenizer *t = or1_tokenizer_load(p);
        if (t) {
            int32_t *ids;
            size_t ni;
            if (or1_tokenizer_encode(t, "hello world <|end|>", 19, 0, &ids, &ni) == 0) free(ids);
        }
        or1_tokenizer_free(t);
    }
    CHECK(1, "damaged files load or fail cleanly"); /* reached: no crash */
    free(m);
    free(good_text);
    cJSON_Delete(good);
}

/* Loads the small tokenizer with another pre-tokenizer and three extra merges ("--",
 * "a-", "-b", ids 300-302) that show where pre-tokens begin and end. */
static or1_tokenizer *with_pretokenizer(const char *pre) {
    cJSON *j = small_json();
    cJSON *model = cJSON_GetObjectItemCaseSensitive(j, "model");
    cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    const char *extra[][3] = {{"-", "-", "--"}, {"a", "-", "a-"}, {"-", "b", "-b"}};
    for (int i = 0; i < 3; i++) {
        char m[16];
        snprintf(m, sizeof m, "%s %s", extra[i][0], extra[i][1]);
        cJSON_AddNumberToObject(vocab, extra[i][2], 300 + i);
        cJSON_AddItemToArray(merges, cJSON_CreateString(m));
    }
    cJSON_DeleteItemFromObjectCaseSensitive(j, "pre_tokenizer");
    cJSON_AddItemToObject(j, "pre_tokenizer", cJSON_Parse(pre));
    char *text = cJSON_PrintUnformatted(j);
    const char *p = write_file("split", "tokenizer.json", text, strlen(text));
    or1_tokenizer *t = or1_tokenizer_load(p);
    if (!t) fprintf(stderr, "cannot load with %s: %s\n", pre, or1_error());
    free(text);
    cJSON_Delete(j);
    return t;
}

/* Split behaviours (Removed, Isolated, MergedWithPrevious/Next, Contiguous, invert), the
 * String pattern, and ByteLevel's add_prefix_space. */
static void test_pretokenizers(void) {
    static const struct {
        const char *behavior;
        bool invert;
        int32_t want[6];
        size_t n;
    } cases[] = {
        {"Removed", false, {'a', 'b'}, 2},
        {"Isolated", false, {'a', '-', '-', 'b'}, 4},
        {"MergedWithPrevious", false, {301, '-', 'b'}, 3},
        {"MergedWithNext", false, {'a', '-', 302}, 3},
        {"Contiguous", false, {'a', 300, 'b'}, 3},
        {"Removed", true, {'-', '-'}, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char pre[512];
        snprintf(pre, sizeof pre,
                 "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":{\"String\":\"-\"},"
                 "\"behavior\":\"%s\",\"invert\":%s},{\"type\":\"ByteLevel\",\"use_regex\":false}]}",
                 cases[i].behavior, cases[i].invert ? "true" : "false");
        or1_tokenizer *t = with_pretokenizer(pre);
        CHECK(t && enc_is(t, "a--b", 0, cases[i].want, cases[i].n), "Split %s invert=%d", cases[i].behavior,
              cases[i].invert);
        or1_tokenizer_free(t);
    }
    or1_tokenizer *t = with_pretokenizer("{\"type\":\"ByteLevel\",\"add_prefix_space\":true}");
    CHECK(t, "ByteLevel with add_prefix_space loads");
    if (t) {
        ENC_IS(t, "hello", 0, ' ', mid("hell", "o"));
        ENC_IS(t, " hello", 0, ' ', mid("hell", "o"));
        ENC_IS(t, "hello hello", 0, ' ', mid("hell", "o"), ' ', mid("hell", "o"));
    }
    or1_tokenizer_free(t);
    t = with_pretokenizer("{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Digits\",\"individual_digits\":false},"
                          "{\"type\":\"ByteLevel\",\"use_regex\":false}]}");
    CHECK(t, "Digits + ByteLevel sequence loads");
    if (t) ENC_IS(t, "a-12-b", 0, 301, '1', '2', 302);
    or1_tokenizer_free(t);
}

/* Where or1 follows Hugging Face's tokenizers rather than its own libraries: NFC leaves alone
 * the code points that tokenizers' older tables lack (U+11935 U+11930 stay two; U+0C3C, a
 * class-7 mark of Unicode 14, keeps its place after a class-230 one) and composes the rest; \s
 * and \S are White_Space, which U+180E is not (it is not removed where U+2003 is), also within
 * a class, but not inside \Q...\E. */
static void test_reference_unicode(const or1_tokenizer *t) {
    static const struct {
        const char *in, *want;
    } nfc[] = {
        {"e\xCC\x81", "\xC3\xA9"},
        {"\xF0\x91\xA4\xB5\xF0\x91\xA4\xB0", "\xF0\x91\xA4\xB5\xF0\x91\xA4\xB0"},
        {"a\xE0\xA0\xAA\xE0\xB0\xBC", "a\xE0\xA0\xAA\xE0\xB0\xBC"},
        {"a\xCC\x81\xE0\xB0\xBC", "\xC3\xA1\xE0\xB0\xBC"},
    };
    for (size_t i = 0; i < sizeof nfc / sizeof *nfc; i++) {
        int32_t *ids;
        size_t n = enc(t, nfc[i].in, 0, &ids);
        char *back = n != (size_t)-1 ? dec(t, ids, n, false) : NULL;
        CHECK(back && !strcmp(back, nfc[i].want), "NFC case %zu as tokenizers normalizes it", i);
        free(back);
        free(ids);
    }
    static const struct {
        const char *regex, *text;
        int32_t want[8];
        size_t n;
    } split[] = {
        {"\\\\s", "x\xE1\xA0\x8Ey\xE2\x80\x83z", {'x', 0xE1, 0xA0, 0x8E, 'y', 'z'}, 6},
        {"[\\\\s]", "x\xE1\xA0\x8Ey\xE2\x80\x83z", {'x', 0xE1, 0xA0, 0x8E, 'y', 'z'}, 6},
        {"\\\\S", "x \xE1\xA0\x8E", {' '}, 1},
        {"\\\\Q\\\\s\\\\E", "x\\sy z", {'x', 'y', ' ', 'z'}, 4},
    };
    for (size_t i = 0; i < sizeof split / sizeof *split; i++) {
        char pre[512];
        snprintf(pre, sizeof pre,
                 "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":{\"Regex\":\"%s\"},"
                 "\"behavior\":\"Removed\",\"invert\":false},{\"type\":\"ByteLevel\",\"use_regex\":false}]}",
                 split[i].regex);
        or1_tokenizer *s = with_pretokenizer(pre);
        CHECK(s && enc_is(s, split[i].text, 0, split[i].want, split[i].n), "Split /%s/ removes White_Space only",
              split[i].regex);
        or1_tokenizer_free(s);
    }
}

/* or1_tokenizer_read_text: U+0000 kept where \u0000 escapes stand (not after an escaped
 * backslash), blank lines skipped, the end of input; and every error: a raw NUL byte, a lone
 * surrogate escape, a missing or non-string key, malformed JSON. */
static void test_read_text(void) {
    static const char good[] = "{\"text\": \"a\\u0000b\"}\n\n  \n"
                               "{\"text\": \"\\\\u0000x\\u0000\"}\n"
                               "{\"k\": \"\\u0000\", \"text\": \"\\u0000\\u0000\\u00e9\"}\n"
                               "{\"text\": \"plain\"}";
    static const struct {
        const char *bytes;
        size_t len;
    } want[] = {{"a\0b", 3}, {"\\u0000x\0", 8}, {"\0\0\xC3\xA9", 4}, {"plain", 5}};
    const char *path = write_file("rows", "good.jsonl", good, sizeof good - 1);
    or1_jsonl_reader r;
    CHECK(or1_jsonl_open(&r, path) == 0, "open %s", path);
    char *text;
    size_t len;
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        int got = or1_tokenizer_read_text(&r, "text", &text, &len);
        CHECK(got == 1 && len == want[i].len && !memcmp(text, want[i].bytes, len) && text[len] == '\0',
              "row %zu read with its U+0000 (got %d: %s)", i, got, got == 1 ? "" : or1_error());
        free(text);
    }
    CHECK(or1_tokenizer_read_text(&r, "text", &text, &len) == 0 && !text, "the end of the rows");
    or1_jsonl_close(&r);
    static const struct {
        const char *row, *error;
        size_t len;
    } bad[] = {
        {"{\"text\": \"a\0\"}", "a NUL byte at byte 11", 14},
        {"{\"text\": \"a\\ud800\\u0000\"}", "invalid JSON near byte 11", 0},
        {"{\"txt\": \"\\u0000\"}", "missing key \"text\"", 0},
        {"{\"text\": [\"\\u0000\"]}", "must be a string", 0},
        {"{\"text\": \"\\u0000", "invalid JSON", 0},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        size_t n = bad[i].len ? bad[i].len : strlen(bad[i].row);
        path = write_file("rows", "bad.jsonl", bad[i].row, n);
        CHECK(or1_jsonl_open(&r, path) == 0, "open %s", path);
        int got = or1_tokenizer_read_text(&r, "text", &text, &len);
        CHECK(got == -1 && !text && strstr(or1_error(), "bad.jsonl:1") && strstr(or1_error(), bad[i].error),
              "bad row %zu refused: %s", i, or1_error());
        or1_jsonl_close(&r);
    }
}

/* Chat templates: recognised from tokenizer_config.json, overridable by name. */
static void test_chat(void) {
    cJSON *j = small_json();
    char *text = cJSON_PrintUnformatted(j);
    write_file("chat", "tokenizer.json", text, strlen(text));
    remove(write_file("chat", "chat_template.jinja", "", 0)); /* left by an earlier run */
    free(text);
    cJSON_Delete(j);
    const char *cfg =
        "{\"eos_token\":\"<|end|>\",\"bos_token\":{\"content\":\"<|bos|>\"},\"chat_template\":"
        "\"{% for m in messages %}{% if loop.first and m['role'] != 'system' %}{{ '<|im_start|>system\\\\n"
        "Be brief.<|im_end|>\\\\n' }}{% endif %}{{'<|im_start|>' + m['role'] + '\\\\n' + m['content'] + "
        "'<|im_end|>' + '\\\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\\\n' }}{% endif %}\"}";
    write_file("chat", "tokenizer_config.json", cfg, strlen(cfg));
    char d[900];
    snprintf(d, sizeof d, "%s/chat", dir);
    or1_tokenizer *t = or1_tokenizer_load(d);
    CHECK(t != NULL, "load with a config: %s", or1_error());
    if (!t) return;
    CHECK(or1_tokenizer_eos_id(t) == FIRST_ADDED && or1_tokenizer_bos_id(t) == FIRST_ADDED + 5, "bos/eos ids");
    const char *name = or1_tokenizer_chat_template(t);
    CHECK(name && !strcmp(name, "chatml"), "recognised chatml, got %s", name ? name : "NULL");
    or1_chat_message m[] = {{"user", "2+2?"}, {"assistant", "<think>\nadd\n</think>\n\n4"}, {"user", "and 3+3?"}};
    struct {
        const char *tpl;
        size_t n;
        bool gen;
        const char *want;
    } cases[] = {
        {NULL, 1, true, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n"},
        {"deepseek-r1", 3, true, "<|bos|><｜User｜>2+2?<｜Assistant｜>\n\n4<｜end▁of▁sentence｜><｜User｜>and 3+3?<｜Assistant｜><think>\n"},
        {"deepseek", 1, false, "<|bos|><｜User｜>2+2?"},
        {"llama3", 1, true, "<|bos|><|start_header_id|>user<|end_header_id|>\n\n2+2?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
        {"plain", 2, true, "User: 2+2?\nAssistant: <think>\nadd\n</think>\n\n4\nAssistant:"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *out = NULL;
        or1_chat_vars v = {.add_generation_prompt = cases[i].gen, .enable_thinking = OR1_CHAT_UNDEFINED};
        int rc = or1_tokenizer_chat(t, cases[i].tpl, m, cases[i].n, &v, &out);
        CHECK(rc == 0 && !strcmp(out, cases[i].want), "chat %s: \"%s\"", cases[i].tpl ? cases[i].tpl : "default", out ? out : or1_error());
        free(out);
        out = NULL; /* the CHECK messages may read it before the next call sets it */
    }
    or1_chat_message sys[] = {{"system", "S1"}, {"user", "u"}, {"system", "S2"}};
    char *out = NULL;
    const or1_chat_vars gen = or1_chat_vars_default();
    CHECK(or1_tokenizer_chat(t, "deepseek", sys, 3, &gen, &out) == 0 && !strcmp(out, "<|bos|>S1\n\nS2<｜User｜>u<｜Assistant｜>"), "deepseek system prompts");
    free(out);
    out = NULL; /* the CHECK messages may read it before the next call sets it */
    CHECK(or1_tokenizer_chat(t, "deepseek-r1", sys, 3, &gen, &out) == 0 && !strcmp(out, "<|bos|>S2<｜User｜>u<｜Assistant｜><think>\n"), "deepseek-r1 keeps the last system prompt");
    free(out);
    out = NULL; /* the CHECK messages may read it before the next call sets it */
    CHECK(or1_tokenizer_chat(t, NULL, sys, 2, &gen, &out) == 0 && !strcmp(out, "<|im_start|>system\nS1<|im_end|>\n<|im_start|>user\nu<|im_end|>\n<|im_start|>assistant\n"), "chatml with its own system prompt");
    free(out);
    out = NULL; /* the CHECK messages may read it before the next call sets it */
    or1_chat_message odd[] = {{"tool", "x"}};
    CHECK(or1_tokenizer_chat(t, NULL, odd, 1, &gen, &out) == 0 && !strcmp(out, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>tool\nx<|im_end|>\n<|im_start|>assistant\n"),
          "the model's own template renders any role: %s", out ? out : or1_error());
    free(out);
    out = NULL; /* the CHECK messages may read it before the next call sets it */
    CHECK(or1_tokenizer_chat(t, "chatml", odd, 1, &gen, &out) != 0 && strstr(or1_error(), "tool"), "a C family refuses an unknown role");
    CHECK(or1_tokenizer_chat(t, "jinja", m, 1, &gen, &out) != 0 && strstr(or1_error(), "jinja"), "unknown template refused");
    or1_tokenizer_free(t);
    const char *bad = "{\"chat_template\": 7}";
    write_file("chat", "tokenizer_config.json", bad, strlen(bad));
    t = or1_tokenizer_load(d);
    CHECK(t && !strcmp(or1_tokenizer_chat_template(t), "plain"), "config without a template string: plain");
    or1_tokenizer_free(t);
    const char *unk = "{\"chat_template\": \"{{ messages }}\"}";
    write_file("chat", "tokenizer_config.json", unk, strlen(unk));
    t = or1_tokenizer_load(d);
    CHECK(t && or1_tokenizer_chat_template(t) == NULL && or1_tokenizer_chat(t, NULL, m, 1, &gen, &out) == 0 &&
              !strcmp(out, "[{'role': 'user', 'content': '2+2?'}]"),
          "a template of no known family is rendered all the same: %s", out ? out : or1_error());
    free(out);
    out = NULL; /* the CHECK messages may read it before the next call sets it */
    or1_tokenizer_free(t);
    const char *math =
        "{\"chat_template\": \"{% if messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\\\nPlease "
        "reason step by step, and put your final answer within \\\\\\\\boxed{}.<|im_end|>\\\\n' }}{% endif %}\"}";
    write_file("chat", "tokenizer_config.json", math, strlen(math));
    t = or1_tokenizer_load(d);
    const or1_chat_vars no_gen = {.add_generation_prompt = false, .enable_thinking = OR1_CHAT_UNDEFINED};
    CHECK(t && or1_tokenizer_chat(t, NULL, m, 1, &no_gen, &out) == 0 &&
              !strcmp(out, "<|im_start|>system\nPlease reason step by step, and put your final answer within "
                           "\\boxed{}.<|im_end|>\n"),
          "default system prompt with braces and an escaped backslash: %s", out ? out : or1_error());
    free(out);
    out = NULL; /* the CHECK messages may read it before the next call sets it */
    or1_tokenizer_free(t);
    const char *qwq = "{\"chat_template\": \"{% for m in messages %}{{'<|im_start|>' + m['role'] + '\\\\n' + "
                      "m['content'] + '<|im_end|>\\\\n'}}{% endfor %}{{ '<|im_start|>assistant\\\\n<think>\\\\n' }}\"}";
    write_file("chat", "tokenizer_config.json", qwq, strlen(qwq));
    t = or1_tokenizer_load(d);
    CHECK(t && or1_tokenizer_chat(t, NULL, m, 1, &gen, &out) == 0 &&
              !strcmp(out, "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n<think>\n"),
          "ChatML generation that opens <think>: %s", out ? out : or1_error());
    free(out);
    out = NULL; /* the CHECK messages may read it before the next call sets it */
    or1_tokenizer_free(t);
    const char *jinja = "{{ bos_token }}{% for m in messages %}<｜User｜>{{ m['content'] }}{% endfor %}"
                        "{{ '<｜Assistant｜><think>\\n' }}";
    const char *nocfg = "{\"bos_token\": \"<|bos|>\"}";
    write_file("chat", "tokenizer_config.json", nocfg, strlen(nocfg));
    write_file("chat", "chat_template.jinja", jinja, strlen(jinja));
    t = or1_tokenizer_load(d);
    name = t ? or1_tokenizer_chat_template(t) : NULL;
    CHECK(name && !strcmp(name, "deepseek-r1"), "template from chat_template.jinja: %s", name ? name : "NULL");
    or1_tokenizer_free(t);
    const char *vars = "{{ bos_token }}|{{ eos_token is defined }}|{{ tools }}|{{ documents }}|{{ enable_thinking is defined }}|"
                       "{{ add_generation_prompt }}|{{ messages | tojson }}\n";
    write_file("chat", "chat_template.jinja", vars, strlen(vars));
    t = or1_tokenizer_load(d);
    or1_chat_vars think = {.add_generation_prompt = false, .enable_thinking = 1};
    CHECK(t && or1_tokenizer_chat(t, NULL, m, 1, &gen, &out) == 0 &&
              !strcmp(out, "<|bos|>|False|None|None|False|True|[{\"role\": \"user\", \"content\": \"2+2?\"}]"),
          "transformers' variables (special tokens named in the config only): %s", out ? out : or1_error());
    free(out);
    out = NULL; /* the CHECK messages may read it before the next call sets it */
    CHECK(t && or1_tokenizer_chat(t, NULL, m, 0, &think, &out) == 0 && !strcmp(out, "<|bos|>|False|None|None|True|False|[]"),
          "enable_thinking passed when set: %s", out ? out : or1_error());
    free(out);
    out = NULL; /* the CHECK messages may read it before the next call sets it */
    or1_tokenizer_free(t);
    remove(write_file("chat", "chat_template.jinja", "", 0));
    write_file("chat", "tokenizer_config.json", "{", 1);
    CHECK(!or1_tokenizer_load(d) && strstr(or1_error(), "tokenizer_config.json"), "malformed config refused");
}

/* Texts for the concurrency test. */
static const char *CONC[] = {"hello world", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "x<|end|>y word",
                             "cafe\xcc\x81 and 中文 😀", "abhelloabab baaaa", "\n\n  \t end"};
enum { N_CONC = sizeof CONC / sizeof *CONC, ROUNDS = 200 };

typedef struct {
    const or1_tokenizer *t;
    int32_t *want[N_CONC];
    size_t nwant[N_CONC];
    int bad;
} conc_job;

/* One thread: encodes every text many times and compares with the expected ids. */
static void *conc_run(void *arg) {
    conc_job *j = arg;
    for (int r = 0; r < ROUNDS; r++)
        for (int i = 0; i < N_CONC; i++) {
            int32_t *ids;
            size_t n;
            char buf[128];
            snprintf(buf, sizeof buf, "%s %d", CONC[i], r % 17); /* new words for the cache */
            if (or1_tokenizer_encode(j->t, buf, strlen(buf), 0, &ids, &n) != 0) {
                j->bad++;
                continue;
            }
            if (r % 17 == 0 && (n < j->nwant[i] || memcmp(ids, j->want[i], j->nwant[i] * sizeof *ids)))
                j->bad++;
            free(ids);
        }
    return NULL;
}

/* Concurrent encodes on one tokenizer agree with single-threaded ones. */
static void test_threads(const char *path) {
    or1_tokenizer *t = or1_tokenizer_load(path);
    conc_job jobs[4] = {{0}};
    for (int i = 0; i < N_CONC; i++) {
        int32_t *ids;
        size_t n = enc(t, CONC[i], 0, &ids);
        for (int k = 0; k < 4; k++) {
            jobs[k].t = t;
            jobs[k].want[i] = ids;
            jobs[k].nwant[i] = n;
        }
    }
    pthread_t th[4];
    for (int k = 0; k < 4; k++) pthread_create(&th[k], NULL, conc_run, &jobs[k]);
    int bad = 0;
    for (int k = 0; k < 4; k++) {
        pthread_join(th[k], NULL);
        bad += jobs[k].bad;
    }
    CHECK(bad == 0, "concurrent encodes: %d disagreements", bad);
    for (int i = 0; i < N_CONC; i++) free(jobs[0].want[i]);
    or1_tokenizer_free(t);
}

/* Runs every group of checks on a scratch directory; exits non-zero on any failure. */
int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_tokenizer SCRATCH_DIR\n");
        return 2;
    }
    dir = argv[1];
    or1_mkdir_p(dir);
    cJSON *j = small_json();
    char *text = cJSON_PrintUnformatted(j);
    char path[1024];
    snprintf(path, sizeof path, "%s", write_file("small", "tokenizer.json", text, strlen(text)));
    free(text);
    cJSON_Delete(j);
    or1_tokenizer *t = or1_tokenizer_load(path);
    if (!t) {
        fprintf(stderr, "cannot load the small tokenizer: %s\n", or1_error());
        return 1;
    }
    test_bpe(t);
    test_added(t);
    test_decode(t);
    test_roundtrip(t);
    test_hostile_text(t);
    test_reference_unicode(t);
    or1_tokenizer_free(t);
    test_read_text();
    test_bad_files();
    test_pretokenizers();
    test_chat();
    test_threads(path);
    return check_report();
}
