/* Where a model lives on a backend: or1_dmodel's placements (whole fp32 weights, bf16 weights
 * with fp32 masters, a shard of the masters, frozen for inference), the transfers between the
 * host mirror and the backend (push, pull, gradients), the device collectives over ranks
 * (all-reduce, reduce-scatter, all-gather), the norms, and the AdamW step on the whole model
 * or on a master range. */
#include "or1/core.h"
#include "or1/model.h"

#include "dmodel.h"

#include <stdlib.h>
#include <string.h>

/* The device twin of a pointer into the host model's parameter buffer (NULL stays NULL). */
static float *twin(const float *host_base, const float *p, float *dev_base) {
    return p ? dev_base + (p - host_base) : NULL;
}

/* Weight (or gradient) views over dev_base in the host model's layout. */
static void bind_views(const or1_dmodel *dm, or1_weights *dst, float *dev_base) {
    const or1_weights *src = &dm->host->w;
    const float *hb = dm->host->params;
    dst->embed = twin(hb, src->embed, dev_base);
    dst->norm = twin(hb, src->norm, dev_base);
    dst->lm_head = twin(hb, src->lm_head, dev_base);
    dst->layer = or1_calloc((size_t)dm->cfg.layers, sizeof *dst->layer);
    for (int i = 0; i < dm->cfg.layers; i++)
        for (int f = 0; f < OR1_L_FIELDS; f++) dst->layer[i].f[f] = twin(hb, src->layer[i].f[f], dev_base);
}

/* The bf16 twin of a host parameter pointer (NULL stays NULL). */
static const or1_bf16 *twin_bf16(const or1_dmodel *dm, const float *p) {
    return p ? dm->wb + (p - dm->host->params) : NULL;
}

/* bf16 views of the matrices over wb (all NULL without wb). */
static void bind_bf16(or1_dmodel *dm) {
    const or1_weights *src = &dm->host->w;
    dm->h.layer = or1_calloc((size_t)dm->cfg.layers, sizeof *dm->h.layer);
    if (!dm->wb) return;
    dm->h.embed = twin_bf16(dm, src->embed), dm->h.lm_head = twin_bf16(dm, src->lm_head);
    for (int i = 0; i < dm->cfg.layers; i++)
        for (int f = 0; f < OR1_L_FIELDS; f++)
            if (model_layer_field_kind(f) == T_MATRIX) dm->h.layer[i].f[f] = twin_bf16(dm, src->layer[i].f[f]);
}

/* Appends the vector p of n floats (if the model has it) to the sharded model's fp32 copy. */
static void add_seg(or1_dmodel *dm, const float *p, size_t n) {
    if (!p) return;
    dm->segs[dm->n_segs++] = (vec_seg){.off = (size_t)(p - dm->host->params), .n = n, .at = dm->vec_n};
    dm->vec_n += n;
}

/* The norms and biases a sharded model keeps in fp32 (every layer's vector fields, then the
 * final norm). */
static void list_segs(or1_dmodel *dm) {
    const or1_model_config *c = &dm->cfg;
    dm->segs = or1_calloc((size_t)OR1_L_FIELDS * c->layers + 1, sizeof *dm->segs);
    for (int i = 0; i < c->layers; i++)
        for (int f = 0; f < OR1_L_FIELDS; f++)
            if (model_layer_field_kind(f) != T_MATRIX) add_seg(dm, dm->host->w.layer[i].f[f], model_layer_field_numel(c, f));
    add_seg(dm, dm->host->w.norm, (size_t)c->hidden);
}

/* Where a host vector lives in the sharded model's fp32 copy (NULL: not a vector, or absent). */
static float *vec_at(const or1_dmodel *dm, const float *p) {
    for (int k = 0; p && k < dm->n_segs; k++)
        if (dm->segs[k].off == (size_t)(p - dm->host->params)) return dm->vec + dm->segs[k].at;
    return NULL;
}

/* A sharded model's fp32 views: its norms and biases in vec, no matrices. */
static void bind_vec_views(or1_dmodel *dm) {
    const or1_weights *src = &dm->host->w;
    dm->w.norm = vec_at(dm, src->norm);
    dm->w.layer = or1_calloc((size_t)dm->cfg.layers, sizeof *dm->w.layer);
    for (int i = 0; i < dm->cfg.layers; i++)
        for (int f = 0; f < OR1_L_FIELDS; f++)
            if (model_layer_field_kind(f) != T_MATRIX) dm->w.layer[i].f[f] = vec_at(dm, src->layer[i].f[f]);
}

/* The fp32 weights: the host arrays or a whole copy, or a sharded model's masters and vectors. */
static int alloc_weights(or1_dmodel *dm) {
    const or1_backend_ops *op = dm->op;
    if (!dm->sharded) {
        dm->params = op->host_memory ? dm->host->params : op->alloc(dm->be, dm->n * sizeof(float));
        if (dm->params) bind_views(dm, &dm->w, dm->params);
        return dm->params ? 0 : -1;
    }
    list_segs(dm);
    dm->master = op->alloc(dm->be, (dm->hi - dm->lo) * sizeof(float));
    dm->vec = dm->master ? op->alloc(dm->be, dm->vec_n * sizeof(float)) : NULL;
    if (!dm->vec) return -1;
    bind_vec_views(dm);
    return 0;
}

/* Places m on be: fp32 weights (or a shard of masters), bf16 weights in bf16 precision, and
 * the gradients unless frozen; the host arrays are used in place on a host-memory backend. */
static or1_dmodel *place(or1_backend *be, or1_model *m, bool sharded, size_t lo, size_t hi, bool frozen) {
    or1_dmodel *dm = or1_calloc(1, sizeof *dm);
    dm->be = be, dm->op = be->ops, dm->host = m, dm->cfg = m->cfg, dm->n = m->n_floats;
    dm->sharded = sharded, dm->lo = lo, dm->hi = hi;
    size_t bytes = dm->n * sizeof(float);
    if (!frozen) dm->grads = dm->op->host_memory ? or1_model_grads(m) : dm->op->alloc(be, bytes);
    int rc = frozen || dm->grads ? alloc_weights(dm) : -1;
    if (rc == 0 && be->bf16) {
        dm->wb = dm->op->alloc(be, dm->n * sizeof(or1_bf16));
        if (!dm->wb) rc = -1;
    }
    if (rc == 0) {
        if (dm->grads) bind_views(dm, &dm->g, dm->grads);
        bind_bf16(dm);
    }
    if (rc || or1_dmodel_push(dm)) {
        or1_fail_ctx("%s model (%.2f GiB of parameters)", dm->op->name, (double)bytes / (1 << 30));
        or1_dmodel_free(dm);
        return NULL;
    }
    return dm;
}

/* Places m on be with its whole fp32 weights. */
or1_dmodel *or1_dmodel_new(or1_backend *be, or1_model *m) { return place(be, m, false, 0, m->n_floats, false); }

/* Places m for inference: no gradients; in bf16 no fp32 matrices (a shard of no masters). */
or1_dmodel *or1_dmodel_new_frozen(or1_backend *be, or1_model *m) {
    return place(be, m, be->bf16, 0, be->bf16 ? 0 : m->n_floats, true);
}

/* Places m on a bf16 backend with fp32 masters of [lo, hi) alone. */
or1_dmodel *or1_dmodel_new_sharded(or1_backend *be, or1_model *m, size_t lo, size_t hi) {
    if (!be->bf16) {
        or1_fail("%s model: fp32 masters can be sharded only in bf16 precision (in fp32 they are the weights)",
                 be->ops->name);
        return NULL;
    }
    if (lo > hi || hi > m->n_floats) {
        or1_fail("%s model: a master shard [%zu, %zu) of %zu parameters", be->ops->name, lo, hi, m->n_floats);
        return NULL;
    }
    return place(be, m, true, lo, hi, false);
}

/* Releases every buffer the model owns (never the host model's arrays). */
void or1_dmodel_free(or1_dmodel *dm) {
    if (!dm) return;
    const or1_backend_ops *op = dm->op;
    op->sync(dm->be);
    if (!op->host_memory) {
        void *own[] = {dm->params, dm->grads, dm->m, dm->v};
        for (size_t i = 0; i < sizeof own / sizeof *own; i++) op->release(dm->be, own[i]);
    }
    void *ws[] = {dm->mem, dm->ibuf, dm->kv, dm->logits, dm->dec, dm->states, dm->wb, dm->master, dm->vec};
    for (size_t i = 0; i < sizeof ws / sizeof *ws; i++) op->release(dm->be, ws[i]);
    free(dm->w.layer);
    free(dm->g.layer);
    free(dm->h.layer);
    free(dm->segs);
    free(dm->l);
    free(dm);
}

/* The model's config.json settings. */
const or1_model_config *or1_dmodel_config(const or1_dmodel *dm) { return &dm->cfg; }

/* The backend the model lives on. */
or1_backend *or1_dmodel_backend(const or1_dmodel *dm) { return dm->be; }

/* The host mirror. */
or1_model *or1_dmodel_host(const or1_dmodel *dm) { return dm->host; }

/* A sharded model's norms and biases from the host parameters, packed and uploaded. */
static int upload_vec(or1_dmodel *dm) {
    float *pack = or1_alloc_floats(dm->vec_n ? dm->vec_n : 1);
    for (int k = 0; k < dm->n_segs; k++)
        memcpy(pack + dm->segs[k].at, dm->host->params + dm->segs[k].off, dm->segs[k].n * sizeof(float));
    int rc = dm->op->upload(dm->be, dm->vec, pack, dm->vec_n * sizeof(float));
    free(pack);
    return rc;
}

/* A sharded model's bf16 weights from the host parameters, rounded on the host a chunk at a
 * time (no whole fp32 copy on the device). */
static int upload_bf16(or1_dmodel *dm) {
    enum { CHUNK = 1 << 22 };
    or1_bf16 *buf = or1_malloc((dm->n < CHUNK ? dm->n : CHUNK) * sizeof *buf + 1);
    int rc = 0;
    for (size_t i = 0; i < dm->n && !rc; i += CHUNK) {
        size_t k = dm->n - i < CHUNK ? dm->n - i : CHUNK;
        or1_bf16_from_f32(buf, dm->host->params + i, k);
        rc = dm->op->upload(dm->be, dm->wb + i, buf, k * sizeof *buf);
    }
    free(buf);
    return rc;
}

/* Host parameters to the weights (a sharded model: its masters, vectors and bf16 weights;
 * else the fp32 weights and their bf16 copy), and attached moments. */
int or1_dmodel_push(or1_dmodel *dm) {
    const or1_backend_ops *op = dm->op;
    const float *hp = dm->host->params;
    if (dm->sharded) {
        if (op->upload(dm->be, dm->master, hp + dm->lo, (dm->hi - dm->lo) * sizeof(float)) || upload_vec(dm) ||
            upload_bf16(dm))
            return -1;
    } else {
        if (!op->host_memory && op->upload(dm->be, dm->params, hp, dm->n * sizeof(float))) return -1;
        if (dm->wb) op->to_bf16(dm->be, dm->wb, dm->params, dm->n);
    }
    size_t mb = dm->opt ? dm->opt->n * sizeof(float) : 0;
    if (!op->host_memory && dm->m &&
        (op->upload(dm->be, dm->m, dm->opt->m, mb) || op->upload(dm->be, dm->v, dm->opt->v, mb)))
        return -1;
    return op->sync(dm->be);
}

/* Whether the model has gradients; fails naming what needed them otherwise. */
int model_has_grads(const or1_dmodel *dm, const char *what) {
    if (dm->grads) return 1;
    return or1_fail("%s model placed for inference has no gradients (%s)", dm->op->name, what);
}

/* Host gradients (e.g. summed across processes) to the backend. */
int or1_dmodel_push_grads(or1_dmodel *dm) {
    if (model_has_grads(dm, "push") < 0) return -1;
    if (dm->op->host_memory) return 0;
    return dm->op->upload(dm->be, dm->grads, or1_model_grads(dm->host), dm->n * sizeof(float));
}

/* Parameters (a sharded model: its master range) and attached moments back to the host mirror
 * (the gradients stay: or1_dmodel_pull_grads brings them). */
int or1_dmodel_pull(or1_dmodel *dm) {
    const or1_backend_ops *op = dm->op;
    if (dm->sharded &&
        op->download(dm->be, dm->host->params + dm->lo, dm->master, (dm->hi - dm->lo) * sizeof(float)))
        return -1;
    if (op->host_memory) return op->sync(dm->be);
    if (!dm->sharded && op->download(dm->be, dm->host->params, dm->params, dm->n * sizeof(float))) return -1;
    size_t mb = dm->opt ? dm->opt->n * sizeof(float) : 0;
    if (dm->m && (op->download(dm->be, dm->opt->m, dm->m, mb) || op->download(dm->be, dm->opt->v, dm->v, mb)))
        return -1;
    return 0;
}

/* The gradients alone back to the host mirror. */
int or1_dmodel_pull_grads(or1_dmodel *dm) {
    if (model_has_grads(dm, "pull") < 0) return -1;
    if (dm->op->host_memory) return dm->op->sync(dm->be);
    return dm->op->download(dm->be, or1_model_grads(dm->host), dm->grads, dm->n * sizeof(float));
}

/* Zeroes the gradients (queued). */
void or1_dmodel_zero_grad(or1_dmodel *dm) {
    if (dm->grads) dm->op->zero(dm->be, dm->grads, dm->n * sizeof(float));
}

/* The gradients' global L2 norm. */
double or1_dmodel_grad_norm(or1_dmodel *dm) {
    return model_has_grads(dm, "norm") < 0 ? -1 : dm->op->grad_norm(dm->be, dm->grads, dm->n);
}

/* The parameters' global L2 norm (a sharded model's: its masters'): NaN or infinite as soon as
 * one weight is. */
double or1_dmodel_param_norm(or1_dmodel *dm) {
    if (dm->sharded) return dm->op->grad_norm(dm->be, dm->master, dm->hi - dm->lo);
    return dm->op->grad_norm(dm->be, dm->params, dm->n);
}

/* The L2 norm of the gradients' range [lo, hi). */
double or1_dmodel_grad_norm_range(or1_dmodel *dm, size_t lo, size_t hi) {
    return model_has_grads(dm, "norm") < 0 ? -1 : dm->op->grad_norm(dm->be, dm->grads + lo, hi - lo);
}

/* Attaches opt's moments (for n parameters): used in place on a host-memory backend, else
 * copied to it. */
static int attach_optimizer(or1_dmodel *dm, or1_adamw *opt, size_t n) {
    if (dm->opt == opt) return 0;
    if (opt->n != n) return or1_fail("optimizer state for %zu parameters, the update covers %zu", opt->n, n);
    const or1_backend_ops *op = dm->op;
    size_t bytes = n * sizeof(float);
    if (!op->host_memory) {
        op->release(dm->be, dm->m);
        op->release(dm->be, dm->v);
        dm->m = op->alloc(dm->be, bytes);
        dm->v = dm->m ? op->alloc(dm->be, bytes) : NULL;
        if (!dm->v || op->upload(dm->be, dm->m, opt->m, bytes) || op->upload(dm->be, dm->v, opt->v, bytes))
            return or1_fail_ctx("%s model: AdamW moments", op->name);
    } else {
        dm->m = opt->m, dm->v = opt->v;
    }
    dm->opt = opt;
    return 0;
}

/* Norm, optional clipping, one AdamW step, refreshed weight copies, zeroed gradients. */
int or1_dmodel_step(or1_dmodel *dm, or1_adamw *opt, const or1_adamw_cfg *c, double max_norm, double *norm) {
    double gn = or1_dmodel_grad_norm(dm);
    if (gn < 0) return -1;
    if (norm) *norm = gn;
    return or1_dmodel_step_range(dm, opt, c, 0, dm->n, gn, max_norm);
}

/* A sharded model's norms and biases inside its master range, copied from the masters (the
 * rest of vec is left as it is). */
static void vec_from_masters(or1_dmodel *dm) {
    for (int k = 0; k < dm->n_segs; k++) {
        const vec_seg *s = &dm->segs[k];
        size_t a = s->off > dm->lo ? s->off : dm->lo, b = s->off + s->n < dm->hi ? s->off + s->n : dm->hi;
        if (a < b)
            dm->op->copy(dm->be, dm->vec + s->at + (a - s->off), dm->master + (a - dm->lo), (b - a) * sizeof(float));
    }
}

/* The compute weights of [lo, hi) after the fp32 ones changed there: the bf16 weights, and a
 * sharded model's vectors. */
static void refresh_range(or1_dmodel *dm, size_t lo, size_t hi) {
    if (!dm->wb) return;
    dm->op->to_bf16(dm->be, dm->wb + lo, dm->sharded ? dm->master : dm->params + lo, hi - lo);
    if (dm->sharded) vec_from_masters(dm);
}

/* Clipping of the range by the given global norm, AdamW on the range alone, then zeroed
 * gradients (the other ranges belong to other ranks under ZeRO stage 1). */
int or1_dmodel_step_range(or1_dmodel *dm, or1_adamw *opt, const or1_adamw_cfg *c, size_t lo, size_t hi,
                          double norm, double max_norm) {
    const or1_backend_ops *op = dm->op;
    if (model_has_grads(dm, "optimizer step") < 0) return -1;
    if (lo > hi || hi > dm->n) return or1_fail("optimizer step over [%zu, %zu) of %zu parameters", lo, hi, dm->n);
    if (dm->sharded && (lo != dm->lo || hi != dm->hi))
        return or1_fail("optimizer step over [%zu, %zu): this model holds the masters of [%zu, %zu) alone", lo, hi,
                        dm->lo, dm->hi);
    if (attach_optimizer(dm, opt, hi - lo)) return -1;
    if (max_norm > 0) op->clip(dm->be, dm->grads + lo, hi - lo, norm, max_norm);
    opt->step++;
    float *p = dm->sharded ? dm->master : dm->params + lo;
    op->adamw(dm->be, p, dm->m, dm->v, dm->grads + lo, hi - lo, (long)opt->step, c);
    refresh_range(dm, lo, hi);
    or1_dmodel_zero_grad(dm);
    return op->sync(dm->be);
}

/* Whether the backend runs collectives itself (and the model has gradients); fails naming
 * what is missing otherwise. */
static int has_collectives(const or1_dmodel *dm) {
    if (model_has_grads(dm, "collectives") < 0) return -1;
    if (dm->op->allreduce && dm->op->reduce_scatter && dm->op->allgather) return 1;
    return or1_fail("%s backend: no device collectives (the host and MPI sum instead)", dm->op->name);
}

/* The gradients summed over the ranks on the device. */
int or1_dmodel_allreduce_grads(or1_dmodel *dm) {
    return has_collectives(dm) > 0 ? dm->op->allreduce(dm->be, dm->grads, dm->n) : -1;
}

/* Each rank's shard of the gradients summed over the ranks, in place. */
int or1_dmodel_reduce_scatter_grads(or1_dmodel *dm, const size_t *starts) {
    return has_collectives(dm) > 0 ? dm->op->reduce_scatter(dm->be, dm->grads, starts) : -1;
}

/* Every rank's shard of the weights to every rank: the fp32 ones and a fresh bf16 copy, or a
 * sharded model's bf16 weights and its vectors (each rank adds its masters' part into a zeroed
 * copy, so the sum is exact). */
int or1_dmodel_allgather_params(or1_dmodel *dm, const size_t *starts) {
    const or1_backend_ops *op = dm->op;
    if (has_collectives(dm) < 0) return -1;
    if (!dm->sharded) {
        if (op->allgather(dm->be, dm->params, sizeof(float), starts)) return -1;
        if (dm->wb) op->to_bf16(dm->be, dm->wb, dm->params, dm->n);
        return op->sync(dm->be);
    }
    if (op->allgather(dm->be, dm->wb, sizeof(or1_bf16), starts)) return -1;
    op->zero(dm->be, dm->vec, dm->vec_n * sizeof(float));
    vec_from_masters(dm);
    return op->allreduce(dm->be, dm->vec, dm->vec_n);
}
