"""Length shaping of the reward in the trainer (reward.overlong_buffer.*, reward.truncation_penalty).

- Every response truncated (context length 2): each metrics row's length_penalty_mean is
  exactly -(penalty + truncation_penalty), DAPO's -1 at L_max times the factor plus the fixed
  truncation penalty.
- Prompts the model never solves (every score 0): without shaping every group is constant and
  rejected; with the overlong buffer covering the whole response, groups whose lengths differ get
  different rewards and are kept, so the shaped reward is what the advantages see.
- overlong_buffer.len not below a stage's context length is refused at load, naming the key.

Usage: test_length.py OR1 FIXTURE_DIR SCRATCH_DIR
"""
import os
import sys

from or1test import train as C
from or1test.check import check, finish
from or1test.files import fresh

OR1, FX, SCRATCH = sys.argv[1], sys.argv[2], fresh(sys.argv[3])
SFT = os.path.join(FX, "sft")


def config(name, rows, reward, T, steps=2):
    """A run of `steps` steps with responses of at most T tokens."""
    out = os.path.join(SCRATCH, name)
    cfg = C.base_config(SFT, rows, out, reward=reward, rollout={"n": 4, "max_new_tokens": T},
                        train={"steps": steps, "mini_batch": 2})
    return C.write_config(os.path.join(SCRATCH, name + ".yaml"), cfg), out


def all_truncated():
    """T = 2: every response is truncated, so the shaping is the same known constant."""
    rows = os.path.join(FX, "rows.jsonl")
    cfg, out = config("trunc", rows, {"overlong_buffer": {"enable": True, "len": 1, "penalty": 0.5},
                                      "truncation_penalty": 0.25}, 2)
    C.train(OR1, cfg)
    for r in C.metrics(out):
        check(r["truncated_ratio"] == 1.0, f"step {r['step']}: truncated_ratio {r['truncated_ratio']}")
        check(abs(r.get("length_penalty_mean", 0) + 0.75) < 1e-6,
              f"step {r['step']}: length_penalty_mean {r.get('length_penalty_mean')} != -0.75")


def unsolved_groups_kept():
    """All-0 groups are rejected unless the overlong term tells their lengths apart."""
    rows = C.write_rows(os.path.join(SCRATCH, "hard.jsonl"), [C.HARD6, C.HARD63, C.HARD6, C.HARD63])
    cfg, plain = config("plain", rows, {}, 64, steps=1)
    C.train(OR1, cfg)
    cfg, shaped = config("shaped", rows, {"overlong_buffer": {"enable": True, "len": 63}}, 64, steps=1)
    C.train(OR1, cfg)
    a, b = C.metrics(plain)[0], C.metrics(shaped)[0]
    check(a["accuracy"] == 0 and b["accuracy"] == 0, f"the hard rows were solved: {a['accuracy']}, {b['accuracy']}")
    check(a["kept_groups"] == 0, f"unshaped all-0 groups kept: {a['kept_groups']}")
    check(b["kept_groups"] > 0 and b["length_penalty_mean"] < 0,
          f"shaped: kept {b['kept_groups']}, length_penalty_mean {b.get('length_penalty_mean')}")


def bad_len():
    """A buffer as long as the context is refused, naming the key."""
    cfg, _ = config("bad", os.path.join(FX, "rows.jsonl"), {"overlong_buffer": {"enable": True, "len": 24}}, 24)
    p = C.train(OR1, cfg, ok=False)
    check(p.returncode != 0 and "reward.overlong_buffer.len" in p.stderr and "not below" in p.stderr,
          f"len 24 with T 24: exit {p.returncode}: {p.stderr[-300:]}")


def main():
    all_truncated()
    unsolved_groups_kept()
    bad_len()
    finish("train_length")


if __name__ == "__main__":
    main()
