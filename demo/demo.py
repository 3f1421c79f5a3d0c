"""The built-in demo (`make run`): the MAGIC recipe visibly improves a small reasoning model.

Writes arithmetic rows with `or1 gen-arith`, measures the shipped base model's avg@8 on held-out
rows with `or1 eval`, trains it with `or1 train --config demo/demo.yaml` (two stages of growing
context length), measures avg@8 again, and writes a report to <runs>/<name>/report/: PNG plots of
accuracy, reward, entropy against its target, alpha, response length and truncated ratio over
steps, and summary.md. Extra `--set key=value` arguments go to `or1 train` (ablations)."""
import argparse
import json
import os
import subprocess
import sys
import time

from eval_arith import habits  # demo/ is this script's folder

EVAL_N, EVAL_T, EVAL_LEN = 8, 1.0, 160


def sh(cmd, capture=False):
    """Runs a command (stderr to the terminal, so progress shows); stops the demo on failure."""
    r = subprocess.run(cmd, stdout=subprocess.PIPE if capture else None, text=True)
    if r.returncode != 0:
        sys.exit(f"demo: {' '.join(cmd[:3])} ... failed (exit {r.returncode})")
    return r.stdout


def avg_at_8(or1, model, rows, out):
    """avg@8 at temperature 1 on the held-out rows, from `or1 eval`."""
    rep = json.loads(sh([or1, "eval", "--model", model, "--data", rows, "--n", str(EVAL_N), "--temperature",
                         str(EVAL_T), "--max-new-tokens", str(EVAL_LEN), "--seed", "7", "--dump", out], True))
    return rep["overall"][f"avg@{EVAL_N}"]


def read_metrics(path):
    """Training rows and validation rows of metrics.jsonl."""
    steps, evals = [], []
    with open(path) as f:
        for line in f:
            row = json.loads(line)
            (evals if row.get("type") == "eval" else steps).append(row)
    return steps, evals


def dumped_habits(path):
    """habits() of the samples `or1 eval --dump` wrote."""
    return habits([json.loads(line) for line in open(path)])


def summary(path, name, before, after, steps, seconds, extra):
    """summary.md: the before/after figures and what the run did."""
    ent = [r["entropy_sampled"] for r in steps if not r["skipped"]]
    report = os.path.dirname(path)
    (g0, w0), (g1, w1) = dumped_habits(f"{report}/base_samples.jsonl"), dumped_habits(f"{report}/trained_samples.jsonl")
    with open(path, "w") as f:
        f.write(f"# or1 demo: {name}\n\n")
        f.write(f"- held-out avg@{EVAL_N} at T={EVAL_T}: base {before:.3f} -> trained {after:.3f} "
                f"({100 * (after - before):+.1f} points)\n")
        f.write(f"- held-out samples that answer without working: base {100 * g0:.1f}% -> trained {100 * g1:.1f}%; "
                f"those that work it out are right {100 * w0:.1f}% -> {100 * w1:.1f}%\n")
        kept = sum(r["kept_groups"] for r in steps) / max(len(steps), 1)
        f.write(f"- steps: {len(steps)} ({sum(r['skipped'] for r in steps)} skipped), {seconds:.0f} s in all; "
                f"groups kept after rejection: {kept:.1f} per step on average\n")
        if ent:
            tgt, late = steps[0]["entropy_target"], ent[10:] or ent
            f.write(f"- sampled-token entropy: first {ent[0]:.3f}, min {min(ent):.3f}, last {ent[-1]:.3f} "
                    f"(target {tgt}); after step 10 mean {sum(late) / len(late):.3f}, below the target on "
                    f"{sum(e < tgt for e in late)} of {len(late)} steps\n")
        f.write(f"- overrides: {' '.join(extra) if extra else 'none'}\n")
        f.write("- plots (scripts/plot_run.py): accuracy.png reward.png entropy.png alpha.png length.png "
                "truncated.png kept.png grad_norm.png mismatch.png\n")


def arguments(name, config):
    """The flags both demos take (this one and demo/tools.py), with their run name and config."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--or1", default="build/or1")
    ap.add_argument("--name", default=name)
    ap.add_argument("--config", default=config)
    ap.add_argument("--base", default="models/arith-base")
    ap.add_argument("--runs", default="runs", help="folder that gets <name>/")
    ap.add_argument("--held-out", type=int, default=100, help="held-out problems for avg@8")
    ap.add_argument("--set", action="append", default=[])
    return ap


def task_rows(a, run):
    """The run's folder with its report folder, 20,000 training rows and the held-out rows."""
    os.makedirs(f"{run}/report", exist_ok=True)
    sh([a.or1, "gen-arith", "--n", "20000", "--seed", "11", "--split", "train", "--out", f"{run}/train.jsonl"])
    sh([a.or1, "gen-arith", "--n", str(a.held_out), "--seed", "12", "--split", "test", "--out", f"{run}/test.jsonl"])


def main():
    a = arguments("demo", "demo/demo.yaml").parse_args()
    t0, run = time.time(), os.path.join(a.runs, a.name)
    task_rows(a, run)
    print(f"demo: evaluating the base model (avg@{EVAL_N} on {a.held_out} held-out problems)", file=sys.stderr)
    before = avg_at_8(a.or1, a.base, f"{run}/test.jsonl", f"{run}/report/base_samples.jsonl")
    print(f"demo: base avg@{EVAL_N} = {before:.3f}; training", file=sys.stderr)
    sets = [f"model.path={a.base}", f"output.dir={run}", f"data.train.0.path={run}/train.jsonl",
            f"eval.files=[{run}/test.jsonl]"] + a.set
    sh([a.or1, "train", "--config", a.config, "--overwrite"] + [x for s in sets for x in ("--set", s)])
    after = avg_at_8(a.or1, f"{run}/checkpoints/latest", f"{run}/test.jsonl", f"{run}/report/trained_samples.jsonl")
    steps, evals = read_metrics(f"{run}/metrics.jsonl")
    sh([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "plot_run.py"), run,
        "--out", f"{run}/report"])
    summary(f"{run}/report/summary.md", a.name, before, after, steps, time.time() - t0, a.set)
    print(open(f"{run}/report/summary.md").read())


if __name__ == "__main__":
    main()
