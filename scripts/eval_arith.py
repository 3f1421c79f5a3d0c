#!/usr/bin/env python3
"""avg@k of a checkpoint on arithmetic task rows, through the or1 command line only.

Usage: eval_arith.py OR1 MODEL_DIR ROWS.jsonl [--n 8] [--temperature 1] [--seed 0]
                     [--max-new-tokens 160] [--threads N] [--samples OUT.jsonl]

Each row's user message goes through `or1 chat` (the model's tokenizer and its template),
`or1 generate` samples n responses per prompt, and `or1 verify-math` scores each against the
row's ground truth. Prints one JSON line: avg@n (mean correctness over all samples), pass@n
(share of prompts with at least one correct sample), the share of samples that stopped at EOS,
mean response tokens, and the accuracy by operand count. Exits non-zero on any failure.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile


def run(cmd, stdin_text):
    """Runs an or1 command on stdin text; returns its stdout lines (stderr passes through)."""
    p = subprocess.run(cmd, input=stdin_text, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"eval_arith: {' '.join(cmd[:2])} failed: {p.stderr.strip()[-2000:]}")
    return [line for line in p.stdout.split("\n") if line]


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
    ap.add_argument("--samples")
    a = ap.parse_args()
    rows = [json.loads(line) for line in open(a.rows) if line.strip()]
    if not rows:
        sys.exit(f"eval_arith: {a.rows} has no rows")
    threads = ["--threads", str(a.threads)] if a.threads else []
    msgs = "".join(json.dumps({"messages": r["prompt"]}) + "\n" for r in rows)
    chat = run([a.or1, "chat", "--tokenizer", a.model] + threads, msgs)
    prompts = "".join(json.dumps({"prompt_ids": json.loads(c)["ids"]}) + "\n" for c in chat)
    gen = run([a.or1, "generate", "--model", a.model, "--input", "-", "--n", str(a.n),
               "--temperature", str(a.temperature), "--seed", str(a.seed),
               "--max-new-tokens", str(a.max_new_tokens)] + threads, prompts)
    samples = [json.loads(g) for g in gen]
    if len(samples) != len(rows) * a.n:
        sys.exit(f"eval_arith: expected {len(rows) * a.n} samples, got {len(samples)}")
    golds = [json.loads(r["reward_model"]["ground_truth"]) for r in rows]
    ver = run([a.or1, "verify-math"] + threads,
              "".join(json.dumps({"response": s.get("text", ""), "gold": golds[s["index"]]}) + "\n" for s in samples))
    correct = [json.loads(v)["correct"] for v in ver]
    by_prompt, by_ops = {}, {}
    for s, c in zip(samples, correct):
        by_prompt.setdefault(s["index"], []).append(c)
        ops = len(re.findall(r"\d+", rows[s["index"]]["prompt"][0]["content"]))
        by_ops.setdefault(ops, []).append(c)
    out = {
        "prompts": len(rows), "n": a.n, "temperature": a.temperature,
        f"avg@{a.n}": sum(correct) / len(correct),
        f"pass@{a.n}": sum(any(v) for v in by_prompt.values()) / len(by_prompt),
        "stopped": sum(s["finish_reason"] == "stop" for s in samples) / len(samples),
        "mean_response_tokens": sum(len(s["response_ids"]) for s in samples) / len(samples),
        "by_operands": {str(k): round(sum(v) / len(v), 4) for k, v in sorted(by_ops.items())},
    }
    if a.samples:
        with tempfile.NamedTemporaryFile("w", dir=os.path.dirname(os.path.abspath(a.samples)) or ".",
                                         delete=False) as f:
            for s, c in zip(samples, correct):
                f.write(json.dumps({"index": s["index"], "sample": s["sample"], "text": s.get("text", ""),
                                    "correct": c}) + "\n")
        os.replace(f.name, a.samples)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
