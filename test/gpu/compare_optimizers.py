#!/usr/bin/env python3
"""Compares a LAMB or LARS CUDA trainer's weights with the float64
reference (on the GPU machine).

Usage: compare_optimizers.py CASEDIR NAME

CASEDIR (made by test/train/check_optimizers.py --gpu-prepare) holds
initial/, ref64/ and ref32/ (<param>.npy: the weights before the 10 steps,
and after them in float64 and in PyTorch float32), and the trainer's saved/
from run.sh. The same comparison as the CPU trainer's
(float64_compare.compare_weights). Prints one PASS/FAIL line; exits 1 on a
failure.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from float64_compare import compare_weights  # noqa: E402

case, name = sys.argv[1], sys.argv[2]


def folder(sub):
    path = os.path.join(case, sub)
    return {f[:-len(".npy")]: np.load(os.path.join(path, f)) for f in sorted(os.listdir(path))}


ref64 = folder("ref64")
try:
    saved = folder("saved")
    ok, text = compare_weights(folder("initial"), {k: saved[k] for k in ref64}, ref64,
                               folder("ref32"))
except (OSError, KeyError) as e:
    ok, text = False, "no saved weights: %s" % e
print(("PASS" if ok else "FAIL") + ": gpu optimizer :: %s: 10 steps against float64, %s"
      % (name, text))
sys.exit(0 if ok else 1)
