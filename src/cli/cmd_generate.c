/* `or1 generate`: batched sampling from a checkpoint, one JSON line per sample. */
#include "cli.h"

#include "or1/core.h"
#include "or1/io.h"
#include "or1/rollout.h"
#include "or1/tokenizer.h"
#include "or1/train.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Prompts read from the input file. */
typedef struct {
    or1_request *r;
    int n, cap;
} request_list;

/* Output state: completions are printed in (request, sample) order as they become ready. */
typedef struct {
    or1_completion *out;
    bool *ready;
    const request_list *reqs;
    long next, total;
    int *first; /* index of each request's first sample */
    const or1_tokenizer *tok;
} printer;

/* Prints one sample's JSON line. */
static void print_sample(const printer *p, int req, int sample, const or1_completion *c) {
    printf("{\"index\":%d,\"sample\":%d,\"response_ids\":", req, sample);
    or1_json_write_ints(stdout, c->ids, (size_t)c->n);
    fputs(",\"logprobs\":", stdout);
    or1_json_write_floats(stdout, c->logprobs, (size_t)c->n);
    printf(",\"finish_reason\":\"%s\"", c->stopped ? "stop" : "length");
    if (c->mask) {
        printf(",\"tool_calls\":%d,\"response_mask\":", c->tool_calls);
        or1_json_write_u8s(stdout, c->mask, (size_t)c->n);
    }
    char *text;
    size_t len;
    if (p->tok && or1_tokenizer_decode(p->tok, c->ids, (size_t)c->n, false, &text, &len) == 0) {
        fputs(",\"text\":", stdout);
        or1_json_write_string_n(stdout, text, len);
        free(text);
    }
    fputs("}\n", stdout);
}

/* Marks a sample finished and prints every consecutive finished one. */
static void on_done(void *ctx, int req, int sample, const or1_completion *c) {
    printer *p = ctx;
    (void)c;
    p->ready[p->first[req] + sample] = true;
    while (p->next < p->total && p->ready[p->next]) {
        int i = 0;
        while (i + 1 < p->reqs->n && p->first[i + 1] <= p->next) i++;
        print_sample(p, i, (int)(p->next - p->first[i]), &p->out[p->next]);
        p->next++;
    }
    fflush(stdout);
}

/* Parses --stop ID,ID,... into a new array. */
static int stop_flag(cli_args *a, int vocab, int32_t **ids, int *n) {
    const char *v = cli_str(a, "stop");
    *ids = NULL, *n = 0;
    if (!v) return 0;
    *ids = or1_malloc((strlen(v) / 2 + 1) * sizeof **ids);
    for (const char *p = v; *p;) {
        char *end;
        long id = strtol(p, &end, 10);
        if (end == p || id < 0 || id >= vocab || (*end && *end != ','))
            return or1_fail("generate: --stop %s: expected comma-separated token ids below %d", v, vocab);
        (*ids)[(*n)++] = (int32_t)id;
        p = *end ? end + 1 : end;
    }
    return 0;
}

/* What a request line is read with: the tokenizer (or NULL), the chat template and its
 * variables for rows of messages, the model's vocabulary. */
typedef struct {
    const or1_tokenizer *tok;
    const char *tpl;
    or1_chat_vars vars;
    int vocab;
} request_reader;

/* A row of messages through the chat template and the tokenizer. */
static int chat_ids(const request_reader *q, const cJSON *row, const char *where, int32_t **ids, size_t *n) {
    char *text;
    if (!q->tok) return or1_fail("%s: \"messages\" need a tokenizer (--tokenizer)", where);
    if (cli_row_chat(row, where, q->tok, q->tpl, &q->vars, &text)) return -1;
    int rc = cli_encode(q->tok, text, q->vocab, where, ids, n);
    free(text);
    return rc;
}

/* Reads one request line: prompt_ids, prompt text through the tokenizer, or messages through
 * the chat template. */
static int read_request(const cJSON *row, const char *where, const request_reader *q, or1_request *r) {
    int32_t *ids = NULL;
    size_t n = 0;
    bool chat = cJSON_GetObjectItemCaseSensitive(row, "messages") != NULL;
    if (chat ? chat_ids(q, row, where, &ids, &n) : cli_row_ids(row, "prompt", q->tok, q->vocab, where, &ids, &n))
        return -1;
    if (n == 0) {
        free(ids);
        return or1_fail("%s: the prompt is empty", where);
    }
    r->prompt = ids;
    r->n_prompt = (int)n;
    return 0;
}

/* Reads every request of the input file. */
static int read_requests(const char *path, const request_reader *q, const or1_model_config *c, int max_new,
                         request_list *l) {
    or1_jsonl_reader rd;
    if (or1_jsonl_open(&rd, path)) return -1;
    cJSON *row;
    int rc;
    size_t *lines = NULL;
    while ((rc = or1_jsonl_next(&rd, &row)) == 1) {
        const char *where = rd.where;
        if (l->n == l->cap) {
            l->cap = l->cap ? 2 * l->cap : 64;
            l->r = or1_realloc(l->r, (size_t)l->cap * sizeof *l->r);
            lines = or1_realloc(lines, (size_t)l->cap * sizeof *lines);
        }
        memset(&l->r[l->n], 0, sizeof l->r[l->n]);
        rc = read_request(row, where, q, &l->r[l->n]);
        cJSON_Delete(row);
        if (rc) break;
        lines[l->n++] = rd.line;
    }
    or1_jsonl_close(&rd);
    for (int i = 0; rc == 0 && i < l->n; i++) /* after every line parsed, so format errors come first */
        if ((long)l->r[i].n_prompt + max_new > c->max_pos)
            rc = or1_fail("%s:%zu: %d prompt + %d new tokens exceed max_position_embeddings %d", path, lines[i],
                          l->r[i].n_prompt, max_new, c->max_pos);
    free(lines);
    return rc < 0 ? -1 : 0;
}

/* Runs the engine (with tools when tools is set) and prints in order. */
static int generate(or1_dmodel *dm, request_list *l, const or1_sampling *s, int64_t n, const or1_engine_cfg *base,
                    const or1_tokenizer *tok, const or1_tools_cfg *tools) {
    printer p = {.reqs = l, .tok = tok};
    p.first = or1_malloc((size_t)(l->n + 1) * sizeof *p.first);
    for (int i = 0; i < l->n; i++) {
        p.first[i] = (int)p.total;
        l->r[i].n_samples = (int)n;
        l->r[i].s = *s;
        l->r[i].s.seed = or1_rand_u64(s->seed, (uint64_t)i, 0); /* request i's own seed */
        p.total += n;
    }
    p.out = or1_calloc((size_t)p.total, sizeof *p.out);
    p.ready = or1_calloc((size_t)p.total, sizeof *p.ready);
    or1_engine_cfg cfg = *base;
    cfg.on_done = on_done;
    cfg.ctx = &p;
    or1_tools *tt = tools ? or1_tools_new(tools, tok, l->r, l->n) : NULL;
    if (tt) cfg.tools = or1_tools_hooks(tt);
    int rc = tools && !tt ? -1 : or1_generate(dm, l->r, l->n, &cfg, p.out);
    if (rc == 0 && tt) {
        or1_tools_stats ts = or1_tools_stats_of(tt);
        fprintf(stderr, "generate: %ld tool calls, %ld errors, %ld timeouts, %ld sandbox failures, %.2f s in tools\n",
                ts.calls, ts.errors, ts.timeouts, ts.failures, ts.seconds);
    }
    or1_tools_free(tt);
    or1_completions_free(p.out, (int)p.total);
    free(p.out);
    free(p.ready);
    free(p.first);
    return rc;
}

/* The flags of `or1 generate`. */
static const cli_flag_spec generate_flags[] = {
    FLAG_NEED("model", "checkpoint folder (config.json + model.safetensors)"),
    FLAG_NEED("input", "JSONL requests: {\"prompt_ids\": [...]}, or with a tokenizer {\"prompt\": text} or "
                       "{\"messages\": [...], \"chat_template_kwargs\": {...}}"),
    FLAG_SAMPLING("1", "256", 1, "response length limit (tokens)"),
    FLAG_STR("stop", "ID,ID,...", NULL, "token ids that end a response (besides the model's EOS)"),
    FLAG_PATH("tokenizer", NULL, "tokenizer.json or its folder; default: the model folder's, if any"),
    FLAG_STR("chat-template", "NAME", NULL, "for rows of messages: deepseek-r1 | deepseek | chatml | llama3 | plain; default: the tokenizer's"),
    FLAG_CHAT_KWARGS,
    OR1_ENGINE_OPTIONS(ROW_FLAG)
    OR1_TOOL_OPTIONS(ROW_FLAG)
    FLAG_DEVICE,
};

/* The tool flags into cfg; *on is false when --tools is 0 (refused without a tokenizer). */
static int tool_flags(cli_args *a, const or1_tokenizer *tok, or1_tools_cfg *cfg, bool *on) {
    cli_tool_flags(a, cfg);
    *on = cfg->max_turns > 0;
    if (*on && !tok) return or1_fail("generate: --tools needs a tokenizer (--tokenizer, or one in the model folder)");
    return 0;
}

/* The model's generation_config.json sampling settings for the flags not given, as vLLM
 * applies them by default; says which it took. */
static int model_sampling(cli_args *a, const char *dir, or1_sampling *s) {
    char *path = or1_path_join(dir, "generation_config.json");
    or1_generation_sampling g;
    int rc = or1_generation_sampling_load(path, &g);
    free(path);
    if (rc) return -1;
    char said[160] = "";
    size_t k = 0;
    if (g.has_temperature && !cli_given(a, "temperature"))
        s->temperature = (float)g.temperature, k += (size_t)snprintf(said + k, sizeof said - k, " temperature %g", g.temperature);
    if (g.has_top_p && !cli_given(a, "top-p"))
        s->top_p = (float)g.top_p, k += (size_t)snprintf(said + k, sizeof said - k, " top_p %g", g.top_p);
    if (g.has_top_k && !cli_given(a, "top-k"))
        s->top_k = g.top_k, k += (size_t)snprintf(said + k, sizeof said - k, " top_k %d", g.top_k);
    if (k) fprintf(stderr, "generate: from generation_config.json:%s\n", said);
    return 0;
}

/* or1 generate --model DIR --input FILE [--n M] [--temperature T] [--top-p P] [--top-k K]
 *   [--max-new-tokens L] [--seed S] [--stop ID,...] [--tokenizer PATH] [--max-slots B] [--kv-cache-gb G]
 *   [--prefill-chunk C]
 *   [--device cpu|cuda] [--precision P] */
static int cmd_generate(cli_args *a) {
    const char *dir = cli_str(a, "model"), *input = cli_str(a, "input"), *device = cli_str(a, "device");
    const char *precision = cli_str(a, "precision");
    or1_sampling s;
    int64_t n;
    or1_engine_cfg cfg = {.progress = true};
    cli_sampling(a, &s, &n);
    cli_engine_flags(a, &cfg.opts);
    cli_model cm;
    if (cli_model_open(&cm, dir, device, precision, false)) return 1;
    const or1_model *m = &cm.m;
    or1_tokenizer *tok = NULL;
    int32_t *stop = NULL;
    request_list l = {0};
    request_reader q = {NULL, cli_str(a, "chat-template"), {0}, m->cfg.vocab};
    int rc = 1, n_stop = 0;
    or1_tools_cfg tools;
    bool tools_on = false;
    if (model_sampling(a, dir, &s) == 0 && stop_flag(a, m->cfg.vocab, &stop, &n_stop) == 0 &&
        cli_chat_vars(a, &q.vars) == 0 && cli_model_tokenizer(cli_str(a, "tokenizer"), dir, &tok) == 0 &&
        (q.tok = tok, tool_flags(a, tok, &tools, &tools_on) == 0) && cli_check_unused(a) == 0 &&
        read_requests(input, &q, &m->cfg, s.max_new_tokens, &l) == 0) {
        s.stop_ids = stop, s.n_stop = n_stop;
        or1_engine_stats st = {0};
        cfg.stats = &st;
        rc = generate(cm.dm, &l, &s, n, &cfg, tok, tools_on ? &tools : NULL) ? 1 : 0;
        if (rc == 0)
            fprintf(stderr, "generate: %d slots, KV pool of %d blocks of %d tokens, %ld preemptions\n", st.slots,
                    st.blocks, st.block_rows, st.preemptions);
    }
    for (int i = 0; i < l.n; i++) free((void *)l.r[i].prompt);
    free(l.r);
    free(stop);
    or1_tokenizer_free(tok);
    cli_model_close(&cm);
    return rc;
}

const cli_command cli_cmd_generate = CLI_COMMAND(
    "generate", cmd_generate,
    "sample M responses per prompt with a KV cache (continuous batching); JSON lines on stdout", generate_flags,
    "or1 generate --model models/arith-base --input prompts.jsonl --n 4 --temperature 1 --max-new-tokens 64");
