"""Shows that the emulated CUDA tests can fail: applies one mutation at a time to src/cuda (a
removed __syncthreads, a shifted shuffle lane, an off-by-one block-table index, a shared-memory
race; in the tensor-core matmul and attention a fragment in the wrong registers or lanes, a
removed barrier and a dropped cp.async wait), rebuilds, runs every emulated CUDA test in both
orders, prints which ones failed and how, and restores the source (also when interrupted). Not
part of `make test` (about 40 minutes).

usage: /usr/bin/python3 tests/cuda/emu/mutations.py [BUILD_DIR [WORD...]]   (default: build; with
words, only the mutations whose name holds one of them)"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

# name: (file under src/cuda, text, its replacement)
MUTATIONS = {
    "chunk boundary one tile early (k_fa_fwd only: FA_SPLIT's merge before key tile 7 of a chunk)": (
        "attention.cu",
        "if (k0 > 0 && k0 % FA_SPLIT == 0) {",
        "if (k0 > 0 && (k0 + FA_T) % FA_SPLIT == 0) {"),
    "removed __syncthreads (k_attn_fwd, before a key tile is loaded)": (
        "attention.cu",
        "        __syncthreads();\n        load_rows(ks, hd + 1, base + (size_t)(nh + kvh) * hd, stride, k0, TILE, len, hd);\n"
        "        load_rows(vs, hd, ",
        "        load_rows(ks, hd + 1, base + (size_t)(nh + kvh) * hd, stride, k0, TILE, len, hd);\n"
        "        load_rows(vs, hd, "),
    "shifted shuffle lane (k_attn_fwd, p of key jj read from lane jj + 1)": (
        "attention.cu",
        "            float pj = __shfl_sync(0xffffffffu, p, jj);\n            for (int k = 0; k < NDIM; k++)\n"
        "                if (lane + 32 * k < hd) o[k] += pj * vs[jj * hd + lane + 32 * k];",
        "            float pj = __shfl_sync(0xffffffffu, p, jj + 1);\n            for (int k = 0; k < NDIM; k++)\n"
        "                if (lane + 32 * k < hd) o[k] += pj * vs[jj * hd + lane + 32 * k];"),
    "off-by-one block-table index (ctx_row of decode attention)": (
        "attention.cu",
        "return (size_t)table[i / block] * (size_t)block",
        "return (size_t)table[(i + 1) / block] * (size_t)block"),
    "P -> A fragment register order (fa_pv: the rows g+8 and columns 2t+8 registers swapped)": (
        "attention.cu",
        "tc_pack(p[2 * kk][2], p[2 * kk][3]),\n                          tc_pack(p[2 * kk + 1][0], p[2 * kk + 1][1]),",
        "tc_pack(p[2 * kk + 1][0], p[2 * kk + 1][1]),\n                          tc_pack(p[2 * kk][2], p[2 * kk][3]),"),
    "wrong ldmatrix .trans lane mapping for V (fa_pv: key and column halves of the matrices exchanged)": (
        "attention.cu",
        "vs + (kk * 16 + (i % 2) * 8 + j) * ld + dp * 16 + (i / 2) * 8",
        "vs + (kk * 16 + (i / 2) * 8 + j) * ld + dp * 16 + (i % 2) * 8"),
    "removed __syncthreads (k_fa_fwd, before a key tile is staged)": (
        "attention.cu",
        "        __syncthreads();\n        fa_stage(ks, ld,",
        "        fa_stage(ks, ld,"),
    "dropped cp.async wait (k_fa_decode: the keys read before they land)": (
        "attention.cu",
        "        tc_cp_wait<1>();\n",
        ""),
    "shared-memory race (k_colsum reads partial sums without a barrier)": (
        "elementwise.cu",
        "    sh[threadIdx.y][threadIdx.x] = s;\n    __syncthreads();",
        "    sh[threadIdx.y][threadIdx.x] = s;"),
    "A fragment's ldmatrix rows swapped (tc_matmul: a[1] and a[2], rows 8-15 and k 8-15)": (
        "ctx.cu",
        "lane % 8 + lane / 8 % 2 * 8][kk / 8 + lane / 16]",
        "lane % 8 + lane / 16 * 8][kk / 8 + lane / 8 % 2]"),
    "removed __syncthreads (tc_matmul, after a stage's mmas)": (
        "ctx.cu",
        "        if (next) put(buf ^ 1);\n        tc_cp_wait<0>();\n        __syncthreads();\n",
        "        if (next) put(buf ^ 1);\n        tc_cp_wait<0>();\n"),
    "dropped cp.async wait (tc_matmul, the next stage's weights)": (
        "ctx.cu",
        "        if (next) put(buf ^ 1);\n        tc_cp_wait<0>();\n",
        "        if (next) put(buf ^ 1);\n"),
}


def run(cmd, **kw):
    """Runs cmd, returning the completed process (text output)."""
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def failures(build):
    """{test: first report line} of the emulated CUDA tests that fail."""
    p = run(["ctest", "-R", "^cuda_.*_emu", "-E", "selftest", "--output-on-failure"], cwd=build, timeout=3600)
    out, bad = p.stdout, {}
    for m in re.finditer(r"\d+/\d+ Test +#\d+: (\S+) \.+\**(Failed|Subprocess aborted|Exception)", out):
        bad[m.group(1)] = ""
    for name in bad:
        block = out.split(f": {name} ", 1)[1] if f": {name} " in out else ""
        hit = re.search(r"(or1 CUDA emulator: [^\n]+|FAIL[^\n]+)", block)
        bad[name] = hit.group(1)[:160] if hit else "(no report line)"
    return bad


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build"))
    targets = ["or1-cuda-emu", "cuda_test_kernels_emu", "cuda_test_model_emu", "cuda_test_backend_ops_emu"]
    words = sys.argv[2:]
    missed = 0
    for name, (fn, old, new) in MUTATIONS.items():
        if words and not any(w in name for w in words):
            continue
        path = os.path.join(ROOT, "src", "cuda", fn)
        orig = open(path).read()
        if orig.count(old) != 1:
            sys.exit(f"mutation '{name}': its text is not found once in {fn}; update this script")
        try:
            with open(path, "w") as f:
                f.write(orig.replace(old, new))
            b = run(["cmake", "--build", build, "-j2", "--target", *targets])
            if b.returncode:
                sys.exit(f"build failed under mutation '{name}':\n{b.stdout[-2000:]}{b.stderr[-2000:]}")
            bad = failures(build)
        finally:
            with open(path, "w") as f:
                f.write(orig)
        print(f"== {name}: {len(bad)} test(s) failed")
        for test, line in sorted(bad.items()):
            print(f"   {test}: {line}")
        missed += not bad
    run(["cmake", "--build", build, "-j2", "--target", *targets])
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
