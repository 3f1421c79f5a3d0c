/* or1 trainer: the MAGIC training loop of Skywork-OR1 (paper §3.1) and evaluation.
 *
 * One step: N prompts x M samples through the rollout engine, verifiable rewards, GRPO
 * advantages with rejection of zero-advantage groups (optional DAPO refill), N_SGD
 * mini-batch updates of the eq. (3.1) loss with AdamW, then the adaptive entropy controller;
 * a metrics row per step, checkpoints that resume exactly, stages with the online filter.
 * With several ranks each rank samples and scores whole prompt groups; per-sample results
 * are shared so that every rank takes the same decisions, and gradients are summed. */
#ifndef OR1_TRAIN_H
#define OR1_TRAIN_H

#include <stdio.h>

#include "or1/algo.h"
#include "or1/core.h"
#include "or1/io_safetensors.h"
#include "or1/io_yaml.h"
#include "or1/model.h"
#include "or1/reward.h"
#include "or1/data.h"
#include "or1/dist.h"
#include "or1/reward_tool.h"
#include "or1/rollout.h"
#include "or1/tokenizer.h"

typedef struct or1_sandbox_pool or1_sandbox_pool;

/* ---- The trainer's configuration --------------------------------------------------------- */

/* The knobs of tool-integrated rollouts (or1_tools_new below), one row each: the trainer's config
 * key, the flag of `or1 generate` and `or1 eval`, the or1_tools_cfg field, its type (int or
 * double), default, range and help. */
#define OR1_TOOL_OPTIONS(X)                                                                                   \
    X("rollout.tools.max_turns", "tools", max_turns, int, 0, 0, 1000,                                         \
      "tool calls per sample: a ```python block the model closes runs in the sandbox and its output is "     \
      "appended as ```output (0: off)")                                                                       \
    X("rollout.tools.timeout", "tool-timeout", timeout, double, 5, 0.01, 3600,                                \
      "CPU seconds of each tool call (wall clock: twice that)")                                              \
    X("rollout.tools.output_bytes", "tool-output-bytes", output_bytes, int, 1024, 1, 16777216,                \
      "a tool's output beyond this many bytes is cut, with a marker")                                         \
    X("rollout.tools.memory_mb", "tool-memory-mb", memory_mb, int, 1024, 16, 1048576, "memory of each tool call, MiB")
#define OR1_TOOL_FIELD(key, flag, field, type, def, lo, hi, help) type field;

typedef struct {
    OR1_TOOL_OPTIONS(OR1_TOOL_FIELD) /* max_turns (0: no tools), timeout, output_bytes, memory_mb */
    int workers;                     /* calls run at once (<= 0: one per core) */
} or1_tools_cfg;

/* What the calls of a rollout did, one row per count: its type, field (the name it has in
 * reports) and meaning. */
#define OR1_TOOLS_STATS(X)                                                  \
    X(long, calls, "tool calls")                                            \
    X(long, errors, "calls that raised or ran out of memory")               \
    X(long, timeouts, "calls stopped at their time limit")                  \
    X(long, failures, "calls the sandbox could not run")                    \
    X(double, seconds, "wall seconds in the sandbox, summed over calls")    \
    X(long, samples_calling, "samples that made at least one call")
#define OR1_TOOLS_STATS_FIELD(type, field, help) type field;
#define OR1_TOOLS_STATS_ONE(type, field, help) +1
enum { OR1_TOOLS_N_STATS = 0 OR1_TOOLS_STATS(OR1_TOOLS_STATS_ONE) };
typedef struct {
    OR1_TOOLS_STATS(OR1_TOOLS_STATS_FIELD)
} or1_tools_stats;

/* Adds s into *into. */
void or1_tools_stats_add(or1_tools_stats *into, const or1_tools_stats *s);
/* Sums *s over the ranks of d (every rank must call). */
void or1_tools_stats_sum(or1_tools_stats *s, const or1_dist *d);
/* Adds each count to obj as prefix + its name, then calls_per_sample and samples_calling_ratio
 * over the samples drawn. */
void or1_tools_stats_json(const or1_tools_stats *s, size_t samples, cJSON *obj, const char *prefix);

/* One stage of the multi-stage schedule (paper §3.2.2, Tables 10-12). */
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
        char *enable_thinking; /* apply_chat_template_kwargs.enable_thinking: "", "true", "false" */
    } data;
    struct {
        int n;
        double temperature, top_p;
        int top_k; /* 0 = off */
        int max_new_tokens;
        or1_engine_opts engine; /* OR1_ENGINE_OPTIONS: the keys rollout.max_slots and so on */
        or1_tools_cfg tools;
    } rollout;
    struct {
        int prompts_per_step, mini_batch, epochs, steps, micro_tokens; /* micro_tokens 0: auto */
        int zero; /* 1: optimizer state sharded over the ranks (ZeRO stage 1) */
        bool recompute_logprobs; /* old log-probs from the training engine (else the sampler's) */
        bool async;              /* rollout ranks sample while trainer ranks train */
        double rollout_ranks;    /* async: a count (>= 1) or a share (< 1) of the ranks */
        int max_staleness;       /* async: batch k sampled by the policy of step k-1-max_staleness */
        int partial_tokens;      /* async: tokens after which a sample takes the next policy; 0: off */
        bool partial_recompute_kv; /* async: at that switch the KV is recomputed (else kept) */
        bool gradient_checkpointing; /* layers' activations recomputed in backward */
        double lr, weight_decay, beta1, beta2, adam_eps, grad_clip;
        OR1_CLIP_OPTIONS(OR1_OPTION_DOUBLE) /* clip_low, clip_high */
    } train;
    or1_entropy_params entropy;
    struct {
        bool enabled;
        double coef;
        or1_kl_estimator estimator;
        char *reference; /* "" -> model.path */
        int reset_every;      /* ProRL reference reset every this many steps; 0: never */
        bool reset_optimizer; /* and the AdamW state with it */
    } kl;
    struct {
        bool enabled, keep_single;
        int max_rounds; /* generation rounds per step; 1 = no refill */
    } rejection;
    or1_adv_cfg advantage; /* reject/keep_single mirror the rejection section */
    struct {
        OR1_LOSS_CHOICES(OR1_CHOICE_FIELD) /* agg, mode */
        OR1_LOSS_OPTIONS(OR1_OPTION_DOUBLE) /* the rows of OR1_LOSS_OPTIONS (scale 0: the stage's T) */
    } loss; /* the loss section: aggregation and policy-gradient term */
    struct {
        OR1_CORRECTION_CHOICES(OR1_CHOICE_FIELD) /* is: a mode other than none turns train.recompute_logprobs on */
        OR1_CORRECTION_OPTIONS(OR1_OPTION_DOUBLE) /* is_low, is_high */
        bool offpolicy_mask;      /* DeepSeek-V3.2's off-policy sequence mask */
        double offpolicy_delta;
    } correction; /* the rollout_correction section */
    struct {
        int workers; /* 0 = one per CPU */
        or1_reward_opts opts;   /* OR1_REWARD_OPTIONS (reward.strict_box ...) and reward.code_timeout */
        double max_error_ratio; /* warn above this share of failed rewards per step */
        or1_length_cfg length;  /* overlong_buffer.* and truncation_penalty */
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
        int every, keep_last; /* keep_last 0 = every checkpoint */
        or1_dtype dtype;      /* of the weights: OR1_F32 or OR1_BF16 */
    } checkpoint;
    struct {
        double timeout_s; /* a collective waiting longer ends the rank; 0 = never */
    } dist;
    char *output_dir;
    char *device;    /* backend name: cpu | cuda */
    char *precision; /* matmul precision: auto | fp32 | bf16 */
    int seed;
} or1_train_config;

/* The schema of the trainer's config (defaults from the final training scripts of the
 * Skywork-OR1 repository, or1_scripts/train/) and its size. */
extern const or1_yaml_key or1_train_schema[];
extern const size_t or1_train_schema_len;

/* Loads FILE, applies the overrides in order, checks the tree against the schema and fills
 * *out (free with or1_train_config_free). Does not touch the files the config names. */
int or1_train_config_load(const char *path, const char *const *overrides, size_t n_overrides,
                          or1_train_config *out);
void or1_train_config_free(or1_train_config *c);
/* Checks that every file the config names exists (model folder, tokenizer, data and eval
 * files, reference); the error names the key and the file. */
int or1_train_config_check_files(const or1_train_config *c);
/* The multi-stage schedule (paper Tables 10-12): the stage that 0-based global step `step`
 * falls in and the step's index inside it (*in_stage may be NULL); -1 once every stage is
 * done. */
int or1_train_stage_of(const or1_train_config *c, long step, long *in_stage);
/* Steps of all stages together. */
long or1_train_total_steps(const or1_train_config *c);
/* Tokens per loss micro-batch in a stage: train.micro_tokens, or when 0 the longest possible
 * sequence, max_prompt_length + the stage's context length. */
int or1_train_micro_tokens(const or1_train_config *c, size_t stage);

/* The resolved configuration as YAML text (new string), e.g. to store beside checkpoints. */
char *or1_train_config_yaml(const or1_train_config *c);

/* The dataset options of a trainer config (tok and template supplied by the caller). */
or1_data_opts or1_train_data_opts(const or1_train_config *c, const or1_tokenizer *tok);
/* data.apply_chat_template_kwargs.enable_thinking: 0, 1 or OR1_CHAT_UNDEFINED. */
int or1_train_enable_thinking(const or1_train_config *c);
/* The tokenizer path of the config: model.tokenizer, or model.path when that is empty. */
const char *or1_train_tokenizer_path(const or1_train_config *c);
/* The longest prompt a run can take: data.max_prompt_length, lowered to what the longest
 * stage's context length leaves of max_pos positions. */
int or1_train_prompt_limit(const or1_train_config *c, int max_pos);

/* ---- The trainer and evaluation -------------------------------------------------------------- */

/* How a run starts. resume: NULL for a new run; "auto" for the newest complete checkpoint of
 * output.dir (a new run when the folder holds none); a run folder (its newest complete
 * checkpoint); or a checkpoint folder (`checkpoints/latest` included). A new run refuses an
 * output.dir that holds a run unless overwrite, which removes that run's metrics and
 * checkpoints first. */
typedef struct {
    const char *resume;
    bool overwrite;
} or1_train_start;

/* Runs the whole schedule of cfg from start (NULL: a new run). Resuming at or past the end
 * says so and trains nothing. */
int or1_train_run(const or1_train_config *cfg, const or1_train_start *start, const or1_dist *d);

/* Generated and scored samples of some rows (M per row, row-major): a score where the
 * reward was decided, NaN and an error status where it was not (reward.h). */
typedef struct {
    or1_completion *c;
    float *scores;
    or1_reward_status *status;
    float *seconds;        /* each reward's verification time (or1_reward.seconds) */
    int *switch_at;        /* each sample's first token sampled under the weights a switch put in
                              (or1_weight_switch); c[k].n where none was (every sample without one) */
    or1_tools_stats tools; /* what the tool calls did (zero without tools) */
    size_t n;
} or1_scored;

/* What or1_rollout_score samples and how: M responses for each of rows[0..n_rows) under dm
 * (request seed seeds[i]; temperature, top-p/k and max_new_tokens from sampling), with the
 * engine's settings, tool calls where tools is given with max_turns > 0, the sandbox pool for
 * code rewards (and tools), the reward's options, and an optional weight switch (NULL: none;
 * not with tools; or1_weight_switch is in rollout.h). */
typedef struct {
    or1_dmodel *dm;
    const or1_tokenizer *tok;
    const or1_data_row *const *rows;
    size_t n_rows;
    int M;
    const or1_sampling *sampling;
    const uint64_t *seeds;
    const or1_engine_cfg *engine;
    const or1_tools_cfg *tools;
    or1_sandbox_pool *pool;
    const or1_reward_opts *reward;
    const or1_weight_switch *sw;
} or1_rollout_job;

/* Samples job's responses, decodes each response's sampled tokens (a tool's reply left out)
 * and scores them with the row's verifier on a thread that starts on each sample as soon as
 * it has ended (with a switch, a sample cut by it when it ends under the new weights). Seconds
 * of generation (a switch's apply included) go to t_rollout; the scoring left after the last
 * sample to t_reward. */
int or1_rollout_score(const or1_rollout_job *job, or1_scored *out, double *t_rollout, double *t_reward);
void or1_scored_free(or1_scored *s);

/* Evaluation settings. */
typedef struct {
    int n;
    float temperature, top_p;
    int top_k, max_new_tokens; /* max_new_tokens 0: what the context leaves */
    or1_engine_opts engine;
    uint64_t seed;
    or1_reward_opts reward;
    or1_tools_cfg tools; /* max_turns 0: no tools */
} or1_eval_opts;

/* Samples n responses per row and returns the avg@n / pass@k report (per data_source and
 * overall, with "reward_errors" by status) as JSON. A sample whose reward failed counts as
 * neither right nor wrong. o->max_new_tokens 0 means what the context leaves after the longest
 * prompt; a row whose prompt leaves fewer positions is skipped and counted
 * ("skipped_long_prompts", per source), never an abort. Rows are split over ranks and the
 * counts summed, so every rank returns the same report. correct and scored (optional, n_rows
 * each) get every row's counts (scored -1 for a skipped row).
 * With dump (non-NULL on every rank, or on none), every sample of every rank is written as a
 * JSON line to rank 0's dump. */
cJSON *or1_eval(or1_dmodel *dm, const or1_tokenizer *tok, const or1_data_row *const *rows, size_t n_rows,
                const or1_eval_opts *o, or1_sandbox_pool *pool, const or1_dist *d, FILE *dump, int *correct,
                int *scored);

/* ---- The eq. (3.1) driver: micro-batches over the model ----------------------------------- */

/* Samples packed as prompt+response sequences (response positions scored). */
typedef struct {
    or1_batch b;
    int32_t **joined;
    or1_seq *seqs;
    int n;
} or1_packed_samples;

/* Packs samples s[0..n) into p->b (free with or1_packed_samples_free). */
void or1_pack_samples(or1_packed_samples *p, const or1_sample *s, int n);
void or1_packed_samples_free(or1_packed_samples *p);

/* The end of the micro-batch that starts at sample i0: samples are taken in order while their
 * prompt+response tokens fit in micro_tokens (always at least one). */
int or1_micro_batch_end(const or1_sample *s, int n, int i0, int micro_tokens);

/* Adds to the model's gradients the gradient of the eq. (3.1) loss over samples, each token
 * weighted as cfg->agg says with the normalisers *norm of the whole mini-batch (its response
 * tokens and sequences over every rank, so any micro-batch or rank split gives the same sum).
 * Samples are packed greedily into micro-batches of at most micro_tokens tokens; the forward
 * and backward run on the model's backend, the per-token terms on the host. When cfg selects
 * tokens over the mini-batch (Clip-Cov, KL-Cov, top-entropy; or1_loss_selects), a forward pass
 * without gradients over the same micro-batches comes first and or1_select_tokens marks the
 * tokens, summing over the ranks of the mini-batch through cfg->reduce (every rank must call,
 * with or without samples). Adds this call's sums into *st. */
int or1_policy_grad(or1_dmodel *dm, const or1_sample *s, int n, const or1_loss_norm *norm, int micro_tokens,
                    const or1_loss_cfg *cfg, or1_loss_stats *st);

/* ---- Tool-integrated rollouts --------------------------------------------------------------- */

/* The rollout engine's tool hooks (or1_tool_hooks) for Python code: a sample's text opening a
 * block with OR1_TOOL_CALL_OPEN and closing it with OR1_TOOL_CALL_CLOSE is a call; its code runs
 * in the sandbox (or1_tool_exec) while the other samples go on, and the reply appended to the
 * sample is OR1_TOOL_REPLY_OPEN, the tool's text (stdout, stderr, a truncation marker or an
 * error line; see reward_tool.h), OR1_TOOL_REPLY_CLOSE, tokenized with special tokens read as
 * plain text. After max_turns calls a sample's blocks are not run. */
#define OR1_TOOL_CALL_OPEN "```python\n"
#define OR1_TOOL_CALL_CLOSE "\n```"
#define OR1_TOOL_REPLY_OPEN "```output\n"
#define OR1_TOOL_REPLY_CLOSE "```\n"

/* Appends to out the reply text that follows a sample whose text so far ends with `last` (its
 * last byte; '\n' when it ends a line): a newline if needed, OR1_TOOL_REPLY_OPEN, the tool's
 * text (ending its line) and OR1_TOOL_REPLY_CLOSE. SFT traces (or1 gen-arith --tool) use it. */
void or1_tools_reply_text(char last, const char *tool, size_t len, or1_text *out);

typedef struct or1_tools or1_tools;

/* Tools for the n requests' samples (their n_samples), decoding and encoding with tok. */
or1_tools *or1_tools_new(const or1_tools_cfg *cfg, const or1_tokenizer *tok, const or1_request *reqs, int n);
const or1_tool_hooks *or1_tools_hooks(or1_tools *t);
or1_tools_stats or1_tools_stats_of(const or1_tools *t);
void or1_tools_free(or1_tools *t);

/* ---- Supervised fine-tuning ---------------------------------------------------------------- */

/* One example: the response tokens are the targets, the prompt only conditions them; a
 * response token with mask 0 (a tool's reply) is context only, as in RL. mask NULL: all 1. */
typedef struct {
    const int32_t *prompt, *resp;
    int n_prompt, n_resp;
    const uint8_t *mask;
} or1_sft_example;

/* The response tokens of x that are trained (mask 1). */
int or1_sft_example_len(const or1_sft_example *x);

typedef struct {
    int steps;          /* optimizer steps */
    int batch;          /* examples per step */
    int warmup;         /* steps of linear warm-up from lr/warmup to lr (0: none) */
    int micro_tokens;   /* packed tokens per forward/backward micro-batch */
    float lr, weight_decay, max_grad_norm;
    uint64_t seed;      /* the shuffle */
    int log_every;      /* measure the batch NLL every this many steps (and at the last) */
    float min_lr;       /* the rate the cosine decay ends at, on the last step */
} or1_sft_cfg;

/* What the progress callback sees after a step. nll is the batch's mean response-token NLL
 * before the step, measured only on logging steps (NaN otherwise). */
typedef struct {
    int step;           /* 1-based */
    double nll, grad_norm, lr, seconds;
    long tokens;        /* response tokens of this step's batch */
} or1_sft_progress;

typedef void (*or1_sft_callback)(void *ctx, const or1_sft_progress *p);

/* Trains the model in place on n examples (the host model is brought up to date at the
 * end); calls cb (if any) after every step. Fails on an empty set, a bad setting or an
 * example longer than the model's context. */
int or1_sft_train(or1_dmodel *dm, const or1_sft_example *ex, int n, const or1_sft_cfg *cfg,
                  or1_sft_callback cb, void *ctx);

#endif
