"""`or1 verify-math --strict-box` (the reward option reward.strict_box) against its reference:
verl's DAPO strict rule picks the box (math_dapo.py, strict_box_verify: the last "\\boxed{" up
to the brace that closes it, braces counted as written; no box, no answer), and the real
Math-Verify, called as Skywork-OR1 calls it (skywork_math.py), decides whether that box's
content equals a gold. Each case also carries its expected verdict, so the test fails when
or1 and the reference agree on a wrong one; and for the responses that restate the question
without a box, the default (Math-Verify's extraction) is checked to still pay them, which is
why the option exists.

usage: strict_box_test.py OR1"""
import json
import subprocess
import sys
import tempfile

import skywork_math
from or1test.check import check, finish

OR1 = sys.argv[1]

# (response, gold, strict verdict); the gold is a row's ground_truth text, read by the one rule.
CASES = [
    ("What is 20 - 83? 20 - 83 = ?", "-63", False),
    ("The answer to 20 - 83.", "-63", False),
    ("A simple building baker's answer to 20 - 83.", "-63", False),
    ("20 - 83", "-63", False),
    ("so the result is -63", "-63", False),
    ("\\boxed{-63} ... \\boxed{5}", "5", True),
    ("\\boxed{-63} ... \\boxed{5}", "-63", False),
    ("\\boxed{-63} Wait, that is wrong: \\boxed{-62}", "-63", False),
    ("We get \\boxed{\\frac{1}{2}}.", "\\frac{1}{2}", True),
    ("We get \\boxed{\\frac{1}{2}}.", "0.5", True),
    ("We get \\boxed{\\dfrac{1}{2}}.", "[\"0.5\", \"1/2\"]", True),
    ("so \\boxed 5", "5", False),
    ("so \\fbox{5}", "5", False),
    ("so \\boxed{5", "5", False),
    ("so \\boxed{}", "5", False),
    ("\\boxed{\\boxed{5}}", "5", True),
    ("$\\boxed{-63}$.", "-63", True),
    ("\\boxed{ -63 }", "-63", True),
    ("\\boxed{x = -63}", "-63", True),
    ("20 - 83 = -63, so the answer is \\boxed{-63}", "-63", True),
    ("<think>\\boxed{5}</think> so \\boxed{-63}", "-63", True),
    ("<think>\\boxed{-63}</think> so \\boxed{5}", "-63", False),
    ("<think>\\boxed{-63}</think> the answer is -63", "-63", False),
    ("<think>unfinished \\boxed{-63}", "-63", True),
    ("\\boxed{1} and \\boxed{2}", "1, 2", False),
    ("\\boxed{[1, 2]}", "[1, 2]", True),
    ("\\boxed{1}", "[1, 2]", False),
    ("\\boxed{72}", "72", True),
    ("\\boxed{5}", "The answer is $5$.", True),  # a gold is read as always, whatever the rule
    ("\\boxed{5}", "\\boxed{5}", True),
    ("\\boxed{072}", "[\"72\"]", True),
    ("\\boxed{(1, 2]}", "(1,2]", True),
    ("\\boxed{\\{1, 2\\}}", "\\{2, 1\\}", True),
]
RESTATING = [c for c in CASES[:4]]


def dapo_last_box(text):
    """verl's last_boxed_only_string, then remove_boxed: the content of the last "\\boxed{",
    or None when there is none or its braces never balance."""
    idx = text.rfind("\\boxed{")
    if idx < 0:
        return None
    depth = 0
    for i in range(idx, len(text)):
        depth += text[i] == "{"
        if text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[idx + len("\\boxed{"):i]
    return None


def reference(response, gold):
    """The strict rule's verdict: DAPO's box of the recipe's answer text, its content compared
    with Math-Verify as Skywork-OR1 compares (no box or an empty one: 0)."""
    content = dapo_last_box(skywork_math.answer_text(response))
    if not content:
        return False
    return skywork_math.score("\\boxed{" + content + "}", skywork_math.gold_list(gold))


def or1_verdicts(rows, *flags):
    """or1 verify-math's verdicts on the rows ({"response", "gold"})."""
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", encoding="utf-8") as f:
        f.write("".join(json.dumps({"response": r, "gold": g}) + "\n" for r, g, *_ in rows))
        f.flush()
        p = subprocess.run([OR1, "verify-math", "--input", f.name, *flags], capture_output=True, text=True)
    if not check(p.returncode == 0, f"verify-math {flags}: rc {p.returncode}: {p.stderr.strip()}"):
        return [None] * len(rows)
    return [json.loads(line)["correct"] for line in p.stdout.splitlines()]


def main():
    """Each case: or1 strict = the reference = the label; the restating responses are paid by
    the default reading and by Math-Verify's, and by neither under the strict rule."""
    strict = or1_verdicts(CASES, "--strict-box")
    for (resp, gold, want), got in zip(CASES, strict):
        ref = reference(resp, gold)
        check(ref == want, f"reference gives {ref}, label {want}: {resp!r} gold {gold!r}")
        check(got == want, f"or1 --strict-box gives {got}, label {want}: {resp!r} gold {gold!r}")
    default = or1_verdicts(RESTATING)
    paid = [skywork_math.score(r, skywork_math.gold_list(g)) for r, g, _ in RESTATING]
    check(any(default) and any(paid),
          f"the default reading pays a restated question (or1 {default}, Math-Verify {paid}): the option's reason")
    finish("math_strict_box")


if __name__ == "__main__":
    main()
