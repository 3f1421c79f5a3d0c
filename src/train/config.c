/* The trainer's configuration: its schema (known keys, types, defaults) and the loader that
 * fills or1_train_config from a YAML file and --set overrides. Defaults are the recipe's
 * final training scripts, or1_scripts/train/ of Skywork-OR1 (entropy control included). */
#include "or1/train.h"
#include "or1/core.h"
#include "or1/io.h"

#include <float.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define BIG OR1_BIG
/* Each row: the key, the or1_train_config field its value fills (FIELD) or NO_FIELD (lists and
 * enumerations, filled by hand), the default as YAML text, the range, the help. */
#define FIELD(f) ((long)offsetof(or1_train_config, f))
#define NO_FIELD (-1L)
#define INT_KEY(p, f, d, lo, hi, h) {p, OR1_YAML_INT, d, lo, hi, h, NULL, f}
#define NUM_KEY(p, f, d, lo, hi, h) {p, OR1_YAML_DOUBLE, d, lo, hi, h, NULL, f}
#define BOOL_KEY(p, f, d, h) {p, OR1_YAML_BOOL, d, 0, 0, h, NULL, f}
#define STR_KEY(p, f, d, h) {p, OR1_YAML_STRING, d, 0, 0, h, NULL, f}
#define PATH_KEY(p, f, d, h) {p, OR1_YAML_PATH, d, 0, 0, h, NULL, f}
#define LIST_KEY(p, f, type, d, lo, hi, h) {p, type, d, lo, hi, h, NULL, f}
/* A key whose value is one name of a registry TABLE (or1/algo.h). */
#define CHOICE_KEY(p, f, d, TABLE, h) {p, OR1_YAML_STRING, d, 0, 0, h, OR1_CHOICES_SPACED(TABLE), f}
/* A row of the loss options (or1/algo.h) in its config section: its key, with or1 grad's flag
 * named in the help. */
#define OPTION_KEY(section, key, flag, field, def, lo, hi, help) \
    NUM_KEY(key, FIELD(section.field), OR1_TEXT(def), lo, hi, help " (or1 grad --" flag ")"),
#define CLIP_KEY(key, flag, field, type, def, lo, hi, help) OPTION_KEY(train, key, flag, field, def, lo, hi, help)
#define CORRECTION_KEY(key, flag, field, type, def, lo, hi, help) \
    OPTION_KEY(correction, key, flag, field, def, lo, hi, help)
#define LOSS_KEY(key, flag, field, type, def, lo, hi, help) OPTION_KEY(loss, key, flag, field, def, lo, hi, help)
/* A row of the loss's choices (or1/algo.h) as a choice key, naming or1 grad's flag. */
#define CHOICE_ROW(key, flag, field, type, TABLE, name, def, help) \
    CHOICE_KEY(key, NO_FIELD, def, TABLE, help " (or1 grad --" flag ")"),
/* A row of the tool options (or1/train.h) as a key of its type, naming the generate flag. */
#define TOOL_KEY(key, flag, field, type, def, lo, hi, help) \
    KEY_OF_##type(key, FIELD(rollout.tools.field), OR1_TEXT(def), lo, hi, help " (or1 generate --" flag ")"),
#define KEY_OF_int INT_KEY
#define KEY_OF_double NUM_KEY
#define KEY_OF_bool(key, f, d, lo, hi, help) BOOL_KEY(key, f, "false", help) /* a bool row defaults to off */
/* An OR1_REWARD_OPTIONS row as a schema row, naming the eval flag. */
#define REWARD_KEY(key, flag, field, type, def, lo, hi, help) \
    KEY_OF_##type(key, FIELD(reward.opts.field), OR1_TEXT(def), lo, hi, help " (or1 eval --" flag ")"),
/* An OR1_ENGINE_OPTIONS row as a schema row. */
#define ENGINE_KEY(key, flag, field, type, def, lo, hi, help) \
    KEY_OF_##type(key, FIELD(rollout.engine.field), OR1_TEXT(def), lo, hi, help " (or1 generate --" flag ")"),

const or1_yaml_key or1_train_schema[] = {
    PATH_KEY("model.path", FIELD(model.path), "", "checkpoint folder (config.json + safetensors) or GGUF file; required"),
    PATH_KEY("model.tokenizer", FIELD(model.tokenizer), "", "tokenizer.json, its folder or a GGUF file; empty: model.path"),
    STR_KEY("model.chat_template", FIELD(model.chat_template), "", "deepseek-r1 | deepseek | chatml | llama3 | plain; empty: the tokenizer's"),
    LIST_KEY("data.train", NO_FIELD, OR1_YAML_MAPS, "", 0, 0, "training files: list of {path, weight}"),
    PATH_KEY("data.train[].path", NO_FIELD, "", "JSONL file in the Skywork-OR1-RL-Data row shape"),
    INT_KEY("data.train[].weight", NO_FIELD, "1", 1, 1000, "mixing weight: each row is drawn this many times per epoch"),
    STR_KEY("data.apply_chat_template_kwargs.enable_thinking", FIELD(data.enable_thinking), "",
            "chat template variable for rows without their own chat_template_kwargs: true | false; empty: undefined"),
    INT_KEY("data.max_prompt_length", FIELD(data.max_prompt_length), "2048", 1, BIG, "drop rows whose chat-templated prompt is longer (tokens)"),
    BOOL_KEY("data.shuffle", FIELD(data.shuffle), "true", "shuffle every epoch (seeded by `seed`)"),
    BOOL_KEY("data.online_filter", FIELD(data.online_filter), "true", "at a stage start, drop prompts solved by every sample in the previous stage"),
    STR_KEY("data.difficulty.model", FIELD(data.difficulty_model), "", "offline filter: extra_info.model_difficulty key; empty: off"),
    INT_KEY("data.difficulty.min", FIELD(data.difficulty_min), "1", 0, BIG, "keep rows with min <= difficulty <= max"),
    INT_KEY("data.difficulty.max", FIELD(data.difficulty_max), "15", 0, BIG, "keep rows with min <= difficulty <= max"),
    STR_KEY("data.difficulty.missing", NO_FIELD, "drop", "rows without a difficulty for the model: keep | drop"),
    INT_KEY("rollout.n", FIELD(rollout.n), "16", 1, 4096, "M samples per prompt (default of the stages)"),
    NUM_KEY("rollout.temperature", FIELD(rollout.temperature), "1.0", 1e-6, 100, "sampling temperature (also divides the training logits)"),
    NUM_KEY("rollout.top_p", FIELD(rollout.top_p), "1.0", 1e-6, 1, "nucleus sampling"),
    INT_KEY("rollout.top_k", FIELD(rollout.top_k), "0", 0, BIG, "top-k sampling; 0: off"),
    INT_KEY("rollout.max_new_tokens", FIELD(rollout.max_new_tokens), "16384", 1, BIG, "T, response length limit (default of the stages)"),
    OR1_ENGINE_OPTIONS(ENGINE_KEY)
    OR1_TOOL_OPTIONS(TOOL_KEY)
    INT_KEY("train.prompts_per_step", FIELD(train.prompts_per_step), "256", 1, BIG, "N prompts per step (default of the stages)"),
    INT_KEY("train.mini_batch", FIELD(train.mini_batch), "256", 1, BIG, "prompts per mini-batch: N_SGD = N / mini_batch (default of the stages)"),
    INT_KEY("train.epochs", FIELD(train.epochs), "1", 1, 1000, "passes over each step's batch (ppo_epochs, N_reuse)"),
    INT_KEY("train.steps", FIELD(train.steps), "1000", 1, BIG, "steps when there is no stages list"),
    INT_KEY("train.micro_tokens", FIELD(train.micro_tokens), "0", 0, BIG, "tokens per loss micro-batch; 0: max_prompt_length + T"),
    INT_KEY("train.zero", FIELD(train.zero), "0", 0, 1, "1: shard the AdamW state (and in bf16 the fp32 masters) over the ranks (ZeRO-1)"),
    BOOL_KEY("train.gradient_checkpointing", FIELD(train.gradient_checkpointing), "false", "keep each layer's input alone and recompute its activations in backward (less memory, one more forward)"),
    BOOL_KEY("train.async", FIELD(train.async), "false", "rollout ranks sample while trainer ranks train (MPI, 2 ranks or more); off: the report's strictly on-policy loop"),
    NUM_KEY("train.rollout_ranks", FIELD(train.rollout_ranks), "0.5", 1e-9, 1e6, "train.async: rollout ranks, a count (1 or more) or a share of the ranks (below 1)"),
    INT_KEY("train.max_staleness", FIELD(train.max_staleness), "1", 0, 1000, "train.async: step k's batch is sampled by the policy of step k-1-max_staleness (0: lockstep, the synchronous loop; 1: one-step-off)"),
    INT_KEY("train.partial_tokens", FIELD(train.partial_tokens), "0", 0, BIG, "train.async: after this many tokens a sample goes on under the next policy (partial rollouts); 0: off"),
    BOOL_KEY("train.partial_recompute_kv", FIELD(train.partial_recompute_kv), "false", "partial rollouts: the samples' keys and values are recomputed under the next policy (each token's log-prob is then exactly its version's), not kept from the old one"),
    BOOL_KEY("train.recompute_logprobs", FIELD(train.recompute_logprobs), "false", "old log-probs from the training engine before the update (on with a rollout correction)"),
    NUM_KEY("train.lr", FIELD(train.lr), "1e-6", 0, 1, "AdamW learning rate (constant)"),
    NUM_KEY("train.weight_decay", FIELD(train.weight_decay), "0.01", 0, 10, "AdamW weight decay"),
    NUM_KEY("train.beta1", FIELD(train.beta1), "0.9", 0, 1, "AdamW beta1"),
    NUM_KEY("train.beta2", FIELD(train.beta2), "0.999", 0, 1, "AdamW beta2"),
    NUM_KEY("train.adam_eps", FIELD(train.adam_eps), "1e-8", 0, 1, "AdamW epsilon"),
    NUM_KEY("train.grad_clip", FIELD(train.grad_clip), "1.0", 0, BIG, "global gradient-norm clip; 0: off"),
    OR1_CLIP_OPTIONS(CLIP_KEY)
    CHOICE_KEY("entropy.mode", NO_FIELD, "adaptive", OR1_ENTROPY_MODES, "the entropy bonus: eq. (3.2)'s controller, a constant, or none"),
    NUM_KEY("entropy.target", FIELD(entropy.target), OR1_TEXT(OR1_ENT_TARGET), 0, BIG, "tgt-ent"),
    NUM_KEY("entropy.delta", FIELD(entropy.delta), OR1_TEXT(OR1_ENT_DELTA), 0, 1, "coefficient step per training step"),
    NUM_KEY("entropy.c_min", FIELD(entropy.c_min), OR1_TEXT(OR1_ENT_C_MIN), 0, 1, "lower clip of the coefficient"),
    NUM_KEY("entropy.c_max", FIELD(entropy.c_max), OR1_TEXT(OR1_ENT_C_MAX), 0, 1, "upper clip of the coefficient"),
    NUM_KEY("entropy.initial", FIELD(entropy.initial), OR1_TEXT(OR1_ENT_INITIAL), 0, 1, "c_0 (adaptive) or the coefficient (constant)"),
    CHOICE_KEY("entropy.update", NO_FIELD, "step", OR1_ENTROPY_CADENCES,
               "adaptive: the controller moves once per step (the paper) or after each mini-batch, from its entropy"),
    BOOL_KEY("kl.enabled", FIELD(kl.enabled), "false", "KL loss to a frozen reference"),
    NUM_KEY("kl.coef", FIELD(kl.coef), "0.001", 0, BIG, "beta"),
    STR_KEY("kl.estimator", NO_FIELD, "k3", "k1 | abs | k2 | k3 (verl names kl, mse, low_var_kl too); '+' suffix: k2 gradient"),
    PATH_KEY("kl.reference", FIELD(kl.reference), "", "reference checkpoint; empty: model.path"),
    INT_KEY("kl.reset_every", FIELD(kl.reset_every), "0", 0, BIG, "ProRL: every this many steps the reference becomes the current policy; 0: never"),
    BOOL_KEY("kl.reset_optimizer", FIELD(kl.reset_optimizer), "false", "with a reference reset, the AdamW state is reset too"),
    OR1_CORRECTION_CHOICES(CHOICE_ROW)
    OR1_CORRECTION_OPTIONS(CORRECTION_KEY)
    BOOL_KEY("rollout_correction.offpolicy_mask", FIELD(correction.offpolicy_mask), "false", "DeepSeek-V3.2: drop sequences with A < 0 and mean log(pi_rollout/pi) > offpolicy_delta"),
    NUM_KEY("rollout_correction.offpolicy_delta", FIELD(correction.offpolicy_delta), "0", 0, BIG, "delta of the off-policy mask (no published value: set it with the mask)"),
    BOOL_KEY("rejection.enabled", FIELD(rejection.enabled), "true", "drop groups whose rewards are all equal"),
    BOOL_KEY("rejection.keep_single", FIELD(rejection.keep_single), "false", "keep groups with one counted sample"),
    INT_KEY("rejection.max_rounds", FIELD(rejection.max_rounds), "1", 1, 1000, "generation rounds per step to refill N kept groups; 1: no refill"),
    OR1_LOSS_CHOICES(CHOICE_ROW)
    OR1_LOSS_OPTIONS(LOSS_KEY)
    CHOICE_KEY("advantage.estimator", NO_FIELD, "grpo", OR1_ADV_ESTIMATORS, "how a step's scores become advantages"),
    NUM_KEY("advantage.eps", FIELD(advantage.eps), "1e-6", 0, 1, "added to the group std"),
    CHOICE_KEY("advantage.truncation_mask", NO_FIELD, "none", OR1_TRUNC_MASKS, "when responses truncated at T leave the loss"),
    INT_KEY("reward.workers", FIELD(reward.workers), "0", 0, 4096, "verifier worker processes; 0: one per CPU"),
    NUM_KEY("reward.code_timeout", FIELD(reward.opts.code_timeout), "6", 0.001, 3600, "seconds per code test"),
    OR1_REWARD_OPTIONS(REWARD_KEY)
    NUM_KEY("reward.max_error_ratio", FIELD(reward.max_error_ratio), "0.01", 0, 1, "warn when more than this share of a step's rewards fail"),
    BOOL_KEY("reward.overlong_buffer.enable", FIELD(reward.length.overlong), "false", "DAPO's soft overlong punishment of the last `len` tokens before T"),
    INT_KEY("reward.overlong_buffer.len", FIELD(reward.length.overlong_len), "4096", 1, BIG, "L_cache: the penalty grows over the last this many tokens"),
    NUM_KEY("reward.overlong_buffer.penalty", FIELD(reward.length.overlong_penalty), "1.0", 0, BIG, "the penalty at T (verl's penalty_factor)"),
    NUM_KEY("reward.truncation_penalty", FIELD(reward.length.truncation_penalty), "0", 0, BIG, "subtracted from the reward of a response truncated at T"),
    LIST_KEY("stages", NO_FIELD, OR1_YAML_MAPS, "", 0, 0, "stages in order; absent: one stage from the keys above"),
    STR_KEY("stages[].name", NO_FIELD, "", "label for logs"),
    INT_KEY("stages[].context_length", NO_FIELD, "", 1, BIG, "T; default rollout.max_new_tokens"),
    INT_KEY("stages[].prompts", NO_FIELD, "", 1, BIG, "N; default train.prompts_per_step"),
    INT_KEY("stages[].n", NO_FIELD, "", 1, 4096, "M; default rollout.n"),
    INT_KEY("stages[].mini_batch", NO_FIELD, "", 1, BIG, "default train.mini_batch"),
    INT_KEY("stages[].steps", NO_FIELD, "", 1, BIG, "steps of this stage; required"),
    LIST_KEY("eval.files", NO_FIELD, OR1_YAML_PATHS, "[]", 0, 0, "validation JSONL files; empty: no validation"),
    INT_KEY("eval.every", FIELD(eval.every), "20", 0, BIG, "validate every K steps; 0: off"),
    INT_KEY("eval.n", FIELD(eval.n), "8", 1, 4096, "samples per problem"),
    LIST_KEY("eval.temperatures", NO_FIELD, OR1_YAML_DOUBLES, "[0.6, 1.0]", 1e-6, 100, "one validation per temperature"),
    NUM_KEY("eval.top_p", FIELD(eval.top_p), "1.0", 1e-6, 1, "nucleus sampling in validation"),
    INT_KEY("eval.max_new_tokens", FIELD(eval.max_new_tokens), "0", 0, BIG, "0: the stage's T"),
    INT_KEY("checkpoint.every", FIELD(checkpoint.every), "20", 0, BIG, "checkpoint every K steps (and at the end); 0: only at the end"),
    INT_KEY("checkpoint.keep_last", FIELD(checkpoint.keep_last), "3", 0, BIG, "checkpoints kept (the newest); 0: all"),
    STR_KEY("checkpoint.dtype", NO_FIELD, "f32", "weights in checkpoints: f32 (exact resume) | bf16 (half the size)"),
    NUM_KEY("dist.timeout_s", FIELD(dist.timeout_s), "1800", 0, 1e7, "a rank waiting this long in a collective (another rank died or its link is down) ends the job; 0: wait for ever"),
    PATH_KEY("output.dir", FIELD(output_dir), "runs/train", "metrics.jsonl and checkpoints go here"),
    STR_KEY("device", FIELD(device), "cpu", "backend the model runs on: cpu | cuda"),
    STR_KEY("precision", FIELD(precision), "auto", "matmul precision: auto (fp32 on cpu, bf16 on cuda) | fp32 | bf16"),
    INT_KEY("seed", FIELD(seed), "1", 0, INT_MAX, "data order and sampling seed"),
};
const size_t or1_train_schema_len = sizeof or1_train_schema / sizeof or1_train_schema[0];

/* The node holding a key's default (parsed from the schema's YAML text), or NULL. */
static const or1_yaml_node *default_node(const or1_yaml_key *k, or1_yaml **keep) {
    char text[256];
    snprintf(text, sizeof text, "v: %s\n", k->def);
    *keep = or1_yaml_parse(text, strlen(text), "(schema default)");
    return *keep ? or1_yaml_get(or1_yaml_root(*keep), "v") : NULL;
}

/* Reads one scalar schema key (path relative to base) into the struct field at dst. */
static int fill_one(const or1_yaml_node *base, const char *rel, const or1_yaml_key *k, void *dst) {
    or1_yaml *defs = NULL;
    const or1_yaml_node *src = base;
    const char *p = rel;
    if (!or1_yaml_get(base, rel)) {
        src = default_node(k, &defs);
        p = "";
    }
    int rc = 0;
    if (!src) { /* no value and no default: leave the field zero (checked by the caller) */
    } else if (k->type == OR1_YAML_INT) {
        int64_t v;
        rc = or1_yaml_int(src, p, (int64_t)k->lo, (int64_t)k->hi, 0, &v);
        *(int *)dst = (int)v;
    } else if (k->type == OR1_YAML_DOUBLE) {
        rc = or1_yaml_double(src, p, k->lo, k->hi, 0, (double *)dst);
    } else if (k->type == OR1_YAML_BOOL) {
        rc = or1_yaml_bool(src, p, false, (bool *)dst);
    } else {
        const char *s;
        rc = or1_yaml_string(src, p, "", &s);
        if (rc == 0) *(char **)dst = or1_strdup(s);
    }
    if (k->type >= OR1_YAML_STRING && k->type <= OR1_YAML_PATH && !*(char **)dst) *(char **)dst = or1_strdup("");
    or1_yaml_free(defs);
    return rc;
}

/* Fills every scalar key of the schema that has a struct field. */
static int fill_scalars(const or1_yaml_node *root, or1_train_config *c) {
    for (size_t i = 0; i < or1_train_schema_len; i++) {
        const or1_yaml_key *k = &or1_train_schema[i];
        if (k->field >= 0 && fill_one(root, k->path, k, (char *)c + k->field) != 0) return -1;
    }
    return 0;
}

/* The schema entry of a path (it exists: the table is the source of the names). */
static const or1_yaml_key *key_of(const char *path) {
    for (size_t i = 0; i < or1_train_schema_len; i++)
        if (!strcmp(or1_train_schema[i].path, path)) return &or1_train_schema[i];
    return NULL;
}

/* A string key's value (or default), for the enumerations. */
static const char *str_of(const or1_yaml_node *root, const char *path) {
    const char *s;
    or1_yaml_string(root, path, key_of(path)->def, &s);
    return s;
}

/* Where a key was written, for messages about values the loader checks itself. */
static const char *where_of(const or1_yaml *cfg, const char *path, char *buf, size_t cap) {
    const or1_yaml_node *n = or1_yaml_get(or1_yaml_root(cfg), path);
    if (n) snprintf(buf, cap, "%s: key \"%s\"", or1_yaml_node_where(n), path);
    else snprintf(buf, cap, "%s: key \"%s\" (default)", or1_yaml_file(cfg), path);
    return buf;
}

/* The loss's choice keys, each parsed by its row's registry. */
static int parse_choices(const or1_yaml *cfg, or1_train_config *c) {
    const or1_yaml_node *root = or1_yaml_root(cfg);
    char w[700];
#define PARSE_CHOICE(section, key, name, field) \
    if (or1_##name##_parse(str_of(root, key), &c->section.field, where_of(cfg, key, w, sizeof w))) return -1;
#define PARSE_CORRECTION(key, flag, field, type, TABLE, name, def, help) PARSE_CHOICE(correction, key, name, field)
#define PARSE_LOSS(key, flag, field, type, TABLE, name, def, help) PARSE_CHOICE(loss, key, name, field)
    OR1_CORRECTION_CHOICES(PARSE_CORRECTION)
    OR1_LOSS_CHOICES(PARSE_LOSS)
#undef PARSE_CHOICE
#undef PARSE_CORRECTION
#undef PARSE_LOSS
    return 0;
}

/* The name of the loss choice at key p in c, or NULL when p is not one. */
static const char *choice_name(const or1_train_config *c, const char *p) {
#define NAME_CORRECTION(key, flag, field, type, TABLE, name, def, help) \
    if (!strcmp(p, key)) return or1_##name##_name(c->correction.field);
#define NAME_LOSS(key, flag, field, type, TABLE, name, def, help) \
    if (!strcmp(p, key)) return or1_##name##_name(c->loss.field);
    OR1_CORRECTION_CHOICES(NAME_CORRECTION)
    OR1_LOSS_CHOICES(NAME_LOSS)
#undef NAME_CORRECTION
#undef NAME_LOSS
    return NULL;
}

/* The enumerated keys: entropy mode and update cadence, KL estimator, advantage estimator and
 * mask, the loss's choices, missing difficulty policy, checkpoint dtype, precision. */
static int fill_enums(const or1_yaml *cfg, or1_train_config *c) {
    const or1_yaml_node *root = or1_yaml_root(cfg);
    char w[700];
    if (or1_entropy_mode_parse(str_of(root, "entropy.mode"), &c->entropy.mode, where_of(cfg, "entropy.mode", w, sizeof w)) ||
        or1_entropy_cadence_parse(str_of(root, "entropy.update"), &c->entropy.update,
                                  where_of(cfg, "entropy.update", w, sizeof w)) ||
        or1_kl_parse(str_of(root, "kl.estimator"), &c->kl.estimator, where_of(cfg, "kl.estimator", w, sizeof w)) ||
        or1_trunc_mask_parse(str_of(root, "advantage.truncation_mask"), &c->advantage.trunc,
                             where_of(cfg, "advantage.truncation_mask", w, sizeof w)) ||
        parse_choices(cfg, c))
        return -1;
    if (or1_adv_estimator_parse(str_of(root, "advantage.estimator"), &c->advantage.estimator,
                                where_of(cfg, "advantage.estimator", w, sizeof w)))
        return -1;
    const char *think = str_of(root, "data.apply_chat_template_kwargs.enable_thinking");
    if (*think && strcmp(think, "true") != 0 && strcmp(think, "false") != 0)
        return or1_fail("%s: \"%.64s\" is not one of true, false (or empty)",
                        where_of(cfg, "data.apply_chat_template_kwargs.enable_thinking", w, sizeof w), think);
    const char *miss = str_of(root, "data.difficulty.missing");
    if (strcmp(miss, "keep") != 0 && strcmp(miss, "drop") != 0)
        return or1_fail("%s: \"%.64s\" is not one of keep, drop", where_of(cfg, "data.difficulty.missing", w, sizeof w), miss);
    c->data.difficulty_keep_missing = !strcmp(miss, "keep");
    const char *dt = str_of(root, "checkpoint.dtype");
    if (strcmp(dt, "f32") && strcmp(dt, "bf16"))
        return or1_fail("%s: \"%.64s\" is not one of f32, bf16", where_of(cfg, "checkpoint.dtype", w, sizeof w), dt);
    c->checkpoint.dtype = strcmp(dt, "bf16") ? OR1_F32 : OR1_BF16;
    const char *pr = str_of(root, "precision");
    if (strcmp(pr, "auto") && strcmp(pr, "fp32") && strcmp(pr, "bf16"))
        return or1_fail("%s: \"%.64s\" is not one of auto, fp32, bf16", where_of(cfg, "precision", w, sizeof w), pr);
    c->advantage.reject = c->rejection.enabled;
    c->advantage.keep_single = c->rejection.keep_single;
    return 0;
}

/* data.train: a non-empty list of {path, weight}. */
static int fill_train_files(const or1_yaml *cfg, or1_train_config *c) {
    const or1_yaml_node **items;
    size_t n;
    if (or1_yaml_maps(or1_yaml_root(cfg), "data.train", &items, &n) != 0) return -1;
    c->data.train = or1_calloc(n + 1, sizeof *c->data.train);
    c->data.n_train = n;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (!or1_yaml_get(items[i], "path")) {
            rc = or1_fail("%s: key \"%s\" needs a \"path\"", or1_yaml_node_where(items[i]), or1_yaml_node_path(items[i]));
            break;
        }
        rc = fill_one(items[i], "path", key_of("data.train[].path"), &c->data.train[i].path) ||
             fill_one(items[i], "weight", key_of("data.train[].weight"), &c->data.train[i].weight);
    }
    free(items);
    return rc ? -1 : 0;
}

/* stages: each item's keys default to the top-level values; absent: one stage of
 * train.steps steps. */
static int fill_stages(const or1_yaml *cfg, or1_train_config *c) {
    const or1_yaml_node **items;
    size_t n;
    if (or1_yaml_maps(or1_yaml_root(cfg), "stages", &items, &n) != 0) return -1;
    c->n_stages = n ? n : 1;
    c->stages = or1_calloc(c->n_stages, sizeof *c->stages);
    for (size_t i = 0; i < c->n_stages; i++)
        c->stages[i] = (or1_stage_cfg){.name = NULL, .context_length = c->rollout.max_new_tokens,
                                       .prompts = c->train.prompts_per_step, .samples = c->rollout.n,
                                       .mini_batch = c->train.mini_batch, .steps = c->train.steps};
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        or1_stage_cfg *s = &c->stages[i];
        const or1_yaml_node *it = items[i];
        if (!or1_yaml_get(it, "steps")) {
            rc = or1_fail("%s: key \"%s\" needs \"steps\"", or1_yaml_node_where(it), or1_yaml_node_path(it));
            break;
        }
        int64_t v;
        const char *name;
        if ((rc = or1_yaml_string(it, "name", "", &name)) != 0) break;
        s->name = or1_strdup(name);
        struct {
            const char *key;
            int *dst;
            int64_t hi;
        } ints[] = {{"context_length", &s->context_length, (int64_t)BIG}, {"prompts", &s->prompts, (int64_t)BIG},
                    {"n", &s->samples, 4096}, {"mini_batch", &s->mini_batch, (int64_t)BIG},
                    {"steps", &s->steps, (int64_t)BIG}};
        for (size_t j = 0; j < sizeof ints / sizeof ints[0] && rc == 0; j++) {
            rc = or1_yaml_int(it, ints[j].key, 1, ints[j].hi, *ints[j].dst, &v);
            *ints[j].dst = (int)v;
        }
    }
    for (size_t i = 0; i < c->n_stages; i++)
        if (!c->stages[i].name) c->stages[i].name = or1_strdup("");
    free(items);
    return rc;
}

/* eval.files and eval.temperatures, from the tree or the schema's defaults. */
static int fill_lists(const or1_yaml_node *root, or1_train_config *c) {
    or1_yaml *defs = NULL;
    const or1_yaml_node *src = root;
    const char *p = "eval.files";
    if (!or1_yaml_get(root, p)) src = default_node(key_of(p), &defs), p = "";
    int rc = src ? or1_yaml_strings(src, p, &c->eval.files, &c->eval.n_files) : 0;
    or1_yaml_free(defs);
    defs = NULL;
    src = root;
    p = "eval.temperatures";
    if (!or1_yaml_get(root, p)) src = default_node(key_of(p), &defs), p = "";
    if (rc == 0 && src) rc = or1_yaml_doubles(src, p, &c->eval.temperatures, &c->eval.n_temperatures);
    or1_yaml_free(defs);
    return rc;
}

/* AdamW and advantage settings that would divide by zero: epsilon 0 (a zero second moment
 * gives 0/0), a beta of 1 (the bias correction 1 - beta^t is 0), and an estimator that divides
 * by a std with eps 0 when constant groups are not rejected (or1_adv_cfg_check). */
static int check_optimizer(const or1_yaml *cfg, const or1_train_config *c) {
    char w[700];
    if (!(c->train.adam_eps > 0))
        return or1_fail("%s: adam_eps must be above 0 (AdamW divides by sqrt(v) + eps, and v is 0 where a gradient is)",
                        where_of(cfg, "train.adam_eps", w, sizeof w));
    if (c->train.beta1 >= 1 || c->train.beta2 >= 1)
        return or1_fail("%s: beta1 and beta2 must be below 1 (the bias correction 1 - beta^t would be 0)",
                        where_of(cfg, c->train.beta1 >= 1 ? "train.beta1" : "train.beta2", w, sizeof w));
    return or1_adv_cfg_check(&c->advantage, where_of(cfg, "advantage.eps", w, sizeof w));
}

/* The asynchronous keys: a count of rollout ranks is whole, and partial rollouts need a
 * staleness of 1 or more (a next policy to take) and no tools. */
static int check_async(const or1_yaml *cfg, const or1_train_config *c) {
    char w[700];
    double r = c->train.rollout_ranks;
    if (r >= 1 && r != (double)(long)r)
        return or1_fail("%s: %g is neither a count of ranks (whole) nor a share (below 1)",
                        where_of(cfg, "train.rollout_ranks", w, sizeof w), r);
    if (c->train.partial_tokens > 0 && c->train.max_staleness < 1)
        return or1_fail("%s: partial rollouts take the next policy mid-sample, and with max_staleness 0 there is none "
                        "(set train.max_staleness 1 or more, or partial_tokens 0)",
                        where_of(cfg, "train.partial_tokens", w, sizeof w));
    if (c->train.partial_tokens > 0 && c->rollout.tools.max_turns > 0)
        return or1_fail("%s: partial rollouts with tools are not supported (set one of them to 0)",
                        where_of(cfg, "train.partial_tokens", w, sizeof w));
    return 0;
}

/* Relations between values that no single key can check. */
static int check_relations(const or1_yaml *cfg, const or1_train_config *c) {
    char w[700];
    if (!*c->model.path) return or1_fail("%s: missing key \"model.path\"", or1_yaml_file(cfg));
    if (c->data.n_train == 0) return or1_fail("%s: missing key \"data.train\" (a list of {path, weight})", or1_yaml_file(cfg));
    if (c->entropy.c_min > c->entropy.c_max)
        return or1_fail("%s: c_min %g is above c_max %g", where_of(cfg, "entropy.c_min", w, sizeof w), c->entropy.c_min,
                        c->entropy.c_max);
    if (or1_rollout_is_check(c->correction.is, c->correction.is_low, c->correction.is_high,
                             where_of(cfg, "rollout_correction.low", w, sizeof w)))
        return -1;
    if (c->correction.offpolicy_mask && !or1_yaml_get(or1_yaml_root(cfg), "rollout_correction.offpolicy_delta"))
        return or1_fail("%s: the off-policy mask needs its delta (DeepSeek-V3.2 publishes none): set it",
                        where_of(cfg, "rollout_correction.offpolicy_delta", w, sizeof w));
    if (c->loss.clip_cov_lb >= c->loss.clip_cov_ub)
        return or1_fail("%s: lb %g is not below ub %g (no covariance lies between them)",
                        where_of(cfg, "loss.clip_cov_lb", w, sizeof w), c->loss.clip_cov_lb, c->loss.clip_cov_ub);
    if (check_optimizer(cfg, c) || check_async(cfg, c)) return -1;
    if (c->data.difficulty_min > c->data.difficulty_max)
        return or1_fail("%s: min %d is above max %d", where_of(cfg, "data.difficulty.min", w, sizeof w),
                        c->data.difficulty_min, c->data.difficulty_max);
    for (size_t i = 0; i < c->n_stages; i++) {
        const or1_stage_cfg *s = &c->stages[i];
        char path[32];
        snprintf(path, sizeof path, "stages.%zu", i);
        const or1_yaml_node *n = or1_yaml_get(or1_yaml_root(cfg), path);
        if (c->reward.length.overlong && c->reward.length.overlong_len >= s->context_length)
            return or1_fail("%s: len %d is not below stage %zu's context length %d (the penalty would start before "
                            "the first token)", where_of(cfg, "reward.overlong_buffer.len", w, sizeof w),
                            c->reward.length.overlong_len, i, s->context_length);
        if (s->mini_batch > s->prompts || s->prompts % s->mini_batch != 0)
            return or1_fail("%s: key \"%s\": mini_batch %d must divide prompts %d (N_SGD = N / mini_batch)",
                            n ? or1_yaml_node_where(n) : or1_yaml_file(cfg), n ? or1_yaml_node_path(n) : "train",
                            s->mini_batch, s->prompts);
    }
    return 0;
}

/* Load, override, check against the schema, then fill the struct. */
/* An override the stages list makes useless: train.steps under any stages list, and the
 * defaults rollout.n, rollout.max_new_tokens, train.prompts_per_step, train.mini_batch when
 * every stage sets its own value. The error names the override and the stages list. */
static int check_shadowed(const or1_yaml *cfg, const char *override) {
    static const char *const pairs[][2] = {{"train.steps", "steps"},
                                           {"rollout.n", "n"},
                                           {"rollout.max_new_tokens", "context_length"},
                                           {"train.prompts_per_step", "prompts"},
                                           {"train.mini_batch", "mini_batch"}};
    const or1_yaml_node *root = or1_yaml_root(cfg), *stages = or1_yaml_get(root, "stages");
    const or1_yaml_node **items = NULL;
    size_t n = 0, eq = strcspn(override, "=");
    if (!stages || or1_yaml_maps(root, "stages", &items, &n) || n == 0) return free(items), 0;
    int rc = 0;
    for (size_t p = 0; p < sizeof pairs / sizeof *pairs && rc == 0; p++) {
        if (strlen(pairs[p][0]) != eq || strncmp(override, pairs[p][0], eq) != 0) continue;
        size_t set = 0;
        for (size_t i = 0; i < n; i++) set += or1_yaml_get(items[i], pairs[p][1]) != NULL;
        if (set == n)
            rc = or1_fail("--set %s: the stages list (%s) sets %s in every stage, so %s has no effect; set "
                          "stages.N.%s instead", override, or1_yaml_node_where(stages), pairs[p][1], pairs[p][0],
                          pairs[p][1]);
    }
    free(items);
    return rc;
}

int or1_train_config_load(const char *path, const char *const *overrides, size_t n_overrides,
                          or1_train_config *out) {
    memset(out, 0, sizeof *out);
    or1_yaml *cfg = or1_yaml_load(path);
    if (!cfg) return -1;
    int rc = 0;
    for (size_t i = 0; i < n_overrides && rc == 0; i++) rc = or1_yaml_set(cfg, overrides[i]);
    if (rc == 0) rc = or1_yaml_check(cfg, or1_train_schema, or1_train_schema_len);
    for (size_t i = 0; i < n_overrides && rc == 0; i++) rc = check_shadowed(cfg, overrides[i]);
    out->config_path = or1_strdup(path);
    if (rc == 0) rc = fill_scalars(or1_yaml_root(cfg), out);
    if (rc == 0) rc = fill_enums(cfg, out);
    if (rc == 0) rc = fill_train_files(cfg, out);
    if (rc == 0) rc = fill_stages(cfg, out);
    if (rc == 0) rc = fill_lists(or1_yaml_root(cfg), out);
    if (rc == 0) rc = check_relations(cfg, out);
    or1_yaml_free(cfg);
    if (rc != 0) or1_train_config_free(out);
    return rc ? -1 : 0;
}

/* Frees every string and list of the struct. */
void or1_train_config_free(or1_train_config *c) {
    for (size_t i = 0; i < or1_train_schema_len; i++) {
        const or1_yaml_key *k = &or1_train_schema[i];
        if (k->field >= 0 && (k->type == OR1_YAML_STRING || k->type == OR1_YAML_PATH))
            free(*(char **)((char *)c + k->field));
    }
    for (size_t i = 0; c->data.train && i < c->data.n_train; i++) free(c->data.train[i].path);
    for (size_t i = 0; c->stages && i < c->n_stages; i++) free(c->stages[i].name);
    for (size_t i = 0; c->eval.files && i < c->eval.n_files; i++) free(c->eval.files[i]);
    free(c->data.train);
    free(c->stages);
    free(c->eval.files);
    free(c->eval.temperatures);
    free(c->config_path);
    memset(c, 0, sizeof *c);
}

/* True if path exists (file or folder). */
static bool exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* Every file the config names must exist before the trainer does any work. */
/* Response lengths the model's context cannot hold: a stage's T or eval.max_new_tokens that
 * leaves no position for a prompt in max_position_embeddings (read from model.path). */
static int check_context(const or1_train_config *c) {
    or1_model_config mc;
    if (or1_model_config_read(&mc, c->model.path)) return -1;
    for (size_t i = 0; i < c->n_stages; i++)
        if (c->stages[i].context_length >= mc.max_pos)
            return or1_fail("%s: stage %zu (%s): context length %d (stages[%zu].context_length or "
                            "rollout.max_new_tokens) leaves no room for a prompt in the model's "
                            "max_position_embeddings %d", c->config_path, i, c->stages[i].name ? c->stages[i].name : "",
                            c->stages[i].context_length, i, mc.max_pos);
    if (c->eval.max_new_tokens >= mc.max_pos)
        return or1_fail("%s: key \"eval.max_new_tokens\": %d leaves no room for a prompt in the model's "
                        "max_position_embeddings %d", c->config_path, c->eval.max_new_tokens, mc.max_pos);
    return 0;
}

/* The longest prompt a run can take: data.max_prompt_length, lowered to what the longest
 * stage leaves of the model's context. */
int or1_train_prompt_limit(const or1_train_config *c, int max_pos) {
    int T = 0;
    for (size_t i = 0; i < c->n_stages; i++) T = c->stages[i].context_length > T ? c->stages[i].context_length : T;
    int room = max_pos - T;
    return room < c->data.max_prompt_length ? room : c->data.max_prompt_length;
}

int or1_train_config_check_files(const or1_train_config *c) {
    const char *cfg = c->config_path;
    if (!exists(c->model.path)) return or1_fail("%s: key \"model.path\": %s: no such file or folder", cfg, c->model.path);
    if (*c->model.tokenizer && !exists(c->model.tokenizer))
        return or1_fail("%s: key \"model.tokenizer\": %s: no such file or folder", cfg, c->model.tokenizer);
    if (c->kl.enabled && *c->kl.reference && !exists(c->kl.reference))
        return or1_fail("%s: key \"kl.reference\": %s: no such file or folder", cfg, c->kl.reference);
    for (size_t i = 0; i < c->data.n_train; i++)
        if (!or1_is_file(c->data.train[i].path))
            return or1_fail("%s: key \"data.train[%zu].path\": %s: no such file", cfg, i, c->data.train[i].path);
    for (size_t i = 0; i < c->eval.n_files; i++)
        if (!or1_is_file(c->eval.files[i]))
            return or1_fail("%s: key \"eval.files[%zu]\": %s: no such file", cfg, i, c->eval.files[i]);
    return check_context(c);
}

/* Writes a string as a YAML double-quoted scalar (JSON escapes are valid YAML ones). */
static void put_str(FILE *f, const char *s) { or1_json_write_string(f, s); }

/* Walks the stages' step counts. */
int or1_train_stage_of(const or1_train_config *c, long step, long *in_stage) {
    for (size_t i = 0; i < c->n_stages && step >= 0; i++) {
        if (step < c->stages[i].steps) {
            if (in_stage) *in_stage = step;
            return (int)i;
        }
        step -= c->stages[i].steps;
    }
    return -1;
}

/* Sum of the stages' steps. */
long or1_train_total_steps(const or1_train_config *c) {
    long n = 0;
    for (size_t i = 0; i < c->n_stages; i++) n += c->stages[i].steps;
    return n;
}

/* The configured micro-batch, or one whole longest sequence. */
int or1_train_micro_tokens(const or1_train_config *c, size_t stage) {
    if (c->train.micro_tokens > 0) return c->train.micro_tokens;
    long n = (long)c->data.max_prompt_length + c->stages[stage].context_length;
    return n > INT_MAX ? INT_MAX : (int)n;
}

/* Writes a double in the fewest of 15 or 17 digits that read back to the same value. */
static void put_double(FILE *f, double v) {
    char buf[40];
    snprintf(buf, sizeof buf, "%.15g", v);
    if (strtod(buf, NULL) != v) snprintf(buf, sizeof buf, "%.17g", v);
    fputs(buf, f);
}

/* Writes the value of one schema key (lists and enumerations by name, scalars through
 * their struct field), after "key: ". */
static void put_value(FILE *f, const or1_train_config *c, const or1_yaml_key *k) {
    const char *p = k->path;
    if (!strcmp(p, "data.train")) {
        for (size_t j = 0; j < c->data.n_train; j++) {
            fputs("\n    - path: ", f);
            put_str(f, c->data.train[j].path);
            fprintf(f, "\n      weight: %d", c->data.train[j].weight);
        }
    } else if (!strcmp(p, "stages")) {
        for (size_t j = 0; j < c->n_stages; j++) {
            const or1_stage_cfg *s = &c->stages[j];
            fputs("\n  - name: ", f);
            put_str(f, s->name);
            fprintf(f, "\n    context_length: %d\n    prompts: %d\n    n: %d\n    mini_batch: %d\n    steps: %d",
                    s->context_length, s->prompts, s->samples, s->mini_batch, s->steps);
        }
    } else if (!strcmp(p, "eval.files")) {
        fputc('[', f);
        for (size_t j = 0; j < c->eval.n_files; j++) {
            if (j) fputs(", ", f);
            put_str(f, c->eval.files[j]);
        }
        fputc(']', f);
    } else if (!strcmp(p, "eval.temperatures")) {
        fputc('[', f);
        for (size_t j = 0; j < c->eval.n_temperatures; j++) {
            if (j) fputs(", ", f);
            put_double(f, c->eval.temperatures[j]);
        }
        fputc(']', f);
    } else if (!strcmp(p, "entropy.mode")) {
        fputs(or1_entropy_mode_name(c->entropy.mode), f);
    } else if (!strcmp(p, "entropy.update")) {
        fputs(or1_entropy_cadence_name(c->entropy.update), f);
    } else if (!strcmp(p, "kl.estimator")) {
        fprintf(f, "%s%s", or1_kl_name(c->kl.estimator.kind), c->kl.estimator.straight_through ? "+" : "");
    } else if (!strcmp(p, "advantage.estimator")) {
        fputs(or1_adv_estimator_name(c->advantage.estimator), f);
    } else if (choice_name(c, p)) {
        fputs(choice_name(c, p), f);
    } else if (!strcmp(p, "checkpoint.dtype")) {
        fputs(c->checkpoint.dtype == OR1_BF16 ? "bf16" : "f32", f);
    } else if (!strcmp(p, "advantage.truncation_mask")) {
        fputs(or1_trunc_mask_name(c->advantage.trunc), f);
    } else if (!strcmp(p, "data.difficulty.missing")) {
        fputs(c->data.difficulty_keep_missing ? "keep" : "drop", f);
    } else {
        if (k->field < 0) return (void)fputc('\n', f); /* a key filled by hand must be written above */
        const void *v = (const char *)c + k->field;
        if (k->type == OR1_YAML_INT) fprintf(f, "%d", *(const int *)v);
        else if (k->type == OR1_YAML_DOUBLE) put_double(f, *(const double *)v);
        else if (k->type == OR1_YAML_BOOL) fputs(*(const bool *)v ? "true" : "false", f);
        else put_str(f, *(char *const *)v);
    }
    fputc('\n', f);
}

/* The resolved configuration as YAML, in schema order: a section header whenever a key's
 * enclosing mappings differ from the previous key's, then "leaf: value". */
char *or1_train_config_yaml(const or1_train_config *c) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    char prev[128] = "";
    for (size_t i = 0; i < or1_train_schema_len; i++) {
        const or1_yaml_key *k = &or1_train_schema[i];
        if (strchr(k->path, '[')) continue;
        const char *leaf = strrchr(k->path, '.');
        leaf = leaf ? leaf + 1 : k->path;
        size_t plen = (size_t)(leaf - k->path), common = 0, depth = 0;
        /* the longest prefix of whole sections shared with the previous key */
        for (size_t j = 0; j < plen && j < strlen(prev) && prev[j] == k->path[j]; j++)
            if (k->path[j] == '.') common = j + 1;
        for (size_t j = 0; j < common; j++) depth += k->path[j] == '.';
        for (size_t j = common; j < plen; j++) {
            if (k->path[j] != '.') continue;
            size_t from = j;
            while (from > 0 && k->path[from - 1] != '.') from--;
            fprintf(f, "%*s%.*s:\n", (int)(2 * depth), "", (int)(j - from), k->path + from);
            depth++;
        }
        fprintf(f, "%*s%s:", (int)(2 * depth), "", leaf);
        if (k->type != OR1_YAML_MAPS) fputc(' ', f);
        put_value(f, c, k);
        snprintf(prev, sizeof prev, "%.*s", (int)plen, k->path);
    }
    fclose(f);
    return buf;
}

/* The config's data section as load options. */
or1_data_opts or1_train_data_opts(const or1_train_config *c, const or1_tokenizer *tok) {
    return (or1_data_opts){.files = c->data.train, .n_files = c->data.n_train,
                           .difficulty_model = c->data.difficulty_model,
                           .difficulty_min = c->data.difficulty_min, .difficulty_max = c->data.difficulty_max,
                           .keep_missing = c->data.difficulty_keep_missing, .tok = tok,
                           .chat_template = c->model.chat_template,
                           .enable_thinking = or1_train_enable_thinking(c),
                           .max_prompt_length = c->data.max_prompt_length, .shuffle = c->data.shuffle,
                           .seed = (uint64_t)c->seed};
}

/* The tokenizer path of the config (model.path when empty). */
const char *or1_train_tokenizer_path(const or1_train_config *c) {
    return c->model.tokenizer && *c->model.tokenizer ? c->model.tokenizer : c->model.path;
}

/* data.apply_chat_template_kwargs.enable_thinking as the template variable (checked at load). */
int or1_train_enable_thinking(const or1_train_config *c) {
    const char *v = c->data.enable_thinking;
    return !v || !*v ? OR1_CHAT_UNDEFINED : strcmp(v, "true") == 0;
}
