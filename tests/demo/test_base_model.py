#!/usr/bin/env python3
"""The shipped base model (models/arith-base): its files agree with each other (vocabulary,
EOS, tied embeddings, context), it is small, it loads, and it writes traces of the trained
shape that stop at EOS and carry a \\boxed{} answer the verifier reads.

Usage: test_base_model.py OR1 REPO_ROOT SCRATCH_DIR
"""
import json
import os

from or1test import safetensors
from or1test.check import check, finish
from or1test.demo import ROOT, fresh_scratch, or1

MODEL = os.path.join(ROOT, "models", "arith-base")


def files_agree():
    """Config, generation config, tokenizer and weights describe one small model."""
    cfg = json.load(open(os.path.join(MODEL, "config.json")))
    gen = json.load(open(os.path.join(MODEL, "generation_config.json")))
    tok = json.load(open(os.path.join(MODEL, "tokenizer.json")))
    tcfg = json.load(open(os.path.join(MODEL, "tokenizer_config.json")))
    n_tok = len(tok["model"]["vocab"]) + len(tok["added_tokens"])
    eos = [a["id"] for a in tok["added_tokens"] if a["content"] == tcfg["eos_token"]]
    check(cfg["model_type"] == "qwen2" and cfg["tie_word_embeddings"] is True, "a tied Qwen2 model")
    check(cfg["vocab_size"] == n_tok, f"vocab_size {cfg['vocab_size']} != {n_tok} tokens")
    check(eos and cfg["eos_token_id"] == eos[0] == gen["eos_token_id"], "EOS ids disagree")
    check(cfg["max_position_embeddings"] == 512, "context of 512 positions")
    check(cfg["hidden_size"] <= 256 and cfg["num_hidden_layers"] <= 6, "not small")
    st = os.path.join(MODEL, "model.safetensors")
    check(os.path.getsize(st) < 8 << 20, f"model.safetensors is {os.path.getsize(st)} bytes")
    dtypes = set(safetensors.read_arrays(st)[1].values())
    check(dtypes <= {"BF16", "F32"}, f"weight dtypes {dtypes}")


def generates():
    """Samples on held-out problems: trace-shaped, stopped at EOS, answers extracted."""
    rows = or1("gen-arith", "--n", "4", "--seed", "3", "--split", "test")
    chat = or1("chat", "--tokenizer", MODEL, stdin="".join(json.dumps({"messages": r["prompt"]}) + "\n" for r in rows))
    req = "".join(json.dumps({"prompt_ids": c["ids"]}) + "\n" for c in chat)
    out = or1("generate", "--model", MODEL, "--input", "-", "--n", "2", "--temperature", "1", "--max-new-tokens", "96",
              "--seed", "1", stdin=req)
    check(len(out) == 8, f"{len(out)} samples")
    stopped = [s for s in out if s["finish_reason"] == "stop"]
    check(len(stopped) >= 6, f"only {len(stopped)} of 8 samples stopped at EOS")
    for s in stopped:
        check(s["text"].startswith("<think>\n") and "</think>\n\\boxed{" in s["text"] and
              s["text"].endswith("}<|endoftext|>"), f"sample not shaped like a trace: {s['text']!r}")
    golds = [json.loads(r["reward_model"]["ground_truth"]) for r in rows]
    ver = or1("verify-math", stdin="".join(json.dumps({"response": s["text"], "gold": golds[s["index"]]}) + "\n"
                                           for s in out))
    check(sum(v["extracted"] != "" for v in ver) >= 6, "answers not extracted")


def main():
    fresh_scratch()
    files_agree()
    generates()
    finish("base model")


if __name__ == "__main__":
    main()
