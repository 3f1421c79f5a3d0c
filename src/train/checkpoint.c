/* Checkpoints: writing one (atomically, with its checksums and the optimizer state gathered
 * to rank 0; removing one is the run folder's, run_dir.c), the reference of a ProRL reset, and reading back what a resume
 * needs (trainer_state.json, a reset reference). */
#include "or1/core.h"
#include "or1/io.h"
#include "or1/io_gguf.h"
#include "internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


/* True if path is a folder. */
static bool is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* trainer_state.json: step, stage filter mark, controller, sampler (with its records). In an
 * asynchronous run the sampler and its filter mark are the rollout's after the pending
 * batches, and async_next_batch the step whose batch the rollout makes first on resume. */
static cJSON *state_json(const trainer *t) {
    cJSON *s = cJSON_CreateObject();
    const async_state *a = &t->async;
    cJSON_AddNumberToObject(s, "step", (double)t->step);
    cJSON_AddNumberToObject(s, "filtered_stage", (double)(a->on ? a->filtered_stage : t->filtered_stage));
    cJSON_AddItemToObject(s, "entropy", or1_entropy_state_json(&t->ent));
    cJSON *data = a->on && a->data_state ? cJSON_Parse(a->data_state) : NULL;
    cJSON_AddItemToObject(s, "data", data ? data : or1_data_state_json(t->data));
    if (a->on) cJSON_AddNumberToObject(s, "async_next_batch", (double)(a->received + 1));
    return s;
}

/* Writes the small text files of a checkpoint folder. */
static int write_state_files(const trainer *t, const char *dir) {
    cJSON *s = state_json(t);
    char *text = cJSON_Print(s), *yaml = or1_train_config_yaml(t->cfg);
    cJSON_Delete(s);
    char *p1 = or1_path_join(dir, "trainer_state.json"), *p2 = or1_path_join(dir, "config.yaml");
    int rc = or1_write_file_atomic(p1, text, strlen(text));
    if (rc == 0) rc = or1_write_file_atomic(p2, yaml, strlen(yaml));
    free(p1), free(p2), free(text), free(yaml);
    return rc;
}

/* Puts the tokenizer's files into the checkpoint: copies when they live outside the model
 * folder (or1_model_save copied the model folder's own), written from the metadata when the
 * tokenizer is a GGUF file. */
static int copy_tokenizer(const trainer *t, const char *dir) {
    const char *tp = or1_train_tokenizer_path(t->cfg);
    if (strcmp(tp, t->cfg->model.path) == 0 && !or1_gguf_is_gguf(tp)) return 0;
    return or1_tokenizer_carry(tp, dir);
}

/* A reset reference (kl.reset_every) goes into the checkpoint's reference/ folder in f32, so
 * that a resumed run compares with the same policy. */
static int save_reference(const trainer *t, const char *dir) {
    if (!t->ref_reset) return 0;
    char *ref = or1_path_join(dir, CHECKPOINT_REFERENCE_DIR);
    int rc = or1_mkdir_p(ref) || or1_model_save(&t->ref, ref, OR1_F32, t->cfg->model.path);
    free(ref);
    return rc ? -1 : 0;
}

/* Reference reset (ProRL, arXiv 2505.24864, "reference policy reset"): the reference model becomes a copy of the
 * current policy, so the KL term measures the distance from here on; with kl.reset_optimizer
 * the AdamW moments and step count start over as well. Every rank does the same. */
int train_reset_reference(trainer *t) {
    if (t->ref.n_floats != t->m.n_floats)
        return or1_fail("kl.reset_every: the reference has %zu parameters and the policy %zu", t->ref.n_floats,
                        t->m.n_floats);
    if (train_update_params_to_host(t)) return -1;
    memcpy(t->ref.params, t->m.params, t->m.n_floats * sizeof(float));
    if (or1_dmodel_push(t->ref_dm)) return -1;
    t->ref_reset = true;
    if (t->cfg->kl.reset_optimizer) {
        memset(t->opt.m, 0, t->opt.n * sizeof(float));
        memset(t->opt.v, 0, t->opt.n * sizeof(float));
        t->opt.step = 0;
        if (or1_dmodel_push(t->dm)) return -1;
    }
    if (t->d->rank == 0)
        fprintf(stderr, "train: step %ld: the KL reference is now the current policy%s\n", t->step,
                t->cfg->kl.reset_optimizer ? " (AdamW state reset)" : "");
    return 0;
}

/* Rank 0's part of save_checkpoint, with the whole optimizer state. */
static int write_checkpoint(trainer *t, const or1_adamw *opt) {
    char name[64];
    snprintf(name, sizeof name, "step-%06ld", t->step);
    char *root = or1_path_join(t->cfg->output_dir, "checkpoints"), *dir = or1_path_join(root, name);
    size_t n = strlen(dir) + 16;
    char *tmp = or1_malloc(n);
    snprintf(tmp, n, "%s.tmp", dir);
    train_run_remove_checkpoint(tmp);
    int rc = or1_mkdir_p(tmp);
    if (rc == 0) rc = or1_model_save(&t->m, tmp, t->cfg->checkpoint.dtype, t->cfg->model.path);
    if (rc == 0) rc = copy_tokenizer(t, tmp);
    if (rc == 0) rc = or1_adamw_save(opt, &t->m, tmp);
    if (rc == 0) rc = write_state_files(t, tmp);
    if (rc == 0) rc = train_async_save_pending(t, tmp);
    if (rc == 0) rc = save_reference(t, tmp);
    if (rc == 0) rc = or1_checksums_write(tmp);
    if (rc == 0) {
        train_run_remove_checkpoint(dir);
        if (rename(tmp, dir) != 0) rc = or1_fail("%s: rename failed: %s", dir, strerror(errno));
    }
    if (rc) train_run_remove_checkpoint(tmp); /* a half-written folder (a full disk) frees its space */
    if (rc == 0) rc = train_run_point_latest(root, name);
    if (rc == 0) {
        train_run_keep_last(t->cfg->output_dir, t->cfg->checkpoint.keep_last, t->step);
        fprintf(stderr, "train: checkpoint %s\n", dir);
    }
    free(tmp), free(dir), free(root);
    return rc;
}

/* Saves a checkpoint: the optimizer state is gathered to rank 0, which writes
 * output/checkpoints/step-K in a temporary folder, renames it into place (a reader sees a
 * whole checkpoint or none), points the `latest` link at it, then removes the checkpoints
 * beyond checkpoint.keep_last. Every rank calls it. */
int train_save_checkpoint(trainer *t) {
    or1_adamw opt;
    bool owned;
    if (train_update_optimizer_gather(t, &opt, &owned)) return -1;
    int rc = t->d->rank == 0 ? write_checkpoint(t, &opt) : 0;
    if (owned) or1_adamw_free(&opt);
    return rc;
}

/* Reads trainer_state.json of a checkpoint into the trainer. */
int train_checkpoint_load_state(trainer *t, const char *dir) {
    char *path = or1_path_join(dir, "trainer_state.json"), *text;
    size_t len;
    int rc = or1_read_file(path, 1 << 30, &text, &len);
    cJSON *j = rc == 0 ? or1_json_parse(text, len, path) : NULL;
    if (rc == 0) free(text);
    rc = j ? 0 : -1;
    int64_t step = 0, fs = 0;
    if (rc == 0 && (or1_json_int(j, "step", 0, INT64_MAX, &step, path) || or1_json_int(j, "filtered_stage", 0, 1 << 20, &fs, path)))
        rc = -1;
    if (rc == 0 && or1_entropy_state_load(&t->ent, cJSON_GetObjectItemCaseSensitive(j, "entropy"), path)) rc = -1;
    if (rc == 0 && or1_data_state_load(t->data, cJSON_GetObjectItemCaseSensitive(j, "data"), path)) rc = -1;
    int64_t next = step + 1;
    if (rc == 0 && cJSON_GetObjectItemCaseSensitive(j, "async_next_batch") &&
        or1_json_int(j, "async_next_batch", step + 1, INT64_MAX, &next, path))
        rc = -1;
    t->async.next_batch = next;
    t->step = step;
    t->filtered_stage = (size_t)fs;
    cJSON_Delete(j);
    free(path);
    return rc;
}

/* The reference model of a KL run: the resumed checkpoint's reset reference (its reference/
 * folder) if it has one, else kl.reference, else model.path. */
int train_checkpoint_load_reference(trainer *t, const char *resume_dir) {
    const or1_train_config *cfg = t->cfg;
    char *saved = resume_dir ? or1_path_join(resume_dir, CHECKPOINT_REFERENCE_DIR) : NULL;
    t->ref_reset = saved && is_dir(saved);
    const char *from = t->ref_reset ? saved : *cfg->kl.reference ? cfg->kl.reference : cfg->model.path;
    int rc = or1_model_load(&t->ref, from);
    free(saved);
    if (rc) return -1;
    t->has_ref = true;
    return 0;
}
