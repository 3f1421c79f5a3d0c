"""Skywork-OR1's math reward with the real Math-Verify (PyPI, pinned in
scripts/python-test-requirements.txt): the oracle that `or1 verify-math` is compared with.

The call is the recipe's (docs/rewards.md, "Math-Verify as the oracle"): the text between the first
and a second </think> (all of it without one); parse() with the default extraction configs
(LaTeX, then plain expressions) and timeout; a response whose extracted string is literally one
of the golds is correct; else each gold g is parsed as "\\boxed{" + g + "}" and verify()ed
against the response with the defaults (float rounding 6, strict, the default timeout, which is
the recipe's 5 s). A gold written as text around its answer (a box, a $ span, \\( or \\[, an
"answer" phrase) is parsed as written, as `or1 verify-math` reads it (and as Math-Verify's own
tests pass such golds): wrapped in a box, Math-Verify would read the text, not the answer."""
import functools
import json
import re

from math_verify import parse, verify


def answer_text(completion):
    """The text the recipe scores: completion.split("</think>")[1] when there is a </think>."""
    return completion.split("</think>")[1] if "</think>" in completion else completion


def gold_list(gold):
    """The gold answers of a row, read as or1 reads them (or1_math_gold_parse): a list of
    strings; or a string holding JSON for a list that holds a string (Skywork-OR1's form; or1
    refuses one with anything but non-empty strings), JSON for a string (its answer), or else
    one answer as written ("72", an interval "[1, 2]")."""
    if isinstance(gold, list):
        return gold
    try:
        parsed = json.loads(gold)
    except ValueError:
        return [gold]
    if isinstance(parsed, str):
        return [parsed]
    if isinstance(parsed, list) and (not parsed or any(isinstance(g, str) for g in parsed)):
        return parsed
    return [gold]


def gold_is_text(g):
    """True when the gold is text around its answer (the rule of or1's gold_needs_extraction):
    a box, an unescaped $, \\( or \\[, or the word "answer"."""
    return bool("boxed" in g or "fbox" in g or re.search(r"(?<!\\)\$", g) or "\\(" in g or "\\[" in g
                or "answer" in g.lower())


def parse_gold_uncached(g):
    """The parsed gold: "\\boxed{" + g + "}", or g itself when it is text around its answer."""
    return parse(g if gold_is_text(g) else "\\boxed{" + g + "}")


@functools.lru_cache(maxsize=4096)
def parse_gold(g):
    """The parsed gold, once per process (parse is a pure function of its text)."""
    return parse_gold_uncached(g)


def score(response, golds, cached=True):
    """True when Skywork-OR1 would reward response against the gold answers with 1; an exception
    anywhere in Math-Verify is a 0, as in the recipe. cached=False parses each gold again, as
    the recipe does on every call (the benchmark times that)."""
    try:
        parsed = parse(answer_text(response))
    except Exception:  # noqa: BLE001 - the recipe turns every failure into a 0
        return False
    if len(parsed) < 2:
        return False
    if parsed[1] in golds:
        return True
    for g in golds:
        try:
            if verify((parse_gold if cached else parse_gold_uncached)(g), parsed):
                return True
        except Exception:  # noqa: BLE001
            continue
    return False
