/* Trainer internals shared by the files of src/train, in the order of the loop: the trainer's
 * state, the step batch (batch.c), set-up (setup.c), metrics (metrics.c), checkpoints
 * (checkpoint.c), the optimizer update (update.c) and the run folder (run_dir.c). */
#ifndef OR1_TRAIN_INTERNAL_H
#define OR1_TRAIN_INTERNAL_H

#include "or1/algo.h"
#include "or1/model.h"
#include "or1/train.h"

/* What asynchronous training (train.async) holds on a rank: its role, the ranks of the job,
 * and the pipeline's state. World ranks [0, n_train) train (t->d is their group), the others
 * sample (t->d is theirs); the first rollout rank sends each batch to every trainer rank, and
 * the first trainer rank sends the weights after each update to every rollout rank. */
typedef struct {
    bool on, rollout;      /* train.async; this rank samples (else it trains) */
    or1_dist world;        /* every rank of the job */
    int n_train;           /* trainer ranks; world rank n_train leads the rollout ranks */
    long version;          /* rollout: the policy version its weights hold (updates applied) */
    long round_version;    /* rollout: the version a generation round started with */
    long partial_target;   /* rollout: the version a partial rollout switches to */
    double round_wait;     /* rollout: seconds a partial rollout's switch waited */
    long next_batch;       /* the first batch (its 1-based step) the rollout makes after a resume */
    char **pending;        /* trainer: batches received, not yet trained, as bytes, in order */
    size_t *pending_len;
    long pending_first;    /* the step of pending[0] */
    size_t n_pending;
    long received;         /* trainer: the last batch received */
    char *data_state;      /* trainer: the sampler state after that batch (JSON), for checkpoints */
    size_t filtered_stage; /* and the rollout's online-filter mark then */
    or1_dist_send **sends[2]; /* trainer rank 0: the weights in flight (one per rollout rank), their buffers */
    float *send_buf[2];
} async_state;

/* Everything one training run holds. */
typedef struct {
    const or1_train_config *cfg;
    const or1_dist *d;
    or1_model m, ref;
    bool has_ref;
    bool ref_reset; /* the reference is a past policy (kl.reset_every), saved with checkpoints */
    or1_tokenizer *tok;
    or1_dataset *data, *eval_data;
    or1_adamw opt;
    or1_entropy_ctl ent;
    or1_sandbox_pool *pool;
    or1_backend *be;        /* the device the models run on (train.device) */
    or1_dmodel *dm, *ref_dm; /* m and ref placed on it */
    bool device_collectives; /* gradients summed on the device (NCCL), not via the host */
    FILE *metrics; /* rank 0 */
    long step;     /* completed steps */
    long first_step;     /* the step this process started from (resume) */
    double started;      /* or1_now() when this process's first step began */
    size_t filtered_stage; /* last stage whose online filter ran */
    async_state async;     /* train.async */
} trainer;

/* One mini-batch update of a step as the entropy controller saw it (entropy.update:
 * minibatch): its sampled-token entropy estimate, the alpha it trained with, and its token
 * means of the full entropy, the loss and the pg term. */
typedef struct {
    double entropy, alpha, entropy_full, loss, pg_loss;
} mb_record;

/* The samples of one step, gathered over generation rounds. Per-sample numbers (score,
 * length, truncation) are known on every rank; completions only on the rank that made them. */
typedef struct {
    int M;
    size_t n_groups, n_samples, cap_groups;
    uint32_t *row;           /* per group: dataset row id */
    float *score;            /* per sample; NaN where the reward failed */
    long reward_errors[OR1_REWARD_N_STATUS]; /* failed rewards of the step by status (ok unused) */
    double reward_seconds[2];                /* verification time summed by class: math, code */
    long reward_count[2];                    /* rewards that ran, by class */
    int *len;                /* per sample: response tokens, a tool's replies included */
    int *trained;            /* per sample: the tokens the model sampled (len without tools) */
    or1_tools_stats tools;   /* the step's tool calls, summed over ranks */
    bool *trunc, *owned;
    or1_completion *c;       /* owned samples only */
    float **ref_logp;        /* owned samples in the loss, with KL on */
    float **old_logp;        /* the same, from the training engine (train.recompute_logprobs) */
    or1_mismatch mismatch;   /* old_logp against the sampler's, summed over ranks */
    float *adv;
    double length_penalty;   /* sum over decided samples of the length shaping (<= 0) */
    double ent_pct[3];       /* p10, p50, p90 of the token entropies in the update (not skipped) */
    mb_record *mb;           /* the step's mini-batch updates in order (epochs included) */
    int n_mb;
    bool *in_loss;
    int32_t *version;        /* per sample: the policy version (updates applied) of its first tokens */
    int32_t *switch_at;      /* per sample: its first token sampled under version + 1 (len: none) */
    or1_rejection rej;
    size_t kept_groups;
    long loss_tokens;
    double t_rollout, t_reward;
    double t_wait;           /* async trainer: seconds waited for this batch */
    double rollout_wait, rollout_seconds; /* async: the rollout's wait for weights and its wall time */
    long rollout_tokens;     /* async: tokens the rollout sampled for this batch */
    long *stale;             /* async: trained tokens by staleness 0..n_stale-1 (versions behind) */
    int n_stale;
    long stale_dropped;      /* async: samples past max_staleness left out of the loss */
} step_batch;

/* A batch's record in asynchronous training besides its numbers: its step, the rollout's
 * waiting and wall seconds and sampled tokens for it, and the sampler's state after it (the
 * state a resume continues from) with the online-filter mark. */
typedef struct {
    long index;
    double rollout_wait, rollout_seconds;
    long rollout_tokens;
    char *data_state;
    size_t filtered_stage;
} async_batch;

/* ---- the step batch (batch.c) ----------------------------------------------------------- */

/* An empty step batch, and its release. */
void train_batch_init(step_batch *b);
void train_batch_free(step_batch *b);
/* Appends one round's groups: own samples from sc (taken over), numbers summed over ranks. */
void train_batch_add_round(step_batch *b, const trainer *t, const uint32_t *ids, size_t n, int M, or1_scored *sc,
                           const size_t *pos, size_t mine);
/* Length-shaped rewards, truncation masks, rejection and advantages over every group so far
 * (max_len: the stage's T). */
void train_batch_decide(step_batch *b, const trainer *t, int max_len);
/* Keeps the first `need` kept groups (refill) and counts the loss tokens T_k. */
void train_batch_finalize(step_batch *b, const trainer *t, size_t need);
/* e_k: the mean negative log-prob of the sampled tokens in the loss, before the update. */
double train_batch_entropy_estimate(const step_batch *b, const trainer *t);
/* The own loss samples of mini-batch c of n (groups split in order) and its global T and
 * sequence count (the loss normalisers). */
int train_batch_chunk(const step_batch *b, const trainer *t, int c, int n, or1_sample **s, or1_loss_norm *norm);
/* Reference log-probs of the own loss samples (KL term). */
int train_batch_ref_logprobs(step_batch *b, trainer *t, int micro_tokens);
/* Log-probs of the own loss samples under the current weights before the update, and their
 * mismatch with the sampler's (train.recompute_logprobs). */
int train_batch_old_logprobs(step_batch *b, trainer *t, int micro_tokens);
/* Generation rounds until N kept groups (refill) or the round limit (collect.c); sw (or NULL):
 * a weight switch inside the first round (partial rollouts). */
int train_collect(trainer *t, const or1_stage_cfg *st, const or1_weight_switch *sw, step_batch *b);
/* Whether the update takes its old log-probs from the training engine. */
bool train_recompute_logprobs(const trainer *t);
/* Sums (and the maximum of) mismatch statistics over the ranks, in place. */
void train_mismatch_over_ranks(const trainer *t, or1_mismatch *m);

/* Each prompt's rank among `ranks`, longest prompt first onto the least-loaded rank. */
void train_batch_assign_ranks(const or1_dataset *data, const uint32_t *ids, size_t n, int ranks, int *owner);

/* ---- a step batch as bytes (wire.c) ------------------------------------------------------- */

/* The whole batch (every completion must be on this rank) and its async record as bytes (new
 * buffer, *len its size). */
char *train_wire_pack_batch(const step_batch *b, const async_batch *a, const or1_dataset *data, size_t *len);
/* Reads bytes of wire_pack_batch into *b (every sample owned) and *a (a->data_state new); each
 * group's prompt must be its row's in data (NULL: not checked) and lengths at most max_len.
 * Fails naming `where` and the offset. */
int train_wire_unpack_batch(const char *buf, size_t len, const char *where, const or1_dataset *data, int max_len,
                            step_batch *b, async_batch *a);
/* This rank's own completions with their indices, and their reading into b (owned then). */
char *train_wire_pack_owned(const step_batch *b, size_t *len);
int train_wire_unpack_owned(const char *buf, size_t len, step_batch *b, int max_len);

/* ---- asynchronous training (async.c) ---------------------------------------------------- */

/* Splits the job into trainer and rollout ranks (train.async): *a gets this rank's role and
 * *group its role's ranks. */
int train_async_roles(const or1_train_config *c, const or1_dist *world, async_state *a, or1_dist *group);
/* The rollout ranks' loop: batches in order, each from the weights the schedule gives it. */
int train_async_rollout_loop(trainer *t);
/* Trainer ranks: the next batch (step t->step + 1), received or pending, owned as the
 * synchronous loop would own it. */
int train_async_next_batch(trainer *t, step_batch *b);
/* Trainer ranks, after an update: the weights to the rollout ranks when they will need them. */
int train_async_send_weights(trainer *t);
/* Trainer ranks, before a checkpoint: receives the batches the checkpoint must keep. */
int train_async_before_checkpoint(trainer *t);
/* The pending batches into dir/async_pending.bin (trainer rank 0), and back (resume). */
int train_async_save_pending(const trainer *t, const char *dir);
int train_async_load_pending(trainer *t, const char *dir);
/* Frees the pipeline's buffers after waiting for the sends in flight. */
void train_async_close(trainer *t);

/* ---- set-up and tear-down (setup.c) ---------------------------------------------------- */

/* Loads and places everything a run needs, resuming from resume_dir when set; as (NULL: a
 * synchronous run) gives an asynchronous run's role. */
int train_open(trainer *t, const or1_train_config *cfg, const or1_dist *d, const char *resume_dir,
               const async_state *as);
/* Frees everything trainer_open made. */
void train_close(trainer *t);

/* ---- metrics, validation and the online filter (metrics.c) --------------------------------- */

/* Records each group's correct count with the sampler (the next stage's online filter). */
void train_track_solved(trainer *t, const step_batch *b);
/* Drops the rows solved in the previous stage, at the start of stage. */
void train_online_filter(trainer *t, size_t stage);
/* What a step did besides its batch, for its metrics row: its stage, the entropy estimate e_k
 * and the alpha it trained with, whether the controller was on, the loss statistics summed
 * over the ranks, the mean gradient norm, whether nothing was trained, and its seconds. */
typedef struct {
    size_t stage;
    const or1_stage_cfg *st;
    double e_k, alpha;
    bool enabled;
    const or1_loss_stats *ls;
    double grad_norm;
    bool skipped;
    double t_update, t_step;
} step_record;
/* The step's metrics row (rank 0) and progress line; fails naming metrics.jsonl when the row
 * cannot be written. */
int train_write_metrics(trainer *t, const step_batch *b, const step_record *r);
/* Validation on eval.files at each temperature, one row each in metrics.jsonl. */
int train_run_validation(trainer *t);

/* ---- checkpoints (checkpoint.c) ------------------------------------------------------------ */

/* Saves a checkpoint of the completed step (a collective: the optimizer state goes to rank 0). */
int train_save_checkpoint(trainer *t);
/* ProRL's reference reset after a completed step: the reference takes the current weights
 * (and the AdamW state is zeroed with kl.reset_optimizer). */
int train_reset_reference(trainer *t);
/* Reads a checkpoint's trainer_state.json into the trainer (resume). */
int train_checkpoint_load_state(trainer *t, const char *dir);
/* The reference model of a KL run: the resumed checkpoint's reset reference if it has one,
 * else kl.reference, else model.path. */
int train_checkpoint_load_reference(trainer *t, const char *resume_dir);

/* ---- the optimizer update over the ranks (update.c) ------------------------------------- */

/* Sets up the device's own collectives over the ranks where the backend has them. */
int train_update_collectives_init(trainer *t);
/* The optimizer update over the ranks (update.c): replicated, or ZeRO stage 1. */
int train_update_apply(trainer *t, const or1_adamw_cfg *ac, double *norm);
/* Zeroed optimizer state for this rank's range (and a line saying its size). */
void train_update_optimizer_init(trainer *t);
/* A checkpoint's optimizer state, this rank's range of it: 1 loaded, 0 no file, -1 error. */
int train_update_optimizer_load(trainer *t, const char *dir);
/* The whole optimizer state on rank 0 (collective); *owned: *full must be freed. */
int train_update_optimizer_gather(trainer *t, or1_adamw *full, bool *owned);
/* Whether this rank keeps fp32 masters of its shard alone (ZeRO stage 1 in bf16 precision). */
bool train_update_masters_sharded(const trainer *t);
/* The policy placed on the trainer's backend: with a shard of fp32 masters when they are
 * sharded, else whole. */
or1_dmodel *train_update_place_model(trainer *t);
/* The whole current parameters into the host model on every rank (a collective). */
int train_update_params_to_host(trainer *t);
/* The global L2 norm of the fp32 weights (a collective when the masters are sharded). */
double train_update_param_norm(trainer *t);

/* ---- the run folder (run_dir.c) ---------------------------------------------------------- */

/* The checkpoint folder --resume ARG means (see or1_train_start); *dir NULL for a new run
 * (no ARG, or auto on a folder without checkpoints). A checkpoint is resumed only when intact
 * (complete, its files matching checksums.json); auto and a run folder pass over damaged ones
 * to the newest intact one, saying so when talk. Errors name ARG. */
int train_run_resume_dir(const or1_train_config *cfg, const char *arg, bool talk, char **dir);
/* A new run's output folder (rank 0 only): refused when it holds a run unless overwrite; with
 * overwrite, that run's checkpoints, `latest` and metrics are removed. */
int train_run_prepare_output(const or1_train_config *cfg, bool resuming, bool overwrite);
/* Points ck_root/latest at the checkpoint folder `name` (a relative link, replaced atomically). */
int train_run_point_latest(const char *ck_root, const char *name);
/* The folder of a checkpoint that holds a reset reference (kl.reset_every). */
#define CHECKPOINT_REFERENCE_DIR "reference"
/* Removes one checkpoint folder (its plain files and its reset reference): an old one of the same
 * step, a half-written one, or one past checkpoint.keep_last. */
void train_run_remove_checkpoint(const char *dir);
/* Removes the oldest checkpoints of the run folder root beyond the newest keep (0: none), never
 * the one of step newest. */
void train_run_keep_last(const char *root, int keep, long newest);
#endif
