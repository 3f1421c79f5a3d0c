"""The tool-use demo (`make run-tools`): MAGIC with a Python tool against the same recipe without.

1. `or1 gen-arith` writes the task rows, the held-out rows and SFT traces of which a share ask
   Python for the value (`--tool`: a fenced `python` block, the engine's `output` reply with
   loss mask 0, the boxed value);
2. `or1 sft` teaches the shipped base model (models/arith-base) that call format;
3. `or1 eval` measures the taught model's held-out avg@8 with and without tools;
4. `or1 train --config demo/tools.yaml` twice from the taught model, same rows, steps and seed:
   once with `rollout.tools.max_turns: 1` (a call runs in the sandbox and its output is
   prefilled), once with 0 (a call is only text);
5. `or1 eval` of each arm's last checkpoint, as it was trained (with, or without, tools);
6. a report in <runs>/<name>/report/: tools.png (validation avg@8, training reward and tool
   calls per sample over steps, both arms), summary.md and every evaluated sample.
Extra `--set key=value` arguments go to both `or1 train` runs."""
import json
import os
import sys
import time

from demo import EVAL_LEN, EVAL_N, EVAL_T, arguments, read_metrics, sh, task_rows  # demo/ is this script's folder

ARMS = (("tools", 1), ("no_tools", 0))  # (name, rollout.tools.max_turns)
CALL = "```python\n"  # a call's opening (OR1_TOOL_CALL_OPEN)


def held_out(or1, model, rows, tools, dump):
    """(avg@8 at temperature 1, share of samples that write a Python block) on the held-out rows,
    from `or1 eval` and its dumped samples (a block is written whether or not tools run it)."""
    rep = json.loads(sh([or1, "eval", "--model", model, "--data", rows, "--n", str(EVAL_N), "--temperature",
                         str(EVAL_T), "--max-new-tokens", str(EVAL_LEN), "--seed", "7", "--tools", str(tools),
                         "--dump", dump], True))
    samples = [json.loads(line) for line in open(dump)]
    calling = sum(CALL in s["response"] for s in samples) / max(len(samples), 1)
    return rep["overall"][f"avg@{EVAL_N}"], calling


def teach(a, run):
    """Tool-call traces and the SFT that teaches the base model their format; the taught model's folder."""
    traces, out = f"{run}/traces.jsonl", f"{run}/sft"
    sh([a.or1, "gen-arith", "--n", "20000", "--seed", "21", "--split", "train", "--traces", "--split-products",
        "--tokenizer", a.base, "--tool", str(a.tool_share), "--guess", "0.3", "--out", traces])
    print(f"tools: SFT of the call format, {a.sft_steps} steps", file=sys.stderr)
    sh([a.or1, "sft", "--model", a.base, "--data", traces, "--out", out, "--steps", str(a.sft_steps), "--batch", "32",
        "--lr", "1e-3", "--min-lr", "1e-4", "--warmup", "10", "--log-every", "100", "--seed", "1"], True)
    return out


def plot(path, arms):
    """tools.png: validation avg@8 (left), training reward and tool calls per sample (right) over
    steps, per arm."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (acc, train) = plt.subplots(1, 2, figsize=(10, 3.8))
    for (name, (steps, evals)), color in zip(arms.items(), ("C0", "C1")):
        label, x = name.replace("_", " "), [r["step"] for r in steps]
        acc.plot([e["step"] for e in evals], [e["report"]["overall"][f"avg@{EVAL_N}"] for e in evals], "o-",
                 color=color, label=label)
        train.plot(x, [r["reward_mean"] for r in steps], color=color, label=f"{label}: reward")
        if "tool_calls_per_sample" in steps[0]:
            train.plot(x, [r["tool_calls_per_sample"] for r in steps], "--", color=color, label=f"{label}: calls/sample")
    acc.set(xlabel="step", ylabel=f"held-out avg@{EVAL_N}, T={EVAL_T:g}", title="validation", ylim=(0, 1))
    train.set(xlabel="step", title="training samples", ylim=(0, 1.05))
    for ax in (acc, train):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def summary(path, taught, final, arms, seconds, extra):
    """summary.md: the taught model and each arm's held-out avg@8, calls and steps."""
    with open(path, "w") as f:
        f.write("# or1 demo: tools against no tools\n\n")
        f.write(f"- taught base model, held-out avg@{EVAL_N} at T={EVAL_T:g}: with tools {taught['tools'][0]:.3f}, "
                f"without {taught['no_tools'][0]:.3f}; samples writing a Python block: "
                f"{100 * taught['tools'][1]:.1f}% and {100 * taught['no_tools'][1]:.1f}%\n")
        for name, (steps, _) in arms.items():
            acc, calling = final[name]
            f.write(f"- trained {name.replace('_', ' ')}: held-out avg@{EVAL_N} {acc:.3f} "
                    f"({100 * (acc - taught[name][0]):+.1f} points), samples writing a Python block {100 * calling:.1f}%; "
                    f"{len(steps)} steps, {sum(r['skipped'] for r in steps)} skipped\n")
        f.write(f"- {seconds:.0f} s in all; overrides: {' '.join(extra) if extra else 'none'}\n- plot: tools.png\n")


def main():
    ap = arguments("tools", "demo/tools.yaml")
    ap.add_argument("--sft-steps", type=int, default=600)
    ap.add_argument("--tool-share", type=float, default=0.5, help="share of SFT traces that call the tool")
    a = ap.parse_args()
    t0, run = time.time(), os.path.join(a.runs, a.name)
    task_rows(a, run)
    taught = teach(a, run)
    before = {name: held_out(a.or1, taught, f"{run}/test.jsonl", turns, f"{run}/report/taught_{name}.jsonl")
              for name, turns in ARMS}
    print(f"tools: taught model avg@{EVAL_N} {before['tools'][0]:.3f} with tools, {before['no_tools'][0]:.3f} without",
          file=sys.stderr)
    arms, final = {}, {}
    for name, turns in ARMS:
        print(f"tools: training, {name.replace('_', ' ')}", file=sys.stderr)
        sets = [f"model.path={taught}", f"output.dir={run}/{name}", f"data.train.0.path={run}/train.jsonl",
                f"eval.files=[{run}/test.jsonl]", f"rollout.tools.max_turns={turns}"] + a.set
        sh([a.or1, "train", "--config", a.config, "--overwrite"] + [x for s in sets for x in ("--set", s)])
        arms[name] = read_metrics(f"{run}/{name}/metrics.jsonl")
        final[name] = held_out(a.or1, f"{run}/{name}/checkpoints/latest", f"{run}/test.jsonl", turns,
                               f"{run}/report/trained_{name}.jsonl")
    plot(f"{run}/report/tools.png", arms)
    summary(f"{run}/report/summary.md", before, final, arms, time.time() - t0, a.set)
    print(open(f"{run}/report/summary.md").read())


if __name__ == "__main__":
    main()
