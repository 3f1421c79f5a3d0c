/* Labelled cases for the code reward's pure parts (extraction, comparison, test parsing) and
 * for the sandbox and pool APIs the trainer calls. */
#include "or1/core.h"
#include "or1/reward_sandbox.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"


/* Extraction: expected code (NULL = none) for a response. */
static void test_extract(void) {
    static const struct {
        const char *response, *code;
    } cases[] = {
        {"```python\nprint(1)\n```", "print(1)\n"},
        {"no fence at all", NULL},
        {"```python\nprint(1)\n", NULL},
        {"```py\nprint(1)\n```", NULL},
        {"```Python\nprint(1)\n```", NULL},
        {"```python print(1)```", NULL},
        {"```python\na\n```\ntext\n```python\nb\n```", "b\n"},
        {"```python\na\n```\n```python\nunclosed", "a\n"},
        {"<think>```python\nx\n```</think>\n```python\ny\n```", "y\n"},
        {"<think>```python\nx\n```</think> nothing after", NULL},
        {"a</think>```python\nfirst\n```</think>```python\nsecond\n```", "first\n"},
        {"```python\n```", ""},
        {"```python\nprint('```')\n```", "print('"},
        {"```python\r\nprint(1)\n```", NULL},
        {"", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = or1_code_extract(cases[i].response);
        CHECK(cases[i].code ? got && strcmp(got, cases[i].code) == 0 : got == NULL, "extract case %zu", i);
        free(got);
    }
}

/* LiveCodeBench's stdout rule, with and without tolerance. */
static void test_stdout(void) {
    static const struct {
        const char *got, *want;
        double abs_tol, rel_tol;
        bool eq;
    } cases[] = {
        {"1\n2\n", "1\n2", 0, 0, true},
        {"  1  \n 2\t\n\n", "1\n2\n", 0, 0, true},
        {"1 2\n", "1  2\n", 0, 0, true},
        {"1\n\n2\n", "1\n2\n", 0, 0, false},
        {"1\n2\n3\n", "1\n2\n", 0, 0, false},
        {"", "", 0, 0, true},
        {"\n\n", "", 0, 0, true},
        {"0", "", 0, 0, false},
        {"YES", "yes", 0, 0, false},
        {"1.0", "1", 0, 0, true},
        {"1.50 2e1", "1.5 20", 0, 0, true},
        {"-0", "0", 0, 0, true},
        {"0.000", "0", 0, 0, true},
        {"007", "7", 0, 0, true},
        {"1_000", "1000", 0, 0, true},
        {"1__000", "1000", 0, 0, false},
        {"+5", "5", 0, 0, true},
        {".5", "0.5", 0, 0, true},
        {"5.", "5", 0, 0, true},
        {"1e-3", "0.001", 0, 0, true},
        {"1E+2", "100", 0, 0, true},
        {"inf", "Infinity", 0, 0, true},
        {"-inf", "inf", 0, 0, false},
        {"nan", "NaN", 0, 0, false},
        {"nan", "nan", 0, 0, true},
        {"0x10", "16", 0, 0, false},
        {"1 2 3", "1 2", 0, 0, false},
        {"abc 1.0", "abc 1", 0, 0, false},
        {"3.14159", "3.1416", 0, 0, false},
        {"3.14159", "3.1416", 1e-3, 0, true},
        {"3.14159", "3.1416", 0, 1e-4, true},
        {"3.2", "3.1416", 1e-3, 0, false},
        {"1e400", "1e400", 0, 0, true},
        {"1e400", "1e401", 0, 0, false},
        {"123456789012345678901234567890", "123456789012345678901234567891", 0, 0, false},
        {"123456789012345678901234567890", "1.2345678901234567890123456789e29", 0, 0, true},
        {"1\r\n2\r\n", "1\n2\n", 0, 0, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK(or1_code_stdout_equal(cases[i].got, cases[i].want, cases[i].abs_tol, cases[i].rel_tol) == cases[i].eq,
              "stdout case %zu: '%s' vs '%s'", i, cases[i].got, cases[i].want);
    }
}

/* Python == on JSON values. */
static void test_json(void) {
    static const struct {
        const char *got, *want;
        bool eq;
    } cases[] = {
        {"1", "1.0", true},       {"true", "1", true},          {"false", "0", true},
        {"true", "2", false},     {"[1, [2, 3]]", "[1,[2,3]]", true}, {"[1, 2]", "[2, 1]", false},
        {"\"a\"", "\"a\"", true}, {"\"1\"", "1", false},        {"null", "null", true},
        {"null", "0", false},     {"{\"a\": 1, \"b\": 2}", "{\"b\": 2, \"a\": 1}", true},
        {"{\"a\": 1}", "{\"a\": 1, \"b\": 2}", false},          {"[]", "[]", true},
        {"[]", "{}", false},      {"1 2", "1", false},          {"NaN", "NaN", false},
        {"", "1", false},         {"[1,", "[1]", false},        {"0.1", "0.10000000000000001", true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK(or1_code_json_equal(cases[i].got, cases[i].want, 0, 0) == cases[i].eq, "json case %zu: '%s' vs '%s'", i,
              cases[i].got, cases[i].want);
    }
    CHECK(or1_code_json_equal("[1.0001]", "[1]", 1e-3, 0), "json tolerance");
}

/* Parses text as tests; returns the parse status and frees. */
static int parse_text(const char *text, or1_code_tests *t) {
    cJSON *j = cJSON_Parse(text);
    if (!j) return -2;
    int rc = or1_code_tests_parse(j, t, "case");
    cJSON_Delete(j);
    return rc;
}

/* The four shapes and malformed inputs. */
static void test_parse(void) {
    or1_code_tests t;
    CHECK(parse_text("{\"inputs\": [\"1\"], \"outputs\": [\"2\"]}", &t) == 0 && t.kind == OR1_TESTS_STDIO && t.n == 1,
          "parse stdio");
    or1_code_tests_free(&t);
    CHECK(parse_text("{\"inputs\": [\"1\\n2\"], \"outputs\": [\"3\"], \"fn_name\": \"add\"}", &t) == 0 &&
              t.kind == OR1_TESTS_CALL && strcmp(t.fn_name, "add") == 0,
          "parse call");
    or1_code_tests_free(&t);
    CHECK(parse_text("{\"inputs\": [[1, [2]]], \"outputs\": [3], \"fn_name\": \"f\"}", &t) == 0 &&
              strcmp(t.inputs[0], "1\n[2]\n") == 0 && strcmp(t.outputs[0], "3") == 0,
          "parse call with TACO-style argument lists");
    or1_code_tests_free(&t);
    CHECK(parse_text("{\"assert_case\": [\"assert 1\", \"assert 2\"]}", &t) == 0 && t.kind == OR1_TESTS_ASSERT &&
              t.n == 2 && strstr(t.prefix, "from typing import *"),
          "parse assert_case");
    or1_code_tests_free(&t);
    CHECK(parse_text("{\"import_prefix\": \"import os\\n\", \"test_code\": \"def check(c):\\n\\n    assert c(1)\\n    "
                     "assert c(2)\\n\", \"entry_point\": \"f\"}",
                     &t) == 0 &&
              t.kind == OR1_TESTS_CHECK && t.n == 2 && strcmp(t.asserts[1], "def check(c):    assert c(2)") == 0 &&
              strcmp(t.suffix, "\ncheck(f)") == 0,
          "parse import_prefix (line 0 and line i joined as Skywork-OR1 does)");
    or1_code_tests_free(&t);
    CHECK(parse_text("\"{\\\"inputs\\\": [\\\"1\\\"], \\\"outputs\\\": [\\\"1\\\"]}\"", &t) == 0 && t.n == 1,
          "parse tests encoded as a JSON string");
    or1_code_tests_free(&t);
    CHECK(parse_text("{\"inputs\": [\"1\"], \"outputs\": [\"1\"], \"abs_tol\": 0.5, \"checker\": \"pass\"}", &t) == 0 &&
              t.abs_tol == 0.5 && t.checker,
          "parse extras");
    or1_code_tests_free(&t);
    static const char *const bad[] = {
        "[]",
        "{}",
        "{\"inputs\": [\"1\"]}",
        "{\"inputs\": [\"1\"], \"outputs\": []}",
        "{\"inputs\": [], \"outputs\": []}",
        "{\"inputs\": [1], \"outputs\": [\"1\"]}",
        "{\"inputs\": \"1\", \"outputs\": \"1\"}",
        "{\"inputs\": [\"1\"], \"outputs\": [\"1\"], \"fn_name\": \"\"}",
        "{\"inputs\": [\"1\"], \"outputs\": [\"1\"], \"fn_name\": 3}",
        "{\"inputs\": [\"1\"], \"outputs\": [\"1\"], \"fn_name\": \"a\\nb\"}",
        "{\"assert_case\": []}",
        "{\"assert_case\": [1]}",
        "{\"import_prefix\": \"\", \"test_code\": \"def check(c):\\n\", \"entry_point\": \"f\"}",
        "{\"import_prefix\": \"\", \"test_code\": \"a\\nb\"}",
        "{\"inputs\": [\"1\"], \"outputs\": [\"1\"], \"abs_tol\": -1}",
        "{\"inputs\": [\"1\"], \"outputs\": [\"1\"], \"rel_tol\": \"x\"}",
        "{\"assert_case\": [\"assert 1\"], \"checker\": \"pass\"}",
        "\"not json\"",
        "\"[1, 2]\"",
        "3",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = parse_text(bad[i], &t);
        CHECK(rc == -1 && strncmp(or1_error(), "case", 4) == 0, "malformed tests rejected with a located message: %s",
              bad[i]);
    }
}

/* Direct sandbox runs: spec checks, the result channel, the output cap. */
static void test_sandbox(void) {
    or1_sandbox_result r;
    const char *rel[] = {"python3", NULL};
    or1_sandbox_spec s = {.argv = rel, .limits = or1_sandbox_limits_defaults()};
    CHECK(or1_sandbox_run(&s, &r) == -1, "relative argv[0] refused");
    const char *py[] = {"/usr/bin/python3", "-c", "import os; os.write(3, b'hi'); print(open('in').read())", NULL};
    or1_sandbox_file bad_name = {.name = "../x", .data = "", .len = 0};
    s = (or1_sandbox_spec){.argv = py, .files = &bad_name, .n_files = 1,
                           .limits = or1_sandbox_limits_defaults()};
    CHECK(or1_sandbox_run(&s, &r) == -1, "file name with a slash refused");
    or1_sandbox_file in = {.name = "in", .data = "payload", .len = 7};
    s = (or1_sandbox_spec){.argv = py, .files = &in, .n_files = 1, .limits = or1_sandbox_limits_defaults()};
    CHECK(or1_sandbox_run(&s, &r) == 0 && r.status == OR1_RUN_EXITED && r.exit_code == 0 &&
              strcmp(r.out, "payload\n") == 0 && strcmp(r.chan, "hi") == 0,
          "a run sees its files and writes its channel");
    or1_sandbox_result_free(&r);
    const char *flood[] = {"/usr/bin/python3", "-c", "print('x' * 100000)", NULL};
    s = (or1_sandbox_spec){.argv = flood, .limits = or1_sandbox_limits_defaults()};
    s.limits.output_bytes = 1000;
    CHECK(or1_sandbox_run(&s, &r) == 0 && r.status == OR1_RUN_OUTPUT_LIMIT && r.out_len == 1000, "output capped");
    or1_sandbox_result_free(&r);
}

/* One thread's share of the pool test: n jobs, half correct. */
typedef struct {
    or1_sandbox_pool *pool;
    const or1_code_tests *tests;
    int rc, right;
} pool_arg;

/* Submits a batch and counts the verdicts that match the labels. */
static void *pool_thread(void *p) {
    pool_arg *a = p;
    enum { N = 12 };
    or1_code_job jobs[N];
    or1_code_result res[N];
    for (int i = 0; i < N; i++)
        jobs[i] = (or1_code_job){.response = i % 2 ? "```python\nprint(int(input()) + 1)\n```" : "```python\nprint(0)\n```",
                                 .tests = a->tests, .time_limit_s = 2.0, .memory_bytes = 0,
                                 .all_tests = false};
    a->rc = or1_sandbox_pool_run(a->pool, jobs, res, N);
    for (int i = 0; i < N; i++) {
        a->right += res[i].correct == (i % 2 == 1);
        or1_code_result_free(&res[i]);
    }
    return NULL;
}

/* Open descriptors of this process: a sandbox run must not leak any. */
static int open_fds(void) {
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d) return -1;
    while (readdir(d)) n++;
    closedir(d);
    return n;
}

/* Two threads share one pool; every job gets its own verdict. */
static void test_pool(void) {
    int fds_before = open_fds();
    or1_code_tests t;
    CHECK(parse_text("{\"inputs\": [\"1\\n\", \"41\\n\"], \"outputs\": [\"2\\n\", \"42\\n\"]}", &t) == 0, "pool tests");
    or1_sandbox_pool *pool = or1_sandbox_pool_new(0);
    CHECK(pool && or1_sandbox_pool_workers(pool) >= 1, "pool starts one worker per core");
    if (!pool) return;
    pool_arg a = {pool, &t, 0, 0}, b = a;
    pthread_t ta, tb;
    pthread_create(&ta, NULL, pool_thread, &a);
    pthread_create(&tb, NULL, pool_thread, &b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    CHECK(a.rc == 0 && b.rc == 0 && a.right == 12 && b.right == 12, "two threads share a pool");
    or1_code_result res;
    or1_code_job none = {.response = "no code", .tests = &t, .time_limit_s = 1.0, .memory_bytes = 0,
                         .all_tests = false};
    CHECK(or1_sandbox_pool_run(pool, &none, &res, 1) == 0 && res.verdict == OR1_CODE_NO_CODE && res.total == 2 &&
              res.per_test[0] == OR1_CODE_NOT_RUN,
          "no code is a verdict of its own");
    or1_code_result_free(&res);
    CHECK(or1_sandbox_pool_run(pool, NULL, NULL, 0) == 0, "empty batch");
    or1_sandbox_pool_free(pool);
    or1_code_tests_free(&t);
    CHECK(open_fds() == fds_before, "no descriptor leaked by the pool's jobs");
}

int main(void) {
    test_extract();
    test_stdout();
    test_json();
    test_parse();
    test_sandbox();
    test_pool();
    printf("isolation: %s\n", or1_isolation_name(or1_sandbox_isolation()));
    return check_report();
}
