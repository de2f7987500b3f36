"""HardSigmoid and HardSwish gradients at NaN, -3 and 3 against PyTorch.

Usage: hard_nan_gradient.py TRAINC WORKDIR

The model's scalar output is sum(h(s * p) * w) with parameters s (ones) and
p = [NaN, 1, -3, 3]: its value is NaN, but dL/dh = w is finite, so grad.p is
w * h'(p), which shows the gradient at NaN (the check harness of test/grad
needs a finite loss and cannot). Prints, per op, trainc's and PyTorch's
grad.p and whether they are equal (NaN positions included).
"""

import os
import subprocess
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

POINTS = np.array([np.nan, 1.0, -3.0, 3.0], np.float32)
WEIGHTS = np.array([0.5, -1.0, 2.0, 0.25], np.float32)


def model(op, path):
    attrs = {"alpha": 1.0 / 6} if op == "HardSigmoid" else {}
    nodes = [helper.make_node("Mul", ["s", "p"], ["sp"]),
             helper.make_node(op, ["sp"], ["h"], **attrs),
             helper.make_node("Mul", ["h", "w"], ["hw"]),
             helper.make_node("ReduceSum", ["hw"], ["hs"], keepdims=0),
             # x, the data input every program reads, enters as 0 * sum(x).
             helper.make_node("ReduceSum", ["x"], ["xs"], keepdims=0),
             helper.make_node("Mul", ["xs", "zero"], ["x0"]),
             helper.make_node("Add", ["hs", "x0"], ["y"])]
    graph = helper.make_graph(
        nodes, op, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])],
        [numpy_helper.from_array(np.ones(4, np.float32), "s"),
         numpy_helper.from_array(POINTS, "p"), numpy_helper.from_array(WEIGHTS, "w"),
         numpy_helper.from_array(np.float32(0), "zero")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                ir_version=8), path)


def main(trainc, work):
    os.makedirs(work, exist_ok=True)
    data = os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    np.save(os.path.join(data, "x.npy"), np.zeros((2, 4), np.float32))
    np.save(os.path.join(data, "sample_weights.npy"), np.ones(2, np.float32))
    np.save(os.path.join(data, "sample_mask.npy"), np.ones(2, np.float32))
    for op, fn in (("HardSigmoid", F.hardsigmoid), ("HardSwish", F.hardswish)):
        path = os.path.join(work, op + ".onnx")
        prog = os.path.join(work, op)
        out = os.path.join(work, op + "-out")
        model(op, path)
        subprocess.run([trainc, "compile", path, "--target=cpu", "--batch-size=2",
                        "--loss=output", "--entry=train_step", "-o", prog], check=True)
        subprocess.run([prog, "--run", "--data", data, "--out", out], check=True,
                       capture_output=True)
        got = np.load(os.path.join(out, "grad.p.npy"))
        p = torch.tensor(POINTS, requires_grad=True)
        (fn(p) * torch.tensor(WEIGHTS)).sum().backward()
        want = p.grad.numpy()
        same = np.array_equal(got, want, equal_nan=True)
        text = lambda a: "[" + ", ".join("%.6g" % v for v in a) + "]"  # noqa: E731
        print("%s grad.p trainc %s torch %s: %s" % (op, text(got), text(want),
                                                     "equal" if same else "DIFFERENT"))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
