/* The GGUF reader against hand-made files: a valid one (every value type, two tensors) read
 * through every getter, then the same file broken one field at a time (truncated at every byte,
 * bad magic, version 1 and big-endian, huge counts and lengths, misaligned, overlapping and
 * out-of-range tensors, unknown ids, bad bools, duplicates); each must be refused with a message
 * naming the file and the place. Also: known blocks dequantized by hand, the half rounding, and
 * the writer's output read back. Runs under ASan/LSan in the sanitizer build. */
#include "../check.h"
#include "or1/core.h"
#include "or1/io_gguf.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64], path[128];

/* A file being built, with the offsets of the fields the tests patch. */
typedef struct {
    uint8_t b[4096];
    size_t n;
    size_t at_version, at_ntensors, at_nkv, at_bool, at_arr_count, at_str_len, at_align_type, at_type_u8;
    size_t at_b_ndims, at_b_ne0, at_b_type, at_b_offset, at_a_name, at_data;
} file;

static void put(file *f, const void *p, size_t n) {
    memcpy(f->b + f->n, p, n);
    f->n += n;
}
static void u8(file *f, uint8_t v) { put(f, &v, 1); }
static void u32(file *f, uint32_t v) { put(f, &v, 4); }
static void u64(file *f, uint64_t v) { put(f, &v, 8); }
static void str(file *f, const char *s) {
    u64(f, strlen(s));
    put(f, s, strlen(s));
}
/* A key and its value type. */
static void key(file *f, const char *k, uint32_t type) {
    str(f, k);
    u32(f, type);
}
static void patch32(file *f, size_t at, uint32_t v) { memcpy(f->b + at, &v, 4); }
static void patch64(file *f, size_t at, uint64_t v) { memcpy(f->b + at, &v, 8); }

/* The valid file: every value type, tensor "a" F32 {4, 2} at 0 and "b" Q8_0 {32} at 32, the file
 * ending where b ends. alignment 0 leaves general.alignment out. */
static void build(file *f, uint32_t alignment) {
    memset(f, 0, sizeof *f);
    put(f, "GGUF", 4);
    f->at_version = f->n;
    u32(f, 3);
    f->at_ntensors = f->n;
    u64(f, 2);
    f->at_nkv = f->n;
    u64(f, alignment ? 17 : 16);
    key(f, "general.architecture", 8);
    f->at_str_len = f->n;
    str(f, "llama");
    key(f, "t.u8", 0);
    f->at_type_u8 = f->n - 4;
    u8(f, 200);
    key(f, "t.i8", 1);
    u8(f, 0xfe);
    key(f, "t.u16", 2);
    put(f, &(uint16_t){65535}, 2);
    key(f, "t.i16", 3);
    put(f, &(int16_t){-300}, 2);
    key(f, "t.u32", 4);
    u32(f, 4000000000u);
    key(f, "t.i32", 5);
    u32(f, (uint32_t)-7);
    key(f, "t.f32", 6);
    put(f, &(float){0.5f}, 4);
    key(f, "t.bool", 7);
    f->at_bool = f->n;
    u8(f, 1);
    key(f, "t.u64", 10);
    u64(f, UINT64_MAX);
    key(f, "t.i64", 11);
    u64(f, (uint64_t)-5);
    key(f, "t.f64", 12);
    put(f, &(double){-2.25}, 8);
    key(f, "t.arr_i32", 9);
    u32(f, 5);
    f->at_arr_count = f->n;
    u64(f, 3);
    for (int i = 0; i < 3; i++) u32(f, (uint32_t)(i - 1));
    key(f, "t.arr_str", 9);
    u32(f, 8);
    u64(f, 2);
    str(f, "x");
    str(f, "yz");
    key(f, "t.arr_f32", 9);
    u32(f, 6);
    u64(f, 1);
    put(f, &(float){1.5f}, 4);
    key(f, "t.u64_small", 10);
    u64(f, 42);
    if (alignment) {
        key(f, "general.alignment", 4);
        f->at_align_type = f->n - 4;
        u32(f, alignment);
    }
    f->at_a_name = f->n;
    str(f, "a");
    u32(f, 2);
    u64(f, 4);
    u64(f, 2);
    u32(f, OR1_GGML_F32);
    u64(f, 0);
    str(f, "b");
    f->at_b_ndims = f->n;
    u32(f, 1);
    f->at_b_ne0 = f->n;
    u64(f, 32);
    f->at_b_type = f->n;
    u32(f, OR1_GGML_Q8_0);
    f->at_b_offset = f->n;
    size_t a = alignment ? alignment : 32;
    u64(f, a > 32 ? a : 32);
    while (f->n % a) u8(f, 0);
    f->at_data = f->n;
    for (int i = 0; i < 8; i++) put(f, &(float){(float)i - 3.5f}, 4);
    while ((f->n - f->at_data) % a) u8(f, 0);
    put(f, &(uint16_t){0x3800}, 2); /* d = 0.5 */
    for (int i = 0; i < 32; i++) u8(f, (uint8_t)(int8_t)(i - 16));
}

/* Writes the first n bytes of f to the scratch file. */
static void save(const file *f, size_t n) {
    FILE *o = fopen(path, "wb");
    if (n) fwrite(f->b, 1, n, o);
    fclose(o);
}

/* Opens the first n bytes of f expecting a refusal whose message holds the path and `want`. */
static void refused(const file *f, size_t n, const char *want, int line) {
    save(f, n);
    or1_gguf_file g;
    int rc = or1_gguf_open(&g, path);
    const char *e = or1_error();
    check(rc == -1 && strstr(e, path) && strstr(e, want), line, "expected a refusal with \"%s\", got rc %d: %s", want,
          rc, e);
    if (rc == 0) or1_gguf_close(&g);
}
#define REFUSED(f, want) refused(f, (f)->n, want, __LINE__)

/* The valid file: header fields, every getter, both tensors, the getters' wrong-type errors. */
static void test_valid(void) {
    file f;
    build(&f, 0);
    save(&f, f.n);
    or1_gguf_file g;
    if (!CHECK(or1_gguf_open(&g, path) == 0, "valid file refused: %s", or1_error())) return;
    CHECK(g.version == 3 && g.alignment == 32 && g.n_kv == 16 && g.n_tensors == 2, "header");
    CHECK(g.data_offset == f.at_data, "data offset %zu, expected %zu", g.data_offset, f.at_data);
    CHECK(or1_gguf_is_gguf(path) && !or1_gguf_is_gguf(dir) && !or1_gguf_is_gguf("/nonexistent"), "is_gguf");
    int64_t i = 0;
    double d = 0;
    bool b = false;
    const char *s;
    size_t len;
    CHECK(or1_gguf_get_int(&g, "t.u8", &i) == 0 && i == 200, "u8 %lld", (long long)i);
    CHECK(or1_gguf_get_int(&g, "t.i8", &i) == 0 && i == -2, "i8 %lld", (long long)i);
    CHECK(or1_gguf_get_int(&g, "t.u16", &i) == 0 && i == 65535, "u16");
    CHECK(or1_gguf_get_int(&g, "t.i16", &i) == 0 && i == -300, "i16");
    CHECK(or1_gguf_get_int(&g, "t.u32", &i) == 0 && i == 4000000000LL, "u32");
    CHECK(or1_gguf_get_int(&g, "t.i32", &i) == 0 && i == -7, "i32");
    CHECK(or1_gguf_get_int(&g, "t.i64", &i) == 0 && i == -5, "i64");
    CHECK(or1_gguf_get_int(&g, "t.u64_small", &i) == 0 && i == 42, "u64");
    i = 123;
    CHECK(or1_gguf_get_int(&g, "t.u64", &i) == -1 && i == 123 && strstr(or1_error(), "t.u64"), "u64 > INT64_MAX: %s",
          or1_error());
    CHECK(or1_gguf_get_int(&g, "absent", &i) == 1 && i == 123, "absent int");
    CHECK(or1_gguf_get_float(&g, "t.f32", &d) == 0 && d == 0.5, "f32");
    CHECK(or1_gguf_get_float(&g, "t.f64", &d) == 0 && d == -2.25, "f64");
    CHECK(or1_gguf_get_bool(&g, "t.bool", &b) == 0 && b, "bool");
    CHECK(or1_gguf_get_str(&g, "general.architecture", &s, &len) == 0 && len == 5 && memcmp(s, "llama", 5) == 0, "str");
    CHECK(or1_gguf_get_int(&g, "t.f32", &i) == -1 && strstr(or1_error(), path) && strstr(or1_error(), "\"t.f32\"") &&
              strstr(or1_error(), "f32"),
          "int getter on f32: %s", or1_error());
    CHECK(or1_gguf_get_float(&g, "t.i32", &d) == -1 && strstr(or1_error(), "\"t.i32\""), "float getter on i32");
    CHECK(or1_gguf_get_bool(&g, "t.u8", &b) == -1 && strstr(or1_error(), "\"t.u8\""), "bool getter on u8");
    CHECK(or1_gguf_get_str(&g, "t.arr_str", &s, &len) == -1 && strstr(or1_error(), "array"), "str getter on array");
    const or1_gguf_kv *kv = NULL;
    CHECK(or1_gguf_get_array(&g, "t.arr_i32", 'i', &kv) == 0 && kv->n == 3 && or1_gguf_array_int(kv, 0) == -1 &&
              or1_gguf_array_int(kv, 2) == 1,
          "int array");
    CHECK(or1_gguf_get_array(&g, "t.arr_str", 's', &kv) == 0 && kv->n == 2, "string array");
    or1_gguf_array_str(kv, 1, &s, &len);
    CHECK(len == 2 && memcmp(s, "yz", 2) == 0, "string element");
    CHECK(or1_gguf_get_array(&g, "t.arr_f32", 'f', &kv) == 0 && or1_gguf_array_float(kv, 0) == 1.5, "float array");
    CHECK(or1_gguf_get_array(&g, "t.arr_i32", 's', &kv) == -1 && strstr(or1_error(), "array of i32") &&
              strstr(or1_error(), path),
          "class check: %s", or1_error());
    CHECK(or1_gguf_get_array(&g, "t.u8", 'i', &kv) == -1 && strstr(or1_error(), "\"t.u8\""), "array getter on u8");
    CHECK(or1_gguf_get_array(&g, "absent", 'i', &kv) == 1, "absent array");
    const or1_gguf_tensor *a = or1_gguf_tensor_find(&g, "a"), *q = or1_gguf_tensor_find(&g, "b");
    if (CHECK(a && q && !or1_gguf_tensor_find(&g, "c"), "tensor_find")) {
        CHECK(a->ndim == 2 && a->ne[0] == 4 && a->ne[1] == 2 && a->ne[2] == 1 && a->numel == 8 && a->nbytes == 32, "a");
        CHECK(q->type == OR1_GGML_Q8_0 && q->numel == 32 && q->nbytes == 34 && q->offset == 32, "b");
        float x[32];
        CHECK(or1_gguf_read_f32(&g, a, x) == 0 && x[0] == -3.5f && x[7] == 3.5f, "read a");
        CHECK(or1_gguf_read_f32(&g, q, x) == 0 && x[0] == -8.0f && x[31] == 7.5f, "read b: %g %g", x[0], x[31]);
    }
    or1_gguf_close(&g);
}

/* Every prefix of the valid file is refused, naming the file and the place. */
static void test_truncated(void) {
    file f;
    build(&f, 0);
    for (size_t n = 0; n < f.n; n++) {
        save(&f, n);
        or1_gguf_file g;
        int rc = or1_gguf_open(&g, path);
        const char *e = or1_error();
        bool named = strstr(e, "offset ") || strstr(e, "tensor \"");
        CHECK(rc == -1 && strstr(e, path) && named, "prefix of %zu bytes: rc %d: %s", n, rc, e);
        if (rc == 0) or1_gguf_close(&g);
    }
}

/* Header, counts and lengths. */
static void test_header(void) {
    file f;
    build(&f, 0);
    f.b[0] = 'X';
    REFUSED(&f, "not a GGUF file");
    build(&f, 0);
    patch32(&f, f.at_version, 1);
    REFUSED(&f, "version 1");
    patch32(&f, f.at_version, 0x03000000u);
    REFUSED(&f, "big-endian");
    patch32(&f, f.at_version, 4);
    REFUSED(&f, "version 4");
    build(&f, 0);
    patch64(&f, f.at_nkv, (uint64_t)1 << 60);
    REFUSED(&f, "key/value count");
    build(&f, 0);
    patch64(&f, f.at_ntensors, UINT64_MAX);
    REFUSED(&f, "tensor count");
    build(&f, 0);
    patch64(&f, f.at_arr_count, (uint64_t)1 << 61);
    REFUSED(&f, "key \"t.arr_i32\"");
    build(&f, 0);
    patch64(&f, f.at_str_len, UINT64_MAX - 3);
    REFUSED(&f, "key \"general.architecture\": truncated");
    build(&f, 0);
    patch64(&f, 24, 0); /* the first key's length */
    REFUSED(&f, "key #0");
    build(&f, 0);
    f.b[f.at_bool] = 2;
    REFUSED(&f, "bool value 2");
    build(&f, 0);
    patch32(&f, f.at_type_u8, 13);
    REFUSED(&f, "unknown value type 13");
    build(&f, 0);
    patch32(&f, f.at_arr_count - 4, 9);
    REFUSED(&f, "nested arrays");
    build(&f, 0);
    f.b[24] = 4; /* the first key cut to "gene": "ral." is then read as its value type */
    REFUSED(&f, "key \"gene\": unknown value type");
}

/* Duplicates, alignment, tensor infos and placement. */
static void test_tensors(void) {
    file f;
    build(&f, 0);
    memcpy(f.b + f.at_b_ndims - 1, "a", 1);
    REFUSED(&f, "tensor \"a\" appears twice");
    build(&f, 0);
    memcpy(f.b + 24 + 8, "t.u8\0\0\0\0", 8); /* key 0 renamed t.u8\0... : a NUL inside */
    REFUSED(&f, "no NUL");
    build(&f, 0);
    patch64(&f, f.at_b_offset, 33);
    REFUSED(&f, "offset 33 is not a multiple of the alignment 32");
    patch64(&f, f.at_b_offset, 0);
    REFUSED(&f, "tensor \"b\" (bytes 0..34 of the data section) overlaps tensor \"a\"");
    patch64(&f, f.at_b_offset, 64);
    REFUSED(&f, "tensor \"b\": bytes 64..98");
    patch64(&f, f.at_b_offset, UINT64_MAX - 31);
    REFUSED(&f, "outside");
    build(&f, 0);
    patch32(&f, f.at_b_type, 4);
    REFUSED(&f, "tensor \"b\": unknown ggml type id 4");
    patch32(&f, f.at_b_type, 1000);
    REFUSED(&f, "unknown ggml type id 1000");
    build(&f, 0);
    patch64(&f, f.at_b_ne0, 16);
    REFUSED(&f, "tensor \"b\": ne[0] = 16 is not a multiple of the Q8_0 block size 32");
    patch64(&f, f.at_b_ne0, (uint64_t)1 << 63);
    REFUSED(&f, "tensor \"b\": dim 0 is 9223372036854775808");
    patch64(&f, f.at_b_ne0, (uint64_t)1 << 62);
    patch32(&f, f.at_b_type, OR1_GGML_F32);
    REFUSED(&f, "tensor \"b\": shape too large");
    build(&f, 0);
    patch32(&f, f.at_b_ndims, 5);
    REFUSED(&f, "tensor \"b\": 5 dims");
    build(&f, 0);
    patch32(&f, f.at_b_type, OR1_GGML_F32); /* 128 bytes from offset 32: past the end */
    REFUSED(&f, "outside the 66-byte data section");
    build(&f, 0);
    patch32(&f, f.at_b_type, 16); /* IQ2_XXS: 256-element blocks */
    REFUSED(&f, "IQ2_XXS block size 256");
    /* a 64-byte name */
    build(&f, 0);
    file h = f;
    h.n = f.at_a_name;
    char name[65];
    memset(name, 'n', 64);
    name[64] = '\0';
    str(&h, name);
    put(&h, f.b + f.at_a_name + 9, f.n - f.at_a_name - 9);
    REFUSED(&h, "tensor #0");
    /* alignment: non-default accepted, non-power of two and wrong type refused */
    build(&f, 64);
    save(&f, f.n);
    or1_gguf_file g;
    if (CHECK(or1_gguf_open(&g, path) == 0, "alignment 64 refused: %s", or1_error())) {
        CHECK(g.alignment == 64 && g.data_offset % 64 == 0 && g.tensors[1].offset == 64, "alignment 64");
        or1_gguf_close(&g);
    }
    build(&f, 48);
    REFUSED(&f, "general.alignment\": must be a u32 power of two");
    build(&f, 32);
    patch32(&f, f.at_align_type, 5);
    REFUSED(&f, "(is i32");
}

/* A tensor of a type or1 knows but cannot dequantize opens, and reading it says why. */
static void test_unsupported(void) {
    file f;
    build(&f, 0);
    patch32(&f, f.at_b_type, 20); /* IQ4_NL: 32 elements in 18 bytes, so it fits in b's 34 */
    save(&f, f.n);
    or1_gguf_file g;
    if (!CHECK(or1_gguf_open(&g, path) == 0, "IQ4_NL refused: %s", or1_error())) return;
    float x[32];
    CHECK(or1_gguf_read_f32(&g, &g.tensors[1], x) == -1 && strstr(or1_error(), "tensor \"b\"") &&
              strstr(or1_error(), "IQ4_NL") && strstr(or1_error(), path),
          "unsupported type: %s", or1_error());
    or1_gguf_close(&g);
    CHECK(or1_ggml_dequantize(OR1_GGML_Q8_0, f.b, 31, x) == -1 && strstr(or1_error(), "multiple"), "partial block");
    CHECK(or1_ggml_dequantize(5, f.b, 32, x) == -1 && strstr(or1_error(), "unknown"), "unknown id");
    CHECK(or1_ggml_type_name(4) == NULL && strcmp(or1_ggml_type_name(OR1_GGML_Q6_K), "Q6_K") == 0, "type names");
}

/* Blocks with known values: the nibble order, the fifth bits, the scale and min packing. */
static void test_blocks(void) {
    uint8_t b[256] = {0};
    float y[256];
    /* Q4_0, d = 1: low nibble j, high nibble 15 - j */
    b[0] = 0x00;
    b[1] = 0x3c;
    for (int j = 0; j < 16; j++) b[2 + j] = (uint8_t)(j | (15 - j) << 4);
    or1_ggml_dequantize(OR1_GGML_Q4_0, b, 32, y);
    bool ok = true;
    for (int j = 0; j < 16; j++) ok &= y[j] == (float)(j - 8) && y[16 + j] == (float)(7 - j);
    CHECK(ok, "Q4_0 nibble order: y[0] %g y[16] %g", y[0], y[16]);
    /* Q5_1, d = 1, m = -2 (0xc000): high bits set for odd elements */
    memset(b, 0, sizeof b);
    b[1] = 0x3c;
    b[3] = 0xc0;
    b[4] = b[5] = b[6] = b[7] = 0xaa;
    for (int j = 0; j < 16; j++) b[8 + j] = (uint8_t)(j | j << 4);
    or1_ggml_dequantize(OR1_GGML_Q5_1, b, 32, y);
    ok = true;
    for (int j = 0; j < 32; j++) ok &= y[j] == (float)((j % 16) + 16 * (j & 1) - 2);
    CHECK(ok, "Q5_1 fifth bits: y[1] %g y[17] %g", y[1], y[17]);
    /* Q4_K, d = 1, dmin = 1: sub-block t has scale t + 1 (t >= 4 via the packed high bits) and min 2t,
     * every nibble 1 */
    memset(b, 0, sizeof b);
    b[1] = 0x3c;
    b[3] = 0x3c;
    int sc[8] = {1, 2, 3, 4, 37, 38, 39, 40}, mn[8] = {0, 2, 4, 6, 40, 42, 44, 46};
    for (int t = 0; t < 4; t++) {
        b[4 + t] = (uint8_t)(sc[t] | (sc[t + 4] >> 4) << 6);
        b[8 + t] = (uint8_t)(mn[t] | (mn[t + 4] >> 4) << 6);
        b[12 + t] = (uint8_t)((sc[t + 4] & 15) | (mn[t + 4] & 15) << 4);
    }
    memset(b + 16, 0x11, 128);
    or1_ggml_dequantize(OR1_GGML_Q4_K, b, 256, y);
    ok = true;
    for (int e = 0; e < 256; e++) ok &= y[e] == (float)(sc[e / 32] - mn[e / 32]);
    CHECK(ok, "Q4_K scales: y[0] %g y[128] %g y[255] %g", y[0], y[128], y[255]);
    /* Q6_K, d = 1, scales 1: element e's 6-bit value is e % 64 */
    memset(b, 0, sizeof b);
    for (int e = 0; e < 256; e++) {
        int q = e % 64, h = e / 128, k = (e % 128) / 32, l = e % 32;
        b[64 * h + 32 * (k & 1) + l] |= (uint8_t)((q & 15) << (4 * (k / 2)));
        b[128 + 32 * h + l] |= (uint8_t)((q >> 4) << (2 * k));
    }
    memset(b + 192, 1, 16);
    b[209] = 0x3c;
    or1_ggml_dequantize(OR1_GGML_Q6_K, b, 256, y);
    ok = true;
    for (int e = 0; e < 256; e++) ok &= y[e] == (float)(e % 64 - 32);
    CHECK(ok, "Q6_K layout: y[1] %g y[100] %g", y[1], y[100]);
}

/* fp32 -> half: nearest even, overflow, subnormals, the rounding edges. */
static void test_half(void) {
    struct {
        float x;
        uint16_t h;
    } cases[] = {{1.0f, 0x3c00},       {-2.0f, 0xc000},     {65504.0f, 0x7bff},     {65519.99f, 0x7bff},
                 {65520.0f, 0x7c00},   {1e9f, 0x7c00},      {0x1p-24f, 0x0001},     {0x1p-25f, 0x0000},
                 {0x1.8p-25f, 0x0001}, {0x1.8p-24f, 0x0002}, {0x1p-14f, 0x0400},    {0.1f, 0x2e66},
                 {1.0009765625f + 0x1p-11f, 0x3c02}, {1.0f + 0x1p-11f, 0x3c00}, {-0.0f, 0x8000}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK(or1_f32_to_f16(cases[i].x) == cases[i].h, "half(%a) = %04x, expected %04x", (double)cases[i].x,
              or1_f32_to_f16(cases[i].x), cases[i].h);
}

/* The writer's file reads back: keys, tensors, padding; misuse is reported at write time. */
static void test_writer(void) {
    float x[64];
    for (int i = 0; i < 64; i++) x[i] = (float)i / 8 - 4;
    or1_gguf_writer *w = or1_gguf_writer_new();
    or1_gguf_set_str(w, "general.architecture", "llama", 5);
    or1_gguf_set_u32(w, "a.u32", 7);
    or1_gguf_set_bool(w, "a.bool", true);
    const char *strs[] = {"p", "qq"};
    size_t lens[] = {1, 2};
    or1_gguf_set_arr_str(w, "a.strs", strs, lens, 2);
    int64_t ne[2] = {32, 2}, ne1[1] = {3};
    CHECK(or1_gguf_add_tensor(w, "q", x, 2, ne, OR1_GGML_Q8_0) == 0, "add q");
    CHECK(or1_gguf_add_tensor(w, "f", x, 1, ne1, OR1_GGML_F32) == 0, "add f");
    CHECK(or1_gguf_add_tensor(w, "f", x, 1, ne1, OR1_GGML_F32) == -1 && strstr(or1_error(), "twice"), "dup tensor");
    CHECK(or1_gguf_add_tensor(w, "g", x, 1, ne1, OR1_GGML_Q8_0) == -1 && strstr(or1_error(), "block size"), "partial");
    CHECK(or1_gguf_add_tensor(w, "g", x, 1, ne1, OR1_GGML_Q6_K) == -1 && strstr(or1_error(), "cannot write"), "Q6_K");
    char out[160];
    snprintf(out, sizeof out, "%s/w.gguf", dir);
    CHECK(or1_gguf_write(w, out) == 0, "write: %s", or1_error());
    or1_gguf_file g;
    if (CHECK(or1_gguf_open(&g, out) == 0, "read back: %s", or1_error())) {
        int64_t v;
        const or1_gguf_kv *kv;
        CHECK(g.n_kv == 4 && or1_gguf_get_int(&g, "a.u32", &v) == 0 && v == 7, "u32 back");
        CHECK(or1_gguf_get_array(&g, "a.strs", 's', &kv) == 0 && kv->n == 2, "strings back");
        CHECK(g.size % 32 == 0 && g.data_offset % 32 == 0 && g.tensors[1].offset == 96, "padding: size %zu", g.size);
        float y[64];
        CHECK(or1_gguf_read_f32(&g, &g.tensors[1], y) == 0 && y[2] == x[2], "f back");
        CHECK(or1_gguf_read_f32(&g, &g.tensors[0], y) == 0 && near(y[0], -4, 0.02, 0) && near(y[63], 3.875, 0.02, 0), "q back: %g", y[63]);
        or1_gguf_close(&g);
    }
    unlink(out); /* a failed write leaves no file behind */
    or1_gguf_writer *bad = or1_gguf_writer_new();
    float nan[32] = {[5] = NAN};
    or1_gguf_add_tensor(bad, "n", nan, 1, ne, OR1_GGML_Q8_0);
    CHECK(or1_gguf_write(bad, out) == -1 && strstr(or1_error(), "tensor \"n\"") && strstr(or1_error(), "element 5") &&
              access(out, F_OK) != 0,
          "NaN into Q8_0: %s", or1_error());
    or1_gguf_writer_free(bad);
    or1_gguf_set_u32(w, "a.u32", 8);
    CHECK(or1_gguf_write(w, out) == -1 && strstr(or1_error(), "\"a.u32\" set twice"), "dup key: %s", or1_error());
    or1_gguf_writer_free(w);
    unlink(out);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/or1-gguf-XXXXXX");
    if (!mkdtemp(dir)) return 1;
    snprintf(path, sizeof path, "%s/t.gguf", dir);
    test_valid();
    test_truncated();
    test_header();
    test_tensors();
    test_unsupported();
    test_blocks();
    test_half();
    test_writer();
    unlink(path);
    rmdir(dir);
    return check_report();
}
