/* Model files: loading a checkpoint (single or sharded safetensors, or GGUF), reading its
 * config, and saving one with the side files Hugging Face tools need. */
#include "or1/core.h"
#include "or1/io.h"
#include "or1/model.h"

#include "arch.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Where weights come from: one safetensors file, or shards named by an index. */
typedef struct {
    char *dir;
    cJSON *index;       /* weight_map object, or NULL for a single file */
    char *index_path;
    or1_st_file *files; /* opened lazily */
    char **file_names;
    int n_files;
} weight_source;

/* Opens the index if there is one, else model.safetensors. */
static int source_open(weight_source *s, const char *dir) {
    memset(s, 0, sizeof *s);
    s->dir = or1_strdup(dir);
    s->index_path = or1_path_join(dir, "model.safetensors.index.json");
    if (!or1_is_file(s->index_path)) return 0;
    char *text;
    size_t len;
    if (or1_read_file(s->index_path, 256 << 20, &text, &len)) return -1;
    cJSON *j = or1_json_parse(text, len, s->index_path);
    free(text);
    if (!j) return -1;
    cJSON *wm = cJSON_DetachItemFromObjectCaseSensitive(j, "weight_map");
    cJSON_Delete(j);
    if (!cJSON_IsObject(wm)) {
        cJSON_Delete(wm);
        return or1_fail("%s: missing \"weight_map\" object", s->index_path);
    }
    s->index = wm;
    return 0;
}

/* Returns the opened file called name (opening it on first use). */
static or1_st_file *source_file(weight_source *s, const char *name) {
    for (int i = 0; i < s->n_files; i++)
        if (strcmp(s->file_names[i], name) == 0) return &s->files[i];
    if (strchr(name, '/') || strcmp(name, "..") == 0) {
        or1_fail("%s: shard name \"%s\" must be a plain file name", s->index_path, name);
        return NULL;
    }
    s->files = or1_realloc(s->files, (size_t)(s->n_files + 1) * sizeof *s->files);
    s->file_names = or1_realloc(s->file_names, (size_t)(s->n_files + 1) * sizeof(char *));
    char *path = or1_path_join(s->dir, name);
    int rc = or1_st_open(&s->files[s->n_files], path);
    free(path);
    if (rc) return NULL;
    s->file_names[s->n_files] = or1_strdup(name);
    return &s->files[s->n_files++];
}

/* Finds the file holding a tensor and its entry there. */
static int source_find(weight_source *s, const char *tensor, or1_st_file **f, const or1_st_entry **e) {
    const char *fname = "model.safetensors";
    if (s->index) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(s->index, tensor);
        if (!v) return or1_fail("%s: tensor \"%s\" is missing from weight_map", s->index_path, tensor);
        if (!cJSON_IsString(v)) return or1_fail("%s: weight_map[\"%s\"] must be a string", s->index_path, tensor);
        fname = v->valuestring;
    }
    *f = source_file(s, fname);
    if (!*f) return -1;
    *e = or1_st_find(*f, tensor);
    if (!*e) return or1_fail("%s: missing tensor \"%s\"", (*f)->path, tensor);
    return 0;
}

/* Closes every opened shard. */
static void source_close(weight_source *s) {
    for (int i = 0; i < s->n_files; i++) {
        or1_st_close(&s->files[i]);
        free(s->file_names[i]);
    }
    free(s->files);
    free(s->file_names);
    cJSON_Delete(s->index);
    free(s->index_path);
    free(s->dir);
}

/* A weight that is NaN or infinite (a corrupt or diverged checkpoint) refuses the load, naming
 * the file, the tensor and the element, instead of spreading through every later result. */
static int finite_tensor(const char *path, const char *name, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return or1_fail("%s: tensor \"%s\" element %zu is %g: non-finite weights are refused", path, name, i,
                            (double)x[i]);
    return 0;
}

/* Whether name is one of the model's parameters, or a tensor transformers also ignores: a rotary
 * table some conversions saved (recomputed from the config) or the head of a tied model (the
 * embedding serves). */
static bool is_param(const or1_model *m, const char *name) {
    for (int i = 0; i < m->n_p; i++)
        if (strcmp(m->p[i].name, name) == 0) return true;
    size_t n = strlen(name), k = strlen(".rotary_emb.inv_freq");
    return (n > k && strcmp(name + n - k, ".rotary_emb.inv_freq") == 0) ||
           (m->cfg.tied && strcmp(name, "lm_head.weight") == 0);
}

/* Refuses a checkpoint holding a tensor the architecture of its config.json does not use (Qwen3
 * weights labelled llama would otherwise lose their q_norm and k_norm without a word). */
static int refuse_unused(weight_source *s, const or1_model *m) {
    const char *type = model_arch_name(m->cfg.arch);
    if (s->index) {
        const cJSON *e;
        cJSON_ArrayForEach(e, s->index) {
            if (!is_param(m, e->string))
                return or1_fail("%s: tensor \"%s\" is not used by a %s model as config.json describes it; refusing "
                                "to drop it", s->index_path, e->string, type);
        }
        return 0;
    }
    const or1_st_file *f = source_file(s, "model.safetensors");
    for (size_t i = 0; f && i < f->n; i++)
        if (!is_param(m, f->entries[i].name))
            return or1_fail("%s: tensor \"%s\" is not used by a %s model as config.json describes it; refusing to "
                            "drop it", f->path, f->entries[i].name, type);
    return f ? 0 : -1;
}

/* The files of a checkpoint a model load reads: its configs, weights and shard index. */
static bool model_file(const char *name) {
    return strcmp(name, "config.json") == 0 || strcmp(name, "generation_config.json") == 0 ||
           strncmp(name, "model", 5) == 0;
}

/* Loads config.json, then every parameter tensor with its shape checked and its values finite,
 * and refuses tensors the model does not use. A checkpoint's files are first checked against its
 * checksums.json (a folder without one, such as a Hugging Face download, loads unchecked). */
int or1_model_load(or1_model *m, const char *dir) {
    if (or1_gguf_is_gguf(dir)) return or1_model_load_gguf(m, dir);
    if (or1_checksums_check(dir, model_file) < 0) return -1;
    or1_model_config cfg;
    int rc = or1_model_config_read(&cfg, dir);
    if (rc) return -1;
    weight_source s;
    if (source_open(&s, dir)) {
        source_close(&s);
        return -1;
    }
    or1_model_init(m, &cfg);
    for (int i = 0; rc == 0 && i < m->n_p; i++) {
        or1_st_file *f = NULL;
        const or1_st_entry *e = NULL;
        rc = source_find(&s, m->p[i].name, &f, &e);
        if (rc == 0) rc = or1_st_read_f32(f, e, m->p[i].shape, m->p[i].ndim, m->params + m->p[i].offset);
        if (rc == 0) rc = finite_tensor(f->path, m->p[i].name, m->params + m->p[i].offset, m->p[i].numel);
    }
    if (rc == 0) rc = refuse_unused(&s, m);
    source_close(&s);
    if (rc) or1_model_free(m);
    return rc;
}

/* Files that travel with a checkpoint so Hugging Face tools can load it. */
static const char *side_files[] = {"config.json", "generation_config.json", "tokenizer.json",
                                   "tokenizer_config.json", "special_tokens_map.json"};

/* The config of a model folder (config.json, generation_config.json's EOS ids) or GGUF file. */
int or1_model_config_read(or1_model_config *c, const char *model) {
    if (or1_gguf_is_gguf(model)) {
        or1_gguf_file f;
        if (or1_gguf_open(&f, model)) return -1;
        cJSON *j = NULL;
        int rc = or1_model_gguf_config(&f, &j);
        or1_gguf_close(&f);
        if (rc == 0) rc = or1_model_config_parse(c, j, model);
        cJSON_Delete(j);
        return rc;
    }
    char *cpath = or1_path_join(model, "config.json"), *gpath = or1_path_join(model, "generation_config.json");
    int rc = or1_model_config_load(c, cpath);
    if (rc == 0) rc = or1_model_config_add_generation_eos(c, gpath);
    free(cpath);
    free(gpath);
    return rc;
}

/* Writes model.safetensors and the side files of src_dir (each atomically): copies of a
 * folder's, or the config.json of a GGUF file's metadata (the tokenizer's files are the
 * tokenizer module's: or1_tokenizer_carry). */
int or1_model_save(const or1_model *m, const char *dir, or1_dtype dtype, const char *src_dir) {
    if (or1_mkdir_p(dir)) return -1;
    or1_st_tensor *t = or1_malloc((size_t)m->n_p * sizeof *t);
    or1_model_tensors(m, m->params, t);
    or1_st_kv meta = {.key = "format", .value = "pt"};
    char *path = or1_path_join(dir, "model.safetensors");
    int rc = or1_st_write(path, t, (size_t)m->n_p, dtype, &meta, 1);
    free(path);
    free(t);
    char *stale = or1_path_join(dir, "model.safetensors.index.json");
    if (rc == 0) unlink(stale); /* a shard index left there would shadow the new file */
    free(stale);
    if (rc == 0 && src_dir && or1_gguf_is_gguf(src_dir)) {
        char *cfg = or1_path_join(dir, "config.json");
        rc = or1_model_gguf_write_config(src_dir, cfg);
        free(cfg);
        src_dir = NULL;
    }
    for (size_t i = 0; rc == 0 && src_dir && strcmp(src_dir, dir) != 0 && i < sizeof side_files / sizeof *side_files; i++) {
        char *src = or1_path_join(src_dir, side_files[i]), *dst = or1_path_join(dir, side_files[i]);
        if (or1_is_file(src)) rc = or1_copy_file_atomic(src, dst);
        free(src);
        free(dst);
    }
    return rc;
}
