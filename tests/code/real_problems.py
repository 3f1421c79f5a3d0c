"""Real rows of the evaluation sets, each with a hand-written correct and wrong solution.

usage: real_problems.py OR1 DATA_DIR
Runs `or1 verify-code --all-tests` on them and checks correctness and the tests passed.
"""
import json
import os
import subprocess
import sys

# (file, row index, solution, expected correct, expected tests passed or None for "all")
CASES = [
    # Codeforces 1619B, 138 tests: numbers up to n that are squares or cubes.
    ("code_eval.jsonl", 140, """
from math import isqrt
def iroot(n, k):
    r = int(round(n ** (1.0 / k)))
    while r ** k > n:
        r -= 1
    while (r + 1) ** k <= n:
        r += 1
    return r
t = int(input())
for _ in range(t):
    n = int(input())
    print(isqrt(n) + iroot(n, 3) - iroot(n, 6))
""", True, None),
    ("code_eval.jsonl", 140, """
from math import isqrt
t = int(input())
for _ in range(t):
    n = int(input())
    print(isqrt(n) + int(n ** (1 / 3)))
""", False, 0),
    # AtCoder: integers <= N with exactly nine divisors (p^8 or p^2 q^2).
    ("lcb_2408_2502_public_tests.jsonl", 176, """
from math import isqrt
n = int(input())
r = isqrt(n)
sieve = bytearray([1]) * (r + 1)
sieve[0:2] = b"\\x00\\x00"
for i in range(2, isqrt(r) + 1):
    if sieve[i]:
        sieve[i * i::i] = bytearray(len(range(i * i, r + 1, i)))
primes = [i for i in range(r + 1) if sieve[i]]
count = sum(1 for p in primes if p ** 8 <= n)
j = len(primes) - 1
for i, p in enumerate(primes):
    while j > i and p * primes[j] > r:
        j -= 1
    if j <= i:
        break
    count += j - i
print(count)
""", True, None),
    ("lcb_2408_2502_public_tests.jsonl", 176, """
from math import isqrt
n = int(input())
r = isqrt(n)
primes = [p for p in range(2, r + 1) if all(p % q for q in range(2, isqrt(p) + 1))] if r < 1000 else []
print(sum(1 for i, p in enumerate(primes) for q in primes[i + 1:] if p * q <= r))
""", False, 1),
    # LeetCode call-based: smallest number >= n whose digit product is divisible by t.
    ("lcb_2408_2502_public_tests.jsonl", 243, """
class Solution:
    def smallestNumber(self, n: int, t: int) -> int:
        while True:
            p = 1
            for d in str(n):
                p *= int(d)
            if p % t == 0:
                return n
            n += 1
""", True, None),
    ("lcb_2408_2502_public_tests.jsonl", 243, """
class Solution:
    def smallestNumber(self, n: int, t: int) -> int:
        return n
""", False, 1),
    # LeetCode: smallest x >= n whose binary form is all ones; a bare function is wrapped.
    ("lcb_2408_2502_public_tests.jsonl", 249, """
def smallestNumber(n):
    return (1 << n.bit_length()) - 1
""", True, None),
    ("lcb_2408_2502_public_tests.jsonl", 249, """
class Solution:
    def smallestNumber(self, n: int) -> int:
        return 1 << n.bit_length()
""", False, 0),
    # LeetCode: length-3 subarrays whose ends sum to half the middle.
    ("lcb_2408_2502_public_tests.jsonl", 268, """
class Solution:
    def countSubarrays(self, nums: List[int]) -> int:
        return sum(2 * (nums[i] + nums[i + 2]) == nums[i + 1] for i in range(len(nums) - 2))
""", True, None),
    ("lcb_2408_2502_public_tests.jsonl", 268, """
class Solution:
    def countSubarrays(self, nums: List[int]) -> int:
        return sum(2 * (nums[i] + nums[i + 2]) == nums[i + 1] for i in range(len(nums) - 3))
""", False, 1),
]


def main():
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
    if proc.returncode != 0:
        print(f"FAIL: or1 exited with {proc.returncode}")
        return 1
    results = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    bad = 0
    for (name, index, _, correct, passed), res in zip(CASES, results):
        want_passed = res["total"] if passed is None else passed
        ok = res["correct"] == correct and res["passed"] == want_passed
        print(f"{'ok  ' if ok else 'FAIL'} {name}:{index} correct={res['correct']} "
              f"verdict={res['verdict']} passed={res['passed']}/{res['total']} (want {want_passed})")
        bad += not ok
    if len(results) != len(CASES):
        print("FAIL: result count")
        bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
