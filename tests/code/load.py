"""Rewards under load: one `or1 verify-code` process grades 240 programs on 2 workers, fed
through a pipe in chunks of 40 (the pool saturated throughout), the hostile rows of
tests/code/hostile.jsonl twice over among ordinary ones, shuffled. Every verdict must be
the labelled one. After the first chunk and after the last, the process must hold the same file
descriptors and have no child left, and every control group it keeps for its run slots (one
set per slot of 1,024, reused, removed at exit) must be empty; after it exits, no sandboxed
process, control group or private directory may remain.

usage: load.py OR1 HOSTILE.jsonl
"""
import glob
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time

from or1test.check import check, finish
from or1test.sandbox import CANARIES, check_host_clean, expected

CHUNK, WORKERS = 40, 2


def ordinary(i):
    """A quick program, right or wrong by i."""
    code = "print(int(input()) * 2)" if i % 3 else "print(0)"
    return {"name": f"ordinary {i}", "response": f"```python\n{code}\n```\n",
            "tests": {"inputs": [f"{i + 1}\n"], "outputs": [f"{2 * (i + 1)}\n"]}, "time_limit_s": 2,
            "expect": "accepted" if i % 3 else "wrong_answer"}


def rows(hostile_path):
    """A warm-up chunk of ordinary rows, then the hostile rows twice and ordinary ones to
    fill whole chunks, shuffled with a fixed seed."""
    hostile = [json.loads(line) for line in open(hostile_path) if line.strip()]
    warm = [ordinary(i) for i in range(CHUNK)]
    load = hostile * 2
    load += [ordinary(CHUNK + i) for i in range(-len(load) % CHUNK + 2 * CHUNK)]
    random.Random(7).shuffle(load)
    return warm, load


def cgroups(pid):
    """The control groups or1 made for its run slots (named after its pid)."""
    return sorted(glob.glob(f"/sys/fs/cgroup/**/or1-sandbox-{pid}-*", recursive=True))


def busy_groups(groups):
    """The groups that still hold a process."""
    busy = []
    for g in groups:
        try:
            if open(os.path.join(g, "cgroup.procs")).read().strip():
                busy.append(g)
        except OSError:
            pass
    return busy


def held(pid):
    """The process's open descriptors (what each points at), its child processes, its groups."""
    fds = sorted(os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd"))
    children = [p for p in os.listdir("/proc") if p.isdigit() and parent(p) == pid]
    return fds, children, cgroups(pid)


def parent(pid):
    """The parent pid of pid (None once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return int(next(line for line in f if line.startswith("PPid:")).split()[1])
    except (OSError, StopIteration):
        return None


def read_results(stream, n):
    """n verdict rows from the pipe."""
    return [json.loads(stream.readline()) for _ in range(n)]


def settle(pid, want_children=0):
    """held(pid) once its killed children are gone (a moment after a chunk ends)."""
    for _ in range(50):
        state = held(pid)
        if len(state[1]) <= want_children:
            return state
        time.sleep(0.1)
    return held(pid)


def main():
    or1, hostile_path = sys.argv[1], sys.argv[2]
    warm, load = rows(hostile_path)
    tmp = tempfile.mkdtemp()
    os.chmod(tmp, 0o711)  # a run's uid must be able to pass through to its own directory
    for c in CANARIES:
        if os.path.exists(c):
            os.remove(c)
    child = subprocess.Popen([or1, "verify-code", "--input", "-", "--all-tests", "--workers", str(WORKERS),
                              "--chunk", str(CHUNK)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=dict(os.environ, TMPDIR=tmp))
    child.stdin.write("".join(json.dumps(r) + "\n" for r in warm))
    child.stdin.flush()
    results = read_results(child.stdout, len(warm))
    before = settle(child.pid)
    check(not os.listdir(tmp), f"after the first chunk: private directories {os.listdir(tmp)}")
    feeder = threading.Thread(target=lambda: (child.stdin.write("".join(json.dumps(r) + "\n" for r in load)),
                                              child.stdin.flush()))
    feeder.start()
    results += read_results(child.stdout, len(load))
    feeder.join()
    after = settle(child.pid)
    check(after[0] == before[0], f"descriptors after the first chunk {before[0]}, after the last {after[0]}")
    check(not after[1], f"child processes left after the last chunk: {after[1]}")
    for when, state in (("first", before), ("last", after)):
        check(not busy_groups(state[2]), f"control groups holding processes after the {when} chunk: "
                                         f"{busy_groups(state[2])[:6]}")
    check(len(after[2]) <= 3 * 1024, f"{len(after[2])} control groups: more than three per run slot")
    check(not os.listdir(tmp), f"after the last chunk: private directories {os.listdir(tmp)}")
    child.stdin.close()
    err = child.stderr.read()
    check(child.wait(timeout=120) == 0, f"or1 exited with {child.returncode}: {err[-800:]}")
    mode = err.rsplit("isolation ", 1)[-1].strip() if "isolation " in err else ""
    counts = {}
    for row, res in zip(warm + load, results):
        want = expected(row, mode)
        ok = res["verdict"] in want and res["correct"] == (res["verdict"] == "accepted")
        if "passed" in row and res["passed"] != row["passed"]:
            ok = False
        check(ok, f"{row['name']}: {res['verdict']} (want {'|'.join(want)}), {res['passed']}/{res['total']}")
        counts[res["verdict"]] = counts.get(res["verdict"], 0) + 1
    print(f"{len(results)} programs, isolation {mode}: {counts}; {err.strip().splitlines()[-1]}; "
          f"{len(before[0])} descriptors, {len(after[2])} control groups kept")
    check(cgroups(child.pid) == [], f"control groups left after exit: {cgroups(child.pid)}")
    check_host_clean(child.pid, mode, tmp)
    finish("code_load")


main()
