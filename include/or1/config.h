/* or1 config: YAML configuration files (libyaml) as a tree, `--set a.b.c=value` overrides,
 * typed getters, a schema of known keys, and the trainer's configuration as a C struct.
 *
 * Every error names the file (or the --set override) and line, and the key's dotted path
 * ("train.lr", "stages[1].steps"). YAML scalars are typed when read, by YAML 1.2 core-schema
 * rules: plain true/false are booleans, plain numbers are numbers, plain null, ~ or an empty
 * value mean "absent" (the default applies); quoted scalars are always strings; tags are
 * ignored. Anchors, aliases, duplicate keys and several documents per file are refused. */
#ifndef OR1_CONFIG_H
#define OR1_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "or1/algo.h"

typedef struct or1_cfg or1_cfg;
typedef struct or1_cfg_node or1_cfg_node;

/* Loads a YAML file (at most 1 MiB); the top level must be a mapping. NULL on error. */
or1_cfg *or1_cfg_load(const char *path);
/* Parses YAML text; `name` stands for the file in messages. NULL on error. */
or1_cfg *or1_cfg_parse(const char *text, size_t len, const char *name);
void or1_cfg_free(or1_cfg *c);
/* The file the tree was loaded from (as given). */
const char *or1_cfg_file(const or1_cfg *c);

/* Applies one override "a.b.c=value": the value is parsed as YAML (a scalar, or a flow
 * list/map such as [a, b]); missing maps on the way are created; a numeric component
 * indexes a list ("stages.1.steps=10"). Errors name the override. */
int or1_cfg_set(or1_cfg *c, const char *assignment);

/* The root mapping. */
const or1_cfg_node *or1_cfg_root(const or1_cfg *c);
/* The node at a dotted path below base (numeric components index lists), or NULL when
 * absent or null. */
const or1_cfg_node *or1_cfg_get(const or1_cfg_node *base, const char *path);
/* The full path of a node ("stages[1].steps") and where it was written ("file.yaml:12" or
 * "--set a.b=c"), for messages. */
const char *or1_cfg_node_path(const or1_cfg_node *n);
const char *or1_cfg_node_where(const or1_cfg_node *n);

/* Typed getters: absent (or null) -> *out = def; wrong type or out of range -> -1 with an
 * error naming the file, line and key path. Strings point into the tree (or are def). */
int or1_cfg_int(const or1_cfg_node *base, const char *path, int64_t lo, int64_t hi, int64_t def,
                int64_t *out);
int or1_cfg_double(const or1_cfg_node *base, const char *path, double lo, double hi, double def,
                   double *out);
int or1_cfg_bool(const or1_cfg_node *base, const char *path, bool def, bool *out);
int or1_cfg_string(const or1_cfg_node *base, const char *path, const char *def, const char **out);
/* A list of scalars as new strings (free each and the array); absent -> empty. A single
 * scalar is not a list: it is an error. */
int or1_cfg_strings(const or1_cfg_node *base, const char *path, char ***out, size_t *n);
/* A list of finite numbers (new array); absent -> empty. */
int or1_cfg_doubles(const or1_cfg_node *base, const char *path, double **out, size_t *n);
/* A list of mappings: *items (new array of pointers into the tree); absent -> empty. */
int or1_cfg_maps(const or1_cfg_node *base, const char *path, const or1_cfg_node ***items, size_t *n);

/* ---- Schema ------------------------------------------------------------------------------ */

typedef enum {
    OR1_CFG_INT,
    OR1_CFG_DOUBLE,
    OR1_CFG_BOOL,
    OR1_CFG_STRING,
    OR1_CFG_PATH,    /* a string naming a file or folder; relative paths are taken from
                        the working directory (run from the repository root) */
    OR1_CFG_STRINGS, /* list of scalars */
    OR1_CFG_PATHS,   /* list of paths */
    OR1_CFG_DOUBLES, /* list of numbers */
    OR1_CFG_MAPS,    /* list of mappings; its items' keys are listed as "<path>[].<key>" */
} or1_cfg_type;

/* One known key. def is the default as YAML text ("" for none, i.e. empty/absent). */
typedef struct {
    const char *path;
    or1_cfg_type type;
    const char *def;
    double lo, hi; /* range of INT and DOUBLE values (and of DOUBLES items) */
    const char *help;
} or1_cfg_key;

/* Checks every key of the tree against the schema before any work: an unknown key (with
 * the closest known one suggested), a value of the wrong type or out of range is an error
 * naming the file, line and key path. Mappings whose path is a prefix of known keys are
 * walked; lists of mappings are checked item by item. */
int or1_cfg_check(const or1_cfg *c, const or1_cfg_key *schema, size_t n);

/* ---- The trainer's configuration --------------------------------------------------------- */

/* One training data file and its mixing weight (an integer repeat count, recipe §7). */
typedef struct {
    char *path;
    int weight;
} or1_data_file;

/* One stage of the multi-stage schedule (recipe §10). */
typedef struct {
    char *name;
    int context_length; /* max new tokens of a response, T */
    int prompts;        /* N prompts per step */
    int samples;        /* M samples per prompt */
    int mini_batch;     /* prompts per mini-batch: N_SGD = prompts / mini_batch */
    int steps;
} or1_stage_cfg;

typedef struct {
    char *config_path; /* the YAML file it came from */
    struct {
        char *path, *tokenizer, *chat_template; /* tokenizer "" -> path; template "" -> auto */
    } model;
    struct {
        or1_data_file *train;
        size_t n_train;
        int max_prompt_length;
        bool shuffle, online_filter;
        char *difficulty_model; /* "" -> no offline difficulty filter */
        int difficulty_min, difficulty_max;
        bool difficulty_keep_missing;
    } data;
    struct {
        int n;
        double temperature, top_p;
        int top_k; /* 0 = off */
        int max_new_tokens;
    } rollout;
    struct {
        int prompts_per_step, mini_batch, epochs, steps, micro_tokens; /* micro_tokens 0: auto */
        double lr, weight_decay, beta1, beta2, adam_eps, grad_clip, clip_low, clip_high;
    } train;
    or1_entropy_params entropy;
    struct {
        bool enabled;
        double coef;
        or1_kl_estimator estimator;
        char *reference; /* "" -> model.path */
    } kl;
    struct {
        bool enabled, keep_single;
        int max_rounds; /* generation rounds per step; 1 = no refill */
    } rejection;
    or1_adv_cfg advantage; /* reject/keep_single mirror the rejection section */
    struct {
        int workers; /* 0 = one per CPU */
        double code_timeout;
    } reward;
    or1_stage_cfg *stages;
    size_t n_stages;
    struct {
        char **files;
        size_t n_files;
        double *temperatures;
        size_t n_temperatures;
        int every, n, max_new_tokens; /* every 0 = off; max_new_tokens 0 = stage T */
        double top_p;
    } eval;
    struct {
        int every;
    } checkpoint;
    char *output_dir;
    int seed;
} or1_train_config;

/* The schema of the trainer's config (defaults from the recipe's final training scripts,
 * recipe §11) and its size. */
extern const or1_cfg_key or1_train_schema[];
extern const size_t or1_train_schema_len;

/* Loads FILE, applies the overrides in order, checks the tree against the schema and fills
 * *out (free with or1_train_config_free). Does not touch the files the config names. */
int or1_train_config_load(const char *path, const char *const *overrides, size_t n_overrides,
                          or1_train_config *out);
void or1_train_config_free(or1_train_config *c);
/* Checks that every file the config names exists (model folder, tokenizer, data and eval
 * files, reference); the error names the key and the file. */
int or1_train_config_check_files(const or1_train_config *c);
/* The multi-stage schedule (recipe §10): the stage that 0-based global step `step` falls in
 * and the step's index inside it (*in_stage may be NULL); -1 once every stage is done. */
int or1_train_stage_of(const or1_train_config *c, long step, long *in_stage);
/* Steps of all stages together. */
long or1_train_total_steps(const or1_train_config *c);
/* Tokens per loss micro-batch in a stage: train.micro_tokens, or when 0 the longest possible
 * sequence, max_prompt_length + the stage's context length. */
int or1_train_micro_tokens(const or1_train_config *c, size_t stage);

/* The resolved configuration as YAML text (new string), e.g. to store beside checkpoints. */
char *or1_train_config_yaml(const or1_train_config *c);

#endif
