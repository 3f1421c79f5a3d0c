"""Encode throughput of the reference, Hugging Face's tokenizers (the Rust library, from the
tests' virtual environment), on the same JSONL corpus as tokenizer_bench: one cold pass text by
text, then REPS warm ones, then encode_batch over THREADS Rayon threads. Prints one JSON line
with the fields tokenizer_bench prints.
usage: tokenizer_ref.py TOKENIZER_DIR CORPUS.jsonl [REPS] [THREADS]"""
import json
import os
import sys
import time

REPS = int(sys.argv[3]) if len(sys.argv) > 3 else 3
THREADS = int(sys.argv[4]) if len(sys.argv) > 4 else 2
os.environ["RAYON_NUM_THREADS"] = str(THREADS)  # read when the library's pool starts
import tokenizers  # noqa: E402


def timed(fn):
    """(wall seconds, CPU seconds of this process, result) of fn()."""
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w, time.process_time() - c, out


def main():
    folder, corpus = sys.argv[1], sys.argv[2]
    load_s, _, tok = timed(lambda: tokenizers.Tokenizer.from_file(os.path.join(folder, "tokenizer.json")))
    with open(corpus, encoding="utf-8") as f:
        texts = [t for t in (json.loads(line).get("text") for line in f if line.strip()) if isinstance(t, str)]
    mb = sum(len(t.encode()) for t in texts) / 1e6
    one_by_one = lambda: sum(len(tok.encode(t, add_special_tokens=False)) for t in texts)  # noqa: E731
    cold, cold_cpu, ids = timed(one_by_one)
    warm, warm_cpu, _ = timed(lambda: [one_by_one() for _ in range(REPS)])
    batch, _, _ = timed(lambda: [tok.encode_batch(texts, add_special_tokens=False) for _ in range(REPS)])
    print(json.dumps({"impl": f"tokenizers {tokenizers.__version__}", "rows": len(texts), "mb": round(mb, 3),
                      "ids": ids, "load_s": round(load_s, 3), "cold_mb_s": round(mb / cold, 2),
                      "warm_mb_s": round(mb * REPS / warm, 2), "cold_mb_cpu_s": round(mb / cold_cpu, 2),
                      "warm_mb_cpu_s": round(mb * REPS / warm_cpu, 2), "threads": THREADS,
                      "threads_mb_s": round(mb * REPS / batch, 2)}))


if __name__ == "__main__":
    main()
