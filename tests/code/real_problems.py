"""Real rows of the evaluation sets, each with a hand-written correct and wrong solution
(or1test.code_cases).

usage: real_problems.py OR1 DATA_DIR
Runs `or1 verify-code --all-tests` on them and checks correctness and the tests passed.
"""
import json
import os
import subprocess
import sys

from or1test.check import check, finish
from or1test.code_cases import CASES


def main():
    """Verifies every labelled solution in one or1 run and checks each verdict and test count."""
    or1, data = sys.argv[1], sys.argv[2]
    files = {}
    rows = []
    for name, index, code, _, _ in CASES:
        if name not in files:
            with open(os.path.join(data, name)) as f:
                files[name] = [json.loads(line) for line in f]
        src = files[name][index]
        response = "<think>\nworking...\n</think>\nHere it is:\n```python" + code + "```\n"
        rows.append(json.dumps({"response": response, "tests": src["reward_model"]["ground_truth"],
                                "time_limit_s": 6}))
    proc = subprocess.run([or1, "verify-code", "--all-tests"], input="\n".join(rows).encode(),
                          capture_output=True, timeout=900)
    sys.stderr.write(proc.stderr.decode(errors="replace"))
    if not check(proc.returncode == 0, f"or1 exited with {proc.returncode}"):
        finish("code_real_problems")
    results = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    for (name, index, _, correct, passed), res in zip(CASES, results):
        want_passed = res["total"] if passed is None else passed
        print(f"{name}:{index} correct={res['correct']} verdict={res['verdict']} "
              f"passed={res['passed']}/{res['total']} (want {want_passed})")
        check(res["correct"] == correct and res["passed"] == want_passed,
              f"{name}:{index}: correct={res['correct']} passed={res['passed']}, want {correct} and {want_passed}")
    check(len(results) == len(CASES), f"{len(results)} results for {len(CASES)} cases")
    finish("code_real_problems")


if __name__ == "__main__":
    main()
