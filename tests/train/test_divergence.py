#!/usr/bin/env python3
"""No silent divergence.

A run resumes from a checkpoint whose optimizer state holds a NaN (a corrupt or diverged
file): the first update turns a weight into NaN, and the trainer must stop at that step with
an error naming the step and the quantity, write no checkpoint from it, and leave `latest`
pointing at the last good one. A checkpoint whose model weights hold a NaN is refused at load,
naming the tensor. A config whose AdamW epsilon is 0 is refused before anything runs.

Usage: test_divergence.py OR1 FIXTURE_DIR SCRATCH_DIR
"""
import json
import os
import re
import shutil
import struct
import sys

from or1test import train as C
from or1test.check import check, finish
from or1test.files import fresh

OR1, FX, SCRATCH = sys.argv[1], sys.argv[2], fresh(sys.argv[3])
SFT, ROWS = os.path.join(FX, "sft"), os.path.join(FX, "rows.jsonl")


def poison(path, value):
    """Sets the first element of the first F32 tensor of a safetensors file to value; returns
    that tensor's name."""
    blob = open(path, "rb").read()
    n = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + n])
    name = min((k for k, v in header.items() if k != "__metadata__" and v["dtype"] == "F32"),
               key=lambda k: header[k]["data_offsets"][0])
    at = 8 + n + header[name]["data_offsets"][0]
    with open(path, "wb") as f:
        f.write(blob[:at] + struct.pack("<f", value) + blob[at + 4:])
    return name


def checkpoints(out):
    """The step numbers of the checkpoints in out, and the one `latest` names."""
    root = os.path.join(out, "checkpoints")
    steps = sorted(int(d[5:]) for d in os.listdir(root) if d.startswith("step-"))
    latest = os.readlink(os.path.join(root, "latest"))
    return steps, latest


def diverged_optimizer():
    """Two good steps, then a resume whose AdamW state holds a NaN: the run stops at the first
    update with the step and the quantity named; nothing of that step is kept."""
    out = os.path.join(SCRATCH, "run")
    C.train(OR1, C.write_config(os.path.join(SCRATCH, "two.yaml"), C.base_config(SFT, ROWS, out)))
    poison(os.path.join(C.ckpt(out, 2), "optimizer.safetensors"), float("nan"))
    C.rerecord(C.ckpt(out, 2), "optimizer.safetensors")
    cfg = C.write_config(os.path.join(SCRATCH, "four.yaml"), C.base_config(SFT, ROWS, out, train={"steps": 4}))
    p = C.train(OR1, cfg, "--resume", C.ckpt(out, 2), ok=False)
    m = re.search(r"train: step (\d+): stopped; no checkpoint is written from this step \(latest is the last good "
                  r"one\): the weights are not finite after the update of mini-batch 1", p.stderr)
    check(p.returncode != 0 and m is not None, f"diverged run: rc {p.returncode}, stderr {p.stderr[-400:]!r}")
    bad = int(m.group(1)) if m else 0
    steps, latest = checkpoints(out)
    check(steps == list(range(1, bad)) and latest == "step-%06d" % (bad - 1),
          f"checkpoints {steps}, latest {latest} after a failure at step {bad}")
    check(all(r["step"] < bad for r in C.metrics(out)), "a metrics row of the failed step was written")


def nan_weights():
    """A checkpoint with a NaN weight cannot be trained from: the error names file and tensor."""
    model = os.path.join(SCRATCH, "nan_model")
    shutil.copytree(SFT, model)
    name = poison(os.path.join(model, "model.safetensors"), float("nan"))
    out = os.path.join(SCRATCH, "nan_run")
    p = C.train(OR1, C.write_config(os.path.join(SCRATCH, "nan.yaml"), C.base_config(model, ROWS, out)), ok=False)
    check(p.returncode != 0 and f'model.safetensors: tensor "{name}" element 0 is nan' in p.stderr,
          f"NaN weights: rc {p.returncode}, stderr {p.stderr[-300:]!r}")


def zero_eps():
    """adam_eps 0 is refused at load, naming the key; no output folder appears."""
    out = os.path.join(SCRATCH, "eps_run")
    cfg = C.write_config(os.path.join(SCRATCH, "eps.yaml"), C.base_config(SFT, ROWS, out, train={"adam_eps": 0}))
    p = C.train(OR1, cfg, ok=False)
    check(p.returncode == 2 and 'key "train.adam_eps": adam_eps must be above 0' in p.stderr and not os.path.exists(out),
          f"adam_eps 0: rc {p.returncode}, stderr {p.stderr[-300:]!r}")


diverged_optimizer()
nan_weights()
zero_eps()
finish("divergence")
