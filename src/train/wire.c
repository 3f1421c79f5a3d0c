/* A step batch as bytes, for asynchronous training: the rollout ranks send each finished batch
 * to the trainer ranks in this form, and a checkpoint keeps the batches sampled but not yet
 * trained in it (async_pending.bin). The reader checks every length against the bytes left and
 * every count against its bound, and names the source and the offset of what is wrong. */
#include "or1/core.h"
#include "internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* "OR1B" and the layout's version, first in every batch. */
static const char WIRE_MAGIC[4] = {'O', 'R', '1', 'B'};
enum { WIRE_VERSION = 1 };

/* A growing byte buffer. */
typedef struct {
    char *p;
    size_t n, cap;
} wbuf;

/* Appends n bytes. */
static void put(wbuf *w, const void *src, size_t n) {
    if (w->n + n > w->cap) {
        w->cap = (w->n + n) * 2 + 256;
        w->p = or1_realloc(w->p, w->cap);
    }
    if (n) memcpy(w->p + w->n, src, n);
    w->n += n;
}

/* One 64-bit integer or double. */
static void put_i64(wbuf *w, int64_t v) { put(w, &v, sizeof v); }
static void put_f64(wbuf *w, double v) { put(w, &v, sizeof v); }

/* A reader over bytes: where it is, and the name of the source for errors. */
typedef struct {
    const char *p;
    size_t n, at;
    const char *where;
    int bad;
} rbuf;

/* Marks a reader bad with an error message. */
#define WIRE_BAD(r, ...) ((r)->bad = 1, (void)or1_fail(__VA_ARGS__))

/* Takes n bytes into dst; a short read marks the reader bad, naming the offset. */
static void get(rbuf *r, void *dst, size_t n) {
    if (r->bad) return;
    if (n > r->n - r->at) {
        WIRE_BAD(r, "%s: the batch ends at byte %zu where %zu more bytes were expected", r->where, r->n, n);
        memset(dst, 0, n);
        return;
    }
    memcpy(dst, r->p + r->at, n);
    r->at += n;
}

/* One 64-bit integer within [lo, hi]; outside marks the reader bad, naming the field. */
static int64_t get_i64(rbuf *r, int64_t lo, int64_t hi, const char *what) {
    int64_t v = 0;
    size_t at = r->at;
    get(r, &v, sizeof v);
    if (!r->bad && (v < lo || v > hi)) {
        or1_fail("%s: byte %zu: %s is %lld, outside [%lld, %lld]", r->where, at, what, (long long)v, (long long)lo,
                 (long long)hi);
        r->bad = 1;
    }
    return r->bad ? lo : v;
}

/* One double. */
static double get_f64(rbuf *r) {
    double v = 0;
    get(r, &v, sizeof v);
    return v;
}

/* One completion: length, tool calls, finish reason, mask flag, then its arrays. */
static void put_completion(wbuf *w, const or1_completion *c) {
    put_i64(w, c->n);
    put_i64(w, c->tool_calls);
    put_i64(w, (c->stopped ? 1 : 0) | (c->mask ? 2 : 0));
    put(w, c->ids, (size_t)c->n * sizeof *c->ids);
    put(w, c->logprobs, (size_t)c->n * sizeof *c->logprobs);
    if (c->mask) put(w, c->mask, (size_t)c->n);
}

/* Reads a completion written by put_completion (at most max_n tokens) into *c, allocated. */
static void get_completion(rbuf *r, or1_completion *c, int max_n) {
    int n = (int)get_i64(r, 0, max_n, "a completion's length");
    int calls = (int)get_i64(r, 0, 1 << 30, "a completion's tool calls");
    int flags = (int)get_i64(r, 0, 3, "a completion's flags");
    size_t m = n > 0 ? (size_t)n : 1;
    *c = (or1_completion){.ids = or1_malloc(m * sizeof(int32_t)), .logprobs = or1_malloc(m * sizeof(float)),
                          .mask = flags & 2 ? or1_malloc(m) : NULL, .n = n, .tool_calls = calls,
                          .stopped = (flags & 1) != 0, .switch_at = n}; /* switch_at: the batch's own array */
    get(r, c->ids, (size_t)n * sizeof *c->ids);
    get(r, c->logprobs, (size_t)n * sizeof *c->logprobs);
    if (c->mask) get(r, c->mask, (size_t)n);
}

/* The per-sample arrays of a batch: name, element size, the field. */
#define WIRE_SAMPLE_ARRAYS(X)            \
    X(score, sizeof(float))              \
    X(len, sizeof(int))                  \
    X(trained, sizeof(int))              \
    X(trunc, sizeof(bool))               \
    X(adv, sizeof(float))                \
    X(in_loss, sizeof(bool))             \
    X(version, sizeof(int32_t))          \
    X(switch_at, sizeof(int32_t))

/* The batch's summary: reward failures and times, tool counts, rejection verdicts and counts,
 * loss tokens, the rollout's times, the sampler state after the batch. */
static void put_summary(wbuf *w, const step_batch *b, const async_batch *a) {
    for (int k = 0; k < OR1_REWARD_N_STATUS; k++) put_i64(w, b->reward_errors[k]);
    for (int k = 0; k < 2; k++) put_f64(w, b->reward_seconds[k]), put_i64(w, b->reward_count[k]);
    put(w, &b->tools, sizeof b->tools);
    put_f64(w, b->length_penalty);
    put(w, b->rej.ids, b->rej.n_groups * sizeof *b->rej.ids);
    put(w, b->rej.verdict, b->rej.n_groups * sizeof *b->rej.verdict);
    const size_t counts[] = {b->rej.kept, b->rej.solve_none, b->rej.solve_all, b->rej.constant, b->rej.empty,
                             b->rej.reward_errors, b->kept_groups};
    for (size_t k = 0; k < sizeof counts / sizeof *counts; k++) put_i64(w, (int64_t)counts[k]);
    put_i64(w, b->loss_tokens);
    put_f64(w, b->t_rollout), put_f64(w, b->t_reward), put_f64(w, a->rollout_wait), put_f64(w, a->rollout_seconds);
    put_i64(w, a->rollout_tokens);
    put_i64(w, (int64_t)a->filtered_stage);
    size_t ds = a->data_state ? strlen(a->data_state) : 0;
    put_i64(w, (int64_t)ds);
    put(w, a->data_state, ds);
}

/* The batch's numbers (not its completions): step, groups with their rows and prompts, the
 * per-sample arrays, then the summary. */
static void put_numbers(wbuf *w, const step_batch *b, const async_batch *a, const or1_dataset *data) {
    put(w, WIRE_MAGIC, sizeof WIRE_MAGIC);
    put_i64(w, WIRE_VERSION);
    put_i64(w, a->index);
    put_i64(w, b->M);
    put_i64(w, (int64_t)b->n_groups);
    put(w, b->row, b->n_groups * sizeof *b->row);
    for (size_t g = 0; g < b->n_groups; g++) { /* each group's prompt: the batch reads alone */
        const or1_data_row *r = or1_data_row_at(data, b->row[g]);
        put_i64(w, r->n_ids);
        put(w, r->ids, (size_t)r->n_ids * sizeof *r->ids);
    }
#define PUT_ARRAY(f, size) put(w, b->f, b->n_samples * (size));
    WIRE_SAMPLE_ARRAYS(PUT_ARRAY)
#undef PUT_ARRAY
    wbuf m = {0}; /* the summary, length first: a reader may pass over it */
    put_summary(&m, b, a);
    put_i64(w, (int64_t)m.n);
    put(w, m.p, m.n);
    free(m.p);
}

/* See internal.h. */
char *train_wire_pack_batch(const step_batch *b, const async_batch *a, const or1_dataset *data, size_t *len) {
    wbuf w = {0};
    put_numbers(&w, b, a, data);
    for (size_t i = 0; i < b->n_samples; i++) put_completion(&w, &b->c[i]);
    *len = w.n;
    return w.p;
}

/* Allocates the arrays of a batch of g groups of M samples (batch_grow's set, exactly sized). */
static void alloc_batch(step_batch *b, size_t g, int M) {
    size_t ns = g * (size_t)M, m = ns ? ns : 1;
    b->M = M, b->n_groups = g, b->n_samples = ns, b->cap_groups = g;
    b->row = or1_calloc(g ? g : 1, sizeof *b->row);
#define ALLOC_ARRAY(f, size) b->f = or1_calloc(m, size);
    WIRE_SAMPLE_ARRAYS(ALLOC_ARRAY)
#undef ALLOC_ARRAY
    b->owned = or1_calloc(m, sizeof *b->owned);
    b->c = or1_calloc(m, sizeof *b->c);
}

/* The numbers written by put_numbers; rows must be below n_rows and samples' lengths at most
 * max_len. */
static void get_numbers(rbuf *r, step_batch *b, async_batch *a, const or1_dataset *data) {
    size_t n_rows = data ? or1_data_rows(data) : SIZE_MAX;
    char magic[4];
    get(r, magic, sizeof magic);
    if (!r->bad && memcmp(magic, WIRE_MAGIC, sizeof magic) != 0) WIRE_BAD(r, "%s: not a step batch (no OR1B mark)", r->where);
    get_i64(r, WIRE_VERSION, WIRE_VERSION, "the layout version");
    a->index = get_i64(r, 1, INT64_MAX / 2, "the batch's step");
    int M = (int)get_i64(r, 1, 4096, "samples per group");
    size_t g = (size_t)get_i64(r, 0, 1 << 24, "the group count");
    if (r->bad) return;
    if (g * (size_t)M * 16 > r->n - r->at)
        WIRE_BAD(r, "%s: %zu groups of %d samples cannot fit in the %zu bytes left", r->where, g, M, r->n - r->at);
    if (r->bad) return;
    alloc_batch(b, g, M);
    get(r, b->row, g * sizeof *b->row);
    for (size_t i = 0; i < g && !r->bad; i++)
        if (b->row[i] >= n_rows) WIRE_BAD(r, "%s: group %zu names row %u of %zu", r->where, i, b->row[i], n_rows);
    for (size_t i = 0; i < g && !r->bad; i++) {
        const or1_data_row *row = data ? or1_data_row_at(data, b->row[i]) : NULL;
        int n = (int)get_i64(r, 0, (int64_t)(r->n - r->at) / 4, "a prompt's length");
        bool same = !row || n == row->n_ids;
        for (int k = 0; k < n && !r->bad; k++) {
            int32_t id;
            get(r, &id, sizeof id);
            same = same && (!row || id == row->ids[k]);
        }
        if (!r->bad && !same)
            WIRE_BAD(r, "%s: group %zu's prompt differs from row %u of the data (the data or its template changed "
                        "since the batch was sampled)", r->where, i, b->row[i]);
    }
#define GET_ARRAY(f, size) get(r, b->f, b->n_samples * (size));
    WIRE_SAMPLE_ARRAYS(GET_ARRAY)
#undef GET_ARRAY
    for (size_t i = 0; i < b->n_samples; i++) b->trunc[i] = ((uint8_t *)b->trunc)[i] != 0, b->in_loss[i] = ((uint8_t *)b->in_loss)[i] != 0;
    size_t summary = (size_t)get_i64(r, 0, INT64_MAX, "the summary's length"), start = r->at;
    for (int k = 0; k < OR1_REWARD_N_STATUS; k++) b->reward_errors[k] = (long)get_i64(r, 0, INT64_MAX, "a reward error count");
    for (int k = 0; k < 2; k++) b->reward_seconds[k] = get_f64(r), b->reward_count[k] = (long)get_i64(r, 0, INT64_MAX, "a reward count");
    get(r, &b->tools, sizeof b->tools);
    b->length_penalty = get_f64(r);
    b->rej.n_groups = g;
    b->rej.ids = or1_calloc(g ? g : 1, sizeof *b->rej.ids);
    b->rej.verdict = or1_calloc(g ? g : 1, sizeof *b->rej.verdict);
    get(r, b->rej.ids, g * sizeof *b->rej.ids);
    get(r, b->rej.verdict, g * sizeof *b->rej.verdict);
    for (size_t i = 0; i < g && !r->bad; i++)
        if ((int)b->rej.verdict[i] < 0 || b->rej.verdict[i] > OR1_GROUP_REWARD_ERRORS)
            WIRE_BAD(r, "%s: group %zu has an unknown verdict %d", r->where, i, (int)b->rej.verdict[i]);
    size_t *counts[] = {&b->rej.kept, &b->rej.solve_none, &b->rej.solve_all, &b->rej.constant, &b->rej.empty,
                        &b->rej.reward_errors, &b->kept_groups};
    for (size_t k = 0; k < sizeof counts / sizeof *counts; k++) *counts[k] = (size_t)get_i64(r, 0, (int64_t)g, "a group count");
    b->loss_tokens = (long)get_i64(r, 0, INT64_MAX, "the loss tokens");
    b->t_rollout = get_f64(r), b->t_reward = get_f64(r), a->rollout_wait = get_f64(r), a->rollout_seconds = get_f64(r);
    a->rollout_tokens = get_i64(r, 0, INT64_MAX, "the rollout's tokens");
    a->filtered_stage = (size_t)get_i64(r, 0, 1 << 20, "the filtered stage");
    size_t ds = (size_t)get_i64(r, 0, 1 << 30, "the sampler state's length");
    a->data_state = or1_calloc(ds + 1, 1);
    get(r, a->data_state, ds);
    if (!r->bad && r->at - start != summary)
        WIRE_BAD(r, "%s: byte %zu: the summary holds %zu bytes where its length says %zu", r->where, start, r->at - start, summary);
}

/* See internal.h. */
int train_wire_unpack_batch(const char *buf, size_t len, const char *where, const or1_dataset *data, int max_len,
                            step_batch *b, async_batch *a) {
    rbuf r = {buf, len, 0, where, 0};
    train_batch_init(b);
    memset(a, 0, sizeof *a);
    get_numbers(&r, b, a, data);
    for (size_t i = 0; i < b->n_samples && !r.bad; i++) {
        get_completion(&r, &b->c[i], max_len);
        b->owned[i] = true;
        if (!r.bad && (b->len[i] != b->c[i].n || b->switch_at[i] < 0 || b->switch_at[i] > b->c[i].n))
            WIRE_BAD(&r, "%s: sample %zu: its length %d or its switch %d disagree with its %d tokens", where, i,
                     b->len[i], b->switch_at[i], b->c[i].n);
    }
    if (!r.bad && r.at != r.n) WIRE_BAD(&r, "%s: %zu bytes follow the batch", where, r.n - r.at);
    if (!r.bad) return 0;
    train_batch_free(b);
    free(a->data_state);
    memset(a, 0, sizeof *a);
    return -1;
}

/* See internal.h: the owned completions as (index, completion) records. */
char *train_wire_pack_owned(const step_batch *b, size_t *len) {
    wbuf w = {0};
    for (size_t i = 0; i < b->n_samples; i++)
        if (b->owned[i]) put_i64(&w, (int64_t)i), put_completion(&w, &b->c[i]);
    *len = w.n;
    return w.p;
}

/* See internal.h. */
int train_wire_unpack_owned(const char *buf, size_t len, step_batch *b, int max_len) {
    rbuf r = {buf, len, 0, "a rank's samples", 0};
    while (!r.bad && r.at < r.n) {
        size_t i = (size_t)get_i64(&r, 0, (int64_t)b->n_samples - 1, "a sample index");
        if (r.bad) break;
        or1_completions_free(&b->c[i], 1);
        get_completion(&r, &b->c[i], max_len);
        b->owned[i] = true;
    }
    return r.bad ? -1 : 0;
}
