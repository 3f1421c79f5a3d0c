"""Runs `or1 verify-code` on labelled rows and checks each verdict, then checks the host.

usage: check_verdicts.py OR1 ROWS.jsonl [MODE]
Each row carries "name", "expect" (a verdict or a list of acceptable ones), optionally
"expect_<MODE>" overriding it for one isolation mode and "passed" (tests passed, with
--all-tests). MODE (root | userns | rlimits) is passed on as OR1_SANDBOX_ISOLATION.
After the run: no sandboxed process may be left, no private directory, no file written
outside the sandbox.
"""
import json
import os
import subprocess
import sys
import tempfile

from or1test.check import check, finish
from or1test.sandbox import CANARIES, check_host_clean, expected

def main():
    """Verifies the rows in one or1 run under the given isolation mode, then checks the host."""
    or1, rows_path = sys.argv[1], sys.argv[2]
    mode = sys.argv[3] if len(sys.argv) > 3 else ""
    env = dict(os.environ)
    if mode:
        env["OR1_SANDBOX_ISOLATION"] = mode
    for c in CANARIES:
        if os.path.exists(c):
            os.remove(c)
    rows = [json.loads(line) for line in open(rows_path) if line.strip()]
    tmp = tempfile.mkdtemp()
    os.chmod(tmp, 0o711)  # a run's uid must be able to pass through to its own directory
    env["TMPDIR"] = tmp
    child = subprocess.Popen([or1, "verify-code", "--input", rows_path, "--all-tests"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out, err = child.communicate(timeout=600)
    proc = subprocess.CompletedProcess(child.args, child.returncode, out, err)
    sys.stderr.write(proc.stderr.decode(errors="replace"))
    if not check(proc.returncode == 0, f"or1 exited with {proc.returncode}"):
        finish("code_verdicts")
    results = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    if not check(len(results) == len(rows), f"{len(rows)} rows in, {len(results)} results out"):
        finish("code_verdicts")
    for row, res in zip(rows, results):
        want = expected(row, mode)
        ok = res["verdict"] in want and res["correct"] == (res["verdict"] == "accepted")
        if "passed" in row and res["passed"] != row["passed"]:
            ok = False
        line = (f"{row['name']}: {res['verdict']} (want {'|'.join(want)}), "
                f"{res['passed']}/{res['total']}, {res['seconds']:.2f} s")
        if check(ok, line):
            print(line)
    check_host_clean(child.pid, mode, tmp)
    finish("code_verdicts")


main()
