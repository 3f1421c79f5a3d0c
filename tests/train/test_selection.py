"""The mini-batch token selections (Clip-Cov, KL-Cov, the 80/20 rule) and the sequence masks
(MIS on the geometric mean, DeepSeek-V3.2's off-policy mask) inside the trainer.

- Clip-Cov with a share that draws tokens and the 80/20 rule together, 2 steps of N_SGD 2: the
  metrics row reports the drawn and masked shares (drawn > 0; masked at most 1 - rho, and above 0).
- The same config run again gives byte-identical weights and equal metrics: the draw is
  reproducible from the run's seed.
- The same config with micro-batches of one sample: the same updates (to 1e-2 of their norm:
  fp32 sums in another order, through AdamW) and metrics, as the selections are computed over the
  whole mini-batch.
- KL-Cov: the penalised share is floor(k T) / T of each mini-batch (so above 0).
- With mpirun and an MPI build: 2 ranks give the 1-process weights and metrics (the selections
  are summed over the ranks); skipped with a line otherwise.
- mis-geo with low = high = 2 (the CPU's geometric means are 1 to rounding) masks every token
  and, without entropy term and weight decay, moves no weight.
- The off-policy mask with delta 0 drops some negative-advantage sequences once the first
  mini-batch has moved the policy (the second mini-batch of each step); with a huge delta none.
  Turning it on without a delta is refused at load.

Usage: test_selection.py OR1 FIXTURE_DIR SCRATCH_DIR
"""
import json
import os
import shutil
import sys

from or1test import proc, train as C
from or1test.check import check, finish
from or1test.files import fresh

OR1, FX, SCRATCH = sys.argv[1], sys.argv[2], fresh(sys.argv[3])
SFT, ROWS = os.path.join(FX, "sft"), os.path.join(FX, "rows.jsonl")
TOL = 1e-5
CLIP_COV = {"mode": "clip-cov", "clip_cov_ratio": 0.05, "clip_cov_lb": -100.0, "clip_cov_ub": 100.0,
            "top_entropy_quantile": 0.5}


def config(name, loss, **train):
    """2 steps of 4 prompts x 4 samples, 2 mini-batches per step, writing to SCRATCH/name."""
    out = os.path.join(SCRATCH, name)
    cfg = C.base_config(SFT, ROWS, out, loss=loss, train={"steps": 2, "mini_batch": 2, **train})
    return C.write_config(os.path.join(SCRATCH, name + ".yaml"), cfg), out


def same_run(a, b, what, exact):
    """Model weights of the last checkpoint and metrics rows of two runs agree: the same bytes, or
    updates from the SFT weights within C.UPDATE_TOL of their norm (the gradient summed in another
    order: one-sample micro-batches, 2 ranks)."""
    wa, wb = (os.path.join(C.ckpt(x, 2), "model.safetensors") for x in (a, b))
    if exact:
        check(C.same_bytes(wa, wb), f"{what}: weights differ")
    else:
        d = C.update_diff(C.tensors(wa), C.tensors(wb), C.tensors(os.path.join(SFT, "model.safetensors")))
        check(d <= C.UPDATE_TOL, f"{what}: the updates differ by {d:g} of their norm")
    bad = C.rows_close(C.metrics(a), C.metrics(b), 0 if exact else TOL)
    check(bad is None, f"{what}: metrics differ: {bad}")


def clip_cov_runs():
    """The shares in the metrics, a rerun, and a split into one-sample micro-batches."""
    cfg, one = config("clip_cov", CLIP_COV)
    C.train(OR1, cfg)
    for r in C.metrics(one):
        check(r.get("cov_selected_frac", 0) > 0, f"step {r['step']}: no Clip-Cov draw: {r.get('cov_selected_frac')}")
        low = r.get("low_entropy_frac", -1)
        check(0 < low <= 0.5, f"step {r['step']}: low_entropy_frac {low} not in (0, 0.5]")
    cfg, again = config("clip_cov_again", CLIP_COV)
    C.train(OR1, cfg)
    same_run(again, one, "the same seed again", exact=True)
    cfg, micro = config("clip_cov_micro", CLIP_COV, micro_tokens=1)
    C.train(OR1, cfg)
    same_run(micro, one, "one sample per micro-batch", exact=False)
    return one


def kl_cov_run():
    """KL-Cov penalises floor(k T) tokens of each mini-batch: a share above 0 in every row."""
    cfg, out = config("kl_cov", {"mode": "kl-cov", "kl_cov_ratio": 0.1})
    C.train(OR1, cfg)
    for r in C.metrics(out):
        frac = r.get("cov_selected_frac", 0)
        check(0 < frac <= 0.1, f"step {r['step']}: KL-Cov share {frac} not in (0, 0.1]")
        check(r.get("clip_frac") == 0, f"step {r['step']}: KL-Cov clips nothing, clip_frac {r.get('clip_frac')}")


def mpi_run(one):
    """2 ranks against 1 process, when mpirun and an MPI build are there."""
    mpirun = shutil.which("mpirun")
    if not mpirun:
        print("MPI part skipped: mpirun not found")
        return
    cfg, out = config("clip_cov_np2", CLIP_COV)
    p = proc.mpirun(mpirun, 2, [OR1, "train", "--config", cfg], 120)
    if "2 rank(s)" not in p.stderr:
        print(f"MPI part skipped: not an MPI build ({p.stderr[-200:]!r})")
        return
    check(p.returncode == 0, f"2 ranks: exit {p.returncode}: {p.stderr[-2000:]}")
    same_run(out, one, "2 ranks", exact=False)


def sequence_masks():
    """mis-geo masks all or nothing on the CPU; the off-policy mask follows its delta."""
    cfg, out = config("geo_all", {})
    base = json.load(open(cfg))
    C.write_config(cfg, {**base, "rollout_correction": {"mode": "mis-geo", "low": 2.0, "high": 2.0},
                         "entropy": {"mode": "off"}, "train": {**base["train"], "weight_decay": 0}})
    C.train(OR1, cfg)
    for r in C.metrics(out):
        check(r.get("rollout_is_masked_frac") == 1.0, f"mis-geo [2, 2]: step {r['step']}: {r.get('rollout_is_masked_frac')}")
    w0 = C.tensors(os.path.join(SFT, "model.safetensors"))
    d = C.max_rel_diff(C.tensors(os.path.join(C.ckpt(out, 2), "model.safetensors")), w0)
    check(d == 0, f"mis-geo [2, 2] masks everything (no entropy term, no decay), yet the weights moved by {d:g}")
    for delta, some in ((0.0, True), (1e6, False)):
        cfg, out = config(f"offpolicy_{delta:g}", {})
        C.write_config(cfg, {**json.load(open(cfg)),
                             "rollout_correction": {"offpolicy_mask": True, "offpolicy_delta": delta}})
        C.train(OR1, cfg)
        fracs = [r.get("offpolicy_masked_frac", -1) for r in C.metrics(out)]
        check(all(0 <= f < 1 for f in fracs) and (max(fracs) > 0) == some,
              f"off-policy mask delta {delta}: masked shares {fracs}")
    cfg, _ = config("offpolicy_nodelta", {})
    C.write_config(cfg, {**json.load(open(cfg)), "rollout_correction": {"offpolicy_mask": True}})
    p = C.train(OR1, cfg, ok=False)
    check(p.returncode != 0 and "rollout_correction.offpolicy_delta" in p.stderr,
          f"mask without delta: exit {p.returncode}: {p.stderr[-300:]}")


def main():
    one = clip_cov_runs()
    kl_cov_run()
    mpi_run(one)
    sequence_masks()
    finish("train_selection")


if __name__ == "__main__":
    main()
