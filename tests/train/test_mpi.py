#!/usr/bin/env python3
"""Data parallelism over MPI: `mpirun -np 2` and `-np 4` give the single-process
result, a checkpoint resumes with another rank count, and a failing or dying rank stops the
job with a clear message instead of hanging.

- The same 2-stage config (online filter on, N_SGD 2 then 2) with 1 process (no mpirun),
  2 and 4 ranks (OMP_NUM_THREADS=1): final weights and AdamW moments equal to 1e-5 relative
  (fp32 rounding of the gradient sums), metrics rows equal apart from timings (numbers to
  1e-5, counts exactly), one metrics file and checkpoint set written by rank 0 alone.
- Resume: the 1-rank step-2 checkpoint continued with 2 ranks, the 2-rank one with 1.
- ZeRO stage 1 (train.zero: 1): 2 and 4 ranks give the 1-process weights, moments and metrics
  to the same tolerance while each rank holds its 1/p share of the AdamW state (the count it
  prints); its 2-rank checkpoint (whole state, gathered) resumes with 4 sharded ranks and with
  1 process.
- ZeRO stage 1 in bf16 shards the fp32 master weights too: with 2 and 4 ranks each rank holds
  1/p of them (the count its memory line prints) and the run gives the weights, moments and
  metrics of the replicated bf16 run with as many ranks, to the same tolerance; its 2-rank
  checkpoint resumes with 1 process as the replicated run's does.
- eval and difficulty with 2 ranks: the same report and counts as 1 process; the dump holds
  every sample.
- Failures: rank 1 given a config with a misspelt key; rank 0 unable to create the output
  folder; rank 1 killed (SIGKILL) after the first step. Each ends within 60 s, non-zero,
  with a message naming the rank.

Skipped (exit 77) when mpirun is absent or or1 was built without MPI.
ASan: LeakSanitizer is off inside MPI ranks only (OpenMPI's plugins leak by design and are
unloaded before the report, so they cannot be suppressed by name).

Usage: test_mpi.py OR1 FIXTURE_DIR SCRATCH_DIR [MPIEXEC]
"""
import json
import os
import re
import shutil
import sys

from or1test import train as C
from or1test.check import check, finish
from or1test.files import fresh

OR1, FX, SCRATCH = sys.argv[1], sys.argv[2], fresh(sys.argv[3])
MPIEXEC = (sys.argv[4] if len(sys.argv) > 4 else "") or shutil.which("mpirun") or ""
SFT, ROWS = os.path.join(FX, "sft"), os.path.join(FX, "rows.jsonl")
TOL = 1e-5
HANG = 60


def mpirun(np_, *cmd, ok=True):
    """mpirun -np np_ cmd (cmd may hold ':' for several programs); a hang or (with ok) a failure
    ends the test."""
    return C.mpirun(MPIEXEC, np_, cmd, HANG, "train_mpi", ok)


def config(name, **over):
    """The 2-stage config writing to SCRATCH/name."""
    return C.two_stage_config(SCRATCH, SFT, ROWS, name, **over)


def close_to(a, b, what):
    """Model and optimizer of the step-4 checkpoints within TOL; metrics rows too."""
    C.close_at_step(a, b, 4, TOL, what)


def available():
    """mpirun exists and or1 runs as several ranks (else the test is skipped)."""
    if not MPIEXEC or not os.access(MPIEXEC, os.X_OK):
        print("SKIP: mpirun not found (install openmpi-bin, see scripts/debian-packages.txt)")
        sys.exit(77)
    cfg, out = config("probe", train={"steps": 1})
    p = mpirun(2, OR1, "train", "--config", cfg, "--set", "stages=[{steps: 1, prompts: 2, mini_batch: 1}]", ok=False)
    if "2 rank(s)" not in p.stderr:
        print(f"SKIP: or1 was built without MPI (no '2 rank(s)' banner): {p.stderr[-300:]!r}")
        sys.exit(77)


def rank_counts():
    """1, 2 and 4 ranks; returns the 1-process output folder."""
    cfg, one = config("np1")
    C.train(OR1, cfg)
    check(len(C.metrics(one)) == 4, "1 process: 4 metrics rows")
    for k in (2, 4):
        cfg, out = config(f"np{k}")
        p = mpirun(k, OR1, "train", "--config", cfg)
        check(f"{k} rank(s)" in p.stderr, f"-np {k}: banner {p.stderr[:200]!r}")
        check(p.stderr.count("train: checkpoint") == 4, f"-np {k}: checkpoints announced more than once per step")
        check(p.stderr.count("online filter dropped") == 1, f"-np {k}: online filter line count")
        close_to(out, one, f"-np {k}")
    return one


def resume_other_counts(one):
    """A 1-rank checkpoint resumed with 2 ranks, and a 2-rank one with 1 process."""
    cfg, out = config("resume_1to2")
    mpirun(2, OR1, "train", "--config", cfg, "--resume", C.ckpt(one, 2))
    check([r["step"] for r in C.metrics(out)] == [3, 4], "1 -> 2 ranks: metrics steps")
    close_to_tail(out, one, "1-rank checkpoint resumed with 2 ranks")
    cfg, out = config("resume_2to1")
    C.train(OR1, cfg, "--resume", C.ckpt(os.path.join(SCRATCH, "np2"), 2))
    close_to_tail(out, one, "2-rank checkpoint resumed with 1 process")


def close_to_tail(a, b, what):
    """Like close_to, for a run that holds only steps 3 and 4."""
    C.close_at_step(a, b, 4, TOL, what, b_after=2)


def held_shares(stderr):
    """(rank, parameters held, parameters in all) from each rank's optimizer-state line."""
    return [tuple(map(int, m)) for m in
            re.findall(r"rank (\d+) holds the optimizer state of (\d+) of (\d+) parameters", stderr)]


def check_shares(held, k, what):
    """One (rank, held, total) per rank, and each holding 1/k of the total (to a float each)."""
    total = held[0][2] if held else 0
    check(sorted(h[0] for h in held) == list(range(k)), f"{what} -np {k}: one line per rank: {held}")
    check(sum(h[1] for h in held) == total and all(abs(h[1] * k - total) <= k for h in held),
          f"{what} -np {k}: shares {[h[1] for h in held]} of {total} are not 1/{k} each")


def zero_sharding(one):
    """ZeRO stage 1 with 2 and 4 ranks against 1 process; its checkpoints resume elsewhere."""
    for k in (2, 4):
        cfg, out = config(f"zero{k}", train={"zero": 1})
        p = mpirun(k, OR1, "train", "--config", cfg)
        check_shares(held_shares(p.stderr), k, "zero: optimizer state")
        close_to(out, one, f"zero -np {k}")
    cfg, out = config("zero_resume4", train={"zero": 1})
    mpirun(4, OR1, "train", "--config", cfg, "--resume", C.ckpt(os.path.join(SCRATCH, "zero2"), 2))
    close_to_tail(out, one, "2-rank ZeRO checkpoint resumed with 4 sharded ranks")
    cfg, out = config("zero_resume1")
    C.train(OR1, cfg, "--resume", C.ckpt(os.path.join(SCRATCH, "zero2"), 2))
    close_to_tail(out, one, "2-rank ZeRO checkpoint resumed with 1 process")


def held_masters(stderr):
    """(rank, masters held, parameters in all) from each rank's memory line."""
    return [tuple(map(int, m)) for m in
            re.findall(r"memory on rank (\d+) .*?fp32 masters of (\d+) of (\d+) parameters", stderr)]


def zero_bf16():
    """ZeRO stage 1 in bf16 (sharded masters) against the replicated bf16 run of as many ranks."""
    for k in (2, 4):
        cfg, rep = config(f"bf16_np{k}", precision="bf16")
        p = mpirun(k, OR1, "train", "--config", cfg)
        check(all(h[1] == h[2] for h in held_masters(p.stderr)), f"bf16 -np {k}: replicated masters are not whole")
        cfg, out = config(f"bf16_zero{k}", precision="bf16", train={"zero": 1})
        p = mpirun(k, OR1, "train", "--config", cfg)
        check_shares(held_masters(p.stderr), k, "bf16 zero: fp32 masters")
        close_to(out, rep, f"bf16 zero -np {k} against replicated bf16 -np {k}")
    for name in ("bf16_np2", "bf16_zero2"):
        cfg, out = config(f"{name}_resume1", precision="bf16")
        C.train(OR1, cfg, "--resume", C.ckpt(os.path.join(SCRATCH, name), 2))
    a, b = (os.path.join(SCRATCH, f"{n}_resume1") for n in ("bf16_np2", "bf16_zero2"))
    close_to_tail(b, a, "2-rank bf16 ZeRO checkpoint resumed with 1 process, against the replicated one's")


def eval_ranks():
    """eval/difficulty with 2 ranks against 1 process."""
    flags = ["--model", SFT, "--data", ROWS, "--n", "4", "--max-new-tokens", "24"]
    one = json.loads(C.run([OR1, "eval", *flags]).stdout)
    dump = os.path.join(SCRATCH, "dump2.jsonl")
    p = mpirun(2, OR1, "eval", *flags, "--dump", dump)
    check(json.loads(p.stdout) == one, "eval report with 2 ranks differs from 1 process")
    n = sum(1 for _ in open(dump)) if os.path.isfile(dump) else 0
    check(n == 4 * 5, f"eval --dump with 2 ranks wrote {n} samples, want every sample (20)")
    out1, out2 = os.path.join(SCRATCH, "diff1.jsonl"), os.path.join(SCRATCH, "diff2.jsonl")
    C.run([OR1, "difficulty", *flags, "--out", out1])
    mpirun(2, OR1, "difficulty", *flags, "--out", out2)
    check(open(out1).read() == open(out2).read(), "difficulty with 2 ranks differs from 1 process")


def failures():
    """A failing or dying rank ends the job with a message naming it."""
    good, _ = config("fail_good")
    bad = os.path.join(SCRATCH, "fail_bad.yaml")
    open(bad, "w").write(open(good).read().replace('"lr"', '"lrr"'))
    p = mpirun(1, OR1, "train", "--config", good, ":", "-np", "1", OR1, "train", "--config", bad, ok=False)
    check(p.returncode != 0 and "rank 1 of 2" in p.stderr and "train.lrr" in p.stderr,
            f"rank 1 with a bad config: rc {p.returncode} {p.stderr[-600:]!r}")
    cfg, _ = config("fail_out", output={"dir": "/dev/null/out"})
    p = mpirun(2, OR1, "train", "--config", cfg, ok=False)
    check(p.returncode != 0 and "rank 0 of 2" in p.stderr and "/dev/null/out" in p.stderr,
            f"rank 0 cannot write its output: rc {p.returncode} {p.stderr[-600:]!r}")
    cfg, out = config("fail_kill", train={"steps": 100000}, checkpoint={"every": 0})
    cfg_long = os.path.join(SCRATCH, "long.yaml")
    text = json.load(open(cfg))
    del text["stages"]
    C.write_config(cfg_long, text)
    metrics = os.path.join(out, "metrics.jsonl")
    killer = (f"'{OR1}' train --config '{cfg_long}' & p=$!; "
              f"while [ ! -s '{metrics}' ]; do sleep 0.1; done; kill -9 $p; wait $p")
    p = mpirun(1, OR1, "train", "--config", cfg_long, ":", "-np", "1", "sh", "-c", killer, ok=False)
    check(p.returncode != 0 and "Process name" in p.stderr and ",1]" in p.stderr and "137" in p.stderr,
            f"rank 1 killed: rc {p.returncode} {p.stderr[-800:]!r}")
    rows = C.metrics(out) if os.path.isfile(metrics) else []
    check(1 <= len(rows) < 100000, f"killed run: {len(rows)} metrics rows")


def main():
    """Skip check, rank counts, resume, ZeRO sharding, eval, failures."""
    available()
    one = rank_counts()
    resume_other_counts(one)
    zero_sharding(one)
    zero_bf16()
    eval_ranks()
    failures()
    finish("train_mpi")


main()
