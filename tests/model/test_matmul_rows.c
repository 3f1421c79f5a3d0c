/* The rollout's batch-invariant matmul, or1_matmul_rows, and its bf16 twin: each row's output is
 * the same bits whether the row is computed alone, at any place in a batch of any size, with the
 * inputs blocked (large batches) or not, on one thread or two; and it agrees with a
 * double-precision reference (for bf16, over the inputs and weights rounded to bf16, which must
 * then differ from the unrounded product). Shapes cover every edge: rows and outputs that do not
 * fill a tile, input lengths below, at and off the vector width, and batches whose inputs are
 * split into blocks. The bf16 rounding itself is checked on values with known bits. */
#include "or1/core.h"
#include "or1/kernels.h"

#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"

/* Deterministic values in [-1, 1). */
static void fill(float *a, size_t n, uint64_t seed) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        a[i] = (float)((seed >> 40) & 0xffffff) / (float)(1 << 23) - 1.0f;
    }
}

/* y = x W^T + b for B rows by the kernel under test: fp32 weights, or their bf16 copy. */
static void run_kernel(float *y, const float *x, const float *w, const or1_bf16 *wb, const float *b, int B, int in,
                       int out) {
    if (wb) or1_matmul_rows_bf16(y, x, wb, b, B, in, out);
    else or1_matmul_rows(y, x, w, b, B, in, out);
}

/* Elements of row r off the double reference over x and w as the kernel sees them (rounded to
 * bf16 when bf16): |err| > 1e-5 * sum |x w| + 1e-6. */
static int far_from_reference(const float *y, const float *x, const float *w, const float *b, int r, int in, int out,
                              int bf16) {
    int far = 0;
    for (int o = 0; o < out; o++) {
        double want = b ? b[o] : 0, scale = 0;
        for (int k = 0; k < in; k++) {
            float xv = x[(size_t)r * in + k], wv = w[(size_t)o * in + k];
            if (bf16) xv = or1_bf16_round(xv), wv = or1_bf16_round(wv);
            want += (double)xv * wv;
            scale += fabs((double)xv * wv);
        }
        far += !near(y[(size_t)r * out + o], want, 1e-6 + 1e-5 * scale, 0);
    }
    return far;
}

/* Compares every row of a batch of B (bias or not) with the same row alone and with a double
 * reference; in bf16, the unrounded reference must be missed somewhere (the rounding happened). */
static void check_shape(int B, int in, int out, int with_bias, int threads, int bf16) {
    float *x = or1_alloc_floats((size_t)B * in), *w = or1_alloc_floats((size_t)out * in);
    float *bias = or1_alloc_floats((size_t)out), *y = or1_alloc_floats((size_t)B * out);
    float *y1 = or1_alloc_floats((size_t)out);
    or1_bf16 *wb = bf16 ? or1_malloc((size_t)out * in * sizeof *wb) : NULL;
    fill(x, (size_t)B * in, 1 + (uint64_t)B), fill(w, (size_t)out * in, 2 + (uint64_t)in);
    fill(bias, (size_t)out, 3);
    if (wb) or1_bf16_from_f32(wb, w, (size_t)out * in);
    const float *b = with_bias ? bias : NULL;
    omp_set_num_threads(threads);
    run_kernel(y, x, w, wb, b, B, in, out);
    omp_set_num_threads(1);
    int differ = 0, far = 0, far_unrounded = 0;
    for (int r = 0; r < B; r++) {
        run_kernel(y1, x + (size_t)r * in, w, wb, b, 1, in, out);
        differ += memcmp(y1, y + (size_t)r * out, (size_t)out * sizeof *y) != 0;
        far += far_from_reference(y, x, w, b, r, in, out, bf16);
        if (bf16) far_unrounded += far_from_reference(y, x, w, b, r, in, out, 0);
    }
    const char *p = bf16 ? "bf16" : "fp32";
    CHECK(differ == 0, "%s B=%d in=%d out=%d bias=%d threads=%d: %d rows differ from the row alone", p, B, in, out,
          with_bias, threads, differ);
    CHECK(far == 0, "%s B=%d in=%d out=%d bias=%d threads=%d: %d elements off the double reference", p, B, in, out,
          with_bias, threads, far);
    if (bf16 && in * out >= 64)
        CHECK(far_unrounded > 0, "bf16 B=%d in=%d out=%d: every element matches the unrounded product", B, in, out);
    free(x), free(w), free(bias), free(y), free(y1), free(wb);
}

/* Rounding to bf16 on values with known bits: nearest, ties to even, carries into the exponent,
 * overflow to infinity, signed zero, infinities, NaN kept a NaN, subnormals. */
static void check_rounding(void) {
    static const struct {
        uint32_t in;
        uint16_t want;
    } cases[] = {
        {0x3f800000u, 0x3f80}, /* 1 */
        {0x3f808000u, 0x3f80}, /* 1 + 2^-8: a tie, to even (down) */
        {0x3f818000u, 0x3f82}, /* 1 + 3 * 2^-8: a tie, to even (up) */
        {0x3f808001u, 0x3f81}, /* just above the tie: up */
        {0x3f807fffu, 0x3f80}, /* just below: down */
        {0x3fffffffu, 0x4000}, /* carries into the exponent */
        {0x7f7fffffu, 0x7f80}, /* the largest float rounds to infinity */
        {0x80000000u, 0x8000}, /* -0 */
        {0xff800000u, 0xff80}, /* -inf */
        {0x00000001u, 0x0000}, /* the smallest subnormal rounds to 0 */
        {0x00018000u, 0x0002}, /* a subnormal tie, to even */
        {0xc0490fdbu, 0xc049}, /* -pi */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        float f;
        memcpy(&f, &cases[i].in, sizeof f);
        or1_bf16 got;
        or1_bf16_from_f32(&got, &f, 1);
        CHECK(got == cases[i].want, "bf16 of 0x%08x: 0x%04x, want 0x%04x", cases[i].in, got, cases[i].want);
        float r = or1_bf16_round(f), back;
        uint32_t bits = (uint32_t)cases[i].want << 16;
        memcpy(&back, &bits, sizeof back);
        CHECK(memcmp(&r, &back, sizeof r) == 0, "or1_bf16_round(0x%08x) is not the bf16 value", cases[i].in);
    }
    uint32_t nan_bits = 0x7f800001u; /* a signalling NaN whose payload sits in the low half */
    float nan_f;
    memcpy(&nan_f, &nan_bits, sizeof nan_f);
    or1_bf16 h;
    or1_bf16_from_f32(&h, &nan_f, 1);
    CHECK((h & 0x7f80) == 0x7f80 && (h & 0x7f) != 0, "a NaN became 0x%04x, not a NaN", h);
}

/* Small shapes around the tile (4 rows x 6 outputs) and vector (8 or 16) sizes, then batches
 * split into chunks of 128 rows and inputs long enough to be processed in blocks (2^17 / rows
 * floats: a row alone is never blocked, a chunk of 128 rows is past 1024 inputs). */
int main(void) {
    static const int ins[] = {1, 7, 8, 15, 16, 17, 33, 64, 100};
    static const int outs[] = {1, 5, 6, 7, 13, 48, 49};
    check_rounding();
    for (int bf16 = 0; bf16 <= 1; bf16++) {
        for (int B = 1; B <= 9; B += 4)
            for (size_t i = 0; i < sizeof ins / sizeof *ins; i++)
                for (size_t o = 0; o < sizeof outs / sizeof *outs; o++)
                    check_shape(B, ins[i], outs[o], (int)(i + o) % 2, 1 + (int)o % 2, bf16);
        check_shape(300, 1000, 61, 1, 2, bf16);  /* chunks of 128, 128 and 44 rows */
        check_shape(2049, 130, 13, 0, 2, bf16);  /* 17 chunks, the last of one row */
        check_shape(130, 2900, 100, 1, 2, bf16); /* chunks of 128 and 2 rows; 2 groups of 8 tiles and a part; blocks */
        check_shape(3, 2500, 20, 0, 2, bf16);    /* bf16: a few rows, inputs in blocks of 1024 and a tail */
    }
    return check_report();
}
