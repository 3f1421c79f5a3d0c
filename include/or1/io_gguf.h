/* GGUF reading (mmap, every count, length and offset checked) and writing (atomic, GGUF v3).
 * Layout (little-endian): magic "GGUF", version u32 (2 or 3), tensor count u64, key/value count
 * u64, the key/value records (key string, value type u32, value), the tensor infos (name string,
 * n_dims u32, n_dims x u64 dims fastest first, ggml type u32, offset u64 from the data section),
 * zero padding to the alignment (general.alignment, default 32), then the tensor data. A string
 * is a u64 byte length and the bytes, no terminator. docs/gguf.md says what is supported. */
#ifndef OR1_GGUF_H
#define OR1_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Metadata value types, numbered as in the file (0..12). */
typedef enum {
    OR1_GGUF_U8, OR1_GGUF_I8, OR1_GGUF_U16, OR1_GGUF_I16, OR1_GGUF_U32, OR1_GGUF_I32, OR1_GGUF_F32,
    OR1_GGUF_BOOL, OR1_GGUF_STRING, OR1_GGUF_ARRAY, OR1_GGUF_U64, OR1_GGUF_I64, OR1_GGUF_F64
} or1_gguf_vtype;

/* ggml tensor type ids as in the file (the reader also knows the sizes of the other ggml types,
 * IQ*, TQ*, MXFP4...; those open but cannot be dequantized). */
enum {
    OR1_GGML_F32 = 0, OR1_GGML_F16 = 1, OR1_GGML_Q4_0 = 2, OR1_GGML_Q4_1 = 3, OR1_GGML_Q5_0 = 6,
    OR1_GGML_Q5_1 = 7, OR1_GGML_Q8_0 = 8, OR1_GGML_Q2_K = 10, OR1_GGML_Q3_K = 11, OR1_GGML_Q4_K = 12,
    OR1_GGML_Q5_K = 13, OR1_GGML_Q6_K = 14, OR1_GGML_BF16 = 30
};

enum { OR1_GGUF_MAX_DIMS = 4, OR1_GGUF_MAX_NAME = 64, OR1_GGUF_DEFAULT_ALIGNMENT = 32 };

/* One key/value record. type is the value's type; for an array, elem is the element type and n
 * the element count (scalars: elem = type, n = 1). val points into the map: at the value bytes of
 * a scalar, at the u64 length prefix of a string, at the first element of an array. elems (string
 * arrays only) holds each element's start (its length prefix). */
typedef struct {
    char *key;
    or1_gguf_vtype type, elem;
    uint64_t n;
    const uint8_t *val;
    const uint8_t **elems;
} or1_gguf_kv;

/* One tensor: ne in ggml order (ne[0] fastest, missing dims 1); data points into the map. */
typedef struct {
    char *name;
    uint32_t type;
    int ndim;
    int64_t ne[OR1_GGUF_MAX_DIMS];
    size_t numel, nbytes;
    const uint8_t *data;
    uint64_t offset; /* from the start of the data section */
} or1_gguf_tensor;

typedef struct {
    char *path;
    uint8_t *map;
    size_t size;
    uint32_t version;
    size_t alignment;
    or1_gguf_kv *kv;
    size_t n_kv;
    or1_gguf_tensor *tensors;
    size_t n_tensors;
    size_t data_offset; /* file offset of the data section */
} or1_gguf_file;

/* Maps and validates everything; an error names the file, the byte offset and the key/tensor. */
int or1_gguf_open(or1_gguf_file *f, const char *path);
void or1_gguf_close(or1_gguf_file *f);
/* A regular file starting with the GGUF magic. */
bool or1_gguf_is_gguf(const char *path);
const or1_gguf_kv *or1_gguf_kv_find(const or1_gguf_file *f, const char *key);

/* Scalar getters: 0 found, 1 absent (out untouched), -1 present with a wrong type (error set
 * naming the file and the key). */
int or1_gguf_get_int(const or1_gguf_file *f, const char *key, int64_t *out); /* any integer type (u64 > INT64_MAX refused) */
int or1_gguf_get_float(const or1_gguf_file *f, const char *key, double *out); /* f32/f64 */
int or1_gguf_get_bool(const or1_gguf_file *f, const char *key, bool *out);
int or1_gguf_get_str(const or1_gguf_file *f, const char *key, const char **s, size_t *len); /* not NUL-terminated */

/* Arrays: 0/1/-1 as above; checks the element type class ('s' strings, 'i' integers, 'f' floats). */
int or1_gguf_get_array(const or1_gguf_file *f, const char *key, char cls, const or1_gguf_kv **kv);
/* Element i (< kv->n) of an array of the class get_array checked. A u64 element above INT64_MAX
 * reads as INT64_MAX. */
void or1_gguf_array_str(const or1_gguf_kv *kv, uint64_t i, const char **s, size_t *len);
int64_t or1_gguf_array_int(const or1_gguf_kv *kv, uint64_t i);
double or1_gguf_array_float(const or1_gguf_kv *kv, uint64_t i);

const or1_gguf_tensor *or1_gguf_tensor_find(const or1_gguf_file *f, const char *name);
/* The value type's name ("u32", "string"...), or "?" for an id outside 0..12. */
const char *or1_gguf_vtype_name(uint32_t type);

/* ggml types: "Q4_1"... or NULL for an unknown id; elements per block and bytes per block (0 for
 * an unknown id); whether or1 can dequantize it. */
const char *or1_ggml_type_name(uint32_t type);
size_t or1_ggml_block_size(uint32_t type);
size_t or1_ggml_type_size(uint32_t type);
bool or1_ggml_can_dequantize(uint32_t type);

/* Dequantizes a whole tensor to fp32 (numel floats); an unsupported type is an error naming the
 * tensor and the type. */
int or1_gguf_read_f32(const or1_gguf_file *f, const or1_gguf_tensor *t, float *dst);
/* Dequantizes n elements (a multiple of the block size) of type from src. Blocks are independent,
 * so the result does not depend on the thread count. */
int or1_ggml_dequantize(uint32_t type, const void *src, size_t n, float *dst);
/* Quantizes n elements (a multiple of the block size) into dst; F32, F16, BF16, Q8_0, Q4_0 and
 * Q4_1, each byte for byte what gguf-py 0.19.0's quants.quantize writes. */
int or1_ggml_quantize(uint32_t type, const float *src, size_t n, void *dst);

/* fp32 to IEEE half, round to nearest even (overflow to infinity, NaN kept a NaN). */
uint16_t or1_f32_to_f16(float f);

/* Writer: keys and tensors in the order added; tensors quantized from fp32 at write time. A setter
 * given a key already set (or an add given a bad tensor) makes or1_gguf_write fail, saying which. */
typedef struct or1_gguf_writer or1_gguf_writer;
or1_gguf_writer *or1_gguf_writer_new(void);
void or1_gguf_writer_free(or1_gguf_writer *w);
void or1_gguf_set_str(or1_gguf_writer *w, const char *key, const char *s, size_t len);
void or1_gguf_set_u32(or1_gguf_writer *w, const char *key, uint32_t v);
void or1_gguf_set_i32(or1_gguf_writer *w, const char *key, int32_t v);
void or1_gguf_set_f32(or1_gguf_writer *w, const char *key, float v);
void or1_gguf_set_bool(or1_gguf_writer *w, const char *key, bool v);
void or1_gguf_set_arr_str(or1_gguf_writer *w, const char *key, const char *const *s, const size_t *len, size_t n);
void or1_gguf_set_arr_i32(or1_gguf_writer *w, const char *key, const int32_t *v, size_t n);
void or1_gguf_set_arr_f32(or1_gguf_writer *w, const char *key, const float *v, size_t n);
/* data is read at write time (kept by pointer); ne in ggml order; type F32, F16, BF16, Q8_0, Q4_0
 * or Q4_1. Returns -1 (error set) for a bad name, shape or type, or a name already added. */
int or1_gguf_add_tensor(or1_gguf_writer *w, const char *name, const float *data, int ndim, const int64_t *ne,
                        uint32_t type);
/* Atomic (temp file + rename), alignment 32, GGUF v3. */
int or1_gguf_write(or1_gguf_writer *w, const char *path);

#endif
