#!/usr/bin/env python3
"""Reads tests/mutation/mutants.txt and applies one mutant to a tree.  Used by run.sh.

  mutate.py list MUTANTS                 id<TAB>file<TAB>tests<TAB>what it breaks, one line each
  mutate.py check MUTANTS TREE [ID...]   every search text occurs exactly once in its file (exit 1 if not)
  mutate.py apply MUTANTS TREE ID        writes the mutant into TREE (the original kept as FILE.mutation-orig)
  mutate.py revert MUTANTS TREE ID       puts the original back
  mutate.py sync SRC TREE                copies the files named on stdin (NUL-separated) that differ

A mutant is matched on code text, not on line numbers, so it keeps its meaning while the code around
it moves; when the text changes so that it no longer occurs exactly once, `check` names the mutant
and says how often it was found, and run.sh stops: fix the mutant, never skip it.
"""
import os
import sys


def parse(path):
    mutants, cur, mode, lines = [], None, None, []
    with open(path) as f:
        text = f.read().split("\n")
    for n, line in enumerate(text, 1):
        if mode in ("search", "replace"):
            if line == "---" and mode == "search":
                cur["search"] = "\n".join(lines)
                mode, lines = "replace", []
                continue
            if line == ">>>" and mode == "replace":
                cur["replace"] = "\n".join(lines)
                mode, lines = None, []
                continue
            lines.append(line)
            continue
        if line.startswith("=== "):
            cur = {"id": line[4:].strip(), "line": n, "tests": [], "file": None, "breaks": ""}
            mutants.append(cur)
        elif line.startswith("#") or not line.strip():
            continue
        elif cur is None:
            sys.exit("%s:%d: text before the first '=== ID' line" % (path, n))
        elif line.startswith("file: "):
            cur["file"] = line[6:].strip()
        elif line.startswith("tests: "):
            cur["tests"] = line[7:].split()
        elif line.startswith("breaks: "):
            cur["breaks"] = line[8:].strip()
        elif line.startswith("  ") and cur["breaks"]:
            cur["breaks"] += " " + line.strip()
        elif line == "<<<":
            mode, lines = "search", []
        else:
            sys.exit("%s:%d: unexpected line: %s" % (path, n, line))
    if mode is not None:
        sys.exit("%s: unterminated search/replace block in mutant %s" % (path, cur["id"]))
    seen = set()
    for m in mutants:
        for k in ("file", "search", "replace"):
            if not m.get(k) and m.get(k) != "":
                sys.exit("%s:%d: mutant %s has no %s" % (path, m["line"], m["id"], k))
        if not m["tests"] or not m["breaks"]:
            sys.exit("%s:%d: mutant %s needs 'tests:' and 'breaks:'" % (path, m["line"], m["id"]))
        if m["search"] == m["replace"]:
            sys.exit("%s:%d: mutant %s changes nothing" % (path, m["line"], m["id"]))
        if m["id"] in seen:
            sys.exit("%s:%d: mutant id %s used twice" % (path, m["line"], m["id"]))
        seen.add(m["id"])
    return mutants


def find(mutants, ident):
    for m in mutants:
        if m["id"] == ident:
            return m
    sys.exit("no mutant %s" % ident)


def count(tree, m):
    p = os.path.join(tree, m["file"])
    if not os.path.exists(p):
        return -1
    with open(p) as f:
        return f.read().count(m["search"])


def sync(src, tree):
    """Copies the NUL-separated relative paths on stdin from src to tree, only where the content
    differs (a copied file gets the current time, so an incremental build sees it)."""
    names = [n for n in sys.stdin.buffer.read().decode().split("\0") if n]
    for n in names:
        a, b = os.path.join(src, n), os.path.join(tree, n)
        if not os.path.isfile(a) or os.path.islink(a):
            continue
        with open(a, "rb") as f:
            data = f.read()
        try:
            with open(b, "rb") as f:
                if f.read() == data:
                    continue
        except OSError:
            pass
        os.makedirs(os.path.dirname(b) or ".", exist_ok=True)
        with open(b + ".sync-tmp", "wb") as f:
            f.write(data)
        os.chmod(b + ".sync-tmp", os.stat(a).st_mode & 0o7777)
        os.replace(b + ".sync-tmp", b)
    return 0


def main():
    cmd, path = sys.argv[1], sys.argv[2]
    if cmd == "sync":
        return sync(path, sys.argv[3])
    mutants = parse(path)
    if cmd == "list":
        for m in mutants:
            print("%s\t%s\t%s\t%s" % (m["id"], m["file"], " ".join(m["tests"]), m["breaks"]))
        return 0
    tree = sys.argv[3]
    if cmd == "check":
        bad = 0
        wanted = sys.argv[4:] or [m["id"] for m in mutants]
        for ident in wanted:
            m = find(mutants, ident)
            c = count(tree, m)
            if c != 1:
                bad += 1
                where = "the file is gone" if c < 0 else "found %d times, not once" % c
                print("mutant %s (%s:%d) no longer applies to %s: %s; update its search text" %
                      (m["id"], path, m["line"], m["file"], where), file=sys.stderr)
        return 1 if bad else 0
    m = find(mutants, sys.argv[4])
    p = os.path.join(tree, m["file"])
    if cmd == "apply":
        if count(tree, m) != 1:
            sys.exit("mutant %s does not apply to %s (run check)" % (m["id"], m["file"]))
        with open(p) as f:
            orig = f.read()
        with open(p + ".mutation-orig", "w") as f:
            f.write(orig)
        with open(p, "w") as f:
            f.write(orig.replace(m["search"], m["replace"], 1))
        return 0
    if cmd == "revert":
        if os.path.exists(p + ".mutation-orig"):
            os.replace(p + ".mutation-orig", p)
            os.utime(p, None)  # newer than the mutant's objects: the next build recompiles it
        return 0
    sys.exit("unknown command %s" % cmd)


if __name__ == "__main__":
    sys.exit(main())
