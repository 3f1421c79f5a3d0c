#!/usr/bin/env python3
"""Defaults that fit the model.

The tiny model has 256 positions. `or1 eval` without --max-new-tokens gives each response what
the context leaves after the longest prompt that fits; a prompt longer than the model's context
is skipped and counted per source ("skipped_long_prompts"), never an abort, and `difficulty`
leaves that row without a count. In training, validation skips such prompts the same way, and
training prompts that the longest stage leaves no room for are dropped with a message. A stage
whose context length leaves no room for any prompt is refused when the config loads, naming the
key.

Usage: test_context.py OR1 FIXTURE_DIR SCRATCH_DIR
"""
import json
import os
import sys

from or1test import train as C
from or1test.check import check, finish
from or1test.files import fresh

OR1, FX, SCRATCH = sys.argv[1], sys.argv[2], fresh(sys.argv[3])
SFT = os.path.join(FX, "sft")
LONG = ("1+1 " * 150).strip()  # about 600 tokens: longer than the model's 256 positions
ROWS = C.write_rows(os.path.join(SCRATCH, "rows.jsonl"), [C.EASY, (LONG, 2, "long"), C.MID4])


def evaluate():
    """The long row is skipped and counted; the others are evaluated with the fitting length."""
    dump = os.path.join(SCRATCH, "dump.jsonl")
    p = C.run([OR1, "eval", "--model", SFT, "--data", ROWS, "--n", "2", "--dump", dump])
    rep = json.loads(p.stdout)
    check(rep.get("skipped_long_prompts") == {"total": 1, "long": 1}, f"skipped: {rep.get('skipped_long_prompts')}")
    check(rep["overall"]["problems"] == 2 and "long" not in rep["by_source"], f"report {rep['overall']}")
    check("1 of 3 prompts are longer than" in p.stderr, f"warning: {p.stderr[-300:]!r}")
    rows = [json.loads(x) for x in open(dump)]
    check({r["row"] for r in rows} == {0, 2} and len(rows) == 4, f"dumped rows {sorted({r['row'] for r in rows})}")
    out = os.path.join(SCRATCH, "difficulty.jsonl")
    C.run([OR1, "difficulty", "--model", SFT, "--data", ROWS, "--n", "2", "--out", out, "--name", "sft"])
    diff = [json.loads(x)["extra_info"].get("model_difficulty", {}).get("sft") for x in open(out)]
    check(diff[1] is None and diff[0] is not None and diff[2] is not None, f"difficulty counts {diff}")


def train():
    """Validation skips the long prompt; the long training row is dropped with a message."""
    out = os.path.join(SCRATCH, "run")
    cfg = C.base_config(SFT, ROWS, out, eval={"every": 1, "files": [ROWS], "n": 2, "temperatures": [1.0]},
                        checkpoint={"every": 0}, train={"prompts_per_step": 2, "mini_batch": 1})
    cfg["data"]["max_prompt_length"] = 2048
    p = C.train(OR1, C.write_config(os.path.join(SCRATCH, "run.yaml"), cfg))
    evals = C.metrics(out, "eval")
    check(len(evals) == 3 and all(e["report"].get("skipped_long_prompts", {}).get("total") == 1 for e in evals),
          f"validation rows {[e['report'].get('skipped_long_prompts') for e in evals]}")
    check("prompts over 232 tokens are dropped" in p.stderr, f"training prompt limit: {p.stderr[:600]!r}")


def refused():
    """A context length that leaves no room for a prompt is refused at load."""
    cfg = C.base_config(SFT, ROWS, os.path.join(SCRATCH, "bad"), rollout={"max_new_tokens": 256})
    p = C.train(OR1, C.write_config(os.path.join(SCRATCH, "bad.yaml"), cfg), ok=False)
    check(p.returncode == 2 and "context length 256" in p.stderr and "max_position_embeddings 256" in p.stderr,
          f"T = 256: rc {p.returncode}, {p.stderr[-300:]!r}")


evaluate()
train()
refused()
finish("context")
