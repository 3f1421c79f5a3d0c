/* Every CUDA kernel against its CPU kernel (src/kernels/cpu.c) on random inputs.
 * Tolerances are on the error scaled by the reference's largest magnitude:
 *   fp32 everywhere: 2e-5 for element-wise ops, 1e-4 for matmuls, attention and the head
 *   (different summation orders over up to 20k terms);
 *   bf16 GEMM operands (fp32 accumulation): 2e-2 for matmuls and head gradients, whose
 *   inputs are rounded to 8 significant bits; 1e-2 on log-probs and entropies.
 * Exits 77 (ctest's skip) when no GPU is visible. */
#include "common.h"

#include "or1/kernels.h"
#include "or1/model.h"

/* Linear layer forward, input gradient (overwrite and accumulate) and weight/bias gradients of
 * T rows, in inputs and out outputs. */
static void check_matmul(or1_cuda *g, double tol, const char *tag, int T, int in, int out) {
    char name[96];
    float *x = rand_floats((size_t)T * in, 1, 1), *w = rand_floats((size_t)out * in, 2, 0.3f);
    float *b = rand_floats(out, 3, 1), *dy = rand_floats((size_t)T * out, 4, 1);
    float *y = or1_alloc_floats((size_t)T * out), *dx = rand_floats((size_t)T * in, 5, 1);
    float *dw = rand_floats((size_t)out * in, 6, 1), *db = rand_floats(out, 7, 1);
    float *dx_d = to_dev(g, dx, (size_t)T * in * 4), *dw_d = to_dev(g, dw, (size_t)out * in * 4);
    float *db_d = to_dev(g, db, (size_t)out * 4), *x_d = to_dev(g, x, (size_t)T * in * 4);
    float *w_d = to_dev(g, w, (size_t)out * in * 4), *b_d = to_dev(g, b, (size_t)out * 4);
    float *dy_d = to_dev(g, dy, (size_t)T * out * 4), *y_d = or1_cuda_alloc((size_t)T * out * 4);

    or1_matmul(y, x, w, b, T, in, out);
    or1_cuda_matmul(g, y_d, x_d, w_d, b_d, T, in, out);
    snprintf(name, sizeof name, "matmul+bias %s %dx%dx%d", tag, T, in, out);
    expect_dev(g, name, y_d, y, (size_t)T * out, tol);
    or1_matmul(y, x, w, NULL, T, in, out);
    or1_cuda_matmul(g, y_d, x_d, w_d, NULL, T, in, out);
    snprintf(name, sizeof name, "matmul %s %dx%dx%d", tag, T, in, out);
    expect_dev(g, name, y_d, y, (size_t)T * out, tol);

    or1_matmul_dx(dx, dy, w, T, in, out, 1);
    or1_cuda_matmul_dx(g, dx_d, dy_d, w_d, T, in, out, 1);
    snprintf(name, sizeof name, "matmul_dx acc %s", tag);
    expect_dev(g, name, dx_d, dx, (size_t)T * in, tol);
    or1_matmul_dx(dx, dy, w, T, in, out, 0);
    or1_cuda_matmul_dx(g, dx_d, dy_d, w_d, T, in, out, 0);
    snprintf(name, sizeof name, "matmul_dx %s", tag);
    expect_dev(g, name, dx_d, dx, (size_t)T * in, tol);

    or1_matmul_dw(dw, db, dy, x, T, in, out);
    or1_cuda_matmul_dw(g, dw_d, db_d, dy_d, x_d, T, in, out);
    snprintf(name, sizeof name, "matmul_dw %s", tag);
    expect_dev(g, name, dw_d, dw, (size_t)out * in, tol);
    snprintf(name, sizeof name, "matmul_db %s", tag);
    expect_dev(g, name, db_d, db, out, 2e-5);

    void *dev[] = {dx_d, dw_d, db_d, x_d, w_d, b_d, dy_d, y_d};
    for (size_t i = 0; i < sizeof dev / sizeof *dev; i++) or1_cuda_release(dev[i]);
    float *host[] = {x, w, b, dy, y, dx, dw, db};
    for (size_t i = 0; i < sizeof host / sizeof *host; i++) free(host[i]);
}

/* Embedding gather and scatter-add with repeated ids. */
static void check_embed(or1_cuda *g) {
    int T = 50, H = 40, V = 13;
    int32_t ids[50];
    for (int t = 0; t < T; t++) ids[t] = (t * 7) % V;
    float *emb = rand_floats((size_t)V * H, 10, 1), *dx = rand_floats((size_t)T * H, 11, 1);
    float *demb = rand_floats((size_t)V * H, 12, 1), *x = or1_alloc_floats((size_t)T * H);
    int32_t *ids_d = to_dev(g, ids, sizeof ids);
    float *emb_d = to_dev(g, emb, (size_t)V * H * 4), *dx_d = to_dev(g, dx, (size_t)T * H * 4);
    float *demb_d = to_dev(g, demb, (size_t)V * H * 4), *x_d = or1_cuda_alloc((size_t)T * H * 4);
    for (int t = 0; t < T; t++) {
        memcpy(x + (size_t)t * H, emb + (size_t)ids[t] * H, (size_t)H * 4);
        for (int k = 0; k < H; k++) demb[(size_t)ids[t] * H + k] += dx[(size_t)t * H + k];
    }
    or1_cuda_embed(g, x_d, emb_d, ids_d, T, H);
    or1_cuda_embed_bwd(g, demb_d, dx_d, ids_d, T, H);
    expect_dev(g, "embed", x_d, x, (size_t)T * H, 0);
    expect_dev(g, "embed_bwd (scatter-add)", demb_d, demb, (size_t)V * H, 2e-6);
    void *dev[] = {ids_d, emb_d, dx_d, demb_d, x_d};
    for (size_t i = 0; i < sizeof dev / sizeof *dev; i++) or1_cuda_release(dev[i]);
    free(emb), free(dx), free(demb), free(x);
}

/* RMSNorm forward with a residual added first (sum, output, rstd) and backward (dx accumulated,
 * dw accumulated). */
static void check_rmsnorm(or1_cuda *g) {
    int T = 45, H = 300;
    float *x = rand_floats((size_t)T * H, 20, 2), *w = rand_floats(H, 21, 1), *dy = rand_floats((size_t)T * H, 22, 1);
    float *dx = rand_floats((size_t)T * H, 23, 1), *dw = rand_floats(H, 24, 1), *res = rand_floats((size_t)T * H, 25, 1);
    float *y = or1_alloc_floats((size_t)T * H), *r = or1_alloc_floats(T);
    float *x_d = to_dev(g, x, (size_t)T * H * 4), *w_d = to_dev(g, w, (size_t)H * 4);
    float *dy_d = to_dev(g, dy, (size_t)T * H * 4), *dx_d = to_dev(g, dx, (size_t)T * H * 4);
    float *dw_d = to_dev(g, dw, (size_t)H * 4), *y_d = or1_cuda_alloc((size_t)T * H * 4);
    float *r_d = or1_cuda_alloc((size_t)T * 4), *res_d = to_dev(g, res, (size_t)T * H * 4);
    or1_rmsnorm(y, r, x, res, w, T, H, 1e-6f);
    or1_rmsnorm_bwd(dx, dw, dy, x, r, w, T, H);
    or1_cuda_rmsnorm(g, y_d, r_d, x_d, res_d, w_d, T, H, 1e-6f);
    or1_cuda_rmsnorm_bwd(g, dx_d, dw_d, dy_d, x_d, r_d, w_d, T, H);
    expect_dev(g, "rmsnorm's residual sum", x_d, x, (size_t)T * H, 2e-5);
    expect_dev(g, "rmsnorm", y_d, y, (size_t)T * H, 2e-5);
    expect_dev(g, "rmsnorm rstd", r_d, r, T, 2e-5);
    expect_dev(g, "rmsnorm_bwd dx", dx_d, dx, (size_t)T * H, 2e-5);
    expect_dev(g, "rmsnorm_bwd dw", dw_d, dw, H, 2e-5);
    void *dev[] = {x_d, w_d, dy_d, dx_d, dw_d, y_d, r_d, res_d};
    for (size_t i = 0; i < sizeof dev / sizeof *dev; i++) or1_cuda_release(dev[i]);
    free(x), free(w), free(dy), free(dx), free(dw), free(y), free(r), free(res);
}

/* RoPE forward and inverse on strided rows with the same tables. */
static void check_rope(or1_cuda *g) {
    int T = 30, nh = 6, hd = 16, stride = nh * hd + 8, maxpos = 64, half = hd / 2;
    int32_t pos[30];
    for (int t = 0; t < T; t++) pos[t] = (t * 11) % maxpos;
    float *x = rand_floats((size_t)T * stride, 30, 1), *c = or1_alloc_floats((size_t)maxpos * half);
    float *s = or1_alloc_floats((size_t)maxpos * half);
    or1_rope_table(c, s, maxpos, hd, 10000.0f, NULL);
    float *x_d = to_dev(g, x, (size_t)T * stride * 4), *c_d = to_dev(g, c, (size_t)maxpos * half * 4);
    float *s_d = to_dev(g, s, (size_t)maxpos * half * 4);
    int32_t *pos_d = to_dev(g, pos, sizeof pos);
    for (int inv = 0; inv < 2; inv++) {
        or1_rope(x, stride, nh, hd, pos, T, c, s, inv);
        or1_cuda_rope(g, x_d, stride, nh, hd, pos_d, T, c_d, s_d, inv);
        expect_dev(g, inv ? "rope inverse" : "rope", x_d, x, (size_t)T * stride, 2e-6);
    }
    void *dev[] = {x_d, c_d, s_d, pos_d};
    for (size_t i = 0; i < sizeof dev / sizeof *dev; i++) or1_cuda_release(dev[i]);
    free(x), free(c), free(s);
}

/* Packed causal GQA attention forward (out, lse) and backward (dqkv) for one head width, at
 * the context's precision (bf16: the tensor-core forward over bf16-rounded q, k, v, against
 * the fp32 CPU kernel at tol). */
static void check_attention(or1_cuda *g, int hd, double tol, const char *tag) {
    int32_t seq_start[] = {0, 1, 38, 118, 123};
    int n_seqs = 4, T = 123, max_len = 80, nh = 4, nkv = 2, stride = (nh + 2 * nkv) * hd;
    char name[64];
    float *qkv = rand_floats((size_t)T * stride, 40 + hd, 2), *dout = rand_floats((size_t)T * nh * hd, 41, 1);
    float *out = or1_alloc_floats((size_t)T * nh * hd), *lse = or1_alloc_floats((size_t)T * nh);
    float *dqkv = or1_alloc_floats((size_t)T * stride);
    float *qkv_d = to_dev(g, qkv, (size_t)T * stride * 4), *dout_d = to_dev(g, dout, (size_t)T * nh * hd * 4);
    int32_t *ss_d = to_dev(g, seq_start, sizeof seq_start);
    float *out_d = or1_cuda_alloc((size_t)T * nh * hd * 4), *lse_d = or1_cuda_alloc((size_t)T * nh * 4);
    float *dqkv_d = or1_cuda_alloc((size_t)T * stride * 4);
    or1_attention(out, lse, qkv, seq_start, n_seqs, nh, nkv, hd);
    or1_attention_bwd(dqkv, dout, qkv, out, lse, seq_start, n_seqs, nh, nkv, hd);
    or1_cuda_attention(g, out_d, lse_d, qkv_d, ss_d, n_seqs, max_len, nh, nkv, hd);
    or1_cuda_attention_bwd(g, dqkv_d, dout_d, qkv_d, out_d, lse_d, ss_d, n_seqs, T, max_len, nh, nkv, hd);
    snprintf(name, sizeof name, "attention out hd=%d %s", hd, tag);
    expect_dev(g, name, out_d, out, (size_t)T * nh * hd, tol);
    snprintf(name, sizeof name, "attention lse hd=%d %s", hd, tag);
    expect_dev(g, name, lse_d, lse, (size_t)T * nh, tol);
    snprintf(name, sizeof name, "attention_bwd dqkv hd=%d %s", hd, tag);
    expect_dev(g, name, dqkv_d, dqkv, (size_t)T * stride, tol);
    void *dev[] = {qkv_d, dout_d, ss_d, out_d, lse_d, dqkv_d};
    for (size_t i = 0; i < sizeof dev / sizeof *dev; i++) or1_cuda_release(dev[i]);
    free(qkv), free(dout), free(out), free(lse), free(dqkv);
}

/* Decode attention over a paged pool against the CPU kernel: rows of different lengths, each
 * split into a prompt part and an own part (starting on a fresh block), their blocks of 10
 * rows scattered over the pool in a shuffled order; nh / nkv query heads per KV head (up to 8
 * take the grouped kernel, more the per-head one). */
static void check_decode(or1_cuda *g, int nh, int nkv) {
    enum { B = 5, BLOCK = 10, PER_ROW = 7 };
    int hd = 64, cap = BLOCK * PER_ROW, kvd = nkv * hd, stride = (nh + 2 * nkv) * hd, n_ctx[B] = {1, 70, 33, 32, 64};
    size_t pool = (size_t)B * cap * kvd;
    float *qkv = rand_floats((size_t)B * stride, 50, 2), *kc = rand_floats(pool, 51, 2), *vc = rand_floats(pool, 52, 1);
    float *out = or1_alloc_floats((size_t)B * nh * hd);
    int32_t seg[4 * B], table[B * PER_ROW];
    for (int b = 0, n_table = 0; b < B; b++) {
        int split = n_ctx[b] / 2 / BLOCK * BLOCK, pre = (split + BLOCK - 1) / BLOCK;
        int own = (n_ctx[b] - split + BLOCK - 1) / BLOCK;
        seg[4 * b] = n_table, seg[4 * b + 1] = split, seg[4 * b + 2] = n_table + pre, seg[4 * b + 3] = n_ctx[b] - split;
        for (int i = 0; i < pre + own; i++) /* logical block i of row b: physical (7b + 3i) mod 35 */
            table[n_table++] = (int32_t)((b * PER_ROW + 3 * (i + (i >= pre ? split / BLOCK - pre : 0))) % (B * PER_ROW));
    }
    float *scratch = or1_alloc_floats((size_t)or1_threads() * or1_attention_decode_scratch(nh, nkv, hd, cap));
    or1_attention_decode(out, qkv, B, kc, vc, seg, table, BLOCK, nh, nkv, hd, scratch, cap);
    free(scratch);
    float *qkv_d = to_dev(g, qkv, (size_t)B * stride * 4), *kc_d = to_dev(g, kc, pool * 4), *vc_d = to_dev(g, vc, pool * 4);
    float *out_d = or1_cuda_alloc((size_t)B * nh * hd * 4);
    int32_t *seg_d = to_dev(g, seg, sizeof seg), *table_d = to_dev(g, table, sizeof table);
    or1_cuda_attention_decode(g, out_d, qkv_d, B, kc_d, vc_d, seg_d, table_d, BLOCK, nh, nkv, hd, cap);
    expect_dev(g, nh / nkv <= 8 ? "attention_decode (grouped)" : "attention_decode", out_d, out, (size_t)B * nh * hd, 1e-4);
    void *dev[] = {qkv_d, kc_d, vc_d, out_d, seg_d, table_d};
    for (size_t i = 0; i < sizeof dev / sizeof *dev; i++) or1_cuda_release(dev[i]);
    free(qkv), free(kc), free(vc), free(out);
}

/* The decode attention gives each token the bits the packed forward gives it: T tokens of one
 * sequence through or1_cuda_attention, then every position decoded at once over a pool holding
 * the sequence's keys and values in shuffled blocks of 7 rows (the rollout's log-probs are then
 * the trainer's, as on the CPU). nh / nkv up to 8 takes the grouped decode kernel, more the other. */
static void check_decode_is_forward(or1_cuda *g, int nh, int nkv, int hd) {
    enum { T = 45, BLOCK = 7, NB = (T + BLOCK - 1) / BLOCK };
    int stride = (nh + 2 * nkv) * hd, kvd = nkv * hd;
    float *qkv = rand_floats((size_t)T * stride, 57, 2), *kc = or1_alloc_floats((size_t)NB * BLOCK * kvd);
    float *vc = or1_alloc_floats((size_t)NB * BLOCK * kvd);
    int32_t table[NB], seg[4 * T], ss[2] = {0, T};
    for (int b = 0; b < NB; b++) table[b] = (int32_t)((b * 3 + 1) % NB); /* 3 is prime to NB */
    for (int t = 0; t < T; t++) {
        size_t row = (size_t)table[t / BLOCK] * BLOCK + t % BLOCK;
        memcpy(kc + row * kvd, qkv + (size_t)t * stride + (size_t)nh * hd, (size_t)kvd * 4);
        memcpy(vc + row * kvd, qkv + (size_t)t * stride + (size_t)(nh + nkv) * hd, (size_t)kvd * 4);
        seg[4 * t] = 0, seg[4 * t + 1] = 0, seg[4 * t + 2] = 0, seg[4 * t + 3] = t + 1;
    }
    float *qkv_d = to_dev(g, qkv, (size_t)T * stride * 4), *kc_d = to_dev(g, kc, (size_t)NB * BLOCK * kvd * 4);
    float *vc_d = to_dev(g, vc, (size_t)NB * BLOCK * kvd * 4), *out_d = or1_cuda_alloc((size_t)T * nh * hd * 4);
    float *dec_d = or1_cuda_alloc((size_t)T * nh * hd * 4), *lse_d = or1_cuda_alloc((size_t)T * nh * 4);
    int32_t *ss_d = to_dev(g, ss, sizeof ss), *seg_d = to_dev(g, seg, sizeof seg), *tab_d = to_dev(g, table, sizeof table);
    or1_cuda_attention(g, out_d, lse_d, qkv_d, ss_d, 1, T, nh, nkv, hd);
    or1_cuda_attention_decode(g, dec_d, qkv_d, T, kc_d, vc_d, seg_d, tab_d, BLOCK, nh, nkv, hd, T);
    float *a = from_dev(g, out_d, (size_t)T * nh * hd), *b = from_dev(g, dec_d, (size_t)T * nh * hd);
    size_t differ = 0;
    for (size_t i = 0; i < (size_t)T * nh * hd; i++) differ += a[i] != b[i];
    CHECK(differ == 0, "decode vs packed attention (heads %d/%d, hd %d): %zu of %zu outputs differ", nh, nkv, hd,
          differ, (size_t)T * nh * hd);
    void *dev[] = {qkv_d, kc_d, vc_d, out_d, dec_d, lse_d, ss_d, seg_d, tab_d};
    for (size_t i = 0; i < sizeof dev / sizeof *dev; i++) or1_cuda_release(dev[i]);
    free(qkv), free(kc), free(vc), free(a), free(b);
}

/* In bf16 (tensor cores, a bf16 pool), decode gives a query the bits the packed forward gives
 * it: NS sequences of LEN[s] tokens through one or1_cuda_attention call; their keys and values
 * rounded to bf16 into a pool of blocks of 16 rows in a shuffled order; then positions decoded
 * as rows whose context is split into a prompt part and its own part (two block tables), with
 * ctx_cap the longest sequence: when every, every position of every sequence in one batch and
 * in batches of 3 (rows 20k .. 20k+2, from the last batch to the first); else one batch of the
 * positions whose context is 1, 64, 511, 512, 513, 1024 or 1025 keys (around FA_SPLIT's
 * chunk boundaries); and the last row of each sequence alone, with ctx_cap its own length. */
static void check_decode_bits(or1_cuda *g, int nh, int nkv, int hd, int NS, const int *LEN, bool every) {
    enum { BLOCK = 16 };
    int32_t ss[NS + 1];
    ss[0] = 0;
    int nb = 0, max_len = 0, first_block[NS], T_sel = 0;
    for (int s = 0; s < NS; s++) {
        ss[s + 1] = ss[s] + LEN[s];
        first_block[s] = nb;
        nb += (LEN[s] + BLOCK - 1) / BLOCK;
        max_len = LEN[s] > max_len ? LEN[s] : max_len;
    }
    int T = ss[NS], stride = (nh + 2 * nkv) * hd, kvd = nkv * hd;
    float *qkv = rand_floats((size_t)T * stride, 90 + hd + nh, 2);
    int32_t *table = or1_malloc((size_t)nb * sizeof *table), *seg = or1_malloc((size_t)4 * T * sizeof *seg);
    for (int b = 0; b < nb; b++) table[b] = (int32_t)((b * 7 + 3) % nb); /* 7 is prime to nb */
    or1_bf16 *kc = or1_malloc((size_t)nb * BLOCK * kvd * 2), *vc = or1_malloc((size_t)nb * BLOCK * kvd * 2);
    for (int s = 0; s < NS; s++)
        for (int p = 0; p < LEN[s]; p++) {
            int t = ss[s] + p, split = p / 2 / BLOCK * BLOCK; /* the prompt part: whole blocks */
            size_t row = (size_t)table[first_block[s] + p / BLOCK] * BLOCK + p % BLOCK;
            or1_bf16_from_f32(kc + row * kvd, qkv + (size_t)t * stride + (size_t)nh * hd, (size_t)kvd);
            or1_bf16_from_f32(vc + row * kvd, qkv + (size_t)t * stride + (size_t)(nh + nkv) * hd, (size_t)kvd);
            seg[4 * t] = first_block[s], seg[4 * t + 1] = split;
            seg[4 * t + 2] = first_block[s] + split / BLOCK, seg[4 * t + 3] = p + 1 - split;
        }
    size_t pool = (size_t)nb * BLOCK * kvd * 2, on = (size_t)nh * hd;
    float *qkv_d = to_dev(g, qkv, (size_t)T * stride * 4), *out_d = or1_cuda_alloc((size_t)T * on * 4);
    float *lse_d = or1_cuda_alloc((size_t)T * nh * 4), *dec_d = or1_cuda_alloc((size_t)T * on * 4);
    void *kc_d = to_dev(g, kc, pool), *vc_d = to_dev(g, vc, pool);
    int32_t *ss_d = to_dev(g, ss, sizeof ss), *seg_d = to_dev(g, seg, (size_t)4 * T * 4);
    int32_t *tab_d = to_dev(g, table, (size_t)nb * 4);
    or1_cuda_attention(g, out_d, lse_d, qkv_d, ss_d, NS, max_len, nh, nkv, hd);
    float *want = from_dev(g, out_d, (size_t)T * on);
    char what[96];
    float *got = NULL, *got3 = NULL;
    if (every) {
        or1_cuda_attention_decode(g, dec_d, qkv_d, T, kc_d, vc_d, seg_d, tab_d, BLOCK, nh, nkv, hd, max_len);
        got = from_dev(g, dec_d, (size_t)T * on);
        for (int t0 = (T - 1) / 20 * 20; t0 >= 0; t0 -= 20)
            or1_cuda_attention_decode(g, dec_d + (size_t)t0 * on, qkv_d + (size_t)t0 * stride, T - t0 < 3 ? T - t0 : 3,
                                      kc_d, vc_d, seg_d + 4 * t0, tab_d, BLOCK, nh, nkv, hd, max_len);
        got3 = from_dev(g, dec_d, (size_t)T * on);
    } else { /* the selected rows gathered into one batch, their outputs put back in place */
        static const int CTX[] = {1, 64, 511, 512, 513, 1024, 1025};
        int32_t *sel = or1_malloc((size_t)T * sizeof *sel), *sseg = or1_malloc((size_t)4 * T * sizeof *sseg);
        float *sq = or1_alloc_floats((size_t)T * stride);
        for (int s = 0; s < NS; s++)
            for (size_t c = 0; c < sizeof CTX / sizeof *CTX; c++)
                if (CTX[c] <= LEN[s]) sel[T_sel++] = ss[s] + CTX[c] - 1;
        for (int i = 0; i < T_sel; i++) {
            memcpy(sq + (size_t)i * stride, qkv + (size_t)sel[i] * stride, (size_t)stride * 4);
            memcpy(sseg + 4 * i, seg + 4 * sel[i], 16);
        }
        float *sq_d = to_dev(g, sq, (size_t)T_sel * stride * 4);
        int32_t *sseg_d = to_dev(g, sseg, (size_t)4 * T_sel * 4);
        float *sout = or1_cuda_alloc((size_t)T_sel * on * 4);
        or1_cuda_attention_decode(g, sout, sq_d, T_sel, kc_d, vc_d, sseg_d, tab_d, BLOCK, nh, nkv, hd, max_len);
        float *so = from_dev(g, sout, (size_t)T_sel * on);
        got = or1_alloc_floats((size_t)T * on);
        memcpy(got, want, (size_t)T * on * 4);
        or1_cuda_upload(g, dec_d, want, (size_t)T * on * 4); /* the rows the next run leaves */
        for (int i = 0; i < T_sel; i++) memcpy(got + (size_t)sel[i] * on, so + (size_t)i * on, on * 4);
        or1_cuda_release(sq_d), or1_cuda_release(sseg_d), or1_cuda_release(sout);
        free(sel), free(sseg), free(sq), free(so);
    }
    for (int s = 0; s < NS; s++) {
        int t = ss[s + 1] - 1;
        or1_cuda_attention_decode(g, dec_d + (size_t)t * on, qkv_d + (size_t)t * stride, 1, kc_d, vc_d, seg_d + 4 * t,
                                  tab_d, BLOCK, nh, nkv, hd, LEN[s]);
    }
    float *got1 = from_dev(g, dec_d, (size_t)T * on);
    const float *runs[3] = {got, got3, got1};
    const char *names[3] = {every ? "all rows" : "rows at chunk boundaries", "batches of 3", "the last rows alone"};
    for (int r = 0; r < 3; r++) {
        if (!runs[r]) continue;
        size_t differ = 0, first = 0;
        for (size_t i = 0; i < (size_t)T * on; i++)
            if (memcmp(&runs[r][i], &want[i], 4) && !differ++) first = i;
        snprintf(what, sizeof what, "bf16 decode = forward (heads %d/%d, hd %d, %s)", nh, nkv, hd, names[r]);
        CHECK(differ == 0, "%s: %zu of %zu outputs differ, first at row %zu (%.9g, the forward's %.9g)", what, differ,
              (size_t)T * on, first / on, differ ? runs[r][first] : 0.0, differ ? want[first] : 0.0);
        if (!differ) printf("ok   %s\n", what);
    }
    void *dev[] = {qkv_d, out_d, lse_d, dec_d, kc_d, vc_d, ss_d, seg_d, tab_d};
    for (size_t i = 0; i < sizeof dev / sizeof *dev; i++) or1_cuda_release(dev[i]);
    free(qkv), free(table), free(seg), free(kc), free(vc), free(want), free(got), free(got3), free(got1);
}

/* SwiGLU forward and backward. */
static void check_swiglu(or1_cuda *g) {
    int T = 33, I = 90;
    float *gu = rand_floats((size_t)T * 2 * I, 60, 4), *da = rand_floats((size_t)T * I, 61, 1);
    float *a = or1_alloc_floats((size_t)T * I), *dgu = or1_alloc_floats((size_t)T * 2 * I);
    float *gu_d = to_dev(g, gu, (size_t)T * 2 * I * 4), *da_d = to_dev(g, da, (size_t)T * I * 4);
    float *a_d = or1_cuda_alloc((size_t)T * I * 4), *dgu_d = or1_cuda_alloc((size_t)T * 2 * I * 4);
    or1_swiglu(a, gu, T, I);
    or1_cuda_swiglu(g, a_d, gu_d, T, I);
    expect_dev(g, "swiglu", a_d, a, (size_t)T * I, 2e-5);
    or1_swiglu_bwd(dgu, a, da, gu, T, I);
    or1_cuda_zero(g, a_d, (size_t)T * I * 4);
    or1_cuda_swiglu_bwd(g, dgu_d, a_d, da_d, gu_d, T, I);
    expect_dev(g, "swiglu_bwd's a", a_d, a, (size_t)T * I, 2e-5);
    expect_dev(g, "swiglu_bwd", dgu_d, dgu, (size_t)T * 2 * I, 2e-5);
    void *dev[] = {gu_d, da_d, a_d, dgu_d};
    for (size_t i = 0; i < sizeof dev / sizeof *dev; i++) or1_cuda_release(dev[i]);
    free(gu), free(da), free(a), free(dgu);
}

/* The streaming head over two vocabulary chunks, forward and backward, at temperature 0.7. */
static void check_head(or1_cuda *g, double tol_fwd, double tol_bwd, const char *tag) {
    int n = 19, H = 64, V = 20000;
    float temp = 0.7f;
    char name[64];
    int32_t tgt[19];
    for (int i = 0; i < n; i++) tgt[i] = (int32_t)((i * 7919) % V);
    tgt[0] = V - 1;
    float *h = rand_floats((size_t)n * H, 70, 1), *w = rand_floats((size_t)V * H, 71, 0.5f);
    float *glp = rand_floats(n, 72, 1), *gH = rand_floats(n, 73, 1), *dw = rand_floats((size_t)V * H, 74, 0.1f);
    float *res = or1_alloc_floats((size_t)4 * n), *dh = or1_alloc_floats((size_t)n * H);
    float *scratch = or1_alloc_floats((size_t)or1_head_scratch(n, H));
    float *h_d = to_dev(g, h, (size_t)n * H * 4), *w_d = to_dev(g, w, (size_t)V * H * 4);
    float *glp_d = to_dev(g, glp, (size_t)n * 4), *gH_d = to_dev(g, gH, (size_t)n * 4);
    float *dw_d = to_dev(g, dw, (size_t)V * H * 4), *res_d = or1_cuda_alloc((size_t)4 * n * 4);
    float *dh_d = or1_cuda_alloc((size_t)n * H * 4);
    int32_t *tgt_d = to_dev(g, tgt, sizeof tgt);
    or1_head(res, res + n, res + 2 * n, res + 3 * n, h, w, NULL, tgt, n, H, V, temp, scratch);
    or1_head_bwd(dh, dw, h, w, NULL, tgt, res + 2 * n, res + 3 * n, glp, gH, n, H, V, temp, scratch);
    or1_cuda_head(g, res_d, res_d + n, res_d + 2 * n, res_d + 3 * n, h_d, w_d, tgt_d, n, H, V, temp);
    float *got = from_dev(g, res_d, (size_t)4 * n);
    const char *parts[] = {"logp", "entropy", "lse", "E[z]"};
    for (int k = 0; k < 4; k++) {
        snprintf(name, sizeof name, "head %s %s", parts[k], tag);
        expect_close(name, got + (size_t)k * n, res + (size_t)k * n, n, tol_fwd);
    }
    or1_cuda_head_bwd(g, dh_d, dw_d, h_d, w_d, tgt_d, res_d + 2 * n, res_d + 3 * n, glp_d, gH_d, n, H, V, temp);
    snprintf(name, sizeof name, "head_bwd dh %s", tag);
    expect_dev(g, name, dh_d, dh, (size_t)n * H, tol_bwd);
    snprintf(name, sizeof name, "head_bwd dW %s", tag);
    expect_dev(g, name, dw_d, dw, (size_t)V * H, tol_bwd);
    void *dev[] = {h_d, w_d, glp_d, gH_d, dw_d, res_d, dh_d, tgt_d};
    for (size_t i = 0; i < sizeof dev / sizeof *dev; i++) or1_cuda_release(dev[i]);
    free(h), free(w), free(glp), free(gH), free(dw), free(res), free(dh), free(scratch), free(got);
}

/* Three AdamW steps, the global gradient norm and clipping. */
static void check_optimizer(or1_cuda *g) {
    size_t n = 300001;
    or1_adamw_cfg c = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .weight_decay = 0.01f};
    float *p = rand_floats(n, 80, 1), *gr = rand_floats(n, 81, 1);
    or1_adamw o;
    or1_adamw_init(&o, n);
    float *p_d = to_dev(g, p, n * 4), *gr_d = to_dev(g, gr, n * 4);
    float *m_d = or1_cuda_alloc(n * 4), *v_d = or1_cuda_alloc(n * 4);
    for (int s = 1; s <= 3; s++) {
        or1_adamw_step(&o, p, gr, &c);
        or1_cuda_adamw(g, p_d, m_d, v_d, gr_d, n, s, &c);
    }
    expect_dev(g, "adamw params (3 steps)", p_d, p, n, 1e-6);
    expect_dev(g, "adamw exp_avg_sq", v_d, o.v, n, 1e-6);
    double want = or1_grad_norm(gr, n), got = or1_cuda_grad_norm(g, gr_d, n);
    CHECK(near(got, want, 0, 1e-12), "grad_norm %.17g vs CPU %.17g (tol 1e-12 relative)", got, want);
    or1_clip_grad_norm(gr, n, want, 1.0);
    or1_cuda_clip(g, gr_d, n, got, 1.0);
    expect_dev(g, "clip_grad_norm", gr_d, gr, n, 1e-7);
    void *dev[] = {p_d, gr_d, m_d, v_d};
    for (size_t i = 0; i < sizeof dev / sizeof *dev; i++) or1_cuda_release(dev[i]);
    or1_adamw_free(&o);
    free(p), free(gr);
}

int main(void) {
    require_gpu("cuda_kernels");
    or1_set_threads(2);
    or1_cuda *g = or1_cuda_new(OR1_CUDA_FP32);
    if (!g) {
        fprintf(stderr, "FAIL: %s\n", or1_error());
        return 1;
    }
    printf("device: %s\n", or1_cuda_device_name(g));
    check_matmul(g, 1e-4, "fp32", 37, 70, 53);
    check_embed(g);
    check_rmsnorm(g);
    check_rope(g);
    check_attention(g, 8, 1e-4, "fp32");
    check_attention(g, 64, 1e-4, "fp32");
    check_attention(g, 128, 1e-4, "fp32");
    check_attention(g, 256, 1e-4, "fp32"); /* the widest head: backward needs more than 48 KiB of shared memory */
    check_decode(g, 6, 2);
    check_decode(g, 18, 2);
    check_decode_is_forward(g, 6, 2, 64);
    check_decode_is_forward(g, 18, 2, 16);
    check_swiglu(g);
    check_head(g, 1e-4, 1e-4, "fp32");
    check_optimizer(g);
    or1_cuda_set_prec(g, OR1_CUDA_BF16);
    check_matmul(g, 2e-2, "bf16", 37, 70, 53);
    check_matmul(g, 2e-2, "bf16", 150, 64, 130); /* the kernel for many rows; fp32 weights by float4 */
    check_head(g, 1e-2, 2e-2, "bf16");
    for (int hd = 8; hd <= 256; hd *= 2)
        if (hd != 16 && hd != 32) check_attention(g, hd, 2e-2, "bf16");
    check_attention(g, 12, 2e-2, "bf16"); /* a width padded to the mma's 16 */
    static const int GROUPS[] = {1, 3, 6}, LEN[] = {1, 63, 64, 65, 130, 200}, LONG[] = {511, 512, 513, 1100};
    for (int k = 0; k < 3; k++) check_decode_bits(g, 2 * GROUPS[k], 2, 64, 6, LEN, true);
    for (int k = 0; k < 3; k++) check_decode_bits(g, GROUPS[k], 1, 128, 6, LEN, true);
    check_decode_bits(g, 18, 1, 16, 6, LEN, true); /* a group wider than one fragment: two of 16 heads */
    check_decode_bits(g, 4, 2, 12, 6, LEN, true);  /* rows not 16-byte aligned: element-wise fetches */
    check_decode_bits(g, 3, 1, 64, 4, LONG, false); /* contexts across FA_SPLIT's chunk boundaries */
    CHECK(!or1_cuda_sync(g), "pending CUDA error: %s", or1_error());
    or1_cuda_free(g);
    return check_report();
}
