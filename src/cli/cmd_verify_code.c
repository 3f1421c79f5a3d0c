/* or1 verify-code: grades code responses from JSONL in a pool of sandboxed workers. */
#include "cli.h"

#include "or1/core.h"
#include "or1/io.h"
#include "or1/reward_sandbox.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* One input row, parsed and owning its strings. */
typedef struct {
    char *response;
    or1_code_tests tests;
} row;

/* Parses {"response", "tests", "time_limit_s"?} into a row and its job. */
static int parse_row(const cJSON *j, row *r, or1_code_job *job, const char *where, double memory_mb,
                     bool all) {
    const char *resp = or1_json_str(j, "response", where);
    if (!resp) return -1;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "tests");
    if (!t) return or1_fail("%s: missing key \"tests\"", where);
    double limit = 6.0;
    if (or1_json_num_opt(j, "time_limit_s", &limit, where) != 0) return -1;
    if (!(limit > 0 && limit <= 600)) return or1_fail("%s: \"time_limit_s\" must be in (0, 600]", where);
    if (or1_code_tests_parse(t, &r->tests, where) != 0) return -1;
    r->response = or1_strdup(resp);
    *job = (or1_code_job){.response = r->response, .tests = &r->tests, .time_limit_s = limit,
                          .memory_bytes = (size_t)(memory_mb * 1048576.0), .all_tests = all};
    return 0;
}

/* Writes one result line. */
static void write_result(FILE *f, const or1_code_result *res) {
    fprintf(f, "{\"correct\":%s,\"verdict\":\"%s\",\"passed\":%d,\"total\":%d,\"tests\":[",
            res->correct ? "true" : "false", or1_code_verdict_name(res->verdict), res->passed, res->total);
    for (int i = 0; i < res->total; i++)
        fprintf(f, "%s\"%s\"", i ? "," : "", or1_code_verdict_name(res->per_test[i]));
    fprintf(f, "],\"seconds\":%.3f}\n", res->wall_s);
}

/* Grades a chunk of rows in the pool and writes their results in input order, flushed, so a
 * reader of a pipe sees each chunk's verdicts as soon as they are known. */
static int flush_chunk(or1_sandbox_pool *pool, row *rows, or1_code_job *jobs, or1_code_result *res,
                       size_t n, FILE *out, size_t *correct) {
    int rc = or1_sandbox_pool_run(pool, jobs, res, n);
    for (size_t i = 0; i < n; i++) {
        if (rc == 0) write_result(out, &res[i]);
        *correct += res[i].correct;
        or1_code_result_free(&res[i]);
        or1_code_tests_free(&rows[i].tests);
        free(rows[i].response);
    }
    if (rc == 0 && fflush(out) != 0) rc = or1_fail("verify-code: writing the verdicts failed");
    return rc;
}

/* The flags of `or1 verify-code`. */
static const cli_flag_spec verify_code_flags[] = {
    FLAG_PATH("input", "-", "JSONL rows {\"response\", \"tests\", \"time_limit_s\"?}; -: stdin"),
    FLAG_PATH("output", "-", "JSONL verdicts; -: stdout"),
    FLAG_INT("workers", NULL, 1, 1024, "sandboxed worker processes; default: one per CPU"),
    FLAG_NUM("memory-mb", "1024", 64, 1 << 20, "memory limit of each program, MiB"),
    FLAG_SWITCH("all-tests", "run every test (default: stop at the first failure)"),
    FLAG_INT("chunk", "512", 1, 1 << 16, "rows queued in the pool together; their verdicts are written when all are graded"),
};

/* or1 verify-code --input F [--output F] [--workers N] [--memory-mb M] [--all-tests] [--chunk N] */
static int cmd_verify_code(cli_args *a) {
    const char *in = cli_str(a, "input"), *out_path = cli_str(a, "output");
    int64_t workers = 0, chunk_rows = 0;
    double memory_mb;
    bool all = cli_flag(a, "all-tests");
    cli_int(a, "workers", &workers);
    cli_int(a, "chunk", &chunk_rows);
    const size_t chunk = (size_t)chunk_rows;
    cli_double(a, "memory-mb", &memory_mb);
    if (cli_check_unused(a) != 0) return 2;
    or1_jsonl_reader r;
    if (or1_jsonl_open(&r, in) != 0) return 1;
    FILE *out = strcmp(out_path, "-") != 0 ? fopen(out_path, "w") : stdout;
    if (!out) {
        or1_jsonl_close(&r);
        return or1_fail("verify-code: cannot open %s for writing", out_path), 1;
    }
    or1_sandbox_pool *pool = or1_sandbox_pool_new((int)workers);
    row *rows = or1_calloc(chunk, sizeof *rows);
    or1_code_job *jobs = or1_calloc(chunk, sizeof *jobs);
    or1_code_result *res = or1_calloc(chunk, sizeof *res);
    size_t n = 0, total = 0, correct = 0;
    int rc = pool ? 0 : -1;
    double t0 = or1_now();
    while (rc == 0) {
        cJSON *j = NULL;
        int got = or1_jsonl_next(&r, &j);
        if (got <= 0) {
            rc = got;
            break;
        }
        const char *where = r.where;
        rc = parse_row(j, &rows[n], &jobs[n], where, memory_mb, all);
        cJSON_Delete(j);
        if (rc != 0) break;
        total++;
        if (++n == chunk) {
            rc = flush_chunk(pool, rows, jobs, res, n, out, &correct);
            n = 0;
        }
    }
    if (rc == 0 && n) rc = flush_chunk(pool, rows, jobs, res, n, out, &correct);
    else if (n) {
        for (size_t i = 0; i < n; i++) {
            or1_code_tests_free(&rows[i].tests);
            free(rows[i].response);
        }
    }
    if (rc == 0)
        fprintf(stderr, "verify-code: %zu/%zu correct, %.2f s, %d workers, isolation %s\n", correct, total,
                or1_now() - t0, or1_sandbox_pool_workers(pool), or1_isolation_name(or1_sandbox_isolation()));
    or1_sandbox_pool_free(pool);
    free(rows);
    free(jobs);
    free(res);
    or1_jsonl_close(&r);
    if (out != stdout && fclose(out) != 0 && rc == 0) rc = or1_fail("verify-code: writing %s failed", out_path);
    return rc == 0 ? 0 : 1;
}

const cli_command cli_cmd_verify_code = CLI_COMMAND(
    "verify-code", cmd_verify_code, "JSONL {\"response\", \"tests\"} -> sandboxed code verdicts", verify_code_flags,
    "or1 verify-code --input responses.jsonl --workers 4 --all-tests");
