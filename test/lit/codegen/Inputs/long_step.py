"""A model of many ops, so that its generated step is written in parts.

  long_step.py make DIR    DIR/m.onnx: 250 ops, Mul by one of two scale
                           initializers then Tanh, in turn, on x [4, 8];
                           DIR/in/x.npy
  long_step.py check DIR   compares DIR/out/y.npy with numpy float64
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper

N = 250
X = np.linspace(-2.0, 2.0, 32, dtype=np.float32).reshape(4, 8)
A = np.full(8, 1.25, np.float32)
B = np.full(8, 0.75, np.float32)


def make(d):
    os.makedirs(os.path.join(d, "in"), exist_ok=True)
    nodes, prev = [], "x"
    for k in range(N):
        out = "y" if k == N - 1 else "v%d" % k
        if k % 2 == 0:
            nodes.append(helper.make_node("Mul", [prev, "a" if k % 4 == 0 else "b"], [out]))
        else:
            nodes.append(helper.make_node("Tanh", [prev], [out]))
        prev = out
    g = helper.make_graph(nodes, "long", [helper.make_tensor_value_info("x", T.FLOAT, [4, 8])],
                          [helper.make_tensor_value_info("y", T.FLOAT, [4, 8])],
                          [numpy_helper.from_array(A, "a"), numpy_helper.from_array(B, "b")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
              os.path.join(d, "m.onnx"))
    np.save(os.path.join(d, "in", "x.npy"), X)


def check(d):
    v = X.astype(np.float64)
    for k in range(N):
        v = v * (A if k % 4 == 0 else B) if k % 2 == 0 else np.tanh(v)
    y = np.load(os.path.join(d, "out", "y.npy"))
    err = np.abs(y - v).max()
    # Each step contracts (|tanh'| <= 1, scales 1.25 * 0.75 < 1): float32
    # rounding stays within a few ulps of the result.
    print("long step y: max abs err %.1e %s" % (err, "ok" if err < 1e-5 else "WRONG"))


if __name__ == "__main__":
    {"make": make, "check": check}[sys.argv[1]](sys.argv[2])
