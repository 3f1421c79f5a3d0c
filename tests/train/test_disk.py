#!/usr/bin/env python3
"""Full and read-only disks, on size-limited tmpfs mounts the test makes in a mount namespace of
its own (`unshare -m`; skipped, exit 77, where the namespace or the mount cannot be made):

- the disk fills while a checkpoint is written: the run stops naming the file and the cause,
  `latest` names the last whole checkpoint, the earlier checkpoints still match their recorded
  hashes, no half-written folder is left, metrics.jsonl holds whole rows; once the mount is
  grown, --resume auto finishes the run with the weights of a run that never stopped;
- the disk fills while a metrics row is written: the run stops naming metrics.jsonl, which keeps
  the whole rows before it;
- a read-only output folder: a new run and a resume both stop before training, naming the file,
  and change nothing.

Usage: test_disk.py OR1 FIXTURE_DIR SCRATCH_DIR
"""
import json
import os
import subprocess
import sys

NS_FLAG = "OR1_TEST_IN_MOUNT_NS"


def enter_namespace():
    """Re-runs this script in a private mount namespace (the mounts vanish with it)."""
    if os.environ.get(NS_FLAG) == "1":
        return
    cmd = ["unshare", "--mount", "--propagation", "private"]
    try:
        probe = subprocess.run(cmd + ["true"], capture_output=True, text=True)
    except FileNotFoundError:
        probe = None
    if probe is None or probe.returncode != 0:
        why = probe.stderr.strip() if probe else "unshare is not installed"
        print(f"train_disk: skipped: cannot make a mount namespace ({why})")
        sys.exit(77)
    sys.exit(subprocess.run(cmd + [sys.executable, *sys.argv], env=dict(os.environ, **{NS_FLAG: "1"})).returncode)


enter_namespace()

from or1test import train as C  # noqa: E402
from or1test.check import check, finish  # noqa: E402
from or1test.files import fresh  # noqa: E402

OR1, FX, SCRATCH = sys.argv[1], sys.argv[2], fresh(sys.argv[3])
SFT, ROWS = os.path.join(FX, "sft"), os.path.join(FX, "rows.jsonl")


def mount(name, size, ro=False):
    """A tmpfs of size at SCRATCH/name (remounted with the new size or read-only if there)."""
    path = os.path.join(SCRATCH, name)
    os.makedirs(path, exist_ok=True)
    opts = f"size={size}" + (",ro" if ro else "")
    again = os.path.ismount(path)
    cmd = ["mount", "-o", "remount," + opts, path] if again else ["mount", "-t", "tmpfs", "-o", opts, "tmpfs", path]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        print(f"train_disk: skipped: cannot mount a tmpfs ({p.stderr.strip()})")
        sys.exit(77)
    return path


def config(out, steps, every=1):
    """A config writing to out: steps steps, a checkpoint every `every` (all kept)."""
    cfg = C.base_config(SFT, ROWS, out, train={"steps": steps}, checkpoint={"every": every, "keep_last": 0})
    return C.write_config(os.path.join(SCRATCH, os.path.basename(os.path.dirname(out)) + f"-{steps}.yaml"), cfg)


def files(root):
    """Every file under root with its bytes (links as their target)."""
    out = {}
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            out[os.path.relpath(p, root)] = os.readlink(p) if os.path.islink(p) else open(p, "rb").read()
    return out


def whole_rows(path):
    """The steps of metrics.jsonl when it holds only whole JSON rows, else None."""
    text = open(path).read()
    if text and not text.endswith("\n"):
        return None
    try:
        return [json.loads(line)["step"] for line in text.splitlines()]
    except ValueError:
        return None


def full_at_checkpoint():
    """1 MB fills during step 3's checkpoint (about 350 KB each); grown, the run resumes."""
    ref = os.path.join(SCRATCH, "ref", "run")
    os.makedirs(os.path.dirname(ref), exist_ok=True)
    C.train(OR1, config(ref, 5))
    run = os.path.join(mount("full", "1m"), "run")
    p = C.train(OR1, config(run, 5), ok=False)
    check(p.returncode != 0 and "No space left on device" in p.stderr and "step-000003" in p.stderr,
          f"full at a checkpoint: rc {p.returncode}, stderr {p.stderr[-500:]!r}")
    ck = os.path.join(run, "checkpoints")
    check(sorted(os.listdir(ck)) == ["latest", "step-000001", "step-000002"],
          f"full at a checkpoint: left {sorted(os.listdir(ck))}")
    check(os.readlink(os.path.join(ck, "latest")) == "step-000002", "full at a checkpoint: latest moved")
    for s in (1, 2):
        check(not C.record_mismatches(C.ckpt(run, s)), f"full at a checkpoint: step {s} damaged")
    check(whole_rows(os.path.join(run, "metrics.jsonl")) == [1, 2, 3],
          f"full at a checkpoint: metrics rows {whole_rows(os.path.join(run, 'metrics.jsonl'))}")
    mount("full", "4m")
    p = C.train(OR1, config(run, 5), "--resume", "auto")
    check("resuming from " + C.ckpt(run, 2) in p.stderr, f"resume after space is back: {p.stderr[-300:]!r}")
    check(whole_rows(os.path.join(run, "metrics.jsonl")) == [1, 2, 3, 4, 5], "resume after space is back: metrics rows")
    for f in ("model.safetensors", "optimizer.safetensors"):
        check(C.same_bytes(os.path.join(C.ckpt(run, 5), f), os.path.join(C.ckpt(ref, 5), f)),
              f"resume after space is back: {f} differs from the run that never stopped")


def full_at_metrics():
    """A disk with one free page: rows 1-3 fit, row 4 does not; no checkpoint before the end."""
    disk = mount("rows", "64k")
    run = os.path.join(disk, "run")
    os.makedirs(run)
    st = os.statvfs(disk)
    with open(os.path.join(disk, "filler"), "wb") as f:
        f.write(b"\0" * (st.f_bavail * st.f_frsize - 4096))
    p = C.train(OR1, config(run, 6, every=0), ok=False)
    check(p.returncode != 0 and "metrics.jsonl: cannot write the metrics row of step" in p.stderr
          and "No space left on device" in p.stderr, f"full at a metrics row: rc {p.returncode}, {p.stderr[-400:]!r}")
    rows = whole_rows(os.path.join(run, "metrics.jsonl"))
    check(rows is not None and len(rows) >= 1 and rows == list(range(1, len(rows) + 1)),
          f"full at a metrics row: the file holds {rows} (whole rows expected)")


def read_only():
    """A read-only output folder: a resume and a new run stop before training, nothing changes."""
    disk = mount("ro", "4m")
    run = os.path.join(disk, "run")
    C.train(OR1, config(run, 2))
    before = files(run)
    mount("ro", "4m", ro=True)
    p = C.train(OR1, config(run, 3), "--resume", "auto", ok=False)
    check(p.returncode != 0 and "metrics.jsonl" in p.stderr and "Read-only file system" in p.stderr
          and "step 3/" not in p.stderr, f"resume into a read-only folder: rc {p.returncode}, {p.stderr[-400:]!r}")
    new = os.path.join(disk, "new")
    p = C.train(OR1, config(new, 2), ok=False)
    check(p.returncode != 0 and new in p.stderr and "Read-only file system" in p.stderr,
          f"a new run in a read-only folder: rc {p.returncode}, {p.stderr[-400:]!r}")
    check(files(run) == before, "a read-only folder changed")


full_at_checkpoint()
full_at_metrics()
read_only()
finish("train_disk")
