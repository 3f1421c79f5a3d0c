#!/usr/bin/env python3
"""Makes the trainer tests' shared tiny models once per build directory (a ctest fixture):
the demo tokenizer, a random 2-layer Qwen2 checkpoint (solves nothing), and an SFT copy that
memorised "1+1" -> 2 and "2+2" -> 4 or 5 (half each). Then checks with `or1 eval` that the
SFT model is fit for the tests: "1+1" solved by at least 15 of 16 samples, "2+2" (gold 4)
mixed, "3+3" and "7*9" never.

Usage: make_fixture.py OR1 REPO_ROOT FIXTURE_DIR
"""
import json
import os
import shutil
import sys

from or1test import proc
from or1test import train as C
from or1test.check import check, failed, finish
from or1test.files import fresh

OR1, ROOT, DIR = sys.argv[1], sys.argv[2], sys.argv[3]


def trace(p, a):
    """An SFT trace in the demo's format (see `or1 gen-arith --traces`)."""
    return {"prompt": f"User: {p}\nAssistant:",
            "response": f"<think>\n{p}={a}\n</think>\n\\boxed{{{a}}}<|endoftext|>"}


def build(work):
    """Tokenizer, random model, SFT model and data rows in work."""
    tok = os.path.join(work, "tok")
    proc.make_tokenizer(ROOT, tok)
    t = json.load(open(os.path.join(tok, "tokenizer.json")))
    vocab = len(t["model"]["vocab"]) + len(t["added_tokens"])
    eos = [a["id"] for a in t["added_tokens"] if a["content"] == "<|endoftext|>"][0]
    cfg = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 32,
           "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
           "vocab_size": vocab, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": True,
           "max_position_embeddings": 256, "hidden_act": "silu", "bos_token_id": eos, "eos_token_id": eos}
    json.dump(cfg, open(os.path.join(work, "config.json"), "w"))
    init = os.path.join(work, "init")
    C.run([OR1, "init", "--config", os.path.join(work, "config.json"), "--out", init, "--seed", "1"])
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(tok, f), init)
    sft_data = os.path.join(work, "sft.jsonl")
    with open(sft_data, "w") as f:
        for r in [trace("1+1", 2)] * 4 + [trace("2+2", 4), trace("2+2", 5)] * 2:
            f.write(json.dumps(r) + "\n")
    C.run([OR1, "sft", "--model", init, "--data", sft_data, "--out", os.path.join(work, "sft"), "--steps", "80",
           "--batch", "8", "--lr", "0.01", "--log-every", "0", "--seed", "1"])
    C.write_rows(os.path.join(work, "rows.jsonl"), [C.EASY, C.MID4, C.MID5, C.HARD6, C.HARD63])


def fit_for_tests(work):
    """Per-row correct counts of 16 samples of the SFT model meet the tests' needs."""
    dump = os.path.join(work, "fit_dump.jsonl")
    C.run([OR1, "eval", "--model", os.path.join(work, "sft"), "--data", os.path.join(work, "rows.jsonl"), "--n", "16",
           "--max-new-tokens", "24", "--dump", dump])
    counts = [0] * 5
    for line in open(dump):
        d = json.loads(line)
        counts[d["index"]] += d["correct"]
    ok = counts[0] >= 15 and 0 < counts[1] < 16 and counts[3] == 0 and counts[4] == 0
    check(ok, f"SFT model's correct counts of 16 per row {counts}: want >=15, mixed, ?, 0, 0")


def main():
    """Rebuilds the fixture in a temporary folder and moves it into place."""
    tmp = fresh(DIR + ".tmp")
    build(tmp)
    fit_for_tests(tmp)
    if failed():
        finish("train fixture")
    shutil.rmtree(DIR, ignore_errors=True)
    os.rename(tmp, DIR)
    finish("train fixture")


main()
