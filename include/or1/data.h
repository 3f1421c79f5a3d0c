/* or1 data: the RL prompt dataset in the Skywork-OR1-RL-Data row shape (its dataset card),
 * its load-time filters (offline difficulty, paper §6.2; prompt length, verl rl_dataset.py),
 * file mixing weights, and a seeded, resumable prompt sampler with the online filter hook.
 *
 * Row ids are the positions of the rows kept after the load-time filters (files in the
 * order given, rows in file order); they are stable for a given config and data, and are
 * what the sampler draws, the online filter drops and a checkpoint records. */
#ifndef OR1_DATA_H
#define OR1_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "or1/tokenizer.h"

typedef struct cJSON cJSON;

/* One validated row. */
typedef struct {
    char *data_source;
    bool code;               /* ability "code" (else "math") */
    or1_chat_message *prompt; /* role/content strings owned by the row */
    size_t n_prompt;
    char *ground_truth;      /* reward_model.ground_truth: JSON text, checked to decode to a
                                list of answer strings (math) or a test object (code) */
    int64_t index;           /* extra_info.index, -1 if absent */
    int difficulty;          /* extra_info.model_difficulty[<filter model>], -1 if absent */
    or1_chat_vars chat;      /* chat_template_kwargs over or1_chat_vars_default (enable_thinking
                                undefined where the row does not set it) */
    int32_t *ids;            /* chat-templated prompt token ids (NULL without a tokenizer) */
    int n_ids;
    uint32_t file;           /* index of its file in the options */
    size_t line;             /* its line in that file */
} or1_data_row;

/* Checks one parsed JSONL row and copies it into *out (free with or1_data_row_free). A
 * malformed row is an error naming `where` (e.g. "train.jsonl:12") and the key. With
 * difficulty_model, out->difficulty is that model's entry of extra_info.model_difficulty. */
int or1_data_row_parse(const cJSON *j, const char *where, const char *difficulty_model, or1_data_row *out);
void or1_data_row_free(or1_data_row *r);

/* One training data file and its mixing weight (an integer repeat count; Skywork-OR1's
 * scripts list the code file twice). */
typedef struct {
    char *path;
    int weight;
} or1_data_file;

/* What to load. files/weights as in the config: a file of weight w has each of its rows
 * w times in every epoch (the recipe's duplication of a file in its list). */
typedef struct {
    const or1_data_file *files;
    size_t n_files;
    const char *difficulty_model; /* NULL or "": no offline difficulty filter */
    int difficulty_min, difficulty_max;
    bool keep_missing;            /* rows without a difficulty for the model */
    const or1_tokenizer *tok;     /* NULL: no prompt-length filter and no ids */
    const char *chat_template;    /* NULL or "": the tokenizer's */
    int enable_thinking;          /* the template variable for rows that do not set it: 0, 1 or
                                     OR1_CHAT_UNDEFINED (data.apply_chat_template_kwargs) */
    int max_prompt_length;        /* tokens of the chat-templated prompt (with tok) */
    bool shuffle;
    uint64_t seed;
} or1_data_opts;


/* Counts of the load. */
typedef struct {
    size_t read;               /* rows read from all files */
    size_t dropped_difficulty; /* difficulty outside [min, max] */
    size_t dropped_missing;    /* no difficulty for the model (when not keep_missing) */
    size_t dropped_length;     /* prompt longer than max_prompt_length tokens */
    size_t kept;
} or1_data_stats;

typedef struct or1_dataset or1_dataset;

/* Reads, validates and filters every file; NULL on the first malformed row (naming
 * file:line and the key), a missing file, or when no row survives the filters. */
or1_dataset *or1_data_load(const or1_data_opts *o);
void or1_data_free(or1_dataset *d);

size_t or1_data_rows(const or1_dataset *d);
const or1_data_row *or1_data_row_at(const or1_dataset *d, uint32_t id);
const or1_data_stats *or1_data_load_stats(const or1_dataset *d);
/* Rows not dropped by the online filter. */
size_t or1_data_active(const or1_dataset *d);

/* Draws the next n prompts' row ids in this epoch's order (seeded shuffle: the permutation
 * of epoch e depends only on the seed, e and the rows), skipping dropped rows; when fewer
 * than n remain in the epoch the rest is skipped (drop_last) and the next epoch begins.
 * A batch may hold a row twice when its file has weight > 1: key groups by batch position,
 * not by row id. Fails when fewer than n rows are active at all. */
int or1_data_next(or1_dataset *d, size_t n, uint32_t *ids);
/* The online filter hook: rows never drawn again (ids out of range are an error). */
int or1_data_drop(or1_dataset *d, const uint32_t *ids, size_t n);
/* The online filter of paper §3.1 ("at the beginning of each stage, discard training prompts
 * for which the actor achieved correctness of 1 in the previous stage"): record every drawn
 * prompt's result (correct of n samples) during a stage; at the next stage's start
 * or1_data_stage_filter drops the rows that every sample solved each time they were drawn in
 * the stage, forgets the records, and returns how many rows it dropped. */
int or1_data_record(or1_dataset *d, uint32_t id, int correct, int n);
size_t or1_data_stage_filter(or1_dataset *d);

/* The epoch and position of the cursor. */
void or1_data_cursor(const or1_dataset *d, uint64_t *epoch, size_t *pos);

/* Sampler state for checkpoints: {"epoch", "pos", "rows", "slots", "seed", "dropped": [...],
 * "stage_solved": [...], "stage_unsolved": [...]} (the last two: this stage's records);
 * loading it into a dataset built from different data or seed is an error. */
cJSON *or1_data_state_json(const or1_dataset *d);
int or1_data_state_load(or1_dataset *d, const cJSON *j, const char *where);

#endif
