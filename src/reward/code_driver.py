# or1 code harness. The sandbox runs this (python3 -c) around one untrusted solution.
#
#   batch KIND SOLUTION N CPU WALL CAP [FN_NAME]   N tests; test i's data is the file in_<i>:
#     stdin   the program runs as __main__ with in_<i> on stdin
#     call    Solution().FN_NAME(*args) (or a top-level FN_NAME), one JSON argument per line
#     script  prefix.py + SOLUTION + "\n" + in_<i> runs as __main__ (assert-style tests)
#
# The harness compiles the solution and imports once (LiveCodeBench's prelude for stdin and
# call; the prefix's own imports for script), then forks one child per test, so Python's
# start-up is paid once per response; each child gets CPU seconds CPU, wall seconds WALL and
# CAP bytes of stdout. This process never runs untrusted code; the children cannot reach fd 3.
#
# Records on fd 3: "S" a syntax error (nothing else follows); per test "T i status code cpu_ms
# out_len res_len\n" + stdout + result, where status is exit|signal|cpu|wall|output and the
# result is "R<json>" (a call's value), "U" (a value JSON cannot carry), "M" (MemoryError),
# "A" (an assertion failed), "P" (a script ran to its end) or empty. Grading happens in C,
# against expected values this process never sees.
import builtins
import json
import math
import os
import resource
import select
import signal
import sys
import traceback

# What LiveCodeBench's harness puts in scope before a stdin or call-based solution.
PRELUDE = """
import string, re, datetime, collections, heapq, bisect, copy, math, random, statistics
import itertools, functools, operator, io, sys, json
from string import *
from re import *
from datetime import *
from collections import *
from heapq import *
from bisect import *
from copy import *
from math import *
from random import *
from statistics import *
from itertools import *
from functools import *
from operator import *
from io import *
from sys import *
from json import *
from builtins import *
from typing import *
sys.setrecursionlimit(50000)
"""


def report(tag, data=b""):
    """Writes a whole record to the channel; a closed channel simply loses it."""
    buf = memoryview(tag + data)
    try:
        while buf:
            buf = buf[os.write(3, buf):]
    except OSError:
        pass


def load(path):
    """Reads a file and compiles it, reporting a syntax error as its own verdict."""
    with open(path, "rb") as f:
        src = f.read()
    try:
        return compile(src, path, "exec")
    except (SyntaxError, ValueError):
        report(b"S")
        sys.exit(0)


def call(scope, fn_name, args):
    """Calls the solution's method (or function) the way LeetCode does."""
    if "Solution" in scope:
        fn = getattr(scope["Solution"](), fn_name)
    else:
        fn = scope[fn_name]
    return fn(*args)


def child(i, kind, code, scope, fn_name, res_w, out_fd, cpu, cap):
    """Runs test i in this forked child and exits; never returns into the driver's loop."""
    status = 1
    try:
        os.close(3)
        if kind != "script":
            fd = os.open("in_%d" % i, os.O_RDONLY)
            os.dup2(fd, 0)
            os.close(fd)
        os.dup2(out_fd, 1)
        os.close(out_fd)
        limit = max(1, math.ceil(cpu))
        resource.setrlimit(resource.RLIMIT_CPU, (limit, limit + 1))
        resource.setrlimit(resource.RLIMIT_FSIZE, (cap, cap))
        if kind == "script":
            prefix, source = code
            with open("in_%d" % i, "rb") as f:
                program = compile(prefix + source + b"\n" + f.read(), "program.py", "exec")
            exec(program, {"__name__": "__main__", "__builtins__": builtins})
            os.write(res_w, b"P")
        elif kind == "stdin":
            scope["__name__"] = "__main__"
            exec(code, scope)
        else:
            args = [json.loads(line) for line in sys.stdin.read().split("\n") if line.strip()]
            scope["__name__"] = "__solution__"
            exec(code, scope)
            result = call(scope, fn_name, args)
            if isinstance(result, tuple):
                result = list(result)
            try:
                text = b"R" + json.dumps(result).encode()
            except (TypeError, ValueError):
                text = b"U"
            os.write(res_w, text)
        status = 0
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            status = e.code or 0
        else:
            sys.stderr.write(str(e.code) + "\n")
    except MemoryError:
        try:
            os.write(res_w, b"M")
        except OSError:
            pass
    except AssertionError:
        traceback.print_exc()
        os.write(res_w, b"A")
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
        except BaseException:
            status = status or 1
        os._exit(status & 0xFF)


def read_all(fd):
    """Everything a pipe holds now (non-blocking: an orphan may keep its write end open)."""
    os.set_blocking(fd, False)
    chunks = []
    try:
        while True:
            b = os.read(fd, 1 << 16)
            if not b:
                break
            chunks.append(b)
    except BlockingIOError:
        pass
    return b"".join(chunks)


def clean_up():
    """Kills what a test left behind (pid 1 of a namespace only), reaps every zombie and removes
    the files it wrote, so that each test starts from the same state."""
    for name in os.listdir("."):
        if name not in ("solution.py", "prefix.py") and not name.startswith("in_"):
            try:
                if os.path.isdir(name) and not os.path.islink(name):
                    import shutil

                    shutil.rmtree(name, ignore_errors=True)
                else:
                    os.remove(name)
            except OSError:
                pass
    if os.getpid() == 1:
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def run_test(i, kind, code, scope, fn_name, cpu, wall, cap):
    """Forks test i, waits for it within the wall clock and sends its record."""
    res_r, res_w = os.pipe()
    out_fd = os.open("out", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.close(res_r)
        child(i, kind, code, scope, fn_name, res_w, out_fd, cpu, cap)
    os.close(res_w)
    os.close(out_fd)
    pidfd = os.pidfd_open(pid)
    ready, _, _ = select.select([pidfd], [], [], wall)
    timed_out = not ready
    if timed_out:
        os.kill(pid, signal.SIGKILL)
    _, st, ru = os.wait4(pid, 0)
    os.close(pidfd)
    res = read_all(res_r)
    os.close(res_r)
    with open("out", "rb") as f:
        out = f.read(cap)
    clean_up()
    used = ru.ru_utime + ru.ru_stime
    if timed_out:
        status, code_ = "wall", 0
    elif os.WIFSIGNALED(st):
        sig = os.WTERMSIG(st)
        status, code_ = ("cpu" if sig in (signal.SIGXCPU, signal.SIGKILL) and used >= cpu * 0.5 else "signal"), sig
    else:
        status, code_ = "exit", os.WEXITSTATUS(st)
        if used >= cpu:
            status = "cpu"
        elif len(out) >= cap and code_ != 0:
            status = "output"
    head = "T %d %s %d %d %d %d\n" % (i, status, code_, int(used * 1000), len(out), len(res))
    report(head.encode(), out + res)


def batch(kind, path, n, cpu, wall, cap, fn_name):
    """Compiles and imports once, then runs every test in its own child."""
    code = load(path)
    scope = {"__builtins__": builtins}
    if kind == "script":
        with open(path, "rb") as f:
            source = f.read()
        with open("prefix.py", "rb") as f:
            prefix = f.read()
        # Run the prefix once here so that its imports are cached for every child.
        try:
            exec(compile(prefix, "prefix.py", "exec"), {"__builtins__": builtins})
        except BaseException:
            pass
        code = (prefix, source)
    else:
        exec(PRELUDE, scope)
    for i in range(n):
        run_test(i, kind, code, scope, fn_name, cpu, wall, cap)


def main():
    kind, path, n = sys.argv[2], sys.argv[3], int(sys.argv[4])
    cpu, wall, cap = float(sys.argv[5]), float(sys.argv[6]), int(sys.argv[7])
    batch(kind, path, n, cpu, wall, cap, sys.argv[8] if len(sys.argv) > 8 else None)


main()
