"""Rollout throughput: `or1 generate` against a PyTorch sampler with a KV cache, same run.

usage: bench_rollout.py --or1 build/or1 [--sgemm build/bench_sgemm] [--threads 2]
                        [--shapes small,qwen] [--slots 64,128,256] [--long auto|yes|no]
                        [--precision fp32|bf16]

--precision bf16 runs or1 with --precision bf16 and the PyTorch side with bf16 weights, activations
and KV cache (RMSNorm and softmaxes in fp32), as a bf16 inference in PyTorch runs on a CPU.

For each shape a random EOS-free F32 checkpoint and P random prompts (16 to 48 tokens) are written
to a temporary directory; every prompt gets S samples of exactly L new tokens at temperature 1 (no
top-p/top-k), so both sides generate P*S*L tokens; each --slots value B gives a run of B / S prompts. or1 runs as a process with --max-slots P*S (every
sample in one decode batch); its time includes loading the checkpoint. The PyTorch side (fp32 or bf16,
torch.set_num_threads = or1's --threads) prefills each prompt once, copies its keys and values to
its S samples' rows of a padded [B, kv_heads, max_len, head_dim] cache per layer, then decodes all
B = P*S samples together as [B, 1] steps: per-row positions, per-row cache writes, attention masked
past each row's length, multinomial sampling and the sampled token's log-prob, as or1 does.
Decode-only rates exclude prefill and the first token: for or1, the time of a run with L = 1 is
subtracted (tokens P*S*(L-1)); PyTorch times its decode loop directly.
FLOPs of decode: 2 x matmul parameters (projections, MLP, head) x tokens; attention is not counted.
The two sides alternate for a few rounds and each keeps its best, since a shared machine's load
varies; the load average is printed beside each round, and the ratio of tokens per CPU-second (the
processes' user + system time) is given besides the wall-clock one, being less sensitive to load.
"""
import argparse
import json
import math
import os
import resource
import subprocess
import tempfile
import time

import torch

from or1test import files, ref  # the tests' checkpoint writer and float64 reference
from bench_common import common_args, random_checkpoint, start

SHAPES = {  # samples per prompt, new tokens, rounds; the prompt count follows --slots
    "small": dict(cfg=dict(arch="qwen2", hidden=256, inter=704, layers=6, heads=8, kv_heads=2,
                           vocab=300, tied=False),
                  samples=8, new=128, rounds=2, long=(64, 8, 512, 1)),
    "qwen": dict(cfg=dict(arch="qwen2", hidden=896, inter=4864, layers=4, heads=14, kv_heads=2,
                          vocab=151936, tied=True),
                 samples=4, new=128, rounds=1, long=None),
}
LONG_BUDGET_S = 180
F32 = torch.float32  # ref.py makes float64 the default dtype


def prompts_for(vocab, n, seed=0):
    """n random prompts of 16 to 48 tokens."""
    g = torch.Generator().manual_seed(seed)
    lens = torch.randint(16, 49, (n,), generator=g).tolist()
    return [ref.random_ids(g, vocab, k) for k in lens]


class TorchSampler:
    """The decoder in PyTorch (fp32, or bf16 weights, activations and KV cache with RMSNorm and the
    softmaxes in fp32) with a padded, masked KV cache, written for speed."""

    def __init__(self, cfg, params, dtype=F32):
        self.cfg, self.dt = cfg, dtype
        self.p = {n: t.to(dtype).contiguous() for n, t in params.items()}
        self.head = self.p.get("lm_head.weight", self.p["model.embed_tokens.weight"])
        self.hd = ref.head_dim_of(cfg)
        self.nh, self.nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
        inv = cfg["rope_theta"] ** (-torch.arange(0, self.hd, 2, dtype=torch.float32) / self.hd)
        ang = torch.arange(cfg["max_position_embeddings"], dtype=torch.float32)[:, None] * inv[None, :]
        self.cos = torch.cat([ang.cos(), ang.cos()], -1).to(dtype)
        self.sin = torch.cat([ang.sin(), ang.sin()], -1).to(dtype)

    def lin(self, x, name):
        """x @ W^T + b."""
        return torch.nn.functional.linear(x, self.p[name + ".weight"], self.p.get(name + ".bias"))

    def rope(self, x, pos):
        """Rotary embedding of [N, heads, hd] rows at positions pos [N]."""
        h = self.hd // 2
        c, s = self.cos[pos][:, None, :], self.sin[pos][:, None, :]
        return x * c + torch.cat([-x[..., h:], x[..., :h]], -1) * s

    def norm(self, x, name):
        """RMSNorm."""
        eps, xf = self.cfg["rms_norm_eps"], x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(self.dt) * self.p[name]

    def layers(self, h, pos, attend):
        """The decoder stack; attend(l, q, k, v) does attention for layer l."""
        N = h.shape[0]
        for l in range(self.cfg["num_hidden_layers"]):
            pre = f"model.layers.{l}."
            x = self.norm(h, pre + "input_layernorm.weight")
            q = self.rope(self.lin(x, pre + "self_attn.q_proj").view(N, self.nh, self.hd), pos)
            k = self.rope(self.lin(x, pre + "self_attn.k_proj").view(N, self.nkv, self.hd), pos)
            v = self.lin(x, pre + "self_attn.v_proj").view(N, self.nkv, self.hd)
            h = h + self.lin(attend(l, q, k, v).reshape(N, self.nh * self.hd), pre + "self_attn.o_proj")
            x = self.norm(h, pre + "post_attention_layernorm.weight")
            m = torch.nn.functional.silu(self.lin(x, pre + "mlp.gate_proj")) * self.lin(x, pre + "mlp.up_proj")
            h = h + self.lin(m, pre + "mlp.down_proj")
        return self.norm(h, "model.norm.weight")

    def prefill(self, ids):
        """Causal forward of one prompt: ([layers] of (k, v) [kv, n, hd], last hidden [H])."""
        n, g = len(ids), self.nh // self.nkv
        kv = []
        mask = torch.full((n, n), float("-inf"), dtype=self.dt).triu(1)

        def attend(l, q, k, v):
            """Causal attention of the prompt; keeps layer l's keys and values."""
            kv.append((k.transpose(0, 1), v.transpose(0, 1)))
            qs = q.view(n, self.nkv, g, self.hd).permute(1, 2, 0, 3)          # [kv, g, n, hd]
            s = qs @ k.permute(1, 2, 0)[:, None] / math.sqrt(self.hd) + mask  # [kv, g, n, n]
            o = s.float().softmax(-1).to(self.dt) @ v.transpose(0, 1)[:, None]  # [kv, g, n, hd]
            return o.permute(2, 0, 1, 3)

        h = self.layers(self.p["model.embed_tokens.weight"][torch.tensor(ids)], torch.arange(n), attend)
        return kv, h[-1]

    def sample(self, h, temperature, gen, greedy=False):
        """Next tokens and their log-probs from final hidden states [B, H]."""
        logp = torch.log_softmax((h @ self.head.T).float() / temperature, -1)
        tok = logp.argmax(-1) if greedy else torch.multinomial(logp.exp(), 1, generator=gen)[:, 0]
        return tok, logp.gather(1, tok[:, None])[:, 0]

    def generate(self, prompts, n, new, temperature=1.0, seed=0, greedy=False):
        """n samples of `new` tokens per prompt; returns (tokens [B, new], seconds to first token,
        seconds of the decode loop)."""
        gen = torch.Generator().manual_seed(seed)
        B, L, g = len(prompts) * n, max(map(len, prompts)) + new, self.nh // self.nkv
        t0 = time.perf_counter()
        kc = [torch.zeros(B, self.nkv, L, self.hd, dtype=self.dt) for _ in range(self.cfg["num_hidden_layers"])]
        vc = [torch.zeros(B, self.nkv, L, self.hd, dtype=self.dt) for _ in range(self.cfg["num_hidden_layers"])]
        last = torch.empty(B, self.cfg["hidden_size"], dtype=self.dt)
        for i, ids in enumerate(prompts):
            kv, h = self.prefill(ids)
            rows = slice(i * n, (i + 1) * n)
            for l, (k, v) in enumerate(kv):
                kc[l][rows, :, :len(ids)] = k
                vc[l][rows, :, :len(ids)] = v
            last[rows] = h
        lens = torch.tensor([len(p) for p in prompts]).repeat_interleave(n)
        out = torch.empty(B, new, dtype=torch.long)
        out[:, 0], _ = self.sample(last, temperature, gen, greedy)
        t1 = time.perf_counter()
        rows = torch.arange(B)
        for step in range(1, new):
            pos = lens + step - 1           # position of the token being fed
            width = int(pos.max()) + 1
            valid = torch.arange(width)[None, :] <= pos[:, None]
            bias = torch.zeros(B, 1, 1, width, dtype=self.dt).masked_fill(~valid[:, None, None, :], float("-inf"))

            def attend(l, q, k, v):
                """Writes each row's new key/value at its position, attends over its length."""
                kc[l][rows, :, pos] = k
                vc[l][rows, :, pos] = v
                qs = q.view(B, self.nkv, g, self.hd)
                s = qs @ kc[l][:, :, :width].transpose(-1, -2) / math.sqrt(self.hd) + bias
                return s.float().softmax(-1).to(self.dt) @ vc[l][:, :, :width]  # [B, kv, g, hd]

            h = self.layers(self.p["model.embed_tokens.weight"][out[:, step - 1]], pos, attend)
            out[:, step], _ = self.sample(h, temperature, gen, greedy)
        return out, t1 - t0, time.perf_counter() - t1


def self_check():
    """The PyTorch sampler's greedy decode must be the float64 reference's (tiny model)."""
    with tempfile.TemporaryDirectory() as tmp:
        cfg, params = ref.new_checkpoint(os.path.join(tmp, "m"), arch="qwen2", heads=4, kv_heads=2)
        prompts = prompts_for(cfg["vocab_size"], 3, seed=1)
        got, _, _ = TorchSampler(cfg, params).generate(prompts, 2, 8, greedy=True)
        for i, p in enumerate(prompts):
            seq = list(p)
            with torch.no_grad():
                for _ in range(8):
                    seq.append(int(ref.forward_logits(params, cfg, seq)[-1].argmax()))
            for j in range(2):
                assert got[i * 2 + j].tolist() == seq[len(p):], (i, j, got[i * 2 + j].tolist(), seq[len(p):])


def matmul_params(cfg):
    """Weights multiplied per generated token: projections, MLP and the head."""
    H, I, L = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]
    q, kv = cfg["num_attention_heads"] * ref.head_dim_of(cfg), cfg["num_key_value_heads"] * ref.head_dim_of(cfg)
    return L * (2 * H * q + 2 * H * kv + 3 * H * I) + cfg["vocab_size"] * H


def child_cpu():
    """CPU seconds (user + system) used so far by finished child processes."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_or1(or1, model, inp, n, new, threads, slots, precision):
    """(wall, CPU) seconds of one `or1 generate` process, after checking its output is complete."""
    t0, c0 = time.perf_counter(), child_cpu()
    r = subprocess.run([or1, "generate", "--model", model, "--input", inp, "--n", str(n), "--max-new-tokens",
                        str(new), "--seed", "1", "--threads", str(threads), "--max-slots", str(slots),
                        "--precision", precision],
                       capture_output=True, text=True)
    dt, cpu = time.perf_counter() - t0, child_cpu() - c0
    if r.returncode != 0:
        raise SystemExit(f"or1 generate failed ({r.returncode}): {r.stderr.strip()}")
    lens = [len(json.loads(line)["response_ids"]) for line in r.stdout.splitlines()]
    if any(k != new for k in lens):
        raise SystemExit(f"or1 generate: responses of {sorted(set(lens))} tokens, want {new} (EOS-free model)")
    return dt, cpu


def measure(args, name, cfg, model, sampler, P, S, L, rounds):
    """Best-of-rounds times of both sides for P prompts x S samples x L tokens; one result row."""
    prompts = prompts_for(cfg["vocab_size"], P, seed=P)
    tmp = os.path.dirname(model)
    inp = os.path.join(tmp, f"p{P}.jsonl")
    files.write_jsonl(inp, [{"prompt_ids": p} for p in prompts])
    o_full, o_one, o_cpu, t_full, t_dec, t_cpu = [], [], [], [], [], []
    for _ in range(rounds):
        o_one.append(run_or1(args.or1, model, inp, S, 1, args.threads, P * S, args.precision)[0])
        wall, cpu = run_or1(args.or1, model, inp, S, L, args.threads, P * S, args.precision)
        o_full.append(wall)
        o_cpu.append(cpu)
        c0 = time.process_time()
        with torch.no_grad():
            _, first, dec = sampler.generate(prompts, S, L, seed=1)
        t_cpu.append(time.process_time() - c0)
        t_full.append(first + dec)
        t_dec.append(dec)
        print(f"{name} {P}x{S}x{L}: or1 {wall:.2f} s, {cpu:.2f} CPU-s (L=1: {o_one[-1]:.2f} s); torch "
              f"{t_full[-1]:.2f} s, {t_cpu[-1]:.2f} CPU-s (decode {dec:.2f} s)  "
              f"[load average {os.getloadavg()[0]:.1f}]", flush=True)
    tokens, dec_tokens = P * S * L, P * S * (L - 1)
    o_dec = max(min(o_full) - min(o_one), 1e-9)
    return dict(shape=name, run=f"{P}x{S}x{L}", or1=tokens / min(o_full), torch=tokens / min(t_full),
                or1_cpu=tokens / min(o_cpu), torch_cpu=tokens / min(t_cpu),
                or1_dec=dec_tokens / o_dec, torch_dec=dec_tokens / min(t_dec),
                gflops=2 * matmul_params(cfg) * dec_tokens / o_dec / 1e9, seconds=min(o_full) + min(t_full))


def main():
    ap = common_args(argparse.ArgumentParser())
    ap.add_argument("--long", choices=["auto", "yes", "no"], default="auto")
    ap.add_argument("--slots", default="64,128,256", help="decode batch sizes (samples decoding together)")
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                    help="or1's --precision; the PyTorch side runs in the same dtype")
    args = ap.parse_args()
    peak = start(args, self_check)
    print(f"{args.precision}; threads {args.threads}; OpenBLAS sgemm: {'n/a' if peak is None else f'{peak:.1f} GFLOP/s'}; "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    rows, notes = [], []
    for name in args.shapes.split(","):
        spec = SHAPES[name]
        with tempfile.TemporaryDirectory() as tmp:
            model, cfg, params = random_checkpoint(tmp, spec["cfg"])
            sampler = TorchSampler(cfg, params, torch.bfloat16 if args.precision == "bf16" else F32)
            S = spec["samples"]
            for slots in (int(v) for v in args.slots.split(",")):
                rows.append(measure(args, name, cfg, model, sampler, max(1, slots // S), S, spec["new"],
                                    spec["rounds"]))
            if spec["long"] and args.long != "no":
                P, S, L, rounds = spec["long"]
                base = rows[-1]
                # tokens grow P*S*L-fold; attention over longer contexts adds to it, hence the 1.5
                est = base["seconds"] * (P * S * L) / eval(base["run"].replace("x", "*")) * 1.5
                if args.long == "yes" or est <= LONG_BUDGET_S:
                    rows.append(measure(args, name, cfg, model, sampler, P, S, L, rounds))
                else:
                    notes.append(f"{name} {P}x{S}x{L} skipped: estimated {est:.0f} s for both sides, over "
                                 f"{LONG_BUDGET_S} s (run with --long yes)")
    print()
    print("| shape | prompts x samples x tokens | or1 tok/s | torch tok/s | or1/torch | or1/torch per CPU-s | "
          "or1 decode tok/s | torch decode tok/s | decode or1/torch | or1 decode GFLOP/s | of sgemm |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        frac = "n/a" if peak is None else f"{r['gflops'] / peak:.2f}"
        print(f"| {r['shape']} | {r['run']} | {r['or1']:.0f} | {r['torch']:.0f} | {r['or1'] / r['torch']:.2f} | "
              f"{r['or1_cpu'] / r['torch_cpu']:.2f} | {r['or1_dec']:.0f} | {r['torch_dec']:.0f} | "
              f"{r['or1_dec'] / r['torch_dec']:.2f} | {r['gflops']:.1f} | {frac} |")
    for n in notes:
        print(n)


if __name__ == "__main__":
    main()
