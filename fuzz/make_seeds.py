#!/usr/bin/env python3
"""Writes the seed corpora fuzz/corpus/<target>/ from the repository's own configs, data rows,
tests and the demo model (each seed under 64 KB). Run from anywhere; existing seeds of the same
name are overwritten and reproducers added by fuzz/run.sh are left alone."""
import json
import os
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "fuzz", "corpus")
LIMIT = 64 * 1024


def src(*parts):
    """Path of a repository file."""
    return os.path.join(ROOT, *parts)


def put(target, name, data):
    """Writes one seed (bytes or str), skipping those over the size limit."""
    if isinstance(data, str):
        data = data.encode()
    if len(data) > LIMIT:
        return
    os.makedirs(os.path.join(OUT, target), exist_ok=True)
    with open(os.path.join(OUT, target, name), "wb") as f:
        f.write(data)


def jsonl(path, n, max_len=LIMIT):
    """The first n lines of a JSONL file that are under max_len bytes."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if len(line.encode()) < max_len:
                out.append(line.rstrip("\n"))
            if len(out) == n:
                break
    return out


def safetensors(tensors, meta=None):
    """A safetensors file: {name: (dtype, shape, raw bytes)}."""
    header, data = {}, b""
    if meta:
        header["__metadata__"] = meta
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + data


def seeds_train_config():
    for name in sorted(os.listdir(src("configs"))):
        put("train_config", name, open(src("configs", name)).read())
    put("train_config", "demo.yaml", open(src("demo", "demo.yaml")).read())
    put("train_config", "override.yaml", "# seed=3\n" + open(src("configs", "quickstart.yaml")).read())


def seeds_set_value():
    sets = ["seed=2", "entropy.mode=off", "rollout.temperature=0.6", "train.clip_low=2", "train.epoch=2",
            "entropy.mode=sometimes", "stages=[{steps: 1, prompts: 2, mini_batch: 1}]",
            "stages.0.steps=20\nstages.1.steps=10", "entropy.mode=constant\nentropy.initial=0.2",
            "device=cuda", "data.train=[{path: a.jsonl, weight: 2}]", "model=", "=1", "a.b.c.d=[1, {x: y}]"]
    for i, s in enumerate(sets):
        put("set_value", f"set{i}", s)


def seeds_safetensors():
    f32 = struct.pack("<4f", 1, -2, 3.5, 0)
    bf16 = struct.pack("<4H", 0x3F80, 0xC000, 0x4060, 0)
    put("safetensors", "f32.safetensors", safetensors({"a": ("F32", [2, 2], f32)}))
    put("safetensors", "bf16.safetensors", safetensors({"w": ("BF16", [4], bf16), "b": ("F32", [1], f32[:4])},
                                                       {"format": "pt"}))
    put("safetensors", "f16.safetensors", safetensors({"h": ("F16", [2, 1], struct.pack("<2H", 0x3C00, 0x7C00))}))
    put("safetensors", "empty.safetensors", safetensors({"z": ("F32", [0, 3], b"")}))
    put("safetensors", "scalar.safetensors", safetensors({"s": ("F32", [], f32[:4])}))


def seeds_data_row():
    rows = jsonl(src("data", "aime24.jsonl"), 10) + jsonl(src("data", "deepscaler_first500.jsonl"), 20)
    rows += jsonl(src("data", "code_eval.jsonl"), 5, 16384) + jsonl(src("data", "lcb_2408_2502_public_tests.jsonl"), 5, 16384)
    for i, r in enumerate(rows):
        put("data_row", f"row{i}.json", r)
    # math ground truths in each form the reader tells apart: one plain answer, an interval, a
    # JSON string, a list holding a non-string
    plain = json.loads(rows[0])
    for i, gt in enumerate(["72", "[1, 2]", '"-63"', '["1", 2]']):
        plain["reward_model"] = {"style": "rule", "ground_truth": gt}
        put("data_row", f"plain{i}.json", json.dumps(plain))


def seeds_math_verify():
    for i, line in enumerate(jsonl(src("tests", "math", "cases.jsonl"), 719)):
        if i % 4:
            continue
        c = json.loads(line)
        put("math_verify", f"case{i}", c["response"] + "\0" + c["gold"][0])
    # the strict rule's shapes: boxes last and nested, unclosed, \boxed without a brace; plain golds
    for i, (resp, gold) in enumerate([("\\boxed{-63} ... \\boxed{5}", "5"), ("\\boxed{\\frac{1}{\\boxed{2}}", "[1, 2]"),
                                      ("<think>\\boxed{1}</think>\\boxed 5 \\boxed{", '["5", "x"]'),
                                      ("The answer to 20 - 83.", '"-63"')]):
        put("math_verify", f"strict{i}", resp + "\0" + gold)


def seeds_model_config():
    base = json.load(open(src("models", "arith-base", "config.json")))
    put("model_config", "arith.json", json.dumps(base, indent=1))
    llama = dict(base, model_type="llama", architectures=["LlamaForCausalLM"], attention_bias=True,
                 eos_token_id=[1, 2, 3], tie_word_embeddings=False, head_dim=32, rope_scaling=None)
    put("model_config", "llama.json", json.dumps(llama))
    put("model_config", "generation.json", json.dumps({"bos_token_id": 1, "eos_token_id": [2, 270], "do_sample": True}))
    put("model_config", "sliding.json", json.dumps(dict(base, use_sliding_window=False, sliding_window=4096,
                                                        num_key_value_heads=4, max_window_layers=2)))
    # the shapes of Qwen3-0.6B and DeepSeek-R1-Distill-Llama-8B (Llama 3.1 RoPE scaling) as published
    qwen3 = dict(base, model_type="qwen3", architectures=["Qwen3ForCausalLM"], attention_bias=False, head_dim=128,
                 hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16,
                 num_key_value_heads=8, vocab_size=151936, max_position_embeddings=40960, rope_theta=1000000,
                 tie_word_embeddings=True, use_sliding_window=False, sliding_window=None, max_window_layers=28)
    put("model_config", "qwen3.json", json.dumps(qwen3))
    put("model_config", "llama3_scaled.json", json.dumps(dict(
        base, model_type="llama", architectures=["LlamaForCausalLM"], attention_bias=False, mlp_bias=False,
        hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
        num_key_value_heads=8, vocab_size=128256, max_position_embeddings=131072, rms_norm_eps=1e-5,
        rope_theta=500000.0, tie_word_embeddings=False, rope_scaling={
            "factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
            "original_max_position_embeddings": 8192, "rope_type": "llama3"})))
    put("model_config", "rope_parameters.json", json.dumps(dict(
        base, model_type="qwen3", head_dim=16, layer_types=["full_attention"] * base["num_hidden_layers"],
        rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 1000000.0})))
    # Qwen2.5-7B-Instruct with the YaRN block its model card adds for 128K, and transformers 5's
    # rope_parameters with every YaRN key
    put("model_config", "yarn.json", json.dumps(dict(
        base, hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
        num_key_value_heads=4, vocab_size=152064, max_position_embeddings=32768, rope_theta=1000000.0,
        rope_scaling={"factor": 4.0, "original_max_position_embeddings": 32768, "type": "yarn"})))
    put("model_config", "yarn_parameters.json", json.dumps(dict(
        base, model_type="qwen3", head_dim=16, layer_types=["full_attention"] * base["num_hidden_layers"],
        rope_parameters={"rope_type": "yarn", "factor": 8.0, "rope_theta": 1000000.0, "beta_fast": 16.0,
                         "beta_slow": 2.0, "mscale": 1.0, "mscale_all_dim": 0.707, "truncate": False,
                         "original_max_position_embeddings": 4096})))


def tokenizers():
    """The demo tokenizer and variants with the other normalizers, pre-tokenizers and
    post-processors the loader knows (Qwen2 and Llama-3 split regexes, digits, NFC)."""
    base = json.load(open(src("models", "arith-base", "tokenizer.json")))
    qwen = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
    llama = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
    split = lambda pat, beh="Isolated": {"type": "Split", "pattern": {"Regex": pat}, "behavior": beh, "invert": False}
    byte = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}
    out = {"arith.json": base}
    out["qwen.json"] = dict(base, normalizer={"type": "NFC"},
                            pre_tokenizer={"type": "Sequence", "pretokenizers": [split(qwen), byte]})
    out["llama.json"] = dict(base, normalizer=None, pre_tokenizer={"type": "Sequence", "pretokenizers": [
        split(llama), byte]}, post_processor={"type": "TemplateProcessing", "single": [
            {"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "special_tokens": {"<|endoftext|>": {"id": "<|endoftext|>", "ids": [267], "tokens": ["<|endoftext|>"]}}})
    out["digits.json"] = dict(base, normalizer={"type": "Sequence", "normalizers": [{"type": "NFKC"}]},
                              pre_tokenizer={"type": "Sequence", "pretokenizers": [
                                  {"type": "Digits", "individual_digits": True}, split(" ", "MergedWithPrevious"),
                                  dict(byte, add_prefix_space=True)]})
    out["catastrophic.json"] = dict(base, pre_tokenizer={"type": "Sequence", "pretokenizers": [
        split("(a+)+$"), split("(a|aa)*c", "Removed"), byte]})
    return out


def seeds_tokenizer():
    """Each tokenizer alone (the target's fixed text), and with texts of the tokenizer tests."""
    texts = [json.loads(line)["text"] for line in jsonl(src("tests", "tokenizer", "corpus.jsonl"), 45, 4096)]
    for i, (name, t) in enumerate(tokenizers().items()):
        put("tokenizer", name, json.dumps(t))
        for k in range(i, len(texts), 15):
            put("tokenizer", f"{name[:-5]}_text{k}", json.dumps(t) + "\0" + texts[k])


def gguf(kvs, tensors, version=3, alignment=32):
    """A GGUF file: kvs [(key, type id, packed value)], tensors [(name, ne, ggml type, raw bytes)],
    each tensor's data padded to the alignment (as GGUFWriter lays them out)."""
    def s(text):
        b = text.encode() if isinstance(text, str) else text
        return struct.pack("<Q", len(b)) + b
    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs))
    for key, vtype, value in kvs:
        out += s(key) + struct.pack("<I", vtype) + value
    offset, data = 0, b""
    for name, ne, gtype, raw in tensors:
        out += s(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        out += struct.pack("<IQ", gtype, offset)
        pad = -len(raw) % alignment
        data += raw + bytes(pad)
        offset += len(raw) + pad
    return out + bytes(-len(out) % alignment) + data


def seeds_gguf():
    """Small GGUF files: every value type, typed and string arrays, a non-default alignment, and one
    tensor of each block type or1 dequantizes (blocks of arbitrary bytes with a half scale of 1)."""
    def arr(vtype, fmt, values):
        return struct.pack("<IQ", vtype, len(values)) + b"".join(struct.pack(fmt, v) for v in values)
    strs = struct.pack("<IQ", 8, 3) + b"".join(struct.pack("<Q", len(x)) + x for x in [b"<s>", b"\xc4\xa0a", b""])
    kvs = [("general.architecture", 8, struct.pack("<Q", 5) + b"llama"), ("a.u8", 0, b"\x07"), ("a.i8", 1, b"\xff"),
           ("a.u16", 2, struct.pack("<H", 9)), ("a.i16", 3, struct.pack("<h", -9)), ("a.u32", 4, struct.pack("<I", 30)),
           ("a.i32", 5, struct.pack("<i", -3)), ("a.f32", 6, struct.pack("<f", 1e-5)), ("a.bool", 7, b"\x01"),
           ("a.u64", 10, struct.pack("<Q", 2**63)), ("a.i64", 11, struct.pack("<q", -2)),
           ("a.f64", 12, struct.pack("<d", 0.5)), ("tokenizer.ggml.tokens", 9, strs),
           ("tokenizer.ggml.token_type", 9, arr(5, "<i", [1, 3, 6])), ("a.scores", 9, arr(6, "<f", [0.0, -1.5])),
           ("a.flags", 9, arr(7, "<B", [0, 1])), ("a.big", 9, arr(10, "<Q", [2**64 - 1]))]
    blocks = {2: (32, 18, [0]), 3: (32, 20, [0, 2]), 6: (32, 22, [0]), 7: (32, 24, [0, 2]), 8: (32, 34, [0]),
              10: (256, 84, [80, 82]), 11: (256, 110, [108]), 12: (256, 144, [0, 2]), 13: (256, 176, [0, 2]),
              14: (256, 210, [208])}
    tensors = [("f32", [4, 2], 0, struct.pack("<8f", *range(8))), ("f16", [3], 1, struct.pack("<3H", 0x3C00, 0x8001, 0x7BFF)),
               ("bf16", [2, 1, 1, 1], 30, struct.pack("<2H", 0x3F80, 0xC000))]
    for gtype, (block, size, halves) in blocks.items():
        raw = bytearray((i * 37 + gtype) % 256 for i in range(size))
        for at in halves:
            raw[at:at + 2] = struct.pack("<H", 0x3C00)
        tensors.append((f"blk.{gtype}", [block], gtype, bytes(raw)))
    put("gguf", "all.gguf", gguf(kvs, tensors))
    put("gguf", "meta_only.gguf", gguf(kvs, []))
    put("gguf", "align64_v2.gguf", gguf(kvs[:1] + [("general.alignment", 4, struct.pack("<I", 64))], tensors[:3],
                                        version=2, alignment=64))
    put("gguf", "iq.gguf", gguf(kvs[:1], [("iq4_nl", [32], 20, bytes(18)), ("empty", [0, 4], 0, b"")]))


def seeds_chat_template():
    msgs = json.dumps([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2+3?"},
                       {"role": "assistant", "content": "<think>2+3=5</think>\\boxed{5}"},
                       {"role": "user", "content": "And 4*4?"}])
    base = json.load(open(src("models", "arith-base", "tokenizer_config.json")))
    templates = {
        "plain": None,
        "deepseek-r1": "{% set ns = namespace(system_prompt='') %}{% set ns.system_prompt = ns.system_prompt + "
                       "message['content'] %}<｜User｜>{{c}}<｜Assistant｜><think>\\n",
        "deepseek": "{{ bos_token }}<｜User｜>{{c}}<｜Assistant｜>",
        "chatml": "{% if messages[0]['role'] != 'system' %}<|im_start|>system\\nYou are Qwen.<|im_end|>\\n{% endif %}"
                  "<|im_start|>{{role}}\\n{{c}}<|im_end|>\\n<|im_start|>assistant\\n<think>\\n",
        "llama3": "<|start_header_id|>{{role}}<|end_header_id|>\\n\\n{{c}}<|eot_id|>",
        "unknown": "{% for m in messages %}{{ m.content }}{% endfor %}",
    }
    for name, tpl in templates.items():
        cfg = dict(base, chat_template=tpl) if tpl else base
        put("chat_template", f"{name}", json.dumps(cfg) + "\0" + msgs)
    named = dict(base, chat_template=[{"name": "default", "template": templates["chatml"]},
                                      {"name": "tool_use", "template": "x"}], bos_token={"content": "<think>"})
    put("chat_template", "named", json.dumps(named) + "\0" + msgs)
    put("chat_template", "jinja", json.dumps(base) + "\0" + msgs + "\0" + templates["llama3"])


def seeds_jinja():
    """The test templates alone (the target's own conversation), and with variables."""
    folder = src("tests", "tokenizer", "templates")
    small = {"messages": [{"role": "user", "content": "hi {{ x }}"}], "tools": None, "add_generation_prompt": True,
             "bos_token": "<s>", "builtin_tools": ["brave_search"], "date_string": "1 Jan 2025"}
    for f in sorted(os.listdir(folder)):
        if f.endswith(".jinja"):
            with open(os.path.join(folder, f), encoding="utf-8") as t:
                tpl = t.read()
            put("jinja", f[:-6], tpl)
            put("jinja", f[:-6] + "_vars", tpl + "\0" + json.dumps(small))
    put("jinja", "constructs", "{% macro m(a, b=2) %}{{ a ~ b }}{% endmacro %}{% set ns = namespace(k=0) %}"
        "{% for x in range(3) if x is odd %}{% set ns.k = ns.k + loop.index %}{{ m(x) }}{% else %}none{% endfor %}"
        "{{ ns.k }}{{ [1, 'a', none][::-1] | tojson(indent=2) }}{{ 'a b'.split() | join('-') | upper }}"
        "{{ {'k': (1, 2.5)} }}{{ messages | selectattr('role', 'equalto', 'user') | map(attribute='content') | list }}")


def seeds_code_tests():
    for i, line in enumerate(jsonl(src("tests", "code", "hostile.jsonl"), 40)):
        row = json.loads(line)
        put("code_tests", f"hostile{i}", json.dumps(row["tests"]) if i % 2 else row["response"] + "\n" + json.dumps(row["tests"]))
    for i, line in enumerate(jsonl(src("data", "code_eval.jsonl"), 6, 16384) + jsonl(src("data", "lcb_2408_2502_public_tests.jsonl"), 6, 16384)):
        gt = json.loads(line)["reward_model"]["ground_truth"]
        put("code_tests", f"data{i}", gt if isinstance(gt, str) else json.dumps(gt))
    shapes = [{"inputs": ["1 2\n"], "outputs": ["3\n"], "abs_tol": 1e-6},
              {"inputs": ["[1, 2]"], "outputs": ["3"], "fn_name": "add"},
              {"assert_case": ["assert add(1, 2) == 3"]},
              {"import_prefix": "import math\n", "test_code": "def check(f):\n    assert f(1) == 1\n", "entry_point": "f"},
              {"inputs": ["x"], "outputs": ["y"], "checker": "import sys\nsys.exit(0)\n"}]
    for i, s in enumerate(shapes):
        put("code_tests", f"shape{i}", json.dumps(s))
    put("code_tests", "extract", "<think>```python\nx=1\n```</think>text ```python\nprint(1)\n``` and ```python\nprint(2)\n```")


def seeds_rows():
    """First byte: the reader (see fuzz/fuzz_rows.c); the rest: a JSONL file."""
    put("rows", "tokenize", "\0" + '{"text": "12+34=46"}\n{"text": "<think>a</think>\\\\boxed{5}<|endoftext|>"}\n')
    put("rows", "tokenize_special", "\x08" + '{"text": "<|endoftext|>1+1"}\n\n{"text": ""}\n')
    put("rows", "detokenize", "\x01" + '{"ids": [1, 2, 267, 268, 270]}\n{"ids": []}\n')
    put("rows", "chat", "\x02" + '{"messages": [{"role": "user", "content": "1+2?"}, {"role": "assistant", "content": "3"}]}\n')
    for i, line in enumerate(jsonl(src("tests", "math", "cases.jsonl"), 6)):
        c = json.loads(line)
        put("rows", f"verify_math{i}", "\x03" + json.dumps({"response": c["response"], "gold": c["gold"]}) + "\n")
    put("rows", "model_rows", "\x04" + '{"prompt": "3+4=", "response": "7<|endoftext|>"}\n'
        '{"prompt_ids": [1, 2], "response_ids": [3], "ids": [5, 6, 7], "advantage": 0.5, "old_logprobs": [-0.1], '
        '"response_mask": [1]}\n')
    data = jsonl(src("data", "deepscaler_first500.jsonl"), 3) + jsonl(src("data", "aime24.jsonl"), 2)
    put("rows", "dataset", "\x05" + "\n".join(data) + "\n")
    put("rows", "dataset_filtered", "\x06" + "\n".join(data) + "\n")


def seeds_checksums():
    """checksums.json records for the scratch file fuzz/fuzz_checksums.c writes (weights)."""
    import xxhash
    weights = b"0123456789abcdef0123456789abcdef"
    good = {"bytes": len(weights), "xxh3_128": xxhash.xxh3_128_hexdigest(weights)}
    record = lambda files, alg="XXH3-128": json.dumps({"algorithm": alg, "files": files}, indent=1)
    put("checksums", "intact", record({"weights": good}))
    put("checksums", "damaged", record({"weights": dict(good, xxh3_128="0" * 32)}))
    put("checksums", "cut_short", record({"weights": dict(good, bytes=len(weights) + 1)}))
    put("checksums", "missing", record({"weights": good, "model.safetensors": good}))
    put("checksums", "outside", record({"../weights": good, "sub/../weights": good}))
    put("checksums", "algorithm", record({"weights": good}, alg="SHA-256"))
    put("checksums", "empty", record({}))


def async_batch(index, M, prompts, completions, versions, switches, state="{}"):
    """One step batch in the layout of src/train/wire.c (little-endian): header, groups' rows and
    prompts, per-sample arrays, the length-prefixed summary, the completions (ids, log-probs,
    with a mask when given)."""
    G, n = len(prompts), len(completions)
    out = b"OR1B" + struct.pack("<4q", 1, index, M, G) + struct.pack(f"<{G}I", *range(G))
    for p in prompts:
        out += struct.pack("<q", len(p)) + struct.pack(f"<{len(p)}i", *p)
    lens = [len(c[0]) for c in completions]
    out += struct.pack(f"<{n}f", *[1.0 if i % 2 else 0.0 for i in range(n)]) + struct.pack(f"<{n}i", *lens)
    out += struct.pack(f"<{n}i", *lens) + bytes(n) + struct.pack(f"<{n}f", *[0.5] * n) + bytes([1] * n)
    out += struct.pack(f"<{n}i", *versions) + struct.pack(f"<{n}i", *switches)
    summary = struct.pack("<5q", 0, 0, 0, 0, 0) + struct.pack("<dqdq", 0.0, n, 0.0, 0) + bytes(48)
    summary += struct.pack("<d", 0.0) + struct.pack(f"<{G}i", *range(G)) + struct.pack(f"<{G}i", *[0] * G)
    summary += struct.pack("<7q", G, 0, 0, 0, 0, 0, G) + struct.pack("<q", sum(lens))
    summary += struct.pack("<4d", 0.1, 0.0, 0.0, 0.1) + struct.pack("<3q", sum(lens), 0, len(state)) + state.encode()
    out += struct.pack("<q", len(summary)) + summary
    for ids, mask in completions:
        out += struct.pack("<3q", len(ids), 1 if mask else 0, 1 | (2 if mask else 0))
        out += struct.pack(f"<{len(ids)}i", *ids) + struct.pack(f"<{len(ids)}f", *[-0.5] * len(ids))
        if mask:
            out += bytes(mask)
    return out


def seeds_async_batch():
    """Step batches: plain, with a partial rollout's switch, with tool masks, empty."""
    put("async_batch", "plain", async_batch(3, 2, [[5, 6, 7]], [([1, 2, 3], None), ([4], None)], [1, 1], [3, 1]))
    put("async_batch", "switch", async_batch(4, 2, [[5, 6], [8]], [([1, 2, 3, 4], None), ([9, 9], None),
                                                                  ([2], None), ([], None)], [2, 2, 3, 3], [2, 2, 1, 0],
                                              '{"epoch": 0, "pos": 4}'))
    put("async_batch", "tools", async_batch(2, 1, [[1, 2]], [([3, 4, 5, 6], [1, 0, 0, 1])], [0], [4]))
    put("async_batch", "empty", async_batch(1, 1, [], [], [], []))


for make in [seeds_async_batch, seeds_checksums, seeds_train_config, seeds_set_value, seeds_safetensors, seeds_data_row, seeds_math_verify,
             seeds_model_config, seeds_tokenizer, seeds_chat_template, seeds_jinja, seeds_code_tests, seeds_rows,
             seeds_gguf]:
    make()
