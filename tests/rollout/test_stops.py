"""Stopping: EOS ids from config.json and generation_config.json, the --stop list, max-new-tokens.

usage: test_stops.py OR1

Greedy: on an EOS-free checkpoint the greedy response g of a prompt is computed first (10 tokens);
then with g[2] made the EOS (config.json integer, config.json list, generation_config.json, or
both files at once), or with g[3] in --stop, the response must be g cut just after that token,
finish_reason "stop", the stop token included, its log-probs those of the EOS-free run. An EOS at
the first token, or at the last allowed one, is a stop too; max-new-tokens without a stop token is
"length" with exactly that many tokens.
Sampled: with an EOS id and a --stop id (one prompt contains the EOS id, which must not matter),
every sample must be the same seed's EOS-free sample cut after its first stop token (or the whole
of it, "length", when it has none), under continuous batching (--max-slots 3).
"""
import json
import os
import shutil
import sys
import tempfile

import torch

from or1test import ref, rollout
from or1test.check import Checker

NEW = 10


class Setup:
    """A checkpoint, prompts and their EOS-free greedy responses."""

    def __init__(self, chk, or1, tmp):
        self.chk, self.or1, self.tmp, self.n = chk, or1, tmp, 0
        self.src = os.path.join(tmp, "src")
        self.cfg, _ = ref.new_checkpoint(self.src, seed=8, vocab=97)
        g = torch.Generator().manual_seed(8)
        self.prompts = [ref.random_ids(g, 97, n) for n in (3, 8, 1, 15, 6, 11)]
        self.inp = rollout.write_prompts(os.path.join(tmp, "in.jsonl"), self.prompts)
        self.greedy = rollout.generate(chk, or1, self.src, self.inp, len(self.prompts), temperature=0,
                                      **{"max-new-tokens": NEW})

    def model(self, config=None, generation=None):
        """A copy of the checkpoint with config.json changes and an optional generation_config.json."""
        self.n += 1
        d = os.path.join(self.tmp, f"m{self.n}")
        shutil.copytree(self.src, d)
        if config:
            rollout.set_config(d, **config)
        if generation is not None:
            with open(os.path.join(d, "generation_config.json"), "w") as f:
                json.dump(generation, f)
        return d

    def prompt_with_new_token(self, at):
        """Index of a prompt whose greedy token `at` does not occur earlier in its response."""
        for i, row in enumerate(self.greedy):
            if row["response_ids"][at] not in row["response_ids"][:at]:
                return i
        raise AssertionError(f"no prompt has a fresh greedy token at step {at}")

    def unused_token(self):
        """A token that no greedy response contains."""
        used = {t for row in self.greedy for t in row["response_ids"]}
        return next(t for t in range(self.cfg["vocab_size"] - 1, -1, -1) if t not in used)


def expect_cut(chk, what, row, full, cut, reason):
    """row must be full's first `cut` tokens (and their log-probs) with the given finish reason."""
    chk.ok(row["response_ids"] == full["response_ids"][:cut] and row["logprobs"] == full["logprobs"][:cut]
           and row["finish_reason"] == reason,
           f"{what}: got {row['response_ids']} ({row['finish_reason']}), want "
           f"{full['response_ids'][:cut]} ({reason}); EOS-free run: {full['response_ids']}")


def greedy_one(s, model, i, **flags):
    """Greedy generate of prompt i alone; its row or None."""
    inp = rollout.write_prompts(os.path.join(s.tmp, f"one{i}.jsonl"), [s.prompts[i]])
    rows = rollout.generate(s.chk, s.or1, model, inp, 1, temperature=0,
                           **{"max-new-tokens": NEW, **flags})
    return rows[0] if rows else None


def check_greedy_stops(s):
    """EOS from each source and the --stop list cut the greedy response where they should."""
    i = s.prompt_with_new_token(2)
    g = s.greedy[i]
    eos, other = g["response_ids"][2], s.unused_token()
    cases = [("config.json eos_token_id int", dict(config={"eos_token_id": eos})),
             ("config.json eos_token_id list", dict(config={"eos_token_id": [other, eos]})),
             ("generation_config.json", dict(config={"eos_token_id": None},
                                             generation={"eos_token_id": eos})),
             ("generation_config.json list + config.json", dict(config={"eos_token_id": other},
                                                                generation={"eos_token_id": [eos]}))]
    for what, kw in cases:
        row = greedy_one(s, s.model(**kw), i)
        if row:
            expect_cut(s.chk, f"{what} = {eos} (prompt {i})", row, g, 3, "stop")
    unused = s.model(config={"eos_token_id": other})
    row = greedy_one(s, unused, i)
    if row:
        expect_cut(s.chk, f"EOS {other} never emitted", row, g, NEW, "length")
    j = s.prompt_with_new_token(3)
    row = greedy_one(s, s.src, j, stop=f"{other},{s.greedy[j]['response_ids'][3]}")
    if row:
        expect_cut(s.chk, f"--stop {other},{s.greedy[j]['response_ids'][3]} (prompt {j})", row,
                   s.greedy[j], 4, "stop")
    first = s.greedy[0]["response_ids"][0]
    row = greedy_one(s, s.model(config={"eos_token_id": first}), 0)
    if row:
        expect_cut(s.chk, f"EOS {first} as the first token", row, s.greedy[0], 1, "stop")
    row = greedy_one(s, s.model(config={"eos_token_id": eos}), i, **{"max-new-tokens": 3})
    if row:
        expect_cut(s.chk, f"EOS {eos} as the last allowed token (max-new-tokens 3)", row, g, 3, "stop")
    row = greedy_one(s, s.src, i, **{"max-new-tokens": 4})
    if row:
        expect_cut(s.chk, "max-new-tokens 4, no stop token", row, g, 4, "length")


def check_sampled_stops(s):
    """Sampled responses with an EOS and a stop id are the EOS-free ones cut at the first stop."""
    flags = {"n": 4, "seed": 5, "temperature": 1.0, "max-new-tokens": 16}
    prompts = s.prompts + [s.prompts[1] + [s.greedy[0]["response_ids"][0]]]
    inp = rollout.write_prompts(os.path.join(s.tmp, "sampled.jsonl"), prompts)
    full = rollout.generate(s.chk, s.or1, s.src, inp, len(prompts), **flags)
    if full is None:
        return
    counts = {}
    for row in full:
        for t in set(row["response_ids"]):
            counts[t] = counts.get(t, 0) + 1
    ranked = sorted(counts, key=lambda t: (-counts[t], t))
    eos = s.greedy[0]["response_ids"][0]
    stop = next(t for t in ranked[2:] if t != eos)
    model = s.model(config={"eos_token_id": eos})
    rows = rollout.generate(s.chk, s.or1, model, inp, len(prompts), stop=stop, **{"max-slots": 3}, **flags)
    if rows is None:
        return
    stopped = 0
    for row, f in zip(rows, full):
        ids = f["response_ids"]
        cut = next((k + 1 for k, t in enumerate(ids) if t in (eos, stop)), None)
        stopped += cut is not None
        expect_cut(s.chk, f"sampled, EOS {eos}, --stop {stop}, prompt {row['index']} sample {row['sample']}",
                   row, f, cut or len(ids), "stop" if cut else "length")
    s.chk.ok(4 <= stopped <= len(rows) - 4,
             f"sampled: {stopped} of {len(rows)} samples stopped; want both kinds")


def main():
    or1 = sys.argv[1]
    chk = Checker("rollout stops")
    with tempfile.TemporaryDirectory() as tmp:
        s = Setup(chk, or1, tmp)
        if s.greedy is not None:
            chk.ok(all(r["finish_reason"] == "length" and len(r["response_ids"]) == NEW for r in s.greedy),
                   "EOS-free greedy responses must all be 'length' with max-new-tokens tokens")
            check_greedy_stops(s)
            check_sampled_stops(s)
    chk.finish()


if __name__ == "__main__":
    main()
