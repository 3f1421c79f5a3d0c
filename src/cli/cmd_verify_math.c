/* or1 verify-math: scores JSONL rows {"response", "gold"} with the math verifier and writes
 * one {"correct", "extracted"} line per row, plus a summary line on stderr. */
#include "cli.h"

#include "or1/core.h"
#include "or1/io.h"
#include "or1/reward_math.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Scores one row against its gold: a list of strings, or a string read as the trainer reads a
 * row's reward_model.ground_truth (or1_math_gold_parse: one answer, or a JSON-encoded list of
 * answers). Fails (naming path:line) when a field is missing, of the wrong type or unusable. */
static int score_row(const cJSON *row, const char *where, const or1_math_limits *lim, or1_math_result *res) {
    const char *response = or1_json_str(row, "response", where);
    if (!response) return -1;
    const cJSON *gold = cJSON_GetObjectItemCaseSensitive(row, "gold");
    if (cJSON_IsString(gold)) {
        char w[600];
        snprintf(w, sizeof w, "%.560s: \"gold\"", where);
        or1_math_gold g;
        if (or1_math_gold_parse(gold->valuestring, w, &g) != 0) return -1;
        int rc = or1_math_verify(response, g.answers, g.n, lim, res);
        or1_math_gold_free(&g);
        return rc;
    }
    if (!cJSON_IsArray(gold)) return or1_fail("%s: \"gold\" must be a string or a list of strings", where);
    size_t n = (size_t)cJSON_GetArraySize(gold), k = 0;
    const char **list = or1_malloc((n ? n : 1) * sizeof *list);
    const cJSON *it;
    int rc = 0;
    cJSON_ArrayForEach(it, gold) {
        if (!cJSON_IsString(it)) {
            rc = or1_fail("%s: \"gold\"[%zu] is not a string", where, k);
            break;
        }
        list[k++] = it->valuestring;
    }
    if (rc == 0) rc = or1_math_verify(response, list, n, lim, res);
    free(list);
    return rc;
}

/* Writes one result line. */
static void write_result(FILE *f, const or1_math_result *res) {
    fprintf(f, "{\"correct\": %s, \"extracted\": ", res->correct ? "true" : "false");
    or1_json_write_string(f, res->extracted);
    fputs("}\n", f);
}

/* The flags of `or1 verify-math`. */
static const cli_flag_spec verify_math_flags[] = {
    FLAG_PATH("input", "-", "JSONL rows {\"response\", \"gold\"}: gold a list, or a string read as a row's ground_truth"),
    FLAG_PATH("output", "-", "JSONL verdicts {\"correct\", \"extracted\"}; -: stdout"),
    FLAG_NUM("time-limit", "2", 0.001, 600, "seconds per response"),
    OR1_REWARD_OPTIONS(ROW_FLAG)
};

/* The verify-math command: --input FILE|- (default -), --output FILE|- (default -),
 * --time-limit SECONDS per response. */
static int cmd_verify_math(cli_args *a) {
    const char *in = cli_str(a, "input"), *outp = cli_str(a, "output");
    or1_math_limits lim;
    or1_math_limits_defaults(&lim);
    cli_double(a, "time-limit", &lim.time_limit_s);
    or1_reward_opts ro = {0};
    cli_reward_flags(a, &ro);
    lim.strict_box = ro.strict_box;
    lim.keep_base = ro.keep_base;
    if (cli_check_unused(a) != 0) return 2;
    FILE *out = stdout;
    if (strcmp(outp, "-") != 0 && !(out = fopen(outp, "w")))
        return or1_fail("%s: cannot open for writing", outp), 1;
    or1_jsonl_reader r;
    if (or1_jsonl_open(&r, in) != 0) {
        if (out != stdout) fclose(out);
        return 1;
    }
    size_t rows = 0, correct = 0, extracted = 0, bounded = 0;
    double t0 = or1_now();
    int rc = 0, got;
    cJSON *row;
    while ((got = or1_jsonl_next(&r, &row)) == 1) {
        const char *where = r.where;
        or1_math_result res;
        memset(&res, 0, sizeof res);
        int s = score_row(row, where, &lim, &res);
        cJSON_Delete(row);
        if (s != 0) {
            or1_math_result_free(&res);
            rc = 1;
            break;
        }
        write_result(out, &res);
        rows++;
        correct += res.correct;
        extracted += res.extracted[0] != '\0';
        bounded += res.bounded;
        or1_math_result_free(&res);
    }
    if (got < 0) rc = 1;
    or1_jsonl_close(&r);
    if (out != stdout && fclose(out) != 0 && rc == 0) rc = (or1_fail("%s: write failed", outp), 1);
    if (rc == 0)
        fprintf(stderr, "verify-math: %zu rows, %zu correct (%.1f%%), %zu with an answer, %zu hit a bound, %.3f s\n",
                rows, correct, rows ? 100.0 * (double)correct / (double)rows : 0.0, extracted, bounded,
                or1_now() - t0);
    return rc;
}

const cli_command cli_cmd_verify_math = CLI_COMMAND(
    "verify-math", cmd_verify_math, "JSONL {\"response\", \"gold\"} -> math verdicts {\"correct\", \"extracted\"}",
    verify_math_flags, "or1 verify-math --input responses.jsonl --output verdicts.jsonl --time-limit 5");
