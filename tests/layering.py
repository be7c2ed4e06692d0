#!/usr/bin/env python3
"""The house's layers, read from the sources' includes.

Each rule names a part of the tree and what it may never reach, following its
quoted includes transitively (a header that includes a header that includes
torch reaches torch). The rules are docs/architecture.md's: the core never
includes Qt, the widgets never include torch, the run's vocabulary and the log
include neither, and the configuration (the schema, the model's keys, what the
panel reads of the attention mechanisms) has no torch, and neither has BLEU
(core/measure/Bleu, built outside the core's unity batches and torch header).

Usage:
    python3 tests/layering.py [SOURCE_ROOT]
"""

import os
import re
import sys

# Where a quoted include is looked up after the including file's own folder:
# the include directories of core, widgets and app.
ROOTS = ["core", "widgets", "app/gui", "app/cli"]

FORBIDDEN = {
    "torch": re.compile(r"^(torch|ATen|c10|caffe2)/"),
    "Qt": re.compile(r"^(Q[A-Za-z]+$|Qt[A-Za-z]*/|qcustomplot\.h$)"),
}

# (what, files under these paths, may not reach)
RULES = [
    ("the core", ["core"], ["Qt"]),
    ("the vocabulary", ["core/vocab"], ["torch", "Qt"]),
    ("the log", ["core/log"], ["torch", "Qt"]),
    ("the configuration", ["core/config", "core/model/attention/MechanismSpec.h"], ["torch"]),
    ("the widgets", ["widgets"], ["torch"]),
    ("BLEU and chrF", ["core/measure/Bleu.h", "core/measure/Bleu.cpp"], ["torch", "Qt"]),
]

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]', re.M)


def includes(path):
    with open(path, encoding="utf-8") as f:
        return INCLUDE.findall(f.read())


def resolve(root, including, name):
    for folder in [os.path.dirname(including)] + [os.path.join(root, r) for r in ROOTS]:
        candidate = os.path.normpath(os.path.join(folder, name))
        if os.path.isfile(candidate):
            return candidate
    return None


def reaches(root, start, kinds):
    """Yields (kind, chain) for each forbidden include reachable from start."""
    seen = set()
    stack = [(start, [start])]
    while stack:
        path, chain = stack.pop()
        if path in seen:
            continue
        seen.add(path)
        for quote, name in includes(path):
            for kind in kinds:
                if FORBIDDEN[kind].search(name):
                    yield kind, chain + [name]
            if quote == '"':
                found = resolve(root, path, name)
                if found:
                    stack.append((found, chain + [found]))


def sources(root, part):
    full = os.path.join(root, part)
    if os.path.isfile(full):
        yield full
        return
    for folder, _, files in os.walk(full):
        for f in sorted(files):
            if f.endswith((".h", ".cpp")):
                yield os.path.join(folder, f)


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    failures = []
    checked = 0
    for what, parts, kinds in RULES:
        for part in parts:
            for path in sources(root, part):
                checked += 1
                for kind, chain in reaches(root, path, kinds):
                    shown = " -> ".join(os.path.relpath(p, root) if os.path.isabs(p) else p for p in chain)
                    failures.append("%s includes %s: %s" % (what, kind, shown))
                    break
    if checked < 50:  # the tree was not found: a rule that checks nothing passes nothing
        print("only %d files found under %s" % (checked, root), file=sys.stderr)
        return 1
    for line in failures:
        print(line, file=sys.stderr)
    print("%d files checked, %d break a layer" % (checked, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
