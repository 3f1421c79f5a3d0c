/* `or1 gen-arith` and `or1 sft`: the built-in demo's task rows, traces and base-model training. */
#include "cli.h"

#include "demo.h"
#include "or1/core.h"
#include "or1/io.h"
#include "or1/model.h"
#include "or1/train.h"
#include "or1/tokenizer.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Options of `or1 gen-arith`. */
typedef struct {
    int64_t n, seed, min_ops, max_ops;
    or1_arith_split split;
    const char *out;
    bool traces, split_products;
    double noise, guess, tool;
    or1_tokenizer *tok;
    char *eos; /* the tokenizer's EOS token text, appended to each trace */
} gen_opts;

/* The flags of `or1 gen-arith`. */
static const cli_flag_spec gen_arith_flags[] = {
    {.name = "n", .kind = CLI_INT, .ilo = 1, .ihi = 100000000, .required = true, .help = "rows to write"},
    FLAG_INT("seed", "0", 0, INT64_MAX, "problem seed (row i depends only on seed and i)"),
    FLAG_STR("split", "train|test", "train", "the train or the test problems"),
    FLAG_INT("min-ops", "2", 2, OR1_ARITH_MAX_OPERANDS, "fewest operands per expression"),
    FLAG_INT("max-ops", "4", 2, OR1_ARITH_MAX_OPERANDS, "most operands per expression"),
    FLAG_PATH("out", NULL, "write the rows here (atomically); default: stdout"),
    FLAG_SWITCH("traces", "write SFT traces {prompt, response, gold} instead of task rows"),
    FLAG_PATH("tokenizer", NULL, "with --traces: the tokenizer whose chat template and EOS the traces use"),
    FLAG_NUM("noise", "0", 0, 1, "with --traces: probability that a step's result is replaced by a wrong one"),
    FLAG_NUM("guess", "0", 0, 1, "with --traces: probability that a trace skips the working and guesses wrong"),
    FLAG_SWITCH("split-products", "with --traces: write multiplications as partial products"),
    FLAG_NUM("tool", "0", 0, 1, "with --traces: probability that a trace asks Python for the value (a tool call)"),
};

/* Reads the flags of `or1 gen-arith`; loads the tokenizer traces need. */
static int gen_flags(cli_args *a, gen_opts *o) {
    *o = (gen_opts){0};
    const char *split = cli_str(a, "split"), *tok = cli_str(a, "tokenizer");
    o->out = cli_str(a, "out");
    o->traces = cli_flag(a, "traces");
    o->split_products = cli_flag(a, "split-products");
    cli_int(a, "n", &o->n);
    cli_int(a, "seed", &o->seed);
    cli_int(a, "min-ops", &o->min_ops);
    cli_int(a, "max-ops", &o->max_ops);
    cli_double(a, "noise", &o->noise);
    cli_double(a, "guess", &o->guess);
    cli_double(a, "tool", &o->tool);
    if (cli_check_unused(a)) return -1;
    if (o->min_ops > o->max_ops) return or1_fail("gen-arith: --min-ops %lld is over --max-ops %lld",
                                                 (long long)o->min_ops, (long long)o->max_ops);
    if (strcmp(split, "train") != 0 && strcmp(split, "test") != 0)
        return or1_fail("gen-arith: --split must be train or test, not \"%.32s\"", split);
    o->split = strcmp(split, "test") == 0 ? OR1_ARITH_TEST : OR1_ARITH_TRAIN;
    if (!o->traces && (tok || o->noise > 0 || o->guess > 0 || o->tool > 0 || o->split_products))
        return or1_fail("gen-arith: --tokenizer, --noise, --guess, --tool and --split-products go with --traces");
    if (!o->traces) return 0;
    if (!tok) return or1_fail("gen-arith: --traces needs --tokenizer PATH (its chat template and EOS token)");
    if (!(o->tok = or1_tokenizer_load(tok))) return -1;
    size_t len;
    int32_t eos = or1_tokenizer_eos_id(o->tok);
    const char *bytes = eos >= 0 ? or1_tokenizer_token_bytes(o->tok, eos, &len) : NULL;
    if (!bytes) return or1_fail("gen-arith: %s names no eos_token (tokenizer_config.json)", tok);
    o->eos = or1_malloc(len + 1);
    memcpy(o->eos, bytes, len);
    o->eos[len] = '\0';
    return 0;
}

/* A task row in the Skywork-OR1-RL-Data shape. */
static cJSON *task_row(const or1_arith_problem *p, int64_t index, or1_arith_split split) {
    char gt[64];
    snprintf(gt, sizeof gt, "[\"%lld\"]", (long long)p->value);
    cJSON *row = cJSON_CreateObject();
    cJSON_AddStringToObject(row, "data_source", "arith");
    cJSON *msgs = cJSON_AddArrayToObject(row, "prompt"), *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", "user");
    cJSON_AddStringToObject(m, "content", p->expr);
    cJSON_AddItemToArray(msgs, m);
    cJSON_AddStringToObject(row, "ability", "math");
    cJSON *rm = cJSON_AddObjectToObject(row, "reward_model");
    cJSON_AddStringToObject(rm, "ground_truth", gt);
    cJSON_AddStringToObject(rm, "style", "rule");
    cJSON *extra = cJSON_AddObjectToObject(row, "extra_info");
    cJSON_AddNumberToObject(extra, "index", (double)index);
    cJSON_AddStringToObject(extra, "split", split == OR1_ARITH_TEST ? "test" : "train");
    return row;
}

/* A traced response as tokens: the pieces the model writes (mask 1) and the tool's replies
 * (mask 0, tokenized as the rollout engine tokenizes them: special tokens as plain text). */
typedef struct {
    or1_text text;
    int32_t *ids;
    uint8_t *mask;
    size_t n;
} traced;

/* Appends a piece of text to t, its tokens with the given mask. */
static int traced_add(const gen_opts *o, traced *t, const char *s, size_t len, uint8_t mask) {
    int32_t *ids;
    size_t n;
    if (or1_tokenizer_encode(o->tok, s, len, mask ? 0 : OR1_TOK_SPLIT_SPECIAL, &ids, &n)) return -1;
    t->ids = or1_realloc(t->ids, (t->n + n + 1) * sizeof *t->ids);
    t->mask = or1_realloc(t->mask, t->n + n + 1);
    memcpy(t->ids + t->n, ids, n * sizeof *ids);
    memset(t->mask + t->n, mask, n);
    t->n += n;
    or1_text_add(&t->text, s, len);
    free(ids);
    return 0;
}

/* The tool trace of p: the model asks Python to print the expression, reads the reply (the
 * engine's own format) and boxes its value; always right, as the tool computes. */
static int tool_trace(const gen_opts *o, const or1_arith_problem *p, traced *t) {
    char call[OR1_ARITH_MAX_TEXT + 64], value[32], tail[64];
    snprintf(call, sizeof call, "<think>\n" OR1_TOOL_CALL_OPEN "print(%s)" OR1_TOOL_CALL_CLOSE, p->expr);
    snprintf(value, sizeof value, "%lld\n", (long long)p->value);
    snprintf(tail, sizeof tail, "</think>\n\\boxed{%lld}", (long long)p->value);
    or1_text reply = {0};
    or1_tools_reply_text(call[strlen(call) - 1], value, strlen(value), &reply);
    int rc = traced_add(o, t, call, strlen(call), 1) || traced_add(o, t, reply.s, reply.len, 0) ||
             traced_add(o, t, tail, strlen(tail), 1) || traced_add(o, t, o->eos, strlen(o->eos), 1);
    free(reply.s);
    return rc ? -1 : 0;
}

/* Whether trace `index` calls the tool (a draw of its own, apart from the noise and guess). */
static bool uses_tool(const gen_opts *o, int64_t index) {
    return o->tool > 0 && or1_rand_uniform((uint64_t)o->seed, (uint64_t)index ^ 0x7001ULL, 0) < o->tool;
}

/* The worked trace of p ending in EOS (its boxed value in *answer). */
static int worked_trace(const gen_opts *o, const or1_arith_problem *p, int64_t index, traced *t, int64_t *answer) {
    or1_arith_trace_cfg tc = {o->noise, o->guess, o->split_products, (uint64_t)o->seed, (uint64_t)index};
    char *trace;
    if (or1_arith_trace(p->expr, &tc, &trace, answer)) return -1;
    or1_text_add(&t->text, trace, strlen(trace));
    or1_text_add(&t->text, o->eos, strlen(o->eos));
    free(trace);
    return 0;
}

/* A trace row: the chat-templated prompt, the response ending in EOS, and the gold answer
 * (the shape `or1 verify-math` reads); a tool trace adds its token ids and loss mask. */
static cJSON *trace_row(const gen_opts *o, const or1_arith_problem *p, int64_t index) {
    or1_chat_message msg = {.role = "user", .content = p->expr};
    char *prompt, gold[32];
    int64_t answer = p->value;
    or1_chat_vars vars = or1_chat_vars_default();
    if (or1_tokenizer_chat(o->tok, NULL, &msg, 1, &vars, &prompt)) return NULL;
    traced t = {0};
    bool tool = uses_tool(o, index);
    if (tool ? tool_trace(o, p, &t) : worked_trace(o, p, index, &t, &answer)) {
        free(prompt);
        free(t.text.s), free(t.ids), free(t.mask);
        return NULL;
    }
    or1_text_add(&t.text, "", 1); /* the NUL */
    snprintf(gold, sizeof gold, "%lld", (long long)p->value);
    cJSON *row = cJSON_CreateObject();
    cJSON_AddStringToObject(row, "prompt", prompt);
    cJSON_AddStringToObject(row, "response", t.text.s);
    if (tool) {
        cJSON_AddItemToObject(row, "response_ids", cJSON_CreateIntArray((const int *)t.ids, (int)t.n));
        cJSON *m = cJSON_AddArrayToObject(row, "response_mask");
        for (size_t j = 0; j < t.n; j++) cJSON_AddItemToArray(m, cJSON_CreateNumber(t.mask[j]));
    }
    cJSON_AddItemToArray(cJSON_AddArrayToObject(row, "gold"), cJSON_CreateString(gold));
    cJSON *extra = cJSON_AddObjectToObject(row, "extra_info");
    cJSON_AddNumberToObject(extra, "index", (double)index);
    cJSON_AddStringToObject(extra, "split", o->split == OR1_ARITH_TEST ? "test" : "train");
    cJSON_AddStringToObject(extra, "expression", p->expr);
    cJSON_AddBoolToObject(extra, "trace_correct", answer == p->value);
    if (tool) cJSON_AddBoolToObject(extra, "tool", true);
    free(prompt);
    free(t.text.s), free(t.ids), free(t.mask);
    return row;
}

/* Writes the n rows to f. */
static int gen_rows(const gen_opts *o, FILE *f) {
    for (int64_t i = 0; i < o->n; i++) {
        or1_arith_problem p;
        if (or1_arith_generate((uint64_t)o->seed, (uint64_t)i, (int)o->min_ops, (int)o->max_ops, o->split, &p))
            return -1;
        cJSON *row = o->traces ? trace_row(o, &p, i) : task_row(&p, i, o->split);
        if (!row) return or1_fail_ctx("gen-arith: row %lld", (long long)i);
        char *s = cJSON_PrintUnformatted(row);
        fputs(s, f);
        fputc('\n', f);
        free(s);
        cJSON_Delete(row);
    }
    return 0;
}

/* or1 gen-arith --n N [--seed S] [--split train|test] [--min-ops 2] [--max-ops 4] [--out FILE]
 *   [--traces --tokenizer PATH [--noise P] [--guess P] [--split-products]] */
static int cmd_gen_arith(cli_args *a) {
    gen_opts o;
    int rc = gen_flags(a, &o) ? 2 : 0;
    if (rc == 0 && o.out) {
        or1_atomic_file af;
        rc = or1_atomic_open(&af, o.out) ? 1 : 0;
        if (rc == 0 && gen_rows(&o, af.f) == 0) rc = or1_atomic_commit(&af) ? 1 : 0;
        else if (rc == 0) or1_atomic_abort(&af), rc = 1;
    } else if (rc == 0) {
        rc = gen_rows(&o, stdout) ? 1 : 0;
        if (fflush(stdout) != 0 && rc == 0) rc = (or1_fail("gen-arith: writing stdout failed"), 1);
    }
    or1_tokenizer_free(o.tok);
    free(o.eos);
    return rc;
}

const cli_command cli_cmd_gen_arith = CLI_COMMAND(
    "gen-arith", cmd_gen_arith, "the demo task: arithmetic rows (--traces: SFT traces with a tokenizer)",
    gen_arith_flags, "or1 gen-arith --n 2000 --seed 1 --split train --out /tmp/train.jsonl");

/* SFT examples read from JSONL, owning their id arrays. */
typedef struct {
    or1_sft_example *ex;
    int n, cap;
} example_list;

/* Frees the examples' arrays. */
static void example_list_free(example_list *l) {
    for (int i = 0; i < l->n; i++) {
        free((void *)l->ex[i].prompt);
        free((void *)l->ex[i].resp);
        free((void *)l->ex[i].mask);
    }
    free(l->ex);
}

/* Reads every example of the data file. */
static int read_examples(const char *path, const or1_tokenizer *tok, int vocab, example_list *l) {
    or1_jsonl_reader r;
    if (or1_jsonl_open(&r, path)) return -1;
    cJSON *row;
    int rc;
    while ((rc = or1_jsonl_next(&r, &row)) == 1) {
        const char *where = r.where;
        int32_t *p = NULL, *s = NULL;
        uint8_t *mask = NULL;
        size_t np = 0, ns = 0;
        rc = cli_row_ids(row, "prompt", tok, vocab, where, &p, &np);
        if (rc == 0) rc = cli_row_ids(row, "response", tok, vocab, where, &s, &ns);
        if (rc == 0) rc = cli_row_mask(row, ns, where, &mask);
        cJSON_Delete(row);
        if (rc == 0 && (np == 0 || ns == 0)) rc = or1_fail("%s: empty %s", where, np == 0 ? "prompt" : "response");
        if (rc) {
            free(p);
            free(s);
            free(mask);
            break;
        }
        if (l->n == l->cap) {
            l->cap = l->cap ? 2 * l->cap : 256;
            l->ex = or1_realloc(l->ex, (size_t)l->cap * sizeof *l->ex);
        }
        l->ex[l->n++] = (or1_sft_example){.prompt = p, .resp = s, .n_prompt = (int)np, .n_resp = (int)ns,
                                          .mask = mask};
    }
    or1_jsonl_close(&r);
    if (rc < 0) return -1;
    if (l->n == 0) return or1_fail("%s: no examples", path);
    return 0;
}

/* Options of `or1 sft`. */
typedef struct {
    const char *dir, *data, *out, *tokenizer;
    or1_sft_cfg cfg;
    or1_dtype dtype;
    int64_t save_every;
    const char *device, *precision;
    cli_model *cm;
    int save_rc;
} sft_opts;

/* Saves an intermediate checkpoint as <out>/step-<k>. */
static int save_step(sft_opts *o, int step) {
    char name[32];
    snprintf(name, sizeof name, "step-%d", step);
    char *dir = or1_path_join(o->out, name);
    int rc = or1_dmodel_pull(o->cm->dm) == 0 && or1_mkdir_p(dir) == 0 &&
                     or1_model_save(&o->cm->m, dir, o->dtype, o->dir) == 0
                 ? 0
                 : -1;
    free(dir);
    return rc;
}

/* Prints a JSON line on stdout and a readable one on stderr at each measured step, and saves
 * the checkpoints --save-every asks for (a failed save stops later ones and fails the run). */
static void sft_progress(void *ctx, const or1_sft_progress *p) {
    sft_opts *o = ctx;
    if (o->save_every && p->step % o->save_every == 0 && p->step < o->cfg.steps && o->save_rc == 0)
        o->save_rc = save_step(o, p->step);
    if (isnan(p->nll)) return;
    printf("{\"step\":%d,\"nll\":%.6f,\"grad_norm\":%.6f,\"lr\":%.6g,\"seconds\":%.3f}\n", p->step, p->nll,
           p->grad_norm, p->lr, p->seconds);
    fflush(stdout);
    fprintf(stderr, "sft: step %d/%d  nll %.4f  grad-norm %.3f  lr %.3g  %.1f s\n", p->step, o->cfg.steps, p->nll,
            p->grad_norm, p->lr, p->seconds);
}

/* The flags of `or1 sft`. */
static const cli_flag_spec sft_flag_table[] = {
    FLAG_NEED("model", "base checkpoint folder (config.json + model.safetensors)"),
    FLAG_NEED("data", "JSONL rows {prompt, response} as text (with a tokenizer) or *_ids, response_mask?"),
    FLAG_NEED("out", "folder for the trained checkpoint (and step-K/ ones)"),
    FLAG_PATH("tokenizer", NULL, "tokenizer.json or its folder; default: the model folder's, if any"),
    FLAG_INT("steps", "200", 0, 10000000, "optimizer steps"),
    FLAG_INT("batch", "32", 1, 1 << 20, "examples per step"),
    FLAG_INT("warmup", "0", 0, 10000000, "linear warm-up steps"),
    FLAG_INT("micro-batch-tokens", "8192", 1, 1 << 30, "tokens per forward/backward micro-batch"),
    FLAG_INT("seed", "0", 0, INT64_MAX, "example order seed"),
    FLAG_INT("log-every", "10", 0, 10000000, "a progress line every K steps; 0: none"),
    FLAG_INT("save-every", "0", 0, 10000000, "save out/step-K every K steps; 0: only the final checkpoint"),
    FLAG_NUM("lr", "1e-3", 0, 10, "peak AdamW learning rate"),
    FLAG_NUM("min-lr", NULL, 0, 10, "learning rate the cosine decay ends at; default: --lr (constant)"),
    FLAG_NUM("weight-decay", "0", 0, 10, "AdamW weight decay"),
    FLAG_NUM("max-grad-norm", "1", 1e-9, 1e30, "global gradient-norm clip"),
    FLAG_SAVE_DTYPE,
    FLAG_DEVICE,
};

/* Reads the flags of `or1 sft`. */
static int sft_flags(cli_args *a, sft_opts *o) {
    int64_t steps, batch, warmup, micro, seed, log_every;
    double lr, min_lr = -1, wd, clip;
    *o = (sft_opts){0};
    o->dir = cli_str(a, "model");
    o->data = cli_str(a, "data");
    o->out = cli_str(a, "out");
    o->tokenizer = cli_str(a, "tokenizer");
    o->device = cli_str(a, "device");
    o->precision = cli_str(a, "precision");
    cli_int(a, "steps", &steps);
    cli_int(a, "batch", &batch);
    cli_int(a, "warmup", &warmup);
    cli_int(a, "micro-batch-tokens", &micro);
    cli_int(a, "seed", &seed);
    cli_int(a, "log-every", &log_every);
    cli_int(a, "save-every", &o->save_every);
    cli_double(a, "lr", &lr);
    cli_double(a, "min-lr", &min_lr);
    cli_double(a, "weight-decay", &wd);
    cli_double(a, "max-grad-norm", &clip);
    if (cli_save_dtype(a, &o->dtype) || cli_check_unused(a)) return -1;
    o->cfg = (or1_sft_cfg){.steps = (int)steps, .batch = (int)batch, .warmup = (int)warmup,
                           .micro_tokens = (int)micro, .lr = (float)lr, .weight_decay = (float)wd,
                           .max_grad_norm = (float)clip, .seed = (uint64_t)seed, .log_every = (int)log_every,
                           .min_lr = min_lr < 0 ? (float)lr : (float)min_lr};
    return 0;
}

/* Puts the tokenizer's files into out when the saved checkpoint has none (the model folder
 * lacked them, or the model is a GGUF file). */
static int carry_tokenizer(const char *tok_path, const char *out) {
    char *probe = or1_path_join(out, "tokenizer.json");
    bool have = or1_is_file(probe);
    free(probe);
    return have || !tok_path ? 0 : or1_tokenizer_carry(tok_path, out);
}

/* or1 sft --model DIR --data FILE --out DIR [--steps K] [--lr X] [--batch N] [--warmup W] [--seed S]
 *   [--micro-batch-tokens T] [--weight-decay D] [--max-grad-norm C] [--log-every L] [--save-every K]
 *   [--tokenizer PATH] [--save-dtype f32|bf16] */
static int cmd_sft(cli_args *a) {
    sft_opts o;
    if (sft_flags(a, &o)) return 2;
    cli_model cm;
    if (cli_model_open(&cm, o.dir, o.device, o.precision, true)) return 1;
    or1_tokenizer *tok = NULL;
    example_list l = {0};
    int rc = 1;
    o.cm = &cm;
    if (cli_model_tokenizer(o.tokenizer, o.dir, &tok) == 0 && read_examples(o.data, tok, cm.m.cfg.vocab, &l) == 0) {
        long tokens = 0;
        for (int i = 0; i < l.n; i++) tokens += or1_sft_example_len(&l.ex[i]);
        fprintf(stderr, "sft: %d examples, %ld trained response tokens, %d steps of %d\n", l.n, tokens, o.cfg.steps,
                o.cfg.batch);
        if (or1_sft_train(cm.dm, l.ex, l.n, &o.cfg, sft_progress, &o) == 0 && o.save_rc == 0 && or1_mkdir_p(o.out) == 0 &&
            or1_model_save(&cm.m, o.out, o.dtype, o.dir) == 0 &&
            carry_tokenizer(o.tokenizer ? o.tokenizer : o.dir, o.out) == 0)
            rc = 0;
    }
    example_list_free(&l);
    or1_tokenizer_free(tok);
    cli_model_close(&cm);
    return rc;
}

const cli_command cli_cmd_sft = CLI_COMMAND(
    "sft", cmd_sft, "supervised fine-tuning on prompt/response rows (NLL of the response)", sft_flag_table,
    "or1 sft --model /tmp/random --data /tmp/traces.jsonl --out /tmp/sft --steps 100 --lr 1e-3");
