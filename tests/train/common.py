"""Shared helpers of the trainer tests: the cached tiny models, configs, runs, checkpoints.

The fixture folder (made once per build directory by make_fixture.py) holds:
  tok/        the demo tokenizer
  init/       a random tiny Qwen2 checkpoint: it solves nothing
  sft/        the same after SFT on two memorised prompts: "1+1" is solved almost always,
              "2+2" about half the time (its traces say 4 or 5), anything else never
  rows.jsonl  five rows: easy 1+1 (gold 2), mid 2+2 (gold 4), mid 2+2 (gold 5), hard 3+3, hard 7*9
"""
import json
import os
import shutil
import struct
import subprocess
import sys

import numpy as np

failures = []


def check(ok, what):
    """Records a failed check (the test fails at the end, after every check ran)."""
    if not ok:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)
    return ok


def finish(name):
    """Exits 1 when any check failed."""
    if failures:
        sys.exit(f"{name}: {len(failures)} check(s) failed")
    print(f"{name}: ok")


def fresh(path):
    """An empty folder at path."""
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


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
    """Writes rows made from (prompt, gold, source) triples; returns path."""
    with open(path, "w") as f:
        for i, (p, g, s) in enumerate(specs):
            r = row(p, g, s)
            r["extra_info"]["index"] = i
            f.write(json.dumps(r) + "\n")
    return path


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


def write_config(path, cfg):
    """Writes a config dict as YAML (JSON is YAML 1.2 flow syntax); returns path."""
    with open(path, "w") as f:
        json.dump(cfg, f, indent=1)
        f.write("\n")
    return path


def run(cmd, timeout=300, env=None, ok=True):
    """Runs a command; returns the completed process. Unexpected failure ends the test."""
    e = dict(os.environ, OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    e.update(env or {})
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=e)
    if ok and p.returncode != 0:
        sys.exit(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-4000:]}")
    return p


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


def tensors(path):
    """The tensors of a safetensors file by name, as float32/float64 arrays."""
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    types = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "I32": np.int32, "BF16": np.uint16}
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + a:8 + n + b], dtype=types[t["dtype"]]).reshape(t["shape"])
    return out


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


def same_bytes(p, q):
    """True when two files have identical contents."""
    return open(p, "rb").read() == open(q, "rb").read()


TIMING = ("seconds_rollout", "seconds_reward", "seconds_update", "seconds_step")


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


def st_metadata(path):
    """The __metadata__ map of a safetensors file."""
    data = open(path, "rb").read(8)
    n = struct.unpack("<Q", data)[0]
    with open(path, "rb") as f:
        f.seek(8)
        return json.loads(f.read(n)).get("__metadata__", {})
