/* Tool-integrated rollouts: the engine's hooks over the tokenizer and the sandboxed executor.
 * Each sample keeps its text as bytes (its tokens' bytes, a reply's text), so finding a call is
 * a search in the bytes after the last reply; the executor runs the calls while the engine
 * decodes the other samples. */
#include "or1/core.h"
#include "or1/train.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One sample's text, where its next call may start, its calls so far and its last reply. */
typedef struct {
    or1_text t;
    size_t scan; /* a call's opening is looked for from here on */
    int turns, request, sample;
    int32_t *reply;
} tool_seq;

struct or1_tools {
    or1_tool_hooks hooks;
    or1_tools_cfg cfg;
    const or1_tokenizer *tok;
    or1_tool_exec *exec;
    tool_seq *seqs;
    int *first; /* each request's first sample */
    int n_reqs;
    long n_seqs;
    or1_tool_result *results;
    or1_tools_stats stats;
};

/* The code of the call the text now closes (NULL if it closes none): the first opening after
 * s->scan and the first closing after it (sharing the opening's newline allowed: empty code). */
static char *closed_call(const tool_seq *s) {
    const char *text = s->t.s, *end = text + s->t.len;
    if (!text) return NULL;
    const char *open = memmem(text + s->scan, s->t.len - s->scan, OR1_TOOL_CALL_OPEN, strlen(OR1_TOOL_CALL_OPEN));
    if (!open) return NULL;
    const char *code = open + strlen(OR1_TOOL_CALL_OPEN), *from = code - 1;
    const char *close = memmem(from, (size_t)(end - from), OR1_TOOL_CALL_CLOSE,
                               strlen(OR1_TOOL_CALL_CLOSE));
    if (!close) return NULL;
    size_t n = close > code ? (size_t)(close - code) : 0;
    char *out = or1_malloc(n + 1);
    memcpy(out, code, n);
    out[n] = '\0';
    return out;
}

/* The engine's question after a sampled token: appends its bytes; when the text closes a call
 * (and turns are left), starts it and says the sample waits (nothing is appended until its
 * reply, which moves the scan past the call). */
static int on_token(void *ctx, int request, int sample, const int32_t *ids, int n) {
    or1_tools *t = ctx;
    tool_seq *s = &t->seqs[t->first[request] + sample];
    size_t len;
    const char *b = or1_tokenizer_token_bytes(t->tok, ids[n - 1], &len);
    if (!b) return or1_fail("tools: token id %d outside the tokenizer's vocabulary", ids[n - 1]);
    or1_text_add(&s->t, b, len);
    if (s->turns >= t->cfg.max_turns) return 0;
    char *code = closed_call(s);
    if (!code) return 0;
    int rc = or1_tool_submit(t->exec, (uint64_t)(s - t->seqs), code);
    free(code);
    if (rc) return -1;
    t->stats.samples_calling += s->turns == 0;
    s->turns++;
    t->stats.calls++;
    return 1;
}

/* See train.h: the reply on a line of its own, the tool's text ending its line. */
void or1_tools_reply_text(char last, const char *tool, size_t len, or1_text *out) {
    if (last != '\n') or1_text_add(out, "\n", 1);
    or1_text_add(out, OR1_TOOL_REPLY_OPEN, strlen(OR1_TOOL_REPLY_OPEN));
    or1_text_add(out, tool, len);
    if (len > 0 && tool[len - 1] != '\n') or1_text_add(out, "\n", 1);
    or1_text_add(out, OR1_TOOL_REPLY_CLOSE, strlen(OR1_TOOL_REPLY_CLOSE));
}

/* Counts what a call did. */
static void count(or1_tools_stats *st, const or1_tool_result *r) {
    st->seconds += r->wall_s;
    st->errors += r->status == OR1_TOOL_ERROR || r->status == OR1_TOOL_MEMORY;
    st->timeouts += r->status == OR1_TOOL_TIMEOUT;
    st->failures += r->status == OR1_TOOL_SANDBOX_FAILED;
}

/* Turns one finished call into the reply the engine appends (its ids kept with the sample). */
static int make_reply(or1_tools *t, const or1_tool_result *r, or1_tool_reply *out) {
    tool_seq *s = &t->seqs[r->tag];
    or1_text reply = {0};
    count(&t->stats, r);
    or1_tools_reply_text(s->t.len > 0 ? s->t.s[s->t.len - 1] : '\n', r->text, r->text_len, &reply);
    free(s->reply);
    s->reply = NULL;
    size_t n = 0, len;
    char *text = or1_utf8_lossy(reply.s, reply.len, &len); /* a program may print any bytes */
    free(reply.s);
    int rc = or1_tokenizer_encode(t->tok, text, len, OR1_TOK_SPLIT_SPECIAL, &s->reply, &n);
    if (rc == 0) {
        or1_text_add(&s->t, text, len);
        s->scan = s->t.len;
        *out = (or1_tool_reply){.request = s->request, .sample = s->sample, .ids = s->reply, .n = (int)n};
    }
    free(text);
    return rc;
}

/* The engine's collection: finished calls as replies, waiting up to wait_s for the first. */
static int on_collect(void *ctx, double wait_s, or1_tool_reply *out, int max) {
    or1_tools *t = ctx;
    if (max > (int)t->n_seqs) max = (int)t->n_seqs;
    int n = wait_s > 0 ? or1_tool_wait(t->exec, t->results, max, wait_s) : or1_tool_poll(t->exec, t->results, max);
    int rc = 0;
    for (int k = 0; k < n; k++) {
        if (rc == 0) rc = make_reply(t, &t->results[k], &out[k]);
        or1_tool_result_free(&t->results[k]);
    }
    return rc ? -1 : n;
}

/* The sandbox limits of each call: its CPU seconds, twice that of wall clock, memory, output. */
static or1_tool_limits call_limits(const or1_tools_cfg *c) {
    return (or1_tool_limits){.cpu_s = c->timeout, .wall_s = 2 * c->timeout,
                             .memory_bytes = (size_t)c->memory_mb << 20,
                             .max_output_bytes = (size_t)c->output_bytes};
}

/* See train.h. */
or1_tools *or1_tools_new(const or1_tools_cfg *cfg, const or1_tokenizer *tok, const or1_request *reqs, int n) {
    or1_tool_limits lim = call_limits(cfg);
    or1_tool_exec *exec = or1_tool_exec_new(cfg->workers, &lim);
    if (!exec) return NULL;
    or1_tools *t = or1_calloc(1, sizeof *t);
    *t = (or1_tools){{on_token, on_collect, t}, *cfg, tok, exec, NULL, or1_malloc(((size_t)n + 1) * sizeof(int)), n,
                     0, NULL, {0}};
    for (int i = 0; i < n; i++) t->first[i] = (int)t->n_seqs, t->n_seqs += reqs[i].n_samples;
    t->seqs = or1_calloc((size_t)t->n_seqs + 1, sizeof *t->seqs);
    for (int i = 0, q = 0; i < n; i++)
        for (int j = 0; j < reqs[i].n_samples; j++, q++) t->seqs[q].request = i, t->seqs[q].sample = j;
    t->results = or1_malloc(((size_t)t->n_seqs + 1) * sizeof *t->results);
    return t;
}

/* See train.h. */
void or1_tools_stats_add(or1_tools_stats *into, const or1_tools_stats *s) {
#define ADD(type, field, help) into->field += s->field;
    OR1_TOOLS_STATS(ADD)
#undef ADD
}

/* See train.h: the counts as doubles, one sum. */
void or1_tools_stats_sum(or1_tools_stats *s, const or1_dist *d) {
    double v[OR1_TOOLS_N_STATS];
    int k = 0;
#define PACK(type, field, help) v[k++] = (double)s->field;
    OR1_TOOLS_STATS(PACK)
#undef PACK
    or1_dist_sum_f64(d, v, OR1_TOOLS_N_STATS);
    k = 0;
#define UNPACK(type, field, help) s->field = (type)v[k++];
    OR1_TOOLS_STATS(UNPACK)
#undef UNPACK
}

/* See train.h. */
void or1_tools_stats_json(const or1_tools_stats *s, size_t samples, cJSON *obj, const char *prefix) {
    char key[64];
#define PUT(type, field, help)                                \
    snprintf(key, sizeof key, "%s%s", prefix, #field);        \
    cJSON_AddNumberToObject(obj, key, (double)s->field);
    OR1_TOOLS_STATS(PUT)
#undef PUT
    double n = samples ? (double)samples : 1.0;
    snprintf(key, sizeof key, "%scalls_per_sample", prefix);
    cJSON_AddNumberToObject(obj, key, (double)s->calls / n);
    snprintf(key, sizeof key, "%ssamples_calling_ratio", prefix);
    cJSON_AddNumberToObject(obj, key, (double)s->samples_calling / n);
}

/* See train.h. */
const or1_tool_hooks *or1_tools_hooks(or1_tools *t) { return &t->hooks; }

/* See train.h. */
or1_tools_stats or1_tools_stats_of(const or1_tools *t) { return t->stats; }

/* See train.h. */
void or1_tools_free(or1_tools *t) {
    if (!t) return;
    or1_tool_exec_free(t->exec);
    for (long q = 0; q < t->n_seqs; q++) {
        free(t->seqs[q].t.s);
        free(t->seqs[q].reply);
    }
    free(t->seqs);
    free(t->first);
    free(t->results);
    free(t);
}
