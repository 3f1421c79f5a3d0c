# or1 code harness. The sandbox runs this (python3 -c) around one untrusted solution, once per test.
#
#   stdin  solution.py           run the program as __main__; the test's input is on stdin
#   call   solution.py FN_NAME   stdin holds one JSON argument per line; Solution().FN_NAME(*args)
#                                (or a top-level FN_NAME) is called and its result sent as JSON
#   script solution.py prog.py   prog.py (prefix + solution + test statement) runs as __main__
#
# Results go to fd 3, one letter then data: S syntax error, M out of memory, R<json> a call's
# result, U a result JSON cannot carry, P the script ran to its end. Grading happens outside,
# in C, against expected values this process never sees.
import builtins
import os
import sys

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
    """Writes one result record to the channel; a closed channel simply loses it."""
    try:
        os.write(3, tag + data)
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


def run(code, name, prelude):
    """Executes compiled code in a fresh namespace; memory exhaustion is reported as such."""
    scope = {"__name__": name, "__builtins__": builtins}
    try:
        if prelude:
            exec(PRELUDE, scope)
        exec(code, scope)
    except MemoryError:
        report(b"M")
        raise
    return scope


def call(scope, fn_name, args):
    """Calls the solution's method (or function) the way LeetCode does."""
    if "Solution" in scope:
        fn = getattr(scope["Solution"](), fn_name)
    else:
        fn = scope[fn_name]
    try:
        return fn(*args)
    except MemoryError:
        report(b"M")
        raise


def main():
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "stdin":
        run(load(path), "__main__", True)
    elif mode == "call":
        import json

        args = [json.loads(line) for line in sys.stdin.read().split("\n") if line.strip()]
        result = call(run(load(path), "__solution__", True), sys.argv[3], args)
        if isinstance(result, tuple):
            result = list(result)
        try:
            text = json.dumps(result)
        except (TypeError, ValueError):
            report(b"U")
            return
        report(b"R", text.encode())
    elif mode == "script":
        load(path)
        with open(sys.argv[3], "rb") as f:
            prog = compile(f.read(), sys.argv[3], "exec")
        run(prog, "__main__", False)
        report(b"P")
    sys.stdout.flush()


main()
