#!/usr/bin/env python3
"""Writes the math verifier's agreement corpus: (response, gold) pairs shaped like RL responses,
built from the gold answers of the shipped data (data/math500, aime24, aime25 and
deepscaler_first500: reward_model.ground_truth, a JSON string holding a list of strings).

Every gold is rewritten in surface forms that should not change the verdict (\\frac against
\\dfrac against a/b, decimals, thousands separators, units and text around the answer, \\left
and \\right, sqrt forms, intervals, a <think> block, long reasoning before the answer) and in
near misses that should (off by one, sign flipped, another fraction, a converted unit, the right
answer only inside <think>). Each row is {"category", "intent", "response", "gold"}: gold the
row's list of answers, intent "same" or "wrong" (what the rewrite means to do; the test compares
the two verifiers, not this label). Stdlib only, and the same seed gives the same file.

usage: make_math_corpus.py DATA_DIR OUT.jsonl [--seed N] [--per-category N]"""
import argparse
import json
import os
import random
import re
from fractions import Fraction

DATA = ("math500.jsonl", "aime24.jsonl", "aime25.jsonl", "deepscaler_first500.jsonl")

WORDS = ("Let", "us", "compute", "the", "value", "first", "note", "that", "we", "have", "so",
         "then", "hence", "check", "again", "consider", "both", "cases", "which", "gives", "term",
         "sum", "product", "side", "area", "total", "wait", "hmm", "okay", "now", "substitute")
UNITS = ("cm", "meters", "inches", "dollars", "degrees", "units", "square units", "minutes")

INT = re.compile(r"-?\d+")
FRAC = re.compile(r"(-?)\\[dt]?frac\s*(?:\{(\d+)\}|(\d))\s*(?:\{(\d+)\}|(\d))")
SLASH = re.compile(r"(-?\d+)/(\d+)")
DEC = re.compile(r"-?\d*\.\d+")
INTERVAL = re.compile(r"(\\left)?\s*[\[(].*,.*[\])]\s*$")


def read_golds(data_dir):
    """The gold lists of every shipped row, in file order."""
    rows = []
    for name in DATA:
        with open(os.path.join(data_dir, name), encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    truth = json.loads(line)["reward_model"]["ground_truth"]
                    rows.append(json.loads(truth) if truth.startswith("[") else [truth])
    return rows


def bare(g):
    """The gold as an answer is written inside a box: without the $...$ or \\(...\\) around it."""
    g = g.strip()
    for left, right in (("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")):
        if g.startswith(left) and g.endswith(right) and len(g) > len(left) + len(right):
            return g[len(left):-len(right)].strip()
    return g


def value_of(g):
    """The exact value of an integer, decimal or simple fraction gold, else None."""
    g = g.strip()
    if INT.fullmatch(g) or DEC.fullmatch(g):
        return Fraction(g)
    m = FRAC.fullmatch(g)
    if m:
        sign, p1, p2, q1, q2 = m.groups()
        p, q = int(p1 or p2), int(q1 or q2)
        return None if q == 0 else Fraction(p, q) * (-1 if sign else 1)
    m = SLASH.fullmatch(g)
    if m:
        return None if int(m.group(2)) == 0 else Fraction(int(m.group(1)), int(m.group(2)))
    return None


def reasoning(rng, sentences):
    """Filler reasoning: sentences of words, inline arithmetic and displayed equations whose
    numbers are random (never boxed), as a long chain of thought has."""
    out = []
    for _ in range(sentences):
        kind = rng.random()
        if kind < 0.5:
            words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 14)))
            out.append(words.capitalize() + ".")
        elif kind < 0.8:
            a, b = rng.randint(1, 99), rng.randint(1, 99)
            out.append(f"Then ${a} + {b} = {a + b}$, so the {rng.choice(WORDS)} is {a + b}.")
        else:
            a, b = rng.randint(2, 9), rng.randint(1, 20)
            out.append(f"\\[ {a}x + {b} = {a * 3 + b} \\implies x = 3 \\]")
    return " ".join(out)


def ending(rng, answer):
    """The answer written the way a reasoning model ends: a box in one of its usual settings."""
    return rng.choice((
        f"Therefore, the answer is $\\boxed{{{answer}}}$.",
        f"**Final Answer**\n\\[\n\\boxed{{{answer}}}\n\\]",
        f"So the final answer is \\boxed{{{answer}}}.",
        f"The answer is \\(\\boxed{{{answer}}}\\).",
        f"\\[ \\boxed{{{answer}}} \\]",
    ))


def boxed(rng, answer, sentences=3):
    """A short response: some reasoning, then the boxed answer."""
    return reasoning(rng, rng.randint(1, sentences)) + "\n\n" + ending(rng, answer)


def comma_groups(n, sep):
    """|n| written with sep between thousands groups (sign kept)."""
    s = f"{abs(n):,}".replace(",", sep)
    return ("-" if n < 0 else "") + s


def frac_forms(v):
    """Ways to write the non-integer rational v that all mean v."""
    p, q = abs(v.numerator), v.denominator
    sign = "-" if v < 0 else ""
    forms = [f"{sign}\\frac{{{p}}}{{{q}}}", f"{sign}\\dfrac{{{p}}}{{{q}}}", f"{sign}\\tfrac{{{p}}}{{{q}}}",
             f"{sign}{p}/{q}", f"\\frac{{{sign}{p}}}{{{q}}}", f"{sign}\\frac{{{2 * p}}}{{{2 * q}}}",
             f"{sign}\\left(\\frac{{{p}}}{{{q}}}\\right)"]
    if p < 10 and q < 10:
        forms.append(f"{sign}\\frac{p}{q}")
    if q in (2, 4, 5, 8, 10, 16, 20, 25, 40, 50):
        forms.append(f"{sign}{float(p / q):g}")
    else:
        forms.append(f"{sign}{p / q:.6f}")
    return forms


def number_forms(v):
    """Ways to write the rational v (integer or not) that all mean v."""
    if v.denominator != 1:
        return frac_forms(v)
    n = int(v)
    forms = [str(n), f"{n}.0", f"{{{n}}}", f"\\frac{{{2 * n}}}{{2}}", f"{n}.00"]
    if 0 < n < 1000:
        forms.append(f"{n:03d}" if n < 100 else f"0{n}")
    return forms


def wrong_numbers(v):
    """Near misses of the rational v: off by one, sign flipped, another fraction, rounded."""
    if v.denominator == 1:
        n = int(v)
        out = [str(n + 1), str(n - 1), str(n * 10), str(n + 10)]
        if n:
            out.append(str(-n))
        digits = str(abs(n))
        if len(digits) > 1 and digits != digits[::-1]:
            out.append(("-" if n < 0 else "") + digits[::-1])
        return out
    p, q = v.numerator, v.denominator
    out = [f"\\frac{{{q}}}{{{p}}}" if p > 0 else f"-\\frac{{{q}}}{{{-p}}}", f"\\frac{{{p + 1}}}{{{q}}}",
           f"\\frac{{{p}}}{{{q + 1}}}", f"{float(v):.2f}",
           f"-\\frac{{{p}}}{{{q}}}" if p > 0 else f"\\frac{{{-p}}}{{{q}}}"]
    return [w for w in out if value_of(w) != v]


def latex_variants(g):
    """Rewrites of any gold string that keep its meaning: \\dfrac, \\left/\\right, spacing,
    braces around single-character arguments, \\cdot products."""
    out = []
    if "\\frac" in g:
        out += [g.replace("\\frac", "\\dfrac"), g.replace("\\frac", "\\tfrac")]
    if re.search(r"(?<!\\)[()]", g) and "\\left" not in g:
        out.append(re.sub(r"(?<!\\)\(", r"\\left(", re.sub(r"(?<!\\)\)", r"\\right)", g)))
    if "\\text" not in g and "\\mbox" not in g:
        out.append(re.sub(r"\s*([=+]|(?<!\d),|,(?!\\!|\d))\s*", r" \1 ", g).strip())
        out.append(re.sub(r"\s+(?=[^a-zA-Z])|(?<=[^a-zA-Z])\s+", "", g))
    out.append(re.sub(r"\\sqrt\{(\w)\}", r"\\sqrt\1", g))
    out.append(re.sub(r"\\sqrt(\d)(?!\d)", r"\\sqrt{\1}", g))
    out.append(re.sub(r"(\d)\\sqrt", r"\1 \\cdot \\sqrt", g))
    out.append(re.sub(r"(\d)\\pi", r"\1 \\pi", g))
    out.append(g.replace("^\\circ", "^{\\circ}"))
    return [v for v in out if v != g] or [g]


def wrong_string(rng, g):
    """A near miss of any gold string: a digit changed, a sign flipped or an end bracket swapped."""
    choices = []
    digits = [i for i, c in enumerate(g) if c.isdigit()]
    if digits:
        i = rng.choice(digits)
        choices.append(g[:i] + str((int(g[i]) + 1) % 10) + g[i + 1:])
    if "+" in g:
        choices.append(g.replace("+", "-", 1))
    if g.endswith(")") and "," in g:
        choices.append(g[:-1] + "]")
    if not re.search(r"[=<>,]|\\[lg]e|\\pm|\\text|\\mbox", g):
        choices.append(f"-({g})" if not g.startswith("-") else g[1:])
    return rng.choice(choices) if choices else g + "+1"


def cat_boxed(rng, g, v):
    """The gold itself, boxed after short reasoning."""
    return boxed(rng, g), "same"


def cat_latex(rng, g, v):
    """A LaTeX rewrite of the gold (\\dfrac, \\left/\\right, spacing, braces, \\cdot)."""
    return boxed(rng, rng.choice(latex_variants(g))), "same"


def cat_number(rng, g, v):
    """Numeric golds in another form: 0.5 against 1/2 against \\frac{1}{2}, 025, 12.0."""
    if v is None:
        return None
    return boxed(rng, rng.choice(number_forms(v))), "same"


def cat_thousands(rng, g, v):
    """Integers of four digits or more with comma thousands separators (1,000, 1{,}000, 1,\\!000)."""
    if v is None or v.denominator != 1 or abs(v) < 1000:
        return None
    return boxed(rng, comma_groups(int(v), rng.choice((",", "{,}", ",\\!")))), "same"


def cat_thousands_space(rng, g, v):
    """Integers of four digits or more with a thin space or a space between thousands (1\\,000,
    1 000): a known disagreement, or1 reads 1000 where Math-Verify reads a product."""
    if v is None or v.denominator != 1 or abs(v) < 1000:
        return None
    return boxed(rng, comma_groups(int(v), rng.choice(("\\,", " ")))), "same"


def cat_units(rng, g, v):
    """The value with a unit, a degree mark, a dollar sign or a percent around it."""
    if v is None or v.denominator != 1:
        return None
    form = rng.choice((f"{g} \\text{{ {rng.choice(UNITS)}}}", f"{g}\\text{{{rng.choice(UNITS)}}}",
                       f"{g}^\\circ", f"{g}^{{\\circ}}", f"\\${g}", f"{g} \\mbox{{ {rng.choice(UNITS)}}}",
                       f"{g}\\%"))
    return boxed(rng, form), "same"


def cat_text(rng, g, v):
    """No box: the answer in a sentence ("The answer is $X$.", "Answer: X", "final answer")."""
    r = reasoning(rng, rng.randint(2, 6))
    tail = rng.choice((f"The answer is ${g}$.", f"Answer: ${g}$", f"**Answer:** ${g}$",
                       f"The final answer is ${g}$. I hope it is correct.",
                       f"So the final answer is ${g}$.", f"Thus the answer is \\({g}\\)."))
    return r + "\n\n" + tail, "same"


def cat_equation(rng, g, v):
    """The answer as the right side of an equation: x = X, or the value after a chain."""
    lhs = rng.choice(("x", "n", "a", "k", "N"))
    return boxed(rng, f"{lhs} = {g}"), "same"


def cat_interval(rng, g, v):
    """Interval, tuple and union golds with \\left/\\right, spacing and infinity written out."""
    if not INTERVAL.match(g.strip()):
        return None
    forms = latex_variants(g) + [g.replace("\\infty", "+\\infty"), g.replace(" ", ""),
                                 g.replace("\\cup", " \\cup "), f"\\left{g[0]}{g[1:-1]}\\right{g[-1]}"
                                 if g[0] in "([" and "\\left" not in g else g]
    return boxed(rng, rng.choice(forms)), "same"


def cat_sqrt(rng, g, v):
    """Golds with square roots: \\sqrt{2} against \\sqrt2, a product written with \\cdot or swapped."""
    if "\\sqrt" not in g:
        return None
    forms = latex_variants(g)
    m = re.fullmatch(r"(\d+)\s*\\sqrt\{?(\d+)\}?", g.strip())
    if m:
        forms += [f"\\sqrt{{{m.group(2)}}} \\cdot {m.group(1)}", f"\\sqrt{{{int(m.group(1)) ** 2 * int(m.group(2))}}}"]
    return boxed(rng, rng.choice(forms)), "same"


def cat_long(rng, g, v):
    """Long reasoning (2 to 12 KB, many inline numbers and equations) before the boxed answer."""
    return reasoning(rng, rng.randint(30, 150)) + "\n\n" + ending(rng, g), "same"


def cat_think(rng, g, v):
    """A <think> block (with a wrong box inside) before the final answer."""
    w = wrong_string(rng, g)
    think = f"<think>\n{reasoning(rng, rng.randint(3, 20))} Maybe it is \\boxed{{{w}}}? Let me re-check. " \
            f"{reasoning(rng, 3)}\n</think>\n\n"
    return think + boxed(rng, g), "same"


def cat_think_open(rng, g, v):
    """Truncated at the end of thinking: no </think>, the whole text is read."""
    return "<think>\n" + boxed(rng, g, 8), "same"


def cat_wrong_number(rng, g, v):
    """Numeric near misses: off by one, sign flipped, times ten, another fraction, 2 decimals."""
    if v is None:
        return None
    return boxed(rng, rng.choice(wrong_numbers(v))), "wrong"


def cat_wrong_string(rng, g, v):
    """Near misses of any gold: a digit changed, a sign flipped, a bracket swapped."""
    return boxed(rng, wrong_string(rng, g)), "wrong"


def cat_wrong_unit(rng, g, v):
    """The value converted into another unit (metres to centimetres, hours to minutes)."""
    if v is None or v.denominator != 1 or v == 0:
        return None
    factor, unit = rng.choice(((100, "cm"), (60, "minutes"), (1000, "grams"), (12, "inches")))
    return boxed(rng, f"{int(v) * factor} \\text{{ {unit}}}"), "wrong"


def cat_wrong_think(rng, g, v):
    """The right answer only inside <think>, a wrong one after it."""
    think = f"<think>\n{reasoning(rng, rng.randint(3, 12))} So it is \\boxed{{{g}}}.\n</think>\n\n"
    return think + boxed(rng, wrong_string(rng, g)), "wrong"


def cat_truncated(rng, g, v):
    """Cut off before any answer: reasoning that ends mid-sentence (read to its last number)."""
    text = reasoning(rng, rng.randint(5, 40))
    return text[:rng.randint(len(text) // 2, len(text))], "wrong"


def cat_units_box(rng, g, v):
    """Any gold with a unit word inside its box (\\boxed{g\\text{ units}}): Math-Verify drops a
    trailing \\text{...} of a boxed answer whatever comes before it."""
    unit = rng.choice(UNITS)
    form = rng.choice((f"{g}\\text{{ {unit}}}", f"{g} \\text{{ {unit}}}", f"{g}\\text{{{unit}}}",
                       f"{g} \\mbox{{ {unit}}}"))
    return reasoning(rng, rng.randint(1, 3)) + "\n\n" + rng.choice((
        f"Therefore, the answer is $\\boxed{{{form}}}$.", f"\\[ \\boxed{{{form}}} \\]",
        f"So the final answer is \\boxed{{{form}}}.")), "same"


def cat_answer_plain(rng, g, v):
    """No box and no math delimiters: the gold as written after an answer phrase ("The answer is
    52_8.", "... the value is -\\frac{\\pi}{6}")."""
    r = reasoning(rng, rng.randint(2, 6))
    tail = rng.choice((f"The answer is {g}.", f"Thus the value is {g}", f"So the answer is {g}",
                       f"Answer: {g}", f"Hence the final answer is {g}."))
    return r + "\n\n" + tail, "same"


def cat_display_words(rng, g, v):
    """No box: the gold in display math with a word after it (\\[ g\\text{ degrees} \\])."""
    unit = rng.choice(UNITS)
    form = rng.choice((f"\\[ {g}\\text{{ {unit}}} \\]", f"\\[\n{g} \\text{{ {unit}}}\n\\]",
                       f"$$ {g}\\text{{ {unit}}} $$", f"\\[{g}\\text{{ {unit}}}\\]"))
    return reasoning(rng, rng.randint(2, 6)) + "\n\nSo the result is\n" + form, "same"


CATEGORIES = {
    "boxed": cat_boxed, "latex-variants": cat_latex, "number-forms": cat_number,
    "thousands": cat_thousands, "thousands-space": cat_thousands_space, "units": cat_units,
    "text-answer": cat_text, "equation": cat_equation,
    "intervals": cat_interval, "sqrt-forms": cat_sqrt, "long-reasoning": cat_long, "think": cat_think,
    "think-unclosed": cat_think_open, "wrong-number": cat_wrong_number, "wrong-string": cat_wrong_string,
    "wrong-unit": cat_wrong_unit, "wrong-think": cat_wrong_think, "truncated": cat_truncated,
    "units-in-box": cat_units_box, "answer-plain": cat_answer_plain, "display-words": cat_display_words,
}


def generate(rows, seed, per_category):
    """per_category pairs of every category, cycling through the golds it applies to in a
    seeded order, each time with freshly drawn templates."""
    out = []
    for name, make in CATEGORIES.items():
        rng = random.Random(f"{seed}:{name}")
        order = list(range(len(rows)))
        rng.shuffle(order)
        made, tries = 0, 0
        while made < per_category and tries < 40 * len(rows):
            golds = rows[order[tries % len(order)]]
            tries += 1
            g = bare(rng.choice(golds))
            got = make(rng, g, value_of(g))
            if got:
                out.append({"category": name, "intent": got[1], "response": got[0], "gold": golds})
                made += 1
    return out


def main():
    """Reads the golds, writes the corpus, says how many pairs of each category it wrote."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data_dir")
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=20250601)
    ap.add_argument("--per-category", type=int, default=1250)
    a = ap.parse_args()
    pairs = generate(read_golds(a.data_dir), a.seed, a.per_category)
    with open(a.out, "w", encoding="utf-8") as f:
        for p in pairs:
            f.write(json.dumps(p, ensure_ascii=False) + "\n")
    print(f"make_math_corpus: {len(pairs)} pairs, {len(CATEGORIES)} categories -> {a.out}")


if __name__ == "__main__":
    main()
