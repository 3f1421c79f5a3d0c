/* Parameter layout, initialization, randomization and freeing of a model. */
#include "or1/core.h"
#include "or1/io.h"
#include "or1/model.h"

#include "arch.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Appends one named tensor to the layout (within the table's size) and returns its offset. */
static size_t add_param(or1_model *m, const char *name, int64_t d0, int64_t d1) {
    if (m->n_p >= m->cap_p) {
        fprintf(stderr, "or1: parameter table of %d entries overrun by \"%s\" (src/model/arch.c)\n", m->cap_p, name);
        abort();
    }
    or1_param *p = &m->p[m->n_p++];
    snprintf(p->name, sizeof p->name, "%s", name);
    p->ndim = d1 ? 2 : 1;
    p->shape[0] = d0;
    p->shape[1] = d1;
    p->numel = (size_t)d0 * (size_t)(d1 ? d1 : 1);
    p->offset = m->n_floats;
    m->n_floats += p->numel;
    return p->offset;
}

/* Registers layer i's tensors under their Hugging Face names, in the table's order; off[f] gets
 * the offset of the tensor each field starts with. */
static void add_layer(or1_model *m, int i, size_t off[OR1_L_FIELDS]) {
    const or1_model_config *c = &m->cfg;
    char n[96];
    for (int k = 0; k < MODEL_N_LAYER_TENSORS; k++) {
        const layer_tensor *t = &MODEL_LAYER_TENSORS[k];
        if (!model_layer_has(c, t)) continue;
        snprintf(n, sizeof n, "model.layers.%d.%s", i, t->name);
        size_t o = add_param(m, n, model_layer_dim_size(c, t->d0), model_layer_dim_size(c, t->d1));
        if (t->field != NO_FIELD) off[t->field] = o;
    }
}

/* Points a weights struct into buf: the model's tensors and each layer's fields (present ones). */
static void bind(or1_weights *w, float *buf, const or1_model *m, size_t embed, size_t norm, size_t head,
                 size_t (*off)[OR1_L_FIELDS]) {
    w->embed = buf + embed;
    w->norm = buf + norm;
    w->lm_head = buf + head;
    w->layer = or1_calloc((size_t)m->cfg.layers, sizeof *w->layer);
    for (int i = 0; i < m->cfg.layers; i++)
        for (int f = 0; f < OR1_L_FIELDS; f++)
            w->layer[i].f[f] = model_layer_field_numel(&m->cfg, f) ? buf + off[i][f] : NULL;
}

/* Builds the layout and allocates zeroed parameters. */
void or1_model_init(or1_model *m, const or1_model_config *cfg) {
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    m->cap_p = model_tensor_count(cfg);
    m->p = or1_calloc((size_t)m->cap_p, sizeof *m->p);
    size_t embed = add_param(m, "model.embed_tokens.weight", cfg->vocab, cfg->hidden);
    size_t (*off)[OR1_L_FIELDS] = or1_calloc((size_t)cfg->layers, sizeof *off);
    for (int i = 0; i < cfg->layers; i++) add_layer(m, i, off[i]);
    size_t norm = add_param(m, "model.norm.weight", cfg->hidden, 0);
    size_t head = cfg->tied ? embed : add_param(m, "lm_head.weight", cfg->vocab, cfg->hidden);
    m->params = or1_alloc_floats(m->n_floats);
    bind(&m->w, m->params, m, embed, norm, head, off);
    free(off);
}

/* The gradients, made on first use. */
float *or1_model_grads(or1_model *m) {
    if (!m->grads) m->grads = or1_alloc_floats(m->n_floats);
    return m->grads;
}

/* Frees buffers and layout. */
void or1_model_free(or1_model *m) {
    free(m->params);
    free(m->grads);
    free(m->w.layer);
    free(m->p);
    memset(m, 0, sizeof *m);
}

/* Lists parameters as tensors to write, with data taken from buf. */
void or1_model_tensors(const or1_model *m, const float *buf, or1_st_tensor *out) {
    for (int i = 0; i < m->n_p; i++) {
        out[i].name = m->p[i].name;
        out[i].data = buf + m->p[i].offset;
        out[i].ndim = m->p[i].ndim;
        out[i].shape[0] = m->p[i].shape[0];
        out[i].shape[1] = m->p[i].shape[1];
    }
}

/* True if s ends with suffix. */
static bool ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* Each tensor draws from its own counter stream, so the weights depend only on the seed. */
void or1_model_randomize(or1_model *m, uint64_t seed, float std) {
    for (int i = 0; i < m->n_p; i++) {
        float *x = m->params + m->p[i].offset;
        bool norm = ends_with(m->p[i].name, "norm.weight"), bias = ends_with(m->p[i].name, ".bias");
        #pragma omp parallel for schedule(static)
        for (size_t k = 0; k < m->p[i].numel; k++)
            x[k] = norm ? 1.0f : bias ? 0.0f : (float)(std * or1_rand_normal(seed, (uint64_t)i, k));
    }
}
