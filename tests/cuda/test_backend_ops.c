/* Every operation of every backend built against the CPU backend, as llama.cpp's
 * test-backend-ops does: the test walks the operation table (src/model/impl/backend_impl.h)
 * slot by slot, and each slot must have a case here and an entry in every backend (the device
 * collectives excepted: cuda_train runs them over 2 ranks). Each case runs the operation on the
 * backend under test and on the CPU backend of the same precision from the same inputs, over
 * shapes with edge sizes (1, odd, not a multiple of a warp or a block, larger than a block),
 * forward and backward, and compares what they write.
 *
 * Backends: the CPU in fp32 and bf16 (against themselves: the harness and the table walk), and
 * the CUDA backend in fp32 and bf16 where a GPU (or the emulator) is visible. Tolerances, on the
 * error scaled by the reference's largest magnitude: fp32 2e-5 element-wise, 1e-4 for sums over
 * many terms (matmuls, attention, the head); bf16 matmuls and the CUDA backend's bf16 attention
 * (tensor cores, a bf16 KV pool) 2e-2, log-probs 1e-2; bf16 copies, the KV store and
 * greedy draws exactly. */
#include "common.h"

#include "backend_impl.h"
#include "or1/kernels.h"

#include <stddef.h>

/* The backend under test and the CPU backend it is compared with. */
typedef struct {
    or1_backend *be, *ref;
    const char *tag;
    bool bf16;
    double tol_sum; /* sums over many terms: matmuls, attention, the head */
} pair;

/* The same host data on both sides: a on the backend under test, b on the reference. */
typedef struct {
    void *a, *b;
    size_t bytes;
} twin;

/* side 0: the backend under test; side 1: the reference. */
#define BE(p, side) ((side) ? (p)->ref : (p)->be)
#define AT(t, side) ((side) ? (t).b : (t).a)

/* Backend memory holding bytes of host (zeroed memory when host is NULL). */
static void *put(or1_backend *be, const void *host, size_t bytes) {
    void *d = be->ops->alloc(be, bytes ? bytes : 1);
    if (!d || (host && bytes && be->ops->upload(be, d, host, bytes))) {
        fprintf(stderr, "FAIL: %s: memory: %s\n", be->ops->name, or1_error());
        exit(1);
    }
    return d;
}

/* Host copy of bytes of backend memory (waits for queued work). */
static void *take(or1_backend *be, const void *d, size_t bytes) {
    void *h = or1_malloc(bytes ? bytes : 1);
    if (be->ops->sync(be) || (bytes && be->ops->download(be, h, d, bytes))) {
        fprintf(stderr, "FAIL: %s: download: %s\n", be->ops->name, or1_error());
        exit(1);
    }
    return h;
}

static twin both(const pair *p, const void *host, size_t bytes) {
    return (twin){put(p->be, host, bytes), put(p->ref, host, bytes), bytes};
}

/* Floats of random host data in [-scale, scale), seeded. */
static twin both_rand(const pair *p, size_t n, uint64_t seed, float scale) {
    float *h = rand_floats(n, seed, scale);
    twin t = both(p, h, n * sizeof(float));
    free(h);
    return t;
}

/* The model's bf16 copy of n floats of t, made by each side's to_bf16. */
static twin both_bf16(const pair *p, twin t, size_t n) {
    twin b = {put(p->be, NULL, n * 2), put(p->ref, NULL, n * 2), n * 2};
    for (int s = 0; s < 2; s++) BE(p, s)->ops->to_bf16(BE(p, s), AT(b, s), AT(t, s), n);
    return b;
}

/* A KV pool of n elements holding the host floats on both sides, each side in its backend's
 * element (kv_bytes 4: floats, 2: bf16); when either keeps bf16 both get the floats rounded to
 * bf16, so that both attend over the same values. */
static twin both_kv(const pair *p, const float *host, size_t n) {
    bool half = p->be->kv_bytes == 2 || p->ref->kv_bytes == 2;
    float *f = or1_malloc(n * sizeof *f);
    or1_bf16 *h = or1_malloc(n * sizeof *h);
    for (size_t i = 0; i < n; i++) f[i] = half ? or1_bf16_round(host[i]) : host[i];
    or1_bf16_from_f32(h, f, n);
    twin t = {put(p->be, p->be->kv_bytes == 2 ? (void *)h : f, n * (size_t)p->be->kv_bytes),
              put(p->ref, p->ref->kv_bytes == 2 ? (void *)h : f, n * (size_t)p->ref->kv_bytes), 0};
    free(f), free(h);
    return t;
}

/* n elements of side s's KV pool as floats (bf16 widened exactly). */
static float *take_kv(const pair *p, twin t, int s, size_t n) {
    or1_backend *be = BE(p, s);
    void *raw = take(be, AT(t, s), n * (size_t)be->kv_bytes);
    if (be->kv_bytes == 4) return raw;
    float *f = or1_malloc(n * sizeof *f);
    or1_f32_from_bf16(f, raw, n);
    free(raw);
    return f;
}

static void drop(const pair *p, twin t) {
    p->be->ops->release(p->be, t.a);
    p->ref->ops->release(p->ref, t.b);
}

/* Compares n floats of both sides of t: the max error scaled by max(the reference's largest
 * magnitude, floor) against tol. */
static void same_floats_floor(const pair *p, const char *what, twin t, size_t n, double tol, double floor) {
    float *a = take(p->be, t.a, n * sizeof(float)), *b = take(p->ref, t.b, n * sizeof(float));
    char name[160];
    snprintf(name, sizeof name, "%s %s", p->tag, what);
    expect_close_floor(name, a, b, n, tol, floor);
    free(a), free(b);
}

/* same_floats_floor with the floor of 1e-6. */
static void same_floats(const pair *p, const char *what, twin t, size_t n, double tol) {
    same_floats_floor(p, what, t, n, tol, 1e-6);
}

/* Compares the bytes of both sides of t exactly. */
static void same_bytes(const pair *p, const char *what, twin t) {
    char *a = take(p->be, t.a, t.bytes), *b = take(p->ref, t.b, t.bytes);
    CHECK(!memcmp(a, b, t.bytes), "%s %s: the %zu bytes differ", p->tag, what, t.bytes);
    free(a), free(b);
}

/* Tolerance of a matmul-shaped result: bf16 operands round to 8 bits. */
static double mm_tol(const pair *p) { return p->bf16 ? 2e-2 : p->tol_sum; }

/* ---- Cases ----------------------------------------------------------------------------- */

/* alloc gives zeroed memory; upload, copy, zero and download move the bytes; sync drains. */
static void case_memory(const pair *p) {
    size_t sizes[] = {1, 4, 1000, 65537};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        size_t n = sizes[k];
        unsigned char *zeros = or1_calloc(n, 1);
        twin fresh = {put(p->be, NULL, n), put(p->ref, NULL, n), n};
        char *got = take(p->be, fresh.a, n);
        CHECK(!memcmp(got, zeros, n), "%s alloc of %zu bytes is not zeroed", p->tag, n);
        free(got);
        float *h = rand_floats(n / 4 + 1, 100 + k, 1);
        twin src = both(p, h, n);
        for (int s = 0; s < 2; s++) BE(p, s)->ops->copy(BE(p, s), AT(fresh, s), AT(src, s), n);
        got = take(p->be, fresh.a, n);
        CHECK(!memcmp(got, h, n), "%s upload + copy + download of %zu bytes", p->tag, n);
        free(got);
        for (int s = 0; s < 2; s++) BE(p, s)->ops->zero(BE(p, s), AT(src, s), n);
        got = take(p->be, src.a, n);
        CHECK(!memcmp(got, zeros, n), "%s zero of %zu bytes", p->tag, n);
        free(got), free(h), free(zeros);
        drop(p, fresh), drop(p, src);
    }
}

/* fp32 -> bf16 rounds to nearest even on both sides: the same bits. */
static void case_to_bf16(const pair *p) {
    size_t sizes[] = {1, 255, 1025};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        twin x = both_rand(p, sizes[k], 110 + k, 3);
        twin b = both_bf16(p, x, sizes[k]);
        same_bytes(p, "to_bf16", b);
        drop(p, x), drop(p, b);
    }
}

/* Linear shapes: T rows, in, out. */
static const int MM[][3] = {{1, 1, 1}, {3, 33, 31}, {37, 64, 257}, {70, 129, 65}};
enum { N_MM = sizeof MM / sizeof *MM };

static void rows_alone(const pair *p);

/* y = x W^T (+ b), with the bf16 weights in bf16; and a row's bits whatever its batch. */
static void case_matmul_rows(const pair *p) {
    for (int k = 0; k < N_MM; k++)
        for (int bias = 0; bias < 2; bias++) {
            int T = MM[k][0], in = MM[k][1], out = MM[k][2];
            twin x = both_rand(p, (size_t)T * in, 120 + k, 1), w = both_rand(p, (size_t)out * in, 121 + k, 0.3f);
            twin b = both_rand(p, out, 122 + k, 1), y = both_rand(p, (size_t)T * out, 123, 1);
            twin wb = p->bf16 ? both_bf16(p, w, (size_t)out * in) : (twin){0};
            for (int s = 0; s < 2; s++) {
                or1_backend *be = BE(p, s);
                be->ops->matmul_rows(be, AT(y, s), AT(x, s), AT(w, s), AT(wb, s), bias ? AT(b, s) : NULL, T, in, out);
            }
            char what[64];
            snprintf(what, sizeof what, "matmul_rows %dx%dx%d%s", T, in, out, bias ? "+b" : "");
            same_floats(p, what, y, (size_t)T * out, mm_tol(p));
            drop(p, x), drop(p, w), drop(p, b), drop(p, y);
            if (p->bf16) drop(p, wb);
        }
    rows_alone(p);
}

/* Backend memory at byte offset off of d. */
static void *at(void *d, size_t off) { return (char *)d + off; }

/* The bits of a row of matmul_rows do not depend on the batch: 300 rows at once (against the
 * reference), then rows alone and in batches of 1 to 150 at other offsets (across the GPU's choice between its
 * kernels for few and many rows, at 64, and their tile edges at 16 and 128 rows, 64 and 128
 * outputs), on the backend under test, give the same bytes (a decoded token's activations are
 * the trainer's). Inner sizes 70 (bf16 weight rows not 16-byte aligned) and 96 (aligned: the
 * GPU copies them with cp.async), outputs 130 and 200. */
static void rows_alone(const pair *p) {
    enum { T = 300 };
    static const int SHAPE[][2] = {{70, 130}, {96, 200}};
    static const int SUB[][2] = {{0, 1},   {1, 1},   {63, 1},  {64, 1},  {299, 1},  {5, 70},   {100, 50},
                                 {17, 3},  {16, 16}, {31, 17}, {64, 64}, {127, 65}, {1, 129},  {150, 150},
                                 {0, 129}, {200, 16}, {283, 17}};
    or1_backend *be = p->be;
    for (size_t s = 0; s < sizeof SHAPE / sizeof *SHAPE; s++) {
        int IN = SHAPE[s][0], OUT = SHAPE[s][1];
        twin x = both_rand(p, (size_t)T * IN, 160, 1), w = both_rand(p, (size_t)OUT * IN, 161, 0.3f);
        twin b = both_rand(p, OUT, 162, 1);
        twin wb = p->bf16 ? both_bf16(p, w, (size_t)OUT * IN) : (twin){0};
        size_t bytes = (size_t)T * OUT * 4;
        twin all = {put(be, NULL, bytes), put(p->ref, NULL, bytes), bytes};
        float *part = put(be, NULL, bytes);
        for (int side = 0; side < 2; side++)
            BE(p, side)->ops->matmul_rows(BE(p, side), AT(all, side), AT(x, side), AT(w, side), AT(wb, side),
                                          AT(b, side), T, IN, OUT);
        char what[64];
        snprintf(what, sizeof what, "matmul_rows %dx%dx%d+b", T, IN, OUT);
        same_floats(p, what, all, (size_t)T * OUT, mm_tol(p));
        float *want = take(be, all.a, (size_t)T * OUT * 4);
        for (size_t k = 0; k < sizeof SUB / sizeof *SUB; k++) {
            int r0 = SUB[k][0], n = SUB[k][1];
            size_t xo = (size_t)r0 * IN * 4, yo = (size_t)r0 * OUT * 4;
            be->ops->matmul_rows(be, at(part, yo), at(x.a, xo), w.a, wb.a, b.a, n, IN, OUT);
            float *got = take(be, at(part, yo), (size_t)n * OUT * 4);
            CHECK(!memcmp(got, want + (size_t)r0 * OUT, (size_t)n * OUT * 4),
                  "%s matmul_rows %dx%d: rows %d..%d computed as a batch of %d differ from the batch of %d", p->tag,
                  IN, OUT, r0, r0 + n - 1, n, T);
            free(got);
        }
        be->ops->release(be, part), free(want);
        drop(p, all), drop(p, x), drop(p, w), drop(p, b);
        if (p->bf16) drop(p, wb);
    }
    printf("ok   %s matmul_rows: a row's bits do not depend on its batch\n", p->tag);
}

/* dx (=|+=) dy W, with the bf16 weights in bf16. */
static void case_matmul_dx(const pair *p) {
    for (int k = 0; k < N_MM; k++)
        for (int acc = 0; acc < 2; acc++) {
            int T = MM[k][0], in = MM[k][1], out = MM[k][2];
            twin dy = both_rand(p, (size_t)T * out, 130 + k, 1), w = both_rand(p, (size_t)out * in, 131 + k, 0.3f);
            twin dx = both_rand(p, (size_t)T * in, 132 + k, 1);
            twin wb = p->bf16 ? both_bf16(p, w, (size_t)out * in) : (twin){0};
            for (int s = 0; s < 2; s++)
                BE(p, s)->ops->matmul_dx(BE(p, s), AT(dx, s), AT(dy, s), AT(w, s), AT(wb, s), T, in, out, acc);
            char what[64];
            snprintf(what, sizeof what, "matmul_dx %dx%dx%d acc=%d", T, in, out, acc);
            same_floats(p, what, dx, (size_t)T * in, mm_tol(p));
            drop(p, dy), drop(p, w), drop(p, dx);
            if (p->bf16) drop(p, wb);
        }
}

/* dW += dy^T x and db += column sums of dy, accumulated in fp32 (the CUDA backend rounds the
 * operands of dW to bf16 in bf16 precision, as autocast does; the CPU keeps them fp32). */
static void case_matmul_dw(const pair *p) {
    for (int k = 0; k < N_MM; k++)
        for (int bias = 0; bias < 2; bias++) {
            int T = MM[k][0], in = MM[k][1], out = MM[k][2];
            twin dy = both_rand(p, (size_t)T * out, 140 + k, 1), x = both_rand(p, (size_t)T * in, 141 + k, 1);
            twin dw = both_rand(p, (size_t)out * in, 142 + k, 1), db = both_rand(p, out, 143 + k, 1);
            for (int s = 0; s < 2; s++)
                BE(p, s)->ops->matmul_dw(BE(p, s), AT(dw, s), bias ? AT(db, s) : NULL, AT(dy, s), AT(x, s), T, in, out);
            char what[64];
            snprintf(what, sizeof what, "matmul_dw %dx%dx%d", T, in, out);
            same_floats(p, what, dw, (size_t)out * in, mm_tol(p));
            if (bias) same_floats(p, "matmul_dw db", db, out, p->tol_sum);
            drop(p, dy), drop(p, x), drop(p, dw), drop(p, db);
        }
}

/* Random ids below V, with repeats. */
static int32_t *rand_ids(int n, int V, uint64_t seed) {
    int32_t *ids = or1_malloc((size_t)n * sizeof *ids);
    for (int i = 0; i < n; i++) ids[i] = (int32_t)(or1_rand_u64(seed, 0, (uint64_t)i) % (uint64_t)V);
    return ids;
}

/* Row shapes: n rows, H wide, V table rows. */
static const int ROWS[][3] = {{1, 1, 1}, {33, 31, 7}, {300, 300, 300}};
enum { N_ROWS = sizeof ROWS / sizeof *ROWS };

/* y[i] = src[idx[i]], from fp32 rows and from bf16 ones. */
static void case_gather(const pair *p) {
    for (int k = 0; k < N_ROWS; k++)
        for (int wide = 0; wide < 2; wide++) {
            int n = ROWS[k][0], H = ROWS[k][1], V = ROWS[k][2];
            int32_t *ids = rand_ids(n, V, 150 + k);
            twin idx = both(p, ids, (size_t)n * 4), src = both_rand(p, (size_t)V * H, 151 + k, 2);
            twin y = both_rand(p, (size_t)n * H, 152, 1), srcb = wide ? both_bf16(p, src, (size_t)V * H) : (twin){0};
            for (int s = 0; s < 2; s++)
                BE(p, s)->ops->gather(BE(p, s), AT(y, s), wide ? NULL : AT(src, s), AT(srcb, s), AT(idx, s), n, H);
            same_floats(p, wide ? "gather (bf16 rows)" : "gather", y, (size_t)n * H, 0);
            drop(p, idx), drop(p, src), drop(p, y);
            if (wide) drop(p, srcb);
            free(ids);
        }
}

/* dst[idx[i]] += src[i] with repeated ids. */
static void case_scatter_add(const pair *p) {
    for (int k = 0; k < N_ROWS; k++) {
        int n = ROWS[k][0], H = ROWS[k][1], V = ROWS[k][2];
        int32_t *ids = rand_ids(n, V, 160 + k);
        twin idx = both(p, ids, (size_t)n * 4), src = both_rand(p, (size_t)n * H, 161 + k, 1);
        twin dst = both_rand(p, (size_t)V * H, 162 + k, 1);
        for (int s = 0; s < 2; s++) BE(p, s)->ops->scatter_add(BE(p, s), AT(dst, s), AT(src, s), AT(idx, s), n, H);
        same_floats(p, "scatter_add", dst, (size_t)V * H, 2e-6);
        drop(p, idx), drop(p, src), drop(p, dst);
        free(ids);
    }
}

/* Norm shapes: T rows of H. */
static const int NORM[][2] = {{1, 1}, {5, 31}, {33, 300}, {3, 1025}};
enum { N_NORM = sizeof NORM / sizeof *NORM };

/* The residual added into x, the norm, rstd; with and without a residual. */
static void case_rmsnorm(const pair *p) {
    for (int k = 0; k < N_NORM; k++)
        for (int res = 0; res < 2; res++) {
            int T = NORM[k][0], H = NORM[k][1];
            twin x = both_rand(p, (size_t)T * H, 170 + k, 2), r = both_rand(p, (size_t)T * H, 171 + k, 1);
            twin w = both_rand(p, H, 172 + k, 1), y = both_rand(p, (size_t)T * H, 173, 1), rstd = both_rand(p, T, 174, 1);
            for (int s = 0; s < 2; s++)
                BE(p, s)->ops->rmsnorm(BE(p, s), AT(y, s), AT(rstd, s), AT(x, s), res ? AT(r, s) : NULL, AT(w, s), T, H,
                                       1e-6f);
            same_floats(p, "rmsnorm's residual sum", x, (size_t)T * H, 2e-5);
            same_floats(p, "rmsnorm", y, (size_t)T * H, 2e-5);
            same_floats(p, "rmsnorm rstd", rstd, T, 2e-5);
            drop(p, x), drop(p, r), drop(p, w), drop(p, y), drop(p, rstd);
        }
}

/* dx += and dw += of the norm, from the forward's rstd. */
static void case_rmsnorm_bwd(const pair *p) {
    for (int k = 0; k < N_NORM; k++) {
        int T = NORM[k][0], H = NORM[k][1];
        float *hx = rand_floats((size_t)T * H, 180 + k, 2), *hw = rand_floats(H, 181 + k, 1);
        float *hy = or1_alloc_floats((size_t)T * H), *hr = or1_alloc_floats(T);
        or1_rmsnorm(hy, hr, hx, NULL, hw, T, H, 1e-6f);
        twin x = both(p, hx, (size_t)T * H * 4), w = both(p, hw, (size_t)H * 4), rstd = both(p, hr, (size_t)T * 4);
        twin dy = both_rand(p, (size_t)T * H, 182 + k, 1), dx = both_rand(p, (size_t)T * H, 183 + k, 1);
        twin dw = both_rand(p, H, 184 + k, 1);
        for (int s = 0; s < 2; s++)
            BE(p, s)->ops->rmsnorm_bwd(BE(p, s), AT(dx, s), AT(dw, s), AT(dy, s), AT(x, s), AT(rstd, s), AT(w, s), T, H);
        same_floats(p, "rmsnorm_bwd dx", dx, (size_t)T * H, 2e-5);
        same_floats(p, "rmsnorm_bwd dw", dw, H, p->tol_sum);
        drop(p, x), drop(p, w), drop(p, rstd), drop(p, dy), drop(p, dx), drop(p, dw);
        free(hx), free(hw), free(hy), free(hr);
    }
}

/* Rotation of strided rows by position, forward and inverse. */
static void case_rope(const pair *p) {
    static const int SH[][3] = {{1, 1, 2}, {30, 6, 16}, {7, 3, 130}}; /* T, heads, head_dim */
    for (int k = 0; k < 3; k++)
        for (int inv = 0; inv < 2; inv++) {
            int T = SH[k][0], nh = SH[k][1], hd = SH[k][2], stride = nh * hd + 8, maxpos = 64, half = hd / 2;
            int32_t *pos = rand_ids(T, maxpos, 190 + k);
            float *c = or1_alloc_floats((size_t)maxpos * half), *sn = or1_alloc_floats((size_t)maxpos * half);
            or1_rope_table(c, sn, maxpos, hd, 10000.0f, NULL);
            twin x = both_rand(p, (size_t)T * stride, 191 + k, 1), tp = both(p, pos, (size_t)T * 4);
            twin tc = both(p, c, (size_t)maxpos * half * 4), ts = both(p, sn, (size_t)maxpos * half * 4);
            for (int s = 0; s < 2; s++)
                BE(p, s)->ops->rope(BE(p, s), AT(x, s), stride, nh, hd, AT(tp, s), T, AT(tc, s), AT(ts, s), inv);
            same_floats(p, inv ? "rope inverse" : "rope", x, (size_t)T * stride, 2e-6);
            drop(p, x), drop(p, tp), drop(p, tc), drop(p, ts);
            free(pos), free(c), free(sn);
        }
}

/* Per-head norm shapes inside strided rows: tokens, heads, head size (stride adds 5 floats). */
static const int HN[][3] = {{1, 1, 2}, {7, 3, 16}, {33, 18, 130}};

/* Qwen3's q/k norm, in place and out of place. */
static void case_head_norm(const pair *p) {
    for (int k = 0; k < 3; k++)
        for (int inplace = 0; inplace < 2; inplace++) {
            int T = HN[k][0], nh = HN[k][1], hd = HN[k][2], stride = nh * hd + 5;
            twin x = both_rand(p, (size_t)T * stride, 300 + k, 2), w = both_rand(p, hd, 301 + k, 1);
            twin y = inplace ? x : both_rand(p, (size_t)T * stride, 302, 1), r = both_rand(p, (size_t)T * nh, 303, 1);
            for (int s = 0; s < 2; s++)
                BE(p, s)->ops->head_norm(BE(p, s), AT(y, s), AT(r, s), AT(x, s), AT(w, s), T, nh, hd, stride, 1e-6f);
            same_floats(p, inplace ? "head_norm in place" : "head_norm", y, (size_t)T * stride, 2e-5);
            same_floats(p, "head_norm rstd", r, (size_t)T * nh, 2e-5);
            drop(p, x), drop(p, w), drop(p, r);
            if (!inplace) drop(p, y);
        }
}

/* Its backward from the forward's factors: dx in place of dy, dw accumulated. */
static void case_head_norm_bwd(const pair *p) {
    for (int k = 0; k < 3; k++) {
        int T = HN[k][0], nh = HN[k][1], hd = HN[k][2], stride = nh * hd + 5;
        float *hx = rand_floats((size_t)T * stride, 310 + k, 2), *hw = rand_floats(hd, 311 + k, 1);
        float *hy = or1_alloc_floats((size_t)T * stride), *hr = or1_alloc_floats((size_t)T * nh);
        or1_head_norm(hy, hr, hx, hw, T, nh, hd, stride, 1e-6f);
        twin x = both(p, hx, (size_t)T * stride * 4), w = both(p, hw, (size_t)hd * 4), r = both(p, hr, (size_t)T * nh * 4);
        twin d = both_rand(p, (size_t)T * stride, 312 + k, 1), dw = both_rand(p, hd, 313 + k, 1);
        for (int s = 0; s < 2; s++)
            BE(p, s)->ops->head_norm_bwd(BE(p, s), AT(d, s), AT(dw, s), AT(x, s), AT(r, s), AT(w, s), T, nh, hd, stride);
        same_floats(p, "head_norm_bwd dx", d, (size_t)T * stride, 2e-5);
        same_floats(p, "head_norm_bwd dw", dw, hd, p->tol_sum);
        drop(p, x), drop(p, w), drop(p, r), drop(p, d), drop(p, dw);
        free(hx), free(hw), free(hy), free(hr);
    }
}

/* Packed sequences for attention: starts, count, total, longest. */
typedef struct {
    int32_t start[5];
    int n, T, max_len;
} packing;
static const packing PACKS[] = {{{0, 1}, 1, 1, 1}, {{0, 33}, 1, 33, 33}, {{0, 1, 38, 70, 75}, 4, 75, 37}};
/* heads, KV heads, head_dim */
static const int ATT[][3] = {{1, 1, 4}, {4, 2, 8}, {6, 2, 64}};

/* Tolerance of attention: a backend's bf16 attention (the CUDA one: tensor cores over q, k, v
 * and a pool rounded to bf16) is held to the matmuls' bf16 tolerance, the CPU's fp32 one to
 * the sums'. */
static double att_tol(const pair *p) { return p->be->kv_bytes == 2 ? mm_tol(p) : p->tol_sum; }

/* out, lse and (backward) dqkv over every packing and head layout. */
static void attention_cases(const pair *p, bool bwd) {
    for (size_t k = 0; k < sizeof PACKS / sizeof *PACKS; k++)
        for (int a = 0; a < 3; a++) {
            const packing *pk = &PACKS[k];
            int nh = ATT[a][0], nkv = ATT[a][1], hd = ATT[a][2], T = pk->T, stride = (nh + 2 * nkv) * hd;
            float *hq = rand_floats((size_t)T * stride, 200 + k, 2);
            float *ho = or1_alloc_floats((size_t)T * nh * hd), *hl = or1_alloc_floats((size_t)T * nh);
            or1_attention(ho, hl, hq, pk->start, pk->n, nh, nkv, hd);
            twin qkv = both(p, hq, (size_t)T * stride * 4), ss = both(p, pk->start, (size_t)(pk->n + 1) * 4);
            twin out = both(p, ho, (size_t)T * nh * hd * 4), lse = both(p, hl, (size_t)T * nh * 4);
            twin dout = both_rand(p, (size_t)T * nh * hd, 201 + k, 1), dqkv = both_rand(p, (size_t)T * stride, 202, 1);
            char what[96];
            for (int s = 0; s < 2; s++) {
                or1_backend *be = BE(p, s);
                if (bwd)
                    be->ops->attention_bwd(be, AT(dqkv, s), AT(dout, s), AT(qkv, s), AT(out, s), AT(lse, s), AT(ss, s),
                                           pk->n, T, pk->max_len, nh, nkv, hd);
                else
                    be->ops->attention(be, AT(out, s), AT(lse, s), AT(qkv, s), AT(ss, s), pk->n, T, pk->max_len, nh, nkv, hd);
            }
            snprintf(what, sizeof what, "attention%s T=%d heads %d/%d hd=%d", bwd ? "_bwd" : "", T, nh, nkv, hd);
            if (bwd) {
                same_floats(p, what, dqkv, (size_t)T * stride, att_tol(p));
            } else {
                same_floats(p, what, out, (size_t)T * nh * hd, att_tol(p));
                same_floats(p, "attention lse", lse, (size_t)T * nh, att_tol(p));
            }
            drop(p, qkv), drop(p, ss), drop(p, out), drop(p, lse), drop(p, dout), drop(p, dqkv);
            free(hq), free(ho), free(hl);
        }
}

static void case_attention(const pair *p) { attention_cases(p, false); }
static void case_attention_bwd(const pair *p) { attention_cases(p, true); }

/* Rows' keys and values into scattered pool rows, exactly: each side's element (a bf16 pool
 * holds the floats rounded to nearest even). */
static void case_kv_store(const pair *p) {
    static const int SH[][3] = {{1, 2, 2}, {33, 64, 32}, {7, 96, 160}}; /* T, qd, kvd */
    for (int k = 0; k < 3; k++) {
        int T = SH[k][0], qd = SH[k][1], kvd = SH[k][2], pool = 2 * T + 3;
        int32_t *rows = or1_malloc((size_t)T * sizeof *rows);
        for (int t = 0; t < T; t++) rows[t] = (int32_t)((t * 7 + 2) % pool); /* distinct: 7 is prime to pool */
        twin r = both(p, rows, (size_t)T * 4), qkv = both_rand(p, (size_t)T * (qd + 2 * kvd), 210 + k, 1);
        size_t n = (size_t)pool * kvd;
        float *k0 = rand_floats(n, 211, 1), *v0 = rand_floats(n, 212, 1);
        twin kp = both_kv(p, k0, n), vp = both_kv(p, v0, n);
        for (int s = 0; s < 2; s++)
            BE(p, s)->ops->kv_store(BE(p, s), AT(kp, s), AT(vp, s), AT(r, s), AT(qkv, s), T, qd, kvd);
        bool half = p->be->kv_bytes == 2 || p->ref->kv_bytes == 2;
        twin pools[2] = {kp, vp};
        for (int i = 0; i < 2; i++) {
            float *a = take_kv(p, pools[i], 0, n), *b = take_kv(p, pools[i], 1, n);
            if (half)
                for (size_t e = 0; e < n; e++) b[e] = or1_bf16_round(b[e]);
            CHECK(!memcmp(a, b, n * sizeof *a), "%s kv_store %s (T=%d kvd=%d, %d-byte elements): the pools differ",
                  p->tag, i ? "values" : "keys", T, kvd, p->be->kv_bytes);
            free(a), free(b);
        }
        drop(p, r), drop(p, qkv), drop(p, kp), drop(p, vp);
        free(rows), free(k0), free(v0);
    }
}

/* Decode rows over a paged pool: each row's prompt part and own part in shuffled blocks;
 * up to 8 query heads per KV head (the grouped kernel) and more (the per-head one). */
static void case_attention_decode(const pair *p) {
    static const int HEADS[][3] = {{1, 1, 8}, {6, 2, 64}, {18, 2, 16}}; /* heads, KV heads, head_dim */
    enum { B = 5, BLOCK = 10, PER_ROW = 8 };
    int n_ctx[B] = {1, 70, 33, 32, 64};
    for (int k = 0; k < 3; k++) {
        int nh = HEADS[k][0], nkv = HEADS[k][1], hd = HEADS[k][2], cap = BLOCK * PER_ROW, kvd = nkv * hd;
        size_t pool = (size_t)B * cap * kvd;
        int32_t seg[4 * B], table[B * PER_ROW];
        int n_table = 0;
        for (int b = 0; b < B; b++) {
            int split = n_ctx[b] / 2 / BLOCK * BLOCK, pre = (split + BLOCK - 1) / BLOCK;
            int own = (n_ctx[b] - split + BLOCK - 1) / BLOCK;
            seg[4 * b] = n_table, seg[4 * b + 1] = split, seg[4 * b + 2] = n_table + pre, seg[4 * b + 3] = n_ctx[b] - split;
            for (int i = 0; i < pre + own; i++) table[n_table++] = (int32_t)((b * PER_ROW + 3 * i) % (B * PER_ROW));
        }
        float *kh = rand_floats(pool, 221, 2), *vh = rand_floats(pool, 222, 1);
        twin qkv = both_rand(p, (size_t)B * (nh + 2 * nkv) * hd, 220 + k, 2), kc = both_kv(p, kh, pool);
        twin vc = both_kv(p, vh, pool), out = both_rand(p, (size_t)B * nh * hd, 223, 1);
        twin sg = both(p, seg, sizeof seg), tb = both(p, table, (size_t)n_table * 4);
        for (int s = 0; s < 2; s++)
            BE(p, s)->ops->attention_decode(BE(p, s), AT(out, s), AT(qkv, s), B, AT(kc, s), AT(vc, s), AT(sg, s),
                                            AT(tb, s), BLOCK, nh, nkv, hd, cap);
        char what[64];
        snprintf(what, sizeof what, "attention_decode heads %d/%d hd=%d", nh, nkv, hd);
        same_floats(p, what, out, (size_t)B * nh * hd, att_tol(p));
        drop(p, qkv), drop(p, kc), drop(p, vc), drop(p, out), drop(p, sg), drop(p, tb);
        free(kh), free(vh);
    }
}

/* SwiGLU shapes: T rows, inter. */
static const int SW[][2] = {{1, 1}, {3, 33}, {37, 300}};

static void case_swiglu(const pair *p) {
    for (int k = 0; k < 3; k++) {
        int T = SW[k][0], I = SW[k][1];
        twin gu = both_rand(p, (size_t)T * 2 * I, 230 + k, 4), a = both_rand(p, (size_t)T * I, 231, 1);
        for (int s = 0; s < 2; s++) BE(p, s)->ops->swiglu(BE(p, s), AT(a, s), AT(gu, s), T, I);
        same_floats(p, "swiglu", a, (size_t)T * I, 2e-5);
        drop(p, gu), drop(p, a);
    }
}

static void case_swiglu_bwd(const pair *p) {
    for (int k = 0; k < 3; k++) {
        int T = SW[k][0], I = SW[k][1];
        twin gu = both_rand(p, (size_t)T * 2 * I, 240 + k, 4), da = both_rand(p, (size_t)T * I, 241, 1);
        twin a = both_rand(p, (size_t)T * I, 242, 1), dgu = both_rand(p, (size_t)T * 2 * I, 243, 1);
        for (int s = 0; s < 2; s++) BE(p, s)->ops->swiglu_bwd(BE(p, s), AT(dgu, s), AT(a, s), AT(da, s), AT(gu, s), T, I);
        same_floats(p, "swiglu_bwd", dgu, (size_t)T * 2 * I, 2e-5);
        same_floats(p, "swiglu_bwd's a", a, (size_t)T * I, 2e-5);
        drop(p, gu), drop(p, da), drop(p, a), drop(p, dgu);
    }
}

/* Head shapes: rows, width, vocabulary (16385: past one 16384-entry GPU chunk). */
static const int HEAD[][3] = {{1, 16, 1}, {19, 64, 300}, {3, 16, 16385}};

/* The head's log-probs, entropies, lse and E[z] at temperature 0.7; with bwd, dh and dW too. */
static void head_cases(const pair *p, bool bwd) {
    for (int k = 0; k < 3; k++) {
        int n = HEAD[k][0], H = HEAD[k][1], V = HEAD[k][2];
        int32_t *tg = rand_ids(n, V, 250 + k);
        tg[0] = V - 1;
        twin h = both_rand(p, (size_t)n * H, 251 + k, 1), w = both_rand(p, (size_t)V * H, 252 + k, 0.5f);
        twin tgt = both(p, tg, (size_t)n * 4), res = both_rand(p, (size_t)4 * n, 253, 1);
        twin wb = p->bf16 ? both_bf16(p, w, (size_t)V * H) : (twin){0};
        twin glp = both_rand(p, n, 254, 1), gH = both_rand(p, n, 255, 1);
        twin dh = both_rand(p, (size_t)n * H, 256, 1), dw = both_rand(p, (size_t)V * H, 257, 0.1f);
        for (int s = 0; s < 2; s++) {
            or1_backend *be = BE(p, s);
            float *r = AT(res, s);
            be->ops->head(be, r, r + n, r + 2 * n, r + 3 * n, AT(h, s), AT(w, s), AT(wb, s), AT(tgt, s), n, H, V, 0.7f);
            if (bwd)
                be->ops->head_bwd(be, AT(dh, s), AT(dw, s), AT(h, s), AT(w, s), AT(wb, s), AT(tgt, s), r + 2 * n,
                                  r + 3 * n, AT(glp, s), AT(gH, s), n, H, V, 0.7f);
        }
        char what[64];
        snprintf(what, sizeof what, "head %dx%dx%d (logp, entropy, lse, E[z])", n, H, V);
        if (!bwd) same_floats(p, what, res, (size_t)4 * n, p->bf16 ? 1e-2 : p->tol_sum);
        /* with one token the gradients are zero: on either side rounding noise, of the size of
         * the last bit by which the backward's recomputed logits (a GEMM) and the forward's (the
         * batch-invariant kernel, which made lse) differ; floored at 1e-2 */
        if (bwd) {
            snprintf(what, sizeof what, "head_bwd %dx%dx%d dh", n, H, V);
            same_floats_floor(p, what, dh, (size_t)n * H, mm_tol(p), 1e-2);
            same_floats_floor(p, "head_bwd dW", dw, (size_t)V * H, mm_tol(p), 1e-2);
        }
        drop(p, h), drop(p, w), drop(p, tgt), drop(p, res), drop(p, glp), drop(p, gH), drop(p, dh), drop(p, dw);
        if (p->bf16) drop(p, wb);
        free(tg);
    }
}

static void case_head(const pair *p) { head_cases(p, false); }
static void case_head_bwd(const pair *p) { head_cases(p, true); }

/* Optimizer sizes: 1, odd past a block, past many blocks. */
static const size_t OPT[] = {1, 257, 100003};

/* Three AdamW steps with weight decay. */
static void case_adamw(const pair *p) {
    or1_adamw_cfg c = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .weight_decay = 0.01f};
    for (int k = 0; k < 3; k++) {
        size_t n = OPT[k];
        twin w = both_rand(p, n, 260 + k, 1), g = both_rand(p, n, 261 + k, 1);
        twin m = both(p, NULL, n * 4), v = both(p, NULL, n * 4);
        for (long step = 1; step <= 3; step++)
            for (int s = 0; s < 2; s++) BE(p, s)->ops->adamw(BE(p, s), AT(w, s), AT(m, s), AT(v, s), AT(g, s), n, step, &c);
        same_floats(p, "adamw params", w, n, 1e-6);
        same_floats(p, "adamw exp_avg", m, n, 1e-6);
        same_floats(p, "adamw exp_avg_sq", v, n, 1e-6);
        drop(p, w), drop(p, g), drop(p, m), drop(p, v);
    }
}

/* The global norm in double. */
static void case_grad_norm(const pair *p) {
    for (int k = 0; k < 3; k++) {
        twin g = both_rand(p, OPT[k], 270 + k, 1);
        double a = p->be->ops->grad_norm(p->be, g.a, OPT[k]), b = p->ref->ops->grad_norm(p->ref, g.b, OPT[k]);
        CHECK(near(a, b, 0, 1e-12), "%s grad_norm of %zu: %.17g vs CPU %.17g", p->tag, OPT[k], a, b);
        drop(p, g);
    }
}

/* clip_grad_norm_ below and above the bound. */
static void case_clip(const pair *p) {
    for (int k = 0; k < 3; k++)
        for (int over = 0; over < 2; over++) {
            twin g = both_rand(p, OPT[k], 280 + k, 1);
            double norm = p->ref->ops->grad_norm(p->ref, g.b, OPT[k]), max = over ? norm / 3 : norm * 2;
            for (int s = 0; s < 2; s++) BE(p, s)->ops->clip(BE(p, s), AT(g, s), OPT[k], norm, max);
            same_floats(p, over ? "clip (scaled)" : "clip (kept)", g, OPT[k], 1e-7);
            drop(p, g);
        }
}

static void sample_is_head(const pair *p);

/* Draws that must agree whatever the backend's randomness: greedy, and top-k 1 at temperature
 * 0.8 (both the argmax), over vocabularies of 1, 7 and 3000 in rows of 1 and 5; and the
 * log-prob a draw reports is the head's. */
static void case_sample(const pair *p) {
    static const int SH[][2] = {{1, 1}, {5, 7}, {5, 3000}}; /* rows, vocabulary */
    for (int k = 0; k < 3; k++)
        for (int topk = 0; topk < 2; topk++) {
            int B = SH[k][0], V = SH[k][1];
            or1_sample_row rows[5];
            for (int b = 0; b < B; b++) rows[b] = (or1_sample_row){.temperature = topk ? 0.8f : 0.0f,
                                                                   .top_p = 1, .top_k = topk, .seed = 9,
                                                                   .stream = b, .counter = 4};
            twin z = both_rand(p, (size_t)B * V, 290 + k, 4);
            int32_t next[2][5];
            float lp[2][5];
            for (int s = 0; s < 2; s++)
                CHECK(!BE(p, s)->ops->sample(BE(p, s), next[s], lp[s], AT(z, s), B, V, rows), "%s sample: %s", p->tag,
                      or1_error());
            for (int b = 0; b < B; b++) {
                CHECK(next[0][b] == next[1][b], "%s sample %s row %d of V=%d: token %d, CPU %d", p->tag,
                      topk ? "top-k 1" : "greedy", b, V, next[0][b], next[1][b]);
                CHECK(near(lp[0][b], lp[1][b], 1e-5, 1e-5), "%s sample row %d: log-prob %g, CPU %g", p->tag, b,
                      lp[0][b], lp[1][b]);
            }
            drop(p, z);
        }
    sample_is_head(p);
}

/* The sampler's log-prob of the token it draws is the head's, bit for bit, as the rollout and
 * the trainer compute it: logits of 7 rows by matmul_rows (the decode's), sampled plain, with
 * top-p and greedy (whose log-prob is at temperature 1), then the head over the same hidden
 * rows and weights with those tokens as targets, on the backend under test; the vocabulary of
 * 16,390 spans two of the GPU head's chunks. */
static void sample_is_head(const pair *p) {
    enum { B = 7, H = 40, V = 16390 };
    static const float TEMP[] = {0.8f, 0.8f, 0.0f}, TOP_P[] = {1.0f, 0.9f, 1.0f};
    or1_backend *be = p->be;
    twin h = both_rand(p, (size_t)B * H, 300, 1), w = both_rand(p, (size_t)V * H, 301, 0.5f);
    twin wb = p->bf16 ? both_bf16(p, w, (size_t)V * H) : (twin){0};
    float *logits = put(be, NULL, (size_t)B * V * 4), *res = put(be, NULL, (size_t)4 * B * 4);
    int32_t *tgt = put(be, NULL, B * 4);
    be->ops->matmul_rows(be, logits, h.a, w.a, wb.a, NULL, B, H, V);
    for (size_t k = 0; k < sizeof TEMP / sizeof *TEMP; k++) {
        or1_sample_row rows[B];
        int32_t next[B];
        float lp[B];
        for (int b = 0; b < B; b++) rows[b] = (or1_sample_row){.temperature = TEMP[k], .top_p = TOP_P[k],
                                                               .top_k = 0, .seed = 11, .stream = b,
                                                               .counter = 2};
        if (!CHECK(!be->ops->sample(be, next, lp, logits, B, V, rows), "%s sample: %s", p->tag, or1_error())) break;
        be->ops->upload(be, tgt, next, sizeof next);
        be->ops->head(be, res, res + B, res + 2 * B, res + 3 * B, h.a, w.a, wb.a, tgt, B, H, V,
                      TEMP[k] > 0 ? TEMP[k] : 1.0f);
        float *head = take(be, res, (size_t)B * 4);
        for (int b = 0; b < B; b++)
            CHECK(!memcmp(&lp[b], &head[b], 4), "%s sample at temperature %g, top-p %g: row %d token %d log-prob %.9g, "
                  "the head's %.9g", p->tag, TEMP[k], TOP_P[k], b, next[b], lp[b], head[b]);
        free(head);
    }
    printf("ok   %s sample: the drawn tokens' log-probs are the head's bits\n", p->tag);
    be->ops->release(be, logits), be->ops->release(be, res), be->ops->release(be, tgt);
    drop(p, h), drop(p, w);
    if (p->bf16) drop(p, wb);
}

/* ---- The table walk -------------------------------------------------------------------- */

typedef void (*op_check)(const pair *p);

/* One slot of or1_backend_ops and the case that covers it (NULL: covered elsewhere, as said). */
typedef struct {
    size_t slot;
    const char *name;
    op_check check;
    const char *elsewhere; /* why a slot has no case here; such slots may be empty */
} op_case;

#define SLOT(f) offsetof(or1_backend_ops, f), #f
static const op_case CASES[] = {
    {SLOT(alloc), case_memory, NULL},
    {SLOT(release), NULL, "every case releases what it allocates"},
    {SLOT(upload), NULL, "case_memory and every case's inputs"},
    {SLOT(download), NULL, "case_memory and every comparison"},
    {SLOT(copy), NULL, "case_memory"},
    {SLOT(zero), NULL, "case_memory"},
    {SLOT(sync), NULL, "every download"},
    {SLOT(to_bf16), case_to_bf16, NULL},
    {SLOT(matmul_rows), case_matmul_rows, NULL},
    {SLOT(matmul_dx), case_matmul_dx, NULL},
    {SLOT(matmul_dw), case_matmul_dw, NULL},
    {SLOT(gather), case_gather, NULL},
    {SLOT(scatter_add), case_scatter_add, NULL},
    {SLOT(rmsnorm), case_rmsnorm, NULL},
    {SLOT(rmsnorm_bwd), case_rmsnorm_bwd, NULL},
    {SLOT(rope), case_rope, NULL},
    {SLOT(head_norm), case_head_norm, NULL},
    {SLOT(head_norm_bwd), case_head_norm_bwd, NULL},
    {SLOT(attention), case_attention, NULL},
    {SLOT(attention_bwd), case_attention_bwd, NULL},
    {SLOT(kv_store), case_kv_store, NULL},
    {SLOT(attention_decode), case_attention_decode, NULL},
    {SLOT(swiglu), case_swiglu, NULL},
    {SLOT(swiglu_bwd), case_swiglu_bwd, NULL},
    {SLOT(head), case_head, NULL},
    {SLOT(head_bwd), case_head_bwd, NULL},
    {SLOT(adamw), case_adamw, NULL},
    {SLOT(grad_norm), case_grad_norm, NULL},
    {SLOT(clip), case_clip, NULL},
    {SLOT(sample), case_sample, NULL},
    {SLOT(comm_id), NULL, "optional: cuda_train runs the device collectives over 2 ranks"},
    {SLOT(comm_init), NULL, "optional: cuda_train"},
    {SLOT(allreduce), NULL, "optional: cuda_train"},
    {SLOT(reduce_scatter), NULL, "optional: cuda_train (ZeRO-1)"},
    {SLOT(allgather), NULL, "optional: cuda_train (ZeRO-1)"},
    {SLOT(destroy), NULL, "or1_backend_free"},
};
enum { N_CASES = sizeof CASES / sizeof *CASES };

/* The case of the slot at offset off, or NULL. */
static const op_case *case_of(size_t off) {
    for (int i = 0; i < N_CASES; i++)
        if (CASES[i].slot == off) return &CASES[i];
    return NULL;
}

/* Whether be fills the slot at offset off. */
static bool filled(const or1_backend *be, size_t off) {
    void (*f)(void);
    memcpy(&f, (const char *)be->ops + off, sizeof f);
    return f != NULL;
}

/* Every function slot of the table, from the first (alloc) to the last (destroy), has a case,
 * and be fills every slot but the optional ones. */
static void walk(const or1_backend *be) {
    typedef void (*fn)(void);
    size_t first = offsetof(or1_backend_ops, alloc), end = offsetof(or1_backend_ops, destroy) + sizeof(fn);
    CHECK(end == sizeof(or1_backend_ops), "or1_backend_ops has fields after destroy: put new operations before it");
    for (size_t off = first; off < end; off += sizeof(fn)) {
        const op_case *c = case_of(off);
        if (!CHECK(c, "slot at byte %zu of or1_backend_ops has no case in test_backend_ops.c", off)) continue;
        bool optional = c->elsewhere && !strncmp(c->elsewhere, "optional", 8);
        CHECK(filled(be, off) || optional, "backend %s%s leaves slot %s empty", be->ops->name, be->bf16 ? " (bf16)" : "", c->name);
    }
}

/* Runs every case on be against ref (but those of slots be leaves empty: walk reported them). */
static void run_pair(or1_backend *be, or1_backend *ref, const char *tag) {
    walk(be);
    pair p = {be, ref, tag, be->bf16, 1e-4};
    for (int i = 0; i < N_CASES; i++)
        if (CASES[i].check && filled(be, CASES[i].slot)) {
            printf("-- %s %s\n", tag, CASES[i].name);
            CASES[i].check(&p);
        }
}

int main(void) {
    or1_set_threads(2);
    or1_backend *cpu = or1_backend_cpu(), *cpu16 = or1_backend_cpu_prec(true);
    or1_backend *cpu2 = or1_backend_cpu(), *cpu16b = or1_backend_cpu_prec(true);
    run_pair(cpu2, cpu, "cpu");
    run_pair(cpu16b, cpu16, "cpu bf16");
    or1_backend_free(cpu2), or1_backend_free(cpu16b);
    if (or1_cuda_device_count() > 0) {
        or1_backend *g = or1_backend_cuda(OR1_CUDA_FP32), *g16 = or1_backend_cuda(OR1_CUDA_BF16);
        if (CHECK(g && g16, "cuda backend: %s", or1_error())) {
            printf("device: %s\n", or1_backend_cuda_device(g));
            run_pair(g, cpu, "cuda");
            run_pair(g16, cpu16, "cuda bf16");
        }
        or1_backend_free(g), or1_backend_free(g16);
    } else {
        printf("note: no GPU visible: the CUDA backend is not compared (cuda_backend_ops_emu runs it emulated)\n");
    }
    or1_backend_free(cpu), or1_backend_free(cpu16);
    return check_report();
}
