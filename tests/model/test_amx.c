/* The AMX bf16 tile matmul (src/kernels/amx.c). Everywhere: the weights' tile layout holds every
 * value where the tiles read it (zero in the padding), and the reference arithmetic (the SDM's
 * order for TDPBF16PS) agrees with a double-precision product over the bf16-rounded operands and
 * misses the unrounded one. Where AMX is usable: the tile kernel equals that reference bit for
 * bit for every shape (rows, inputs and outputs that do not fill a tile), on 1 and 2 threads,
 * and each row alone equals the row in its batch. Elsewhere that part is skipped (exit 77),
 * saying why. */
#include "or1/core.h"
#include "or1/kernels.h"

#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
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

/* One shape's operands: x (B x in), W (out x in) and its bf16 copy, a bias. */
typedef struct {
    int B, in, out;
    float *x, *w, *bias;
    or1_bf16 *wb;
} shape;

/* Makes the operands of a shape. */
static shape make(int B, int in, int out) {
    shape s = {B, in, out, or1_alloc_floats((size_t)B * in), or1_alloc_floats((size_t)out * in),
               or1_alloc_floats((size_t)out), or1_malloc((size_t)out * in * sizeof(or1_bf16))};
    fill(s.x, (size_t)B * in, 11 + (uint64_t)B), fill(s.w, (size_t)out * in, 12 + (uint64_t)in);
    fill(s.bias, (size_t)out, 13);
    or1_bf16_from_f32(s.wb, s.w, (size_t)out * in);
    return s;
}

/* Frees a shape's operands. */
static void drop(shape *s) {
    free(s->x), free(s->w), free(s->bias), free(s->wb);
}

/* Every W value sits where the tiles of its output block and input block read it: tile row p of
 * the block holds inputs 2p and 2p+1 of each of 16 outputs; past the matrix, zeros. */
static void check_layout(const shape *s) {
    or1_bf16 *p = or1_malloc(or1_amx_packed_len(s->in, s->out) * sizeof *p);
    or1_amx_pack(p, s->wb, s->in, s->out);
    int nk = (s->in + 31) / 32, nn = (s->out + 15) / 16, bad = 0;
    for (int nb = 0; nb < nn; nb++)
        for (int kb = 0; kb < nk; kb++)
            for (int k = 0; k < 32; k++)
                for (int n = 0; n < 16; n++) {
                    int o = nb * 16 + n, i = kb * 32 + k;
                    or1_bf16 want = o < s->out && i < s->in ? s->wb[(size_t)o * s->in + i] : 0;
                    bad += p[((size_t)nb * nk + kb) * 512 + (size_t)((k / 2) * 16 + n) * 2 + k % 2] != want;
                }
    CHECK(bad == 0, "%d x %d: %d packed values out of place", s->out, s->in, bad);
    free(p);
}

/* The reference against double products of the rounded operands (tolerance: the fp32 rounding
 * of in additions), and some element off the unrounded product (the rounding happened). */
static void check_reference(const shape *s) {
    float *y = or1_alloc_floats((size_t)s->B * s->out);
    or1_amx_matmul_rows_ref(y, s->x, s->wb, s->bias, s->B, s->in, s->out);
    int far = 0, off_unrounded = 0;
    for (int r = 0; r < s->B; r++)
        for (int o = 0; o < s->out; o++) {
            double want = s->bias[o], raw = s->bias[o], scale = fabs(s->bias[o]);
            for (int k = 0; k < s->in; k++) {
                float xv = s->x[(size_t)r * s->in + k], wv = s->w[(size_t)o * s->in + k];
                want += (double)or1_bf16_round(xv) * or1_bf16_round(wv);
                raw += (double)xv * wv;
                scale += fabs((double)xv * wv);
            }
            double got = y[(size_t)r * s->out + o];
            far += !near(got, want, 1e-7 + (s->in + 2) * 6e-8 * scale, 0);
            off_unrounded += fabs(got - raw) > 1e-6 * (1 + scale);
        }
    CHECK(far == 0, "%d x %d x %d: %d reference elements off the double product of the rounded operands", s->B, s->in,
          s->out, far);
    CHECK(off_unrounded > 0 || s->in < 2, "%d x %d x %d: the reference equals the unrounded product", s->B, s->in,
          s->out);
    free(y);
}

/* The tile kernel: equal to the reference bit for bit on the whole batch and row by row. */
static void check_tiles(const shape *s, int threads) {
    omp_set_num_threads(threads);
    size_t ny = (size_t)s->B * s->out;
    float *want = or1_alloc_floats(ny), *got = or1_alloc_floats(ny), *one = or1_alloc_floats((size_t)s->out);
    or1_bf16 *p = or1_malloc(or1_amx_packed_len(s->in, s->out) * sizeof *p);
    or1_amx_pack(p, s->wb, s->in, s->out);
    or1_amx_matmul_rows_ref(want, s->x, s->wb, s->bias, s->B, s->in, s->out);
    or1_amx_matmul_rows_bf16(got, s->x, p, s->bias, s->B, s->in, s->out);
    CHECK(memcmp(got, want, ny * sizeof *got) == 0, "%d x %d x %d, %d threads: tiles differ from the reference", s->B,
          s->in, s->out, threads);
    int alone = 0;
    for (int r = 0; r < s->B; r++) {
        or1_amx_matmul_rows_bf16(one, s->x + (size_t)r * s->in, p, s->bias, 1, s->in, s->out);
        alone += memcmp(one, got + (size_t)r * s->out, (size_t)s->out * sizeof *one) != 0;
    }
    CHECK(alone == 0, "%d x %d x %d: %d rows alone differ from the batch", s->B, s->in, s->out, alone);
    free(want), free(got), free(one), free(p);
}

int main(void) {
    const int shapes[][3] = {{1, 7, 5}, {3, 32, 16}, {17, 70, 33}, {40, 96, 48}, {16, 1, 1}, {33, 200, 130}};
    const char *why;
    bool usable = or1_amx_usable(&why);
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        shape s = make(shapes[i][0], shapes[i][1], shapes[i][2]);
        check_layout(&s);
        check_reference(&s);
        if (usable)
            for (int t = 1; t <= 2; t++) check_tiles(&s, t);
        drop(&s);
    }
    int rc = check_report();
    if (rc == 0 && !usable) {
        printf("model_amx: the layout and the reference checked; the tile kernel skipped: %s\n", why);
        return 77;
    }
    return rc;
}
