"""GGUF files that are not a model or1 can run, each refused with a message naming the key or the
tensor and a non-zero exit: a tiny Llama (or1 init, written by or1 convert) rewritten by gguf-py
with one thing wrong: an unknown architecture, tokenizer model or pre-tokenizer, a missing
required key, a missing, misshapen or unused tensor, a feature or1 does not implement, a token id
out of range, a truncated file. The unchanged file must load (the control).

usage: test_gguf_errors.py OR1 SCRATCH
"""
import json
import os
import sys

import gguf
import numpy as np

from or1test import files, proc
from or1test.check import Checker

CONFIG = {"model_type": "llama", "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 300, "max_position_embeddings": 64,
          "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": True, "hidden_act": "silu"}


def byte_tokenizer(folder):
    """A byte-level tokenizer.json of the 256 byte tokens, 40 merges and 4 special tokens, with a
    SmolLM-style pre-tokenizer and a ChatML template."""
    alphabet = [chr(c) for c in range(33, 127)] + [chr(c) for c in range(161, 173)] + [chr(c) for c in range(174, 256)]
    alphabet += [chr(256 + i) for i in range(256 - len(alphabet))]
    vocab = {t: i for i, t in enumerate(alphabet)}
    merges = []
    for a, b in [("t", "h"), ("th", "e"), ("a", "n"), ("i", "n"), ("e", "r")] * 8:
        if a + b not in vocab:
            vocab[a + b] = len(vocab)
            merges.append(f"{a} {b}")
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<pad>"]
    added = [{"id": len(vocab) + i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, s in enumerate(specials)]
    tok = {"model": {"type": "BPE", "vocab": vocab, "merges": merges}, "added_tokens": added, "normalizer": None,
           "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
               {"type": "Digits", "individual_digits": True},
               {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]},
           "post_processor": None, "decoder": {"type": "ByteLevel"}}
    json.dump(tok, open(os.path.join(folder, "tokenizer.json"), "w"))
    json.dump({"bos_token": "<|im_start|>", "eos_token": "<|im_end|>",
               "chat_template": "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
                                "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"},
              open(os.path.join(folder, "tokenizer_config.json"), "w"))
    return len(vocab) + len(specials)


def base_file(or1, tmp):
    """The control: a random tiny Llama with the byte tokenizer, as or1 convert writes it."""
    folder = files.fresh(os.path.join(tmp, "m"))
    CONFIG["vocab_size"] = byte_tokenizer(folder)
    json.dump(CONFIG, open(os.path.join(folder, "config.json"), "w"))
    init = os.path.join(tmp, "init")
    proc.run([or1, "init", "--config", os.path.join(folder, "config.json"), "--out", init, "--seed", "1"])
    os.replace(os.path.join(init, "model.safetensors"), os.path.join(folder, "model.safetensors"))
    path = os.path.join(tmp, "base.gguf")
    proc.run([or1, "convert", "--model", folder, "--out", path])
    return path


def rewrite(src, dst, keys=None, drop_keys=(), tensors=None, drop_tensors=(), extra_tensors=None):
    """A copy of src with metadata keys replaced (name -> (value, type)) or dropped, tensors replaced
    (name -> array), dropped or added."""
    r = gguf.GGUFReader(src)
    keys = dict(keys or {})
    arch = keys.pop("general.architecture", (r.fields["general.architecture"].contents(), None))[0]
    w = gguf.GGUFWriter(dst, arch)
    for name, field in r.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture" or name in drop_keys or name in keys:
            continue
        if field.types[0] == gguf.GGUFValueType.ARRAY:
            w.add_array(name, field.contents())
        else:
            w.add_key_value(name, field.contents(), field.types[0])
    for name, (value, vtype) in keys.items():
        w.add_key_value(name, value, vtype)
    for t in r.tensors:
        if t.name in drop_tensors:
            continue
        x = (tensors or {}).get(t.name)
        if x is None:
            x = np.array(t.data).reshape([int(d) for d in reversed(t.shape)])
        w.add_tensor(t.name, x.astype(np.float32))
    for name, x in (extra_tensors or {}).items():
        w.add_tensor(name, x.astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return dst


def refused(chk, or1, path, want, what, tokenizer=False):
    """or1 generate (or tokenize) on path exits non-zero with want and the file's name in stderr."""
    inp = os.path.join(os.path.dirname(path), "in.jsonl")
    files.write_jsonl(inp, [{"prompt_ids": [1, 2, 3]}] if not tokenizer else [{"text": "the 12 cats"}])
    cmd = ["generate", "--model", path, "--input", inp, "--max-new-tokens", "2"] if not tokenizer else \
        ["tokenize", "--tokenizer", path, "--input", inp]
    r = proc.run_or1(or1, cmd)
    chk.ok(r.returncode != 0 and want in r.stderr and os.path.basename(path) in r.stderr
           and not proc.sanitizer_report(r.stderr), f"{what}: exit {r.returncode}, stderr {r.stderr.strip()[-300:]!r}")


def main():
    or1, scratch = sys.argv[1:3]
    chk = Checker("real_gguf_errors")
    tmp = files.fresh(scratch)
    base = base_file(or1, tmp)
    inp = files.write_jsonl(os.path.join(tmp, "ok.jsonl"), [{"prompt_ids": [1, 2, 3]}])
    r = proc.run_or1(or1, ["generate", "--model", base, "--input", inp, "--max-new-tokens", "2"])
    chk.ok(r.returncode == 0, f"the control file does not load: {r.stderr[-500:]}")
    S, U32 = gguf.GGUFValueType.STRING, gguf.GGUFValueType.UINT32
    cases = [
        ("arch", dict(keys={"general.architecture": ("gptneox", S)}), '"gptneox" is not supported', False),
        ("no_layers", dict(drop_keys=("llama.block_count",)), '"llama.block_count" is missing', False),
        ("experts", dict(keys={"llama.expert_count": (8, U32)}), '"llama.expert_count"', False),
        ("partial_rope", dict(keys={"llama.rope.dimension_count": (4, U32)}), "partial RoPE", False),
        ("missing_tensor", dict(drop_tensors=("blk.1.ffn_up.weight",)), '"blk.1.ffn_up.weight" is missing', False),
        ("misshapen", dict(tensors={"blk.0.attn_k.weight": np.zeros((8, 32))}), '"blk.0.attn_k.weight" has shape', False),
        ("unused", dict(extra_tensors={"blk.0.attn_q_norm.weight": np.ones(8)}), '"blk.0.attn_q_norm.weight" is not used', False),
        ("rope_freqs", dict(extra_tensors={"rope_freqs.weight": np.ones(4)}), '"rope_freqs.weight"', False),
        ("pre", dict(keys={"tokenizer.ggml.pre": ("falcon", S)}), 'tokenizer.ggml.pre "falcon" is not supported', True),
        ("no_pre", dict(drop_keys=("tokenizer.ggml.pre",)), '"tokenizer.ggml.pre" is missing', True),
        ("spm", dict(keys={"tokenizer.ggml.model": ("llama", S)}), 'tokenizer.ggml.model "llama" is not supported', True),
        ("eos_range", dict(keys={"tokenizer.ggml.eos_token_id": (99999, U32)}), '"tokenizer.ggml.eos_token_id" is 99999', True),
        ("no_merges", dict(drop_keys=("tokenizer.ggml.merges",)), '"tokenizer.ggml.merges" is missing', True),
    ]
    for name, change, want, tok in cases:
        refused(chk, or1, rewrite(base, os.path.join(tmp, f"{name}.gguf"), **change), want, name, tok)
    data = open(base, "rb").read()
    cut = os.path.join(tmp, "truncated.gguf")
    open(cut, "wb").write(data[: len(data) - 100])
    refused(chk, or1, cut, "truncated.gguf", "truncated")
    chk.finish()


if __name__ == "__main__":
    main()
