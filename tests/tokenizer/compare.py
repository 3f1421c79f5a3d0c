"""Compares `or1 tokenize`, `detokenize` and `chat` with Hugging Face's own `tokenizers` (and
chat templates rendered by Jinja2 as transformers renders them) on a real tokenizer layout,
id for id and byte for byte. Runs under the build's virtual environment (scripts/venv.sh).

usage: compare.py OR1 LAYOUT TOKENIZERS_DIR CORPUS DATA_DIR
  LAYOUT: a folder of TOKENIZERS_DIR (or1test.hf_tokenizers.LAYOUTS), made by ref_files.py
"""
import json
import os
import subprocess
import sys

from or1test import hf_tokenizers as hf
from or1test.check import Checker

SHOWN = 12  # mismatches printed in full; the rest are counted


def run_or1(or1, args, rows):
    """Runs or1 with JSONL rows on stdin; returns its output rows."""
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    p = subprocess.run([or1, *args], input=data.encode(), capture_output=True)
    if p.returncode != 0:
        sys.exit(f"or1 {' '.join(args)} failed ({p.returncode}): {p.stderr.decode()[-2000:]}")
    return [json.loads(line) for line in p.stdout.decode().split("\n") if line]


class Compare(Checker):
    """A checker of equal values that prints the first SHOWN mismatches with where they part."""

    def same(self, what, got, want):
        """Records whether got == want; a shown mismatch gives both and the first index differing."""
        if got == want:
            self.passed += 1
            return
        self.failures.append(what)
        if len(self.failures) > SHOWN:
            return
        where = ""
        if isinstance(got, list) and isinstance(want, list):
            i = next((k for k, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            where = f"\n  first difference at index {i}"
        print(f"MISMATCH {what}\n  or1: {json.dumps(got, ensure_ascii=False)[:400]}\n"
              f"  ref: {json.dumps(want, ensure_ascii=False)[:400]}{where}", flush=True)


def conversations(texts):
    """Conversations for the chat-template check: one turn, a system prompt, an earlier
    assistant turn with reasoning, padded content, two system messages, assistant turns after
    the last user turn (with reasoning, without, with an empty one)."""
    t = lambda i: texts[i % len(texts)] or "hello"  # noqa: E731
    return [
        [{"role": "user", "content": "What is 1+1?"}],
        [{"role": "system", "content": "You are a careful mathematician."}, {"role": "user", "content": t(0)}],
        [{"role": "user", "content": t(3)}, {"role": "assistant", "content": "<think>\nfirst\n</think>\n\nIt is 2."},
         {"role": "user", "content": t(8)}],
        [{"role": "user", "content": "  padded with spaces \n"}],
        [{"role": "system", "content": "First rule."}, {"role": "system", "content": "Second rule."},
         {"role": "user", "content": t(5)}],
        [{"role": "user", "content": t(1)}, {"role": "assistant", "content": "<think>\nplan\n\n</think>\n\nAnswer: 4"}],
        [{"role": "user", "content": "Q"}, {"role": "assistant", "content": "\nno reasoning"},
         {"role": "assistant", "content": "<think>a<think>\nb\n</think>c</think>\nd"},
         {"role": "assistant", "content": "<think>\n\n</think>last"}],
        [{"role": "user", "content": "<tool_response>x</tool_response>"},
         {"role": "assistant", "content": "\n\nplain"}],
    ]


def check_encode(c, or1, folder, tok, texts):
    """or1 tokenize, without and with the post-processor's special tokens."""
    rows = [{"text": t} for t in texts]
    for add in (False, True):
        got = run_or1(or1, ["tokenize", "--tokenizer", folder] + (["--add-special"] if add else []), rows)
        for text, g, want in zip(texts, got, tok.encode_batch(texts, add_special_tokens=add)):
            c.same(f"encode add_special={add} of {json.dumps(text[:60], ensure_ascii=False)}", g["ids"], want.ids)


def check_decode(c, or1, folder, tok, texts):
    """or1 detokenize of the reference's ids, with and without special tokens, and of a row of
    every third id of the first 3,000 (tokens alone that split characters)."""
    ids = [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]
    ids.append([x for row in ids for x in row][:3000][::3])
    for skip in (False, True):
        got = run_or1(or1, ["detokenize", "--tokenizer", folder] + (["--skip-special"] if skip else []),
                      [{"ids": r} for r in ids])
        for i, (r, g) in enumerate(zip(ids, got)):
            c.same(f"decode skip_special={skip} of row {i}", g["text"], tok.decode(r, skip_special_tokens=skip))


# The template variables: (or1 chat flags, a row's chat_template_kwargs, what transformers is
# given). Thinking on, off and undefined; the flag's value for every row, and a row's own value
# over it; and the conversation closed without a generation prompt.
OFF = '{"enable_thinking": false}'
CHAT_VARIANTS = [
    ([], None, {}),
    ([], {"enable_thinking": False}, {"enable_thinking": False}),
    ([], {"enable_thinking": True}, {"enable_thinking": True}),
    (["--chat-template-kwargs", OFF], None, {"enable_thinking": False}),
    (["--chat-template-kwargs", OFF], {"enable_thinking": True}, {"enable_thinking": True}),
    (["--no-generation-prompt"], {"enable_thinking": False}, {"enable_thinking": False, "add_generation_prompt": False}),
]


def check_chat(c, or1, folder, tok, cfg, texts):
    """or1 chat against the template rendered by Jinja2, text and ids, where there is a template,
    under each of CHAT_VARIANTS."""
    if not cfg.get("chat_template"):
        return
    convs = conversations(texts)
    for flags, row_kwargs, ref_kwargs in CHAT_VARIANTS:
        extra = {} if row_kwargs is None else {"chat_template_kwargs": row_kwargs}
        got = run_or1(or1, ["chat", "--tokenizer", folder] + flags, [{"messages": m, **extra} for m in convs])
        for i, (messages, g) in enumerate(zip(convs, got)):
            want = hf.render_chat(cfg, messages, **{"add_generation_prompt": True, **ref_kwargs})
            what = f"chat {' '.join(flags)} {json.dumps(row_kwargs)} of conversation {i}"
            c.same(f"{what}: text", g["text"], want)
            c.same(f"{what}: ids", g["ids"], tok.encode(want, add_special_tokens=False).ids)


def main():
    or1, layout, tok_dir, corpus, data_dir = sys.argv[1:6]
    folder = os.path.join(tok_dir, layout)
    tok, cfg = hf.load(folder)
    texts = hf.texts(corpus, data_dir)
    c = Compare(f"tokenizer_ref_{layout}")
    check_encode(c, or1, folder, tok, texts)
    check_decode(c, or1, folder, tok, texts)
    check_chat(c, or1, folder, tok, cfg, texts)
    print(f"{layout}: {len(texts)} texts against tokenizers {__import__('tokenizers').__version__}")
    c.finish()


if __name__ == "__main__":
    main()
