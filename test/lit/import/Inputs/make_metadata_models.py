#!/usr/bin/env python3
"""Writes small embedding models with trainc.* metadata into OUTDIR.

usage: make_metadata_models.py OUTDIR

Each model is  ids [N,2] -> Gather(E [5,3]) -> Reshape(shape [-1,6]) ->
MatMul(W [6,4]) -> Add(B [4]) -> y [N,4], where `shape` is an int64
initializer; the models differ only in metadata_props:

  plain.onnx          no metadata: every float initializer is trained
  meta.onnx           trainable ["E", "W"], padding {"E": 1}: B is a buffer
  empty.onnx          trainable []: nothing trains
  <case>.onnx         malformed metadata (see CASES), each an import error
"""

import json
import os
import sys

from onnx import TensorProto, helper, save

TRAINABLE = "trainc.trainable"
PADDING = "trainc.padding_index"

CASES = {
    "plain": [],
    "meta": [(TRAINABLE, json.dumps(["E", "W"])), (PADDING, json.dumps({"E": 1}))],
    "empty": [(TRAINABLE, "[]")],
    "bad-json": [(TRAINABLE, '["E", "W"')],
    "not-list": [(TRAINABLE, '{"E": true}')],
    "not-string": [(TRAINABLE, '["E", 7]')],
    "unknown-name": [(TRAINABLE, '["E", "decoder.weight"]')],
    "int-initializer": [(TRAINABLE, '["E", "shape"]')],
    "twice": [(TRAINABLE, '["E"]'), (TRAINABLE, '["W"]')],
    "pad-bad-json": [(PADDING, "{\"E\": 1")],
    "pad-not-object": [(PADDING, "[1]")],
    "pad-negative": [(PADDING, '{"E": -1}')],
    "pad-not-integer": [(PADDING, '{"E": 1.5}')],
    "pad-out-of-range": [(PADDING, '{"E": 5}')],
    "pad-unknown-name": [(PADDING, '{"emb.weight": 1}')],
    "pad-not-gathered": [(PADDING, '{"W": 0}')],
    # Deep nesting would overflow the JSON parser's stack; brackets in names do not count.
    "deep": [(TRAINABLE, "[" * 200000)],
    "pad-deep": [(PADDING, '{"a": ' * 100000)],
    "brackets-in-name": [(TRAINABLE, json.dumps(["E", "[[[[[[[[[[{{{{{{{{{{"]))],
}


def model(props):
    inits = [
        helper.make_tensor("E", TensorProto.FLOAT, [5, 3], [float(i) for i in range(15)]),
        helper.make_tensor("W", TensorProto.FLOAT, [6, 4], [0.1 * i for i in range(24)]),
        helper.make_tensor("B", TensorProto.FLOAT, [4], [1.0, 2.0, 3.0, 4.0]),
        helper.make_tensor("shape", TensorProto.INT64, [2], [-1, 6]),
    ]
    nodes = [
        helper.make_node("Gather", ["E", "ids"], ["e"], name="/emb/Gather"),
        helper.make_node("Reshape", ["e", "shape"], ["flat"], name="/Reshape"),
        helper.make_node("MatMul", ["flat", "W"], ["h"], name="/fc/MatMul"),
        helper.make_node("Add", ["h", "B"], ["y"], name="/Add"),
    ]
    graph = helper.make_graph(
        nodes, "embed",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["N", 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    for key, value in props:
        m.metadata_props.add(key=key, value=value)
    return m


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, props in CASES.items():
        save(model(props), os.path.join(out, name + ".onnx"))


if __name__ == "__main__":
    main()
