/* AdamW with PyTorch's semantics, global grad-norm clipping, and optimizer state files. */
#include "or1/core.h"
#include "or1/io.h"
#include "or1/kernels.h"
#include "or1/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Zeroed first and second moments for n parameters. */
void or1_adamw_init(or1_adamw *o, size_t n) {
    o->m = or1_alloc_floats(n);
    o->v = or1_alloc_floats(n);
    o->n = n;
    o->step = 0;
}

void or1_adamw_free(or1_adamw *o) {
    free(o->m);
    free(o->v);
    memset(o, 0, sizeof *o);
}

/* One step, in torch.optim.AdamW's order (the update is or1_adamw_update). */
void or1_adamw_step(or1_adamw *o, float *params, const float *grads, const or1_adamw_cfg *c) {
    o->step++;
    or1_adamw_update(params, o->m, o->v, grads, o->n, (long)o->step, c->lr, c->beta1, c->beta2, c->eps,
                     c->weight_decay);
}

/* sqrt(sum g^2), accumulated in double. */
double or1_grad_norm(const float *g, size_t n) {
    double s = 0;
    #pragma omp parallel for reduction(+ : s) schedule(static)
    for (size_t i = 0; i < n; i++) s += (double)g[i] * g[i];
    return sqrt(s);
}

/* Multiplies by min(1, max_norm / (norm + 1e-6)), as clip_grad_norm_ does. */
void or1_clip_grad_norm(float *g, size_t n, double norm, double max_norm) {
    double coef = max_norm / (norm + 1e-6);
    if (coef >= 1.0) return;
    float c = (float)coef;
    #pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) g[i] *= c;
}

/* Names "exp_avg.<param>" / "exp_avg_sq.<param>" for the state tensors. */
static void state_names(const or1_model *m, char (*names)[112]) {
    for (int i = 0; i < m->n_p; i++) {
        snprintf(names[i], 112, "exp_avg.%s", m->p[i].name);
        snprintf(names[m->n_p + i], 112, "exp_avg_sq.%s", m->p[i].name);
    }
}

/* Writes DIR/optimizer.safetensors (F32) with the step count in its metadata. */
int or1_adamw_save(const or1_adamw *o, const or1_model *m, const char *dir) {
    int n = m->n_p;
    char (*names)[112] = or1_malloc((size_t)2 * n * sizeof *names);
    or1_st_tensor *t = or1_malloc((size_t)2 * n * sizeof *t);
    state_names(m, names);
    or1_model_tensors(m, o->m, t);
    or1_model_tensors(m, o->v, t + n);
    for (int i = 0; i < 2 * n; i++) t[i].name = names[i];
    char step[32];
    snprintf(step, sizeof step, "%lld", (long long)o->step);
    or1_st_kv meta[2] = {{"step", step}, {"optimizer", "adamw"}};
    char *path = or1_path_join(dir, "optimizer.safetensors");
    int rc = or1_st_write(path, t, (size_t)2 * n, OR1_F32, meta, 2);
    free(path);
    free(t);
    free(names);
    return rc;
}

/* Reads DIR/optimizer.safetensors if present, checking every moment's name and shape. */
int or1_adamw_load(or1_adamw *o, const or1_model *m, const char *dir) {
    char *path = or1_path_join(dir, "optimizer.safetensors");
    if (!or1_is_file(path)) {
        free(path);
        return 0;
    }
    or1_st_file f;
    int rc = or1_st_open(&f, path);
    free(path);
    if (rc) return -1;
    const char *step = or1_st_meta(&f, "step");
    char *end = NULL;
    long long s = step ? strtoll(step, &end, 10) : -1;
    if (!step || *end || s < 0) rc = or1_fail("%s: metadata \"step\" missing or invalid", f.path);
    char (*names)[112] = or1_malloc((size_t)2 * m->n_p * sizeof *names);
    state_names(m, names);
    for (int i = 0; rc == 0 && i < 2 * m->n_p; i++) {
        const or1_param *p = &m->p[i % m->n_p];
        const or1_st_entry *e = or1_st_find(&f, names[i]);
        float *dst = (i < m->n_p ? o->m : o->v) + p->offset;
        rc = e ? or1_st_read_f32(&f, e, p->shape, p->ndim, dst) : or1_fail("%s: missing tensor \"%s\"", f.path, names[i]);
    }
    if (rc == 0) o->step = s;
    free(names);
    or1_st_close(&f);
    return rc == 0 ? 1 : -1;
}
