#!/usr/bin/env python3
"""A model whose names try to inject code into the generated program.

usage: hostile_names.py make DIR        model, data and expected output in DIR
       hostile_names.py check-source SRC
                                        no line of SRC is code that came from a name
       hostile_names.py check-output DIR
                                        DIR/out/y.npy is the expected output
       hostile_names.py paths DIR TRAINC
                                        compile DIR/model.onnx from a model file and
                                        to a program whose paths hold hostile bytes,
                                        and run the program's --info

The model is y = Relu(x * w) + c with c from a Constant node. x, y, w and the
label name .npy files, so their names are plain; every node name, every
intermediate value name, the graph name, the producer and the doc strings are
hostile: newlines and carriage returns followed by code (a global `int`, a
static initializer calling system()), quotes, backslashes, `*/`, `??/`, a
trailing backslash, every byte 1..255, and a 10,000-character name.
"""

import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# A placeholder of the same length is replaced with these bytes in the
# serialized model (protobuf's Python API takes only valid UTF-8 strings).
BINARY = bytes(range(1, 256))
PLACEHOLDER = b"~" * len(BINARY)


def hostile(dir):
    pwned = os.path.join(dir, "pwned")
    return [
        "\nint injected_marker = 1;\n",
        '\r\nstatic int pwn_marker = system("touch ' + pwned + '");\n',
        '"; int quote_marker = 1; //\\',
        "*/ int comment_marker = 1; /* ??/\nint trigraph_marker = 1;",
        "trailing backslash\\",
        "L" * 9978 + "\nint long_marker = 1;\n",  # 10,000 bytes
    ]


def make(dir):
    names = hostile(dir)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])
    w = numpy_helper.from_array(np.array([1.0, -2.0, 3.0, -4.0], np.float32), "w")
    c = numpy_helper.from_array(np.array([0.5, 0.25, -0.5, 1.0], np.float32))
    v = ["value" + n for n in names]
    binary = PLACEHOLDER.decode()
    nodes = [
        helper.make_node("Constant", [], [v[0]], value=c, name="\nint const_marker = 1;"),
        helper.make_node("Mul", ["x", "w"], [v[1]], name=names[1]),
        helper.make_node("Relu", [v[1]], [v[2]], name=names[2]),
        helper.make_node("Neg", [v[2]], [v[3]], name=names[3]),
        helper.make_node("Neg", [v[3]], [binary], name=names[4]),
        helper.make_node("Neg", [binary], [v[4]], name=binary),
        helper.make_node("Neg", [v[4]], [v[5]], name=names[5]),
        helper.make_node("Add", [v[5], v[0]], ["y"], name=names[0]),
    ]
    graph = helper.make_graph(nodes, "\nint graph_marker = 1;\n", [x], [y],
                              initializer=[w], doc_string="\nint doc_marker = 1;")
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="\nint producer_marker = 1;")
    model.ir_version = 8
    data = model.SerializeToString()
    assert data.count(PLACEHOLDER) == 3, data.count(PLACEHOLDER)
    with open(os.path.join(dir, "model.onnx"), "wb") as f:
        f.write(data.replace(PLACEHOLDER, BINARY))

    rng = np.random.default_rng(0)
    xs = rng.standard_normal((6, 4)).astype(np.float32)
    os.makedirs(os.path.join(dir, "data"), exist_ok=True)
    np.save(os.path.join(dir, "data", "x.npy"), xs)
    np.save(os.path.join(dir, "data", "label.npy"), np.zeros((6, 4), np.float32))
    wv = numpy_helper.to_array(w)
    np.save(os.path.join(dir, "expected.npy"),
            np.maximum(xs * wv, 0) + numpy_helper.to_array(c))


def code_of(line):
    """The line's code: its string literals' contents (data, escaped by
    cStringLiteral) and its comment taken out."""
    code, i, quoted = [], 0, False
    while i < len(line):
        c = line[i]
        if quoted:
            if c == "\\":
                i += 1
            elif c == '"':
                quoted = False
                code.append(c)
        elif c == '"' and not (i > 0 and line[i - 1] == "'"):
            quoted = True
            code.append(c)
        elif line.startswith("//", i):
            break
        else:
            code.append(c)
        i += 1
    return "".join(code)


def check_source(path):
    text = open(path, "rb").read().decode("ascii")  # non-ASCII must be escaped
    bad = 0
    for number, line in enumerate(text.split("\n"), 1):
        code = code_of(line)
        if "marker" in code or "system(" in code:
            print(f"{path}:{number}: code from a name: {line[:120]}")
            bad += 1
        if line.endswith("\\"):
            print(f"{path}:{number}: line continues: {line[:120]}")
            bad += 1
        if "??" in line:
            print(f"{path}:{number}: trigraph: {line[:120]}")
            bad += 1
    if "\r" in text:
        print(f"{path}: carriage return")
        bad += 1
    if bad:
        sys.exit(1)
    print("source: no code from names")


def check_output(dir):
    got = np.load(os.path.join(dir, "out", "y.npy"))
    want = np.load(os.path.join(dir, "expected.npy"))
    if got.shape != want.shape or not np.allclose(got, want, rtol=1e-6, atol=1e-6):
        sys.exit(f"y differs:\n{got}\n{want}")
    if os.path.exists(os.path.join(dir, "pwned")):
        sys.exit("a name ran system()")
    print(f"output: {got.shape[0]} samples match")


def paths(dir, trainc):
    # Bytes that break a C string, an assembler string or a comment (a file
    # name holds no '/', so ??= and ??( stand for the trigraphs).
    odd = 'q"\\ ??= ??( \n\t\xe9\\'
    folder = os.path.join(dir, "paths")
    os.makedirs(folder, exist_ok=True)
    model = os.path.join(folder, "model " + odd + ".onnx")
    prog = os.path.join(folder, "prog " + odd)
    with open(os.path.join(dir, "model.onnx"), "rb") as src, open(model, "wb") as dst:
        dst.write(src.read())
    run = subprocess.run([trainc, "compile", model, "--batch-size=2", "--target=cpu",
                          "-o", prog], capture_output=True, text=True)
    sys.stdout.write(run.stderr)
    if run.returncode != 0:
        sys.exit(f"compile failed ({run.returncode})")
    info = subprocess.run([prog, "--info"], capture_output=True)
    if info.returncode != 0:
        sys.exit(f"--info failed ({info.returncode})")
    if not info.stdout.startswith(b"model: " + os.path.basename(model).encode() + b"\n"):
        sys.exit(f"--info names the model {info.stdout[:100]!r}")
    print("paths: compiled and ran")


if __name__ == "__main__":
    command = sys.argv[1]
    if command == "make":
        make(sys.argv[2])
    elif command == "check-source":
        check_source(sys.argv[2])
    elif command == "check-output":
        check_output(sys.argv[2])
    elif command == "paths":
        paths(sys.argv[2], sys.argv[3])
