#!/usr/bin/env python3
"""Resume equality: 4 steps in one run against 2 steps, then --resume from
the step-2 checkpoint and 2 more. The final model.safetensors and optimizer.safetensors must
be byte-identical and the metrics rows equal apart from timings. Three ways:
  - the issue's literal one: a run configured for 2 steps, resumed with 4 steps, same folder
    (the metrics file is trimmed at the checkpoint and appended);
  - from the middle of a 4-step run's schedule, into a new output folder and in place;
  - a checkpoint missing its optimizer or trainer state must not resume;
  - across a stage boundary with the online filter (resumed at the end of stage 1, at step 1
    inside stage 1, and at step 3 inside stage 2).

Usage: test_resume.py OR1 FIXTURE_DIR SCRATCH_DIR
"""
import os
import shutil
import sys

from or1test import train as C
from or1test.check import check, finish
from or1test.files import fresh

OR1, FX, SCRATCH = sys.argv[1], sys.argv[2], fresh(sys.argv[3])
SFT, ROWS = os.path.join(FX, "sft"), os.path.join(FX, "rows.jsonl")


def same_final(a, b, step, what):
    """Model and optimizer files of two checkpoints are byte-identical."""
    for f in ("model.safetensors", "optimizer.safetensors"):
        pa, pb = os.path.join(C.ckpt(a, step), f), os.path.join(C.ckpt(b, step), f)
        if not (os.path.isfile(pa) and os.path.isfile(pb)):
            check(False, f"{what}: {f} missing")
            continue
        if not check(C.same_bytes(pa, pb), f"{what}: {f} differs after resume"):
            print(f"  max relative difference {C.max_rel_diff(C.tensors(pa), C.tensors(pb)):g}", file=sys.stderr)


def same_metrics(a, b, what, from_step=0):
    """Metrics rows (from from_step on) equal apart from timings."""
    ra = [r for r in C.metrics(a) if r["step"] > from_step]
    rb = [r for r in C.metrics(b) if r["step"] > from_step]
    check(C.strip_timings(ra) == C.strip_timings(rb), f"{what}: metrics differ: {C.rows_close(ra, rb, 0)}")


def literal():
    """2 steps, then resume to 4 in the same folder, against 4 in one go."""
    ref = os.path.join(SCRATCH, "four")
    C.train(OR1, C.write_config(os.path.join(SCRATCH, "four.yaml"),
                                C.base_config(SFT, ROWS, ref, train={"steps": 4})))
    part = os.path.join(SCRATCH, "two")
    cfg2 = C.write_config(os.path.join(SCRATCH, "two.yaml"), C.base_config(SFT, ROWS, part, train={"steps": 2}))
    C.train(OR1, cfg2)
    check(len(C.metrics(ref)) == 4 and len(C.metrics(part)) == 2, "step counts of the runs")
    cfg4 = C.write_config(os.path.join(SCRATCH, "two_to_four.yaml"),
                          C.base_config(SFT, ROWS, part, train={"steps": 4}, checkpoint={"every": 1, "keep_last": 0}))
    p = C.train(OR1, cfg4, "--resume", C.ckpt(part, 2))
    check("from step 2" in p.stderr, f"resume banner: {p.stderr[:300]!r}")
    check(sorted(r for r in os.listdir(os.path.join(part, "checkpoints")) if r.startswith("step")) ==
            ["step-%06d" % k for k in (1, 2, 3, 4)], "checkpoints after resume")
    same_final(ref, part, 4, "2 + resume 2")
    same_metrics(ref, part, "2 + resume 2")
    return ref


def mid_run(ref):
    """Resume the 4-step run's own step-2 checkpoint into a new folder."""
    out = os.path.join(SCRATCH, "again")
    cfg = C.write_config(os.path.join(SCRATCH, "again.yaml"), C.base_config(SFT, ROWS, out, train={"steps": 4}))
    C.train(OR1, cfg, "--resume", C.ckpt(ref, 2))
    check([r["step"] for r in C.metrics(out)] == [3, 4], f"resumed metrics steps {[r['step'] for r in C.metrics(out)]}")
    same_final(ref, out, 4, "resume into a new folder")
    same_metrics(ref, out, "resume into a new folder", from_step=2)
    # In place: the rows of steps 3 and 4 already in metrics.jsonl are dropped, then rewritten.
    inplace = os.path.join(SCRATCH, "inplace")
    shutil.copytree(ref, inplace, symlinks=True)
    cfg = C.write_config(os.path.join(SCRATCH, "inplace.yaml"), C.base_config(SFT, ROWS, inplace, train={"steps": 4}))
    C.train(OR1, cfg, "--resume", C.ckpt(inplace, 2))
    same_metrics(ref, inplace, "resume in place (metrics trimmed)")
    same_final(ref, inplace, 4, "resume in place")


def incomplete_checkpoint(ref):
    """A checkpoint lacking optimizer.safetensors or trainer_state.json cannot resume exactly:
    the resume must fail naming the missing file (not restart AdamW from zero moments)."""
    for missing in ("optimizer.safetensors", "trainer_state.json"):
        broken = os.path.join(SCRATCH, "broken_" + missing.split(".")[0])
        shutil.copytree(C.ckpt(ref, 2), broken)
        os.remove(os.path.join(broken, missing))
        out = os.path.join(SCRATCH, "from_broken")
        shutil.rmtree(out, ignore_errors=True)
        cfg = C.write_config(os.path.join(SCRATCH, "broken.yaml"), C.base_config(SFT, ROWS, out, train={"steps": 4}))
        p = C.train(OR1, cfg, "--resume", broken, ok=False)
        check(p.returncode != 0 and missing in p.stderr,
                f"resume from a checkpoint without {missing}: exit {p.returncode}, stderr {p.stderr[-300:]!r}")


def staged(out):
    """A 2-stage config (T and M change, online filter on) writing to out."""
    return C.base_config(SFT, ROWS, out, checkpoint={"every": 1, "keep_last": 0}, stages=[
        {"name": "s1", "context_length": 20, "prompts": 4, "n": 4, "mini_batch": 2, "steps": 2},
        {"name": "s2", "context_length": 24, "prompts": 2, "n": 6, "mini_batch": 1, "steps": 2}])


def across_stages():
    """Resume at step 1, 2 (stage boundary) and 3 of a 2-stage schedule."""
    ref = os.path.join(SCRATCH, "staged")
    C.train(OR1, C.write_config(os.path.join(SCRATCH, "staged.yaml"), staged(ref)))
    rows = C.metrics(ref)
    check([r["stage"] for r in rows] == [0, 0, 1, 1], f"stages {[r['stage'] for r in rows]}")
    check([r["context_length"] for r in rows] == [20, 20, 24, 24], "context lengths per stage")
    check([r["samples"] for r in rows] == [16, 16, 12, 12], f"samples per stage {[r['samples'] for r in rows]}")
    for k in (1, 2, 3):
        out = os.path.join(SCRATCH, f"staged_from{k}")
        shutil.rmtree(out, ignore_errors=True)
        C.train(OR1, C.write_config(os.path.join(SCRATCH, f"staged_from{k}.yaml"), staged(out)),
                "--resume", C.ckpt(ref, k))
        same_final(ref, out, 4, f"2 stages, resumed at step {k}")
        same_metrics(ref, out, f"2 stages, resumed at step {k}", from_step=k)


def main():
    """All three resume scenarios."""
    ref = literal()
    mid_run(ref)
    incomplete_checkpoint(ref)
    across_stages()
    finish("train_resume")


main()
