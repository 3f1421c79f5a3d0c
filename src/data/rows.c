/* The RL dataset: JSONL rows in the Skywork-OR1-RL-Data shape, validated row by row, with
 * the offline difficulty filter and the prompt-length filter
 * (paper §6.2; Skywork-OR1's download_and_filter_data_*.py and verl rl_dataset.py). */
#include "internal.h"
#include "or1/core.h"
#include "or1/io.h"
#include "or1/reward_math.h"
#include "or1/reward_sandbox.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    MAX_SOURCE = 256,          /* bytes of data_source */
    MAX_MESSAGES = 64,         /* messages in a prompt */
    MAX_CONTENT = 4 << 20,     /* bytes of one message */
    MAX_TRUTH = 16 << 20,      /* bytes of ground_truth */
    MAX_DIFFICULTY = 1000000,
};

/* A key's value of the given cJSON type (cJSON_String, ...), or NULL with an error naming
 * where and the key path. */
static const cJSON *need(const cJSON *obj, const char *key, int type, const char *tname, const char *where,
                         const char *path) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v)) {
        or1_fail("%s: missing key \"%s\"", where, path);
        return NULL;
    }
    if (!(v->type & type)) {
        or1_fail("%s: key \"%s\" must be %s", where, path, tname);
        return NULL;
    }
    return v;
}

/* A string no longer than max bytes, without NUL bytes (cJSON stops at them). */
static int bounded(const cJSON *v, size_t max, const char *where, const char *path) {
    size_t n = strlen(v->valuestring);
    if (n == 0) return or1_fail("%s: key \"%s\" is empty", where, path);
    if (n > max) return or1_fail("%s: key \"%s\" is longer than %zu bytes", where, path, max);
    return 0;
}

/* The prompt: a non-empty list of {role: system|user|assistant, content: string}. */
static int parse_prompt(const cJSON *j, const char *where, or1_data_row *r) {
    const cJSON *p = need(j, "prompt", cJSON_Array, "a list of chat messages", where, "prompt");
    if (!p) return -1;
    int n = cJSON_GetArraySize(p);
    if (n < 1 || n > MAX_MESSAGES)
        return or1_fail("%s: key \"prompt\" must hold 1 to %d messages, not %d", where, MAX_MESSAGES, n);
    r->prompt = or1_calloc((size_t)n, sizeof *r->prompt);
    const cJSON *m = p->child;
    for (int i = 0; i < n; i++, m = m->next) {
        char path[64];
        snprintf(path, sizeof path, "prompt[%d]", i);
        if (!cJSON_IsObject(m)) return or1_fail("%s: key \"%s\" must be an object {role, content}", where, path);
        snprintf(path, sizeof path, "prompt[%d].role", i);
        const cJSON *role = need(m, "role", cJSON_String, "a string", where, path);
        if (!role) return -1;
        const char *rs = role->valuestring;
        if (strcmp(rs, "system") && strcmp(rs, "user") && strcmp(rs, "assistant"))
            return or1_fail("%s: key \"%s\" must be system, user or assistant, not \"%.32s\"", where, path, rs);
        snprintf(path, sizeof path, "prompt[%d].content", i);
        const cJSON *content = need(m, "content", cJSON_String, "a string", where, path);
        if (!content || bounded(content, MAX_CONTENT, where, path) != 0) return -1;
        r->prompt[i].role = or1_strdup(rs);
        r->prompt[i].content = or1_strdup(content->valuestring);
        r->n_prompt = (size_t)i + 1;
    }
    return 0;
}

/* reward_model.ground_truth: a string read as the ability reads it. A math row's is one answer
 * or Skywork-OR1's JSON-encoded list of answers (or1_math_gold_parse holds the rule); a code
 * row's is its JSON-encoded tests. */
static int parse_truth(const cJSON *j, const char *where, or1_data_row *r) {
    const cJSON *rm = need(j, "reward_model", cJSON_Object, "an object", where, "reward_model");
    if (!rm) return -1;
    const cJSON *gt = need(rm, "ground_truth", cJSON_String,
                           r->code ? "a JSON-encoded string of tests" : "a string (an answer or a JSON-encoded list of answers)",
                           where, "reward_model.ground_truth");
    if (!gt || bounded(gt, MAX_TRUTH, where, "reward_model.ground_truth") != 0) return -1;
    char w[700];
    snprintf(w, sizeof w, "%s: reward_model.ground_truth", where);
    if (r->code) {
        /* The sandbox's own parser, so that a row loads exactly when its tests can run. */
        or1_code_tests t;
        if (or1_code_tests_parse(gt, &t, w) != 0) return -1;
        or1_code_tests_free(&t);
    } else {
        /* The verifier's own reader, so that a row loads exactly when its answers can be read. */
        or1_math_gold g;
        if (or1_math_gold_parse(gt->valuestring, w, &g) != 0) return -1;
        or1_math_gold_free(&g);
    }
    r->ground_truth = or1_strdup(gt->valuestring);
    return 0;
}

/* extra_info (optional): index, and model_difficulty {model: int} for the filter's model. */
static int parse_extra(const cJSON *j, const char *where, const char *model, or1_data_row *r) {
    r->index = -1;
    r->difficulty = -1;
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, "extra_info");
    if (!x || cJSON_IsNull(x)) return 0;
    if (!cJSON_IsObject(x)) return or1_fail("%s: key \"extra_info\" must be an object", where);
    char w[600];
    snprintf(w, sizeof w, "%s: extra_info", where);
    if (or1_json_int_opt(x, "index", 0, INT64_MAX / 2, &r->index, w) != 0) return -1;
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(x, "model_difficulty");
    if (!md || cJSON_IsNull(md)) return 0;
    if (!cJSON_IsObject(md)) return or1_fail("%s: key \"extra_info.model_difficulty\" must be an object", where);
    snprintf(w, sizeof w, "%s: extra_info.model_difficulty", where);
    for (const cJSON *e = md->child; e; e = e->next) {
        int64_t v;
        if (cJSON_IsNull(e)) continue; /* parquet structs give null for a model without a value */
        if (or1_json_int(md, e->string, 0, MAX_DIFFICULTY, &v, w) != 0) return -1;
        if (model && !strcmp(e->string, model)) r->difficulty = (int)v;
    }
    return 0;
}

/* Refuses a key the row shape does not have (a misspelt chat_template_kwargs would otherwise
 * change nothing without a word). */
static int known_keys(const cJSON *j, const char *where) {
    static const char *const keys[] = {"data_source", "prompt", "ability", "reward_model", "extra_info",
                                       "chat_template_kwargs"};
    for (const cJSON *e = j->child; e; e = e->next) {
        const char *name = e->string ? e->string : "";
        size_t k = 0;
        while (k < sizeof keys / sizeof *keys && strcmp(name, keys[k]) != 0) k++;
        if (k == sizeof keys / sizeof *keys)
            return or1_fail("%s: unknown key \"%.64s\" (known: data_source, prompt, ability, reward_model, "
                            "extra_info, chat_template_kwargs)", where, name);
    }
    return 0;
}

/* Validates a row: data_source, prompt, ability, reward_model, extra_info,
 * chat_template_kwargs, and no other key. */
int or1_data_row_parse(const cJSON *j, const char *where, const char *difficulty_model, or1_data_row *out) {
    memset(out, 0, sizeof *out);
    out->chat = or1_chat_vars_default();
    if (!cJSON_IsObject(j)) return or1_fail("%s: a row must be a JSON object", where);
    if (known_keys(j, where) != 0 ||
        or1_chat_vars_parse(cJSON_GetObjectItemCaseSensitive(j, "chat_template_kwargs"), where, &out->chat) != 0)
        return -1;
    const cJSON *src = need(j, "data_source", cJSON_String, "a string", where, "data_source");
    if (!src || bounded(src, MAX_SOURCE, where, "data_source") != 0) return -1;
    const cJSON *ab = need(j, "ability", cJSON_String, "a string", where, "ability");
    if (!ab) return -1;
    if (strcmp(ab->valuestring, "math") && strcmp(ab->valuestring, "code"))
        return or1_fail("%s: key \"ability\" must be math or code, not \"%.32s\"", where, ab->valuestring);
    out->code = !strcmp(ab->valuestring, "code");
    int rc = parse_prompt(j, where, out);
    if (rc == 0) rc = parse_truth(j, where, out);
    if (rc == 0) rc = parse_extra(j, where, difficulty_model, out);
    if (rc != 0) {
        or1_data_row_free(out);
        return -1;
    }
    out->data_source = or1_strdup(src->valuestring);
    return 0;
}

/* Frees the row's strings and ids. */
void or1_data_row_free(or1_data_row *r) {
    for (size_t i = 0; i < r->n_prompt; i++) {
        free((char *)r->prompt[i].role);
        free((char *)r->prompt[i].content);
    }
    free(r->prompt);
    free(r->data_source);
    free(r->ground_truth);
    free(r->ids);
    memset(r, 0, sizeof *r);
}


/* Appends a row to the dataset's growable array. */
static void push_row(or1_dataset *d, or1_data_row *r, size_t *cap) {
    if (d->n_rows == *cap) {
        *cap = *cap ? 2 * *cap : 1024;
        d->rows = or1_realloc(d->rows, *cap * sizeof *d->rows);
    }
    d->rows[d->n_rows++] = *r;
}

/* Reads one file, applying the difficulty filter as rows come. */
static int load_file(or1_dataset *d, const or1_data_opts *o, uint32_t f, size_t *cap) {
    or1_jsonl_reader rd;
    if (or1_jsonl_open(&rd, o->files[f].path) != 0) return -1;
    bool filter = o->difficulty_model && *o->difficulty_model;
    cJSON *j;
    int rc;
    while ((rc = or1_jsonl_next(&rd, &j)) == 1) {
        const char *where = rd.where;
        or1_data_row r;
        rc = or1_data_row_parse(j, where, filter ? o->difficulty_model : NULL, &r);
        cJSON_Delete(j);
        if (rc != 0) break;
        d->stats.read++;
        r.file = f;
        r.line = rd.line;
        if (filter && r.difficulty < 0 && !o->keep_missing) {
            d->stats.dropped_missing++;
            or1_data_row_free(&r);
        } else if (filter && r.difficulty >= 0 && (r.difficulty < o->difficulty_min || r.difficulty > o->difficulty_max)) {
            d->stats.dropped_difficulty++;
            or1_data_row_free(&r);
        } else {
            push_row(d, &r, cap);
        }
    }
    or1_jsonl_close(&rd);
    return rc < 0 ? -1 : 0;
}

/* Chat template + encode of one row's prompt (verl: apply_chat_template with the generation
 * prompt, then tokenize without adding special tokens). */
static int encode_row(const or1_data_opts *o, or1_data_row *r) {
    char *text;
    const char *tpl = o->chat_template && *o->chat_template ? o->chat_template : NULL;
    or1_chat_vars v = r->chat;
    if (v.enable_thinking == OR1_CHAT_UNDEFINED) v.enable_thinking = o->enable_thinking;
    if (or1_tokenizer_chat(o->tok, tpl, r->prompt, r->n_prompt, &v, &text) != 0) return -1;
    size_t n;
    int rc = or1_tokenizer_encode(o->tok, text, strlen(text), 0, &r->ids, &n);
    free(text);
    r->n_ids = (int)(n > (size_t)INT32_MAX ? INT32_MAX : n);
    return rc;
}

/* The prompt-length filter: tokenizes every row in parallel (the tokenizer allows
 * concurrent encodes), then keeps rows of at most max_prompt_length tokens in order. */
static int length_filter(or1_dataset *d, const or1_data_opts *o) {
    long failed = -1;
    char *msg = NULL;
#pragma omp parallel for schedule(dynamic, 64)
    for (long i = 0; i < (long)d->n_rows; i++) {
        if (encode_row(o, &d->rows[i]) != 0) {
#pragma omp critical
            if (failed < 0 || i < failed) {
                failed = i;
                free(msg);
                msg = or1_strdup(or1_error());
            }
        }
    }
    if (failed >= 0) {
        const or1_data_row *r = &d->rows[failed];
        or1_fail("%s:%zu: prompt: %s", o->files[r->file].path, r->line, msg);
        free(msg);
        return -1;
    }
    size_t k = 0;
    for (size_t i = 0; i < d->n_rows; i++) {
        if (d->rows[i].n_ids > o->max_prompt_length) {
            d->stats.dropped_length++;
            or1_data_row_free(&d->rows[i]);
        } else {
            d->rows[k++] = d->rows[i];
        }
    }
    d->n_rows = k;
    return 0;
}

/* Load every file, filter, then set up the sampler. */
or1_dataset *or1_data_load(const or1_data_opts *o) {
    or1_dataset *d = or1_calloc(1, sizeof *d);
    size_t cap = 0;
    int rc = o->n_files ? 0 : or1_fail("data: no training file");
    for (size_t f = 0; f < o->n_files && rc == 0; f++) {
        if (o->files[f].weight < 1 || o->files[f].weight > 1000)
            rc = or1_fail("%s: mixing weight %d is not in [1, 1000]", o->files[f].path, o->files[f].weight);
        else if (o->n_files > UINT32_MAX)
            rc = or1_fail("data: too many files");
        else
            rc = load_file(d, o, (uint32_t)f, &cap);
    }
    if (rc == 0 && o->tok) rc = length_filter(d, o);
    if (rc == 0 && d->n_rows == 0)
        rc = or1_fail("data: no row left after the filters (%zu read, %zu outside the difficulty range, %zu without "
                      "a difficulty, %zu too long)", d->stats.read, d->stats.dropped_difficulty, d->stats.dropped_missing,
                      d->stats.dropped_length);
    if (rc == 0 && d->n_rows > UINT32_MAX / 1000) rc = or1_fail("data: more than %u rows", UINT32_MAX / 1000);
    if (rc == 0) rc = or1_data_sampler_init(d, o);
    if (rc != 0) {
        or1_data_free(d);
        return NULL;
    }
    d->stats.kept = d->n_rows;
    return d;
}

/* Frees the rows and the sampler. */
void or1_data_free(or1_dataset *d) {
    if (!d) return;
    for (size_t i = 0; i < d->n_rows; i++) or1_data_row_free(&d->rows[i]);
    free(d->rows);
    free(d->slots);
    free(d->order);
    free(d->dropped);
    free(d->solved);
    free(d);
}

/* Accessors of the loaded rows and their counts. */
size_t or1_data_rows(const or1_dataset *d) { return d->n_rows; }
const or1_data_row *or1_data_row_at(const or1_dataset *d, uint32_t id) { return id < d->n_rows ? &d->rows[id] : NULL; }
const or1_data_stats *or1_data_load_stats(const or1_dataset *d) { return &d->stats; }
