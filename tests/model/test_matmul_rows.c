/* The rollout's batch-invariant matmul, or1_matmul_rows: each row's output is the same bits
 * whether the row is computed alone, at any place in a batch of any size, with the inputs
 * blocked (large batches) or not, on one thread or two; and it agrees with a double-precision
 * reference. Shapes cover every edge: rows and outputs that do not fill a tile, input lengths
 * below, at and off the vector width, and batches whose inputs are split into blocks. */
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

/* Compares every row of a batch of B (bias or not) with the same row alone and with a double
 * reference: |err| <= 1e-5 * sum |x w| + 1e-6 per element. */
static void check_shape(int B, int in, int out, int with_bias, int threads) {
    float *x = or1_alloc_floats((size_t)B * in), *w = or1_alloc_floats((size_t)out * in);
    float *bias = or1_alloc_floats((size_t)out), *y = or1_alloc_floats((size_t)B * out);
    float *y1 = or1_alloc_floats((size_t)out);
    fill(x, (size_t)B * in, 1 + (uint64_t)B), fill(w, (size_t)out * in, 2 + (uint64_t)in);
    fill(bias, (size_t)out, 3);
    const float *b = with_bias ? bias : NULL;
    omp_set_num_threads(threads);
    or1_matmul_rows(y, x, w, b, B, in, out);
    omp_set_num_threads(1);
    int differ = 0, far = 0;
    for (int r = 0; r < B; r++) {
        or1_matmul_rows(y1, x + (size_t)r * in, w, b, 1, in, out);
        differ += memcmp(y1, y + (size_t)r * out, (size_t)out * sizeof *y) != 0;
        for (int o = 0; o < out; o++) {
            double want = b ? b[o] : 0, scale = 0;
            for (int k = 0; k < in; k++) {
                want += (double)x[(size_t)r * in + k] * w[(size_t)o * in + k];
                scale += fabs((double)x[(size_t)r * in + k] * w[(size_t)o * in + k]);
            }
            far += !near(y[(size_t)r * out + o], want, 1e-6 + 1e-5 * scale, 0);
        }
    }
    CHECK(differ == 0, "B=%d in=%d out=%d bias=%d threads=%d: %d rows differ from the row alone", B, in, out, with_bias,
          threads, differ);
    CHECK(far == 0, "B=%d in=%d out=%d bias=%d threads=%d: %d elements off the double reference", B, in, out,
          with_bias, threads, far);
    free(x), free(w), free(bias), free(y), free(y1);
}

/* Small shapes around the tile (4 rows x 6 outputs) and vector (8 or 16) sizes, then batches
 * split into chunks of 128 rows and inputs long enough to be processed in blocks (2^17 / rows
 * floats: a row alone is never blocked, a chunk of 128 rows is past 1024 inputs). */
int main(void) {
    static const int ins[] = {1, 7, 8, 15, 16, 17, 33, 64, 100};
    static const int outs[] = {1, 5, 6, 7, 13, 48, 49};
    for (int B = 1; B <= 9; B += 4)
        for (size_t i = 0; i < sizeof ins / sizeof *ins; i++)
            for (size_t o = 0; o < sizeof outs / sizeof *outs; o++)
                check_shape(B, ins[i], outs[o], (int)(i + o) % 2, 1 + (int)o % 2);
    check_shape(300, 1000, 61, 1, 2);  /* chunks of 128, 128 and 44 rows */
    check_shape(2049, 130, 13, 0, 2);  /* 17 chunks, the last of one row */
    check_shape(130, 2900, 100, 1, 2); /* chunks of 128 and 2 rows; 2 groups of 8 tiles and a part; blocks of 1024 */
    return check_report();
}
