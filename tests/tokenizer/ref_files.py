"""Writes what the comparisons read into a folder of the build: the real tokenizer layouts
(data/tokenizers decompressed, and the R1-Distill-Qwen layout built from Qwen2.5's files) and
the stress corpus as stress.jsonl ({"kind", "text"} rows, non-ASCII text as \\u escapes).
usage: ref_files.py DATA_DIR DEST"""
import json
import os
import sys

import stress
from or1test import hf_tokenizers as hf

if __name__ == "__main__":
    hf.unpack(sys.argv[1], sys.argv[2])
    rows = "".join(json.dumps({"kind": k, "text": t}) + "\n" for k, t in stress.corpus())
    hf.write_atomic(os.path.join(sys.argv[2], "stress.jsonl"), rows.encode())
    print(f"tokenizer files: {', '.join(hf.LAYOUTS)} and stress.jsonl in {sys.argv[2]}")
