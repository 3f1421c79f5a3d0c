"""Decode speed: `or1 generate` against llama.cpp's llama-batched-bench on the same F32 weights.

usage: bench_llamacpp.py --or1 build/or1 --llama-dir LLAMA_CPP_BUILD [--threads 2]
                         [--shapes small,qwen] [--slots small=64,128,256:qwen=128]
                         [--rounds small=2:qwen=1] [--bf16 yes|no] [--kv f32|f16|bf16] [--fa off|on|auto]
                         [--precision fp32,bf16]

For each shape the rollout benchmark's random EOS-free F32 checkpoint (bench_rollout.SHAPES) is
written to a temporary folder, then the same weights as a GGUF file for llama.cpp: F32, and BF16
(2-D weights rounded to bfloat16, norms and biases kept F32) for a second llama.cpp column. The
GGUF is written with llama.cpp's own gguf-py package (imported from the llama.cpp source tree),
architecture qwen2, tokenizer "none" with the checkpoint's vocabulary size: neither side reads text.

Every run is B sequences (B = slots), each a random 32-token prompt followed by exactly 128 new
tokens, all B decoding together. llama.cpp: `llama-batched-bench -npp 32 -ntg 128 -npl B` with an
F32 KV cache like or1's and flash attention off (--kv, --fa), batch 2048, micro-batch 512; its S_TG
column (B x 128 tokens over the 128 decode steps that follow the prefill; its prefill is timed
apart). or1: `or1 generate --n 1 --max-slots B --precision P` on B such prompts, one column for
each P of --precision (default fp32 and bf16); decode-only time is that
run's minus the time of the same run with one new token (loading, prefill and the first token),
for B x 127 tokens. The sides alternate for several rounds and each keeps its best; the load
average is printed beside each round, since the machine is shared.

FLOPs of decode: 2 x matmul parameters (projections, MLP, head) x tokens, the same count for both
sides; attention is not counted. llama.cpp computes every step's logits but samples nothing;
or1's time includes temperature-1 sampling of every token and its log-prob.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from or1test import files
from bench_common import random_checkpoint
from bench_rollout import SHAPES, matmul_params, run_or1

PROMPT, NEW = 32, 128  # prompt tokens and new tokens of every sequence, as in the run


def parse_per_shape(text, flag):
    """'small=64,128:qwen=128' -> {'small': [64, 128], 'qwen': [128]}; exits naming the flag."""
    out = {}
    for part in text.split(":"):
        name, sep, values = part.partition("=")
        try:
            if not sep or name not in SHAPES:
                raise ValueError(part)
            out[name] = [int(v) for v in values.split(",")]
        except ValueError:
            raise SystemExit(f"bench_llamacpp: {flag}: bad entry '{part}' (want SHAPE=N[,N...], "
                             f"shapes {','.join(SHAPES)})")
    return out


def gguf_tensor_name(hf):
    """The GGUF (llama.cpp) name of a Hugging Face Qwen2 parameter name."""
    fixed = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
             "lm_head.weight": "output.weight"}
    if hf in fixed:
        return fixed[hf]
    parts = hf.split(".")  # model.layers.<i>.<module>.<proj>.<weight|bias> or ...<norm>.weight
    layer, rest = parts[2], ".".join(parts[3:-1])
    names = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
             "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
             "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
             "mlp.down_proj": "ffn_down"}
    return f"blk.{layer}.{names[rest]}.{parts[-1]}"


def write_gguf(gguf, path, cfg, params, bf16):
    """Writes the checkpoint as a qwen2 GGUF file: F32, or BF16 matrices with F32 vectors."""
    w = gguf.GGUFWriter(path, "qwen2")
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(cfg["num_attention_heads"])
    w.add_head_count_kv(cfg["num_key_value_heads"])
    w.add_rope_freq_base(cfg["rope_theta"])
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    w.add_file_type(gguf.LlamaFileType.MOSTLY_BF16 if bf16 else gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("none")
    w.add_vocab_size(cfg["vocab_size"])
    for name, t in params.items():
        a = t.numpy().astype(np.float32)
        if bf16 and a.ndim == 2:
            w.add_tensor(gguf_tensor_name(name), gguf.quants.quantize(a, gguf.GGMLQuantizationType.BF16),
                         raw_dtype=gguf.GGMLQuantizationType.BF16)
        else:
            w.add_tensor(gguf_tensor_name(name), a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def run_llama(args, model, slots):
    """Decode tokens/s (S_TG) of one llama-batched-bench process with `slots` sequences."""
    t = str(args.threads)
    cmd = [args.bench, "-m", model, "-c", str(slots * (PROMPT + NEW)), "-b", "2048", "-ub", "512",
           "-npp", str(PROMPT), "-ntg", str(NEW), "-npl", str(slots), "-t", t, "-tb", t,
           "-ctk", args.kv, "-ctv", args.kv, "-fa", args.fa, "--output-format", "jsonl"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    rows = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    if r.returncode != 0 or len(rows) != 1:
        tail = "\n".join(r.stderr.strip().splitlines()[-5:])
        raise SystemExit(f"llama-batched-bench failed ({r.returncode}) on {model}:\n{tail}")
    return rows[0]["speed_tg"]


def or1_decode_rate(args, model, inp, slots, precision):
    """Decode tokens/s of one or1 round: the full run's time minus the time of the L=1 run."""
    one, _ = run_or1(args.or1, model, inp, 1, 1, args.threads, slots, precision)
    full, _ = run_or1(args.or1, model, inp, 1, NEW, args.threads, slots, precision)
    return slots * (NEW - 1) / max(full - one, 1e-9)


def measure(args, name, cfg, model, ggufs, slots, rounds):
    """Best-of-rounds decode rates of or1 and each llama.cpp file for one slot count; one row."""
    g = np.random.default_rng(slots)
    inp = files.write_jsonl(os.path.join(os.path.dirname(model), f"p{slots}.jsonl"),
                            [{"prompt_ids": g.integers(0, cfg["vocab_size"], PROMPT).tolist()}
                             for _ in range(slots)])
    best = {**{f"or1 {p}": 0.0 for p in args.precisions}, **{k: 0.0 for k in ggufs}}
    for i in range(rounds):
        t0 = time.perf_counter()
        got = {f"or1 {p}": or1_decode_rate(args, model, inp, slots, p) for p in args.precisions}
        for kind, path in ggufs.items():
            got[kind] = run_llama(args, path, slots)
        best = {k: max(best[k], got[k]) for k in best}
        print(f"{name} {slots} slots round {i + 1}: " + ", ".join(f"{k} {v:.0f} tok/s" for k, v in got.items())
              + f"  ({time.perf_counter() - t0:.0f} s) [load average {os.getloadavg()[0]:.1f}]", flush=True)
    return dict(shape=name, slots=slots, **best, flop=2 * matmul_params(cfg))


def main():
    """Parses the flags, writes each shape's checkpoint and GGUF files, measures, prints the table."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--or1", required=True)
    ap.add_argument("--llama-dir", required=True, help="llama.cpp build folder (bin/llama-batched-bench)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--shapes", default="small,qwen")
    ap.add_argument("--slots", default="small=64,128,256:qwen=128")
    ap.add_argument("--rounds", default="small=2:qwen=1")
    ap.add_argument("--bf16", choices=["yes", "no"], default="yes", help="also run llama.cpp on BF16 weights")
    ap.add_argument("--precision", default="fp32,bf16", help="or1's --precision values, one column each")
    ap.add_argument("--kv", choices=["f32", "f16", "bf16"], default="f32", help="llama.cpp's KV cache type")
    # With an F32 cache, llama.cpp's CPU flash attention converts keys and values to F16 every step;
    # its plain attention was about 1.6x faster at the small shape, 128 slots.
    ap.add_argument("--fa", choices=["off", "on", "auto"], default="off", help="llama.cpp's flash attention")
    args = ap.parse_args()
    args.precisions = args.precision.split(",")
    if not args.precisions or any(p not in ("fp32", "bf16") for p in args.precisions):
        raise SystemExit(f"bench_llamacpp: --precision: '{args.precision}' is not a list of fp32, bf16")
    slots, rounds = parse_per_shape(args.slots, "--slots"), parse_per_shape(args.rounds, "--rounds")
    args.bench = os.path.join(args.llama_dir, "bin", "llama-batched-bench")
    src = os.environ.get("LLAMA_CPP_SRC", os.path.dirname(os.path.abspath(args.llama_dir)))
    sys.path.insert(0, os.path.join(src, "gguf-py"))
    try:
        import gguf
    except ImportError as e:
        raise SystemExit(f"bench_llamacpp: cannot import gguf-py from {src}/gguf-py ({e}); "
                         "set LLAMA_CPP_SRC to the llama.cpp source tree")
    use_bf16 = args.bf16 == "yes"
    print(f"threads {args.threads}; llama.cpp KV cache {args.kv}, flash attention {args.fa}; "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    rows = []
    for name in args.shapes.split(","):
        if name not in SHAPES:
            raise SystemExit(f"bench_llamacpp: --shapes: unknown shape '{name}' (have {','.join(SHAPES)})")
        with tempfile.TemporaryDirectory() as tmp:
            model, cfg, params = random_checkpoint(tmp, SHAPES[name]["cfg"])
            ggufs = {"llama.cpp F32": os.path.join(tmp, "f32.gguf")}
            if use_bf16:
                ggufs["llama.cpp BF16"] = os.path.join(tmp, "bf16.gguf")
            for kind, path in ggufs.items():
                write_gguf(gguf, path, cfg, params, kind.endswith("BF16"))
            del params
            for s in slots.get(name, []):
                rows.append(measure(args, name, cfg, model, ggufs, s, rounds.get(name, [1])[0]))
    print_table(rows)


def print_table(rows):
    """The results as one Markdown table: decode tok/s of each side, each or1 column over each
    llama.cpp column, GFLOP/s."""
    if not rows:
        return
    ours = [k for k in rows[0] if k.startswith("or1 ")]
    kinds = [k for k in rows[0] if k.startswith("llama.cpp")]
    head = ["shape", "slots"] + [f"{k} tok/s" for k in ours + kinds] \
        + [f"{o} / {k}" for o in ours for k in kinds] + [f"{k} GFLOP/s" for k in ours + kinds]
    print()
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        cells = [r["shape"], str(r["slots"])] + [f"{r[k]:.0f}" for k in ours + kinds] \
            + [f"{r[o] / r[k]:.2f}" for o in ours for k in kinds] \
            + [f"{r[k] * r['flop'] / 1e9:.1f}" for k in ours + kinds]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
