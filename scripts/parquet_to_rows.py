#!/usr/bin/env python3
"""Converts the published Skywork-OR1-RL-Data parquet files to the JSONL rows or1 reads.

    build/venv/bin/python scripts/parquet_to_rows.py IN.parquet [IN2.parquet ...] --out OUT.jsonl [--limit N]

Parquet is read with Apache Arrow's pyarrow (pinned in scripts/python-test-requirements.txt;
`make test-deps` installs it into build/venv). Each output line is one row in the or1 shape:
data_source, prompt [{role, content}], ability, reward_model {ground_truth, style}, extra_info
{index, model_difficulty {model: int or null}, and any other keys the file has}. The file's
schema is checked against the dataset's columns before any row is read. The output is written
to a temporary file next to OUT and renamed when every row is written, so an error (its message
names the file and the place: the footer, the schema, a row group, a row and key) leaves OUT as
it was. The summary (rows, rows per data_source) goes to stdout; errors go to stderr with exit
status 1.
"""
import argparse
import json
import os
import sys
import tempfile

try:
    import pyarrow as pa
    import pyarrow.parquet as pq
except ImportError as e:  # reported by main, which says how to install it
    pa = pq = None
    PYARROW_MISSING = str(e)

REQUIREMENTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "python-test-requirements.txt")

# The top-level columns a row is made from; any other column of the file is not read.
COLUMNS = ["data_source", "prompt", "ability", "reward_model", "extra_info"]
BATCH_ROWS = 1024  # rows decoded to Python objects at a time
STRING, INTEGER = "a string", "an integer"
# Each column the mapping reads and the kind of Arrow type it must have (the dataset card's
# features); "[]" steps into a list's elements. extra_info.model_difficulty is optional.
NEEDED = [(("data_source",), STRING), (("prompt", "[]", "role"), STRING), (("prompt", "[]", "content"), STRING),
          (("ability",), STRING), (("reward_model", "ground_truth"), STRING), (("reward_model", "style"), STRING),
          (("extra_info", "index"), INTEGER)]


class ConvertError(Exception):
    """An input that cannot be converted: the message names the file and the place in it."""


def install_hint():
    """How to get pyarrow, with the version the project pins (read from the requirements file, so
    that the pin is written once)."""
    pin = "pyarrow"
    try:
        with open(REQUIREMENTS, encoding="utf-8") as f:
            pin = next((line.strip() for line in f if line.startswith("pyarrow==")), pin)
    except OSError:
        pass  # the script copied away from its folder: the unpinned name still helps
    return (f"`make test-deps` makes build/venv with it (then run build/venv/bin/python {sys.argv[0]}), "
            f"or: pip install {pin}")


def is_kind(t, kind):
    """Whether Arrow type t is of kind STRING or INTEGER."""
    if kind == STRING:
        return pa.types.is_string(t) or pa.types.is_large_string(t)
    return pa.types.is_integer(t)


def column_name(path):
    """A column path as messages write it: prompt[].role, reward_model.style."""
    return ".".join(path).replace(".[]", "[]")


def column_type(schema, path, where):
    """The Arrow type at path in schema ("[]" steps into a list's elements); ConvertError naming
    the first step the schema lacks or cannot take."""
    node = schema
    for k, step in enumerate(path):
        if step == "[]":
            if not (pa.types.is_list(node) or pa.types.is_large_list(node)):
                raise ConvertError(f"{where}: column {column_name(path[:k])} is {node}, want a list")
            node = node.value_type
            continue
        if not isinstance(node, (pa.Schema, pa.StructType)):
            raise ConvertError(f"{where}: column {column_name(path[:k])} is {node}, want a struct")
        i = node.get_field_index(step)
        if i < 0:
            raise ConvertError(f"{where}: no column {column_name(path[:k + 1])} (is this Skywork-OR1-RL-Data?)")
        node = node.field(i).type
    return node


def check_schema(schema, where):
    """ConvertError naming the first column of NEEDED that is missing or of the wrong type, or a
    model_difficulty that is not a struct of integers."""
    for path, kind in NEEDED:
        t = column_type(schema, path, where)
        if not is_kind(t, kind):
            raise ConvertError(f"{where}: column {column_name(path)} is {t}, want {kind}")
    extra = column_type(schema, ("extra_info",), where)
    i = extra.get_field_index("model_difficulty")
    md = extra.field(i).type if i >= 0 else None
    if md is not None and not (pa.types.is_struct(md) and all(is_kind(f.type, INTEGER) for f in md)):
        raise ConvertError(f"{where}: column extra_info.model_difficulty is {md}, want a struct of integers")


def present(v, key, where):
    """v, or ConvertError naming key when it is null."""
    if v is None:
        raise ConvertError(f"{where}: {key} is null")
    return v


def to_row(rec, where):
    """One parquet record (types already checked by check_schema) as an or1 row: fixed key order,
    messages as {role, content}, extra_info with index first and every other key kept."""
    messages = []
    for i, m in enumerate(present(rec["prompt"], "prompt", where)):
        m = present(m, f"prompt[{i}]", where)
        messages.append({"role": present(m["role"], f"prompt[{i}].role", where),
                         "content": present(m["content"], f"prompt[{i}].content", where)})
    rm = present(rec["reward_model"], "reward_model", where)
    extra = present(rec["extra_info"], "extra_info", where)
    out_extra = {"index": present(extra["index"], "extra_info.index", where)}
    out_extra.update((k, v) for k, v in extra.items() if k != "index")
    return {"data_source": present(rec["data_source"], "data_source", where),
            "prompt": messages,
            "ability": present(rec["ability"], "ability", where),
            "reward_model": {"ground_truth": present(rm["ground_truth"], "reward_model.ground_truth", where),
                             "style": present(rm["style"], "reward_model.style", where)},
            "extra_info": out_extra}


def open_parquet(source, path):
    """The parquet file of the open source, its footer read and its schema checked; pyarrow's
    errors (an OSError where the footer does not deserialize) become ConvertError naming the footer."""
    try:
        pf = pq.ParquetFile(source, page_checksum_verification=True)
    except (pa.ArrowException, OSError) as e:
        raise ConvertError(f"{path}: footer: {e}") from e
    check_schema(pf.schema_arrow, f"{path}: schema")
    return pf


def row_group(pf, g, path):
    """Row group g's records, BATCH_ROWS at a time, so that memory stays bounded whatever row-group
    size the writer chose; a read error (pyarrow's, or text that is not UTF-8 in a file without
    page checksums) is ConvertError naming the row group."""
    try:
        for batch in pf.iter_batches(batch_size=BATCH_ROWS, row_groups=[g], columns=COLUMNS):
            yield from batch.to_pylist()
    except (pa.ArrowException, OSError, UnicodeDecodeError) as e:
        raise ConvertError(f"{path}: row group {g}: {e}") from e


def records(path, limit):
    """Every record of the parquet file at path in file order (at most limit)."""
    try:
        source = pa.OSFile(path)
    except OSError as e:
        raise ConvertError(f"{path}: {e}") from e
    with source:
        pf = open_parquet(source, path)
        n = 0
        for g in range(pf.num_row_groups):
            for rec in row_group(pf, g, path):
                if limit is not None and n >= limit:
                    return
                yield rec
                n += 1


def json_line(row, where):
    """row as one line of strict JSON (UTF-8 text kept; NaN or a value JSON cannot hold, from an
    extra_info key, is ConvertError naming the row)."""
    try:
        return json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n"
    except (TypeError, ValueError) as e:
        raise ConvertError(f"{where}: a value JSON cannot hold ({e})") from e


def convert(inputs, out, limit):
    """Writes the rows of every input (at most limit in all) to out atomically; returns the
    count per data_source."""
    counts = {}
    parent = os.path.dirname(os.path.abspath(out))
    os.makedirs(parent, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".parquet_to_rows.", suffix=".tmp", dir=parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            total = 0
            for path in inputs:
                left = None if limit is None else limit - total
                for i, rec in enumerate(records(path, left)):
                    where = f"{path}: row {i}"
                    row = to_row(rec, where)
                    f.write(json_line(row, where))
                    counts[row["data_source"]] = counts.get(row["data_source"], 0) + 1
                    total += 1
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, out)
    except BaseException:
        os.unlink(tmp)
        raise
    return counts


def main(argv):
    """The command line: parse, convert, print the summary or the error."""
    ap = argparse.ArgumentParser(description="Skywork-OR1-RL-Data parquet files -> or1 JSONL rows")
    ap.add_argument("inputs", nargs="+", metavar="IN.parquet")
    ap.add_argument("--out", required=True, metavar="OUT.jsonl")
    ap.add_argument("--limit", type=int, metavar="N", help="stop after N rows in all")
    a = ap.parse_args(argv)
    if a.limit is not None and a.limit < 0:
        ap.error("--limit must be >= 0")
    if pq is None:
        print(f"error: reading parquet needs the PyPI package pyarrow, which {sys.executable} cannot import "
              f"({PYARROW_MISSING}); {install_hint()}", file=sys.stderr)
        return 1
    try:
        counts = convert(a.inputs, a.out, a.limit)
    except ConvertError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"error: {a.out}: {e.strerror}", file=sys.stderr)
        return 1
    print(f"{sum(counts.values())} rows -> {a.out}")
    for src in sorted(counts):
        print(f"  {src}: {counts[src]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
