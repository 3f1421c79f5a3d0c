"""The module layering, checked on what the build produced (build/layers/modules.txt lists each
module, lowest first, with its source folder, its archive and the modules it builds on):

- every or1_ (and cu_) symbol a module's archive leaves undefined is defined by that module or
  by a module it builds on (a lower module calling a higher one fails here even if it declared
  the function itself instead of including the header);
- no source file of a module includes a file of another module by path ("../x/y.h", "x/y.h"):
  public headers are reached as "or1/<name>.h" through the module's layered include folder.

Also checks itself: a table in which model claims to build on nothing must be refused.
Usage: check_layers.py MODULES_TXT REPO_ROOT
"""
import os
import re
import subprocess
import sys

from or1test.check import Checker

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
OWN = re.compile(r"^(or1_|cu_)")


def read_table(path):
    """{name: (folder, archive, [modules below])} in the file's order."""
    table = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if parts:
                table[parts[0]] = (parts[1], parts[2], parts[3:])
    return table


def symbols(archive):
    """(defined, undefined) project symbols of a static archive, from nm."""
    out = subprocess.run(["nm", "-g", archive], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        f = line.split()
        if len(f) == 2 and f[0] == "U" and OWN.match(f[1]):
            undefined.add(f[1])
        elif len(f) == 3 and f[1] in "TDBRVW" and OWN.match(f[2]):
            defined.add(f[2])
    return defined, undefined


def symbol_violations(table):
    """'module uses sym of other' for every symbol taken from a module not below it."""
    syms = {name: symbols(arc) for name, (_, arc, _) in table.items()}
    owner = {s: name for name, (d, _) in syms.items() for s in d}
    bad = []
    for name, (_, undefined) in syms.items():
        allowed = {name, *table[name][2]}
        for s in sorted(undefined - syms[name][0]):
            if s in owner and owner[s] not in allowed:
                bad.append(f"{name} uses {s} of {owner[s]}")
    return bad


def include_violations(table, root):
    """'file includes path' for every include that reaches into another folder."""
    bad = []
    for _, (folder, _, _) in table.items():
        base = os.path.join(root, folder)
        for dirpath, _, files in os.walk(base):
            for fn in files:
                if not fn.endswith((".c", ".h", ".cu")):
                    continue
                path = os.path.join(dirpath, fn)
                with open(path, errors="replace") as f:
                    for inc in INCLUDE.findall(f.read()):
                        if "/" in inc and not inc.startswith("or1/"):
                            bad.append(f"{os.path.relpath(path, root)} includes \"{inc}\"")
    return bad


def main():
    table_path, root = sys.argv[1], sys.argv[2]
    chk = Checker("layering")
    table = read_table(table_path)
    chk.ok(len(table) >= 10 and "model" in table and "train" in table, f"module table {table_path}: {sorted(table)}")
    bad = symbol_violations(table)
    chk.ok(not bad, "modules calling modules above or beside them:\n  " + "\n  ".join(bad))
    bad = include_violations(table, root)
    chk.ok(not bad, "includes reaching into other modules:\n  " + "\n  ".join(bad))
    # the check can fail: model claiming no modules below it must be caught (it calls kernels)
    broken = dict(table)
    folder, arc, _ = broken["model"]
    broken["model"] = (folder, arc, [])
    chk.ok(any(v.startswith("model uses") for v in symbol_violations(broken)),
           "a model module that builds on nothing was not refused")
    chk.finish()


if __name__ == "__main__":
    main()
