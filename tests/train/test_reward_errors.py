#!/usr/bin/env python3
"""Failed rewards are never scored 0.

Two rows of the data have a gold answer nested deeper than the math verifier's depth bound,
so every reward of theirs whose response has an answer to compare ends as `resource` instead
of a verdict. The trainer counts
them per step (reward_errors.resource), rejects their groups (reward_error_groups) instead of
taking them for solve-none, warns loudly, and still trains on the other rows; `or1 eval`
leaves those samples out of avg@n and reports them; `or1 difficulty` refuses to write counts
that would take them for wrong, and leaves the data file as it was.

Usage: test_reward_errors.py OR1 FIXTURE_DIR SCRATCH_DIR
"""
import json
import os
import re
import sys

from or1test import train as C
from or1test.check import check, finish
from or1test.files import fresh

OR1, FX, SCRATCH = sys.argv[1], sys.argv[2], fresh(sys.argv[3])
SFT = os.path.join(FX, "sft")
DEEP = "{" * 200 + "2" + "}" * 200
ROWS = C.write_rows(os.path.join(SCRATCH, "rows.jsonl"), [C.EASY, ("1+1", DEEP, "deep"), C.MID4, ("1+1", DEEP, "deep")])
M = 4


def trainer():
    """Two steps over all four rows: the deep rows' rewards fail (those whose response has an
    answer to compare), are counted by status, reject their groups, and are warned about."""
    out = os.path.join(SCRATCH, "train")
    cfg = C.base_config(SFT, ROWS, out, checkpoint={"every": 0})
    p = C.train(OR1, C.write_config(os.path.join(SCRATCH, "train.yaml"), cfg))
    rows = C.metrics(out)
    check(len(rows) == 2, f"{len(rows)} metrics rows")
    warned = dict(re.findall(r"^WARNING: step (\d+): (\d+) of 16 rewards failed .*resource \2\)", p.stderr, re.M))
    for r in rows:
        errs = r.get("reward_errors", {})
        n = errs.get("resource", 0)
        check(M <= n <= 2 * M and errs == {"timeout": 0, "verifier_error": 0, "sandbox_error": 0, "resource": n},
              f"step {r['step']}: reward_errors {errs}")
        check(1 <= r.get("reward_error_groups", 0) <= 2, f"step {r['step']}: reward_error_groups {r.get('reward_error_groups')}")
        check(r["solve_none_ratio"] <= 0.5, f"step {r['step']}: failed groups taken for solve-none ({r['solve_none_ratio']})")
        check(0 <= r["reward_mean"] <= 1, f"step {r['step']}: reward_mean {r['reward_mean']} over decided samples")
        check(warned.get(str(r["step"])) == str(n), f"step {r['step']}: warning {warned.get(str(r['step']))} for {n} failures")
        check(0 < r.get("reward_ms_math", 0) < 60e3 and "reward_ms_code" not in r,
              f"step {r['step']}: reward latency math {r.get('reward_ms_math')} ms, code {r.get('reward_ms_code')}")


def evaluate():
    """avg@n over the decided samples only, as recomputed from the dump; failures by status."""
    dump = os.path.join(SCRATCH, "dump.jsonl")
    p = C.run([OR1, "eval", "--model", SFT, "--data", ROWS, "--n", str(M), "--max-new-tokens", "24", "--seed", "3",
               "--dump", dump])
    rep = json.loads(p.stdout)
    samples = [json.loads(line) for line in open(dump)]
    failed = [s for s in samples if s["reward_status"] != "ok"]
    check(len(failed) >= M and all(s["reward_status"] == "resource" and s["correct"] is None and s["data_source"] == "deep"
                                   for s in failed), f"dump: {len(failed)} failed samples")
    check(rep.get("reward_errors", {}).get("resource") == len(failed), f"eval reward_errors {rep.get('reward_errors')}")
    by_row = {}
    for s in samples:
        if s["reward_status"] == "ok":
            by_row.setdefault(s["row"], []).append(s["correct"])
    want = sum(sum(v) / len(v) for v in by_row.values()) / len(by_row)
    got = rep["overall"]
    check(got["problems"] == len(by_row) and abs(got[f"avg@{M}"] - want) < 1e-9,
          f"eval overall {got} want {len(by_row)} problems, avg {want}")
    check(f"WARNING: {len(failed)} of 16 rewards could not be decided" in p.stderr, "eval warns about the failed rewards")


def difficulty():
    """No difficulty counts are written while some rewards failed; the file stays as it was."""
    before = open(ROWS, "rb").read()
    p = C.run([OR1, "difficulty", "--model", SFT, "--data", ROWS, "--n", str(M), "--max-new-tokens", "24",
               "--in-place"], ok=False)
    check(p.returncode != 0 and re.search(r"difficulty: row 2: \d of 4 rewards could not be decided", p.stderr),
          f"difficulty: rc {p.returncode}, stderr {p.stderr[-300:]}")
    check(open(ROWS, "rb").read() == before, "difficulty changed the data file")


trainer()
evaluate()
difficulty()
finish("reward errors")
