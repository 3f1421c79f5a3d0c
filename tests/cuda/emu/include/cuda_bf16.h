/* bfloat16 as the emulator provides it (tests only): the 16-bit type and its conversions, with
 * round to nearest even as __float2bfloat16 does on a GPU. */
#ifndef OR1_EMU_CUDA_BF16_H
#define OR1_EMU_CUDA_BF16_H

#include <stdint.h>
#include <string.h>

struct __nv_bfloat16 {
    uint16_t bits;
};

/* fp32 -> bf16, round to nearest even; a NaN stays a (quiet) NaN. */
static inline __nv_bfloat16 __float2bfloat16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return __nv_bfloat16{(uint16_t)((u >> 16) | 0x40u)};
    u += 0x7fffu + ((u >> 16) & 1u);
    return __nv_bfloat16{(uint16_t)(u >> 16)};
}

/* bf16 -> fp32 (exact). */
static inline float __bfloat162float(__nv_bfloat16 b) {
    uint32_t u = (uint32_t)b.bits << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* The bits of a bf16, and a bf16 from its bits. */
static inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 b) { return b.bits; }
static inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short u) { return __nv_bfloat16{u}; }

#endif
