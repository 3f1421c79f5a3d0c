/* What several subcommands read alike: token ids from input rows, the model's tokenizer, the
 * dtype of a checkpoint they save. */
#include "cli.h"

#include "or1/core.h"
#include "or1/io.h"
#include "or1/io_gguf.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The tokenizer at --tokenizer PATH, else the model's own: a GGUF file's, a folder's if it has
 * tokenizer.json; else none (*tok NULL; rows must then give ids). Fails only on a tokenizer that
 * won't load. */
int cli_model_tokenizer(const char *path, const char *dir, or1_tokenizer **tok) {
    char *def = or1_path_join(dir, "tokenizer.json");
    *tok = NULL;
    if (path || or1_is_file(def) || or1_gguf_is_gguf(dir)) *tok = or1_tokenizer_load(path ? path : dir);
    free(def);
    return (path || *tok) && !*tok ? -1 : 0;
}

/* The FLAG_SAMPLING flags, defaults from the command's table. */
void cli_sampling(cli_args *a, or1_sampling *s, int64_t *n) {
    double t = 1.0, top_p = 1.0;
    int64_t top_k = 0, max_new = 1, seed = 0;
    cli_double(a, "temperature", &t);
    cli_double(a, "top-p", &top_p);
    cli_int(a, "top-k", &top_k);
    cli_int(a, "max-new-tokens", &max_new);
    cli_int(a, "seed", &seed);
    cli_int(a, "n", n);
    *s = (or1_sampling){.temperature = (float)t, .top_p = (float)top_p, .top_k = (int)top_k,
                        .max_new_tokens = (int)max_new, .seed = (uint64_t)seed, .stop_ids = NULL,
                        .n_stop = 0};
}

/* An int flag into *out (of an option row). */
static void tool_int(cli_args *a, const char *flag, int *out) {
    int64_t v = *out;
    cli_int(a, flag, &v);
    *out = (int)v;
}

/* A switch of an option row into *out. */
static void row_switch(cli_args *a, const char *flag, bool *out) { *out = cli_flag(a, flag); }

/* One option row's flag into c->field, read by its type. */
#define READ_OPTION(key, flag, field, type, def, lo, hi, help) READ_OPTION_##type(a, flag, &c->field);
#define READ_OPTION_int tool_int
#define READ_OPTION_double cli_double
#define READ_OPTION_bool row_switch

/* See cli.h: each row read by its type. */
void cli_tool_flags(cli_args *a, or1_tools_cfg *c) {
    *c = (or1_tools_cfg){0};
    OR1_TOOL_OPTIONS(READ_OPTION)
}

/* See cli.h. */
void cli_engine_flags(cli_args *a, or1_engine_opts *c) {
    *c = (or1_engine_opts){0};
    OR1_ENGINE_OPTIONS(READ_OPTION)
}

/* See cli.h. */
void cli_reward_flags(cli_args *a, or1_reward_opts *c) { OR1_REWARD_OPTIONS(READ_OPTION) }

/* --save-dtype f32|bf16 (the table's default f32). */
int cli_save_dtype(cli_args *a, or1_dtype *out) {
    const char *dt = cli_str(a, "save-dtype");
    *out = OR1_F32;
    if (strcmp(dt, "f32") == 0) return 0;
    if (strcmp(dt, "bf16") == 0) return *out = OR1_BF16, 0;
    return or1_fail("%s: --save-dtype must be f32 or bf16, not \"%.32s\"", a->cmd, dt);
}

/* text through the tokenizer; every id must be below vocab, so a tokenizer larger than the
 * model is caught here and not inside the model. */
int cli_encode(const or1_tokenizer *tok, const char *text, int vocab, const char *where, int32_t **ids, size_t *n) {
    if (or1_tokenizer_encode(tok, text, strlen(text), 0, ids, n)) return or1_fail_ctx("%s", where);
    for (size_t i = 0; i < *n; i++)
        if ((*ids)[i] >= vocab) {
            int id = (*ids)[i];
            free(*ids);
            *ids = NULL;
            return or1_fail("%s: token id %d is outside the model's vocabulary of %d", where, id, vocab);
        }
    return 0;
}

/* "<side>_ids" as given, or "<side>" text through the tokenizer (cli_encode). */
int cli_row_ids(const cJSON *row, const char *side, const or1_tokenizer *tok, int vocab, const char *where,
                int32_t **ids, size_t *n) {
    char key[32];
    snprintf(key, sizeof key, "%s_ids", side);
    if (cJSON_GetObjectItemCaseSensitive(row, key)) return or1_json_int_array(row, key, 0, vocab - 1, ids, n, where);
    const char *text = or1_json_str(row, side, where);
    if (!text) return or1_fail_ctx("%s: needs \"%s\" or \"%s\"", where, key, side);
    if (!tok) return or1_fail("%s: \"%s\" text needs a tokenizer (--tokenizer)", where, side);
    return cli_encode(tok, text, vocab, where, ids, n);
}

/* See cli.h. */
int cli_row_mask(const cJSON *row, size_t n_resp, const char *where, uint8_t **out) {
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(row, "response_mask");
    int32_t *v = NULL;
    size_t n = 0;
    *out = NULL;
    if (!o || cJSON_IsNull(o)) return 0;
    if (or1_json_int_array(row, "response_mask", 0, 1, &v, &n, where)) return -1;
    if (n != n_resp) {
        free(v);
        return or1_fail("%s: \"response_mask\" has %zu values for %zu response tokens", where, n, n_resp);
    }
    *out = or1_malloc(n);
    for (size_t j = 0; j < n; j++) (*out)[j] = (uint8_t)v[j];
    free(v);
    return 0;
}

enum { MAX_MESSAGES = 4096 };

/* --chat-template-kwargs parsed over the defaults. */
int cli_chat_vars(cli_args *a, or1_chat_vars *v) {
    *v = or1_chat_vars_default();
    const char *text = cli_str(a, "chat-template-kwargs");
    if (!text) return 0;
    cJSON *j = or1_json_parse(text, strlen(text), "--chat-template-kwargs");
    int rc = j ? or1_chat_vars_parse(j, "--chat-template-kwargs", v) : -1;
    cJSON_Delete(j);
    return rc;
}

/* A row's "messages" array into new *msgs (strings pointing into row). */
static int row_messages(const cJSON *row, const char *where, or1_chat_message **msgs, size_t *n) {
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(row, "messages");
    if (!cJSON_IsArray(list)) return or1_fail("%s: \"messages\" must be an array", where);
    size_t k = (size_t)cJSON_GetArraySize(list), i = 0;
    if (k > MAX_MESSAGES) return or1_fail("%s: more than %d messages", where, MAX_MESSAGES);
    *msgs = or1_calloc(k ? k : 1, sizeof **msgs);
    const cJSON *m;
    cJSON_ArrayForEach(m, list) {
        char w[700];
        snprintf(w, sizeof w, "%s: messages[%zu]", where, i);
        const char *role = or1_json_str(m, "role", w), *content = role ? or1_json_str(m, "content", w) : NULL;
        if (!content) {
            free(*msgs);
            *msgs = NULL;
            return -1;
        }
        (*msgs)[i++] = (or1_chat_message){.role = role, .content = content};
    }
    *n = k;
    return 0;
}

/* Refuses keys other than messages and chat_template_kwargs, then renders. */
int cli_row_chat(const cJSON *row, const char *where, const or1_tokenizer *t, const char *tpl,
                 const or1_chat_vars *defaults, char **text) {
    *text = NULL;
    if (!cJSON_IsObject(row)) return or1_fail("%s: a row must be a JSON object", where);
    for (const cJSON *e = row->child; e; e = e->next) {
        const char *name = e->string ? e->string : "";
        if (strcmp(name, "messages") != 0 && strcmp(name, "chat_template_kwargs") != 0)
            return or1_fail("%s: unknown key \"%.64s\" (known: messages, chat_template_kwargs)", where, name);
    }
    or1_chat_vars v = *defaults;
    or1_chat_message *msgs = NULL;
    size_t n = 0;
    if (or1_chat_vars_parse(cJSON_GetObjectItemCaseSensitive(row, "chat_template_kwargs"), where, &v) != 0 ||
        row_messages(row, where, &msgs, &n) != 0)
        return -1;
    int rc = or1_tokenizer_chat(t, tpl, msgs, n, &v, text);
    if (rc != 0) or1_fail_ctx("%s", where);
    free(msgs);
    return rc;
}
