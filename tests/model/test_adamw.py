"""`or1 grad --step`: global-norm clipping + AdamW, chained through saved checkpoints.

usage: test_adamw.py OR1

Chain A (qwen2, untied, F32): three steps `--model prev --save next`, each with a max grad norm
of 0.3 times the current gradient norm (so clipping triggers) and weight decay 0.1, then a fourth
step with the default weight decay / max norm and --save-dtype bf16. Chain B (llama, tied, BF16
input): two steps.

At every step or1's own unclipped gradient (a plain `or1 grad` on the same directory, which also
holds the previous optimizer.safetensors) is checked against the float64 reference, then fed to
torch.nn.utils.clip_grad_norm_ + torch.optim.AdamW in float64. The saved weights must match that
optimizer to fp32 rounding: 1e-6 relative + 1e-7, plus, per element and step, how far the AdamW
direction moves under a gradient noise of 1e-5 of the tensor's largest entry (lr * noise /
sqrt(v_hat), at most 2 lr): an element with a near-zero gradient may flip its update's sign.
Saved files are re-read with this module's own safetensors reader and re-loaded by
`or1 logprobs`; optimizer.safetensors must hold both moments of every parameter and the step.

Round trips: a Qwen3 checkpoint (q_norm/k_norm, head_dim 24 with hidden 64 and 4 heads, GQA 2:1,
tied; F32 and BF16) and a Llama one with Llama 3.1 RoPE scaling (untied, F32), written by
or1test.ref, go through a zero step (`--step --lr 0 --save`, saving in the source dtype): every
tensor comes back with the writer's bytes and config.json unchanged (rope_scaling included); saved
again by or1, model.safetensors is byte-identical; the saved folder reloads to the reference's
log-probs.
"""
import json
import os
import sys
import tempfile

import torch

from or1test import files, proc, ref, rollout
from or1test import safetensors as st
from or1test.check import Checker

LR, WD = 2e-3, 0.1
LOSS_FLAGS = ["--temperature", 0.8, "--entropy-coef", 0.01, "--clip-high", 0.28]
LOSS_KW = dict(temperature=0.8, ent_coef=0.01, clip_high=0.28)
CONFIG_KEYS = ("model_type", "hidden_size", "intermediate_size", "num_hidden_layers",
               "num_attention_heads", "num_key_value_heads", "vocab_size", "rms_norm_eps",
               "rope_theta", "tie_word_embeddings", "head_dim")


def or1_grad(chk, or1, model, bpath, extra, what):
    """Runs or1 grad; returns its printed statistics or None."""
    r = proc.run_or1(or1, ["grad", "--model", model, "--batch", bpath, "--threads", 2]
                    + LOSS_FLAGS + extra)
    if not chk.ok(r.returncode == 0, f"{what}: exit {r.returncode}: {r.stderr.strip()}"):
        return None
    return proc.parse_json_line(r.stdout.strip(), what)


def c_gradient(chk, or1, tmp, model, bpath, batch, cfg, params, what):
    """or1's unclipped gradient at `model`, after checking it against the reference."""
    gpath = os.path.join(tmp, "grad.safetensors")
    stats = or1_grad(chk, or1, model, bpath, ["--out", gpath], what)
    if stats is None:
        return None
    grads = ref.read_safetensors(gpath)[0]
    want_stats, want = ref.loss_and_grads(params, cfg, batch, **LOSS_KW)
    chk.close(f"{what}: grad_norm", stats.get("grad_norm"), want_stats["grad_norm"],
              1e-4 * want_stats["grad_norm"])
    for name, w in want.items():
        if chk.ok(name in grads, f"{what}: no gradient {name}"):
            chk.close(f"{what}: grad {name}", grads[name], w, 1e-4 * float(w.abs().max()))
    return grads, want_stats["grad_norm"]


def update_slack(opt, name, grad):
    """How far this step's update of each element may move under 1e-5 relative gradient noise.

    AdamW's direction m_hat / sqrt(v_hat) changes by about lr * noise / sqrt(v_hat); elements
    with a zero second moment get no gradient at all and no slack. Capped at 2 lr (a sign flip)."""
    st = opt.opt.state[opt.p[name]]
    t = float(st["step"])
    v_hat = st["exp_avg_sq"] / (1 - 0.999 ** t)
    noise = 1e-5 * float(grad.abs().max())
    slack = (LR * noise / v_hat.sqrt().clamp_min(1e-30)).clamp_max(2 * LR)
    return torch.where(v_hat > 0, slack, torch.zeros_like(slack))


def check_weights(chk, what, got, opt, slack, bf16=False):
    """Saved weights against the float64 optimizer (bf16: within one bf16 ulp)."""
    want = opt.params()
    chk.ok(set(got) == set(want), f"{what}: saved names differ: missing "
           f"{sorted(set(want) - set(got))}, unexpected {sorted(set(got) - set(want))}")
    for name in sorted(set(got) & set(want)):
        w, g = want[name], got[name]
        if g.shape != w.shape:
            chk.fail(f"{what}: {name} shape {list(g.shape)} != {list(w.shape)}")
            continue
        if bf16:
            chk.close(f"{what}: bf16 weight {name}", g, w, 1e-30, 2.0 ** -7)
            continue
        tol = 1e-7 + 1e-6 * w.abs() + slack[name]
        bad = (g - w).abs() > tol
        i = int(((g - w).abs() - tol).argmax())
        chk.ok(not bad.any(), f"{what}: weight {name}: {int(bad.sum())}/{bad.numel()} elements off; flat "
               f"{i}: got {g.flatten()[i]:.9g}, want {w.flatten()[i]:.9g}")


def find_moment(tensors, name, want):
    """Which tensor of optimizer.safetensors that names `name` holds the moment `want`."""
    atol = 1e-6 * float(want.abs().max())
    for key, t in tensors.items():
        if name in key and t.shape == want.shape and torch.allclose(t, want, 1e-4, atol):
            return key
    return None


def check_optimizer(chk, what, path, opt, step):
    """optimizer.safetensors: readable, first/second moments of every parameter, step count."""
    try:
        tensors, _, meta = ref.read_safetensors(path)
    except Exception as e:
        return chk.fail(f"{what}: cannot read {path}: {e}")
    for name, p in opt.p.items():
        st = opt.opt.state[p]
        for moment in ("exp_avg", "exp_avg_sq"):
            key = find_moment(tensors, name, st[moment])
            chk.ok(key is not None, f"{what}: no tensor naming {name} holds its {moment}")
    steps = [int(float(v)) for k, v in meta.items() if "step" in k.lower()]
    steps += [int(t.flatten()[0].item()) for k, t in tensors.items()
              if "step" in k.lower() and t.numel() >= 1]
    chk.ok(step in steps, f"{what}: no step count {step} in {path} (found {steps})")


def check_config(chk, what, src, dst):
    """The saved config.json keeps the model's shape keys."""
    with open(os.path.join(src, "config.json")) as f:
        a = json.load(f)
    try:
        with open(os.path.join(dst, "config.json")) as f:
            b = json.load(f)
    except (OSError, ValueError) as e:
        return chk.fail(f"{what}: saved config.json unreadable: {e}")
    for k in CONFIG_KEYS:
        if k in a:
            chk.ok(b.get(k) == a[k], f"{what}: saved config.json {k}={b.get(k)!r}, want {a[k]!r}")


def check_reload(chk, or1, tmp, model, what):
    """or1 logprobs on a saved directory equals the reference on the weights as stored."""
    cfg, params = ref.load_checkpoint(model)
    g = torch.Generator().manual_seed(7)
    seqs = [ref.random_ids(g, cfg["vocab_size"], n) for n in (9, 30)]
    inp = os.path.join(tmp, "reload.jsonl")
    files.write_jsonl(inp, [{"ids": s} for s in seqs])
    r = proc.run_or1(or1, ["logprobs", "--model", model, "--input", inp])
    if not chk.ok(r.returncode == 0, f"{what}: logprobs exit {r.returncode}: {r.stderr.strip()}"):
        return
    for s, line in zip(seqs, r.stdout.splitlines()):
        with torch.no_grad():
            lp, ent = ref.sequence_logprobs(params, cfg, s)
        row = proc.parse_json_line(line, what)
        chk.close(f"{what}: reloaded logprobs", row.get("logprobs"), lp, 1e-4, 1e-5)
        chk.close(f"{what}: reloaded entropy", row.get("entropy"), ent, 1e-4, 1e-5)



def chain(chk, or1, tmp, label, cfg_kw, dtype, steps, bf16_step):
    """Runs `steps` chained AdamW steps (and optionally a bf16-saving one) against torch."""
    d0 = os.path.join(tmp, f"{label}0")
    cfg, params = ref.new_checkpoint(d0, seed=21, dtype=dtype, **cfg_kw)
    batch = ref.make_batch(params, cfg, seed=8, temperature=0.8)
    bpath = os.path.join(tmp, f"{label}.jsonl")
    files.write_jsonl(bpath, batch)
    opt = ref.RefAdamW(params, LR, WD, None)
    slack = {n: torch.zeros_like(t) for n, t in params.items()}
    prev = d0
    for step in range(1, steps + 2 if bf16_step else steps + 1):
        what = f"{label} step {step}"
        final = bf16_step and step == steps + 1
        cur_cfg, cur = ref.load_checkpoint(prev)
        got = c_gradient(chk, or1, tmp, prev, bpath, batch, cur_cfg, cur, what)
        if got is None:
            return
        grads, norm = got
        nxt = os.path.join(tmp, f"{label}{step}")
        extra = ["--step", "--lr", LR, "--save", nxt]
        if final:
            extra += ["--save-dtype", "bf16"]
            opt.opt.param_groups[0]["weight_decay"] = 0.01  # the documented defaults
            opt.max_grad_norm = 1.0
        else:
            opt.max_grad_norm = 0.3 * norm  # small enough that clipping triggers
            extra += ["--weight-decay", WD, "--max-grad-norm", opt.max_grad_norm]
        step_stats = or1_grad(chk, or1, prev, bpath, extra, what)
        if step_stats is None:
            return
        chk.close(f"{what}: --step grad_norm", step_stats.get("grad_norm"), norm, 1e-4 * norm)
        norm = opt.step(grads)
        chk.ok(final or norm > opt.max_grad_norm, f"{what}: test setup: clipping did not "
               f"trigger (norm {norm:.4g} <= {opt.max_grad_norm:.4g})")
        for n in slack:
            slack[n] += update_slack(opt, n, grads[n])
        try:
            got, dtypes, _ = ref.read_safetensors(os.path.join(nxt, "model.safetensors"))
        except Exception as e:
            return chk.fail(f"{what}: cannot read saved model.safetensors: {e}")
        want_dtype = "BF16" if final else "F32"
        chk.ok(set(dtypes.values()) == {want_dtype}, f"{what}: saved dtypes {set(dtypes.values())}")
        check_weights(chk, what, got, opt, slack, bf16=final)
        check_config(chk, what, d0, nxt)
        check_optimizer(chk, what, os.path.join(nxt, "optimizer.safetensors"), opt, step)
        check_reload(chk, or1, tmp, nxt, what)
        prev = nxt


LLAMA3_ROPE = {"rope_theta": 500000.0, "rope_scaling": {
    "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
    "original_max_position_embeddings": 32}}


def zero_step(chk, or1, src, bpath, dst, dtype, what):
    """Saves src unchanged through or1 (an AdamW step at lr 0 and no decay) into dst."""
    save = ["--save-dtype", "bf16"] if dtype == "BF16" else []
    return or1_grad(chk, or1, src, bpath, ["--step", "--lr", 0, "--weight-decay", 0, "--save", dst, *save], what)


def round_trip(chk, or1, tmp, label, cfg_kw, dtype, config_edit=None):
    """A checkpoint written by ref survives or1's load and save byte for byte (see the docstring)."""
    d0, d1, d2 = (os.path.join(tmp, f"{label}{k}") for k in ("src", "once", "twice"))
    cfg, params = ref.new_checkpoint(d0, seed=31, dtype=dtype, **cfg_kw)
    if config_edit:
        rollout.set_config(d0, **config_edit)
    batch = ref.make_batch(params, cfg, seed=9, temperature=0.8)
    bpath = os.path.join(tmp, f"{label}.jsonl")
    files.write_jsonl(bpath, batch)
    if zero_step(chk, or1, d0, bpath, d1, dtype, f"{label} save") is None or \
            zero_step(chk, or1, d1, bpath, d2, dtype, f"{label} save again") is None:
        return
    a, b = (st.read_arrays(os.path.join(d, "model.safetensors"))[0] for d in (d0, d1))
    chk.ok(a.keys() == b.keys(), f"{label}: tensor names differ: {sorted(a.keys() ^ b.keys())}")
    for name in a.keys() & b.keys():
        chk.ok(a[name].tobytes() == b[name].tobytes(), f"{label}: {name} changed in the round trip")
    with open(os.path.join(d0, "config.json")) as f, open(os.path.join(d1, "config.json")) as g:
        chk.ok(json.load(f) == json.load(g), f"{label}: config.json changed in the round trip")
    with open(os.path.join(d1, "model.safetensors"), "rb") as f, open(os.path.join(d2, "model.safetensors"), "rb") as g:
        chk.ok(f.read() == g.read(), f"{label}: model.safetensors saved twice differs")
    check_reload(chk, or1, tmp, d1, f"{label} reload")


def main():
    or1 = sys.argv[1]
    chk = Checker("AdamW chain")
    with tempfile.TemporaryDirectory() as tmp:
        qwen3 = dict(arch="qwen3", tied=True, hidden=64, heads=4, kv_heads=2, head_dim=24)
        round_trip(chk, or1, tmp, "qwen3-f32-", qwen3, "F32")
        round_trip(chk, or1, tmp, "qwen3-bf16-", qwen3, "BF16")
        round_trip(chk, or1, tmp, "llama3-rope-", dict(arch="llama", tied=False, heads=2, kv_heads=1, head_dim=32),
                   "F32", LLAMA3_ROPE)
        chain(chk, or1, tmp, "qwen2-untied-f32-", dict(arch="qwen2", tied=False), "F32", 3, True)
        chain(chk, or1, tmp, "llama-tied-bf16-", dict(arch="llama", tied=True, kv_heads=1),
              "BF16", 2, False)
    chk.finish()


if __name__ == "__main__":
    main()
