"""Running or1 and other commands from the tests, and reading what they print."""
import json
import os
import subprocess
import sys

SANITIZER_MARKS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer",
                   "runtime error:")


def run(cmd, ok=True, stdin=None, timeout=None, env=None):
    """Runs cmd (its items made strings) with text I/O and env added to the environment;
    returns the completed process. With ok, a non-zero exit ends the test with its stderr."""
    cmd = [str(a) for a in cmd]
    p = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout,
                       env=dict(os.environ, **env) if env else None)
    if ok and p.returncode != 0:
        sys.exit(f"command failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-4000:]}")
    return p


def mpi_env(**extra):
    """The environment of MPI ranks: one OpenMP thread each and no LeakSanitizer report (OpenMPI's
    plugins leak by design and are unloaded before the report, so they cannot be suppressed by
    name), plus extra."""
    asan = os.environ.get("ASAN_OPTIONS", "")
    return dict(os.environ, OMP_NUM_THREADS="1", ASAN_OPTIONS=(asan + ":" if asan else "") + "detect_leaks=0", **extra)


def mpirun(mpiexec, np_, cmd, timeout, **env):
    """mpiexec -np np_ cmd (cmd may hold ':' for several programs) in mpi_env(**env), whatever its
    exit status; raises subprocess.TimeoutExpired past timeout."""
    full = [str(mpiexec), "--allow-run-as-root", "--oversubscribe", "-np", str(np_), *[str(a) for a in cmd]]
    return subprocess.run(full, capture_output=True, text=True, timeout=timeout, env=mpi_env(**env))


def run_or1(or1, args, stdin=None, timeout=600):
    """Runs or1 with args whatever its exit status (the caller checks it)."""
    return run([or1, *args], ok=False, stdin=stdin, timeout=timeout)


def sanitizer_report(stderr):
    """True when stderr carries an ASan/UBSan/LSan report."""
    return any(m in stderr for m in SANITIZER_MARKS)


def json_lines(text):
    """The JSON values of the non-empty lines of text."""
    return [json.loads(line) for line in text.split("\n") if line]


def parse_json_line(text, what):
    """Parses one JSON object printed by or1, raising a readable error."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise AssertionError(f"{what}: stdout is not JSON ({e}): {text[:300]!r}")


def make_tokenizer(root, out):
    """Builds the demo tokenizer into out with the repository's demo/make_tokenizer.py."""
    return run([sys.executable, os.path.join(root, "demo", "make_tokenizer.py"), out])
