#!/usr/bin/env python3
"""or1 sft on tiny models: the loss falls on a small learnable set; two steps over the whole
set equal two chained `or1 grad --step` updates (same loss, clip and AdamW); text rows go
through the tokenizer, whose files are carried into the saved checkpoint; bad input fails
naming the file and line.

Usage: test_sft.py OR1 REPO_ROOT SCRATCH_DIR
"""
import json
import math
import os

import numpy as np

from or1test import files, proc
from or1test import safetensors as st
from or1test.check import check, finish
from or1test.demo import ROOT, SCRATCH, fresh_scratch, run


def tiny_model(name, vocab, seed=1):
    """A random tiny Qwen2 checkpoint; returns its folder."""
    cfg = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 32,
           "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
           "num_key_value_heads": 2, "vocab_size": vocab, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
           "tie_word_embeddings": True, "max_position_embeddings": 48, "hidden_act": "silu"}
    path = os.path.join(SCRATCH, name + ".json")
    json.dump(cfg, open(path, "w"))
    out = os.path.join(SCRATCH, name)
    run("init", "--config", path, "--out", out, "--seed", str(seed))
    return out


def weights(folder):
    """The F32 tensors of model.safetensors by name."""
    arrays, dtypes, _ = st.read_arrays(os.path.join(folder, "model.safetensors"))
    assert set(dtypes.values()) <= {"F32"}, dtypes
    return arrays


def learnable_rows(n, rng):
    """Prompt: 4 random ids; response: the same ids in reverse, then id 1 (a rule to learn)."""
    rows = []
    for _ in range(n):
        p = [int(x) for x in rng.integers(2, 20, size=4)]
        rows.append({"prompt_ids": p, "response_ids": p[::-1] + [1]})
    return rows


def loss_falls(model, rng):
    """Twenty steps on 16 rows lower the logged NLL well below where it started."""
    data = os.path.join(SCRATCH, "learn.jsonl")
    files.write_jsonl(data, learnable_rows(16, rng))
    out = os.path.join(SCRATCH, "learned")
    p = run("sft", "--model", model, "--data", data, "--out", out, "--steps", "20",
            "--batch", "8", "--lr", "0.01", "--log-every", "5", "--seed", "3", "--save-every", "10")
    check(sorted(os.listdir(out)) == ["config.json", "model.safetensors", "step-10"], f"saved {os.listdir(out)}")
    mid = weights(os.path.join(out, "step-10"))
    check(any(np.abs(mid[k] - weights(out)[k]).max() > 0 for k in mid), "step-10 equals the final weights")
    log = proc.json_lines(p.stdout)
    check([r["step"] for r in log] == [1, 5, 10, 15, 20], f"logged steps {[r['step'] for r in log]}")
    check(log[-1]["nll"] < 0.6 * log[0]["nll"], f"NLL {log[0]['nll']:.3f} -> {log[-1]['nll']:.3f}: did not fall")
    check("sft: step 20/20" in p.stderr, "no progress on stderr")


def cosine_schedule(model, rng):
    """--min-lr: after the warm-up the logged rate follows a cosine from --lr to --min-lr."""
    data = os.path.join(SCRATCH, "cos.jsonl")
    files.write_jsonl(data, learnable_rows(8, rng))
    steps, warmup, hi, lo = 11, 2, 0.01, 0.001
    p = run("sft", "--model", model, "--data", data, "--out", os.path.join(SCRATCH, "cos"), "--steps", str(steps),
            "--batch", "4", "--lr", str(hi), "--min-lr", str(lo), "--warmup", str(warmup), "--log-every", "1")
    got = [r["lr"] for r in proc.json_lines(p.stdout)]
    want = [hi * (s + 1) / warmup if s < warmup else
            lo + (hi - lo) * 0.5 * (1 + math.cos(math.pi * (s - warmup) / (steps - warmup - 1))) for s in range(steps)]
    check(len(got) == steps and all(abs(g - w) <= 1e-5 * hi for g, w in zip(got, want)),
          f"learning rates {got}, expected {want}")


def matches_grad_steps(model, rng):
    """sft with the batch = the whole set equals chained `or1 grad --step` (same AdamW state)."""
    rows = learnable_rows(6, rng)
    data = os.path.join(SCRATCH, "six.jsonl")
    files.write_jsonl(data, rows)
    batch = os.path.join(SCRATCH, "six_batch.jsonl")
    files.write_jsonl(batch, [dict(r, advantage=1.0) for r in rows])
    common = ["--lr", "0.003", "--weight-decay", "0.01"]
    sft = os.path.join(SCRATCH, "sft2")
    run("sft", "--model", model, "--data", data, "--out", sft, "--steps", "2", "--batch", "6", "--log-every", "0", *common)
    g1, g2 = os.path.join(SCRATCH, "g1"), os.path.join(SCRATCH, "g2")
    run("grad", "--model", model, "--batch", batch, "--step", "--save", g1, *common)
    run("grad", "--model", g1, "--batch", batch, "--step", "--save", g2, *common)
    a, b, start = weights(sft), weights(g2), weights(model)
    check(a.keys() == b.keys(), "sft and grad save different tensors")
    worst = max(float(np.abs(a[k] - b[k]).max()) for k in a)
    moved = max(float(np.abs(a[k] - start[k]).max()) for k in a)
    check(worst < 1e-5 and moved > 1e-3, f"sft vs grad --step: max difference {worst:g}, moved {moved:g}")


def masked_rows(model, rng):
    """response_mask: 0 tokens are context only; sft equals `or1 grad --step` on the same masked
    rows, and differs from the unmasked run (the mask reaches the loss)."""
    rows = [dict(r, response_mask=[1, 0, 0, 1, 1]) for r in learnable_rows(6, rng)]
    data, batch = os.path.join(SCRATCH, "masked.jsonl"), os.path.join(SCRATCH, "masked_batch.jsonl")
    files.write_jsonl(data, rows)
    files.write_jsonl(batch, [dict(r, advantage=1.0) for r in rows])
    common = ["--lr", "0.003", "--weight-decay", "0.01"]
    sft, grad, plain = (os.path.join(SCRATCH, n) for n in ("sft_mask", "grad_mask", "sft_plain"))
    p = run("sft", "--model", model, "--data", data, "--out", sft, "--steps", "1", "--batch", "6", *common)
    check("18 trained response tokens" in p.stderr, f"trained tokens: {p.stderr.splitlines()[:1]}")
    run("grad", "--model", model, "--batch", batch, "--step", "--save", grad, *common)
    files.write_jsonl(data, [{k: v for k, v in r.items() if k != "response_mask"} for r in rows])
    run("sft", "--model", model, "--data", data, "--out", plain, "--steps", "1", "--batch", "6", *common)
    a, b, c = weights(sft), weights(grad), weights(plain)
    worst = max(float(np.abs(a[k] - b[k]).max()) for k in a)
    apart = max(float(np.abs(a[k] - c[k]).max()) for k in a)
    check(worst < 1e-5 and apart > 1e-3, f"masked sft vs grad --step: {worst:g}; vs unmasked: {apart:g}")


def text_rows_and_carry(rng):
    """Text rows through the demo tokenizer; the output folder gets tokenizer files."""
    tok = os.path.join(SCRATCH, "tok")
    proc.make_tokenizer(ROOT, tok)
    n = len(json.load(open(os.path.join(tok, "tokenizer.json")))["model"]["vocab"]) + 4
    model = tiny_model("textmodel", n)
    data = os.path.join(SCRATCH, "traces.jsonl")
    run("gen-arith", "--n", "12", "--min-ops", "2", "--max-ops", "2", "--traces", "--tokenizer", tok, "--out", data)
    out = os.path.join(SCRATCH, "textsft")
    p = run("sft", "--model", model, "--data", data, "--tokenizer", tok, "--out", out, "--steps", "2", "--batch", "4",
            "--save-dtype", "bf16")
    check(p.returncode == 0, "sft on text rows")
    for f in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"):
        check(os.path.isfile(os.path.join(out, f)), f"saved checkpoint lacks {f}")
    p = run("sft", "--model", model, "--data", data, "--out", out + "2", "--steps", "1", ok=False)
    check(p.returncode != 0 and "needs a tokenizer" in p.stderr, f"text rows without a tokenizer: {p.stderr!r}")


def bad_input(model):
    """Malformed rows, over-long examples and bad flags fail, naming the place."""
    cases = [
        ([{"prompt_ids": [1, 2], "response_ids": [3]}, {"prompt_ids": [1]}], "bad.jsonl:2"),
        ([{"prompt_ids": [1, 2], "response_ids": [3, 99]}], "bad.jsonl:1"),
        ([{"prompt_ids": [1, 2], "response_ids": []}], "bad.jsonl:1"),
        ([{"prompt_ids": [1] * 40, "response_ids": [2] * 20}], "positions"),
        ([{"prompt_ids": [1], "response_ids": [3, 4], "response_mask": [1]}], "bad.jsonl:1"),
        ([{"prompt_ids": [1], "response_ids": [3, 4], "response_mask": [1, 2]}], "bad.jsonl:1"),
        ([{"prompt_ids": [1], "response_ids": [3, 4], "response_mask": [0, 0]}], "no trained response token"),
    ]
    path = os.path.join(SCRATCH, "bad.jsonl")
    for rows, where in cases:
        files.write_jsonl(path, rows)
        p = run("sft", "--model", model, "--data", path, "--out", os.path.join(SCRATCH, "bad"), "--steps", "1",
                ok=False)
        check(p.returncode != 0 and where in p.stderr, f"bad rows {rows[-1]}: {p.stderr.strip()!r}")
    open(path, "w").write("{not json\n")
    p = run("sft", "--model", model, "--data", path, "--out", os.path.join(SCRATCH, "bad"), ok=False)
    check(p.returncode != 0 and "bad.jsonl:1" in p.stderr, f"broken JSON: {p.stderr.strip()!r}")
    files.write_jsonl(path, [{"prompt_ids": [1], "response_ids": [2]}])
    for flags in (["--batch", "0"], ["--lr", "-1"], ["--save-dtype", "f8"], ["--steps", "x"], ["--bogus", "1"]):
        p = run("sft", "--model", model, "--data", path, "--out", os.path.join(SCRATCH, "bad"), *flags, ok=False)
        check(p.returncode != 0 and p.stderr.startswith("or1: "), f"flags {flags}: {p.stderr.strip()!r}")
    check(not os.path.exists(os.path.join(SCRATCH, "bad")), "a failed run left a checkpoint")


def main():
    fresh_scratch()
    rng = np.random.default_rng(0)
    model = tiny_model("tiny", 24)
    loss_falls(model, rng)
    cosine_schedule(model, rng)
    matches_grad_steps(model, rng)
    masked_rows(model, rng)
    text_rows_and_carry(rng)
    bad_input(model)
    finish("sft")


if __name__ == "__main__":
    main()
