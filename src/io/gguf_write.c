/* GGUF writer: metadata serialized as it is set, tensors quantized from fp32 when the file is
 * written, GGUF v3 with alignment 32, written atomically. The layout is the one gguf-py's
 * GGUFWriter produces (each tensor's data padded to the alignment, the last one included). */
#include "or1/io_gguf.h"

#include "or1/core.h"
#include "or1/io.h"

#include <stdlib.h>
#include <string.h>

/* One key: its name and its serialized value (type u32, then the value). */
typedef struct {
    char *key;
    or1_text val;
} wkv;

/* One tensor to write; data is read only when the file is written. */
typedef struct {
    char *name;
    const float *data;
    int ndim;
    int64_t ne[OR1_GGUF_MAX_DIMS];
    uint32_t type;
    size_t numel, nbytes;
} wtensor;

struct or1_gguf_writer {
    wkv *kv;
    size_t n_kv;
    wtensor *t;
    size_t n_t;
    char *error; /* the first misuse of a setter, reported by or1_gguf_write */
};

/* A writer with nothing in it. */
or1_gguf_writer *or1_gguf_writer_new(void) { return or1_calloc(1, sizeof(or1_gguf_writer)); }

/* Frees the writer (tensor data belongs to the caller). */
void or1_gguf_writer_free(or1_gguf_writer *w) {
    if (!w) return;
    for (size_t i = 0; i < w->n_kv; i++) {
        free(w->kv[i].key);
        free(w->kv[i].val.s);
    }
    for (size_t i = 0; i < w->n_t; i++) free(w->t[i].name);
    free(w->kv);
    free(w->t);
    free(w->error);
    free(w);
}

/* Little-endian integers and GGUF strings appended to a buffer. */
static void put_u32(or1_text *b, uint32_t v) {
    uint8_t p[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    or1_text_add(b, p, 4);
}
static void put_u64(or1_text *b, uint64_t v) {
    put_u32(b, (uint32_t)v);
    put_u32(b, (uint32_t)(v >> 32));
}
static void put_str(or1_text *b, const char *s, size_t len) {
    put_u64(b, len);
    if (len) or1_text_add(b, s, len);
}
static void put_f32(or1_text *b, float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    put_u32(b, u);
}

/* Records the first misuse; later ones add nothing (the first is the one to fix). */
static void misuse(or1_gguf_writer *w, const char *fmt, const char *name) {
    if (w->error) return;
    size_t n = strlen(fmt) + strlen(name) + 1;
    w->error = or1_malloc(n);
    snprintf(w->error, n, fmt, name);
}

/* A new key's value buffer with its type written, or NULL (misuse recorded) for an empty or
 * repeated key. */
static or1_text *new_key(or1_gguf_writer *w, const char *key, or1_gguf_vtype type) {
    if (!key[0]) {
        misuse(w, "empty key%s", "");
        return NULL;
    }
    for (size_t i = 0; i < w->n_kv; i++)
        if (strcmp(w->kv[i].key, key) == 0) {
            misuse(w, "key \"%s\" set twice", key);
            return NULL;
        }
    w->kv = or1_realloc(w->kv, (w->n_kv + 1) * sizeof *w->kv);
    wkv *kv = &w->kv[w->n_kv++];
    kv->key = or1_strdup(key);
    kv->val = (or1_text){0};
    put_u32(&kv->val, type);
    return &kv->val;
}

/* The setters: one value each, or one array (element type, count, elements). */
void or1_gguf_set_str(or1_gguf_writer *w, const char *key, const char *s, size_t len) {
    or1_text *b = new_key(w, key, OR1_GGUF_STRING);
    if (b) put_str(b, s, len);
}
void or1_gguf_set_u32(or1_gguf_writer *w, const char *key, uint32_t v) {
    or1_text *b = new_key(w, key, OR1_GGUF_U32);
    if (b) put_u32(b, v);
}
void or1_gguf_set_i32(or1_gguf_writer *w, const char *key, int32_t v) {
    or1_text *b = new_key(w, key, OR1_GGUF_I32);
    if (b) put_u32(b, (uint32_t)v);
}
void or1_gguf_set_f32(or1_gguf_writer *w, const char *key, float v) {
    or1_text *b = new_key(w, key, OR1_GGUF_F32);
    if (b) put_f32(b, v);
}
void or1_gguf_set_bool(or1_gguf_writer *w, const char *key, bool v) {
    or1_text *b = new_key(w, key, OR1_GGUF_BOOL);
    if (b) or1_text_add(b, &(uint8_t){v ? 1 : 0}, 1);
}

/* Starts an array value: the element type and the count. */
static or1_text *new_array(or1_gguf_writer *w, const char *key, or1_gguf_vtype elem, size_t n) {
    or1_text *b = new_key(w, key, OR1_GGUF_ARRAY);
    if (b) {
        put_u32(b, elem);
        put_u64(b, n);
    }
    return b;
}
void or1_gguf_set_arr_str(or1_gguf_writer *w, const char *key, const char *const *s, const size_t *len, size_t n) {
    or1_text *b = new_array(w, key, OR1_GGUF_STRING, n);
    for (size_t i = 0; b && i < n; i++) put_str(b, s[i], len[i]);
}
void or1_gguf_set_arr_i32(or1_gguf_writer *w, const char *key, const int32_t *v, size_t n) {
    or1_text *b = new_array(w, key, OR1_GGUF_I32, n);
    for (size_t i = 0; b && i < n; i++) put_u32(b, (uint32_t)v[i]);
}
void or1_gguf_set_arr_f32(or1_gguf_writer *w, const char *key, const float *v, size_t n) {
    or1_text *b = new_array(w, key, OR1_GGUF_F32, n);
    for (size_t i = 0; b && i < n; i++) put_f32(b, v[i]);
}

/* Checks and records a tensor: name length, 1 to 4 dims, whole blocks, a type the writer makes. */
int or1_gguf_add_tensor(or1_gguf_writer *w, const char *name, const float *data, int ndim, const int64_t *ne,
                        uint32_t type) {
    size_t len = strlen(name), blck = or1_ggml_block_size(type), numel = 1, nb;
    if (len == 0 || len >= OR1_GGUF_MAX_NAME)
        return or1_fail("gguf writer: tensor \"%s\": name must be 1 to %d bytes", name, OR1_GGUF_MAX_NAME - 1);
    for (size_t i = 0; i < w->n_t; i++)
        if (strcmp(w->t[i].name, name) == 0) return or1_fail("gguf writer: tensor \"%s\" added twice", name);
    if (type != OR1_GGML_F32 && type != OR1_GGML_F16 && type != OR1_GGML_BF16 && type != OR1_GGML_Q8_0 &&
        type != OR1_GGML_Q4_0 && type != OR1_GGML_Q4_1)
        return or1_fail("gguf writer: tensor \"%s\": cannot write type %s (F32, F16, BF16, Q8_0, Q4_0, Q4_1)", name,
                        or1_ggml_type_name(type) ? or1_ggml_type_name(type) : "(unknown)");
    if (ndim < 1 || ndim > OR1_GGUF_MAX_DIMS)
        return or1_fail("gguf writer: tensor \"%s\": %d dims (1 to %d)", name, ndim, OR1_GGUF_MAX_DIMS);
    bool over = false;
    for (int d = 0; d < ndim; d++) {
        if (ne[d] < 0) return or1_fail("gguf writer: tensor \"%s\": negative dim %d", name, d);
        over |= __builtin_mul_overflow(numel, (size_t)ne[d], &numel);
    }
    if (ne[0] % (int64_t)blck)
        return or1_fail("gguf writer: tensor \"%s\": ne[0] = %lld is not a multiple of the %s block size %zu", name,
                        (long long)ne[0], or1_ggml_type_name(type), blck);
    over |= __builtin_mul_overflow(numel / blck, or1_ggml_type_size(type), &nb);
    if (over) return or1_fail("gguf writer: tensor \"%s\": shape too large", name);
    w->t = or1_realloc(w->t, (w->n_t + 1) * sizeof *w->t);
    wtensor *t = &w->t[w->n_t++];
    *t = (wtensor){.name = or1_strdup(name), .data = data, .ndim = ndim, .type = type, .numel = numel, .nbytes = nb};
    for (int d = 0; d < OR1_GGUF_MAX_DIMS; d++) t->ne[d] = d < ndim ? ne[d] : 1;
    return 0;
}

/* Bytes of zero padding after n bytes to reach the alignment. */
static size_t pad(size_t n) { return (OR1_GGUF_DEFAULT_ALIGNMENT - n % OR1_GGUF_DEFAULT_ALIGNMENT) % OR1_GGUF_DEFAULT_ALIGNMENT; }

/* Header, key/values and tensor infos (offsets: each tensor padded to the alignment), padded. */
static void build_header(const or1_gguf_writer *w, or1_text *h) {
    or1_text_add(h, "GGUF", 4);
    put_u32(h, 3);
    put_u64(h, w->n_t);
    put_u64(h, w->n_kv);
    for (size_t i = 0; i < w->n_kv; i++) {
        put_str(h, w->kv[i].key, strlen(w->kv[i].key));
        or1_text_add(h, w->kv[i].val.s, w->kv[i].val.len);
    }
    size_t offset = 0;
    for (size_t i = 0; i < w->n_t; i++) {
        const wtensor *t = &w->t[i];
        put_str(h, t->name, strlen(t->name));
        put_u32(h, (uint32_t)t->ndim);
        for (int d = 0; d < t->ndim; d++) put_u64(h, (uint64_t)t->ne[d]);
        put_u32(h, t->type);
        put_u64(h, offset);
        offset += t->nbytes + pad(t->nbytes);
    }
    static const uint8_t zeros[OR1_GGUF_DEFAULT_ALIGNMENT];
    or1_text_add(h, zeros, pad(h->len));
}

/* Quantizes each tensor and appends it, padded, to the open file. */
static int write_tensors(const or1_gguf_writer *w, FILE *out, const char *path) {
    static const uint8_t zeros[OR1_GGUF_DEFAULT_ALIGNMENT];
    for (size_t i = 0; i < w->n_t; i++) {
        const wtensor *t = &w->t[i];
        uint8_t *buf = or1_malloc(t->nbytes ? t->nbytes : 1);
        int rc = or1_ggml_quantize(t->type, t->data, t->numel, buf);
        if (rc) or1_fail_ctx("%s: tensor \"%s\"", path, t->name);
        else if (fwrite(buf, 1, t->nbytes, out) != t->nbytes || fwrite(zeros, 1, pad(t->nbytes), out) != pad(t->nbytes))
            rc = or1_fail("%s: tensor \"%s\": short write", path, t->name);
        free(buf);
        if (rc) return -1;
    }
    return 0;
}

/* Writes the whole file under a temporary name and renames it into place. */
int or1_gguf_write(or1_gguf_writer *w, const char *path) {
    if (w->error) return or1_fail("%s: not written: %s", path, w->error);
    or1_text h = {0};
    build_header(w, &h);
    or1_atomic_file a;
    int rc = or1_atomic_open(&a, path);
    if (rc == 0 && fwrite(h.s, 1, h.len, a.f) != h.len) rc = or1_fail("%s: short write", path);
    if (rc == 0) rc = write_tensors(w, a.f, path);
    free(h.s);
    if (rc == 0) return or1_atomic_commit(&a);
    if (a.f) or1_atomic_abort(&a);
    return -1;
}
