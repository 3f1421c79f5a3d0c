"""A shortened run of the real-model demo (demo/smollm2.py, what `make run-smollm2` does): the
task rows, the shipped model's evaluation, one seed trained two steps from the GGUF file, the
evaluation of its checkpoint and the report, end to end. Checks the rows (plain-string golds, the
held-out pairs apart from the training pairs), that the checkpoint written from a GGUF model is
an ordinary folder (config.json, the tokenizer files with the file's chat template) that loads,
the steps, and the report. Two steps teach nothing: the learning is the figure in docs/demo.md,
from the full run. Usage: test_smollm2_demo.py OR1 REPO_ROOT SCRATCH"""
import json
import os
import subprocess
import sys

from or1test.check import check, finish
from or1test.files import fresh

STEPS = 2


def pairs(path):
    """The (A, B) of each row's question (the last user turn)."""
    out = []
    for line in open(path):
        row = json.loads(line)
        words = row["prompt"][-1]["content"].split()
        out.append((int(words[2]), int(words[4].rstrip("?"))))
        check(isinstance(row["reward_model"]["ground_truth"], str) and not row["reward_model"]["ground_truth"].startswith("["),
              f"{path}: ground truth {row['reward_model']['ground_truth']!r} is not a plain string")
    return out


def main(or1, root, scratch):
    """Runs the shortened demo into scratch and checks what it wrote."""
    fresh(scratch)
    sets = [f"train.steps={STEPS}", "train.prompts_per_step=4", "train.mini_batch=4", f"eval.every={STEPS}",
            f"checkpoint.every={STEPS}"]
    cmd = ["/usr/bin/python3", "demo/smollm2.py", "--or1", or1, "--runs", scratch, "--name", "short", "--seeds", "1",
           "--train-rows", "64", "--held-out", "8"] + [x for s in sets for x in ("--set", s)]
    r = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=1500)
    if r.returncode != 0:
        sys.exit(f"FAIL: smollm2 demo exited {r.returncode}: {r.stderr[-3000:]}")
    run = os.path.join(scratch, "short")
    train, test = pairs(os.path.join(run, "train.jsonl")), pairs(os.path.join(run, "test.jsonl"))
    check(len(train) == 64 and len(test) == 8 and not set(train) & set(test), "held-out pairs among the training pairs")
    ckpt = os.path.join(run, "seed1", "checkpoints", "latest")
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"):
        check(os.path.isfile(os.path.join(ckpt, name)), f"the checkpoint lacks {name}")
    cfg = json.load(open(os.path.join(ckpt, "tokenizer_config.json")))
    check("SmolLM" in cfg.get("chat_template", ""), "the checkpoint's tokenizer_config.json lacks the file's chat template")
    rows = [json.loads(line) for line in open(os.path.join(run, "seed1", "metrics.jsonl"))]
    steps = [x for x in rows if x.get("type") != "eval"]
    check([x["step"] for x in steps] == list(range(1, STEPS + 1)), f"steps {[x['step'] for x in steps]}")
    for name in ("base", "seed1"):
        dumped = [json.loads(line) for line in open(os.path.join(run, "report", f"{name}_samples.jsonl"))]
        check(len(dumped) == 8 * 8, f"{name}: {len(dumped)} evaluated samples")
    png = os.path.join(run, "report", "smollm2.png")
    check(os.path.isfile(png) and open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n", f"missing or not a PNG: {png}")
    summary = open(os.path.join(run, "report", "summary.md")).read()
    check("| 1 |" in summary and "## samples: seed1" in summary, f"summary.md: {summary[:400]!r}")
    finish("smollm2_demo")


if __name__ == "__main__":
    main(*sys.argv[1:4])
