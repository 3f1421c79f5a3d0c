"""The CUDA emulator's own cases (selftest.cu), each in its own process: those that must work
exit 0, those the emulator must report abort with the message given here, in both scheduling
orders; and the reverse order runs threads in the other order (the last writer differs).

usage: test_selftest.py SELFTEST"""
import json
import os
import subprocess
import sys
import tempfile

from or1test.check import check, finish

# case: what its stderr must hold (None: it must exit 0)
CASES = {
    "warp_loops": None,
    "barrier_after_exit": None,
    "launch_limits": None,
    "fresh_nan": None,
    "memcpy_checks": None,
    "cublas": None,
    "gemm_extent": "cublasSgemm: B (3 x 1, leading dimension 3: 12 bytes from",
    "divergent_barrier": "the threads of a block wait at different __syncthreads",
    "shuffle_deadlock": "deadlock: no thread can go on",
    "shuffle_exited": "reads lane 16, which has exited or does not exist",
    "shared_race": "shared-memory race on a __shared__ array",
    "oob": "bytes past the start of a 40-byte device allocation",
    "host_pointer": "pointer argument 2",
    "watchdog": "watchdog: kernel k_spin ran past 1 s",
    "mma": None,
    "ldmatrix_banks": None,
    "ldmatrix_misaligned": "not 16-byte aligned",
    "mma_partial": "a warp-wide tensor-core instruction (mma.sync / ldmatrix) without all 32 lanes",
}
# where the report must point (the place in selftest.cu), for the reports that name one
PLACES = {
    "divergent_barrier": "selftest.cu:",
    "shared_race": "selftest.cu:",
    "oob": "selftest.cu:",
    "shuffle_deadlock": "selftest.cu:",
    "ldmatrix_misaligned": "selftest.cu:",
    "mma_partial": "selftest.cu:",
}


def run(exe, case, order, **env):
    """Runs one case; returns the completed process (the cases keep their device memory to the
    end, so LeakSanitizer is off for them)."""
    e = dict(os.environ, OR1_EMU_ORDER=order, ASAN_OPTIONS="detect_leaks=0", **env)
    return subprocess.run([exe, case], capture_output=True, text=True, timeout=120, env=e)


def counters(exe):
    """The cost model's counters: two ldmatrix.x4, one over rows 16 bytes apart (4 wavefronts),
    one over rows 128 bytes apart (every row in one bank group: 8 wavefronts a matrix); the
    tensor-core case's instructions and bytes."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "counts.jsonl")
        for case in ("ldmatrix_banks", "mma"):
            check(run(exe, case, "forward", OR1_EMU_COUNTERS=path).returncode == 0, f"{case} with counters")
        rows = {r["kernel"]: r for r in map(json.loads, open(path))}
    b, m = rows.get("k_ldmatrix_banks", {}), rows.get("k_mma", {})
    check(b.get("ldmatrix") == 2 and b.get("wavefronts") == 36 and b.get("ideal_wavefronts") == 8, f"bank counts {b}")
    check(m.get("mma") == 2 and m.get("ldmatrix") == 3 and m.get("cp_bytes") == 1024 and m.get("launches") == 1,
          f"tensor-core counts {m}")


def main(exe):
    for case, want in CASES.items():
        for order in ("forward", "reverse"):
            p = run(exe, case, order, OR1_EMU_WATCHDOG="1")
            what = f"{case} ({order})"
            if want is None:
                check(p.returncode == 0, f"{what}: exit {p.returncode}: {p.stdout[-600:]} {p.stderr[-600:]}")
                continue
            check(p.returncode != 0 and want in p.stderr, f"{what}: exit {p.returncode}, want a report with "
                  f"{want!r}: {p.stderr[-800:]}")
            if case in PLACES:
                check(PLACES[case] in p.stderr, f"{what}: the report names no place in selftest.cu: {p.stderr[-800:]}")
    last = {order: run(exe, "order", order).stdout.strip() for order in ("forward", "reverse")}
    check(last == {"forward": "last writer 63", "reverse": "last writer 0"}, f"scheduling orders: {last}")
    counters(exe)
    finish("cuda_emu_selftest")


if __name__ == "__main__":
    main(sys.argv[1])
