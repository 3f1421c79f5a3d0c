"""The tokenizer tests' reference: Hugging Face's own `tokenizers` (the Rust library, pinned in
scripts/python-test-requirements.txt and run from the build's virtual environment) on the real
tokenizer files of data/tokenizers, and chat templates rendered by Jinja2 the way transformers
renders them. The tokenizer tests and bench/tokenizer.sh share it; it needs no numpy or torch.

  unpack(data_dir, dest)   the families' folders (tokenizer.json, tokenizer_config.json) under dest,
                           and the R1-Distill-Qwen layout built from Qwen2.5's files
  load(folder)             a tokenizers.Tokenizer and the folder's tokenizer_config.json
  render_chat(cfg, msgs)   the chat text of a conversation, as transformers' apply_chat_template
  texts(corpus)            the test corpus and random texts
  data_texts(data_dir)     every text of every row of data/*.jsonl (prompts and ground truths)
"""
import functools
import json
import lzma
import os
import random

# The folders of data/tokenizers (README.md there gives their sources and licences).
FAMILIES = ("qwen2_5", "qwen3", "llama3", "gpt2", "deepseek_v3")
# Every layout the tests compare: the families and the R1-Distill-Qwen one built from Qwen2.5.
LAYOUTS = FAMILIES + ("r1_distill",)

R1_BOS = "<｜begin▁of▁sentence｜>"
R1_EOS = "<｜end▁of▁sentence｜>"
# DeepSeek-R1-Distill-Qwen's added tokens from id 151643 on, with their `special` flag.
R1_ADDED = [
    (R1_EOS, True), ("<｜User｜>", False), ("<｜Assistant｜>", False), (R1_BOS, True),
    ("<|EOT|>", False), ("<think>", False), ("</think>", False), ("<|quad_start|>", True),
    ("<|quad_end|>", True), ("<|vision_start|>", True), ("<|vision_end|>", True),
    ("<|vision_pad|>", True), ("<|image_pad|>", True), ("<|video_pad|>", True),
    ("<tool_call>", False), ("</tool_call>", False), ("<|fim_prefix|>", False),
    ("<|fim_middle|>", False), ("<|fim_suffix|>", False), ("<|fim_pad|>", False),
    ("<|repo_name|>", False), ("<|file_sep|>", False),
]
# R1's chat template is DeepSeek-V3's with three changes, each (V3's text, R1's text): only the
# last system message is kept, an assistant turn loses what precedes its last </think>, and the
# generation prompt opens the reasoning.
R1_TEMPLATE_CHANGES = [
    ("{%- if ns.is_first_sp %}{% set ns.system_prompt = ns.system_prompt + message['content'] %}"
     "{% set ns.is_first_sp = false %}{%- else %}{% set ns.system_prompt = ns.system_prompt + "
     "'\n\n' + message['content'] %}{%- endif %}",
     "{% set ns.system_prompt = message['content'] %}"),
    ("{{'<｜Assistant｜>' + message['content'] + '<｜end▁of▁sentence｜>'}}",
     "{% set content = message['content'] %}{% if '</think>' in content %}"
     "{% set content = content.split('</think>')[-1] %}{% endif %}"
     "{{'<｜Assistant｜>' + content + '<｜end▁of▁sentence｜>'}}"),
    ("{{'<｜Assistant｜>'}}{% endif %}", "{{'<｜Assistant｜><think>\\n'}}{% endif %}"),
]


def write_atomic(path, data):
    """Writes bytes to path through a temporary file renamed over it."""
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def unpack(data_dir, dest):
    """Writes dest/<layout>/{tokenizer.json,tokenizer_config.json} for every layout: the
    families decompressed from data_dir/tokenizers, then the R1-Distill-Qwen layout."""
    for fam in FAMILIES:
        src, out = os.path.join(data_dir, "tokenizers", fam), os.path.join(dest, fam)
        os.makedirs(out, exist_ok=True)
        with lzma.open(os.path.join(src, "tokenizer.json.xz")) as f:
            write_atomic(os.path.join(out, "tokenizer.json"), f.read())
        with open(os.path.join(src, "tokenizer_config.json"), "rb") as f:
            write_atomic(os.path.join(out, "tokenizer_config.json"), f.read())
    r1_distill(dest)


def r1_distill(dest):
    """The DeepSeek-R1-Distill-Qwen layout on the Qwen2.5 vocabulary and merges (as the real one
    is): its added tokens, a post-processor that prepends BOS, and R1's chat template."""
    with open(os.path.join(dest, "qwen2_5", "tokenizer.json"), encoding="utf-8") as f:
        tj = json.load(f)
    tj["added_tokens"] = [
        {"id": 151643 + i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": s} for i, (c, s) in enumerate(R1_ADDED)]
    bos = {"SpecialToken": {"id": R1_BOS, "type_id": 0}}
    tj["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [bos, {"Sequence": {"id": "A", "type_id": 0}}],
        "pair": [bos, {"Sequence": {"id": "A", "type_id": 0}},
                 {"SpecialToken": {"id": R1_BOS, "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {R1_BOS: {"id": R1_BOS, "ids": [151646], "tokens": [R1_BOS]}},
    }
    with open(os.path.join(dest, "deepseek_v3", "tokenizer_config.json"), encoding="utf-8") as f:
        template = json.load(f)["chat_template"]
    for old, new in R1_TEMPLATE_CHANGES:
        if template.count(old) != 1:
            raise ValueError(f"deepseek_v3 chat template changed: {old[:60]!r} not found once")
        template = template.replace(old, new)
    cfg = {"add_bos_token": True, "bos_token": R1_BOS, "eos_token": R1_EOS,
           "clean_up_tokenization_spaces": False, "tokenizer_class": "LlamaTokenizerFast",
           "chat_template": template}
    out = os.path.join(dest, "r1_distill")
    os.makedirs(out, exist_ok=True)
    write_atomic(os.path.join(out, "tokenizer.json"), json.dumps(tj, ensure_ascii=False).encode())
    write_atomic(os.path.join(out, "tokenizer_config.json"), json.dumps(cfg, ensure_ascii=False).encode())


def load(folder):
    """The reference tokenizer of folder and its tokenizer_config.json (a dict)."""
    from tokenizers import Tokenizer
    with open(os.path.join(folder, "tokenizer_config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    return Tokenizer.from_file(os.path.join(folder, "tokenizer.json")), cfg


def special_tokens(cfg):
    """The named special tokens of a tokenizer_config.json as strings (an AddedToken object gives
    its content), as transformers hands them to a chat template; unset ones left out."""
    out = {}
    for name in ("bos_token", "eos_token", "unk_token", "pad_token"):
        v = cfg.get(name)
        if isinstance(v, dict):
            v = v.get("content")
        if isinstance(v, str):
            out[name] = v
    return out


def jinja_env():
    """A Jinja2 environment set up as transformers sets up the one it renders chat templates in:
    sandboxed and immutable, trim_blocks and lstrip_blocks, the loop-controls extension,
    raise_exception, and a tojson that keeps non-ASCII characters and takes json.dumps' options."""
    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env


@functools.lru_cache(maxsize=8)
def compiled_template(source):
    """A chat template compiled in jinja_env, once per source text."""
    return jinja_env().from_string(source)


def render_chat(cfg, messages, add_generation_prompt=True, **kwargs):
    """The chat text of messages under cfg's chat_template, as apply_chat_template(tokenize=False)
    renders it: the special tokens, tools and documents unset, add_generation_prompt, and the
    template variables kwargs (enable_thinking) passed through as transformers passes them."""
    template = compiled_template(cfg["chat_template"])
    return template.render(messages=messages, tools=None, documents=None,
                           add_generation_prompt=add_generation_prompt, **special_tokens(cfg), **kwargs)


# Pieces the random texts are made of, chosen to stress the pre-tokenizer regexes: contractions
# in any case, Unicode spaces (U+0085 and U+FEFF among them) and digits, combining marks, line
# separators, emoji sequences, CJK, special tokens and fragments of them, byte-level spellings.
RANDOM_PIECES = [
    " ", "  ", "\t", "\n", "\r\n", "\r", "\u00a0", "\u3000", "\u2009", "\u2028", "\u0085",
    "\ufeff", "'s", "'S", "'ll", "'LL", "'re", "'d", "'", "a", "Z", "word", "Wörd", "e\u0301",
    "\u0301", "1", "42", "123456", "\u0663", "\u00bd", "\u2167", ".", "...", "!?", "$", "\\frac",
    "{", "}", "_", "-", "—", "中", "文字", "カ", "한", "\U0001F600", "\U0001F468\u200d\U0001F469",
    "\U0001F1EF\U0001F1F5", "<|im_end|>", "<|endoftext|>", "<|im_", "|>", "<think>", "</think>",
    "<｜User｜>", "<|begin_of_text|>", "▁", "Ġ", "ĉ",
]


def random_texts(n, seed=12345):
    """n texts of 1 to 40 random pieces each, from a seeded generator."""
    rng = random.Random(seed)
    return ["".join(rng.choice(RANDOM_PIECES) for _ in range(rng.randint(1, 40))) for _ in range(n)]


def texts(corpus, n_random=400):
    """The comparison corpus of hand-picked and random texts: the "text" of each row of corpus,
    then n_random texts."""
    with open(corpus, encoding="utf-8") as f:
        out = [json.loads(line)["text"] for line in f if line.strip()]
    return out + random_texts(n_random)


def row_texts(row):
    """The texts of one dataset row: each prompt message's content and the ground truth as
    written (a JSON string: a list of math answers, or a code problem's tests), and each math
    answer alone."""
    out = [m["content"] for m in row.get("prompt", [])]
    truth = row.get("reward_model", {}).get("ground_truth")
    if isinstance(truth, str):
        answers = json.loads(truth)
        out += [truth] + ([a for a in answers if isinstance(a, str)] if isinstance(answers, list) else [])
    return out


def data_texts(data_dir):
    """The texts of every row of every data_dir/*.jsonl (row_texts), each distinct text once, in
    file and row order."""
    seen = {}
    for name in sorted(os.listdir(data_dir)):
        if name.endswith(".jsonl"):
            with open(os.path.join(data_dir, name), encoding="utf-8") as f:
                for line in f:
                    if line.strip():
                        seen.update(dict.fromkeys(row_texts(json.loads(line))))
    return list(seen)
