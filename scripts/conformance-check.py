#!/usr/bin/env python3
"""Checks docs/conformance.md (R-Q5): every test a rule's row names exists.

Each numbered row of the document's tables (`| 12 | … |`) is one rule and names its proof as
`tests/FILE.rs::test_name`. A name exists when FILE holds a function of that name marked as a test
(`#[test]` or `#[tokio::test…]` on the lines before its `fn`, as inside `proptest!` too). The check
fails (exit 1), naming each, on a row that names no test and on a named test that does not
exist — a test renamed, removed or never written.

Usage: scripts/conformance-check.py [--doc FILE]   (default: docs/conformance.md)
"""

import os
import re
import sys

ROW = re.compile(r"^\|\s*(\d+)\s*\|")
REF = re.compile(r"`(tests/[A-Za-z0-9_/]+\.rs)::([A-Za-z0-9_]+)`")
TEST_ATTR = re.compile(r"^#\[(tokio::)?test\b")
FN = re.compile(r"^(pub(\([a-z]+\))?\s+)?(async\s+)?fn\s+([A-Za-z0-9_]+)\s*[(<]")

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tests_in(path, cache={}):
    """The names of the test functions in one file (empty if there is no such file)."""
    if path not in cache:
        names = set()
        if os.path.isfile(path):
            marked = False
            for line in open(path, encoding="utf-8"):
                s = line.strip()
                if TEST_ATTR.match(s):
                    marked = True
                    continue
                m = FN.match(s)
                if m:
                    if marked:
                        names.add(m.group(4))
                    marked = False
                elif s and not s.startswith(("#[", "//")):
                    marked = False
        cache[path] = names
    return cache[path]


def main(argv):
    doc = os.path.join(root, "docs", "conformance.md")
    if len(argv) == 3 and argv[1] == "--doc":
        doc = argv[2]
    elif len(argv) != 1:
        print(__doc__.strip().splitlines()[-1])
        return 2
    failures = []
    rules = named = 0
    for n, line in enumerate(open(doc, encoding="utf-8"), 1):
        row = ROW.match(line)
        if not row:
            continue
        rules += 1
        refs = REF.findall(line)
        if not refs:
            failures.append(f"{doc}:{n}: rule {row.group(1)} names no test")
        for file, name in refs:
            named += 1
            if name not in tests_in(os.path.join(root, file)):
                failures.append(
                    f"{doc}:{n}: rule {row.group(1)} names {file}::{name}, which does not exist"
                )
    for f in failures:
        print(f"FAIL: {f}")
    if rules == 0:
        print(f"FAIL: {doc} has no numbered rule rows")
        return 1
    if failures:
        return 1
    print(f"conformance: {rules} rules, {named} test references: every named test exists")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
