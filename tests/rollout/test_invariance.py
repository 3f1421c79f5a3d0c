"""A request's samples depend only on its seed, the model and the sampling parameters.

usage: test_invariance.py OR1

Seven prompts of different lengths, 3 samples each, sampled with a stop list of two tokens so that
samples end at different steps and freed slots are refilled mid-run (continuous batching). For each
sampling setting (temperature 1; temperature 0.7 with top-p 0.9 and top-k 12) the JSON output must be
byte-identical across --max-slots 1, 3 and 64, --threads 1 and 2, and for the first three prompts run
alone versus followed by the other four. So that identity is not trivially met, the test also
checks that samples differ between seeds, between the samples of one prompt, and between two copies
of one prompt at different indexes (each request has its own seed), and that the stop list did end
samples at different lengths. Chunked prefill (--prefill-chunk 4, and 1 with 3 slots: prompts
extended piece by piece through the decode path) gives the same bytes. A wider model (hidden
256, 300-token prompts, where a BLAS prefill gave thread-dependent results, so the engine's
prefill uses the row-by-row matmul) checks --threads 1 vs 2, --max-slots 1 vs 64 and
--prefill-chunk 64 and 100 once more. With stderr
a terminal, a progress bar appears there and stdout stays the same.
"""
import os
import pty
import subprocess
import sys
import tempfile

import torch

from or1test import proc, ref, rollout
from or1test.check import Checker

N, NEW, FIRST = 3, 20, 3
SETTINGS = [dict(temperature=1.0), {"temperature": 0.7, "top-p": 0.9, "top-k": 12}]


def prompts_for(vocab):
    """Seven random prompts of 1 to 30 tokens; prompt 5 repeats prompt 1."""
    g = torch.Generator().manual_seed(3)
    ps = [ref.random_ids(g, vocab, n) for n in (5, 1, 17, 30, 2, 1, 9)]
    ps[5] = list(ps[1])
    return ps


def run(chk, or1, model, inp, n_prompts, setting, stop, **extra):
    """One generate run; returns its stdout lines (None on failure)."""
    flags = dict(setting, n=N, seed=11, stop=stop, **{"max-new-tokens": NEW})
    flags.update(extra)
    return rollout.generate_lines(chk, or1, model, inp, n_prompts, **flags)[1]


def stop_tokens(chk, or1, model, inp, n_prompts):
    """Two tokens common in unstopped samples, but not so common that most samples stop at once
    (the 4th and 5th most frequent)."""
    rows = rollout.generate(chk, or1, model, inp, n_prompts, n=N, seed=11, **{"max-new-tokens": NEW})
    counts = {}
    for row in rows or []:
        for t in set(row["response_ids"][1:]):
            counts[t] = counts.get(t, 0) + 1
    top = sorted(counts, key=lambda t: (-counts[t], t))[3:5]
    return ",".join(str(t) for t in top)


def check_setting(chk, or1, model, tmp, setting, stop, prompts):
    """All batch compositions and thread counts of one sampling setting."""
    name = " ".join(f"{k}={v}" for k, v in setting.items())
    full = rollout.write_prompts(os.path.join(tmp, "all.jsonl"), prompts)
    head = rollout.write_prompts(os.path.join(tmp, "head.jsonl"), prompts[:FIRST])
    base = run(chk, or1, model, full, len(prompts), setting, stop, **{"max-slots": 64, "threads": 2})
    if base is None:
        return
    runs = {"--max-slots 1": dict(inp=full, **{"max-slots": 1, "threads": 2}),
            "--max-slots 3": dict(inp=full, **{"max-slots": 3, "threads": 2}),
            "--max-slots 3 --threads 1": dict(inp=full, **{"max-slots": 3, "threads": 1}),
            "--threads 1": dict(inp=full, **{"max-slots": 64, "threads": 1}),
            "--prefill-chunk 4": dict(inp=full, **{"max-slots": 64, "threads": 2, "prefill-chunk": 4}),
            "--prefill-chunk 1 --max-slots 3": dict(inp=full, **{"max-slots": 3, "threads": 1, "prefill-chunk": 1})}
    for what, kw in runs.items():
        inp = kw.pop("inp")
        got = run(chk, or1, model, inp, len(prompts), setting, stop, **kw)
        if got is not None:
            diff = [k for k, (a, b) in enumerate(zip(got, base)) if a != b]
            chk.ok(not diff, f"{name} {what}: lines {diff[:5]} differ from --max-slots 64 --threads 2;"
                   f" first: {got[diff[0]] if diff else ''} vs {base[diff[0]] if diff else ''}")
    for slots in (1, 64):
        got = run(chk, or1, model, head, FIRST, setting, stop, **{"max-slots": slots})
        if got is not None:
            chk.ok(got == base[:FIRST * N], f"{name}: the first {FIRST} prompts alone (--max-slots "
                   f"{slots}) differ from the same prompts followed by more")
    check_variety(chk, name, or1, model, full, prompts, setting, stop, base)


def check_variety(chk, name, or1, model, full, prompts, setting, stop, base):
    """The samples vary where they should, so identical output above means something."""
    rows = [proc.parse_json_line(line, name) for line in base]
    resp = [tuple(r["response_ids"]) for r in rows]
    longer = [r for r in resp if len(r) >= 4]  # short ones may coincide by chance
    chk.ok(len(set(longer)) == len(longer) >= 8,
           f"{name}: {len(set(longer))} distinct among {len(longer)} samples of 4+ tokens")
    chk.ok(resp[1 * N:2 * N] != resp[5 * N:6 * N],
           f"{name}: prompt 5 (a copy of prompt 1) gave prompt 1's samples; seeds must differ per index")
    lengths = {len(r) for r in resp}
    stops = sum(r["finish_reason"] == "stop" for r in rows)
    chk.ok(len(lengths) >= 4 and 0 < stops < len(rows),
           f"{name}: lengths {sorted(lengths)}, {stops} stops: the stop list should end samples at "
           "various steps")
    other = run(chk, or1, model, full, len(prompts), setting, stop, seed=12)
    if other is not None:
        same = sum(a == b and len(r) >= 4 for a, b, r in zip(other, base, resp))
        chk.ok(same == 0, f"{name}: --seed 12 reproduced {same} samples (4+ tokens) of --seed 11")


def check_wide(chk, or1, tmp):
    """Thread and slot invariance on a model wide enough for multi-threaded BLAS in the prefill."""
    model = os.path.join(tmp, "wide")
    cfg, _ = ref.new_checkpoint(model, seed=6, hidden=256, inter=704, heads=8, kv_heads=2, vocab=300)
    g = torch.Generator().manual_seed(4)
    prompts = [ref.random_ids(g, cfg["vocab_size"], n) for n in (300, 7, 150)]
    inp = rollout.write_prompts(os.path.join(tmp, "wide.jsonl"), prompts)
    outs = {}
    for threads, slots, chunk in ((1, 1, 0), (2, 64, 0), (2, 1, 0), (1, 64, 0), (2, 64, 64), (1, 1, 100)):
        outs[(threads, slots, chunk)] = rollout.generate_lines(
            chk, or1, model, inp, len(prompts), n=2, seed=3, temperature=1.0,
            **{"max-new-tokens": 8, "threads": threads, "max-slots": slots, "prefill-chunk": chunk})[1]
    base = outs[(1, 1, 0)]
    for key, got in outs.items():
        chk.ok(base is not None and got == base, f"wide model: --threads {key[0]} --max-slots {key[1]} "
               f"--prefill-chunk {key[2]} differs from --threads 1 --max-slots 1")


def check_progress(chk, or1, model, inp, n_prompts, want):
    """stderr on a pseudo-terminal: a progress bar there, the same JSON lines on stdout."""
    master, slave = pty.openpty()
    args = [or1, "generate", "--model", model, "--input", inp, "--n", str(N), "--seed", "11",
            "--max-new-tokens", str(NEW), "--temperature", "1.0"]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=slave, text=True)
    os.close(slave)
    err = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the terminal closes when or1 exits
            break
        if not chunk:
            break
        err += chunk
    out = p.communicate(timeout=600)[0]
    os.close(master)
    text = err.decode(errors="replace")
    chk.ok(p.returncode == 0 and not proc.sanitizer_report(text), f"progress bar run: exit {p.returncode}: {text[-500:]}")
    chk.ok(f"{n_prompts * N}/{n_prompts * N}" in text,
           f"stderr on a terminal should show a progress bar ending at {n_prompts * N} samples: {text[-300:]!r}")
    chk.ok(out.splitlines() == want, "stdout differs when stderr is a terminal")


def main():
    or1 = sys.argv[1]
    chk = Checker("rollout invariance")
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "m")
        cfg, _ = ref.new_checkpoint(model, seed=5, hidden=48, heads=6, kv_heads=2, vocab=40)
        prompts = prompts_for(cfg["vocab_size"])
        inp = rollout.write_prompts(os.path.join(tmp, "all.jsonl"), prompts)
        plain = rollout.generate_lines(chk, or1, model, inp, len(prompts), n=N, seed=11, temperature=1.0,
                                      **{"max-new-tokens": NEW})[1]
        check_progress(chk, or1, model, inp, len(prompts), plain)
        stop = stop_tokens(chk, or1, model, inp, len(prompts))
        print(f"stop list: {stop}")
        for setting in SETTINGS:
            check_setting(chk, or1, model, tmp, setting, stop, prompts)
        check_wide(chk, or1, tmp)
    chk.finish()


if __name__ == "__main__":
    main()
