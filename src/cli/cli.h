/* or1 command-line front end: one function per subcommand, plus flag parsing helpers. */
#ifndef OR1_CLI_H
#define OR1_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include <stddef.h>

#include <cjson/cJSON.h>

#include "or1/dist.h"
#include "or1/rollout.h"
#include "or1/io_safetensors.h"
#include "or1/tokenizer.h"

/* Flags of one subcommand: "--name value" pairs and bare "--switch"es. */
typedef struct {
    const char *cmd;
    int argc;
    char **argv;
    bool *used;
} cli_args;

/* Value of --name, or NULL if absent. Marks it used. */
const char *cli_str(cli_args *a, const char *name);
/* True if the bare switch --name is present. */
bool cli_flag(cli_args *a, const char *name);
/* Number flags: absent leaves *out; malformed or out of range is an error (-1). */
int cli_double(cli_args *a, const char *name, double lo, double hi, double *out);
int cli_int(cli_args *a, const char *name, int64_t lo, int64_t hi, int64_t *out);
/* Required string flag: error if absent. */
const char *cli_need(cli_args *a, const char *name);
/* Fails if any flag was not consumed by the command (catches typos). */
int cli_check_unused(cli_args *a);

/* Hands the process's ranks to the commands that use them. */
void cli_set_dist(const or1_dist *d);

/* --device of the model commands ("cpu" when absent; the backend checks the name). */
const char *cli_device(cli_args *a);

/* A model loaded from its folder and placed on a device (src/cli/device.c). */
typedef struct {
    or1_model m;
    or1_backend *be;
    or1_dmodel *dm;
} cli_model;

/* Loads dir and places it on device: -1 (with or1_fail) and nothing open on failure. */
int cli_model_open(cli_model *cm, const char *dir, const char *device);
void cli_model_close(cli_model *cm);

/* Token ids of one side of an input row: "<side>_ids", or "<side>" text through tok (NULL:
 * text is refused); ids must lie below vocab. Errors name `where`. The caller frees *ids. */
int cli_row_ids(const cJSON *row, const char *side, const or1_tokenizer *tok, int vocab, const char *where,
                int32_t **ids, size_t *n);

/* The tokenizer for a model folder: PATH when given, else dir's own tokenizer.json if any,
 * else none (*tok NULL). -1 only when a tokenizer fails to load. */
int cli_model_tokenizer(const char *path, const char *dir, or1_tokenizer **tok);
/* --temperature, --top-p, --top-k, --max-new-tokens, --seed and --n (samples per prompt, up to
 * 65536) into *s and *n, with the command's defaults for n and max-new-tokens. */
int cli_sampling(cli_args *a, int64_t default_n, int64_t default_max_new, or1_sampling *s, int64_t *n);
/* --save-dtype f32|bf16 into *out (f32 when absent); fails naming the command otherwise. */
int cli_save_dtype(cli_args *a, or1_dtype *out);

/* Subcommands: each returns the process exit status. */
int cmd_logprobs(cli_args *a);
int cmd_grad(cli_args *a);
int cmd_init(cli_args *a);
int cmd_generate(cli_args *a);
int cmd_train(cli_args *a);
int cmd_eval(cli_args *a);
int cmd_difficulty(cli_args *a);
int cmd_verify_code(cli_args *a);
int cmd_tokenize(cli_args *a);
int cmd_detokenize(cli_args *a);
int cmd_chat(cli_args *a);
int cmd_verify_math(cli_args *a);
int cmd_gen_arith(cli_args *a);
int cmd_sft(cli_args *a);

#endif
