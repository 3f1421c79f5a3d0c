/* Internal structures of the tokenizer module, shared by its source files. */
#ifndef OR1_TOK_INTERNAL_H
#define OR1_TOK_INTERNAL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include "or1/tokenizer.h"

#include <pcre2.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    TOK_MAX_ID = 1 << 24,       /* ids at or above this are rejected at load */
    TOK_MAX_TOKEN_BYTES = 4096, /* longest token string accepted at load */
    TOK_MAX_STEPS = 16,         /* normalizer / pre-tokenizer components */
    TOK_CACHE_WORD = 128,       /* longest pre-token whose BPE result is cached */
};

/* The special tokens a chat template sees, in transformers' order. */
enum { TOK_BOS, TOK_EOS, TOK_UNK, TOK_SEP, TOK_PAD, TOK_CLS, TOK_MASK, TOK_N_SPECIAL };

/* Per-id flags. */
enum { TOKF_PRESENT = 1, TOKF_SPECIAL = 2 };

/* A growable array of token ids. */
typedef struct {
    int32_t *v;
    size_t n, cap;
} tok_ids;

/* Open-addressing map from byte strings (stored in the tokenizer's pool) to ids. */
typedef struct {
    int32_t *slot; /* id + 1; 0 is empty */
    size_t mask;
} tok_strmap;

/* Open-addressing map from a pair of ids to (merge rank, merged id). */
typedef struct {
    uint64_t *key; /* (left << 32 | right), UINT64_MAX is empty */
    uint64_t *val; /* (rank << 32 | merged id) */
    size_t mask;
} tok_pairmap;

/* An added token as tokenizer.json describes it. */
typedef struct {
    int32_t id;
    char *content;
    size_t len;
    bool special, lstrip, rstrip, single_word, normalized;
} tok_added;

/* A byte trie over added-token contents, for leftmost-longest matching. */
typedef struct {
    struct tok_trie_node {
        int32_t child, sibling; /* node indices, -1 for none */
        int32_t added;          /* index into added[] of the token ending here, or -1 */
        uint8_t byte;
    } *node;
    size_t n, cap;
    uint8_t first[32]; /* bitmap of bytes that can start a match */
} tok_trie;

/* Normalizer components (applied in order). */
typedef enum { NORM_NFC, NORM_NFD, NORM_NFKC, NORM_NFKD, NORM_LOWERCASE } tok_norm;

/* How a Split pre-tokenizer treats what its pattern matches. */
typedef enum {
    SPLIT_REMOVED,
    SPLIT_ISOLATED,
    SPLIT_MERGED_PREV,
    SPLIT_MERGED_NEXT,
    SPLIT_CONTIGUOUS
} tok_split_behavior;

/* One pre-tokenizer step: a regex split, or ByteLevel's prefix space. */
typedef struct {
    enum { STEP_SPLIT, STEP_PREFIX_SPACE } kind;
    pcre2_code *re;
    tok_split_behavior behavior;
    bool invert;
    bool jit; /* re has JIT code: call pcre2_jit_match directly */
} tok_step;

/* A cached BPE result: the pre-token's bytes followed by its ids. */
typedef struct {
    uint64_t hash;
    uint32_t len, n;
    int32_t ids[];
} tok_cache_entry;

struct or1_tokenizer {
    /* Token strings as raw bytes, by id. */
    char *pool;
    size_t pool_len, pool_cap;
    uint32_t *tok_off, *tok_len;
    uint8_t *tok_flags;
    size_t n_ids;

    /* The BPE model. */
    tok_strmap vocab; /* model vocabulary only */
    tok_pairmap merges;
    int32_t byte_id[256]; /* id of each single byte, or -1 */
    bool ignore_merges;
    int32_t unk_id;

    /* Added tokens: matched on raw text (not normalized) and on normalized text. */
    tok_added *added;
    size_t n_added;
    tok_trie trie_raw, trie_norm;

    tok_norm norm[TOK_MAX_STEPS];
    size_t n_norm;
    tok_step step[TOK_MAX_STEPS];
    size_t n_step;

    /* Post-processor single template: ids before and after the sequence. */
    int32_t *post_pre, *post_post;
    size_t n_post_pre, n_post_post;

    /* From tokenizer_config.json. */
    int32_t bos_id, eos_id;
    char *special[TOK_N_SPECIAL]; /* bos_token, eos_token, ... as strings (tok_special_names), or NULL */
    char *chat_source;            /* the Jinja chat template, rendered when no family is named */
    size_t chat_source_len;
    const char *chat_name; /* recognised template, NULL if unknown */
    char *chat_default_system;
    bool chat_opens_think; /* the ChatML generation prompt opens <think> (QwQ) */
    bool chat_qwen3_reasoning; /* ChatML assistant turns rewritten around </think> (Qwen3) */
    bool chat_gen_always;      /* the template opens the assistant turn whatever add_generation_prompt
                                  says (Llama 3's first template) */
    bool chat_thinking_switch; /* enable_thinking false closes an empty <think> block (Qwen3) */
    int chat_join_systems; /* DeepSeek: 1 joins system prompts, 0 keeps the last, -1 by name */

    /* Scratch spaces of finished encodes, reused by the next ones. */
    pthread_mutex_t work_lock;
    struct tok_work *work_free;

    /* BPE cache: insert-only, lock-free; entries live until the tokenizer is freed. A
     * slot holds an entry's address with 16 bits of its hash above bit 48, so a probe
     * rejects most non-matching slots without touching the entry. */
    _Atomic uint64_t *cache;
    size_t cache_mask, cache_limit;
    atomic_size_t cache_count;
};

/* bytes.c */
void tok_ids_push(tok_ids *a, int32_t id);
void tok_ids_append(tok_ids *a, const int32_t *v, size_t n);
uint64_t tok_hash(const void *p, size_t n);
/* Offset of the first invalid UTF-8 byte of s, or len if it is all valid. */
size_t tok_utf8_check(const char *s, size_t len);
/* Decodes one code point of valid UTF-8 at s; returns its length. */
int tok_utf8_next(const unsigned char *s, int32_t *cp);
/* Byte-level alphabet: the byte a code point stands for, or -1. */
int tok_byte_of_char(int32_t cp);
/* Appends the UTF-8 encoding of cp to buf (room for 4 bytes needed). */
int tok_utf8_put(char *buf, int32_t cp);

/* maps.c */
void tok_strmap_init(tok_strmap *m, size_t n);
void tok_strmap_free(tok_strmap *m);
/* Inserts id under its pool string (replaces an entry with equal bytes). */
void tok_strmap_put(tok_strmap *m, const or1_tokenizer *t, int32_t id);
int32_t tok_strmap_get(const tok_strmap *m, const or1_tokenizer *t, const char *s, size_t n);
void tok_pairmap_init(tok_pairmap *m, size_t n);
void tok_pairmap_free(tok_pairmap *m);
void tok_pairmap_put(tok_pairmap *m, int32_t a, int32_t b, uint32_t rank, int32_t merged);
/* Looks up a pair: true and rank/merged set when the pair merges. */
bool tok_pairmap_get(const tok_pairmap *m, int32_t a, int32_t b, uint32_t *rank, int32_t *merged);

/* bpe.c */
void tok_cache_init(or1_tokenizer *t, size_t slots);
void tok_cache_free(or1_tokenizer *t);
/* BPE of one pre-token (raw bytes), appending its ids. */
void tok_bpe_word(const or1_tokenizer *t, const char *w, size_t n, tok_ids *out);

/* added.c */
void tok_trie_add(tok_trie *tr, const char *s, size_t n, int32_t added);
void tok_trie_free(tok_trie *tr);
/* A piece of text between added-token matches, or one match. */
typedef struct {
    size_t start, end;
    int32_t id; /* -1 for plain text */
} tok_piece;
/* Splits text[0, len) at added tokens of trie (honouring lstrip/rstrip/single_word and
 * skipping special ones when split_special), into a new array *pieces. */
void tok_split_added(const or1_tokenizer *t, const tok_trie *tr, const char *text, size_t len,
                     bool split_special, tok_piece **pieces, size_t *n);

/* pretok.c */
/* Scratch space (regex match state, span lists) of one encode call. */
typedef struct tok_work tok_work;
/* Takes a scratch space from t's pool (or a new one); give it back with tok_work_put. */
tok_work *tok_work_get(const or1_tokenizer *t);
void tok_work_put(const or1_tokenizer *t, tok_work *w);
/* Frees every pooled scratch space (at tokenizer free). */
void tok_work_free_all(or1_tokenizer *t);
/* Normalizes text into a new buffer (or returns NULL when it is unchanged). */
char *tok_normalize(const or1_tokenizer *t, const char *text, size_t len, size_t *out_len);
/* Pre-tokenizes and BPE-encodes one normalized segment, appending ids. */
int tok_encode_segment(const or1_tokenizer *t, tok_work *w, const char *s, size_t len,
                       tok_ids *out);

/* load.c / chat.c / gguf.c / open.c */
/* A tokenizer from parsed tokenizer.json and tokenizer_config.json objects (cfg may be NULL). */
or1_tokenizer *tok_load_objects(const cJSON *root, const cJSON *cfg, const char *where);
/* The tokenizer of a GGUF file's metadata (tokenizer.ggml.*, tokenizer.chat_template). */
or1_tokenizer *tok_load_gguf(const char *path);
/* The tokenizer of a tokenizer.json (and the tokenizer_config.json beside it), file or folder. */
or1_tokenizer *tok_load_json(const char *path);
int tok_load_config(or1_tokenizer *t, const char *dir);
/* Applies a tokenizer_config.json object (where names it in messages); *have_tpl: it held a
 * chat template. */
int tok_apply_config(or1_tokenizer *t, const cJSON *cfg, const char *where, bool *have_tpl);
/* The names of the special tokens a chat template sees (transformers' special_tokens_map). */
extern const char *const tok_special_names[TOK_N_SPECIAL];
/* Sets special token i (TOK_BOS, TOK_EOS, ...) to a copy of text (NULL: none); a GGUF loader
 * calls it with the token strings of its metadata. */
void tok_set_special(or1_tokenizer *t, int i, const char *text);
/* Takes a copy of a Jinja chat template source (tokenizer_config.json's chat_template, the
 * chat_template.jinja file, or GGUF's tokenizer.chat_template) and recognises its family;
 * or1_tokenizer_chat renders it when no family is named. */
int tok_set_chat_source(or1_tokenizer *t, const char *src, size_t len);

#endif
