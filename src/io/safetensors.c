/* Safetensors: a bounded, validating reader over mmap and an atomic writer. */
#include "or1/io_safetensors.h"

#include "or1/core.h"
#include "or1/io.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

enum { HEADER_MAX = 100 * 1024 * 1024 };

static const char *dtype_names[] = {"F32", "BF16", "F16"};
static const size_t dtype_sizes[] = {4, 2, 2};

/* Widens a bfloat16 bit pattern to fp32. */
float or1_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Rounds fp32 to bfloat16, nearest even, keeping NaN a NaN. */
uint16_t or1_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* IEEE half to fp32, subnormals included. */
float or1_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, u;
    if (exp == 0x1f) {
        u = sign | 0x7f800000u | (man << 13);
    } else if (exp == 0) {
        if (man == 0) {
            u = sign;
        } else {
            float f = ldexpf((float)man, -24);
            return sign ? -f : f;
        }
    } else {
        u = sign | ((exp + 112) << 23) | (man << 13);
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Parses a dtype name; only the float types a checkpoint of ours can hold. */
static int parse_dtype(const char *s, or1_dtype *out) {
    for (int i = 0; i < 3; i++)
        if (strcmp(s, dtype_names[i]) == 0) {
            *out = (or1_dtype)i;
            return 0;
        }
    return -1;
}

/* Reads the "__metadata__" object (string values only; a second one is refused, not read over
 * the first). */
static int parse_metadata(or1_st_file *f, const cJSON *m) {
    if (f->meta) return or1_fail("%s: __metadata__ appears twice in the header", f->path);
    if (!cJSON_IsObject(m)) return or1_fail("%s: __metadata__ must be an object", f->path);
    size_t n = (size_t)cJSON_GetArraySize(m), i = 0;
    f->meta = or1_calloc(n, sizeof *f->meta);
    const cJSON *kv;
    cJSON_ArrayForEach(kv, m) {
        if (!cJSON_IsString(kv))
            return or1_fail("%s: __metadata__ value of \"%s\" must be a string", f->path, kv->string);
        f->meta[i].key = or1_strdup(kv->string);
        f->meta[i].value = or1_strdup(kv->valuestring);
        f->n_meta = ++i;
    }
    return 0;
}

/* Validates one tensor entry of the header against the data section size. */
static int parse_entry(or1_st_file *f, const cJSON *t, or1_st_entry *e) {
    const char *name = t->string;
    e->name = or1_strdup(name);
    if (!cJSON_IsObject(t)) return or1_fail("%s: tensor \"%s\": entry is not an object", f->path, name);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(t, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(t, "shape");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(t, "data_offsets");
    if (!cJSON_IsString(dt)) return or1_fail("%s: tensor \"%s\": missing dtype", f->path, name);
    if (parse_dtype(dt->valuestring, &e->dtype) != 0)
        return or1_fail("%s: tensor \"%s\": unsupported dtype %s (F32, BF16, F16)", f->path, name,
                        dt->valuestring);
    if (!cJSON_IsArray(sh) || cJSON_GetArraySize(sh) > OR1_ST_MAX_DIMS)
        return or1_fail("%s: tensor \"%s\": shape must be an array of at most %d dims", f->path, name,
                        OR1_ST_MAX_DIMS);
    e->numel = 1;
    const cJSON *d;
    cJSON_ArrayForEach(d, sh) {
        double v = cJSON_IsNumber(d) ? d->valuedouble : -1;
        if (!(v >= 0 && v <= 1e15) || v != floor(v))
            return or1_fail("%s: tensor \"%s\": bad dimension in shape", f->path, name);
        e->shape[e->ndim++] = (int64_t)v;
        if (v > 0 && e->numel > (size_t)1e15 / (size_t)v)
            return or1_fail("%s: tensor \"%s\": shape too large", f->path, name);
        e->numel *= (size_t)v;
    }
    if (!cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2)
        return or1_fail("%s: tensor \"%s\": data_offsets must be [begin, end]", f->path, name);
    double b = cJSON_GetArrayItem(off, 0)->valuedouble, en = cJSON_GetArrayItem(off, 1)->valuedouble;
    if (!cJSON_IsNumber(cJSON_GetArrayItem(off, 0)) || !cJSON_IsNumber(cJSON_GetArrayItem(off, 1)) ||
        !(b >= 0 && en >= b && en <= (double)f->data_size) || b != floor(b) || en != floor(en))
        return or1_fail("%s: tensor \"%s\": data_offsets [%.0f, %.0f] outside the %zu-byte data section",
                        f->path, name, b, en, f->data_size);
    e->begin = (uint64_t)b;
    e->end = (uint64_t)en;
    if (e->end - e->begin != e->numel * dtype_sizes[e->dtype])
        return or1_fail("%s: tensor \"%s\": %llu bytes for %zu elements of %s", f->path, name,
                        (unsigned long long)(e->end - e->begin), e->numel, dtype_names[e->dtype]);
    return 0;
}

/* Parses and validates the JSON header. */
static int parse_header(or1_st_file *f, const char *text, size_t len) {
    cJSON *h = or1_json_parse(text, len, f->path);
    if (!h) return -1;
    int rc = 0;
    if (!cJSON_IsObject(h)) rc = or1_fail("%s: header is not a JSON object", f->path);
    size_t n = rc ? 0 : (size_t)cJSON_GetArraySize(h);
    f->entries = or1_calloc(n, sizeof *f->entries);
    const cJSON *t;
    if (rc == 0) cJSON_ArrayForEach(t, h) {
        if (strcmp(t->string, "__metadata__") == 0) rc = parse_metadata(f, t);
        else {
            rc = parse_entry(f, t, &f->entries[f->n]);
            f->n++;
        }
        if (rc) break;
    }
    cJSON_Delete(h);
    return rc;
}

/* Maps the file read-only and validates its header. */
int or1_st_open(or1_st_file *f, const char *path) {
    memset(f, 0, sizeof *f);
    f->path = or1_strdup(path);
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        or1_fail("%s: cannot open: %s", path, strerror(errno));
        goto fail;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        or1_fail("%s: not a regular file", path);
        goto fail;
    }
    f->size = (size_t)st.st_size;
    if (f->size < 8) {
        close(fd);
        or1_fail("%s: truncated: %zu bytes, shorter than the 8-byte header length", path, f->size);
        goto fail;
    }
    f->map = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (f->map == MAP_FAILED) {
        f->map = NULL;
        or1_fail("%s: mmap failed: %s", path, strerror(errno));
        goto fail;
    }
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = (hlen << 8) | f->map[i];
    if (hlen > HEADER_MAX || hlen > f->size - 8) {
        or1_fail("%s: header length %llu exceeds the file (%zu bytes) or the limit", path,
                 (unsigned long long)hlen, f->size);
        goto fail;
    }
    f->data = f->map + 8 + hlen;
    f->data_size = f->size - 8 - (size_t)hlen;
    if (parse_header(f, (const char *)f->map + 8, (size_t)hlen) != 0) goto fail;
    return 0;
fail:
    or1_st_close(f);
    return -1;
}

/* Unmaps and frees everything. */
void or1_st_close(or1_st_file *f) {
    if (f->map) munmap(f->map, f->size);
    for (size_t i = 0; i < f->n; i++) free(f->entries[i].name);
    for (size_t i = 0; i < f->n_meta; i++) {
        free(f->meta[i].key);
        free(f->meta[i].value);
    }
    free(f->entries);
    free(f->meta);
    free(f->path);
    memset(f, 0, sizeof *f);
}

/* Linear lookup: headers hold at most a few thousand names. */
const or1_st_entry *or1_st_find(const or1_st_file *f, const char *name) {
    for (size_t i = 0; i < f->n; i++)
        if (strcmp(f->entries[i].name, name) == 0) return &f->entries[i];
    return NULL;
}

/* Metadata lookup. */
const char *or1_st_meta(const or1_st_file *f, const char *key) {
    for (size_t i = 0; i < f->n_meta; i++)
        if (strcmp(f->meta[i].key, key) == 0) return f->meta[i].value;
    return NULL;
}

/* Formats a shape as "[a, b]" for error messages. */
static void shape_str(char *buf, size_t cap, const int64_t *shape, int ndim) {
    size_t k = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < ndim && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (k < cap) snprintf(buf + k, cap - k, "]");
}

/* Checks the expected shape, then converts element by element (unaligned-safe). */
int or1_st_read_f32(const or1_st_file *f, const or1_st_entry *e, const int64_t *shape, int ndim,
                    float *dst) {
    bool same = e->ndim == ndim;
    for (int i = 0; same && i < ndim; i++) same = e->shape[i] == shape[i];
    if (!same) {
        char want[128], got[128];
        shape_str(want, sizeof want, shape, ndim);
        shape_str(got, sizeof got, e->shape, e->ndim);
        return or1_fail("%s: tensor \"%s\" has shape %s, expected %s", f->path, e->name, got, want);
    }
    const uint8_t *src = f->data + e->begin;
    if (e->dtype == OR1_F32) {
        memcpy(dst, src, e->numel * 4);
    } else {
        #pragma omp parallel for schedule(static)
        for (size_t i = 0; i < e->numel; i++) {
            uint16_t h = (uint16_t)(src[2 * i] | (src[2 * i + 1] << 8));
            dst[i] = e->dtype == OR1_BF16 ? or1_bf16_to_f32(h) : or1_f16_to_f32(h);
        }
    }
    return 0;
}

/* Builds the JSON header text, padded with spaces to a multiple of 8 bytes. */
static char *build_header(const or1_st_tensor *t, size_t n, or1_dtype dtype, const or1_st_kv *meta,
                          size_t n_meta, size_t *len) {
    cJSON *h = cJSON_CreateObject();
    if (n_meta) {
        cJSON *m = cJSON_AddObjectToObject(h, "__metadata__");
        for (size_t i = 0; i < n_meta; i++) cJSON_AddStringToObject(m, meta[i].key, meta[i].value);
    }
    uint64_t off = 0;
    for (size_t i = 0; i < n; i++) {
        size_t numel = 1;
        cJSON *e = cJSON_AddObjectToObject(h, t[i].name);
        cJSON_AddStringToObject(e, "dtype", dtype_names[dtype]);
        cJSON *sh = cJSON_AddArrayToObject(e, "shape");
        for (int d = 0; d < t[i].ndim; d++) {
            cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)t[i].shape[d]));
            numel *= (size_t)t[i].shape[d];
        }
        cJSON *o = cJSON_AddArrayToObject(e, "data_offsets");
        cJSON_AddItemToArray(o, cJSON_CreateNumber((double)off));
        off += numel * dtype_sizes[dtype];
        cJSON_AddItemToArray(o, cJSON_CreateNumber((double)off));
    }
    char *text = cJSON_PrintUnformatted(h);
    cJSON_Delete(h);
    size_t l = strlen(text), padded = (l + 7) & ~(size_t)7;
    text = or1_realloc(text, padded + 1);
    memset(text + l, ' ', padded - l);
    text[padded] = '\0';
    *len = padded;
    return text;
}

/* Writes one tensor's data in the requested dtype. */
static int write_tensor(FILE *out, const or1_st_tensor *t, or1_dtype dtype) {
    size_t numel = 1;
    for (int d = 0; d < t->ndim; d++) numel *= (size_t)t->shape[d];
    if (dtype == OR1_F32) return fwrite(t->data, 4, numel, out) == numel ? 0 : -1;
    enum { CHUNK = 4096 };
    uint8_t buf[2 * CHUNK];
    for (size_t i = 0; i < numel; i += CHUNK) {
        size_t m = numel - i < CHUNK ? numel - i : CHUNK;
        for (size_t j = 0; j < m; j++) {
            uint16_t h = or1_f32_to_bf16(t->data[i + j]);
            buf[2 * j] = (uint8_t)(h & 0xff);
            buf[2 * j + 1] = (uint8_t)(h >> 8);
        }
        if (fwrite(buf, 2, m, out) != m) return -1;
    }
    return 0;
}

/* Header + data, written to a temporary file and renamed into place. */
int or1_st_write(const char *path, const or1_st_tensor *t, size_t n, or1_dtype dtype,
                 const or1_st_kv *meta, size_t n_meta) {
    if (dtype == OR1_F16) return or1_fail("%s: writing F16 is not supported (use F32 or BF16)", path);
    size_t hlen;
    char *header = build_header(t, n, dtype, meta, n_meta, &hlen);
    or1_atomic_file a;
    if (or1_atomic_open(&a, path) != 0) {
        free(header);
        return -1;
    }
    uint8_t lenbuf[8];
    for (int i = 0; i < 8; i++) lenbuf[i] = (uint8_t)((uint64_t)hlen >> (8 * i));
    int rc = fwrite(lenbuf, 1, 8, a.f) == 8 && fwrite(header, 1, hlen, a.f) == hlen ? 0 : -1;
    free(header);
    for (size_t i = 0; rc == 0 && i < n; i++) rc = write_tensor(a.f, &t[i], dtype);
    if (rc != 0) {
        or1_atomic_abort(&a);
        return or1_fail("%s: write failed: %s", path, strerror(errno));
    }
    return or1_atomic_commit(&a);
}
