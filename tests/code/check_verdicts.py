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
import time

HARNESS_MARK = b"or1 code harness"
CANARIES = ["/tmp/or1-escape-canary", "/usr/or1-escape-canary"]


def leftover_processes():
    """Processes still running the harness (they would have escaped the sandbox's cleanup)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if HARNESS_MARK in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


def main():
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
    proc = subprocess.run([or1, "verify-code", "--input", rows_path, "--all-tests"],
                          capture_output=True, env=env, timeout=600)
    sys.stderr.write(proc.stderr.decode(errors="replace"))
    if proc.returncode != 0:
        print(f"FAIL: or1 exited with {proc.returncode}")
        return 1
    results = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    bad = 0
    if len(results) != len(rows):
        print(f"FAIL: {len(rows)} rows in, {len(results)} results out")
        return 1
    for row, res in zip(rows, results):
        want = row.get("expect_" + mode, row["expect"]) if mode else row["expect"]
        want = want if isinstance(want, list) else [want]
        ok = res["verdict"] in want and res["correct"] == (res["verdict"] == "accepted")
        if "passed" in row and res["passed"] != row["passed"]:
            ok = False
        print(f"{'ok  ' if ok else 'FAIL'} {row['name']}: {res['verdict']} (want {'|'.join(want)}), "
              f"{res['passed']}/{res['total']}, {res['seconds']:.2f} s")
        bad += not ok
    left = leftover_processes()
    for _ in range(30):  # killed process trees take a moment to disappear
        if not left:
            break
        time.sleep(0.1)
        left = leftover_processes()
    if left:
        print(f"FAIL: sandboxed processes left running: {left}")
        bad += 1
    for c in CANARIES:
        if os.path.exists(c):
            print(f"FAIL: a program wrote {c}")
            bad += 1
    if os.listdir(tmp):
        print(f"FAIL: private directories left behind: {os.listdir(tmp)}")
        bad += 1
    os.rmdir(tmp) if not os.listdir(tmp) else None
    print(f"{len(rows)}/{len(rows)} rows as expected" if not bad else f"{bad} failures")
    return 1 if bad else 0


sys.exit(main())
