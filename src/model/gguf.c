/* A model in a GGUF file (llama.cpp's format): its metadata read as the config.json it stands
 * for, its tensors under llama.cpp's names dequantized into the parameter buffer, Llama's q and k
 * rows put back in Hugging Face's order; and the way back, a model written as GGUF. */
#include "or1/core.h"
#include "or1/io.h"
#include "or1/model.h"

#include "arch.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One metadata key under "{arch}." and the config.json key it stands for; integer or float;
 * required or not. The same rows read a file and write one. */
typedef struct {
    const char *gguf, *hf;
    bool is_float, required;
} meta_row;

static const meta_row META[] = {
    {"block_count", "num_hidden_layers", false, true},
    {"context_length", "max_position_embeddings", false, false},
    {"embedding_length", "hidden_size", false, true},
    {"feed_forward_length", "intermediate_size", false, true},
    {"attention.head_count", "num_attention_heads", false, true},
    {"attention.head_count_kv", "num_key_value_heads", false, false},
    {"attention.key_length", "head_dim", false, false},
    {"rope.freq_base", "rope_theta", true, false},
    {"attention.layer_norm_rms_epsilon", "rms_norm_eps", true, true},
    {"vocab_size", "vocab_size", false, false},
};
enum { N_META = sizeof META / sizeof *META };

/* Keys under "{arch}." that would change the computation in ways or1 does not implement. */
static const char *const REFUSED[] = {"expert_count", "attention.sliding_window", "rope.scaling.type",
                                      "rope.scale_linear", "attention.value_length_mla"};

/* The model-level tensors: Hugging Face name, GGUF name. */
static const char *const TOP_NAMES[][2] = {
    {"model.embed_tokens.weight", "token_embd.weight"},
    {"model.norm.weight", "output_norm.weight"},
    {"lm_head.weight", "output.weight"},
};

/* "{arch}.{suffix}" into buf. */
static const char *arch_key(char *buf, size_t n, const char *arch, const char *suffix) {
    snprintf(buf, n, "%s.%s", arch, suffix);
    return buf;
}

/* Copies the META keys present in f into config j; a required one missing is an error. */
static int meta_to_config(const or1_gguf_file *f, const char *arch, cJSON *j) {
    char key[160];
    for (int i = 0; i < N_META; i++) {
        const meta_row *r = &META[i];
        arch_key(key, sizeof key, arch, r->gguf);
        int rc;
        if (r->is_float) {
            double v;
            if ((rc = or1_gguf_get_float(f, key, &v)) == 0) cJSON_AddNumberToObject(j, r->hf, v);
        } else {
            int64_t v;
            if ((rc = or1_gguf_get_int(f, key, &v)) == 0) cJSON_AddNumberToObject(j, r->hf, (double)v);
        }
        if (rc < 0) return -1;
        if (rc == 1 && r->required) return or1_fail("%s: metadata key \"%s\" is missing", f->path, key);
    }
    return 0;
}

/* Refuses the features of REFUSED and a rotary dimension other than the head size (partial
 * RoPE), naming the key. */
static int refuse_features(const or1_gguf_file *f, const char *arch, const cJSON *j) {
    char key[160];
    for (size_t i = 0; i < sizeof REFUSED / sizeof *REFUSED; i++)
        if (or1_gguf_kv_find(f, arch_key(key, sizeof key, arch, REFUSED[i])))
            return or1_fail("%s: metadata key \"%s\" names a feature or1 does not implement", f->path, key);
    int64_t rot;
    int rc = or1_gguf_get_int(f, arch_key(key, sizeof key, arch, "rope.dimension_count"), &rot);
    if (rc < 0) return -1;
    const cJSON *hd = cJSON_GetObjectItemCaseSensitive(j, "head_dim");
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(j, "hidden_size"), *nh = cJSON_GetObjectItemCaseSensitive(j, "num_attention_heads");
    double head = hd ? hd->valuedouble : h->valuedouble / nh->valuedouble;
    if (rc == 0 && (double)rot != head)
        return or1_fail("%s: metadata key \"%s\" is %lld but heads have %g dims: partial RoPE is not supported",
                        f->path, key, (long long)rot, head);
    if (or1_gguf_tensor_find(f, "rope_freqs.weight"))
        return or1_fail("%s: tensor \"rope_freqs.weight\" (Llama 3.1 RoPE scaling factors) is not supported in GGUF "
                        "files yet: load the Hugging Face folder", f->path);
    return 0;
}

/* The special-token ids the config names: eos_token_id (with the end-of-turn id when it differs)
 * and bos_token_id. */
static int token_ids_to_config(const or1_gguf_file *f, cJSON *j) {
    int64_t eos, eot, bos;
    int re = or1_gguf_get_int(f, "tokenizer.ggml.eos_token_id", &eos);
    int rt = or1_gguf_get_int(f, "tokenizer.ggml.eot_token_id", &eot);
    int rb = or1_gguf_get_int(f, "tokenizer.ggml.bos_token_id", &bos);
    if (re < 0 || rt < 0 || rb < 0) return -1;
    if (rb == 0) cJSON_AddNumberToObject(j, "bos_token_id", (double)bos);
    if (re == 0 && (rt != 0 || eot == eos)) cJSON_AddNumberToObject(j, "eos_token_id", (double)eos);
    if (re == 0 && rt == 0 && eot != eos) {
        cJSON *a = cJSON_AddArrayToObject(j, "eos_token_id");
        cJSON_AddItemToArray(a, cJSON_CreateNumber((double)eos));
        cJSON_AddItemToArray(a, cJSON_CreateNumber((double)eot));
    }
    return 0;
}

/* The config.json object a GGUF file's metadata stands for: the architecture, the dimensions of
 * META, the vocabulary (vocab_size, else the embedding's rows), whether the head is tied (no
 * output.weight), Llama's attention_bias (q's bias present) and the special-token ids. */
int or1_model_gguf_config(const or1_gguf_file *f, cJSON **config) {
    *config = NULL;
    const char *arch;
    size_t alen;
    int rc = or1_gguf_get_str(f, "general.architecture", &arch, &alen);
    if (rc) return rc < 0 ? -1 : or1_fail("%s: metadata key \"general.architecture\" is missing", f->path);
    char a[64], names[128];
    snprintf(a, sizeof a, "%.*s", (int)(alen < 63 ? alen : 63), arch);
    const arch_row *row = model_arch_find(a);
    if (!row || alen >= 63)
        return or1_fail("%s: general.architecture \"%s\" is not supported (%s)", f->path, a,
                        model_arch_list(names, sizeof names));
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "model_type", a);
    cJSON_AddStringToObject(j, "hidden_act", "silu");
    rc = meta_to_config(f, a, j);
    if (rc == 0) rc = refuse_features(f, a, j);
    if (rc == 0 && !cJSON_GetObjectItemCaseSensitive(j, "vocab_size")) {
        const or1_gguf_tensor *e = or1_gguf_tensor_find(f, "token_embd.weight");
        if (!e) rc = or1_fail("%s: tensor \"token_embd.weight\" is missing", f->path);
        else cJSON_AddNumberToObject(j, "vocab_size", (double)e->ne[1]);
    }
    if (rc == 0) {
        cJSON_AddBoolToObject(j, "tie_word_embeddings", or1_gguf_tensor_find(f, "output.weight") == NULL);
        if (!row->fixed_qkv_bias)
            cJSON_AddBoolToObject(j, "attention_bias", or1_gguf_tensor_find(f, "blk.0.attn_q.bias") != NULL);
        rc = token_ids_to_config(f, j);
    }
    if (rc) {
        cJSON_Delete(j);
        return -1;
    }
    *config = j;
    return 0;
}

/* The GGUF name of a parameter (Hugging Face name) into buf, and its layer row (NULL for the
 * model-level tensors); -1 for a name neither table knows. */
static int gguf_name(const char *hf, char *buf, size_t n, const layer_tensor **row) {
    *row = NULL;
    for (size_t i = 0; i < sizeof TOP_NAMES / sizeof *TOP_NAMES; i++)
        if (strcmp(hf, TOP_NAMES[i][0]) == 0) {
            snprintf(buf, n, "%s", TOP_NAMES[i][1]);
            return 0;
        }
    int layer, used = 0;
    if (sscanf(hf, "model.layers.%d.%n", &layer, &used) != 1 || used == 0) return -1;
    for (int k = 0; k < MODEL_N_LAYER_TENSORS; k++)
        if (strcmp(hf + used, MODEL_LAYER_TENSORS[k].name) == 0) {
            *row = &MODEL_LAYER_TENSORS[k];
            snprintf(buf, n, "blk.%d.%s", layer, MODEL_LAYER_TENSORS[k].gguf);
            return 0;
        }
    return -1;
}

/* Heads of a q or k row's tensor under c (its rows are heads x head_dim). */
static int rope_heads(const or1_model_config *c, const layer_tensor *t) {
    return t->d0 == DIM_Q ? c->heads : c->kv_heads;
}

/* Moves the rows of each of n_heads heads of hd rows (each of width columns) between llama.cpp's
 * order (the two RoPE halves interleaved: row 2i + half) and Hugging Face's (row half * hd/2 + i):
 * to_hf picks the direction. */
static void permute_rows(float *x, int n_heads, int hd, size_t width, bool to_hf) {
    size_t head = (size_t)hd * width;
    float *tmp = or1_malloc(head * sizeof *tmp);
    for (int h = 0; h < n_heads; h++) {
        float *src = x + (size_t)h * head;
        for (int half = 0; half < 2; half++)
            for (int i = 0; i < hd / 2; i++) {
                size_t g = (size_t)(2 * i + half), f = (size_t)(half * (hd / 2) + i);
                memcpy(tmp + (to_hf ? f : g) * width, src + (to_hf ? g : f) * width, width * sizeof *tmp);
            }
        memcpy(src, tmp, head * sizeof *tmp);
    }
    free(tmp);
}

/* Whether parameter p's rows were permuted by llama.cpp's converter for this architecture. */
static bool is_permuted(const or1_model *m, const layer_tensor *row) {
    const arch_row *a = model_arch_find(model_arch_name(m->cfg.arch));
    return row && row->rope_rows && a && a->gguf_permuted;
}

/* Checks a GGUF tensor's shape against parameter p (ggml order: ne[0] is the row length). */
static int check_shape(const or1_gguf_file *f, const or1_gguf_tensor *t, const or1_param *p) {
    int64_t want0 = p->ndim == 2 ? p->shape[1] : p->shape[0], want1 = p->ndim == 2 ? p->shape[0] : 1;
    int64_t rest = 1;
    for (int d = 2; d < t->ndim; d++) rest *= t->ne[d];
    if (t->ne[0] != want0 || (t->ndim > 1 ? t->ne[1] : 1) != want1 || rest != 1)
        return or1_fail("%s: tensor \"%s\" has shape [%lld, %lld] (ggml order) where the config asks [%lld, %lld]",
                        f->path, t->name, (long long)t->ne[0], (long long)(t->ndim > 1 ? t->ne[1] : 1),
                        (long long)want0, (long long)want1);
    return 0;
}

/* Reads parameter p from f: found under its GGUF name, shape checked, dequantized, q/k rows put
 * back in Hugging Face's order where the converter permuted them. */
static int read_param(or1_model *m, const or1_gguf_file *f, const or1_param *p) {
    char name[128];
    const layer_tensor *row;
    if (gguf_name(p->name, name, sizeof name, &row))
        return or1_fail("%s: parameter \"%s\" has no GGUF name (src/model/arch.c)", f->path, p->name);
    const or1_gguf_tensor *t = or1_gguf_tensor_find(f, name);
    if (!t) return or1_fail("%s: tensor \"%s\" is missing", f->path, name);
    float *dst = m->params + p->offset;
    if (check_shape(f, t, p) || or1_gguf_read_f32(f, t, dst)) return -1;
    if (is_permuted(m, row)) {
        int heads = rope_heads(&m->cfg, row);
        permute_rows(dst, heads, m->cfg.head_dim, p->ndim == 2 ? (size_t)p->shape[1] : 1, true);
    }
    return 0;
}

/* Refuses a tensor of the file that no parameter reads (a feature or1 would silently drop). */
static int refuse_unread(const or1_model *m, const or1_gguf_file *f) {
    char name[128];
    const layer_tensor *row;
    for (size_t i = 0; i < f->n_tensors; i++) {
        bool used = false;
        for (int k = 0; k < m->n_p && !used; k++)
            used = gguf_name(m->p[k].name, name, sizeof name, &row) == 0 && strcmp(name, f->tensors[i].name) == 0;
        if (!used)
            return or1_fail("%s: tensor \"%s\" is not used by a %s model as the metadata describes it; refusing to "
                            "drop it", f->path, f->tensors[i].name, model_arch_name(m->cfg.arch));
    }
    return 0;
}

/* Loads a GGUF model file: the config from its metadata, then every parameter. */
int or1_model_load_gguf(or1_model *m, const char *path) {
    or1_gguf_file f;
    if (or1_gguf_open(&f, path)) return -1;
    cJSON *j = NULL;
    or1_model_config cfg;
    int rc = or1_model_gguf_config(&f, &j);
    if (rc == 0) rc = or1_model_config_parse(&cfg, j, path);
    cJSON_Delete(j);
    if (rc == 0) {
        or1_model_init(m, &cfg);
        for (int i = 0; rc == 0 && i < m->n_p; i++) rc = read_param(m, &f, &m->p[i]);
        if (rc == 0) rc = refuse_unread(m, &f);
        if (rc) or1_model_free(m);
    }
    or1_gguf_close(&f);
    return rc;
}

/* Writes the config.json a GGUF file's metadata stands for to path, atomically. */
int or1_model_gguf_write_config(const char *gguf_path, const char *path) {
    or1_gguf_file f;
    if (or1_gguf_open(&f, gguf_path)) return -1;
    cJSON *j = NULL;
    int rc = or1_model_gguf_config(&f, &j);
    or1_gguf_close(&f);
    if (rc) return -1;
    char *text = cJSON_Print(j);
    rc = or1_write_file_atomic(path, text, strlen(text));
    free(text);
    cJSON_Delete(j);
    return rc;
}

/* The "{arch}." metadata of a config, as META's rows name it (the inverse of meta_to_config). */
static void config_to_meta(const or1_model_config *c, or1_gguf_writer *w, const char *arch) {
    const double v[N_META] = {c->layers, c->max_pos, c->hidden, c->intermediate, c->heads, c->kv_heads,
                              c->head_dim, c->rope_theta, c->rms_eps, c->vocab};
    char key[160];
    for (int i = 0; i < N_META; i++) {
        arch_key(key, sizeof key, arch, META[i].gguf);
        if (META[i].is_float) or1_gguf_set_f32(w, key, (float)v[i]);
        else or1_gguf_set_u32(w, key, (uint32_t)v[i]);
    }
    or1_gguf_set_u32(w, arch_key(key, sizeof key, arch, "rope.dimension_count"), (uint32_t)c->head_dim);
}

/* Whether parameter p is written in the matrix type: 2-D tensors whose rows hold whole blocks
 * (Q8_0's 32); vectors stay F32 as llama.cpp keeps them. */
static bool quantizable(const or1_param *p, uint32_t type) {
    return p->ndim == 2 && (type != OR1_GGML_Q8_0 || p->shape[1] % 32 == 0);
}

/* Adds the model's metadata and tensors to w, matrices in type (F32, BF16, F16 or Q8_0). Llama's
 * q and k rows are permuted into llama.cpp's order in a copy; *keep (free() after
 * or1_gguf_write) holds those copies, which w reads at write time. */
int or1_model_gguf_add(const or1_model *m, or1_gguf_writer *w, uint32_t type, float **keep) {
    const or1_model_config *c = &m->cfg;
    if (c->rope.type != OR1_ROPE_NONE)
        return or1_fail("gguf: RoPE scaling (rope_scaling) is not written to GGUF files yet");
    const char *arch = model_arch_name(c->arch);
    or1_gguf_set_str(w, "general.architecture", arch, strlen(arch));
    or1_gguf_set_u32(w, "general.file_type", type == OR1_GGML_F32 ? 0 : type == OR1_GGML_F16 ? 1 : type == OR1_GGML_Q8_0 ? 7 : 32);
    if (type == OR1_GGML_Q8_0) or1_gguf_set_u32(w, "general.quantization_version", 2);
    config_to_meta(c, w, arch);
    size_t n_keep = 0, at = 0;
    const layer_tensor *row;
    char name[128];
    for (int i = 0; i < m->n_p; i++)
        if (gguf_name(m->p[i].name, name, sizeof name, &row) == 0 && is_permuted(m, row)) n_keep += m->p[i].numel;
    *keep = n_keep ? or1_alloc_floats(n_keep) : NULL;
    for (int i = 0; i < m->n_p; i++) {
        const or1_param *p = &m->p[i];
        if (gguf_name(p->name, name, sizeof name, &row))
            return or1_fail("gguf: parameter \"%s\" has no GGUF name (src/model/arch.c)", p->name);
        const float *data = m->params + p->offset;
        if (is_permuted(m, row)) {
            memcpy(*keep + at, data, p->numel * sizeof *data);
            permute_rows(*keep + at, rope_heads(c, row), c->head_dim, p->ndim == 2 ? (size_t)p->shape[1] : 1, false);
            data = *keep + at;
            at += p->numel;
        }
        int64_t ne[2] = {p->ndim == 2 ? p->shape[1] : p->shape[0], p->ndim == 2 ? p->shape[0] : 1};
        if (or1_gguf_add_tensor(w, name, data, p->ndim, ne, quantizable(p, type) ? type : OR1_GGML_F32)) return -1;
    }
    return 0;
}
