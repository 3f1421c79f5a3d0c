"""What a sandboxed run may leave on the host, for the code tests: the harness's processes (by
uid as root), other or1 verify-code runs, and the canaries an escape would write."""
import os
import time

from or1test.check import check

HARNESS_MARK = b"or1 code harness"
CANARIES = ["/tmp/or1-escape-canary", "/usr/or1-escape-canary"]


def run_uids(or1_pid):
    """The uids or1 gives its runs as root (see or1_sandbox_uid_acquire)."""
    base = 0x40000000 + (or1_pid & 0xFFFF) * 1024
    return range(base, base + 1024)


def others_running(own_pid):
    """True if another `or1 verify-code` runs on this host (its sandboxes look like ours)."""
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != own_pid:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if b"\0verify-code\0" in f.read():
                        return True
            except OSError:
                pass
    return False


def leftover_processes(uids):
    """Processes still running the harness (they would have escaped the sandbox's cleanup);
    only those with one of `uids` when given (other test runs may be sandboxing meanwhile)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if HARNESS_MARK not in f.read():
                    continue
            with open(f"/proc/{pid}/status") as f:
                uid = int(next(line for line in f if line.startswith("Uid:")).split()[1])
            if uids is None or uid in uids:
                found.append(int(pid))
        except (OSError, StopIteration):
            pass
    return found


def expected(row, mode):
    """The verdicts a labelled row accepts under an isolation mode (its expect_<mode> if any)."""
    want = row.get("expect_" + mode, row["expect"]) if mode else row["expect"]
    return want if isinstance(want, list) else [want]


def check_host_clean(or1_pid, mode, tmp):
    """After an or1 verify-code run (pid or1_pid, isolation mode, TMPDIR tmp): no sandboxed
    process left (by uid as root; otherwise only where no other sandboxing runs), no canary
    written, no private directory left; removes tmp when empty."""
    uids = run_uids(or1_pid) if os.geteuid() == 0 and mode != "userns" else None
    left = leftover_processes(uids) if uids is not None or not others_running(or1_pid) else []
    for _ in range(30):  # killed process trees take a moment to disappear
        if not left:
            break
        time.sleep(0.1)
        left = leftover_processes(uids)
    check(not left, f"sandboxed processes left running: {left}")
    for c in CANARIES:
        check(not os.path.exists(c), f"a program wrote {c}")
    check(not os.listdir(tmp), f"private directories left behind: {os.listdir(tmp)}")
    if not os.listdir(tmp):
        os.rmdir(tmp)
