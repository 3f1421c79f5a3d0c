/* Safetensors reading (mmap, every offset checked) and writing (F32 or BF16).
 * Format: 8-byte little-endian header length N, N bytes of JSON header mapping tensor
 * names to {dtype, shape, data_offsets:[begin,end)} relative to the data that follows,
 * plus an optional "__metadata__" string map. */
#ifndef OR1_SAFETENSORS_H
#define OR1_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

typedef enum { OR1_F32 = 0, OR1_BF16 = 1, OR1_F16 = 2 } or1_dtype;

enum { OR1_ST_MAX_DIMS = 8 };

typedef struct {
    char *name;
    or1_dtype dtype;
    int ndim;
    int64_t shape[OR1_ST_MAX_DIMS];
    size_t numel;
    uint64_t begin, end; /* byte range within the data section */
} or1_st_entry;

typedef struct or1_st_kv {
    char *key, *value;
} or1_st_kv;

typedef struct {
    char *path;
    uint8_t *map;
    size_t size;
    const uint8_t *data;
    size_t data_size;
    or1_st_entry *entries;
    size_t n;
    or1_st_kv *meta;
    size_t n_meta;
} or1_st_file;

/* Maps and validates a file: header bounds, JSON shape, dtypes, offsets vs shapes. */
int or1_st_open(or1_st_file *f, const char *path);
void or1_st_close(or1_st_file *f);
/* The entry called name, or NULL. */
const or1_st_entry *or1_st_find(const or1_st_file *f, const char *name);
/* A "__metadata__" value, or NULL. */
const char *or1_st_meta(const or1_st_file *f, const char *key);
/* Converts an entry to fp32 into dst (numel floats); checks the shape matches. */
int or1_st_read_f32(const or1_st_file *f, const or1_st_entry *e, const int64_t *shape, int ndim,
                    float *dst);

/* One tensor to write. */
typedef struct {
    const char *name;
    const float *data;
    int ndim;
    int64_t shape[OR1_ST_MAX_DIMS];
} or1_st_tensor;

/* Writes tensors (converted to dtype: F32 or BF16) and metadata pairs, atomically. */
int or1_st_write(const char *path, const or1_st_tensor *t, size_t n, or1_dtype dtype,
                 const or1_st_kv *meta, size_t n_meta);

/* fp32 <-> bf16/f16 conversions (round to nearest even for bf16). */
float or1_bf16_to_f32(uint16_t h);
uint16_t or1_f32_to_bf16(float f);
float or1_f16_to_f32(uint16_t h);

#endif
