#!/usr/bin/env python3
"""`or1 eval` and `or1 difficulty` on the tiny SFT model.

eval prints one JSON object: avg@K and pass@k for k = 1, 2, 4, ..., K (and K) per
data_source and overall; --dump writes every sample, and the report is recomputed from the
dump with the unbiased pass@k estimator. difficulty writes each row's correct count (the same
samples as eval with the same seed) to extra_info.model_difficulty[name], keeping the row's
other fields and difficulty entries; the trainer's offline difficulty filter then keeps
exactly the rows inside its range. Bad flags and files fail.

Usage: test_eval.py OR1 FIXTURE_DIR SCRATCH_DIR
"""
import json
import math
import os
import re
import shutil
import sys

from or1test import train as C
from or1test.check import check, finish
from or1test.files import fresh

OR1, FX, SCRATCH = sys.argv[1], sys.argv[2], fresh(sys.argv[3])
SFT, ROWS = os.path.join(FX, "sft"), os.path.join(FX, "rows.jsonl")
K = 6
SAMPLING = ["--n", str(K), "--max-new-tokens", "24", "--seed", "7"]


def pass_at(n, c, k):
    """Unbiased pass@k of one problem: 1 - C(n-c, k) / C(n, k)."""
    return 1.0 - (math.comb(n - c, k) / math.comb(n, k) if n - c >= k else 0.0)


def expected(counts, sources):
    """The report recomputed from per-row correct counts."""
    ks = sorted({k for k in (1, 2, 4, 8, 16, 32, 64) if k <= K} | {K})
    groups = {"overall": list(range(len(counts)))}
    for i, s in enumerate(sources):
        groups.setdefault(s, []).append(i)
    out = {}
    for name, idx in groups.items():
        e = {"problems": len(idx), "n": K, f"avg@{K}": sum(counts[i] for i in idx) / (K * len(idx))}
        for k in ks:
            e[f"pass@{k}"] = sum(pass_at(K, counts[i], k) for i in idx) / len(idx)
        out[name] = e
    return out


def same_entry(got, want, what):
    """Report entries equal (numbers to 1e-9)."""
    check(got.keys() == want.keys(), f"{what}: keys {sorted(got)} want {sorted(want)}")
    for k in want:
        check(k in got and abs(got[k] - want[k]) < 1e-9, f"{what}: {k} = {got.get(k)} want {want[k]}")


def evaluate():
    """The report, the dump, and the report recomputed from the dump; returns the counts."""
    dump = os.path.join(SCRATCH, "dump.jsonl")
    p = C.run([OR1, "eval", "--model", SFT, "--data", ROWS, *SAMPLING, "--dump", dump])
    rep = json.loads(p.stdout)
    rows = [json.loads(x) for x in open(ROWS)]
    samples = [json.loads(x) for x in open(dump)]
    check(len(samples) == K * len(rows), f"dump has {len(samples)} samples, want {K * len(rows)}")
    for s in samples:
        check({"data_source", "index", "sample", "correct", "finish_reason", "tokens", "response"} <= s.keys(),
                f"dump line lacks fields: {sorted(s)}")
    counts = [0] * len(rows)
    for s in samples:
        counts[s["index"]] += bool(s["correct"])
    check([s["sample"] for s in samples] == list(range(K)) * len(rows), "dump sample numbers")
    want = expected(counts, [r["data_source"] for r in rows])
    same_entry(rep.get("overall", {}), want["overall"], "overall")
    by = rep.get("by_source", {})
    check(sorted(by) == ["easy", "hard", "mid"], f"by_source keys {sorted(by)}")
    for src in ("easy", "mid", "hard"):
        same_entry(by.get(src, {}), want[src], src)
    check(by["easy"][f"avg@{K}"] >= 0.8 and by["hard"][f"pass@{K}"] == 0, f"easy/hard rows: {by}")
    return counts


def difficulty(counts):
    """Counts written into the rows, other fields kept; in place and with --out/--name."""
    data = os.path.join(SCRATCH, "rows.jsonl")
    rows = [json.loads(x) for x in open(ROWS)]
    rows[3]["extra_info"]["model_difficulty"] = {"other-model": 9}
    with open(data, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    out = os.path.join(SCRATCH, "scored.jsonl")
    C.run([OR1, "difficulty", "--model", SFT, "--data", data, *SAMPLING, "--out", out, "--name", "tiny-sft"])
    scored = [json.loads(x) for x in open(out)]
    check(len(scored) == len(rows), f"{len(scored)} rows written")
    for i, (a, b) in enumerate(zip(rows, scored)):
        md = b.get("extra_info", {}).get("model_difficulty", {})
        check(md.get("tiny-sft") == counts[i], f"row {i}: difficulty {md.get('tiny-sft')} want {counts[i]}")
        rest = {k: v for k, v in b.items() if k != "extra_info"}
        check(rest == {k: v for k, v in a.items() if k != "extra_info"}, f"row {i}: fields changed")
    check(scored[3]["extra_info"]["model_difficulty"].get("other-model") == 9, "an existing entry was lost")
    inplace = os.path.join(SCRATCH, "inplace.jsonl")
    shutil.copy(data, inplace)
    p = C.run([OR1, "difficulty", "--model", SFT, "--data", inplace, *SAMPLING, "--in-place"])
    got = [json.loads(x)["extra_info"]["model_difficulty"].get("sft") for x in open(inplace)]
    check(got == counts, f"in place, default name 'sft': {got} want {counts}")
    check(re.search(r"5 rows scored with %d samples" % K, p.stderr) is not None, f"difficulty stderr {p.stderr!r}")
    return out


def offline_filter(scored, counts):
    """The trainer keeps exactly the rows with 1 <= difficulty <= K-1 for the model."""
    keep = sum(1 for c in counts if 1 <= c <= K - 1)
    check(keep >= 1, f"no row inside [1, {K - 1}]: {counts}")
    out = os.path.join(SCRATCH, "train")
    cfg = C.base_config(SFT, scored, out, train={"prompts_per_step": 1, "mini_batch": 1, "steps": 1})
    cfg["data"]["difficulty"] = {"model": "tiny-sft", "min": 1, "max": K - 1}
    p = C.train(OR1, C.write_config(os.path.join(SCRATCH, "train.yaml"), cfg))
    m = re.search(r"train: (\d+) prompts", p.stderr)
    check(m is not None and int(m.group(1)) == keep, f"offline filter: {m and m.group(0)} want {keep} prompts")


def errors():
    """Bad flags and a missing file."""
    for args, code, needle in [(["--n", "0"], 2, "--n"), (["--data", os.path.join(SCRATCH, "none.jsonl")], 1, "none.jsonl"),
                               (["--temperature", "hot"], 2, "--temperature"), (["--bogus", "1"], 2, "--bogus")]:
        base = ["--model", SFT] + (["--data", ROWS] if "--data" not in args else [])
        p = C.run([OR1, "eval", *base, *args], ok=False, timeout=60)
        check(p.returncode == code and needle in p.stderr, f"eval {args}: rc {p.returncode} {p.stderr!r}")


def main():
    """Eval, difficulty, the offline filter, errors."""
    counts = evaluate()
    scored = difficulty(counts)
    offline_filter(scored, counts)
    errors()
    finish("train_eval")


main()
