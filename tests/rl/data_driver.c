/* Test driver for or1/data.h: loads a dataset with the options given as flags, prints every
 * kept row, then draws batches and prints them, for tests/rl/test_data.py to check against
 * its own reading of the files.
 *
 *   data_driver [--file PATH:WEIGHT]... [--difficulty MODEL MIN MAX keep|drop]
 *               [--tokenizer PATH --template NAME --max-prompt-length N] [--enable-thinking 0|1]
 *               [--shuffle SEED]
 *               [--state-in FILE] [--drop ID,ID,...] [--record ID:C:N,...] [--stage-filter]
 *               [--draw N STEPS] [--state-out FILE]
 *
 * Output (stdout, JSONL): {"stats": ...}, one {"row": ...} per kept row, {"stage_dropped": k}
 * after --stage-filter, one {"batch": [...]} per drawn step. On error: "error: <message>" on stderr and exit status 1. */
#include "or1/core.h"
#include "or1/data.h"
#include "or1/io.h"
#include "or1/tokenizer.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Prints the error and exits. */
static void die(void) {
    fprintf(stderr, "error: %s\n", or1_error());
    exit(1);
}

/* One kept row as JSON. */
static void print_row(const or1_dataset *d, uint32_t id) {
    const or1_data_row *r = or1_data_row_at(d, id);
    cJSON *j = cJSON_CreateObject(), *row = cJSON_AddObjectToObject(j, "row");
    cJSON_AddNumberToObject(row, "id", id);
    cJSON_AddNumberToObject(row, "file", r->file);
    cJSON_AddNumberToObject(row, "line", (double)r->line);
    cJSON_AddStringToObject(row, "data_source", r->data_source);
    cJSON_AddBoolToObject(row, "code", r->code);
    cJSON *msgs = cJSON_AddArrayToObject(row, "prompt");
    for (size_t i = 0; i < r->n_prompt; i++) {
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "role", r->prompt[i].role);
        cJSON_AddStringToObject(m, "content", r->prompt[i].content);
        cJSON_AddItemToArray(msgs, m);
    }
    cJSON_AddStringToObject(row, "ground_truth", r->ground_truth);
    cJSON_AddNumberToObject(row, "index", (double)r->index);
    cJSON_AddNumberToObject(row, "difficulty", r->difficulty);
    cJSON_AddNumberToObject(row, "n_ids", r->n_ids);
    char *t = cJSON_PrintUnformatted(j);
    puts(t);
    free(t);
    cJSON_Delete(j);
}

/* Parses the flags, loads, prints rows, restores/drops, draws, saves. */
int main(int argc, char **argv) {
    or1_data_file files[16];
    char *paths[16];
    or1_data_opts o = {.files = files, .max_prompt_length = 1 << 30, .enable_thinking = OR1_CHAT_UNDEFINED};
    const char *tok_path = NULL, *state_in = NULL, *state_out = NULL, *drop = NULL, *record = NULL;
    bool stage_filter = false;
    long draw_n = 0, draw_steps = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool more = i + 1 < argc;
        if (!strcmp(a, "--file") && more && o.n_files < 16) {
            char *s = argv[++i], *colon = strrchr(s, ':');
            paths[o.n_files] = strndup(s, colon ? (size_t)(colon - s) : strlen(s));
            files[o.n_files] = (or1_data_file){.path = paths[o.n_files],
                                               .weight = colon ? atoi(colon + 1) : 1};
            o.n_files++;
        } else if (!strcmp(a, "--difficulty") && i + 4 < argc) {
            o.difficulty_model = argv[++i];
            o.difficulty_min = atoi(argv[++i]);
            o.difficulty_max = atoi(argv[++i]);
            o.keep_missing = !strcmp(argv[++i], "keep");
        } else if (!strcmp(a, "--tokenizer") && more) {
            tok_path = argv[++i];
        } else if (!strcmp(a, "--template") && more) {
            o.chat_template = argv[++i];
        } else if (!strcmp(a, "--enable-thinking") && more) {
            o.enable_thinking = atoi(argv[++i]);
        } else if (!strcmp(a, "--max-prompt-length") && more) {
            o.max_prompt_length = atoi(argv[++i]);
        } else if (!strcmp(a, "--shuffle") && more) {
            o.shuffle = true;
            o.seed = strtoull(argv[++i], NULL, 10);
        } else if (!strcmp(a, "--state-in") && more) {
            state_in = argv[++i];
        } else if (!strcmp(a, "--state-out") && more) {
            state_out = argv[++i];
        } else if (!strcmp(a, "--drop") && more) {
            drop = argv[++i];
        } else if (!strcmp(a, "--record") && more) {
            record = argv[++i];
        } else if (!strcmp(a, "--stage-filter")) {
            stage_filter = true;
        } else if (!strcmp(a, "--draw") && i + 2 < argc) {
            draw_n = atol(argv[++i]);
            draw_steps = atol(argv[++i]);
        } else {
            fprintf(stderr, "data_driver: bad argument %s\n", a);
            return 2;
        }
    }
    or1_tokenizer *tok = NULL;
    if (tok_path && !(tok = or1_tokenizer_load(tok_path))) die();
    o.tok = tok;
    or1_dataset *d = or1_data_load(&o);
    if (!d) die();
    const or1_data_stats *st = or1_data_load_stats(d);
    printf("{\"stats\":{\"read\":%zu,\"dropped_difficulty\":%zu,\"dropped_missing\":%zu,\"dropped_length\":%zu,"
           "\"kept\":%zu}}\n", st->read, st->dropped_difficulty, st->dropped_missing, st->dropped_length, st->kept);
    for (uint32_t id = 0; id < or1_data_rows(d); id++) print_row(d, id);
    if (state_in) {
        char *text;
        size_t len;
        if (or1_read_file(state_in, 1 << 26, &text, &len) != 0) die();
        cJSON *j = or1_json_parse(text, len, state_in);
        free(text);
        if (!j || or1_data_state_load(d, j, state_in) != 0) die();
        cJSON_Delete(j);
    }
    if (drop) {
        uint32_t ids[4096];
        size_t n = 0;
        for (char *s = (char *)drop; *s && n < 4096;) {
            ids[n++] = (uint32_t)strtoul(s, &s, 10);
            if (*s == ',') s++;
        }
        if (or1_data_drop(d, ids, n) != 0) die();
    }
    for (char *s = (char *)record; s && *s;) {
        unsigned long id = strtoul(s, &s, 10);
        int c = *s == ':' ? (int)strtol(s + 1, &s, 10) : 0, n = *s == ':' ? (int)strtol(s + 1, &s, 10) : 0;
        if (or1_data_record(d, (uint32_t)id, c, n) != 0) die();
        if (*s == ',') s++;
    }
    if (stage_filter) printf("{\"stage_dropped\":%zu}\n", or1_data_stage_filter(d));
    uint32_t *batch = malloc((size_t)(draw_n > 0 ? draw_n : 1) * sizeof *batch);
    for (long s = 0; s < draw_steps; s++) {
        if (or1_data_next(d, (size_t)draw_n, batch) != 0) die();
        uint64_t epoch;
        size_t pos;
        or1_data_cursor(d, &epoch, &pos);
        printf("{\"epoch\":%llu,\"pos\":%zu,\"batch\":[", (unsigned long long)epoch, pos);
        for (long k = 0; k < draw_n; k++) printf("%s%u", k ? "," : "", batch[k]);
        puts("]}");
    }
    free(batch);
    if (state_out) {
        cJSON *j = or1_data_state_json(d);
        char *t = cJSON_PrintUnformatted(j);
        if (or1_write_file_atomic(state_out, t, strlen(t)) != 0) die();
        free(t);
        cJSON_Delete(j);
    }
    or1_data_free(d);
    or1_tokenizer_free(tok);
    for (size_t f = 0; f < o.n_files; f++) free(paths[f]);
    return 0;
}
