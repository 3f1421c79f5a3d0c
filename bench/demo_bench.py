#!/usr/bin/env python3
"""The demo base model's cost per RL step: one step's rollouts (16 held-out prompts x 8 samples
at temperature 1 with `or1 generate`) and one step's update (forward+backward of those 128
samples with `or1 grad`), timed on this machine. The reference is the issue's budget: 100 RL
steps within 6 minutes; the ratio says how far the projection is from it.

Usage: demo_bench.py OR1 MODEL_DIR [--threads N] [--prompts 16] [--samples 8] [--repeats 3]
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time


def run(cmd, stdin_text=None):
    """Runs a command; returns stdout lines and the wall time."""
    t0 = time.perf_counter()
    p = subprocess.run(cmd, input=stdin_text, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"demo_bench: {' '.join(cmd[:2])} failed: {p.stderr.strip()[-1000:]}")
    return [line for line in p.stdout.split("\n") if line], dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("or1")
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompts", type=int, default=16)
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    th = ["--threads", str(a.threads)]
    rows, _ = run([a.or1, "gen-arith", "--n", str(a.prompts), "--seed", "99", "--split", "test"])
    msgs = "".join(json.dumps({"messages": json.loads(r)["prompt"]}) + "\n" for r in rows)
    chat, _ = run([a.or1, "chat", "--tokenizer", a.model], msgs)
    prompts = [json.loads(c)["ids"] for c in chat]
    req = "".join(json.dumps({"prompt_ids": p}) + "\n" for p in prompts)
    gen_times, samples = [], []
    for rep in range(a.repeats):
        out, dt = run([a.or1, "generate", "--model", a.model, "--input", "-", "--n", str(a.samples),
                       "--temperature", "1", "--max-new-tokens", "128", "--seed", str(rep)] + th, req)
        gen_times.append(dt)
        samples = [json.loads(o) for o in out]
    new_tokens = sum(len(s["response_ids"]) for s in samples)
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        batch = os.path.join(tmp, "batch.jsonl")
        with open(batch, "w") as f:
            for s in samples:
                f.write(json.dumps({"prompt_ids": prompts[s["index"]], "response_ids": s["response_ids"],
                                    "advantage": rng.choice([-1.0, 1.0]), "old_logprobs": s["logprobs"]}) + "\n")
        out, _ = run([a.or1, "grad", "--model", a.model, "--batch", batch, "--bench-iters", str(a.repeats),
                      "--entropy-coef", "0.001"] + th)
    grad = json.loads(out[-1])
    gen_s = min(gen_times)
    step_s = gen_s + grad["seconds_per_iter"]
    budget_s = 6 * 60 / 100
    print(json.dumps({
        "threads": a.threads, "samples": len(samples), "mean_response_tokens": round(new_tokens / len(samples), 1),
        "generate_s": round(gen_s, 3), "generate_tokens_per_s": round(new_tokens / gen_s, 1),
        "grad_s": round(grad["seconds_per_iter"], 3), "grad_tokens_per_s": grad["tokens_per_s"],
        "rl_step_s": round(step_s, 3), "rl_100_steps_min": round(100 * step_s / 60, 2),
        "ratio_to_6min_budget": round(step_s / budget_s, 3),
    }))


if __name__ == "__main__":
    main()
