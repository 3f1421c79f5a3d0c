#!/usr/bin/env python3
"""scripts/parquet_to_rows.py: its Parquet reader against files of known contents, its row
mapping on a Skywork-OR1-RL-Data-shaped file, and its errors on hostile inputs.

The reader's correctness rests on the Apache parquet-testing files under tests/data/parquet/
(written by parquet-mr, parquet-cpp, parquet-rs and Impala, not by us): their expected values are
written here by hand from that repository's documentation (README.md, map_no_value.md,
old_list_structure.md, int32_with_null_pages.md) and from the values other readers' test suites
publish for them, and every column's decoded null count, minimum and maximum are compared with
the statistics its writer stored in the footer. The Skywork-shaped file is built below by a tiny
writer of our own (PLAIN values, levels computed by hand): it checks only the mapping to or1 rows,
the command line and that or1's dataset loader accepts the result.

Usage: test_parquet.py REPO_ROOT SCRATCH_DIR DATA_DRIVER
"""
import importlib.util
import json
import os
import struct
import subprocess
import sys
import zlib

from or1test.check import check, finish
from or1test.files import fresh

REPO, SCRATCH, DRIVER = sys.argv[1], fresh(sys.argv[2]), sys.argv[3]
SCRIPT = os.path.join(REPO, "scripts", "parquet_to_rows.py")
FILES = os.path.join(REPO, "tests", "data", "parquet")
_spec = importlib.util.spec_from_file_location("parquet_to_rows", SCRIPT)
P = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(P)


def records(name):
    """Every record of an Apache test file, read with the module under test."""
    return list(P.ParquetFile(os.path.join(FILES, name)).records())


def column(name, key):
    """One top-level field of every record of a test file."""
    return [r[key] for r in records(name)]


def close(a, b):
    """Float lists equal to 1e-6 (FLOAT columns hold binary32 values)."""
    return len(a) == len(b) and all(abs(x - y) <= 1e-6 * max(1.0, abs(y)) for x, y in zip(a, b))


# --- Apache parquet-testing files with documented or widely published contents -----------------

def check_alltypes():
    """alltypes_plain (PLAIN, uncompressed), its snappy variant and alltypes_dictionary (dictionary
    pages): the Impala 'alltypes' rows every Parquet reader's test suite lists (ids 4,5,6,7,2,3,0,1;
    even ids true/0/0.0, odd ids false/1/1.1/10.1; dates 03/01/09 .. 01/01/09)."""
    rows = records("alltypes_plain.parquet")
    check([r["id"] for r in rows] == [4, 5, 6, 7, 2, 3, 0, 1], f"alltypes_plain ids {[r['id'] for r in rows]}")
    check([r["bool_col"] for r in rows] == [True, False] * 4, "alltypes_plain bool_col")
    check([r["tinyint_col"] for r in rows] == [0, 1] * 4 and [r["int_col"] for r in rows] == [0, 1] * 4,
          "alltypes_plain tinyint_col/int_col")
    check([r["bigint_col"] for r in rows] == [0, 10] * 4, "alltypes_plain bigint_col")
    check(close([r["float_col"] for r in rows], [0.0, 1.1] * 4), "alltypes_plain float_col")
    check([r["double_col"] for r in rows] == [0.0, 10.1] * 4, "alltypes_plain double_col")
    dates = [b"03/01/09"] * 2 + [b"04/01/09"] * 2 + [b"02/01/09"] * 2 + [b"01/01/09"] * 2
    check([r["date_string_col"] for r in rows] == dates, f"alltypes_plain date_string_col {rows[0]}")
    check([r["string_col"] for r in rows] == [b"0", b"1"] * 4, "alltypes_plain string_col")
    # INT96 timestamps: 2009-03-01 00:00 and 00:01 UTC for the first two rows, in nanoseconds.
    check([r["timestamp_col"] for r in rows[:2]] == [1235865600 * 10**9, 1235865660 * 10**9], "INT96 timestamps")
    check(column("alltypes_plain.snappy.parquet", "id") == [6, 7], "alltypes_plain.snappy ids")
    check(column("alltypes_plain.snappy.parquet", "date_string_col") == [b"04/01/09"] * 2, "snappy dates")
    d = records("alltypes_dictionary.parquet")
    check([r["id"] for r in d] == [0, 1] and [r["bigint_col"] for r in d] == [0, 10], f"alltypes_dictionary {d}")


def check_nested():
    """Nested lists (three levels, a null inner list), a v2 file, a struct holding a repeated group
    without LIST annotation, maps with and without values, the legacy two-level list, an empty
    list."""
    want = [[[["a", "b"], ["c"]], [None, ["d"]]],
            [[["a", "b"], ["c", "d"]], [None, ["e"]]],
            [[["a", "b"], ["c", "d"], ["e"]], [None, ["f"]]]]
    check(column("nested_lists.snappy.parquet", "a") == want, "nested_lists.snappy a")
    check(column("nested_lists.snappy.parquet", "b") == [1, 1, 1], "nested_lists.snappy b")
    v2 = records("datapage_v2.snappy.parquet")
    check([r["a"] for r in v2] == ["abc", "abc", "abc", None, "abc"], f"datapage_v2 a {v2}")
    check([r["b"] for r in v2] == [1, 2, 3, 4, 5], "datapage_v2 b (DELTA_BINARY_PACKED)")
    check([r["c"] for r in v2] == [2.0, 3.0, 4.0, 5.0, 2.0], "datapage_v2 c")
    check([r["d"] for r in v2] == [True, True, True, False, True], "datapage_v2 d (RLE booleans)")
    check([r["e"] for r in v2] == [[1, 2, 3], None, None, [1, 2, 3], [1, 2]], "datapage_v2 e")
    phones = [None, None, {"phone": []},
              {"phone": [{"number": 5555555555, "kind": None}]},
              {"phone": [{"number": 1111111111, "kind": "home"}]},
              {"phone": [{"number": 1111111111, "kind": "home"}, {"number": 2222222222, "kind": None},
                         {"number": 3333333333, "kind": "mobile"}]}]
    rows = records("repeated_no_annotation.parquet")
    check([r["id"] for r in rows] == [1, 2, 3, 4, 5, 6], "repeated_no_annotation id")
    check([r["phoneNumbers"] for r in rows] == phones, f"repeated_no_annotation phoneNumbers {rows}")
    rows = records("map_no_value.parquet")
    keys = [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
    check([r["my_map"] for r in rows] == [{k: None for k in ks} for ks in keys], f"map_no_value my_map {rows}")
    check([list(r["my_map_no_v"]) for r in rows] == keys, "map_no_value my_map_no_v keys")
    check([r["my_list"] for r in rows] == keys, "map_no_value my_list")
    check(column("old_list_structure.parquet", "a") == [[[1, 2], [3, 4]]], "old_list_structure")
    check(column("null_list.parquet", "emptylist") == [[]], "null_list")


def check_pages_and_codecs():
    """Many v1 pages with a page of nulls (int32_with_null_pages.md's column index: 10 pages of
    100 rows, their null counts, minima and maxima), ZSTD v2 pages of nulls only, two concatenated
    GZIP members, RLE-encoded booleans with nulls under GZIP."""
    vals = column("int32_with_null_pages.parquet", "int32_field")
    nulls = [8, 55, 100, 52, 16, 12, 5, 7, 8, 12]
    lows = [-2135807632, -2104090659, None, -2116849709, -2048691758, -2017923401, -2136906554, -2113313110,
            -2046900272, -1941944785]
    highs = [2144701119, 1745329571, None, 2077105757, 2143189382, 2087827129, 2125689411, 2145722375,
             2087168549, 2078586537]
    check(len(vals) == 1000, f"int32_with_null_pages: {len(vals)} rows")
    for i in range(10):
        page = vals[100 * i:100 * (i + 1)]
        got = [v for v in page if v is not None]
        ok = page.count(None) == nulls[i] and (min(got) if got else None) == lows[i] and (
            max(got) if got else None) == highs[i]
        check(ok, f"int32_with_null_pages page {i}: nulls {page.count(None)}, min/max "
                  f"{min(got) if got else None}/{max(got) if got else None}")
    check(column("page_v2_empty_compressed.parquet", "integer_column") == [None] * 10, "page_v2_empty_compressed")
    longs = column("concatenated_gzip_members.parquet", "long_col")
    check(len(longs) == 513 and min(longs) == 1 and max(longs) == 513, "concatenated_gzip_members")
    b = column("rle_boolean_encoding.parquet", "datatype_boolean")
    check(len(b) == 68 and b.count(True) == 36 and b.count(False) == 26 and
          [i for i, v in enumerate(b) if v is None] == [2, 15, 23, 38, 48, 60], f"rle_boolean_encoding {b}")


def stat_value(raw, leaf):
    """A footer statistic's bytes as a value of the leaf's physical type (PLAIN, as stored)."""
    fmt = {0: "<?", 1: "<i", 2: "<q", 4: "<f", 5: "<d"}.get(leaf.type)
    if fmt is None:
        return raw.decode("utf-8") if leaf.is_string() else raw
    return struct.unpack(fmt, raw)[0]


def check_statistics():
    """Every column chunk of every Apache file against the writer's own statistics: the count of
    values below max definition level is null_count, and min/max (min_value/max_value, or the
    older min/max for signed integers and strings) are the decoded values' bounds."""
    compared = 0
    for name in sorted(f for f in os.listdir(FILES) if f.endswith(".parquet")):
        if name == "delta_length_byte_array.parquet":
            continue  # its encoding is not supported (checked among the errors)
        pf = P.ParquetFile(os.path.join(FILES, name))
        for g, rg in enumerate(pf.row_groups):
            for leaf, chunk in zip(pf.leaves, rg[1]):
                meta = chunk[3]
                stats = meta.get(12)
                if not stats:
                    continue
                reps, defs, vals = P.read_chunk(pf.buf, meta, leaf, name)
                where = f"{name} {'.'.join(leaf.path)}"
                if 3 in stats:
                    nnull = sum(1 for d in defs if d < leaf.max_def)
                    check(nnull == stats[3], f"{where}: {nnull} nulls, the footer says {stats[3]}")
                    compared += 1
                lo, hi = stats.get(6, stats.get(2)), stats.get(5, stats.get(1))
                present = [v for v, d in zip(vals, defs) if d == leaf.max_def]
                if lo is not None and hi is not None and present and leaf.type in (0, 1, 2, 4, 5, 6):
                    got = (min(present), max(present))
                    want = (stat_value(lo, leaf), stat_value(hi, leaf))
                    check(got == want, f"{where}: min/max {got}, the footer says {want}")
                    compared += 1
    check(compared >= 20, f"only {compared} statistics compared")


# --- A Skywork-OR1-RL-Data-shaped file (our own writer: the row mapping, not the reader) --------

def uvarint(n):
    """An unsigned LEB128 varint."""
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def zz(n):
    """A zigzag varint."""
    return uvarint((n << 1) ^ (n >> 63))


def tstruct(fields):
    """A Thrift compact struct from (field id, kind, value) in increasing id order; kinds: i32,
    i64, bin, struct, list-i32, list-bin, list-struct."""
    out, last = bytearray(), 0
    types = {"i32": 5, "i64": 6, "bin": 8, "struct": 12, "list-i32": 9, "list-bin": 9, "list-struct": 9}
    for fid, kind, v in fields:
        out.append(((fid - last) << 4) | types[kind])
        last = fid
        if kind in ("i32", "i64"):
            out += zz(v)
        elif kind == "bin":
            v = v.encode() if isinstance(v, str) else v
            out += uvarint(len(v)) + v
        elif kind == "struct":
            out += tstruct(v)
        else:
            etype = {"list-i32": 5, "list-bin": 8, "list-struct": 12}[kind]
            out.append((min(len(v), 15) << 4) | etype)
            if len(v) >= 15:
                out += uvarint(len(v))
            for e in v:
                if etype == 5:
                    out += zz(e)
                elif etype == 8:
                    e = e.encode() if isinstance(e, str) else e
                    out += uvarint(len(e)) + e
                else:
                    out += tstruct(e)
    return bytes(out + b"\x00")


def levels(vals, width):
    """Levels as the v1 page stores them: a 4-byte length, then one RLE run per level."""
    body = b"".join(uvarint(2) + bytes([v]) for v in vals) if width else b""
    return struct.pack("<I", len(body)) + body


def plain(vals, ptype):
    """PLAIN values: INT64 or BYTE_ARRAY (str)."""
    if ptype == 2:
        return b"".join(struct.pack("<q", v) for v in vals)
    return b"".join(struct.pack("<I", len(v.encode())) + v.encode() for v in vals)


def compress(codec, data):
    """A page body compressed with codec 0 (none), 1 (snappy), 2 (gzip) or 6 (zstd)."""
    if codec == 1:
        import snappy
        return snappy.compress(data)
    if codec == 2:
        z = zlib.compressobj(wbits=31)
        return z.compress(data) + z.flush()
    if codec == 6:
        import zstandard
        return zstandard.ZstdCompressor().compress(data)
    return data


# The schema of the dataset card (Skywork/Skywork-OR1-RL-Data, dataset_info.features) as pyarrow
# writes it: every field optional, the prompt a three-level LIST of structs.
MODELS = ["DeepSeek-R1-Distill-Qwen-1.5B", "DeepSeek-R1-Distill-Qwen-32B", "DeepSeek-R1-Distill-Qwen-7B"]


def schema_elements():
    """The flat schema list: (name, type or None, repetition, children, converted type)."""
    s = lambda n: (n, 6, 1, 0, 0)  # an optional UTF8 string
    i = lambda n: (n, 2, 1, 0, None)  # an optional INT64
    return [("schema", None, 0, 5, None), s("data_source"), ("prompt", None, 1, 1, 3), ("list", None, 2, 1, None),
            ("element", None, 1, 2, None), s("content"), s("role"), s("ability"), ("reward_model", None, 1, 2, None),
            s("ground_truth"), s("style"), ("extra_info", None, 1, 2, None), i("index"),
            ("model_difficulty", None, 1, 3, None)] + [i(m) for m in MODELS]


ROWS = [
    {"data_source": "train-math-numina", "prompt": [{"role": "user", "content": "What is 1+1?"}],
     "ability": "math", "reward_model": {"ground_truth": "[\"2\"]", "style": "rule"},
     "extra_info": {"index": 0, "model_difficulty": dict(zip(MODELS, [3, 16, 9]))}},
    {"data_source": "train-code-taco", "prompt": [{"role": "system", "content": "Be brief."},
                                                  {"role": "user", "content": "Print 42."}],
     "ability": "code", "reward_model": {"ground_truth": "{\"inputs\": [\"\\n\"], \"outputs\": [\"42\\n\"]}",
                                         "style": "rule"},
     "extra_info": {"index": 1, "model_difficulty": dict(zip(MODELS, [0, None, 2]))}},
    {"data_source": "train-math-numina", "prompt": [{"role": "user", "content": "Solve x² = 4 for x > 0."}],
     "ability": "math", "reward_model": {"ground_truth": "[\"2\"]", "style": "rule"},
     "extra_info": {"index": 2, "model_difficulty": None}},
]

# Each column by hand: path, type, max rep, max def, rep levels, def levels, values, codec.
COLUMNS = [
    (["data_source"], 6, 0, 1, [], [1, 1, 1], ["train-math-numina", "train-code-taco", "train-math-numina"], 0),
    (["prompt", "list", "element", "content"], 6, 1, 4, [0, 0, 1, 0], [4, 4, 4, 4],
     ["What is 1+1?", "Be brief.", "Print 42.", "Solve x² = 4 for x > 0."], 1),
    (["prompt", "list", "element", "role"], 6, 1, 4, [0, 0, 1, 0], [4, 4, 4, 4], ["user", "system", "user", "user"], 0),
    (["ability"], 6, 0, 1, [], [1, 1, 1], ["math", "code", "math"], 2),
    (["reward_model", "ground_truth"], 6, 0, 2, [], [2, 2, 2], [r["reward_model"]["ground_truth"] for r in ROWS], 6),
    (["reward_model", "style"], 6, 0, 2, [], [2, 2, 2], ["rule"] * 3, 0),
    (["extra_info", "index"], 2, 0, 2, [], [2, 2, 2], [0, 1, 2], 0),
    (["extra_info", "model_difficulty", MODELS[0]], 2, 0, 3, [], [3, 3, 1], [3, 0], 0),
    (["extra_info", "model_difficulty", MODELS[1]], 2, 0, 3, [], [3, 2, 1], [16], 0),
    (["extra_info", "model_difficulty", MODELS[2]], 2, 0, 3, [], [3, 3, 1], [9, 2], 0),
]


def write_skywork(path, codec_override=None):
    """Writes ROWS as a parquet file: one row group, one v1 data page per column."""
    out = bytearray(b"PAR1")
    chunks = []
    for cpath, ptype, max_rep, max_def, reps, defs, vals, codec in COLUMNS:
        codec = codec if codec_override is None else codec_override
        body = (levels(reps, max_rep.bit_length()) if max_rep else b"") + levels(defs, max_def.bit_length()) \
            + plain(vals, ptype)
        packed = compress(codec, body)
        header = tstruct([(1, "i32", 0), (2, "i32", len(body)), (3, "i32", len(packed)),
                          (5, "struct", [(1, "i32", len(defs)), (2, "i32", 0), (3, "i32", 3), (4, "i32", 3)])])
        offset = len(out)
        out += header + packed
        meta = [(1, "i32", ptype), (2, "list-i32", [0, 3]), (3, "list-bin", cpath), (4, "i32", codec),
                (5, "i64", len(defs)), (6, "i64", len(header) + len(body)), (7, "i64", len(header) + len(packed)),
                (9, "i64", offset)]
        chunks.append([(2, "i64", offset), (3, "struct", meta)])
    schema = []
    for name, ptype, rep, nchild, conv in schema_elements():
        el = [] if ptype is None else [(1, "i32", ptype)]
        el += [(3, "i32", rep)] if name != "schema" else []
        el += [(4, "bin", name)] + ([(5, "i32", nchild)] if nchild else []) + ([(6, "i32", conv)] if conv is not None else [])
        schema.append(el)
    rg = [(1, "list-struct", chunks), (2, "i64", len(out) - 4), (3, "i64", len(ROWS))]
    footer = tstruct([(1, "i32", 1), (2, "list-struct", schema), (3, "i64", len(ROWS)), (4, "list-struct", [rg])])
    out += footer + struct.pack("<I", len(footer)) + b"PAR1"
    with open(path, "wb") as f:
        f.write(out)
    return bytes(out)


def convert(*args):
    """Runs the converter with Debian's Python."""
    return subprocess.run(["/usr/bin/python3", SCRIPT, *args], capture_output=True, text=True, timeout=120)


def read_jsonl(path):
    """The rows of a JSONL file."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def check_skywork():
    """The converter on a file in the dataset's shape: exact rows in or1's key order, the summary,
    --limit across several inputs, and or1's loader (with the difficulty filter) on the output."""
    src = os.path.join(SCRATCH, "skywork.parquet")
    write_skywork(src)
    out = os.path.join(SCRATCH, "out", "rows.jsonl")
    p = convert(src, "--out", out)
    check(p.returncode == 0, f"convert: rc {p.returncode} {p.stderr[-400:]!r}")
    got = read_jsonl(out) if os.path.exists(out) else []
    check(got == ROWS, f"rows {got}")
    check(all(list(r) == ["data_source", "prompt", "ability", "reward_model", "extra_info"] and
              list(r["reward_model"]) == ["ground_truth", "style"] and list(r["prompt"][0]) == ["role", "content"]
              for r in got), "key order")
    with open(out, encoding="utf-8") as f:
        check("x² = 4" in f.read(), "non-ASCII text written as UTF-8")
    check(p.stdout.split("\n")[:3] == [f"3 rows -> {out}", "  train-code-taco: 1", "  train-math-numina: 2"],
          f"summary {p.stdout!r}")
    p = convert(src, src, "--out", out, "--limit", "4")
    check(p.returncode == 0 and len(read_jsonl(out)) == 4 and read_jsonl(out)[3] == ROWS[0], "--limit 4 over two files")
    p = convert(src, "--out", out)
    d = subprocess.run([DRIVER, "--file", f"{out}:1", "--difficulty", MODELS[2], "1", "15", "drop"],
                       capture_output=True, text=True, timeout=120)
    kept = [json.loads(line) for line in d.stdout.splitlines() if line.startswith('{"row"')]
    check(d.returncode == 0 and len(kept) == 2, f"or1 loader: rc {d.returncode}, {len(kept)} rows, {d.stderr[-300:]!r}")
    d = subprocess.run([DRIVER, "--file", f"{out}:1"], capture_output=True, text=True, timeout=120)
    check(d.returncode == 0 and d.stdout.count('{"row"') == 3, f"or1 loader, no filter: {d.stderr[-300:]!r}")


# --- Errors ------------------------------------------------------------------------------------

def expect_failure(label, src, phrase, out):
    """The converter fails on src naming it and phrase, and leaves out as it was (absent or old)."""
    before = open(out, "rb").read() if os.path.exists(out) else None
    p = convert(src, "--out", out)
    after = open(out, "rb").read() if os.path.exists(out) else None
    leftovers = [f for f in os.listdir(os.path.dirname(out)) if f.startswith(".parquet_to_rows.")]
    check(p.returncode == 1 and src in p.stderr and phrase in p.stderr,
          f"{label}: rc {p.returncode}, stderr {p.stderr[-300:]!r} (want {phrase!r})")
    check(after == before and not leftovers, f"{label}: output changed or temporary files left {leftovers}")


def check_errors():
    """Hostile and wrong inputs: a clear message naming the file and the place, exit status 1, no
    output written."""
    good = write_skywork(os.path.join(SCRATCH, "good.parquet"))
    bad = os.path.join(SCRATCH, "bad.parquet")
    out = os.path.join(SCRATCH, "err", "out.jsonl")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    flen = struct.unpack("<I", good[-8:-4])[0]
    cases = [
        ("empty file", b"", "too short"),
        ("bad magic", b"PAR0" + good[4:], "no PAR1 magic at the start"),
        ("truncated", good[:len(good) // 2], "no PAR1 magic at the end"),
        ("footer length beyond the file", good[:-8] + struct.pack("<I", len(good)) + b"PAR1",
         "runs past the start"),
        ("footer cut short", good[:-8 - flen] + good[-8 - flen // 2:-8] + struct.pack("<I", flen // 2) + b"PAR1",
         "footer"),
        ("garbage footer", good[:-8 - flen] + b"\xff" * flen + good[-8:], "footer"),
        ("page cut out", good[:4] + good[40:], "row group 0, column"),
        ("not parquet", b'{"data_source": "x"}\n' * 4, "not a parquet file"),
    ]
    for label, data, phrase in cases:
        with open(bad, "wb") as f:
            f.write(data)
        expect_failure(label, bad, phrase, out)
    write_skywork(bad, codec_override=4)
    expect_failure("BROTLI pages", bad, "unsupported compression BROTLI", out)
    expect_failure("not Skywork", os.path.join(FILES, "alltypes_plain.parquet"), "schema: no column data_source", out)
    expect_failure("missing file", os.path.join(SCRATCH, "nope.parquet"), "No such file", out)
    with open(out, "w") as f:
        f.write("old\n")
    expect_failure("old output kept", bad, "unsupported compression", out)
    try:
        records("delta_length_byte_array.parquet")
        check(False, "DELTA_LENGTH_BYTE_ARRAY read without an error")
    except P.ParquetError as e:
        check("column FRUIT" in str(e) and "unsupported encoding DELTA_LENGTH_BYTE_ARRAY" in str(e), f"delta: {e}")


def run(section):
    """Runs one group of checks; an exception (a reader error where none belongs) is a failure
    of that group, and the other groups still run."""
    try:
        section()
    except Exception as e:  # noqa: BLE001 - any exception here is a test failure to report
        check(False, f"{section.__name__}: {type(e).__name__}: {e}")


for s in (check_alltypes, check_nested, check_pages_and_codecs, check_statistics, check_skywork, check_errors):
    run(s)
finish("data_parquet")
