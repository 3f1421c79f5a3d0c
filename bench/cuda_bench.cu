/* or1 CUDA throughput on random weights of a DeepSeek-R1-Distill-Qwen shape.
 *   train:   forward + streaming head + backward + clipped AdamW over packed sequences;
 *            tokens/s and model FLOPs utilisation against a dense bf16 peak.
 *   rollout: prefill every slot, then batched decode with on-device sampling; tokens/s.
 * Both run through the backend seam (or1_dmodel, or1_generate), as or1 train does.
 * Prints one JSON object per mode on stdout (bench/cuda.sh compares them with PyTorch).
 * Usage: cuda_bench MODEL(1.5b|7b|tiny) [--prec bf16|fp32] [--seqs N] [--len L] [--steps S]
 *        [--slots B] [--prompt P] [--new N] [--peak-tflops X] [--skip-train] [--skip-rollout]
 *        [--decode-step K]: instead of rollout tokens/s, one decode step's time at slots rows and a
 *        context of P tokens (the cost model's rows), from generation to 1 and to 1 + K tokens. */
extern "C" {
#include "or1/core.h"
#include "or1/rollout.h"
}
#include "or1/cuda.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *model;
    or1_cuda_prec prec;
    int seqs, len, steps, slots, prompt, n_new, decode_steps;
    double peak;
    bool train, rollout;
} opts;

/* The shapes of DeepSeek-R1-Distill-Qwen 1.5B / 7B (Qwen2: q/k/v biases, untied head). */
static int shape(or1_model_config *c, const char *name) {
    memset(c, 0, sizeof *c);
    c->arch = OR1_ARCH_QWEN2, c->qkv_bias = true, c->rms_eps = 1e-6f, c->rope_theta = 10000.0f;
    c->vocab = 151936, c->max_pos = 131072;
    if (!strcmp(name, "1.5b"))
        c->hidden = 1536, c->intermediate = 8960, c->layers = 28, c->heads = 12, c->kv_heads = 2;
    else if (!strcmp(name, "7b"))
        c->hidden = 3584, c->intermediate = 18944, c->layers = 28, c->heads = 28, c->kv_heads = 4;
    else if (!strcmp(name, "tiny"))
        c->hidden = 256, c->intermediate = 512, c->layers = 2, c->heads = 4, c->kv_heads = 2, c->vocab = 4096;
    else
        return or1_fail("cuda_bench: unknown model \"%s\" (1.5b, 7b, tiny)", name);
    c->head_dim = c->hidden / c->heads;
    return 0;
}

/* Forward FLOPs of a packed batch: every matmul (2 per multiply-add), causal attention
 * scores and mixing, and the head at the scored positions. Training counts 3x this. */
static double forward_flops(const or1_model_config *c, long tokens, double sum_sq_len, long scored) {
    double H = c->hidden, I = c->intermediate, qd = (double)c->heads * c->head_dim;
    double qkvd = qd + 2.0 * c->kv_heads * c->head_dim;
    double per_tok = 2 * (H * qkvd + qd * H + H * 2 * I + I * H);
    double attn = 2.0 * 2.0 * qd * sum_sq_len / 2.0; /* QK^T and PV over the causal half */
    return c->layers * (per_tok * tokens + attn) + 2.0 * H * c->vocab * scored;
}

/* Parses the flags after the model name. */
static int parse(opts *o, int argc, char **argv) {
    *o = (opts){argv[1], OR1_CUDA_BF16, 8, 1024, 5, 64, 256, 256, 0, 989.0, true, true};
    for (int i = 2; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(f, "--skip-train")) o->train = false;
        else if (!strcmp(f, "--skip-rollout")) o->rollout = false;
        else if (!v) return or1_fail("cuda_bench: %s needs a value", f);
        else if (!strcmp(f, "--prec") && (!strcmp(v, "bf16") || !strcmp(v, "fp32")))
            o->prec = strcmp(v, "bf16") ? OR1_CUDA_FP32 : OR1_CUDA_BF16, i++;
        else if (!strcmp(f, "--seqs")) o->seqs = atoi(v), i++;
        else if (!strcmp(f, "--len")) o->len = atoi(v), i++;
        else if (!strcmp(f, "--steps")) o->steps = atoi(v), i++;
        else if (!strcmp(f, "--slots")) o->slots = atoi(v), i++;
        else if (!strcmp(f, "--prompt")) o->prompt = atoi(v), i++;
        else if (!strcmp(f, "--new")) o->n_new = atoi(v), i++;
        else if (!strcmp(f, "--decode-step")) o->decode_steps = atoi(v), i++;
        else if (!strcmp(f, "--peak-tflops")) o->peak = atof(v), i++;
        else return or1_fail("cuda_bench: unknown flag %s", f);
    }
    if (o->seqs < 1 || o->len < 2 || o->steps < 1 || o->slots < 1 || o->prompt < 1 || o->n_new < 1)
        return or1_fail("cuda_bench: sizes must be positive");
    return 0;
}

/* Training steps over seqs sequences of len tokens (a quarter prompt, the rest scored). */
static int bench_train(or1_dmodel *dm, const or1_model_config *c, const opts *o, const char *device) {
    int32_t *ids = (int32_t *)or1_malloc((size_t)o->seqs * o->len * sizeof(int32_t));
    or1_seq *seqs = (or1_seq *)or1_malloc((size_t)o->seqs * sizeof(or1_seq));
    for (int s = 0; s < o->seqs; s++) {
        for (int t = 0; t < o->len; t++)
            ids[(size_t)s * o->len + t] = (int32_t)(or1_rand_u64(3, (uint64_t)s, (uint64_t)t) % c->vocab);
        seqs[s] = (or1_seq){.ids = ids + (size_t)s * o->len, .n = o->len,
                            .n_prompt = o->len / 4 > 0 ? o->len / 4 : 1};
    }
    or1_batch b;
    or1_batch_pack(&b, seqs, o->seqs);
    int S = b.n_scored;
    float *buf = or1_alloc_floats((size_t)4 * S);
    for (int i = 0; i < S; i++) buf[2 * S + i] = 1.0f / S, buf[3 * S + i] = -1e-3f / S;
    or1_adamw_cfg ac = {.lr = 1e-6f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .weight_decay = 0.01f};
    double t0 = 0, norm = 0;
    or1_adamw opt;
    or1_adamw_init(&opt, or1_dmodel_host(dm)->n_floats);
    int rc = 0;
    for (int k = 0; k <= o->steps && !rc; k++) {
        if (k == 1) t0 = or1_now(); /* step 0 warms up (allocation, cuBLAS heuristics) */
        rc = or1_dmodel_forward(dm, &b, true) || or1_dmodel_head(dm, &b, 1.0f, buf, buf + S) ||
             or1_dmodel_backward(dm, &b, 1.0f, buf + 2 * S, buf + 3 * S) || or1_dmodel_step(dm, &opt, &ac, 1.0, &norm);
    }
    or1_adamw_free(&opt);
    double dt = (or1_now() - t0) / o->steps;
    if (!rc) {
        double sq = (double)o->seqs * o->len * o->len, fl = 3 * forward_flops(c, b.n_tokens, sq, S);
        printf("{\"mode\": \"train\", \"model\": \"%s\", \"prec\": \"%s\", \"device\": \"%s\", \"seqs\": %d, "
               "\"len\": %d, \"step_s\": %.4f, \"tokens_per_s\": %.1f, \"tflops\": %.2f, \"mfu\": %.4f, "
               "\"peak_tflops\": %.0f, \"grad_norm\": %.4g}\n",
               o->model, o->prec == OR1_CUDA_BF16 ? "bf16" : "fp32", device, o->seqs, o->len, dt,
               b.n_tokens / dt, fl / dt / 1e12, fl / dt / 1e12 / o->peak, o->peak, norm);
        fflush(stdout);
    }
    or1_batch_free(&b);
    free(buf), free(ids), free(seqs);
    return rc ? -1 : 0;
}

/* slots requests of one random prompt each through the rollout engine (prefill, continuous
 * batching, on-device sampling), every sample running to n_new tokens: seconds and tokens. */
static int generate(or1_dmodel *dm, const or1_model_config *c, const opts *o, int n_new, double *dt, long *tokens) {
    int B = o->slots;
    int32_t *ids = (int32_t *)or1_malloc((size_t)B * o->prompt * sizeof(int32_t));
    or1_request *reqs = (or1_request *)or1_calloc((size_t)B, sizeof *reqs);
    or1_completion *out = (or1_completion *)or1_calloc((size_t)B, sizeof *out);
    for (int s = 0; s < B; s++) {
        int32_t *p = ids + (size_t)s * o->prompt;
        for (int t = 0; t < o->prompt; t++) p[t] = (int32_t)(or1_rand_u64(4, (uint64_t)s, (uint64_t)t) % c->vocab);
        or1_request *r = &reqs[s]; /* zeroed: no stop tokens, no top-k */
        r->prompt = p, r->n_prompt = o->prompt, r->n_samples = 1;
        r->s.temperature = 1.0f, r->s.top_p = 1.0f, r->s.max_new_tokens = n_new, r->s.seed = (uint64_t)(9 + s);
    }
    /* a pool for every slot's whole context: 256 rows of 8K at 1.5B take 60 GB in bf16 */
    or1_engine_cfg ec = {};
    ec.opts.max_slots = B, ec.opts.kv_cache_gb = 120.0;
    double t0 = or1_now();
    int rc = or1_generate(dm, reqs, B, &ec, out);
    *dt = or1_now() - t0;
    *tokens = 0;
    for (int s = 0; s < B && !rc; s++) *tokens += out[s].n;
    or1_completions_free(out, rc ? 0 : B);
    free(ids), free(reqs), free(out);
    return rc ? -1 : 0;
}

/* The time of one decode step of slots rows at a context of about prompt tokens (the cost
 * model's rows, bench/cost_model.py): generation to 1 and to 1 + steps tokens, the difference
 * over steps (prefill and the first token cancel). */
static int bench_decode(or1_dmodel *dm, const or1_model_config *c, const opts *o, const char *device) {
    double t1, t2;
    long n1, n2;
    if (generate(dm, c, o, 1, &t1, &n1) || generate(dm, c, o, 1 + o->decode_steps, &t2, &n2))
        return -1;
    double step = (t2 - t1) / o->decode_steps;
    printf("{\"mode\": \"decode\", \"model\": \"%s\", \"prec\": \"%s\", \"device\": \"%s\", \"slots\": %d, "
           "\"context\": %d, \"step_s\": %.6f, \"tokens_per_s\": %.1f}\n",
           o->model, o->prec == OR1_CUDA_BF16 ? "bf16" : "fp32", device, o->slots, o->prompt, step,
           o->slots / step);
    fflush(stdout);
    return 0;
}

/* Rollout tokens/s: every slot's prompt prefilled, then n_new tokens each. */
static int bench_rollout(or1_dmodel *dm, const or1_model_config *c, const opts *o, const char *device) {
    double dt;
    long tokens;
    int B = o->slots, rc = generate(dm, c, o, o->n_new, &dt, &tokens);
    if (!rc) {
        printf("{\"mode\": \"rollout\", \"model\": \"%s\", \"prec\": \"%s\", \"device\": \"%s\", \"slots\": %d, "
               "\"prompt\": %d, \"new\": %d, \"seconds\": %.3f, \"tokens_per_s\": %.1f}\n",
               o->model, o->prec == OR1_CUDA_BF16 ? "bf16" : "fp32", device, B, o->prompt, o->n_new, dt,
               (double)tokens / dt);
        fflush(stdout);
    }
    return rc;
}

int main(int argc, char **argv) {
    opts o;
    or1_model_config c;
    if (argc < 2 || parse(&o, argc, argv) || shape(&c, o.model)) {
        fprintf(stderr, "cuda_bench: %s\n", argc < 2 ? "usage: cuda_bench 1.5b|7b|tiny [flags]" : or1_error());
        return 2;
    }
    if (or1_cuda_device_count() < 1) {
        fprintf(stderr, "cuda_bench: no CUDA GPU visible (cudaGetDeviceCount reports none); nothing measured\n");
        return 1;
    }
    or1_backend *be = or1_backend_cuda(o.prec);
    or1_model m;
    or1_model_init(&m, &c);
    or1_model_randomize(&m, 1, 0.02f);
    or1_dmodel *dm = be ? or1_dmodel_new(be, &m) : NULL;
    const char *device = be ? or1_backend_cuda_device(be) : "";
    int rc = !dm;
    if (!rc && o.train) rc = bench_train(dm, &c, &o, device);
    if (!rc && o.rollout) rc = o.decode_steps ? bench_decode(dm, &c, &o, device) : bench_rollout(dm, &c, &o, device);
    if (rc) fprintf(stderr, "cuda_bench: %s\n", or1_error());
    or1_dmodel_free(dm);
    or1_backend_free(be);
    or1_model_free(&m);
    return rc ? 1 : 0;
}
