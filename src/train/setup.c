/* Trainer set-up and tear-down: the model, tokenizer, data and validation rows, the reference,
 * the optimizer and controller (resumed from a checkpoint when asked), the device placement,
 * the code sandbox pool, and metrics.jsonl (cut back to the resumed step). */
#include "or1/core.h"
#include "or1/reward_sandbox.h"
#include "internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Keeps a metrics row when its step is at most *ctx. */
static int up_to_step(cJSON *row, void *ctx) {
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(row, "step");
    return cJSON_IsNumber(s) && s->valuedouble <= (double)*(const long *)ctx;
}

/* Keeps the metrics rows of steps up to the resumed one (rewritten atomically). */
static int trim_metrics(const char *path, long step) {
    return or1_is_file(path) ? or1_jsonl_rewrite(path, path, up_to_step, &step) : 0;
}

/* Opens metrics.jsonl on rank 0: trimmed on resume, fresh on a new run. */
static int open_metrics(trainer *t, bool resumed) {
    if (t->d->rank != 0 || t->async.rollout) return 0;
    if (or1_mkdir_p(t->cfg->output_dir)) return -1;
    char *path = or1_path_join(t->cfg->output_dir, "metrics.jsonl");
    int rc = resumed ? trim_metrics(path, t->step) : 0;
    if (rc == 0) t->metrics = fopen(path, resumed ? "a" : "w");
    if (rc == 0 && !t->metrics) rc = or1_fail("%s: cannot open: %s", path, strerror(errno));
    free(path);
    return rc;
}

/* Loads the validation rows (no filters, no shuffle). */
static int open_eval(trainer *t) {
    const or1_train_config *c = t->cfg;
    if (c->eval.n_files == 0) return 0;
    or1_data_file *files = or1_calloc(c->eval.n_files, sizeof *files);
    for (size_t i = 0; i < c->eval.n_files; i++) files[i] = (or1_data_file){.path = c->eval.files[i],
                                                                            .weight = 1};
    or1_data_opts o = {.files = files, .n_files = c->eval.n_files, .difficulty_model = NULL,
                       .difficulty_min = 0, .difficulty_max = 0, .keep_missing = true, .tok = t->tok,
                       .chat_template = c->model.chat_template,
                       .enable_thinking = or1_train_enable_thinking(c), .max_prompt_length = INT_MAX,
                       .shuffle = false, .seed = 0};
    t->eval_data = or1_data_load(&o);
    free(files);
    return t->eval_data ? 0 : -1;
}

/* True if any row of d is a code problem. */
static bool has_code(const or1_dataset *d) {
    for (size_t i = 0; d && i < or1_data_rows(d); i++)
        if (or1_data_row_at(d, (uint32_t)i)->code) return true;
    return false;
}

/* GiB of n bytes. */
static double gib(double n) { return n / 1073741824.0; }

/* What this rank holds on its device, printed once at the start: fp32 master weights (its
 * shard when sharded), bf16 weights in bf16 precision, gradients, AdamW moments (its shard under
 * ZeRO-1), the training workspace at the largest micro-batch, the rollout KV budget, and the
 * frozen KL reference (bf16 weights alone in bf16). */
static void report_memory(const trainer *t) {
    double n = (double)t->m.n_floats, masters = train_update_masters_sharded(t) ? (double)t->opt.n : n;
    bool bf16 = or1_backend_bf16(t->be);
    int micro = 0;
    for (size_t s = 0; s < t->cfg->n_stages; s++)
        if (or1_train_micro_tokens(t->cfg, s) > micro) micro = or1_train_micro_tokens(t->cfg, s);
    fprintf(stderr,
            "train: memory on rank %d (%s, %s): fp32 masters of %.0f of %.0f parameters %.3g GiB, bf16 weights "
            "%.3g GiB, gradients %.3g GiB, AdamW moments %.3g GiB, activations %.3g GiB at %d tokens, KV cache up "
            "to %.3g GiB, KL reference %.3g GiB\n",
            t->d->rank, or1_backend_name(t->be), bf16 ? "bf16 matmuls" : "fp32", masters, n, gib(masters * 4),
            gib(bf16 ? n * 2 : 0), gib(n * 4), gib(2.0 * (double)t->opt.n * sizeof(float)),
            gib((double)or1_dmodel_workspace_bytes(t->dm, micro)), micro, t->cfg->rollout.engine.kv_cache_gb,
            t->has_ref ? gib(n * (bf16 ? 2 : 4)) : 0.0);
}

/* The configured backend, with the model (and the reference) placed on it. */
static int open_device(trainer *t) {
    t->be = or1_backend_open(t->cfg->device, t->cfg->precision);
    if (!t->be) return or1_fail_ctx("keys \"device\" and \"precision\"");
    if (t->async.rollout) { /* samples only: the whole policy, no reference, no gradient sums */
        t->dm = or1_dmodel_new(t->be, &t->m);
        return t->dm ? 0 : -1;
    }
    t->dm = train_update_place_model(t);
    if (t->dm && t->has_ref) t->ref_dm = or1_dmodel_new_frozen(t->be, &t->ref);
    if (!t->dm || (t->has_ref && !t->ref_dm) || train_update_collectives_init(t)) return -1;
    or1_dmodel_set_recompute(t->dm, t->cfg->train.gradient_checkpointing);
    report_memory(t);
    return 0;
}

/* Loads model, tokenizer, data, reference, optimizer, controller; resumes if asked. */
int train_open(trainer *t, const or1_train_config *cfg, const or1_dist *d, const char *resume_dir,
               const async_state *as) {
    memset(t, 0, sizeof *t);
    t->cfg = cfg, t->d = d;
    if (as) t->async = *as;
    bool trains = !t->async.rollout;
    if (or1_model_load(&t->m, resume_dir ? resume_dir : cfg->model.path)) return -1;
    t->tok = or1_tokenizer_load(or1_train_tokenizer_path(cfg));
    if (!t->tok) return -1;
    or1_data_opts o = or1_train_data_opts(cfg, t->tok);
    o.max_prompt_length = or1_train_prompt_limit(cfg, t->m.cfg.max_pos);
    if (o.max_prompt_length < cfg->data.max_prompt_length && d->rank == 0)
        fprintf(stderr, "train: prompts over %d tokens are dropped (max_position_embeddings %d less the longest "
                        "context length), not the %d of data.max_prompt_length\n", o.max_prompt_length,
                t->m.cfg.max_pos, cfg->data.max_prompt_length);
    t->data = or1_data_load(&o);
    if (!t->data || open_eval(t)) return -1;
    if (trains && cfg->kl.enabled && train_checkpoint_load_reference(t, resume_dir)) return -1;
    if (trains) train_update_optimizer_init(t);
    or1_entropy_init(&t->ent, &cfg->entropy);
    if (resume_dir) {
        int got = trains ? train_update_optimizer_load(t, resume_dir) : 1;
        if (got == 0) or1_fail("%s: optimizer.safetensors is missing: the AdamW state cannot be resumed", resume_dir);
        if (got <= 0 || train_checkpoint_load_state(t, resume_dir) ||
            (t->async.on && trains && train_async_load_pending(t, resume_dir)))
            return or1_fail_ctx("resume from %s", resume_dir);
    }
    if (open_device(t)) return -1;
    if (has_code(t->data) || has_code(t->eval_data)) {
        t->pool = or1_sandbox_pool_new(cfg->reward.workers);
        if (!t->pool) return -1;
    }
    return open_metrics(t, resume_dir != NULL);
}

/* Frees everything trainer_open made. */
void train_close(trainer *t) {
    train_async_close(t);
    if (t->metrics) fclose(t->metrics);
    if (t->pool) or1_sandbox_pool_free(t->pool);
    or1_dmodel_free(t->dm);
    or1_dmodel_free(t->ref_dm);
    or1_backend_free(t->be);
    or1_adamw_free(&t->opt);
    if (t->has_ref) or1_model_free(&t->ref);
    or1_data_free(t->data);
    or1_data_free(t->eval_data);
    or1_tokenizer_free(t->tok);
    if (t->m.params) or1_model_free(&t->m);
}
