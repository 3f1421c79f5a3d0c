/* The tokenizer of a GGUF file. Its metadata (tokenizer.ggml.*, tokenizer.chat_template) is read
 * as the tokenizer.json and tokenizer_config.json objects it stands for, which the loader then
 * takes as it takes a Hugging Face folder's; the same objects are what a model trained from the
 * file carries beside its checkpoints, and the way back writes them as GGUF metadata. The
 * pre-tokenizers llama.cpp knows by name are one table. */
#include "tok.h"

#include "or1/core.h"
#include "or1/io.h"
#include "or1/io_gguf.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { MAX_JSON = 512 << 20 };

/* GGUF token types (tokenizer.ggml.token_type). */
enum { TT_NORMAL = 1, TT_UNKNOWN = 2, TT_CONTROL = 3, TT_USER = 4, TT_UNUSED = 5, TT_BYTE = 6 };

/* Llama 3's split pattern; Qwen2's differs only in taking one digit at a time. */
#define SPLIT_HEAD "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|"
#define SPLIT_TAIL "| ?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+"
#define SPLIT(pat) "{\"type\":\"Split\",\"pattern\":{\"Regex\":\"" pat "\"},\"behavior\":\"Isolated\",\"invert\":false}"
#define BYTELEVEL(rx) "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":false,\"use_regex\":" rx "}"
#define SEQ(a, b) "{\"type\":\"Sequence\",\"pretokenizers\":[" a "," b "]}"

/* A llama.cpp pre-tokenizer: its names (tokenizer.ggml.pre; the first is written), the
 * tokenizer.json pre_tokenizer that splits alike, whether whole pre-tokens found in the vocabulary
 * skip the merges (Llama 3's ignore_merges), and whether llama.cpp adds BOS by default. */
typedef struct {
    const char *names[4];
    const char *json;
    bool ignore_merges, add_bos;
} pre_row;

static const pre_row PRE[] = {
    {{"smollm"}, SEQ("{\"type\":\"Digits\",\"individual_digits\":true}", BYTELEVEL("true")), false, false},
    {{"gpt-2"}, BYTELEVEL("true"), false, false},
    {{"llama-bpe", "llama3", "llama-v3"}, SEQ(SPLIT(SPLIT_HEAD "\\\\p{N}{1,3}" SPLIT_TAIL), BYTELEVEL("false")), true, true},
    {{"qwen2", "deepseek-r1-qwen"}, SEQ(SPLIT(SPLIT_HEAD "\\\\p{N}" SPLIT_TAIL), BYTELEVEL("false")), false, false},
};
enum { N_PRE = sizeof PRE / sizeof *PRE };

/* The row called name, or NULL. */
static const pre_row *pre_find(const char *name, size_t len) {
    for (int i = 0; i < N_PRE; i++)
        for (int k = 0; k < 4 && PRE[i].names[k]; k++)
            if (strlen(PRE[i].names[k]) == len && memcmp(PRE[i].names[k], name, len) == 0) return &PRE[i];
    return NULL;
}

/* "a, b, c": every name the table knows, into buf, for messages. */
static const char *pre_list(char *buf, size_t n) {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < N_PRE; i++)
        for (int k = 0; k < 4 && PRE[i].names[k] && used < n; k++)
            used += (size_t)snprintf(buf + used, n - used, "%s%s", used ? ", " : "", PRE[i].names[k]);
    return buf;
}

/* A NUL-terminated copy of a GGUF string. */
static char *str_dup(const char *s, size_t n) {
    char *o = or1_malloc(n + 1);
    memcpy(o, s, n);
    o[n] = '\0';
    return o;
}

/* The token arrays of f: tokens (required), token types (else all normal), merges (required). */
static int token_arrays(const or1_gguf_file *f, const or1_gguf_kv **tokens, const or1_gguf_kv **types,
                        const or1_gguf_kv **merges) {
    int rc = or1_gguf_get_array(f, "tokenizer.ggml.tokens", 's', tokens);
    if (rc) return rc < 0 ? -1 : or1_fail("%s: metadata key \"tokenizer.ggml.tokens\" is missing", f->path);
    rc = or1_gguf_get_array(f, "tokenizer.ggml.token_type", 'i', types);
    if (rc < 0) return -1;
    if (rc == 1) *types = NULL;
    else if ((*types)->n != (*tokens)->n)
        return or1_fail("%s: metadata key \"tokenizer.ggml.token_type\" has %llu entries for %llu tokens", f->path,
                        (unsigned long long)(*types)->n, (unsigned long long)(*tokens)->n);
    rc = or1_gguf_get_array(f, "tokenizer.ggml.merges", 's', merges);
    if (rc) return rc < 0 ? -1 : or1_fail("%s: metadata key \"tokenizer.ggml.merges\" is missing", f->path);
    return 0;
}

/* The model object: vocab (every token by its id), merges, ignore_merges; and the
 * added_tokens array of control (special) and user-defined tokens. */
static int vocab_json(const or1_gguf_file *f, const pre_row *pre, cJSON *root) {
    const or1_gguf_kv *tokens, *types, *merges;
    if (token_arrays(f, &tokens, &types, &merges)) return -1;
    cJSON *model = cJSON_AddObjectToObject(root, "model"), *vocab = cJSON_AddObjectToObject(model, "vocab");
    cJSON_AddStringToObject(model, "type", "BPE");
    cJSON_AddBoolToObject(model, "ignore_merges", pre->ignore_merges);
    cJSON *added = cJSON_AddArrayToObject(root, "added_tokens"), *ml = cJSON_AddArrayToObject(model, "merges");
    for (uint64_t i = 0; i < tokens->n; i++) {
        const char *s;
        size_t n;
        or1_gguf_array_str(tokens, i, &s, &n);
        char *tok = str_dup(s, n);
        int64_t ty = types ? or1_gguf_array_int(types, i) : TT_NORMAL;
        if (ty < TT_NORMAL || ty > TT_BYTE) {
            free(tok);
            return or1_fail("%s: tokenizer.ggml.token_type[%llu] is %lld (1 to 6)", f->path, (unsigned long long)i,
                            (long long)ty);
        }
        if (strlen(tok) != n) {
            free(tok);
            return or1_fail("%s: tokenizer.ggml.tokens[%llu] holds a NUL byte", f->path, (unsigned long long)i);
        }
        cJSON_AddNumberToObject(vocab, tok, (double)i); /* a repeated spelling keeps its id too */
        if (ty == TT_CONTROL || ty == TT_USER) {
            cJSON *a = cJSON_CreateObject();
            cJSON_AddNumberToObject(a, "id", (double)i);
            cJSON_AddStringToObject(a, "content", tok);
            cJSON_AddBoolToObject(a, "single_word", false);
            cJSON_AddBoolToObject(a, "lstrip", false);
            cJSON_AddBoolToObject(a, "rstrip", false);
            cJSON_AddBoolToObject(a, "normalized", false);
            cJSON_AddBoolToObject(a, "special", ty == TT_CONTROL);
            cJSON_AddItemToArray(added, a);
        }
        free(tok);
    }
    for (uint64_t i = 0; i < merges->n; i++) {
        const char *s;
        size_t n;
        or1_gguf_array_str(merges, i, &s, &n);
        char *m = str_dup(s, n);
        cJSON_AddItemToArray(ml, cJSON_CreateString(m));
        free(m);
    }
    return 0;
}

/* The name of token id of f into a new string, or NULL when the key is absent; an id outside the
 * vocabulary is an error naming the key. */
static int token_name(const or1_gguf_file *f, const char *key, char **out) {
    *out = NULL;
    int64_t id;
    int rc = or1_gguf_get_int(f, key, &id);
    if (rc) return rc < 0 ? -1 : 0;
    const or1_gguf_kv *tokens = or1_gguf_kv_find(f, "tokenizer.ggml.tokens");
    if (id < 0 || (uint64_t)id >= tokens->n)
        return or1_fail("%s: metadata key \"%s\" is %lld, outside the %llu tokens", f->path, key, (long long)id,
                        (unsigned long long)tokens->n);
    const char *s;
    size_t n;
    or1_gguf_array_str(tokens, (uint64_t)id, &s, &n);
    *out = str_dup(s, n);
    return 0;
}

/* TemplateProcessing that puts BOS before every encoded text (llama.cpp's add_bos). */
static cJSON *bos_template(const char *bos, int64_t id) {
    cJSON *p = cJSON_CreateObject(), *single = cJSON_AddArrayToObject(p, "single");
    cJSON_AddStringToObject(p, "type", "TemplateProcessing");
    cJSON *sp = cJSON_CreateObject(), *seq = cJSON_CreateObject();
    cJSON_AddStringToObject(cJSON_AddObjectToObject(sp, "SpecialToken"), "id", bos);
    cJSON_AddStringToObject(cJSON_AddObjectToObject(seq, "Sequence"), "id", "A");
    cJSON_AddItemToArray(single, sp);
    cJSON_AddItemToArray(single, seq);
    cJSON *st = cJSON_AddObjectToObject(cJSON_AddObjectToObject(p, "special_tokens"), bos);
    cJSON_AddStringToObject(st, "id", bos);
    cJSON_AddItemToObject(st, "ids", cJSON_CreateArray());
    cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(st, "ids"), cJSON_CreateNumber((double)id));
    cJSON_AddItemToObject(st, "tokens", cJSON_CreateStringArray(&bos, 1));
    return p;
}

/* The tokenizer_config.json keys: the special tokens by name, add_bos_token, the chat template. */
static int config_json(const or1_gguf_file *f, cJSON *cfg, bool *add_bos, char **bos) {
    static const char *const keys[][2] = {{"tokenizer.ggml.bos_token_id", "bos_token"},
                                          {"tokenizer.ggml.eos_token_id", "eos_token"},
                                          {"tokenizer.ggml.unknown_token_id", "unk_token"},
                                          {"tokenizer.ggml.padding_token_id", "pad_token"}};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        char *name;
        if (token_name(f, keys[i][0], &name)) return -1;
        if (name) cJSON_AddStringToObject(cfg, keys[i][1], name);
        if (i == 0) *bos = name;
        else free(name);
    }
    if (or1_gguf_get_bool(f, "tokenizer.ggml.add_bos_token", add_bos) < 0) return -1;
    bool add_eos = false;
    if (or1_gguf_get_bool(f, "tokenizer.ggml.add_eos_token", &add_eos) < 0) return -1;
    if (add_eos) return or1_fail("%s: metadata key \"tokenizer.ggml.add_eos_token\" is true: not supported", f->path);
    cJSON_AddBoolToObject(cfg, "add_bos_token", *add_bos);
    const char *tpl;
    size_t n;
    int rc = or1_gguf_get_str(f, "tokenizer.chat_template", &tpl, &n);
    if (rc < 0) return -1;
    if (rc == 0) {
        char *t = str_dup(tpl, n);
        cJSON_AddStringToObject(cfg, "chat_template", t);
        free(t);
    }
    return 0;
}

/* The pre-tokenizer row of f's tokenizer.ggml.pre; a missing or unknown name is an error. */
static const pre_row *gguf_pre(const or1_gguf_file *f) {
    const char *s;
    size_t n;
    char names[256];
    int rc = or1_gguf_get_str(f, "tokenizer.ggml.pre", &s, &n);
    if (rc < 0) return NULL;
    if (rc == 1) {
        or1_fail("%s: metadata key \"tokenizer.ggml.pre\" is missing (llama.cpp's \"default\" splitter is not "
                 "supported; known: %s)", f->path, pre_list(names, sizeof names));
        return NULL;
    }
    const pre_row *p = pre_find(s, n);
    if (!p)
        or1_fail("%s: tokenizer.ggml.pre \"%.*s\" is not supported (known: %s)", f->path, (int)(n < 64 ? n : 64), s,
                 pre_list(names, sizeof names));
    return p;
}

/* The tokenizer.json and tokenizer_config.json objects of f's metadata (new; cJSON_Delete). */
static int gguf_json(const or1_gguf_file *f, cJSON **root, cJSON **cfg) {
    *root = *cfg = NULL;
    const char *model;
    size_t n;
    int rc = or1_gguf_get_str(f, "tokenizer.ggml.model", &model, &n);
    if (rc) return rc < 0 ? -1 : or1_fail("%s: metadata key \"tokenizer.ggml.model\" is missing", f->path);
    if (n != 4 || memcmp(model, "gpt2", 4) != 0)
        return or1_fail("%s: tokenizer.ggml.model \"%.*s\" is not supported (only \"gpt2\", byte-level BPE)", f->path,
                        (int)(n < 64 ? n : 64), model);
    const pre_row *pre = gguf_pre(f);
    if (!pre) return -1;
    *root = cJSON_CreateObject();
    *cfg = cJSON_CreateObject();
    bool add_bos = pre->add_bos;
    char *bos = NULL;
    rc = vocab_json(f, pre, *root);
    if (rc == 0) rc = config_json(f, *cfg, &add_bos, &bos);
    if (rc == 0) {
        cJSON_AddItemToObject(*root, "normalizer", cJSON_CreateNull());
        cJSON_AddItemToObject(*root, "pre_tokenizer", cJSON_Parse(pre->json));
        int64_t id = 0;
        or1_gguf_get_int(f, "tokenizer.ggml.bos_token_id", &id);
        if (add_bos && !bos) rc = or1_fail("%s: add_bos_token is true but no tokenizer.ggml.bos_token_id", f->path);
        cJSON_AddItemToObject(*root, "post_processor", add_bos && bos ? bos_template(bos, id) : cJSON_CreateNull());
        cJSON_AddItemToObject(*root, "decoder", cJSON_Parse(BYTELEVEL("false")));
    }
    free(bos);
    if (rc) {
        cJSON_Delete(*root);
        cJSON_Delete(*cfg);
        *root = *cfg = NULL;
    }
    return rc;
}

/* Loads the tokenizer of a GGUF file. */
or1_tokenizer *tok_load_gguf(const char *path) {
    or1_gguf_file f;
    if (or1_gguf_open(&f, path)) return NULL;
    cJSON *root, *cfg;
    or1_tokenizer *t = gguf_json(&f, &root, &cfg) == 0 ? tok_load_objects(root, cfg, path) : NULL;
    cJSON_Delete(root);
    cJSON_Delete(cfg);
    or1_gguf_close(&f);
    return t;
}

/* Writes a JSON object to dir/name atomically. */
static int write_json(const cJSON *j, const char *dir, const char *name) {
    char *path = or1_path_join(dir, name), *text = cJSON_Print(j);
    int rc = or1_write_file_atomic(path, text, strlen(text));
    free(text);
    free(path);
    return rc;
}

/* True if path is a folder. */
static bool is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Puts the tokenizer files of src into dir: tokenizer.json and tokenizer_config.json converted
 * from a GGUF file's metadata, or copied from a folder other than dir (those it has; a file's
 * folder for a tokenizer.json path). */
int or1_tokenizer_carry(const char *src, const char *dir) {
    if (or1_gguf_is_gguf(src)) {
        or1_gguf_file f;
        if (or1_gguf_open(&f, src)) return -1;
        cJSON *root, *cfg;
        int rc = gguf_json(&f, &root, &cfg);
        or1_gguf_close(&f);
        if (rc == 0) rc = write_json(root, dir, "tokenizer.json");
        if (rc == 0) rc = write_json(cfg, dir, "tokenizer_config.json");
        cJSON_Delete(root);
        cJSON_Delete(cfg);
        return rc;
    }
    char *folder = or1_strdup(src);
    if (!is_dir(src)) {
        char *slash = strrchr(folder, '/');
        if (slash) *slash = '\0';
        else strcpy(folder, ".");
    }
    int rc = 0;
    static const char *const names[] = {"tokenizer.json", "tokenizer_config.json"};
    for (size_t i = 0; rc == 0 && strcmp(folder, dir) != 0 && i < sizeof names / sizeof *names; i++) {
        char *from = or1_path_join(folder, names[i]), *to = or1_path_join(dir, names[i]);
        rc = or1_is_file(from) ? or1_copy_file_atomic(from, to) : 0;
        free(from);
        free(to);
    }
    free(folder);
    return rc;
}

/* Appends the signature of a pre_tokenizer object to buf: each step's kind and what changes its
 * splits (regex, digits one by one or in runs, ByteLevel's own regex and prefix space), so that
 * two files that split alike compare equal whatever their other keys. */
static void pre_signature(const cJSON *p, char *buf, size_t n, int depth) {
    const cJSON *ty = cJSON_GetObjectItemCaseSensitive(p, "type"), *e;
    size_t used = strlen(buf);
    if (!cJSON_IsString(ty) || depth > 4 || used >= n) return;
    if (strcmp(ty->valuestring, "Sequence") == 0) {
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(p, "pretokenizers")) pre_signature(e, buf, n, depth + 1);
        return;
    }
    const cJSON *rx = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(p, "pattern"), "Regex");
    const cJSON *beh = cJSON_GetObjectItemCaseSensitive(p, "behavior");
    snprintf(buf + used, n - used, "%s:%s:%s:%d:%d:%d;", ty->valuestring, cJSON_IsString(rx) ? rx->valuestring : "",
             cJSON_IsString(beh) ? beh->valuestring : "",
             cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "individual_digits")),
             !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(p, "use_regex")),
             cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "add_prefix_space")));
}

/* The table row whose pre_tokenizer splits as root's does, or NULL. */
static const pre_row *pre_of_json(const cJSON *root) {
    char want[4096] = "", have[4096];
    pre_signature(cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"), want, sizeof want, 0);
    for (int i = 0; i < N_PRE; i++) {
        cJSON *j = cJSON_Parse(PRE[i].json);
        have[0] = '\0';
        pre_signature(j, have, sizeof have, 0);
        cJSON_Delete(j);
        if (strcmp(want, have) == 0) return &PRE[i];
    }
    return NULL;
}

/* Reads a JSON file into a new object (NULL with the error set). */
static cJSON *read_json(const char *path) {
    char *text;
    size_t len;
    if (or1_read_file(path, MAX_JSON, &text, &len)) return NULL;
    cJSON *j = or1_json_parse(text, len, path);
    free(text);
    return j;
}

/* The tokenizer.json and tokenizer_config.json objects of src: a GGUF file's, or a folder's (the
 * config empty when the folder has none; chat_template.jinja beside it fills chat_template). */
static int source_json(const char *src, cJSON **root, cJSON **cfg) {
    if (or1_gguf_is_gguf(src)) {
        or1_gguf_file f;
        if (or1_gguf_open(&f, src)) return -1;
        int rc = gguf_json(&f, root, cfg);
        or1_gguf_close(&f);
        return rc;
    }
    char *tp = or1_path_join(src, "tokenizer.json"), *cp = or1_path_join(src, "tokenizer_config.json");
    char *jp = or1_path_join(src, "chat_template.jinja");
    *root = read_json(tp);
    *cfg = !*root ? NULL : or1_is_file(cp) ? read_json(cp) : cJSON_CreateObject();
    if (*cfg && !cJSON_GetObjectItemCaseSensitive(*cfg, "chat_template") && or1_is_file(jp)) {
        char *text;
        size_t len;
        if (or1_read_file(jp, MAX_JSON, &text, &len) == 0) cJSON_AddStringToObject(*cfg, "chat_template", text);
        free(text);
    }
    free(tp), free(cp), free(jp);
    return *root && *cfg ? 0 : -1;
}

/* The id of a token named in tokenizer_config.json (a string or {"content": ...}), or -1. */
static int64_t config_token_id(const or1_tokenizer *t, const cJSON *cfg, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (cJSON_IsObject(v)) v = cJSON_GetObjectItemCaseSensitive(v, "content");
    return cJSON_IsString(v) ? or1_tokenizer_token_id(t, v->valuestring) : -1;
}

/* tokenizer.ggml.tokens and token_type of a loaded tokenizer, in id order: each id's spelling in
 * tokenizer.json (the byte-level alphabet for vocabulary tokens, the text of added ones), special
 * added tokens as control, other added ones as user-defined, missing ids as unused "[PAD<id>]". */
static void tokens_meta(const or1_tokenizer *t, const cJSON *root, or1_gguf_writer *w) {
    size_t n = or1_tokenizer_vocab_size(t);
    char **s = or1_calloc(n, sizeof *s);
    size_t *len = or1_calloc(n, sizeof *len);
    int32_t *type = or1_calloc(n, sizeof *type);
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "model"), "vocab"))
        if (cJSON_IsNumber(e) && e->valuedouble >= 0 && (size_t)e->valuedouble < n && !s[(size_t)e->valuedouble]) {
            s[(size_t)e->valuedouble] = or1_strdup(e->string);
            type[(size_t)e->valuedouble] = TT_NORMAL;
        }
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(root, "added_tokens")) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id"), *c = cJSON_GetObjectItemCaseSensitive(e, "content");
        if (!cJSON_IsNumber(id) || !cJSON_IsString(c) || id->valuedouble < 0 || (size_t)id->valuedouble >= n) continue;
        size_t i = (size_t)id->valuedouble;
        free(s[i]);
        s[i] = or1_strdup(c->valuestring);
        type[i] = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "special")) ? TT_CONTROL : TT_USER;
    }
    for (size_t i = 0; i < n; i++) {
        if (!s[i]) {
            char pad[32];
            snprintf(pad, sizeof pad, "[PAD%zu]", i);
            s[i] = or1_strdup(pad);
            type[i] = TT_UNUSED;
        }
        len[i] = strlen(s[i]);
    }
    or1_gguf_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)s, len, n);
    or1_gguf_set_arr_i32(w, "tokenizer.ggml.token_type", type, n);
    for (size_t i = 0; i < n; i++) free(s[i]);
    free(s), free(len), free(type);
}

/* tokenizer.ggml.merges: each merge as "left right" (tokenizer.json's strings, or its pairs
 * joined by one space). */
static int merges_meta(const cJSON *root, const char *where, or1_gguf_writer *w) {
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "model"), "merges"), *e;
    size_t n = (size_t)cJSON_GetArraySize(m), i = 0;
    char **s = or1_calloc(n ? n : 1, sizeof *s);
    size_t *len = or1_calloc(n ? n : 1, sizeof *len);
    int rc = 0;
    cJSON_ArrayForEach(e, m) {
        const cJSON *a = cJSON_GetArrayItem(e, 0), *b = cJSON_GetArrayItem(e, 1);
        if (cJSON_IsString(e)) {
            s[i] = or1_strdup(e->valuestring);
        } else if (cJSON_IsArray(e) && cJSON_IsString(a) && cJSON_IsString(b)) {
            s[i] = or1_malloc(strlen(a->valuestring) + strlen(b->valuestring) + 2);
            sprintf(s[i], "%s %s", a->valuestring, b->valuestring);
        } else {
            rc = or1_fail("%s: model.merges[%zu] is neither a string nor a pair of strings", where, i);
            break;
        }
        len[i] = strlen(s[i]);
        i++;
    }
    if (rc == 0) or1_gguf_set_arr_str(w, "tokenizer.ggml.merges", (const char *const *)s, len, n);
    for (size_t k = 0; k < n; k++) free(s[k]);
    free(s), free(len);
    return rc;
}

/* The special-token ids, add_bos_token and the chat template of the config. */
static void specials_meta(const or1_tokenizer *t, const cJSON *cfg, or1_gguf_writer *w) {
    static const char *const keys[][2] = {{"bos_token", "tokenizer.ggml.bos_token_id"},
                                          {"eos_token", "tokenizer.ggml.eos_token_id"},
                                          {"unk_token", "tokenizer.ggml.unknown_token_id"},
                                          {"pad_token", "tokenizer.ggml.padding_token_id"}};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        int64_t id = config_token_id(t, cfg, keys[i][0]);
        if (id >= 0) or1_gguf_set_u32(w, keys[i][1], (uint32_t)id);
    }
    or1_gguf_set_bool(w, "tokenizer.ggml.add_bos_token", cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cfg, "add_bos_token")));
    or1_gguf_set_bool(w, "tokenizer.ggml.add_eos_token", false);
    const cJSON *tpl = cJSON_GetObjectItemCaseSensitive(cfg, "chat_template");
    if (cJSON_IsString(tpl)) or1_gguf_set_str(w, "tokenizer.chat_template", tpl->valuestring, strlen(tpl->valuestring));
}

/* Adds the tokenizer of src (a folder or a GGUF file) to w as llama.cpp reads it: the gpt2
 * model, the pre-tokenizer by llama.cpp's name, tokens, types, merges, special ids, add_bos and
 * the chat template. A pre-tokenizer the table does not know is an error. */
int or1_tokenizer_gguf_meta(const char *src, or1_gguf_writer *w) {
    cJSON *root = NULL, *cfg = NULL;
    or1_tokenizer *t = NULL;
    int rc = source_json(src, &root, &cfg);
    const pre_row *pre = rc == 0 ? pre_of_json(root) : NULL;
    char names[256];
    if (rc == 0 && !pre)
        rc = or1_fail("%s: its pre_tokenizer matches none llama.cpp names (known: %s)", src, pre_list(names, sizeof names));
    if (rc == 0 && !(t = tok_load_objects(root, cfg, src))) rc = -1;
    if (rc == 0) {
        or1_gguf_set_str(w, "tokenizer.ggml.model", "gpt2", 4);
        or1_gguf_set_str(w, "tokenizer.ggml.pre", pre->names[0], strlen(pre->names[0]));
        tokens_meta(t, root, w);
        rc = merges_meta(root, src, w);
    }
    if (rc == 0) specials_meta(t, cfg, w);
    or1_tokenizer_free(t);
    cJSON_Delete(root);
    cJSON_Delete(cfg);
    return rc;
}
