"""Writes the real tokenizer layouts the comparisons read (data/tokenizers decompressed, and the
R1-Distill-Qwen layout built from Qwen2.5's files) into a folder of the build.
usage: ref_files.py DATA_DIR DEST"""
import sys

from or1test import hf_tokenizers as hf

if __name__ == "__main__":
    hf.unpack(sys.argv[1], sys.argv[2])
    print(f"tokenizer files: {', '.join(hf.LAYOUTS)} in {sys.argv[2]}")
