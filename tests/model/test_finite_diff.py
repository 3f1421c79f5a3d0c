"""Central differences of or1's own printed loss against its reported gradient entries.

usage: test_finite_diff.py OR1

Independent of the reference model: for one entry in each of several parameter tensors (the one
with the largest reported gradient), the checkpoint is rewritten with that entry moved by +-h and
(L(+h) - L(-h)) / 2h is compared with the gradient or1 wrote. old_logprobs are given, so the loss
value itself moves with the weights (with rho == 1 it would not).
Tolerance: h = 1e-2 on weights of size ~0.2-1; the truncation error h^2 L'''/6 stays below 1e-4 on
these models and fp32 noise in the loss (~1e-7) adds ~1e-5 after dividing by 2h; the bound
1e-3 + 2% of the entry is ten times that, while a wrong gradient is typically off by O(1).
"""
import os
import sys
import tempfile

from or1test import files, proc, ref
from or1test.check import Checker

H = 1e-2
TENSORS = ["model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight",
           "model.layers.0.self_attn.k_proj.bias", "model.layers.1.self_attn.v_proj.weight",
           "model.layers.0.input_layernorm.weight", "model.layers.1.mlp.down_proj.weight",
           "model.norm.weight", "lm_head.weight"]
FLAGS = ["--temperature", 0.8, "--entropy-coef", 0.02, "--clip-high", 0.28]


def loss_of(chk, or1, tmp, cfg, params, bpath, tag):
    """The loss or1 prints for the checkpoint `params` (written as F32)."""
    model = os.path.join(tmp, tag)
    ref.save_checkpoint(model, cfg, params)
    out = os.path.join(tmp, "g.safetensors")
    r = proc.run_or1(or1, ["grad", "--model", model, "--batch", bpath, "--out", out] + FLAGS)
    if not chk.ok(r.returncode == 0, f"{tag}: exit {r.returncode}: {r.stderr.strip()}"):
        return None
    return float(proc.parse_json_line(r.stdout.strip(), tag)["loss"])


def main():
    or1 = sys.argv[1]
    chk = Checker("finite differences")
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "base")
        cfg, params = ref.new_checkpoint(model, seed=4, arch="qwen2", tied=False)
        batch = ref.make_batch(params, cfg, seed=9, temperature=0.8)
        bpath, gpath = os.path.join(tmp, "b.jsonl"), os.path.join(tmp, "grad.safetensors")
        files.write_jsonl(bpath, batch)
        r = proc.run_or1(or1, ["grad", "--model", model, "--batch", bpath, "--out", gpath] + FLAGS)
        if not chk.ok(r.returncode == 0, f"base: exit {r.returncode}: {r.stderr.strip()}"):
            chk.finish()
        grads = ref.read_safetensors(gpath)[0]
        for name in TENSORS:
            if not chk.ok(name in grads, f"no gradient for {name}"):
                continue
            i = int(grads[name].abs().argmax())
            losses = []
            for sign in (1, -1):
                moved = {n: t.clone() for n, t in params.items()}
                moved[name].view(-1)[i] += sign * H
                losses.append(loss_of(chk, or1, tmp, cfg, moved, bpath, f"{name}[{i}]{sign:+d}"))
            if None in losses:
                continue
            fd = (losses[0] - losses[1]) / (2 * H)
            g = float(grads[name].view(-1)[i])
            chk.close(f"{name} flat {i}: reported gradient vs central difference", g, fd,
                      1e-3 + 0.02 * abs(fd))
    chk.finish()


if __name__ == "__main__":
    main()
