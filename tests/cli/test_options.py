"""The loss options agree everywhere they appear: `or1 train --help-config`, `or1 grad --help`,
the config parser, the flag parser and the table of docs/algorithms.md.

Both help texts come from the option tables of include/or1/algo.h: a config key that has a
flag says "(or1 grad --FLAG)", the flag says "(config KEY)". Checked for each such pair: the
same help, default, range and choices; a value outside the range, a wrong type and an unknown
name are refused by both parsers, naming the key and the flag. The docs table between the
`options` markers must be what this script prints with --write.

usage: test_options.py OR1 ROOT [--write]
"""
import os
import re
import subprocess
import sys
import tempfile

from or1test.check import check, finish

BEGIN, END = "<!-- options:begin (tests/cli/test_options.py --write) -->", "<!-- options:end -->"


def run(*args):
    return subprocess.run(list(args), capture_output=True, text=True)


def config_keys(or1):
    """{key: dict(type, default, range, help, choices)} from --help-config."""
    out = run(or1, "train", "--help-config").stdout
    keys = {}
    for m in re.finditer(r"^  (\S+) +(\S+) +default (.*?)(?:, in \[(\S+), (\S+)\])?\n      (.*)\n"
                         r"(?:      one of: (.*)\n)?", out, re.M):
        key, typ, default, lo, hi, help_, choices = m.groups()
        keys[key] = dict(type=typ, default=default, range=(lo, hi) if lo else None, help=help_,
                         choices=choices.split(" | ") if choices else None)
    return keys


def grad_flags(or1):
    """{flag: dict(meta, range, default, help)} from or1 grad --help."""
    out = run(or1, "grad", "--help").stdout
    flags = {}
    for m in re.finditer(r"^  --(\S+)(?: (\S+))? +(text|number|integer|path|switch)[^\n]*?"
                         r"(?: in \[(\S+), (\S+)\])?(?:, default (\S+))?\n      (.*)\n", out, re.M):
        flag, meta, _, lo, hi, default, help_ = m.groups()
        flags[flag] = dict(meta=meta, range=(lo, hi) if lo else None, default=default, help=help_)
    return flags


def pairs(keys, flags):
    """[(key, flag, shared help)] of every key that names a flag, checking the flag names it back."""
    out = []
    for key, k in keys.items():
        m = re.fullmatch(r"(.*) \(or1 grad --(\S+)\)", k["help"])
        if not m:
            continue
        help_, flag = m.groups()
        f = flags.get(flag)
        if not check(f is not None, f"{key} names --{flag}, which or1 grad lacks"):
            continue
        fm = re.fullmatch(r"(.*) \(config (\S+)\)", f["help"])
        if check(fm is not None and fm.group(2) == key, f"--{flag} does not name {key} back: {f['help']!r}"):
            check(fm.group(1) == help_,
                  f"{key} / --{flag}: help differs: {help_!r} / {fm.group(1)!r}")
        out.append((key, flag, help_))
    named_back = {re.search(r"\(config (\S+)\)$", f["help"]).group(1): name for name, f in flags.items()
                  if re.search(r"\(config (\S+)\)$", f["help"])}
    for key, flag in named_back.items():
        check(any(k == key for k, _, _ in out), f"--{flag} names {key}, which does not name it back")
    return out


def same_values(keys, flags, found):
    """Defaults, ranges and choices of each pair."""
    for key, flag, _ in found:
        k, f = keys[key], flags[flag]
        check(float(k["default"]) == float(f["default"]) if k["choices"] is None else k["default"] == f["default"],
              f"{key} / --{flag}: default {k['default']} / {f['default']}")
        if k["choices"] is None:
            check(k["range"] is not None and f["range"] is not None and
                  [float(x) for x in k["range"]] == [float(x) for x in f["range"]],
                  f"{key} / --{flag}: range {k['range']} / {f['range']}")
        else:
            check(f["meta"] is not None and f["meta"].split("|") == k["choices"],
                  f"{key} / --{flag}: choices {k['choices']} / {f['meta']}")


def refusals(or1, keys, found):
    """A value out of range, of the wrong type and an unknown name: both parsers refuse, naming
    the key and the flag."""
    base = "model: {path: m}\ndata:\n  train: [{path: a}]\n"
    with tempfile.TemporaryDirectory() as tmp:
        cfg = os.path.join(tmp, "t.yaml")
        for key, flag, _ in found:
            k = keys[key]
            bads = ["nope"] if k["choices"] else ["nope", repr(float(k["range"][1]) * 10 + 1)]
            for bad in bads:
                section, leaf = key.rsplit(".", 1)
                with open(cfg, "w") as f:
                    f.write(base + f"{section}:\n  {leaf}: {bad}\n")
                p = run(or1, "train", "--config", cfg)
                check(p.returncode != 0 and f'key "{key}"' in p.stderr, f"{key}: {bad} not refused naming it: {p.stderr!r}")
                p = run(or1, "grad", "--model", tmp, "--batch", cfg, "--out", os.path.join(tmp, "g"), f"--{flag}", bad)
                check(p.returncode != 0 and f"--{flag}" in p.stderr, f"--{flag} {bad} not refused naming it: {p.stderr!r}")


def table(keys, flags, found):
    """The docs table: one row per pair, in the schema's order."""
    rows = ["| config key | `or1 grad` flag | default | range or values | meaning |", "|---|---|---|---|---|"]
    for key, flag, help_ in found:
        k = keys[key]
        values = " \\| ".join(f"`{c}`" for c in k["choices"]) if k["choices"] else f"[{k['range'][0]}, {k['range'][1]}]"
        rows.append(f"| `{key}` | `--{flag}` | `{k['default']}` | {values} | {help_.replace('|', chr(92) + '|')} |")
    return "\n".join(rows)


def docs(root, text, write):
    """The docs section against the generated table (rewritten with --write)."""
    path = os.path.join(root, "docs", "algorithms.md")
    doc = open(path).read()
    if not check(BEGIN in doc and END in doc, f"{path}: no options markers"):
        return
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{BEGIN}\n{text}\n{END}{tail}"
    if write:
        open(path, "w").write(new)
    check(new == doc or write, f"{path}: the options table is not current; run {sys.argv[0]} OR1 ROOT --write")


def main():
    or1, root = sys.argv[1], sys.argv[2]
    keys, flags = config_keys(or1), grad_flags(or1)
    check(len(keys) > 80 and len(flags) > 30, f"read {len(keys)} keys and {len(flags)} flags")
    found = pairs(keys, flags)
    check(len(found) >= 19, f"{len(found)} key/flag pairs")
    same_values(keys, flags, found)
    refusals(or1, keys, found)
    docs(root, table(keys, flags, found), "--write" in sys.argv)
    finish("cli_options")


if __name__ == "__main__":
    main()
