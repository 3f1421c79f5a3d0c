#!/usr/bin/env python3
"""scripts/parquet_to_rows.py on parquet files that pyarrow itself writes in the schema of the
published Skywork-OR1-RL-Data (the dataset card's features): the exact rows in or1's shape under
several writer settings, the command line, or1's dataset loader on the output, and clear errors
(the file and the place named, exit status 1, the output left as it was) on truncated, foreign,
damaged and wrongly typed files and on nulls where a row needs a value.

Usage: test_parquet.py REPO_ROOT SCRATCH_DIR DATA_DRIVER (run with the tests' virtual
environment's python, which has the pinned pyarrow)
"""
import contextlib
import importlib.util
import io
import json
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq

from or1test.check import check, finish
from or1test.files import fresh

REPO, SCRATCH, DRIVER = sys.argv[1], fresh(sys.argv[2]), sys.argv[3]
SCRIPT = os.path.join(REPO, "scripts", "parquet_to_rows.py")
_spec = importlib.util.spec_from_file_location("parquet_to_rows", SCRIPT)
P = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(P)

# The features of the dataset card (Skywork/Skywork-OR1-RL-Data): every field nullable, the prompt
# a list of {content, role}, model_difficulty one integer per distilled model.
MODELS = ["DeepSeek-R1-Distill-Qwen-1.5B", "DeepSeek-R1-Distill-Qwen-32B", "DeepSeek-R1-Distill-Qwen-7B"]


def skywork_schema(ground_truth=pa.string(), index=pa.int64(), model=pa.int64(), prompt=None, drop=(), extra=()):
    """The dataset's Arrow schema, with one type changed, top-level columns dropped or fields
    added to extra_info where a test asks."""
    message = pa.struct([("content", pa.string()), ("role", pa.string())])
    fields = [("data_source", pa.string()), ("prompt", prompt or pa.list_(message)), ("ability", pa.string()),
              ("reward_model", pa.struct([("ground_truth", ground_truth), ("style", pa.string())])),
              ("extra_info", pa.struct([("index", index), ("model_difficulty", pa.struct([(m, model) for m in MODELS])),
                                        *extra]))]
    return pa.schema([f for f in fields if f[0] not in drop])


# The rows as or1 reads them: messages as {role, content}; a model without a value and a row
# without model_difficulty are null.
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


def write(path, rows=ROWS, schema=None, row_group_size=2, **options):
    """rows written by pyarrow as a parquet file of the dataset's schema (or schema), two rows per
    row group unless told; options go to pyarrow.parquet.write_table. Returns path."""
    table = pa.Table.from_pylist(rows, schema=schema or skywork_schema())
    pq.write_table(table, path, row_group_size=row_group_size, **options)
    return path


def convert(*args):
    """The converter's command line run in this process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = P.main(list(args))
    return rc, out.getvalue(), err.getvalue()


def read_jsonl(path):
    """The rows of a JSONL file."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


# --- The mapping -------------------------------------------------------------------------------

# pyarrow writer settings the published files could have been written with: its default (SNAPPY,
# dictionaries, v1 data pages), ZSTD with v2 data pages, GZIP without dictionaries, uncompressed.
WRITERS = [{}, {"compression": "zstd", "data_page_version": "2.0"}, {"compression": "gzip", "use_dictionary": False},
           {"compression": "none"}]


def check_rows():
    """The exact rows in or1's key order under every writer setting, UTF-8 text, the summary,
    further extra_info keys copied, and row groups larger than the converter's batches."""
    out = os.path.join(SCRATCH, "out", "rows.jsonl")
    for i, options in enumerate(WRITERS):
        src = write(os.path.join(SCRATCH, f"skywork{i}.parquet"), **options)
        rc, stdout, stderr = convert(src, "--out", out)
        got = read_jsonl(out) if rc == 0 else []
        check(rc == 0 and got == ROWS, f"{options}: rc {rc} {stderr[-300:]!r}, rows {got}")
        check(all(list(r) == ["data_source", "prompt", "ability", "reward_model", "extra_info"] and
                  list(r["reward_model"]) == ["ground_truth", "style"] and list(r["extra_info"])[0] == "index" and
                  all(list(m) == ["role", "content"] for m in r["prompt"]) for r in got), f"{options}: key order")
        check(stdout.split("\n")[:3] == [f"3 rows -> {out}", "  train-code-taco: 1", "  train-math-numina: 2"],
              f"{options}: summary {stdout!r}")
    with open(out, encoding="utf-8") as f:
        check("x² = 4" in f.read(), "non-ASCII text written as UTF-8")
    split = [dict(r, extra_info=dict(r["extra_info"], split="train")) for r in ROWS]
    src = write(os.path.join(SCRATCH, "split.parquet"), split, skywork_schema(extra=[("split", pa.string())]))
    rc, _, stderr = convert(src, "--out", out)
    check(rc == 0 and read_jsonl(out) == split, f"extra_info.split copied: rc {rc} {stderr[-300:]!r}")
    many = [dict(ROWS[i % 3], extra_info=dict(ROWS[i % 3]["extra_info"], index=i)) for i in range(2500)]
    rc, _, stderr = convert(write(os.path.join(SCRATCH, "many.parquet"), many, row_group_size=2000), "--out", out)
    got = read_jsonl(out) if rc == 0 else []
    check(got == many, f"2,500 rows in row groups of 2,000 (several batches each): rc {rc} {stderr[-300:]!r}, "
                       f"{len(got)} rows")


def check_command_line():
    """The script run as a program (with this python): --limit across row groups and files, and
    or1's dataset loader, with and without the difficulty filter, on the output."""
    src = write(os.path.join(SCRATCH, "cli.parquet"))
    out = os.path.join(SCRATCH, "cli", "rows.jsonl")
    p = subprocess.run([sys.executable, SCRIPT, src, src, "--out", out, "--limit", "4"],
                       capture_output=True, text=True, timeout=120)
    got = read_jsonl(out) if p.returncode == 0 else []
    check(got == ROWS + ROWS[:1], f"--limit 4 over two files: rc {p.returncode} {p.stderr[-300:]!r} {got}")
    rc, _, _ = convert(src, "--out", out, "--limit", "0")
    check(rc == 0 and read_jsonl(out) == [], "--limit 0")
    convert(src, "--out", out)
    d = subprocess.run([DRIVER, "--file", f"{out}:1", "--difficulty", MODELS[2], "1", "15", "drop"],
                       capture_output=True, text=True, timeout=120)
    kept = [json.loads(line) for line in d.stdout.splitlines() if line.startswith('{"row"')]
    check(d.returncode == 0 and len(kept) == 2, f"or1 loader: rc {d.returncode}, {len(kept)} rows, {d.stderr[-300:]!r}")
    d = subprocess.run([DRIVER, "--file", f"{out}:1"], capture_output=True, text=True, timeout=120)
    check(d.returncode == 0 and d.stdout.count('{"row"') == 3, f"or1 loader, no filter: {d.stderr[-300:]!r}")


# --- Errors ------------------------------------------------------------------------------------

def expect_failure(label, src, phrases, out):
    """The converter fails on src naming it and every phrase, and leaves out as it was (absent or
    old) with no temporary file beside it."""
    before = open(out, "rb").read() if os.path.exists(out) else None
    rc, _, stderr = convert(src, "--out", out)
    after = open(out, "rb").read() if os.path.exists(out) else None
    leftovers = [f for f in os.listdir(os.path.dirname(out)) if f.startswith(".parquet_to_rows.")]
    check(rc == 1 and src in stderr and all(p in stderr for p in phrases),
          f"{label}: rc {rc}, stderr {stderr[-300:]!r} (want {phrases!r})")
    check(after == before and not leftovers, f"{label}: output changed or temporary files left {leftovers}")


def damaged_page(path, checksum):
    """A copy of a file (page checksums written or not) whose last text value of the prompt's
    content column has a byte 0xFF (never valid UTF-8): no compression and no dictionary, so the
    column chunk is its data pages and its last bytes are that value's."""
    good = write(os.path.join(SCRATCH, "plain.parquet"), write_page_checksum=checksum, compression="none",
                 use_dictionary=False)
    col = pq.ParquetFile(good).metadata.row_group(0).column(1)
    data = bytearray(open(good, "rb").read())
    data[col.data_page_offset + col.total_compressed_size - 3] = 0xFF
    with open(path, "wb") as f:
        f.write(data)
    return path


def check_damaged_files():
    """Empty, truncated, foreign and damaged files (a page whose checksum fails, text that is not
    UTF-8 where the writer stored no checksum), and a missing one."""
    good = open(write(os.path.join(SCRATCH, "good.parquet")), "rb").read()
    flen = int.from_bytes(good[-8:-4], "little")
    bad = os.path.join(SCRATCH, "bad.parquet")
    out = os.path.join(SCRATCH, "err", "out.jsonl")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    for label, data, phrases in [
        ("empty file", b"", ["footer", "0 bytes"]),
        ("truncated", good[:len(good) // 2], ["footer", "magic bytes not found"]),
        ("not parquet", b'{"data_source": "x"}\n' * 4, ["footer", "magic bytes not found"]),
        ("footer overwritten", good[:-8 - flen] + b"\xff" * flen + good[-8:], ["footer"]),
    ]:
        with open(bad, "wb") as f:
            f.write(data)
        expect_failure(label, bad, phrases, out)
    expect_failure("damaged page", damaged_page(bad, True), ["row group 0", "CRC checksum verification failed"], out)
    expect_failure("damaged text", damaged_page(bad, False), ["row group 0", "utf-8"], out)
    expect_failure("missing file", os.path.join(SCRATCH, "nope.parquet"), ["No such file"], out)
    with open(out, "w") as f:
        f.write("old\n")
    expect_failure("old output kept", bad, ["row group 0"], out)


def check_schemas():
    """Files whose schema is not the dataset's: a foreign table, missing columns, wrong types."""
    out = os.path.join(SCRATCH, "err", "schema.jsonl")
    foreign = os.path.join(SCRATCH, "foreign.parquet")
    pq.write_table(pa.table({"id": [1, 2], "text": ["a", "b"]}), foreign)
    expect_failure("not Skywork", foreign, ["schema: no column data_source"], out)
    no_style = pa.struct([("ground_truth", pa.string())])
    no_ability = skywork_schema(drop=("ability",))
    short_rm = pa.schema([f if f.name != "reward_model" else pa.field("reward_model", no_style)
                          for f in skywork_schema()])
    cases = [
        ("no ability", [{k: v for k, v in r.items() if k != "ability"} for r in ROWS], no_ability,
         "schema: no column ability"),
        ("no reward_model.style", [dict(r, reward_model={"ground_truth": "1"}) for r in ROWS], short_rm,
         "schema: no column reward_model.style"),
        ("index as text", [dict(r, extra_info=dict(r["extra_info"], index=str(i))) for i, r in enumerate(ROWS)],
         skywork_schema(index=pa.string()), "schema: column extra_info.index is string, want an integer"),
        ("ground_truth as a number", [dict(r, reward_model={"ground_truth": 2, "style": "rule"}) for r in ROWS],
         skywork_schema(ground_truth=pa.int64()), "schema: column reward_model.ground_truth is int64, want a string"),
        ("prompt as text", [dict(r, prompt="hi") for r in ROWS], skywork_schema(prompt=pa.string()),
         "schema: column prompt is string, want a list"),
        ("difficulty as text", [dict(r, extra_info={"index": 0, "model_difficulty": None}) for r in ROWS],
         skywork_schema(model=pa.string()), "column extra_info.model_difficulty is struct<"),
    ]
    for label, rows, schema, phrase in cases:
        expect_failure(label, write(os.path.join(SCRATCH, "schema.parquet"), rows, schema), [phrase], out)


def with_row(i, **changes):
    """ROWS with row i's top-level fields changed."""
    return [dict(r, **changes) if k == i else r for k, r in enumerate(ROWS)]


def check_nulls():
    """A null where a row needs a value names the row (counted across row groups) and the key; a
    value JSON cannot hold in a copied extra_info key names the row."""
    out = os.path.join(SCRATCH, "err", "nulls.jsonl")
    cases = [
        ("null data_source", with_row(1, data_source=None), "row 1: data_source is null"),
        ("null content", with_row(2, prompt=[{"role": "user", "content": None}]), "row 2: prompt[0].content is null"),
        ("null message", with_row(0, prompt=[{"role": "user", "content": "a"}, None]), "row 0: prompt[1] is null"),
        ("null prompt", with_row(2, prompt=None), "row 2: prompt is null"),
        ("null style", with_row(1, reward_model={"ground_truth": "1", "style": None}),
         "row 1: reward_model.style is null"),
        ("null extra_info", with_row(0, extra_info=None), "row 0: extra_info is null"),
        ("null index", with_row(2, extra_info={"index": None}), "row 2: extra_info.index is null"),
    ]
    for label, rows, phrase in cases:
        expect_failure(label, write(os.path.join(SCRATCH, "nulls.parquet"), rows), [phrase], out)
    nan = [dict(r, extra_info=dict(r["extra_info"], score=float("nan") if i == 1 else 0.5)) for i, r in enumerate(ROWS)]
    src = write(os.path.join(SCRATCH, "nan.parquet"), nan, skywork_schema(extra=[("score", pa.float64())]))
    expect_failure("NaN in extra_info", src, ["row 1:", "JSON"], out)


def check_without_pyarrow():
    """Where pyarrow cannot be imported the converter names the package and how to install it
    (the make target and the pinned version) and exits 1."""
    with open(os.path.join(REPO, "scripts", "python-test-requirements.txt"), encoding="utf-8") as f:
        pin = next(line.strip() for line in f if line.startswith("pyarrow=="))
    out = os.path.join(SCRATCH, "nopyarrow", "rows.jsonl")
    hide = ("import runpy, sys; sys.modules['pyarrow'] = None; sys.argv = sys.argv[1:]; "
            "runpy.run_path(sys.argv[0], run_name='__main__')")
    p = subprocess.run([sys.executable, "-c", hide, SCRIPT, write(os.path.join(SCRATCH, "np.parquet")), "--out", out],
                       capture_output=True, text=True, timeout=120)
    check(p.returncode == 1 and "pyarrow" in p.stderr and "make test-deps" in p.stderr and
          f"pip install {pin}" in p.stderr and "Traceback" not in p.stderr and not os.path.exists(out),
          f"without pyarrow: rc {p.returncode}, stderr {p.stderr[-400:]!r}")


def run(section):
    """Runs one group of checks; an exception (a converter error where none belongs) is a failure
    of that group, and the other groups still run."""
    try:
        section()
    except Exception as e:  # noqa: BLE001 - any exception here is a test failure to report
        check(False, f"{section.__name__}: {type(e).__name__}: {e}")


for s in (check_rows, check_command_line, check_damaged_files, check_schemas, check_nulls, check_without_pyarrow):
    run(s)
finish("data_parquet")
