#!/usr/bin/env python3
"""Adaptive entropy control (paper eq. (3.2), Skywork-OR1's EntController)
read back from the metrics rows.

The rule, replayed from the rows: the controller starts at (c0 = entropy.initial, gate on);
step k trains with alpha_k = c * gate (the constant mode: c0 always; off: 0) and reports that
gate; after a step with an update, e_k = entropy_sampled (estimated on the rollout batch
before the update) moves c by +delta if e_k < target else -delta, clipped to [c_min, c_max],
and the gate becomes e_k < target; the new c (entropy_coef_next) applies from step k+1. A
skipped step leaves the controller alone. Targets above and below the tiny model's entropy
exercise both directions and both clips; the reported loss is pg_loss - alpha * entropy_full;
a non-zero alpha changes the update.

Usage: test_entropy.py OR1 FIXTURE_DIR SCRATCH_DIR
"""
import os
import sys

from or1test import train as C
from or1test.check import check, finish
from or1test.files import fresh

OR1, FX, SCRATCH = sys.argv[1], sys.argv[2], fresh(sys.argv[3])
SFT, ROWS = os.path.join(FX, "sft"), os.path.join(FX, "rows.jsonl")


def run(name, entropy, steps=6):
    """Trains with the entropy section; returns the metrics rows."""
    out = os.path.join(SCRATCH, name)
    cfg = C.base_config(SFT, ROWS, out, entropy=entropy, train={"steps": steps}, checkpoint={"every": 0})
    C.train(OR1, C.write_config(os.path.join(SCRATCH, name + ".yaml"), cfg))
    return C.metrics(out)


def replay(name, rows, p):
    """Checks every row against the controller rule; returns the coefficients seen."""
    c, gate = p.get("initial", 0.0), True
    mode = p.get("mode", "adaptive")
    seen = []
    for r in rows:
        step = r["step"]
        want = {"adaptive": c if gate else 0.0, "constant": p.get("initial", 0.0), "off": 0.0}[mode]
        check(abs(r["alpha"] - want) < 1e-12, f"{name} step {step}: alpha {r['alpha']} want {want}")
        if mode == "adaptive":
            check(r["entropy_enabled"] == gate, f"{name} step {step}: gate {r['entropy_enabled']} want {gate}")
        if mode == "adaptive" and not r["skipped"]:
            low = r["entropy_sampled"] < p["target"]
            c = min(max(c + p["delta"] if low else c - p["delta"], p["c_min"]), p["c_max"])
            gate = low
        check(abs(r["entropy_coef_next"] - c) < 1e-12, f"{name} step {step}: next coef {r['entropy_coef_next']} want {c}")
        if not r["skipped"]:
            total = r["pg_loss"] - r["alpha"] * r["entropy_full"]
            check(abs(r["loss"] - total) < 1e-6 * (1 + abs(total)),
                    f"{name} step {step}: loss {r['loss']} != pg_loss - alpha * entropy_full = {total}")
        seen.append(c)
    return seen


def main():
    """Rising to c_max, falling to c_min with the gate off, constant and off modes."""
    up = {"mode": "adaptive", "target": 5.0, "delta": 0.002, "c_min": 0.0, "c_max": 0.005, "initial": 0.0}
    rows = run("up", up)
    check(any(not r["skipped"] for r in rows), "no step trained")
    check(all(r["entropy_sampled"] < 5.0 for r in rows if not r["skipped"]), "entropy above the high target")
    seen = replay("up", rows, up)
    check(seen[-1] == 0.005, f"coefficient did not reach c_max: {seen}")
    down = {"mode": "adaptive", "target": 1e-4, "delta": 0.002, "c_min": 0.001, "c_max": 0.01, "initial": 0.006}
    rows = run("down", down)
    seen = replay("down", rows, down)
    check(seen[-1] == 0.001 and rows[0]["alpha"] == 0.006, f"coefficient did not fall to c_min: {seen}")
    first = next(r["step"] for r in rows if not r["skipped"])
    check(all(r["alpha"] == 0 for r in rows if r["step"] > first), "gate off after a high-entropy step, yet alpha > 0")
    const = {"mode": "constant", "initial": 0.004}
    replay("constant", run("constant", const, 3), const)
    off = {"mode": "off", "initial": 0.004}
    replay("off", run("off", off, 3), off)
    moved = C.max_rel_diff(C.tensors(os.path.join(C.ckpt(os.path.join(SCRATCH, "constant"), 3), "model.safetensors")),
                           C.tensors(os.path.join(C.ckpt(os.path.join(SCRATCH, "off"), 3), "model.safetensors")))
    check(moved > 0, "alpha = 0.004 and alpha = 0 gave the same weights: the entropy term does nothing")
    finish("train_entropy")


main()
