"""Every shared struct is built by name: no initializer of a struct typedef'd in a header
(include/or1/*.h, src/**/*.h, src/**/*.cuh) fills its fields by position.

One swapped argument of a positional initializer compiles and computes with the wrong numbers
(or1_sample holds three float pointers side by side: old_logp, ref_logp, rollout_logp), so every
element of such an initializer must name its field (`.old_logp = ...`). Checked in every .c, .cu
and .cuh file under the folders given:

- compound literals `(T){...}` (also `(const T){...}`, `(struct tag){...}`) and declarations
  `T x = {...}` (also `static const T x = {...}`): each top-level element must be designated;
- the same inside them: an element `.f = {...}` where field f of T is itself a struct must be
  designated too (recursively);
- `{0}` and `{}` (all zero) are left alone, and so are arrays of structs (`T rows[] = {...}`):
  tables of rows, positional by design, each with its row format documented beside it.

Not caught: initializers of structs defined only in a .c file (not shared), arrays and their
rows, a struct field initialised by a bare `{...}` without a designator (the outer initializer is
flagged anyway), members of anonymous nested structs or unions, a struct passed through a macro
that builds the braces itself, and positional assignments field by field (`s.a = x;` is fine).

Also checks itself on a small snippet: positional, partly positional and nested positional
initializers must be refused, designated ones, `{0}` and arrays accepted.
Usage: check_named_init.py REPO_ROOT FOLDER...
"""
import glob
import os
import re
import sys

from or1test.check import Checker

HEADERS = ("include/or1/*.h", "src/**/*.h", "src/**/*.cuh")
SOURCES = ("*.c", "*.cu", "*.cuh")
IDENT = re.compile(r"[A-Za-z_]\w*")
CONDITIONAL = re.compile(r"^[ \t]*#[ \t]*(?:if|ifdef|ifndef|elif|else|endif)\b.*$", re.M)
DESIGNATOR = re.compile(r"\s*\.\s*([A-Za-z_]\w*)")


def strip(s):
    """s with comments and string/char literal contents blanked (newlines kept, same offsets)."""
    out, i, n = list(s), 0, len(s)
    while i < n:
        c = s[i]
        if s.startswith("//", i):
            j = s.find("\n", i)
            j = n if j < 0 else j
        elif s.startswith("/*", i):
            j = s.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif c in "\"'":
            j = i + 1
            while j < n and s[j] != c and s[j] != "\n":
                j += 2 if s[j] == "\\" else 1
            i += 1  # keep the quotes themselves
            j = min(j, n)
        else:
            i += 1
            continue
        for k in range(i, j):
            if out[k] != "\n":
                out[k] = " "
        i = j + 1 if c in "\"'" else j
    return "".join(out)


def match_close(s, i):
    """Index of the bracket closing the one at s[i] (s stripped), or len(s)."""
    pairs = {"{": "}", "(": ")", "[": "]"}
    stack = [pairs[s[i]]]
    for j in range(i + 1, len(s)):
        if s[j] in pairs:
            stack.append(pairs[s[j]])
        elif s[j] in ")]}":
            if s[j] != stack[-1]:
                return len(s)
            stack.pop()
            if not stack:
                return j
    return len(s)


def split_top(s, lo, hi):
    """[(start, end)] of the comma-separated elements of s[lo:hi] at bracket depth 0 (blank ones dropped)."""
    parts, start, depth = [], lo, 0
    for j in range(lo, hi):
        if s[j] in "([{":
            depth += 1
        elif s[j] in ")]}":
            depth -= 1
        elif s[j] == "," and depth == 0:
            parts.append((start, j))
            start = j + 1
    parts.append((start, hi))
    return [(a, b) for a, b in parts if s[a:b].strip()]


def fields_of(body):
    """[(field, type name or None)] of a struct body, in order: the type is given only for a
    plain member (no pointer, no array) so that nested initializers can be followed."""
    body = re.sub(r"^[ \t]*#.*$", "", body, flags=re.M)  # preprocessor lines (blanked, same offsets)
    out, depth, start = [], 0, 0
    for j, c in enumerate(body):
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == ";" and depth == 0:
            decl = body[start:j].strip()
            start = j + 1
            if "{" in decl:  # a nested struct/union member: its name follows the closing brace
                names = IDENT.findall(decl[decl.rfind("}") + 1:])
                out += [(n, None) for n in names]
                continue
            fp = re.search(r"\(\s*\*\s*([A-Za-z_]\w*)\s*\)", decl)
            if fp:
                out.append((fp.group(1), None))
                continue
            decl = re.sub(r"\[[^\]]*\]", "[]", re.sub(r":\s*\d+", "", decl))
            words = decl.split(",")
            base = IDENT.findall(words[0])
            tname = base[-2] if len(base) >= 2 else None
            for k, d in enumerate(words):
                ids = IDENT.findall(d)
                if ids:
                    plain = "*" not in d and "[" not in d and k == 0
                    out.append((ids[-1], tname if plain else None))
    return out


def struct_types(root):
    """{type name: [(field, type)]} of every struct typedef'd or tagged in the shared headers."""
    types, tags, alias = {}, {}, {}
    for pat in HEADERS:
        for path in glob.glob(os.path.join(root, pat), recursive=True):
            with open(path, errors="replace") as f:
                s = strip(f.read())
            for m in re.finditer(r"\b(typedef\s+)?struct\s+(\w*)\s*\{", s):
                close = match_close(s, m.end() - 1)
                fields = fields_of(s[m.end():close])
                name = re.match(r"\s*(\w+)\s*;", s[close + 1:])
                if m.group(1) and name:
                    types[name.group(1)] = fields
                if m.group(2):
                    tags[m.group(2)] = fields
            for m in re.finditer(r"typedef\s+struct\s+(\w+)\s+(\w+)\s*;", s):
                alias[m.group(2)] = m.group(1)
    for name, tag in alias.items():
        if tag in tags:
            types.setdefault(name, tags[tag])
    types.update({"struct " + t: f for t, f in tags.items()})
    return types


def initializers(s, types):
    """[(offset of '{', type name)] of every struct compound literal and scalar declaration."""
    names = "|".join(re.escape(t).replace(r"\ ", r"\s+") for t in sorted(types, key=len, reverse=True))
    lit = re.compile(r"\(\s*(?:const\s+)?(" + names + r")\s*\)\s*\{")
    decl = re.compile(r"(?<![\w.>])(" + names + r")\s+[A-Za-z_]\w*\s*=\s*\{")
    found = [(m.end() - 1, m.group(1)) for m in lit.finditer(s)]
    found += [(m.end() - 1, m.group(1)) for m in decl.finditer(s)]
    return [(i, re.sub(r"\s+", " ", t)) for i, t in sorted(found)]


# An element that is one call of an upper-case macro alone: an X-macro table expanded into named
# fields (OR1_ENGINE_OPTIONS(ENGINE_DEFAULT)).
X_MACRO = re.compile(r"\s*[A-Z][A-Z0-9_]*\s*\([^()]*\)\s*$")


def positional(s, i, tname, types):
    """[(offset, type, field)] of each initializer in s[i] = '{' (and nested struct fields) that
    fills a field of tname by position; field is the one the element lands on (or '?')."""
    close = match_close(s, i)
    elems = split_top(s, i + 1, close)
    if len(elems) <= 1 and s[i + 1:close].strip() in ("", "0"):
        return []
    fields = types.get(tname, [])
    index = {f: k for k, (f, _) in enumerate(fields)}
    bad, k = [], 0
    for a, b in elems:
        d = DESIGNATOR.match(s, a)
        if not d and X_MACRO.match(s[a:b]):  # a table's X-macro, expanding to `.field = value,` rows
            continue
        if not d:
            name = fields[k][0] if k < len(fields) else "?"
            if not bad or bad[0][0] != i:
                bad.append((i, tname, name))
            k += 1
            continue
        k = index.get(d.group(1), len(fields)) + 1
        ftype = fields[k - 1][1] if k - 1 < len(fields) else None
        val = re.match(r"\s*\.\s*\w+\s*=\s*\{", s[a:b])
        if val and ftype in types:
            bad += positional(s, a + val.end() - 1, ftype, types)
    return bad


def violations(text, types, where):
    """'where:line: type ...' for every positional struct initializer in a file's text."""
    s = CONDITIONAL.sub(lambda m: " " * len(m.group(0)), strip(text))  # both branches read
    out = []
    for i, tname in initializers(s, types):
        for off, t, field in positional(s, i, tname, types):
            line = s.count("\n", 0, off) + 1
            out.append(f"{where}:{line}: {t} built by position (an element lands on .{field} unnamed); "
                       f"write .{field} = ...")
    return out


SELF_TEST = """
typedef struct { float *old_logp, *ref_logp; int n; } smp;
typedef struct { smp s; int k; } outer;
void f(float *a, float *b) {
  smp bad1 = {a, b, 3};
  smp bad2 = (smp){.old_logp = a, b};
  outer bad3 = {.s = {a, b, 1}, .k = 2};
  smp ok1 = {0}, ok2[] = {{a, b, 1}};
  outer ok3 = {.s = {.old_logp = a}, .k = (int)sizeof(smp){0}};
  smp ok4 = {.ref_logp = b, .old_logp = a};
}
"""


def self_test(chk):
    """The detector refuses the three positional forms of SELF_TEST and accepts the rest."""
    s = strip(SELF_TEST)
    types = {}
    for m in re.finditer(r"typedef\s+struct\s*\{", s):
        close = match_close(s, m.end() - 1)
        types[re.match(r"\s*(\w+)", s[close + 1:]).group(1)] = fields_of(s[m.end():close])
    bad = violations(SELF_TEST, types, "self")
    lines = sorted(int(v.split(":")[1]) for v in bad)
    chk.ok(lines == [5, 6, 7], "self-test: positional initializers found on lines %s, want [5, 6, 7]:\n  %s"
           % (lines, "\n  ".join(bad)))
    chk.ok(any(".ref_logp" in v for v in bad), "self-test: the messages name the field landed on")


def main():
    root, folders = sys.argv[1], sys.argv[2:]
    chk = Checker("layering_named_init")
    self_test(chk)
    types = struct_types(root)
    chk.ok(len(types) >= 50 and "or1_sample" in types, f"struct types found in the headers: {len(types)}")
    chk.ok([f for f, _ in types.get("or1_sample", [])][:1] != [],
           "or1_sample's fields were not read from its header")
    bad, nfiles = [], 0
    for folder in folders:
        for pat in SOURCES:
            for path in sorted(glob.glob(os.path.join(root, folder, "**", pat), recursive=True)):
                nfiles += 1
                with open(path, errors="replace") as f:
                    bad += violations(f.read(), types, os.path.relpath(path, root))
    chk.ok(nfiles > 0, f"no source files under {folders}")
    chk.ok(not bad, "struct initializers by position (name every field; arrays of rows are exempt):\n  "
           + "\n  ".join(bad))
    chk.finish()


if __name__ == "__main__":
    main()
