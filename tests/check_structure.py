#!/usr/bin/env python3
"""check_structure — the tree's structure rules, read from the code as text (python3 stdlib only).

1. Include directions between folders. The rules are docs/architecture.md's table under
   "## Include rules" (the source of truth; this script keeps no copy of them): one row per
   folder, `| \`folder/\` | \`other/\`, \`other/\` ... |`, "—" for none. A file belongs to the
   longest folder of the table that holds it (nn/cpu/x.c is nn/cpu, not nn); a folder may
   always include itself; files outside every folder of the table (tests/, bench/) are not
   checked. The table itself must not allow a circle between folders.
2. No include circle between files: a module is a .c/.cc/.cu file with its header (dataset.c
   and dataset.h are common/dataset); module A depends on module B when a file of A includes
   B's header. Every circle of modules is reported (each strongly connected component), but
   those of KNOWN_CIRCLES, which were there before this check and are being taken apart.
3. Function length (FNLEN_PATHS, at most FNLEN_MAX lines between a function's braces), by a
   crude scanner of C: comments and strings blanked, a top-level `{` after `name(...)` opens a
   function. Add a folder or pattern to FNLEN_PATHS to extend it.
4. Op dispatch: each op of the description (`case PF_G_...:`) in at most OP_SWITCH_MAX (2)
   case labels over the CPU executor (OP_SWITCH_PATHS): its forward and backward dispatch;
   everything else an op needs lives in its function pair (nn/cpu/ops.h) or a table.

usage: check_structure.py [ROOT] (default: the tree this file is in). Prints each violation
and exits 1 on any, else prints what it checked and exits 0.
"""
import glob
import os
import re
import sys

DOC = "docs/architecture.md"
SECTION = "## Include rules"
SOURCE_EXT = (".c", ".h", ".cc", ".cu", ".cpp")
# Function length: patterns relative to the root (issue 38: nn/, common/config*.c, the roles,
# the wire code and the front end).
FNLEN_PATHS = ["nn/*.c", "nn/cpu/*.c", "nn/cpu/*.cc", "nn/cuda/*.c", "nn/cuda/*.cu",
               "common/config*.c", "coordinator/*.c", "worker/*.c", "loader/*.c", "hooks/*.c",
               "runtime/*.c", "proto/*.c", "cli/*.c"]
FNLEN_MAX = 120
# Op dispatch: each op of the description (`PF_G_*`, nn/net.h) named in at most OP_SWITCH_MAX
# `case` labels over the CPU executor's files (its forward and its backward switch, issue 38).
OP_SWITCH_PATHS = ["nn/cpu/*.c"]
OP_SWITCH_MAX = 2
# Include circles between modules that were there when this check came (issue 38) and that the
# parts of that issue which own the files remove: listed, they are reported as known, not as
# failures; one that is gone is reported so that its entry goes too. Empty this, do not add to it.
KNOWN_CIRCLES = {
}
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def read_rules(root):
    """{folder: set of folders it may include from} from the docs table; exits 2 if absent."""
    path = os.path.join(root, DOC)
    text = open(path, encoding="utf-8").read()
    start = text.find("\n" + SECTION + "\n")
    if start < 0:
        sys.exit(f"check_structure: {DOC}: no section '{SECTION}'")
    body = text[start + len(SECTION) + 2:]
    end = body.find("\n## ")
    body = body if end < 0 else body[:end]
    rules = {}
    for line in body.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not line.lstrip().startswith("|"):
            continue
        m = re.fullmatch(r"`([\w/]+?)/?`", cells[0])
        if not m:
            continue   # the header and the --- row
        rules[m.group(1)] = set(re.findall(r"`([\w/]+?)/?`", cells[1]))
    if not rules:
        sys.exit(f"check_structure: {DOC}: '{SECTION}' has no table rows")
    for folder, allowed in rules.items():
        for a in allowed - set(rules):
            sys.exit(f"check_structure: {DOC}: `{folder}/` may include `{a}/`, which has no row")
    return rules


def folder_of(rel, folders):
    """The longest folder of the rules that holds rel, or None."""
    best = None
    for f in folders:
        if rel.startswith(f + "/") and (best is None or len(f) > len(best)):
            best = f
    return best


def source_files(root):
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        # build trees, data and VCS metadata are not source
        dirnames[:] = [d for d in dirnames
                       if not (d.startswith(".") or d.startswith("build") or
                               (rel_dir == "." and d in ("data", "work_dirs")))]
        for name in filenames:
            if name.endswith(SOURCE_EXT):
                out.append(os.path.normpath(os.path.join(rel_dir, name)))
    return sorted(out)


def includes(root, rel, present):
    """[(line number, included path relative to root)] of the quoted includes of rel that name
    a file of the tree (or, for a name relative to root that is not there, a generated one)."""
    text = open(os.path.join(root, rel), encoding="utf-8", errors="replace").read()
    out = []
    for m in INCLUDE_RE.finditer(text):
        name = m.group(1)
        line = text.count("\n", 0, m.start()) + 1
        beside = os.path.normpath(os.path.join(os.path.dirname(rel), name))
        if beside in present:
            out.append((line, beside))
        else:
            out.append((line, os.path.normpath(name)))   # from the root (also build/gen/...)
    return out


def module_of(rel):
    return os.path.splitext(rel)[0]


def rule_circles(rules):
    """Circles the rules themselves allow between different folders; a folder and its own
    subfolder (nn/ and nn/cpu/: one library) may include each other."""
    def related(a, b):
        return a.startswith(b + "/") or b.startswith(a + "/")
    graph = {f: {a for a in allowed if a != f and not related(a, f)}
             for f, allowed in rules.items()}
    return [c for c in sccs(graph) if len(c) > 1]


def sccs(graph):
    """Tarjan's strongly connected components of {node: set of nodes}, iteratively."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    n = stack.pop()
                    on.discard(n)
                    comp.append(n)
                    if n == node:
                        break
                out.append(sorted(comp))
    return out


def strip_c(s):
    """C text with comments, strings and character literals blanked (newlines kept)."""
    s = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), s, flags=re.S)
    s = re.sub(r"//[^\n]*", "", s)
    s = re.sub(r'"(\\.|[^"\\\n])*"', '""', s)
    s = re.sub(r"'(\\.|[^'\\\n])*'", "''", s)
    return s


def long_functions(path, limit):
    """[(first line, name, lines)] of the functions of a C file longer than limit lines."""
    s = strip_c(open(path, encoding="utf-8", errors="replace").read())
    depth, line, head, start, out = 0, 1, "", None, []
    for ch in s:
        if ch == "\n":
            line += 1
        if depth == 0:
            if ch == "{":
                h = head.strip()
                if ("(" in h and not re.search(r"=\s*$", h) and
                        not h.startswith(("struct", "enum", "typedef", "union")) and
                        "#" not in h.split("\n")[-1]):
                    names = re.findall(r"(\w+)\s*\(", h)
                    start = (line, names[0] if names else "?")
                else:
                    start = None
                depth, head = 1, ""
            elif ch in ";}":
                head = ""
            else:
                head += ch
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                if start and line - start[0] - 1 > limit:
                    out.append((start[0], start[1], line - start[0] - 1))
                start, head = None, ""
    return out


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), ".."))
    rules = read_rules(root)
    files = source_files(root)
    present = set(files)
    bad = []

    for c in rule_circles(rules):
        bad.append(f"{DOC}: the include rules allow a circle between folders: {', '.join(c)}")

    modules = {}   # module -> set of modules it includes
    n_includes = 0
    for rel in files:
        src = folder_of(rel, rules)
        mod = module_of(rel)
        modules.setdefault(mod, set())
        for line, inc in includes(root, rel, present):
            n_includes += 1
            dst = folder_of(inc, rules)
            if src and dst and dst != src and dst not in rules[src]:
                bad.append(f"{rel}:{line}: includes \"{inc}\": {src}/ may not include from "
                           f"{dst}/ ({DOC}, '{SECTION}')")
            if inc in present and module_of(inc) != mod:
                modules[mod].add(module_of(inc))
    circles = [tuple(c) for c in sccs(modules) if len(c) > 1]
    for c in circles:
        if c in KNOWN_CIRCLES:
            print(f"check_structure: known include circle (KNOWN_CIRCLES): {' <-> '.join(c)}: "
                  f"{KNOWN_CIRCLES[c]}")
        else:
            bad.append("include circle between files: " + " <-> ".join(c) +
                       " (each includes the other's header, directly or through others)")
    for c in KNOWN_CIRCLES:
        if c not in circles:
            bad.append(f"KNOWN_CIRCLES: {' <-> '.join(c)} is no longer a circle (or not this "
                       "one): take its entry out of " + os.path.relpath(__file__, root))

    n_fn = 0
    for pattern in FNLEN_PATHS:
        for path in sorted(glob.glob(os.path.join(root, pattern))):
            n_fn += 1
            for first, name, n in long_functions(path, FNLEN_MAX):
                bad.append(f"{os.path.relpath(path, root)}:{first}: {name} is {n} lines "
                           f"(at most {FNLEN_MAX})")

    op_cases = {}
    for pattern in OP_SWITCH_PATHS:
        for path in sorted(glob.glob(os.path.join(root, pattern))):
            with open(path, encoding="utf-8", errors="replace") as f:
                text = strip_c(f.read())
            for op in re.findall(r"\bcase\s+(PF_G_[A-Z0-9_]+)\s*:", text):
                op_cases.setdefault(op, []).append(os.path.relpath(path, root))
    for op, where in sorted(op_cases.items()):
        if len(where) > OP_SWITCH_MAX:
            bad.append(f"{op} is named in {len(where)} case labels of the CPU executor "
                       f"({', '.join(sorted(set(where)))}; at most {OP_SWITCH_MAX}: forward and "
                       "backward dispatch)")

    for b in bad:
        print("check_structure: " + b, file=sys.stderr)
    if bad:
        print(f"check_structure: {len(bad)} violation(s)", file=sys.stderr)
        return 1
    print(f"check_structure: {len(files)} files, {n_includes} quoted includes, {len(rules)} "
          f"folders' rules from {DOC}, {len(modules)} modules with no include circle but "
          f"{len(circles)} known; {n_fn} files of {', '.join(FNLEN_PATHS)} with no function "
          f"over {FNLEN_MAX} lines; {len(op_cases)} ops in at most {OP_SWITCH_MAX} case labels "
          f"of {', '.join(OP_SWITCH_PATHS)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
