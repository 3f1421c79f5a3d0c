"""What the demo tests share: their command line (OR1 REPO_ROOT SCRATCH) and running or1."""
import sys

from or1test import files, proc

OR1, ROOT, SCRATCH = sys.argv[1], sys.argv[2], sys.argv[3]


def run(*args, ok=True, stdin=None):
    """Runs or1 with args; returns the completed process (exits when a run meant to succeed fails)."""
    return proc.run([OR1, *args], ok=ok, stdin=stdin)


def or1(*args, stdin=None):
    """Runs an or1 command that must succeed; returns its stdout JSON lines."""
    return proc.json_lines(run(*args, stdin=stdin).stdout)


def fresh_scratch():
    """Empties the scratch folder."""
    files.fresh(SCRATCH)
