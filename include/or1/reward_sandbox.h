/* or1 code sandbox: runs untrusted Python programs under kernel-enforced limits and grades
 * them against the test shapes of Skywork-OR1-RL-Data.
 *
 * Layers, bottom up:
 *   or1_sandbox_run      one program in one isolated process tree (namespaces, rlimits, seccomp)
 *   or1_code_verify      one response against its tests (code extraction, harness, comparison)
 *   or1_sandbox_pool     many responses in parallel from a queue, one worker per core by default
 * Every function here is thread-safe. */
#ifndef OR1_SANDBOX_H
#define OR1_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cJSON cJSON;

/* ---- one isolated run ---------------------------------------------------------------- */

/* Kernel-enforced limits of one run. */
typedef struct {
    double cpu_s;        /* CPU seconds of the main process (RLIMIT_CPU, checked exactly after) */
    double wall_s;       /* wall-clock seconds for the whole process tree */
    size_t memory_bytes; /* address space per process (RLIMIT_AS), and the tree's memory cgroup */
    int max_procs;       /* processes and threads of the run (RLIMIT_NPROC, and the pids cgroup) */
    size_t file_bytes;   /* largest file the program may write (RLIMIT_FSIZE), also bounds its disk */
    int max_files;       /* open file descriptors (RLIMIT_NOFILE) */
    size_t output_bytes; /* stdout beyond this ends the run with an output-limit status */
} or1_sandbox_limits;

/* Defaults: 6 s CPU, 10 s wall, 1 GiB, 64 processes, 16 MiB files, 64 fds, 16 MiB output. */
or1_sandbox_limits or1_sandbox_limits_defaults(void);

/* A file placed in the run's private directory before the program starts. */
typedef struct {
    const char *name; /* plain name, no '/' */
    const char *data;
    size_t len;
} or1_sandbox_file;

typedef struct {
    const char *const *argv;      /* argv[0] is an absolute path; NULL-terminated */
    const or1_sandbox_file *files;
    size_t n_files;
    const char *stdin_file;       /* name of one of files to use as stdin, or NULL for empty */
    or1_sandbox_limits limits;
    /* Optional: receives fd 3's bytes as they arrive (they are then not kept in the result);
     * returning nonzero ends the run at once with status OR1_RUN_STOPPED. */
    int (*on_chan)(void *ctx, const char *data, size_t len);
    void *on_chan_ctx;
    /* Optional (0 = none): a descriptor that, once readable, ends the run at once with status
     * OR1_RUN_STOPPED; one pipe can cancel every run that watches it. */
    int cancel_fd;
} or1_sandbox_spec;

/* How a run ended, most specific first. */
typedef enum {
    OR1_RUN_EXITED,       /* exited by itself; see exit_code */
    OR1_RUN_SIGNALED,     /* killed by a signal of its own making; see signal */
    OR1_RUN_CPU_LIMIT,
    OR1_RUN_WALL_LIMIT,
    OR1_RUN_OUTPUT_LIMIT,
    OR1_RUN_MEMORY_LIMIT, /* the tree's memory cgroup ran out (the OOM killer acted) */
    OR1_RUN_STOPPED,      /* ended because on_chan asked or cancel_fd became readable */
} or1_run_status;

typedef struct {
    or1_run_status status;
    int exit_code;
    int signal;
    char *out;      /* stdout (at most limits.output_bytes), NUL-terminated */
    size_t out_len;
    char *err;      /* the last few KiB of stderr, NUL-terminated */
    size_t err_len;
    char *chan;     /* what the program wrote to fd 3 (the harness's result channel), capped */
    size_t chan_len;
    double cpu_s, wall_s;
} or1_sandbox_result;

/* The isolation this host permits, probed once: namespaces need root or user namespaces. */
typedef enum {
    OR1_ISOLATION_ROOT,      /* root: new mount/pid/net/ipc/uts namespaces, a fresh uid per run */
    OR1_ISOLATION_USERNS,    /* unprivileged user namespace with the same namespaces */
    OR1_ISOLATION_RLIMITS,   /* no namespaces: rlimits, seccomp and a private directory only */
} or1_isolation;

or1_isolation or1_sandbox_isolation(void);
const char *or1_isolation_name(or1_isolation iso);

/* Runs spec->argv in a fresh isolated process tree. Returns 0 with *res filled (free it with
 * or1_sandbox_result_free) however the program ended, or -1 if the sandbox itself failed. */
int or1_sandbox_run(const or1_sandbox_spec *spec, or1_sandbox_result *res);
void or1_sandbox_result_free(or1_sandbox_result *res);

/* ---- grading one response ------------------------------------------------------------ */

typedef enum {
    OR1_CODE_ACCEPTED,
    OR1_CODE_WRONG_ANSWER,
    OR1_CODE_TIME_LIMIT,
    OR1_CODE_MEMORY_LIMIT,
    OR1_CODE_RUNTIME_ERROR,
    OR1_CODE_OUTPUT_LIMIT,
    OR1_CODE_NO_CODE,
    OR1_CODE_SYNTAX_ERROR,
    OR1_CODE_NOT_RUN, /* per-test only: skipped after an earlier failure */
} or1_code_verdict;

/* The verdict's name as the CLI writes it ("accepted", "wrong_answer", ...). */
const char *or1_code_verdict_name(or1_code_verdict v);

typedef enum {
    OR1_TESTS_STDIO,  /* inputs/outputs on stdin/stdout */
    OR1_TESTS_CALL,   /* inputs/outputs as JSON arguments of Solution().fn_name */
    OR1_TESTS_ASSERT, /* assert_case: one assert statement per test */
    OR1_TESTS_CHECK,  /* import_prefix + test_code + entry_point */
} or1_tests_kind;

/* Parsed tests of one problem (immutable once parsed; share freely between threads). */
typedef struct {
    or1_tests_kind kind;
    size_t n;
    char **inputs;   /* STDIO: stdin text; CALL: newline-separated JSON arguments */
    char **outputs;  /* STDIO: expected stdout; CALL: expected JSON value */
    char **asserts;  /* ASSERT and CHECK: the statement(s) each test appends */
    char *fn_name;   /* CALL */
    char *prefix;    /* code placed before the solution (ASSERT: fixed imports; CHECK: import_prefix) */
    char *suffix;    /* CHECK: "check(<entry_point>)" */
    double abs_tol, rel_tol; /* numeric tolerance for output tokens; 0 = exact (as LiveCodeBench) */
    char *checker;   /* optional Python checker: argv input output expected, exit 0 = accept */
} or1_code_tests;

/* Parses one of the four test shapes from a JSON object, or from a JSON string holding one (as
 * in the datasets' ground_truth). Errors name `where`. */
int or1_code_tests_parse(const cJSON *j, or1_code_tests *t, const char *where);
void or1_code_tests_free(or1_code_tests *t);

/* The last ```python fenced block after the first </think> (whole response if none), as a new
 * string; NULL when there is none. */
char *or1_code_extract(const char *response);

typedef struct {
    const char *response;
    const or1_code_tests *tests;
    double time_limit_s;  /* per test, CPU seconds; <= 0 means 6 (Skywork-OR1's) */
    size_t memory_bytes;  /* 0 means the default */
    bool all_tests;       /* run every test instead of stopping at the first failure */
} or1_code_job;

typedef struct {
    or1_code_verdict verdict; /* accepted, or the first failing test's verdict */
    bool correct;             /* reward: every test passed */
    bool sandbox_failed;      /* the sandbox itself failed: the verdict says nothing of the program */
    int passed, total;
    or1_code_verdict *per_test; /* total entries */
    double wall_s;
} or1_code_result;

/* Grades one response. Returns 0 with *res filled (free with or1_code_result_free), or -1 if the
 * sandbox failed (never because of what the program did). */
int or1_code_verify(const or1_code_job *job, or1_code_result *res);
void or1_code_result_free(or1_code_result *res);

/* Comparison rules, exposed for tests. LiveCodeBench's stdout rule: whole output stripped, split
 * on '\n', each line stripped, equal line counts, each line equal as a string or else as a list of
 * decimals (within tolerance when abs_tol or rel_tol > 0). */
bool or1_code_stdout_equal(const char *got, const char *want, double abs_tol, double rel_tol);
/* Call-based rule: Python's == on the JSON values (1 == 1.0 == true), with tolerance on numbers. */
bool or1_code_json_equal(const char *got, const char *want, double abs_tol, double rel_tol);

/* ---- the pool ---------------------------------------------------------------------- */

typedef struct or1_sandbox_pool or1_sandbox_pool;

/* Starts `workers` worker threads (<= 0: one per online core). NULL with an error on failure. */
or1_sandbox_pool *or1_sandbox_pool_new(int workers);
int or1_sandbox_pool_workers(const or1_sandbox_pool *p);
/* Queues n jobs and blocks until all are graded; results[i] belongs to jobs[i]. Several threads
 * may call this at once on one pool. Returns 0, or -1 if any job's sandbox failed (those results
 * carry verdict runtime_error and the error names the first such job). */
int or1_sandbox_pool_run(or1_sandbox_pool *p, const or1_code_job *jobs, or1_code_result *results,
                         size_t n);
/* Stops the workers after the queue drains and frees the pool. */
void or1_sandbox_pool_free(or1_sandbox_pool *p);

#endif
