"""A killed `or1 verify-code` leaves nothing running once or1 starts again.

usage: killed.py OR1

Under the rlimits-only isolation as root (a uid of its own and control groups, no pid
namespace: the pid namespace of the other modes dies with its first process) a program
whose grandchildren spin forever is graded, and `or1` is killed with SIGKILL while they run: its
exit handler never empties the run's control groups and the parent-death signal reaches only the
harness, so the grandchildren go on (checked, so the test shows the case it guards). The next
`or1 verify-code` must kill them and remove the dead process's groups before it grades anything.
Skipped (77) where that isolation or writable control groups are not available (not root).
"""
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

from or1test.check import check, finish
from or1test.sandbox import leftover_processes, run_uids

SPIN = ("import os, time\n"
        "for _ in range(3):\n"
        "    if os.fork() == 0:\n"
        "        if os.fork() == 0:\n"
        "            while True:\n"
        "                pass\n"
        "        os._exit(0)\n"
        "time.sleep(60)\n")


def row(code, expect):
    """A stdin-shaped row around code."""
    return {"response": f"```python\n{code}```\n", "tests": {"inputs": ["1\n"], "outputs": ["1\n"]},
            "time_limit_s": 30, "expect": expect}


def groups(pid):
    """The control groups or1 process pid made for its run slots."""
    return glob.glob(f"/sys/fs/cgroup/*/or1-sandbox-{pid}-*")


def main():
    or1 = sys.argv[1]
    if os.geteuid() != 0 or not os.access("/sys/fs/cgroup/pids/cgroup.procs", os.W_OK):
        print("SKIP: needs root and writable cgroup v1 hierarchies")
        sys.exit(77)
    tmp = tempfile.mkdtemp()
    os.chmod(tmp, 0o711)
    env = dict(os.environ, TMPDIR=tmp, OR1_SANDBOX_ISOLATION="rlimits")
    path = os.path.join(tmp, "spin.jsonl")
    with open(path, "w") as f:
        f.write(json.dumps(row(SPIN, "time_limit")) + "\n")
    first = subprocess.Popen([or1, "verify-code", "--input", path, "--workers", "1"], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    uids = run_uids(first.pid)
    for _ in range(100):  # until the three grandchildren run
        if len(leftover_processes(uids)) >= 4:
            break
        time.sleep(0.05)
    first.send_signal(signal.SIGKILL)
    first.wait()
    time.sleep(0.3)
    left = leftover_processes(uids)
    check(len(left) >= 3, f"the killed run left {len(left)} processes running: the case is not made "
                          f"({first.stderr.read().decode(errors='replace')[-300:]!r})")
    check(groups(first.pid), "the killed run left no control group to clean")
    ok = os.path.join(tmp, "ok.jsonl")
    with open(ok, "w") as f:
        f.write(json.dumps(row("print(input())\n", "accepted")) + "\n")
    r = subprocess.run([or1, "verify-code", "--input", ok], env=env, capture_output=True, text=True, timeout=120)
    check(r.returncode == 0 and '"verdict":"accepted"' in r.stdout,
          f"the next run: exit {r.returncode}: {r.stdout[-200:]!r} {r.stderr[-300:]!r}")
    left = leftover_processes(uids)
    check(not left, f"after the next run, the killed run's processes still run: {left}")
    check(not groups(first.pid), f"after the next run, the killed run's groups remain: {groups(first.pid)}")
    for p in left:  # never leave them to the tests after this one
        os.kill(p, signal.SIGKILL)
    finish("code_killed")


if __name__ == "__main__":
    main()
