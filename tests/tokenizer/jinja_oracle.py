"""The Jinja interpreter against Python's jinja2 set up as transformers 5.25 sets it up: every
template of tests/tokenizer/templates rendered over many conversations (system prompt or not,
multi-turn, tools with nested schemas and non-ASCII text, enable_thinking unset/true/false,
reasoning_content, Jinja syntax inside content, empty content, consecutive tool messages,
tool calls with dict and string arguments, conversations the template refuses) by both, through
`or1 render-template`; texts must be equal byte for byte, and a refusal on one side must be a
refusal on the other.

usage: jinja_oracle.py OR1 TEMPLATES_DIR"""
import datetime
import json
import os
import subprocess
import sys
import tempfile

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

from or1test.check import Checker

NOW = 1721995200  # 26 Jul 2024 12:00 UTC: strftime_now's pinned clock on both sides

TOKENS = {
    "qwen2.5-instruct": {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
    "qwen3": {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
    "deepseek-r1-distill-qwen": {"bos_token": "<｜begin▁of▁sentence｜>", "eos_token": "<｜end▁of▁sentence｜>"},
    "deepseek-v3": {"bos_token": "<｜begin▁of▁sentence｜>", "eos_token": "<｜end▁of▁sentence｜>"},
    "llama-3.1-instruct": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
    "llama-3.2-instruct": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
    "llama-3-base": {"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>"},
    "smollm2-instruct": {"bos_token": "<|im_start|>", "eos_token": "<|im_end|>", "unk_token": "<|endoftext|>"},
}


class Namespace(jinja2.utils.Namespace):
    """transformers' namespace: attribute names starting with _ refused."""

    def __setitem__(self, key, value):
        if key.startswith("_"):
            raise jinja2.exceptions.SecurityError("namespace attributes may not start with _")
        super().__setitem__(key, value)


def environment():
    """jinja2 as transformers 5.25 configures it for chat templates."""
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.datetime.fromtimestamp(NOW).strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    env.globals["namespace"] = Namespace
    return env


WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Météo actuelle — température en °C 🌡",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "名前 of the city"},
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
        "units": {"type": "string", "enum": ["metric", "imperial"]},
        "items": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "number", "default": 0.5}}}},
    }, "required": ["city"]}}}
CALC = {"type": "function", "function": {
    "name": "calc", "description": "Evaluates \"an expression\" with \\ and \t tabs",
    "parameters": {"type": "object", "properties": {"expr": {"type": "string"}}, "required": ["expr"]}}}


def call(name, args):
    """A tool call as the OpenAI / transformers message shape holds it."""
    return {"type": "function", "function": {"name": name, "arguments": args}}


def conversations():
    """(messages, extra variables) pairs covering what the templates branch on."""
    u = {"role": "user", "content": "What is 2+2?"}
    s = {"role": "system", "content": "You are terse."}
    a = {"role": "assistant", "content": "<think>\nadd them\n</think>\n\n4"}
    out = [
        ([u], {}),
        ([u], {"add_generation_prompt": False}),
        ([s, u], {}),
        ([s, u, a, {"role": "user", "content": "and 3+3?"}], {}),
        ([u, a, {"role": "user", "content": "and 3+3?"}], {"enable_thinking": False}),
        ([u], {"enable_thinking": True}),
        ([u], {"enable_thinking": False}),
        ([{"role": "user", "content": "  padded \n\n"}, {"role": "assistant", "content": ""}], {}),
        ([{"role": "user", "content": "{{ 7*7 }} {% if x %}raw{% endif %} {# c #} 中文 😀 \u2028 é"}], {}),
        ([{"role": "system", "content": ""}, {"role": "user", "content": ""}], {}),
        ([u, {"role": "assistant", "content": "4", "reasoning_content": "2 plus 2"}, {"role": "user", "content": "ok"}], {}),
        ([u, {"role": "assistant", "content": "4", "reasoning_content": "\nthink\n"}], {"add_generation_prompt": False}),
        ([u, {"role": "assistant", "content": "<think>a</think>b</think>c"}], {"add_generation_prompt": False}),
        ([u, {"role": "assistant", "content": "4"}, {"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}], {}),
    ]
    tools = [WEATHER, CALC]
    tc = {"role": "assistant", "content": "", "tool_calls": [call("get_weather", {"city": "Zürich", "days": 3})]}
    tc_str = {"role": "assistant", "content": "calling", "tool_calls": [call("calc", "{\"expr\": \"1+1\"}")]}
    t1 = {"role": "tool", "content": "{\"temp\": 21.5}"}
    t2 = {"role": "tool", "content": "sunny"}
    out += [
        ([u], {"tools": [WEATHER]}),
        ([s, u], {"tools": tools}),
        ([u, tc, t1, t2, {"role": "assistant", "content": "Warm."}], {"tools": tools}),
        ([u, tc, t1], {"tools": tools, "enable_thinking": False}),
        ([u, tc_str, {"role": "tool", "content": "2"}], {"tools": [CALC]}),
        ([s, u, tc, t1], {"tools": tools, "tools_in_user_message": False}),
        ([u, tc, {"role": "tool", "content": {"temp": 21.5, "sky": ["clear", None, True]}}], {"tools": [WEATHER]}),
        ([s, u], {"builtin_tools": ["brave_search", "code_interpreter"], "date_string": "01 Jan 2025"}),
        ([u, {"role": "assistant", "content": "", "tool_calls": [call("brave_search", {"query": "q"})]}],
         {"builtin_tools": ["brave_search"]}),
        ([u, {"role": "assistant", "content": None, "tool_calls": [call("calc", "{}")]}], {"tools": [CALC]}),
        # refused by the Llama 3.x templates: two calls at once; tools without a user message
        ([u, {"role": "assistant", "content": "", "tool_calls": [call("calc", "{}"), call("calc", "{}")]}], {"tools": [CALC]}),
        ([], {"tools": [CALC]}),
        ([u, {"role": "assistant"}], {}),
    ]
    return out


def variables(name, messages, extra):
    """The render variables as apply_chat_template builds them (None-valued message keys
    dropped, as transformers 5.25 does)."""
    msgs = [{k: v for k, v in m.items() if v is not None} for m in messages]
    v = {"messages": msgs, "tools": None, "documents": None, "add_generation_prompt": True}
    v.update(TOKENS[name])
    v.update(extra)
    return v


def reference(env, source, v):
    """jinja2's text, or None when it raises."""
    try:
        return env.from_string(source).render(**v)
    except jinja2.exceptions.TemplateError:
        return None
    except (TypeError, ValueError, KeyError, IndexError):
        return None


def main():
    or1, folder = sys.argv[1:3]
    env = environment()
    c = Checker("jinja oracle")
    convs = conversations()
    names = sorted(f[:-6] for f in os.listdir(folder) if f.endswith(".jinja"))
    c.ok(set(names) == set(TOKENS), f"every template has its tokens: {names}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            path = os.path.join(folder, name + ".jinja")
            with open(path, encoding="utf-8") as f:
                source = f.read()
            rows = [variables(name, m, x) for m, x in convs]
            inp = os.path.join(tmp, name + ".jsonl")
            with open(inp, "w", encoding="utf-8") as f:
                f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
            p = subprocess.run([or1, "render-template", "--template", path, "--input", inp], capture_output=True,
                               env=dict(os.environ, OR1_JINJA_NOW=str(NOW), TZ="UTC"))
            got = [json.loads(line) for line in p.stdout.decode().split("\n") if line]
            c.ok(len(got) == len(rows), f"{name}: one output row per input row: {p.stderr.decode()[-500:]}")
            refused = 0
            for i, (r, g) in enumerate(zip(rows, got)):
                want = reference(env, source, r)
                refused += want is None
                if want is None:
                    c.ok("error" in g, f"{name} conversation {i}: refused by jinja2, rendered by or1: {g.get('text', '')[:300]!r}")
                else:
                    got_text = g.get("text", g.get("error"))
                    c.ok(got_text == want, f"{name} conversation {i}:\n  or1:    {got_text!r}\n  jinja2: {want!r}")
            c.ok((p.returncode == 1) == (refused > 0), f"{name}: exit status {p.returncode} with {refused} refused rows")
    c.finish()


if __name__ == "__main__":
    os.environ["TZ"] = "UTC"
    main()
