"""Bad requests and flags: `or1 generate` must exit non-zero with "or1: <message>" naming the file and
line (or the flag), never die by a signal, never trigger an ASan/UBSan/LSan report; and the limits
must not reject what fits.

usage: test_errors.py OR1

Cases: a prompt too long for max_position_embeddings together with max-new-tokens (and one that
fits exactly), a KV budget too small (--kv-cache-gb 1e-6) and one that fits only a few slots (same
output as the default), bad token ids, malformed lines, bad flags, a missing input file. Input errors
sit on line 3 after a good line and a blank one, so that a message counting requests (not lines) is
caught. Expected substrings are matched case-sensitively; a tuple means any one will do.
"""
import os
import re
import sys
import tempfile

from or1test import proc, ref, rollout
from or1test.check import Checker

GOOD = '{"prompt_ids": [1, 2, 3]}'


class Env:
    """A valid tiny checkpoint (max_position_embeddings 64) and input files under tmp."""

    def __init__(self, chk, or1, tmp):
        self.chk, self.or1, self.tmp, self.n = chk, or1, tmp, 0
        self.model = os.path.join(tmp, "m")
        self.cfg, _ = ref.new_checkpoint(self.model, seed=2, vocab=97)
        rollout.set_config(self.model, max_position_embeddings=64)

    def input(self, bad_line):
        """A file: a good line, a blank line, then bad_line (line 3); returns (path, "path:3")."""
        self.n += 1
        path = os.path.join(self.tmp, f"in{self.n}.jsonl")
        with open(path, "w") as f:
            f.write(GOOD + "\n\n" + bad_line + "\n")
        return path, f"{path}:3"

    def fails(self, what, args, expect, stdin=None):
        """or1 args must exit 1 or 2 with an `or1:` message containing every expected substring."""
        r = proc.run_or1(self.or1, args, stdin=stdin)
        msg = r.stderr.strip()
        if not self.chk.ok(r.returncode in (1, 2) and not proc.sanitizer_report(r.stderr),
                           f"{what}: exit {r.returncode} (want 1 or 2): {msg[-1500:]}"):
            return msg
        last = msg.splitlines()[-1] if msg else ""
        self.chk.ok(last.startswith("or1: "), f"{what}: stderr does not end in 'or1: <message>': {msg!r}")
        for e in expect:
            alts = e if isinstance(e, tuple) else (e,)
            self.chk.ok(any(a in last for a in alts), f"{what}: message {last!r} lacks {' or '.join(alts)!r}")
        return last

    def generate(self, inp, *flags):
        """The generate command line for an input file and extra flags."""
        return ["generate", "--model", self.model, "--input", inp] + list(flags)


def check_lengths(env):
    """max_position_embeddings bounds prompt + max-new-tokens; exactly 64 fits."""
    ids = ", ".join(str(i % 97) for i in range(57))
    inp, where = env.input(f'{{"prompt_ids": [{ids}]}}')
    env.fails("57 prompt + 8 new tokens > max_position_embeddings 64",
              env.generate(inp, "--max-new-tokens", "8"), [where, "max_position_embeddings"])
    long_ids = ", ".join(str(i % 97) for i in range(5000))
    inp, where = env.input(f'{{"prompt_ids": [{long_ids}]}}')
    env.fails("5000-token prompt", env.generate(inp, "--max-new-tokens", "1"),
              [where, "max_position_embeddings"])
    fit = rollout.write_prompts(os.path.join(env.tmp, "fit.jsonl"), [list(range(56)), [5]])
    rows = rollout.generate(env.chk, env.or1, env.model, fit, 2, **{"max-new-tokens": 8})
    env.chk.ok(rows is not None and all(len(r["response_ids"]) == 8 for r in rows),
               "56 prompt + 8 new tokens = max_position_embeddings 64 must fit")


def check_kv_budget(env):
    """A budget below one sequence fails clearly; one that holds a few slots gives the same output."""
    inp = rollout.write_prompts(os.path.join(env.tmp, "kv.jsonl"), [[1, 2, 3, 4, 5], [6, 7], [8]])
    msg = env.fails("--kv-cache-gb 1e-6", env.generate(inp, "--kv-cache-gb", "1e-6", "--max-new-tokens", "10"),
                    ["KV", "budget"])
    sizes = re.findall(r"(\d+(?:\.\d+)?(?:e-?\d+)?) ?([KMG]i?B|bytes)", msg)
    env.chk.ok(len(sizes) >= 2 and sizes[0] != sizes[1],
               f"--kv-cache-gb 1e-6: the message should show the need and the budget as different "
               f"figures: {msg!r}")
    c = env.cfg
    per_token = c["num_hidden_layers"] * 2 * c["num_key_value_heads"] * ref.head_dim_of(c) * 4
    few = 4 * per_token * (5 + 10) / 2 ** 30  # four prompt-plus-response sequences' worth
    flags = {"n": 3, "seed": 4, "max-new-tokens": 10}
    want = rollout.generate_lines(env.chk, env.or1, env.model, inp, 3, **flags)[1]
    got = rollout.generate_lines(env.chk, env.or1, env.model, inp, 3, **{"kv-cache-gb": f"{few:.3e}"},
                                **flags)[1]
    env.chk.ok(want is not None and got == want,
               f"--kv-cache-gb {few:.3e} (a few sequences) must give the default budget's output")
    check_paging(env, inp, per_token)


def check_paging(env, inp, per_token):
    """A KV pool of 8 blocks of 16 tokens (5 slots' prompts of one block, and one response of
    40 tokens, 3 blocks): twelve 40-token samples cannot all grow at once, so sequences are
    preempted and started again, and the output must still be the default budget's, byte for
    byte (counter-based draws, row-independent kernels)."""
    flags = {"n": 4, "seed": 6, "max-new-tokens": 40}
    want = rollout.generate_lines(env.chk, env.or1, env.model, inp, 3, **flags)[1]
    budget = 8 * 16 * per_token / 2 ** 30
    r = rollout.generate_raw(env.or1, env.model, inp, **flags, **{"kv-cache-gb": f"{budget:.6e}", "max-slots": 4})
    got = r.stdout.splitlines() if r.returncode == 0 else None
    pre = re.findall(r"KV pool of (\d+) blocks of 16 tokens, (\d+) preemptions", r.stderr)
    env.chk.ok(r.returncode == 0, f"paging run: exit {r.returncode}: {r.stderr.strip()[-1500:]}")
    env.chk.ok(pre and pre[0][0] == "8" and int(pre[0][1]) > 0,
               f"paging run: want a pool of 8 blocks and some preemptions, stderr says {pre} ({r.stderr[-300:]!r})")
    env.chk.ok(want is not None and got == want, "paging run with preemptions differs from the default budget's output")


def check_inputs(env):
    """Bad ids and malformed lines name the file and line."""
    V = env.cfg["vocab_size"]
    lines = {"id -1": '{"prompt_ids": [1, -1]}', f"id {V} (= vocab)": f'{{"prompt_ids": [1, {V}]}}',
             "id 2.5": '{"prompt_ids": [2.5]}', "id as string": '{"prompt_ids": ["7"]}',
             "id 1e30": '{"prompt_ids": [1e30]}', "id null": '{"prompt_ids": [null]}',
             "nested array": '{"prompt_ids": [[1]]}', "prompt_ids not an array": '{"prompt_ids": 5}',
             "empty prompt_ids": '{"prompt_ids": []}', "no prompt key": '{"ids": [1, 2]}',
             "text without a tokenizer": '{"prompt": "hello"}', "not JSON": "prompt_ids: [1, 2]",
             "a JSON array": "[1, 2, 3]", "truncated": '{"prompt_ids": [1, 2',
             "trailing text": '{"prompt_ids": [1]} x'}
    for what, line in lines.items():
        inp, where = env.input(line)
        env.fails(what, env.generate(inp), [where])
    env.fails("missing input file", env.generate(os.path.join(env.tmp, "absent.jsonl")), ["absent.jsonl"])
    env.fails("bad line on stdin", env.generate("/dev/stdin"), ["/dev/stdin:2"], stdin=GOOD + "\n{\n")


def check_flags(env):
    """Out-of-range and malformed flags are rejected naming the flag."""
    inp = rollout.write_prompts(os.path.join(env.tmp, "ok.jsonl"), [[1, 2]])
    V = env.cfg["vocab_size"]
    bad = [("--temperature", "-1"), ("--temperature", "nan"), ("--top-p", "0"), ("--top-p", "1.5"),
           ("--top-k", "-1"), ("--n", "0"), ("--max-new-tokens", "0"), ("--seed", "-3"),
           ("--stop", "abc"), ("--stop", str(V)), ("--stop", "1,,2"), ("--stop", "-1"),
           ("--max-slots", "0"), ("--kv-cache-gb", "0"), ("--threads", "0"), ("--n", "x")]
    for flag, value in bad:
        env.fails(f"{flag} {value}", env.generate(inp, flag, value), [flag[2:]])
    env.fails("unknown flag", env.generate(inp, "--top_p", "0.5"), ["top_p"])
    env.fails("no --input", ["generate", "--model", env.model], ["input"])
    env.fails("no --model", ["generate", "--input", inp], ["model"])


def main():
    or1 = sys.argv[1]
    chk = Checker("rollout errors")
    with tempfile.TemporaryDirectory() as tmp:
        env = Env(chk, or1, tmp)
        check_lengths(env)
        check_kv_budget(env)
        check_inputs(env)
        check_flags(env)
    chk.finish()


if __name__ == "__main__":
    main()
