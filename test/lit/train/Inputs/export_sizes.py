"""Sizes of a trainer and its build folder against its parameter bytes.

  make OUT.onnx SMALL.onnx DATA
                       an MLP 64-1024-1024-10 (1.1 M float parameters, 4.5 MB),
                       the same net 64-8-8-10 (the code without the data),
                       opset 17, and DATA/{x,label}.npy
  check MODEL PROG SMALLPROG
                       the binary PROG must hold the parameter bytes once: at
                       most the parameter bytes plus the size of SMALLPROG
                       (the trainer of SMALL.onnx, built the same way) plus
                       1 MiB; PROG.build/ at most the parameter bytes plus 1 MiB
                       (the parameter blob the source embeds, and no second
                       copy for --export)
  same EXPORT PARAMS   every initializer of the export equals --save-params,
                       bit for bit
"""

import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

MIB = 1 << 20


def make(out, small, data):
    write_mlp(out, 1024)
    write_mlp(small, 8)
    rng = np.random.default_rng(1)
    os.makedirs(data, exist_ok=True)
    x = rng.normal(size=(16, 64)).astype(np.float32)
    np.save(os.path.join(data, "x.npy"), x)
    np.save(os.path.join(data, "label.npy"), (np.arange(16) % 10).astype(np.int64))


def write_mlp(out, width):
    rng = np.random.default_rng(0)
    sizes = [64, width, width, 10]
    inits, nodes, last = [], [], "x"
    for i in range(3):
        w = (rng.normal(size=(sizes[i], sizes[i + 1])) / np.sqrt(sizes[i])).astype(np.float32)
        b = np.zeros(sizes[i + 1], np.float32)
        inits += [numpy_helper.from_array(w, "w%d" % i), numpy_helper.from_array(b, "b%d" % i)]
        nodes.append(helper.make_node("Gemm", [last, "w%d" % i, "b%d" % i], ["g%d" % i],
                                      name="fc%d" % i))
        last = "g%d" % i
        if i < 2:
            nodes.append(helper.make_node("Relu", [last], ["r%d" % i], name="relu%d" % i))
            last = "r%d" % i
    nodes[-1].output[0] = "logits"
    graph = helper.make_graph(
        nodes, "wide_mlp", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["N", 64])],
        [helper.make_tensor_value_info("logits", onnx.TensorProto.FLOAT, ["N", 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, out)


def check(model_path, prog, small_prog):
    params = sum(numpy_helper.to_array(t).nbytes for t in onnx.load(model_path).graph.initializer)
    binary = os.path.getsize(prog)
    code = os.path.getsize(small_prog)
    build = prog + ".build"
    files = {f: os.path.getsize(os.path.join(build, f)) for f in sorted(os.listdir(build))}
    folder = sum(files.values())
    print("parameters %d bytes" % params)
    print("binary %d bytes (a trainer with 682 parameters: %d): %s" %
          (binary, code, "within parameters + that + 1 MiB" if binary <= params + code + MIB
           else "MORE THAN parameters + that + 1 MiB"))
    print("build folder %d bytes: %s" % (folder, "within parameters + 1 MiB"
                                         if folder <= params + MIB else
                                         "MORE THAN parameters + 1 MiB"))
    for name, size in files.items():
        print("  %s %d" % (name, size))


def same(exported, params):
    model = onnx.load(exported)
    bad = [t.name for t in model.graph.initializer
           if numpy_helper.to_array(t).tobytes() !=
           np.load(os.path.join(params, t.name + ".npy")).tobytes()]
    print("export equals --save-params: %s" % ("yes" if not bad else "no: " + ", ".join(bad)))


if __name__ == "__main__":
    {"make": make, "check": check, "same": same}[sys.argv[1]](*sys.argv[2:])
