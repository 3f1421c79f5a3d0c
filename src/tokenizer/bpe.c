/* Byte-pair encoding of one pre-token, with a cache of results shared by all threads. */
#include "tok.h"

#include "or1/core.h"

#include <stdlib.h>
#include <string.h>

enum { SMALL_WORD = 48 }; /* up to this many symbols, the quadratic scan beats a heap */

/* Allocates the cache: a power-of-two table of slots filled at most half, never evicted. */
void tok_cache_init(or1_tokenizer *t, size_t slots) {
    t->cache = or1_calloc(slots, sizeof *t->cache);
    t->cache_mask = slots - 1;
    t->cache_limit = slots / 2;
    atomic_init(&t->cache_count, 0);
}

enum { ADDR_BITS = 48 };
static const uint64_t ADDR_MASK = ((uint64_t)1 << ADDR_BITS) - 1;

/* The entry a slot points to (NULL for an empty slot). */
static tok_cache_entry *slot_entry(uint64_t v) { return (tok_cache_entry *)(uintptr_t)(v & ADDR_MASK); }

/* The tag of a hash: its top 16 bits, never 0 so that a tagged slot is never empty. */
static uint64_t hash_tag(uint64_t h) { return (h >> ADDR_BITS) | 1; }

/* Frees every cached entry and the table (empty slots skipped: most are, and a free(NULL)
 * per slot made loading a tokenizer several times slower under the sanitizers). */
void tok_cache_free(or1_tokenizer *t) {
    if (!t->cache) return;
    for (size_t i = 0; i <= t->cache_mask; i++) {
        uint64_t v = atomic_load(&t->cache[i]);
        if (v) free(slot_entry(v));
    }
    free(t->cache);
    t->cache = NULL;
}

/* The word bytes stored after an entry's ids. */
static const char *entry_word(const tok_cache_entry *e) { return (const char *)(e->ids + e->n); }

/* True if slot value v holds the result for w (hash h). */
static bool slot_holds(uint64_t v, const char *w, size_t n, uint64_t h) {
    if (v >> ADDR_BITS != hash_tag(h)) return false;
    const tok_cache_entry *e = slot_entry(v);
    return e->hash == h && e->len == n && memcmp(entry_word(e), w, n) == 0;
}

/* Finds a cached result for w; NULL if absent. Lock-free: entries are immutable once
 * published and a slot, once filled, never changes. */
static const tok_cache_entry *cache_get(const or1_tokenizer *t, const char *w, size_t n,
                                        uint64_t h) {
    for (size_t i = h & t->cache_mask;; i = (i + 1) & t->cache_mask) {
        uint64_t v = atomic_load_explicit(&t->cache[i], memory_order_acquire);
        if (!v) return NULL;
        if (slot_holds(v, w, n, h)) return slot_entry(v);
    }
}

/* Publishes a result for w unless the cache is full or another thread got there first
 * (or, on an unusual address space, the entry's address does not fit in 48 bits). */
static void cache_put(const or1_tokenizer *t, const char *w, size_t n, uint64_t h,
                      const int32_t *ids, size_t k) {
    or1_tokenizer *mt = (or1_tokenizer *)t; /* the cache is the one mutable part */
    if (atomic_load_explicit(&mt->cache_count, memory_order_relaxed) >= t->cache_limit) return;
    tok_cache_entry *e = or1_malloc(sizeof *e + k * sizeof(int32_t) + n);
    e->hash = h;
    e->len = (uint32_t)n;
    e->n = (uint32_t)k;
    memcpy(e->ids, ids, k * sizeof *ids);
    memcpy((char *)(e->ids + k), w, n);
    uint64_t addr = (uint64_t)(uintptr_t)e;
    if (addr > ADDR_MASK) {
        free(e);
        return;
    }
    uint64_t v = addr | hash_tag(h) << ADDR_BITS;
    for (size_t i = h & t->cache_mask;; i = (i + 1) & t->cache_mask) {
        uint64_t cur = 0;
        if (atomic_compare_exchange_strong_explicit(&mt->cache[i], &cur, v, memory_order_acq_rel,
                                                    memory_order_acquire)) {
            atomic_fetch_add_explicit(&mt->cache_count, 1, memory_order_relaxed);
            return;
        }
        if (slot_holds(cur, w, n, h)) {
            free(e);
            return;
        }
    }
}

/* Merges a short symbol sequence in place: repeatedly the pair of lowest rank, leftmost
 * on ties. Returns the new length. */
static size_t merge_small(const or1_tokenizer *t, int32_t *s, size_t n) {
    while (n > 1) {
        uint32_t best = UINT32_MAX, r;
        size_t at = 0;
        int32_t into = -1, m;
        for (size_t i = 0; i + 1 < n; i++)
            if (tok_pairmap_get(&t->merges, s[i], s[i + 1], &r, &m) && r < best) {
                best = r;
                at = i;
                into = m;
            }
        if (into < 0) break;
        s[at] = into;
        memmove(s + at + 1, s + at + 2, (n - at - 2) * sizeof *s);
        n--;
    }
    return n;
}

/* A candidate merge in the heap of merge_large. */
typedef struct {
    uint32_t rank, pos;
    int32_t left, right;
} cand;

/* True if a must be merged before b: lower rank, then further left. */
static bool cand_before(const cand *a, const cand *b) {
    return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}

/* Pushes onto a binary min-heap. */
static void heap_push(cand *h, size_t *n, cand c) {
    size_t i = (*n)++;
    while (i > 0 && cand_before(&c, &h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = c;
}

/* Pops the minimum of a binary heap. */
static cand heap_pop(cand *h, size_t *n) {
    cand top = h[0], last = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && cand_before(&h[c + 1], &h[c])) c++;
        if (!cand_before(&h[c], &last)) break;
        h[i] = h[c];
        i = c;
    }
    if (*n) h[i] = last;
    return top;
}

/* Pushes the merge of symbols l and r (linked-list positions) if the pair merges. */
static void push_pair(const or1_tokenizer *t, cand *h, size_t *hn, const int32_t *id, uint32_t l,
                      uint32_t r) {
    uint32_t rank;
    int32_t m;
    if (tok_pairmap_get(&t->merges, id[l], id[r], &rank, &m))
        heap_push(h, hn, (cand){rank, l, id[l], id[r]});
}

/* Merges a long symbol sequence in O(n log n) with a heap of candidate pairs and a
 * linked list of live symbols; same order of merges as merge_small. Returns the length. */
static size_t merge_large(const or1_tokenizer *t, int32_t *s, size_t n) {
    int32_t *id = or1_malloc(n * sizeof *id);
    uint32_t *next = or1_malloc(n * sizeof *next), *prev = or1_malloc(n * sizeof *prev);
    cand *h = or1_malloc(2 * n * sizeof *h);
    size_t hn = 0;
    const uint32_t NONE = UINT32_MAX;
    for (size_t i = 0; i < n; i++) {
        id[i] = s[i];
        next[i] = i + 1 < n ? (uint32_t)(i + 1) : NONE;
        prev[i] = i ? (uint32_t)(i - 1) : NONE;
    }
    for (size_t i = 0; i + 1 < n; i++) push_pair(t, h, &hn, id, (uint32_t)i, (uint32_t)i + 1);
    while (hn) {
        cand c = heap_pop(h, &hn);
        uint32_t l = c.pos, r = next[l];
        if (id[l] != c.left || r == NONE || id[r] != c.right) continue; /* stale */
        uint32_t rank;
        tok_pairmap_get(&t->merges, c.left, c.right, &rank, &id[l]);
        id[r] = -1;
        next[l] = next[r];
        if (next[r] != NONE) prev[next[r]] = l;
        if (hn + 2 > 2 * n) continue; /* cannot happen: each merge pushes at most two */
        if (prev[l] != NONE) push_pair(t, h, &hn, id, prev[l], l);
        if (next[l] != NONE) push_pair(t, h, &hn, id, l, next[l]);
    }
    size_t k = 0;
    for (uint32_t i = 0; i != NONE; i = next[i]) s[k++] = id[i];
    free(id);
    free(next);
    free(prev);
    free(h);
    return k;
}

/* BPE of the bytes w[0, n): whole-word lookup when the model ignores merges, else the
 * bytes' ids merged by rank. Results of short words go through the shared cache. */
void tok_bpe_word(const or1_tokenizer *t, const char *w, size_t n, tok_ids *out) {
    if (n == 0) return;
    if (n == 1 && t->byte_id[(unsigned char)w[0]] >= 0) { /* a lone byte: its own token */
        tok_ids_push(out, t->byte_id[(unsigned char)w[0]]);
        return;
    }
    uint64_t h = 0;
    if (n <= TOK_CACHE_WORD) {
        h = tok_hash(w, n);
        const tok_cache_entry *e = cache_get(t, w, n, h);
        if (e) {
            tok_ids_append(out, e->ids, e->n);
            return;
        }
    }
    if (t->ignore_merges) {
        int32_t id = tok_strmap_get(&t->vocab, t, w, n);
        if (id >= 0) {
            tok_ids_push(out, id);
            if (n <= TOK_CACHE_WORD) cache_put(t, w, n, h, &id, 1);
            return;
        }
    }
    int32_t small[SMALL_WORD];
    int32_t *s = n <= SMALL_WORD ? small : or1_malloc(n * sizeof *s);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t b = t->byte_id[(unsigned char)w[i]];
        if (b < 0) b = t->unk_id;
        if (b >= 0) s[k++] = b;
    }
    k = k <= SMALL_WORD ? merge_small(t, s, k) : merge_large(t, s, k);
    tok_ids_append(out, s, k);
    if (n <= TOK_CACHE_WORD) cache_put(t, w, n, h, s, k);
    if (s != small) free(s);
}
