/* NaN and infinities through the CPU kernels: every kernel stays in defined behaviour (the
 * sanitizer build aborts on any undefined operation, such as the fast exp's integer shift of a
 * NaN), a NaN input shows up as NaN where it flows and nowhere else, and the sampler refuses
 * logits that form no distribution (token 0, NaN log-prob) instead of reading out of bounds. */
#include "or1/core.h"
#include "or1/kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"

/* Values that break arithmetic, and the ordinary ones around them. */
static const float ODD[] = {NAN, INFINITY, -INFINITY, 1e30f, -1e30f, 88.5f, -87.5f, 0.0f};
enum { N_ODD = sizeof ODD / sizeof ODD[0] };

/* SwiGLU forward and backward over every odd value as the gate: NaN in, NaN out; +-inf and
 * huge gates stay defined (the exp saturates). */
static void test_swiglu(void) {
    float gu[2 * N_ODD], a[N_ODD], a2[N_ODD], da[N_ODD], dgu[2 * N_ODD];
    for (int i = 0; i < N_ODD; i++) gu[i] = ODD[i], gu[N_ODD + i] = 1.0f, da[i] = 1.0f;
    or1_swiglu(a, gu, 1, N_ODD);
    or1_swiglu_bwd(dgu, a2, da, gu, 1, N_ODD);
    CHECK(isnan(a[0]) && isnan(dgu[0]), "a NaN gate gives NaN (%g, %g)", a[0], dgu[0]);
    CHECK(!memcmp(a, a2, sizeof a), "the backward's recomputed a is the forward's to the bit");
    CHECK(a[4] == 0.0f || fabsf(a[4]) < 1e-6f, "silu(-1e30) is 0, got %g", a[4]);
    CHECK(isfinite(a[5]) && isfinite(a[6]) && a[7] == 0.0f, "ordinary gates stay finite");
}

/* The streaming head over three rows, the middle one NaN: only its log-prob and entropy are
 * NaN; the backward pass stays defined. */
static void test_head(void) {
    enum { H = 8, V = 40, R = 3 };
    float h[R * H], w[V * H], logp[R], ent[R], lse[R], ez[R], dh[R * H], dw[V * H] = {0};
    float g1[R] = {1, 1, 1}, g2[R] = {0.5f, 0.5f, 0.5f};
    int32_t tgt[R] = {1, 2, 3};
    for (int i = 0; i < R * H; i++) h[i] = (float)((i * 7) % 11) / 11.0f - 0.5f;
    for (int i = 0; i < V * H; i++) w[i] = (float)((i * 13) % 17) / 17.0f - 0.5f;
    h[H + 2] = NAN;
    float *scratch = or1_alloc_floats((size_t)or1_head_scratch(R, H) + 1);
    or1_head(logp, ent, lse, ez, h, w, NULL, tgt, R, H, V, 1.0f, scratch);
    CHECK(isfinite(logp[0]) && isfinite(logp[2]) && isnan(logp[1]) && isnan(ent[1]),
          "a NaN row poisons only itself: %g %g %g", logp[0], logp[1], logp[2]);
    or1_head_bwd(dh, dw, h, w, NULL, tgt, lse, ez, g1, g2, R, H, V, 1.0f, scratch);
    CHECK(isfinite(dh[0]) && isnan(dh[H]), "backward: finite rows stay finite");
    free(scratch);
}

/* Causal attention over one sequence of 4 tokens whose second key holds +inf: defined
 * throughout, and the first token (which cannot see it) stays finite. */
static void test_attention(void) {
    enum { T = 4, NH = 2, NKV = 1, HD = 4, QKV = (NH + 2 * NKV) * HD };
    float qkv[T * QKV], out[T * NH * HD], lse[T * NH], dout[T * NH * HD], dqkv[T * QKV];
    for (int i = 0; i < T * QKV; i++) qkv[i] = (float)((i * 5) % 9) / 9.0f - 0.4f, dout[i % (T * NH * HD)] = 0.1f;
    qkv[1 * QKV + NH * HD] = INFINITY; /* token 1's key */
    int32_t seq[2] = {0, T};
    or1_attention(out, lse, qkv, seq, 1, NH, NKV, HD);
    or1_attention_bwd(dqkv, dout, qkv, out, lse, seq, 1, NH, NKV, HD);
    CHECK(isfinite(out[0]) && isfinite(lse[0]), "token 0 does not see the infinite key: %g", out[0]);
}

/* The sampler on logits with a NaN, a +inf, or only -inf, at every setting: token 0 and a NaN
 * log-prob; and a -inf among finite logits is an ordinary impossible token. */
static void test_sample(void) {
    enum { V = 16 };
    float logits[V], scratch[3 * V], logp;
    or1_sample_row rows[] = {{0, 1, 0, 1, 0, 0}, {1, 1, 0, 1, 0, 0}, {1, 0.9f, 0, 1, 0, 0}, {0.7f, 1, 4, 1, 0, 0}};
    float bad[] = {NAN, INFINITY};
    for (size_t r = 0; r < sizeof rows / sizeof *rows; r++) {
        for (size_t b = 0; b < 3; b++) {
            for (int v = 0; v < V; v++) logits[v] = b == 2 ? -INFINITY : (float)v / V;
            if (b < 2) logits[5] = bad[b];
            int32_t tok = or1_sample_token(logits, V, &rows[r], 0.5, &logp, scratch);
            CHECK(tok == 0 && isnan(logp), "row %zu, case %zu: token %d, logp %g", r, b, tok, logp);
        }
        for (int v = 0; v < V; v++) logits[v] = v == 3 ? -INFINITY : 0.0f;
        int32_t tok = or1_sample_token(logits, V, &rows[r], 0.3, &logp, scratch);
        CHECK(tok != 3 && isfinite(logp), "row %zu: a -inf logit is never drawn (token %d)", r, tok);
    }
}

/* RMSNorm of a row holding +inf, and AdamW with a NaN gradient: defined, and the NaN lands
 * only on its own parameter. */
static void test_norm_adamw(void) {
    float x[4] = {1, INFINITY, 2, 3}, w[4] = {1, 1, 1, 1}, y[4], rstd;
    or1_rmsnorm(y, &rstd, x, NULL, w, 1, 4, 1e-6f);
    CHECK(isnan(y[1]), "rmsnorm: the infinite element comes out NaN, got %g", y[1]);
    float p[3] = {1, 1, 1}, m[3] = {0}, v[3] = {0}, g[3] = {0.1f, NAN, -0.1f};
    or1_adamw_update(p, m, v, g, 3, 1, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f);
    CHECK(isfinite(p[0]) && isnan(p[1]) && isfinite(p[2]), "AdamW: %g %g %g", p[0], p[1], p[2]);
}

int main(void) {
    test_swiglu();
    test_head();
    test_attention();
    test_sample();
    test_norm_adamw();
    return check_report();
}
