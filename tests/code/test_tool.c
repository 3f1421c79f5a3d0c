/* The tool executor (reward_tool.h) on real sandboxes: an ordinary call's exact text, a raise's
 * traceback, a last expression shown, sys.exit's status, long output cut with its marker (a
 * traceback's tail kept), and hostile calls (a fork
 * bomb, a memory bomb, an endless loop, a network connection) each contained with its status,
 * while calls submitted after them finish first on two workers; free cancels a running call at
 * once and leaves no child process or thread. Usage: test_tool ok | broken-sandbox (run with
 * OR1_SANDBOX_ISOLATION=rlimits and a TMPDIR that does not exist: every call is sandbox_failed). */
#include "or1/core.h"
#include "or1/reward_tool.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"

enum { N_CALLS = 10, MAX_OUT = 1000 };

/* The calls, in submission order: the endless loop first, so that one worker is held by it. */
static const char *const CODE[N_CALLS] = {
    "while True:\n    pass\n",
    /* children sleep; the parent forks until the process limit refuses */
    "import os, time\nn = 0\nwhile True:\n    if os.fork() == 0:\n        time.sleep(60)\n        os._exit(0)\n"
    "    n += 1\n",
    "l = []\nwhile True:\n    l.append(bytearray(1 << 20))\n",
    "import socket\ns = socket.create_connection(('1.1.1.1', 53), timeout=3)\nprint('connected')\n",
    "print(2**100)\n",
    "def f(x):\n    return 1 / x\n\nf(0)\n",
    "for i in range(1000):\n    print('\xc3\xa9' * 10)\n",
    "x = 6\nx * 7\n",
    "print('x' * 5000)\nraise ValueError('late')\n",
    "import sys\nprint('hi')\nsys.exit(3)\n",
};
enum { LOOP, FORK_BOMB, MEMORY_BOMB, NETWORK, ORDINARY, RAISES, LONG, EXPRESSION, LONG_RAISES, EXITS };

/* Processes whose parent is this one (scanning /proc). */
static int children(void) {
    DIR *d = opendir("/proc");
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char path[300], buf[512];
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        size_t len = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[len] = '\0';
        const char *close_paren = strrchr(buf, ')');
        int ppid = 0;
        if (close_paren && sscanf(close_paren + 1, " %*c %d", &ppid) == 1 && ppid == (int)getpid()) n++;
    }
    closedir(d);
    return n;
}

/* Threads of this process (/proc/self/status). */
static int threads(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    int n = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Threads: %d", &n) == 1) break;
    if (f) fclose(f);
    return n;
}

/* True if s[0..n) is valid UTF-8 (structure only). */
static bool valid_utf8(const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (k == 0 || i + k > n) return false;
        for (size_t j = 1; j < k; j++)
            if (((unsigned char)s[i + j] & 0xC0) != 0x80) return false;
        i += k;
    }
    return true;
}

/* Bytes of the text outside its marker line (marker points at the newline before "... ["). */
static size_t kept_bytes(const or1_tool_result *r, const char *marker) {
    const char *end = strchr(marker + 1, '\n');
    return r->text_len - (size_t)(end + 1 - marker);
}

/* The status and text every call must end with. */
static void check_call(int tag, const or1_tool_result *r) {
    const char *t = r->text;
    CHECK(r->text && strlen(t) == r->text_len, "call %d: text length %zu", tag, r->text_len);
    switch (tag) {
    case LOOP:
        CHECK(r->status == OR1_TOOL_TIMEOUT && strstr(t, "TimeoutError: the code ran past its "),
              "endless loop: %s, text '%s'", or1_tool_status_name(r->status), t);
        break;
    case FORK_BOMB:
        CHECK(r->status == OR1_TOOL_ERROR && strstr(t, "BlockingIOError"), "fork bomb: %s, text '%s'",
              or1_tool_status_name(r->status), t);
        break;
    case MEMORY_BOMB:
        CHECK(r->status == OR1_TOOL_MEMORY && strstr(t, "MemoryError: the code ran out of its 256 MiB"),
              "memory bomb: %s, text '%s'", or1_tool_status_name(r->status), t);
        break;
    case NETWORK:
        CHECK(r->status == OR1_TOOL_ERROR && strstr(t, "Error") && !strstr(t, "connected"),
              "network: %s, text '%s'", or1_tool_status_name(r->status), t);
        break;
    case ORDINARY:
        CHECK(r->status == OR1_TOOL_OK && strcmp(t, "1267650600228229401496703205376\n") == 0,
              "print(2**100): %s, text '%s'", or1_tool_status_name(r->status), t);
        break;
    case RAISES:
        CHECK(r->status == OR1_TOOL_ERROR && strstr(t, "    return 1 / x\n") &&
                  strstr(t, "\nZeroDivisionError: division by zero\n") && !strstr(t, "<string>"),
              "raises: %s, text '%s'", or1_tool_status_name(r->status), t);
        break;
    case LONG: {
        const char *marker = strstr(t, "\n... [output truncated: 21000 bytes in all]\n");
        CHECK(r->status == OR1_TOOL_TRUNCATED && marker && kept_bytes(r, marker) == (size_t)(marker - t) &&
                  kept_bytes(r, marker) <= MAX_OUT && kept_bytes(r, marker) > MAX_OUT - 4 &&
                  valid_utf8(t, (size_t)(marker - t)),
              "long output: %s, %zu bytes, text ends '%s'", or1_tool_status_name(r->status), r->text_len,
              r->text_len > 80 ? t + r->text_len - 80 : t);
        break;
    }
    case EXPRESSION:
        CHECK(r->status == OR1_TOOL_OK && strcmp(t, "42\n") == 0, "last expression: %s, text '%s'",
              or1_tool_status_name(r->status), t);
        break;
    case LONG_RAISES: {
        /* the cut keeps stdout's head and the traceback's tail */
        const char *marker = strstr(t, "\n... [output truncated: 5");
        CHECK(r->status == OR1_TOOL_ERROR && marker && strncmp(t, "xxxx", 4) == 0 &&
                  kept_bytes(r, marker) <= MAX_OUT && kept_bytes(r, marker) > MAX_OUT - 4 &&
                  strstr(t, "\nValueError: late\n"),
              "long output, then a raise: %s, %zu bytes, text '%s'", or1_tool_status_name(r->status), r->text_len,
              marker ? marker : t);
        break;
    }
    case EXITS:
        CHECK(r->status == OR1_TOOL_ERROR && strcmp(t, "hi\nSystemExit: 3\n") == 0, "sys.exit(3): %s, text '%s'",
              or1_tool_status_name(r->status), t);
        break;
    default: CHECK(false, "unknown tag %d", tag);
    }
    CHECK(r->wall_s > 0 && r->wall_s < 20, "call %d: %g s", tag, r->wall_s);
}

/* Every call through two workers: statuses, texts, and everything after the loop finishing first. */
static void test_calls(void) {
    or1_tool_limits lim = {.cpu_s = 3, .wall_s = 6, .memory_bytes = (size_t)256 << 20, .max_output_bytes = MAX_OUT};
    or1_tool_exec *x = or1_tool_exec_new(2, &lim);
    if (!CHECK(x != NULL, "executor: %s", or1_error())) return;
    or1_tool_result out[N_CALLS];
    CHECK(or1_tool_poll(x, out, N_CALLS) == 0 && or1_tool_wait(x, out, N_CALLS, -1) == 0,
          "nothing submitted: poll and wait return 0 at once");
    double t0 = or1_now();
    for (int i = 0; i < N_CALLS; i++) CHECK(or1_tool_submit(x, (uint64_t)i, CODE[i]) == 0, "submit %d", i);
    CHECK(or1_tool_pending(x) == N_CALLS, "pending %zu", or1_tool_pending(x));
    int order[N_CALLS], got = 0;
    double at[N_CALLS];
    while (got < N_CALLS) {
        int k = or1_tool_wait(x, out, N_CALLS, 30.0);
        if (!CHECK(k > 0, "wait timed out with %d of %d calls", got, N_CALLS)) break;
        for (int j = 0; j < k; j++) {
            int tag = (int)out[j].tag;
            order[got++] = tag;
            at[tag] = or1_now() - t0;
            check_call(tag, &out[j]);
            or1_tool_result_free(&out[j]);
        }
    }
    CHECK(or1_tool_pending(x) == 0, "pending after all collected: %zu", or1_tool_pending(x));
    if (got == N_CALLS) {
        CHECK(order[N_CALLS - 1] == LOOP, "the endless loop finished last (last was %d)", order[N_CALLS - 1]);
        printf("collected after %.2f s (print(2**100)) and %.2f s (the loop); all in %.2f s\n", at[ORDINARY], at[LOOP],
               or1_now() - t0);
    }
    or1_tool_exec_free(x);
    CHECK(children() == 0 && threads() == 1, "after free: %d children, %d threads", children(), threads());
}

/* Free while a call runs and another waits: the running sandbox is killed at once. */
static void test_cancel(void) {
    or1_tool_exec *x = or1_tool_exec_new(1, NULL);
    if (!CHECK(x != NULL, "executor: %s", or1_error())) return;
    or1_tool_submit(x, 1, "import time\ntime.sleep(60)\n");
    or1_tool_submit(x, 2, "print(1)\n");
    usleep(500 * 1000);
    CHECK(children() == 1, "a sandbox runs: %d children", children());
    double t0 = or1_now();
    or1_tool_exec_free(x);
    double took = or1_now() - t0;
    CHECK(took < 2.0, "free cancelled the running call in %.2f s", took);
    CHECK(children() == 0 && threads() == 1, "after free: %d children, %d threads", children(), threads());
}

/* Limits the sandbox would refuse fail at creation, with a message. */
static void test_bad_limits(void) {
    or1_tool_limits lim = or1_tool_limits_defaults();
    lim.memory_bytes = 1000;
    CHECK(or1_tool_exec_new(1, &lim) == NULL && strstr(or1_error(), "limits out of range"), "bad limits: '%s'",
          or1_error());
}

/* The sandbox cannot start: the call is flagged and its text says why. */
static void test_broken_sandbox(void) {
    or1_tool_exec *x = or1_tool_exec_new(1, NULL);
    if (!CHECK(x != NULL, "executor: %s", or1_error())) return;
    or1_tool_submit(x, 7, "print(1)\n");
    or1_tool_result r;
    int k = or1_tool_wait(x, &r, 1, 30.0);
    if (CHECK(k == 1, "wait returned %d", k)) {
        CHECK(r.tag == 7 && r.status == OR1_TOOL_SANDBOX_FAILED && strncmp(r.text, "SandboxError: ", 14) == 0,
              "tag %llu, %s, text '%s'", (unsigned long long)r.tag, or1_tool_status_name(r.status), r.text);
        or1_tool_result_free(&r);
    }
    or1_tool_exec_free(x);
}

int main(int argc, char **argv) {
    if (argc != 2 || (strcmp(argv[1], "ok") && strcmp(argv[1], "broken-sandbox"))) {
        fprintf(stderr, "usage: test_tool ok | broken-sandbox\n");
        return 2;
    }
    if (strcmp(argv[1], "ok") == 0) {
        test_bad_limits();
        test_calls();
        test_cancel();
    } else {
        test_broken_sandbox();
    }
    return check_report();
}
