"""Scratch folders and JSONL files of the tests."""
import json
import os
import shutil


def fresh(path):
    """An empty folder at path (whatever was there is removed); returns path."""
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def write_jsonl(path, rows):
    """One JSON object per line (Python float repr, which round-trips doubles exactly); returns path."""
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    return path
