#!/usr/bin/env python3
"""Writes OUT (a binary ONNX model) whose nodes carry names, as PyTorch
exports them ('/fc1/Gemm'), except one unnamed node (index 2).

usage: make_named_model.py OUT

  X [N,3] -> /fc1/Gemm (W [4,3]^T, B [4]) -> /act/Relu -> (unnamed) Neg
          -> /out/Mul (times the constant made by /const/Constant) -> Y [N,4]
"""

import sys

from onnx import TensorProto, helper


def main():
    w = helper.make_tensor("W", TensorProto.FLOAT, [4, 3], [float(i) for i in range(12)])
    b = helper.make_tensor("B", TensorProto.FLOAT, [4], [0.5] * 4)
    two = helper.make_tensor("two_value", TensorProto.FLOAT, [], [2.0])
    nodes = [
        helper.make_node("Gemm", ["X", "W", "B"], ["h"], name="/fc1/Gemm", transB=1),
        helper.make_node("Relu", ["h"], ["r"], name="/act/Relu"),
        helper.make_node("Neg", ["r"], ["n"]),
        helper.make_node("Constant", [], ["two"], name="/const/Constant", value=two),
        helper.make_node("Mul", ["n", "two"], ["Y"], name="/out/Mul"),
    ]
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, ["batch", 3])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["batch", 4])
    graph = helper.make_graph(nodes, "named", [x], [y], initializer=[w, b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="pytorch")
    model.ir_version = 8
    with open(sys.argv[1], "wb") as f:
        f.write(model.SerializeToString())


if __name__ == "__main__":
    main()
