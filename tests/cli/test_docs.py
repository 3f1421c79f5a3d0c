"""docs/testing.md names every test CTest registers in this build folder (the table "Every
test"; some register only in one pass or with a GPU, so the table may name more).

usage: test_docs.py BUILD_DIR ROOT
"""
import os
import re
import subprocess
import sys

from or1test.check import check, finish


def registered(build):
    """The names `ctest -N` lists in the build folder."""
    out = subprocess.run(["ctest", "-N"], cwd=build, capture_output=True, text=True).stdout
    return set(re.findall(r"^\s*Test +#\d+: (\S+)$", out, re.M))


def documented(root):
    """The backticked names in the first column of docs/testing.md's "Every test" table."""
    doc = open(os.path.join(root, "docs", "testing.md")).read()
    section = doc.split("## Every test", 1)[1].split("\n## ", 1)[0]
    names = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            names.update(re.findall(r"`([a-z0-9_]+)`", line.split(" | ")[0]))
    return names


def main():
    build, root = sys.argv[1], sys.argv[2]
    tests, docs = registered(build), documented(root)
    check(len(tests) > 100, f"ctest -N listed {len(tests)} tests")
    for name in sorted(tests - docs):
        check(False, f"docs/testing.md does not name the test {name}")
    finish("cli_docs")


if __name__ == "__main__":
    main()
