"""Forward+backward tokens/s of `or1 grad --bench-iters` against PyTorch fp32 on the same batch.

usage: bench_model.py --or1 build/or1 [--sgemm build/bench_sgemm] [--threads 2]
                      [--shapes small,qwen] [--precision fp32|bf16]

--precision bf16 runs or1 with --precision bf16 and PyTorch's iteration under
torch.autocast("cpu", dtype=torch.bfloat16) (its matmuls in bf16 over fp32 master weights).

For each shape a random F32 checkpoint and a packed batch are written to a temporary directory;
or1 times N iterations after one warm-up; then PyTorch (torch.set_num_threads = or1's --threads)
times the same loss (eq. 3.1, entropy coefficient 1e-3, no old_logprobs) the same way. The two
alternate for a few rounds and each keeps its best round, since a shared machine's load varies. The
PyTorch side projects all packed tokens at once, runs causal attention per sequence (cheaper than
a block-diagonal mask over the whole pack) and computes the vocabulary head only at the positions
that predict response tokens, which is all the loss needs.
FLOPs: 6 x matmul parameters x tokens (the head counted over response tokens only) plus causal
attention 6 x layers x heads x head_dim x n^2 per sequence (QK^T and AV, forward and backward).
"""
import argparse
import json
import math
import os
import subprocess
import tempfile
import time

import torch

from or1test import files, ref  # the tests' checkpoint writer and float64 reference
from bench_common import common_args, random_checkpoint, start

ENT_COEF = 1e-3
SHAPES = {
    "small": dict(cfg=dict(arch="qwen2", hidden=256, inter=704, layers=6, heads=8, kv_heads=2,
                           vocab=300, tied=False),
                  seqs=16, seq_len=256, prompt=64, iters=1, rounds=2),
    "qwen": dict(cfg=dict(arch="qwen2", hidden=896, inter=4864, layers=4, heads=14, kv_heads=2,
                          vocab=151936, tied=True),
                 seqs=2, seq_len=512, prompt=128, iters=1, rounds=1),
}


def make_batch(cfg, spec, seed=0):
    """spec['seqs'] lines of spec['seq_len'] random tokens, the first spec['prompt'] the prompt."""
    g = torch.Generator().manual_seed(seed)
    rows = []
    for k in range(spec["seqs"]):
        ids = ref.random_ids(g, cfg["vocab_size"], spec["seq_len"])
        rows.append({"prompt_ids": ids[:spec["prompt"]], "response_ids": ids[spec["prompt"]:],
                     "advantage": 1.0 if k % 2 == 0 else -1.0})
    return rows


class TorchModel:
    """The same decoder and loss in PyTorch fp32, written for speed rather than for reading."""

    def __init__(self, cfg, params):
        self.cfg = cfg
        self.p = {n: t.to(torch.float32).clone().requires_grad_(True) for n, t in params.items()}
        self.hd = ref.head_dim_of(cfg)
        n_max = 4096
        inv = cfg["rope_theta"] ** (-torch.arange(0, self.hd, 2, dtype=torch.float32) / self.hd)
        ang = torch.arange(n_max, dtype=torch.float32)[:, None] * inv[None, :]
        self.cos = torch.cat([ang.cos(), ang.cos()], -1)
        self.sin = torch.cat([ang.sin(), ang.sin()], -1)

    def rope(self, x):
        """Rotary embedding of packed [N, heads, hd] rows (cos/sin gathered once per batch)."""
        h = self.hd // 2
        return x * self.cos_b + torch.cat([-x[..., h:], x[..., :h]], -1) * self.sin_b

    def lin(self, x, name):
        """x @ W^T + b."""
        w, b = self.p[name + ".weight"], self.p.get(name + ".bias")
        return torch.nn.functional.linear(x, w, b)

    def attention(self, x, pre, bounds):
        """Packed projections; per sequence, the query heads of one KV head in one matmul."""
        nh, nkv, hd = self.cfg["num_attention_heads"], self.cfg["num_key_value_heads"], self.hd
        N, g = x.shape[0], nh // nkv
        q = self.rope(self.lin(x, pre + "q_proj").view(N, nh, hd))
        k = self.rope(self.lin(x, pre + "k_proj").view(N, nkv, hd))
        v = self.lin(x, pre + "v_proj").view(N, nkv, hd)
        outs = []
        for a, b in bounds:
            n = b - a
            qs = q[a:b].view(n, nkv, g, hd).permute(1, 2, 0, 3).reshape(nkv, g * n, hd)
            s = torch.baddbmm(self.masks[(n, g)], qs, k[a:b].permute(1, 2, 0),
                              alpha=1 / math.sqrt(hd))
            o = torch.bmm(s.softmax(-1), v[a:b].transpose(0, 1))       # [nkv, g*n, hd]
            outs.append(o.view(nkv, g, n, hd).permute(2, 0, 1, 3).reshape(n, nh * hd))
        return self.lin(torch.cat(outs), pre + "o_proj")

    def loss(self, ids, pos, bounds, resp_rows, targets, adv):
        """Eq. 3.1 with rho = 1 (old = logp detached) and an entropy bonus, token mean."""
        cfg, eps = self.cfg, self.cfg["rms_norm_eps"]
        g = cfg["num_attention_heads"] // cfg["num_key_value_heads"]
        self.masks = {(b - a, g): torch.full((b - a, b - a), float("-inf"), dtype=torch.float32)
                      .triu(1).repeat(g, 1) for a, b in bounds}
        self.cos_b, self.sin_b = self.cos[pos][:, None, :], self.sin[pos][:, None, :]
        h = self.p["model.embed_tokens.weight"][ids]
        for i in range(cfg["num_hidden_layers"]):
            pre = f"model.layers.{i}."
            x = ref.rms_norm(h, self.p[pre + "input_layernorm.weight"], eps)
            h = h + self.attention(x, pre + "self_attn.", bounds)
            x = ref.rms_norm(h, self.p[pre + "post_attention_layernorm.weight"], eps)
            m = torch.nn.functional.silu(self.lin(x, pre + "mlp.gate_proj")) * \
                self.lin(x, pre + "mlp.up_proj")
            h = h + self.lin(m, pre + "mlp.down_proj")
        h = ref.rms_norm(h[resp_rows], self.p["model.norm.weight"], eps)
        head = self.p.get("lm_head.weight", self.p["model.embed_tokens.weight"])
        logp_all = torch.log_softmax(h @ head.T, -1)
        logp = logp_all.gather(1, targets[:, None])[:, 0]
        ent = -(logp_all.exp() * logp_all).sum(-1)
        rho = torch.exp(logp - logp.detach())
        pg = torch.maximum(-adv * rho, -adv * rho.clamp(0.8, 1.2))
        return (pg - ENT_COEF * ent).mean()


def packed(batch):
    """Packed tensors: ids, positions, sequence bounds, head rows, targets, advantages."""
    ids, pos, bounds, rows, targets, adv = [], [], [], [], [], []
    for r in batch:
        seq = r["prompt_ids"] + r["response_ids"]
        a = len(ids)
        ids += seq
        pos += range(len(seq))
        bounds.append((a, a + len(seq)))
        P = len(r["prompt_ids"])
        rows += range(a + P - 1, a + len(seq) - 1)
        targets += r["response_ids"]
        adv += [r["advantage"]] * len(r["response_ids"])
    t = torch.tensor
    return t(ids), t(pos), bounds, t(rows), t(targets), t(adv, dtype=torch.float32)


class TorchRunner:
    """Times the PyTorch model on one batch; the first call also runs a warm-up iteration."""

    def __init__(self, cfg, params, batch, bf16=False):
        self.model, self.args, self.warm, self.bf16 = TorchModel(cfg, params), packed(batch), False, bf16

    def iteration(self):
        """One forward+backward from cleared gradients (the forward autocast to bf16 if asked)."""
        for t in self.model.p.values():
            t.grad = None
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16):
            loss = self.model.loss(*self.args)
        loss.backward()

    def seconds(self, iters):
        """Mean seconds per iteration over iters iterations."""
        if not self.warm:
            self.iteration()
            self.warm = True
        t0 = time.perf_counter()
        for _ in range(iters):
            self.iteration()
        return (time.perf_counter() - t0) / iters


def self_check():
    """The PyTorch bench model must compute the reference's loss and gradients (tiny model)."""
    with tempfile.TemporaryDirectory() as tmp:
        cfg, params = ref.new_checkpoint(os.path.join(tmp, "m"), arch="qwen2", tied=True)
        batch = ref.make_batch(params, cfg, with_old=False)
        stats, grads = ref.loss_and_grads(params, cfg, batch, ent_coef=ENT_COEF)
        model = TorchModel(cfg, params)
        loss = model.loss(*packed(batch))
        loss.backward()
        assert abs(loss.item() - stats["loss"]) < 1e-5, (loss.item(), stats["loss"])
        for n, g in grads.items():
            err = float((model.p[n].grad.double() - g).abs().max())
            assert err <= 1e-4 * float(g.abs().max()), (n, err)


def flops(cfg, batch):
    """Training FLOPs of one iteration (see the module docstring)."""
    H, I, L = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]
    nh, nkv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], ref.head_dim_of(cfg)
    layer = H * nh * hd * 2 + 2 * H * nkv * hd + 3 * H * I
    tokens = sum(len(r["prompt_ids"]) + len(r["response_ids"]) for r in batch)
    resp = sum(len(r["response_ids"]) for r in batch)
    attn = sum(6 * L * nh * hd * (len(r["prompt_ids"]) + len(r["response_ids"])) ** 2
               for r in batch)
    return 6 * (L * layer * tokens + cfg["vocab_size"] * H * resp) + attn


def run_or1(or1, model, bpath, iters, threads, precision):
    """or1's bench JSON line."""
    r = subprocess.run([or1, "grad", "--model", model, "--batch", bpath, "--entropy-coef",
                        str(ENT_COEF), "--bench-iters", str(iters), "--threads", str(threads),
                        "--precision", precision],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"or1 failed ({r.returncode}): {r.stderr.strip()}")
    return json.loads(r.stdout)


def main():
    ap = common_args(argparse.ArgumentParser())
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    args = ap.parse_args()
    peak = start(args, self_check)
    print(f"{args.precision}; threads {args.threads}; OpenBLAS sgemm (n=1024): "
          f"{'n/a' if peak is None else f'{peak:.1f} GFLOP/s'}", flush=True)
    rows = []
    for name in args.shapes.split(","):
        spec = SHAPES[name]
        with tempfile.TemporaryDirectory() as tmp:
            model, cfg, params = random_checkpoint(tmp, spec["cfg"])
            batch = make_batch(cfg, spec)
            bpath = os.path.join(tmp, "b.jsonl")
            files.write_jsonl(bpath, batch)
            runner = TorchRunner(cfg, params, batch, args.precision == "bf16")
            t_or1, t_torch = [], []
            for _ in range(spec["rounds"]):  # interleaved, best round kept: load comes and goes
                got = run_or1(args.or1, model, bpath, spec["iters"], args.threads, args.precision)
                t_or1.append(got["seconds_per_iter"])
                t_torch.append(runner.seconds(spec["iters"]))
                print(f"{name}: or1 {t_or1[-1]:.2f} s/iter, torch {t_torch[-1]:.2f} s/iter "
                      f"(load average {os.getloadavg()[0]:.1f})", flush=True)
        tokens, f = got["tokens"], flops(cfg, batch)
        o, t = min(t_or1), min(t_torch)
        rows.append((name, tokens, tokens / o, tokens / t, f / o / 1e9, f / t / 1e9))
    print()
    print("| shape | tokens/iter | or1 tok/s | torch tok/s | or1/torch | or1 GFLOP/s | "
          "torch GFLOP/s | or1 / sgemm |")
    print("|---|---|---|---|---|---|---|---|")
    for name, tokens, o, t, go, gt in rows:
        frac = "n/a" if peak is None else f"{go / peak:.2f}"
        print(f"| {name} | {tokens} | {o:.0f} | {t:.0f} | {o / t:.2f} | {go:.1f} | {gt:.1f} | "
              f"{frac} |")
    load, cores = os.getloadavg()[0], os.cpu_count()
    if load > cores:
        print(f"\nnote: load average {load:.1f} on {cores} cores: other processes shared the CPUs, "
              "and multi-threaded runs (PyTorch's many small OpenMP regions above all) wait on "
              "descheduled threads; these figures are not representative.")


if __name__ == "__main__":
    main()
