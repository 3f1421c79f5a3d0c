/* GGUF: a bounded, validating reader over mmap and the metadata getters. Every count and length
 * is checked against the bytes left before anything is allocated for it; every error names the
 * file, the byte offset and the key or tensor. */
#include "or1/io_gguf.h"

#include "or1/core.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Bytes of one scalar of each value type (0: string and array, which carry their own length). */
static const size_t value_size[13] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
static const char *value_names[13] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                      "bool", "string", "array", "u64", "i64", "f64"};

/* The value type's name, "?" for an id outside the table. */
const char *or1_gguf_vtype_name(uint32_t type) { return type < 13 ? value_names[type] : "?"; }

/* Little-endian loads (the host may be either). */
static uint64_t le(const uint8_t *p, size_t n) {
    uint64_t v = 0;
    for (size_t i = n; i-- > 0;) v = v << 8 | p[i];
    return v;
}

/* A read position in the file being parsed; `what` names the record for error messages. */
typedef struct {
    or1_gguf_file *f;
    size_t pos;
    char what[160];
} cursor;

/* Fails unless n more bytes are left. */
static int need(cursor *c, uint64_t n, const char *field) {
    if (n > c->f->size - c->pos)
        return or1_fail("%s: offset %zu: %s: truncated: %s needs %llu bytes, %zu left", c->f->path, c->pos,
                        c->what, field, (unsigned long long)n, c->f->size - c->pos);
    return 0;
}

/* Reads a little-endian u32 / u64 field. */
static int rd_u32(cursor *c, uint32_t *v, const char *field) {
    if (need(c, 4, field)) return -1;
    *v = (uint32_t)le(c->f->map + c->pos, 4);
    c->pos += 4;
    return 0;
}
static int rd_u64(cursor *c, uint64_t *v, const char *field) {
    if (need(c, 8, field)) return -1;
    *v = le(c->f->map + c->pos, 8);
    c->pos += 8;
    return 0;
}

/* Reads a GGUF string (u64 length + bytes) in place. */
static int rd_str(cursor *c, const uint8_t **s, uint64_t *len, const char *field) {
    if (rd_u64(c, len, field) || need(c, *len, field)) return -1;
    *s = c->f->map + c->pos;
    c->pos += (size_t)*len;
    return 0;
}

/* Reads a key or tensor name as a C string: not empty, no NUL inside, shorter than max bytes. */
static int rd_name(cursor *c, char **out, size_t max, const char *field) {
    size_t at = c->pos;
    const uint8_t *s;
    uint64_t len;
    if (rd_str(c, &s, &len, field)) return -1;
    if (len == 0 || len >= max || memchr(s, 0, (size_t)len))
        return or1_fail("%s: offset %zu: %s: %s of %llu bytes (must be 1 to %zu bytes, no NUL)", c->f->path, at,
                        c->what, field, (unsigned long long)len, max - 1);
    *out = or1_malloc((size_t)len + 1);
    memcpy(*out, s, (size_t)len);
    (*out)[len] = '\0';
    return 0;
}

/* Checks that count records of at least min_bytes each fit in what is left (before allocating). */
static int fits(cursor *c, uint64_t count, size_t min_bytes, const char *field) {
    if (count > (c->f->size - c->pos) / min_bytes)
        return or1_fail("%s: offset %zu: %s: %s %llu cannot fit in the %zu bytes left", c->f->path, c->pos, c->what,
                        field, (unsigned long long)count, c->f->size - c->pos);
    return 0;
}

/* Skips n fixed-size values of type t, checking that bools are 0 or 1. */
static int skip_values(cursor *c, uint32_t t, uint64_t n) {
    if (fits(c, n, value_size[t], "element count")) return -1;
    const uint8_t *p = c->f->map + c->pos;
    for (uint64_t i = 0; t == OR1_GGUF_BOOL && i < n; i++)
        if (p[i] > 1)
            return or1_fail("%s: offset %zu: %s: bool value %u (must be 0 or 1)", c->f->path, c->pos + (size_t)i,
                            c->what, p[i]);
    c->pos += (size_t)n * value_size[t];
    return 0;
}

/* Parses an array value: element type (no nested arrays), count, then the elements. */
static int parse_array(cursor *c, or1_gguf_kv *kv) {
    uint32_t elem;
    size_t at = c->pos;
    if (rd_u32(c, &elem, "array element type")) return -1;
    if (elem > OR1_GGUF_F64 || elem == OR1_GGUF_ARRAY)
        return or1_fail("%s: offset %zu: %s: array element type %u (%s)", c->f->path, at, c->what, elem,
                        elem == OR1_GGUF_ARRAY ? "nested arrays are not supported" : "unknown");
    kv->elem = (or1_gguf_vtype)elem;
    if (rd_u64(c, &kv->n, "array length")) return -1;
    kv->val = c->f->map + c->pos;
    if (elem != OR1_GGUF_STRING) return skip_values(c, elem, kv->n);
    if (fits(c, kv->n, 8, "string count")) return -1;
    if (kv->n) kv->elems = or1_malloc((size_t)kv->n * sizeof *kv->elems);
    for (uint64_t i = 0; i < kv->n; i++) {
        const uint8_t *s;
        uint64_t len;
        kv->elems[i] = c->f->map + c->pos;
        if (rd_str(c, &s, &len, "array string")) return -1;
    }
    return 0;
}

/* Parses one key/value record. */
static int parse_kv(cursor *c, or1_gguf_kv *kv, size_t index) {
    snprintf(c->what, sizeof c->what, "key #%zu", index);
    if (rd_name(c, &kv->key, 65536, "key")) return -1;
    snprintf(c->what, sizeof c->what, "key \"%.100s\"", kv->key);
    uint32_t type;
    size_t at = c->pos;
    if (rd_u32(c, &type, "value type")) return -1;
    if (type > OR1_GGUF_F64)
        return or1_fail("%s: offset %zu: %s: unknown value type %u", c->f->path, at, c->what, type);
    kv->type = kv->elem = (or1_gguf_vtype)type;
    kv->n = 1;
    kv->val = c->f->map + c->pos;
    if (type == OR1_GGUF_ARRAY) return parse_array(c, kv);
    if (type == OR1_GGUF_STRING) {
        const uint8_t *s;
        uint64_t len;
        return rd_str(c, &s, &len, "string value");
    }
    return need(c, value_size[type], "value") ? -1 : skip_values(c, type, 1);
}

/* A name and where it was read, for the duplicate check. */
typedef struct {
    const char *name;
    size_t index;
} named;

/* Orders names, then index (qsort comparator). */
static int cmp_named(const void *a, const void *b) {
    const named *x = a, *y = b;
    int r = strcmp(x->name, y->name);
    return r ? r : (x->index > y->index) - (x->index < y->index);
}

/* Refuses a name given twice: sorts (n log n, so a huge hostile count cannot make it quadratic). */
static int check_unique(const or1_gguf_file *f, const named *items, size_t n, const char *kind) {
    named *s = or1_malloc((n ? n : 1) * sizeof *s);
    if (n) memcpy(s, items, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_named);
    int rc = 0;
    for (size_t i = 1; i < n && rc == 0; i++)
        if (strcmp(s[i].name, s[i - 1].name) == 0)
            rc = or1_fail("%s: %s \"%s\" appears twice (#%zu and #%zu)", f->path, kind, s[i].name, s[i - 1].index,
                          s[i].index);
    free(s);
    return rc;
}

/* Parses every key/value record, refuses duplicates, and takes general.alignment. */
static int parse_kvs(cursor *c, uint64_t n_kv) {
    or1_gguf_file *f = c->f;
    f->kv = or1_calloc((size_t)n_kv, sizeof *f->kv);
    for (size_t i = 0; i < n_kv; i++) {
        f->n_kv = i + 1;
        if (parse_kv(c, &f->kv[i], i)) return -1;
    }
    named *names = or1_malloc((f->n_kv ? f->n_kv : 1) * sizeof *names);
    for (size_t i = 0; i < f->n_kv; i++) names[i] = (named){f->kv[i].key, i};
    int rc = check_unique(f, names, f->n_kv, "key");
    free(names);
    if (rc) return -1;
    f->alignment = OR1_GGUF_DEFAULT_ALIGNMENT;
    const or1_gguf_kv *a = or1_gguf_kv_find(f, "general.alignment");
    if (!a) return 0;
    uint32_t v = a->type == OR1_GGUF_U32 ? (uint32_t)le(a->val, 4) : 0;
    if (a->type != OR1_GGUF_U32 || v == 0 || (v & (v - 1)))
        return or1_fail("%s: offset %zu: key \"general.alignment\": must be a u32 power of two (is %s %u)", f->path,
                        (size_t)(a->val - f->map), or1_gguf_vtype_name(a->type), v);
    f->alignment = v;
    return 0;
}

/* Parses one tensor info record: name, dims, type, offset (checked later against the data). */
static int parse_tensor_info(cursor *c, or1_gguf_tensor *t, size_t index) {
    snprintf(c->what, sizeof c->what, "tensor #%zu", index);
    if (rd_name(c, &t->name, OR1_GGUF_MAX_NAME, "tensor name")) return -1;
    snprintf(c->what, sizeof c->what, "tensor \"%s\"", t->name);
    uint32_t nd, type;
    size_t at = c->pos;
    if (rd_u32(c, &nd, "n_dims")) return -1;
    if (nd > OR1_GGUF_MAX_DIMS)
        return or1_fail("%s: offset %zu: %s: %u dims (at most %d)", c->f->path, at, c->what, nd, OR1_GGUF_MAX_DIMS);
    t->ndim = (int)nd;
    for (int d = 0; d < OR1_GGUF_MAX_DIMS; d++) t->ne[d] = 1;
    for (uint32_t d = 0; d < nd; d++) {
        uint64_t v;
        at = c->pos;
        if (rd_u64(c, &v, "dim")) return -1;
        if (v > INT64_MAX)
            return or1_fail("%s: offset %zu: %s: dim %u is %llu", c->f->path, at, c->what, d, (unsigned long long)v);
        t->ne[d] = (int64_t)v;
    }
    at = c->pos;
    if (rd_u32(c, &type, "type")) return -1;
    if (!or1_ggml_type_name(type))
        return or1_fail("%s: offset %zu: %s: unknown ggml type id %u", c->f->path, at, c->what, type);
    t->type = type;
    return rd_u64(c, &t->offset, "offset");
}

/* numel and nbytes of a tensor, refusing a row that is not whole blocks and any overflow. */
static int tensor_size(const or1_gguf_file *f, or1_gguf_tensor *t) {
    size_t blck = or1_ggml_block_size(t->type), bytes = or1_ggml_type_size(t->type), numel = 1, nb;
    if ((uint64_t)t->ne[0] % blck)
        return or1_fail("%s: tensor \"%s\": ne[0] = %lld is not a multiple of the %s block size %zu", f->path,
                        t->name, (long long)t->ne[0], or1_ggml_type_name(t->type), blck);
    bool over = __builtin_mul_overflow((size_t)t->ne[0] / blck, bytes, &nb);
    for (int d = 0; d < OR1_GGUF_MAX_DIMS; d++) {
        over |= __builtin_mul_overflow(numel, (size_t)t->ne[d], &numel);
        if (d) over |= __builtin_mul_overflow(nb, (size_t)t->ne[d], &nb);
    }
    if (over) return or1_fail("%s: tensor \"%s\": shape too large", f->path, t->name);
    t->numel = numel;
    t->nbytes = nb;
    return 0;
}

/* An offset and its tensor, for the overlap check. */
typedef struct {
    uint64_t begin, end;
    size_t index;
} span;

/* Orders spans by start (qsort comparator). */
static int cmp_span(const void *a, const void *b) {
    const span *x = a, *y = b;
    return (x->begin > y->begin) - (x->begin < y->begin);
}

/* Refuses two tensors whose bytes overlap (empty tensors overlap nothing). */
static int check_overlap(const or1_gguf_file *f) {
    span *s = or1_malloc((f->n_tensors ? f->n_tensors : 1) * sizeof *s);
    size_t n = 0;
    for (size_t i = 0; i < f->n_tensors; i++)
        if (f->tensors[i].nbytes) s[n++] = (span){f->tensors[i].offset, f->tensors[i].offset + f->tensors[i].nbytes, i};
    qsort(s, n, sizeof *s, cmp_span);
    int rc = 0;
    for (size_t i = 1; i < n && rc == 0; i++)
        if (s[i].begin < s[i - 1].end)
            rc = or1_fail("%s: tensor \"%s\" (bytes %llu..%llu of the data section) overlaps tensor \"%s\" (bytes "
                          "%llu..%llu)",
                          f->path, f->tensors[s[i].index].name, (unsigned long long)s[i].begin,
                          (unsigned long long)s[i].end, f->tensors[s[i - 1].index].name,
                          (unsigned long long)s[i - 1].begin, (unsigned long long)s[i - 1].end);
    free(s);
    return rc;
}

/* Places each tensor in the data section: aligned offset, bytes inside the file, no overlap. */
static int place_tensors(or1_gguf_file *f, size_t info_end) {
    size_t a = f->alignment, start = info_end + (a - info_end % a) % a;
    f->data_offset = start;
    if (f->n_tensors && start > f->size)
        return or1_fail("%s: offset %zu: the data section starts past the end of the %zu-byte file", f->path, start,
                        f->size);
    size_t data_size = f->n_tensors ? f->size - start : 0;
    for (size_t i = 0; i < f->n_tensors; i++) {
        or1_gguf_tensor *t = &f->tensors[i];
        if (tensor_size(f, t)) return -1;
        if (t->offset % a)
            return or1_fail("%s: tensor \"%s\": offset %llu is not a multiple of the alignment %zu", f->path, t->name,
                            (unsigned long long)t->offset, a);
        if (t->offset > data_size || t->nbytes > data_size - t->offset)
            return or1_fail("%s: tensor \"%s\": bytes %llu..%llu (%zu bytes of %s) outside the %zu-byte data section "
                            "at offset %zu",
                            f->path, t->name, (unsigned long long)t->offset,
                            (unsigned long long)t->offset + t->nbytes, t->nbytes, or1_ggml_type_name(t->type),
                            data_size, start);
        t->data = f->map + start + t->offset;
    }
    return check_overlap(f);
}

/* Parses the tensor infos, refuses duplicate names, then places the tensors. */
static int parse_tensors(cursor *c, uint64_t n_tensors) {
    or1_gguf_file *f = c->f;
    f->tensors = or1_calloc((size_t)n_tensors, sizeof *f->tensors);
    for (size_t i = 0; i < n_tensors; i++) {
        f->n_tensors = i + 1;
        if (parse_tensor_info(c, &f->tensors[i], i)) return -1;
    }
    named *names = or1_malloc((f->n_tensors ? f->n_tensors : 1) * sizeof *names);
    for (size_t i = 0; i < f->n_tensors; i++) names[i] = (named){f->tensors[i].name, i};
    int rc = check_unique(f, names, f->n_tensors, "tensor");
    free(names);
    return rc ? -1 : place_tensors(f, c->pos);
}

/* Magic, version (2 or 3, little-endian), the two counts (bounded by the bytes left). */
static int parse_header(cursor *c, uint64_t *n_tensors, uint64_t *n_kv) {
    or1_gguf_file *f = c->f;
    snprintf(c->what, sizeof c->what, "header");
    if (need(c, 4, "magic")) return -1;
    if (memcmp(f->map, "GGUF", 4) != 0)
        return or1_fail("%s: offset 0: not a GGUF file (magic %02x %02x %02x %02x, expected \"GGUF\")", f->path,
                        f->map[0], f->map[1], f->map[2], f->map[3]);
    c->pos = 4;
    if (rd_u32(c, &f->version, "version")) return -1;
    if (f->version && (f->version & 0xffff) == 0)
        return or1_fail("%s: offset 4: big-endian GGUF file (version bytes %08x): only little-endian files are read",
                        f->path, f->version);
    if (f->version != 2 && f->version != 3)
        return or1_fail("%s: offset 4: GGUF version %u is not supported (2 or 3; version 1 is obsolete)", f->path,
                        f->version);
    if (rd_u64(c, n_tensors, "tensor count") || rd_u64(c, n_kv, "key/value count")) return -1;
    /* smallest records: a key is 8 + 1 bytes, a type 4, a value 1; a tensor info 8 + 1 + 4 + 4 + 8 */
    snprintf(c->what, sizeof c->what, "header");
    if (fits(c, *n_kv, 14, "key/value count") || fits(c, *n_tensors, 25, "tensor count")) return -1;
    return 0;
}

/* Maps the file read-only (a zero-byte file cannot be mapped and is refused as truncated). */
static int map_file(or1_gguf_file *f) {
    int fd = open(f->path, O_RDONLY);
    if (fd < 0) return or1_fail("%s: cannot open: %s", f->path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return or1_fail("%s: not a regular file", f->path);
    }
    f->size = (size_t)st.st_size;
    if (f->size < 24) {
        close(fd);
        return or1_fail("%s: offset 0: truncated: %zu bytes, shorter than the 24-byte GGUF header", f->path, f->size);
    }
    f->map = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (f->map == MAP_FAILED) {
        f->map = NULL;
        return or1_fail("%s: mmap failed: %s", f->path, strerror(errno));
    }
    return 0;
}

/* Maps and validates the whole file; on failure everything is released and f is zeroed. */
int or1_gguf_open(or1_gguf_file *f, const char *path) {
    memset(f, 0, sizeof *f);
    f->path = or1_strdup(path);
    cursor c = {.f = f};
    uint64_t n_tensors = 0, n_kv = 0;
    if (map_file(f) || parse_header(&c, &n_tensors, &n_kv) || parse_kvs(&c, n_kv) || parse_tensors(&c, n_tensors)) {
        or1_gguf_close(f);
        return -1;
    }
    return 0;
}

/* Unmaps and frees everything. */
void or1_gguf_close(or1_gguf_file *f) {
    if (f->map) munmap(f->map, f->size);
    for (size_t i = 0; i < f->n_kv; i++) {
        free(f->kv[i].key);
        free(f->kv[i].elems);
    }
    for (size_t i = 0; i < f->n_tensors; i++) free(f->tensors[i].name);
    free(f->kv);
    free(f->tensors);
    free(f->path);
    memset(f, 0, sizeof *f);
}

/* A regular file whose first four bytes are "GGUF". */
bool or1_gguf_is_gguf(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return false;
    struct stat st;
    char magic[4];
    bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && read(fd, magic, 4) == 4 && memcmp(magic, "GGUF", 4) == 0;
    close(fd);
    return ok;
}

/* Linear lookup: files hold tens of keys. */
const or1_gguf_kv *or1_gguf_kv_find(const or1_gguf_file *f, const char *key) {
    for (size_t i = 0; i < f->n_kv; i++)
        if (strcmp(f->kv[i].key, key) == 0) return &f->kv[i];
    return NULL;
}

/* Linear lookup by name. */
const or1_gguf_tensor *or1_gguf_tensor_find(const or1_gguf_file *f, const char *name) {
    for (size_t i = 0; i < f->n_tensors; i++)
        if (strcmp(f->tensors[i].name, name) == 0) return &f->tensors[i];
    return NULL;
}

/* Whether a value type is one of the eight integer types. */
static bool is_int_type(or1_gguf_vtype t) { return t <= OR1_GGUF_I32 || t == OR1_GGUF_U64 || t == OR1_GGUF_I64; }

/* An integer value of type t at p, widened (a u64 above INT64_MAX saturates). */
static int64_t int_at(or1_gguf_vtype t, const uint8_t *p) {
    uint64_t v = le(p, value_size[t]);
    switch (t) {
    case OR1_GGUF_I8: return (int8_t)v;
    case OR1_GGUF_I16: return (int16_t)v;
    case OR1_GGUF_I32: return (int32_t)v;
    case OR1_GGUF_I64: return (int64_t)v;
    default: return v > INT64_MAX ? INT64_MAX : (int64_t)v;
    }
}

/* A float value of type t (f32 or f64) at p. */
static double float_at(or1_gguf_vtype t, const uint8_t *p) {
    uint64_t v = le(p, value_size[t]);
    if (t == OR1_GGUF_F64) {
        double d;
        memcpy(&d, &v, 8);
        return d;
    }
    uint32_t u = (uint32_t)v;
    float x;
    memcpy(&x, &u, 4);
    return x;
}

/* Finds key; 1 if absent, -1 (error naming the key) if its type is not the one described. */
static int lookup(const or1_gguf_file *f, const char *key, bool (*ok)(or1_gguf_vtype), const char *want,
                  const or1_gguf_kv **out) {
    const or1_gguf_kv *kv = or1_gguf_kv_find(f, key);
    if (!kv) return 1;
    if (!ok(kv->type))
        return or1_fail("%s: key \"%s\" is %s, expected %s", f->path, key, or1_gguf_vtype_name(kv->type), want);
    *out = kv;
    return 0;
}

/* The type classes the getters accept. */
static bool is_float_type(or1_gguf_vtype t) { return t == OR1_GGUF_F32 || t == OR1_GGUF_F64; }
static bool is_bool_type(or1_gguf_vtype t) { return t == OR1_GGUF_BOOL; }
static bool is_str_type(or1_gguf_vtype t) { return t == OR1_GGUF_STRING; }
static bool is_array_type(or1_gguf_vtype t) { return t == OR1_GGUF_ARRAY; }

/* Any integer type; a u64 above INT64_MAX is refused. */
int or1_gguf_get_int(const or1_gguf_file *f, const char *key, int64_t *out) {
    const or1_gguf_kv *kv = NULL;
    int rc = lookup(f, key, is_int_type, "an integer", &kv);
    if (rc) return rc;
    if (kv->type == OR1_GGUF_U64 && le(kv->val, 8) > INT64_MAX)
        return or1_fail("%s: key \"%s\" = %llu is too large", f->path, key, (unsigned long long)le(kv->val, 8));
    *out = int_at(kv->type, kv->val);
    return 0;
}

/* f32 or f64. */
int or1_gguf_get_float(const or1_gguf_file *f, const char *key, double *out) {
    const or1_gguf_kv *kv = NULL;
    int rc = lookup(f, key, is_float_type, "f32 or f64", &kv);
    if (rc == 0) *out = float_at(kv->type, kv->val);
    return rc;
}

/* bool (validated 0/1 at open). */
int or1_gguf_get_bool(const or1_gguf_file *f, const char *key, bool *out) {
    const or1_gguf_kv *kv = NULL;
    int rc = lookup(f, key, is_bool_type, "bool", &kv);
    if (rc == 0) *out = kv->val[0] != 0;
    return rc;
}

/* A string in place (not NUL-terminated). */
int or1_gguf_get_str(const or1_gguf_file *f, const char *key, const char **s, size_t *len) {
    const or1_gguf_kv *kv = NULL;
    int rc = lookup(f, key, is_str_type, "string", &kv);
    if (rc == 0) {
        *len = (size_t)le(kv->val, 8);
        *s = (const char *)kv->val + 8;
    }
    return rc;
}

/* An array whose elements are of class cls: 's' strings, 'i' integers, 'f' floats. */
int or1_gguf_get_array(const or1_gguf_file *f, const char *key, char cls, const or1_gguf_kv **out) {
    const char *want = cls == 's' ? "an array of strings" : cls == 'i' ? "an array of integers" : "an array of floats";
    const or1_gguf_kv *kv = NULL;
    int rc = lookup(f, key, is_array_type, want, &kv);
    if (rc) return rc;
    bool ok = cls == 's' ? kv->elem == OR1_GGUF_STRING : cls == 'i' ? is_int_type(kv->elem)
                                                                    : cls == 'f' && is_float_type(kv->elem);
    if (!ok) return or1_fail("%s: key \"%s\" is an array of %s, expected %s", f->path, key,
                             or1_gguf_vtype_name(kv->elem), want);
    *out = kv;
    return 0;
}

/* String element i, in place. */
void or1_gguf_array_str(const or1_gguf_kv *kv, uint64_t i, const char **s, size_t *len) {
    *len = (size_t)le(kv->elems[i], 8);
    *s = (const char *)kv->elems[i] + 8;
}

/* Integer element i. */
int64_t or1_gguf_array_int(const or1_gguf_kv *kv, uint64_t i) {
    return int_at(kv->elem, kv->val + i * value_size[kv->elem]);
}

/* Float element i (integer arrays read as their values). */
double or1_gguf_array_float(const or1_gguf_kv *kv, uint64_t i) {
    const uint8_t *p = kv->val + i * value_size[kv->elem];
    return is_float_type(kv->elem) ? float_at(kv->elem, p) : (double)int_at(kv->elem, p);
}

/* The whole tensor as fp32. */
int or1_gguf_read_f32(const or1_gguf_file *f, const or1_gguf_tensor *t, float *dst) {
    if (!or1_ggml_can_dequantize(t->type))
        return or1_fail("%s: tensor \"%s\": type %s cannot be dequantized by or1", f->path, t->name,
                        or1_ggml_type_name(t->type));
    if (or1_ggml_dequantize(t->type, t->data, t->numel, dst)) return or1_fail_ctx("%s: tensor \"%s\"", f->path, t->name);
    return 0;
}
