"""llama.cpp's side of bench/bench_smollm2.py: B sequences decoding together through
llama-cpp-python's low-level API, one process per run (it runs in the tests' virtual environment,
where llama_cpp is installed; the driver runs in the system Python, where PyTorch is).

usage: smollm2_llama.py --model F.gguf --prompts P.json --new N --threads T

P.json is a list of B prompts (token ids). The context holds B sequences (n_seq_max = B, a KV
cache of its own for each, n_ctx = B x 256), F32 keys and values, flash attention off, batch
2048, micro-batch 512, T threads for both decode and prefill. All prompts are prefilled in one
batch (logits of each prompt's last token only); each sequence's first new token is the argmax of
those logits; then N - 1 decode steps each take one batch of B tokens (token i: sequence i, at its
next position, logits on) and pick each next token as the argmax of its logits (numpy over the
[B, vocab] logits llama.cpp returns). Prints one JSON line: seconds of loading, of the prefill
(with the first token) and of the N - 1 decode steps, the CPU seconds of those steps (every
thread of the process), the seconds of them spent in the argmax, and the tokens of every sequence.
"""
import argparse
import json
import time

import numpy as np

import llama_cpp as L

N_CTX_SEQ = 256  # context of each sequence: a 32-token prompt and 128 new tokens fit


def fail(msg):
    """Stops the worker with a message on stderr."""
    raise SystemExit(f"smollm2_llama: {msg}")


def open_model(path, slots, threads):
    """(model, context) of path: CPU, F32 KV cache, flash attention off, `slots` sequences."""
    L.llama_backend_init()
    mp = L.llama_model_default_params()
    mp.n_gpu_layers = 0
    model = L.llama_model_load_from_file(path.encode(), mp)
    if not model:
        fail(f"cannot load {path}")
    cp = L.llama_context_default_params()
    cp.n_ctx = slots * N_CTX_SEQ
    cp.n_batch, cp.n_ubatch, cp.n_seq_max = 2048, 512, slots
    cp.n_threads = cp.n_threads_batch = threads
    cp.type_k = cp.type_v = 0  # GGML_TYPE_F32, as or1's cache
    cp.flash_attn_type = L.LLAMA_FLASH_ATTN_TYPE_DISABLED
    cp.no_perf = True
    ctx = L.llama_init_from_model(model, cp)
    if not ctx:
        fail(f"cannot make a context of {slots} sequences for {path}")
    return model, ctx


def fill(batch, rows):
    """Puts rows of (token, position, sequence, wants logits) into batch."""
    for i, (tok, pos, seq, logits) in enumerate(rows):
        batch.token[i], batch.pos[i] = tok, pos
        batch.n_seq_id[i], batch.seq_id[i][0] = 1, seq
        batch.logits[i] = 1 if logits else 0
    batch.n_tokens = len(rows)


def decode(ctx, batch, what):
    """llama_decode of batch; stops naming `what` if llama.cpp refuses it."""
    rc = L.llama_decode(ctx, batch)
    if rc != 0:
        fail(f"llama_decode of the {what} returned {rc}")


def argmax_logits(ctx, n, vocab):
    """The argmax of each of the n output rows of the last decode."""
    ptr = L.llama_get_logits(ctx)
    return np.ctypeslib.as_array(ptr, shape=(n, vocab)).argmax(axis=1)


def run(path, prompts, new, threads):
    """Times loading, prefill and new - 1 decode steps of len(prompts) sequences; the result dict."""
    B = len(prompts)
    t0 = time.perf_counter()
    model, ctx = open_model(path, B, threads)
    vocab = L.llama_vocab_n_tokens(L.llama_model_get_vocab(model))
    batch = L.llama_batch_init(max(2048, B), 0, 1)
    t1 = time.perf_counter()
    rows = [(tok, j, i, j == len(p) - 1) for i, p in enumerate(prompts) for j, tok in enumerate(p)]
    for a in range(0, len(rows), 2048):
        fill(batch, rows[a:a + 2048])
        decode(ctx, batch, "prompts")
        if a + 2048 < len(rows):  # llama.cpp keeps only the last batch's logits
            fail("prompts longer than one batch of 2048 tokens")
    out = [[int(t)] for t in argmax_logits(ctx, B, vocab)]
    t2, c2 = time.perf_counter(), time.process_time()
    pick = 0.0
    for step in range(1, new):
        fill(batch, [(out[i][-1], len(p) + step - 1, i, True) for i, p in enumerate(prompts)])
        decode(ctx, batch, f"decode step {step}")
        tp = time.perf_counter()
        for i, t in enumerate(argmax_logits(ctx, B, vocab)):
            out[i].append(int(t))
        pick += time.perf_counter() - tp
    t3, c3 = time.perf_counter(), time.process_time()
    L.llama_batch_free(batch)
    L.llama_free(ctx)
    L.llama_model_free(model)
    return dict(load_s=t1 - t0, prefill_s=t2 - t1, decode_s=t3 - t2, decode_cpu_s=c3 - c2, pick_s=pick,
                decode_tokens=B * (new - 1), tokens=out)


def main():
    """Reads the flags and prompts, runs, prints the JSON line."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompts", required=True)
    ap.add_argument("--new", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    with open(args.prompts) as f:
        prompts = json.load(f)
    if not prompts or any(len(p) + args.new > N_CTX_SEQ for p in prompts):
        fail(f"want 1 or more prompts of at most {N_CTX_SEQ - args.new} tokens")
    print(json.dumps(run(args.model, prompts, args.new, args.threads)))


if __name__ == "__main__":
    main()
