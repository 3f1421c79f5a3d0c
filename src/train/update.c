/* The optimizer update over the ranks, written once above the backend seam. Without
 * sharding every rank sums the whole gradient (all-reduce) and steps every parameter with
 * the whole AdamW state. With ZeRO stage 1 (train.zero: 1) the gradients are reduce-scattered,
 * each rank steps only its shard of the parameters with its shard of the moments (1/p of the
 * optimizer state), and the parameters are all-gathered; the clipping norm is the global one.
 * In bf16 precision the fp32 master weights are sharded too: each rank keeps the masters of its
 * shard alone, computes with whole bf16 weights, and the all-gather moves bf16 weights.
 * Checkpoints hold the whole state either way, so a run resumes with any rank count. */
#include "or1/core.h"
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether the device sums and gathers over the ranks itself (NCCL), set up by
 * train_update_collectives_init; else the host mirror goes through MPI. */
static bool on_device(const trainer *t) { return t->device_collectives; }

/* Rank 0's communicator id to every rank, then every rank joins (a collective). Backends
 * without device collectives, and single ranks, keep the host path. */
int train_update_collectives_init(trainer *t) {
    if (t->d->size <= 1) return 0;
    char id[512] = {0};
    int len = t->d->rank == 0 ? or1_dmodel_comm_id(t->dm, id, sizeof id) : 0;
    if (len < 0) return -1;
    or1_dist_bcast_bytes(t->d, &len, sizeof len);
    if (len == 0) return 0; /* no device collectives: the host mirror goes through MPI */
    or1_dist_bcast_bytes(t->d, id, sizeof id);
    if (or1_dmodel_comm_init(t->dm, id, t->d->rank, t->d->size)) return -1;
    t->device_collectives = true;
    fprintf(stderr, "train: rank %d sums gradients on the %s device\n", t->d->rank, or1_backend_name(t->be));
    return 0;
}

/* Whether this run shards the optimizer state (more than one rank and train.zero: 1). */
static bool sharded(const trainer *t) { return t->cfg->train.zero == 1 && t->d->size > 1; }

/* The parameter range whose optimizer state this rank holds ([0, n) unless sharded). */
static void update_range(const trainer *t, size_t *lo, size_t *hi) {
    if (sharded(t)) or1_dist_shard(t->d, t->m.n_floats, lo, hi);
    else *lo = 0, *hi = t->m.n_floats;
}

/* Whether this rank keeps fp32 masters of its shard alone (ZeRO stage 1 in bf16 precision,
 * where the weights the model computes with are not the masters). */
bool train_update_masters_sharded(const trainer *t) { return sharded(t) && or1_backend_bf16(t->be); }

/* The policy on the trainer's backend, its fp32 masters sharded when train_update_masters_sharded. */
or1_dmodel *train_update_place_model(trainer *t) {
    if (!train_update_masters_sharded(t)) return or1_dmodel_new(t->be, &t->m);
    size_t lo, hi;
    update_range(t, &lo, &hi);
    return or1_dmodel_new_sharded(t->be, &t->m, lo, hi);
}

/* The model back into the host mirror; sharded masters are then gathered over MPI. */
int train_update_params_to_host(trainer *t) {
    if (or1_dmodel_pull(t->dm)) return -1;
    if (train_update_masters_sharded(t)) or1_dist_allgather_f32(t->d, t->m.params, t->m.n_floats);
    return 0;
}

/* The fp32 weights' global norm: each rank's masters' squared norm summed when sharded, so
 * every rank sees a non-finite weight wherever it is. */
double train_update_param_norm(trainer *t) {
    double norm = or1_dmodel_param_norm(t->dm);
    if (norm < 0 || !train_update_masters_sharded(t)) return norm;
    double sq = norm * norm;
    or1_dist_sum_f64(t->d, &sq, 1);
    return sqrt(sq);
}

/* A gradient norm that is NaN or infinite stops the update before any weight moves. */
static int finite_norm(double norm) {
    if (isfinite(norm)) return 0;
    return or1_fail("the gradient norm is %g (a diverging run or non-finite inputs); no weight was updated", norm);
}

/* All-reduce of the gradients (on the device, or through the host mirror), the norm checked,
 * then the ordinary step. */
static int update_replicated(trainer *t, const or1_adamw_cfg *ac, double *norm) {
    if (on_device(t) && or1_dmodel_allreduce_grads(t->dm)) return -1;
    if (!on_device(t) && t->d->size > 1) {
        if (or1_dmodel_pull_grads(t->dm)) return -1;
        or1_dist_sum_f32(t->d, t->m.grads, t->m.n_floats);
        if (or1_dmodel_push_grads(t->dm)) return -1;
    }
    *norm = or1_dmodel_grad_norm(t->dm);
    if (*norm < 0 || finite_norm(*norm)) return -1;
    return or1_dmodel_step_range(t->dm, &t->opt, ac, 0, t->m.n_floats, *norm, t->cfg->train.grad_clip);
}

/* Reduce-scatter, the global norm from the shards' squared norms, the shard's step, then
 * the parameters all-gathered and pushed back to the device. */
static int update_zero1(trainer *t, const or1_adamw_cfg *ac, double *norm) {
    size_t lo, hi, n = t->m.n_floats;
    update_range(t, &lo, &hi);
    if (on_device(t)) {
        size_t *starts = or1_dist_shard_starts(t->d, t->m.n_floats);
        int rc = or1_dmodel_reduce_scatter_grads(t->dm, starts);
        free(starts);
        if (rc) return -1;
    } else {
        if (or1_dmodel_pull_grads(t->dm)) return -1;
        float *shard = or1_alloc_floats(hi - lo ? hi - lo : 1);
        or1_dist_reduce_scatter_f32(t->d, t->m.grads, shard, n);
        memcpy(t->m.grads + lo, shard, (hi - lo) * sizeof *shard);
        free(shard);
        if (or1_dmodel_push_grads(t->dm)) return -1;
    }
    double local = or1_dmodel_grad_norm_range(t->dm, lo, hi);
    if (local < 0) return -1;
    double sq = local * local;
    or1_dist_sum_f64(t->d, &sq, 1);
    *norm = sqrt(sq);
    if (finite_norm(*norm)) return -1;
    if (or1_dmodel_step_range(t->dm, &t->opt, ac, lo, hi, *norm, t->cfg->train.grad_clip)) return -1;
    if (on_device(t)) {
        size_t *starts = or1_dist_shard_starts(t->d, t->m.n_floats);
        int rc = or1_dmodel_allgather_params(t->dm, starts);
        free(starts);
        return rc;
    }
    if (or1_dmodel_pull(t->dm)) return -1;
    or1_dist_allgather_f32(t->d, t->m.params, n);
    return or1_dmodel_push(t->dm);
}

/* One optimizer update from the gradients of this rank's samples; *norm gets the global
 * pre-clip gradient norm. */
int train_update_apply(trainer *t, const or1_adamw_cfg *ac, double *norm) {
    return sharded(t) ? update_zero1(t, ac, norm) : update_replicated(t, ac, norm);
}

/* The optimizer state this rank holds: zeroed moments for its range. */
void train_update_optimizer_init(trainer *t) {
    size_t lo, hi;
    update_range(t, &lo, &hi);
    or1_adamw_init(&t->opt, hi - lo);
    fprintf(stderr, "train: rank %d holds the optimizer state of %zu of %zu parameters (%.3g GiB)\n", t->d->rank,
            hi - lo, t->m.n_floats, 2.0 * (double)(hi - lo) * sizeof(float) / 1073741824.0);
}

/* Reads a checkpoint's whole optimizer state and keeps this rank's range: 1 loaded, 0 no
 * file, -1 error. */
int train_update_optimizer_load(trainer *t, const char *dir) {
    size_t lo, hi;
    update_range(t, &lo, &hi);
    if (lo == 0 && hi == t->m.n_floats) return or1_adamw_load(&t->opt, &t->m, dir);
    or1_adamw full;
    or1_adamw_init(&full, t->m.n_floats);
    int got = or1_adamw_load(&full, &t->m, dir);
    if (got == 1) {
        memcpy(t->opt.m, full.m + lo, (hi - lo) * sizeof(float));
        memcpy(t->opt.v, full.v + lo, (hi - lo) * sizeof(float));
        t->opt.step = full.step;
    }
    or1_adamw_free(&full);
    return got;
}

/* The whole optimizer state on rank 0 and the whole parameters in every host model (a
 * collective: every rank calls it). *full is the state itself when it is not sharded, else a
 * gathered copy to free with or1_adamw_free. */
int train_update_optimizer_gather(trainer *t, or1_adamw *full, bool *owned) {
    if (train_update_params_to_host(t)) return -1;
    *owned = sharded(t);
    if (!*owned) {
        *full = t->opt;
        return 0;
    }
    memset(full, 0, sizeof *full);
    if (t->d->rank == 0) or1_adamw_init(full, t->m.n_floats);
    or1_dist_gather_f32(t->d, t->opt.m, full->m, t->m.n_floats);
    or1_dist_gather_f32(t->d, t->opt.v, full->v, t->m.n_floats);
    full->step = t->opt.step;
    return 0;
}
