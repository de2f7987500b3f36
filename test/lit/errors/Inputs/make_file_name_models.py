#!/usr/bin/env python3
"""Writes models whose parameter, input or output names cannot name a file.

usage: make_file_name_models.py OUTDIR

Every model is Y = Add(X, W) (X a float[2, 3] input, W a float[3]
initializer) with one of the three names replaced; OUTDIR/<case>.onnx.
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def model(x="X", w="W", y="Y"):
    inputs = [helper.make_tensor_value_info(x, TensorProto.FLOAT, [2, 3])]
    outputs = [helper.make_tensor_value_info(y, TensorProto.FLOAT, [2, 3])]
    init = numpy_helper.from_array(np.ones(3, np.float32), w)
    graph = helper.make_graph([helper.make_node("Add", [x, w], [y], name="add")], "g",
                              inputs, outputs, initializer=[init])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


CASES = {
    "good": model(),
    "param-dotdot-slash": model(w="../../evil"),
    "param-empty": model(w=""),
    "output-empty": model(y=""),
    "param-dot": model(w="."),
    "param-dotdot": model(w=".."),
    "param-newline": model(w="a\nb"),
    "param-nul": model(w="a\0b"),
    "param-long": model(w="w" * 252),
    "param-251": model(w="w" * 251),
    "input-slash": model(x="sub/x"),
    "input-escape": model(x="\x1b[2J"),
    "output-slash": model(y="/tmp/y"),
}

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
for name, m in CASES.items():
    with open(os.path.join(out, name + ".onnx"), "wb") as f:
        f.write(m.SerializeToString())
