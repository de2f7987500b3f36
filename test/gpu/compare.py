"""Compares one model's CUDA outputs with the CPU target's and PyTorch's.

Tolerance: rtol 1e-4 / atol 1e-5 against both (f32 everywhere; cuBLASLt runs
strict fp32, cuDNN is asked for fp32 math, so TF32 rounding would show here).
"""
import os
import sys

import numpy as np

folder, name = sys.argv[1], sys.argv[2]
ok = True
for file in sorted(os.listdir(os.path.join(folder, "ref"))):
    cuda = np.load(os.path.join(folder, "cuda", file))
    for peer in ("cpu", "ref"):
        want = np.load(os.path.join(folder, peer, file))
        err = float(np.abs(cuda - want).max())
        good = cuda.shape == want.shape and np.allclose(cuda, want, rtol=1e-4, atol=1e-5)
        ok &= good
        print("%s: gpu :: %s %s vs %s: max abs error %.3g" % (
            "PASS" if good else "FAIL", name, file, "CPU target" if peer == "cpu" else "PyTorch", err))
sys.exit(0 if ok else 1)
