/* Hash maps of the BPE model: token bytes -> id, and id pair -> (merge rank, merged id).
 * Both are built once at load and only read afterwards, so concurrent lookups are safe. */
#include "tok.h"

#include "or1/core.h"

#include <stdlib.h>
#include <string.h>

/* Smallest power of two holding n entries at most half full. */
static size_t table_size(size_t n) {
    size_t s = 16;
    while (s < 2 * n) s *= 2;
    return s;
}

/* Allocates an empty string map for about n entries. */
void tok_strmap_init(tok_strmap *m, size_t n) {
    size_t s = table_size(n);
    m->slot = or1_calloc(s, sizeof *m->slot);
    m->mask = s - 1;
}

/* Frees the string map's table. */
void tok_strmap_free(tok_strmap *m) {
    free(m->slot);
    m->slot = NULL;
}

/* Inserts id keyed by its bytes in t's pool; an entry with the same bytes is replaced,
 * so the last definition wins (as in Hugging Face's loader). */
void tok_strmap_put(tok_strmap *m, const or1_tokenizer *t, int32_t id) {
    const char *s = t->pool + t->tok_off[id];
    size_t n = t->tok_len[id];
    for (size_t i = tok_hash(s, n) & m->mask;; i = (i + 1) & m->mask) {
        int32_t e = m->slot[i] - 1;
        if (e < 0 || (t->tok_len[e] == n && memcmp(t->pool + t->tok_off[e], s, n) == 0)) {
            m->slot[i] = id + 1;
            return;
        }
    }
}

/* Id of the token with bytes s[0, n), or -1. */
int32_t tok_strmap_get(const tok_strmap *m, const or1_tokenizer *t, const char *s, size_t n) {
    for (size_t i = tok_hash(s, n) & m->mask;; i = (i + 1) & m->mask) {
        int32_t e = m->slot[i] - 1;
        if (e < 0) return -1;
        if (t->tok_len[e] == n && memcmp(t->pool + t->tok_off[e], s, n) == 0) return e;
    }
}

/* Allocates an empty pair map for about n merges. */
void tok_pairmap_init(tok_pairmap *m, size_t n) {
    size_t s = table_size(n);
    m->key = or1_malloc(s * sizeof *m->key);
    memset(m->key, 0xff, s * sizeof *m->key);
    m->val = or1_calloc(s, sizeof *m->val);
    m->mask = s - 1;
}

/* Frees the pair map's tables. */
void tok_pairmap_free(tok_pairmap *m) {
    free(m->key);
    free(m->val);
    m->key = m->val = NULL;
}

/* Mixes a pair key into a table index. */
static size_t pair_slot(uint64_t k, size_t mask) {
    k *= 0x9e3779b97f4a7c15ull;
    return (size_t)(k ^ (k >> 32)) & mask;
}

/* Records that a followed by b merges into merged at rank; a later merge of the same
 * pair replaces the earlier one (Hugging Face keeps the last). */
void tok_pairmap_put(tok_pairmap *m, int32_t a, int32_t b, uint32_t rank, int32_t merged) {
    uint64_t k = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    for (size_t i = pair_slot(k, m->mask);; i = (i + 1) & m->mask) {
        if (m->key[i] == UINT64_MAX || m->key[i] == k) {
            m->key[i] = k;
            m->val[i] = (uint64_t)rank << 32 | (uint32_t)merged;
            return;
        }
    }
}

/* Looks up the merge of a followed by b. */
bool tok_pairmap_get(const tok_pairmap *m, int32_t a, int32_t b, uint32_t *rank, int32_t *merged) {
    uint64_t k = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
    for (size_t i = pair_slot(k, m->mask);; i = (i + 1) & m->mask) {
        if (m->key[i] == k) {
            *rank = (uint32_t)(m->val[i] >> 32);
            *merged = (int32_t)(uint32_t)m->val[i];
            return true;
        }
        if (m->key[i] == UINT64_MAX) return false;
    }
}
