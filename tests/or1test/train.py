"""Shared helpers of the trainer tests: the cached tiny models, configs, runs, checkpoints.

The fixture folder (made once per build directory by tests/train/make_fixture.py) holds:
  tok/        the demo tokenizer
  init/       a random tiny Qwen2 checkpoint: it solves nothing
  sft/        the same after SFT on two memorised prompts: "1+1" is solved almost always,
              "2+2" about half the time (its traces say 4 or 5), anything else never
  rows.jsonl  five rows: easy 1+1 (gold 2), mid 2+2 (gold 4), mid 2+2 (gold 5), hard 3+3, hard 7*9
"""
import json
import os
import subprocess
import sys

import numpy as np

from or1test import files, proc
from or1test.check import check, finish
from or1test import safetensors as st


def row(prompt, gold, source, difficulty=None):
    """A data row in the Skywork-OR1-RL-Data shape."""
    r = {"data_source": source, "prompt": [{"role": "user", "content": prompt}], "ability": "math",
         "reward_model": {"ground_truth": json.dumps([str(gold)]), "style": "rule"}, "extra_info": {"index": 0}}
    if difficulty is not None:
        r["extra_info"]["model_difficulty"] = difficulty
    return r


EASY, MID4, MID5, HARD6, HARD63 = (("1+1", 2, "easy"), ("2+2", 4, "mid"), ("2+2", 5, "mid"), ("3+3", 6, "hard"),
                                   ("7*9", 63, "hard"))


def write_rows(path, specs):
    """Writes rows made from (prompt, gold, source) triples, indexed in order; returns path."""
    rows = [row(p, g, s) for p, g, s in specs]
    for i, r in enumerate(rows):
        r["extra_info"]["index"] = i
    return files.write_jsonl(path, rows)


def base_config(model, data, out, **over):
    """A small trainer config (dict) on the tiny model; `over` replaces top-level sections."""
    cfg = {
        "model": {"path": model, "chat_template": "plain"},
        "data": {"train": [{"path": data}], "max_prompt_length": 64},
        "rollout": {"n": 4, "max_new_tokens": 24},
        "train": {"prompts_per_step": 4, "mini_batch": 2, "steps": 2, "lr": 1e-3, "micro_tokens": 512},
        "eval": {"every": 0},
        "checkpoint": {"every": 1},
        "output": {"dir": out},
        "seed": 1,
    }
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(cfg.get(k), dict):
            cfg[k] = {**cfg[k], **v}
        else:
            cfg[k] = v
    return cfg


def two_stage_config(scratch, model, data, name, **over):
    """The data-parallel tests' config: two stages of 2 steps (online filter on, N_SGD 2 then 2),
    a checkpoint a step, writing to scratch/name; returns (config path, output folder)."""
    out = os.path.join(scratch, name)
    sections = {"checkpoint": {"every": 1}, "stages": [
        {"name": "s1", "context_length": 24, "prompts": 4, "n": 4, "mini_batch": 2, "steps": 2},
        {"name": "s2", "context_length": 24, "prompts": 2, "n": 6, "mini_batch": 1, "steps": 2}]}
    cfg = base_config(model, data, out, **{**sections, **over})
    return write_config(os.path.join(scratch, name + ".yaml"), cfg), out


def close_at_step(a, b, step, tol, what, b_after=0):
    """The model and optimizer of two runs' checkpoints at step within tol (relative), and their
    metrics rows too (numbers to tol, counts exactly): all of a's against b's past step b_after
    (for a run resumed at b_after)."""
    for f in ("model.safetensors", "optimizer.safetensors"):
        d = max_rel_diff(tensors(os.path.join(ckpt(a, step), f)), tensors(os.path.join(ckpt(b, step), f)))
        check(d <= tol, f"{what}: {f} differs by {d:g} (relative)")
    bad = rows_close(metrics(a), [r for r in metrics(b) if r["step"] > b_after], tol)
    check(bad is None, f"{what}: metrics differ: {bad}")


def write_config(path, cfg):
    """Writes a config dict as YAML (JSON is YAML 1.2 flow syntax); returns path."""
    with open(path, "w") as f:
        json.dump(cfg, f, indent=1)
        f.write("\n")
    return path


def run(cmd, timeout=300, env=None, ok=True):
    """proc.run with the trainer tests' time limit and one OpenMP thread unless told otherwise."""
    omp = {"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    return proc.run(cmd, ok=ok, timeout=timeout, env={**omp, **(env or {})})


def train(or1, config, *extra, ok=True, timeout=300):
    """or1 train --config config [extra...]."""
    return run([or1, "train", "--config", config, *extra], ok=ok, timeout=timeout)


def metrics(out, kind=None):
    """The rows of out/metrics.jsonl (training rows only unless kind == 'eval')."""
    rows = [json.loads(x) for x in open(os.path.join(out, "metrics.jsonl")) if x.strip()]
    if kind == "eval":
        return [r for r in rows if r.get("type") == "eval"]
    return [r for r in rows if r.get("type") != "eval"]


def ckpt(out, step):
    """The checkpoint folder of a step."""
    return os.path.join(out, "checkpoints", "step-%06d" % step)


def file_record(path):
    """A file's entry in a checkpoint's checksums.json, computed with python3-xxhash."""
    import xxhash
    data = open(path, "rb").read()
    return {"bytes": len(data), "xxh3_128": xxhash.xxh3_128_hexdigest(data)}


def record_mismatches(ckpt_dir):
    """The files a checkpoint's checksums.json lists whose size or hash differ from the record:
    [(name, recorded entry, the file's entry)]."""
    rec = json.load(open(os.path.join(ckpt_dir, "checksums.json")))["files"]
    found = ((name, e, file_record(os.path.join(ckpt_dir, name))) for name, e in rec.items())
    return [(name, e, got) for name, e, got in found if got != e]


def rerecord(ckpt_dir, name):
    """Records a file of a checkpoint that a test changed on purpose in its checksums.json, as
    a run that wrote those bytes would have (a diverged state, not a damaged file)."""
    path = os.path.join(ckpt_dir, "checksums.json")
    rec = json.load(open(path))
    rec["files"][name] = file_record(os.path.join(ckpt_dir, name))
    with open(path, "w") as f:
        json.dump(rec, f, indent=1)


def tensors(path):
    """The arrays of a safetensors file by name (BF16 as raw bits)."""
    return st.read_arrays(path)[0]


def max_rel_diff(a, b):
    """Largest |a - b| / (1 + |b|) over the common tensors; inf when the names differ."""
    if a.keys() != b.keys():
        return float("inf")
    worst = 0.0
    for k in a:
        x, y = a[k].astype(np.float64), b[k].astype(np.float64)
        if x.shape != y.shape:
            return float("inf")
        worst = max(worst, float((np.abs(x - y) / (1 + np.abs(y))).max(initial=0)))
    return worst


# Two runs that sum the same gradients in another order (micro-batches of another size, 2 ranks)
# end apart by rounding that AdamW magnifies where a gradient is near zero: an element's change
# can differ by a tenth of lr while the tensor's update agrees to 3e-4 of its norm (the largest
# measured, 8.9e-5 of maxrel on a CI machine, 2.2e-5 here). A real change of the selection (a
# share of 0.45 instead of 0.5) moves a tensor's update by 0.37 of its norm.
UPDATE_TOL = 1e-2


def update_diff(a, b, base):
    """Largest ||a - b|| / ||b - base|| over the tensors: how far two runs' updates from base
    differ, in units of the update; inf when the names or shapes differ or a still tensor moved."""
    if a.keys() != b.keys() or not set(a) <= set(base):
        return float("inf")
    worst = 0.0
    for k in a:
        x, y, z = (t[k].astype(np.float64) for t in (a, b, base))
        if not x.shape == y.shape == z.shape:
            return float("inf")
        d, u = np.linalg.norm(x - y), np.linalg.norm(y - z)
        worst = max(worst, d / u if u else (0.0 if d == 0 else float("inf")))
    return worst


def same_bytes(p, q):
    """True when two files have identical contents."""
    return open(p, "rb").read() == open(q, "rb").read()


TIMING = ("seconds_rollout", "seconds_reward", "seconds_update", "seconds_step", "reward_ms_math", "reward_ms_code",
          "tool_seconds")


def strip_timings(rows):
    """Metrics rows without the wall-clock fields."""
    return [{k: v for k, v in r.items() if k not in TIMING} for r in rows]


def rows_close(a, b, tol):
    """Compares metrics rows field by field (numbers to tol relative); returns the first mismatch."""
    if len(a) != len(b):
        return f"{len(a)} rows vs {len(b)}"
    for x, y in zip(strip_timings(a), strip_timings(b)):
        if x.keys() != y.keys():
            return f"step {x.get('step')}: fields differ {sorted(set(x) ^ set(y))}"
        for k in x:
            u, v = x[k], y[k]
            if isinstance(u, (int, float)) and not isinstance(u, bool) and isinstance(v, (int, float)):
                if abs(u - v) > tol * (1 + abs(v)):
                    return f"step {x.get('step')}: {k} {u!r} vs {v!r}"
            elif u != v:
                return f"step {x.get('step')}: {k} {u!r} vs {v!r}"
    return None


def mpirun(mpiexec, np_, cmd, hang, test, ok=True):
    """proc.mpirun for the trainer tests: no exit within hang seconds is a failed check that ends
    the test (named test); with ok, a failing job ends it with its stderr."""
    try:
        p = proc.mpirun(mpiexec, np_, cmd, hang)
    except subprocess.TimeoutExpired:
        check(False, f"HANG: no exit within {hang} s: mpirun -np {np_} {' '.join(map(str, cmd))}")
        finish(test)
    if ok and p.returncode != 0:
        sys.exit(f"mpirun failed ({p.returncode}): -np {np_} {' '.join(map(str, cmd))}\n{p.stderr[-4000:]}")
    return p
