"""What the PyTorch-comparing benchmarks share: the machine's sgemm rate and a random checkpoint
written by the tests' reference (tests/model/ref.py)."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "model"))
import ref  # noqa: E402  (the tests' checkpoint writer and float64 reference)


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
