"""The gradient of CumSum with every exclusive/reverse combination, along a
middle and the last axis, against PyTorch float64 autograd.

Usage: cumsum_flags_grad.py TRAINC WORKDIR

torch.cumsum has neither flag (and its ONNX export sets neither), so the
models are written here: y = CumSum(x * w) with mse against a random label,
and the reference flips and subtracts in torch. Prints one line per case:
PASS when grad.w is within 1e-5 of float64 relative to its largest element
(float32 rounding of 15 sums is ~1e-7), FAIL otherwise.
"""
import os
import subprocess
import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

TRAINC, W = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(0)
x = rng.standard_normal((4, 3, 5)).astype(np.float32)
w = rng.standard_normal((5,)).astype(np.float32)
label = rng.standard_normal((4, 3, 5)).astype(np.float32)
for excl in (0, 1):
    for rev in (0, 1):
        for axis in (1, 2):
            nodes = [helper.make_node("Mul", ["x", "w"], ["h"]),
                     helper.make_node("CumSum", ["h", "axis"], ["y"], exclusive=excl, reverse=rev)]
            g = helper.make_graph(nodes, "g",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 5])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3, 5])],
                                  [numpy_helper.from_array(w, "w"),
                                   numpy_helper.from_array(np.array(axis, np.int64), "axis")])
            m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
            d = os.path.join(W, "e%d_r%d_a%d" % (excl, rev, axis))
            os.makedirs(os.path.join(d, "data"), exist_ok=True)
            onnx.save(m, os.path.join(d, "m.onnx"))
            np.save(os.path.join(d, "data", "x.npy"), x)
            np.save(os.path.join(d, "data", "label.npy"), label)
            np.save(os.path.join(d, "data", "sample_weights.npy"), np.ones(4, np.float32))
            np.save(os.path.join(d, "data", "sample_mask.npy"), np.ones(4, np.float32))
            subprocess.run([TRAINC, "compile", os.path.join(d, "m.onnx"),
                            "--target=cpu", "--batch-size=4", "--loss=mse", "--entry=train_step",
                            "-o", os.path.join(d, "p")], check=True)
            subprocess.run([os.path.join(d, "p"), "--run", "--data", os.path.join(d, "data"),
                            "--out", os.path.join(d, "out")], check=True, capture_output=True)
            got = np.load(os.path.join(d, "out", "grad.w.npy"))
            tw = torch.tensor(w, dtype=torch.float64, requires_grad=True)
            h = torch.tensor(x, dtype=torch.float64) * tw
            if rev:
                h = torch.flip(h, [axis])
            y = torch.cumsum(h, axis)
            if excl:
                y = y - h
            if rev:
                y = torch.flip(y, [axis])
            loss = ((y - torch.tensor(label, dtype=torch.float64)) ** 2).mean()
            loss.backward()
            want = tw.grad.numpy()
            err = np.abs(got - want).max() / np.abs(want).max()
            print("%s: exclusive=%d reverse=%d axis=%d: grad.w max rel err vs float64 %.1e"
                  % ("PASS" if err < 1e-5 else "FAIL", excl, rev, axis, err))
