#!/usr/bin/env python3
"""Writes the demo's tokenizer: tokenizer.json (byte-level BPE) and tokenizer_config.json.

Usage: make_tokenizer.py OUT_DIR

The vocabulary is the 256 byte tokens, BPE merges that spell the words of the "plain" chat
template ("User", "Assistant") as one token each, and four added tokens: <|endoftext|> (special,
the EOS) and <think>, </think>, \\boxed{ (plain added tokens, matched anywhere in text, so a
trace's markers are one token each). Digits are deliberately not merged: every number is
written one digit per token, so the model can learn digit-level rules of arithmetic that hold
for every length instead of a table of multi-digit tokens. The pre-tokenizer splits digits
one by one and punctuation from letters, as Qwen2's does.
"""
import json
import os
import sys

# Words of the chat template that become single tokens through merges.
WORDS = ["User", "Assistant"]
# Added tokens: (content, special).
ADDED = [("<|endoftext|>", True), ("<think>", False), ("</think>", False), ("\\boxed{", False)]
# Qwen2's pre-tokenizer pattern: letters, single digits, punctuation runs, newlines, spaces.
PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
           r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def byte_alphabet():
    """The GPT-2 byte-level alphabet: byte value -> the printable character standing for it."""
    keep = list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(0x100 + extra)
            extra += 1
    return table


def build():
    """The tokenizer.json and tokenizer_config.json objects."""
    alpha = byte_alphabet()
    vocab = {alpha[b]: b for b in range(256)}
    merges = []
    for word in WORDS:
        left = alpha[ord(word[0])]
        for ch in word[1:]:
            right = alpha[ord(ch)]
            merges.append([left, right])
            left += right
            if left not in vocab:
                vocab[left] = len(vocab)
    added = []
    for content, special in ADDED:
        added.append({"id": len(vocab) + len(added), "content": content, "single_word": False,
                      "lstrip": False, "rstrip": False, "normalized": not special, "special": special})
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": PATTERN}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": False, "vocab": vocab, "merges": merges},
    }
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": "<|endoftext|>",
        "eos_token": "<|endoftext|>",
        "pad_token": "<|endoftext|>",
        "add_bos_token": False,
        "model_max_length": 512,
        "clean_up_tokenization_spaces": False,
    }
    return tokenizer, config


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_tokenizer.py OUT_DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    tokenizer, config = build()
    for name, obj in (("tokenizer.json", tokenizer), ("tokenizer_config.json", config)):
        tmp = os.path.join(out, name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(obj, f, ensure_ascii=False, indent=1)
            f.write("\n")
        os.replace(tmp, os.path.join(out, name))
    n = len(tokenizer["model"]["vocab"]) + len(tokenizer["added_tokens"])
    print(f"make_tokenizer: {n} tokens ({len(tokenizer['model']['merges'])} merges) in {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
