#!/usr/bin/python3
"""Compile time and peak memory of trainc against the size of the graph.

Usage: bench/compile_time.py [--trainc PATH] [--sizes 1000,3000]
                             [--concat N] [--train-size N] [--emit both|binary|source]
                             [--lock FILE] [--keep DIR]

Builds ONNX models that stress the compiler rather than the program:
  * chain N   N pointwise ops in one line on a [64, 256] float input,
              cycling Add, Mul, Relu, Tanh (Add and Mul take their own [256]
              initializer each, so the chain has N/2 parameters);
  * concat N  one Concat of N operands (each a Mul of the [64, 8] input by
              its own [8] initializer: N + 1 ops) along axis 1;
  * train N   the chain of N ops compiled as a trainer: --loss=mse
              --optimizer=sgd (forward, backward and the update).
and runs `trainc compile MODEL --target=cpu` on each, twice: --emit=source
(trainc alone, up to the generated C++) and --emit=binary (the whole compile,
building the generated C++ with the host compiler included; --emit chooses
one). Prints wall seconds and the peak resident memory of the largest process of
the compile (trainc itself or the C++ compiler it runs: the maximum RSS
that wait4 reports for the process and the children it waited for), with
the ONNX op count. A quick run: --sizes 1000 --concat 0 --train-size 0.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

from benchlib import held
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OPSET = 17


def chain_model(n):
    """N pointwise ops in a line: Add(x, b_i), Mul(x, s_i), Relu, Tanh, ..."""
    rng = np.random.RandomState(0)
    nodes, inits, prev = [], [], "X"
    for i in range(n):
        op = ("Add", "Mul", "Relu", "Tanh")[i % 4]
        out = "Y" if i == n - 1 else "t%d" % i
        inputs = [prev]
        if op in ("Add", "Mul"):
            name = "p%d" % i
            value = (rng.uniform(-0.1, 0.1, 256) if op == "Add"
                     else rng.uniform(0.9, 1.1, 256)).astype(np.float32)
            inits.append(numpy_helper.from_array(value, name))
            inputs.append(name)
        nodes.append(helper.make_node(op, inputs, [out], name="%s_%d" % (op.lower(), i)))
        prev = out
    graph = helper.make_graph(
        nodes, "chain%d" % n,
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [64, 256])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [64, 256])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])


def concat_model(n):
    """One Concat of N operands, each the [64, 8] input scaled by its own [8] vector."""
    rng = np.random.RandomState(0)
    nodes, inits, parts = [], [], []
    for i in range(n):
        name = "s%d" % i
        inits.append(numpy_helper.from_array(rng.uniform(0.5, 1.5, 8).astype(np.float32), name))
        parts.append("m%d" % i)
        nodes.append(helper.make_node("Mul", ["X", name], [parts[-1]], name="mul_%d" % i))
    nodes.append(helper.make_node("Concat", parts, ["Y"], name="concat", axis=1))
    graph = helper.make_graph(
        nodes, "concat%d" % n,
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [64, 8])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [64, 8 * n])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])


def measure(cmd):
    """(wall seconds, peak RSS in MiB, exit status, stderr tail) of one compile."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        err.seek(0)
        tail = err.read().decode(errors="replace").strip().splitlines()[-3:]
    return wall, usage.ru_maxrss / 1024.0, proc.returncode, tail


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trainc", default=os.path.join(ROOT, "build", "bin", "trainc"))
    parser.add_argument("--sizes", default="1000,3000",
                        help="chain lengths, comma separated (e.g. 1000,3000,10000)")
    parser.add_argument("--concat", type=int, default=4000,
                        help="operands of the Concat model (0: skip it)")
    parser.add_argument("--train-size", type=int, default=1000,
                        help="chain length of the training compile (0: skip it)")
    parser.add_argument("--emit", default="both", choices=["both", "binary", "source"],
                        help="binary: the whole compile, C++ build included; "
                             "source: trainc alone, up to the generated C++; both (default)")
    parser.add_argument("--lock", help="hold this file's flock during each compile "
                        "(e.g. the build lock, so that no build shares the cores)")
    parser.add_argument("--keep", help="write the models and outputs here (kept)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    cases = [("chain", n, chain_model, []) for n in sizes]
    if args.concat:
        cases.append(("concat", args.concat, concat_model, []))
    if args.train_size:
        cases.append(("train chain", args.train_size, chain_model,
                      ["--loss=mse", "--optimizer=sgd"]))
    work = args.keep or tempfile.mkdtemp(prefix="trainc-compile-time-")
    os.makedirs(work, exist_ok=True)
    emits = ["source", "binary"] if args.emit == "both" else [args.emit]
    print("trainc: %s (--target=cpu; source: trainc alone, up to the generated C++; "
          "binary: the whole compile, the C++ build included)" % args.trainc)
    print("%-12s %6s %6s" % ("model", "N", "ops")
          + "".join(" %10s %9s" % (e + " s", "MiB") for e in emits) + "  status")
    failed = False
    try:
        for kind, n, build, extra in cases:
            model = build(n)
            path = os.path.join(work, "%s%d.onnx" % (kind.split()[0], n))
            onnx.save(model, path)
            row, problems = "%-12s %6d %6d" % (kind, n, len(model.graph.node)), []
            for emit in emits:
                out = os.path.join(work, "%s%d.%s" % (kind.replace(" ", "_"), n,
                                                      "bin" if emit == "binary" else "cpp"))
                cmd = [args.trainc, "compile", path, "--target=cpu", "--emit=" + emit,
                       "-o", out] + extra
                with held(args.lock):
                    wall, rss, rc, tail = measure(cmd)
                row += " %10.2f %9.1f" % (wall, rss)
                if rc:
                    problems.append("%s FAILED (exit %d): %s" % (emit, rc, " | ".join(tail)))
            failed |= bool(problems)
            print(row + "  " + ("; ".join(problems) or "ok"), flush=True)
    finally:
        if not args.keep:
            subprocess.run(["rm", "-rf", work])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
