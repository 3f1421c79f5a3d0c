/* Loading a Hugging Face tokenizer.json of the byte-level BPE family. Nothing in the file
 * is trusted: ids are range-checked, lengths bounded, every component type validated,
 * and errors name the file and the JSON path of the fault. */
#include "tok.h"

#include "or1/core.h"
#include "or1/io.h"

#include <cjson/cJSON.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { MAX_FILE = 512 << 20, CACHE_SLOTS = 1 << 18 };

/* The GPT-2 pre-tokenizer regex, used by ByteLevel when use_regex is true. */
static const char GPT2_PATTERN[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/* Load-time state: the file name for messages. */
typedef struct {
    const char *path;
    or1_tokenizer *t;
    int prefix_steps;
} loader;

/* Copies bytes into the token pool; returns their offset. */
static uint32_t pool_add(or1_tokenizer *t, const char *s, size_t n) {
    if (t->pool_len + n > t->pool_cap) {
        while (t->pool_len + n > t->pool_cap) t->pool_cap = t->pool_cap ? t->pool_cap * 2 : 1 << 20;
        t->pool = or1_realloc(t->pool, t->pool_cap);
    }
    memcpy(t->pool + t->pool_len, s, n);
    uint32_t off = (uint32_t)t->pool_len;
    t->pool_len += n;
    return off;
}

/* Turns a token as tokenizer.json spells it into the bytes it stands for: each character
 * of the byte-level alphabet is one byte. A string with other characters is kept as its
 * own UTF-8 (as the ByteLevel decoder does). Returns the length written to raw. */
static size_t token_bytes(const char *s, size_t n, char *raw) {
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        int32_t c;
        i += (size_t)tok_utf8_next((const unsigned char *)s + i, &c);
        int b = tok_byte_of_char(c);
        if (b < 0) {
            memcpy(raw, s, n);
            return n;
        }
        raw[k++] = (char)b;
    }
    return k;
}

/* Checks that a token string is well-formed and not too long. */
static int check_token(const loader *L, const char *where, const char *s, size_t n) {
    if (n == 0) return or1_fail("%s: %s: empty token", L->path, where);
    if (n > TOK_MAX_TOKEN_BYTES)
        return or1_fail("%s: %s: token of %zu bytes is over the limit of %d", L->path, where, n,
                        TOK_MAX_TOKEN_BYTES);
    if (tok_utf8_check(s, n) < n) return or1_fail("%s: %s: token is not valid UTF-8", L->path, where);
    return 0;
}

/* An optional boolean member (default when absent or null). */
static int get_bool(const loader *L, const cJSON *o, const char *key, bool def, bool *out,
                    const char *where) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v || cJSON_IsNull(v)) {
        *out = def;
        return 0;
    }
    if (!cJSON_IsBool(v)) return or1_fail("%s: %s.%s must be true or false", L->path, where, key);
    *out = cJSON_IsTrue(v);
    return 0;
}

/* An integer id in [0, TOK_MAX_ID). */
static int get_id(const loader *L, const cJSON *v, int32_t *out, const char *where) {
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble >= TOK_MAX_ID ||
        v->valuedouble != (double)(int32_t)v->valuedouble)
        return or1_fail("%s: %s: id must be an integer in [0, %d)", L->path, where, TOK_MAX_ID);
    *out = (int32_t)v->valuedouble;
    return 0;
}

/* The "type" string of a component object, or NULL with an error. */
static const char *get_type(const loader *L, const cJSON *o, const char *where) {
    const cJSON *ty = cJSON_GetObjectItemCaseSensitive(o, "type");
    if (!cJSON_IsObject(o) || !cJSON_IsString(ty)) {
        or1_fail("%s: %s must be an object with a \"type\" string", L->path, where);
        return NULL;
    }
    return ty->valuestring;
}

/* Sizes the id tables to one past the largest id of the vocabulary and added tokens. */
static int size_ids(loader *L, const cJSON *vocab, const cJSON *added) {
    int32_t max = -1, id = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, vocab) {
        if (get_id(L, e, &id, "model.vocab") != 0) return or1_fail_ctx("\"%s\"", e->string);
        if (id > max) max = id;
    }
    cJSON_ArrayForEach(e, added) {
        if (get_id(L, cJSON_GetObjectItemCaseSensitive(e, "id"), &id, "added_tokens") != 0) return -1;
        if (id > max) max = id;
    }
    if (max < 0) return or1_fail("%s: model.vocab is empty", L->path);
    or1_tokenizer *t = L->t;
    t->n_ids = (size_t)max + 1;
    t->tok_off = or1_calloc(t->n_ids, sizeof *t->tok_off);
    t->tok_len = or1_calloc(t->n_ids, sizeof *t->tok_len);
    t->tok_flags = or1_calloc(t->n_ids, 1);
    return 0;
}

/* model.vocab: token string -> id, into the pool and the string map. */
static int load_vocab(loader *L, const cJSON *vocab) {
    or1_tokenizer *t = L->t;
    tok_strmap_init(&t->vocab, (size_t)cJSON_GetArraySize(vocab));
    char raw[TOK_MAX_TOKEN_BYTES];
    const cJSON *e;
    cJSON_ArrayForEach(e, vocab) {
        size_t n = strlen(e->string);
        if (check_token(L, "model.vocab", e->string, n) != 0) return -1;
        int32_t id = (int32_t)e->valuedouble;
        if (t->tok_flags[id] & TOKF_PRESENT)
            return or1_fail("%s: model.vocab: id %d is given to two tokens", L->path, id);
        size_t k = token_bytes(e->string, n, raw);
        t->tok_off[id] = pool_add(t, raw, k);
        t->tok_len[id] = (uint32_t)k;
        t->tok_flags[id] = TOKF_PRESENT;
        tok_strmap_put(&t->vocab, t, id);
    }
    for (int b = 0; b < 256; b++) {
        char c = (char)b;
        t->byte_id[b] = tok_strmap_get(&t->vocab, t, &c, 1);
    }
    return 0;
}

/* added_tokens: their flags and ids; an added token overrides the vocabulary's string. */
static int load_added(loader *L, const cJSON *added) {
    or1_tokenizer *t = L->t;
    size_t n = (size_t)cJSON_GetArraySize(added);
    t->added = or1_calloc(n ? n : 1, sizeof *t->added);
    const cJSON *e;
    cJSON_ArrayForEach(e, added) {
        char where[64];
        snprintf(where, sizeof where, "added_tokens[%zu]", t->n_added);
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "content");
        if (!cJSON_IsString(c)) return or1_fail("%s: %s.content must be a string", L->path, where);
        tok_added *a = &t->added[t->n_added];
        a->len = strlen(c->valuestring);
        if (check_token(L, where, c->valuestring, a->len) != 0) return -1;
        get_id(L, cJSON_GetObjectItemCaseSensitive(e, "id"), &a->id, where);
        a->content = or1_strdup(c->valuestring);
        t->n_added++;
        if (get_bool(L, e, "special", false, &a->special, where) ||
            get_bool(L, e, "lstrip", false, &a->lstrip, where) ||
            get_bool(L, e, "rstrip", false, &a->rstrip, where) ||
            get_bool(L, e, "single_word", false, &a->single_word, where) ||
            get_bool(L, e, "normalized", !a->special, &a->normalized, where))
            return -1;
        t->tok_off[a->id] = pool_add(t, a->content, a->len);
        t->tok_len[a->id] = (uint32_t)a->len;
        t->tok_flags[a->id] = TOKF_PRESENT | (a->special ? TOKF_SPECIAL : 0);
    }
    return 0;
}

/* The two halves of merge i: "a b" or ["a", "b"]. */
static int merge_parts(const loader *L, const cJSON *m, size_t i, const char **a, size_t *an,
                       const char **b, size_t *bn, char *buf, size_t cap) {
    if (cJSON_IsArray(m) && cJSON_GetArraySize(m) == 2 && cJSON_IsString(cJSON_GetArrayItem(m, 0)) &&
        cJSON_IsString(cJSON_GetArrayItem(m, 1))) {
        *a = cJSON_GetArrayItem(m, 0)->valuestring;
        *b = cJSON_GetArrayItem(m, 1)->valuestring;
        *an = strlen(*a);
        *bn = strlen(*b);
        return 0;
    }
    if (!cJSON_IsString(m))
        return or1_fail("%s: model.merges[%zu] must be \"a b\" or [\"a\", \"b\"]", L->path, i);
    const char *s = m->valuestring, *sp = strchr(s, ' ');
    size_t n = strlen(s);
    if (!sp || sp == s || !sp[1] || strchr(sp + 1, ' ') || n >= cap)
        return or1_fail("%s: model.merges[%zu] \"%.64s\" is not two tokens split by one space",
                        L->path, i, s);
    memcpy(buf, s, n + 1);
    buf[sp - s] = '\0';
    *a = buf;
    *an = (size_t)(sp - s);
    *b = buf + *an + 1;
    *bn = n - *an - 1;
    return 0;
}

/* model.merges in rank order: each pair of vocabulary tokens and the token they form. */
static int load_merges(loader *L, const cJSON *merges) {
    or1_tokenizer *t = L->t;
    size_t n = (size_t)cJSON_GetArraySize(merges), i = 0;
    tok_pairmap_init(&t->merges, n);
    char *buf = or1_malloc(2 * TOK_MAX_TOKEN_BYTES + 2);
    char ra[TOK_MAX_TOKEN_BYTES], rab[2 * TOK_MAX_TOKEN_BYTES];
    int rc = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, merges) {
        const char *a = NULL, *b = NULL;
        size_t an = 0, bn = 0;
        if (merge_parts(L, m, i, &a, &an, &b, &bn, buf, 2 * TOK_MAX_TOKEN_BYTES + 2) != 0) {
            rc = -1;
            break;
        }
        if (check_token(L, "model.merges", a, an) || check_token(L, "model.merges", b, bn)) {
            rc = or1_fail_ctx("merge %zu", i);
            break;
        }
        size_t ka = token_bytes(a, an, ra);
        memcpy(rab, ra, ka);
        size_t kb = token_bytes(b, bn, rab + ka);
        int32_t ia = tok_strmap_get(&t->vocab, t, ra, ka);
        int32_t ib = tok_strmap_get(&t->vocab, t, rab + ka, kb);
        int32_t iab = tok_strmap_get(&t->vocab, t, rab, ka + kb);
        if (ia < 0 || ib < 0 || iab < 0) {
            rc = or1_fail("%s: model.merges[%zu] (\"%.64s\", \"%.64s\"): %s not in the vocabulary",
                            L->path, i, a, b, ia < 0 ? "first token" : ib < 0 ? "second token" : "merged token");
            break;
        }
        tok_pairmap_put(&t->merges, ia, ib, (uint32_t)i, iab);
        i++;
    }
    free(buf);
    return rc;
}

/* The "model" object: a BPE without word prefixes/suffixes, dropout or byte fallback. */
static int load_model(loader *L, const cJSON *root) {
    or1_tokenizer *t = L->t;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (!cJSON_IsObject(model)) return or1_fail("%s: missing the \"model\" object", L->path);
    const cJSON *ty = cJSON_GetObjectItemCaseSensitive(model, "type");
    if (ty && !(cJSON_IsString(ty) && strcmp(ty->valuestring, "BPE") == 0))
        return or1_fail("%s: model.type %s is not supported (only BPE)", L->path,
                        cJSON_IsString(ty) ? ty->valuestring : "(not a string)");
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
    if (!cJSON_IsObject(vocab)) return or1_fail("%s: model.vocab must be an object", L->path);
    if (!cJSON_IsArray(merges)) return or1_fail("%s: model.merges must be an array", L->path);
    if (added && !cJSON_IsNull(added) && !cJSON_IsArray(added))
        return or1_fail("%s: added_tokens must be an array", L->path);
    bool fb = false;
    if (get_bool(L, model, "byte_fallback", false, &fb, "model") != 0) return -1;
    if (fb) return or1_fail("%s: model.byte_fallback is not supported", L->path);
    if (get_bool(L, model, "ignore_merges", false, &t->ignore_merges, "model") != 0) return -1;
    const char *affix[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (int i = 0; i < 2; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(model, affix[i]);
        if (v && !cJSON_IsNull(v) && !(cJSON_IsString(v) && v->valuestring[0] == '\0'))
            return or1_fail("%s: model.%s is not supported", L->path, affix[i]);
    }
    const cJSON *drop = cJSON_GetObjectItemCaseSensitive(model, "dropout");
    if (drop && !cJSON_IsNull(drop) && !(cJSON_IsNumber(drop) && drop->valuedouble == 0))
        return or1_fail("%s: model.dropout is not supported", L->path);
    if (size_ids(L, vocab, cJSON_IsArray(added) ? added : NULL) != 0) return -1;
    if (load_vocab(L, vocab) != 0) return -1;
    if (cJSON_IsArray(added) && load_added(L, added) != 0) return -1;
    if (load_merges(L, merges) != 0) return -1;
    t->unk_id = -1;
    const cJSON *unk = cJSON_GetObjectItemCaseSensitive(model, "unk_token");
    if (cJSON_IsString(unk)) t->unk_id = or1_tokenizer_token_id(t, unk->valuestring);
    return 0;
}

/* One normalizer component (Sequence flattens). */
static int load_normalizer(loader *L, const cJSON *n, int depth) {
    if (!n || cJSON_IsNull(n)) return 0;
    const char *ty = get_type(L, n, "normalizer");
    if (!ty) return -1;
    or1_tokenizer *t = L->t;
    if (strcmp(ty, "Sequence") == 0) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(n, "normalizers"), *e;
        if (!cJSON_IsArray(list) || depth > 4)
            return or1_fail("%s: normalizer Sequence needs a \"normalizers\" array", L->path);
        cJSON_ArrayForEach(e, list) if (load_normalizer(L, e, depth + 1) != 0) return -1;
        return 0;
    }
    static const struct {
        const char *name;
        tok_norm form;
    } forms[] = {{"NFC", NORM_NFC}, {"NFD", NORM_NFD}, {"NFKC", NORM_NFKC},
                 {"NFKD", NORM_NFKD}, {"Lowercase", NORM_LOWERCASE}};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        if (strcmp(ty, forms[i].name) != 0) continue;
        if (t->n_norm == TOK_MAX_STEPS) return or1_fail("%s: too many normalizers", L->path);
        t->norm[t->n_norm++] = forms[i].form;
        return 0;
    }
    return or1_fail("%s: normalizer type \"%s\" is not supported", L->path, ty);
}

/* The regex with \s and \S spelled \p{White_Space} and \P{White_Space}, in a new string:
 * Hugging Face runs these patterns through Oniguruma, whose \s is Unicode's White_Space, where
 * PCRE2's also takes U+180E (MONGOLIAN VOWEL SEPARATOR, a format character since Unicode 6.3).
 * Other escapes go through as pairs, and text quoted by \Q...\E as it is. */
static char *white_space_classes(const char *pat) {
    size_t n = strlen(pat);
    char *out = or1_malloc(n * 8 + 1), *w = out;
    bool quoted = false;
    for (size_t i = 0; i < n; i++) {
        char c = pat[i], next = i + 1 < n ? pat[i + 1] : '\0';
        if (c != '\\' || !next || (quoted && next != 'E')) {
            *w++ = c;
            continue;
        }
        if (!quoted && (next == 's' || next == 'S')) {
            w += sprintf(w, "\\%c{White_Space}", next == 's' ? 'p' : 'P');
        } else {
            quoted = next == 'Q';
            *w++ = c;
            *w++ = next;
        }
        i++;
    }
    *w = '\0';
    return out;
}

/* Compiles a pre-tokenizer regex (UTF-8, Unicode classes, \s as White_Space) or literal string
 * with the JIT when available. */
static pcre2_code *compile_regex(const loader *L, const char *pat, bool literal) {
    int err;
    PCRE2_SIZE off;
    uint32_t opt = PCRE2_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
    char *spelled = literal ? NULL : white_space_classes(pat);
    const char *used = spelled ? spelled : pat;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)used, PCRE2_ZERO_TERMINATED, opt, &err, &off, NULL);
    if (!re) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(err, msg, sizeof msg);
        or1_fail("%s: pre_tokenizer pattern /%.80s/ at offset %zu: %s", L->path, used, (size_t)off,
                 (char *)msg);
    }
    free(spelled);
    return re;
}

/* Appends a regex split step. */
static int add_split(loader *L, const char *pat, bool literal, tok_split_behavior beh, bool invert) {
    or1_tokenizer *t = L->t;
    if (t->n_step == TOK_MAX_STEPS) return or1_fail("%s: too many pre-tokenizers", L->path);
    pcre2_code *re = compile_regex(L, pat, literal);
    if (!re) return -1;
    bool jit = pcre2_jit_compile(re, PCRE2_JIT_COMPLETE) == 0; /* else the interpreter */
    t->step[t->n_step++] = (tok_step){.kind = STEP_SPLIT, .re = re, .behavior = beh, .invert = invert,
                                      .jit = jit};
    return 0;
}

/* A Split pre-tokenizer: {"pattern": {"Regex"|"String": ...}, "behavior", "invert"}. */
static int load_split(loader *L, const cJSON *p) {
    const cJSON *pat = cJSON_GetObjectItemCaseSensitive(p, "pattern");
    const cJSON *rx = cJSON_GetObjectItemCaseSensitive(pat, "Regex");
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(pat, "String");
    const cJSON *beh = cJSON_GetObjectItemCaseSensitive(p, "behavior");
    if (!cJSON_IsString(rx) && !cJSON_IsString(st))
        return or1_fail("%s: Split pre_tokenizer needs pattern.Regex or pattern.String", L->path);
    static const char *names[] = {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext",
                                  "Contiguous"};
    int b = -1;
    for (int i = 0; i < 5 && cJSON_IsString(beh); i++)
        if (strcmp(beh->valuestring, names[i]) == 0) b = i;
    if (b < 0) return or1_fail("%s: Split pre_tokenizer has an unknown behavior", L->path);
    bool invert = false;
    if (get_bool(L, p, "invert", false, &invert, "pre_tokenizer") != 0) return -1;
    const char *s = cJSON_IsString(rx) ? rx->valuestring : st->valuestring;
    if (!*s) return or1_fail("%s: Split pre_tokenizer has an empty pattern", L->path);
    return add_split(L, s, !cJSON_IsString(rx), (tok_split_behavior)b, invert);
}

/* One pre-tokenizer component (Sequence flattens). */
static int load_pretokenizer(loader *L, const cJSON *p, int depth) {
    if (!p || cJSON_IsNull(p)) return 0;
    const char *ty = get_type(L, p, "pre_tokenizer");
    if (!ty) return -1;
    if (strcmp(ty, "Sequence") == 0) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(p, "pretokenizers"), *e;
        if (!cJSON_IsArray(list) || depth > 4)
            return or1_fail("%s: pre_tokenizer Sequence needs a \"pretokenizers\" array", L->path);
        cJSON_ArrayForEach(e, list) if (load_pretokenizer(L, e, depth + 1) != 0) return -1;
        return 0;
    }
    if (strcmp(ty, "Split") == 0) return load_split(L, p);
    if (strcmp(ty, "ByteLevel") == 0) {
        bool prefix = false, use_regex = true;
        if (get_bool(L, p, "add_prefix_space", false, &prefix, "pre_tokenizer") ||
            get_bool(L, p, "use_regex", true, &use_regex, "pre_tokenizer"))
            return -1;
        if (prefix) {
            if (L->prefix_steps++ || L->t->n_step == TOK_MAX_STEPS)
                return or1_fail("%s: only one ByteLevel pre_tokenizer may add a prefix space", L->path);
            L->t->step[L->t->n_step++] = (tok_step){.kind = STEP_PREFIX_SPACE, .re = NULL,
                                                    .behavior = SPLIT_ISOLATED, .invert = false,
                                                    .jit = false};
        }
        return use_regex ? add_split(L, GPT2_PATTERN, false, SPLIT_ISOLATED, false) : 0;
    }
    if (strcmp(ty, "Digits") == 0) {
        bool each = false;
        if (get_bool(L, p, "individual_digits", false, &each, "pre_tokenizer") != 0) return -1;
        return add_split(L, each ? "\\p{N}" : "\\p{N}+", false,
                         each ? SPLIT_ISOLATED : SPLIT_CONTIGUOUS, false);
    }
    return or1_fail("%s: pre_tokenizer type \"%s\" is not supported", L->path, ty);
}

/* Ids of a TemplateProcessing special token, by its name in special_tokens. */
static int template_ids(loader *L, const cJSON *specials, const char *name, tok_ids *out) {
    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(specials, name);
    const cJSON *ids = cJSON_GetObjectItemCaseSensitive(sp, "ids"), *e;
    if (!cJSON_IsArray(ids))
        return or1_fail("%s: post_processor.special_tokens has no ids for \"%.64s\"", L->path, name);
    cJSON_ArrayForEach(e, ids) {
        int32_t id = 0;
        if (get_id(L, e, &id, "post_processor.special_tokens") != 0) return -1;
        if ((size_t)id >= L->t->n_ids || !(L->t->tok_flags[id] & TOKF_PRESENT))
            return or1_fail("%s: post_processor: id %d is not in the vocabulary", L->path, id);
        tok_ids_push(out, id);
    }
    return 0;
}

/* TemplateProcessing: the single-sequence template, as ids before and after "A". */
static int load_template(loader *L, const cJSON *p) {
    const cJSON *single = cJSON_GetObjectItemCaseSensitive(p, "single"), *e;
    const cJSON *specials = cJSON_GetObjectItemCaseSensitive(p, "special_tokens");
    if (!cJSON_IsArray(single)) return or1_fail("%s: post_processor.single must be an array", L->path);
    tok_ids pre = {0}, post = {0};
    int seen_a = 0, rc = 0;
    cJSON_ArrayForEach(e, single) {
        const cJSON *sp = cJSON_GetObjectItemCaseSensitive(e, "SpecialToken");
        const cJSON *seq = cJSON_GetObjectItemCaseSensitive(e, "Sequence");
        const cJSON *sid = cJSON_GetObjectItemCaseSensitive(sp ? sp : seq, "id");
        if (!cJSON_IsString(sid)) {
            rc = or1_fail("%s: post_processor.single has an item without an id", L->path);
            break;
        }
        if (seq) {
            if (strcmp(sid->valuestring, "A") != 0 || seen_a++) {
                rc = or1_fail("%s: post_processor.single must hold sequence A once", L->path);
                break;
            }
        } else if ((rc = template_ids(L, specials, sid->valuestring, seen_a ? &post : &pre)) != 0) {
            break;
        }
    }
    if (rc == 0 && !seen_a) rc = or1_fail("%s: post_processor.single has no sequence", L->path);
    L->t->post_pre = pre.v;
    L->t->n_post_pre = pre.n;
    L->t->post_post = post.v;
    L->t->n_post_post = post.n;
    return rc;
}

/* The post-processor: TemplateProcessing, or ByteLevel / null that leave ids alone. */
static int load_post(loader *L, const cJSON *p, int depth) {
    if (!p || cJSON_IsNull(p)) return 0;
    const char *ty = get_type(L, p, "post_processor");
    if (!ty) return -1;
    if (strcmp(ty, "ByteLevel") == 0) return 0;
    if (strcmp(ty, "TemplateProcessing") == 0) {
        if (L->t->post_pre || L->t->post_post)
            return or1_fail("%s: more than one TemplateProcessing post_processor", L->path);
        return load_template(L, p);
    }
    if (strcmp(ty, "Sequence") == 0) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(p, "processors"), *e;
        if (!cJSON_IsArray(list) || depth > 4)
            return or1_fail("%s: post_processor Sequence needs a \"processors\" array", L->path);
        cJSON_ArrayForEach(e, list) if (load_post(L, e, depth + 1) != 0) return -1;
        return 0;
    }
    return or1_fail("%s: post_processor type \"%s\" is not supported", L->path, ty);
}

/* The decoder must be ByteLevel (possibly inside a Sequence), which decode() implements. */
static int check_decoder(loader *L, const cJSON *d, int depth) {
    const char *ty = get_type(L, d, "decoder");
    if (!ty) return -1;
    if (strcmp(ty, "ByteLevel") == 0) return 0;
    if (strcmp(ty, "Sequence") == 0 && depth < 4) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(d, "decoders"), *e;
        if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) == 0)
            return or1_fail("%s: decoder Sequence needs a \"decoders\" array", L->path);
        cJSON_ArrayForEach(e, list) if (check_decoder(L, e, depth + 1) != 0) return -1;
        return 0;
    }
    return or1_fail("%s: decoder type \"%s\" is not supported (only ByteLevel)", L->path, ty);
}

/* Builds the added-token tries: tokens marked normalized match after normalization (their
 * content normalized too), the others on the raw text. */
static void build_tries(or1_tokenizer *t) {
    for (size_t i = 0; i < t->n_added; i++) {
        tok_added *a = &t->added[i];
        if (!a->normalized) {
            tok_trie_add(&t->trie_raw, a->content, a->len, (int32_t)i);
            continue;
        }
        size_t n;
        char *norm = tok_normalize(t, a->content, a->len, &n);
        tok_trie_add(&t->trie_norm, norm ? norm : a->content, norm ? n : a->len, (int32_t)i);
        free(norm);
    }
}

/* Resolves PATH (file or directory) to the tokenizer.json file and its directory. */
static int resolve(const char *path, char **file, char **dir) {
    struct stat st;
    if (stat(path, &st) != 0) return or1_fail("%s: no such file or directory", path);
    if (S_ISDIR(st.st_mode)) {
        *file = or1_path_join(path, "tokenizer.json");
        *dir = or1_strdup(path);
    } else {
        *file = or1_strdup(path);
        char *tmp = or1_strdup(path);
        *dir = or1_strdup(dirname(tmp));
        free(tmp);
    }
    return 0;
}

/* Loads a parsed tokenizer.json into t. */
static int load_root(loader *L, const cJSON *root) {
    if (!cJSON_IsObject(root)) return or1_fail("%s: expected a JSON object", L->path);
    if (load_model(L, root) == 0 && load_normalizer(L, cJSON_GetObjectItemCaseSensitive(root, "normalizer"), 0) == 0 &&
        load_pretokenizer(L, cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"), 0) == 0 &&
        load_post(L, cJSON_GetObjectItemCaseSensitive(root, "post_processor"), 0) == 0 &&
        check_decoder(L, cJSON_GetObjectItemCaseSensitive(root, "decoder"), 0) == 0)
        return 0;
    return -1;
}

/* A new tokenizer with nothing loaded. */
static or1_tokenizer *tok_new(void) {
    or1_tokenizer *t = or1_calloc(1, sizeof *t);
    pthread_mutex_init(&t->work_lock, NULL);
    t->bos_id = t->eos_id = t->unk_id = -1;
    return t;
}

/* The tables built once the vocabulary is in: added-token tries and the BPE cache. */
static void tok_finish(or1_tokenizer *t) {
    build_tries(t);
    tok_cache_init(t, CACHE_SLOTS);
}

/* A tokenizer from parsed tokenizer.json and tokenizer_config.json objects (cfg may be NULL);
 * where names their source in messages. */
or1_tokenizer *tok_load_objects(const cJSON *root, const cJSON *cfg, const char *where) {
    or1_tokenizer *t = tok_new();
    loader L = {where, t, 0};
    bool have_tpl = false;
    int rc = load_root(&L, root);
    if (rc == 0) {
        tok_finish(t);
        rc = tok_load_config(t, NULL);
    }
    if (rc == 0 && cfg) rc = tok_apply_config(t, cfg, where, &have_tpl);
    if (rc != 0) {
        or1_tokenizer_free(t);
        return NULL;
    }
    return t;
}

/* Loads tokenizer.json (and tokenizer_config.json beside it) from a file or its folder. */
or1_tokenizer *tok_load_json(const char *path) {
    char *file = NULL, *dir = NULL, *text = NULL;
    size_t len;
    if (resolve(path, &file, &dir) != 0) return NULL;
    or1_tokenizer *t = tok_new();
    loader L = {file, t, 0};
    int rc = or1_read_file(file, MAX_FILE, &text, &len);
    if (rc == 0) {
        cJSON *root = or1_json_parse(text, len, file);
        rc = root ? load_root(&L, root) : -1;
        cJSON_Delete(root);
    }
    free(text);
    if (rc == 0) {
        tok_finish(t);
        rc = tok_load_config(t, dir);
    }
    free(file);
    free(dir);
    if (rc != 0) {
        or1_tokenizer_free(t);
        return NULL;
    }
    return t;
}

/* Frees everything the tokenizer owns. */
void or1_tokenizer_free(or1_tokenizer *t) {
    if (!t) return;
    free(t->pool);
    free(t->tok_off);
    free(t->tok_len);
    free(t->tok_flags);
    tok_strmap_free(&t->vocab);
    tok_pairmap_free(&t->merges);
    for (size_t i = 0; i < t->n_added; i++) free(t->added[i].content);
    free(t->added);
    tok_trie_free(&t->trie_raw);
    tok_trie_free(&t->trie_norm);
    for (size_t i = 0; i < t->n_step; i++) pcre2_code_free(t->step[i].re);
    free(t->post_pre);
    free(t->post_post);
    for (int i = 0; i < TOK_N_SPECIAL; i++) free(t->special[i]);
    free(t->chat_source);
    free(t->chat_default_system);
    tok_cache_free(t);
    tok_work_free_all(t);
    pthread_mutex_destroy(&t->work_lock);
    free(t);
}
