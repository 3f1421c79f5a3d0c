"""Pathological inputs through the fuzz targets (their replay builds): JSON and YAML nested
10^5 deep, a 10 MB JSONL line, 10^{10^{10}} and 10^5 nested braces in a math answer, a
tokenizer.json whose pre-tokenizer regex backtracks catastrophically, and the largest counts
the parsers take (100,000 code tests, a config of 99,999 keys, GGUF files of 500,000 keys,
300,000 tensors or 10^6 strings), where work quadratic in the
count would run for minutes. Each must end within the
time limit with an error or a value; a crash, a sanitizer report or a slow input fails.

usage: pathological.py SCRATCH SECONDS NAME=REPLAY_BINARY..."""
import json
import os
import shutil
import subprocess
import sys

DEEP = 100_000
BIG = 10 * 1024 * 1024


def nested_json(leaf=b"1"):
    """A JSON array nested DEEP levels."""
    return b"[" * DEEP + leaf + b"]" * DEEP


def tokenizer_with(pre_tokenizer):
    """The demo model's tokenizer.json with another pre-tokenizer."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "models", "arith-base", "tokenizer.json")) as f:
        t = json.load(f)
    t["pre_tokenizer"] = pre_tokenizer
    return json.dumps(t).encode()


def split(pattern):
    """A Split pre-tokenizer on a regex."""
    return {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False}


def gguf_file(kvs=b"", n_kv=0, infos=b"", n_tensors=0):
    """A GGUF v3 file from packed key/value records and tensor infos (no tensor data)."""
    head = b"GGUF" + (3).to_bytes(4, "little") + n_tensors.to_bytes(8, "little") + n_kv.to_bytes(8, "little")
    return head + kvs + infos + bytes(32)


def gguf_records(n, kind):
    """n tiny records: u8 keys k<i> ("kv"), or empty F32 tensors t<i> all at offset 0 ("tensor")."""
    out = bytearray()
    for i in range(n):
        name = f"{kind[0]}{i}".encode()
        out += len(name).to_bytes(8, "little") + name
        out += b"\x00\x00\x00\x00\x07" if kind == "kv" else b"\x01\x00\x00\x00" + bytes(8) + bytes(12)
    return bytes(out)


def inputs():
    """{target: {input name: bytes}}; for rows the first byte picks the reader (fuzz/fuzz_rows.c)."""
    long_text = json.dumps({"text": "12+34=46 " * (BIG // 9)}).encode()
    long_math = json.dumps({"response": "\\boxed{" + "1" * BIG + "}", "gold": "1"}).encode()
    many_keys = "".join(f"k{i}: 1\n" for i in range(99_999)).encode()
    long_row = json.dumps({"prompt": [{"role": "user", "content": "x" * BIG}], "data_source": "d",
                           "ability": "math", "reward_model": {"ground_truth": "[\"1\"]"}}).encode()
    return {
        "rows": {
            "deep_tokenize": b"\x00" + nested_json() + b"\n",
            "deep_dataset": b"\x05" + b'{"prompt":' + nested_json() + b"}\n",
            "long_tokenize": b"\x00" + long_text + b"\n",
            "long_verify_math": b"\x03" + long_math + b"\n",
            "long_dataset": b"\x06" + long_row + b"\n",
        },
        "data_row": {"deep": b'{"a":' + nested_json() + b"}"},
        "model_config": {"deep": b'{"hidden_size":' + nested_json() + b"}"},
        "code_tests": {"deep": b'{"inputs":' + nested_json(b'"x"') + b"}",
                       "long": json.dumps({"inputs": ["1" * BIG], "outputs": ["1"]}).encode(),
                       "many": json.dumps({"inputs": ["1"] * 100_000, "outputs": ["1"] * 100_000}).encode()},
        "chat_template": {"deep": b"{}\x00" + nested_json(), "deep_config": b'{"chat_template":' + nested_json() + b"}"},
        "train_config": {"deep_flow": b"model: " + b"[" * DEEP + b"1" + b"]" * DEEP + b"\n",
                         "deep_block": b"".join(b" " * i + b"k:\n" for i in range(1000)) + b" " * 1000 + b"v\n",
                         "deep_flow_map": b"seed: " + b"{a: " * DEEP + b"1" + b"}" * DEEP + b"\n",
                         "many_keys": many_keys, "many_keys_duplicate": many_keys + b"k0: 2\n"},
        "set_value": {"deep": b"model=" + b"[" * DEEP + b"1" + b"]" * DEEP,
                      "deep_map": b"rollout=" + b"{a: " * DEEP + b"1" + b"}" * DEEP},
        "math_verify": {"power_tower": b"\\boxed{10^{10^{10}}}\x0010^{10^{10}}",
                        "power_tower_gold": b"\\boxed{1}\x0010^{10^{10^{10}}}",
                        "deep_braces": b"\\boxed{" + b"{" * DEEP + b"1" + b"}" * DEEP + b"}\x001",
                        "deep_parens": b"\\boxed{" + b"(" * DEEP + b"1" + b")" * DEEP + b"}\x00" + b"(" * DEEP + b"1" + b")" * DEEP,
                        "deep_frac": b"\\boxed{" + b"\\frac{1}{" * 20000 + b"2" + b"}" * 20000 + b"}\x001"},
        "tokenizer": {"catastrophic": tokenizer_with({"type": "Sequence", "pretokenizers": [
                          split("(a+)+$"), split("(a|a?)+b"), split("(?:a*)*c"), {"type": "ByteLevel"}]}),
                      "deep": nested_json()},
        "safetensors": {"deep": len(nested_json()).to_bytes(8, "little") + nested_json()},
        "gguf": {"many_keys": gguf_file(gguf_records(500_000, "kv"), 500_000),
                 "many_keys_duplicate": gguf_file(gguf_records(500_000, "kv") + gguf_records(1, "kv"), 500_001),
                 "many_tensors": gguf_file(infos=gguf_records(300_000, "tensor"), n_tensors=300_000),
                 "many_strings": gguf_file(b"\x01\x00\x00\x00\x00\x00\x00\x00s\x09\x00\x00\x00\x08\x00\x00\x00"
                                           + (1_000_000).to_bytes(8, "little") + bytes(8_000_000), 1)},
        "jinja": {"deep_parens": b"{{ " + b"(" * DEEP + b"1" + b")" * DEEP + b" }}",
                  "deep_blocks": b"{% if true %}" * DEEP + b"x",
                  "long_loop": b"{% for i in range(99999) %}{% for j in range(99999) %}{{ i }}{% endfor %}{% endfor %}",
                  "long_source": b"x" * (5 << 20)},
    }


# Inputs that must be refused, and a word of the error each must give (the others may end
# with a value or an error).
EXPECT = {
    ("rows", "deep_tokenize"): "invalid JSON",
    ("rows", "deep_dataset"): "invalid JSON",
    ("data_row", "deep"): "invalid JSON",
    ("model_config", "deep"): "invalid JSON",
    ("code_tests", "deep"): "invalid JSON",
    ("tokenizer", "deep"): "invalid JSON",
    ("tokenizer", "catastrophic"): "match limit exceeded",
    ("train_config", "deep_flow"): "nest",
    ("train_config", "deep_flow_map"): "nest",
    ("train_config", "deep_block"): "nest",
    ("train_config", "many_keys"): "unknown key",
    ("train_config", "many_keys_duplicate"): "duplicate key",
    ("set_value", "deep"): "nest",
    ("set_value", "deep_map"): "nest",
    ("gguf", "many_keys_duplicate"): "key \"k0\" appears twice",
    ("jinja", "deep_parens"): "nested too deeply",
    ("jinja", "deep_blocks"): "nested too deeply",
    ("jinja", "long_loop"): "MiB",
    ("jinja", "long_source"): "larger than 4 MiB",
}


def run(binary, seconds, folder):
    """Replays a folder verbosely: (exit status, {input name: last error}, log tail)."""
    r = subprocess.run([binary, "--max-seconds", seconds, "--verbose", folder], capture_output=True, text=True)
    errors = {}
    for line in r.stderr.splitlines():
        if line.startswith("replay: "):
            path, _, rest = line[len("replay: "):].partition(": ")
            errors[os.path.basename(path)] = rest
    return r.returncode, errors, r.stderr[-3000:]


def main():
    scratch, seconds, bins = sys.argv[1], sys.argv[2], dict(a.split("=", 1) for a in sys.argv[3:])
    shutil.rmtree(scratch, ignore_errors=True)
    failed = []
    for target, files in inputs().items():
        folder = os.path.join(scratch, target)
        os.makedirs(folder)
        for name, data in files.items():
            with open(os.path.join(folder, name), "wb") as f:
                f.write(data)
        status, errors, tail = run(bins[target], seconds, folder)
        print(f"{target}: exit {status}", flush=True)
        for name in files:
            got = errors.get(name, "(no result: crashed before it ended)")
            print(f"  {name}: {got[:300]}")
            want = EXPECT.get((target, name))
            if want and want not in got:
                failed.append(f"{target}/{name} (expected an error with '{want}')")
        if status != 0:
            failed.append(target)
            print(tail)
    shutil.rmtree(scratch, ignore_errors=True)
    print("FAILED: " + ", ".join(failed) if failed else "all pathological inputs ended in time")
    sys.exit(1 if failed else 0)


main()
