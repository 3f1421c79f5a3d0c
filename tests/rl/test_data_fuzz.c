/* Structural fuzzing of the row validator: real rows of the shared data (math and code) with
 * one or more nodes of their JSON tree replaced by values of other types, or deleted. Every
 * outcome must be a clean success or an error naming the row's place; the sanitiser build
 * catches any memory fault. Usage: test_data_fuzz FILE.jsonl... */
#include "or1/core.h"
#include "or1/data.h"
#include "or1/io.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"

enum { ROWS_PER_FILE = 4, ITERATIONS = 4000 };

/* Every node of a tree in pre-order (the root first). */
static void collect(cJSON *n, cJSON ***all, size_t *len, size_t *cap) {
    if (*len == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        *all = or1_realloc(*all, *cap * sizeof **all);
    }
    (*all)[(*len)++] = n;
    for (cJSON *k = n->child; k; k = k->next) collect(k, all, len, cap);
}

/* A replacement value chosen by r: null, bool, numbers, strings (JSON text or not), empty
 * or small containers. */
static cJSON *random_value(uint64_t r) {
    switch (r % 10) {
    case 0: return cJSON_CreateNull();
    case 1: return cJSON_CreateBool(r & 16);
    case 2: return cJSON_CreateNumber(-1);
    case 3: return cJSON_CreateNumber(1e300);
    case 4: return cJSON_CreateNumber(2.5);
    case 5: return cJSON_CreateString("");
    case 6: return cJSON_CreateString("[\"x\"]");
    case 7: return cJSON_CreateString("{\"inputs\": [1], \"outputs\": []}");
    case 8: return cJSON_CreateArray();
    default: return cJSON_Parse("{\"role\": \"user\", \"content\": 5}");
    }
}

/* Replaces (or deletes) node victim, which is not the root. */
static void damage(cJSON *root, cJSON *victim, uint64_t r) {
    cJSON **all = NULL;
    size_t len = 0, cap = 0;
    collect(root, &all, &len, &cap);
    cJSON *parent = NULL;
    for (size_t i = 0; i < len && !parent; i++)
        for (cJSON *k = all[i]->child; k; k = k->next)
            if (k == victim) parent = all[i];
    free(all);
    if (!parent) return;
    if (r % 4 == 0) {
        cJSON_Delete(cJSON_DetachItemViaPointer(parent, victim));
        return;
    }
    cJSON_ReplaceItemViaPointer(parent, victim, random_value(r >> 8));
}

/* Reads up to ROWS_PER_FILE rows of each file as cJSON trees. */
static size_t read_rows(int argc, char **argv, cJSON **rows) {
    size_t n = 0;
    for (int f = 1; f < argc; f++) {
        or1_jsonl_reader rd;
        if (or1_jsonl_open(&rd, argv[f]) != 0) {
            fprintf(stderr, "%s\n", or1_error());
            exit(1);
        }
        cJSON *j;
        for (int k = 0; k < ROWS_PER_FILE && or1_jsonl_next(&rd, &j) == 1; k++) rows[n++] = j;
        or1_jsonl_close(&rd);
    }
    return n;
}

/* Damages copies of the rows and validates them: each error names the row, and both outcomes occur. */
int main(int argc, char **argv) {
    if (argc < 2 || argc > 17) {
        fprintf(stderr, "usage: test_data_fuzz FILE.jsonl...\n");
        return 2;
    }
    cJSON *rows[16 * ROWS_PER_FILE];
    size_t n = read_rows(argc, argv, rows), ok = 0, errors = 0;
    for (size_t i = 0; i < n; i++) {
        or1_data_row r;
        if (!CHECK(or1_data_row_parse(rows[i], "fuzz.jsonl:1", "DeepSeek-R1-Distill-Qwen-7B", &r) == 0,
                   "an undamaged row fails: %s", or1_error()))
            return check_report();
        or1_data_row_free(&r);
    }
    for (uint64_t it = 0; it < ITERATIONS && n; it++) {
        cJSON *row = cJSON_Duplicate(rows[or1_rand_u64(11, it, 0) % n], true);
        int edits = 1 + (int)(or1_rand_u64(11, it, 1) % 3);
        for (int e = 0; e < edits; e++) {
            cJSON **all = NULL;
            size_t len = 0, cap = 0;
            collect(row, &all, &len, &cap);
            uint64_t r = or1_rand_u64(11, it, 2 + (uint64_t)e);
            cJSON *victim = len > 1 ? all[1 + (r >> 20) % (len - 1)] : NULL;
            free(all);
            if (victim) damage(row, victim, r);
        }
        char where[64];
        snprintf(where, sizeof where, "fuzz.jsonl:%llu", (unsigned long long)it + 1);
        or1_data_row r;
        if (or1_data_row_parse(row, where, "DeepSeek-R1-Distill-Qwen-7B", &r) == 0) {
            ok++;
            or1_data_row_free(&r);
        } else {
            errors++;
            CHECK(strstr(or1_error(), where) != NULL, "the error does not name the row %s: %s", where, or1_error());
        }
        cJSON_Delete(row);
    }
    for (size_t i = 0; i < n; i++) cJSON_Delete(rows[i]);
    printf("data fuzz: %zu rows, %d damaged copies: %zu valid, %zu errors\n", n, ITERATIONS, ok, errors);
    CHECK(errors > 0, "no damaged copy was refused");
    CHECK(ok > 0, "no damaged copy was accepted");
    return check_report();
}
