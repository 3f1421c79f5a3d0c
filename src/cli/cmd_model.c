/* `or1 logprobs` and `or1 grad`: the model core from the command line. */
#include "cli.h"

#include "or1/core.h"
#include "or1/io.h"
#include "or1/model.h"
#include "or1/train.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { LOGPROB_BATCH_TOKENS = 8192 };

/* A growable list of id sequences read from JSONL, with the input place of each ("FILE:LINE"). */
typedef struct {
    or1_seq *seq;
    char (*where)[OR1_WHERE_MAX];
    int n, cap;
    long tokens;
} seq_list;

/* Refuses a row whose log-prob or entropy JSON cannot hold (NaN, an infinity), naming the row
 * and the token: the model's output was not finite (damaged or out-of-range weights). */
static int row_finite(const float *lp, const float *ent, int n, const char *where) {
    size_t i = or1_first_nonfinite(lp, (size_t)n), j = or1_first_nonfinite(ent, (size_t)n);
    if (i == (size_t)n && j == (size_t)n) return 0;
    size_t t = i < j ? i : j;
    return or1_fail("%s: token %zu: the %s is %g, which JSON cannot hold: the model's output is not finite "
                    "(are its weights damaged or out of range?)",
                    where, t + 1, i <= j ? "log-prob" : "entropy", (double)(i <= j ? lp[t] : ent[t]));
}

/* Frees the sequences' ids and empties the list. */
static void seq_list_clear(seq_list *l) {
    for (int i = 0; i < l->n; i++) free((void *)l->seq[i].ids);
    l->n = 0;
    l->tokens = 0;
}

/* Runs one packed forward over the listed sequences and prints one JSON line per sequence. */
static int logprobs_flush(or1_dmodel *dm, seq_list *l, float temperature) {
    if (l->n == 0) return 0;
    or1_batch b;
    or1_batch_pack(&b, l->seq, l->n);
    float *lp = or1_malloc((size_t)2 * (b.n_scored + 1) * sizeof *lp), *ent = lp + b.n_scored + 1;
    int rc = or1_dmodel_forward(dm, &b, false) || or1_dmodel_head(dm, &b, temperature, lp, ent);
    for (int i = 0, k = 0; i < l->n && !rc; i++) {
        int n = l->seq[i].n - 1;
        if ((rc = row_finite(lp + k, ent + k, n, l->where[i]))) break;
        fputs("{\"logprobs\":", stdout);
        or1_json_write_floats(stdout, lp + k, (size_t)n);
        fputs(",\"entropy\":", stdout);
        or1_json_write_floats(stdout, ent + k, (size_t)n);
        fputs("}\n", stdout);
        k += n;
    }
    fflush(stdout);
    free(lp);
    or1_batch_free(&b);
    seq_list_clear(l);
    return rc ? -1 : 0;
}

/* Appends a sequence read at where to the list. */
static void seq_list_push(seq_list *l, int32_t *ids, int n, int n_prompt, const char *where) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->seq = or1_realloc(l->seq, (size_t)l->cap * sizeof *l->seq);
        l->where = or1_realloc(l->where, (size_t)l->cap * sizeof *l->where);
    }
    snprintf(l->where[l->n], sizeof l->where[l->n], "%s", where);
    l->seq[l->n++] = (or1_seq){.ids = ids, .n = n, .n_prompt = n_prompt};
    l->tokens += n;
}

/* The log-prob temperature flag of logprobs and grad. */
#define FLAG_LOGIT_TEMPERATURE FLAG_NUM("temperature", "1", 1e-4, 1e4, "divides the logits before the softmax")

/* The flags of `or1 logprobs`. */
static const cli_flag_spec logprobs_flags[] = {
    FLAG_NEED("model", "checkpoint folder (config.json + model.safetensors)"),
    FLAG_NEED("input", "JSONL rows {\"ids\": [...]}"),
    FLAG_LOGIT_TEMPERATURE,
    FLAG_DEVICE,
};

/* or1 logprobs --model DIR --input FILE [--temperature T] [--device cpu|cuda] [--precision P] */
static int cmd_logprobs(cli_args *a) {
    const char *dir = cli_str(a, "model"), *input = cli_str(a, "input"), *device = cli_str(a, "device");
    const char *precision = cli_str(a, "precision");
    double t = 1.0;
    cli_double(a, "temperature", &t);
    float temperature = (float)t;
    if (cli_check_unused(a)) return 2;
    cli_model cm;
    if (cli_model_open(&cm, dir, device, precision, false)) return 1;
    or1_jsonl_reader r;
    if (or1_jsonl_open(&r, input)) {
        cli_model_close(&cm);
        return 1;
    }
    seq_list l = {0};
    cJSON *row;
    int rc, status = 0;
    while ((rc = or1_jsonl_next(&r, &row)) == 1) {
        const char *where = r.where;
        int32_t *ids;
        size_t n;
        int bad = or1_json_int_array(row, "ids", 0, cm.m.cfg.vocab - 1, &ids, &n, where);
        cJSON_Delete(row);
        if (!bad && n == 0) bad = or1_fail("%s: \"ids\" is empty", where), free(ids);
        if (bad) {
            status = 1;
            break;
        }
        seq_list_push(&l, ids, (int)n, 1, where);
        if (l.tokens >= LOGPROB_BATCH_TOKENS && logprobs_flush(cm.dm, &l, temperature)) {
            status = 1;
            break;
        }
    }
    if (rc < 0) status = 1;
    if (status == 0 && logprobs_flush(cm.dm, &l, temperature)) status = 1;
    seq_list_clear(&l);
    free(l.seq), free(l.where);
    or1_jsonl_close(&r);
    cli_model_close(&cm);
    return status;
}

const cli_command cli_cmd_logprobs = CLI_COMMAND(
    "logprobs", cmd_logprobs, "per-token log-probs and entropies of id sequences (JSON lines on stdout)",
    logprobs_flags, "or1 logprobs --model models/arith-base --input ids.jsonl");

/* A grad batch held in memory (the loss needs the global token count first). */
typedef struct {
    or1_sample *s;
    int n, cap;
    or1_loss_norm norm; /* trained response tokens, sequences with one */
    long packed;        /* all tokens */
    int max_resp;       /* the most trained tokens of one response */
} sample_list;

/* Frees the samples' arrays. */
static void sample_list_free(sample_list *l) {
    for (int i = 0; i < l->n; i++) {
        free((void *)l->s[i].prompt);
        free((void *)l->s[i].resp);
        free((void *)l->s[i].old_logp);
        free((void *)l->s[i].rollout_logp);
        free((void *)l->s[i].mask);
    }
    free(l->s);
}

/* An optional per-response-token array of log-probs ("old_logprobs", "rollout_logprobs"):
 * *out stays NULL when the key is absent or null. */
static int optional_logprobs(const cJSON *row, const char *key, size_t n_resp, const char *where, float **out) {
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(row, key);
    size_t n = 0;
    *out = NULL;
    if (!o || cJSON_IsNull(o)) return 0;
    if (or1_json_float_array(row, key, out, &n, where)) return -1;
    if (n == n_resp) return 0;
    free(*out);
    *out = NULL;
    return or1_fail("%s: \"%s\" has %zu values for %zu response tokens", where, key, n, n_resp);
}

/* Parses one batch line into a sample, validating ids, lengths and numbers. */
static int parse_sample(const cJSON *row, int vocab, const char *where, or1_sample *s) {
    memset(s, 0, sizeof *s);
    int32_t *p = NULL, *r = NULL;
    float *old = NULL, *rollout = NULL;
    uint8_t *mask = NULL;
    size_t np = 0, nr = 0;
    double adv;
    if (or1_json_int_array(row, "prompt_ids", 0, vocab - 1, &p, &np, where)) goto fail;
    if (or1_json_int_array(row, "response_ids", 0, vocab - 1, &r, &nr, where)) goto fail;
    if (or1_json_num(row, "advantage", &adv, where)) goto fail;
    if (np == 0 || nr == 0) {
        or1_fail("%s: \"%s\" is empty", where, np == 0 ? "prompt_ids" : "response_ids");
        goto fail;
    }
    if (optional_logprobs(row, "old_logprobs", nr, where, &old) ||
        optional_logprobs(row, "rollout_logprobs", nr, where, &rollout) || cli_row_mask(row, nr, where, &mask))
        goto fail;
    *s = (or1_sample){.prompt = p, .resp = r, .n_prompt = (int)np, .n_resp = (int)nr, .adv = (float)adv,
                      .old_logp = old, .ref_logp = NULL, .rollout_logp = rollout, .id = 0, .mask = mask};
    return 0;
fail:
    free(p);
    free(r);
    free(old);
    free(rollout);
    return -1;
}

/* Reads the whole batch file. */
static int read_batch(const char *path, int vocab, sample_list *l) {
    or1_jsonl_reader r;
    if (or1_jsonl_open(&r, path)) return -1;
    cJSON *row;
    int rc;
    while ((rc = or1_jsonl_next(&r, &row)) == 1) {
        const char *where = r.where;
        if (l->n == l->cap) {
            l->cap = l->cap ? 2 * l->cap : 64;
            l->s = or1_realloc(l->s, (size_t)l->cap * sizeof *l->s);
        }
        rc = parse_sample(row, vocab, where, &l->s[l->n]);
        cJSON_Delete(row);
        if (rc) break;
        l->s[l->n].id = (uint64_t)l->n;
        or1_loss_norm_add(&l->norm, &l->s[l->n]);
        int len = or1_sample_len(&l->s[l->n]);
        if (len > l->max_resp) l->max_resp = len;
        l->packed += l->s[l->n].n_prompt + l->s[l->n].n_resp;
        l->n++;
    }
    or1_jsonl_close(&r);
    if (rc < 0) return -1;
    if (l->n == 0) return or1_fail("%s: no samples", path);
    if (l->norm.tokens == 0) return or1_fail("%s: no trained response token (every response_mask value is 0)", path);
    return 0;
}

/* Options of `or1 grad`. */
typedef struct {
    const char *dir, *batch, *out, *save;
    or1_loss_cfg loss;
    int64_t micro_tokens, bench_iters;
    bool step;
    const char *device, *precision;
    or1_adamw_cfg adam;
    double max_grad_norm;
    or1_dtype save_dtype;
} grad_opts;

/* A row of the loss options (or1/algo.h) as a flag, with its config key named in the help. */
#define OPTION_FLAG(key, flag, field, type, def, lo, hi, help) \
    FLAG_NUM(flag, OR1_TEXT(def), lo, hi, help " (config " key ")"),
/* A row of the loss's choices (or1/algo.h) as a flag naming its registry's choices. */
#define CHOICE_FLAG(key, flag, field, type, TABLE, name, def, help) \
    FLAG_STR(flag, OR1_CHOICES(TABLE), def, help " (config " key ")"),

/* The flags of `or1 grad`. */
static const cli_flag_spec grad_flag_table[] = {
    FLAG_NEED("model", "checkpoint folder (config.json + model.safetensors)"),
    FLAG_NEED("batch", "JSONL samples {prompt_ids, response_ids, advantage, old_logprobs?, rollout_logprobs?, response_mask?}"),
    FLAG_PATH("out", NULL, "write the gradient of every parameter (safetensors)"),
    FLAG_PATH("save", NULL, "with --step: save the stepped model and optimizer state here"),
    FLAG_SWITCH("step", "take one AdamW step (continuing the model folder's optimizer state)"),
    FLAG_SAVE_DTYPE,
    FLAG_LOGIT_TEMPERATURE,
    OR1_CLIP_OPTIONS(OPTION_FLAG)
    FLAG_NUM("entropy-coef", "0", -10, 10, "entropy bonus coefficient"),
    FLAG_INT("micro-batch-tokens", "1073741824", 1, 1 << 30, "tokens per forward/backward micro-batch"),
    FLAG_INT("bench-iters", NULL, 1, 100000, "time this many forward+backward passes instead (JSON on stdout)"),
    FLAG_NUM("lr", "0", 0, 10, "AdamW learning rate"),
    FLAG_NUM("weight-decay", "0.01", 0, 10, "AdamW weight decay"),
    FLAG_NUM("max-grad-norm", "1", 0, 1e30, "global gradient-norm clip before the step; 0: off"),
    OR1_CORRECTION_CHOICES(CHOICE_FLAG)
    OR1_CORRECTION_OPTIONS(OPTION_FLAG)
    FLAG_NUM("offpolicy-delta", NULL, 0, 1e30, "DeepSeek-V3.2 mask: drop rows with A < 0 and mean log(pi_rollout/pi) > this"),
    OR1_LOSS_CHOICES(CHOICE_FLAG)
    OR1_LOSS_OPTIONS(OPTION_FLAG)
    FLAG_INT("seed", "0", 0, INT64_MAX, "seed of clip-cov's draws (token j of line i: rand(seed, i, j))"),
    FLAG_DEVICE,
};

/* Reads and checks the flags of `or1 grad`. */
static int grad_flags(cli_args *a, grad_opts *o) {
    double coef, lr, wd, t;
    *o = (grad_opts){0};
    o->dir = cli_str(a, "model");
    o->batch = cli_str(a, "batch");
    o->out = cli_str(a, "out");
    o->save = cli_str(a, "save");
    o->step = cli_flag(a, "step");
    o->device = cli_str(a, "device");
    o->precision = cli_str(a, "precision");
    cli_double(a, "temperature", &t);
    cli_double(a, "entropy-coef", &coef);
    cli_int(a, "micro-batch-tokens", &o->micro_tokens);
    cli_int(a, "bench-iters", &o->bench_iters);
    cli_double(a, "lr", &lr);
    cli_double(a, "weight-decay", &wd);
    cli_double(a, "max-grad-norm", &o->max_grad_norm);
    /* every row of the loss options, rounded to its field's type */
#define READ_OPTION(key, flag, field, type, def, lo, hi, help) \
    do {                                                       \
        double v;                                              \
        cli_double(a, flag, &v);                               \
        o->loss.field = (type)v;                               \
    } while (0);
    OR1_CLIP_OPTIONS(READ_OPTION)
    OR1_CORRECTION_OPTIONS(READ_OPTION)
    OR1_LOSS_OPTIONS(READ_OPTION)
#undef READ_OPTION
    double delta = NAN;
    cli_double(a, "offpolicy-delta", &delta);
    o->loss.offpolicy_mask = !isnan(delta), o->loss.offpolicy_delta = delta;
    int64_t seed;
    cli_int(a, "seed", &seed);
    o->loss.seed = (uint64_t)seed;
    /* every row of the loss's choices, by its registry */
#define READ_CHOICE(key, flag, field, type, TABLE, name, def, help) \
    if (or1_##name##_parse(cli_str(a, flag), &o->loss.field, "grad: --" flag)) return -1;
    OR1_CORRECTION_CHOICES(READ_CHOICE)
    OR1_LOSS_CHOICES(READ_CHOICE)
#undef READ_CHOICE
    if (cli_save_dtype(a, &o->save_dtype) || cli_check_unused(a)) return -1;
    o->loss.temperature = (float)t;
    o->loss.entropy_coef = (float)coef;
    o->adam = (or1_adamw_cfg){.lr = (float)lr, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f,
                              .weight_decay = (float)wd};
    if (or1_rollout_is_check(o->loss.is, o->loss.is_low, o->loss.is_high, "grad: --rollout-is-low")) return -1;
    if (o->loss.clip_cov_lb >= o->loss.clip_cov_ub)
        return or1_fail("grad: --clip-cov-lb %g is not below --clip-cov-ub %g", o->loss.clip_cov_lb, o->loss.clip_cov_ub);
    if (o->step && !o->save) return or1_fail("grad: --step needs --save DIR");
    if (!o->step && !o->out && !o->bench_iters) return or1_fail("grad: give --out FILE, --step --save DIR or --bench-iters N");
    return 0;
}

/* Clips, takes one AdamW step (continuing saved state) and saves model + optimizer. */
static int grad_step(cli_model *cm, const grad_opts *o) {
    or1_adamw opt;
    or1_adamw_init(&opt, cm->m.n_floats);
    int rc = or1_adamw_load(&opt, &cm->m, o->dir) < 0 ? -1 : 0;
    if (rc == 0) rc = or1_dmodel_step(cm->dm, &opt, &o->adam, o->max_grad_norm, NULL) || or1_dmodel_pull(cm->dm);
    if (rc == 0) rc = or1_model_save(&cm->m, o->save, o->save_dtype, o->dir);
    if (rc == 0) rc = or1_adamw_save(&opt, &cm->m, o->save);
    or1_adamw_free(&opt);
    return rc ? -1 : 0;
}

/* The batch's gradient, from zero, on the model's device. */
static int batch_grad(cli_model *cm, const sample_list *l, const grad_opts *o, or1_loss_stats *st) {
    or1_dmodel_zero_grad(cm->dm);
    or1_loss_cfg lc = o->loss;
    if (lc.scale == 0) lc.scale = l->max_resp;
    return or1_policy_grad(cm->dm, l->s, l->n, &l->norm, (int)o->micro_tokens, &lc, st);
}

/* Times forward+backward over the batch: one warm-up, then iters timed runs. */
static int grad_bench(cli_model *cm, const sample_list *l, const grad_opts *o) {
    or1_loss_stats st = {0};
    if (batch_grad(cm, l, o, &st)) return -1;
    double t0 = or1_now();
    for (int64_t i = 0; i < o->bench_iters; i++)
        if (batch_grad(cm, l, o, &st)) return -1;
    double dt = (or1_now() - t0) / (double)o->bench_iters;
    printf("{\"tokens\":%ld,\"response_tokens\":%ld,\"seconds_per_iter\":%.6f,\"tokens_per_s\":%.1f,\"threads\":%d}\n",
           l->packed, l->norm.tokens, dt, (double)l->packed / dt, or1_threads());
    return 0;
}

/* Writes the gradient of every parameter under its own name. */
static int write_grads(const or1_model *m, const char *path) {
    or1_st_tensor *t = or1_malloc((size_t)m->n_p * sizeof *t);
    or1_model_tensors(m, m->grads, t);
    int rc = or1_st_write(path, t, (size_t)m->n_p, OR1_F32, NULL, 0);
    free(t);
    return rc;
}

/* or1 grad --model DIR --batch FILE [--out G] [--step --lr X --save DIR] [...] */
static int cmd_grad(cli_args *a) {
    grad_opts o;
    if (grad_flags(a, &o)) return 2;
    cli_model cm;
    if (cli_model_open(&cm, o.dir, o.device, o.precision, true)) return 1;
    sample_list l = {0};
    int rc = read_batch(o.batch, cm.m.cfg.vocab, &l);
    or1_values ents = {0};
    or1_loss_stats st = {.entropies = &ents};
    if (rc == 0 && o.bench_iters)
        rc = grad_bench(&cm, &l, &o);
    else if (rc == 0)
        rc = batch_grad(&cm, &l, &o, &st);
    double norm = rc == 0 && !o.bench_iters ? or1_dmodel_grad_norm(cm.dm) : 0;
    if (rc == 0 && !o.bench_iters && (!isfinite(st.objective) || !isfinite(norm)))
        rc = or1_fail("%s: the loss (%g) or the gradient norm (%g) is not finite, which JSON cannot hold: the "
                      "model's output is not finite (are its weights damaged or out of range?)",
                      o.batch, st.objective, norm);
    if (rc == 0 && !o.bench_iters) {
        const or1_mismatch *mm = &st.mismatch;
        double nt = (double)st.tokens, nm = mm->tokens > 0 ? (double)mm->tokens : 1.0;
        printf("{\"loss\":%.17g,\"pg_loss\":%.17g,\"entropy\":%.17g,\"tokens\":%ld,\"clip_frac\":%.17g,"
               "\"grad_norm\":%.17g,\"mismatch_abs_mean\":%.17g,\"mismatch_abs_max\":%.17g,\"mismatch_k3\":%.17g,"
               "\"is_weight_mean\":%.17g,\"is_masked_frac\":%.17g,\"cov_selected_frac\":%.17g,"
               "\"low_entropy_frac\":%.17g,\"offpolicy_masked_frac\":%.17g,\"clip_frac_pos\":%.17g,"
               "\"clip_frac_neg\":%.17g,\"entropy_p10\":%.9g,\"entropy_p50\":%.9g,\"entropy_p90\":%.9g,"
               "\"is_ess\":%.17g}\n",
               st.objective, st.pg_loss / nt, st.entropy / nt, st.tokens, (double)st.clipped / nt, norm,
               mm->abs_sum / nm, mm->abs_max, mm->k3_sum / nm, o.loss.is ? st.is_weight / nt : 1.0,
               (double)st.is_masked / nt, (double)st.cov_selected / nt, (double)st.low_entropy / nt,
               (double)st.offpolicy_masked / nt, (double)st.clipped_pos / nt, (double)st.clipped_neg / nt,
               or1_quantile(ents.v, ents.n, 0.1, NULL), or1_quantile(ents.v, ents.n, 0.5, NULL),
               or1_quantile(ents.v, ents.n, 0.9, NULL), or1_mismatch_ess(mm));
        fflush(stdout);
        if (o.out) rc = or1_dmodel_pull_grads(cm.dm) || write_grads(&cm.m, o.out);
        if (rc == 0 && o.step) rc = grad_step(&cm, &o);
    }
    or1_values_free(&ents);
    sample_list_free(&l);
    cli_model_close(&cm);
    return rc ? 1 : 0;
}

const cli_command cli_cmd_grad = CLI_COMMAND(
    "grad", cmd_grad, "gradient of the MAGIC loss (eq. 3.1) on a batch; --step takes an AdamW step", grad_flag_table,
    "or1 grad --model models/arith-base --batch batch.jsonl --out /tmp/grads.safetensors");

/* The flags of `or1 init`. */
static const cli_flag_spec init_flags[] = {
    FLAG_NEED("config", "the model's config.json (Qwen2 / Llama shape)"),
    FLAG_NEED("out", "checkpoint folder to write (created)"),
    FLAG_INT("seed", "0", 0, INT64_MAX, "weight seed"),
    FLAG_NUM("std", "0.02", 0, 10, "standard deviation of the normal weights"),
    FLAG_SAVE_DTYPE,
};

/* or1 init --config FILE --out DIR [--seed S] [--std X] [--save-dtype f32|bf16]:
 * a checkpoint with random weights for a config.json, e.g. for tests and benchmarks. */
static int cmd_init(cli_args *a) {
    const char *cfg_path = cli_str(a, "config"), *out = cli_str(a, "out");
    int64_t seed;
    double std;
    or1_dtype dtype;
    cli_int(a, "seed", &seed);
    cli_double(a, "std", &std);
    if (cli_save_dtype(a, &dtype) || cli_check_unused(a)) return 2;
    or1_model_config cfg;
    if (or1_model_config_load(&cfg, cfg_path) || or1_mkdir_p(out)) return 1;
    or1_model m;
    or1_model_init(&m, &cfg);
    or1_model_randomize(&m, (uint64_t)seed, (float)std);
    char *dst = or1_path_join(out, "config.json");
    int rc = or1_copy_file_atomic(cfg_path, dst);
    free(dst);
    if (rc == 0) rc = or1_model_save(&m, out, dtype, NULL);
    or1_model_free(&m);
    return rc ? 1 : 0;
}

const cli_command cli_cmd_init = CLI_COMMAND(
    "init", cmd_init, "a checkpoint with random weights for a config.json", init_flags,
    "or1 init --config models/arith-base/config.json --out /tmp/random --seed 1");
