"""Compares `or1 tokenize`, `detokenize` and `chat` with Hugging Face's own `tokenizers` (and
chat templates rendered by Jinja2 as transformers renders them) on a real tokenizer layout,
id for id and byte for byte, on the test corpus and random texts, every text of data/*.jsonl and
the stress corpus (stress.py); and that both refuse lone surrogates and invalid UTF-8.
Runs under the build's virtual environment (scripts/venv.sh).

usage: compare.py OR1 LAYOUT TOKENIZERS_DIR CORPUS DATA_DIR [--quick] [--refused]
  LAYOUT: a folder of TOKENIZERS_DIR (or1test.hf_tokenizers.LAYOUTS), made by ref_files.py,
          which also writes the stress corpus there
  --quick: the data texts and the stress corpus in part (every QUICK_STRIDE-th text, but all
           long lines and controls), for the sanitizer build
  --refused: also the refusals (lone surrogates, invalid UTF-8), the same for every layout
"""
import json
import os
import subprocess
import sys

from or1test import hf_tokenizers as hf
from or1test.check import Checker

SHOWN = 12  # mismatches printed in full; the rest are counted
QUICK_STRIDE = 10  # --quick takes every tenth data and stress text,
QUICK_WHOLE = ("long", "controls")  # and every one of these stress kinds


def run_or1(or1, args, rows, ascii_json=False):
    """Runs or1 with JSONL rows on stdin (non-ASCII characters as \\u escapes when ascii_json,
    astral ones as surrogate pairs); returns its output rows."""
    data = "".join(json.dumps(r, ensure_ascii=ascii_json) + "\n" for r in rows)
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

    def tally(self):
        """Prints how many checks failed per set of texts (the first word of a check's name)."""
        sets = {}
        for what in self.failures:
            sets[what.split()[0]] = sets.get(what.split()[0], 0) + 1
        if sets:
            print("failed:", ", ".join(f"{k} {n}" for k, n in sets.items()))


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


def check_texts(c, or1, folder, tok, texts, label, variants=True, ascii_json=False):
    """or1 tokenize of texts against Tokenizer.encode, and or1 detokenize of the reference's ids
    against Tokenizer.decode, plus a row of every third id of the first 3,000 (tokens alone that
    split characters); with variants, also with the post-processor's special tokens
    (--add-special) and without special tokens (--skip-special)."""
    flags = (False, True) if variants else (False,)
    ref = {add: [e.ids for e in tok.encode_batch(texts, add_special_tokens=add)] for add in flags}
    rows = [{"text": t} for t in texts]
    for add in flags:
        got = run_or1(or1, ["tokenize", "--tokenizer", folder] + (["--add-special"] if add else []), rows,
                      ascii_json)
        for text, g, want in zip(texts, got, ref[add]):
            c.same(f"{label} encode add_special={add} of {json.dumps(text[:60], ensure_ascii=False)}",
                   g["ids"], want)
    ids = ref[False] + [[x for row in ref[False] for x in row][:3000][::3]]
    for skip in flags:
        got = run_or1(or1, ["detokenize", "--tokenizer", folder] + (["--skip-special"] if skip else []),
                      [{"ids": r} for r in ids])
        for i, (r, g) in enumerate(zip(ids, got)):
            c.same(f"{label} decode skip_special={skip} of row {i}", g["text"], tok.decode(r, skip_special_tokens=skip))


# Texts neither library takes, as JSONL lines: lone surrogate escapes (Python's json reads them
# into a str, which tokenizers refuses) and invalid UTF-8 (an overlong NUL, an encoded surrogate,
# a code point past U+10FFFF, a cut character, a stray byte), with what or1's error says.
REFUSED = [
    (b'{"text": "a\\ud800"}', "invalid JSON near byte 11"),
    (b'{"text": "a\\udc00b"}', "invalid JSON near byte 11"),
    (b'{"text": "a\\udc00\\ud800"}', "invalid JSON near byte 11"),
    (b'{"text": "a\\ud800\\u0000"}', "invalid JSON near byte 11"),
    (b'{"text": "a\xc0\x80"}', "encode: invalid UTF-8 at byte 1"),
    (b'{"text": "a\xed\xa0\x80"}', "encode: invalid UTF-8 at byte 1"),
    (b'{"text": "a\xf4\x90\x80\x80"}', "encode: invalid UTF-8 at byte 1"),
    (b'{"text": "a\xe4\xb8"}', "encode: invalid UTF-8 at byte 1"),
    (b'{"text": "a\xff"}', "encode: invalid UTF-8 at byte 1"),
]


def reference_refuses(tok, line):
    """True if a Python pipeline cannot encode line's text: reading the line as UTF-8 fails, or
    tok.encode refuses the str that json.loads makes of it."""
    try:
        text = json.loads(line.decode("utf-8"))["text"]
    except UnicodeDecodeError:
        return True
    try:
        tok.encode(text)
    except TypeError:
        return True
    return False


def check_refused(c, or1, folder, tok):
    """Each REFUSED line after a good one: or1 tokenize writes the good row's ids, then exits 1
    naming line 2 and the place; the reference cannot encode it either."""
    for line, why in REFUSED:
        p = subprocess.run([or1, "tokenize", "--tokenizer", folder], input=b'{"text": "ok"}\n' + line + b"\n",
                           capture_output=True)
        err = p.stderr.decode(errors="replace")
        c.ok(p.returncode == 1 and p.stdout.count(b"\n") == 1 and f"-:2: {why}" in err,
             f"or1 refuses {line!r}: rc {p.returncode}, stderr {err.strip()!r}")
        c.ok(reference_refuses(tok, line), f"tokenizers refuses {line!r}")


def stress_texts(tok_dir, quick):
    """The stress corpus (stress.py, written by ref_files.py as stress.jsonl); with quick, every
    QUICK_STRIDE-th text of it and the kinds QUICK_WHOLE whole. Prints the count per kind."""
    with open(os.path.join(tok_dir, "stress.jsonl"), encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    rows = [r for i, r in enumerate(rows) if not quick or i % QUICK_STRIDE == 0 or r["kind"] in QUICK_WHOLE]
    counts = {}
    for r in rows:
        counts[r["kind"]] = counts.get(r["kind"], 0) + 1
    print("stress corpus:", ", ".join(f"{k} {n}" for k, n in counts.items()),
          f"({sum(len(r['text'].encode()) for r in rows) / 1e6:.2f} MB)")
    return [r["text"] for r in rows]


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
    opts = sys.argv[6:]
    quick = "--quick" in opts
    folder = os.path.join(tok_dir, layout)
    tok, cfg = hf.load(folder)
    texts = hf.texts(corpus)
    data = hf.data_texts(data_dir)[::QUICK_STRIDE if quick else 1]
    stressed = stress_texts(tok_dir, quick)
    c = Compare(f"tokenizer_ref_{layout}")
    check_texts(c, or1, folder, tok, texts, "corpus")
    check_texts(c, or1, folder, tok, data, "data", variants=False)
    check_texts(c, or1, folder, tok, stressed, "stress", variants=False, ascii_json=True)
    if "--refused" in opts:
        check_refused(c, or1, folder, tok)
    check_chat(c, or1, folder, tok, cfg, texts)
    print(f"{layout}: {len(texts)} corpus, {len(data)} data and {len(stressed)} stress texts against "
          f"tokenizers {__import__('tokenizers').__version__}")
    c.tally()
    c.finish()


if __name__ == "__main__":
    main()
