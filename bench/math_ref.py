"""Math verifier benchmark helper.

make-pairs DATA.jsonl...: writes (response, gold) pairs from the gold answers of the data
  files: the gold boxed after ~2 KB of reasoning (correct, equal strings), "0+gold" (equal,
  needs the parser), "(gold)+1" (wrong, needs the parser). "ref" marks the pairs whose gold
  the SymPy reference below can read.
verify PAIRS.jsonl VERDICTS: the reference, a SymPy stand-in for Math-Verify's core (parse
  both answers, then simplify(a - b) == 0) on the "ref" pairs; prints its rate and how
  often it agrees with or1's verdicts (one 0/1 per line in VERDICTS).
"""
import json
import re
import sys
import time

FILLER = ("Let me think about this step by step. We set up the equation, simplify both sides, "
          "and check the edge cases carefully before concluding. ") * 14


def boxed(text):
    """The content of the last balanced \\boxed{...}, or None."""
    at = text.rfind("\\boxed{")
    if at < 0:
        return None
    depth, start = 0, at + 7
    for i in range(start - 1, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[start:i]
    return None


def group(s, i):
    """(content, end) of the braced group or single character at s[i]."""
    while i < len(s) and s[i] == " ":
        i += 1
    if i < len(s) and s[i] == "{":
        depth = 0
        for j in range(i, len(s)):
            depth += s[j] == "{"
            depth -= s[j] == "}"
            if depth == 0:
                return s[i + 1:j], j + 1
        raise ValueError("unbalanced")
    return s[i], i + 1


def to_python(s):
    """A small LaTeX subset (numbers, fractions, roots, pi, powers, products) as Python."""
    for a, b in [("\\left", ""), ("\\right", ""), ("\\!", ""), ("\\,", ""), ("\\dfrac", "\\frac"),
                 ("\\tfrac", "\\frac"), ("\\cdot", "*"), ("\\times", "*"), ("\\pi", " pi "), ("$", "")]:
        s = s.replace(a, b)
    out, i = [], 0
    while i < len(s):
        if s.startswith("\\frac", i):
            a, i = group(s, i + 5)
            b, i = group(s, i)
            out.append(f"(({to_python(a)})/({to_python(b)}))")
        elif s.startswith("\\sqrt[", i):
            j = s.index("]", i)
            n = s[i + 6:j]
            a, i = group(s, j + 1)
            out.append(f"(({to_python(a)})**(1/({to_python(n)})))")
        elif s.startswith("\\sqrt", i):
            a, i = group(s, i + 5)
            out.append(f"sqrt({to_python(a)})")
        elif s[i] == "^":
            a, i = group(s, i + 1)
            out.append(f"**({to_python(a)})")
        elif s[i] == "\\":
            raise ValueError("unsupported command")
        elif s[i] in "{}":
            out.append("(" if s[i] == "{" else ")")
            i += 1
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def sympy_value(s, sympy, parse_expr, transforms):
    """The SymPy expression of an answer string (raises when unsupported)."""
    if re.search(r"[=<>,]|\\[a-zA-Z]+\{?[a-zA-Z]", s.replace("\\frac", "").replace("\\sqrt", "").replace("\\pi", "")):
        raise ValueError("not a single expression")
    return parse_expr(to_python(s), transformations=transforms, evaluate=True)


def readers():
    import sympy
    from sympy.parsing.sympy_parser import (implicit_multiplication_application, parse_expr,
                                            standard_transformations)
    return sympy, parse_expr, standard_transformations + (implicit_multiplication_application,)


def make_pairs(paths):
    sympy, parse_expr, transforms = readers()
    for path in paths:
        for line in open(path, encoding="utf-8"):
            row = json.loads(line)
            gold = json.loads(row["reward_model"]["ground_truth"])[0]
            try:
                sympy_value(gold, sympy, parse_expr, transforms)
                ref = True
            except Exception:
                ref = False
            for response, expected in [(f"<think>{FILLER}</think>The answer is \\boxed{{{gold}}}.", True),
                                       (f"\\boxed{{0+{gold}}}", True),
                                       (f"\\boxed{{({gold})+1}}", False)]:
                print(json.dumps({"response": response, "gold": [gold], "expected": expected, "ref": ref}))


def verify(pairs_path, verdicts_path):
    sympy, parse_expr, transforms = readers()
    pairs = [json.loads(l) for l in open(pairs_path, encoding="utf-8")]
    ours = [l.strip() == "1" for l in open(verdicts_path)]
    todo = [(p, v) for p, v in zip(pairs, ours) if p["ref"]]
    agree = 0
    t0 = time.perf_counter()
    for p, v in todo:
        got = False
        try:
            ans = boxed(p["response"])
            a = sympy_value(ans, sympy, parse_expr, transforms)
            b = sympy_value(p["gold"][0], sympy, parse_expr, transforms)
            got = ans == p["gold"][0] or sympy.simplify(a - b) == 0
        except Exception:
            got = False
        agree += got == v
    dt = time.perf_counter() - t0
    print(f"reference (SymPy parse + simplify): {len(todo)} ref pairs, {len(todo) / dt:.1f} verifications/s, "
          f"verdicts agree with or1 on {agree}/{len(todo)}")


if __name__ == "__main__":
    if sys.argv[1] == "make-pairs":
        make_pairs(sys.argv[2:])
    else:
        verify(sys.argv[2], sys.argv[3])
