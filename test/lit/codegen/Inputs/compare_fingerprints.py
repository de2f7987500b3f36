"""Compares the kProgram fingerprints of generated sources.

usage: compare_fingerprints.py REF same FILE... differ FILE...
Each FILE after `same` must carry REF's fingerprint, each after `differ`
another one (and all of those must differ from each other too).
"""
import re
import sys


def fingerprint(path):
    text = open(path).read()
    found = re.findall(r'^    \.fingerprint = "([0-9a-f]{16})",$', text, re.M)
    if len(found) != 1:
        sys.exit(f"{path}: expected one fingerprint line, found {len(found)}")
    return found[0]


ref = fingerprint(sys.argv[1])
mode, equal, different, seen = None, 0, 0, {ref}
for arg in sys.argv[2:]:
    if arg in ("same", "differ"):
        mode = arg
        continue
    fp = fingerprint(arg)
    if mode == "same":
        if fp != ref:
            sys.exit(f"{arg}: fingerprint {fp} differs from {ref}")
        equal += 1
    else:
        if fp in seen:
            sys.exit(f"{arg}: fingerprint {fp} is not new")
        seen.add(fp)
        different += 1
print(f"{equal} equal, {different} different")
