"""`or1 grad` statistics and every gradient tensor against the float64 reference.

usage: test_grad.py OR1 GROUP   (GROUP: qwen2 | qwen3 | llama | long | defaults | rollout)

The batches put tokens on both sides of both clip bounds with advantages of both signs (see
ref.make_batch), use an entropy coefficient != 0 and temperatures != 1, over tied and untied,
F32/BF16/F16 and single/sharded checkpoints. `defaults` runs without any loss flag and without
old_logprobs (rho = 1: the plain policy gradient, clip_frac 0), one of them reading --batch
/dev/stdin. `rollout` adds the sampler's rollout_logprobs to every row and runs the rollout
correction (TIS, MIS, mis-geo, decoupled, none) with two sets of bounds: the weights, the masked share and the
mismatch statistics against the reference too.
Tolerances: the same reference run in float32 differs from float64 by <= 3e-6 of a tensor's
largest gradient and <= 5e-7 relative in the statistics; the bounds below keep a >= 20x margin.
"""
import os
import sys
import tempfile

import torch

from or1test import files, proc, ref, rollout
from or1test.check import Checker

STAT_TOL = 2e-5      # relative to max(1, |value|)
GRAD_ELEM = 1e-4     # element error / largest |gradient| of that tensor
GRAD_NORMWISE = 1e-4  # ||got - want|| / ||want|| per tensor

GROUPS = {
    "qwen2": [
        dict(cfg=dict(arch="qwen2", tied=False), dtype="F32", shards=1,
             flags=dict(temperature=0.7, entropy_coef=0.01, clip_low=0.2, clip_high=0.28)),
        dict(cfg=dict(arch="qwen2", tied=True, heads=4, kv_heads=1), dtype="BF16", shards=2,
             flags=dict(temperature=1.3, entropy_coef=0.005, clip_low=0.15, clip_high=0.3)),
        dict(cfg=dict(arch="qwen2", tied=False, heads=8, kv_heads=4, head_dim=8, vocab=211),
             dtype="F16", shards=3, flags=dict(temperature=0.6, entropy_coef=0.02)),
        # a vocabulary wider than two 4096-entry blocks, so a head that streams the vocabulary
        # in blocks must merge partial softmax sums across them
        dict(cfg=dict(arch="qwen2", tied=False, vocab=8300), dtype="BF16", shards=1,
             flags=dict(temperature=0.7, entropy_coef=0.01)),
        # YaRN (config.json's keys in `set`): backward rotates the gradient by the transposed
        # table, whose cos and sin carry the attention factor, over sequences past its ramp
        dict(cfg=dict(arch="qwen2", tied=False, heads=2, kv_heads=1, head_dim=32), dtype="F32", shards=1,
             set=dict(rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32}),
             lengths=((30, 40), (6, 60)), flags=dict(temperature=0.8, entropy_coef=0.01)),
    ],
    # Qwen3: q/k norms (their gradients too), head_dim apart from hidden / heads, GQA, tied
    "qwen3": [
        dict(cfg=dict(arch="qwen3", tied=True, hidden=32, heads=4, kv_heads=2, head_dim=16), dtype="F32", shards=1,
             flags=dict(temperature=0.7, entropy_coef=0.01, clip_low=0.2, clip_high=0.28)),
        dict(cfg=dict(arch="qwen3", tied=False, hidden=48, heads=8, kv_heads=2, head_dim=8), dtype="BF16", shards=2,
             flags=dict(temperature=1.1, entropy_coef=0.005)),
    ],
    "llama": [
        dict(cfg=dict(arch="llama", tied=False, head_dim=16), dtype="BF16", shards=1,
             flags=dict(temperature=0.7, entropy_coef=0.01, clip_low=0.2, clip_high=0.28)),
        dict(cfg=dict(arch="llama", tied=True, heads=4, kv_heads=4), dtype="F32", shards=3,
             flags=dict(temperature=0.9, entropy_coef=0.003)),
        # Llama 3.1's RoPE scaling (R1-Distill-Llama-8B's factors, an original context of 32 so
        # that 60-token sequences cross its bands): every gradient through the scaled table
        dict(cfg=dict(arch="llama", tied=False, heads=2, kv_heads=1, head_dim=32), dtype="F32", shards=1,
             set=dict(rope_theta=500000.0, rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                                        "high_freq_factor": 4.0, "original_max_position_embeddings": 32}),
             lengths=((30, 40), (6, 60)), flags=dict(temperature=0.8, entropy_coef=0.01)),
    ],
    "rollout": [
        dict(cfg=dict(arch="qwen2", tied=False), dtype="F32", shards=1, rollout=True,
             flags=dict(temperature=0.7, entropy_coef=0.01, rollout_is="tis", rollout_is_high=2.0)),
        dict(cfg=dict(arch="llama", tied=True), dtype="F32", shards=1, rollout=True,
             flags=dict(temperature=0.9, rollout_is="mis", rollout_is_low=0.5, rollout_is_high=2.0)),
        dict(cfg=dict(arch="qwen2", tied=True), dtype="BF16", shards=1, rollout=True,
             flags=dict(rollout_is="mis", rollout_is_low=0.7, rollout_is_high=1.5)),
        dict(cfg=dict(arch="qwen2", tied=False), dtype="F32", shards=1, rollout=True,
             flags=dict(rollout_is="tis", rollout_is_high=1.5, clip_low=0.2, clip_high=0.28)),
        dict(cfg=dict(arch="llama", tied=False, head_dim=16), dtype="F32", shards=1, rollout=True, flags={}),
        # MIS on each row's geometric-mean ratio (rows at 0.84, 1.26, 2.23, 1.26, 0.55: two cut)
        dict(cfg=dict(arch="qwen2", tied=False), dtype="F32", shards=1, rollout=True,
             flags=dict(temperature=0.8, rollout_is="mis-geo", rollout_is_low=0.7, rollout_is_high=1.5)),
        # DeepSeek-V3.2's off-policy mask: rows 1 and 3 (A < 0) moved to mean log(pi_rollout/pi)
        # 0.29 and -0.13, so delta 0.1 drops row 1 only; row 0 (A > 0, 0.14) must stay
        dict(cfg=dict(arch="llama", tied=True), dtype="F32", shards=1, rollout=True, rollout_shift=[0, 0.5, 0, 0.1, 0],
             flags=dict(offpolicy_delta=0.1, rollout_is="mis-geo", rollout_is_low=0.5, rollout_is_high=2.0)),
        # decoupled PPO: w = pi_old/pi_rollout untruncated (ratios up to 4.5, past the cap of 2
        # the bounds would set for TIS), the clip on pi/pi_old with clip_high != clip_low
        dict(cfg=dict(arch="qwen2", tied=False), dtype="F32", shards=1, rollout=True,
             flags=dict(temperature=0.8, entropy_coef=0.01, clip_low=0.2, clip_high=0.28, rollout_is="decoupled",
                        rollout_is_low=0.5, rollout_is_high=2.0)),
        dict(cfg=dict(arch="llama", tied=True), dtype="BF16", shards=2, rollout=True,
             flags=dict(temperature=1.2, clip_low=0.15, clip_high=0.3, rollout_is="decoupled")),
    ],
    # sequences of 100-153 tokens: several query blocks of the CPU attention (64 tokens a block
    # with up to 4 query heads per KV head, 32 with 8), the last one partial, at 1, 4 and 8 query
    # heads per KV head, with head sizes its kernels run in whole vectors (32, 64), partly (40)
    # and not at all (4); and 1140 tokens, where the score-block budget cuts the blocks to 27
    # tokens
    "long": [
        dict(cfg=dict(arch="qwen2", tied=False, heads=8, kv_heads=2, head_dim=32), dtype="F32", shards=1,
             lengths=((40, 60), (3, 150), (130, 2)), flags=dict(temperature=0.7, entropy_coef=0.01)),
        dict(cfg=dict(arch="llama", tied=True, heads=8, kv_heads=1, head_dim=40), dtype="F32", shards=1,
             lengths=((70, 31), (9, 120)), flags=dict(temperature=0.9, entropy_coef=0.003)),
        dict(cfg=dict(arch="qwen2", tied=False, heads=4, kv_heads=4, head_dim=64), dtype="F32", shards=1,
             lengths=((65, 64), (1, 100)), flags=dict(entropy_coef=0.01)),
        dict(cfg=dict(arch="qwen2", tied=False, heads=8, kv_heads=2), dtype="F32", shards=1,
             lengths=((40, 70), (100, 3)), flags=dict(entropy_coef=0.01)),
        dict(cfg=dict(arch="llama", tied=False, heads=8, kv_heads=1, head_dim=32), dtype="F32", shards=1,
             lengths=((1100, 40), (5, 30)), flags=dict(temperature=0.8, entropy_coef=0.01)),
    ],
    "defaults": [
        dict(cfg=dict(arch="qwen2", tied=False), dtype="F32", shards=1, flags={}, with_old=False,
             stdin=True),
        dict(cfg=dict(arch="llama", tied=True), dtype="F32", shards=1, flags={}, with_old=True),
    ],
}

FLAG_NAMES = {"temperature": "--temperature", "entropy_coef": "--entropy-coef",
              "clip_low": "--clip-low", "clip_high": "--clip-high", "rollout_is": "--rollout-is",
              "rollout_is_low": "--rollout-is-low", "rollout_is_high": "--rollout-is-high",
              "offpolicy_delta": "--offpolicy-delta"}
ROLLOUT_STATS = ("mismatch_abs_mean", "mismatch_abs_max", "mismatch_k3", "is_weight_mean", "is_masked_frac",
                 "offpolicy_masked_frac", "is_ess")
SEQ_MARGIN = 1e-3  # sequence-level bounds this far from every row's statistic (far above fp32 error)


def flag_args(flags):
    """The command-line flags for a dict of loss settings."""
    out = []
    for k, v in flags.items():
        out += [FLAG_NAMES[k], v]
    return out


def ref_kwargs(flags):
    """Keyword arguments of ref.grpo_loss for a dict of loss settings (spec defaults otherwise)."""
    kw = {"temperature": 1.0, "clip_low": 0.2, "clip_high": 0.2, "ent_coef": 0.0}
    kw.update({("ent_coef" if k == "entropy_coef" else k): v for k, v in flags.items()})
    return kw


def check_stats(chk, what, got, want):
    """Printed loss statistics against the reference."""
    for key in ("loss", "pg_loss", "entropy", "grad_norm"):
        if chk.ok(isinstance(got.get(key), (int, float)), f"{what}: no numeric '{key}' in output"):
            chk.close(f"{what}: {key}", got[key], want[key], STAT_TOL * max(1.0, abs(want[key])))
    for key in ROLLOUT_STATS:
        if key in want and chk.ok(isinstance(got.get(key), (int, float)), f"{what}: no numeric '{key}'"):
            chk.close(f"{what}: {key}", got[key], want[key], STAT_TOL * max(1.0, abs(want[key])))
    chk.ok(got.get("tokens") == want["tokens"],
           f"{what}: tokens {got.get('tokens')} != {want['tokens']}")
    for key in ("clip_frac", "clip_frac_pos", "clip_frac_neg"):
        if chk.ok(isinstance(got.get(key), (int, float)), f"{what}: no {key}"):
            chk.close(f"{what}: {key}", got[key], want[key], 1e-9)
    for key in ("entropy_p10", "entropy_p50", "entropy_p90"):
        if chk.ok(isinstance(got.get(key), (int, float)), f"{what}: no {key}"):
            chk.close(f"{what}: {key}", got[key], want[key], STAT_TOL * max(1.0, abs(want[key])))


def check_grads(chk, what, path, want):
    """Every gradient tensor: names, F32 dtype, shapes and values."""
    try:
        got, dtypes, _ = ref.read_safetensors(path)
    except Exception as e:  # a malformed output file is a test failure, not a crash
        return chk.fail(f"{what}: cannot read {path}: {e}")
    chk.ok(set(got) == set(want), f"{what}: gradient names differ: missing "
           f"{sorted(set(want) - set(got))}, unexpected {sorted(set(got) - set(want))}")
    for name in sorted(set(got) & set(want)):
        chk.ok(dtypes[name] == "F32", f"{what}: {name} stored as {dtypes[name]}, want F32")
        w = want[name]
        scale = max(float(w.abs().max()), 1e-12)
        if chk.close(f"{what}: grad {name}", got[name], w, GRAD_ELEM * scale):
            rel = float((got[name] - w).norm() / max(float(w.norm()), 1e-30))
            chk.ok(rel <= GRAD_NORMWISE, f"{what}: grad {name} norm-wise error {rel:.3g}")


def check_case(chk, or1, tmp, k, case):
    """Runs one configuration through or1 grad and compares everything it reports."""
    kw = ref_kwargs(case["flags"])
    model = os.path.join(tmp, f"m{k}")
    cfg, params = ref.new_checkpoint(model, seed=10 + k, dtype=case["dtype"],
                                     shards=case["shards"], **case["cfg"])
    if "set" in case:  # config.json keys make_config has no argument for
        rollout.set_config(model, **case["set"])
        cfg, params = ref.load_checkpoint(model)
    lengths = {"lengths": case["lengths"]} if "lengths" in case else {}
    batch = ref.make_batch(params, cfg, seed=k, temperature=kw["temperature"], with_old=case.get("with_old", True),
                           with_rollout=case.get("rollout", False), **lengths)
    for row, shift in zip(batch, case.get("rollout_shift", [])):
        row["rollout_logprobs"] = [x + shift for x in row["rollout_logprobs"]]
    bpath, gpath = os.path.join(tmp, f"b{k}.jsonl"), os.path.join(tmp, f"g{k}.safetensors")
    files.write_jsonl(bpath, batch)
    what = f"{case['cfg']} {case.get('set', '')} {case['dtype']} shards={case['shards']} {case['flags']}"
    stdin = None
    if case.get("stdin"):  # the batch through --batch /dev/stdin
        with open(bpath) as f:
            stdin, bpath = f.read(), "/dev/stdin"
    r = proc.run_or1(or1, ["grad", "--model", model, "--batch", bpath, "--out", gpath,
                          "--threads", 2] + flag_args(case["flags"]), stdin=stdin)
    if not chk.ok(r.returncode == 0, f"{what}: exit {r.returncode}: {r.stderr.strip()}"):
        return
    want_stats, want_grads = ref.loss_and_grads(params, cfg, batch, **kw)
    if case.get("with_old", True) and kw["clip_low"] < 0.5:
        # the batch must exercise the clip in both directions, or this test proves little
        assert 0 < want_stats["clip_frac"] < 1, want_stats
    if kw.get("rollout_is", "none") != "none":
        # the bounds must cut some tokens and keep others, or the correction is not exercised;
        # a weighting mode (TIS, decoupled) masks none
        if kw["rollout_is"] in ("tis", "decoupled"):
            assert want_stats["is_masked_frac"] == 0, want_stats
        else:
            assert 0 < want_stats["is_masked_frac"] < 1, want_stats
        assert want_stats["is_weight_mean"] != 1.0, want_stats
    if kw.get("rollout_is") == "decoupled":
        # some weights must pass the TIS cap, or a truncated weight would pass this case too
        w = max(o - r for row in batch for o, r in zip(row["old_logprobs"], row["rollout_logprobs"]))
        assert w > torch.log(torch.tensor(kw.get("rollout_is_high", 2.0))).item() + 0.1, (what, w)
    if kw.get("rollout_is") == "mis-geo" or "offpolicy_delta" in kw:
        sequence_exercised(what, kw, batch, params, cfg, want_stats)
    check_stats(chk, what, proc.parse_json_line(r.stdout.strip(), what), want_stats)
    check_grads(chk, what, gpath, want_grads)


def sequence_exercised(what, kw, batch, params, cfg, stats):
    """The sequence-level bounds lie clear of every row's statistic, and cut some rows only."""
    for row in batch:
        ids = row["prompt_ids"] + row["response_ids"]
        logits = ref.forward_logits(params, cfg, ids)[len(row["prompt_ids"]) - 1:len(ids) - 1]
        lp = ref.token_logprobs(logits, row["response_ids"], kw["temperature"])[0]
        old, ro = (torch.as_tensor(row[k]) for k in ("old_logprobs", "rollout_logprobs"))
        if kw.get("rollout_is") == "mis-geo":
            geo = float(torch.exp((old - ro).mean()))
            assert min(abs(geo - kw["rollout_is_low"]), abs(geo - kw["rollout_is_high"])) > SEQ_MARGIN, (what, geo)
        if "offpolicy_delta" in kw:
            assert abs(float((ro - lp).mean()) - kw["offpolicy_delta"]) > SEQ_MARGIN, what
    if "offpolicy_delta" in kw:
        assert 0 < stats["offpolicy_masked_frac"] < 1, (what, stats)


def main():
    or1, group = sys.argv[1], sys.argv[2]
    chk = Checker(f"grad {group}")
    with tempfile.TemporaryDirectory() as tmp:
        for k, case in enumerate(GROUPS[group]):
            check_case(chk, or1, tmp, k, case)
    chk.finish()


if __name__ == "__main__":
    main()
