#!/usr/bin/env python3
"""Plots of a training run: one PNG per quantity of its metrics.jsonl, over training steps.

usage: /usr/bin/python3 scripts/plot_run.py RUN_DIR [--out DIR]

Writes accuracy.png (training samples, and each validation temperature's avg@n), reward.png,
entropy.png (with the controller's target), alpha.png, length.png, truncated.png, kept.png
(groups kept after rejection), grad_norm.png and mismatch.png (rollout/training |d log p|) into
DIR (default RUN_DIR/plots). `make run` makes its report's plots with it. Needs Debian's
python3-matplotlib.
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_metrics(path):
    """Training rows and validation rows of a metrics.jsonl."""
    steps, evals = [], []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"plot_run: {path}:{n}: not JSON ({e.msg})")
            (evals if row.get("type") == "eval" else steps).append(row)
    return steps, evals


def validation_series(evals):
    """{label: ([steps], [avg@n])} per validation temperature."""
    series = {}
    for e in evals:
        overall = e["report"]["overall"]
        key = next((k for k in overall if k.startswith("avg@")), None)
        if key is None or overall[key] is None:
            continue
        label = f"validation {key}, T={e['temperature']:g}"
        xs, ys = series.setdefault(label, ([], []))
        xs.append(e["step"])
        ys.append(overall[key])
    return series


# (file name, title, y-axis label, metrics key)
PANELS = [("accuracy", "accuracy", "fraction correct", "accuracy"),
          ("reward", "reward mean (decided samples)", "reward", "reward_mean"),
          ("entropy", "entropy of sampled tokens", "nats per token", "entropy_sampled"),
          ("alpha", "entropy coefficient", "alpha", "alpha"),
          ("length", "response length", "tokens (mean)", "response_length_mean"),
          ("truncated", "truncated responses", "fraction", "truncated_ratio"),
          ("kept", "groups kept after rejection", "groups", "kept_groups"),
          ("grad_norm", "gradient norm before clipping", "L2 norm", "grad_norm"),
          ("mismatch", "rollout/training mismatch", "mean |log p_rollout - log p_train|", "mismatch_abs_mean")]


def plot(steps, evals, out_dir):
    """One PNG per panel whose key the rows carry; returns the files written."""
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for name, title, ylabel, key in PANELS:
        rows = [r for r in steps if key in r and not (name == "entropy" and r.get("skipped"))]
        if not rows:
            continue
        fig, ax = plt.subplots(figsize=(6, 3.2))
        ax.plot([r["step"] for r in rows], [r[key] for r in rows], marker=".", linewidth=1, label="training")
        if name == "entropy" and "entropy_target" in rows[0]:
            ax.axhline(rows[0]["entropy_target"], color="red", linestyle="--", label=f"target {rows[0]['entropy_target']}")
        if name == "accuracy":
            for label, (xs, ys) in validation_series(evals).items():
                ax.plot(xs, ys, "s-", label=label)
        if len(ax.get_legend_handles_labels()[0]) > 1:
            ax.legend()
        ax.set_title(title)
        ax.set_xlabel("training step")
        ax.set_ylabel(ylabel)
        fig.tight_layout()
        path = os.path.join(out_dir, f"{name}.png")
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    return written


def main():
    ap = argparse.ArgumentParser(description="Plots of a training run's metrics.jsonl.")
    ap.add_argument("run", help="the run folder (output.dir), holding metrics.jsonl")
    ap.add_argument("--out", help="folder for the PNGs (default RUN/plots)")
    a = ap.parse_args()
    path = os.path.join(a.run, "metrics.jsonl")
    if not os.path.isfile(path):
        sys.exit(f"plot_run: {path}: no such file (is {a.run} a run folder?)")
    steps, evals = read_metrics(path)
    if not steps:
        sys.exit(f"plot_run: {path}: no training step yet")
    for p in plot(steps, evals, a.out or os.path.join(a.run, "plots")):
        print(p)


if __name__ == "__main__":
    main()
