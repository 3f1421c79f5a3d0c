"""or1 beside llama.cpp and PyTorch on a real model: SmolLM2-135M-Instruct (Llama, 30 layers,
width 576, 9 query and 3 KV heads of 64, FFN 1536, tied embeddings, vocabulary 49152).

usage: bench_smollm2.py --or1 build/or1 --model SmolLM2-135M-Instruct.Q4_1.gguf
                        --llama-python build/venv/bin/python [--sgemm build/bench_sgemm]
                        [--threads 2] [--slots 1,64] [--rounds 3] [--parts decode,train]
                        [--train-rounds 2] [--train-iters 1]

The Q4_1 file is dequantized once by `or1 convert` into three forms of the same weights: a
Hugging Face folder (F32 safetensors) that or1 runs and PyTorch loads, and F32 and BF16 GGUF files
(norms F32) that llama.cpp runs. The folder's config.json loses its eos_token_id, so that no
sample of or1 ends before its last token; llama.cpp's loop never stops on a token either.

decode: B sequences (--slots), each a random 32-token prompt (the same prompts on both sides),
then exactly 128 new tokens, all B decoding together. or1: `or1 generate --n 1 --max-slots B
--precision fp32|bf16 --temperature 1` on the B prompts, decode-only time = that run's minus the
time of the same run with one new token (loading, prefill, first token), for B x 127 tokens;
its time includes temperature-1 sampling and each token's log-prob. llama.cpp: llama-cpp-python
0.3.36's low-level API in its own process (bench/smollm2_llama.py: one llama_decode of B tokens
a step, F32 KV cache, flash attention off, argmax in numpy), the F32 and the BF16 file, timed
over its 127 decode steps. Sides alternate within each round, or1 fp32, llama.cpp F32, or1
bf16, llama.cpp BF16; each keeps its best round and the range is printed. Tokens per CPU-second
of decode (or1: the CPU time of the two runs' difference; llama.cpp: its process's CPU time over
the decode steps) are printed too, being less sensitive to other processes than wall time. A greedy check first:
or1's 16 greedy tokens after the 1-sequence prompt against llama.cpp's (F32).

train: `or1 grad --bench-iters N` (eq. 3.1, entropy coefficient 1e-3, fp32) on 8 sequences of 128
random tokens (32 prompt, 96 response) against bench/bench_model.py's PyTorch fp32 model and loss
(forward + backward, the vocabulary head over response positions only) on the real weights, the
two alternating for --train-rounds rounds. Checked first: PyTorch's loss and gradient norm on a
small batch equal or1's (`or1 grad --out`) on the same weights.

FLOPs: decode 2 x matmul parameters (projections, MLP, head: 134.5M) x tokens; training as
bench_model.flops (6 x matmul parameters x tokens plus causal attention). The fraction is of
OpenBLAS sgemm at n = 1024 on the same threads (--sgemm; n/a without it). The load average is
printed beside every round (the machine may be shared).
"""
import argparse
import json
import math
import os
import subprocess
import tempfile
import time

import numpy as np
import torch

from or1test import files, ref  # the tests' JSONL writer and checkpoint reader
from bench_common import sgemm_rate
import bench_model
from bench_rollout import matmul_params, run_or1

PROMPT, NEW, GREEDY = 32, 128, 16
TRAIN = dict(seqs=8, seq_len=128, prompt=32)
SIDES = [("or1 fp32", "fp32"), ("llama.cpp F32", "f32.gguf"), ("or1 bf16", "bf16"), ("llama.cpp BF16", "bf16.gguf")]
PAIRS = [("or1 fp32", "llama.cpp F32"), ("or1 bf16", "llama.cpp BF16")]


def sh(cmd):
    """Runs a command; stops with its stderr's tail if it fails; returns its stdout."""
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        tail = "\n".join(r.stderr.strip().splitlines()[-5:])
        raise SystemExit(f"bench_smollm2: {' '.join(cmd[:3])} ... failed ({r.returncode}):\n{tail}")
    return r.stdout


def load():
    """The 1-minute load average, for printing."""
    return f"load average {os.getloadavg()[0]:.2f}"


def prepare(args, tmp):
    """The folder (no EOS) and the F32 and BF16 GGUF files of the model under tmp; the folder."""
    folder = os.path.join(tmp, "hf")
    t = str(args.threads)
    sh([args.or1, "convert", "--model", args.model, "--out", folder, "--threads", t])
    for kind in ("f32", "bf16"):
        sh([args.or1, "convert", "--model", args.model, "--out", os.path.join(tmp, f"{kind}.gguf"),
            "--type", kind, "--threads", t])
    path = os.path.join(folder, "config.json")
    with open(path) as f:
        cfg = json.load(f)
    cfg.pop("eos_token_id", None)
    with open(path, "w") as f:
        json.dump(cfg, f, indent=1)
    gen = os.path.join(folder, "generation_config.json")
    if os.path.exists(gen):
        os.remove(gen)
    return folder


def write_prompts(tmp, slots, vocab):
    """slots random prompts of PROMPT tokens, as or1's JSONL and llama.cpp's JSON; both paths."""
    g = np.random.default_rng(slots)
    prompts = [g.integers(0, vocab, PROMPT).tolist() for _ in range(slots)]
    jl = files.write_jsonl(os.path.join(tmp, f"p{slots}.jsonl"), [{"prompt_ids": p} for p in prompts])
    js = os.path.join(tmp, f"p{slots}.json")
    with open(js, "w") as f:
        json.dump(prompts, f)
    return jl, js


def llama_run(args, gguf, prompts, new):
    """One llama.cpp process (bench/smollm2_llama.py); its result dict."""
    worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "smollm2_llama.py")
    out = sh([args.llama_python, worker, "--model", gguf, "--prompts", prompts, "--new", str(new),
              "--threads", str(args.threads)])
    return json.loads(out.strip().splitlines()[-1])


def or1_rate(args, folder, inp, slots, precision):
    """(decode tokens/s, decode tokens per CPU-second) of one or1 round: full run minus L=1 run."""
    one, one_cpu = run_or1(args.or1, folder, inp, 1, 1, args.threads, slots, precision)
    full, full_cpu = run_or1(args.or1, folder, inp, 1, NEW, args.threads, slots, precision)
    tokens = slots * (NEW - 1)
    return tokens / max(full - one, 1e-9), tokens / max(full_cpu - one_cpu, 1e-9)


def llama_rate(args, gguf, prompts):
    """(decode tokens/s, decode tokens per CPU-second, share of the time in the argmax) of one
    llama.cpp round."""
    r = llama_run(args, gguf, prompts, NEW)
    n = r["decode_tokens"]
    return n / r["decode_s"], n / max(r["decode_cpu_s"], 1e-9), r["pick_s"] / r["decode_s"]


def greedy_check(args, tmp, folder):
    """or1's greedy tokens after the 1-sequence prompt against llama.cpp's on the F32 file."""
    jl, js = write_prompts(tmp, 1, 49152)
    out = sh([args.or1, "generate", "--model", folder, "--input", jl, "--temperature", "0",
              "--max-new-tokens", str(GREEDY), "--threads", str(args.threads)])
    ours = json.loads(out.splitlines()[0])["response_ids"]
    theirs = llama_run(args, os.path.join(tmp, "f32.gguf"), js, GREEDY)["tokens"][0]
    same = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), GREEDY)
    print(f"greedy check: or1 and llama.cpp (F32) agree on the first {same} of {GREEDY} tokens", flush=True)
    if same == 0:
        raise SystemExit(f"bench_smollm2: or1 {ours} and llama.cpp {theirs} differ from the first token")


def measure_decode(args, tmp, folder, slots):
    """Rounds of every side at `slots` sequences; {side: [(tok/s, tok/CPU-s), ...]}."""
    jl, js = write_prompts(tmp, slots, 49152)
    got = {side: [] for side, _ in SIDES}
    for i in range(args.rounds):
        t0, picks = time.perf_counter(), []
        for side, what in SIDES:
            if side.startswith("or1"):
                got[side].append(or1_rate(args, folder, jl, slots, what))
            else:
                rate, per_cpu, pick = llama_rate(args, os.path.join(tmp, what), js)
                got[side].append((rate, per_cpu))
                picks.append(pick)
        print(f"{slots} seq round {i + 1}: " + ", ".join(f"{s} {got[s][-1][0]:.1f}" for s, _ in SIDES)
              + f" tok/s (llama.cpp argmax {100 * max(picks):.1f}% of its time; {time.perf_counter() - t0:.0f} s)"
              f" [{load()}]", flush=True)
    return got


def decode_table(rows, flop, peak):
    """The decode results as a Markdown table: best tok/s (range), ratios, GFLOP/s, of sgemm."""
    print("\n| sequences | side | tok/s best (range) | tok per CPU-s | GFLOP/s | of sgemm |")
    print("|---|---|---|---|---|---|")
    for slots, got in rows:
        for side, _ in SIDES:
            r = [x[0] for x in got[side]]
            g = max(r) * flop / 1e9
            frac = "n/a" if peak is None else f"{g / peak:.2f}"
            print(f"| {slots} | {side} | {max(r):.1f} ({min(r):.1f}-{max(r):.1f}) | "
                  f"{max(x[1] for x in got[side]):.1f} | {g:.1f} | {frac} |")
    print("\n| sequences | or1 fp32 / llama.cpp F32 | or1 bf16 / llama.cpp BF16 | (per CPU-s) |")
    print("|---|---|---|---|")
    for slots, got in rows:
        best = {s: max(x[0] for x in got[s]) for s, _ in SIDES}
        cpu = {s: max(x[1] for x in got[s]) for s, _ in SIDES}
        print(f"| {slots} | {best[PAIRS[0][0]] / best[PAIRS[0][1]]:.2f} | {best[PAIRS[1][0]] / best[PAIRS[1][1]]:.2f}"
              f" | {cpu[PAIRS[0][0]] / cpu[PAIRS[0][1]]:.2f}, {cpu[PAIRS[1][0]] / cpu[PAIRS[1][1]]:.2f} |")


def train_batch(seed=0, **spec):
    """bench_model's batch of spec['seqs'] random rows, advantages +-1."""
    cfg = {"vocab_size": 49152}
    return bench_model.make_batch(cfg, spec, seed)


def train_check(args, tmp, folder, cfg, params):
    """PyTorch's loss and gradient norm on a small batch of the real weights against or1's."""
    batch = train_batch(seed=1, seqs=2, seq_len=40, prompt=8)
    path = files.write_jsonl(os.path.join(tmp, "check.jsonl"), batch)
    out = sh([args.or1, "grad", "--model", folder, "--batch", path, "--entropy-coef", str(bench_model.ENT_COEF),
              "--threads", str(args.threads), "--out", os.path.join(tmp, "g.safetensors")])
    ours = json.loads(out.splitlines()[0])
    model = bench_model.TorchModel(cfg, params)
    loss = model.loss(*bench_model.packed(batch))
    loss.backward()
    norm = math.sqrt(sum(float(t.grad.double().pow(2).sum()) for t in model.p.values() if t.grad is not None))
    print(f"training check: loss or1 {ours['loss']:.7f} torch {loss.item():.7f}; gradient norm or1 "
          f"{ours['grad_norm']:.5f} torch {norm:.5f}", flush=True)
    if abs(ours["loss"] - loss.item()) > 1e-4 * abs(ours["loss"]) + 1e-7 or abs(ours["grad_norm"] - norm) > 1e-3 * norm:
        raise SystemExit("bench_smollm2: PyTorch's model is not or1's on these weights")


def measure_train(args, tmp, folder, peak):
    """or1 grad against PyTorch on TRAIN, alternating; prints the rounds and the table."""
    cfg, params = ref.load_checkpoint(folder)
    params = {n: t.to(torch.float32) for n, t in params.items()}
    train_check(args, tmp, folder, cfg, params)
    batch = train_batch(**TRAIN)
    path = files.write_jsonl(os.path.join(tmp, "train.jsonl"), batch)
    runner = bench_model.TorchRunner(cfg, params, batch)
    del params
    t_or1, t_torch = [], []
    for i in range(args.train_rounds):
        got = bench_model.run_or1(args.or1, folder, path, args.train_iters, args.threads, "fp32")
        t_or1.append(got["seconds_per_iter"])
        t_torch.append(runner.seconds(args.train_iters))
        print(f"train round {i + 1}: or1 {t_or1[-1]:.2f} s/step, torch {t_torch[-1]:.2f} s/step [{load()}]",
              flush=True)
    tokens, f = got["tokens"], bench_model.flops(cfg, batch)
    o, t = min(t_or1), min(t_torch)
    frac = "n/a" if peak is None else f"{f / o / 1e9 / peak:.2f}"
    print("\n| batch | tokens | or1 s/step (range) | torch s/step (range) | or1 tok/s | torch tok/s | or1/torch |"
          " or1 GFLOP/s | torch GFLOP/s | or1 of sgemm |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print(f"| {TRAIN['seqs']} x {TRAIN['seq_len']} | {tokens} | {o:.2f} ({o:.2f}-{max(t_or1):.2f}) | "
          f"{t:.2f} ({t:.2f}-{max(t_torch):.2f}) | {tokens / o:.0f} | {tokens / t:.0f} | {t / o:.2f} | "
          f"{f / o / 1e9:.1f} | {f / t / 1e9:.1f} | {frac} |")


def main():
    """Parses the flags, makes the model's three forms, runs the parts asked for."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--or1", required=True)
    ap.add_argument("--model", required=True, help="SmolLM2-135M-Instruct.Q4_1.gguf")
    ap.add_argument("--llama-python", required=True, help="a Python that imports llama_cpp")
    ap.add_argument("--sgemm")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--slots", default="1,64", help="sequences decoding together, one row each")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--parts", default="decode,train")
    ap.add_argument("--train-rounds", type=int, default=2)
    ap.add_argument("--train-iters", type=int, default=1)
    args = ap.parse_args()
    parts = args.parts.split(",")
    if any(p not in ("decode", "train") for p in parts):
        raise SystemExit(f"bench_smollm2: --parts: '{args.parts}' is not a list of decode, train")
    torch.set_num_threads(args.threads)
    peak = sgemm_rate(args.sgemm, args.threads)
    print(f"threads {args.threads}; OpenBLAS sgemm (n=1024): {'n/a' if peak is None else f'{peak:.1f} GFLOP/s'}; "
          f"{load()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        folder = prepare(args, tmp)
        if "decode" in parts:
            with open(os.path.join(folder, "config.json")) as f:
                flop = 2 * matmul_params(json.load(f))
            greedy_check(args, tmp, folder)
            rows = [(s, measure_decode(args, tmp, folder, s)) for s in map(int, args.slots.split(","))]
            decode_table(rows, flop, peak)
            print()
        if "train" in parts:
            measure_train(args, tmp, folder, peak)


if __name__ == "__main__":
    main()
