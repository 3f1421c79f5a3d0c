/* Evaluation (or1 eval, validation): avg@n and pass@k of dataset rows over the ranks, with
 * rollout_score.c's sampling and scoring. */
#include "or1/algo.h"
#include "or1/core.h"
#include "or1/io.h"
#include "or1/reward.h"
#include "or1/train.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

/* Writes one evaluated sample as a JSON line ("correct" null where the reward failed; the
 * response with its tools' replies, and with tools their calls). */
static void dump_sample(FILE *f, const or1_tokenizer *tok, const or1_data_row *r, size_t row, int j,
                        const or1_completion *c, float score, or1_reward_status st) {
    char *text = NULL;
    size_t len;
    if (or1_tokenizer_decode(tok, c->ids, (size_t)c->n, false, &text, &len) != 0) text = or1_strdup("");
    fprintf(f, "{\"data_source\":");
    or1_json_write_string(f, r->data_source);
    fprintf(f, ",\"row\":%zu,\"index\":%lld,\"sample\":%d,\"correct\":%s,\"reward_status\":\"%s\",\"finish_reason\":\"%s\",\"tokens\":%d,\"response\":",
            row, (long long)r->index, j, st != OR1_REWARD_OK ? "null" : score > 0.5f ? "true" : "false",
            or1_reward_status_name(st), c->stopped ? "stop" : "length", c->n);
    or1_json_write_string(f, text);
    if (c->mask) fprintf(f, ",\"tool_calls\":%d", c->tool_calls);
    fputs("}\n", f);
    free(text);
}

/* Adds {"<status>": count} of the failed rewards to the report, with a warning naming them. */
static void report_errors(cJSON *report, const double *errors, size_t drawn) {
    double total = 0;
    for (int k = 1; k < OR1_REWARD_N_STATUS; k++) total += errors[k];
    cJSON *o = cJSON_AddObjectToObject(report, "reward_errors");
    for (int k = 1; k < OR1_REWARD_N_STATUS; k++)
        cJSON_AddNumberToObject(o, or1_reward_status_name((or1_reward_status)k), errors[k]);
    if (total > 0)
        fprintf(stderr, "or1: WARNING: %.0f of %zu rewards could not be decided and are left out of the scores "
                        "(see reward_errors)\n", total, drawn);
}

/* The response length an evaluation uses: the asked one, or (asked 0) what the context leaves
 * after the longest prompt that leaves any room at all. */
static int eval_length(const or1_data_row *const *rows, size_t n, int asked, int max_pos) {
    if (asked > 0) return asked;
    int longest = 0;
    for (size_t i = 0; i < n; i++)
        if (rows[i]->n_ids < max_pos && rows[i]->n_ids > longest) longest = (int)rows[i]->n_ids;
    return max_pos - longest > 0 ? max_pos - longest : 1;
}

/* Adds {"total": k, "<source>": k, ...} of the rows skipped because prompt + T exceed the model's
 * context, with a warning, when there are any. */
static void report_skipped(cJSON *report, const or1_data_row *const *rows, const bool *fits, size_t n, int T,
                           int max_pos) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++) total += !fits[i];
    if (total == 0) return;
    cJSON *o = cJSON_AddObjectToObject(report, "skipped_long_prompts");
    cJSON_AddNumberToObject(o, "total", (double)total);
    for (size_t i = 0; i < n; i++) {
        if (fits[i]) continue;
        cJSON *c = cJSON_GetObjectItemCaseSensitive(o, rows[i]->data_source);
        if (c) cJSON_SetNumberValue(c, c->valuedouble + 1);
        else cJSON_AddNumberToObject(o, rows[i]->data_source, 1);
    }
    fprintf(stderr, "or1: WARNING: %zu of %zu prompts are longer than the %d positions left after %d new tokens "
                    "(max_position_embeddings %d) and were skipped (see skipped_long_prompts)\n",
            total, n, max_pos - T, T, max_pos);
}

/* Evaluates this rank's share of the rows that fit the context (every size-th of them), sums
 * the correct and scored counts and the failed rewards over ranks and builds the pass@k report
 * from them; a sample whose reward failed counts neither way, a row that does not fit is
 * skipped and counted. */
cJSON *or1_eval(or1_dmodel *dm, const or1_tokenizer *tok, const or1_data_row *const *rows, size_t n_rows,
                const or1_eval_opts *o, or1_sandbox_pool *pool, const or1_dist *d, FILE *dump, int *correct,
                int *scored) {
    int max_pos = or1_dmodel_config(dm)->max_pos, T = eval_length(rows, n_rows, o->max_new_tokens, max_pos);
    bool *fits = or1_calloc(n_rows ? n_rows : 1, sizeof *fits);
    size_t mine = 0, eligible = 0, *at_row = or1_calloc(n_rows ? n_rows : 1, sizeof *at_row);
    const or1_data_row **sub = or1_calloc(n_rows ? n_rows : 1, sizeof *sub);
    uint64_t *seeds = or1_calloc(n_rows ? n_rows : 1, sizeof *seeds);
    for (size_t i = 0; i < n_rows; i++) {
        fits[i] = (long)rows[i]->n_ids + T <= max_pos;
        if (!fits[i] || eligible++ % (size_t)d->size != (size_t)d->rank) continue;
        seeds[mine] = or1_rand_u64(o->seed, i, 0xe7a1);
        at_row[mine] = i;
        sub[mine++] = rows[i];
    }
    or1_sampling s = {.temperature = o->temperature, .top_p = o->top_p, .top_k = o->top_k,
                      .max_new_tokens = T, .seed = 0, .stop_ids = NULL, .n_stop = 0};
    or1_scored sc;
    or1_engine_cfg engine = {.opts = o->engine, .progress = d->rank == 0};
    or1_rollout_job job = {.dm = dm, .tok = tok, .rows = sub, .n_rows = mine, .M = o->n, .sampling = &s,
                           .seeds = seeds, .engine = &engine, .tools = &o->tools, .pool = pool,
                           .reward = &o->reward, .sw = NULL};
    int rc = or1_rollout_score(&job, &sc, NULL, NULL);
    /* per row: correct, then scored; then the failed rewards by status */
    size_t n_counts = 2 * n_rows + OR1_REWARD_N_STATUS;
    double *counts = or1_calloc(n_counts, sizeof *counts), *errors = counts + 2 * n_rows;
    or1_tools_stats tools = sc.tools;
    char *lines = NULL;
    size_t lines_len = 0;
    FILE *mem = dump ? open_memstream(&lines, &lines_len) : NULL;
    for (size_t k = 0; rc == 0 && k < mine; k++) {
        size_t row = at_row[k];
        for (int j = 0; j < o->n; j++) {
            size_t at = k * (size_t)o->n + (size_t)j;
            or1_reward_status st = sc.status[at];
            counts[row] += st == OR1_REWARD_OK && sc.scores[at] > 0.5f;
            counts[n_rows + row] += st == OR1_REWARD_OK;
            errors[st] += st != OR1_REWARD_OK;
            if (mem) dump_sample(mem, tok, sub[k], row, j, &sc.c[at], sc.scores[at], st);
        }
    }
    or1_scored_free(&sc);
    free(seeds);
    free(sub);
    free(at_row);
    if (mem) {
        fclose(mem);
        char *all;
        size_t all_len;
        or1_dist_gather_bytes(d, lines, lines_len, &all, &all_len); /* every rank's samples to rank 0 */
        if (all && all_len) fwrite(all, 1, all_len, dump);
        free(all);
        free(lines);
    }
    or1_dist_sum_f64(d, counts, n_counts);
    or1_tools_stats_sum(&tools, d);
    cJSON *report = NULL;
    if (rc == 0 && eligible == 0)
        rc = or1_fail("eval: none of the %zu prompts fits max_position_embeddings %d with %d new tokens", n_rows,
                      max_pos, T);
    if (rc == 0) {
        or1_eval_result *res = or1_calloc(n_rows ? n_rows : 1, sizeof *res);
        size_t k = 0;
        for (size_t i = 0; i < n_rows; i++) {
            if (fits[i]) res[k++] = (or1_eval_result){.data_source = rows[i]->data_source,
                                                      .n = (int)counts[n_rows + i],
                                                      .correct = (int)counts[i]};
            if (correct) correct[i] = (int)counts[i];
            if (scored) scored[i] = fits[i] ? (int)counts[n_rows + i] : -1;
        }
        report = or1_passk_report(res, k, o->n);
        if (report) report_errors(report, errors, eligible * (size_t)o->n);
        if (report) report_skipped(report, rows, fits, n_rows, T, max_pos);
        if (report && o->tools.max_turns > 0)
            or1_tools_stats_json(&tools, eligible * (size_t)o->n, cJSON_AddObjectToObject(report, "tools"), "");
        free(res);
    }
    free(fits);
    free(counts);
    return report;
}
