#!/usr/bin/python3
"""Compares folders of files byte for byte with a reference folder.

Usage: same_files.py REFERENCE DIR...
Prints "N files identical in M folders", or one line per file that differs
or is missing (with the largest absolute difference for .npy files) and
exits 1. The reference folder must not be empty.
"""

import os
import sys

import numpy as np


def main(argv):
    ref, others = argv[1], argv[2:]
    names = sorted(os.listdir(ref))
    if not names or not others:
        print("nothing to compare in", ref)
        return 1
    bad = 0
    for other in others:
        if sorted(os.listdir(other)) != names:
            print("DIFFERENT file lists:", ref, other)
            bad += 1
            continue
        for name in names:
            a, b = os.path.join(ref, name), os.path.join(other, name)
            with open(a, "rb") as fa, open(b, "rb") as fb:
                if fa.read() == fb.read():
                    continue
            detail = ""
            if name.endswith(".npy"):
                x, y = np.load(a), np.load(b)
                if x.shape == y.shape and x.dtype.kind == "f":
                    detail = " (max abs difference %g)" % np.nanmax(np.abs(x - y))
            print("DIFFERENT", b, detail)
            bad += 1
    if bad:
        return 1
    print(len(names), "files identical in", len(others) + 1, "folders")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
