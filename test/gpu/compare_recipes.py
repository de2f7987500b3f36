#!/usr/bin/env python3
"""Compares a CUDA trainer's recipe run with the CPU trainer's (on the GPU
machine).

Usage: compare_recipes.py CASEDIR NAME

CASEDIR (made by test/train/check_recipes.py --gpu-prepare) holds the CPU
trainer's log (cpu.jsonl) and weights (cpu/), the initial weights
(initial/), and the CUDA trainer's log.jsonl and saved/ from run.sh. Each
step's learning rate and momentum (or beta1) must be the CPU trainer's
exactly (the schedule is host code); its loss and gradient norm within 1e-4
relative; each tensor's change from the initial weights within 1e-3 of the
CPU trainer's, norm-wise (cuBLAS and the CPU kernels sum in other orders).
Prints one PASS/FAIL line; exits 1 on a failure.
"""
import json
import os
import sys

import numpy as np

case, name = sys.argv[1], sys.argv[2]


def records(path):
    with open(path) as stream:
        return [json.loads(line) for line in stream]


def relative(a, b):
    return abs(a - b) / max(abs(b), 1e-30)


problems = []
try:
    cpu, gpu = records(os.path.join(case, "cpu.jsonl")), records(os.path.join(case, "log.jsonl"))
    if len(cpu) != len(gpu):
        problems.append("%d log records, the CPU trainer %d" % (len(gpu), len(cpu)))
    for ours, theirs in zip(gpu, cpu):
        for key in ("lr", "momentum", "beta1"):
            if key in theirs and ours.get(key) != theirs[key]:
                problems.append("step %d: %s %r, CPU %r" % (theirs["step"], key, ours.get(key),
                                                           theirs[key]))
        for key in ("loss", "grad_norm"):
            if key in theirs and (ours.get(key) is None or
                                  relative(ours[key], theirs[key]) > 1e-4):
                problems.append("step %d: %s %r, CPU %r" % (theirs["step"], key, ours.get(key),
                                                           theirs[key]))
    worst = 0.0
    for f in sorted(os.listdir(os.path.join(case, "initial"))):
        w0 = np.load(os.path.join(case, "initial", f)).astype(np.float64)
        mine = np.load(os.path.join(case, "saved", f)).astype(np.float64)
        ref = np.load(os.path.join(case, "cpu", f)).astype(np.float64)
        error = np.linalg.norm(mine - ref) / max(np.linalg.norm(ref - w0), 1e-30)
        worst = max(worst, error)
        if error > 1e-3:
            problems.append("%s changes %.3g off the CPU trainer's" % (f[:-4], error))
except (OSError, ValueError, KeyError) as error:
    problems.append("cannot compare: %s" % error)
ok = not problems
print(("PASS" if ok else "FAIL") + ": gpu recipe :: %s: the log's rates equal the CPU trainer's, "
      "losses and gradient norms within 1e-4, weights within 1e-3 (worst %.3g)%s"
      % (name, worst if ok else float("nan"), "" if ok else ": " + "; ".join(problems[:4])))
sys.exit(0 if ok else 1)
