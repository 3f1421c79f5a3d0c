/* or1 command-line front end: one function per subcommand, plus flag parsing helpers. */
#ifndef OR1_CLI_H
#define OR1_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "or1/dist.h"
#include "or1/rollout.h"
#include "or1/io_safetensors.h"
#include "or1/tokenizer.h"
#include "or1/train.h"

/* What a flag takes. One table of these per command drives both the parser and the help, so
 * the two cannot disagree. */
typedef enum {
    CLI_STRING, /* text */
    CLI_PATH,   /* a file or folder */
    CLI_INT,    /* an integer within [ilo, ihi] */
    CLI_NUMBER, /* a finite real number within [lo, hi] */
    CLI_SWITCH, /* present or absent; takes no value */
    CLI_REPEAT, /* text that may be given any number of times */
    CLI_QUERY,  /* a switch asking for information instead of work: required flags may be left out */
} cli_kind;

/* One flag of a command. */
typedef struct {
    const char *name; /* without the leading "--"; the first member (or1_closest_name) */
    cli_kind kind;
    const char *meta; /* the value's placeholder in the help (NULL: from the kind) */
    const char *def;  /* the value taken when the flag is absent, read like a given one; NULL: none */
    int64_t ilo, ihi; /* range of CLI_INT */
    double lo, hi;    /* range of CLI_NUMBER */
    bool required;
    const char *help; /* one line */
} cli_flag_spec;

#define FLAG_STR(n, meta_, def_, help_) {.name = n, .kind = CLI_STRING, .meta = meta_, .def = def_, .help = help_}
#define FLAG_PATH(n, def_, help_) {.name = n, .kind = CLI_PATH, .def = def_, .help = help_}
#define FLAG_NEED(n, help_) {.name = n, .kind = CLI_PATH, .required = true, .help = help_}
#define FLAG_INT(n, def_, lo_, hi_, help_) {.name = n, .kind = CLI_INT, .def = def_, .ilo = lo_, .ihi = hi_, .help = help_}
#define FLAG_NUM(n, def_, lo_, hi_, help_) {.name = n, .kind = CLI_NUMBER, .def = def_, .lo = lo_, .hi = hi_, .help = help_}
#define FLAG_SWITCH(n, help_) {.name = n, .kind = CLI_SWITCH, .help = help_}
/* The sampling flags of generate, eval and difficulty (cli_sampling reads them). */
#define FLAG_SAMPLING(n_def, max_new_def, max_new_lo, max_new_help)                                            \
    FLAG_INT("n", n_def, 1, 1 << 16, "samples per prompt"),                                                   \
        FLAG_NUM("temperature", "1", 0, 100, "sampling temperature; 0: greedy"),                               \
        FLAG_NUM("top-p", "1", 1e-6, 1, "nucleus sampling: smallest token set of this probability"),           \
        FLAG_INT("top-k", "0", 0, 1 << 30, "sample among the k likeliest tokens; 0: off"),                     \
        FLAG_INT("max-new-tokens", max_new_def, max_new_lo, 1 << 24, max_new_help),                            \
        FLAG_INT("seed", "0", 0, INT64_MAX, "sampling seed (each prompt gets its own stream)")
/* --device of the commands that run a model. */
#define FLAG_DEVICE                                                                                     \
    FLAG_STR("device", "cpu|cuda", "cpu", "backend the model runs on"),                                \
        FLAG_STR("precision", "auto|fp32|bf16", "auto", "matmul precision; auto: fp32 on cpu, bf16 on cuda")

/* A subcommand: its name, its function, and what `or1 help CMD` prints. */
typedef struct cli_args cli_args;
typedef struct {
    const char *name; /* the first member (or1_closest_name) */
    int (*run)(cli_args *a);
    const char *summary; /* one line for the command list */
    const cli_flag_spec *flags;
    size_t n_flags;
    const char *example; /* one complete command line */
} cli_command;

#define CLI_COMMAND(name_, fn, summary_, table, example_) \
    {name_, fn, summary_, table, sizeof table / sizeof table[0], example_}

/* A parsed command line: the flags given, each checked against the command's table. */
struct cli_args {
    const char *cmd;
    const cli_command *c;
    int n_given;
    int *flag;           /* per given flag: its index in the table (past the end: a common flag) */
    const char **value;  /* per given flag: its value ("" for a switch) */
    bool *read;          /* per given flag: the command has read it */
};

/* Walks argv once against the command's table (and the flags every command takes):
 * "--name value" and "--name=value", switches, repeatable flags, ranges, required flags.
 * Returns 0, 1 when --help or -h was asked for (nothing else checked), or -1 with an error
 * naming the flag. */
int cli_parse(const cli_command *c, int argc, char **argv, cli_args *a);
void cli_args_free(cli_args *a);

/* The getters read the parsed flags by name; the name must be in the command's table with a
 * matching kind (anything else is a bug and aborts). A flag not given takes its table
 * default; with none, cli_str returns NULL and the number getters leave *out as it was. */
const char *cli_str(cli_args *a, const char *name);
bool cli_flag(cli_args *a, const char *name);
/* Whether a flag was given on the command line (not its default). */
bool cli_given(cli_args *a, const char *name);
void cli_int(cli_args *a, const char *name, int64_t *out);
void cli_double(cli_args *a, const char *name, double *out);
/* Every value of a repeatable flag in order (a new array, NULL-terminated; free it). */
const char **cli_list(cli_args *a, const char *name, size_t *n);
/* Fails if a table default is out of its flag's range (a bug in the table). */
int cli_check_defaults(const cli_command *c);
/* Fails if a given flag was never read: a table entry the command's code forgot. */
int cli_check_unused(cli_args *a);

/* The flags every command takes after its own (--threads). */
extern const cli_flag_spec cli_common_flags[];
extern const size_t cli_common_flags_len;

/* Help: the command list, one command's usage and flags, train's config schema, the version. */
void cli_usage(FILE *f, const cli_command *const *cmds, size_t n);
int cli_help(FILE *f, const cli_command *c);
void cli_help_config(FILE *f);
void cli_version(FILE *f);

/* Hands the process's ranks to the commands that use them. */
void cli_set_dist(const or1_dist *d);

/* A model loaded from its folder and placed on a device (src/cli/device.c). */
typedef struct {
    or1_model m;
    or1_backend *be;
    or1_dmodel *dm;
} cli_model;

/* Loads dir and places it on device, with gradients when train (grad, sft) or frozen for
 * inference: -1 (with or1_fail) and nothing open on failure. */
int cli_model_open(cli_model *cm, const char *dir, const char *device, const char *precision, bool train);
void cli_model_close(cli_model *cm);

/* Token ids of one side of an input row: "<side>_ids", or "<side>" text through tok (NULL:
 * text is refused); ids must lie below vocab. Errors name `where`. The caller frees *ids. */
int cli_row_ids(const cJSON *row, const char *side, const or1_tokenizer *tok, int vocab, const char *where,
                int32_t **ids, size_t *n);

/* text through tok into new *ids, every id below vocab; errors name `where`. */
int cli_encode(const or1_tokenizer *tok, const char *text, int vocab, const char *where, int32_t **ids, size_t *n);

/* The row's optional "response_mask": one 0 or 1 per response token (0: context only, no loss
 * term), checked against n_resp; *out stays NULL when the key is absent or null. */
int cli_row_mask(const cJSON *row, size_t n_resp, const char *where, uint8_t **out);

/* The tokenizer for a model folder: PATH when given, else dir's own tokenizer.json if any,
 * else none (*tok NULL). -1 only when a tokenizer fails to load. */
int cli_model_tokenizer(const char *path, const char *dir, or1_tokenizer **tok);
/* The FLAG_SAMPLING flags (--temperature, --top-p, --top-k, --max-new-tokens, --seed, --n)
 * into *s and *n. */
void cli_sampling(cli_args *a, or1_sampling *s, int64_t *n);
/* --save-dtype f32|bf16 into *out; fails naming the command otherwise. */
/* --chat-template-kwargs: the chat template's variables for every row (a row's own
 * chat_template_kwargs override them key by key). */
#define FLAG_CHAT_KWARGS                                                                                        \
    FLAG_STR("chat-template-kwargs", "JSON", NULL, "template variables for every row, e.g. '{\"enable_thinking\": false}'")
/* The --chat-template-kwargs variables over the defaults (a generation prompt). */
int cli_chat_vars(cli_args *a, or1_chat_vars *v);
/* A row's "messages" rendered by the template tpl (NULL: the tokenizer's) with *defaults and
 * the row's chat_template_kwargs over them; any other key of the row is refused. */
int cli_row_chat(const cJSON *row, const char *where, const or1_tokenizer *t, const char *tpl,
                 const or1_chat_vars *defaults, char **text);
/* A row of OR1_TOOL_OPTIONS (or1/train.h), OR1_ENGINE_OPTIONS (or1/rollout.h) or
 * OR1_REWARD_OPTIONS (or1/reward.h) as a flag of its type, naming its config key. */
#define ROW_FLAG(key, flag, field, type, def, lo, hi, help) ROW_FLAG_##type(flag, OR1_TEXT(def), lo, hi, help " (config " key ")"),
#define ROW_FLAG_int FLAG_INT
#define ROW_FLAG_double FLAG_NUM
#define ROW_FLAG_bool(n, def_, lo_, hi_, help_) FLAG_SWITCH(n, help_) /* off unless given */
/* The OR1_TOOL_OPTIONS flags into *c (one worker per core). */
void cli_tool_flags(cli_args *a, or1_tools_cfg *c);
/* The OR1_ENGINE_OPTIONS flags into *o (rows as flags: OR1_ENGINE_OPTIONS(ROW_FLAG)). */
void cli_engine_flags(cli_args *a, or1_engine_opts *o);
/* The OR1_REWARD_OPTIONS flags into *o (code_timeout is left as it was). */
void cli_reward_flags(cli_args *a, or1_reward_opts *o);

#define FLAG_SAVE_DTYPE FLAG_STR("save-dtype", "f32|bf16", "f32", "dtype of the saved weights")
int cli_save_dtype(cli_args *a, or1_dtype *out);

/* Subcommands, each defined next to its code with its flag table. */
extern const cli_command cli_cmd_logprobs, cli_cmd_grad, cli_cmd_init, cli_cmd_generate, cli_cmd_train,
    cli_cmd_eval, cli_cmd_difficulty, cli_cmd_verify_code, cli_cmd_tokenize, cli_cmd_detokenize, cli_cmd_chat,
    cli_cmd_render_template, cli_cmd_verify_math, cli_cmd_gen_arith, cli_cmd_sft, cli_cmd_convert;

#endif
