"""Asynchronous training (train.async) against the synchronous loop on the same two cores, on the
demo config: speed and learning.

usage: async_bench.py --or1 build/or1 --root REPO [--seeds 3] [--steps 120] [--eval-every N]
                      [--eval-n 8] [--held-out 100] [--target ACC] [--variants a,b,...]
                      [--work build/async_bench] [--markdown] [--json FILE]

Every run trains from demo/demo.yaml (models/arith-base, MAGIC on integer arithmetic) with the
demo's rows (`or1 gen-arith`: 20,000 training rows of seed 11, --held-out test rows of seed 12),
written as a JSON config (JSON is YAML) with output.dir, seed and the data paths overridden and
checkpoint.every 0; --steps scales the stages' steps in proportion (the demo's two stages total
120), --eval-every and --eval-n override eval.every and eval.n. Variants (--variants, default
all):
  sync        the synchronous loop, 1 process, OMP_NUM_THREADS=2 (--threads 2)
  dp          the synchronous loop, mpirun -np 2 --bind-to core, 1 thread each (data parallel)
  async1      mpirun -np 2 --bind-to core, 1 thread each, train.async with 1 trainer and
              1 rollout rank, max_staleness 1 (one-step-off)
  async2      the same at max_staleness 2
  async1p32   max_staleness 1 with partial_tokens 32 (partial rollouts, the KV kept)
  async2p32   max_staleness 2 with partial_tokens 32
Each seed runs every variant once, the order rotated by one from seed to seed (the machine is
shared and its load drifts). Per run: wall seconds (process start to exit, evals included),
trained tokens (the rows' loss_tokens) per wall second, the held-out avg@n of every eval row of
metrics.jsonl with the wall time its progress line ("eval step K ...") appeared on stderr, the
wall time of the first eval at or above --target (default: the lowest final accuracy of all runs,
so every run reaches it), the mean seconds_trainer_wait / seconds_rollout_wait and the mean
staleness of the trained tokens (async runs), and the last training row's entropy_sampled.
Figures over seeds are medians with their range.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

import yaml

VARIANTS = {
    # name: (description, ranks, threads, extra config)
    "sync": ("sync, 1 proc x 2 threads", 1, 2, {}),
    "dp": ("sync, 2 ranks x 1 thread (data parallel)", 2, 1, {}),
    "async1": ("async, staleness 1", 2, 1, {"async": True, "rollout_ranks": 1, "max_staleness": 1}),
    "async2": ("async, staleness 2", 2, 1, {"async": True, "rollout_ranks": 1, "max_staleness": 2}),
    "async1p32": ("async, staleness 1, partial 32", 2, 1,
                  {"async": True, "rollout_ranks": 1, "max_staleness": 1, "partial_tokens": 32}),
    "async2p32": ("async, staleness 2, partial 32", 2, 1,
                  {"async": True, "rollout_ranks": 1, "max_staleness": 2, "partial_tokens": 32}),
}
EVAL_LINE = re.compile(r"^eval step (\d+) ")


def sh(cmd):
    """Runs a command, failing loudly."""
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"async_bench: {' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-3000:]}")


def rows(or1, work, held_out):
    """The demo's rows (demo/demo.py task_rows): 20,000 training rows, `held_out` test rows."""
    train, test = os.path.join(work, "train.jsonl"), os.path.join(work, f"test{held_out}.jsonl")
    sh([or1, "gen-arith", "--n", "20000", "--seed", "11", "--split", "train", "--out", train])
    sh([or1, "gen-arith", "--n", str(held_out), "--seed", "12", "--split", "test", "--out", test])
    return train, test


def scaled_stages(stages, steps):
    """The stages with their steps scaled to total `steps` (each at least 1)."""
    total = sum(s["steps"] for s in stages)
    if steps is None or steps == total:
        return stages
    out, done = [], 0
    for i, s in enumerate(stages):
        n = steps - done if i == len(stages) - 1 else max(1, round(steps * s["steps"] / total))
        out.append(dict(s, steps=max(1, n)))
        done += n
    return out


def write_config(a, base, train, test, variant, seed, out):
    """The run's config (JSON, which is YAML) next to its output folder; returns its path."""
    cfg = json.loads(json.dumps(base))
    cfg["model"]["path"] = os.path.join(a.root, cfg["model"]["path"])
    cfg["data"]["train"] = [{"path": train}]
    cfg["stages"] = scaled_stages(cfg["stages"], a.steps)
    cfg["eval"]["files"] = [test]
    if a.eval_every is not None:
        cfg["eval"]["every"] = a.eval_every
    if a.eval_n is not None:
        cfg["eval"]["n"] = a.eval_n
    cfg["checkpoint"] = {"every": 0}
    cfg["output"] = {"dir": out}
    cfg["seed"] = seed
    cfg.setdefault("train", {}).update(VARIANTS[variant][3])
    path = out + ".yaml"
    with open(path, "w") as f:
        json.dump(cfg, f, indent=1)
    return path


def run(a, variant, cfg, out):
    """One training run; returns its wall seconds and the wall second of each eval step's line."""
    _, ranks, threads, _ = VARIANTS[variant]
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    cmd = [a.or1, "train", "--config", cfg, "--threads", str(threads)]
    if ranks > 1:
        cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(ranks), "--map-by", "core",
               "--bind-to", "core", "-x", f"OMP_NUM_THREADS={threads}", *cmd]
    seen = {}
    t0 = time.monotonic()
    with open(out + ".log", "w") as log:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                             cwd=a.root)
        for line in p.stdout:
            m = EVAL_LINE.match(line)
            if m:
                seen.setdefault(int(m.group(1)), time.monotonic() - t0)
            log.write(line)
        rc = p.wait()
    wall = time.monotonic() - t0
    if rc != 0:
        sys.exit(f"async_bench: {variant} failed ({rc}); see {out}.log:\n" + "".join(open(out + ".log").readlines()[-20:]))
    return wall, seen


def summarize(variant, seed, out, wall, seen):
    """The run's figures from its metrics.jsonl."""
    steps, evals = [], {}
    for line in open(os.path.join(out, "metrics.jsonl")):
        r = json.loads(line)
        if r.get("type") == "eval":
            if r["step"] not in evals or r.get("temperature") == 1:  # T=1 where there are several
                n_key = [k for k in r["report"]["overall"] if k.startswith("avg@")][0]
                evals[r["step"]] = r["report"]["overall"][n_key]
        else:
            steps.append(r)
    tokens = sum(r["loss_tokens"] for r in steps)
    res = {"variant": variant, "seed": seed, "wall_s": wall, "steps": len(steps), "trained_tokens": tokens,
           "trained_tokens_per_s": tokens / wall, "seconds_step_sum": sum(r["seconds_step"] for r in steps),
           "evals": [{"step": k, "acc": v, "wall_s": seen.get(k)} for k, v in sorted(evals.items())],
           "entropy_last": steps[-1]["entropy_sampled"] if steps else None,
           "entropy_min": min(r["entropy_sampled"] for r in steps) if steps else None}
    if steps and "seconds_trainer_wait" in steps[0]:
        res["trainer_wait_s"] = statistics.mean(r["seconds_trainer_wait"] for r in steps)
        res["rollout_wait_s"] = statistics.mean(r["seconds_rollout_wait"] for r in steps)
        hist = [0] * max(len(r["async_staleness_tokens"]) for r in steps)
        for r in steps:
            for k, n in enumerate(r["async_staleness_tokens"]):
                hist[k] += n
        res["staleness_mean"] = sum(k * n for k, n in enumerate(hist)) / max(sum(hist), 1)
    return res


def mid(xs, fmt="{:.1f}"):
    """'median (min-max)' of the values that are not None."""
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    m = fmt.format(statistics.median(xs))
    return m if len(xs) == 1 else f"{m} ({fmt.format(min(xs))}-{fmt.format(max(xs))})"


def report(results, order, target, n_eval):
    """Markdown: the speed and learning table and the accuracy-by-step table."""
    by = {v: [r for r in results if r["variant"] == v] for v in order}
    base = statistics.median(r["wall_s"] for r in by[order[0]])
    lines = [f"| variant | wall s | wall vs {order[0]} | trained tokens/s | final avg@{n_eval} | "
             f"s to avg@{n_eval} >= {target:.3f} | trainer wait s/step | rollout wait s/step | "
             "mean staleness | last entropy_sampled |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for v in order:
        rs = by[v]
        lines.append(" | ".join([
            f"| {VARIANTS[v][0]}", mid([r["wall_s"] for r in rs]),
            f"{statistics.median(r['wall_s'] for r in rs) / base:.2f}",
            mid([r["trained_tokens_per_s"] for r in rs], "{:.0f}"),
            mid([r["evals"][-1]["acc"] if r["evals"] else None for r in rs], "{:.3f}"),
            mid([r["time_to_target_s"] for r in rs]),
            mid([r.get("trainer_wait_s") for r in rs], "{:.3f}"),
            mid([r.get("rollout_wait_s") for r in rs], "{:.3f}"),
            mid([r.get("staleness_mean") for r in rs], "{:.2f}"),
            mid([r["entropy_last"] for r in rs], "{:.3f}")]) + " |")
    steps = sorted({e["step"] for r in results for e in r["evals"]})
    lines += ["", f"Held-out avg@{n_eval} at each eval step (median over seeds, range), and the median wall "
              "second of the eval:", "",
              "| variant | " + " | ".join(f"step {s}" for s in steps) + " |",
              "|---|" + "---:|" * len(steps)]
    for v in order:
        cells = []
        for s in steps:
            es = [e for r in by[v] for e in r["evals"] if e["step"] == s]
            w = [e["wall_s"] for e in es if e["wall_s"] is not None]
            cells.append(mid([e["acc"] for e in es], "{:.3f}") + (f" @ {statistics.median(w):.0f} s" if w else ""))
        lines.append(f"| {VARIANTS[v][0]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--or1", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--config", default="demo/demo.yaml", help="relative to --root")
    ap.add_argument("--seeds", type=int, default=3, help="runs per variant, seeds 1..N")
    ap.add_argument("--steps", type=int, help="total steps, the stages scaled in proportion (demo: 120)")
    ap.add_argument("--eval-every", type=int, help="eval.every (demo: 30)")
    ap.add_argument("--eval-n", type=int, help="eval.n, samples per held-out problem (demo: 8)")
    ap.add_argument("--held-out", type=int, default=100, help="held-out problems (demo: 100)")
    ap.add_argument("--target", type=float, help="held-out accuracy to reach (default: lowest final of all runs)")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, from " + ",".join(VARIANTS))
    ap.add_argument("--work", help="scratch folder (default ROOT/build/async_bench)")
    ap.add_argument("--markdown", action="store_true", help="print the markdown tables")
    ap.add_argument("--json", help="write every run's figures and the summary here")
    a = ap.parse_args()
    a.or1, a.root = os.path.abspath(a.or1), os.path.abspath(a.root)
    order = a.variants.split(",")
    for v in order:
        if v not in VARIANTS:
            sys.exit(f"async_bench: unknown variant {v} (have {', '.join(VARIANTS)})")
    work = os.path.abspath(a.work or os.path.join(a.root, "build", "async_bench"))
    os.makedirs(work, exist_ok=True)
    base = yaml.safe_load(open(os.path.join(a.root, a.config)))
    train, test = rows(a.or1, work, a.held_out)
    results = []
    for i, seed in enumerate(range(1, a.seeds + 1)):
        for v in order[i % len(order):] + order[:i % len(order)]:
            out = os.path.join(work, f"{v}_seed{seed}")
            cfg = write_config(a, base, train, test, v, seed, out)
            wall, seen = run(a, v, cfg, out)
            r = summarize(v, seed, out, wall, seen)
            results.append(r)
            final = r["evals"][-1]["acc"] if r["evals"] else float("nan")
            print(f"async_bench: seed {seed} {v}: {wall:.1f} s, {r['steps']} steps, "
                  f"{r['trained_tokens_per_s']:.0f} trained tokens/s, final avg {final:.3f}, "
                  f"last entropy {r['entropy_last']:.3f}", file=sys.stderr, flush=True)
    finals = [r["evals"][-1]["acc"] for r in results if r["evals"]]
    target = a.target if a.target is not None else min(finals)
    for r in results:
        hit = [e for e in r["evals"] if e["acc"] >= target]
        r["time_to_target_s"] = hit[0]["wall_s"] if hit else None
        r["step_to_target"] = hit[0]["step"] if hit else None
    n_eval = a.eval_n or base.get("eval", {}).get("n", 8)
    table = report(results, order, target, n_eval)
    total = sum(s["steps"] for s in scaled_stages(base["stages"], a.steps))
    head = (f"{a.config}: {total} steps, eval every {a.eval_every or base['eval']['every']} on {a.held_out} held-out "
            f"problems x {n_eval}, {a.seeds} seed(s), target avg@{n_eval} {target:.3f}; "
            f"{os.cpu_count()} cores")
    print(head)
    if a.markdown:
        print("\n" + table)
    else:
        for v in order:
            rs = [r for r in results if r["variant"] == v]
            print(f"  {v:10s} wall {mid([r['wall_s'] for r in rs])} s, trained tokens/s "
                  f"{mid([r['trained_tokens_per_s'] for r in rs], '{:.0f}')}, final "
                  f"{mid([r['evals'][-1]['acc'] if r['evals'] else None for r in rs], '{:.3f}')}, to target "
                  f"{mid([r['time_to_target_s'] for r in rs])} s, last entropy "
                  f"{mid([r['entropy_last'] for r in rs], '{:.3f}')}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"config": a.config, "steps": total, "seeds": a.seeds, "target": target, "variants": order,
                       "runs": results, "markdown": table}, f, indent=1)


main()
