"""The README's quick start, run as written: the lines of
its sh block run one by one in a scratch folder that holds only what a clone has (configs/,
models/, scripts/, data/ and the built or1 as build/or1, and no data folder beside it); each must
succeed, training must raise the held-out avg@8 by 15 points, the eval must print its report,
and the plots must be written. Usage: test_quickstart.py OR1 REPO_ROOT SCRATCH"""
import json
import os
import re
import shlex
import subprocess
import sys

from or1test.check import check, finish
from or1test.files import fresh


def quickstart_lines(readme):
    """The commands of the first sh block under "## Quick start", comments removed."""
    text = open(readme).read()
    section = text[text.index("## Quick start"):]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


def main(or1, root, scratch):
    """Runs each line in a clone-like folder and checks what it made."""
    work = os.path.join(fresh(scratch), "clone")
    os.makedirs(os.path.join(work, "build"))
    for d in ("configs", "models", "scripts", "data"):
        os.symlink(os.path.join(root, d), os.path.join(work, d))
    os.symlink(or1, os.path.join(work, "build", "or1"))
    outputs = []
    for line in quickstart_lines(os.path.join(root, "README.md")):
        r = subprocess.run(shlex.split(line), cwd=work, capture_output=True, text=True, timeout=1500)
        if not check(r.returncode == 0, f"`{line}` exited {r.returncode}: {r.stderr[-2000:]}"):
            return
        outputs.append((line, r.stdout))
    run = os.path.join(work, "runs", "quickstart", "run")
    rows = [json.loads(x) for x in open(os.path.join(run, "metrics.jsonl"))]
    evals = {x["step"]: x["report"]["overall"]["avg@8"] for x in rows if x.get("type") == "eval"}
    check(sorted(evals) == [0, 15, 30], f"validation steps {sorted(evals)}")
    if evals.get(30) is not None and evals.get(0) is not None:
        check(evals[30] > evals[0] + 0.15, f"held-out avg@8 {evals[0]:.3f} -> {evals[30]:.3f}: not 15 points up")
    report = json.loads(next(out for line, out in outputs if " eval " in f" {line} "))
    check(report["overall"]["problems"] == 100, f"eval report {report['overall']}")
    for name in ("accuracy", "reward", "entropy"):
        check(os.path.isfile(os.path.join(run, "plots", f"{name}.png")), f"plot {name}.png missing")


if __name__ == "__main__":
    main(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), sys.argv[3])
    finish("quickstart")
