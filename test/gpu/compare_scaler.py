#!/usr/bin/env python3
"""fp16 dynamic loss scaling on the GPU (run by run.sh).

Usage: compare_scaler.py CASEDIR NAME

CASEDIR (made by test/train/check_precision.py --gpu-prepare) holds a CUDA
fp16 trainer of the digits example and the training data whose batch 3
overflows fp16; run.sh trained it 2 steps (two/) and 3 steps (three/). The
criteria are the CPU suite's (test/pylib/loss_scaling.py): step 3 skipped
with every parameter and state tensor unchanged bit for bit, the scale
halved, the skipped step counted, Adam's step count kept. Prints one
PASS/FAIL line per check; exits 1 on a failure.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from loss_scaling import read_checkpoint, skipped_step_checks  # noqa: E402

case, name = sys.argv[1], sys.argv[2]
after2, _ = read_checkpoint(os.path.join(case, "two", "ckpt"))
after3, manifest3 = read_checkpoint(os.path.join(case, "three", "ckpt"))
log3 = [json.loads(line) for line in open(os.path.join(case, "three", "log"))]
failed = False
for ok, what in skipped_step_checks(name, log3, after2, after3, manifest3, name != "sgd"):
    print(("PASS" if ok else "FAIL") + ": gpu fp16 scaler :: " + what)
    failed |= not ok
sys.exit(1 if failed else 0)
