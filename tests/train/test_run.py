#!/usr/bin/env python3
"""Two training steps of the tiny SFT model end to end: exit 0, a metrics row per step with
every field of the metrics row (consistent with each other, the diagnostics included: clip
fraction by advantage sign adding up, zero-variance share, ESS, entropy percentiles in order), one progress line per step,
at least one real update that moved the weights, checkpoints with model, optimizer, trainer
state, config and `latest`; validation rows when eval is on; the KL field when KL is on; the
rollout/training mismatch in every row, exactly 0 on the CPU (the rollout and the trainer run
the same kernels in the same order, docs/model.md "Exactly on-policy"), over the first mini-batch
by default and over every token with train.recompute_logprobs, and in bf16 (`precision: bf16`)
too; with TIS the weights are exactly 1 and with MIS bounds that exclude 1 every token is masked,
so the update moves nothing.
With `train.gradient_checkpointing` the two-step run ends with the same weights, AdamW state and
metrics (timings aside) bit for bit, and its memory line reports a smaller activation workspace.

Usage: test_run.py OR1 FIXTURE_DIR SCRATCH_DIR
"""
import json
import os
import re
import sys

from or1test import train as C
from or1test.check import check, finish
from or1test.files import fresh

OR1, FX, SCRATCH = sys.argv[1], sys.argv[2], fresh(sys.argv[3])
FIELDS = ["step", "stage", "reward_mean", "accuracy", "solve_none_ratio", "solve_all_ratio", "kept_groups",
          "response_length_mean", "response_length_max", "truncated_ratio", "entropy_sampled", "entropy_full",
          "alpha", "entropy_enabled", "pg_loss", "clip_frac", "grad_norm", "seconds_rollout", "seconds_reward",
          "seconds_update", "clip_frac_pos", "clip_frac_neg", "zero_variance_ratio", "is_ess"]
VOCAB_LN = 12.0  # above ln(vocabulary) of the fixture's tokenizer: the largest possible entropy


def row_consistent(r, n, m, t):
    """The numbers of one metrics row agree with the config and with each other."""
    step = r.get("step")
    check(r["groups"] == n and r["samples"] == n * m, f"step {step}: groups {r['groups']} samples {r['samples']}")
    check(0 <= r["reward_mean"] <= 1 and r["accuracy"] == r["reward_mean"], f"step {step}: reward/accuracy {r}")
    ratios = r["solve_none_ratio"] + r["solve_all_ratio"] + r["kept_groups"] / r["groups"]
    check(abs(ratios - 1) < 1e-9, f"step {step}: solve_none + solve_all + kept fraction = {ratios}")
    check(r["kept_samples"] == r["kept_groups"] * m, f"step {step}: kept_samples {r['kept_samples']}")
    check(0 < r["response_length_mean"] <= r["response_length_max"] <= t,
            f"step {step}: length mean {r['response_length_mean']} max {r['response_length_max']} (T {t})")
    check(0 <= r["truncated_ratio"] <= 1 and 0 <= r["clip_frac"] <= 1, f"step {step}: ratios out of [0, 1]")
    check(sum(r["accuracy_hist"]) == r["groups"], f"step {step}: accuracy histogram {r['accuracy_hist']}")
    check(abs(r["clip_frac_pos"] + r["clip_frac_neg"] - r["clip_frac"]) < 1e-12 and r["clip_frac_pos"] >= 0 and
          r["clip_frac_neg"] >= 0, f"step {step}: clip fraction by sign {r['clip_frac_pos']} + {r['clip_frac_neg']}")
    zero_var = r["solve_none_ratio"] + r["solve_all_ratio"]
    check(zero_var - 1e-12 <= r["zero_variance_ratio"] <= 1, f"step {step}: zero-variance share {r['zero_variance_ratio']}")
    check(1 - 1e-6 < r["is_ess"] <= 1 + 1e-12, f"step {step}: ESS {r['is_ess']} (CPU weights are 1 to rounding)")
    if not r["skipped"]:
        check(r["entropy_sampled"] > 0 and r["entropy_full"] > 0, f"step {step}: entropies {r}")
        check(r["grad_norm"] > 0 and r["loss_tokens"] > 0, f"step {step}: grad norm {r['grad_norm']}")
        pct = [r.get(k, -1) for k in ("entropy_p10", "entropy_p50", "entropy_p90")]
        check(0 <= pct[0] <= pct[1] <= pct[2] < VOCAB_LN, f"step {step}: entropy percentiles {pct}")
    check(all(r.get(k, 0) >= 0 for k in C.TIMING), f"step {step}: negative timing")


def two_steps():
    """The two-step run, its metrics, stderr and checkpoints."""
    out = os.path.join(SCRATCH, "run")
    cfg = C.write_config(os.path.join(SCRATCH, "run.yaml"),
                         C.base_config(os.path.join(FX, "sft"), os.path.join(FX, "rows.jsonl"), out))
    p = C.train(OR1, cfg)
    rows = C.metrics(out)
    check([r.get("step") for r in rows] == [1, 2], f"metrics steps {[r.get('step') for r in rows]}")
    for r in rows:
        missing = [f for f in FIELDS if f not in r]
        check(not missing, f"step {r.get('step')}: metrics lack {missing}")
        if not missing:
            row_consistent(r, 4, 4, 24)
        check(r.get("stage") == 0, f"stage {r.get('stage')}")
    check(any(not r["skipped"] and r["kept_groups"] > 0 for r in rows), "no step made an update")
    progress = re.findall(r"^step (\d+)/2 .*reward .* kept \d+/\d+ .* elapsed \d+s, eta \d+s$", p.stderr, re.M)
    check(progress == ["1", "2"], f"progress lines {progress} in {p.stderr!r}")
    for step in (1, 2):
        d = C.ckpt(out, step)
        for f in ("model.safetensors", "optimizer.safetensors", "trainer_state.json", "config.yaml", "config.json"):
            check(os.path.isfile(os.path.join(d, f)), f"checkpoint {d} lacks {f}")
    latest = os.path.join(out, "checkpoints", "latest")
    check(os.path.islink(latest) and os.readlink(latest) == "step-000002" and os.path.isfile(os.path.join(latest, "model.safetensors")),
          "latest is not a link to step 2 that works as a path")
    check(not [f for f in os.listdir(os.path.join(out, "checkpoints")) if f.endswith(".tmp")], "temporary left")
    state = json.load(open(os.path.join(C.ckpt(out, 2), "trainer_state.json")))
    check(state.get("step") == 2 and "entropy" in state and "data" in state, f"trainer_state {state}")
    moved = C.max_rel_diff(C.tensors(os.path.join(C.ckpt(out, 2), "model.safetensors")),
                           C.tensors(os.path.join(FX, "sft", "model.safetensors")))
    check(0 < moved < float("inf"), f"weights after 2 steps vs start: {moved}")
    # The saved checkpoint is a model or1 loads again (eval runs on it).
    q = C.run([OR1, "eval", "--model", C.ckpt(out, 2), "--data", os.path.join(FX, "rows.jsonl"), "--n", "2",
               "--max-new-tokens", "24"])
    check("overall" in json.loads(q.stdout), "eval on the checkpoint")
    checkpointing(out, p.stderr)


def checkpointing(out, stderr):
    """The two-step run (out, its stderr) again with gradient checkpointing: the same checkpoint
    and metrics, a smaller activation workspace."""
    out2 = os.path.join(SCRATCH, "run_ckpt")
    cfg = C.write_config(os.path.join(SCRATCH, "run_ckpt.yaml"),
                         C.base_config(os.path.join(FX, "sft"), os.path.join(FX, "rows.jsonl"), out2,
                                       train={"gradient_checkpointing": True}))
    p = C.train(OR1, cfg)
    for f in ("model.safetensors", "optimizer.safetensors"):
        d = C.max_rel_diff(C.tensors(os.path.join(C.ckpt(out2, 2), f)), C.tensors(os.path.join(C.ckpt(out, 2), f)))
        check(d == 0, f"gradient checkpointing: {f} differs by {d:g} from the run without it")
    bad = C.rows_close(C.metrics(out2), C.metrics(out), 0)
    check(bad is None, f"gradient checkpointing: metrics differ: {bad}")
    act = [float(a) for a in re.findall(r"activations ([0-9.e+-]+) GiB", p.stderr)]
    base = [float(a) for a in re.findall(r"activations ([0-9.e+-]+) GiB", stderr)]
    check(act and base and act[0] < base[0], f"gradient checkpointing: activations {act} GiB, without {base} GiB")


def with_eval_and_kl():
    """Validation rows (one per temperature, before step 1 and at the end) and the KL field."""
    out = os.path.join(SCRATCH, "evalkl")
    rows_file = os.path.join(FX, "rows.jsonl")
    cfg = C.base_config(os.path.join(FX, "sft"), rows_file, out,
                        eval={"files": [rows_file], "every": 2, "n": 2, "temperatures": [0.6, 1.0]},
                        kl={"enabled": True, "coef": 0.01, "estimator": "k3"}, checkpoint={"every": 0})
    p = C.train(OR1, C.write_config(os.path.join(SCRATCH, "evalkl.yaml"), cfg))
    ev = C.metrics(out, "eval")
    check([(r["step"], round(r["temperature"], 5)) for r in ev] == [(0, 0.6), (0, 1.0), (2, 0.6), (2, 1.0)],
            f"eval rows {[(r.get('step'), r.get('temperature')) for r in ev]}")
    check(all("avg@2" in r["report"]["overall"] for r in ev), "eval rows lack avg@2")
    check(len(re.findall(r"^eval step", p.stderr, re.M)) == 4, "eval progress lines")
    tr = C.metrics(out)
    check(all("kl" in r for r in tr), "KL on: metrics rows lack kl")
    check(all(r["kl"] >= -1e-6 for r in tr if not r["skipped"]), f"k3 KL negative: {[r['kl'] for r in tr]}")
    # Before its first update the policy is the reference: a step whose kept groups fit one
    # mini-batch (2 prompts here) must see KL 0, whatever the reference's packing.
    if tr[0]["kept_groups"] <= 2 and not tr[0]["skipped"]:
        check(abs(tr[0]["kl"]) < 1e-6, f"step 1 KL {tr[0]['kl']} against the starting policy itself")
    check(os.listdir(os.path.join(out, "checkpoints")) == ["step-000002", "latest"] or
            sorted(os.listdir(os.path.join(out, "checkpoints"))) == ["latest", "step-000002"],
            f"checkpoint.every 0: {os.listdir(os.path.join(out, 'checkpoints'))}")


def mismatch_rows(name, over, **sections):
    """A two-step run with the given sections; its rows, checked for the mismatch fields (exactly
    0: the rollout's log-probs are the trainer's bits)."""
    out = os.path.join(SCRATCH, name)
    cfg = C.base_config(os.path.join(FX, "sft"), os.path.join(FX, "rows.jsonl"), out, checkpoint={"every": 0},
                        **sections)
    C.train(OR1, C.write_config(os.path.join(SCRATCH, name + ".yaml"), cfg))
    rows = [r for r in C.metrics(out) if not r["skipped"]]
    check(rows, f"{name}: no step made an update")
    for r in rows:
        check(r.get("mismatch_over") == over, f"{name}: mismatch over {r.get('mismatch_over')}, want {over}")
        check(r.get("mismatch_tokens", 0) > 0, f"{name}: step {r['step']} measured no token")
        check(r.get("mismatch_abs_mean") == 0 and r.get("mismatch_abs_max") == 0 and r.get("mismatch_k3") == 0,
              f"{name}: step {r['step']} mismatch {r.get('mismatch_abs_mean')} / {r.get('mismatch_abs_max')} / "
              f"k3 {r.get('mismatch_k3')}, want exactly 0")
    return rows, out


def rollout_mismatch():
    """The mismatch metric and the rollout correction on the CPU."""
    mismatch_rows("mm_default", "first_mini_batch")
    mismatch_rows("mm_recompute", "recomputed", train={"recompute_logprobs": True})
    mismatch_rows("mm_bf16", "recomputed", precision="bf16", train={"recompute_logprobs": True})
    rows, _ = mismatch_rows("mm_tis", "recomputed", rollout_correction={"mode": "tis", "high": 2.0})
    check(all(r["rollout_is_weight_mean"] == 1 and r["rollout_is_masked_frac"] == 0 for r in rows),
          f"TIS on the CPU: weights {[(r['rollout_is_weight_mean'], r['rollout_is_masked_frac']) for r in rows]}")
    # MIS with bounds [1 + 1e-3, 2]: the CPU's ratios are exactly 1, so every token is out
    rows, out = mismatch_rows("mm_mis", "recomputed", rollout_correction={"mode": "mis", "low": 1.001, "high": 2.0})
    check(all(r["rollout_is_masked_frac"] == 1 and r["pg_loss"] == 0 for r in rows),
          f"MIS above every ratio: {[(r['rollout_is_masked_frac'], r['pg_loss']) for r in rows]}")


def main():
    """Runs every scenario."""
    two_steps()
    with_eval_and_kl()
    rollout_mismatch()
    finish("train_run")


main()
