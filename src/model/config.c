/* config.json of a Hugging Face Qwen2, Qwen3 or Llama checkpoint, validated key by key. */
#include "or1/core.h"
#include "or1/io.h"
#include "or1/model.h"

#include "arch.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { DIM_MAX = 1 << 20 };

/* Refuses the keys that would change the computation in a way or1 does not implement: sliding
 * windows (use_sliding_window, or layer_types naming anything but full attention), experts (a
 * mixture-of-experts model), a partial rotary embedding. Keys that change nothing are ignored. */
static int refuse_unsupported(const cJSON *j, const char *path) {
    bool sliding = false;
    if (or1_json_bool_opt(j, "use_sliding_window", &sliding, path)) return -1;
    if (sliding) return or1_fail("%s: use_sliding_window is not supported (full attention only)", path);
    const cJSON *lt = cJSON_GetObjectItemCaseSensitive(j, "layer_types"), *e;
    cJSON_ArrayForEach(e, lt) {
        if (!cJSON_IsString(e) || strcmp(e->valuestring, "full_attention") != 0)
            return or1_fail("%s: layer_types holds \"%s\": only full_attention layers are supported", path,
                            cJSON_IsString(e) ? e->valuestring : "(not a string)");
    }
    static const char *const experts[] = {"num_experts", "num_local_experts", "n_routed_experts"};
    for (size_t k = 0; k < sizeof experts / sizeof *experts; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, experts[k]);
        if (v && !cJSON_IsNull(v) && !(cJSON_IsNumber(v) && v->valuedouble == 0))
            return or1_fail("%s: %s: mixture-of-experts models are not supported (dense only)", path, experts[k]);
    }
    double partial = 1;
    if (or1_json_num_opt(j, "partial_rotary_factor", &partial, path)) return -1;
    if (partial != 1) return or1_fail("%s: partial_rotary_factor %g is not supported (1 only)", path, partial);
    return 0;
}

/* Reads the architecture-specific keys (model type, biases, unsupported features). */
static int parse_arch(or1_model_config *c, const cJSON *j, const char *path) {
    const char *type = or1_json_str(j, "model_type", path);
    if (!type) return -1;
    const arch_row *a = model_arch_find(type);
    char names[128];
    if (!a) return or1_fail("%s: model_type \"%s\" is not supported (%s)", path, type, model_arch_list(names, sizeof names));
    c->arch = a->arch;
    c->qk_norm = a->qk_norm;
    c->qkv_bias = a->fixed_qkv_bias;
    if (!a->fixed_qkv_bias) {
        /* attention_bias gives q, k, v and o biases alike */
        if (or1_json_bool_opt(j, "attention_bias", &c->qkv_bias, path)) return -1;
        c->o_bias = c->qkv_bias;
    }
    bool mlp_bias = false;
    if (or1_json_bool_opt(j, "mlp_bias", &mlp_bias, path)) return -1;
    if (mlp_bias) return or1_fail("%s: mlp_bias is not supported", path);
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(j, "hidden_act");
    if (act && !(cJSON_IsString(act) && strcmp(act->valuestring, "silu") == 0))
        return or1_fail("%s: hidden_act must be \"silu\"", path);
    return refuse_unsupported(j, path);
}

/* Appends an end-of-sequence id unless already listed. */
static void add_eos(or1_model_config *c, int32_t id) {
    for (int i = 0; i < c->n_eos; i++)
        if (c->eos[i] == id) return;
    if (c->n_eos < OR1_MAX_EOS) c->eos[c->n_eos++] = id;
}

/* eos_token_id: an integer, a list of integers, or absent. */
static int parse_eos(or1_model_config *c, const cJSON *j, const char *path) {
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "eos_token_id");
    if (!e || cJSON_IsNull(e)) return 0;
    if (cJSON_IsNumber(e)) {
        int64_t v;
        if (or1_json_int(j, "eos_token_id", 0, c->vocab - 1, &v, path)) return -1;
        add_eos(c, (int32_t)v);
        return 0;
    }
    if (!cJSON_IsArray(e)) return or1_fail("%s: eos_token_id must be an integer or a list", path);
    int32_t *ids;
    size_t n;
    if (or1_json_int_array(j, "eos_token_id", 0, c->vocab - 1, &ids, &n, path)) return -1;
    for (size_t i = 0; i < n; i++) add_eos(c, ids[i]);
    free(ids);
    return 0;
}

/* Reads the dimensions and checks they are consistent with each other. */
static int parse_dims(or1_model_config *c, const cJSON *j, const char *path) {
    int64_t h, in, l, nh, nkv, v, hd, mp = 32768;
    if (or1_json_int(j, "hidden_size", 1, DIM_MAX, &h, path) ||
        or1_json_int(j, "intermediate_size", 1, DIM_MAX, &in, path) ||
        or1_json_int(j, "num_hidden_layers", 1, 1024, &l, path) ||
        or1_json_int(j, "num_attention_heads", 1, 1024, &nh, path) ||
        or1_json_int(j, "vocab_size", 2, 1 << 24, &v, path))
        return -1;
    nkv = nh;
    hd = h / nh;
    if (or1_json_int_opt(j, "num_key_value_heads", 1, 1024, &nkv, path) ||
        or1_json_int_opt(j, "head_dim", 2, 4096, &hd, path) ||
        or1_json_int_opt(j, "max_position_embeddings", 1, 1 << 24, &mp, path))
        return -1;
    if (!cJSON_GetObjectItemCaseSensitive(j, "head_dim") && h % nh != 0)
        return or1_fail("%s: hidden_size %lld is not divisible by num_attention_heads %lld", path,
                        (long long)h, (long long)nh);
    if (nh % nkv != 0)
        return or1_fail("%s: num_attention_heads %lld is not divisible by num_key_value_heads %lld",
                        path, (long long)nh, (long long)nkv);
    if (hd % 2 != 0) return or1_fail("%s: head_dim %lld must be even for RoPE", path, (long long)hd);
    c->hidden = (int)h, c->intermediate = (int)in, c->layers = (int)l, c->heads = (int)nh;
    c->kv_heads = (int)nkv, c->vocab = (int)v, c->head_dim = (int)hd, c->max_pos = (int)mp;
    return 0;
}

/* YaRN's keys, with transformers' defaults: beta_fast and beta_slow (null or 0: 32 and 1, as
 * transformers' `or` takes them), mscale and mscale_all_dim (null or 0: unused), attention_factor
 * (null: derived from factor), truncate (true), original_max_position_embeddings (max_pos). The
 * factor stays as given even when it is not max_pos / original, as transformers 4.56 on and 5
 * use it (4.53-4.55 replaced it by that ratio). */
static int parse_yarn(or1_rope_scaling *r, const cJSON *o, int max_pos, const char *where) {
    int64_t orig = max_pos;
    r->type = OR1_ROPE_YARN;
    r->truncate = true;
    if (or1_json_num_opt(o, "beta_fast", &r->beta_fast, where) ||
        or1_json_num_opt(o, "beta_slow", &r->beta_slow, where) ||
        or1_json_num_opt(o, "mscale", &r->mscale, where) ||
        or1_json_num_opt(o, "mscale_all_dim", &r->mscale_all_dim, where) ||
        or1_json_num_opt(o, "attention_factor", &r->attention_factor, where) ||
        or1_json_bool_opt(o, "truncate", &r->truncate, where) ||
        or1_json_int_opt(o, "original_max_position_embeddings", 1, 1 << 24, &orig, where))
        return -1;
    r->beta_fast = r->beta_fast != 0 ? r->beta_fast : 32;
    r->beta_slow = r->beta_slow != 0 ? r->beta_slow : 1;
    if (!(r->beta_slow > 0 && r->beta_fast >= r->beta_slow && isfinite(r->beta_fast)))
        return or1_fail("%s: yarn needs 0 < beta_slow <= beta_fast (got beta_fast %g, beta_slow %g)", where,
                        r->beta_fast, r->beta_slow);
    if (!(r->mscale >= 0 && r->mscale_all_dim >= 0 && isfinite(r->mscale) && isfinite(r->mscale_all_dim)))
        return or1_fail("%s: yarn's mscale and mscale_all_dim must be finite and >= 0", where);
    const cJSON *af = cJSON_GetObjectItemCaseSensitive(o, "attention_factor");
    if (af && !cJSON_IsNull(af) && !(r->attention_factor > 0 && isfinite(r->attention_factor)))
        return or1_fail("%s: attention_factor %g must be finite and > 0", where, r->attention_factor);
    r->original_max_pos = (int)orig;
    return 0;
}

/* The scaling of a rope_scaling or rope_parameters object (where names it for errors): its
 * rope_type (or type) and that type's keys; an unknown type is refused. */
static int parse_rope_scaling(or1_rope_scaling *r, const cJSON *o, int max_pos, const char *where) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "rope_type");
    if (!t) t = cJSON_GetObjectItemCaseSensitive(o, "type");
    if (!t || cJSON_IsNull(t)) return or1_fail("%s: rope_type (or type) is missing", where);
    if (!cJSON_IsString(t)) return or1_fail("%s: rope_type must be a string", where);
    const char *type = t->valuestring;
    memset(r, 0, sizeof *r);
    if (strcmp(type, "default") == 0) return 0;
    if (strcmp(type, "linear") != 0 && strcmp(type, "llama3") != 0 && strcmp(type, "yarn") != 0)
        return or1_fail("%s: rope_type \"%s\" is not supported (default, linear, llama3, yarn)", where, type);
    if (or1_json_num(o, "factor", &r->factor, where)) return -1;
    if (!(r->factor >= 1 && isfinite(r->factor)))
        return or1_fail("%s: factor %g must be finite and >= 1", where, r->factor);
    if (strcmp(type, "yarn") == 0) return parse_yarn(r, o, max_pos, where);
    r->type = OR1_ROPE_LINEAR;
    if (strcmp(type, "linear") == 0) return 0;
    int64_t orig = max_pos;
    r->type = OR1_ROPE_LLAMA3;
    if (or1_json_num(o, "low_freq_factor", &r->low_freq_factor, where) ||
        or1_json_num(o, "high_freq_factor", &r->high_freq_factor, where) ||
        or1_json_int_opt(o, "original_max_position_embeddings", 1, 1 << 24, &orig, where))
        return -1;
    if (!(r->low_freq_factor > 0 && r->high_freq_factor > r->low_freq_factor))
        return or1_fail("%s: llama3 scaling needs 0 < low_freq_factor < high_freq_factor", where);
    r->original_max_pos = (int)orig;
    return 0;
}

/* RoPE: rope_theta and rope_scaling as transformers 4 writes them, or rope_parameters (theta and
 * scaling in one object) as transformers 5 does; a theta or a scaling given both ways must agree. */
static int parse_rope(or1_model_config *c, const cJSON *j, const char *path) {
    double theta = 10000.0, theta5 = 0;
    char where[1100];
    const cJSON *rp = cJSON_GetObjectItemCaseSensitive(j, "rope_parameters");
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(j, "rope_scaling");
    if (or1_json_num_opt(j, "rope_theta", &theta, path)) return -1;
    if (rp && !cJSON_IsNull(rp)) {
        snprintf(where, sizeof where, "%s: rope_parameters", path);
        if (!cJSON_IsObject(rp)) return or1_fail("%s: must be an object", where);
        if (or1_json_num_opt(rp, "rope_theta", &theta5, where)) return -1;
        if (theta5 && cJSON_GetObjectItemCaseSensitive(j, "rope_theta") && theta5 != theta)
            return or1_fail("%s: rope_theta %g disagrees with the top-level rope_theta %g", where, theta5, theta);
        if (theta5) theta = theta5;
        if (parse_rope_scaling(&c->rope, rp, c->max_pos, where)) return -1;
    }
    if (rs && !cJSON_IsNull(rs)) {
        snprintf(where, sizeof where, "%s: rope_scaling", path);
        if (!cJSON_IsObject(rs)) return or1_fail("%s: must be an object", where);
        or1_rope_scaling r;
        if (parse_rope_scaling(&r, rs, c->max_pos, where)) return -1;
        if (rp && !cJSON_IsNull(rp) && memcmp(&r, &c->rope, sizeof r) != 0)
            return or1_fail("%s: disagrees with rope_parameters", where);
        c->rope = r;
    }
    if (!(theta > 1)) return or1_fail("%s: rope_theta must be > 1", path);
    c->rope_theta = (float)theta;
    return 0;
}

/* Reads the floating-point and boolean keys with the architectures' defaults. */
static int parse_scalars(or1_model_config *c, const cJSON *j, const char *path) {
    double eps = 1e-6;
    if (or1_json_num_opt(j, "rms_norm_eps", &eps, path) || parse_rope(c, j, path)) return -1;
    if (!(eps > 0 && eps < 1)) return or1_fail("%s: rms_norm_eps must be in (0, 1)", path);
    c->rms_eps = (float)eps;
    c->tied = false;
    return or1_json_bool_opt(j, "tie_word_embeddings", &c->tied, path);
}

/* Validates a config.json object (where names it in messages: a file, or a GGUF file's
 * metadata turned into the same keys). */
int or1_model_config_parse(or1_model_config *c, const cJSON *j, const char *where) {
    memset(c, 0, sizeof *c);
    if (!cJSON_IsObject(j)) return or1_fail("%s: expected a JSON object", where);
    if (parse_arch(c, j, where) || parse_dims(c, j, where) || parse_scalars(c, j, where) || parse_eos(c, j, where))
        return -1;
    return 0;
}

/* Loads and validates config.json. */
int or1_model_config_load(or1_model_config *c, const char *path) {
    memset(c, 0, sizeof *c);
    char *text;
    size_t len;
    if (or1_read_file(path, 16 << 20, &text, &len)) return -1;
    cJSON *j = or1_json_parse(text, len, path);
    free(text);
    if (!j) return -1;
    int rc = or1_model_config_parse(c, j, path);
    cJSON_Delete(j);
    return rc;
}

/* A generation_config.json as a JSON object, or *j NULL when the file does not exist. */
static int read_generation_config(const char *path, cJSON **j) {
    *j = NULL;
    if (!or1_is_file(path)) return 0;
    char *text;
    size_t len;
    if (or1_read_file(path, 16 << 20, &text, &len)) return -1;
    *j = or1_json_parse(text, len, path);
    free(text);
    if (!*j) return -1;
    if (cJSON_IsObject(*j)) return 0;
    cJSON_Delete(*j);
    *j = NULL;
    return or1_fail("%s: expected a JSON object", path);
}

/* One optional sampling key of a generation_config.json in [lo, hi] (null: unset). */
static int sampling_key(const cJSON *j, const char *key, double lo, double hi, bool *has, double *v,
                        const char *path) {
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, key);
    *has = e && !cJSON_IsNull(e);
    if (!*has) return 0;
    if (!cJSON_IsNumber(e) || !(e->valuedouble >= lo && e->valuedouble <= hi))
        return or1_fail("%s: %s must be a number in [%g, %g]", path, key, lo, hi);
    *v = e->valuedouble;
    return 0;
}

/* temperature, top_p and top_k, each where the file gives it. */
int or1_generation_sampling_load(const char *path, or1_generation_sampling *g) {
    memset(g, 0, sizeof *g);
    cJSON *j;
    if (read_generation_config(path, &j)) return -1;
    if (!j) return 0;
    double k = 0;
    int rc = sampling_key(j, "temperature", 0, 100, &g->has_temperature, &g->temperature, path) ||
             sampling_key(j, "top_p", 1e-6, 1, &g->has_top_p, &g->top_p, path) ||
             sampling_key(j, "top_k", 0, 1 << 30, &g->has_top_k, &k, path);
    if (rc == 0 && g->has_top_k && k != (int)k) rc = or1_fail("%s: top_k must be an integer", path);
    g->top_k = (int)k;
    cJSON_Delete(j);
    return rc ? -1 : 0;
}

/* Adds the eos_token_id of a generation_config.json, when the file exists. */
int or1_model_config_add_generation_eos(or1_model_config *c, const char *path) {
    cJSON *j;
    if (read_generation_config(path, &j)) return -1;
    int rc = j ? parse_eos(c, j, path) : 0;
    cJSON_Delete(j);
    return rc;
}
