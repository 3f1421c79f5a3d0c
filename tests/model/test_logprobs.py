"""`or1 logprobs` against the float64 reference, over every checkpoint variant of one architecture.

usage: test_logprobs.py OR1 ARCH   (ARCH: qwen2 | qwen3 | llama | llama-bias | rope)

Variants: tied/untied x F32/BF16/F16 x single file/3 shards, cycling through GQA ratios and an
explicit head_dim; each at temperature 1 and 0.7 on sequences of length 1 to 70. The qwen2 run
adds --input /dev/stdin and a vocabulary of 8300 (wider than two 4096-entry blocks).
Tolerance: an fp32 forward of these 2-layer models differs from float64 by <= 6e-6 in log-prob
and entropy (measured by running this same reference in float32); 1e-4 leaves 15x margin while
any wrong formula (RoPE layout, GQA mapping, missing bias, temperature) moves values by >1e-2.
"""
import itertools
import json
import os
import sys
import tempfile

import torch

from or1test import files, proc, ref, rollout
from or1test.check import Checker

ATOL, RTOL = 1e-4, 1e-5
# (heads, kv_heads, head_dim) cycled over the variants: MHA, GQA 2:1 and 4:1, wide head_dim.
SHAPES = [(4, 2, None), (4, 4, None), (4, 1, 16), (8, 2, None), (2, 1, 24)]
LENGTHS = [1, 2, 5, 17, 40, 70]


def sequences(vocab, seed):
    """Random sequences of every length in LENGTHS, one of them using ids 0 and vocab-1."""
    g = torch.Generator().manual_seed(seed)
    seqs = [ref.random_ids(g, vocab, n) for n in LENGTHS]
    seqs[3][0], seqs[3][-1] = vocab - 1, 0
    return seqs


def check_output(chk, what, stdout, want):
    """Compares or1's JSONL stdout with the reference rows [(logp, entropy)]."""
    lines = stdout.splitlines()
    if not chk.ok(len(lines) == len(want), f"{what}: {len(lines)} output lines, want {len(want)}"):
        return
    for k, (line, (lp, ent)) in enumerate(zip(lines, want)):
        row = proc.parse_json_line(line, f"{what} line {k + 1}")
        seq = f"{what} seq {k} (len {len(lp) + 1})"
        chk.close(f"{seq} logprobs", row.get("logprobs"), lp, ATOL, RTOL)
        chk.close(f"{seq} entropy", row.get("entropy"), ent, ATOL, RTOL)


def check_variant(chk, or1, tmp, arch, k, tied, dtype, shards):
    """One checkpoint variant at both temperatures; alternates --threads 1/2."""
    heads, kv, hd = SHAPES[k % len(SHAPES)]
    extra = {"attention_bias": True} if arch == "llama-bias" else {}
    model = os.path.join(tmp, f"m{k}")
    cfg, params = ref.new_checkpoint(model, seed=k, dtype=dtype, shards=shards,
                                     arch="llama" if arch.startswith("llama") else arch,
                                     tied=tied, heads=heads, kv_heads=kv, head_dim=hd,
                                     vocab=97 + 50 * (k % 3), **extra)
    seqs = sequences(cfg["vocab_size"], k)
    inp = os.path.join(tmp, f"in{k}.jsonl")
    files.write_jsonl(inp, [{"ids": s} for s in seqs])
    for temp in (1.0, 0.7):
        what = (f"{arch} tied={tied} {dtype} shards={shards} heads={heads}/{kv} head_dim={hd} "
                f"T={temp}")
        args = ["logprobs", "--model", model, "--input", inp, "--threads", 1 + k % 2]
        if temp != 1.0:
            args += ["--temperature", temp]
        r = proc.run_or1(or1, args)
        if not chk.ok(r.returncode == 0, f"{what}: exit {r.returncode}: {r.stderr.strip()}"):
            continue
        with torch.no_grad():
            want = [ref.sequence_logprobs(params, cfg, s, temp) for s in seqs]
        check_output(chk, what, r.stdout, want)


def check_stdin(chk, or1, tmp):
    """--input /dev/stdin gives the same rows as a file."""
    model = os.path.join(tmp, "stdin")
    cfg, params = ref.new_checkpoint(model, seed=99)
    seqs = sequences(cfg["vocab_size"], 99)
    text = "".join(json.dumps({"ids": s}) + "\n" for s in seqs)
    r = proc.run_or1(or1, ["logprobs", "--model", model, "--input", "/dev/stdin"], stdin=text)
    if chk.ok(r.returncode == 0, f"/dev/stdin: exit {r.returncode}: {r.stderr.strip()}"):
        with torch.no_grad():
            want = [ref.sequence_logprobs(params, cfg, s, 1.0) for s in seqs]
        check_output(chk, "/dev/stdin", r.stdout, want)


# RoPE as config.json spells it (the reference computes the frequencies as transformers does):
# Llama 3.1's llama3 scaling (R1-Distill-Llama-8B's factors, an original context of 32 so that
# sequences of 70 cross its bands), linear scaling, and transformers 5's rope_parameters with a
# theta of 1e6 and no top-level rope_theta (read as 10,000 it moves log-probs by far over 1e-2).
# YaRN three ways: as Qwen2.5/Qwen3 long-context configs give it (factor 4, the beta and mscale
# defaults; an original context of 32 puts the ramp on pairs 0-3 of 16, floored and ceiled);
# transformers 5's rope_parameters with every key (betas 16/2, mscale over mscale_all_dim, no
# truncation: the ramp runs between fractional ends 1.9 and 4.3); and the old "type" key with an
# explicit attention_factor on Llama.
ROPE_CONFIGS = {
    "llama3": dict(arch="llama", set=dict(rope_theta=500000.0, rope_scaling={
        "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 32})),
    "linear": dict(arch="qwen2", set=dict(rope_scaling={"type": "linear", "factor": 4.0})),
    "rope_parameters": dict(arch="qwen2", set=dict(rope_theta=None, rope_parameters={
        "rope_theta": 1000000.0, "rope_type": "default"})),
    "yarn": dict(arch="qwen2", set=dict(rope_scaling={
        "rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32})),
    "yarn rope_parameters": dict(arch="qwen2", set=dict(rope_theta=None, rope_parameters={
        "rope_theta": 1000000.0, "rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 512,
        "beta_fast": 16.0, "beta_slow": 2.0, "mscale": 1.0, "mscale_all_dim": 0.5, "truncate": False})),
    "yarn attention_factor": dict(arch="llama", set=dict(rope_scaling={
        "type": "yarn", "factor": 2.0, "attention_factor": 1.3, "original_max_position_embeddings": 16})),
}


def check_rope(chk, or1, tmp):
    """Each of ROPE_CONFIGS against the reference, with a head wide enough for many bands."""
    for k, (name, spec) in enumerate(ROPE_CONFIGS.items()):
        model = os.path.join(tmp, f"rope{k}")
        ref.new_checkpoint(model, seed=40 + k, arch=spec["arch"], tied=False, heads=2, kv_heads=1, head_dim=32)
        rollout.set_config(model, **spec["set"])
        cfg, params = ref.load_checkpoint(model)
        seqs = sequences(cfg["vocab_size"], 40 + k)
        inp = os.path.join(tmp, f"rope{k}.jsonl")
        files.write_jsonl(inp, [{"ids": s} for s in seqs])
        r = proc.run_or1(or1, ["logprobs", "--model", model, "--input", inp])
        if chk.ok(r.returncode == 0, f"rope {name}: exit {r.returncode}: {r.stderr.strip()}"):
            with torch.no_grad():
                want = [ref.sequence_logprobs(params, cfg, s, 1.0) for s in seqs]
            check_output(chk, f"rope {name}", r.stdout, want)


def check_wide_vocab(chk, or1, tmp):
    """A vocabulary of 8300 (over two 4096-entry blocks) with ids from every block."""
    model = os.path.join(tmp, "wide")
    cfg, params = ref.new_checkpoint(model, seed=77, vocab=8300, tied=True, dtype="BF16")
    seqs = sequences(cfg["vocab_size"], 77)
    seqs[4][:6] = [0, 4095, 4096, 8191, 8192, 8299]
    inp = os.path.join(tmp, "wide.jsonl")
    files.write_jsonl(inp, [{"ids": s} for s in seqs])
    r = proc.run_or1(or1, ["logprobs", "--model", model, "--input", inp, "--temperature", 0.7])
    if chk.ok(r.returncode == 0, f"vocab 8300: exit {r.returncode}: {r.stderr.strip()}"):
        with torch.no_grad():
            want = [ref.sequence_logprobs(params, cfg, s, 0.7) for s in seqs]
        check_output(chk, "vocab 8300", r.stdout, want)


def main():
    or1, arch = sys.argv[1], sys.argv[2]
    chk = Checker(f"logprobs {arch}")
    with tempfile.TemporaryDirectory() as tmp:
        if arch == "rope":
            check_rope(chk, or1, tmp)
            chk.finish()
        combos = itertools.product((False, True), ("F32", "BF16", "F16"), (1, 3))
        for k, (tied, dtype, shards) in enumerate(combos):
            check_variant(chk, or1, tmp, arch, k, tied, dtype, shards)
        if arch == "qwen2":
            check_stdin(chk, or1, tmp)
            check_wide_vocab(chk, or1, tmp)
    chk.finish()


if __name__ == "__main__":
    main()
