"""`or1 generate --tools` end to end with the real sandbox.

usage: test_tools.py OR1 REPO_ROOT

The model here is built to write one fenced Python block: the demo tokenizer gains plain added
tokens for the call's fences, a handful of programs and a closing word, and a one-layer model
whose attention and MLP weights are zero maps each token to its fixed successor (embeddings one-
hot, lm_head a successor matrix), so greedy decoding writes prompt -> "```python\\n" -> program
-> "\\n```". The engine must pause the sample there, run the program in the sandbox, append
"```output\\n<what it printed>```\\n" as prefilled tokens (response_mask 0, log-prob 0) and go on:
the reply's last token leads to the closing word, then to EOS. Programs: an ordinary print, a
raise, an endless loop, a fork bomb, a memory bomb, a network connection and bytes that are
not UTF-8 (they reach the model as U+FFFD); each must be
contained (the run ends in time, the reply names what happened) and the sample must go on to its
closing word. A model that calls again after every reply checks the turn budget (--tools 2:
two calls run, the third block is left as text). Without a tokenizer, --tools is refused.
"""
import json
import os
import shutil
import sys
import tempfile
import time

import torch

from or1test import proc, ref
from or1test.check import Checker

OPEN, CLOSE, REPLY_OPEN, REPLY_CLOSE = "```python\n", "\n```", "```output\n", "```\n"
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


def make_tokenizer(root, out):
    """The demo tokenizer with plain added tokens for the fences, programs and closing word;
    returns {text: id} of those and the EOS id."""
    os.makedirs(out)
    src = os.path.join(root, "models", "arith-base")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(src, name), out)
    path = os.path.join(out, "tokenizer.json")
    t = json.load(open(path))
    next_id = len(t["model"]["vocab"]) + len(t["added_tokens"])
    ids = {}
    for text in [OPEN, CLOSE, REPLY_OPEN, REPLY_CLOSE, DONE] + [p for _, p, _, _ in PROGRAMS]:
        t["added_tokens"].append({"id": next_id, "content": text, "single_word": False, "lstrip": False,
                                  "rstrip": False, "normalized": False, "special": False})
        ids[text] = next_id
        next_id += 1
    json.dump(t, open(path, "w"))
    eos = [a["id"] for a in t["added_tokens"] if a["content"] == "<|endoftext|>"][0]
    ids["\n"] = t["model"]["vocab"]["\u010a"]  # the byte-level token of a newline
    ids["eos"] = eos
    return ids, eos, next_id


def successor_model(path, vocab, eos, succ):
    """A one-layer Qwen2 whose greedy next token after t is succ[t]: zero attention and MLP, so
    the final norm sees the one-hot embedding of t, and lm_head row succ[t] reads it."""
    hidden = (vocab + 7) // 8 * 8
    cfg = ref.make_config("qwen2", hidden=hidden, inter=8, layers=1, heads=4, kv_heads=2, vocab=vocab)
    cfg["eos_token_id"] = eos
    params = {}
    for name, shape in ref.param_shapes(cfg).items():
        params[name] = torch.ones(shape) if name.endswith("norm.weight") else torch.zeros(shape)
    params["model.embed_tokens.weight"][torch.arange(vocab), torch.arange(vocab)] = 1.0
    for t, s in succ.items():
        params["lm_head.weight"][s, t] = 10.0
    ref.save_checkpoint(path, cfg, params)


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
        ids, eos, vocab = make_tokenizer(root, tok)
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
