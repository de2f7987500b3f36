"""Sign, Round, Ceil and Floor kernels against torch 1.13: NaN, signed zeros,
halves (Round halves to even as ONNX and torch.round), and Sign of int64
(including its extremes) and int32. Sign of NaN is NaN as the ONNX reference
(numpy.sign) and ONNX Runtime 1.20 give, where torch 1.13 gives 0.

  rounding_ops.py make DIR    writes DIR/m.onnx and DIR/in/*.npy
  rounding_ops.py check DIR   compares DIR/out/*.npy, one line per output
"""
import os
import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto as T
from onnx import helper

X = np.array([np.nan, -0.0, 0.0, -2.5, -0.5, 0.5, 1.5, 2.5, -1.7, 2.2, np.inf, -np.inf],
             np.float32)
I = np.array([-9, 0, 7, np.iinfo(np.int64).min, np.iinfo(np.int64).max], np.int64)
J = np.array([-3, 0, 4], np.int32)


def make(d):
    os.makedirs(os.path.join(d, "in"), exist_ok=True)
    nodes = [helper.make_node(op, [src], [dst]) for op, src, dst in
             [("Sign", "x", "sign"), ("Round", "x", "round"), ("Ceil", "x", "ceil"),
              ("Floor", "x", "floor"), ("Sign", "i", "sign_i64"), ("Sign", "j", "sign_i32")]]
    vi = helper.make_tensor_value_info
    g = helper.make_graph(
        nodes, "rounding",
        [vi("x", T.FLOAT, [len(X)]), vi("i", T.INT64, [len(I)]), vi("j", T.INT32, [len(J)])],
        [vi(n, T.FLOAT, [len(X)]) for n in ("sign", "round", "ceil", "floor")] +
        [vi("sign_i64", T.INT64, [len(I)]), vi("sign_i32", T.INT32, [len(J)])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]),
              os.path.join(d, "m.onnx"))
    for name, a in (("x", X), ("i", I), ("j", J)):
        np.save(os.path.join(d, "in", name + ".npy"), a)


def check(d):
    x, i, j = torch.from_numpy(X), torch.from_numpy(I), torch.from_numpy(J)
    want = {"sign": torch.sign(x), "round": torch.round(x), "ceil": torch.ceil(x),
            "floor": torch.floor(x), "sign_i64": torch.sign(i), "sign_i32": torch.sign(j)}
    want["sign"] = torch.where(torch.isnan(x), x, want["sign"])
    for name, ref in want.items():
        ref = ref.numpy()
        got = np.load(os.path.join(d, "out", name + ".npy"))
        same = (got.dtype == ref.dtype and np.array_equal(got, ref, equal_nan=True) and
                np.array_equal(np.signbit(got), np.signbit(ref)))
        print("%s %s" % (name, "exact" if same else "DIFFERS: got %s want %s" % (got, ref)))


if __name__ == "__main__":
    {"make": make, "check": check}[sys.argv[1]](sys.argv[2])
