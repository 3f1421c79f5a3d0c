"""What the demo tests share: the command line (OR1 REPO_ROOT SCRATCH), running or1, and
recording failed checks so that one run reports them all."""
import json
import os
import shutil
import subprocess
import sys

OR1, ROOT, SCRATCH = sys.argv[1], sys.argv[2], sys.argv[3]
failures = []


def check(ok, what):
    """Records a failed check."""
    if not ok:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def run(*args, ok=True, stdin=None):
    """Runs or1; returns the completed process (exits when a run meant to succeed fails)."""
    p = subprocess.run([OR1, *args], input=stdin, capture_output=True, text=True)
    if ok and p.returncode != 0:
        sys.exit(f"or1 {' '.join(args[:3])} failed: {p.stderr}")
    return p


def or1(*args, stdin=None):
    """Runs an or1 command that must succeed; returns its stdout JSON lines."""
    return [json.loads(line) for line in run(*args, stdin=stdin).stdout.split("\n") if line]


def fresh_scratch():
    """Empties the scratch folder."""
    shutil.rmtree(SCRATCH, ignore_errors=True)
    os.makedirs(SCRATCH)


def finish(name):
    """Exits non-zero when any check failed."""
    if failures:
        sys.exit(f"{len(failures)} checks failed")
    print(f"{name}: all checks passed")
