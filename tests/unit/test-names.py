#!/usr/bin/env python3
"""Docs and comments name only what exists (TAP).

Every gh_*/GH_*/gpuhook_* name that docs/*.md, README.md, man/*.scd or a code comment mentions must
be a name the code uses (outside comments: C, the export map, shell, Python and meson files), and
every path under one of the repository's folders (lib/core/plan.c, tests/unit/test-mps.c, ...)
and every bare C file name (plan.c, gelf.h) must exist: in the tree, in the build directory
(built programs, config.h) or among the system headers.  Placeholders (test-X.c, cli/NAME.c,
GH_PHASE_X) are skipped.  One test point per document and per code folder, listing what is stale.
"""
import os
import re
import sys

ROOT = os.environ.get("GH_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("GH_BUILD_DIR", "")
CODE_DIRS = ["lib", "cli", "hook", "runtime", "tests", "bench", "contrib", "debian", ".ci"]
TOP_DIRS = "lib|cli|hook|runtime|tests|contrib|docs|man|bench|debian"

NAME = re.compile(r"\b(?:gh|gpuhook|GH|GPUHOOK)_[A-Za-z0-9_]*[A-Za-z0-9]\b")
# A path of ours; one right after "'s " is another project's (crun's tests/no_openat2.c).
PATH = re.compile(r"(?<![\w/.-])(?<!'s )(?:\.\./)*((?:%s)/[A-Za-z0-9_./{},-]*[A-Za-z0-9_}])" % TOP_DIRS)
BARE = re.compile(r"(?<![\w/.-])([a-z][a-z0-9_-]*\.[ch])\b")
# A path component in capitals stands for any name (test-X.c, tests/integration/test-F, cli/NAME.c),
# so does a one-letter last part of a name (GH_PHASE_X).
PLACEHOLDER = re.compile(r"(^|[_/.-])(?!README\b)[A-Z]+([_/.-]|$)")
NAME_PLACEHOLDER = re.compile(r"_[A-Z]$")


def split_c(src):
    """(code without comments, [(line, comment text)]) of a C source."""
    out, comments, i, n = [], [], 0, len(src)
    while i < n:
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            comments.append((src.count("\n", 0, i) + 1, src[i:j]))
            out.append(" ")
            i = j
        elif src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            comments.append((src.count("\n", 0, i) + 1, src[i:j]))
            i = j
        elif src[i] in "\"'":
            j = i + 1
            while j < n and src[j] != src[i] and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            out.append(src[i:j + 1])
            i = j + 1
        else:
            out.append(src[i])
            i += 1
    return "".join(out), comments


def split_hash(src):
    """(code, [(line, comment)]) of a shell, Python or meson file: whole-line '#' comments."""
    code, comments = [], []
    for i, line in enumerate(src.split("\n"), 1):
        if line.lstrip().startswith("#"):
            comments.append((i, line))
        else:
            code.append(line)
    return "\n".join(code), comments


def code_files():
    for d in CODE_DIRS:
        for dp, dn, fn in os.walk(os.path.join(ROOT, d)):
            dn[:] = [x for x in dn if not x.startswith("build")]
            for f in sorted(fn):
                yield os.path.join(dp, f)


def expand(path):
    m = re.search(r"\{([^{}]*)\}", path)
    if not m:
        return [path]
    return [p for alt in m.group(1).split(",") for p in expand(path[:m.start()] + alt + path[m.end():])]


def main():
    used, comments, basenames = set(), {}, set()
    for dp, dn, fn in os.walk(ROOT):
        dn[:] = [x for x in dn if x != ".git" and not x.startswith("build")]
        basenames |= set(fn)
    for dp, dn, fn in os.walk(BUILD) if BUILD else ():
        basenames |= set(f for f in fn if f.endswith((".c", ".h")))  # generated: config.h, nvml.h
    for p in code_files():
        rel = os.path.relpath(p, ROOT)
        try:
            src = open(p, encoding="utf-8").read()
        except (UnicodeDecodeError, OSError):
            continue
        if p.endswith((".c", ".h", ".x", ".inc")):
            code, com = split_c(src)
        elif p.endswith((".sh", ".py", ".build", ".txt", ".in")) or os.path.basename(p) in ("run", "rules"):
            code, com = split_hash(src)
        elif p.endswith(".sym"):
            code, com = src, []
        else:
            continue
        used |= set(NAME.findall(code))
        folder = rel.split("/")[0] if rel.split("/")[0] != "lib" else "/".join(rel.split("/")[:2])
        comments.setdefault(folder, []).extend((rel, line, text) for line, text in com)
    for p in ("meson.build", "meson_options.txt"):
        used |= set(NAME.findall(split_hash(open(os.path.join(ROOT, p)).read())[0]))

    def exists(path):
        path = path.rstrip(".")
        return all(os.path.exists(os.path.join(ROOT, q)) or (BUILD and os.path.exists(os.path.join(BUILD, q)))
                   for q in expand(path))

    def stale(text):
        bad = []
        for name in NAME.findall(text):
            if name not in used and not NAME_PLACEHOLDER.search(name):
                bad.append(name)
        for path in PATH.findall(text):
            if not PLACEHOLDER.search(path) and not exists(path):
                bad.append(path)
        for f in BARE.findall(text):
            if f not in basenames and not os.path.exists("/usr/include/" + f):
                bad.append(f)
        return bad

    count, failed = 0, 0

    def point(good, what, bad):
        nonlocal count, failed
        count += 1
        if good:
            print("ok %d - %s" % (count, what))
        else:
            failed += 1
            print("not ok %d - %s" % (count, what))
            for b in bad[:40]:
                print("#   %s" % b)

    docs = [os.path.join("docs", f) for f in sorted(os.listdir(os.path.join(ROOT, "docs"))) if f.endswith(".md")]
    docs += ["README.md"] + [os.path.join("man", f) for f in sorted(os.listdir(os.path.join(ROOT, "man")))
                             if f.endswith(".scd")]
    for doc in docs:
        bad = []
        for i, line in enumerate(open(os.path.join(ROOT, doc), encoding="utf-8"), 1):
            bad += ["%s:%d: %s" % (doc, i, b) for b in stale(line)]
        point(not bad, "%s names only functions, macros and files that exist" % doc, bad)
    for folder in sorted(comments):
        bad = []
        for rel, line, text in comments[folder]:
            bad += ["%s:%d: %s" % (rel, line, b) for b in stale(text)]
        point(not bad, "the comments in %s/ name only what exists (%d comments)" % (folder, len(comments[folder])),
              bad)
    # The check itself: a name and a path that do not exist are found.
    made_up = "gh_" + "no_such_function"  # spelled apart, or this file would make it a used name
    point(stale(made_up + "() in lib/core/no-such-file.c, see gone.c") ==
          [made_up, "lib/core/no-such-file.c", "gone.c"], "a made-up name, path and file are caught", [])
    print("1..%d" % count)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
