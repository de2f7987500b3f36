#!/usr/bin/env python3
"""Writes malformed (and a few valid) binary ONNX models into OUTDIR.

usage: make_bad_models.py OUTDIR

TensorProtos are built field by field (not with numpy_helper) so that their
data can disagree with their shape. Every model has the same tiny graph,
Y = Add(X, W) with X a float[2, 3] input, unless noted; W is the initializer
under test. The layout of OUTDIR:

  OUTDIR/secret.bin            24 bytes outside the model folder
  OUTDIR/m/*.onnx              the models
  OUTDIR/m/weights.bin         24 bytes of external data (6 floats)
  OUTDIR/m/link.bin            symlink to OUTDIR/secret.bin (leaves m/)
  OUTDIR/m/inner_link.bin      symlink to weights.bin (stays inside m/)
"""

import hashlib
import os
import struct
import sys

import onnx
from onnx import TensorProto, helper

FLOATS = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]


def model_with(init, x_dims=(2, 3), op="Add", extra_nodes=(), opset=17):
    """Y = op(X, W) where W is `init`."""
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, list(x_dims))
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)
    nodes = list(extra_nodes) + [helper.make_node(op, ["X", init.name], ["Y"], name="add")]
    graph = helper.make_graph(nodes, "g", [x], [y], initializer=[init])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="make_bad_models")
    model.ir_version = 8
    return model


def tensor(name, data_type, dims):
    t = TensorProto()
    t.name = name
    t.data_type = data_type
    t.dims.extend(dims)
    return t


def external(t, location, offset=None, length=None):
    t.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", offset), ("length", length)):
        if value is not None:
            entry = t.external_data.add()
            entry.key = key
            entry.value = str(value)
    return t


def save(model, path):
    with open(path, "wb") as f:
        f.write(model.SerializeToString())


def main():
    out = sys.argv[1]
    mdir = os.path.join(out, "m")
    os.makedirs(mdir, exist_ok=True)
    raw = struct.pack("<6f", *FLOATS)
    with open(os.path.join(out, "secret.bin"), "wb") as f:
        f.write(raw)
    with open(os.path.join(mdir, "weights.bin"), "wb") as f:
        f.write(raw)
    for name, target in (("link.bin", os.path.join(os.path.abspath(out), "secret.bin")),
                         ("inner_link.bin", "weights.bin")):
        path = os.path.join(mdir, name)
        if os.path.lexists(path):
            os.remove(path)
        os.symlink(target, path)

    def emit(name, model):
        save(model, os.path.join(mdir, name))

    # A valid model with inline float_data: the positive control of the
    # inline cases, and the source of the truncated file.
    t = tensor("W", TensorProto.FLOAT, [2, 3])
    t.float_data.extend(FLOATS)
    good = model_with(t)
    emit("good.onnx", good)

    # raw_data shorter than the shape needs: 2x3 f32 needs 24 bytes, has 8.
    t = tensor("W", TensorProto.FLOAT, [2, 3])
    t.raw_data = raw[:8]
    emit("raw_short.onnx", model_with(t))

    # float_data with 5 values for a 2x3 shape.
    t = tensor("W", TensorProto.FLOAT, [2, 3])
    t.float_data.extend(FLOATS[:5])
    emit("float_count.onnx", model_with(t))

    # int64_data with 7 values for a [6] shape (an integer constant).
    t = tensor("W", TensorProto.INT64, [6])
    t.int64_data.extend(range(7))
    emit("int64_count.onnx", model_with(t))

    # A negative dimension.
    t = tensor("W", TensorProto.FLOAT, [2, -3])
    t.raw_data = raw
    emit("negative_dim.onnx", model_with(t))

    # 2^40 elements (2^20 x 2^20), with 24 bytes of data.
    t = tensor("W", TensorProto.FLOAT, [1 << 20, 1 << 20])
    t.raw_data = raw
    emit("huge_dim.onnx", model_with(t))

    # Dimensions whose product overflows int64 (2^62 * 4).
    t = tensor("W", TensorProto.FLOAT, [1 << 62, 4])
    t.raw_data = raw
    emit("overflow_dim.onnx", model_with(t))

    # Exactly 2^31 elements (the largest count accepted) with only 4 bytes
    # of raw_data: must be refused for its data, without allocating 8 GiB.
    t = tensor("W", TensorProto.FLOAT, [1 << 31])
    t.raw_data = raw[:4]
    emit("max_dim_short_raw.onnx", model_with(t))

    # Unsupported element types.
    t = tensor("W", TensorProto.UINT8, [2, 3])
    t.raw_data = bytes(range(6))
    emit("uint8.onnx", model_with(t))
    t = tensor("W", TensorProto.STRING, [2])
    t.string_data.extend([b"a", b"b"])
    emit("string.onnx", model_with(t))
    t = tensor("W", 1234, [2, 3])
    t.raw_data = raw
    emit("bad_type.onnx", model_with(t))

    # External data that tries to leave the model's folder.
    emit("ext_dotdot.onnx", model_with(external(tensor("W", TensorProto.FLOAT, [2, 3]),
                                                "../secret.bin")))
    emit("ext_dotdot_inner.onnx", model_with(external(tensor("W", TensorProto.FLOAT, [2, 3]),
                                                      "sub/../../secret.bin")))
    emit("ext_abs.onnx", model_with(external(tensor("W", TensorProto.FLOAT, [2, 3]),
                                             "/etc/passwd")))
    emit("ext_symlink.onnx", model_with(external(tensor("W", TensorProto.FLOAT, [2, 3]),
                                                 "link.bin")))
    emit("ext_missing.onnx", model_with(external(tensor("W", TensorProto.FLOAT, [2, 3]),
                                                 "nothere.bin")))
    # Past the end of the 24-byte file: by offset, and by offset + length.
    emit("ext_offset.onnx", model_with(external(tensor("W", TensorProto.FLOAT, [2, 3]),
                                                "weights.bin", offset=100)))
    emit("ext_offset_length.onnx",
         model_with(external(tensor("W", TensorProto.FLOAT, [2, 3]),
                             "weights.bin", offset=8, length=24)))
    # A length that is not what the shape needs.
    emit("ext_length.onnx", model_with(external(tensor("W", TensorProto.FLOAT, [2, 3]),
                                                "weights.bin", offset=0, length=48)))
    # An offset that is not a number.
    emit("ext_bad_offset.onnx", model_with(external(tensor("W", TensorProto.FLOAT, [2, 3]),
                                                    "weights.bin", offset="-8")))

    # Valid external data: whole file, with explicit offset/length, and
    # through a symlink that stays inside the folder.
    emit("ext_ok.onnx", model_with(external(tensor("W", TensorProto.FLOAT, [2, 3]),
                                            "weights.bin")))
    emit("ext_ok_offset.onnx", model_with(external(tensor("W", TensorProto.FLOAT, [1, 3]),
                                                   "weights.bin", offset=12, length=12)))
    emit("ext_ok_inner_link.onnx",
         model_with(external(tensor("W", TensorProto.FLOAT, [2, 3]), "inner_link.bin")))

    # External data in the tensor of a Constant node of a model read from a
    # file (ONNX allows external data in attribute tensors too).
    c = external(tensor("", TensorProto.FLOAT, [2, 3]), "weights.bin")
    const = helper.make_node("Constant", [], ["W"], name="const_w", value=c)
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)
    graph = helper.make_graph([const, helper.make_node("Add", ["X", "W"], ["Y"], name="add")],
                              "g", [x], [y])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    emit("const_external.onnx", m)

    # A Relu node whose only input is absent (empty name).
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)
    graph = helper.make_graph([helper.make_node("Relu", [""], ["Y"], name="relu_nothing")],
                              "g", [x], [y])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    emit("absent_input.onnx", m)

    # A Where whose condition is absent while both values are constants.
    c = tensor("c", TensorProto.INT64, [2, 3])
    c.int64_data.extend(range(6))
    yi = helper.make_tensor_value_info("Y", TensorProto.INT64, None)
    graph = helper.make_graph([helper.make_node("Where", ["", "c", "c"], ["Y"], name="where_nothing")],
                              "g", [x], [yi], initializer=[c])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    emit("absent_condition.onnx", m)

    # Transpose with an empty 'perm' (not a permutation of the 2 axes), on a
    # constant and on a run-time input.
    for name, source in (("transpose_empty_perm_const.onnx", "c"),
                         ("transpose_empty_perm.onnx", "X")):
        node = helper.make_node("Transpose", [source], ["Y"], name="transpose_empty")
        perm = node.attribute.add()
        perm.name = "perm"
        perm.type = onnx.AttributeProto.INTS
        out = yi if source == "c" else y
        graph = helper.make_graph([node], "g", [x], [out], initializer=[c])
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        emit(name, m)

    # The first half of a valid model's bytes, and deterministic pseudo-random garbage.
    data = good.SerializeToString()
    with open(os.path.join(mdir, "truncated.onnx"), "wb") as f:
        f.write(data[: len(data) // 2])
    with open(os.path.join(mdir, "garbage.onnx"), "wb") as f:
        # 1024 pseudo-random bytes, the same on every run.
        block = b"trainc"
        for _ in range(16):
            block = hashlib.sha256(block).digest()
            f.write(block + hashlib.sha256(block + b"!").digest())
    with open(os.path.join(mdir, "empty.onnx"), "wb") as f:
        pass


if __name__ == "__main__":
    main()
