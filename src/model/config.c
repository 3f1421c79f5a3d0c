/* config.json of a Hugging Face Qwen2 / Llama checkpoint, validated key by key. */
#include "or1/core.h"
#include "or1/io.h"
#include "or1/model.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

enum { DIM_MAX = 1 << 20 };

/* Reads the architecture-specific keys (model type, biases, unsupported features). */
static int parse_arch(or1_model_config *c, const cJSON *j, const char *path) {
    const char *type = or1_json_str(j, "model_type", path);
    if (!type) return -1;
    if (strcmp(type, "qwen2") == 0) {
        c->arch = OR1_ARCH_QWEN2;
        c->qkv_bias = true;
    } else if (strcmp(type, "llama") == 0 || strcmp(type, "qwen3") == 0) {
        /* attention_bias gives q, k, v and o biases alike; Qwen3 adds a norm of each q and k head */
        c->arch = type[0] == 'l' ? OR1_ARCH_LLAMA : OR1_ARCH_QWEN3;
        c->qk_norm = c->arch == OR1_ARCH_QWEN3;
        c->qkv_bias = false;
        if (or1_json_bool_opt(j, "attention_bias", &c->qkv_bias, path)) return -1;
        c->o_bias = c->qkv_bias;
        bool mlp_bias = false;
        if (or1_json_bool_opt(j, "mlp_bias", &mlp_bias, path)) return -1;
        if (mlp_bias) return or1_fail("%s: mlp_bias is not supported", path);
    } else {
        return or1_fail("%s: model_type \"%s\" is not supported (qwen2, qwen3, llama)", path, type);
    }
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(j, "hidden_act");
    if (act && !(cJSON_IsString(act) && strcmp(act->valuestring, "silu") == 0))
        return or1_fail("%s: hidden_act must be \"silu\"", path);
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(j, "rope_scaling");
    if (rs && !cJSON_IsNull(rs)) return or1_fail("%s: rope_scaling is not supported", path);
    bool sliding = false;
    if (or1_json_bool_opt(j, "use_sliding_window", &sliding, path)) return -1;
    if (sliding) return or1_fail("%s: use_sliding_window is not supported", path);
    return 0;
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

/* Reads the floating-point and boolean keys with the architectures' defaults. */
static int parse_scalars(or1_model_config *c, const cJSON *j, const char *path) {
    double eps = 1e-6, theta = 10000.0;
    if (or1_json_num_opt(j, "rms_norm_eps", &eps, path) || or1_json_num_opt(j, "rope_theta", &theta, path))
        return -1;
    if (!(eps > 0 && eps < 1)) return or1_fail("%s: rms_norm_eps must be in (0, 1)", path);
    if (!(theta > 1)) return or1_fail("%s: rope_theta must be > 1", path);
    c->rms_eps = (float)eps;
    c->rope_theta = (float)theta;
    c->tied = false;
    return or1_json_bool_opt(j, "tie_word_embeddings", &c->tied, path);
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
    int rc = -1;
    if (!cJSON_IsObject(j)) or1_fail("%s: expected a JSON object", path);
    else if (parse_arch(c, j, path) == 0 && parse_dims(c, j, path) == 0 &&
             parse_scalars(c, j, path) == 0 && parse_eos(c, j, path) == 0)
        rc = 0;
    cJSON_Delete(j);
    return rc;
}

/* Adds the eos_token_id of a generation_config.json, when the file exists. */
int or1_model_config_add_generation_eos(or1_model_config *c, const char *path) {
    if (!or1_is_file(path)) return 0;
    char *text;
    size_t len;
    if (or1_read_file(path, 16 << 20, &text, &len)) return -1;
    cJSON *j = or1_json_parse(text, len, path);
    free(text);
    if (!j) return -1;
    int rc = cJSON_IsObject(j) ? parse_eos(c, j, path) : or1_fail("%s: expected a JSON object", path);
    cJSON_Delete(j);
    return rc;
}
