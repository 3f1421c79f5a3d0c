#!/usr/bin/env python3
"""Config errors are found before any work: a misspelt key (top level,
nested, inside a stage, through --set), a wrong type, a value out of range, a missing data,
eval or tokenizer file, a missing model folder, a missing --resume folder. Each exits non-zero
(2 for the config itself), names the key or file (and the line where the key is written),
and creates no output folder.

Usage: test_config_errors.py OR1 FIXTURE_DIR SCRATCH_DIR
"""
import os
import re
import sys

from or1test import train as C
from or1test.check import check, finish
from or1test.files import fresh

OR1, FX, SCRATCH = sys.argv[1], sys.argv[2], fresh(sys.argv[3])
OUT = os.path.join(SCRATCH, "out")
GOOD = f"""model:
  path: {FX}/sft
  chat_template: plain
data:
  train:
    - path: {FX}/rows.jsonl
  max_prompt_length: 64
rollout:
  n: 2
  max_new_tokens: 8
train:
  prompts_per_step: 2
  mini_batch: 2
  lr: 0.001
stages:
  - name: only
    steps: 1
eval:
  every: 0
output:
  dir: {OUT}
"""

# (name, text replacements, extra flags, exit code, fragments the message must hold)
CASES = [
    ("misspelt nested key", [("  lr: 0.001", "  lrr: 0.001")], [], 2, ["train.lrr", ":14", 'did you mean "train.lr"']),
    ("misspelt section", [("rollout:", "rollot:")], [], 2, ['"rollot', ":8"]),
    ("misspelt stage key", [("    steps: 1", "    stepz: 1")], [], 2, ["stages[0].stepz", ":17"]),
    ("misspelt --set key", [], ["--set", "train.epoch=2"], 2, ["train.epoch", "--set"]),
    ("wrong type", [("  lr: 0.001", "  lr: fast")], [], 2, ['"train.lr"', "fast", ":14"]),
    ("wrong type in a list", [("    steps: 1", "    steps: [1]")], [], 2, ["stages[0].steps", ":17"]),
    ("out of range", [("  n: 2", "  n: 0")], [], 2, ['"rollout.n"', ":9"]),
    ("out of range --set", [], ["--set", "train.clip_low=2"], 2, ["train.clip_low", "--set"]),
    ("bad enumeration", [], ["--set", "entropy.mode=sometimes"], 2, ["entropy.mode", "sometimes"]),
    ("bad enable_thinking", [], ["--set", "data.apply_chat_template_kwargs.enable_thinking=maybe"], 2,
     ["data.apply_chat_template_kwargs.enable_thinking", "maybe"]),
    ("missing data file", [("rows.jsonl", "nope.jsonl")], [], 2, ["data.train[0].path", "nope.jsonl"]),
    ("missing model", [(f"{FX}/sft", f"{FX}/no_model")], [], 2, ['"model.path"', "no_model"]),
    ("missing tokenizer", [("  chat_template", f"  tokenizer: {FX}/no_tok\n  chat_template")], [], 2,
     ['"model.tokenizer"', "no_tok"]),
    ("missing eval file", [("  every: 0", f"  every: 1\n  files: [{FX}/no_eval.jsonl]")], [], 2,
     ["eval.files[0]", "no_eval.jsonl"]),
    ("missing resume folder", [], ["--resume", os.path.join(SCRATCH, "no_ckpt")], 1, ["no_ckpt"]),
    ("unknown flag", [], ["--sett", "x=1"], 2, ["--sett"]),
]


def case(name, edits, flags, code, needles):
    """Runs one broken config; checks exit code, message and that no output appeared."""
    text = GOOD
    for a, b in edits:
        check(a in text, f"{name}: test bug, {a!r} not in the config")
        text = text.replace(a, b, 1)
    path = os.path.join(SCRATCH, "bad.yaml")
    open(path, "w").write(text)
    p = C.train(OR1, path, *flags, ok=False, timeout=60)
    msg = p.stderr.strip()
    check(p.returncode == code, f"{name}: exit {p.returncode}, want {code} ({msg!r})")
    check(msg.startswith("or1: ") and all(n in msg for n in needles), f"{name}: message {msg!r} lacks {needles}")
    check(not re.search(r"^(train: \d+ prompts|step \d)", msg, re.M), f"{name}: work started: {msg!r}")
    check(not os.path.exists(OUT), f"{name}: output folder created")


def main():
    """Every case, and the good config as a control (it runs and creates the output)."""
    for c in CASES:
        case(*c)
    path = os.path.join(SCRATCH, "good.yaml")
    open(path, "w").write(GOOD)
    p = C.train(OR1, path, ok=False)
    check(p.returncode == 0 and os.path.isdir(OUT), f"the good config failed: {p.stderr[-500:]!r}")
    finish("train_config_errors")


main()
