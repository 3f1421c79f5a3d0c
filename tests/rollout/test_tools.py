"""`or1 generate --tools` end to end with the real sandbox.

usage: test_tools.py OR1 REPO_ROOT

The model here is built to write one fenced Python block: the demo tokenizer gains plain added
tokens for the call's fences, a handful of programs and a closing word, and a one-layer model
maps each token to its fixed successor (or1test/tools.py), so greedy decoding writes prompt ->
"```python\\n" -> program -> "\\n```". The engine must pause the sample there, run the program
in the sandbox, append "```output\\n<what it printed>```\\n" as prefilled tokens (response_mask
0, log-prob 0) and go on: the reply's last token leads to the closing word, then to EOS.
Programs: an ordinary print, a raise, an endless loop, a fork bomb, a memory bomb, a network
connection and bytes that are not UTF-8 (they reach the model as U+FFFD); each must be
contained (the run ends in time, the reply names what happened) and the sample must go on to
its closing word. A model that calls again after every reply checks the turn budget (--tools 2:
two calls run, the third block is left as text). Without a tokenizer, --tools is refused.
"""
import json
import os
import sys
import tempfile
import time

from or1test import proc
from or1test.check import Checker
from or1test.tools import CLOSE, OPEN, REPLY_CLOSE, REPLY_OPEN, make_tokenizer, successor_model

DONE = " DONE"
# (name, program, what its reply must hold, the longest the whole run may take in seconds)
PROGRAMS = [
    ("print", "print(6*7)", "42\n", 30),
    ("raise", "x = 1\nx / 0", "ZeroDivisionError: division by zero", 30),
    ("loop", "while True:\n    pass", "TimeoutError", 30),
    ("fork bomb", "import os\nwhile True:\n    os.fork()", "Error", 60),
    ("memory bomb", "x = bytearray(8 << 30)", "MemoryError", 30),
    ("network", "import socket\nsocket.create_connection(('1.1.1.1', 53), 3)\nprint('connected')", "Error", 30),
    ("bytes", "import sys\nsys.stdout.buffer.write(b'\\xff\\xc3 ok\\x00\\n')", "\ufffd\ufffd ok\x00\n", 30),
]
FLAGS = ["--temperature", 0, "--max-new-tokens", 800, "--tool-timeout", 2, "--tool-memory-mb", 256,
         "--tool-output-bytes", 160, "--threads", 2]


def generate(or1, model, tok, inp, turns, chk, what):
    """One or1 generate --tools run: (rows, stderr, seconds) or None."""
    t0 = time.time()
    r = proc.run_or1(or1, ["generate", "--model", model, "--tokenizer", tok, "--input", inp, "--n", 2,
                           "--tools", turns] + FLAGS, timeout=300)
    dt = time.time() - t0
    if not chk.ok(r.returncode == 0 and not proc.sanitizer_report(r.stderr), f"{what}: exit {r.returncode}: "
                  f"{r.stderr.strip()[-800:]}"):
        return None
    return [json.loads(line) for line in r.stdout.splitlines()], r.stderr, dt


def check_sample(chk, what, row, ids, calls, want):
    """One sample: the call, the reply holding `want` (prefilled: mask 0, log-prob 0), the
    closing word after it, EOS; sampled tokens mask 1."""
    text, mask, lps, resp = row["text"], row["response_mask"], row["logprobs"], row["response_ids"]
    chk.ok(row["tool_calls"] == calls and row["finish_reason"] == "stop", f"{what}: {row['tool_calls']} calls, "
           f"finish {row['finish_reason']} (want {calls}, stop): {text[-300:]!r}")
    chk.ok(len(mask) == len(resp) == len(lps), f"{what}: mask of {len(mask)} for {len(resp)} tokens")
    last = text[text.rfind(REPLY_OPEN):]
    chk.ok(text.count(REPLY_OPEN) == calls and want in last, f"{what}: the reply does not hold {want!r}: {text!r}")
    chk.ok(last.endswith(REPLY_CLOSE + DONE.strip() + "<|endoftext|>") or last.endswith(DONE + "<|endoftext|>"),
           f"{what}: the sample does not go on after the reply: {text[-200:]!r}")
    sampled = [t for t, m in zip(resp, mask) if m]
    chk.ok(all(lp == 0 for lp, m in zip(lps, mask) if not m), f"{what}: a reply token has a log-prob")
    chk.ok(sampled.count(ids[OPEN]) >= calls and sampled[-2:] == [ids[DONE], ids["eos"]],
           f"{what}: sampled tokens {sampled}: the model's fences, its closing word and EOS")
    runs = sum(1 for k, m in enumerate(mask) if not m and (k == 0 or mask[k - 1]))
    chk.ok(runs == calls, f"{what}: {runs} runs of reply tokens for {calls} calls")


def main():
    or1, root = sys.argv[1], sys.argv[2]
    chk = Checker("rollout tools")
    with tempfile.TemporaryDirectory() as tmp:
        tok = os.path.join(tmp, "tok")
        ids, eos, vocab = make_tokenizer(root, tok, [DONE] + [p for _, p, _, _ in PROGRAMS])
        inp = os.path.join(tmp, "in.jsonl")
        prompt = 65  # "b" in the demo vocabulary: any token the chains do not use
        with open(inp, "w") as f:
            f.write(json.dumps({"prompt_ids": [prompt]}) + "\n")
        # the reply ends in the "```\n" token, or in "\n" when "\n```" matched first
        nl = ids["\n"]
        for name, program, want, limit in PROGRAMS:
            succ = {prompt: ids[OPEN], ids[OPEN]: ids[program], ids[program]: ids[CLOSE],
                    ids[REPLY_CLOSE]: ids[DONE], ids[DONE]: eos}
            succ[nl] = ids[DONE]
            model = os.path.join(tmp, name.replace(" ", "_"))
            successor_model(model, vocab, eos, succ)
            out = generate(or1, model, tok, inp, 4, chk, name)
            if out is None:
                continue
            rows, err, dt = out
            chk.ok(dt < limit, f"{name}: the run took {dt:.1f} s (limit {limit} s)")
            chk.ok(len(rows) == 2, f"{name}: {len(rows)} rows")
            for row in rows:
                check_sample(chk, f"{name}, sample {row['sample']}", row, ids, 1, want)
            if name == "network":
                chk.ok(all("connected" not in r["text"].split(REPLY_OPEN)[1] for r in rows),
                       f"{name}: the sandbox reached the network: {rows[0]['text']!r}")
            chk.ok("2 tool calls" in err, f"{name}: stderr does not count 2 calls: {err[-300:]!r}")
        # calls again after every reply: two run, the third block stays text
        program = PROGRAMS[0][1]
        succ = {prompt: ids[OPEN], ids[OPEN]: ids[program], ids[program]: ids[CLOSE], ids[CLOSE]: ids[DONE],
                ids[REPLY_CLOSE]: ids[OPEN], ids[DONE]: eos}
        succ[nl] = ids[OPEN]
        model = os.path.join(tmp, "again")
        successor_model(model, vocab, eos, succ)
        out = generate(or1, model, tok, inp, 2, chk, "turn budget")
        if out:
            for row in out[0]:
                check_sample(chk, f"turn budget, sample {row['sample']}", row, ids, 2, "42\n")
                chk.ok(row["text"].count(OPEN) == 3, f"turn budget: {row['text']!r}")
        r = proc.run_or1(or1, ["generate", "--model", model, "--input", inp, "--tools", 1])
        chk.ok(r.returncode != 0 and "--tools needs a tokenizer" in r.stderr,
               f"--tools without a tokenizer: exit {r.returncode}: {r.stderr.strip()[-300:]}")
    chk.finish()


if __name__ == "__main__":
    main()
