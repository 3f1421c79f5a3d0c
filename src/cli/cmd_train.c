/* `or1 train`, `or1 eval` and `or1 difficulty`: the MAGIC recipe end to end. */
#include "cli.h"

#include "or1/io_yaml.h"
#include "or1/core.h"
#include "or1/data.h"
#include "or1/dist.h"
#include "or1/io.h"
#include "or1/reward_sandbox.h"
#include "or1/train.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The process's ranks, set up once by main. */
static or1_dist dist = {.rank = 0, .size = 1};

/* Lets main hand over the MPI ranks. */
void cli_set_dist(const or1_dist *d) { dist = *d; }

/* The flags of `or1 train`. */
static const cli_flag_spec train_flags[] = {
    FLAG_NEED("config", "the run's YAML config (or1 train --help-config lists its keys)"),
    {.name = "set", .kind = CLI_REPEAT, .meta = "KEY=VALUE", .help = "override one config key (YAML value), e.g. train.lr=2e-6"},
    FLAG_STR("resume", "auto|DIR", NULL, "continue a run: auto (output.dir's latest checkpoint), a run folder or a checkpoint"),
    FLAG_SWITCH("overwrite", "start afresh in a used output.dir, removing the run there first"),
    {.name = "help-config", .kind = CLI_QUERY, .help = "print the config schema (key, type, default, description) and exit"},
};

/* or1 train --config FILE.yaml [--set key=value ...] [--resume auto|RUN_DIR|CHECKPOINT_DIR]
 * [--overwrite] */
static int cmd_train(cli_args *a) {
    if (cli_flag(a, "help-config")) return cli_help_config(stdout), 0;
    size_t n_set;
    const char **set = cli_list(a, "set", &n_set);
    const char *path = cli_str(a, "config");
    or1_train_start start = {.resume = cli_str(a, "resume"), .overwrite = cli_flag(a, "overwrite")};
    if (cli_check_unused(a)) {
        free(set);
        return 2;
    }
    or1_train_config cfg;
    int rc = or1_train_config_load(path, set, n_set, &cfg);
    free(set);
    if (rc) return 2;
    if (or1_train_config_check_files(&cfg) == 0) rc = or1_train_run(&cfg, &start, &dist) ? 1 : 0;
    else rc = 2;
    or1_train_config_free(&cfg);
    return rc;
}

const cli_command cli_cmd_train = CLI_COMMAND(
    "train", cmd_train, "run the MAGIC recipe: --config FILE.yaml [--set k=v ...] [--resume auto|DIR]", train_flags,
    "or1 train --config demo/demo.yaml --set train.steps=5 --set output.dir=/tmp/run --overwrite");

/* Flags shared by eval and difficulty: model, data, sampling. */
typedef struct {
    const char *model, *data, *tokenizer, *template_name, *dump, *device, *precision;
    or1_chat_vars chat; /* --chat-template-kwargs */
    or1_eval_opts o;
} eval_flags;

/* The flags eval and difficulty share; n_def: their default samples per prompt. */
#define EVAL_FLAGS(n_def)                                                                                          \
    FLAG_NEED("model", "checkpoint folder (config.json + model.safetensors)"),                                     \
        FLAG_NEED("data", "JSONL rows in the Skywork-OR1-RL-Data shape"),                                          \
        FLAG_PATH("tokenizer", NULL, "tokenizer.json or its folder; default: the model folder's"),                 \
        FLAG_STR("chat-template", "NAME", NULL, "deepseek-r1 | deepseek | chatml | llama3 | plain; default: the tokenizer's"), \
        FLAG_CHAT_KWARGS,                                                                                          \
        FLAG_PATH("dump", NULL, "write every sample (JSONL) to this file"),                                        \
        FLAG_SAMPLING(n_def, "0", 0, "response length limit (tokens); 0: what the context leaves after the longest prompt"), \
        OR1_ENGINE_OPTIONS(ROW_FLAG)                                                                               \
        FLAG_NUM("code-timeout", "6", 0.001, 3600, "seconds per code test"), OR1_REWARD_OPTIONS(ROW_FLAG)            \
        OR1_TOOL_OPTIONS(ROW_FLAG) FLAG_DEVICE

/* Reads the eval/difficulty flags (defaults from the command's table); -1 on a bad
 * --chat-template-kwargs. */
static int parse_eval_flags(cli_args *a, eval_flags *f) {
    double timeout;
    int64_t n;
    or1_sampling s;
    memset(f, 0, sizeof *f);
    f->model = cli_str(a, "model");
    f->data = cli_str(a, "data");
    f->tokenizer = cli_str(a, "tokenizer");
    f->template_name = cli_str(a, "chat-template");
    f->dump = cli_str(a, "dump");
    f->device = cli_str(a, "device");
    f->precision = cli_str(a, "precision");
    cli_sampling(a, &s, &n);
    cli_double(a, "code-timeout", &timeout);
    f->o = (or1_eval_opts){.n = (int)n, .temperature = s.temperature, .top_p = s.top_p, .top_k = s.top_k,
                           .max_new_tokens = s.max_new_tokens, .engine = {0}, .seed = s.seed, .reward = {0},
                           .tools = {0}};
    f->o.reward.code_timeout = timeout;
    cli_reward_flags(a, &f->o.reward);
    cli_engine_flags(a, &f->o.engine);
    cli_tool_flags(a, &f->o.tools);
    return cli_chat_vars(a, &f->chat);
}

/* Everything an evaluation needs, loaded. */
typedef struct {
    cli_model cm;
    or1_tokenizer *tok;
    or1_dataset *data;
    or1_sandbox_pool *pool;
} eval_env;

/* Loads model, tokenizer, rows (unfiltered, in file order) and a sandbox pool if needed. */
static int eval_open(eval_env *e, const eval_flags *f) {
    memset(e, 0, sizeof *e);
    if (cli_model_open(&e->cm, f->model, f->device, f->precision, false)) return -1;
    e->tok = or1_tokenizer_load(f->tokenizer ? f->tokenizer : f->model);
    if (!e->tok) return -1;
    or1_data_file file = {.path = (char *)f->data, .weight = 1};
    or1_data_opts o = {.files = &file, .n_files = 1, .difficulty_model = NULL, .difficulty_min = 0,
                       .difficulty_max = 0, .keep_missing = true, .tok = e->tok,
                       .chat_template = f->template_name, .enable_thinking = f->chat.enable_thinking,
                       .max_prompt_length = INT_MAX, .shuffle = false, .seed = 0};
    e->data = or1_data_load(&o);
    if (!e->data) return -1;
    for (size_t i = 0; i < or1_data_rows(e->data) && !e->pool; i++)
        if (or1_data_row_at(e->data, (uint32_t)i)->code && !(e->pool = or1_sandbox_pool_new(0))) return -1;
    return 0;
}

/* Frees what eval_open loaded. */
static void eval_close(eval_env *e) {
    if (e->pool) or1_sandbox_pool_free(e->pool);
    or1_data_free(e->data);
    or1_tokenizer_free(e->tok);
    cli_model_close(&e->cm);
}

/* Runs the evaluation; correct and scored (optional) get each row's counts. */
static cJSON *eval_run(eval_env *e, const eval_flags *f, int *correct, int *scored) {
    size_t n = or1_data_rows(e->data);
    const or1_data_row **rows = or1_malloc((n ? n : 1) * sizeof *rows);
    for (size_t i = 0; i < n; i++) rows[i] = or1_data_row_at(e->data, (uint32_t)i);
    FILE *dump = NULL;
    or1_atomic_file af;
    if (f->dump && dist.rank == 0) {
        if (or1_atomic_open(&af, f->dump)) {
            free(rows);
            return NULL;
        }
        dump = af.f;
    }
    FILE *sink = f->dump && dist.rank > 0 ? fopen("/dev/null", "w") : NULL; /* ranks > 0 send theirs to rank 0 */
    cJSON *rep = or1_eval(e->cm.dm, e->tok, rows, n, &f->o, e->pool, &dist, sink ? sink : dump, correct, scored);
    if (sink) fclose(sink);
    if (dump && (!rep || or1_atomic_commit(&af))) {
        if (!rep) or1_atomic_abort(&af);
        cJSON_Delete(rep);
        rep = NULL;
    }
    free(rows);
    return rep;
}

/* The flags of `or1 eval`. */
static const cli_flag_spec eval_flag_table[] = {EVAL_FLAGS("8")};

/* or1 eval --model DIR --data FILE --n K [--temperature T] [--top-p P] [--max-new-tokens L] [--dump FILE] */
static int cmd_eval(cli_args *a) {
    eval_flags f;
    if (parse_eval_flags(a, &f) || cli_check_unused(a)) return 2;
    eval_env e;
    cJSON *rep = eval_open(&e, &f) == 0 ? eval_run(&e, &f, NULL, NULL) : NULL;
    if (rep && dist.rank == 0) {
        char *text = cJSON_Print(rep);
        printf("%s\n", text);
        free(text);
    }
    cJSON_Delete(rep);
    eval_close(&e);
    return rep ? 0 : 1;
}

const cli_command cli_cmd_eval = CLI_COMMAND(
    "eval", cmd_eval, "avg@k and pass@k of a model on a dataset (a JSON report on stdout)", eval_flag_table,
    "or1 eval --model models/arith-base --data /tmp/test.jsonl --n 8 --temperature 1 --max-new-tokens 64");

/* What the difficulty rewrite needs: the model's name and each row's counts, in order. */
typedef struct {
    const char *name;
    const int *correct, *scored; /* scored -1: the row was skipped (its prompt is too long) */
    size_t n, next;
} difficulty_ctx;

/* Sets extra_info.model_difficulty[name] of the next row to its correct count (a skipped row
 * is kept as it was: the offline filter's "missing" policy then decides for it). */
static int set_difficulty(cJSON *row, void *ctx) {
    difficulty_ctx *d = ctx;
    if (d->next >= d->n) return or1_fail("difficulty: the data file has more rows than were scored");
    if (d->scored[d->next] < 0) return d->next++, 1;
    cJSON *extra = cJSON_GetObjectItemCaseSensitive(row, "extra_info");
    if (!cJSON_IsObject(extra)) {
        cJSON_DeleteItemFromObjectCaseSensitive(row, "extra_info");
        extra = cJSON_AddObjectToObject(row, "extra_info");
    }
    cJSON *md = cJSON_GetObjectItemCaseSensitive(extra, "model_difficulty");
    if (!cJSON_IsObject(md)) {
        cJSON_DeleteItemFromObjectCaseSensitive(extra, "model_difficulty");
        md = cJSON_AddObjectToObject(extra, "model_difficulty");
    }
    cJSON_DeleteItemFromObjectCaseSensitive(md, d->name);
    cJSON_AddNumberToObject(md, d->name, d->correct[d->next++]);
    return 1;
}

/* Writes the data file again with extra_info.model_difficulty[name] = correct count, unless a
 * row has a sample whose reward failed (its count would take that sample for wrong). */
static int write_difficulty(const char *in, const char *out, const char *name, const int *correct, const int *scored,
                            size_t n, int drawn) {
    for (size_t i = 0; i < n; i++)
        if (scored[i] >= 0 && scored[i] != drawn)
            return or1_fail("difficulty: row %zu: %d of %d rewards could not be decided (see the warnings); %s is "
                            "left as it was", i + 1, drawn - scored[i], drawn, out);
    difficulty_ctx d = {name, correct, scored, n, 0};
    return or1_jsonl_rewrite(in, out, set_difficulty, &d);
}

/* The flags of `or1 difficulty`. */
static const cli_flag_spec difficulty_flags[] = {
    EVAL_FLAGS("16"),
    FLAG_PATH("out", NULL, "write the scored rows here (one of --out and --in-place is needed)"),
    FLAG_SWITCH("in-place", "rewrite the --data file itself"),
    FLAG_STR("name", "NAME", NULL, "key under extra_info.model_difficulty; default: the model folder's name"),
};

/* The file the scored rows go to: --out or, with --in-place, the data file; exactly one. */
static const char *difficulty_out(cli_args *a, const char *data) {
    const char *out = cli_str(a, "out");
    bool in_place = cli_flag(a, "in-place");
    if (out && in_place) return or1_fail("difficulty: --out and --in-place exclude each other; give one"), NULL;
    if (!out && !in_place)
        return or1_fail("difficulty: give --out FILE for the scored rows, or --in-place to rewrite --data %s", data),
               NULL;
    return out ? out : data;
}

/* or1 difficulty --model DIR --data FILE (--out FILE | --in-place) [--n N] [--name NAME]
 * [sampling flags]: each row's number of correct samples goes to
 * extra_info.model_difficulty[NAME]. */
static int cmd_difficulty(cli_args *a) {
    eval_flags f;
    if (parse_eval_flags(a, &f)) return 2;
    const char *out = difficulty_out(a, f.data), *name = cli_str(a, "name");
    if (!out || cli_check_unused(a)) return 2;
    if (!name) {
        name = strrchr(f.model, '/') ? strrchr(f.model, '/') + 1 : f.model;
        if (!*name) name = f.model;
    }
    eval_env e;
    int rc = eval_open(&e, &f);
    if (rc == 0) {
        size_t n = or1_data_rows(e.data);
        int *correct = or1_calloc(n ? n : 1, sizeof *correct), *scored = or1_calloc(n ? n : 1, sizeof *scored);
        cJSON *rep = eval_run(&e, &f, correct, scored);
        rc = rep ? 0 : -1;
        if (rc == 0 && dist.rank == 0) rc = write_difficulty(f.data, out, name, correct, scored, n, f.o.n);
        if (rc == 0 && dist.rank == 0) fprintf(stderr, "difficulty: %zu rows scored with %d samples as \"%s\"\n", n, f.o.n, name);
        cJSON_Delete(rep);
        free(correct);
        free(scored);
    }
    eval_close(&e);
    return rc ? 1 : 0;
}

const cli_command cli_cmd_difficulty = CLI_COMMAND(
    "difficulty", cmd_difficulty, "write each row's correct-sample count to extra_info.model_difficulty",
    difficulty_flags,
    "or1 difficulty --model DIR --data rows.jsonl --n 16 --name DeepSeek-R1-Distill-Qwen-7B --out rows.scored.jsonl");
