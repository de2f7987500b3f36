"""The gradient of Pad mode 'wrap' (opset 19) against PyTorch float64
autograd of F.pad(mode='circular').

Usage: pad_wrap_grad.py TRAINC WORKDIR

PyTorch 1.13 exports a circular pad as slices and a concat, so the model is
written here: y = Pad<wrap>(x * w) with mse against a random label, over
[4, 3, 5, 4] with pads that cover one axis more than once around (wrap pads
may exceed the axis; circular ones may not, so the reference repeats the
circular pad). Prints PASS when grad.w is within 1e-5 of float64 relative
to its largest element, FAIL otherwise.
"""
import os
import subprocess
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

TRAINC, W = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(1)
x = rng.standard_normal((4, 3, 5, 4)).astype(np.float32)
w = rng.standard_normal((4,)).astype(np.float32)
# Axis 2 (size 5): 2 before, 1 after. Axis 3 (size 4): 5 before, 3 after
# (more than once around on the left).
pads = [0, 0, 2, 5, 0, 0, 1, 3]
out_shape = [4, 3, 8, 12]
label = rng.standard_normal(out_shape).astype(np.float32)
nodes = [helper.make_node("Mul", ["x", "w"], ["h"]),
         helper.make_node("Pad", ["h", "pads"], ["y"], mode="wrap")]
g = helper.make_graph(nodes, "g",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 5, 4])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N"] + out_shape[1:])],
                      [numpy_helper.from_array(w, "w"),
                       numpy_helper.from_array(np.array(pads, np.int64), "pads")])
# onnx 1.12 does not know opset 19; the model is written by hand-setting it.
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])
m.ir_version = 8
os.makedirs(os.path.join(W, "data"), exist_ok=True)
path = os.path.join(W, "m.onnx")
with open(path, "wb") as f:
    f.write(m.SerializeToString())
np.save(os.path.join(W, "data", "x.npy"), x)
np.save(os.path.join(W, "data", "label.npy"), label)
np.save(os.path.join(W, "data", "sample_weights.npy"), np.ones(4, np.float32))
np.save(os.path.join(W, "data", "sample_mask.npy"), np.ones(4, np.float32))
subprocess.run([TRAINC, "compile", path, "--target=cpu", "--batch-size=4", "--loss=mse",
                "--entry=train_step", "-o", os.path.join(W, "p")], check=True)
subprocess.run([os.path.join(W, "p"), "--run", "--data", os.path.join(W, "data"),
                "--out", os.path.join(W, "out")], check=True, capture_output=True)
got = np.load(os.path.join(W, "out", "grad.w.npy"))

tw = torch.tensor(w, dtype=torch.float64, requires_grad=True)
h = torch.tensor(x, dtype=torch.float64) * tw
# Axis 3 needs 5 on the left of 4: circular pads of at most the size, twice.
h = F.pad(h, (1, 3, 2, 1), mode="circular")   # axis 3: (1, 3), axis 2: (2, 1)
h = F.pad(h, (4, 0, 0, 0), mode="circular")   # axis 3: 4 more on the left
y = h
assert list(y.shape) == out_shape, y.shape
loss = ((y - torch.tensor(label, dtype=torch.float64)) ** 2).mean()
loss.backward()
want = tw.grad.numpy()
err = np.abs(got - want).max() / np.abs(want).max()
print("%s: wrap pad grad.w max rel err vs float64 %.1e" % ("PASS" if err < 1e-5 else "FAIL", err))
