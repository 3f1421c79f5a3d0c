"""What the PyTorch-comparing benchmarks share: their common flags and start, the machine's sgemm
rate and a random checkpoint written by the tests' reference (tests/or1test/ref.py)."""
import json
import os
import subprocess

import torch

from or1test import ref  # the tests' checkpoint writer and float64 reference


def common_args(ap):
    """Adds the flags both comparisons take (--or1, --sgemm, --threads, --shapes); returns ap."""
    ap.add_argument("--or1", required=True)
    ap.add_argument("--sgemm")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--shapes", default="small,qwen")
    return ap


def start(args, self_check):
    """Gives PyTorch the benchmark's thread count, runs its self check; returns the sgemm rate."""
    torch.set_num_threads(args.threads)
    self_check()
    return sgemm_rate(args.sgemm, args.threads)


def sgemm_rate(path, threads):
    """GFLOP/s of OpenBLAS sgemm from build/bench_sgemm, or None if it is missing."""
    if not path or not os.path.exists(path):
        return None
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
    r = subprocess.run([path, "1024"], capture_output=True, text=True, env=env)
    return json.loads(r.stdout)["gflops"] if r.returncode == 0 else None


def random_checkpoint(tmp, shape):
    """A random checkpoint of the config arguments `shape` in tmp/m; returns (folder, cfg, params)."""
    model = os.path.join(tmp, "m")
    cfg = ref.make_config(**shape)
    params = ref.random_params(cfg)
    ref.save_checkpoint(model, cfg, params)
    return model, cfg, params
