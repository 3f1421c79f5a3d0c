"""A shortened run of the demo pipeline (demo/demo.py, what `make run` does): the loop runs end
to end from the shipped base model, writes metrics and the report, and training raises the
held-out avg@8 and the training reward over 30 steps. With OR1_DEMO_QUICK=1 (the sanitizer
pass, where 30 steps take 15 minutes) 4 steps run end to end and learning is left to the
optimised pass. Usage: test_demo_run.py OR1 REPO_ROOT SCRATCH"""
import json
import os
import subprocess
import sys

from or1test.check import check, finish
from or1test.files import fresh

PLOTS = ["accuracy", "reward", "entropy", "alpha", "length", "truncated"]


def main(or1, root, scratch, quick=False):
    """Runs the shortened demo into scratch and checks its report, metrics and (unless quick)
    learning."""
    fresh(scratch)
    half = 2 if quick else 15
    cmd = ["/usr/bin/python3", "demo/demo.py", "--or1", or1, "--runs", scratch, "--name", "short",
           "--set", f"stages.0.steps={half}", "--set", f"stages.1.steps={half}", "--set", f"eval.every={2 * half}",
           "--set", f"checkpoint.every={2 * half}"]
    if quick:  # a quarter of the prompts and 16 held-out problems: the path, not the learning
        cmd += ["--held-out", "16"] + [x for i in (0, 1) for x in ("--set", f"stages.{i}.prompts=8",
                                                                       "--set", f"stages.{i}.mini_batch=8")]
    r = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=1500)
    if r.returncode != 0:
        sys.exit(f"FAIL: demo exited {r.returncode}: {r.stderr[-3000:]}")
    run = os.path.join(scratch, "short")
    for name in PLOTS:
        path = os.path.join(run, "report", f"{name}.png")
        check(os.path.isfile(path) and open(path, "rb").read(8) == b"\x89PNG\r\n\x1a\n",
              f"missing or not a PNG: {path}")
    summary = open(os.path.join(run, "report", "summary.md")).read()
    check("held-out avg@8" in summary, "summary.md lacks the before/after line")
    rows = [json.loads(line) for line in open(os.path.join(run, "metrics.jsonl"))]
    steps = [x for x in rows if x.get("type") != "eval"]
    evals = {x["step"]: x["report"]["overall"]["avg@8"] for x in rows if x.get("type") == "eval"}
    n = 2 * half
    check([x["step"] for x in steps] == list(range(1, n + 1)), f"expected steps 1..{n}, got {[x['step'] for x in steps]}")
    check(any(not x["skipped"] for x in steps), "no step updated the model")
    if check(sorted(evals) == [0, n], f"expected validation at steps 0 and {n}, got {sorted(evals)}") and not quick:
        check(evals[n] > evals[0] + 0.15,
              f"held-out avg@8 did not rise by 15 points: step 0 {evals[0]:.4f}, step {n} {evals[n]:.4f}")
    reward = [x["reward_mean"] for x in steps]
    if not quick and len(reward) == n:
        first, last = sum(reward[:3]) / 3, sum(reward[-5:]) / 5
        check(last > first + 0.1, f"training reward did not rise: steps 1-3 {first:.3f}, steps 26-30 {last:.3f}")
    print(f"demo run: avg@8 {evals.get(0, float('nan')):.4f} -> {evals.get(n, float('nan')):.4f}")
    finish("demo_run")


if __name__ == "__main__":
    main(*sys.argv[1:4], quick=os.environ.get("OR1_DEMO_QUICK") == "1")
