/* Encoding (added tokens, normalizer, pre-tokenizer, BPE, post-processor template),
 * decoding, and token look-ups. */
#include "tok.h"

#include "or1/core.h"

#include <stdlib.h>
#include <string.h>

/* Encodes one stretch of text between raw added tokens: normalize, split at normalized
 * added tokens, pre-tokenize and BPE the rest. */
static int encode_text(const or1_tokenizer *t, tok_work *w, const char *s, size_t len,
                       bool split_special, tok_ids *out) {
    size_t nlen;
    char *norm = tok_normalize(t, s, len, &nlen);
    const char *x = norm ? norm : s;
    if (!norm) nlen = len;
    int rc = 0;
    if (t->trie_norm.n == 0) {
        rc = tok_encode_segment(t, w, x, nlen, out);
    } else {
        tok_piece *p;
        size_t np;
        tok_split_added(t, &t->trie_norm, x, nlen, split_special, &p, &np);
        for (size_t i = 0; i < np && rc == 0; i++) {
            if (p[i].id >= 0) tok_ids_push(out, p[i].id);
            else rc = tok_encode_segment(t, w, x + p[i].start, p[i].end - p[i].start, out);
        }
        free(p);
    }
    free(norm);
    return rc;
}

/* The whole encode pipeline; see tokenizer.h. */
int or1_tokenizer_encode(const or1_tokenizer *t, const char *text, size_t len, unsigned flags,
                         int32_t **ids, size_t *n) {
    *ids = NULL;
    *n = 0;
    if (len > ((size_t)1 << 31)) return or1_fail("encode: text of %zu bytes is over 2 GiB", len);
    size_t bad = tok_utf8_check(text, len);
    if (bad < len) return or1_fail("encode: invalid UTF-8 at byte %zu", bad);
    bool split_special = (flags & OR1_TOK_SPLIT_SPECIAL) != 0;
    bool add = (flags & OR1_TOK_ADD_SPECIAL) != 0;
    tok_ids out = {0};
    if (add) tok_ids_append(&out, t->post_pre, t->n_post_pre);
    tok_piece *p;
    size_t np;
    tok_split_added(t, &t->trie_raw, text, len, split_special, &p, &np);
    tok_work *w = tok_work_get(t);
    int rc = 0;
    for (size_t i = 0; i < np && rc == 0; i++) {
        if (p[i].id >= 0) tok_ids_push(&out, p[i].id);
        else rc = encode_text(t, w, text + p[i].start, p[i].end - p[i].start, split_special, &out);
    }
    tok_work_put(t, w);
    free(p);
    if (rc != 0) {
        free(out.v);
        return -1;
    }
    if (add) tok_ids_append(&out, t->post_post, t->n_post_post);
    *ids = out.v ? out.v : or1_malloc(sizeof(int32_t));
    *n = out.n;
    return 0;
}

/* Length of the well-formed UTF-8 character at s[i], or minus the length of its maximal
 * ill-formed prefix (at least 1), as the Unicode "maximal subpart" practice counts it. */
static long utf8_char_len(const unsigned char *s, size_t len, size_t i) {
    unsigned c = s[i];
    if (c < 0x80) return 1;
    size_t need;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) need = 1;
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else return -1;
    size_t k = 0;
    while (k < need && i + 1 + k < len) {
        unsigned d = s[i + 1 + k];
        if (k == 0 ? (d < lo || d > hi) : (d < 0x80 || d > 0xBF)) break;
        k++;
    }
    return k == need ? (long)(need + 1) : -(long)(k + 1);
}

/* See tokenizer.h: each maximal ill-formed subsequence becomes U+FFFD. */
char *or1_utf8_lossy(const char *b, size_t n, size_t *out_len) {
    char *o = or1_malloc(n * 3 + 1);
    size_t w = 0;
    for (size_t i = 0; i < n;) {
        long l = utf8_char_len((const unsigned char *)b, n, i);
        if (l > 0) {
            memcpy(o + w, b + i, (size_t)l);
            w += (size_t)l;
            i += (size_t)l;
        } else {
            memcpy(o + w, "\xEF\xBF\xBD", 3);
            w += 3;
            i += (size_t)-l;
        }
    }
    o[w] = '\0';
    *out_len = w;
    return o;
}

/* Concatenates the tokens' bytes (added tokens as written), then repairs invalid UTF-8. */
int or1_tokenizer_decode(const or1_tokenizer *t, const int32_t *ids, size_t n, bool skip_special,
                         char **text, size_t *len) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || (size_t)ids[i] >= t->n_ids || !(t->tok_flags[ids[i]] & TOKF_PRESENT))
            return or1_fail("decode: id %d at position %zu is not in the vocabulary", ids[i], i);
        total += t->tok_len[ids[i]];
    }
    char *b = or1_malloc(total + 1);
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        if (skip_special && (t->tok_flags[ids[i]] & TOKF_SPECIAL)) continue;
        memcpy(b + w, t->pool + t->tok_off[ids[i]], t->tok_len[ids[i]]);
        w += t->tok_len[ids[i]];
    }
    *text = or1_utf8_lossy(b, w, len);
    free(b);
    return 0;
}

/* Raw bytes of one token. */
const char *or1_tokenizer_token_bytes(const or1_tokenizer *t, int32_t id, size_t *len) {
    if (id < 0 || (size_t)id >= t->n_ids || !(t->tok_flags[id] & TOKF_PRESENT)) return NULL;
    *len = t->tok_len[id];
    return t->pool + t->tok_off[id];
}

/* Looks a token up as tokenizer.json writes it: added tokens by content, then model
 * tokens by their byte-level spelling. */
int32_t or1_tokenizer_token_id(const or1_tokenizer *t, const char *token) {
    size_t n = strlen(token);
    for (size_t i = 0; i < t->n_added; i++)
        if (t->added[i].len == n && memcmp(t->added[i].content, token, n) == 0)
            return t->added[i].id;
    if (n > TOK_MAX_TOKEN_BYTES || tok_utf8_check(token, n) < n) return -1;
    char raw[TOK_MAX_TOKEN_BYTES];
    size_t k = 0;
    bool byte_level = true;
    for (size_t i = 0; i < n && byte_level;) {
        int32_t c;
        i += (size_t)tok_utf8_next((const unsigned char *)token + i, &c);
        int b = tok_byte_of_char(c);
        if (b < 0) byte_level = false;
        else raw[k++] = (char)b;
    }
    return byte_level ? tok_strmap_get(&t->vocab, t, raw, k) : tok_strmap_get(&t->vocab, t, token, n);
}

/* Special flag, vocabulary size and the BOS/EOS ids read from tokenizer_config.json. */
bool or1_tokenizer_is_special(const or1_tokenizer *t, int32_t id) {
    return id >= 0 && (size_t)id < t->n_ids && (t->tok_flags[id] & TOKF_SPECIAL);
}
size_t or1_tokenizer_vocab_size(const or1_tokenizer *t) { return t->n_ids; }
int32_t or1_tokenizer_bos_id(const or1_tokenizer *t) { return t->bos_id; }
int32_t or1_tokenizer_eos_id(const or1_tokenizer *t) { return t->eos_id; }
