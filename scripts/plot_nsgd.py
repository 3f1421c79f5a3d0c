#!/usr/bin/env python3
"""Entropy and held-out accuracy of several training runs side by side (the N_SGD experiment,
scripts/nsgd_experiment.sh), in the style of scripts/plot_run.py.

usage: /usr/bin/python3 scripts/plot_nsgd.py --out PREFIX RUN_DIR...

Writes PREFIX.png (two panels over training steps: the sampled-token entropy the controller
reads, with its target, and validation avg@n; one line per run, labelled by its folder name;
runs whose name holds "minibatch" dashed) and PREFIX.csv (one line per metrics row of every run:
run, kind (train | eval), step, entropy_sampled, entropy_target, alpha, entropy_coef_next,
accuracy (training samples), heldout_avg (eval rows; the first temperature's avg@n)). Needs
Debian's python3-matplotlib.
"""
import argparse
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_run import read_metrics  # noqa: E402

FIELDS = ["run", "kind", "step", "entropy_sampled", "entropy_target", "alpha", "entropy_coef_next", "accuracy",
          "heldout_avg"]


def heldout(evals):
    """([steps], [avg@n]) of the first validation temperature of a run."""
    xs, ys, temp = [], [], None
    for e in evals:
        temp = e["temperature"] if temp is None else temp
        overall = e["report"]["overall"]
        key = next((k for k in overall if k.startswith("avg@")), None)
        if e["temperature"] == temp and key and overall[key] is not None:
            xs.append(e["step"])
            ys.append(overall[key])
    return xs, ys


def csv_rows(name, steps, evals):
    """The CSV lines of one run."""
    for r in steps:
        yield {"run": name, "kind": "train", "step": r["step"], "entropy_sampled": r["entropy_sampled"],
               "entropy_target": r["entropy_target"], "alpha": r["alpha"], "entropy_coef_next": r["entropy_coef_next"],
               "accuracy": r.get("accuracy", "")}
    for x, y in zip(*heldout(evals)):
        yield {"run": name, "kind": "eval", "step": x, "heldout_avg": y}


def plot(runs, path):
    """The two panels, one line per run."""
    fig, (ent, acc) = plt.subplots(1, 2, figsize=(12, 4.2))
    target = None
    for name, steps, evals in runs:
        style = "--" if "minibatch" in name else "-"
        rows = [r for r in steps if not r.get("skipped")]
        line, = ent.plot([r["step"] for r in rows], [r["entropy_sampled"] for r in rows], style, linewidth=1, label=name)
        xs, ys = heldout(evals)
        acc.plot(xs, ys, style, marker="s", markersize=3, color=line.get_color(), label=name)
        target = rows[0]["entropy_target"] if rows and target is None else target
    if target is not None:
        ent.axhline(target, color="red", linestyle=":", label=f"target {target:g}")
    ent.set_title("entropy of sampled tokens")
    ent.set_xlabel("training step")
    ent.set_ylabel("nats per token")
    acc.set_title("held-out accuracy (validation avg@n)")
    acc.set_xlabel("training step")
    acc.set_ylabel("fraction correct")
    ent.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description="Entropy and held-out accuracy of several runs.")
    ap.add_argument("--out", required=True, help="output prefix: PREFIX.png and PREFIX.csv")
    ap.add_argument("runs", nargs="+", help="run folders (output.dir), each holding metrics.jsonl")
    a = ap.parse_args()
    runs = []
    for d in a.runs:
        path = os.path.join(d, "metrics.jsonl")
        if not os.path.isfile(path):
            sys.exit(f"plot_nsgd: {path}: no such file (is {d} a run folder?)")
        steps, evals = read_metrics(path)
        if not steps:
            sys.exit(f"plot_nsgd: {path}: no training step yet")
        runs.append((os.path.basename(os.path.normpath(d)), steps, evals))
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with open(a.out + ".csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        for name, steps, evals in runs:
            w.writerows(csv_rows(name, steps, evals))
    plot(runs, a.out + ".png")
    print(a.out + ".png")
    print(a.out + ".csv")


if __name__ == "__main__":
    main()
