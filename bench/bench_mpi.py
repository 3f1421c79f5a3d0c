"""Step time of `or1 train` on one process with 2 OpenMP threads (the reference) against 2 MPI
ranks with 1 thread each, on the same small config, and the MPI_Allreduce traffic per step.

usage: bench_mpi.py --or1 build/or1 --root REPO [--steps 4] [--rounds 2] [--bandwidth-gbs 50]
                    [--latency-us 5]

The model is a random Qwen2-shaped checkpoint (hidden 128, 4 layers, SwiGLU 384, the demo
vocabulary, about 0.8M parameters) and the rows come from `or1 gen-arith`; rejection is off so
every step updates whatever the rewards (a random model solves nothing), and every response
runs to the context length, so the work per step is fixed. Each setting runs `--rounds` times,
alternating, and keeps its best mean step time over the steps after the first (a shared
machine's load varies). The allreduce traffic is counted by a small PMPI wrapper (compiled
here with mpicc, loaded with LD_PRELOAD into the 2-rank run): calls and bytes (count x type
size) per rank. The counted bytes are checked against the trainer's message plan:
  per mini-batch update  4 x parameters (fp32 gradient sum) + 6 x 8 (loss sums)
  per generation round   3 x 8 x N x M (score, length, truncation of every sample)
  per step               2 x 8 (entropy estimate)
and the plan gives the table for large models: ring allreduce moves 2 (p-1)/p x S bytes in and
out of every rank for a message of S bytes, in 2 (p-1) latency-bound steps, so the time is
2 (p-1)/p x S / bandwidth + 2 (p-1) x latency per message (gradients of 2^30 floats or more go
in 2^30-element chunks, one message each).
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

PMPI_WRAPPER = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
static long long calls, bytes;
int MPI_Allreduce(const void *s, void *r, int count, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
    int size;
    MPI_Type_size(t, &size);
    calls++;
    bytes += (long long)count * size;
    return PMPI_Allreduce(s, r, count, t, op, c);
}
int MPI_Finalize(void) {
    int rank;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *dir = getenv("OR1_BENCH_MPI_COUNTS");
    if (dir) {
        char path[4096];
        snprintf(path, sizeof path, "%s/rank%d.json", dir, rank);
        FILE *f = fopen(path, "w");
        if (f) {
            fprintf(f, "{\"calls\": %lld, \"bytes\": %lld}\n", calls, bytes);
            fclose(f);
        }
    }
    return PMPI_Finalize();
}
"""

N, M, T, MINI = 8, 8, 64, 4


def sh(cmd, env=None, **kw):
    """Runs a command, failing loudly."""
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, **kw)
    if p.returncode != 0:
        sys.exit(f"bench_mpi: {' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    return p


def setup(or1, root, work):
    """Tokenizer, random model and data rows; returns (model dir, data file, parameters)."""
    tok = os.path.join(work, "tok")
    sh([sys.executable, os.path.join(root, "demo", "make_tokenizer.py"), tok])
    t = json.load(open(os.path.join(tok, "tokenizer.json")))
    vocab = len(t["model"]["vocab"]) + len(t["added_tokens"])
    eos = [a["id"] for a in t["added_tokens"] if a["content"] == "<|endoftext|>"][0]
    cfg = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 128,
           "intermediate_size": 384, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
           "vocab_size": vocab, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": True,
           "max_position_embeddings": 512, "hidden_act": "silu", "bos_token_id": eos, "eos_token_id": eos}
    json.dump(cfg, open(os.path.join(work, "config.json"), "w"))
    model = os.path.join(work, "model")
    sh([or1, "init", "--config", os.path.join(work, "config.json"), "--out", model, "--seed", "1"])
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(tok, f), model)
    data = os.path.join(work, "rows.jsonl")
    sh([or1, "gen-arith", "--n", "256", "--seed", "1", "--out", data])
    h, i, L = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]
    kv = h // cfg["num_attention_heads"] * cfg["num_key_value_heads"]
    per_layer = h * h + 2 * h * kv + h * h + h + 2 * kv + 3 * h * i + 2 * h
    return model, data, vocab * h + L * per_layer + h


def train_config(work, model, data, out, steps):
    """The benchmark config (JSON is YAML)."""
    cfg = {"model": {"path": model, "chat_template": "plain"}, "data": {"train": [{"path": data}]},
           "rollout": {"n": M, "max_new_tokens": T},
           "train": {"prompts_per_step": N, "mini_batch": MINI, "steps": steps, "lr": 1e-4},
           "rejection": {"enabled": False}, "entropy": {"mode": "constant", "initial": 1e-3},
           "eval": {"every": 0}, "checkpoint": {"every": 0}, "output": {"dir": out}, "seed": 1}
    path = out + ".yaml"
    json.dump(cfg, open(path, "w"))
    return path


def step_seconds(out):
    """Mean seconds per step after the first, and the mean parts."""
    rows = [json.loads(x) for x in open(os.path.join(out, "metrics.jsonl"))][1:]
    mean = lambda k: sum(r[k] for r in rows) / len(rows)  # noqa: E731
    return {k: mean(k) for k in ("seconds_step", "seconds_rollout", "seconds_reward", "seconds_update")}


def run_setting(or1, ranks, threads, cfg, counts=None, preload=None):
    """One training run; returns its step times."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    out = json.load(open(cfg))["output"]["dir"]
    shutil.rmtree(out, ignore_errors=True)
    cmd = [or1, "train", "--config", cfg, "--threads", str(threads)]
    if ranks > 1:
        pre = ["-x", f"LD_PRELOAD={preload}", "-x", f"OR1_BENCH_MPI_COUNTS={counts}"] if preload else []
        cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np", str(ranks),
               "-x", f"OMP_NUM_THREADS={threads}", *pre, *cmd]
    sh(cmd, env=env, timeout=1800)
    return step_seconds(out)


def plan_bytes(params, n_sgd, steps, rounds_per_step=1):
    """Allreduce bytes per rank per step the trainer's message plan predicts."""
    per_step = n_sgd * (4 * params + 6 * 8) + rounds_per_step * 3 * 8 * N * M + 2 * 8
    return per_step, per_step * steps


def ring_seconds(size_bytes, p, bw, lat, chunk=4 << 30):
    """Ring-allreduce time of one logical message (split in chunks of at most 2^30 floats)."""
    msgs = max(1, math.ceil(size_bytes / chunk))
    return 2 * (p - 1) / p * size_bytes / bw + msgs * 2 * (p - 1) * lat


def table(bw, lat):
    """Markdown table: bytes per step and ring time for 1.5B, 7B, 32B on 8, 64, 256 ranks."""
    lines = ["| model | parameters | allreduce per step (N_SGD = 1) | bytes each rank sends, p = 8 / 64 / 256 | "
             "ring time, p = 8 / 64 / 256 |", "|---|---|---|---|---|"]
    samples = 256 * 16  # the 7B recipe's N x M
    for name, params in (("1.5B", 1.78e9), ("7B", 7.6e9), ("32B", 32.8e9)):
        s = 4 * params + 3 * 8 * samples + 6 * 8 + 2 * 8
        traffic = " / ".join(f"{2 * (p - 1) / p * s / 1e9:.1f} GB" for p in (8, 64, 256))
        times = " / ".join(f"{ring_seconds(s, p, bw, lat):.2f} s" for p in (8, 64, 256))
        lines.append(f"| {name} | {params:.3g} | {s / 1e9:.1f} GB | {traffic} | {times} |")
    return "\n".join(lines)


def main():
    """Times both settings, counts the messages, prints a summary and the table."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--or1", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--bandwidth-gbs", type=float, default=50.0, help="per-rank link bandwidth, GB/s")
    ap.add_argument("--latency-us", type=float, default=5.0)
    a = ap.parse_args()
    or1 = os.path.abspath(a.or1)
    with tempfile.TemporaryDirectory() as work:
        model, data, params = setup(or1, a.root, work)
        wrapper = os.path.join(work, "count_allreduce.so")
        src = os.path.join(work, "count_allreduce.c")
        open(src, "w").write(PMPI_WRAPPER)
        sh(["mpicc", "-shared", "-fPIC", "-O2", "-o", wrapper, src])
        counts = os.path.join(work, "counts")
        os.makedirs(counts)
        cfg1 = train_config(work, model, data, os.path.join(work, "one"), a.steps)
        cfg2 = train_config(work, model, data, os.path.join(work, "two"), a.steps)
        best = {}
        for r in range(a.rounds):
            for name, ranks, threads, cfg in (("1 rank x 2 threads", 1, 2, cfg1), ("2 ranks x 1 thread", 2, 1, cfg2)):
                t = run_setting(or1, ranks, threads, cfg, counts, wrapper if r == 0 else None)
                if name not in best or t["seconds_step"] < best[name]["seconds_step"]:
                    best[name] = t
        measured = [json.load(open(os.path.join(counts, f))) for f in sorted(os.listdir(counts))]
    ref, two = best["1 rank x 2 threads"], best["2 ranks x 1 thread"]
    per_step, total = plan_bytes(params, N // MINI, a.steps)
    print(f"config: {params} parameters, N={N} prompts x M={M} samples, T={T}, N_SGD={N // MINI}, "
          f"{a.steps} steps, best of {a.rounds} rounds")
    for name, t in best.items():
        print(f"  {name:20s} step {t['seconds_step']:.3f} s (rollout {t['seconds_rollout']:.3f}, "
              f"reward {t['seconds_reward']:.4f}, update {t['seconds_update']:.3f})")
    print(f"  ratio (2 ranks x 1 thread) / (1 rank x 2 threads) step time: {two['seconds_step'] / ref['seconds_step']:.2f}")
    for i, m in enumerate(measured):
        print(f"  rank {i}: {m['calls']} allreduce calls, {m['bytes']} bytes; plan {total} bytes "
              f"({per_step} per step): {'match' if m['bytes'] == total else 'MISMATCH'}")
    bw, lat = a.bandwidth_gbs * 1e9, a.latency_us * 1e-6
    print(f"\nring allreduce at {a.bandwidth_gbs:g} GB/s per rank, {a.latency_us:g} us per hop:")
    print(table(bw, lat))
    if any(m["bytes"] != total for m in measured):
        sys.exit("bench_mpi: counted allreduce bytes differ from the plan")


main()
