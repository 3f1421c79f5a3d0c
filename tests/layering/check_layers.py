"""The module layering, checked on what the build produced (build/layers/modules.txt lists each
module, lowest first, with its source folder, its archive and the modules it builds on):

- every or1_ (and cu_) symbol a module's archive leaves undefined is defined by that module or
  by a module it builds on (a lower module calling a higher one fails here even if it declared
  the function itself instead of including the header);
- no source file of a module includes a file of another module by path ("../x/y.h", "x/y.h"):
  public headers are reached as "or1/<name>.h" through the module's layered include folder;
- every external symbol a module's archive defines starts with or1_ (its public names) or with
  one of the module's internal prefixes in INTERNAL (names its files share with each other, never
  declared in a public header), in either case (tables are written MODEL_ARCHS); a module not in
  INTERNAL has none. So two modules cannot collide on a short name such as arch_find, and a
  reader of nm or of a backtrace knows each function's module. Names the compiler makes (an
  OpenMP critical section's ".gomp_critical_user_*") start with a dot and are not checked.

Also checks itself: a table in which model claims to build on nothing must be refused, and so
must model's archive when model is given no internal prefix.
Usage: check_layers.py MODULES_TXT REPO_ROOT
"""
import os
import re
import subprocess
import sys

from or1test.check import Checker

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
OWN = re.compile(r"^(or1_|cu_)")
# Each module's internal prefixes (docs/testing.md lists the same under layering_symbols).
INTERNAL = {
    "io": ("io_",),
    "algo": ("algo_",),
    "model": ("model_",),
    "tokenizer": ("tok_", "jx_", "jv_"),
    "reward": ("mv_",),
    "cuda": ("cu_",),
    "train": ("train_",),
    "demo": ("demo_",),
}


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


def defined_names(archive):
    """Every external symbol the archive defines (any kind: code, data, common), from nm."""
    out = subprocess.run(["nm", "-g", "--defined-only", archive], capture_output=True, text=True,
                         check=True).stdout
    return {f[2] for f in (line.split() for line in out.splitlines()) if len(f) == 3}


# Names the toolchain makes, not the code: local labels (".L...") and AddressSanitizer's ODR
# indicators ("__odr_asan.NAME", one per global of an instrumented build).
TOOLCHAIN = (".", "__odr_asan")


def prefix_violations(table, internal):
    """'module defines sym' for every external symbol outside or1_ and the module's prefixes
    (the toolchain's own names left out)."""
    bad = []
    for name, (_, arc, _) in table.items():
        allowed = ("or1_", *internal.get(name, ()))
        for s in sorted(defined_names(arc)):
            if not s.startswith(TOOLCHAIN) and not s.lower().startswith(allowed):
                bad.append(f"{name} defines {s}")
    return bad


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
    bad = prefix_violations(table, INTERNAL)
    chk.ok(not bad, "external symbols without or1_ or the module's internal prefix (INTERNAL):\n  " + "\n  ".join(bad))
    # the check can fail: model claiming no modules below it must be caught (it calls kernels)
    broken = dict(table)
    folder, arc, _ = broken["model"]
    broken["model"] = (folder, arc, [])
    chk.ok(any(v.startswith("model uses") for v in symbol_violations(broken)),
           "a model module that builds on nothing was not refused")
    # and model's internal names (model_arch_find, ...) must be refused without model's prefix
    chk.ok(any(v.startswith("model defines model_") for v in prefix_violations(table, {})),
           "model's internal names were not refused without its prefix")
    chk.finish()


if __name__ == "__main__":
    main()
