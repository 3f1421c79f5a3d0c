"""or1 verify-math end to end: verdicts and extracted answers on a few rows, the summary
line on stderr, and malformed input (bad JSON, missing fields, wrong types) failing with
the file and line named. Usage: cli_test.py OR1_BINARY"""
import json
import os
import subprocess
import sys
import tempfile

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
    """Runs the command on text given as a file; returns (rc, stdout, stderr)."""
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as f:
        f.write(text)
        path = f.name
    try:
        p = subprocess.run([OR1, "verify-math", "--input", path, *flags], capture_output=True, text=True)
        return p.returncode, p.stdout, p.stderr, path
    finally:
        os.unlink(path)


def main():
    fails = 0
    rc, out, err, _ = run("".join(json.dumps(r) + "\n" for r, _, _ in ROWS))
    lines = out.splitlines()
    if rc != 0 or len(lines) != len(ROWS):
        print(f"FAIL good input: rc={rc} lines={len(lines)} stderr={err!r}")
        return 1
    for (row, correct, extracted), line in zip(ROWS, lines):
        got = json.loads(line)
        if got != {"correct": correct, "extracted": extracted}:
            print(f"FAIL {row!r}: got {got!r}")
            fails += 1
    if "6 rows, 3 correct" not in err:
        print(f"FAIL summary line: {err!r}")
        fails += 1
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
        if rc == 0 or not err.startswith("or1: ") or (path + place) not in err:
            print(f"FAIL malformed {text!r}: rc={rc} stderr={err!r}")
            fails += 1
    rc, _, err, _ = run("", "--bogus", "1")
    if rc == 0:
        print("FAIL unknown flag accepted")
        fails += 1
    rc, out, err, _ = run("\n\n")
    if rc != 0 or out != "" or "0 rows" not in err:
        print(f"FAIL empty input: rc={rc} out={out!r} err={err!r}")
        fails += 1
    print(f"verify-math CLI: {fails} failure(s)")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
