#!/usr/bin/env python3
"""avg@k of a checkpoint on arithmetic task rows through `or1 eval`, with what the demo looks at.

Usage: eval_arith.py OR1 MODEL_DIR ROWS.jsonl [--n 8] [--temperature 1] [--seed 0]
                     [--max-new-tokens 160] [--threads N] [--samples OUT.jsonl]

`or1 eval --dump` samples and scores (the same evaluator as training's validation); this script
adds, from the dumped samples: the share that stopped at EOS, mean response tokens, accuracy by
operand count, the share of samples that box an answer without working, the accuracy of those
that work, and the share of wrong steps by operation and operand digits (e.g. "*2x2": products
of two 2-digit numbers). Prints one JSON line; exits non-zero on any failure. The demo's summary
(demo/demo.py) uses habits() from here.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

# One worked step: "a op b = c", a negative right operand in parentheses, products possibly
# with their partial products before the result ("48*69=2880+432=3312").
STEP = re.compile(r"(-?\d+)([-+*])\(?(-?\d+)\)?=(?:-?\d+(?:[-+]\d+)+=)?(-?\d+)")


def guessed(response):
    """True when the response boxes an answer without any working."""
    return response.startswith("<think>\n</think>")


def habits(samples):
    """(share of samples without working, accuracy of the samples that work)."""
    worked = [s for s in samples if not guessed(s["response"])]
    return 1 - len(worked) / max(len(samples), 1), sum(s["correct"] for s in worked) / max(len(worked), 1)


def step_errors(samples):
    """Share of wrong steps in worked samples, by operation and operand digits (3 means 3 or more)."""
    total, wrong = {}, {}
    for s in samples:
        for line in s["response"].split("\n"):
            m = STEP.fullmatch(line)
            if not m:
                continue
            a, op, b, c = int(m[1]), m[2], int(m[3]), int(m[4])
            value = a + b if op == "+" else a - b if op == "-" else a * b
            key = f"{op}{min(len(str(abs(a))), 3)}x{min(len(str(abs(b))), 3)}"
            total[key] = total.get(key, 0) + 1
            wrong[key] = wrong.get(key, 0) + (value != c)
    return {k: {"steps": total[k], "wrong": round(wrong[k] / total[k], 4)} for k in sorted(total)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("or1")
    ap.add_argument("model")
    ap.add_argument("rows")
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-new-tokens", type=int, default=160)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--samples", help="keep the dumped samples here")
    a = ap.parse_args()
    rows = [json.loads(line) for line in open(a.rows) if line.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        dump = a.samples or os.path.join(tmp, "samples.jsonl")
        cmd = [a.or1, "eval", "--model", a.model, "--data", a.rows, "--n", str(a.n), "--temperature",
               str(a.temperature), "--seed", str(a.seed), "--max-new-tokens", str(a.max_new_tokens), "--dump", dump]
        p = subprocess.run(cmd + (["--threads", str(a.threads)] if a.threads else []), capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"eval_arith: or1 eval failed: {p.stderr.strip()[-2000:]}")
        report = json.loads(p.stdout)["overall"]
        samples = [json.loads(line) for line in open(dump)]
    by_ops = {}
    for s in samples:
        by_ops.setdefault(len(re.findall(r"\d+", rows[s["row"]]["prompt"][0]["content"])), []).append(s["correct"])
    guess, worked_right = habits(samples)
    print(json.dumps({
        "prompts": report["problems"], "n": a.n, "temperature": a.temperature,
        f"avg@{a.n}": report[f"avg@{a.n}"], f"pass@{a.n}": report[f"pass@{a.n}"],
        "stopped": sum(s["finish_reason"] == "stop" for s in samples) / len(samples),
        "mean_response_tokens": sum(s["tokens"] for s in samples) / len(samples),
        "by_operands": {str(k): round(sum(v) / len(v), 4) for k, v in sorted(by_ops.items())},
        "without_working": round(guess, 4), "worked_right": round(worked_right, 4),
        "wrong_steps": step_errors(samples),
    }))


if __name__ == "__main__":
    main()
