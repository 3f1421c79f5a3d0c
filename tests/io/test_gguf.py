"""or1's GGUF reader, dequantizers and writer against gguf-py (PyPI gguf 0.19.0), through
tests/io/gguf_tool.c.

usage: test_gguf.py GGUF_TOOL PART
  blocks  random blocks of every type or1 dequantizes (quantized by gguf-py where it can, random
          bytes with finite half scales for the K-quants), written by GGUFWriter: or1's fp32 values
          equal gguf-py's quants.dequantize bit for bit
  meta    GGUFWriter files with every value type, typed arrays, alignment 64 and 1-4-dim tensors:
          or1's dump (keys, types, values, tensor infos) equals GGUFReader's view, values too
  writer  files from or1's writer: GGUFReader reads the same keys, types, shapes and values; the
          tensor bytes equal gguf-py's quantize (Q8_0, Q4_0, Q4_1, F16, BF16); the whole file equals
          GGUFWriter's for the same content, byte for byte
  real    the GGUF file named by OR1_GGUF_REAL (SmolLM2-135M-Instruct Q4_1): metadata as in meta,
          every tensor bit-equal to gguf-py's; exits 77 (skip) when the variable or file is absent"""
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from gguf import GGUFReader, GGUFValueType, GGUFWriter, quants
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType as T

from or1test.check import check, finish

TOOL, PART = sys.argv[1], sys.argv[2]
SCRATCH = tempfile.mkdtemp(prefix="or1-gguf-")
atexit.register(shutil.rmtree, SCRATCH, ignore_errors=True)
RNG = np.random.default_rng(20261204)
VNAMES = {GGUFValueType.UINT8: "u8", GGUFValueType.INT8: "i8", GGUFValueType.UINT16: "u16",
          GGUFValueType.INT16: "i16", GGUFValueType.UINT32: "u32", GGUFValueType.INT32: "i32",
          GGUFValueType.FLOAT32: "f32", GGUFValueType.BOOL: "bool", GGUFValueType.STRING: "string",
          GGUFValueType.ARRAY: "array", GGUFValueType.UINT64: "u64", GGUFValueType.INT64: "i64",
          GGUFValueType.FLOAT64: "f64"}
# where each K-quant keeps its half scales (byte offsets in the block)
K_HALVES = {T.Q2_K: [80, 82], T.Q3_K: [108], T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208]}


def scratch(name):
    """A path in this run's scratch folder."""
    return os.path.join(SCRATCH, name)


def tool(*args):
    """Runs gguf_tool; returns its stdout (bytes), failing the test on a non-zero exit."""
    r = subprocess.run([TOOL, *args], capture_output=True)
    if r.returncode != 0:
        print(r.stderr.decode(errors="replace"), file=sys.stderr)
        check(False, f"gguf_tool {' '.join(args)} exited {r.returncode}")
        finish(f"io_gguf_{PART}")
    if r.stderr:
        print(r.stderr.decode(errors="replace").strip())
    return r.stdout


def or1_dump(path):
    """or1's view of a file's keys and tensors."""
    return json.loads(tool("dump", path).decode("utf-8", "surrogateescape"))


def or1_values(path, reader):
    """or1's fp32 values of every tensor, split per tensor in file order."""
    out = scratch("values.f32")
    tool("deq", path, out)
    flat = np.fromfile(out, dtype=np.float32)
    os.unlink(out)
    parts, at = [], 0
    for t in reader.tensors:
        parts.append(flat[at:at + int(t.n_elements)])
        at += int(t.n_elements)
    check(at == flat.size, f"or1 wrote {flat.size} values, the tensors hold {at}")
    return parts


def bits_equal(what, got, want):
    """got and want (fp32) have the same bit patterns; a failure names the first difference."""
    got, want = np.ascontiguousarray(got, np.float32).ravel(), np.ascontiguousarray(want, np.float32).ravel()
    if got.size != want.size:
        return check(False, f"{what}: {got.size} values, expected {want.size}")
    diff = np.nonzero(got.view(np.uint32) != want.view(np.uint32))[0]
    return check(diff.size == 0, f"{what}: {diff.size} values differ; first at {diff[:1]}: "
                                 f"or1 {got[diff[:1]]}, gguf-py {want[diff[:1]]}")


def random_halves(n):
    """n finite halves: mostly small, some subnormal, some large, some zero and negative zero."""
    h = (RNG.standard_normal(n) * 0.05).astype(np.float16)
    pick = RNG.integers(0, 10, n)
    h[pick == 0] = (RNG.standard_normal((pick == 0).sum()) * 1e-6).astype(np.float16)  # subnormal
    h[pick == 1] = (RNG.standard_normal((pick == 1).sum()) * 3000).astype(np.float16)
    h[pick == 2] = np.float16(0)
    h[pick == 3] = np.float16(-0.0)
    return h


def test_data(rows, cols):
    """fp32 test values: normal noise with blocks of zeros, constants, ties and wide ranges."""
    x = (RNG.standard_normal((rows, cols)) * np.exp(RNG.uniform(-6, 6, (rows, 1)))).astype(np.float32)
    if rows < 2 or cols < 96:
        return x
    x[0, :32] = 0
    x[0, 32:64] = 1.25
    x[1, :32] = np.arange(32) - 16
    x[1, 32:64] = np.linspace(-127, 127, 32).round() / 2
    x[1, 64:96] = [127] + [k + 0.5 for k in range(-15, 16)]  # Q8_0: d = 1, ties at k + 0.5
    x[0, 64:96] = 0
    x[0, 64:67] = [1e-40, -1e-40, 5e-41]  # a subnormal scale: 1 / d is infinite
    return x


def raw_blocks(t, rows, cols):
    """(raw array for GGUFWriter, gguf-py's dequantized fp32) for type t with ne = {cols, rows}."""
    if t in K_HALVES:
        block, size = GGML_QUANT_SIZES[t]
        raw = RNG.integers(0, 256, (rows, cols // block * size), dtype=np.uint8)
        blocks = raw.reshape(-1, size)
        for at in K_HALVES[t]:
            blocks[:, at:at + 2] = random_halves(blocks.shape[0]).view(np.uint8).reshape(-1, 2)
    else:
        raw = quants.quantize(test_data(rows, cols), t)
    return raw, quants.dequantize(raw, t)


def add_raw(writer, name, raw, t):
    """Adds a tensor that gguf-py quantized (or random bytes) as it stores them."""
    if t in (T.F32, T.F16):
        writer.add_tensor(name, raw)
    else:
        writer.add_tensor(name, raw, raw_dtype=t)


def write_gguf(path, build):
    """A GGUFWriter file: build(writer) adds keys and tensors."""
    w = GGUFWriter(path, arch="llama")
    build(w)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def part_blocks():
    """Every supported type, several shapes, bit-equal to gguf-py."""
    types = [T.F32, T.F16, T.BF16, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K]
    want = []
    path = scratch("blocks.gguf")

    def build(w):
        for t in types:
            for rows, cols in [(1, 256), (7, 768), (64, 1024)]:
                raw, values = raw_blocks(t, rows, cols)
                add_raw(w, f"{t.name}.{rows}", raw, t)
                want.append((f"{t.name} {rows}x{cols}", values))
    write_gguf(path, build)
    got = or1_values(path, GGUFReader(path))
    for (what, values), g in zip(want, got):
        bits_equal(what, g, values)


def build_meta(w):
    """Every value type, typed arrays, alignment 64, tensors of 1 to 4 dims."""
    w.add_custom_alignment(64)
    w.add_uint8("v.u8", 255)
    w.add_int8("v.i8", -128)
    w.add_uint16("v.u16", 65535)
    w.add_int16("v.i16", -32768)
    w.add_uint32("v.u32", 4294967295)
    w.add_int32("v.i32", -2147483648)
    w.add_float32("v.f32", 3.4e38)
    w.add_float32("v.f32_small", 1.17e-38)
    w.add_bool("v.true", True)
    w.add_bool("v.false", False)
    w.add_string("v.str", "unicode: é ✓ \u4e2d \"quoted\" \\ \n tab\t")
    w.add_string("v.empty", "")
    w.add_uint64("v.u64", 2**64 - 1)
    w.add_int64("v.i64", -2**63)
    w.add_float64("v.f64", -1.0000000000000002)
    w.add_array("v.arr_str", ["a", "", "ĠĊ", "x" * 300])
    w.add_array("v.arr_i32", [1, -2, 2**31 - 1])
    w.add_array("v.arr_f32", [0.1, -1e-30, 1e30])
    w.add_array("v.arr_bool", [True, False, True])
    for vt in [GGUFValueType.UINT8, GGUFValueType.INT8, GGUFValueType.UINT16, GGUFValueType.INT16,
               GGUFValueType.UINT32, GGUFValueType.UINT64, GGUFValueType.INT64, GGUFValueType.FLOAT64]:
        w.add_key_value(f"v.arr_{VNAMES[vt]}", [0, 1, 7], GGUFValueType.ARRAY, sub_type=vt)
    w.add_tensor("t1", RNG.standard_normal(5).astype(np.float32))
    w.add_tensor("t2", RNG.standard_normal((3, 2)).astype(np.float16))
    w.add_tensor("t3", quants.quantize(test_data(2 * 3, 64), T.Q8_0).reshape(2, 3, 68), raw_dtype=T.Q8_0)
    w.add_tensor("t4", quants.quantize(RNG.standard_normal((2, 1, 3, 256)).astype(np.float32), T.Q4_1),
                 raw_dtype=T.Q4_1)
    w.add_tensor("t5.empty", np.zeros((0, 4), np.float32))


def same_value(kind, got, want):
    """One value: exact for integers, strings and bools and f64; as fp32 for f32."""
    if kind == "f32":
        return got is not None and np.float32(got) == np.float32(want)
    return got == want


def compare_meta(path):
    """or1's dump against GGUFReader: keys in order, types, values, tensor infos, offsets."""
    reader, dump = GGUFReader(path), or1_dump(path)
    fields = [f for f in reader.fields.values() if not f.name.startswith("GGUF.")]
    check(dump["version"] == 3, f"version {dump['version']}")
    check(len(dump["kv"]) == len(fields), f"{len(dump['kv'])} keys, GGUFReader has {len(fields)}")
    for kv, f in zip(dump["kv"], fields):
        main, sub = VNAMES[f.types[0]], VNAMES[f.types[-1]]
        ok = check(kv["key"] == f.name and kv["type"] == main and kv["elem"] == sub,
                   f"key {kv['key']} {kv['type']}/{kv['elem']}, GGUFReader: {f.name} {main}/{sub}")
        want = f.contents()
        if main == "array":
            ok = ok and check(len(kv["value"]) == len(want), f"{f.name}: {len(kv['value'])} elements, want {len(want)}")
            ok = ok and check(all(same_value(sub, g, w) for g, w in zip(kv["value"], want)), f"{f.name}: values")
        else:
            check(same_value(main, kv["value"], want), f"{f.name}: {kv['value']!r}, want {want!r}")
    align = reader.fields.get("general.alignment")
    check(dump["alignment"] == (align.contents() if align else 32), f"alignment {dump['alignment']}")
    check(len(dump["tensors"]) == len(reader.tensors), "tensor count")
    for d, t in zip(dump["tensors"], reader.tensors):
        check(d["name"] == t.name and d["type"] == t.tensor_type.name and d["ne"] == [int(x) for x in t.shape] and
              d["numel"] == int(t.n_elements) and d["nbytes"] == int(t.n_bytes) and
              dump["data_offset"] + d["offset"] == int(t.data_offset),
              f"tensor {d} vs GGUFReader {t.name} {t.tensor_type.name} {list(t.shape)} at {t.data_offset}")
    return reader


def compare_values(path, reader):
    """Every tensor dequantized by or1 equals gguf-py's, bit for bit."""
    for t, got in zip(reader.tensors, or1_values(path, reader)):
        bits_equal(t.name, got, quants.dequantize(t.data, t.tensor_type))


def part_meta():
    """GGUFWriter's file through or1's reader."""
    path = scratch("meta.gguf")
    write_gguf(path, build_meta)
    compare_values(path, compare_meta(path))


# What the writer part writes: (name, type, numpy shape, data); ne is the shape reversed.
def writer_tensors():
    """Tensors of every writable type and 1 to 4 dims (the F16 one with values at the rounding edges)."""
    edges = np.array([65519.0, 65520.0, -65504.0, 1e-8, 2.0**-25, 1.5 * 2**-25, 2.0**-24 * 1.5, 0.1, -0.0,
                      1.0 + 2.0**-11, 1.0 + 3 * 2.0**-11, 6e-5, 1e5, 2.0**-14, 3e-41, 1.0], np.float32)
    wide = (RNG.standard_normal(240) * np.exp(RNG.uniform(-25, 12, 240))).astype(np.float32)
    return [("w.q8", T.Q8_0, (4, 96), test_data(4, 96)),
            ("w.q8_3d", T.Q8_0, (2, 2, 64), test_data(4, 64).reshape(2, 2, 64)),
            ("w.q4_0", T.Q4_0, (3, 128), test_data(3, 128)),
            ("w.q4_1", T.Q4_1, (1, 2, 2, 128), test_data(4, 128).reshape(1, 2, 2, 128)),
            ("w.f16", T.F16, (256,), np.concatenate([edges, wide])),
            ("w.bf16", T.BF16, (3, 5), test_data(3, 5)),
            ("w.f32", T.F32, (7,), test_data(1, 7)[0])]


WRITER_KV = [("general.architecture", "str", "llama"), ("w.u32", "u32", 4294967295), ("w.i32", "i32", -5),
             ("w.f32", "f32", 0.1), ("w.bool", "bool", True), ("w.str", "str", "é \"q\" ✓"),
             ("w.arr_str", "arr_str", ["<s>", "Ġthe", ""]), ("w.arr_i32", "arr_i32", [3, -1, 0]),
             ("w.arr_f32", "arr_f32", [0.5, -2.25, 1e-3])]


def part_writer():
    """or1's writer read by GGUFReader, and the same file written by GGUFWriter."""
    tensors, spec = writer_tensors(), {"kv": [], "tensors": []}
    for key, kind, value in WRITER_KV:
        spec["kv"].append({"key": key, "type": kind, "value": value})
    for name, t, shape, data in tensors:
        data.astype(np.float32).tofile(scratch(name))
        spec["tensors"].append({"name": name, "type": t.name, "ne": list(shape[::-1]), "data": scratch(name)})
    with open(scratch("spec.json"), "w") as f:
        json.dump(spec, f)
    ours = scratch("or1.gguf")
    tool("write", scratch("spec.json"), ours)
    reader = GGUFReader(ours)
    fields = [f for f in reader.fields.values() if not f.name.startswith("GGUF.")]
    kinds = {"str": "string", "u32": "u32", "i32": "i32", "f32": "f32", "bool": "bool", "arr_str": "array",
             "arr_i32": "array", "arr_f32": "array"}
    check([f.name for f in fields] == [k for k, _, _ in WRITER_KV], "keys in order")
    for f, (key, kind, value) in zip(fields, WRITER_KV):
        check(VNAMES[f.types[0]] == kinds[kind], f"{key}: type {VNAMES[f.types[0]]}")
        got = f.contents()
        if kind == "arr_f32":
            check(list(np.float32(got)) == list(np.float32(value)), f"{key}: {got}")
        elif kind == "f32":
            check(np.float32(got) == np.float32(value), f"{key}: {got}")
        else:
            check(got == value, f"{key}: {got!r}, want {value!r}")
    check(len(reader.tensors) == len(tensors), "tensor count")
    for t, (name, qt, shape, data) in zip(reader.tensors, tensors):
        check(t.name == name and t.tensor_type == qt and [int(x) for x in t.shape] == list(shape[::-1]),
              f"{t.name} {t.tensor_type.name} {list(t.shape)}, want {name} {qt.name} {list(shape[::-1])}")
        want = np.ascontiguousarray(quants.quantize(data, qt)).view(np.uint8).ravel()
        got = np.ascontiguousarray(t.data).view(np.uint8).ravel()
        diff = np.nonzero(got != want)[0] if got.size == want.size else [-1]
        check(len(diff) == 0, f"{name}: bytes differ from gguf-py's quantize at {list(diff[:4])} "
                              f"(or1 {got[diff[:4]] if got.size == want.size else got.size}, "
                              f"gguf-py {want[diff[:4]] if got.size == want.size else want.size})")

    def build(w):
        for key, kind, value in WRITER_KV[1:]:
            {"str": w.add_string, "u32": w.add_uint32, "i32": w.add_int32, "f32": w.add_float32,
             "bool": w.add_bool}.get(kind, w.add_array)(key, value)
        for name, qt, shape, data in tensors:
            add_raw(w, name, quants.quantize(data, qt), qt)
    theirs = scratch("gguf-py.gguf")
    write_gguf(theirs, build)
    a, b = open(ours, "rb").read(), open(theirs, "rb").read()
    first = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
    check(a == b, f"or1's file ({len(a)} bytes) differs from GGUFWriter's ({len(b)} bytes) from byte {first}")


def part_real():
    """A real model file, when one is named."""
    path = os.environ.get("OR1_GGUF_REAL", "")
    if not path or not os.path.isfile(path):
        print(f"skipped: OR1_GGUF_REAL does not name a file ({path!r})")
        sys.exit(77)
    reader = compare_meta(path)
    compare_values(path, reader)


{"blocks": part_blocks, "meta": part_meta, "writer": part_writer, "real": part_real}[PART]()
finish(f"io_gguf_{PART}")
