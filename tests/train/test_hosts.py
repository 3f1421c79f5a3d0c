#!/usr/bin/env python3
"""Ranks on several hosts, made on this machine: two network namespaces (the hosts h1 and h2,
each with its own hostname in a UTS namespace) joined by a bridge in a third, over veth pairs
with addresses in 10.77.0.0/24 that exist only inside the namespaces. mpirun runs in h1 and
starts h2's daemon through a launch agent that enters h2's namespaces instead of ssh; MPI's
TCP transport carries the ranks' traffic (shared memory off, TCP only over the veth subnet).
2 ranks (one a host) and 4 (two a host), plain and with ZeRO-1, give the 1-process weights,
AdamW moments and metrics, as on one host.

Then two faults in the middle of a run, each ending the whole job within dist.timeout_s (10 s)
and a margin, non-zero, with no rank left running, the last checkpoint whole and one process
resuming from it: rank 1 frozen (SIGSTOP), which rank 0's watchdog reports naming itself, the
step, the phase and the collective; and the link between the hosts cut (`ip link set eth0 down`
in h2), which mpirun notices by TCP keepalive while rank 1, cut off, ends by its watchdog.

Skipped (exit 77) without mpirun, without an MPI build of or1, or where namespaces cannot be
made (not root, or no `ip`).

Usage: test_hosts.py OR1 FIXTURE_DIR SCRATCH_DIR [MPIEXEC]
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

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
    """Ends what still runs in the namespaces (after a cut link, OpenMPI's daemon on h2, which
    can no longer reach mpirun) and deletes them (their links go with them)."""
    for n in ("sw",) + HOSTS:
        for pid in ip("netns", "pids", f"{PREFIX}-{n}").stdout.split():
            try:
                os.kill(int(pid), 9)
            except OSError:
                pass
        ip("netns", "delete", f"{PREFIX}-{n}")


def agent():
    """The launch agent mpirun calls as `agent HOST COMMAND...` in place of ssh."""
    path = os.path.join(SCRATCH, "agent.sh")
    with open(path, "w") as f:
        f.write("#!/bin/sh\n# runs a command in HOST's network and UTS namespaces, as ssh would on HOST\n"
                f'host=$1; shift\nexec ip netns exec {PREFIX}-"$host" unshare --uts sh -c "hostname $host; $*"\n')
    os.chmod(path, 0o755)
    return path


def mpirun_cmd(per_host, *cmd):
    """The mpirun command line from h1 with per_host ranks on each host, TCP over the veth subnet
    only; each rank first says which host it is on."""
    hosts = ",".join(f"{h}:{per_host}" for h in HOSTS)
    full = ["ip", "netns", "exec", f"{PREFIX}-h1", "unshare", "--uts", "sh", "-c", 'hostname h1 && exec "$@"', "sh",
            MPIEXEC, "--allow-run-as-root", "--host", hosts, "-np", str(per_host * len(HOSTS)),
            "--mca", "plm_rsh_agent", agent(), "--mca", "btl", "tcp,self",
            "--mca", "btl_tcp_if_include", f"{SUBNET}.0/24", "--mca", "oob_tcp_if_include", f"{SUBNET}.0/24",
            # mpirun learns of a daemon cut off from it by TCP keepalive: after 2 s idle, 3 probes 1 s
            # apart, before the ranks' watchdog (dist.timeout_s) acts; the default waits 8 minutes
            "--mca", "oob_tcp_keepalive_time", "2", "--mca", "oob_tcp_keepalive_intvl", "1",
            "--mca", "oob_tcp_keepalive_probes", "3",
            "sh", "-c", 'echo "rank $OMPI_COMM_WORLD_RANK on $(hostname)" >&2; exec "$@"', "sh", *cmd]
    return full


def mpirun(per_host, *cmd):
    """Runs mpirun_cmd; a run past HANG fails the test."""
    full = mpirun_cmd(per_host, *cmd)
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


def ranks_of(config):
    """Pids of or1 processes still running with this config."""
    found = []
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and config.encode() in open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0"):
                found.append(pid)
        except OSError:
            pass
    return found


def rank_pid(config, rank):
    """The pid of the or1 rank running config with this MPI rank (None if there is none)."""
    for pid in ranks_of(config):
        try:
            if f"OMPI_COMM_WORLD_RANK={rank}".encode() in open(f"/proc/{pid}/environ", "rb").read().split(b"\0"):
                return int(pid)
        except OSError:
            pass
    return None


def fault(name, act, limit=10, margin=30):
    """Runs 2 ranks (one a host) for ever, applies act(config) after the second step, and checks
    that the job ends within limit + margin, non-zero, that no rank is left after that, and that
    one process resumes from the last checkpoint; returns (seconds to the end, the job's log)."""
    out = os.path.join(SCRATCH, name)
    cfg = C.write_config(os.path.join(SCRATCH, name + ".yaml"), C.base_config(
        SFT, ROWS, out, train={"steps": 100000}, checkpoint={"every": 1, "keep_last": 2}, dist={"timeout_s": limit}))
    log = open(os.path.join(SCRATCH, name + ".log"), "w+")  # a file: a cut-off daemon keeps its pipes open
    job = subprocess.Popen(mpirun_cmd(1, OR1, "train", "--config", cfg), stdout=log, stderr=log, text=True,
                           env=proc.mpi_env())
    metrics = os.path.join(out, "metrics.jsonl")
    for _ in range(1200):
        if os.path.isfile(metrics) and len(open(metrics).read().splitlines()) >= 2 or job.poll() is not None:
            break
        time.sleep(0.1)
    act(cfg)
    start = time.monotonic()
    try:
        job.wait(timeout=limit + margin)
    except subprocess.TimeoutExpired:
        job.kill()
        job.wait()
        check(False, f"{name}: the job still ran {limit + margin} s after the fault")
    took = time.monotonic() - start
    log.seek(0)
    err = log.read()
    check(job.returncode != 0, f"{name}: exit status {job.returncode}")
    left = ranks_of(cfg)
    while left and time.monotonic() - start < limit + margin:
        time.sleep(0.2)
        left = ranks_of(cfg)
    check(not left, f"{name}: or1 ranks still running {limit + margin} s after the fault: {left}")
    step = int(os.readlink(os.path.join(out, "checkpoints", "latest")).split("-")[1])
    p = C.train(OR1, cfg, "--resume", "auto", "--set", f"train.steps={step + 1}")
    check(f"resuming from {C.ckpt(out, step)}" in p.stderr and json.loads(open(metrics).read().splitlines()[-1])["step"] == step + 1,
          f"{name}: 1 process resuming from step {step}: {p.stderr[-400:]!r}")
    print(f"{name}: the job ended {took:.1f} s after the fault (dist.timeout_s {limit}); resumed from step {step}")
    return took, err


def frozen_rank():
    """Rank 1 stops (SIGSTOP: a hung process or device) mid-run: rank 0's watchdog ends the job,
    naming itself, the step, the phase and the collective."""
    took, err = fault("frozen", lambda cfg: os.kill(rank_pid(cfg, 1), signal.SIGSTOP))
    check(re.search(r"rank 0 of 2: step \d+, [a-z ]+: [a-z-]+ has waited \d+ s for the other ranks \(dist.timeout_s 10\)", err),
          f"frozen rank: no watchdog message in {err[-800:]!r}")
    check(took >= 10, f"frozen rank: the job ended {took:.1f} s after the fault, before dist.timeout_s")


def link_cut():
    """The link to h2 goes down mid-run: mpirun loses h2's daemon (TCP keepalive, 2 s + 3 x 1 s)
    and ends the job; rank 1, cut off on h2, ends by its own watchdog."""
    _, err = fault("cut", lambda cfg: ip("-n", f"{PREFIX}-h2", "link", "set", "eth0", "down"))
    check("lost communication with a remote daemon" in err and "h2" in err, f"link cut: {err[-800:]!r}")


def main():
    make_hosts()
    try:
        cfg, one = C.two_stage_config(SCRATCH, SFT, ROWS, "np1")
        C.train(OR1, cfg)
        across_hosts(one)
        frozen_rank()
        link_cut()
    finally:
        remove_hosts()
    finish("train_hosts")


main()
