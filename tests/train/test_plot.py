#!/usr/bin/env python3
"""Plots of any run: scripts/plot_run.py RUN_DIR turns a
run's metrics.jsonl (here two steps with validation) into labelled PNGs; a folder that is not a
run, or a metrics file with a broken line, fails with a message naming it.

Usage: test_plot.py OR1 FIXTURE_DIR SCRATCH_DIR
"""
import os
import subprocess
import sys

from or1test import train as C
from or1test.check import check, finish
from or1test.files import fresh

OR1, FX, SCRATCH = sys.argv[1], sys.argv[2], fresh(sys.argv[3])
SFT, ROWS = os.path.join(FX, "sft"), os.path.join(FX, "rows.jsonl")
PLOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "plot_run.py")
WANT = ["accuracy", "reward", "entropy", "alpha", "length", "truncated", "kept", "grad_norm", "mismatch"]


def plot(*args):
    """Runs the plot script with Debian's Python (its matplotlib)."""
    return subprocess.run(["/usr/bin/python3", PLOT, *args], capture_output=True, text=True, timeout=300)


out = os.path.join(SCRATCH, "run")
cfg = C.base_config(SFT, ROWS, out, eval={"every": 1, "files": [ROWS], "n": 2, "temperatures": [0.6, 1.0]})
C.train(OR1, C.write_config(os.path.join(SCRATCH, "run.yaml"), cfg))
p = plot(out)
files = [os.path.join(out, "plots", f"{n}.png") for n in WANT]
check(p.returncode == 0 and p.stdout.split() == files, f"plot_run: rc {p.returncode}, {p.stdout!r} {p.stderr[-300:]!r}")
for f in files:
    check(os.path.isfile(f) and open(f, "rb").read(8) == b"\x89PNG\r\n\x1a\n" and os.path.getsize(f) > 5000,
          f"{f} is not a PNG")
p = plot(out, "--out", os.path.join(SCRATCH, "elsewhere"))
check(p.returncode == 0 and len(os.listdir(os.path.join(SCRATCH, "elsewhere"))) == len(WANT), "--out")
p = plot(SCRATCH)
check(p.returncode != 0 and "metrics.jsonl: no such file" in p.stderr, f"not a run: {p.stderr[-200:]!r}")
with open(os.path.join(out, "metrics.jsonl"), "a") as f:
    f.write('{"step": 3, "accu\n')
p = plot(out)
check(p.returncode != 0 and "metrics.jsonl:" in p.stderr and "not JSON" in p.stderr, f"broken line: {p.stderr[-200:]!r}")
finish("plot")
