"""or1 verify-math end to end: verdicts and extracted answers on a few rows, the summary
line on stderr, and malformed input (bad JSON, missing fields, wrong types) failing with
the file and line named. Usage: cli_test.py OR1_BINARY"""
import json
import os
import sys
import tempfile

from or1test import proc
from or1test.check import check, finish

OR1 = sys.argv[1]
ROWS = [
    ({"response": "<think>\\boxed{1}</think> so \\boxed{025}", "gold": ["25"]}, True, "025"),
    ({"response": "The answer is $\\frac{1}{2}$.", "gold": "0.5"}, True, "\\frac{1}{2}"),
    ({"response": "\\boxed{(1,2]}", "gold": ["(1,2)"]}, False, "(1,2]"),
    ({"response": "no answer here", "gold": ["3"]}, False, ""),
    ({"response": "\\boxed{10^{10^{10}}}", "gold": ["1"]}, False, "10^{10^{10}}"),
    ({"response": "\\boxed{x = \\text{\u00e9t\u00e9}}", "gold": ["\u00e9t\u00e9"]}, True, "x = \\text{\u00e9t\u00e9}"),
]


def run(text, *flags):
    """Runs the command on text given as a file; returns (rc, stdout, stderr, the file's path)."""
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as f:
        f.write(text)
        path = f.name
    try:
        p = proc.run([OR1, "verify-math", "--input", path, *flags], ok=False)
        return p.returncode, p.stdout, p.stderr, path
    finally:
        os.unlink(path)


def main():
    """Good rows, the summary line, malformed inputs, a base subscript dropped by default and kept
    with --keep-base, an unknown flag and empty input."""
    rc, out, err, _ = run("".join(json.dumps(r) + "\n" for r, _, _ in ROWS))
    lines = out.splitlines()
    if not check(rc == 0 and len(lines) == len(ROWS), f"good input: rc={rc} lines={len(lines)} stderr={err!r}"):
        finish("verify_math_cli")
    for (row, correct, extracted), line in zip(ROWS, lines):
        got = json.loads(line)
        check(got == {"correct": correct, "extracted": extracted}, f"{row!r}: got {got!r}")
    check("6 rows, 3 correct" in err, f"summary line: {err!r}")
    bad_inputs = [
        ('{"response": "x", "gold": ["1"]}\n{"response": \n', ":2"),
        ('{"gold": ["1"]}\n', ":1"),
        ('{"response": "x", "gold": [1]}\n', ":1"),
        ('{"response": "x", "gold": {"a": 1}}\n', ":1"),
        ('{"response": 5, "gold": "1"}\n', ":1"),
        ('[1, 2]\n', ":1"),
    ]
    for text, place in bad_inputs:
        rc, out, err, path = run(text)
        check(rc != 0 and err.startswith("or1: ") and (path + place) in err, f"malformed {text!r}: rc={rc} stderr={err!r}")
    base = "".join(json.dumps({"response": r, "gold": ["2516_8"]}) + "\n"
                   for r in ("The answer is 2516_9.", "\\boxed{2516_{8}}", "\\boxed{1358}", "The value is 2516_8."))
    for flags, want in (((), [True, True, False, True]), (("--keep-base",), [False, True, False, True])):
        rc, out, err, _ = run(base, *flags)
        got = [json.loads(line)["correct"] for line in out.splitlines()]
        check(rc == 0 and got == want, f"base subscripts {flags or 'by default'}: {got}, want {want} ({err!r})")
    rc, _, err, _ = run("", "--bogus", "1")
    check(rc != 0, "unknown flag accepted")
    rc, out, err, _ = run("\n\n")
    check(rc == 0 and out == "" and "0 rows" in err, f"empty input: rc={rc} out={out!r} err={err!r}")
    finish("verify_math_cli")


if __name__ == "__main__":
    main()
