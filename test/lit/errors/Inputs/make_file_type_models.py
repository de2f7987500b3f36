#!/usr/bin/env python3
"""Writes models whose files or tensors the importer must refuse without
blocking: FIFOs as the model or its external data, and tensors with more than
one value field.

usage: make_file_type_models.py OUTDIR

  OUTDIR/model.fifo            a FIFO named like a model
  OUTDIR/m/w.fifo              a FIFO as external data
  OUTDIR/m/weights.bin         24 bytes (6 floats) of external data
  OUTDIR/m/ext_fifo.onnx       W's external data is w.fifo
  OUTDIR/m/ext_ok.onnx         W's external data is weights.bin (valid)
  OUTDIR/m/ext_and_raw.onnx    W has external data and raw_data
  OUTDIR/m/raw_and_float.onnx  W has raw_data and float_data (same values)
  OUTDIR/m/float_in_int64.onnx a float W with its values in int64_data
The graph is Y = Add(X, W), X float[2, 3] (make_bad_models.py's).
"""

import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_bad_models import FLOATS, external, model_with, save, tensor  # noqa: E402
from onnx import TensorProto  # noqa: E402


def main():
    out = sys.argv[1]
    mdir = os.path.join(out, "m")
    os.makedirs(mdir, exist_ok=True)
    os.mkfifo(os.path.join(out, "model.fifo"))
    os.mkfifo(os.path.join(mdir, "w.fifo"))
    raw = struct.pack("<6f", *FLOATS)
    with open(os.path.join(mdir, "weights.bin"), "wb") as f:
        f.write(raw)

    def w():
        return tensor("W", TensorProto.FLOAT, [2, 3])

    save(model_with(external(w(), "w.fifo")), os.path.join(mdir, "ext_fifo.onnx"))
    save(model_with(external(w(), "weights.bin")), os.path.join(mdir, "ext_ok.onnx"))
    t = external(w(), "weights.bin")
    t.raw_data = raw
    save(model_with(t), os.path.join(mdir, "ext_and_raw.onnx"))
    t = w()
    t.raw_data = raw
    t.float_data.extend(FLOATS)
    save(model_with(t), os.path.join(mdir, "raw_and_float.onnx"))
    t = w()
    t.int64_data.extend(int(v) for v in FLOATS)
    save(model_with(t), os.path.join(mdir, "float_in_int64.onnx"))


if __name__ == "__main__":
    main()
