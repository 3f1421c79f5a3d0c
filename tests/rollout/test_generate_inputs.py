"""What `or1 generate` takes besides prompt ids: rows of chat messages, and the model's
generation_config.json sampling settings.

usage: test_generate_inputs.py OR1 REPO

- A row {"messages": [...], "chat_template_kwargs": {...}} samples exactly what the same prompt
  gives as text after `or1 chat` renders it (same ids, log-probs and text), with the tokenizer's
  own template and with --chat-template; a row's enable_thinking and --chat-template-kwargs reach
  the template (Qwen3's, over the demo model's vocabulary, closes an empty <think> block).
- generation_config.json's temperature, top_p and top_k are taken for the flags not given, and
  said so on stderr: temperature 0 there gives the --temperature 0 output; a flag given wins.
- Refused, naming the file and the key: a generation_config.json temperature out of range, a row
  key other than messages and chat_template_kwargs, an unknown template variable, messages
  without a tokenizer.
"""
import json
import os
import shutil
import sys
import tempfile

from or1test import files, proc
from or1test.check import Checker

OR1, REPO = sys.argv[1], sys.argv[2]
MESSAGES = [{"role": "user", "content": "12+34="}]


def run(args):
    """or1 generate with args; the CompletedProcess whatever its status."""
    return proc.run_or1(OR1, ["generate", *args])


def samples(r):
    """The sample rows of a successful run's stdout."""
    return [json.loads(x) for x in r.stdout.splitlines() if x.strip()]


def model_copy(tmp, name, generation=None, template=None):
    """The demo model copied, with its generation_config.json and chat template replaced."""
    d = os.path.join(tmp, name)
    shutil.copytree(os.path.join(REPO, "models", "arith-base"), d)
    if generation is not None:
        with open(os.path.join(d, "generation_config.json"), "w") as f:
            json.dump(generation, f)
    if template is not None:
        with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
            json.dump({"chat_template": template}, f)
    return d


def rendered(model, rows, *flags):
    """The prompt texts `or1 chat` renders for rows with the model's tokenizer (generate's flags:
    its --chat-template is chat's --template)."""
    flags = ["--template" if f == "--chat-template" else f for f in flags]
    r = proc.run_or1(OR1, ["chat", "--tokenizer", model, *flags], stdin="".join(json.dumps(x) + "\n" for x in rows))
    return [json.loads(x)["text"] for x in r.stdout.splitlines()] if r.returncode == 0 else None


def check_messages(chk, tmp, model, label, rows, *flags):
    """Each row of messages samples what its `or1 chat` rendering gives as a text prompt."""
    texts = rendered(model, rows, *flags)
    if not chk.ok(texts is not None, f"{label}: or1 chat failed"):
        return None
    a, b = os.path.join(tmp, label + "_chat.jsonl"), os.path.join(tmp, label + "_text.jsonl")
    files.write_jsonl(a, rows)
    files.write_jsonl(b, [{"prompt": t} for t in texts])
    common = ["--model", model, "--n", "2", "--seed", "5", "--max-new-tokens", "12", *flags]
    ra, rb = run(["--input", a, *common]), run(["--input", b, *common])
    if chk.ok(ra.returncode == 0 and rb.returncode == 0, f"{label}: exit {ra.returncode} {rb.returncode}: "
              f"{ra.stderr[-400:]} {rb.stderr[-400:]}"):
        chk.ok(samples(ra) == samples(rb), f"{label}: messages and their rendered text sample differently")
    return texts


def check_chat_rows(chk, tmp):
    """Rows of messages under the demo template, --chat-template, and Qwen3's thinking switch."""
    plain = model_copy(tmp, "plain")
    check_messages(chk, tmp, plain, "own", [{"messages": MESSAGES}])
    check_messages(chk, tmp, plain, "chatml", [{"messages": MESSAGES}], "--chat-template", "chatml")
    with open(os.path.join(REPO, "data", "tokenizers", "qwen3", "tokenizer_config.json")) as f:
        qwen3 = model_copy(tmp, "qwen3", template=json.load(f)["chat_template"])
    rows = [{"messages": MESSAGES}, {"messages": MESSAGES, "chat_template_kwargs": {"enable_thinking": False}},
            {"messages": MESSAGES, "chat_template_kwargs": {"enable_thinking": True}}]
    texts = check_messages(chk, tmp, qwen3, "thinking", rows)
    if texts:
        closed = "<|im_start|>assistant\n<think>\n\n</think>\n\n"
        chk.ok(texts[1].endswith(closed) and not texts[0].endswith(closed) and texts[2] == texts[0],
               f"enable_thinking: {texts!r}")
    off = check_messages(chk, tmp, qwen3, "thinking_flag", rows[:1], "--chat-template-kwargs",
                         '{"enable_thinking": false}')
    chk.ok(off is not None and texts is not None and off[0] == texts[1], f"--chat-template-kwargs: {off!r}")


def check_generation_config(chk, tmp):
    """generation_config.json's settings for the flags not given; a flag given wins."""
    inp = os.path.join(tmp, "prompts.jsonl")
    files.write_jsonl(inp, [{"prompt": "12+34="}, {"prompt": "7*8="}])
    common = ["--input", inp, "--n", "2", "--seed", "3", "--max-new-tokens", "12"]
    greedy_cfg = model_copy(tmp, "greedy_cfg", {"temperature": 0.0, "top_p": 0.9, "top_k": 5})
    plain = model_copy(tmp, "plain_cfg", {})
    r = run(["--model", greedy_cfg, *common])
    want = run(["--model", plain, *common, "--temperature", "0", "--top-p", "0.9", "--top-k", "5"])
    if chk.ok(r.returncode == 0 and want.returncode == 0, f"generation_config: {r.stderr[-400:]}"):
        chk.ok(samples(r) == samples(want), "generation_config.json temperature 0 is not the greedy output")
        chk.ok("from generation_config.json: temperature 0 top_p 0.9 top_k 5" in r.stderr,
               f"not said on stderr: {r.stderr[-300:]!r}")
    r = run(["--model", greedy_cfg, *common, "--temperature", "1", "--top-p", "1", "--top-k", "0"])
    want = run(["--model", plain, *common, "--temperature", "1"])
    if chk.ok(r.returncode == 0 and want.returncode == 0, f"flags over generation_config: {r.stderr[-400:]}"):
        chk.ok(samples(r) == samples(want), "a flag given did not win over generation_config.json")
        chk.ok("from generation_config.json" not in r.stderr, f"said although every flag was given: {r.stderr!r}")


def check_refusals(chk, tmp):
    """Each bad input exits 1 or 2 with a message naming the file and the key."""
    bad_cfg = model_copy(tmp, "bad_cfg", {"temperature": -1})
    no_tok = model_copy(tmp, "no_tok")
    os.remove(os.path.join(no_tok, "tokenizer.json"))
    inp = os.path.join(tmp, "one.jsonl")
    files.write_jsonl(inp, [{"prompt": "1+1="}])
    rows = {"extra": {"messages": MESSAGES, "temperature": 0},
            "kwarg": {"messages": MESSAGES, "chat_template_kwargs": {"enable_thinkng": False}}}
    paths = {}
    for k, row in rows.items():
        paths[k] = os.path.join(tmp, k + ".jsonl")
        files.write_jsonl(paths[k], [{"prompt": "1+1="}, row])
    model = model_copy(tmp, "ok")
    cases = [("generation_config temperature", ["--model", bad_cfg, "--input", inp], ["generation_config.json", "temperature"]),
             ("unknown row key", ["--model", model, "--input", paths["extra"]], ["extra.jsonl:2", "temperature"]),
             ("unknown template variable", ["--model", model, "--input", paths["kwarg"]], ["kwarg.jsonl:2", "enable_thinkng"]),
             ("messages without a tokenizer", ["--model", no_tok, "--input", paths["extra"]], ["extra.jsonl:", "tokenizer"])]
    for what, args, needles in cases:
        r = run(args)
        chk.ok(r.returncode in (1, 2) and all(n in r.stderr for n in needles) and not proc.sanitizer_report(r.stderr),
               f"{what}: exit {r.returncode}, stderr {r.stderr[-400:]!r}, want {needles}")


def main():
    chk = Checker("generate inputs")
    with tempfile.TemporaryDirectory() as tmp:
        check_chat_rows(chk, tmp)
        check_generation_config(chk, tmp)
        check_refusals(chk, tmp)
    chk.finish()


if __name__ == "__main__":
    main()
