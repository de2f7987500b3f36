#!/usr/bin/env python3
"""Compares a CUDA bf16/fp16 step with autocast and float64 (on the GPU machine).

Usage: compare_precision.py CASEDIR NAME

CASEDIR (made by test/train/check_precision.py --gpu-prepare) holds
case.json (autocast's and float64's loss, the ill-conditioned tensors),
expected.npz (float64's gradients as float32, on the CPU; autocast's norm-wise
errors are in case.json) and the
program's out/ from run.sh. The criteria are check_precision.py's: bf16, the
loss within rtol 1.6e-2 of autocast's or closer to float64's than
autocast's is, each gradient's norm-wise error against float64 at most 4x
autocast's plus 1.6e-2; fp16, the loss within half autocast-bf16's error of
float64's (at least 2e-3 relative), each gradient within autocast-bf16's
error plus 2e-3. Prints one PASS/FAIL line per check; exits 1 on a failure.
"""
import json
import os
import sys

import numpy as np

case, name = sys.argv[1], sys.argv[2]
want = json.load(open(os.path.join(case, "case.json")))
ref = np.load(os.path.join(case, "expected.npz"))
out = os.path.join(case, "out")
failed = False


precision = want.get("precision", "bf16")


def check(ok, what):
    global failed
    print(("PASS" if ok else "FAIL") + ": gpu %s :: %s %s" % (precision, name, what))
    failed |= not ok


def err(got, exp):
    got, exp = np.asarray(got, np.float64), np.asarray(exp, np.float64)
    return float(np.linalg.norm(got - exp) / max(np.linalg.norm(exp), 1e-30))


rtol = want["rtol"]
loss = float(np.load(os.path.join(out, "loss.npy")))
amp, f64 = want["loss_amp"], want["loss64"]
if precision == "fp16":
    check(abs(loss - f64) <= max(abs(amp - f64) / 2, 2e-3 * abs(f64)),
          "loss %.6f (float64 %.6f, autocast-bf16 on the CPU %.6f)" % (loss, f64, amp))
else:
    check(abs(loss - amp) <= rtol * abs(amp) or abs(loss - f64) <= abs(amp - f64),
          "loss %.6f (autocast on the CPU %.6f, float64 %.6f)" % (loss, amp, f64))
scale, floor = (4.0, rtol) if precision == "bf16" else (1.0, 2e-3)
worst = ("", 0.0, 0.0, 0.0)
for key in sorted(k[len("f64."):] for k in ref.files if k.startswith("f64.")):
    if key in want["ill"]:
        continue
    path = os.path.join(out, "grad.%s.npy" % key)
    if not os.path.exists(path):
        check(False, "grad.%s.npy written" % key)
        continue
    ours, theirs = err(np.load(path), ref["f64." + key]), want["amp_errors"][key]
    ratio = ours / (scale * theirs + floor)
    if ratio >= worst[1]:
        worst = (key, ratio, ours, theirs)
check(worst[1] <= 1.0, "every gradient within %gx autocast's error + %g of float64's (worst %s: "
      "ours %.2e, autocast %.2e)" % (scale, floor, worst[0], worst[2], worst[3]))
sys.exit(1 if failed else 0)
