/* or1 tool executor: runs the Python code a model writes during a rollout (tool-integrated
 * reasoning) in the code sandbox, asynchronously. The rollout engine submits a call and keeps
 * decoding; worker threads run each call in its own or1_sandbox_run process tree; the engine
 * collects finished calls when it likes, without blocking (or1_tool_poll) or blocking
 * (or1_tool_wait), and resumes each sample with its call's text.
 * Every function here is thread-safe. */
#ifndef OR1_TOOL_H
#define OR1_TOOL_H

#include <stddef.h>
#include <stdint.h>

/* Limits of every call of one executor. */
typedef struct {
    double cpu_s;            /* CPU seconds of the call's main process */
    double wall_s;           /* wall-clock seconds of the call */
    size_t memory_bytes;     /* address space per process, and the call's memory cgroup */
    size_t max_output_bytes; /* the text is cut to this many bytes, then a marker line follows */
} or1_tool_limits;

/* Defaults: 5 s CPU, 10 s wall, 1 GiB, 4 KiB of text. */
or1_tool_limits or1_tool_limits_defaults(void);

/* How a call ended, most specific first. */
typedef enum {
    OR1_TOOL_OK,             /* ran to its end, text complete */
    OR1_TOOL_ERROR,          /* raised, exited non-zero or died of a signal */
    OR1_TOOL_TIMEOUT,        /* ran past its CPU or wall-clock limit */
    OR1_TOOL_MEMORY,         /* ran out of memory (MemoryError or the memory cgroup) */
    OR1_TOOL_TRUNCATED,      /* otherwise ok, but its output was cut to max_output_bytes */
    OR1_TOOL_SANDBOX_FAILED, /* the sandbox could not run it; the text says why */
} or1_tool_status;

/* The status's name ("ok", "error", "timeout", "memory", "truncated", "sandbox_failed"). */
const char *or1_tool_status_name(or1_tool_status s);

/* One finished call. */
typedef struct {
    uint64_t tag;           /* as submitted */
    or1_tool_status status;
    char *text;             /* what the model sees: stdout, then stderr (an exception's
                             * traceback), then a marker or error line; NUL-terminated, valid UTF-8
                             * where the program's output was */
    size_t text_len;
    double wall_s;          /* seconds the sandbox ran */
} or1_tool_result;

void or1_tool_result_free(or1_tool_result *r);

typedef struct or1_tool_exec or1_tool_exec;

/* Starts `workers` worker threads (<= 0: one per online core) with the limits every call gets
 * (NULL: the defaults). NULL with an error on failure. */
or1_tool_exec *or1_tool_exec_new(int workers, const or1_tool_limits *lim);
/* Queues one call (the code is copied) and returns at once: 0, or -1 after or1_tool_exec_free
 * began. Calls start in submission order; tags need not be unique. */
int or1_tool_submit(or1_tool_exec *x, uint64_t tag, const char *code);
/* Moves up to max finished calls into out, oldest first, without blocking; returns how many. */
int or1_tool_poll(or1_tool_exec *x, or1_tool_result *out, int max);
/* As or1_tool_poll, but first blocks until a call has finished or timeout_s has passed (< 0:
 * no limit); returns 0 at once when no call is queued, running or finished. */
int or1_tool_wait(or1_tool_exec *x, or1_tool_result *out, int max, double timeout_s);
/* Calls submitted and not yet collected (queued, running or finished). */
size_t or1_tool_pending(or1_tool_exec *x);
/* Kills the running calls, drops the queued and uncollected ones, joins the workers and frees
 * everything: afterwards no thread, process, cgroup or directory of the executor remains. */
void or1_tool_exec_free(or1_tool_exec *x);

#endif
