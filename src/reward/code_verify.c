/* Code rewards: one response graded against its tests, one sandboxed process per test. */
#include "or1/core.h"
#include "sandbox_internal.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char python[] = "/usr/bin/python3";

/* See sandbox.h. */
const char *or1_code_verdict_name(or1_code_verdict v) {
    static const char *const names[] = {
        "accepted", "wrong_answer", "time_limit", "memory_limit", "runtime_error",
        "output_limit", "no_code", "syntax_error", "not_run"};
    return (unsigned)v < sizeof names / sizeof names[0] ? names[v] : "?";
}

/* Maps how the run ended to a verdict; ACCEPTED means "ran cleanly, now grade the output". */
static or1_code_verdict run_verdict(const or1_sandbox_result *r) {
    if (r->chan[0] == 'S') return OR1_CODE_SYNTAX_ERROR;
    if (r->status == OR1_RUN_CPU_LIMIT || r->status == OR1_RUN_WALL_LIMIT) return OR1_CODE_TIME_LIMIT;
    if (r->status == OR1_RUN_OUTPUT_LIMIT) return OR1_CODE_OUTPUT_LIMIT;
    if (r->status == OR1_RUN_MEMORY_LIMIT || r->chan[0] == 'M' || strstr(r->err, "MemoryError"))
        return OR1_CODE_MEMORY_LIMIT;
    if (r->status == OR1_RUN_SIGNALED) return r->signal == SIGXCPU ? OR1_CODE_TIME_LIMIT : OR1_CODE_RUNTIME_ERROR;
    if (r->exit_code != 0) return strstr(r->err, "AssertionError") ? OR1_CODE_WRONG_ANSWER : OR1_CODE_RUNTIME_ERROR;
    return OR1_CODE_ACCEPTED;
}

/* Runs the problem's checker on one test: accepted iff it exits 0 within the limits. */
static int run_checker(const or1_code_tests *t, size_t i, const char *out, const or1_sandbox_limits *lim,
                       or1_code_verdict *v) {
    or1_sandbox_file files[] = {
        {"checker.py", t->checker, strlen(t->checker)},
        {"input.txt", t->inputs[i], strlen(t->inputs[i])},
        {"output.txt", out, strlen(out)},
        {"expected.txt", t->outputs[i], strlen(t->outputs[i])},
    };
    const char *argv[] = {python, "-s", "-B", "checker.py", "input.txt", "output.txt", "expected.txt", NULL};
    or1_sandbox_spec spec = {argv, files, 4, NULL, *lim};
    or1_sandbox_result r;
    if (or1_sandbox_run(&spec, &r) != 0) return or1_fail_ctx("checker");
    *v = r.status == OR1_RUN_EXITED && r.exit_code == 0 ? OR1_CODE_ACCEPTED : OR1_CODE_WRONG_ANSWER;
    or1_sandbox_result_free(&r);
    return 0;
}

/* Grades a clean run's output against test i. */
static int grade(const or1_code_tests *t, size_t i, const or1_sandbox_result *r,
                 const or1_sandbox_limits *lim, or1_code_verdict *v) {
    switch (t->kind) {
    case OR1_TESTS_STDIO:
        if (t->checker) return run_checker(t, i, r->out, lim, v);
        *v = or1_code_stdout_equal(r->out, t->outputs[i], t->abs_tol, t->rel_tol) ? OR1_CODE_ACCEPTED
                                                                                : OR1_CODE_WRONG_ANSWER;
        return 0;
    case OR1_TESTS_CALL:
        *v = r->chan[0] == 'R' && or1_code_json_equal(r->chan + 1, t->outputs[i], t->abs_tol, t->rel_tol)
                 ? OR1_CODE_ACCEPTED
                 : OR1_CODE_WRONG_ANSWER;
        return 0;
    case OR1_TESTS_ASSERT:
    case OR1_TESTS_CHECK:
        /* Exiting early (sys.exit(0) before the asserts) does not count as passing. */
        *v = r->chan[0] == 'P' ? OR1_CODE_ACCEPTED : OR1_CODE_WRONG_ANSWER;
        return 0;
    }
    return or1_fail("code: unknown test kind");
}

/* Runs test i of a job in the sandbox and grades it. */
static int run_test(const or1_code_job *job, const char *code, size_t i, const or1_sandbox_limits *lim,
                    or1_code_verdict *v) {
    const or1_code_tests *t = job->tests;
    or1_sandbox_file files[2] = {{"solution.py", code, strlen(code)}, {NULL, NULL, 0}};
    const char *argv[9] = {python, "-s", "-B", "-c", or1_code_driver_py, NULL, "solution.py", NULL, NULL};
    char *program = NULL;
    const char *stdin_file = NULL;
    if (t->kind == OR1_TESTS_STDIO || t->kind == OR1_TESTS_CALL) {
        files[1] = (or1_sandbox_file){"input.txt", t->inputs[i], strlen(t->inputs[i])};
        stdin_file = "input.txt";
        argv[5] = t->kind == OR1_TESTS_STDIO ? "stdin" : "call";
        argv[7] = t->kind == OR1_TESTS_CALL ? t->fn_name : NULL;
    } else {
        size_t lp = strlen(t->prefix), lc = strlen(code), la = strlen(t->asserts[i]);
        size_t ls = t->suffix ? strlen(t->suffix) : 0;
        program = or1_malloc(lp + lc + la + ls + 2);
        memcpy(program, t->prefix, lp);
        memcpy(program + lp, code, lc);
        program[lp + lc] = '\n';
        memcpy(program + lp + lc + 1, t->asserts[i], la);
        if (ls) memcpy(program + lp + lc + 1 + la, t->suffix, ls);
        program[lp + lc + 1 + la + ls] = '\0';
        files[1] = (or1_sandbox_file){"program.py", program, strlen(program)};
        argv[5] = "script";
        argv[7] = "program.py";
    }
    or1_sandbox_spec spec = {argv, files, 2, stdin_file, *lim};
    or1_sandbox_result r;
    int rc = or1_sandbox_run(&spec, &r);
    free(program);
    if (rc != 0) return -1;
    *v = run_verdict(&r);
    if (getenv("OR1_CODE_DEBUG"))
        fprintf(stderr, "or1 code: test %zu: status %d exit %d signal %d cpu %.3f s wall %.3f s -> %s\n%s\n", i,
                (int)r.status, r.exit_code, r.signal, r.cpu_s, r.wall_s, or1_code_verdict_name(*v), r.err);
    if (*v == OR1_CODE_ACCEPTED) rc = grade(t, i, &r, lim, v);
    or1_sandbox_result_free(&r);
    return rc;
}

/* Limits of one test: CPU as asked, wall clock with room for start-up and scheduling. */
static or1_sandbox_limits job_limits(const or1_code_job *job) {
    or1_sandbox_limits l = or1_sandbox_default_limits();
    double t = job->time_limit_s > 0 ? job->time_limit_s : 6.0;
    if (t > 600) t = 600;
    l.cpu_s = t;
    l.wall_s = 1.5 * t + 1.0;
    if (job->memory_bytes) l.memory_bytes = job->memory_bytes;
    return l;
}

/* See sandbox.h. */
int or1_code_verify(const or1_code_job *job, or1_code_result *res) {
    memset(res, 0, sizeof *res);
    double t0 = or1_now();
    size_t n = job->tests->n;
    res->total = (int)n;
    res->per_test = or1_malloc((n ? n : 1) * sizeof *res->per_test);
    for (size_t i = 0; i < n; i++) res->per_test[i] = OR1_CODE_NOT_RUN;
    res->verdict = OR1_CODE_ACCEPTED;
    char *code = or1_code_extract(job->response);
    if (!code) {
        res->verdict = OR1_CODE_NO_CODE;
        res->wall_s = or1_now() - t0;
        return 0;
    }
    or1_sandbox_limits lim = job_limits(job);
    for (size_t i = 0; i < n; i++) {
        or1_code_verdict v;
        if (run_test(job, code, i, &lim, &v) != 0) {
            free(code);
            res->verdict = OR1_CODE_RUNTIME_ERROR;
            return or1_fail_ctx("test %zu", i);
        }
        if (v == OR1_CODE_SYNTAX_ERROR) {
            res->verdict = v;
            break;
        }
        res->per_test[i] = v;
        if (v == OR1_CODE_ACCEPTED) {
            res->passed++;
            continue;
        }
        if (res->verdict == OR1_CODE_ACCEPTED) res->verdict = v;
        if (!job->all_tests) break;
    }
    free(code);
    res->correct = res->verdict == OR1_CODE_ACCEPTED && res->passed == res->total;
    res->wall_s = or1_now() - t0;
    return 0;
}

/* Frees the per-test verdicts. */
void or1_code_result_free(or1_code_result *res) {
    free(res->per_test);
    memset(res, 0, sizeof *res);
}
