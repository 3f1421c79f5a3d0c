#!/usr/bin/env python3
"""or1 gen-arith: row shape, answers against Python's own arithmetic, determinism, the
train/test split, --out, and bad flags.

Usage: test_gen_arith.py OR1 REPO_ROOT SCRATCH_DIR
"""
import json
import os
import re

from or1test import proc
from or1test.check import check, finish
from or1test.demo import SCRATCH, fresh_scratch, run


def gen(*args, ok=True):
    """Runs or1 gen-arith; returns (rows, stderr), or the completed process when ok is False."""
    p = run("gen-arith", *args, ok=ok)
    if not ok:
        return p
    return proc.json_lines(p.stdout), p.stderr


def python_value(expr):
    """The value Python gives the expression, after checking it is only what the task allows."""
    if not re.fullmatch(r"[0-9+\-*()]+", expr):
        raise ValueError(expr)
    return eval(expr, {"__builtins__": {}})  # noqa: S307 - digits, + - * and parentheses only


def check_rows(rows, split, n, lo, hi):
    """Shape, value and operand checks of task rows."""
    check(len(rows) == n, f"{split}: {len(rows)} rows, wanted {n}")
    for i, r in enumerate(rows):
        keys = ["data_source", "prompt", "ability", "reward_model", "extra_info"]
        check(list(r.keys()) == keys, f"{split} row {i}: keys {list(r.keys())}")
        check(r["data_source"] == "arith" and r["ability"] == "math", f"{split} row {i}: source/ability")
        msgs = r["prompt"]
        check(len(msgs) == 1 and msgs[0]["role"] == "user", f"{split} row {i}: one user message")
        expr = msgs[0]["content"]
        ops = [int(x) for x in re.findall(r"\d+", expr)]
        check(lo <= len(ops) <= hi and all(0 <= x <= 99 for x in ops), f"{split} row {i}: operands of {expr}")
        check(not re.search(r"\d\s*\(|\)\s*\d|\(\)", expr), f"{split} row {i}: malformed {expr}")
        gt = json.loads(r["reward_model"]["ground_truth"])
        check(gt == [str(python_value(expr))], f"{split} row {i}: {expr} = {gt}, Python says {python_value(expr)}")
        check(r["reward_model"]["style"] == "rule", f"{split} row {i}: style")
        check(r["extra_info"] == {"index": i, "split": split}, f"{split} row {i}: extra_info {r['extra_info']}")


def main():
    fresh_scratch()
    train, _ = gen("--n", "3000", "--seed", "7")
    test, _ = gen("--n", "1000", "--seed", "7", "--split", "test")
    check_rows(train, "train", 3000, 2, 4)
    check_rows(test, "test", 1000, 2, 4)
    tr = {r["prompt"][0]["content"] for r in train}
    te = {r["prompt"][0]["content"] for r in test}
    check(not (tr & te), f"train and test share {len(tr & te)} expressions, e.g. {sorted(tr & te)[:3]}")
    # A different seed draws other problems, still never a test expression in train.
    other, _ = gen("--n", "3000", "--seed", "8")
    check({r["prompt"][0]["content"] for r in other}.isdisjoint(te), "seed 8 train meets seed 7 test")
    check([r["prompt"] for r in other] != [r["prompt"] for r in train], "seeds 7 and 8 give the same rows")
    # Variety: every operator, parentheses, every operand count.
    text = "".join(tr)
    for sym in "+-*(":
        check(sym in text, f"no '{sym}' in 3000 expressions")
    counts = {len(re.findall(r"\d+", e)) for e in tr}
    check(counts == {2, 3, 4}, f"operand counts {counts}")
    # Deterministic, and --out writes what stdout would.
    again, _ = gen("--n", "3000", "--seed", "7")
    check(again == train, "the same seed gives different rows")
    out = os.path.join(SCRATCH, "rows.jsonl")
    run("gen-arith", "--n", "1000", "--seed", "7", "--split", "test", "--out", out)
    check([json.loads(x) for x in open(out)] == test, "--out differs from stdout")
    fixed, _ = gen("--n", "200", "--seed", "3", "--min-ops", "3", "--max-ops", "3")
    check_rows(fixed, "train", 200, 3, 3)
    # Bad flags fail with a message and write nothing.
    for args in (["--seed", "1"], ["--n", "0"], ["--n", "5", "--split", "dev"], ["--n", "5", "--min-ops", "4", "--max-ops", "3"],
                 ["--n", "5", "--max-ops", "9"], ["--n", "5", "--traces"], ["--n", "5", "--noise", "0.1"],
                 ["--n", "5", "--bogus", "1"]):
        p = gen(*args, ok=False)
        check(p.returncode != 0 and p.stderr.startswith("or1: ") and not p.stdout, f"gen-arith {args} did not fail cleanly")
    finish("gen-arith")


if __name__ == "__main__":
    main()
