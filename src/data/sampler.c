/* The prompt sampler: seeded per-epoch permutations of the weighted rows, drop_last batches,
 * the online filter, and a cursor that checkpoints can save and restore (Skywork-OR1's
 * ray_trainer.py: shuffled sampler, seed, drop_last; online filter of paper §3.1). */
#include "internal.h"
#include "or1/core.h"
#include "or1/io.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Streams of or1_rand_u64 used by the sampler: epoch e uses stream SHUFFLE_STREAM + e. */
#define SHUFFLE_STREAM 0x5348554646ULL

/* Each row appears weight times: the recipe's listing of a file twice, as a repeat. */
int or1_data_sampler_init(or1_dataset *d, const or1_data_opts *o) {
    size_t n = 0;
    for (size_t i = 0; i < d->n_rows; i++) n += (size_t)o->files[d->rows[i].file].weight;
    d->slots = or1_malloc(n * sizeof *d->slots);
    d->order = or1_malloc(n * sizeof *d->order);
    d->dropped = or1_calloc(d->n_rows, sizeof *d->dropped);
    d->solved = or1_malloc(d->n_rows * sizeof *d->solved);
    memset(d->solved, -1, d->n_rows * sizeof *d->solved);
    d->n_slots = d->active_slots = n;
    size_t k = 0;
    for (size_t i = 0; i < d->n_rows; i++)
        for (int w = 0; w < o->files[d->rows[i].file].weight; w++) d->slots[k++] = (uint32_t)i;
    d->shuffle = o->shuffle;
    d->seed = o->seed;
    d->epoch = 0;
    d->pos = 0;
    d->order_epoch = UINT64_MAX;
    return 0;
}

/* The permutation of epoch e: Fisher-Yates over the slots with counter-based random numbers,
 * so it depends only on (seed, e, slots); identity without shuffling. */
static void build_order(or1_dataset *d, uint64_t e) {
    if (d->order_epoch == e) return;
    memcpy(d->order, d->slots, d->n_slots * sizeof *d->order);
    if (d->shuffle)
        for (size_t i = d->n_slots; i > 1; i--) {
            size_t j = (size_t)(or1_rand_u64(d->seed, SHUFFLE_STREAM + e, i) % i);
            uint32_t t = d->order[i - 1];
            d->order[i - 1] = d->order[j];
            d->order[j] = t;
        }
    d->order_epoch = e;
}

/* The next n active slots of the epoch from the cursor, or the start of the next epoch
 * when the rest of this one holds fewer (drop_last). */
int or1_data_next(or1_dataset *d, size_t n, uint32_t *ids) {
    if (n == 0) return 0;
    if (d->active_slots < n)
        return or1_fail("data: %zu prompts per step, but only %zu remain after the online filter", n, d->active_slots);
    for (int tries = 0; tries < 2; tries++) {
        build_order(d, d->epoch);
        size_t got = 0, p = d->pos;
        for (; p < d->n_slots && got < n; p++)
            if (!d->dropped[d->order[p]]) ids[got++] = d->order[p];
        if (got == n) {
            d->pos = p;
            return 0;
        }
        d->epoch++;
        d->pos = 0;
    }
    return or1_fail("data: cannot draw %zu prompts", n); /* unreachable: active_slots >= n */
}

/* Recounts the sampler slots whose row is not dropped (one pass, after a batch of drops). */
static void count_active_slots(or1_dataset *d) {
    d->active_slots = 0;
    for (size_t s = 0; s < d->n_slots; s++) d->active_slots += !d->dropped[d->slots[s]];
}

/* Marks rows as dropped; already dropped ones are ignored. */
int or1_data_drop(or1_dataset *d, const uint32_t *ids, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (ids[i] >= d->n_rows) return or1_fail("data: row id %u out of range (%zu rows)", ids[i], d->n_rows);
    for (size_t i = 0; i < n; i++) {
        if (d->dropped[ids[i]]) continue;
        d->dropped[ids[i]] = true;
        d->n_dropped++;
    }
    count_active_slots(d);
    return 0;
}

/* A drawn prompt's result: the row stays "solved" only while every draw was fully solved. */
int or1_data_record(or1_dataset *d, uint32_t id, int correct, int n) {
    if (id >= d->n_rows) return or1_fail("data: row id %u out of range (%zu rows)", id, d->n_rows);
    if (n < 1 || correct < 0 || correct > n) return or1_fail("data: row %u: %d of %d samples correct", id, correct, n);
    int8_t all = correct == n;
    d->solved[id] = d->solved[id] < 0 ? all : (int8_t)(d->solved[id] && all);
    return 0;
}

/* Drops the rows solved every time in the stage that ends, and starts a new stage. */
size_t or1_data_stage_filter(or1_dataset *d) {
    size_t n = 0;
    for (size_t i = 0; i < d->n_rows; i++) {
        if (d->solved[i] == 1 && !d->dropped[i]) {
            d->dropped[i] = true;
            d->n_dropped++;
            n++;
        }
        d->solved[i] = -1;
    }
    count_active_slots(d); /* once, not once per dropped row */
    return n;
}

/* Rows the online filter has not dropped. */
size_t or1_data_active(const or1_dataset *d) { return d->n_rows - d->n_dropped; }

/* The cursor: epoch and position in its order. */
void or1_data_cursor(const or1_dataset *d, uint64_t *epoch, size_t *pos) {
    *epoch = d->epoch;
    *pos = d->pos;
}

/* The cursor, the dropped rows and a fingerprint of the data (row and slot counts, seed). */
cJSON *or1_data_state_json(const or1_dataset *d) {
    cJSON *j = cJSON_CreateObject();
    char num[32];
    snprintf(num, sizeof num, "%llu", (unsigned long long)d->epoch);
    cJSON_AddRawToObject(j, "epoch", num);
    cJSON_AddNumberToObject(j, "pos", (double)d->pos);
    cJSON_AddNumberToObject(j, "rows", (double)d->n_rows);
    cJSON_AddNumberToObject(j, "slots", (double)d->n_slots);
    snprintf(num, sizeof num, "%llu", (unsigned long long)d->seed);
    cJSON_AddRawToObject(j, "seed", num);
    cJSON *dr = cJSON_AddArrayToObject(j, "dropped"), *s1 = cJSON_AddArrayToObject(j, "stage_solved"),
          *s0 = cJSON_AddArrayToObject(j, "stage_unsolved");
    for (size_t i = 0; i < d->n_rows; i++) {
        if (d->dropped[i]) cJSON_AddItemToArray(dr, cJSON_CreateNumber((double)i));
        if (d->solved[i] >= 0) cJSON_AddItemToArray(d->solved[i] ? s1 : s0, cJSON_CreateNumber((double)i));
    }
    return j;
}

/* Restores a saved state after checking that it belongs to the same data and seed. */
int or1_data_state_load(or1_dataset *d, const cJSON *j, const char *where) {
    int64_t epoch, pos, rows, slots, seed;
    if (or1_json_int(j, "epoch", 0, (int64_t)1 << 50, &epoch, where) || or1_json_int(j, "pos", 0, (int64_t)d->n_slots, &pos, where) ||
        or1_json_int(j, "rows", 0, INT64_MAX / 2, &rows, where) ||
        or1_json_int(j, "slots", 0, INT64_MAX / 2, &slots, where) || or1_json_int(j, "seed", 0, (int64_t)1 << 52, &seed, where))
        return -1;
    if ((size_t)rows != d->n_rows || (size_t)slots != d->n_slots || (uint64_t)seed != d->seed)
        return or1_fail("%s: the data state is for %lld rows, %lld slots, seed %lld, but the dataset has %zu rows, %zu "
                        "slots, seed %llu: the data files, filters or seed changed", where, (long long)rows,
                        (long long)slots, (long long)seed, d->n_rows, d->n_slots, (unsigned long long)d->seed);
    int32_t *dropped;
    size_t n;
    if (or1_json_int_array(j, "dropped", 0, (int64_t)d->n_rows - 1, &dropped, &n, where) != 0) return -1;
    memset(d->dropped, 0, d->n_rows * sizeof *d->dropped);
    d->n_dropped = 0;
    int rc = or1_data_drop(d, (const uint32_t *)dropped, n);
    free(dropped);
    memset(d->solved, -1, d->n_rows * sizeof *d->solved);
    const char *keys[2] = {"stage_unsolved", "stage_solved"};
    for (int k = 0; k < 2 && rc == 0; k++) {
        if (or1_json_int_array(j, keys[k], 0, (int64_t)d->n_rows - 1, &dropped, &n, where) != 0) return -1;
        for (size_t i = 0; i < n; i++) d->solved[dropped[i]] = (int8_t)k;
        free(dropped);
    }
    d->epoch = (uint64_t)epoch;
    d->pos = (size_t)pos;
    return rc;
}
