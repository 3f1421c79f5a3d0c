"""Per-call latency of Math-Verify as Skywork-OR1 calls it (tests/math/skywork_math.py, the golds
parsed again on every call, as the recipe does), one pair at a time in this process, over the
corpus of scripts/make_math_corpus.py. Prints one JSON line: per category and overall, the pairs,
the mean, median and 99th-percentile wall milliseconds per call, and the CPU seconds in all.
usage: math_verify_ref.py CORPUS.jsonl"""
import importlib.metadata
import json
import statistics
import sys
import time

import skywork_math


def timed_calls(rows):
    """Wall seconds of each call, in row order, and the CPU seconds of all of them."""
    out = []
    cpu = time.process_time()
    for r in rows:
        t = time.perf_counter()
        skywork_math.score(r["response"], skywork_math.gold_list(r["gold"]), cached=False)
        out.append(time.perf_counter() - t)
    return out, time.process_time() - cpu


def summary(seconds):
    """Pairs and mean / median / p99 milliseconds of a list of call times."""
    s = sorted(seconds)
    return {"pairs": len(s), "mean_ms": round(1e3 * statistics.fmean(s), 4),
            "median_ms": round(1e3 * statistics.median(s), 4), "p99_ms": round(1e3 * s[int(0.99 * (len(s) - 1))], 4)}


def main():
    """Times every pair of the corpus and prints the summary line."""
    with open(sys.argv[1], encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    skywork_math.score("\\boxed{1}", ["1"])  # imports and first-call set-up outside the timing
    seconds, cpu = timed_calls(rows)
    cats = {}
    for r, s in zip(rows, seconds):
        cats.setdefault(r["category"], []).append(s)
    print(json.dumps({"impl": f"math-verify {importlib.metadata.version('math-verify')}", "all": summary(seconds),
                      "cpu_s": round(cpu, 3),
                      "categories": {c: summary(v) for c, v in cats.items()}}))


if __name__ == "__main__":
    main()
