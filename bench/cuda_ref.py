"""PyTorch reference for bench/cuda.sh: the same random-weight Qwen2 shapes, batches and
steps as bench/cuda_bench.cu, on the same GPU.

  train:   fp32 master weights under bf16 autocast, packed batch as seqs x len (all the same
           length, so padding-free), a quarter prompt, log-prob + entropy loss at the scored
           positions, clip_grad_norm_(1.0), AdamW (fused when available).
  rollout: bf16 weights, a preallocated KV cache, batched prefill of every slot, then one
           decode step per token for all slots with torch.multinomial sampling.
Prints one JSON object per mode, like cuda_bench. Eager mode (no torch.compile).
"""
import argparse
import json
import math
import time

import torch
import torch.nn.functional as F

SHAPES = {
    "1.5b": dict(hidden=1536, inter=8960, layers=28, heads=12, kv=2, vocab=151936),
    "7b": dict(hidden=3584, inter=18944, layers=28, heads=28, kv=4, vocab=151936),
    "tiny": dict(hidden=256, inter=512, layers=2, heads=4, kv=2, vocab=4096),
}


def forward_flops(s, tokens, sum_sq_len, scored):
    """Same count as cuda_bench.cu: matmuls, causal attention, head at scored positions."""
    H, I, hd = s["hidden"], s["inter"], s["hidden"] // s["heads"]
    qd, qkvd = s["heads"] * hd, s["heads"] * hd + 2 * s["kv"] * hd
    per_tok = 2 * (H * qkvd + qd * H + H * 2 * I + I * H)
    attn = 2.0 * 2.0 * qd * sum_sq_len / 2.0
    return s["layers"] * (per_tok * tokens + attn) + 2.0 * H * s["vocab"] * scored


class Model(torch.nn.Module):
    """Qwen2 decoder: RMSNorm, q/k/v with biases, RoPE (rotate_half), GQA, SwiGLU, untied head."""

    def __init__(self, s, std=0.02, device="cuda"):
        super().__init__()
        self.s, H, I = s, s["hidden"], s["inter"]
        self.hd = H // s["heads"]
        qkvd = (s["heads"] + 2 * s["kv"]) * self.hd

        def rand(*shape):
            return torch.nn.Parameter(torch.randn(*shape, device=device) * std)

        def const(n, v):
            return torch.nn.Parameter(torch.full((n,), v, device=device))

        self.embed = rand(s["vocab"], H)
        self.layers = torch.nn.ModuleList()
        for _ in range(s["layers"]):
            l = torch.nn.Module()
            l.ln1 = const(H, 1.0)
            l.wqkv = rand(qkvd, H)
            l.bqkv = const(qkvd, 0.0)
            l.wo = rand(H, s["heads"] * self.hd)
            l.ln2 = const(H, 1.0)
            l.wgu = rand(2 * I, H)
            l.wd = rand(H, I)
            self.layers.append(l)
        self.norm = const(H, 1.0)
        self.head = rand(s["vocab"], H)

    @staticmethod
    def rms(x, w, eps=1e-6):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w.to(x.dtype)

    def rope(self, x, pos):
        half = self.hd // 2
        inv = 10000.0 ** (-torch.arange(0, half, device=x.device, dtype=torch.float32) * 2 / self.hd)
        ang = pos.float()[:, None] * inv[None, :]
        cos = torch.cat([ang.cos()] * 2, -1).to(x.dtype)[:, None, :]
        sin = torch.cat([ang.sin()] * 2, -1).to(x.dtype)[:, None, :]
        x1, x2 = x[..., :half], x[..., half:]
        return x * cos + torch.cat([-x2, x1], -1) * sin

    def attend(self, q, k, v, causal):
        rep = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        if hasattr(F, "scaled_dot_product_attention"):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        if causal:
            n = q.shape[2]
            att = att.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
        return att.softmax(-1) @ v

    def block(self, l, x, pos, cache=None, at=None):
        """One layer over x [B, L, H]; with cache (k, v [B, nkv, cap, hd]) appends at `at`."""
        s, hd = self.s, self.hd
        B, L, _ = x.shape
        qkv = F.linear(self.rms(x, l.ln1), l.wqkv, l.bqkv)
        q, k, v = qkv.split([s["heads"] * hd, s["kv"] * hd, s["kv"] * hd], -1)
        q = self.rope(q.view(B, L, s["heads"], hd), pos).transpose(1, 2)
        k = self.rope(k.view(B, L, s["kv"], hd), pos).transpose(1, 2)
        v = v.view(B, L, s["kv"], hd).transpose(1, 2)
        if cache is not None:
            cache[0][:, :, at:at + L] = k
            cache[1][:, :, at:at + L] = v
            k, v = cache[0][:, :, :at + L], cache[1][:, :, :at + L]
        o = self.attend(q, k, v, causal=L > 1).transpose(1, 2).reshape(B, L, -1)
        x = x + F.linear(o, l.wo)
        g, u = F.linear(self.rms(x, l.ln2), l.wgu).chunk(2, -1)
        return x + F.linear(F.silu(g) * u, l.wd)

    def forward(self, ids, pos, caches=None, at=0):
        x = self.embed[ids]
        for i, l in enumerate(self.layers):
            x = self.block(l, x, pos, caches[i] if caches else None, at)
        return self.rms(x, self.norm)


def sync_time():
    torch.cuda.synchronize()
    return time.time()


def bench_train(a, s):
    torch.manual_seed(0)
    m = Model(s)
    try:
        opt = torch.optim.AdamW(m.parameters(), lr=1e-6, fused=True)
    except (TypeError, RuntimeError):
        opt = torch.optim.AdamW(m.parameters(), lr=1e-6)
    ids = torch.randint(0, s["vocab"], (a.seqs, a.len), device="cuda")
    pos = torch.arange(a.len, device="cuda")
    P = max(a.len // 4, 1)
    scored = a.seqs * (a.len - P)
    for k in range(a.steps + 1):
        if k == 1:
            t0 = sync_time()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            h = m(ids, pos)[:, P - 1:-1].reshape(-1, s["hidden"])
            logits = F.linear(h, m.head).float()
        logp_all = logits.log_softmax(-1)
        logp = logp_all.gather(-1, ids[:, P:].reshape(-1, 1)).squeeze(-1)
        ent = -(logp_all.exp() * logp_all).sum(-1)
        loss = -(logp.mean()) - 1e-3 * ent.mean()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        del logits, logp_all
    dt = (sync_time() - t0) / a.steps
    fl = 3 * forward_flops(s, a.seqs * a.len, a.seqs * a.len * a.len, scored)
    print(json.dumps({"mode": "train", "impl": "pytorch", "model": a.model, "device": torch.cuda.get_device_name(),
                      "seqs": a.seqs, "len": a.len, "step_s": round(dt, 4), "tokens_per_s": round(a.seqs * a.len / dt, 1),
                      "tflops": round(fl / dt / 1e12, 2), "mfu": round(fl / dt / 1e12 / a.peak_tflops, 4),
                      "torch": torch.__version__}), flush=True)
    del m, opt
    torch.cuda.empty_cache()


@torch.no_grad()
def bench_rollout(a, s):
    torch.manual_seed(0)
    m = Model(s).to(torch.bfloat16)
    B, cap, hd = a.slots, a.prompt + a.new + 1, s["hidden"] // s["heads"]
    caches = [(torch.zeros(B, s["kv"], cap, hd, device="cuda", dtype=torch.bfloat16),
               torch.zeros(B, s["kv"], cap, hd, device="cuda", dtype=torch.bfloat16)) for _ in range(s["layers"])]
    ids = torch.randint(0, s["vocab"], (B, a.prompt), device="cuda")
    t0 = sync_time()
    m(ids[:, :-1], torch.arange(a.prompt - 1, device="cuda"), caches, 0)
    t1 = sync_time()
    tok, at = ids[:, -1:], a.prompt - 1
    for _ in range(a.new):
        h = m(tok, torch.tensor([at], device="cuda"), caches, at)
        p = F.linear(h[:, -1], m.head).float().softmax(-1)
        tok = torch.multinomial(p, 1)
        at += 1
    t2 = sync_time()
    print(json.dumps({"mode": "rollout", "impl": "pytorch", "model": a.model, "device": torch.cuda.get_device_name(),
                      "slots": B, "prompt": a.prompt, "new": a.new, "prefill_s": round(t1 - t0, 3),
                      "decode_s": round(t2 - t1, 3), "tokens_per_s": round(B * a.new / (t2 - t1), 1),
                      "torch": torch.__version__}), flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model", choices=sorted(SHAPES))
    p.add_argument("--seqs", type=int, default=8)
    p.add_argument("--len", type=int, default=1024)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--slots", type=int, default=64)
    p.add_argument("--prompt", type=int, default=256)
    p.add_argument("--new", type=int, default=256)
    p.add_argument("--peak-tflops", type=float, default=989.0)
    p.add_argument("--skip-train", action="store_true")
    p.add_argument("--skip-rollout", action="store_true")
    a = p.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("cuda_ref.py: PyTorch sees no CUDA GPU; nothing measured")
    s = SHAPES[a.model]
    if not a.skip_train:
        bench_train(a, s)
    if not a.skip_rollout:
        bench_rollout(a, s)


if __name__ == "__main__":
    main()
