/* Runs one backend operation of the CUDA backend once, in bf16 as the GPU runs by default, on
 * the emulated GPU, so that the emulator's per-kernel counters (written at exit to the file
 * OR1_EMU_COUNTERS names) hold what that operation alone launched, read, wrote and computed.
 * bench/cost_model.py runs it at small shapes, fits the counts and extrapolates them to real
 * models. Inputs are random; what the operation computes is not checked here (tests/cuda is).
 *
 * usage: cuda_counts OP ARGS...
 *   matmul T IN OUT              matmul_rows with bf16 weights (every forward matmul, the logits)
 *   rmsnorm T H                  with the residual add
 *   rope T HEADS HD
 *   swiglu T I
 *   gather T H                   the embedding (bf16 table)
 *   attention SEQS L NH NKV HD   the training / prefill forward over SEQS sequences of L tokens
 *   attention_bwd SEQS L NH NKV HD
 *   decode B CTX NH NKV HD       kv_store and attention_decode: B rows, each with CTX keys
 *   head N H V                   the training head (log-probs and entropies of N rows)
 *   sample B V                   the sampler over B rows of logits at temperature 1
 *   adamw N                      one AdamW step over N parameters
 *   grad_norm N                  the global gradient norm and clipping over N
 *   to_bf16 N                    the weights' bf16 copy refreshed after a step
 * and the backward's: matmul_dx T IN OUT, matmul_dw T IN OUT (with a bias gradient when BIAS
 * is given as a fifth argument 1), rmsnorm_bwd T H, swiglu_bwd T I, head_bwd N H V,
 * scatter_add T H (the embedding's gradient). */
#include "backend_impl.h"
#include "or1/core.h"
#include "or1/cuda.h"
#include "or1/kernels.h"
#include "or1/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The emulator's counters restart (setup's launches are not the operation's). */
void or1_emu_counts_reset(void);

static or1_backend *be;

/* Stops with a message. */
static void die(const char *what) {
    fprintf(stderr, "cuda_counts: %s: %s\n", what, or1_error());
    exit(1);
}

/* Device memory of n floats in [-1, 1), or zeroed with rnd false. */
static float *dev(size_t n, bool rnd) {
    float *h = calloc(n ? n : 1, sizeof(float));
    uint64_t s = 0x9e3779b97f4a7c15ull + n;
    for (size_t i = 0; rnd && i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        h[i] = (float)((s >> 40) & 0xffff) / 32768.0f - 1.0f;
    }
    void *d = be->ops->alloc(be, (n ? n : 1) * sizeof(float));
    if (!d || be->ops->upload(be, d, h, (n ? n : 1) * sizeof(float))) die("device memory");
    free(h);
    return d;
}

/* Device memory of n ints, each i % mod (or given). */
static int32_t *ints(size_t n, int mod, const int32_t *given) {
    int32_t *h = malloc((n ? n : 1) * sizeof(int32_t));
    for (size_t i = 0; i < n; i++) h[i] = given ? given[i] : (int32_t)(i % (size_t)mod);
    void *d = be->ops->alloc(be, (n ? n : 1) * sizeof(int32_t));
    if (!d || be->ops->upload(be, d, h, (n ? n : 1) * sizeof(int32_t))) die("device memory");
    free(h);
    return d;
}

/* A bf16 copy of n floats on the device. */
static or1_bf16 *bf16_of(const float *x, size_t n) {
    or1_bf16 *d = be->ops->alloc(be, n * sizeof(or1_bf16));
    if (!d) die("device memory");
    be->ops->to_bf16(be, d, x, n);
    return d;
}

/* Integer argument i of argv (at least 1). */
static int arg(int argc, char **argv, int i) {
    if (i >= argc) {
        fprintf(stderr, "cuda_counts %s: missing argument %d\n", argv[1], i - 1);
        exit(2);
    }
    int v = atoi(argv[i]);
    if (v < 1) {
        fprintf(stderr, "cuda_counts %s: argument %d must be a positive integer, not '%s'\n", argv[1], i - 1, argv[i]);
        exit(2);
    }
    return v;
}

/* Sequence starts of n sequences of L tokens. */
static int32_t *starts(int n, int L) {
    int32_t *h = malloc(((size_t)n + 1) * sizeof(int32_t));
    for (int i = 0; i <= n; i++) h[i] = i * L;
    int32_t *d = ints((size_t)n + 1, 1, h);
    free(h);
    return d;
}

/* decode: B rows, each with a 1-token prompt and CTX-1 tokens of its own in blocks of its own
 * (no prefix shared, the dearest case: a long rollout's context is mostly its own tokens), the
 * new token's row last (the pool's layout mid-rollout: block tables, 16-row blocks). */
static void run_decode(int B, int ctx, int nh, int nkv, int hd) {
    enum { BLOCK = 16 };
    int own = ctx - 1, per = 1 + (own + BLOCK - 1) / BLOCK; /* a prompt block, then the row's own */
    size_t kvd = (size_t)nkv * hd, n_blocks = (size_t)B * per, rows = n_blocks * BLOCK;
    float *qkv = dev((size_t)B * (nh + 2 * nkv) * hd, true), *out = dev((size_t)B * nh * hd, false);
    float *k = dev(rows * kvd, true), *v = dev(rows * kvd, true);
    int32_t *seg = malloc((size_t)B * 4 * sizeof(int32_t)), *blk = malloc(n_blocks * sizeof(int32_t));
    int32_t *store = malloc((size_t)B * sizeof(int32_t));
    for (size_t i = 0; i < n_blocks; i++) blk[i] = (int32_t)i;
    for (int b = 0; b < B; b++) {
        seg[4 * b] = b * per, seg[4 * b + 1] = 1, seg[4 * b + 2] = b * per + 1, seg[4 * b + 3] = own;
        store[b] = (b * per + 1) * BLOCK + own - 1;
    }
    int32_t *dseg = ints((size_t)B * 4, 1, seg), *dblk = ints(n_blocks, 1, blk);
    int32_t *drows = ints((size_t)B, 1, store);
    or1_emu_counts_reset();
    be->ops->kv_store(be, k, v, drows, qkv, B, nh * hd, (int)kvd);
    be->ops->attention_decode(be, out, qkv, B, k, v, dseg, dblk, BLOCK, nh, nkv, hd, ctx);
    free(seg), free(blk), free(store);
}

/* Runs argv's operation. */
static void run(int argc, char **argv) {
    const char *op = argv[1];
    const or1_backend_ops *o = be->ops;
    if (!strcmp(op, "matmul")) {
        int T = arg(argc, argv, 2), in = arg(argc, argv, 3), out = arg(argc, argv, 4);
        float *x = dev((size_t)T * in, true), *w = dev((size_t)out * in, true), *y = dev((size_t)T * out, false);
        or1_bf16 *wb = bf16_of(w, (size_t)out * in);
        or1_emu_counts_reset();
        o->matmul_rows(be, y, x, w, wb, NULL, T, in, out);
    } else if (!strcmp(op, "matmul_dx") || !strcmp(op, "matmul_dw")) {
        int T = arg(argc, argv, 2), in = arg(argc, argv, 3), out = arg(argc, argv, 4);
        float *x = dev((size_t)T * in, true), *w = dev((size_t)out * in, true), *dy = dev((size_t)T * out, true);
        or1_bf16 *wb = bf16_of(w, (size_t)out * in);
        float *db = argc > 5 ? dev((size_t)out, false) : NULL;
        or1_emu_counts_reset();
        if (!strcmp(op, "matmul_dx")) o->matmul_dx(be, x, dy, w, wb, T, in, out, 0);
        else o->matmul_dw(be, w, db, dy, x, T, in, out);
    } else if (!strcmp(op, "rmsnorm_bwd")) {
        int T = arg(argc, argv, 2), H = arg(argc, argv, 3);
        float *x = dev((size_t)T * H, true), *dy = dev((size_t)T * H, true), *w = dev((size_t)H, true);
        float *dx = dev((size_t)T * H, true), *dw = dev((size_t)H, false), *r = dev((size_t)T, true);
        or1_emu_counts_reset();
        o->rmsnorm_bwd(be, dx, dw, dy, x, r, w, T, H);
    } else if (!strcmp(op, "swiglu_bwd")) {
        int T = arg(argc, argv, 2), I = arg(argc, argv, 3);
        float *gu = dev((size_t)T * 2 * I, true), *a = dev((size_t)T * I, false), *da = dev((size_t)T * I, true);
        float *dgu = dev((size_t)T * 2 * I, false);
        or1_emu_counts_reset();
        o->swiglu_bwd(be, dgu, a, da, gu, T, I);
    } else if (!strcmp(op, "scatter_add")) {
        int T = arg(argc, argv, 2), H = arg(argc, argv, 3), V = 4 * T;
        float *dst = dev((size_t)V * H, false), *src = dev((size_t)T * H, true);
        int32_t *idx = ints((size_t)T, V, NULL);
        or1_emu_counts_reset();
        o->scatter_add(be, dst, src, idx, T, H);
    } else if (!strcmp(op, "rmsnorm")) {
        int T = arg(argc, argv, 2), H = arg(argc, argv, 3);
        float *x = dev((size_t)T * H, true), *res = dev((size_t)T * H, true), *w = dev((size_t)H, true);
        float *y = dev((size_t)T * H, false), *r = dev((size_t)T, false);
        or1_emu_counts_reset();
        o->rmsnorm(be, y, r, x, res, w, T, H, 1e-6f);
    } else if (!strcmp(op, "rope")) {
        int T = arg(argc, argv, 2), nh = arg(argc, argv, 3), hd = arg(argc, argv, 4);
        float *x = dev((size_t)T * nh * hd, true), *c = dev((size_t)T * hd / 2, true), *s = dev((size_t)T * hd / 2, true);
        int32_t *pos = ints((size_t)T, T, NULL);
        or1_emu_counts_reset();
        o->rope(be, x, nh * hd, nh, hd, pos, T, c, s, 0);
    } else if (!strcmp(op, "swiglu")) {
        int T = arg(argc, argv, 2), I = arg(argc, argv, 3);
        float *gu = dev((size_t)T * 2 * I, true), *a = dev((size_t)T * I, false);
        or1_emu_counts_reset();
        o->swiglu(be, a, gu, T, I);
    } else if (!strcmp(op, "gather")) {
        int T = arg(argc, argv, 2), H = arg(argc, argv, 3), V = 4 * T;
        float *emb = dev((size_t)V * H, true), *y = dev((size_t)T * H, false);
        or1_bf16 *eb = bf16_of(emb, (size_t)V * H);
        int32_t *idx = ints((size_t)T, V, NULL);
        or1_emu_counts_reset();
        o->gather(be, y, emb, eb, idx, T, H);
    } else if (!strcmp(op, "attention") || !strcmp(op, "attention_bwd")) {
        int S = arg(argc, argv, 2), L = arg(argc, argv, 3), nh = arg(argc, argv, 4), nkv = arg(argc, argv, 5);
        int hd = arg(argc, argv, 6), T = S * L;
        float *qkv = dev((size_t)T * (nh + 2 * nkv) * hd, true), *out = dev((size_t)T * nh * hd, false);
        float *lse = dev((size_t)T * nh, false);
        int32_t *st = starts(S, L);
        if (!strcmp(op, "attention")) {
            or1_emu_counts_reset();
            o->attention(be, out, lse, qkv, st, S, T, L, nh, nkv, hd);
        } else {
            float *dout = dev((size_t)T * nh * hd, true), *dqkv = dev((size_t)T * (nh + 2 * nkv) * hd, false);
            o->attention(be, out, lse, qkv, st, S, T, L, nh, nkv, hd);
            or1_emu_counts_reset();
            o->attention_bwd(be, dqkv, dout, qkv, out, lse, st, S, T, L, nh, nkv, hd);
        }
    } else if (!strcmp(op, "decode")) {
        run_decode(arg(argc, argv, 2), arg(argc, argv, 3), arg(argc, argv, 4), arg(argc, argv, 5), arg(argc, argv, 6));
    } else if (!strcmp(op, "head")) {
        int n = arg(argc, argv, 2), H = arg(argc, argv, 3), V = arg(argc, argv, 4);
        float *h = dev((size_t)n * H, true), *w = dev((size_t)V * H, true);
        or1_bf16 *wb = bf16_of(w, (size_t)V * H);
        float *lp = dev((size_t)n, false), *ent = dev((size_t)n, false), *lse = dev((size_t)n, false), *ez = dev((size_t)n, false);
        int32_t *tgt = ints((size_t)n, V, NULL);
        or1_emu_counts_reset();
        o->head(be, lp, ent, lse, ez, h, w, wb, tgt, n, H, V, 1.0f);
    } else if (!strcmp(op, "head_bwd")) {
        int n = arg(argc, argv, 2), H = arg(argc, argv, 3), V = arg(argc, argv, 4);
        float *h = dev((size_t)n * H, true), *w = dev((size_t)V * H, true), *dw = dev((size_t)V * H, false);
        or1_bf16 *wb = bf16_of(w, (size_t)V * H);
        float *lp = dev((size_t)n, false), *ent = dev((size_t)n, false), *lse = dev((size_t)n, false);
        float *ez = dev((size_t)n, false), *glp = dev((size_t)n, true), *gent = dev((size_t)n, true);
        float *dh = dev((size_t)n * H, false);
        int32_t *tgt = ints((size_t)n, V, NULL);
        o->head(be, lp, ent, lse, ez, h, w, wb, tgt, n, H, V, 1.0f);
        or1_emu_counts_reset();
        o->head_bwd(be, dh, dw, h, w, wb, tgt, lse, ez, glp, gent, n, H, V, 1.0f);
    } else if (!strcmp(op, "sample")) {
        int B = arg(argc, argv, 2), V = arg(argc, argv, 3);
        float *logits = dev((size_t)B * V, true), *lp = malloc((size_t)B * sizeof(float));
        int32_t *next = malloc((size_t)B * sizeof(int32_t));
        or1_sample_row *rows = calloc((size_t)B, sizeof *rows);
        for (int b = 0; b < B; b++) rows[b] = (or1_sample_row){.temperature = 1.0f, .top_p = 1.0f, .seed = 1, .stream = b};
        or1_emu_counts_reset();
        if (o->sample(be, next, lp, logits, B, V, rows)) die("sample");
        free(lp), free(next), free(rows);
    } else if (!strcmp(op, "grad_norm")) {
        int n = arg(argc, argv, 2);
        float *g = dev((size_t)n, true);
        or1_emu_counts_reset();
        double norm = o->grad_norm(be, g, (size_t)n);
        if (norm < 0) die("grad_norm");
        o->clip(be, g, (size_t)n, norm, 1.0);
    } else if (!strcmp(op, "to_bf16")) {
        int n = arg(argc, argv, 2);
        float *x = dev((size_t)n, true);
        or1_emu_counts_reset();
        bf16_of(x, (size_t)n);
    } else if (!strcmp(op, "adamw")) {
        int n = arg(argc, argv, 2);
        float *p = dev((size_t)n, true), *m = dev((size_t)n, false), *v = dev((size_t)n, false), *g = dev((size_t)n, true);
        or1_adamw_cfg c = {.lr = 1e-6f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .weight_decay = 0.01f};
        or1_emu_counts_reset();
        o->adamw(be, p, m, v, g, (size_t)n, 1, &c);
    } else {
        fprintf(stderr, "cuda_counts: unknown operation '%s' (see the usage at the top of bench/cuda_counts.c)\n", op);
        exit(2);
    }
    if (o->sync(be)) die(op);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: cuda_counts OP ARGS... (see bench/cuda_counts.c)\n");
        return 2;
    }
    be = or1_backend_cuda(OR1_CUDA_BF16);
    if (!be) die("cuda");
    run(argc, argv);
    return 0;
}
