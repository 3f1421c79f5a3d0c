#!/usr/bin/env python3
"""The demo tokenizer and the SFT traces of or1 gen-arith --traces.

Builds the tokenizer with demo/make_tokenizer.py, then checks: traces equal a reference
built from Python's own parse tree (precedence and parentheses), end in </think>,
\\boxed{answer} and EOS, and score as correct with or1 verify-math; the tokenizer round-trips
prompt + response and gives the markers, digits and EOS one token each; noisy traces stay
self-consistent and verify-math agrees with their trace_correct flag.

Usage: test_traces.py OR1 REPO_ROOT SCRATCH_DIR
"""
import ast
import json
import os
import re

from or1test import proc
from or1test.check import check, finish
from or1test.demo import ROOT, SCRATCH, fresh_scratch, or1

TOK = os.path.join(SCRATCH, "tok")


def partials(a, b):
    """'=P1+P2' of a*b split by the digits of the factor with fewer digits ('' for one part)."""
    x, y = abs(a), abs(b)
    if len(str(y)) > len(str(x)):
        x, y = y, x
    parts = [x * int(d) * 10 ** k for k, d in enumerate(reversed(str(y))) if d != "0"][::-1]
    if len(parts) < 2:
        return ""
    if (a < 0) != (b < 0):
        return "=" + "".join(f"-{p}" for p in parts)
    return "=" + "+".join(str(p) for p in parts)


def reference_trace(expr, split=False):
    """The expected trace: one line per operation in post-order of Python's parse tree."""
    lines = []
    sym = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*"}

    def walk(node):
        if isinstance(node, ast.Constant):
            return node.value
        a, b = walk(node.left), walk(node.right)
        op = sym[type(node.op)]
        v = a + b if op == "+" else a - b if op == "-" else a * b
        mid = partials(a, b) if split and op == "*" else ""
        lines.append(f"{a}{op}{'(%d)' % b if b < 0 else b}{mid}={v}\n")
        return v

    value = walk(ast.parse(expr, mode="eval").body)
    return "<think>\n" + "".join(lines) + "</think>\n\\boxed{%d}<|endoftext|>" % value


def split_products():
    """--split-products: partial products as the reference writes them, still verified correct."""
    check(reference_trace("(7-59)*13", True) == "<think>\n7-59=-52\n-52*13=-520-156=-676\n</think>\n"
          "\\boxed{-676}<|endoftext|>", "the reference's own example")
    rows = or1("gen-arith", "--n", "400", "--seed", "6", "--traces", "--tokenizer", TOK, "--split-products")
    for i, r in enumerate(rows):
        expr = r["extra_info"]["expression"]
        want = reference_trace(expr, split=True)
        check(r["response"] == want, f"split row {i}: {expr}: {r['response']!r} != {want!r}")
    check(sum("+" in r["response"].split("*", 1)[-1] for r in rows) > 50, "few split products")
    verdicts = or1("verify-math", stdin="".join(json.dumps({"response": r["response"], "gold": r["gold"]}) + "\n"
                                                for r in rows))
    check(all(v["correct"] for v in verdicts), "verify-math rejects split-product traces")


def guesses():
    """--guess: that share of traces answers without working, always wrongly; the rest are full."""
    rows = or1("gen-arith", "--n", "400", "--seed", "5", "--traces", "--tokenizer", TOK, "--guess", "0.3")
    lazy = [r for r in rows if r["response"].startswith("<think>\n</think>\n")]
    check(0.2 * len(rows) < len(lazy) < 0.4 * len(rows), f"{len(lazy)} of {len(rows)} traces guess")
    for i, r in enumerate(rows):
        full = r["response"] == reference_trace(r["extra_info"]["expression"])
        check(full != (r in lazy) and r["extra_info"]["trace_correct"] == full, f"guess row {i}: {r['response']!r}")
    verdicts = or1("verify-math", stdin="".join(json.dumps({"response": r["response"], "gold": r["gold"]}) + "\n"
                                                for r in lazy))
    check(not any(v["correct"] for v in verdicts), "a guess verifies as correct")


def tools():
    """--tool: that share of traces asks Python for the value; the reply is in the engine's format
    (its ids tokenized apart, mask 0), the rest of the response mask 1; other rows are unchanged."""
    plain = or1("gen-arith", "--n", "300", "--seed", "8", "--traces", "--tokenizer", TOK)
    rows = or1("gen-arith", "--n", "300", "--seed", "8", "--traces", "--tokenizer", TOK, "--tool", "0.4")
    calls = [r for r in rows if r["extra_info"].get("tool")]
    check(0.3 * len(rows) < len(calls) < 0.5 * len(rows), f"{len(calls)} of {len(rows)} traces call the tool")
    for i, (r, q) in enumerate(zip(rows, plain)):
        check(r["extra_info"].get("tool") or (r == q), f"row {i}: a worked trace changed with --tool")
    reply = {}
    for i, r in enumerate(calls):
        expr, value = r["extra_info"]["expression"], r["gold"][0]
        reply[i] = f"\n```output\n{value}\n```\n"
        want = f"<think>\n```python\nprint({expr})\n```{reply[i]}</think>\n\\boxed{{{value}}}<|endoftext|>"
        check(r["response"] == want, f"tool row {i}: {r['response']!r} != {want!r}")
        m = r["response_mask"]
        k0, k1 = m.index(0), len(m) - m[::-1].index(0)
        check(len(m) == len(r["response_ids"]) and 0 not in m[k1:] and 1 not in m[k0:k1], f"tool row {i}: mask {m}")
        r["spans"] = [r["response_ids"][:k0], r["response_ids"][k0:k1], r["response_ids"]]
    ids = [s for r in calls for s in r["spans"]]
    dec = or1("detokenize", "--tokenizer", TOK, stdin="".join(json.dumps({"ids": x}) + "\n" for x in ids))
    for i, r in enumerate(calls):
        head, masked, whole = (d["text"] for d in dec[3 * i:3 * i + 3])
        check(whole == r["response"] and masked == reply[i] and head.endswith("print(%s)\n```" % r["extra_info"]["expression"]),
              f"tool row {i}: decoded {head!r} | {masked!r}")
    verdicts = or1("verify-math", stdin="".join(json.dumps({"response": r["response"], "gold": r["gold"]}) + "\n"
                                                for r in calls))
    check(all(v["correct"] for v in verdicts), "verify-math rejects a tool trace")


def main():
    fresh_scratch()
    proc.make_tokenizer(ROOT, TOK)
    rows = or1("gen-arith", "--n", "400", "--seed", "5", "--traces", "--tokenizer", TOK)
    for i, r in enumerate(rows):
        expr = r["extra_info"]["expression"]
        check(r["prompt"] == f"User: {expr}\nAssistant:", f"row {i}: prompt {r['prompt']!r}")
        check(r["response"] == reference_trace(expr), f"row {i}: {expr}: {r['response']!r} != {reference_trace(expr)!r}")
        check(r["gold"] == [str(eval(expr, {"__builtins__": {}}))], f"row {i}: gold {r['gold']}")  # noqa: S307
        check(r["extra_info"]["trace_correct"] is True, f"row {i}: a noise-free trace marked wrong")
    verdicts = or1("verify-math", stdin="".join(json.dumps({"response": r["response"], "gold": r["gold"]}) + "\n"
                                                for r in rows))
    check(all(v["correct"] for v in verdicts), f"verify-math rejects {sum(not v['correct'] for v in verdicts)} traces")
    # The tokenizer round-trips every prompt + response, with one token per marker and digit.
    texts = [r["prompt"] + r["response"] for r in rows]
    enc = or1("tokenize", "--tokenizer", TOK, stdin="".join(json.dumps({"text": t}) + "\n" for t in texts))
    dec = or1("detokenize", "--tokenizer", TOK, stdin="".join(json.dumps({"ids": e["ids"]}) + "\n" for e in enc))
    check([d["text"] for d in dec] == texts, "detokenize(tokenize(text)) != text")
    pieces = ["<think>", "</think>", "\\boxed{", "<|endoftext|>", "User", "Assistant"] + [str(d) for d in range(10)]
    single = or1("tokenize", "--tokenizer", TOK, stdin="".join(json.dumps({"text": p}) + "\n" for p in pieces))
    for p, e in zip(pieces, single):
        check(len(e["ids"]) == 1, f"{p!r} is {len(e['ids'])} tokens")
    eos = single[3]["ids"][0]
    check(all(e["ids"][-1] == eos for e in enc), "a trace does not end in the EOS id")
    cfg = json.load(open(os.path.join(TOK, "tokenizer_config.json")))
    check(cfg["eos_token"] == "<|endoftext|>" and "chat_template" not in cfg, "tokenizer_config.json")
    n_tok = len(json.load(open(os.path.join(TOK, "tokenizer.json")))["model"]["vocab"]) + 4
    check(260 <= n_tok <= 512 and eos < n_tok, f"vocabulary of {n_tok} tokens")
    # Noisy traces: wrong at some steps, consistent after them, and verify-math agrees.
    noisy = or1("gen-arith", "--n", "400", "--seed", "5", "--traces", "--tokenizer", TOK, "--noise", "0.5")
    wrong = sum(not r["extra_info"]["trace_correct"] for r in noisy)
    check(0.2 * len(noisy) < wrong < 0.9 * len(noisy), f"{wrong} of {len(noisy)} noisy traces are wrong")
    verdicts = or1("verify-math", stdin="".join(json.dumps({"response": r["response"], "gold": r["gold"]}) + "\n"
                                                for r in noisy))
    for i, (r, v) in enumerate(zip(noisy, verdicts)):
        check(v["correct"] == r["extra_info"]["trace_correct"], f"noisy row {i}: verify-math {v['correct']}")
        results = re.findall(r"=(-?\d+)\n", r["response"])
        check(results and v["extracted"] == results[-1], f"noisy row {i}: boxed {v['extracted']} != last step")
    check([r["prompt"] for r in noisy] == [r["prompt"] for r in rows], "noise changed the problems")
    split_products()
    guesses()
    tools()
    finish("traces")


if __name__ == "__main__":
    main()
