"""Code sandbox throughput: `or1 verify-code` against an unsandboxed reference on the same work.

usage: code_bench.py OR1 DATA_DIR [ROUNDS]
Two workloads: the labelled real rows of tests/or1test/code_cases.py (a correct and a wrong
solution for each of five problems, one with 138 tests) repeated ROUNDS times, and 100 trivial
one-test programs (the fixed cost of a run). The reference does what Skywork-OR1's harness does
at its core, without isolation: one `python3` subprocess per test, stdin in, stdout compared
line by line after strip (call-based: the result printed as JSON), stopping at the first
failure, in a process pool with as many workers as or1 has. Both must agree on every verdict.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

from or1test.code_cases import CASES

PYTHON = "/usr/bin/python3"  # the interpreter the sandbox runs
PRELUDE = "import sys, json, math, collections, itertools, functools, heapq, bisect\nfrom typing import *\n"
CALL = ("\nimport json as _j, sys as _s\n_a = [_j.loads(l) for l in _s.stdin.read().split('\\n') if l.strip()]\n"
        "_o = Solution() if 'Solution' in globals() else None\n"
        "_f = getattr(_o, {fn!r}) if _o else globals()[{fn!r}]\n_r = _f(*_a)\n"
        "print(_j.dumps(list(_r) if isinstance(_r, tuple) else _r))\n")


def lines(s):
    return [x.strip() for x in s.strip().split("\n")]


def reference_one(row):
    """Grades one row the unisolated way; returns True if every test passes."""
    found = re.findall(r"```python\n(.*?)```", row["response"].split("</think>")[-1], re.DOTALL)
    if not found:
        return False
    tests = json.loads(row["tests"]) if isinstance(row["tests"], str) else row["tests"]
    code = PRELUDE + found[-1]
    if tests.get("fn_name"):
        code += CALL.format(fn=tests["fn_name"])
    for inp, out in zip(tests["inputs"], tests["outputs"]):
        try:
            p = subprocess.run([PYTHON, "-c", code], input=inp.encode(), capture_output=True,
                               timeout=row["time_limit_s"])
        except subprocess.TimeoutExpired:
            return False
        got = p.stdout.decode(errors="replace")
        if p.returncode != 0:
            return False
        if tests.get("fn_name"):
            if json.loads(got) != json.loads(out):
                return False
        elif lines(got) != lines(out):
            return False
    return True


def real_rows(data, rounds):
    """The labelled real rows, `rounds` times."""
    files, rows = {}, []
    for _ in range(rounds):
        for name, index, code, _, _ in CASES:
            if name not in files:
                with open(os.path.join(data, name)) as f:
                    files[name] = [json.loads(line) for line in f]
            rows.append({"response": "</think>\n```python" + code + "```",
                         "tests": files[name][index]["reward_model"]["ground_truth"], "time_limit_s": 6})
    return rows


def trivial_rows(n):
    """One-test programs that do almost nothing: the fixed cost of a run."""
    return [{"response": "```python\nprint(int(input()) + 1)\n```",
             "tests": {"inputs": [f"{i}\n"], "outputs": [f"{i + 1}\n"]}, "time_limit_s": 6} for i in range(n)]


def main():
    or1, data = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    bad = compare("real rows", or1, real_rows(data, rounds))
    bad += compare("trivial programs", or1, trivial_rows(100))
    return 1 if bad else 0


def compare(label, or1, rows):
    """Times or1 and the reference on the same rows; returns the number of disagreements."""
    workers = os.cpu_count()
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
        path = f.name
    try:
        t0 = time.perf_counter()
        p = subprocess.run([or1, "verify-code", "--input", path, "--workers", str(workers)],
                           capture_output=True, check=True)
        ours_s = time.perf_counter() - t0
    finally:
        os.unlink(path)
    ours = [json.loads(line) for line in p.stdout.decode().splitlines()]
    runs = sum(r["passed"] + (0 if r["correct"] else 1) for r in ours)
    t0 = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        ref = list(pool.map(reference_one, rows))
    ref_s = time.perf_counter() - t0
    disagree = sum(o["correct"] != r for o, r in zip(ours, ref))
    print(f"code, {label}: {len(rows)} verifications ({runs} program runs), {workers} workers; "
          + p.stderr.decode().strip())
    print(f"  or1 verify-code (isolated)             {ours_s:7.2f} s {len(rows) / ours_s:7.1f} verifications/s "
          f"{runs / ours_s:7.1f} runs/s")
    print(f"  reference (subprocess, no isolation)   {ref_s:7.2f} s {len(rows) / ref_s:7.1f} verifications/s "
          f"{runs / ref_s:7.1f} runs/s")
    print(f"  or1 / reference throughput = {ref_s / ours_s:.2f}x; verdicts that disagree: {disagree}")
    return disagree


if __name__ == "__main__":
    sys.exit(main())
