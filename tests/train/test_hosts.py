#!/usr/bin/env python3
"""Ranks on several hosts, made on this machine: two network namespaces (the hosts h1 and h2,
each with its own hostname in a UTS namespace) joined by a bridge in a third, over veth pairs
with addresses in 10.77.0.0/24 that exist only inside the namespaces. mpirun runs in h1 and
starts h2's daemon through a launch agent that enters h2's namespaces instead of ssh; MPI's
TCP transport carries the ranks' traffic (shared memory off, TCP only over the veth subnet).
2 ranks (one a host) and 4 (two a host), plain and with ZeRO-1, give the 1-process weights,
AdamW moments and metrics, as on one host.

Skipped (exit 77) without mpirun, without an MPI build of or1, or where namespaces cannot be
made (not root, or no `ip`).

Usage: test_hosts.py OR1 FIXTURE_DIR SCRATCH_DIR [MPIEXEC]
"""
import os
import shutil
import subprocess
import sys

from or1test import proc, train as C
from or1test.check import check, finish
from or1test.files import fresh

OR1, FX, SCRATCH = sys.argv[1], sys.argv[2], fresh(sys.argv[3])
MPIEXEC = (sys.argv[4] if len(sys.argv) > 4 else "") or shutil.which("mpirun") or ""
SFT, ROWS = os.path.join(FX, "sft"), os.path.join(FX, "rows.jsonl")
HOSTS, SUBNET, TOL, HANG = ("h1", "h2"), "10.77.0", 1e-5, 300
PREFIX = f"or1t{os.getpid()}"


def skip(why):
    """Ends the test as skipped."""
    print(f"SKIP: {why}")
    sys.exit(77)


def ip(*args):
    """Runs ip(8); the completed process."""
    return subprocess.run(["ip", *args], capture_output=True, text=True)


def make_hosts():
    """The namespaces, the bridge and the links; skips when the first cannot be made."""
    if not MPIEXEC or not os.access(MPIEXEC, os.X_OK):
        skip("mpirun not found (install openmpi-bin, see scripts/debian-packages.txt)")
    if shutil.which("ip") is None or shutil.which("unshare") is None:
        skip("ip (iproute2) or unshare (util-linux) is missing")
    p = ip("netns", "add", f"{PREFIX}-sw")
    if p.returncode != 0:
        skip(f"cannot make a network namespace: {p.stderr.strip()}")
    steps = [("-n", f"{PREFIX}-sw", "link", "add", "br0", "type", "bridge"),
             ("-n", f"{PREFIX}-sw", "link", "set", "br0", "up")]
    for i, h in enumerate(HOSTS, 1):
        ns = f"{PREFIX}-{h}"
        steps += [("netns", "add", ns),
                  ("link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", f"p{i}", "netns", f"{PREFIX}-sw"),
                  ("-n", ns, "addr", "add", f"{SUBNET}.{i}/24", "dev", "eth0"),
                  ("-n", ns, "link", "set", "eth0", "up"), ("-n", ns, "link", "set", "lo", "up"),
                  ("-n", f"{PREFIX}-sw", "link", "set", f"p{i}", "master", "br0"),
                  ("-n", f"{PREFIX}-sw", "link", "set", f"p{i}", "up")]
    for s in steps:
        p = ip(*s)
        if p.returncode != 0:
            sys.exit(f"ip {' '.join(s)}: {p.stderr.strip()}")


def remove_hosts():
    """Deletes the namespaces (their links go with them)."""
    for n in ("sw",) + HOSTS:
        ip("netns", "delete", f"{PREFIX}-{n}")


def agent():
    """The launch agent mpirun calls as `agent HOST COMMAND...` in place of ssh."""
    path = os.path.join(SCRATCH, "agent.sh")
    with open(path, "w") as f:
        f.write("#!/bin/sh\n# runs a command in HOST's network and UTS namespaces, as ssh would on HOST\n"
                f'host=$1; shift\nexec ip netns exec {PREFIX}-"$host" unshare --uts sh -c "hostname $host; $*"\n')
    os.chmod(path, 0o755)
    return path


def mpirun(per_host, *cmd):
    """mpirun from h1 with per_host ranks on each host, TCP over the veth subnet only."""
    hosts = ",".join(f"{h}:{per_host}" for h in HOSTS)
    full = ["ip", "netns", "exec", f"{PREFIX}-h1", "unshare", "--uts", "sh", "-c", 'hostname h1 && exec "$@"', "sh",
            MPIEXEC, "--allow-run-as-root", "--host", hosts, "-np", str(per_host * len(HOSTS)),
            "--mca", "plm_rsh_agent", agent(), "--mca", "btl", "tcp,self",
            "--mca", "btl_tcp_if_include", f"{SUBNET}.0/24", "--mca", "oob_tcp_if_include", f"{SUBNET}.0/24",
            "sh", "-c", 'echo "rank $OMPI_COMM_WORLD_RANK on $(hostname)" >&2; exec "$@"', "sh", *cmd]
    try:
        return subprocess.run(full, capture_output=True, text=True, timeout=HANG, env=proc.mpi_env())
    except subprocess.TimeoutExpired:
        check(False, f"HANG: no exit within {HANG} s: {' '.join(full)}")
        finish("train_hosts")


def across_hosts(one):
    """2 and 4 ranks over the two hosts, plain and ZeRO-1, against 1 process."""
    for per_host in (1, 2):
        for name, over in (("plain", {}), ("zero", {"train": {"zero": 1}})):
            k = per_host * len(HOSTS)
            cfg, out = C.two_stage_config(SCRATCH, SFT, ROWS, f"{name}{k}", **over)
            p = mpirun(per_host, OR1, "train", "--config", cfg)
            where = sorted(line for line in p.stderr.splitlines() if line.startswith("rank "))
            want = sorted(f"rank {r} on {HOSTS[r // per_host]}" for r in range(k))
            if not check(p.returncode == 0 and where == want and f"{k} rank(s)" in p.stderr,
                         f"{name} over {k} ranks: rc {p.returncode}, placed {where}, stderr {p.stderr[-600:]!r}"):
                continue
            C.close_at_step(out, one, 4, TOL, f"{name} over {k} ranks on 2 hosts")


def main():
    make_hosts()
    try:
        cfg, one = C.two_stage_config(SCRATCH, SFT, ROWS, "np1")
        C.train(OR1, cfg)
        across_hosts(one)
    finally:
        remove_hosts()
    finish("train_hosts")


main()
