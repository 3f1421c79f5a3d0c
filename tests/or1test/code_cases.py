"""Real rows of the evaluation sets, each with a hand-written correct and wrong solution: the
labelled cases of tests/code/real_problems.py and the workload of bench/code_bench.py."""

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
