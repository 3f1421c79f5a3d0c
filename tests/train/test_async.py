#!/usr/bin/env python3
"""Asynchronous MAGIC over MPI (train.async): rollout ranks sample while trainer ranks train.

- Lockstep: max_staleness 0 gives the synchronous trainer's bytes. The 2-stage config (online
  filter at the stage change, refill rounds) with 1 trainer + 1 rollout rank against 1 process,
  1 trainer + 2 rollout ranks against 1 process, and 2 trainers + 1 rollout rank against the
  synchronous loop on 2 ranks: every checkpoint's model and optimizer files byte-identical and
  the metrics rows equal apart from timings and the async columns; every trained token has
  staleness 0.
- Provenance at max_staleness 1 and 2 (2 also with partial rollouts): every checkpoint keeps the
  batches sampled but not trained (async_pending.bin), read here by a reader of our own. Each
  token's behaviour log-prob must equal, bit for bit, `or1 logprobs` of its prompt + response
  under the checkpoint of the version the batch records for it (its first tokens' version, and
  one more from its switch on), and the staleness histogram of the metrics row must count those
  versions. The same check with the versions swapped must fail.
- Kill and resume: SIGKILL of the whole job at random points (seeded, printed), then --resume
  auto, gives the bytes and metrics of a run never stopped (1 step stale with 2 trainer ranks
  under ZeRO-1; 2 steps stale with partial rollouts and 2 rollout ranks), pending batches
  included.
- A synchronous checkpoint resumed in async mode trains on, its first batch from the
  checkpoint's own weights.
- Errors: async on one process, no rank left to train, a count that is not whole, partial
  rollouts at staleness 0, and a damaged async_pending.bin (checksums re-recorded) each fail
  with a message naming the cause.

Skipped (exit 77) when mpirun is absent or or1 was built without MPI.

Usage: test_async.py OR1 FIXTURE_DIR SCRATCH_DIR [MPIEXEC]
"""
import json
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import time

from or1test import proc, train as C
from or1test.check import check, finish
from or1test.files import fresh, write_jsonl

OR1, FX, SCRATCH = sys.argv[1], sys.argv[2], fresh(sys.argv[3])
MPIEXEC = (sys.argv[4] if len(sys.argv) > 4 else "") or shutil.which("mpirun") or ""
SFT, ROWS = os.path.join(FX, "sft"), os.path.join(FX, "rows.jsonl")
HANG = 120
ASYNC_KEYS = ("async_", "seconds_", "rollout_tokens_per_s", "train_tokens_per_s")


def mpirun(np_, *cmd, ok=True):
    """mpirun -np np_ cmd (cmd may hold ':' for several programs); a hang or (with ok) a failure
    ends the test."""
    return C.mpirun(MPIEXEC, np_, cmd, HANG, "train_async", ok)


def config(name, steps=2, **train):
    """The 2-stage config (refill rounds on, every checkpoint kept) writing to SCRATCH/name, with
    `steps` steps a stage and train keys set."""
    over = {"rejection": {"enabled": True, "max_rounds": 2}, "checkpoint": {"every": 1, "keep_last": 0},
            "stages": [{"name": "s1", "context_length": 24, "prompts": 4, "n": 4, "mini_batch": 2, "steps": steps},
                       {"name": "s2", "context_length": 24, "prompts": 2, "n": 6, "mini_batch": 1, "steps": steps}]}
    if train:
        over["train"] = train
    return C.two_stage_config(SCRATCH, SFT, ROWS, name, **over)


def available():
    """mpirun exists and or1 runs as several ranks (else the test is skipped)."""
    if not MPIEXEC or not os.access(MPIEXEC, os.X_OK):
        print("SKIP: mpirun not found (install openmpi-bin, see scripts/debian-packages.txt)")
        sys.exit(77)
    cfg, _ = config("probe", **{"async": True})
    p = mpirun(2, OR1, "train", "--config", cfg, "--set", "stages=[{steps: 1, prompts: 2, mini_batch: 1}]", ok=False)
    if "2 rank(s)" not in p.stderr:
        print(f"SKIP: or1 was built without MPI (no '2 rank(s)' banner): {p.stderr[-300:]!r}")
        sys.exit(77)


def plain(rows):
    """Metrics rows without timings and the async columns."""
    return [{k: v for k, v in r.items() if not k.startswith(ASYNC_KEYS) and k not in C.TIMING} for r in rows]


def same_run(a, b, what, steps=4):
    """Every checkpoint's model and optimizer byte-identical; metrics equal but for timings."""
    kept = [s for s in range(1, steps + 1) if os.path.isdir(C.ckpt(b, s))]
    check(len(kept) == steps, f"{what}: the reference kept {kept}")
    for s in kept:
        for f in ("model.safetensors", "optimizer.safetensors"):
            pa, pb = os.path.join(C.ckpt(a, s), f), os.path.join(C.ckpt(b, s), f)
            ok = os.path.isfile(pa) and os.path.isfile(pb) and C.same_bytes(pa, pb)
            check(ok, f"{what}: step {s}: {f} differs")
    ra, rb = plain(C.metrics(a)), plain(C.metrics(b))
    bad = next((f"step {x.get('step')}: {k}: {x.get(k)} vs {y.get(k)}" for x, y in zip(ra, rb)
                for k in set(x) | set(y) if x.get(k) != y.get(k)), None)
    check(len(ra) == len(rb) == steps and bad is None, f"{what}: metrics differ: {len(ra)} vs {len(rb)} rows; {bad}")


def lockstep():
    """max_staleness 0 against the synchronous loop, three layouts."""
    cfg, sync1 = config("sync1", **{})
    C.train(OR1, cfg)
    cfg, sync2 = config("sync2", **{})
    mpirun(2, OR1, "train", "--config", cfg)
    for name, np_, ranks, ref in (("a0_1x1", 2, 1, sync1), ("a0_1x2", 3, 2, sync1), ("a0_2x1", 3, 1, sync2)):
        cfg, out = config(name, **{"async": True, "max_staleness": 0, "rollout_ranks": ranks})
        p = mpirun(np_, OR1, "train", "--config", cfg)
        check(p.stderr.count("online filter dropped") == 1, f"{name}: the online filter ran once ({p.stderr[-500:]})")
        same_run(out, ref, f"{name} against the synchronous loop")
        for r in C.metrics(out):
            h = r.get("async_staleness_tokens", [])
            check(len(h) == 1 and r["async_stale_dropped"] == 0, f"{name}: step {r['step']}: staleness {h}")


# ---- our own reader of a checkpoint's pending batches (the layout of src/train/wire.c) --------

class Reader:
    """Little-endian fields over bytes, with a position."""

    def __init__(self, data):
        self.b, self.at = data, 0

    def take(self, fmt, n=1):
        size = struct.calcsize("<" + fmt) * n
        vals = struct.unpack_from(f"<{n}{fmt}", self.b, self.at)
        self.at += size
        return list(vals)

    def i64(self):
        return self.take("q")[0]


def read_batch(data):
    """One batch: step, M, groups' prompts, per-sample version and switch, completions."""
    r = Reader(data)
    assert data[:4] == b"OR1B", "no OR1B mark"
    r.at = 4
    _, index, M, G = r.i64(), r.i64(), r.i64(), r.i64()
    r.take("I", G)
    prompts = []
    for _ in range(G):
        prompts.append(r.take("i", r.i64()))
    n = G * M
    arrays = {}
    for name, fmt in (("score", "f"), ("len", "i"), ("trained", "i"), ("trunc", "B"), ("adv", "f"),
                      ("in_loss", "B"), ("version", "i"), ("switch_at", "i")):
        arrays[name] = r.take(fmt, n)
    summary = r.i64()
    r.at += summary  # passed over
    samples = []
    for i in range(n):
        k, _, flags = r.i64(), r.i64(), r.i64()
        ids, lps = r.take("i", k), r.take("f", k)
        if flags & 2:
            r.take("B", k)
        samples.append({"prompt": prompts[i // M], "ids": ids, "logprobs": lps, "version": arrays["version"][i],
                        "switch_at": arrays["switch_at"][i], "in_loss": arrays["in_loss"][i]})
    assert r.at == len(data), f"{len(data) - r.at} bytes left"
    return index, samples


def read_pending(path):
    """The batches of an async_pending.bin: [(step, samples)]."""
    data = open(path, "rb").read()
    assert data[:8] == b"OR1PEND1", "no OR1PEND1 mark"
    count, at, out = struct.unpack_from("<Q", data, 8)[0], 16, []
    for _ in range(count):
        n = struct.unpack_from("<Q", data, at)[0]
        out.append(read_batch(data[at + 8:at + 8 + n]))
        at += 8 + n
    assert at == len(data)
    return out


def weights_of(out, version):
    """The policy of a version: the starting model for 0, else that step's checkpoint."""
    return SFT if version == 0 else C.ckpt(out, version)


def provenance(name, staleness, partial, keep=False):
    """Each pending token's log-prob is its recorded version's, bit for bit; swapped versions are
    not. With the KV kept at a partial rollout's switch only the tokens before it are one
    version's (after it the new weights read the old weights' keys and values): those are
    checked, and the first token after a switch must differ from a recomputed KV's log-prob in
    some sample (the KV really was kept)."""
    cfg, out = config(name, **{"async": True, "max_staleness": staleness, "partial_tokens": partial,
                               "partial_recompute_kv": not keep, "rollout_ranks": 1})
    mpirun(2, OR1, "train", "--config", cfg)
    tmp = fresh(os.path.join(SCRATCH, name + "_lp"))
    checked = switched = swapped_diff = stale_kv = 0
    for step in range(1, 5):
        path = os.path.join(C.ckpt(out, step), "async_pending.bin")
        if not check(os.path.isfile(path), f"step {step}: no async_pending.bin"):
            continue
        batches = read_pending(path)
        want = list(range(step + 1, min(4, step + staleness) + 1))
        check([b[0] for b in batches] == want, f"step {step}: pending batches {[b[0] for b in batches]}, want {want}")
        for index, samples in batches:
            for s in samples:
                check(0 <= index - 1 - s["version"] <= staleness, f"batch {index}: version {s['version']} too old")
            by_version = {}
            for s in samples:
                if s["ids"]:
                    by_version.setdefault(s["version"], []).append(s)
                    if s["switch_at"] < len(s["ids"]):
                        by_version.setdefault(s["version"] + 1, []).append(s)
            for v, group in sorted(by_version.items()):
                lps = logprobs(weights_of(out, v), [s["prompt"] + s["ids"] for s in group], tmp)
                other = logprobs(weights_of(out, v + 1), [s["prompt"] + s["ids"] for s in group], tmp)
                for s, full, alt in zip(group, lps or [], other or []):
                    n, k = len(s["ids"]), s["switch_at"]
                    lo, hi = (0, k) if s["version"] == v else (k, n)
                    if keep and s["version"] != v:  # after the switch: kept keys and values
                        first = full[len(s["prompt"]) - 1:][k]
                        stale_kv += struct.pack("f", s["logprobs"][k]) != struct.pack("f", first)
                        switched += 1
                        continue
                    got, want_lp = s["logprobs"][lo:hi], full[len(s["prompt"]) - 1:][lo:hi]
                    check(struct.pack(f"{len(got)}f", *got) == struct.pack(f"{len(want_lp)}f", *want_lp),
                           f"batch {index}: tokens {lo}..{hi} are not version {v}'s log-probs")
                    wrong = alt[len(s["prompt"]) - 1:][lo:hi]
                    swapped_diff += struct.pack(f"{len(got)}f", *got) != struct.pack(f"{len(wrong)}f", *wrong)
                    checked += 1
                    switched += s["version"] != v
    check(checked > 0, "no pending sample was checked")
    check(swapped_diff > 0, "the same check under the next version passes too: it proves nothing")
    if partial:
        check(switched > 0, "no sample switched versions mid-way")
    if keep:
        check(stale_kv > 0, "with the KV kept, every token after a switch has the recomputed KV's log-prob")
    for r in C.metrics(out):
        h = r["async_staleness_tokens"]
        check(len(h) == staleness + 1 and sum(h) == r["loss_tokens"], f"step {r['step']}: histogram {h} of "
               f"{r['loss_tokens']} tokens")
    lag = [r["async_staleness_tokens"] for r in C.metrics(out) if r["step"] > staleness]
    check(any(h[staleness] > 0 for h in lag), f"no token at staleness {staleness}: {lag}")
    print(f"{name}: {checked} token spans checked, {switched} after a switch")


def logprobs(model, seqs, tmp):
    """`or1 logprobs` of each sequence under model (None on failure)."""
    path = os.path.join(tmp, "in.jsonl")
    write_jsonl(path, [{"ids": s} for s in seqs])
    r = proc.run_or1(OR1, ["logprobs", "--model", model, "--input", path])
    if not check(r.returncode == 0, f"logprobs under {model}: {r.stderr[-500:]}"):
        return None
    return [json.loads(line)["logprobs"] for line in r.stdout.splitlines()]


def kill_resume(name, np_, seed, **train):
    """A run SIGKILLed at random points (after a random step's checkpoint appears, plus a random
    delay) and resumed each time equals one never stopped."""
    cfg, full = config(name + "_full", steps=4, **train)
    mpirun(np_, OR1, "train", "--config", cfg)
    rnd = random.Random(seed)
    cfg, out = config(name, steps=4, **train)
    after = 0
    for attempt in range(2):
        after = rnd.randint(after + 1, 3 * (attempt + 1))
        delay = rnd.uniform(0, 0.005)
        args = [MPIEXEC, "--allow-run-as-root", "--oversubscribe", "-np", str(np_), OR1, "train", "--config", cfg]
        p = subprocess.Popen(args + (["--resume", "auto"] if attempt else []), stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True, env=proc.mpi_env())
        t0 = time.time()
        while not os.path.isdir(C.ckpt(out, after)) and p.poll() is None and time.time() - t0 < HANG:
            time.sleep(0.001)
        time.sleep(delay)
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        have = sorted(x for x in os.listdir(os.path.join(out, "checkpoints")) if x.startswith("step-"))
        print(f"{name}: SIGKILL {delay * 1000:.0f} ms after step {after}'s checkpoint (seed {seed}); kept {have}")
    mpirun(np_, OR1, "train", "--config", cfg, "--resume", "auto")
    same_run(out, full, f"{name}: killed twice and resumed", steps=8)


def from_sync(sync_out):
    """A synchronous run's step-2 checkpoint resumed in async mode (staleness 1) into a new folder:
    it trains on; step 3's batch is sampled by the checkpoint's own weights (fresher than the
    bound), step 4's one step behind."""
    cfg, out = config("from_sync", **{"async": True, "max_staleness": 1, "rollout_ranks": 1})
    mpirun(2, OR1, "train", "--config", cfg, "--resume", C.ckpt(sync_out, 2))
    h = {r["step"]: r["async_staleness_tokens"] for r in C.metrics(out)}
    check(sorted(h) == [3, 4] and h[3][1] == 0 and h[3][0] > 0, f"resumed from a synchronous checkpoint: {h}")


def errors():
    """Clear refusals."""
    cfg, _ = config("err_one", **{"async": True})
    r = C.train(OR1, cfg, ok=False)
    check(r.returncode != 0 and "needs 2 ranks or more" in r.stderr, f"one process: {r.stderr[-300:]}")
    cfg, _ = config("err_ranks", **{"async": True, "rollout_ranks": 2})
    p = mpirun(2, OR1, "train", "--config", cfg, ok=False)
    check(p.returncode != 0 and "leaves no trainer rank" in p.stderr, f"no trainer: {p.stderr[-300:]}")
    cfg, _ = config("err_count", **{"async": True, "rollout_ranks": 1.5})
    r = C.train(OR1, cfg, ok=False)
    check(r.returncode != 0 and "train.rollout_ranks" in r.stderr and "whole" in r.stderr, f"1.5: {r.stderr[-300:]}")
    cfg, _ = config("err_partial", **{"async": True, "max_staleness": 0, "partial_tokens": 4})
    r = C.train(OR1, cfg, ok=False)
    check(r.returncode != 0 and "train.partial_tokens" in r.stderr, f"partial at 0: {r.stderr[-300:]}")
    cfg, out = config("err_pending", **{"async": True, "max_staleness": 1, "rollout_ranks": 1})
    mpirun(2, OR1, "train", "--config", cfg)
    ck = C.ckpt(out, 2)
    path = os.path.join(ck, "async_pending.bin")
    data = open(path, "rb").read()
    open(path, "wb").write(data[:len(data) // 2])
    C.rerecord(ck, "async_pending.bin")
    p = mpirun(2, OR1, "train", "--config", cfg, "--resume", ck, ok=False)
    check(p.returncode != 0 and "async_pending.bin" in p.stderr and "byte" in p.stderr,
          f"a cut pending file: {p.stderr[-600:]}")


def main():
    available()
    lockstep()
    from_sync(os.path.join(SCRATCH, "sync1"))
    provenance("stale1", 1, 0)
    provenance("stale2_partial", 2, 6)
    provenance("stale1_partial_keep", 1, 6, keep=True)
    kill_resume("kill_s1_2x1_zero", 3, 11, **{"async": True, "max_staleness": 1, "rollout_ranks": 1, "zero": 1})
    kill_resume("kill_s2_partial", 3, 12, **{"async": True, "max_staleness": 2, "partial_tokens": 6,
                                             "rollout_ranks": 2})
    errors()
    finish("train_async")


if __name__ == "__main__":
    main()
