/* The ggml tensor types: one table of id -> name, block size, block bytes, dequantizer and
 * quantizer, and the block formats themselves. Each dequantizer computes its products in the
 * order gguf-py's numpy code does (e.g. Q4_K: (d * sc) * q - dmin * m), so the fp32 results equal
 * gguf-py's bit for bit. Wherever a sum follows, the product is exact in fp32 (a half times
 * integers of a few bits), so fusing could not change it; the quantizers' x * id + 8.5 is not
 * exact and would round differently from gguf-py if fused: this file is built with
 * -ffp-contract=off (CMakeLists.txt). */
#include "or1/io_gguf.h"

#include "or1/core.h"
#include "or1/io_safetensors.h"

#include <math.h>
#include <string.h>

enum { QK = 32, QK_K = 256 };

typedef void (*dequant_fn)(const uint8_t *blk, float *out);
typedef void (*quant_fn)(const float *x, uint8_t *blk);

typedef struct {
    const char *name;
    uint16_t block, bytes;
    dequant_fn dequant;
    quant_fn quant;
} ggml_type_info;

/* A little-endian half at p, widened. */
static float half_at(const uint8_t *p) { return or1_f16_to_f32((uint16_t)(p[0] | p[1] << 8)); }

/* Stores a half little-endian at p. */
static void put_half(uint8_t *p, float f) {
    uint16_t h = or1_f32_to_f16(f);
    p[0] = (uint8_t)h;
    p[1] = (uint8_t)(h >> 8);
}

/* fp32 to IEEE half, nearest even; NaN keeps its top payload bits (as numpy does). */
uint16_t or1_f32_to_f16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu, e = a >> 23;
    if (a > 0x7f800000u) {
        uint16_t m = (uint16_t)((a >> 13) & 0x3ffu);
        return (uint16_t)(sign | 0x7c00u | (m ? m : 1));
    }
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* 65520 and up round to infinity */
    if (e < 102) return sign;                               /* below 2^-25: rounds to zero */
    uint32_t mant, shift;
    if (e < 113) { /* a half subnormal: units of 2^-24 */
        mant = (a & 0x7fffffu) | 0x800000u;
        shift = 126 - e;
    } else { /* rebias the exponent, keep 10 mantissa bits */
        mant = a - ((uint32_t)(127 - 15) << 23);
        shift = 13;
    }
    uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) h++;
    return (uint16_t)(sign | h);
}

/* F32: the value as stored. */
static void dq_f32(const uint8_t *b, float *y) { memcpy(y, b, 4); }
/* F16: a half. */
static void dq_f16(const uint8_t *b, float *y) { *y = half_at(b); }
/* BF16: the top half of an fp32. */
static void dq_bf16(const uint8_t *b, float *y) { *y = or1_bf16_to_f32((uint16_t)(b[0] | b[1] << 8)); }

/* Q4_0: half d, 16 bytes of nibbles (low nibbles elements 0-15, high 16-31); d * (n - 8). */
static void dq_q4_0(const uint8_t *b, float *y) {
    float d = half_at(b);
    for (int j = 0; j < QK / 2; j++) {
        y[j] = d * (float)((b[2 + j] & 15) - 8);
        y[j + QK / 2] = d * (float)((b[2 + j] >> 4) - 8);
    }
}

/* Q4_1: half d, half m, nibbles as Q4_0; d * n + m. */
static void dq_q4_1(const uint8_t *b, float *y) {
    float d = half_at(b), m = half_at(b + 2);
    for (int j = 0; j < QK / 2; j++) {
        y[j] = d * (float)(b[4 + j] & 15) + m;
        y[j + QK / 2] = d * (float)(b[4 + j] >> 4) + m;
    }
}

/* The 32 fifth bits of a Q5 block: element e's is bit e of a little-endian u32. */
static uint32_t u32_at(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Q5_0: half d, u32 high bits, nibbles; d * (n + 16 h - 16). */
static void dq_q5_0(const uint8_t *b, float *y) {
    float d = half_at(b);
    uint32_t qh = u32_at(b + 2);
    const uint8_t *qs = b + 6;
    for (int j = 0; j < QK / 2; j++) {
        int lo = (qs[j] & 15) | (int)((qh >> j) & 1) << 4, hi = (qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
        y[j] = d * (float)(lo - 16);
        y[j + QK / 2] = d * (float)(hi - 16);
    }
}

/* Q5_1: half d, half m, u32 high bits, nibbles; d * (n + 16 h) + m. */
static void dq_q5_1(const uint8_t *b, float *y) {
    float d = half_at(b), m = half_at(b + 2);
    uint32_t qh = u32_at(b + 4);
    const uint8_t *qs = b + 8;
    for (int j = 0; j < QK / 2; j++) {
        int lo = (qs[j] & 15) | (int)((qh >> j) & 1) << 4, hi = (qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
        y[j] = d * (float)lo + m;
        y[j + QK / 2] = d * (float)hi + m;
    }
}

/* Q8_0: half d, 32 signed bytes; d * q. */
static void dq_q8_0(const uint8_t *b, float *y) {
    float d = half_at(b);
    for (int j = 0; j < QK; j++) y[j] = (float)(int8_t)b[2 + j] * d;
}

/* Q2_K: 16 scale bytes (low nibble scale, high nibble min, per 16 elements), 64 bytes of 2-bit
 * values (byte 32h + l holds elements 128h + 32k + l at bits 2k), half d, half dmin. */
static void dq_q2_k(const uint8_t *b, float *y) {
    const uint8_t *sc = b, *qs = b + 16;
    float d = half_at(b + 80), dmin = half_at(b + 82);
    for (int e = 0; e < QK_K; e++) {
        int h = e / 128, k = (e % 128) / 32, l = e % 32, s = sc[e / 16];
        float dl = d * (float)(s & 15), ml = dmin * (float)(s >> 4);
        y[e] = dl * (float)((qs[32 * h + l] >> (2 * k)) & 3) - ml;
    }
}

/* Q3_K: 32 bytes of high bits (element e: bit e/32 of byte e%32, clear means minus 4), 64 bytes of
 * 2-bit values laid out as Q2_K, 12 bytes of sixteen 6-bit scales (offset 32), half d. */
static void dq_q3_k(const uint8_t *b, float *y) {
    const uint8_t *hm = b, *qs = b + 32, *sc = b + 96;
    float d = half_at(b + 108);
    for (int t = 0; t < 16; t++) {
        int lo = t < 8 ? sc[t] & 15 : sc[t - 8] >> 4, hi = (sc[8 + t % 4] >> (2 * (t / 4))) & 3;
        float dl = d * (float)((lo | hi << 4) - 32);
        for (int e = 16 * t; e < 16 * t + 16; e++) {
            int h = e / 128, k = (e % 128) / 32, l = e % 32;
            int q = ((qs[32 * h + l] >> (2 * k)) & 3) - (((hm[l] >> (e / 32)) & 1) ? 0 : 4);
            y[e] = dl * (float)q;
        }
    }
}

/* The eight 6-bit scales and mins of a Q4_K/Q5_K super-block from its 12 scale bytes. */
static void k_scales(const uint8_t *s, int *sc, int *mn) {
    for (int t = 0; t < 4; t++) {
        sc[t] = s[t] & 63;
        mn[t] = s[t + 4] & 63;
        sc[t + 4] = (s[t + 8] & 15) | (s[t] >> 6) << 4;
        mn[t + 4] = (s[t + 8] >> 4) | (s[t + 4] >> 6) << 4;
    }
}

/* Q4_K: half d, half dmin, 12 scale bytes, 128 bytes of nibbles (byte 32g + l: element 64g + l
 * low, 64g + 32 + l high); (d * sc) * n - dmin * m per 32 elements. */
static void dq_q4_k(const uint8_t *b, float *y) {
    float d = half_at(b), dmin = half_at(b + 2);
    int sc[8], mn[8];
    k_scales(b + 4, sc, mn);
    const uint8_t *qs = b + 16;
    for (int t = 0; t < 8; t++) {
        float ds = d * (float)sc[t], dm = dmin * (float)mn[t];
        for (int l = 0; l < 32; l++) y[32 * t + l] = ds * (float)((qs[32 * (t / 2) + l] >> (4 * (t % 2))) & 15) - dm;
    }
}

/* Q5_K: as Q4_K, with 32 bytes of fifth bits between the scales and the nibbles (element e: bit
 * e/32 of byte e%32). */
static void dq_q5_k(const uint8_t *b, float *y) {
    float d = half_at(b), dmin = half_at(b + 2);
    int sc[8], mn[8];
    k_scales(b + 4, sc, mn);
    const uint8_t *qh = b + 16, *qs = b + 48;
    for (int t = 0; t < 8; t++) {
        float ds = d * (float)sc[t], dm = dmin * (float)mn[t];
        for (int l = 0; l < 32; l++) {
            int q = ((qs[32 * (t / 2) + l] >> (4 * (t % 2))) & 15) | ((qh[l] >> t) & 1) << 4;
            y[32 * t + l] = ds * (float)q - dm;
        }
    }
}

/* Q6_K: 128 bytes of low nibbles, 64 bytes of 2-bit highs, 16 signed scales, half d; element
 * e = 128h + 32k + l: nibble of ql[64h + 32(k&1) + l] (low for k < 2), high bits 2k of
 * qh[32h + l]; (d * scale) * (q - 32). */
static void dq_q6_k(const uint8_t *b, float *y) {
    const uint8_t *ql = b, *qh = b + 128, *sc = b + 192;
    float d = half_at(b + 208);
    for (int e = 0; e < QK_K; e++) {
        int h = e / 128, k = (e % 128) / 32, l = e % 32;
        int lo = (ql[64 * h + 32 * (k & 1) + l] >> (4 * (k / 2))) & 15, hi = (qh[32 * h + l] >> (2 * k)) & 3;
        y[e] = (d * (float)(int8_t)sc[e / 16]) * (float)((lo | hi << 4) - 32);
    }
}

/* F32 stored as is. */
static void qz_f32(const float *x, uint8_t *b) { memcpy(b, x, 4); }
/* F16, nearest even. */
static void qz_f16(const float *x, uint8_t *b) { put_half(b, *x); }
/* BF16, nearest even. */
static void qz_bf16(const float *x, uint8_t *b) {
    uint16_t h = or1_f32_to_bf16(*x);
    b[0] = (uint8_t)h;
    b[1] = (uint8_t)(h >> 8);
}

/* v as an integer when it lies in [lo, hi], else 0: where a block's scale is subnormal, 1 / d is
 * infinite and x / d infinite or NaN, which gguf-py's numpy casts turn into 0 (a C cast would be
 * undefined). */
static int int_or_zero(float v, int lo, int hi) { return v >= (float)lo && v <= (float)hi ? (int)v : 0; }

/* Q8_0 as gguf-py (and ggml's reference) computes it: d = amax / 127, q = round(x / d) with ties
 * away from zero (roundf; gguf-py's np_roundf is the same, not numpy's half-to-even), d stored
 * as a half after q is computed from the fp32 d. */
static void qz_q8_0(const float *x, uint8_t *b) {
    float amax = 0;
    for (int j = 0; j < QK; j++) amax = fmaxf(amax, fabsf(x[j]));
    float d = amax / 127.0f, id = d == 0 ? 0.0f : 1.0f / d;
    put_half(b, d);
    for (int j = 0; j < QK; j++) b[2 + j] = (uint8_t)(int8_t)int_or_zero(roundf(x[j] * id), -128, 127);
}

/* Q4_0 as gguf-py computes it: d = (the value of largest magnitude, first one) / -8,
 * n = min(15, trunc(x / d + 8.5)). */
static void qz_q4_0(const float *x, uint8_t *b) {
    int imax = 0;
    for (int j = 1; j < QK; j++)
        if (fabsf(x[j]) > fabsf(x[imax])) imax = j;
    float d = x[imax] / -8.0f, id = d == 0 ? 0.0f : 1.0f / d;
    put_half(b, d);
    for (int j = 0; j < QK / 2; j++) {
        int lo = int_or_zero(truncf(x[j] * id + 8.5f), 0, 255), hi = int_or_zero(truncf(x[j + QK / 2] * id + 8.5f), 0, 255);
        b[2 + j] = (uint8_t)((lo > 15 ? 15 : lo) | (hi > 15 ? 15 : hi) << 4);
    }
}

/* Q4_1 as gguf-py computes it: d = (max - min) / 15, m = min, n = min(15, trunc((x - m) / d + 0.5)). */
static void qz_q4_1(const float *x, uint8_t *b) {
    float lo = x[0], hi = x[0];
    for (int j = 1; j < QK; j++) {
        lo = x[j] < lo ? x[j] : lo;
        hi = x[j] > hi ? x[j] : hi;
    }
    float d = (hi - lo) / 15.0f, id = d == 0 ? 0.0f : 1.0f / d;
    put_half(b, d);
    put_half(b + 2, lo);
    for (int j = 0; j < QK / 2; j++) {
        int a = int_or_zero(truncf((x[j] - lo) * id + 0.5f), 0, 255),
            c = int_or_zero(truncf((x[j + QK / 2] - lo) * id + 0.5f), 0, 255);
        b[4 + j] = (uint8_t)((a > 15 ? 15 : a) | (c > 15 ? 15 : c) << 4);
    }
}

/* Every ggml type id gguf-py 0.19.0 knows, with its block geometry; dequantizers and quantizers
 * where or1 has them. Ids without a name are unknown (removed or not yet assigned). */
static const ggml_type_info types[] = {
    [0] = {"F32", 1, 4, dq_f32, qz_f32},
    [1] = {"F16", 1, 2, dq_f16, qz_f16},
    [2] = {"Q4_0", QK, 18, dq_q4_0, qz_q4_0},
    [3] = {"Q4_1", QK, 20, dq_q4_1, qz_q4_1},
    [6] = {"Q5_0", QK, 22, dq_q5_0, NULL},
    [7] = {"Q5_1", QK, 24, dq_q5_1, NULL},
    [8] = {"Q8_0", QK, 34, dq_q8_0, qz_q8_0},
    [9] = {"Q8_1", QK, 40, NULL, NULL},
    [10] = {"Q2_K", QK_K, 84, dq_q2_k, NULL},
    [11] = {"Q3_K", QK_K, 110, dq_q3_k, NULL},
    [12] = {"Q4_K", QK_K, 144, dq_q4_k, NULL},
    [13] = {"Q5_K", QK_K, 176, dq_q5_k, NULL},
    [14] = {"Q6_K", QK_K, 210, dq_q6_k, NULL},
    [15] = {"Q8_K", QK_K, 292, NULL, NULL},
    [16] = {"IQ2_XXS", QK_K, 66, NULL, NULL},
    [17] = {"IQ2_XS", QK_K, 74, NULL, NULL},
    [18] = {"IQ3_XXS", QK_K, 98, NULL, NULL},
    [19] = {"IQ1_S", QK_K, 50, NULL, NULL},
    [20] = {"IQ4_NL", QK, 18, NULL, NULL},
    [21] = {"IQ3_S", QK_K, 110, NULL, NULL},
    [22] = {"IQ2_S", QK_K, 82, NULL, NULL},
    [23] = {"IQ4_XS", QK_K, 136, NULL, NULL},
    [24] = {"I8", 1, 1, NULL, NULL},
    [25] = {"I16", 1, 2, NULL, NULL},
    [26] = {"I32", 1, 4, NULL, NULL},
    [27] = {"I64", 1, 8, NULL, NULL},
    [28] = {"F64", 1, 8, NULL, NULL},
    [29] = {"IQ1_M", QK_K, 56, NULL, NULL},
    [30] = {"BF16", 1, 2, dq_bf16, qz_bf16},
    [34] = {"TQ1_0", QK_K, 54, NULL, NULL},
    [35] = {"TQ2_0", QK_K, 66, NULL, NULL},
    [39] = {"MXFP4", QK, 17, NULL, NULL},
    [40] = {"NVFP4", 64, 36, NULL, NULL},
    [41] = {"Q1_0", 128, 18, NULL, NULL},
};

/* The table row of a known id, or NULL. */
static const ggml_type_info *type_info(uint32_t type) {
    if (type >= sizeof types / sizeof types[0] || !types[type].name) return NULL;
    return &types[type];
}

/* "Q4_1"... or NULL for an unknown id. */
const char *or1_ggml_type_name(uint32_t type) {
    const ggml_type_info *t = type_info(type);
    return t ? t->name : NULL;
}

/* Elements per block (0: unknown id). */
size_t or1_ggml_block_size(uint32_t type) {
    const ggml_type_info *t = type_info(type);
    return t ? t->block : 0;
}

/* Bytes per block (0: unknown id). */
size_t or1_ggml_type_size(uint32_t type) {
    const ggml_type_info *t = type_info(type);
    return t ? t->bytes : 0;
}

/* Whether or1 has a dequantizer for the type. */
bool or1_ggml_can_dequantize(uint32_t type) {
    const ggml_type_info *t = type_info(type);
    return t && t->dequant;
}

/* Checks a type and a count for a conversion in direction `what`; 0 or -1 with the reason. */
static int check_conversion(const ggml_type_info *t, uint32_t type, size_t n, bool quantize) {
    const char *what = quantize ? "quantize" : "dequantize";
    if (!t) return or1_fail("cannot %s ggml type id %u: unknown type", what, type);
    if (!(quantize ? t->quant != NULL : t->dequant != NULL))
        return or1_fail("cannot %s ggml type %s: not supported", what, t->name);
    if (n % t->block)
        return or1_fail("cannot %s %zu elements of %s: not a multiple of its block size %u", what, n, t->name,
                        t->block);
    return 0;
}

/* Block by block, in parallel for large inputs; each block is independent of the others, so the
 * thread count cannot change a bit. F32 is a copy. */
int or1_ggml_dequantize(uint32_t type, const void *src, size_t n, float *dst) {
    const ggml_type_info *t = type_info(type);
    if (check_conversion(t, type, n, false)) return -1;
    if (type == OR1_GGML_F32) {
        if (n) memcpy(dst, src, n * 4);
        return 0;
    }
    const uint8_t *s = src;
    size_t nb = n / t->block;
    dequant_fn f = t->dequant;
    #pragma omp parallel for schedule(static) if (nb > 4096)
    for (size_t i = 0; i < nb; i++) f(s + i * t->bytes, dst + i * t->block);
    return 0;
}

/* The quantized types round only finite values meaningfully (a NaN's integer cast is undefined). */
static int check_finite(const float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return or1_fail("cannot quantize: element %zu is not finite", i);
    return 0;
}

/* Block by block into dst (n / block x bytes bytes). */
int or1_ggml_quantize(uint32_t type, const float *src, size_t n, void *dst) {
    const ggml_type_info *t = type_info(type);
    if (check_conversion(t, type, n, true)) return -1;
    if (t->block > 1 && check_finite(src, n)) return -1;
    uint8_t *d = dst;
    size_t nb = n / t->block;
    quant_fn f = t->quant;
    #pragma omp parallel for schedule(static) if (nb > 4096)
    for (size_t i = 0; i < nb; i++) f(src + i * t->block, d + i * t->bytes);
    return 0;
}
