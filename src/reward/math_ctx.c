/* The math verifier's scratch context, the bottom of its files: an arena that every parse
 * and comparison allocates from, with a memory cap, a work budget and a deadline, so a
 * hostile answer can exhaust none of them. */
#include "math_internal.h"

#include "or1/core.h"

#include <stdlib.h>
#include <string.h>

struct mv_chunk {
    mv_chunk *next;
    size_t used, cap;
    max_align_t data[];
};

/* Starts a context with an empty arena and full budgets. */
void mv_ctx_init(mv_ctx *c, const or1_math_limits *lim) {
    memset(c, 0, sizeof *c);
    c->lim = lim;
    c->arena.cap_total = lim->max_memory_bytes;
    c->work = lim->max_work;
    c->deadline = lim->time_limit_s > 0 ? or1_now() + lim->time_limit_s : 0;
}

/* Frees every chunk of the arena. */
void mv_ctx_free(mv_ctx *c) {
    for (mv_chunk *k = c->arena.head, *next; k; k = next) {
        next = k->next;
        free(k);
    }
    c->arena.head = NULL;
}

/* Zero-filled arena memory, 16-byte aligned; NULL once the total cap is reached. */
void *mv_alloc(mv_ctx *c, size_t n) {
    n = (n + 15) & ~(size_t)15;
    mv_chunk *k = c->arena.head;
    if (!k || k->cap - k->used < n) {
        size_t cap = n > 65536 ? n : 65536;
        if (c->arena.used_total + cap > c->arena.cap_total) {
            c->bounded = true;
            return NULL;
        }
        k = or1_malloc(sizeof *k + cap);
        k->next = c->arena.head;
        k->used = 0;
        k->cap = cap;
        c->arena.head = k;
        c->arena.used_total += cap;
    }
    void *p = (char *)k->data + k->used;
    k->used += n;
    memset(p, 0, n);
    return p;
}

/* True once the context's wall-clock deadline has passed. */
bool mv_expired(mv_ctx *c) {
    if (c->deadline > 0 && or1_now() > c->deadline) {
        c->bounded = true;
        return true;
    }
    return false;
}
