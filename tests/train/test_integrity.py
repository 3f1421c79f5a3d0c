#!/usr/bin/env python3
"""Checkpoint integrity: every checkpoint's checksums.json records each file's size and XXH3-128
hash (checked here with python3-xxhash); a flipped byte, a cut-short optimizer state, a missing
file or a damaged record is refused naming the file, both by --resume and by `or1 logprobs
--model`; --resume auto (and a run folder) passes over damaged checkpoints to the newest intact
one, saying so, and refuses when none is intact; a checkpoint without checksums.json (an older
or1's) still resumes.

Usage: test_integrity.py OR1 FIXTURE_DIR SCRATCH_DIR
"""
import json
import os
import shutil
import sys

from or1test import train as C
from or1test.check import check, finish
from or1test.files import fresh

OR1, FX, SCRATCH = sys.argv[1], sys.argv[2], fresh(sys.argv[3])
SFT, ROWS = os.path.join(FX, "sft"), os.path.join(FX, "rows.jsonl")
RUN = os.path.join(SCRATCH, "run")


def config(out, steps):
    """A config writing to out for steps steps, a checkpoint each."""
    cfg = C.base_config(SFT, ROWS, out, train={"steps": steps}, checkpoint={"every": 1, "keep_last": 0})
    return C.write_config(os.path.join(SCRATCH, os.path.basename(out) + f"-{steps}.yaml"), cfg)


def copy_run(name):
    """A copy of the 3-step run, to damage."""
    dst = os.path.join(SCRATCH, name)
    shutil.copytree(RUN, dst, symlinks=True)
    return dst


def flip(path, offset=-1):
    """Flips the lowest bit of one byte (the last by default: a weight's lowest mantissa bit,
    so the tensor stays finite and the file parses)."""
    with open(path, "r+b") as f:
        f.seek(offset, os.SEEK_END if offset < 0 else os.SEEK_SET)
        b = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([b[0] ^ 1]))


def recorded():
    """checksums.json of every checkpoint matches the files, hash for hash."""
    for step in (1, 2, 3):
        d = C.ckpt(RUN, step)
        rec = json.load(open(os.path.join(d, "checksums.json")))
        check(rec.get("algorithm") == "XXH3-128", f"step {step}: algorithm {rec.get('algorithm')!r}")
        files = sorted(os.path.relpath(os.path.join(r, n), d) for r, _, ns in os.walk(d) for n in ns
                       if n != "checksums.json")
        check(sorted(rec["files"]) == files, f"step {step}: records {sorted(rec['files'])}, folder has {files}")
        for name, e, got in C.record_mismatches(d):
            check(False, f"step {step}: {name}: recorded {e}, the file {got}")


def refused(p, *words, what):
    """A non-zero exit whose message holds every word."""
    check(p.returncode != 0 and all(w in p.stderr for w in words),
          f"{what}: rc {p.returncode}, want {words} in stderr {p.stderr[-600:]!r}")


def named_resume():
    """--resume of a damaged checkpoint fails naming the file; no fallback when named outright."""
    cases = [("model.safetensors", flip, ("model.safetensors", "damaged")),
             ("optimizer.safetensors", lambda p: os.truncate(p, os.path.getsize(p) - 7), ("optimizer.safetensors", "cut short")),
             ("config.yaml", os.remove, ("config.yaml", "missing")),
             ("tokenizer.json", flip, ("tokenizer.json", "damaged")),
             ("checksums.json", lambda p: open(p, "w").write("{\"algorithm\": "), ("checksums.json", "invalid JSON"))]
    for name, damage, words in cases:
        run = copy_run("named-" + name)
        target = os.path.join(C.ckpt(run, 3), name)
        if os.path.exists(target):
            damage(target)
        else:
            check(False, f"{name}: not in the checkpoint")
            continue
        p = C.train(OR1, config(run, 4), "--resume", C.ckpt(run, 3), ok=False)
        refused(p, "--resume", *words, what=f"--resume of a checkpoint with {name} damaged")
        check(not os.path.isdir(C.ckpt(run, 4)), f"{name}: a damaged checkpoint was resumed")


def model_loads():
    """or1 logprobs --model refuses a checkpoint whose weights or config were changed."""
    ids = os.path.join(SCRATCH, "ids.jsonl")
    open(ids, "w").write(json.dumps({"ids": [1, 2, 3, 4]}) + "\n")
    ok = C.run([OR1, "logprobs", "--model", C.ckpt(RUN, 3), "--input", ids], ok=False)
    check(ok.returncode == 0, f"logprobs on an intact checkpoint: {ok.stderr[-300:]!r}")
    for name in ("model.safetensors", "config.json"):
        run = copy_run("load-" + name)
        flip(os.path.join(C.ckpt(run, 3), name), -1 if name == "model.safetensors" else -3)
        p = C.run([OR1, "logprobs", "--model", C.ckpt(run, 3), "--input", ids], ok=False)
        refused(p, name, "checksums.json", what=f"logprobs --model with {name} changed")
        check(p.stdout == "", f"logprobs --model with {name} changed printed {p.stdout[:200]!r}")


def auto_fallback():
    """--resume auto passes over the damaged newest checkpoint to step 2, and trains on from it
    as a resume from step 2 does; with every checkpoint damaged it refuses."""
    run = copy_run("auto")
    flip(os.path.join(C.ckpt(run, 3), "model.safetensors"))
    p = C.train(OR1, config(run, 4), "--resume", "auto")
    check("passing over a damaged checkpoint" in p.stderr and "step-000003/model.safetensors" in p.stderr
          and "newest intact checkpoint is " + C.ckpt(run, 2) in p.stderr,
          f"auto fallback: stderr {p.stderr[-800:]!r}")
    check([r["step"] for r in C.metrics(run)] == [1, 2, 3, 4], f"auto fallback: metrics steps {[r['step'] for r in C.metrics(run)]}")
    ref = copy_run("from-two")
    C.train(OR1, config(ref, 4), "--resume", C.ckpt(ref, 2))
    check(C.same_bytes(os.path.join(C.ckpt(run, 4), "model.safetensors"), os.path.join(C.ckpt(ref, 4), "model.safetensors")),
          "auto fallback: step 4 differs from a resume of step 2")
    p = C.train(OR1, config(run, 5), "--resume", run)
    check("passing over" not in p.stderr and "resuming from " + C.ckpt(run, 4) in p.stderr,
          f"a run folder after the fallback: {p.stderr[-400:]!r}")
    bad = copy_run("all-bad")
    for step in (1, 2, 3):
        os.truncate(os.path.join(C.ckpt(bad, step), "trainer_state.json"), 3)
    p = C.train(OR1, config(bad, 4), "--resume", "auto", ok=False)
    refused(p, "none of the 3 checkpoints", "trainer_state.json", what="--resume auto with every checkpoint damaged")


def unrecorded():
    """A checkpoint without checksums.json (written by an older or1) still resumes."""
    run = copy_run("old")
    os.remove(os.path.join(C.ckpt(run, 3), "checksums.json"))
    C.train(OR1, config(run, 4), "--resume", C.ckpt(run, 3))
    check(os.path.isfile(os.path.join(C.ckpt(run, 4), "checksums.json")), "the resumed run's checkpoint has no record")


C.train(OR1, config(RUN, 3))
recorded()
named_resume()
model_loads()
auto_fallback()
unrecorded()
finish("train_integrity")
