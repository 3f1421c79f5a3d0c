/* Intel AMX bf16 tile matmul (TDPBF16PS) for the batch-invariant rows kernel: detection and the
 * Linux permission request, the weights' tile layout, the tile kernel, and the same arithmetic
 * without tiles in the instruction's documented order (the test's exact reference).
 *
 * Tiles: C holds up to 16 rows x 16 fp32 outputs, A up to 16 rows x 32 bf16 inputs, B 16 rows of
 * 16 outputs x 2 inputs (an input pair per row: the "VNNI" layout). Each output element is
 * accumulated over the inputs in order, two products at a time, whatever the number of rows in
 * the tile, so a row's result is the same bits alone or in any batch. */
#include "or1/kernels.h"

#include "or1/core.h"

#include <cpuid.h>
#include <immintrin.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

enum {
    AMX_M = 16, AMX_N = 16, AMX_K = 32,   /* rows, outputs and inputs of one tile step */
    ARCH_GET_XCOMP_PERM = 0x1022, ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18,
};

/* The answer of the first or1_amx_usable call: 1 usable, 0 not (with its reason). */
static int amx_state = -1;
static const char *amx_why = "not checked";

/* Asks the CPU (CPUID leaf 7: AMX-BF16 is EDX bit 22, AMX-TILE bit 24) and then Linux, which
 * lends the 8 KiB tile state only to a process that requests it, whether tiles can run here. */
static void amx_probe(void) {
    unsigned a, b, c, d;
    amx_state = 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 24)) || !(d & (1u << 22))) {
        amx_why = "the CPU has no AMX-TILE and AMX-BF16 (CPUID leaf 7)";
        return;
    }
    unsigned long granted = 0;
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0 ||
        syscall(SYS_arch_prctl, ARCH_GET_XCOMP_PERM, &granted) != 0 || !(granted & (1ul << XFEATURE_XTILEDATA))) {
        amx_why = "Linux refused the tile data state (arch_prctl ARCH_REQ_XCOMP_PERM; kernel 5.16 or later)";
        return;
    }
    amx_state = 1;
    amx_why = NULL;
}

/* See kernels.h. */
bool or1_amx_usable(const char **why) {
    #pragma omp critical(or1_amx_probe)
    if (amx_state < 0) amx_probe();
    if (why) *why = amx_why;
    return amx_state == 1;
}

/* Blocks of n by step (the last one padded). */
static int blocks(int n, int step) { return (n + step - 1) / step; }

/* See kernels.h: output block by output block, each input block's 16 x 32 tile of W^T in pairs
 * of inputs per row, zero past the matrix. */
size_t or1_amx_packed_len(int in, int out) {
    return (size_t)blocks(out, AMX_N) * blocks(in, AMX_K) * AMX_N * AMX_K;
}

/* See kernels.h. */
void or1_amx_pack(or1_bf16 *dst, const or1_bf16 *w, int in, int out) {
    int nk = blocks(in, AMX_K);
    for (int nb = 0; nb < blocks(out, AMX_N); nb++)
        for (int kb = 0; kb < nk; kb++) {
            or1_bf16 *t = dst + ((size_t)nb * nk + kb) * AMX_N * AMX_K;
            for (int p = 0; p < AMX_K / 2; p++)
                for (int n = 0; n < AMX_N; n++)
                    for (int e = 0; e < 2; e++) {
                        int o = nb * AMX_N + n, k = kb * AMX_K + 2 * p + e;
                        t[(p * AMX_N + n) * 2 + e] = o < out && k < in ? w[(size_t)o * in + k] : 0;
                    }
        }
}

/* The inputs rounded to bf16, rows of nk * 32 values (zero past `in`). */
static or1_bf16 *round_inputs(const float *x, int B, int in, int nk) {
    size_t ld = (size_t)nk * AMX_K;
    or1_bf16 *a = or1_calloc((size_t)B * ld, sizeof *a);
    for (int r = 0; r < B; r++) or1_bf16_from_f32(a + r * ld, x + (size_t)r * in, (size_t)in);
    return a;
}

/* Writes a block's m x 16 accumulators into y (the outputs that exist) with the bias. */
static void store_block(float *y, const float *c, const float *b, int m, int o0, int out) {
    int n = out - o0 < AMX_N ? out - o0 : AMX_N;
    for (int r = 0; r < m; r++)
        for (int j = 0; j < n; j++) y[(size_t)r * out + o0 + j] = c[r * AMX_N + j] + (b ? b[o0 + j] : 0.0f);
}

/* The tile configuration of palette 1 (64 bytes, as LDTILECFG reads it). */
typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

/* One block: m rows (a, ld bf16 apart) against one output block's nk packed tiles into c. */
__attribute__((target("amx-tile,amx-bf16"))) static void tile_block(float *c, const or1_bf16 *a, size_t ld,
                                                                     const or1_bf16 *bp, int nk, int m) {
    tile_config cfg = {.palette = 1};
    cfg.rows[0] = (uint8_t)m, cfg.colsb[0] = AMX_N * sizeof(float);      /* C */
    cfg.rows[1] = (uint8_t)m, cfg.colsb[1] = AMX_K * sizeof(or1_bf16);   /* A */
    cfg.rows[2] = AMX_K / 2, cfg.colsb[2] = 2 * AMX_N * sizeof(or1_bf16); /* B */
    _tile_loadconfig(&cfg);
    _tile_zero(0);
    for (int kb = 0; kb < nk; kb++) {
        _tile_loadd(1, a + (size_t)kb * AMX_K, ld * sizeof *a);
        _tile_loadd(2, bp + (size_t)kb * AMX_N * AMX_K, 2 * AMX_N * sizeof *bp);
        _tile_dpbf16ps(0, 1, 2);
    }
    _tile_stored(0, c, AMX_N * sizeof(float));
}

/* Releases this thread's tile state. */
__attribute__((target("amx-tile"))) static void tile_done(void) { _tile_release(); }

/* See kernels.h: parallel over (row block, output block); each block is one tile chain. */
void or1_amx_matmul_rows_bf16(float *y, const float *x, const or1_bf16 *packed, const float *b, int B, int in,
                              int out) {
    int nk = blocks(in, AMX_K), nm = blocks(B, AMX_M), nn = blocks(out, AMX_N);
    size_t ld = (size_t)nk * AMX_K;
    or1_bf16 *a = round_inputs(x, B, in, nk);
    #pragma omp parallel
    {
        float c[AMX_M * AMX_N];
        #pragma omp for collapse(2) schedule(static)
        for (int mb = 0; mb < nm; mb++)
            for (int nb = 0; nb < nn; nb++) {
                int m = B - mb * AMX_M < AMX_M ? B - mb * AMX_M : AMX_M;
                tile_block(c, a + (size_t)mb * AMX_M * ld, ld, packed + (size_t)nb * nk * AMX_N * AMX_K, nk, m);
                store_block(y + (size_t)mb * AMX_M * out, c, b, m, nb * AMX_N, out);
            }
        tile_done();
    }
    free(a);
}

/* A bf16 value as TDPBF16PS reads it: widened exactly, a denormal taken as zero (of its sign). */
static float bf16_in(or1_bf16 v) {
    if ((v & 0x7f80) == 0) v &= 0x8000;
    uint32_t u = (uint32_t)v << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* An fp32 result as the instruction leaves it: a denormal flushed to zero (of its sign). */
static float flush(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7f800000u) == 0) u &= 0x80000000u;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* See kernels.h: per output element, from +0, per input pair k: acc += a[2k] b[2k], then
 * acc += a[2k+1] b[2k+1], each in fp32 rounding to nearest even and flushing (the SDM's
 * pseudocode of TDPBF16PS); the padded inputs add zero products like the tiles do. */
void or1_amx_matmul_rows_ref(float *y, const float *x, const or1_bf16 *w, const float *b, int B, int in, int out) {
    int nk = blocks(in, AMX_K);
    size_t ld = (size_t)nk * AMX_K;
    or1_bf16 *a = round_inputs(x, B, in, nk);
    for (int r = 0; r < B; r++)
        for (int o = 0; o < out; o++) {
            float acc = 0.0f;
            for (size_t k = 0; k < ld; k++) {
                float wv = k < (size_t)in ? bf16_in(w[(size_t)o * in + k]) : 0.0f;
                acc = flush(acc + bf16_in(a[(size_t)r * ld + k]) * wv);
            }
            y[(size_t)r * out + o] = acc + (b ? b[o] : 0.0f);
        }
    free(a);
}
