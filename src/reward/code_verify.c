/* Code rewards: one response graded against its tests, all of them in one sandbox (the harness
 * forks a child per test). */
#include "or1/core.h"
#include "sandbox_internal.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* See sandbox_internal.h. */
const char or1_sandbox_python[] = "/usr/bin/python3";

/* See sandbox.h. */
const char *or1_code_verdict_name(or1_code_verdict v) {
    static const char *const names[] = {
        "accepted", "wrong_answer", "time_limit", "memory_limit", "runtime_error",
        "output_limit", "no_code", "syntax_error", "not_run"};
    return (unsigned)v < sizeof names / sizeof names[0] ? names[v] : "?";
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
    const char *argv[] = {or1_sandbox_python, "-s", "-B", "checker.py", "input.txt", "output.txt", "expected.txt",
                          NULL};
    or1_sandbox_spec spec = {.argv = argv, .files = files, .n_files = 4, .limits = *lim};
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

/* Records a test's verdict in the result; true if grading should stop here. */
static bool record(const or1_code_job *job, or1_code_result *res, size_t i, or1_code_verdict v) {
    res->per_test[i] = v;
    if (v == OR1_CODE_ACCEPTED) {
        res->passed++;
        return false;
    }
    if (res->verdict == OR1_CODE_ACCEPTED) res->verdict = v;
    return !job->all_tests;
}

/* State of a batch run while the harness streams one record per test over fd 3. */
typedef struct {
    const or1_code_job *job;
    const or1_sandbox_limits *lim;
    or1_code_result *res;
    char *buf; /* bytes received and not yet consumed */
    size_t len, alloc;
    size_t next;      /* the test the next record must be for */
    bool syntax;      /* the harness reported a syntax error */
    bool broken;      /* a record did not parse: the run is stopped, the test is a runtime error */
    bool stopped;     /* grading asked to stop (first failure) */
    bool failed;      /* a checker's sandbox failed (an error, not a verdict) */
    int kill_signal;  /* signal of the last test that ended by SIGKILL (for OOM attribution) */
} batch_state;

/* How one test of a batch ended, from its record. */
static or1_code_verdict batch_verdict(const char *status, int code, const char *res) {
    if (strcmp(status, "wall") == 0 || strcmp(status, "cpu") == 0) return OR1_CODE_TIME_LIMIT;
    if (strcmp(status, "output") == 0) return OR1_CODE_OUTPUT_LIMIT;
    if (res[0] == 'M') return OR1_CODE_MEMORY_LIMIT;
    if (res[0] == 'A') return OR1_CODE_WRONG_ANSWER; /* an assert-style test's assertion failed */
    if (strcmp(status, "signal") == 0) return code == SIGXCPU ? OR1_CODE_TIME_LIMIT : OR1_CODE_RUNTIME_ERROR;
    if (strcmp(status, "exit") != 0 || code != 0) return OR1_CODE_RUNTIME_ERROR;
    return OR1_CODE_ACCEPTED;
}

/* Grades one complete record: "T i status code cpu_ms out_len res_len\n" + stdout + result. */
static int batch_record(batch_state *b, const char *out, size_t out_len, const char *res_text, size_t res_len,
                        const char *status, int code) {
    char *o = or1_malloc(out_len + 1), *r = or1_malloc(res_len + 1);
    memcpy(o, out, out_len);
    o[out_len] = '\0';
    memcpy(r, res_text, res_len);
    r[res_len] = '\0';
    size_t i = b->next++;
    or1_code_verdict v = batch_verdict(status, code, r);
    if (strcmp(status, "signal") == 0 && code == SIGKILL) b->kill_signal = 1;
    int rc = 0;
    if (v == OR1_CODE_ACCEPTED) {
        or1_sandbox_result fake = {.out = o, .out_len = out_len, .chan = r, .chan_len = res_len,
                                   .err = (char *)""};
        rc = grade(b->job->tests, i, &fake, b->lim, &v);
    }
    free(o);
    free(r);
    if (rc != 0) {
        b->failed = true;
        return -1;
    }
    if (getenv("OR1_CODE_DEBUG"))
        fprintf(stderr, "or1 code: test %zu: %s %d -> %s\n", i, status, code, or1_code_verdict_name(v));
    if (record(b->job, b->res, i, v)) b->stopped = true;
    return 0;
}

/* Channel callback: consumes every complete record; nonzero stops the run. */
static int batch_chan(void *ctx, const char *data, size_t len) {
    batch_state *b = ctx;
    size_t cap = b->lim->output_bytes;
    if (b->len + len + 1 > b->alloc) {
        b->alloc = 2 * (b->len + len + 1);
        b->buf = or1_realloc(b->buf, b->alloc);
    }
    memcpy(b->buf + b->len, data, len);
    b->len += len;
    size_t used = 0;
    while (!b->stopped && !b->broken && !b->syntax && !b->failed) {
        const char *p = b->buf + used;
        size_t avail = b->len - used;
        if (avail == 0) break;
        if (p[0] == 'S') {
            b->syntax = true;
            break;
        }
        const char *nl = memchr(p, '\n', avail < 128 ? avail : 128);
        if (!nl) {
            b->broken = avail >= 128 || p[0] != 'T';
            break;
        }
        char head[128], status[16];
        memcpy(head, p, (size_t)(nl - p));
        head[nl - p] = '\0';
        size_t idx, out_len, res_len;
        int code;
        long cpu_ms;
        if (sscanf(head, "T %zu %15s %d %ld %zu %zu", &idx, status, &code, &cpu_ms, &out_len, &res_len) != 6 ||
            idx != b->next || idx >= b->job->tests->n || out_len > cap || res_len > cap + 16) {
            b->broken = true;
            break;
        }
        size_t need = (size_t)(nl - p) + 1 + out_len + res_len;
        if (avail < need) break;
        if (batch_record(b, nl + 1, out_len, nl + 1 + out_len, res_len, status, code) != 0) break;
        used += need;
    }
    memmove(b->buf, b->buf + used, b->len - used);
    b->len -= used;
    return b->stopped || b->broken || b->syntax || b->failed;
}

/* Test i's data file: its stdin or arguments, or for assert-style tests the statement (and
 * Skywork's "check(entry)") that follows the solution; a new string. */
static char *test_data(const or1_code_tests *t, size_t i) {
    if (t->kind == OR1_TESTS_STDIO || t->kind == OR1_TESTS_CALL) return or1_strdup(t->inputs[i]);
    const char *suffix = t->suffix ? t->suffix : "";
    size_t la = strlen(t->asserts[i]), ls = strlen(suffix);
    char *s = or1_malloc(la + ls + 1);
    memcpy(s, t->asserts[i], la);
    memcpy(s + la, suffix, ls + 1);
    return s;
}

/* The harness's name for a kind of tests. */
static const char *kind_name(or1_tests_kind k) {
    return k == OR1_TESTS_STDIO ? "stdin" : k == OR1_TESTS_CALL ? "call" : "script";
}

/* Runs every test of a job in one sandbox (the harness forks a child per test after compiling
 * and importing once) and grades the records as they stream in. */
static int run_batch(const or1_code_job *job, const char *code, const or1_sandbox_limits *lim,
                     or1_code_result *res) {
    const or1_code_tests *t = job->tests;
    size_t n = t->n;
    or1_sandbox_file *files = or1_calloc(n + 2, sizeof *files);
    char **names = or1_calloc(n, sizeof *names), **data = or1_calloc(n, sizeof *data);
    files[0] = (or1_sandbox_file){.name = "solution.py", .data = code, .len = strlen(code)};
    size_t n_files = 1;
    if (t->prefix) files[n_files++] = (or1_sandbox_file){.name = "prefix.py", .data = t->prefix,
                                                         .len = strlen(t->prefix)};
    for (size_t i = 0; i < n; i++) {
        names[i] = or1_malloc(32);
        snprintf(names[i], 32, "in_%zu", i);
        data[i] = test_data(t, i);
        files[n_files++] = (or1_sandbox_file){.name = names[i], .data = data[i], .len = strlen(data[i])};
    }
    char nbuf[32], cpu[32], wall[32], cap[32];
    snprintf(nbuf, sizeof nbuf, "%zu", n);
    snprintf(cpu, sizeof cpu, "%.3f", lim->cpu_s);
    snprintf(wall, sizeof wall, "%.3f", lim->wall_s);
    snprintf(cap, sizeof cap, "%zu", lim->output_bytes);
    const char *argv[] = {or1_sandbox_python, "-s", "-B", "-c", or1_code_driver_py, "batch", kind_name(t->kind),
                          "solution.py", nbuf, cpu, wall, cap, t->kind == OR1_TESTS_CALL ? t->fn_name : NULL, NULL};
    /* The harness process itself: its start-up, plus every test's worst case. */
    or1_sandbox_limits outer = *lim;
    outer.cpu_s = (double)n * (lim->cpu_s + 1.0) + 30.0;
    outer.wall_s = (double)n * (lim->wall_s + 0.5) + 30.0;
    if (outer.cpu_s > 3600) outer.cpu_s = 3600;
    if (outer.wall_s > 7200) outer.wall_s = 7200;
    batch_state b = {.job = job, .lim = lim, .res = res};
    or1_sandbox_spec spec = {.argv = argv, .files = files, .n_files = n_files, .limits = outer,
                             .on_chan = batch_chan, .on_chan_ctx = &b};
    or1_sandbox_result r;
    int rc = or1_sandbox_run(&spec, &r);
    for (size_t i = 0; i < n; i++) {
        free(names[i]);
        free(data[i]);
    }
    free(names);
    free(data);
    free(files);
    free(b.buf);
    if (rc != 0) return -1;
    if (getenv("OR1_CODE_DEBUG"))
        fprintf(stderr, "or1 code: batch of %zu: status %d exit %d signal %d cpu %.3f s wall %.3f s\n%s\n", n,
                (int)r.status, r.exit_code, r.signal, r.cpu_s, r.wall_s, r.err);
    if (b.failed) {
        or1_sandbox_result_free(&r);
        return -1;
    }
    if (b.syntax) {
        res->verdict = OR1_CODE_SYNTAX_ERROR;
    } else if (!b.stopped && b.next < n) {
        /* The harness ended early (or broke its protocol): the test it was on fails. */
        or1_code_verdict v = r.status == OR1_RUN_WALL_LIMIT || r.status == OR1_RUN_CPU_LIMIT ? OR1_CODE_TIME_LIMIT
                             : r.status == OR1_RUN_MEMORY_LIMIT                               ? OR1_CODE_MEMORY_LIMIT
                                                                                              : OR1_CODE_RUNTIME_ERROR;
        record(job, res, b.next, v);
    }
    /* A test the cgroup's OOM killer ended shows up as SIGKILL: it ran out of memory. */
    if (r.status == OR1_RUN_MEMORY_LIMIT && b.kill_signal && res->verdict == OR1_CODE_RUNTIME_ERROR)
        res->verdict = OR1_CODE_MEMORY_LIMIT;
    or1_sandbox_result_free(&r);
    return 0;
}

/* Limits of one test: CPU as asked, wall clock with room for start-up and scheduling. */
static or1_sandbox_limits job_limits(const or1_code_job *job) {
    or1_sandbox_limits l = or1_sandbox_limits_defaults();
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
    if (run_batch(job, code, &lim, res) != 0) {
        free(code);
        res->verdict = OR1_CODE_RUNTIME_ERROR;
        res->sandbox_failed = true;
        return -1;
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
