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


# Small templates over VARS for the semantics real templates lean on (reference §3.3): each is
# rendered by both, and must give the same text or fail on both sides.
VARS = {"s": "Hello, World", "n": 7, "f": 2.5, "big": 1e20, "l": [1, "a", None, True, 2.5], "e": [],
        "d": {"b": 1, "a": [1, 2], "items": "key", "é": "ü"}, "none": None, "t": True, "u8": "中文😀é",
        "ws": " \t a b \n c  ", "msgs": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]}
SNIPPETS = [
    "{{ s }}|{{ n }}|{{ f }}|{{ big }}|{{ l }}|{{ d }}|{{ none }}|{{ t }}|{{ undefined_name }}|",
    "{{ 1.0 }} {{ 0.1 + 0.2 }} {{ 1e16 }} {{ 1e15 }} {{ 0.0001 }} {{ 0.00001 }} {{ -0.0 }} {{ 3 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 7.5 // 2 }}",
    "{{ 'a' ~ 1 ~ none ~ [1] ~ undefined_name }}",
    "{{ 'a' + 1 }}", "{{ undefined_name + 1 }}", "{{ undefined_name.attr }}", "{{ 1 < 'a' }}",
    "{{ d['items'] }}", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}",
    "{% for k, v in d | items %}{{ k }}={{ v }};{% endfor %}", "{{ d.missing is defined }} {{ d.missing }}",
    "{{ d | tojson }} {{ l | tojson }} {{ d | tojson(indent=2) }} {{ u8 | tojson }} {{ 'a\"b\\c\n\x01' | tojson }}",
    "{{ d | tojson(sort_keys=true) }} {{ f | tojson }} {{ big | tojson }} {{ e | tojson(indent=4) }} {{ {} | tojson(indent=4) }}",
    "{% set x = 1 %}{% for i in range(3) %}{% set x = x + i %}{{ x }}{% endfor %}{{ x }}",
    "{% set ns = namespace(x=1) %}{% for i in range(3) %}{% set ns.x = ns.x + i %}{% endfor %}{{ ns.x }}",
    "{% for m in msgs %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }}{{ loop.revindex0 }}|{% endfor %}",
    "{% for i in [1, 2] %}{% for j in [3] %}{{ loop.index }}{% endfor %}{{ loop.index }}{% endfor %}",
    "{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i > 4 %}{% break %}{% endif %}{{ i }}{% endfor %}",
    "{% for i in e %}x{% else %}empty{% endfor %}{% for c in 'ab' %}{{ c }}{% endfor %}{% for k in d %}{{ k }}{% endfor %}",
    "{% for i in range(5) if i is odd %}{{ i }}{{ loop.length }}{% endfor %}",
    "{{ s[0] }}{{ s[-1] }}{{ s[1:3] }}{{ s[::-1] }}{{ s[::2] }}{{ l[1:] }}{{ l[-2:] }}{{ l[::-1] }}{{ u8[1] }}{{ u8[::-1] }}{{ l[10] }}",
    "{{ s | length }} {{ u8 | length }} {{ l | length }} {{ d | length }} {{ undefined_name | length }} {{ l | count }}",
    "{{ ws | trim }}|{{ ws.split() }}|{{ ws.strip() }}|{{ ws.lstrip() }}|{{ ws.rstrip() }}|{{ 'a,b,,c'.split(',') }}|{{ 'xxaxx'.strip('x') }}",
    "{{ 'a b c'.split(' ', 1) }} {{ '  a  b '.split(none, 1) }} {{ s.startswith('He') }} {{ s.endswith(('x', 'ld')) }}",
    "{{ s.upper() }} {{ s.lower() }} {{ 'hello wORLD-x'.title() }} {{ 'hELLO'.capitalize() }} {{ s.replace('l', 'L') }} {{ s.replace('l', 'L', 1) }}",
    "{{ s | upper }} {{ s | lower }} {{ s | replace('o', '0') }} {{ l | first }} {{ l | last }} {{ e | first }} {{ s | first }}",
    "{{ l | join(', ') }} {{ msgs | map(attribute='role') | join('/') }} {{ msgs | selectattr('role', 'equalto', 'user') | list }}",
    "{{ msgs | rejectattr('role', 'equalto', 'user') | map(attribute='content') | list }} {{ [1, 2, 3, 4] | select('odd') | list }} {{ [1, 2, 3] | reject('equalto', 2) | list }}",
    "{{ ['a', 'A', 'b'] | unique | list }} {{ undefined_name | default('dflt') }} {{ '' | default('dflt', true) }} {{ none | default('x') }}",
    "{{ l | string }} {{ n | string }} {{ 'x' | list }} {{ d | list }} {{ [3, 1] | reverse | list }} {{ 'ab' | reverse }}",
    "{{ '42' | int }} {{ 'x' | int }} {{ 2.7 | int }} {{ '2.5' | float }} {{ -3 | abs }} {{ n | float }}",
    "{{ none is none }} {{ undefined_name is not none }} {{ undefined_name is defined }} {{ s is string }} {{ d is mapping }} {{ s is iterable }} {{ 0 is false }} {{ false is false }}",
    "{{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ n is number }} {{ f is float }} {{ t is boolean }} {{ l is sequence }} {{ 'ab' is lower }}",
    "{{ 'a' in 'cat' }} {{ 'b' in d }} {{ 1 in l }} {{ 'z' not in s }} {{ 'x' in undefined_name }} {{ 1 < 2 < 3 }} {{ 1 < 3 < 2 }}",
    "{{ not t | string == 'True' }} {{ n | string + 'x' }} {{ msgs | length - 1 }} {{ not l | length == 1 }} {{ not none is none }}",
    "{{ 'yes' if t else 'no' }} {{ 'yes' if none }} {{ t and 'a' or 'b' }} {{ none or 'fallback' }} {{ 0 and 1 }}",
    "{% macro m(a, b=2) %}[{{ a }}{{ b }}{{ n }}]{% endmacro %}{{ m(1) }}{{ m(1, 3) }}{{ m(b=5, a=4) }}",
    "{% set x %}block {{ n }}{% endset %}{{ x }}|{% set a, b = [1, 2] %}{{ a }}{{ b }}",
    "{{ (1, 2) }} {{ (1,) }} {{ [(1, 'a')] }} {{ {'k': (1, 2)} }} {{ dict(a=1) }} {{ range(3) | list }} {{ range(1, 10, 3) | list }}",
    "{{ \"quote's\" }} {{ 'it\\'s' }} {{ ['it\\'s', 'a\"b', \"both'\\\"\"] }} {{ ['\\n\\t\\x07\\u2028é'] }}",
    "{{ d.get('a') }} {{ d.get('zz', 'dflt') }} {{ d.keys() | list }} {{ d.values() | list }}",
    "  {% if t %}\n    x\n  {% endif %}\n  {{ n }}  \n{# comment #}\n  y {%- if t %} z {% endif -%}  \n w",
    "a  {%- if t -%}  b  {%- endif -%}  c {{- n -}} d {#- c -#} e\n",
    "{%+ if t %}x{% endif +%}\ny\n{% if t %}\n",
    "x\n  {# c #}\n  y\n\t{#- d -#}\n z {{ 1 }}  {% if t %}a{% endif %}\n  {%- if t %}b{% endif %}",
    "a\n\n{%- if t -%}\n\n b{%+ if t %}c{% endif %}\n\t{% for i in [1, 2] %}\n\t{{ i }}\n\t{% endfor %}\n",
    "{% if t %}\r\nx\r\n{% endif %}\r\ny\rz\n\n", "{{ 'a' }}\n", "  {% if t %}  x  {% endif %}  \n  ",
    "{% if t %}   \n{% endif %}{{ 'é\\u00e9\\x41\\101\\N' }}", "{%- if t -%}\n{%- endif -%}{{- '  ' -}}  {#-x-#}",
    "{{ raise_exception('custom failure') }}", "{% for x in 5 %}{% endfor %}", "{{ l.append(1) }}",
    "{% set ns = namespace() %}{% set ns._x = 1 %}", "{{ strftime_now('%d %b %Y') }}",
    "{{ messages }}", "{{ x | nosuchfilter }}", "{{ 1 / 0 }}",
    "{{ l | tojson(indent=None) }} {{ 'abc'.find('c') }} {{ 'aXbXc'.count('X') }} {{ '-'.join(['a', 'b']) }}",
    "{{ s * 2 }} {{ [1] * 3 }} {{ l + e }} {{ -n }} {{ +f }} {{ 1 + true }} {{ 1 == 1.0 }} {{ [1] == [1] }} {{ d == d }}",
]

# Constructs outside the subset, or Python behaviour not reproduced: or1 must refuse them
# (with an error naming the place) rather than print something else.
REFUSED = ["{{ d.items }}", "{{ n.real }}", "{% raw %}x{% endraw %}", "{{ 10 ** 30 }}", "{{ '%s' % n }}",
           "{% filter upper %}x{% endfilter %}", "{{ x | wordcount }}", "{% for x in l recursive %}{% endfor %}",
           "{% include 'x' %}", "{{ f(*l) }}"]


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
    except (TypeError, ValueError, KeyError, IndexError, AttributeError, ZeroDivisionError, OverflowError):
        return None


def check_snippets(c, or1, env, tmp):
    """Each of SNIPPETS rendered over VARS by both sides; each of REFUSED refused by or1 with
    the template's line and column."""
    for i, source in enumerate(REFUSED):
        path = os.path.join(tmp, f"refused{i}.jinja")
        with open(path, "w", encoding="utf-8") as f:
            f.write(source)
        p = subprocess.run([or1, "render-template", "--template", path], input=json.dumps(VARS).encode(),
                           capture_output=True)
        got = json.loads(p.stdout.decode()) if p.stdout else {}
        c.ok(got.get("error", "").startswith(path + ":1:"), f"{source!r} refused with its place: {got}")
    for i, source in enumerate(SNIPPETS):
        path = os.path.join(tmp, f"snippet{i}.jinja")
        with open(path, "w", encoding="utf-8") as f:
            f.write(source)
        p = subprocess.run([or1, "render-template", "--template", path], input=json.dumps(VARS).encode(),
                           capture_output=True, env=dict(os.environ, OR1_JINJA_NOW=str(NOW), TZ="UTC"))
        got = json.loads(p.stdout.decode()) if p.stdout else {"error": p.stderr.decode()}
        want = reference(env, source, VARS)
        if want is None:
            c.ok("error" in got, f"snippet {i} {source!r}: refused by jinja2, rendered by or1: {got.get('text')!r}")
        else:
            c.ok(got.get("text") == want, f"snippet {i} {source!r}:\n  or1:    {got.get('text', got.get('error'))!r}\n  jinja2: {want!r}")


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
        check_snippets(c, or1, env, tmp)
    c.finish()


if __name__ == "__main__":
    os.environ["TZ"] = "UTC"
    main()
