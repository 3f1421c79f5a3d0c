/* The GGUF tests' driver over or1's reader and writer (tests/io/test_gguf.py compares it with
 * gguf-py):
 *   gguf_tool dump FILE         keys, value types, values and tensor infos as JSON on stdout
 *   gguf_tool deq FILE OUT      every tensor dequantized to fp32, concatenated in file order
 *   gguf_tool write SPEC OUT    a file made by or1's writer from a JSON spec:
 *       {"kv": [{"key": k, "type": "str|u32|i32|f32|bool|arr_str|arr_i32|arr_f32", "value": v}],
 *        "tensors": [{"name": n, "type": "Q8_0", "ne": [..], "data": "raw fp32 file"}]} */
#include "or1/core.h"
#include "or1/io.h"
#include "or1/io_gguf.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A float as JSON (non-finite values as null: the tests keep to finite ones). */
static void put_num(double v, bool f64) {
    if (!isfinite(v)) fputs("null", stdout);
    else printf(f64 ? "%.17g" : "%.9g", v);
}

/* Element i of an array kv (or the scalar itself for i = 0 of a scalar) as JSON. */
static void put_elem(const or1_gguf_kv *kv, uint64_t i) {
    const char *s;
    size_t n;
    switch (kv->elem) {
    case OR1_GGUF_STRING:
        if (kv->type == OR1_GGUF_ARRAY) or1_gguf_array_str(kv, i, &s, &n);
        else {
            memcpy(&n, kv->val, 8);
            s = (const char *)kv->val + 8;
        }
        or1_json_write_string_n(stdout, s, n);
        break;
    case OR1_GGUF_BOOL: fputs(kv->val[i] ? "true" : "false", stdout); break;
    case OR1_GGUF_F32:
    case OR1_GGUF_F64: put_num(or1_gguf_array_float(kv, i), kv->elem == OR1_GGUF_F64); break;
    case OR1_GGUF_U64: {
        uint64_t v;
        memcpy(&v, kv->val + 8 * i, 8);
        printf("%" PRIu64, v);
        break;
    }
    default: printf("%" PRId64, or1_gguf_array_int(kv, i));
    }
}

/* Prints the file's keys and tensor infos as one JSON object. */
static int dump(const char *path) {
    or1_gguf_file f;
    if (or1_gguf_open(&f, path)) return 1;
    printf("{\"version\": %u, \"alignment\": %zu, \"data_offset\": %zu, \"kv\": [", f.version, f.alignment,
           f.data_offset);
    for (size_t k = 0; k < f.n_kv; k++) {
        const or1_gguf_kv *kv = &f.kv[k];
        printf("%s\n{\"key\": ", k ? "," : "");
        or1_json_write_string(stdout, kv->key);
        printf(", \"type\": \"%s\", \"elem\": \"%s\", \"value\": ", or1_gguf_vtype_name(kv->type),
               or1_gguf_vtype_name(kv->elem));
        if (kv->type == OR1_GGUF_ARRAY) {
            fputc('[', stdout);
            for (uint64_t i = 0; i < kv->n; i++) {
                if (i) fputs(", ", stdout);
                put_elem(kv, i);
            }
            fputc(']', stdout);
        } else {
            put_elem(kv, 0);
        }
        fputc('}', stdout);
    }
    printf("], \"tensors\": [");
    for (size_t i = 0; i < f.n_tensors; i++) {
        const or1_gguf_tensor *t = &f.tensors[i];
        printf("%s\n{\"name\": \"%s\", \"type\": \"%s\", \"ndim\": %d, \"ne\": [", i ? "," : "", t->name,
               or1_ggml_type_name(t->type), t->ndim);
        for (int d = 0; d < t->ndim; d++) printf(d ? ", %" PRId64 : "%" PRId64, t->ne[d]);
        printf("], \"numel\": %zu, \"nbytes\": %zu, \"offset\": %" PRIu64 "}", t->numel, t->nbytes, t->offset);
    }
    printf("]}\n");
    or1_gguf_close(&f);
    return 0;
}

/* Writes every tensor as fp32 to out, one after the other; the time to stderr. */
static int deq(const char *path, const char *out) {
    double t0 = or1_now();
    or1_gguf_file f;
    if (or1_gguf_open(&f, path)) return 1;
    size_t total = 0;
    for (size_t i = 0; i < f.n_tensors; i++) total += f.tensors[i].numel;
    float *x = or1_alloc_floats(total ? total : 1);
    int rc = 0;
    for (size_t i = 0, at = 0; i < f.n_tensors && rc == 0; at += f.tensors[i].numel, i++)
        rc = or1_gguf_read_f32(&f, &f.tensors[i], x + at);
    double t1 = or1_now();
    if (rc == 0) rc = or1_write_file_atomic(out, x, total * sizeof *x);
    if (rc == 0) fprintf(stderr, "open + dequantize %zu values: %.3f s\n", total, t1 - t0);
    free(x);
    or1_gguf_close(&f);
    return rc ? 1 : 0;
}

/* Adds one key of the spec to the writer. */
static int spec_kv(or1_gguf_writer *w, const cJSON *e) {
    const char *key = cJSON_GetStringValue(cJSON_GetObjectItem(e, "key"));
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(e, "type"));
    const cJSON *v = cJSON_GetObjectItem(e, "value");
    if (!key || !type || !v) return or1_fail("spec: a kv needs key, type and value");
    size_t n = cJSON_IsArray(v) ? (size_t)cJSON_GetArraySize(v) : 0;
    if (strcmp(type, "str") == 0) or1_gguf_set_str(w, key, v->valuestring, strlen(v->valuestring));
    else if (strcmp(type, "u32") == 0) or1_gguf_set_u32(w, key, (uint32_t)v->valuedouble);
    else if (strcmp(type, "i32") == 0) or1_gguf_set_i32(w, key, (int32_t)v->valuedouble);
    else if (strcmp(type, "f32") == 0) or1_gguf_set_f32(w, key, (float)v->valuedouble);
    else if (strcmp(type, "bool") == 0) or1_gguf_set_bool(w, key, cJSON_IsTrue(v));
    else if (strncmp(type, "arr_", 4) == 0) {
        const char **s = or1_calloc(n, sizeof *s);
        size_t *len = or1_calloc(n, sizeof *len);
        int32_t *iv = or1_calloc(n, sizeof *iv);
        float *fv = or1_calloc(n, sizeof *fv);
        for (size_t i = 0; i < n; i++) {
            const cJSON *x = cJSON_GetArrayItem(v, (int)i);
            s[i] = cJSON_IsString(x) ? x->valuestring : "";
            len[i] = strlen(s[i]);
            iv[i] = (int32_t)x->valuedouble;
            fv[i] = (float)x->valuedouble;
        }
        if (strcmp(type, "arr_str") == 0) or1_gguf_set_arr_str(w, key, s, len, n);
        else if (strcmp(type, "arr_i32") == 0) or1_gguf_set_arr_i32(w, key, iv, n);
        else or1_gguf_set_arr_f32(w, key, fv, n);
        free(s);
        free(len);
        free(iv);
        free(fv);
    } else return or1_fail("spec: unknown kv type %s", type);
    return 0;
}

/* The ggml type id of a name. */
static uint32_t type_id(const char *name) {
    for (uint32_t t = 0; t < 64; t++)
        if (or1_ggml_type_name(t) && strcmp(or1_ggml_type_name(t), name) == 0) return t;
    return 9999;
}

/* Builds a file with or1's writer from a JSON spec (see the top of this file). */
static int write_spec(const char *spec_path, const char *out) {
    char *text;
    size_t len;
    if (or1_read_file(spec_path, 1 << 26, &text, &len)) return 1;
    cJSON *spec = or1_json_parse(text, len, spec_path);
    free(text);
    if (!spec) return 1;
    or1_gguf_writer *w = or1_gguf_writer_new();
    const cJSON *tensors = cJSON_GetObjectItem(spec, "tensors"), *e;
    size_t nt = (size_t)cJSON_GetArraySize(tensors), i = 0;
    char **data = or1_calloc(nt, sizeof *data);
    int rc = 0;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(spec, "kv")) if (rc == 0) rc = spec_kv(w, e);
    cJSON_ArrayForEach(e, tensors) {
        const cJSON *ne = cJSON_GetObjectItem(e, "ne");
        int64_t dims[4] = {1, 1, 1, 1};
        int nd = cJSON_GetArraySize(ne);
        for (int d = 0; d < nd && d < 4; d++) dims[d] = (int64_t)cJSON_GetArrayItem(ne, d)->valuedouble;
        size_t bytes;
        if (rc == 0) rc = or1_read_file(cJSON_GetStringValue(cJSON_GetObjectItem(e, "data")), (size_t)1 << 30, &data[i], &bytes);
        if (rc == 0)
            rc = or1_gguf_add_tensor(w, cJSON_GetStringValue(cJSON_GetObjectItem(e, "name")), (const float *)data[i], nd,
                                     dims, type_id(cJSON_GetStringValue(cJSON_GetObjectItem(e, "type"))));
        i++;
    }
    if (rc == 0) rc = or1_gguf_write(w, out);
    or1_gguf_writer_free(w);
    for (i = 0; i < nt; i++) free(data[i]);
    free(data);
    cJSON_Delete(spec);
    return rc ? 1 : 0;
}

int main(int argc, char **argv) {
    int rc = 2;
    if (argc == 3 && strcmp(argv[1], "dump") == 0) rc = dump(argv[2]);
    else if (argc == 4 && strcmp(argv[1], "deq") == 0) rc = deq(argv[2], argv[3]);
    else if (argc == 4 && strcmp(argv[1], "write") == 0) rc = write_spec(argv[2], argv[3]);
    else fprintf(stderr, "usage: gguf_tool dump FILE | deq FILE OUT | write SPEC OUT\n");
    if (rc == 1) fprintf(stderr, "gguf_tool: %s\n", or1_error());
    return rc;
}
