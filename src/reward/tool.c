/* The tool executor: worker threads run queued Python tool calls, each in its own sandbox
 * (or1_sandbox_run, the code verifier's interpreter and isolation), and keep the finished ones
 * until the caller collects them. A pipe the sandboxes watch cancels every running call at once. */
#include "or1/core.h"
#include "or1/reward_tool.h"
#include "sandbox_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The exit status by which the wrapper reports a MemoryError (it then frees nothing first). */
#define MEMORY_EXIT 86
#define STR_(x) #x
#define STR(x) STR_(x)

/* Runs cell.py as a notebook cell: the last expression's value is printed if not None, and an
 * uncaught exception prints its traceback's last frames, from the cell's first frame on (the
 * wrapper's own are left out), with the cell's source lines; sys.exit with a failure status
 * says so, as a notebook does. */
static const char wrapper_py[] =
    "import ast, linecache, os, sys, traceback\n"
    "src = open('cell.py', encoding='utf-8', errors='replace').read()\n"
    "linecache.cache['<cell>'] = (len(src), None, src.splitlines(True), '<cell>')\n"
    "ns = {'__name__': '__main__', '__builtins__': __builtins__}\n"
    "def run():\n"
    "    tree = ast.parse(src, '<cell>')\n"
    "    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None\n"
    "    exec(compile(tree, '<cell>', 'exec'), ns)\n"
    "    if last is not None:\n"
    "        value = eval(compile(ast.Expression(last.value), '<cell>', 'eval'), ns)\n"
    "        if value is not None:\n"
    "            print(repr(value))\n"
    "try:\n"
    "    run()\n"
    "except MemoryError:\n"
    "    os._exit(" STR(MEMORY_EXIT) ")\n"
    "except SystemExit as e:\n"
    "    if e.code is not None and e.code != 0:\n"
    "        sys.stderr.write('SystemExit: %s\\n' % (e.code,))\n"
    "    sys.exit(e.code if e.code is None or isinstance(e.code, int) else 1)\n"
    "except BaseException as e:\n"
    "    tb = e.__traceback__\n"
    "    while tb is not None and tb.tb_frame.f_code.co_filename != '<cell>':\n"
    "        tb = tb.tb_next\n"
    "    traceback.print_exception(type(e), e, tb, limit=-5)\n"
    "    sys.exit(1)\n";

/* A call: queued with its code, then finished with its result. */
typedef struct node {
    or1_tool_result r;
    char *code;
    struct node *link;
} node;

/* A first-in first-out list of nodes. */
typedef struct {
    node *head, *tail;
} fifo;

struct or1_tool_exec {
    pthread_mutex_t lock;
    pthread_cond_t work;     /* a call was queued, or the executor is stopping */
    pthread_cond_t finished; /* a call finished */
    fifo queue, done;
    size_t outstanding;      /* submitted and not yet collected */
    bool stopping;
    int cancel[2];           /* written once by free: every running sandbox watches cancel[0] */
    or1_tool_limits lim;
    int n_workers;
    pthread_t *threads;
};

/* Defaults for short computations in a reasoning trace. */
or1_tool_limits or1_tool_limits_defaults(void) {
    return (or1_tool_limits){.cpu_s = 5.0, .wall_s = 10.0, .memory_bytes = (size_t)1 << 30,
                             .max_output_bytes = 4096};
}

/* See reward_tool.h. */
const char *or1_tool_status_name(or1_tool_status s) {
    static const char *const names[] = {"ok", "error", "timeout", "memory", "truncated", "sandbox_failed"};
    return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "?";
}

/* Frees a result's text. */
void or1_tool_result_free(or1_tool_result *r) {
    free(r->text);
    memset(r, 0, sizeof *r);
}

/* Appends n to the list's tail. */
static void fifo_push(fifo *f, node *n) {
    n->link = NULL;
    if (f->tail) f->tail->link = n;
    else f->head = n;
    f->tail = n;
}

/* Removes and returns the list's head, or NULL. */
static node *fifo_pop(fifo *f) {
    node *n = f->head;
    if (!n) return NULL;
    f->head = n->link;
    if (!f->head) f->tail = NULL;
    return n;
}

/* Appends a formatted line, first ending the text's last line if it is open. */
static void text_line(or1_text *t, const char *fmt, ...) OR1_PRINTF(2, 3);
static void text_line(or1_text *t, const char *fmt, ...) {
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (t->len > 0 && t->s[t->len - 1] != '\n') or1_text_add(t, "\n", 1);
    or1_text_add(t, line, n < 0 ? 0 : (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    or1_text_add(t, "\n", 1);
}

/* The longest prefix of s no longer than max that does not split a UTF-8 character. */
static size_t utf8_cut(const char *s, size_t len, size_t max) {
    if (len <= max) return len;
    size_t k = max;
    while (k > 0 && ((unsigned char)s[k] & 0xC0) == 0x80) k--;
    return k;
}

/* Where the last `keep` bytes of s begin, moved forward to a line's start when the tail holds
 * one, else to a UTF-8 character's. */
static size_t tail_start(const char *s, size_t len, size_t keep) {
    size_t i = len - keep;
    if (i == 0 || s[i - 1] == '\n') return i;
    const char *nl = memchr(s + i, '\n', len - i);
    if (nl && nl + 1 < s + len) return (size_t)(nl + 1 - s);
    while (i < len && ((unsigned char)s[i] & 0xC0) == 0x80) i++;
    return i;
}

/* The smaller of two sizes. */
static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

/* Stdout's head and stderr's tail within max bytes with the marker between them: each side gets
 * what it needs up to half of max and what the other leaves, so a traceback's last lines stay. */
static void add_cut(or1_text *t, const or1_sandbox_result *r, size_t max) {
    size_t err_keep = min_size(r->err_len, max - min_size(r->out_len, max / 2));
    size_t out_keep = min_size(r->out_len, max - err_keep);
    or1_text_add(t, r->out, utf8_cut(r->out, r->out_len, out_keep));
    if (r->status == OR1_RUN_OUTPUT_LIMIT)
        text_line(t, "... [output truncated: more than %zu bytes; the code was stopped]", r->out_len + r->err_len);
    else
        text_line(t, "... [output truncated: %zu bytes in all]", r->out_len + r->err_len);
    size_t from = tail_start(r->err, r->err_len, err_keep);
    or1_text_add(t, r->err + from, r->err_len - from);
}

/* How a run ended, as the model's tool sees it; `cut`: the text was truncated. */
static or1_tool_status call_status(const or1_sandbox_result *r, bool cut) {
    switch (r->status) {
    case OR1_RUN_CPU_LIMIT:
    case OR1_RUN_WALL_LIMIT: return OR1_TOOL_TIMEOUT;
    case OR1_RUN_MEMORY_LIMIT: return OR1_TOOL_MEMORY;
    case OR1_RUN_OUTPUT_LIMIT: return OR1_TOOL_TRUNCATED;
    case OR1_RUN_EXITED:
        if (r->exit_code == MEMORY_EXIT) return OR1_TOOL_MEMORY;
        if (r->exit_code != 0) return OR1_TOOL_ERROR;
        return cut ? OR1_TOOL_TRUNCATED : OR1_TOOL_OK;
    case OR1_RUN_SIGNALED:
    case OR1_RUN_STOPPED: return OR1_TOOL_ERROR;
    }
    return OR1_TOOL_ERROR;
}

/* The model's text: stdout then stderr, cut to the limit with a marker, then a line naming the
 * limit that ended the run, if one did. */
static void call_text(const or1_sandbox_result *r, const or1_tool_limits *lim, or1_tool_result *res) {
    or1_text t = {0};
    bool cut = r->out_len + r->err_len > lim->max_output_bytes || r->status == OR1_RUN_OUTPUT_LIMIT;
    if (cut) {
        add_cut(&t, r, lim->max_output_bytes);
    } else {
        or1_text_add(&t, r->out, r->out_len);
        or1_text_add(&t, r->err, r->err_len);
    }
    res->status = call_status(r, cut);
    if (r->status == OR1_RUN_CPU_LIMIT)
        text_line(&t, "TimeoutError: the code ran past its %g s CPU time limit", lim->cpu_s);
    else if (r->status == OR1_RUN_WALL_LIMIT)
        text_line(&t, "TimeoutError: the code ran past its %g s limit", lim->wall_s);
    else if (res->status == OR1_TOOL_MEMORY)
        text_line(&t, "MemoryError: the code ran out of its %zu MiB memory limit", lim->memory_bytes >> 20);
    else if (r->status == OR1_RUN_SIGNALED)
        text_line(&t, "Error: the code was killed by signal %d", r->signal);
    res->text = t.s;
    res->text_len = t.len;
}

/* Runs one call in the sandbox and fills its result (never fails: a sandbox failure is a
 * result with status sandbox_failed and the error as its text). */
static void run_call(const or1_tool_exec *x, const char *code, or1_tool_result *res) {
    or1_sandbox_file file = {.name = "cell.py", .data = code, .len = strlen(code)};
    const char *argv[] = {or1_sandbox_python, "-s", "-B", "-u", "-c", wrapper_py, NULL};
    or1_sandbox_limits lim = or1_sandbox_limits_defaults();
    lim.cpu_s = x->lim.cpu_s;
    lim.wall_s = x->lim.wall_s;
    lim.memory_bytes = x->lim.memory_bytes;
    /* Output past the cut is only counted, up to 1 MiB more; beyond that the run is stopped. */
    lim.output_bytes = x->lim.max_output_bytes + ((size_t)1 << 20);
    or1_sandbox_spec spec = {.argv = argv, .files = &file, .n_files = 1, .limits = lim,
                             .cancel_fd = x->cancel[0]};
    or1_sandbox_result r;
    if (or1_sandbox_run(&spec, &r) != 0) {
        or1_text t = {0};
        text_line(&t, "SandboxError: the code could not be run: %s", or1_error());
        res->status = OR1_TOOL_SANDBOX_FAILED;
        res->text = t.s;
        res->text_len = t.len;
        return;
    }
    call_text(&r, &x->lim, res);
    res->wall_s = r.wall_s;
    or1_sandbox_result_free(&r);
}

/* Worker loop: run queued calls until the executor stops; a call finished while stopping is
 * dropped. */
static void *worker(void *arg) {
    or1_tool_exec *x = arg;
    pthread_mutex_lock(&x->lock);
    for (;;) {
        while (!x->queue.head && !x->stopping) pthread_cond_wait(&x->work, &x->lock);
        if (x->stopping) break;
        node *n = fifo_pop(&x->queue);
        pthread_mutex_unlock(&x->lock);
        run_call(x, n->code, &n->r);
        free(n->code);
        n->code = NULL;
        pthread_mutex_lock(&x->lock);
        fifo_push(&x->done, n);
        pthread_cond_broadcast(&x->finished);
    }
    pthread_mutex_unlock(&x->lock);
    return NULL;
}

/* Checks limits against what the sandbox accepts, so a bad one fails here, not every call. */
static int check_limits(const or1_tool_limits *l) {
    if (!(l->cpu_s > 0 && l->cpu_s <= 3600) || !(l->wall_s > 0 && l->wall_s <= 7200) ||
        l->memory_bytes < ((size_t)16 << 20) || l->max_output_bytes < 1)
        return or1_fail("tool: limits out of range (cpu %g s, wall %g s, memory %zu B, output %zu B)", l->cpu_s,
                        l->wall_s, l->memory_bytes, l->max_output_bytes);
    return 0;
}

/* See reward_tool.h. */
or1_tool_exec *or1_tool_exec_new(int workers, const or1_tool_limits *lim) {
    or1_tool_limits l = lim ? *lim : or1_tool_limits_defaults();
    if (check_limits(&l) != 0) return NULL;
    if (workers <= 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        workers = cores > 0 ? (int)cores : 1;
    }
    if (workers > OR1_CGROUP_SLOTS) { /* one run uid and cgroup slot per concurrent run */
        or1_fail("tool: %d workers is too many", workers);
        return NULL;
    }
    or1_tool_exec *x = or1_calloc(1, sizeof *x);
    if (pipe2(x->cancel, O_CLOEXEC) != 0) {
        or1_fail("tool: pipe: %s", strerror(errno));
        free(x);
        return NULL;
    }
    x->lim = l;
    pthread_mutex_init(&x->lock, NULL);
    pthread_cond_init(&x->work, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&x->finished, &ca);
    pthread_condattr_destroy(&ca);
    x->threads = or1_calloc((size_t)workers, sizeof *x->threads);
    for (int i = 0; i < workers; i++) {
        if (pthread_create(&x->threads[i], NULL, worker, x) != 0) {
            or1_fail("tool: cannot start worker %d", i);
            or1_tool_exec_free(x);
            return NULL;
        }
        x->n_workers = i + 1;
    }
    return x;
}

/* See reward_tool.h. */
int or1_tool_submit(or1_tool_exec *x, uint64_t tag, const char *code) {
    node *n = or1_calloc(1, sizeof *n);
    n->r.tag = tag;
    n->code = or1_strdup(code);
    pthread_mutex_lock(&x->lock);
    bool stopping = x->stopping;
    if (!stopping) {
        fifo_push(&x->queue, n);
        x->outstanding++;
        pthread_cond_signal(&x->work);
    }
    pthread_mutex_unlock(&x->lock);
    if (!stopping) return 0;
    free(n->code);
    free(n);
    return or1_fail("tool: the executor is shutting down");
}

/* Moves up to max finished calls into out; the lock is held. */
static int collect(or1_tool_exec *x, or1_tool_result *out, int max) {
    int k = 0;
    node *n;
    while (k < max && (n = fifo_pop(&x->done))) {
        out[k++] = n->r;
        free(n);
    }
    x->outstanding -= (size_t)k;
    return k;
}

/* See reward_tool.h. */
int or1_tool_poll(or1_tool_exec *x, or1_tool_result *out, int max) {
    pthread_mutex_lock(&x->lock);
    int k = collect(x, out, max);
    pthread_mutex_unlock(&x->lock);
    return k;
}

/* See reward_tool.h. */
int or1_tool_wait(or1_tool_exec *x, or1_tool_result *out, int max, double timeout_s) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    double end = (double)until.tv_sec + 1e-9 * (double)until.tv_nsec + (timeout_s > 0 ? timeout_s : 0);
    until.tv_sec = (time_t)end;
    until.tv_nsec = (long)((end - (double)until.tv_sec) * 1e9);
    pthread_mutex_lock(&x->lock);
    int rc = 0;
    while (!x->done.head && x->outstanding > 0 && rc != ETIMEDOUT)
        rc = timeout_s < 0 ? pthread_cond_wait(&x->finished, &x->lock)
                           : pthread_cond_timedwait(&x->finished, &x->lock, &until);
    int k = collect(x, out, max);
    pthread_mutex_unlock(&x->lock);
    return k;
}

/* See reward_tool.h. */
size_t or1_tool_pending(or1_tool_exec *x) {
    pthread_mutex_lock(&x->lock);
    size_t n = x->outstanding;
    pthread_mutex_unlock(&x->lock);
    return n;
}

/* Frees every node of a list. */
static void fifo_free(fifo *f) {
    node *n;
    while ((n = fifo_pop(f))) {
        free(n->code);
        or1_tool_result_free(&n->r);
        free(n);
    }
}

/* See reward_tool.h. Each running sandbox sees the cancel pipe readable, kills its process tree
 * and cleans up as after any run; the workers then find the executor stopping. */
void or1_tool_exec_free(or1_tool_exec *x) {
    if (!x) return;
    pthread_mutex_lock(&x->lock);
    x->stopping = true;
    if (write(x->cancel[1], "x", 1) < 0) {}
    pthread_cond_broadcast(&x->work);
    pthread_mutex_unlock(&x->lock);
    for (int i = 0; i < x->n_workers; i++) pthread_join(x->threads[i], NULL);
    fifo_free(&x->queue);
    fifo_free(&x->done);
    close(x->cancel[0]);
    close(x->cancel[1]);
    pthread_cond_destroy(&x->work);
    pthread_cond_destroy(&x->finished);
    pthread_mutex_destroy(&x->lock);
    free(x->threads);
    free(x);
}
