"""The command line: `or1 help`, every command's help (each flag it takes listed with its type),
`--version`, `train --help-config` (every schema key), "did you mean" for commands and flags,
--flag=value, a flag without its value, a value that is a flag, a repeated flag, difficulty's
--out/--in-place, verify-math's three gold forms, and generate's stdout holding only JSON
lines (stderr a pipe, then a terminal).

usage: test_cli.py OR1 REPO_ROOT"""
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

from or1test import files, proc
from or1test.check import check, finish

OR1, ROOT = sys.argv[1], sys.argv[2]
MODEL = os.path.join(ROOT, "models", "arith-base")
SAMPLING = ["n", "temperature", "top-p", "top-k", "max-new-tokens", "seed"]
TOOLS = ["tools", "tool-timeout", "tool-output-bytes", "tool-memory-mb"]
EVAL = ["model", "data", "tokenizer", "chat-template", "chat-template-kwargs", "dump", *SAMPLING, "max-slots", "kv-cache-gb",
        "prefill-chunk", "code-timeout", "strict-box", "keep-base", *TOOLS, "device", "precision"]
# Every flag of every command, written out here (not read from the program) so that a flag
# dropped from a table, or a table the help does not show, fails the test.
FLAGS = {
    "logprobs": ["model", "input", "temperature", "device", "precision"],
    "init": ["config", "out", "seed", "std", "save-dtype"],
    "convert": ["model", "out", "type"],
    "generate": ["model", "input", *SAMPLING, "stop", "tokenizer", "chat-template", "chat-template-kwargs", "max-slots",
                 "kv-cache-gb", "prefill-chunk", *TOOLS, "device", "precision"],
    "train": ["config", "set", "resume", "overwrite", "help-config"],
    "eval": EVAL,
    "difficulty": [*EVAL, "out", "in-place", "name"],
    "grad": ["model", "batch", "out", "save", "step", "save-dtype", "temperature", "clip-low", "clip-high",
             "entropy-coef", "micro-batch-tokens", "bench-iters", "lr", "weight-decay", "max-grad-norm",
             "rollout-is", "rollout-is-low", "rollout-is-high", "offpolicy-delta", "loss-agg", "loss-scale", "loss-mode", "clip-ratio-c",
             "gspo-clip-low", "gspo-clip-high", "cispo-clip-low", "cispo-clip-high", "clip-cov-ratio", "clip-cov-lb",
             "clip-cov-ub", "kl-cov-ratio", "ppo-kl-coef", "top-entropy-quantile", "seed", "device", "precision"],
    "verify-math": ["input", "output", "time-limit", "strict-box", "keep-base"],
    "verify-code": ["input", "output", "workers", "memory-mb", "all-tests", "chunk"],
    "tokenize": ["tokenizer", "input", "output", "add-special", "split-special"],
    "detokenize": ["tokenizer", "input", "output", "skip-special"],
    "chat": ["tokenizer", "input", "output", "template", "no-generation-prompt", "chat-template-kwargs"],
    "render-template": ["template", "input", "output"],
    "gen-arith": ["n", "seed", "split", "min-ops", "max-ops", "out", "traces", "tokenizer", "noise", "guess",
                  "split-products", "tool"],
    "sft": ["model", "data", "out", "tokenizer", "steps", "batch", "warmup", "micro-batch-tokens", "seed",
            "log-every", "save-every", "lr", "min-lr", "weight-decay", "max-grad-norm", "save-dtype", "device", "precision"],
}
COMMON = ["threads", "help"]
# Defaults the commands had before their tables existed: the help must show them.
DEFAULTS = [("generate", "n", "1"), ("generate", "max-new-tokens", "256"), ("generate", "max-slots", "256"),
            ("eval", "n", "8"), ("eval", "max-new-tokens", "0"), ("eval", "max-slots", "256"),
            ("difficulty", "n", "16"), ("sft", "steps", "200"), ("sft", "lr", "1e-3"),
            ("verify-code", "memory-mb", "1024"), ("init", "std", "0.02"), ("verify-math", "input", "-")]
TYPES = ("text", "path", "integer", "number", "switch")


def or1(*args, cwd=None):
    """Runs or1 with args; returns the CompletedProcess whatever its status."""
    return subprocess.run([OR1, *map(str, args)], capture_output=True, text=True, timeout=300, cwd=cwd)


def refused(what, p, *want):
    """p exited 2 with an `or1:` message holding every wanted substring."""
    last = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
    check(p.returncode == 2 and last.startswith("or1: ") and all(w in p.stderr for w in want),
          f"{what}: rc {p.returncode}, want 2 and {want!r} in stderr {p.stderr[-600:]!r}")


def flag_lines(text):
    """{flag name: its first help line} of a command's help."""
    return {m.group(1): m.group(0) for m in re.finditer(r"^  --([a-z-]+)[^\n]*", text, re.M)}


def command_list():
    """`or1 help` and bare `or1`: every command listed."""
    p = or1("help")
    check(p.returncode == 0 and all(re.search(rf"^  {c} ", p.stdout, re.M) for c in FLAGS),
          f"or1 help: rc {p.returncode}, {p.stdout!r}")
    p = or1()
    check(p.returncode == 2 and "usage: or1" in p.stderr, f"bare or1: rc {p.returncode}")


def command_help(cmd):
    """CMD --help, -h and `help CMD` agree, exit 0 and list every flag with its type, and the
    parser knows every flag the help lists."""
    outs = [or1(cmd, "--help"), or1(cmd, "-h"), or1("help", cmd), or1(cmd, "--n", "--help")]
    check(all(p.returncode == 0 and p.stdout == outs[0].stdout for p in outs), f"{cmd}: the help forms differ")
    text = outs[0].stdout
    check(text.startswith(f"usage: or1 {cmd}") and "\nexample:\n  or1 " in text, f"{cmd} help: {text[:300]!r}")
    lines = flag_lines(text)
    want = FLAGS[cmd] + COMMON
    check(sorted(lines) == sorted(want), f"{cmd} help lists {sorted(lines)}, want {sorted(want)}")
    for name, line in lines.items():
        check(any(t in line for t in TYPES), f"{cmd} --{name}: no type in {line!r}")
        if name == "help":
            continue
        p = or1(cmd, f"--{name}=")
        check(p.returncode == 2 and "unknown flag" not in p.stderr, f"{cmd}: the parser lacks --{name}: {p.stderr!r}")


def defaults():
    """The old defaults appear in the help."""
    for cmd, name, value in DEFAULTS:
        line = flag_lines(or1(cmd, "--help").stdout).get(name, "")
        check(f"default {value}" in line, f"{cmd} --{name}: {line!r} lacks default {value}")


def version():
    """or1 --version: the CMake project version and a commit, the BLAS core, the GPUs, and AMX
    usable exactly where /proc/cpuinfo lists amx_tile and amx_bf16."""
    cmake = open(os.path.join(ROOT, "CMakeLists.txt")).read()
    want = re.search(r"project\(or1 VERSION ([0-9.]+)", cmake).group(1)
    p = or1("--version")
    m = re.fullmatch(rf"or1 {re.escape(want)} \(commit ([0-9a-f]+(\+dirty)?|unknown)\)\n"
                     r"blas: OpenBLAS core (\w+)\ncuda: [0-9]+ GPU\(s\) visible\n"
                     r"amx: (usable \(the model does not use it yet\)|unavailable: .+)\n", p.stdout)
    check(p.returncode == 0 and m, f"--version: rc {p.returncode} {p.stdout!r}, want version {want}")
    flags = open("/proc/cpuinfo").read().split()
    has = "amx_tile" in flags and "amx_bf16" in flags
    check(m and m.group(4).startswith("usable") == has, f"--version says {m.group(4) if m else p.stdout!r} on a CPU "
          f"{'with' if has else 'without'} amx_tile and amx_bf16")
    blas_core()


def blas_core():
    """Where the CPU has AVX2 and FMA, or1 runs OpenBLAS kernels that use them, even with
    OPENBLAS_CORETYPE unset (OpenBLAS alone falls back to SSE kernels on CPUs it does not know)."""
    flags = open("/proc/cpuinfo").read().split()
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    p = subprocess.run([OR1, "--version"], capture_output=True, text=True, env=env)
    got = re.search(r"blas: OpenBLAS core (\w+)", p.stdout)
    slow = {"prescott", "core2", "penryn", "dunnington", "nehalem", "sandybridge", "atom"}
    if "avx2" in flags and "fma" in flags:
        check(got and got.group(1).lower() not in slow,
              f"OpenBLAS core {got.group(1) if got else p.stdout!r} lacks AVX2 on a CPU that has it")


def help_config():
    """train --help-config: every key of the schema (read from its source) with its description."""
    src = open(os.path.join(ROOT, "src", "train", "config.c")).read()
    body = src[src.index("or1_train_schema[] = {"):src.index("const size_t or1_train_schema_len")]
    keys = re.findall(r'^\s*(?:[A-Z]+_KEY\(|\{)"([a-z_.\[\]]+)",[^\n]*"([^"\n]*)"\)?,?\s*$', body, re.M)
    check(len(keys) > 50, f"read {len(keys)} schema keys from the source")
    p = or1("train", "--help-config")
    check(p.returncode == 0, f"--help-config: rc {p.returncode} {p.stderr!r}")
    for key, desc in keys:
        check(re.search(rf"^  {re.escape(key)} ", p.stdout, re.M) and desc in p.stdout, f"--help-config lacks {key}")


def suggestions():
    """Unknown commands and flags: exit 2, the closest name suggested."""
    refused("unknown command", or1("trian", "--config", "x"), "unknown command 'trian'", "did you mean 'train'")
    refused("help of an unknown command", or1("help", "verify-mth"), "did you mean 'verify-math'")
    refused("unknown flag", or1("eval", "--model", "m", "--data", "d", "--tmperature", "1"),
            "unknown flag --tmperature", "did you mean --temperature")
    refused("far-off flag", or1("tokenize", "--tokenizer", "t", "--zzzzzzzz"), "unknown flag --zzzzzzzz")
    refused("positional argument", or1("verify-math", "rows.jsonl"), "unexpected argument 'rows.jsonl'")


def flag_forms(tmp):
    """--flag=value works; a missing value, a flag as value, a repeat and a switch with a value
    are refused naming the flag, before anything is written."""
    rows = files.write_jsonl(os.path.join(tmp, "rows.jsonl"), [{"response": "\\boxed{4}", "gold": "4"}])
    p = or1("verify-math", f"--input={rows}", "--time-limit=5", "--threads=1")
    check(p.returncode == 0 and json.loads(p.stdout)["correct"] is True, f"--flag=value: {p.stderr!r}")
    refused("--resume without its value", or1("train", "--config", "c.yaml", "--resume"), "--resume needs a value")
    refused("--dump without its value", or1("eval", "--model", MODEL, "--data", rows, "--dump"), "--dump needs a value")
    p = or1("eval", "--model", MODEL, "--data", rows, "--dump", "--n", "2", cwd=tmp)
    refused("a flag as --dump's value", p, "--dump needs a value", "--n")
    check(not os.path.exists(os.path.join(tmp, "--n")), "a file called --n was written")
    refused("-h-like value", or1("chat", "--tokenizer", MODEL, "--template", "-x"), "--template needs a value")
    refused("repeated flag", or1("verify-math", "--input", rows, "--input", rows), "--input is given twice")
    refused("repeated switch", or1("train", "--config", "c", "--overwrite", "--overwrite"), "--overwrite is given twice")
    refused("switch with a value", or1("train", "--config", "c", "--overwrite=yes"), "--overwrite is a switch")
    refused("out of range", or1("generate", "--model", MODEL, "--input", rows, "--n", "0"), "--n 0", "[1, 65536]")
    refused("missing required", or1("generate", "--model", MODEL), "missing required flag --input")
    p = or1("verify-math", "--input", rows, "--time-limit", "-1")
    refused("negative number read as a value", p, "--time-limit -1", "expected a number")


def difficulty_out(tmp):
    """difficulty needs exactly one of --out and --in-place; the data file stays as it was."""
    data = files.write_jsonl(os.path.join(tmp, "d.jsonl"), [{"x": 1}])
    before = open(data).read()
    base = ["difficulty", "--model", MODEL, "--data", data, "--n", "2"]
    refused("difficulty without --out", or1(*base), "--out", "--in-place")
    refused("difficulty with both", or1(*base, "--out", os.path.join(tmp, "o.jsonl"), "--in-place"),
            "--out and --in-place")
    refused("difficulty --out without its value", or1(*base, "--out"), "--out needs a value")
    check(open(data).read() == before, "difficulty changed its input")


def gold_forms(tmp):
    """verify-math: gold as a list, a string, or the rows' JSON-encoded ground_truth string;
    an interval that is not a JSON list of strings stays one answer."""
    cases = [({"response": "\\boxed{25}", "gold": ["25"]}, True),
             ({"response": "\\boxed{25}", "gold": "25"}, True),
             ({"response": "\\boxed{25}", "gold": "[\"25\"]"}, True),
             ({"response": "\\boxed{7}", "gold": "[\"25\", \"7\"]"}, True),
             ({"response": "\\boxed{8}", "gold": "[\"25\", \"7\"]"}, False),
             ({"response": "\\boxed{[1,2]}", "gold": "[1,2]"}, True),
             ({"response": "\\boxed{1}", "gold": "[1,2]"}, False)]
    rows = files.write_jsonl(os.path.join(tmp, "gold.jsonl"), [r for r, _ in cases])
    p = or1("verify-math", "--input", rows)
    got = [json.loads(x)["correct"] for x in p.stdout.splitlines()] if p.returncode == 0 else p.stderr
    check(got == [c for _, c in cases], f"gold forms: got {got}, want {[c for _, c in cases]}")
    bad = files.write_jsonl(os.path.join(tmp, "nul.jsonl"), [{"response": "\\boxed{1}", "gold": "[\"1\\u0000\"]"}])
    p = or1("verify-math", "--input", bad)
    check(p.returncode == 1 and f"{bad}:1" in p.stderr and "U+0000" in p.stderr, f"NUL in a gold list: {p.stderr!r}")
    for k, (gold, why) in enumerate([("[]", "must not be empty"), ("[\"1\", 2]", "element 1"),
                                     ("{\"inputs\": []}", "JSON object"), ("", "empty")]):
        bad = files.write_jsonl(os.path.join(tmp, f"bad{k}.jsonl"), [{"response": "\\boxed{1}", "gold": "1"},
                                                                     {"response": "\\boxed{1}", "gold": gold}])
        p = or1("verify-math", "--input", bad)
        check(p.returncode == 1 and f"{bad}:2" in p.stderr and why in p.stderr, f"gold {gold!r}: {p.stderr!r}")


def render(transcript):
    """The lines a terminal shows for the bytes written to it: \\r returns to the line's start,
    ESC[K erases to its end, other text overwrites."""
    shown, line, col, i = [], [], 0, 0
    while i < len(transcript):
        ch = transcript[i]
        if transcript.startswith("\x1b[K", i):
            del line[col:]
            i += 3
            continue
        if ch == "\n":
            shown.append("".join(line))
            line, col = [], 0
        elif ch == "\r":
            col = 0
        else:
            line[col:col + 1] = [ch]
            col += 1
        i += 1
    return shown + (["".join(line)] if line else [])


def generate_output(tmp):
    """generate's stdout is JSON lines only with stderr a pipe, and on a terminal (a pty through
    script) every shown line is a JSON line, a bar or the summary: the bar never runs into a line."""
    prompts = files.write_jsonl(os.path.join(tmp, "p.jsonl"), [{"prompt_ids": [5, 6, 7 + i]} for i in range(3)])
    args = ["generate", "--model", MODEL, "--input", prompts, "--n", "3", "--max-new-tokens", "24", "--seed", "3"]
    p = or1(*args)
    ok = p.returncode == 0 and all(line.startswith("{") for line in p.stdout.splitlines())
    check(ok and len(proc.json_lines(p.stdout)) == 9, f"generate stdout with a piped stderr: {p.stdout[:300]!r}")
    check("generate [" not in p.stderr, "the progress bar was drawn on a pipe")
    log = os.path.join(tmp, "typescript")
    cmd = " ".join(shlex.quote(a) for a in [OR1, *args])
    q = subprocess.run(["script", "-qefc", cmd, log], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, TERM="xterm"))
    text = open(log, errors="replace").read().replace("\r\n", "\n")
    text = text[text.find("\n") + 1:] if text.startswith("Script started") else text
    shown = [s for s in render(text) if s.strip() and not s.startswith("Script ")]
    bars = [s for s in shown if re.fullmatch(r"generate \[[# ]{30}\] \d+/9 samples, \d+ tok/s", s)]
    stray = [s for s in shown if not (s.startswith("{") and s.endswith("}")) and s not in bars
             and not s.startswith("generate: ")]
    check(q.returncode == 0 and bars, f"no bar on a terminal: rc {q.returncode}, {shown[:5]!r}")
    check(not stray, f"lines mixing the bar and the output: {stray[:3]!r}")
    check(sum(s.startswith("{") for s in shown) == 9, f"{sum(s.startswith('{') for s in shown)} JSON lines shown")
    out = os.path.join(tmp, "out.jsonl")
    q = subprocess.run(["script", "-qefc", cmd + " > " + shlex.quote(out), os.devnull], capture_output=True,
                       text=True, timeout=300)
    lines = open(out).read().splitlines() if os.path.exists(out) else []
    check(q.returncode == 0 and len(lines) == 9 and all(s.startswith("{") and s.endswith("}") for s in lines),
          f"stdout redirected, stderr a terminal: {lines[:3]!r}")


def main():
    """Every part; one line per failure, then the summary."""
    with tempfile.TemporaryDirectory() as tmp:
        command_list()
        for cmd in FLAGS:
            command_help(cmd)
        defaults()
        version()
        help_config()
        suggestions()
        flag_forms(tmp)
        difficulty_out(tmp)
        gold_forms(tmp)
        generate_output(tmp)
    finish("cli_flags")


if __name__ == "__main__":
    main()
