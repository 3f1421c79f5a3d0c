"""What an H200 step of or1 would take: a cost model from the emulated GPU's counters.

No GPU has run or1's kernels, so this estimates. For every backend operation a decode step and a
training step run, build/cuda_counts runs the operation once on the emulated GPU at small shapes
(bf16, the GPU's default) and the emulator counts, per kernel: launches, blocks, the distinct
32-byte sectors of global memory read and written (the DRAM traffic the launch needs at least),
tensor-core FLOPs (4,096 an mma.m16n8k16; cuBLAS calls 2mnk) and declared CUDA-core FLOPs. The
counts are exact polynomials in the shapes where the shapes are multiples of the kernels' tiles
(linear in rows, keys and widths; quadratic in a sequence's length for causal attention), so each
is fitted on a small grid, checked at a point outside the grid, and evaluated at the shapes of
DeepSeek-R1-Distill-Qwen-1.5B and -7B. A kernel's time is its roofline at the H200's datasheet
figures: max(DRAM bytes / 4.8 TB/s, tensor FLOPs / 989 TFLOP/s, CUDA-core FLOPs / 67 TFLOP/s)
(and again at ceilings measured on one H200: 4.3 TB/s for a device copy, 790 TFLOP/s for an
8192^3 bf16 GEMM),
divided by how busy its grid keeps the GPU (its warps per SM over its waves of blocks, against 8
warps an SM taken to reach the peaks: an assumption), plus 2.5 us per launch (an assumption:
the gap between kernels the host keeps up with; no CUDA graphs). It ignores caches beyond one launch, overlap between kernels, clocks
below boost and the host; it is an estimate and is labelled so wherever it is printed.

usage: /usr/bin/python3 bench/cost_model.py [--build DIR] [--check] [--markdown] [--json FILE]
  --check     fits small shapes only and checks each fit at a held-out point (the test
              cuda_cost_model; counted afresh, no cache): the premise that counts follow the
              fitted form
  --markdown  prints the tables for docs/cuda.md
  --json      writes each row's prediction (bench/cuda.sh sets the measurements beside them)"""
import argparse
import concurrent.futures
import functools
import itertools
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

# H200 SXM ceilings: the datasheet's, and those measured on one H200 (a device-to-device copy, an
# 8192^3 bf16 GEMM through PyTorch); the model's own assumptions below
CEILINGS = {
    "datasheet": dict(bw=4.8e12, tc=989e12, fp32=67e12),
    "measured": dict(bw=4.3e12, tc=790e12, fp32=67e12),
}
TC = CEILINGS["datasheet"]["tc"]  # the peak MFU is taken against
SMS = 132
LAUNCH_S = 2.5e-6    # assumption: per kernel launch
WARPS_FULL = 8       # assumption: warps an SM needs in flight to reach the peaks

MODELS = {
    "R1-Distill-Qwen-1.5B": dict(hidden=1536, inter=8960, layers=28, heads=12, kv_heads=2, head_dim=128,
                                 vocab=151936),
    "R1-Distill-Qwen-7B": dict(hidden=3584, inter=18944, layers=28, heads=28, kv_heads=4, head_dim=128,
                               vocab=152064),
}
# the published figures the predictions are set against (docs/cuda.md names their sources)
ANCHORS = {
    "decode": ("TensorRT-LLM, 8B on one H200", 18027.0),
    "train_mfu": ("verl actor", 0.33),
    "rl": ("NeMo-RL GRPO on-policy, 8B, per H100", 1581.0),
}
KEYS = ("launches", "blocks", "threads", "dram_read", "dram_written", "tc_flops", "flops")


class Counter:
    """Runs build/cuda_counts and fits its counts."""

    def __init__(self, build, cached=True):
        self.exe = os.path.join(build, "cuda_counts")
        if not os.access(self.exe, os.X_OK):
            sys.exit(f"cost_model: {self.exe} is missing (cmake --build {build} --target cuda_counts)")
        self.cached = cached
        # counts depend only on the program and the arguments: kept beside it for the next run
        st = os.stat(self.exe)
        self.stamp = f"{st.st_size}-{st.st_mtime_ns}-{','.join(KEYS)}"
        self.cache_path = os.path.join(build, "cost_model_counts.json")
        try:
            if not cached:
                raise OSError("counting afresh")
            saved = json.load(open(self.cache_path))
            self.cache = saved["counts"] if saved.get("stamp") == self.stamp else {}
        except (OSError, ValueError, KeyError):
            self.cache = {}

    def save(self):
        """Writes the counts cache (atomically), when caching."""
        if not self.cached:
            return
        with open(self.cache_path + ".tmp", "w") as f:
            json.dump({"stamp": self.stamp, "counts": self.cache}, f)
        os.replace(self.cache_path + ".tmp", self.cache_path)

    def run(self, *args):
        """{kernel: {counter: value}} of one operation at one shape."""
        key = " ".join(map(str, args))
        if key not in self.cache:
            self.cache[key] = self.measure(*args)
        return self.cache[key]

    def measure(self, *args):
        """Runs cuda_counts once."""
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "counts.jsonl")
            env = dict(os.environ, OR1_EMU_COUNTERS=path, OR1_EMU_ORDER="forward")
            p = subprocess.run([self.exe, *map(str, args)], env=env, capture_output=True, text=True)
            if p.returncode:
                sys.exit(f"cost_model: cuda_counts {' '.join(map(str, args))} failed: {p.stderr[-2000:]}")
            rows = [json.loads(line) for line in open(path)] if os.path.exists(path) else []
        return {r["kernel"]: {k: r[k] for k in KEYS} for r in rows}

    def fit(self, op, shape, vary, degree=None):
        """A function from the varied dimensions' values to {kernel: counts}: op's arguments are
        shape(values); each of vary's dimensions takes the grid values given (degree + 1 of
        them, degree 1 unless named in degree); every count is fitted on the products of the
        dimensions' powers (exact on the grid)."""
        names = list(vary)
        degree = degree or {}
        powers = list(itertools.product(*[range(degree.get(n, 1) + 1) for n in names]))
        grid = list(itertools.product(*[vary[n] for n in names]))
        with concurrent.futures.ThreadPoolExecutor(os.cpu_count()) as pool:
            runs = list(pool.map(lambda g: self.run(op, *shape(dict(zip(names, g)))), grid))
        kernels = sorted({k for r in runs for k in r})
        A = np.array([[math.prod(v ** e for v, e in zip(g, p)) for p in powers] for g in grid], dtype=float)
        coef = {}
        for k in kernels:
            Y = np.array([[r.get(k, {}).get(c, 0) for c in KEYS] for r in runs], dtype=float)
            coef[k] = np.linalg.solve(A, Y)

        def predict(values):
            x = np.array([math.prod(values[n] ** e for n, e in zip(names, p)) for p in powers], dtype=float)
            return {k: dict(zip(KEYS, np.maximum(x @ c, 0))) for k, c in coef.items()}

        predict.op, predict.shape = op, shape
        return predict

    def check(self, predict, values):
        """The worst relative error of predict at values against a run there."""
        got = self.run(predict.op, *predict.shape(values))
        want = predict(values)
        worst = 0.0
        for k in set(got) | set(want):
            for c in KEYS:
                g, w = got.get(k, {}).get(c, 0), want.get(k, {}).get(c, 0)
                worst = max(worst, abs(g - w) / max(abs(g), 1.0))
        return worst


def busy(c):
    """The fraction of the GPU's peak a kernel can use: the warps it keeps on each SM, averaged
    over its waves of blocks (at most 32 blocks and 64 warps an SM), against WARPS_FULL warps an
    SM for the peak. Library calls (no blocks counted) are taken as full."""
    launches = max(c["launches"], 1)
    blocks = c["blocks"] / launches
    if blocks < 1:
        return 1.0
    warps = max(c["threads"] / c["blocks"] / 32, 1.0)
    resident = max(min(32, 64 // math.ceil(warps)), 1)
    waves = math.ceil(blocks / (SMS * resident))
    return min(1.0, blocks * warps / (waves * SMS) / WARPS_FULL)


def kernel_time(c, ceil):
    """(seconds, what bounds it) of one kernel's counts (summed over its launches) under the
    ceilings ceil."""
    eff = busy(c)
    parts = {"memory": (c["dram_read"] + c["dram_written"]) / ceil["bw"], "tensor": c["tc_flops"] / ceil["tc"],
             "fp32": c["flops"] / ceil["fp32"]}
    bound = max(parts, key=parts.get)
    return parts[bound] / eff + c["launches"] * LAUNCH_S, bound


class Step:
    """A step as a list of (operation counts, times): summed per kernel."""

    def __init__(self):
        self.kernels = {}

    def add(self, counts, times=1):
        for k, c in counts.items():
            acc = self.kernels.setdefault(k, dict.fromkeys(KEYS, 0.0))
            for key in KEYS:
                acc[key] += c[key] * times

    def time(self, ceil):
        """Total seconds, and per kernel (seconds, bound, counts), slowest first."""
        rows = {k: (*kernel_time(c, ceil), c) for k, c in self.kernels.items()}
        return sum(r[0] for r in rows.values()), dict(sorted(rows.items(), key=lambda kv: -kv[1][0]))


class Model:
    """The fitted operations for one model's widths."""

    def __init__(self, counter, m):
        self.c, self.m = counter, m
        H, I, hd = m["hidden"], m["inter"], m["head_dim"]
        self.G = m["heads"] // m["kv_heads"]
        self.qd, self.qkvd = m["heads"] * hd, (m["heads"] + 2 * m["kv_heads"]) * hd
        self.n_params = (m["layers"] * (H * self.qkvd + self.qkvd + self.qd * H + H * 2 * I + I * H + 2 * H)
                         + 2 * m["vocab"] * H + H)

    @functools.lru_cache(maxsize=None)
    def matmul(self, op, T):
        """Counts of a forward (matmul) or backward (matmul_dx, matmul_dw) linear layer over T
        rows (0: fitted in the rows), fitted in its widths. Decode-sized calls run at their own
        row count (a kernel may be chosen by rows); larger ones are linear in whole row tiles."""
        if T:
            return self.c.fit(op, lambda v: (T, v["in"], v["out"]), {"in": [256, 512], "out": [256, 512]})
        return self.c.fit(op, lambda v: (v["T"], v["in"], v["out"]), {"T": [256, 512], "in": [256, 512],
                                                                       "out": [256, 512]})

    def linear(self, op, T, n_in, n_out):
        """Counts of op over T rows of n_in -> n_out."""
        return self.matmul(op, T if T <= 256 else 0)({"T": T, "in": n_in, "out": n_out})

    @functools.lru_cache(maxsize=None)
    def rows_op(self, op, width):
        """An operation linear in its rows at a fixed width."""
        return self.c.fit(op, lambda v: (v["T"], *width), {"T": [64, 128]})

    @functools.lru_cache(maxsize=None)
    def flat(self, op):
        """An operation over n parameters."""
        return self.c.fit(op, lambda v: (v["n"],), {"n": [1 << 16, 1 << 17]})

    @functools.lru_cache(maxsize=None)
    def attention(self, op):
        """Causal attention over one sequence of L tokens, one KV head's group (times kv_heads)."""
        hd = self.m["head_dim"]
        return self.c.fit(op, lambda v: (1, v["L"], self.G, 1, hd), {"L": [128, 256, 384]}, {"L": 2})

    @functools.lru_cache(maxsize=None)
    def decode_attn(self):
        hd = self.m["head_dim"]
        return self.c.fit("decode", lambda v: (v["B"], v["ctx"], self.G, 1, hd), {"B": [8, 16], "ctx": [512, 1024]})

    @functools.lru_cache(maxsize=None)
    def head_fit(self, op):
        return self.c.fit(op, lambda v: (v["n"], v["H"], v["V"]), {"n": [256, 512], "H": [64, 128],
                                                                    "V": [16384, 32768]})

    @functools.lru_cache(maxsize=None)
    def sample_fit(self):
        return self.c.fit("sample", lambda v: (v["B"], v["V"]), {"B": [8, 16], "V": [16384, 32768]})

    def times_kv(self, counts):
        """Counts of one KV head's group scaled to all of them."""
        k = self.m["kv_heads"]
        return {n: {c: v * k for c, v in d.items()} for n, d in counts.items()}

    def copy(self, nbytes):
        """A device-to-device copy (cudaMemcpyAsync): read and write once."""
        return {"memcpy": {"launches": 1, "blocks": 0, "threads": 0, "dram_read": nbytes, "dram_written": nbytes,
                           "tc_flops": 0, "flops": 0}}

    def layer_forward(self, s, T, attn):
        """One decoder layer's forward operations over T rows (decoder.c's layer_forward)."""
        m = self.m
        H, I, hd = m["hidden"], m["inter"], m["head_dim"]
        norm = self.rows_op("rmsnorm", (H,))
        s.add(norm({"T": T}), 2)
        s.add(self.linear("matmul", T, H, self.qkvd))
        s.add(self.rows_op("rope", (m["heads"] + m["kv_heads"], hd))({"T": T}))
        s.add(attn)
        s.add(self.linear("matmul", T, self.qd, H))
        s.add(self.linear("matmul", T, H, 2 * I))
        s.add(self.rows_op("swiglu", (I,))({"T": T}))
        s.add(self.linear("matmul", T, I, H))

    def decode_step(self, B, ctx):
        """One decode step of B rows at context ctx: embedding, the layers, the logits, the sampler."""
        m, s = self.m, Step()
        H, V = m["hidden"], m["vocab"]
        s.add(self.rows_op("gather", (H,))({"T": B}))
        attn = self.times_kv(self.decode_attn()({"B": B, "ctx": ctx}))
        for _ in range(m["layers"]):
            self.layer_forward(s, B, attn)
        s.add(self.rows_op("rmsnorm", (H,))({"T": B}))
        s.add(self.linear("matmul", B, H, V))
        s.add(self.sample_fit()({"B": B, "V": V}))
        return s

    def train_step(self, T):
        """Forward, backward with recompute (the 1.5B and 7B configs' gradient checkpointing) and
        the optimizer over one packed sequence of T tokens, three quarters of them scored (a
        quarter prompt, as bench/cuda_bench.cu trains)."""
        m, s = self.m, Step()
        H, I, V, L = m["hidden"], m["inter"], m["vocab"], m["layers"]
        attn = self.times_kv(self.attention("attention")({"L": T}))
        attn_bwd = self.times_kv(self.attention("attention_bwd")({"L": T}))
        rows = lambda op, *w: self.rows_op(op, w)({"T": T})  # noqa: E731
        blocks, last = divmod(scored(T), 1024)  # the head runs 1,024 rows a call
        head = lambda op, n: self.head_fit(op)({"n": n, "H": H, "V": V})  # noqa: E731
        s.add(rows("gather", H))
        for _ in range(L):  # forward, keeping each layer's input
            self.layer_forward(s, T, attn)
            s.add(self.copy(T * H * 4))
        s.add(rows("rmsnorm", H))
        for n, times in ((1024, blocks), (last, 1 if last else 0)):
            if times:
                s.add(head("head", n), times)
                s.add(head("head_bwd", n), times)
        s.add(rows("scatter_add", H))
        s.add(rows("rmsnorm_bwd", H))
        for _ in range(L):  # backward: the layer again from its input, then its gradients
            s.add(self.copy(T * H * 4))
            self.layer_forward(s, T, attn)
            s.add(self.linear("matmul_dx", T, I, H))
            s.add(rows("swiglu_bwd", I))
            s.add(self.linear("matmul_dw", T, I, H))
            s.add(self.linear("matmul_dw", T, H, 2 * I))
            s.add(self.linear("matmul_dx", T, H, 2 * I))
            s.add(rows("rmsnorm_bwd", H))
            s.add(self.linear("matmul_dw", T, self.qd, H))
            s.add(self.linear("matmul_dx", T, self.qd, H))
            s.add(attn_bwd)
            s.add(rows("rope", m["heads"] + m["kv_heads"], m["head_dim"]))
            s.add(self.linear("matmul_dw", T, H, self.qkvd))
            s.add(self.linear("matmul_dx", T, H, self.qkvd))
            s.add(rows("rmsnorm_bwd", H))
        s.add(rows("scatter_add", H))
        N = self.n_params
        for op in ("grad_norm", "adamw", "to_bf16"):
            s.add(self.flat(op)({"n": N}))
        return s

    def model_flops(self, T):
        """The training step's model FLOPs (bench/cuda_bench.cu's definition): 3 x (the
        forward's matmuls, causal attention and the head at the scored positions)."""
        m = self.m
        H, I = m["hidden"], m["inter"]
        mm = m["layers"] * (H * self.qkvd + self.qd * H + H * 2 * I + I * H)
        attn = m["layers"] * 2 * T * T * m["head_dim"] * m["heads"]
        return 3 * (2 * T * mm + attn + 2 * scored(T) * H * m["vocab"])


def scored(T):
    """Scored positions of a T-token training sequence: all but the prompt quarter's."""
    return T - max(T // 4, 1)


SCENARIOS = [("decode", 64, 2048), ("decode", 64, 8192), ("decode", 256, 2048), ("decode", 256, 8192),
             ("train", 8192, None)]


def predict(counter, ceil):
    """Rows of (model, scenario, tokens/s, MFU or None, total seconds, per-kernel rows, the
    scenario as data) under the ceilings ceil."""
    out = []
    for name, m in MODELS.items():
        model = Model(counter, m)
        for kind, a, b in SCENARIOS:
            key = {"model": name, "kind": kind, "rows": a, "context": b}
            if kind == "decode":
                t, rows = model.decode_step(a, b).time(ceil)
                out.append((name, f"decode, {a} sequences at {b // 1024}K context", a / t, None, t, rows, key))
            else:
                t, rows = model.train_step(a).time(ceil)
                out.append((name, f"training step, one packed {a // 1024}K sequence", a / t,
                            model.model_flops(a) / t / TC, t, rows, key))
    return out


def fmt_rate(x):
    return f"{x:,.0f}"


def report(rows, measured, markdown):
    """Prints the predictions at the datasheet's ceilings (and the kernels that bound each), the
    same at the measured ceilings, and the anchors."""
    if markdown:
        print("| model | step | time | tokens/s | MFU | at measured ceilings: tokens/s, MFU | slowest kernels "
              "(share of the step, bound) |")
        print("|---|---|---:|---:|---:|---:|---|")
    for (name, what, rate, mfu, t, kern, _), (_, _, rate2, mfu2, _, _, _) in zip(rows, measured):
        slow = ", ".join(f"{k} {v[0] / t:.0%} ({v[1]})" for k, v in list(kern.items())[:3])
        m1 = "" if mfu is None else f"{mfu:.2f}"
        m2 = "" if mfu2 is None else f", {mfu2:.2f}"
        if markdown:
            print(f"| {name} | {what} | {t * 1e3:.2f} ms | {fmt_rate(rate)} | {m1} | {fmt_rate(rate2)}{m2} | {slow} |")
        else:
            print(f"{name:22s} {what:40s} {t * 1e3:9.2f} ms {fmt_rate(rate):>9s} tok/s"
                  f"{'' if mfu is None else f'  MFU {mfu:.2f}'}  (measured ceilings {fmt_rate(rate2)}{m2})"
                  f"   [{slow}]")
    by = {(n, w): (r, mfu) for n, w, r, mfu, _, _, _ in rows}
    print()
    name7 = "R1-Distill-Qwen-7B"
    dec = by[(name7, "decode, 256 sequences at 8K context")][0]
    dec2 = by[(name7, "decode, 256 sequences at 2K context")][0]
    train7, mfu7 = by[(name7, "training step, one packed 8K sequence")]
    mfu15 = by[("R1-Distill-Qwen-1.5B", "training step, one packed 8K sequence")][1]
    rl = 1 / (1 / dec + 1 / train7)
    lines = [
        ("7B decode, 256 sequences, 2K / 8K context (tokens/s)", f"{fmt_rate(dec2)} / {fmt_rate(dec)}",
         *ANCHORS["decode"]),
        ("training MFU, 1.5B / 7B, packed 8K", f"{mfu15:.2f} / {mfu7:.2f}", *ANCHORS["train_mfu"]),
        ("7B RL step, tokens/s per GPU (1 / (1/decode at 8K + 1/training))", fmt_rate(rl), *ANCHORS["rl"]),
    ]
    if markdown:
        print("| estimate (datasheet ceilings) | or1, predicted | anchor | anchor figure |")
        print("|---|---:|---|---:|")
    for what, ours, who, fig in lines:
        figs = f"{fig:.2f}" if fig < 1 else fmt_rate(fig)
        print(f"| {what} | {ours} | {who} | {figs} |" if markdown else f"{what}: {ours} (estimate) against {who} {figs}")


def check(counter):
    """Fits small shapes of every operation the steps use and checks each at a held-out point;
    exits non-zero when a fit misses by more than 1e-6 (relative)."""
    small = dict(hidden=128, inter=256, layers=1, heads=6, kv_heads=2, head_dim=64, vocab=20000)
    model = Model(counter, small)
    cases = [
        (model.matmul("matmul", 64), {"in": 768, "out": 1024}),
        (model.matmul("matmul", 0), {"T": 768, "in": 768, "out": 768}),
        (model.matmul("matmul_dx", 0), {"T": 768, "in": 768, "out": 768}),
        (model.attention("attention"), {"L": 512}),
        (model.attention("attention_bwd"), {"L": 512}),
        (model.decode_attn(), {"B": 24, "ctx": 1536}),
        (model.rows_op("rmsnorm", (128,)), {"T": 192}),
        (model.head_fit("head"), {"n": 768, "H": 192, "V": 49152}),
        (model.sample_fit(), {"B": 24, "V": 49152}),
        (model.flat("adamw"), {"n": 3 << 16}),
    ]
    bad = 0
    for f, at in cases:
        err = counter.check(f, at)
        ok = err <= 1e-6
        bad += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {f.op} fitted at {at}: worst relative error {err:.2e}")
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--build", default=os.path.join(root, "build"))
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--json", help="also write the predictions here, one JSON object a row")
    a = ap.parse_args()
    counter = Counter(a.build, cached=not a.check)
    if a.check:
        bad = check(counter)
        counter.save()
        sys.exit(1 if bad else 0)
    print("ESTIMATE from the emulated GPU's counters at the H200's datasheet figures (not a measurement)\n")
    rows = predict(counter, CEILINGS["datasheet"])
    measured = predict(counter, CEILINGS["measured"])
    counter.save()
    report(rows, measured, a.markdown)
    if a.json:
        with open(a.json + ".tmp", "w") as f:
            for (_, _, rate, mfu, t, _, key), (_, _, rate2, _, t2, _, _) in zip(rows, measured):
                f.write(json.dumps(dict(key, seconds=t, tokens_per_s=rate, mfu=mfu, seconds_measured_ceilings=t2,
                                        tokens_per_s_measured_ceilings=rate2)) + "\n")
        os.replace(a.json + ".tmp", a.json)


if __name__ == "__main__":
    main()
