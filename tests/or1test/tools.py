"""Models that call tools on cue, for the tool-rollout tests: the demo tokenizer with plain added
tokens (the call's fences, programs, answers), and one-layer models that map each token to a
fixed successor or to a uniform choice among several.

A successor model's attention and MLP weights are zero, so the final norm sees the one-hot
embedding of the last token t (times sqrt(hidden)), and lm_head row s reads it: with weight 10
on each of t's successors their logits stand about 10 sqrt(hidden) above every other token's,
so sampling picks one of them, uniformly, at any temperature near 1 and greedy decoding the
first one's row when there is one."""
import json
import os
import shutil

import torch

from or1test import ref

OPEN, CLOSE, REPLY_OPEN, REPLY_CLOSE = "```python\n", "\n```", "```output\n", "```\n"


def make_tokenizer(root, out, texts):
    """The demo tokenizer (models/arith-base) written to out with plain added tokens for the
    fences and texts; returns ({text: id} of them, with "\\n" the byte-level newline and "eos"),
    the EOS id and the vocabulary size."""
    os.makedirs(out)
    src = os.path.join(root, "models", "arith-base")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(src, name), out)
    path = os.path.join(out, "tokenizer.json")
    t = json.load(open(path))
    next_id = len(t["model"]["vocab"]) + len(t["added_tokens"])
    ids = {}
    for text in [OPEN, CLOSE, REPLY_OPEN, REPLY_CLOSE] + list(texts):
        t["added_tokens"].append({"id": next_id, "content": text, "single_word": False, "lstrip": False,
                                  "rstrip": False, "normalized": False, "special": False})
        ids[text] = next_id
        next_id += 1
    json.dump(t, open(path, "w"))
    eos = [a["id"] for a in t["added_tokens"] if a["content"] == "<|endoftext|>"][0]
    ids["\n"] = t["model"]["vocab"]["\u010a"]  # the byte-level token of a newline
    ids["eos"] = eos
    return ids, eos, next_id


def successor_model(path, vocab, eos, succ, default=()):
    """A one-layer Qwen2 (see above) whose next token after t is succ[t] (an id, or a list of
    ids drawn uniformly), after any other token one of `default` (none: no preference)."""
    hidden = (vocab + 7) // 8 * 8
    cfg = ref.make_config("qwen2", hidden=hidden, inter=8, layers=1, heads=4, kv_heads=2, vocab=vocab)
    cfg["eos_token_id"] = eos
    params = {}
    for name, shape in ref.param_shapes(cfg).items():
        params[name] = torch.ones(shape) if name.endswith("norm.weight") else torch.zeros(shape)
    params["model.embed_tokens.weight"][torch.arange(vocab), torch.arange(vocab)] = 1.0
    head = params["lm_head.weight"]
    for t in range(vocab):
        nxt = succ.get(t, default)
        for s in ([nxt] if isinstance(nxt, int) else nxt):
            head[s, t] = 10.0
    ref.save_checkpoint(path, cfg, params)
