/* Added tokens: a byte trie over their contents and the split of text at their matches,
 * leftmost-longest first, with the lstrip / rstrip / single_word rules of tokenizer.json. */
#include "tok.h"

#include "or1/core.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* Appends a fresh trie node and returns its index. */
static int32_t trie_node_new(tok_trie *tr, uint8_t byte) {
    if (tr->n == tr->cap) {
        tr->cap = tr->cap ? tr->cap * 2 : 64;
        tr->node = or1_realloc(tr->node, tr->cap * sizeof *tr->node);
    }
    tr->node[tr->n] = (struct tok_trie_node){.child = -1, .sibling = -1, .added = -1, .byte = byte};
    return (int32_t)tr->n++;
}

/* Adds s[0, n) ending in added-token index `added` (a repeated content keeps the first). */
void tok_trie_add(tok_trie *tr, const char *s, size_t n, int32_t added) {
    if (n == 0) return;
    if (tr->n == 0) trie_node_new(tr, 0);
    int32_t cur = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t b = (uint8_t)s[i];
        int32_t c = tr->node[cur].child;
        while (c >= 0 && tr->node[c].byte != b) c = tr->node[c].sibling;
        if (c < 0) {
            c = trie_node_new(tr, b);
            tr->node[c].sibling = tr->node[cur].child;
            tr->node[cur].child = c;
        }
        cur = c;
    }
    if (tr->node[cur].added < 0) tr->node[cur].added = added;
    tr->first[(uint8_t)s[0] >> 3] |= (uint8_t)(1u << ((uint8_t)s[0] & 7));
}

/* Frees the trie's nodes and empties it. */
void tok_trie_free(tok_trie *tr) {
    free(tr->node);
    memset(tr, 0, sizeof *tr);
}

/* Longest token of the trie starting at text[pos]: its added index (end in *end), or -1. */
static int32_t trie_longest(const tok_trie *tr, const char *text, size_t len, size_t pos,
                            size_t *end) {
    int32_t cur = 0, best = -1;
    for (size_t i = pos; i < len; i++) {
        int32_t c = tr->node[cur].child;
        while (c >= 0 && tr->node[c].byte != (uint8_t)text[i]) c = tr->node[c].sibling;
        if (c < 0) break;
        cur = c;
        if (tr->node[c].added >= 0) {
            best = tr->node[c].added;
            *end = i + 1;
        }
    }
    return best;
}

/* Unicode White_Space, as lstrip/rstrip understand whitespace. */
static bool is_space(int32_t c) {
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

/* A word character as Hugging Face's single_word test sees it (the Unicode \w of Rust's
 * regex): letters, marks, decimal digits, letter numbers, connector punctuation such as
 * '_', and the zero-width joiners. */
static bool is_word_char(int32_t c) {
    if (c == 0x200C || c == 0x200D) return true;
    utf8proc_category_t k = utf8proc_category(c);
    return (k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_LO) ||
           (k >= UTF8PROC_CATEGORY_MN && k <= UTF8PROC_CATEGORY_ME) || k == UTF8PROC_CATEGORY_ND ||
           k == UTF8PROC_CATEGORY_NL || k == UTF8PROC_CATEGORY_PC;
}

/* Start of the code point that ends right before text[pos] (pos > 0). */
static size_t prev_char(const char *text, size_t pos) {
    do pos--;
    while (pos > 0 && ((uint8_t)text[pos] & 0xC0) == 0x80);
    return pos;
}

/* The code point before text[pos], or -1 at the start. */
static int32_t char_before(const char *text, size_t pos) {
    if (pos == 0) return -1;
    int32_t c;
    tok_utf8_next((const unsigned char *)text + prev_char(text, pos), &c);
    return c;
}

/* Appends one piece. */
static void piece_push(tok_piece **p, size_t *n, size_t *cap, size_t s, size_t e, int32_t id) {
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        *p = or1_realloc(*p, *cap * sizeof **p);
    }
    (*p)[(*n)++] = (tok_piece){.start = s, .end = e, .id = id};
}

/* Whether a match of tok over [s, e) stands alone as a word (for single_word tokens). */
static bool single_word_ok(const char *text, size_t len, size_t s, size_t e) {
    int32_t before = char_before(text, s), after = -1;
    if (e < len) tok_utf8_next((const unsigned char *)text + e, &after);
    return !(before >= 0 && is_word_char(before)) && !(after >= 0 && is_word_char(after));
}

/* Splits text at the added tokens of trie tr. A match found at the leftmost position is
 * the longest there; matching resumes after it. A special token under split_special, or
 * a single_word token inside a word, is left as text. lstrip / rstrip widen the match
 * over neighbouring whitespace (never into an earlier match). */
void tok_split_added(const or1_tokenizer *t, const tok_trie *tr, const char *text, size_t len,
                     bool split_special, tok_piece **pieces, size_t *n) {
    tok_piece *p = NULL;
    size_t np = 0, cap = 0, done = 0, pos = 0;
    while (tr->n && pos < len) {
        uint8_t b = (uint8_t)text[pos];
        size_t end = 0;
        int32_t k = (tr->first[b >> 3] >> (b & 7)) & 1 ? trie_longest(tr, text, len, pos, &end) : -1;
        if (k < 0) {
            pos++;
            continue;
        }
        const tok_added *a = &t->added[k];
        size_t s = pos;
        pos = end;
        if (split_special && a->special) continue;
        if (a->single_word && !single_word_ok(text, len, s, end)) continue;
        if (a->lstrip)
            while (s > done && is_space(char_before(text, s))) s = prev_char(text, s);
        if (a->rstrip) {
            while (end < len) {
                int32_t c;
                int l = tok_utf8_next((const unsigned char *)text + end, &c);
                if (!is_space(c)) break;
                end += (size_t)l;
            }
            pos = end;
        }
        if (s > done) piece_push(&p, &np, &cap, done, s, -1);
        piece_push(&p, &np, &cap, s, end, a->id);
        done = end;
    }
    if (done < len || np == 0) piece_push(&p, &np, &cap, done, len, -1);
    *pieces = p;
    *n = np;
}
