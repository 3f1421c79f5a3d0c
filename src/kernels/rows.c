/* The batch-invariant matmul of the rollout engine (or1_matmul_rows) and its bf16 twin
 * (or1_matmul_rows_bf16): a blocked kernel whose reduction order per output element is fixed
 * and never split, so that a row's result is the same bits in any batch, on any thread count. */
#include "or1/kernels.h"

#include "or1/core.h"
#include "internal.h"

#include <immintrin.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

enum { TILE_R = 4, TILE_O = 6 }; /* rows x outputs of one tile: 24 accumulators in registers */

#if !defined(__AVX512F__)
typedef float v4f __attribute__((vector_size(4 * sizeof(float))));

/* The sum of an 8-lane vector by halving (lanes l and l+4, then l+2, then l+1): the same tree
 * for every element of every tile. With AVX-512, hsum16 sums 16 lanes the same way. */
static inline float hsum(vf a) {
    v4f q = __builtin_shufflevector(a, a, 0, 1, 2, 3) + __builtin_shufflevector(a, a, 4, 5, 6, 7);
    return (q[0] + q[2]) + (q[1] + q[3]);
}
#endif

#if defined(__AVX512F__)
/* The lane sums of 16 vectors at once, each by the same halving tree (lanes l and l+8, then
 * l and l+4, then l and l+2, then l and l+1; an addition is commutative in floating point, so
 * only the pairing matters): 15 vector additions instead of 16 separate trees. */
static inline void hsum16(float out[16], const vf v[16]) {
    __m512 r[8], q[4], t[2];
    for (int e = 0; e < 8; e++) /* lanes l + l+8: [v[2e] | v[2e+1]], 8 partials each */
        r[e] = _mm512_add_ps(_mm512_shuffle_f32x4((__m512)v[2 * e], (__m512)v[2 * e + 1], 0x44),
                             _mm512_shuffle_f32x4((__m512)v[2 * e], (__m512)v[2 * e + 1], 0xEE));
    for (int e = 0; e < 4; e++) /* l + l+4: quarter k holds element 4e+k's 4 partials */
        q[e] = _mm512_add_ps(_mm512_shuffle_f32x4(r[2 * e], r[2 * e + 1], 0x88),
                             _mm512_shuffle_f32x4(r[2 * e], r[2 * e + 1], 0xDD));
    for (int e = 0; e < 2; e++) /* l + l+2: quarter k holds [4k', 4k'+1 of q[2e]], then of q[2e+1] */
        t[e] = _mm512_add_ps(_mm512_shuffle_ps(q[2 * e], q[2 * e + 1], 0x44),
                             _mm512_shuffle_ps(q[2 * e], q[2 * e + 1], 0xEE));
    __m512 f = _mm512_add_ps(_mm512_shuffle_ps(t[0], t[1], 0x88), _mm512_shuffle_ps(t[0], t[1], 0xDD));
    float lanes[16];
    _mm512_storeu_ps(lanes, f);
    for (int k = 0; k < 4; k++) /* lane 4k + c holds element k + 4c */
        for (int c = 0; c < 4; c++) out[k + 4 * c] = lanes[4 * k + c];
}
#endif

/* The lane sums of a tile's accumulators into acc (hsum16 where there are 16 lanes). */
static inline void tile_sums(float acc[TILE_R][TILE_O], vf a[TILE_R][TILE_O]) {
#if defined(__AVX512F__)
    enum { N = TILE_R * TILE_O };
    vf v[32] = {{0}};
    float s[32];
    memcpy(v, a, sizeof(vf) * N);
    for (int e = 0; e < N; e += 16) hsum16(s + e, v + e);
    memcpy(acc, s, sizeof(float) * N);
#else
    for (int i = 0; i < TILE_R; i++)
        for (int j = 0; j < TILE_O; j++) acc[i][j] = hsum(a[i][j]);
#endif
}

/* One tile over the inputs [k0, k1): rows x[0..nr) against weight rows w[0..TILE_O) (row
 * pointers, so that a tile at the edge repeats its last output rather than read past it).
 * Each element is a VL-lane accumulation carried in part[] from one block of inputs to the next
 * (zero before the first); after the last block (last != 0) its lanes are summed by a fixed
 * halving tree and the scalar tail added in order, into acc. The same arithmetic wherever the
 * element sits, whatever the batch and however the inputs are blocked. */
static inline __attribute__((always_inline)) void dot_tile(float acc[TILE_R][TILE_O], vf *part,
                                                           const float *const *x, const float *const *w, int k0,
                                                           int k1, int in, int last, int nr) {
    vf a[TILE_R][TILE_O] = {{{0}}};
    for (int i = 0; i < nr; i++)
        for (int j = 0; j < TILE_O; j++) a[i][j] = k0 == 0 ? (vf){0} : part[i * TILE_O + j];
    for (int k = k0; k + VL <= k1; k += VL) {
        vf wv[TILE_O];
        for (int j = 0; j < TILE_O; j++) wv[j] = loadv(w[j] + k);
        for (int i = 0; i < nr; i++) {
            vf xv = loadv(x[i] + k);
            for (int j = 0; j < TILE_O; j++) a[i][j] += xv * wv[j];
        }
    }
    if (!last) {
        for (int i = 0; i < nr; i++)
            for (int j = 0; j < TILE_O; j++) part[i * TILE_O + j] = a[i][j];
        return;
    }
    tile_sums(acc, a);
    for (int i = 0; i < nr; i++)
        for (int j = 0; j < TILE_O; j++)
            for (int t = in - in % VL; t < in; t++) acc[i][j] += x[i][t] * w[j][t];
}

/* dot_tile over the first nr rows of a tile only (the last tile of a batch, or a batch of 1 to
 * 3 rows: decoding the last few sequences of a rollout), compiled for each row count. Rows do not
 * touch each other's sums, so a row's result is the same bits as in a full tile. */
static void dot_tile_rows(float acc[TILE_R][TILE_O], vf *part, const float *const *x, const float *const *w, int k0,
                          int k1, int in, int last, int nr) {
    switch (nr) {
    case 1: dot_tile(acc, part, x, w, k0, k1, in, last, 1); break;
    case 2: dot_tile(acc, part, x, w, k0, k1, in, last, 2); break;
    case 3: dot_tile(acc, part, x, w, k0, k1, in, last, 3); break;
    default: dot_tile(acc, part, x, w, k0, k1, in, last, TILE_R);
    }
}

enum { ROWS_L2_FLOATS = 1 << 17 }; /* 512 KiB of a block of inputs over all rows: stays in L2 */
/* Outputs of 8 tiles are staged and then written to y a row segment at a time: writing each
 * tile's 6 columns straight into rows `out` apart cost 15% at out = 9728 (partial cache lines). */
enum { STAGE_TILES = 8, STAGE = STAGE_TILES * TILE_O };
enum { ROWS_CHUNK = 128 }; /* rows a weight tile is swept over: their inputs stay in L2 */

/* bf16 weights come in blocks of at most this many inputs: a unit's expanded weights (6 rows)
 * then take 24 KiB and stay in the L1 cache while they are swept over the rows. */
enum { BF16_BLOCK = 1024 };

/* Inputs per block for B rows: their share of a block stays in L2 (at least 4 vectors); with
 * bf16 weights at most BF16_BLOCK. The blocking never changes a result, only where it is made. */
static int rows_block(int B, bool bf16) {
    int kc = ROWS_L2_FLOATS / B / VL * VL;
    kc = kc < 4 * VL ? 4 * VL : kc;
    return bf16 && kc > BF16_BLOCK ? BF16_BLOCK : kc;
}

/* Floats of one thread's scratch for chunks of at most B rows and `in` inputs: the staged
 * outputs (a multiple of 16 floats, so what follows stays vector-aligned), then, where the
 * inputs come in blocks, the partial sums of a group of tiles, then, for bf16 weights, the
 * expanded rows of one unit. */
static size_t rows_scratch(int B, int in, bool bf16) {
    int n_rt = (B + TILE_R - 1) / TILE_R, kv = in - in % VL;
    size_t part = kv > rows_block(B, bf16) ? (size_t)STAGE_TILES * n_rt * TILE_R * TILE_O * VL : 0;
    size_t exp = bf16 ? (size_t)TILE_O * (((size_t)in + 15) / 16 * 16) : 0;
    return (size_t)ROWS_CHUNK * STAGE + part + exp;
}

/* The weights of a call: fp32 rows (w), or bf16 rows (wb) that each thread expands, a unit at a
 * time, into fp32 rows of its own buffer (exp, TILE_O rows of `in` floats indexed like the
 * weights): a product of two bf16 values is exact in fp32, so the fp32 kernel then computes the
 * bf16 dot products with fp32 accumulation, at the fp32 FMA rate. */
typedef struct {
    const float *w;
    const or1_bf16 *wb;
} rows_src;

/* One unit of or1_matmul_rows' work: the weight rows of a tile over a block of inputs. w are the
 * rows the kernel reads; src the rows in memory (the same as w, or their bf16 originals) of esz
 * bytes an element. */
typedef struct {
    const float *w[TILE_O];
    const char *src[TILE_O];
    size_t esz;
    int o0, no, k0, k1;
} rows_unit;

/* The unit of tile t and input block k0 (kc inputs a block, kv the vectorised inputs); exp is
 * the thread's expansion buffer where the weights are bf16. */
static rows_unit unit_at(const rows_src *ws, float *exp, int t, int k0, int kc, int kv, int in, int out) {
    rows_unit u = {.o0 = t * TILE_O, .k0 = k0, .k1 = kv - k0 > kc ? k0 + kc : kv};
    u.no = out - u.o0 < TILE_O ? out - u.o0 : TILE_O;
    u.esz = ws->wb ? sizeof(or1_bf16) : sizeof(float);
    for (int j = 0; j < TILE_O; j++) {
        size_t row = (size_t)(u.o0 + (j < u.no ? j : u.no - 1)) * in;
        u.src[j] = ws->wb ? (const char *)(ws->wb + row) : (const char *)(ws->w + row);
        u.w[j] = ws->wb ? exp + (size_t)j * in : ws->w + row;
    }
    return u;
}

/* A bf16 value as the float it stands for. */
static inline float bf16_float(or1_bf16 h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* A bf16 unit's weights over its block (and the scalar tail after the last block) into the
 * thread's fp32 rows; an fp32 unit reads its weights where they are. */
static void expand_unit(const rows_unit *u, int in, int last) {
    if (u->esz == sizeof(float)) return;
    int k1 = last ? in : u->k1;
    for (int j = 0; j < TILE_O; j++) {
        const or1_bf16 *s = (const or1_bf16 *)(const void *)u->src[j];
        float *d = (float *)u->w[j];
        for (int k = u->k0; k < k1; k++) d[k] = bf16_float(s[k]);
    }
}

/* Part `part` of `parts` of a unit's weight cache lines, prefetched into L2: the weights sit in
 * L1 while a unit is swept over every row, so the hardware sees no misses to prefetch on, and
 * each new unit would wait on memory; spreading the next unit's lines over the current sweep
 * hides that wait. */
static void prefetch_unit(const rows_unit *u, int part, int parts) {
    enum { LINE = 64 };
    long per_row = ((long)(u->k1 - u->k0) * (long)u->esz + LINE - 1) / LINE, lines = per_row * TILE_O;
    if (!lines) return; /* fewer inputs than a vector: nothing but the scalar tail */
    long id = lines * part / parts, end = lines * (part + 1) / parts, j = id / per_row, l = id % per_row;
    for (; id < end; id++) {
        __builtin_prefetch(u->src[j] + (size_t)u->k0 * u->esz + l * LINE, 0, 2);
        if (++l == per_row) l = 0, j++;
    }
}

/* Sweeps one unit over all B rows, TILE_R at a time, carrying partial sums in part; after the
 * last input block writes the results (plus bias) to column c of ys, whose rows are STAGE wide.
 * `next` (or NULL) is prefetched along the way. */
static void sweep_unit(float *ys, int c, const float *x, const float *b, vf *part, const rows_unit *u,
                       const rows_unit *next, int B, int in, int last) {
    int n_rt = (B + TILE_R - 1) / TILE_R;
    expand_unit(u, in, last);
    for (int rt = 0; rt < n_rt; rt++) {
        if (next) prefetch_unit(next, rt, n_rt);
        int r0 = rt * TILE_R, nr = B - r0 < TILE_R ? B - r0 : TILE_R;
        const float *xr[TILE_R];
        for (int i = 0; i < TILE_R; i++) xr[i] = x + (size_t)(r0 + (i < nr ? i : nr - 1)) * in;
        float acc[TILE_R][TILE_O];
        dot_tile_rows(acc, part ? part + (size_t)rt * TILE_R * TILE_O : NULL, xr, u->w, u->k0, u->k1, in, last, nr);
        if (!last) continue;
        for (int i = 0; i < nr; i++)
            for (int j = 0; j < u->no; j++)
                ys[(size_t)(r0 + i) * STAGE + c + j] = b ? acc[i][j] + b[u->o0 + j] : acc[i][j];
    }
}

/* The unit after tile t over the block k0 in a group of tiles [g0, g1) of a thread's tiles
 * [.., t1): the next tile on the same block, else the group's first on the next block, else the
 * next group's first. Returns 0 when there is none. */
static int next_unit(rows_unit *n, const rows_src *ws, float *exp, int t, int g0, int g1, int t1, const rows_unit *u,
                     int kc, int kv, int in, int out) {
    if (t + 1 < g1) *n = unit_at(ws, exp, t + 1, u->k0, kc, kv, in, out);
    else if (u->k1 < kv) *n = unit_at(ws, exp, g0, u->k1, kc, kv, in, out);
    else if (g1 < t1) *n = unit_at(ws, exp, g1, 0, kc, kv, in, out);
    else return 0;
    return 1;
}

/* or1_matmul_rows over at most ROWS_CHUNK rows: parallel over tiles of TILE_O weight rows. A tile's weights
 * are swept over all B rows; groups of STAGE_TILES tiles go through the inputs one block at a
 * time, the block sized so that the B rows' share of it stays in the L2 cache beside the group's
 * partial sums (the weights' share sits in L1). No element's lane sums are split or reordered by
 * the blocking, so a row's result is the same bits whatever B, the tile it falls in and the
 * thread count. Thread i stages outputs, partial sums and expanded weights in scratch + i *
 * per_thread. */
static void matmul_rows_chunk(float *y, const float *x, const rows_src *ws, const float *b, int B, int in, int out,
                              float *scratch, size_t per_thread) {
    int n_tiles = (out + TILE_O - 1) / TILE_O, n_rt = (B + TILE_R - 1) / TILE_R, kv = in - in % VL;
    int kc = rows_block(B, ws->wb != NULL);
    size_t part_tile = (size_t)n_rt * TILE_R * TILE_O; /* vectors of partial sums per tile */
    size_t n_part = kv > kc ? STAGE_TILES * part_tile * VL : 0;
    #pragma omp parallel
    {
        int nt = omp_get_num_threads(), id = omp_get_thread_num();
        float *ys = scratch + (size_t)id * per_thread;
        vf *part = n_part ? (vf *)(ys + (size_t)ROWS_CHUNK * STAGE) : NULL;
        float *exp = ys + (size_t)ROWS_CHUNK * STAGE + n_part;
        int t0 = (int)((long)n_tiles * id / nt), t1 = (int)((long)n_tiles * (id + 1) / nt);
        for (int g0 = t0; g0 < t1; g0 += STAGE_TILES) {
            int g1 = t1 - g0 < STAGE_TILES ? t1 : g0 + STAGE_TILES;
            for (int k0 = 0, last = 0; !last; k0 += kc)
                for (int t = g0; t < g1; t++) {
                    rows_unit u = unit_at(ws, exp, t, k0, kc, kv, in, out), next;
                    last = u.k1 == kv;
                    int more = next_unit(&next, ws, exp, t, g0, g1, t1, &u, kc, kv, in, out);
                    sweep_unit(ys, (t - g0) * TILE_O, x, b, part ? part + (t - g0) * part_tile : NULL, &u,
                               more ? &next : NULL, B, in, last);
                }
            int c0 = g0 * TILE_O, n = (g1 * TILE_O < out ? g1 * TILE_O : out) - c0;
            for (int r = 0; r < B; r++) memcpy(y + (size_t)r * out + c0, ys + (size_t)r * STAGE, (size_t)n * sizeof *y);
        }
    }
}

/* The bf16 bits nearest x (round to nearest, ties to even; a NaN stays a quiet NaN). */
static inline or1_bf16 bf16_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (or1_bf16)((u | 0x00400000u) >> 16);
    return (or1_bf16)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* n floats to bf16, in parallel when large (the weight copy refreshed after each step). */
void or1_bf16_from_f32(or1_bf16 *dst, const float *src, size_t n) {
    #pragma omp parallel for schedule(static) if (n > 262144)
    for (size_t i = 0; i < n; i++) dst[i] = bf16_bits(src[i]);
}

/* x rounded to the nearest bf16 value. */
float or1_bf16_round(float x) { return bf16_float(bf16_bits(x)); }

/* n bf16 values widened to floats (exact), in parallel when large. */
void or1_f32_from_bf16(float *dst, const or1_bf16 *src, size_t n) {
    #pragma omp parallel for schedule(static) if (n > 262144)
    for (size_t i = 0; i < n; i++) dst[i] = bf16_float(src[i]);
}

/* Rows [0, B) of x in chunks of ROWS_CHUNK through matmul_rows_chunk; with bf16 weights each
 * chunk's inputs are first rounded to bf16 (into xr), so every product is of two bf16 values.
 * Every row's result is the same bits in any chunk. Each thread's scratch is allocated once for
 * all chunks. */
static void matmul_rows_src(float *y, const float *x, const rows_src *ws, const float *b, int B, int in, int out) {
    int first = B < ROWS_CHUNK ? B : ROWS_CHUNK;
    size_t per_thread = rows_scratch(first, in, ws->wb != NULL); /* later chunks are no larger */
    float *scratch = or1_alloc_floats((size_t)or1_threads() * per_thread);
    float *xr = ws->wb ? or1_malloc((size_t)first * in * sizeof *xr) : NULL; /* written before read */
    for (int r = 0; r < B; r += ROWS_CHUNK) {
        int n = B - r < ROWS_CHUNK ? B - r : ROWS_CHUNK;
        const float *xc = x + (size_t)r * in;
        if (xr) {
            size_t m = (size_t)n * in;
            #pragma omp parallel for schedule(static) if (m > 65536)
            for (size_t i = 0; i < m; i++) xr[i] = bf16_float(bf16_bits(xc[i]));
            xc = xr;
        }
        matmul_rows_chunk(y + (size_t)r * out, xc, ws, b, n, in, out, scratch, per_thread);
    }
    free(xr);
    free(scratch);
}

/* Batch-invariant y = x W^T + b, ROWS_CHUNK rows at a time (a prompt's prefill has thousands):
 * beyond that the rows' inputs and partial sums leave the L2 cache, and the rate halved at 512
 * rows. */
void or1_matmul_rows(float *y, const float *x, const float *w, const float *b, int B, int in, int out) {
    rows_src ws = {w, NULL};
    matmul_rows_src(y, x, &ws, b, B, in, out);
}

/* The same with bf16 weights and inputs rounded to bf16: bf16 products, fp32 accumulation. */
void or1_matmul_rows_bf16(float *y, const float *x, const or1_bf16 *w, const float *b, int B, int in, int out) {
    rows_src ws = {NULL, w};
    matmul_rows_src(y, x, &ws, b, B, in, out);
}
