/* The decoder layer's tensors (see arch.h): one row each, in buffer order. */
#include "arch.h"

#include <assert.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

const arch_row MODEL_ARCHS[] = {
    {"qwen2", OR1_ARCH_QWEN2, true, false, false},
    {"qwen3", OR1_ARCH_QWEN3, false, true, false},
    {"llama", OR1_ARCH_LLAMA, false, false, true},
};
const int MODEL_N_ARCHS = sizeof MODEL_ARCHS / sizeof *MODEL_ARCHS;

const arch_row *model_arch_find(const char *model_type) {
    for (int i = 0; i < MODEL_N_ARCHS; i++)
        if (strcmp(MODEL_ARCHS[i].model_type, model_type) == 0) return &MODEL_ARCHS[i];
    return NULL;
}

const char *model_arch_name(or1_arch a) {
    for (int i = 0; i < MODEL_N_ARCHS; i++)
        if (MODEL_ARCHS[i].arch == a) return MODEL_ARCHS[i].model_type;
    return "?";
}

const char *model_arch_list(char *buf, size_t n) {
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < MODEL_N_ARCHS && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? ", " : "", MODEL_ARCHS[i].model_type);
    return buf;
}

const layer_tensor MODEL_LAYER_TENSORS[] = {
    {"input_layernorm.weight", DIM_HIDDEN, DIM_NONE, OR1_L_LN1, T_NORM, HAS_ALWAYS, "attn_norm.weight", false},
    {"self_attn.q_proj.weight", DIM_Q, DIM_HIDDEN, OR1_L_WQKV, T_MATRIX, HAS_ALWAYS, "attn_q.weight", true},
    {"self_attn.k_proj.weight", DIM_KV, DIM_HIDDEN, NO_FIELD, T_MATRIX, HAS_ALWAYS, "attn_k.weight", true},
    {"self_attn.v_proj.weight", DIM_KV, DIM_HIDDEN, NO_FIELD, T_MATRIX, HAS_ALWAYS, "attn_v.weight", false},
    {"self_attn.q_proj.bias", DIM_Q, DIM_NONE, OR1_L_BQKV, T_BIAS, HAS_QKV_BIAS, "attn_q.bias", true},
    {"self_attn.k_proj.bias", DIM_KV, DIM_NONE, NO_FIELD, T_BIAS, HAS_QKV_BIAS, "attn_k.bias", true},
    {"self_attn.v_proj.bias", DIM_KV, DIM_NONE, NO_FIELD, T_BIAS, HAS_QKV_BIAS, "attn_v.bias", false},
    {"self_attn.q_norm.weight", DIM_HEAD, DIM_NONE, OR1_L_QNORM, T_NORM, HAS_QK_NORM, "attn_q_norm.weight", false},
    {"self_attn.k_norm.weight", DIM_HEAD, DIM_NONE, OR1_L_KNORM, T_NORM, HAS_QK_NORM, "attn_k_norm.weight", false},
    {"self_attn.o_proj.weight", DIM_HIDDEN, DIM_Q, OR1_L_WO, T_MATRIX, HAS_ALWAYS, "attn_output.weight", false},
    {"self_attn.o_proj.bias", DIM_HIDDEN, DIM_NONE, OR1_L_BO, T_BIAS, HAS_O_BIAS, "attn_output.bias", false},
    {"post_attention_layernorm.weight", DIM_HIDDEN, DIM_NONE, OR1_L_LN2, T_NORM, HAS_ALWAYS, "ffn_norm.weight", false},
    {"mlp.gate_proj.weight", DIM_INTER, DIM_HIDDEN, OR1_L_WGU, T_MATRIX, HAS_ALWAYS, "ffn_gate.weight", false},
    {"mlp.up_proj.weight", DIM_INTER, DIM_HIDDEN, NO_FIELD, T_MATRIX, HAS_ALWAYS, "ffn_up.weight", false},
    {"mlp.down_proj.weight", DIM_HIDDEN, DIM_INTER, OR1_L_WD, T_MATRIX, HAS_ALWAYS, "ffn_down.weight", false},
};
const int MODEL_N_LAYER_TENSORS = sizeof MODEL_LAYER_TENSORS / sizeof *MODEL_LAYER_TENSORS;

/* or1_layer and or1_layer_field (include/or1/model.h) hold the rows of LAYER_FIELDS, in order. */
#define X(name, field) \
    static_assert(offsetof(or1_layer, name) == (field) * sizeof(float *), "or1_layer." #name " is " #field);
LAYER_FIELDS(X)
#undef X
#define X(name, field) +1
static_assert(OR1_L_FIELDS == 0 LAYER_FIELDS(X), "LAYER_FIELDS has a row for each or1_layer_field");
#undef X
static_assert(sizeof(or1_layer) == OR1_L_FIELDS * sizeof(float *), "or1_layer holds the fields alone");

bool model_layer_feature(const or1_model_config *c, tensor_when w) {
    switch (w) {
#define X(name, flag) \
    case name: return c->flag;
        LAYER_FEATURES(X)
#undef X
    default: return true;
    }
}

bool model_layer_has(const or1_model_config *c, const layer_tensor *t) {
    return model_layer_feature(c, t->when);
}

int64_t model_layer_dim_size(const or1_model_config *c, layer_dim d) {
    switch (d) {
    case DIM_HIDDEN: return c->hidden;
    case DIM_Q: return (int64_t)c->heads * c->head_dim;
    case DIM_KV: return (int64_t)c->kv_heads * c->head_dim;
    case DIM_INTER: return c->intermediate;
    case DIM_HEAD: return c->head_dim;
    default: return 0;
    }
}

size_t model_layer_numel(const or1_model_config *c, const layer_tensor *t) {
    return (size_t)model_layer_dim_size(c, t->d0) * (size_t)(t->d1 == DIM_NONE ? 1 : model_layer_dim_size(c, t->d1));
}

tensor_kind model_layer_field_kind(int f) {
    for (int i = 0; i < MODEL_N_LAYER_TENSORS; i++)
        if (MODEL_LAYER_TENSORS[i].field == f) return MODEL_LAYER_TENSORS[i].kind;
    return T_MATRIX;
}

size_t model_layer_field_numel(const or1_model_config *c, int f) {
    size_t n = 0;
    for (int i = 0; i < MODEL_N_LAYER_TENSORS; i++) {
        if (MODEL_LAYER_TENSORS[i].field != f) continue;
        for (int k = i; k < MODEL_N_LAYER_TENSORS && (k == i || MODEL_LAYER_TENSORS[k].field == NO_FIELD); k++)
            if (model_layer_has(c, &MODEL_LAYER_TENSORS[k])) n += model_layer_numel(c, &MODEL_LAYER_TENSORS[k]);
    }
    return n;
}

int model_tensor_count(const or1_model_config *c) {
    int per_layer = 0;
    for (int i = 0; i < MODEL_N_LAYER_TENSORS; i++) per_layer += model_layer_has(c, &MODEL_LAYER_TENSORS[i]);
    return c->layers * per_layer + 2 + !c->tied;
}
