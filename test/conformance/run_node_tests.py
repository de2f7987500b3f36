#!/usr/bin/env python3
"""Forward conformance: the ONNX backend node tests on the CPU target.

Usage: run_node_tests.py TRAINC WORKDIR [--filter REGEX] [--jobs N]
Run it with a Python whose `onnx` package ships the backend test data (the
PyPI onnx, pinned by scripts/conformance-venv.sh); Debian's onnx 1.12 does not
match trainc's opset range.

Every node test whose ops trainc imports (per `trainc check`), whose opset is
13 to 21 and whose tensors have element types the code generator supports is
compiled for the CPU target, run once on its inputs (`PROG --run`), and its
outputs compared with the expected ones within rtol 1e-3 / atol 1e-5. A test
listed in excluded.txt (with its reason) may fail; any other failure fails the
run. A listed test that passes is reported, so the list stays honest.
Inputs that a static-shape compiler must know when it compiles (Reshape's
shape, Slice's starts, Clip's bounds, axes, ...) are fed by many node tests as
graph inputs; the runner binds those from the test data as initializers.

Many node tests were generated at the opset where their op last changed (Conv
at 11, say). Such a model runs at opset 13 when every op it uses has the same
schema version at 13 as at its own opset: same version, same semantics.
extra_tests.py adds tests the suite lacks (recurrent ops with sequence_lens,
peepholes and clip, ...), written into WORKDIR/extra-tests with ONNX
Runtime's outputs as the expected ones, and run the same way.
Prints one line per test and a closing 'N passed, N failed, N skipped'.
"""

import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import extra_tests  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SUPPORTED_DTYPES = {np.dtype(t) for t in ("float32", "float64", "int64", "int32", "bool")}
RTOL, ATOL = 1e-3, 1e-5


def read_excluded():
    excluded = {}
    with open(os.path.join(HERE, "excluded.txt")) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, _, reason = line.partition(" ")
            excluded[name] = reason.strip()
    return excluded


def load_tensors(folder, prefix):
    out = []
    i = 0
    while os.path.exists(os.path.join(folder, "%s_%d.pb" % (prefix, i))):
        t = onnx.TensorProto()
        with open(os.path.join(folder, "%s_%d.pb" % (prefix, i)), "rb") as f:
            t.ParseFromString(f.read())
        out.append(numpy_helper.to_array(t))
        i += 1
    return out


# Inputs that carry shapes, axes or bounds rather than data, by op type.
COMPILE_TIME_INPUTS = {
    "Reshape": {1}, "Expand": {1}, "Unsqueeze": {1}, "Squeeze": {1}, "Split": {1},
    "Slice": {1, 2, 3, 4}, "Pad": {1, 2, 3}, "ConstantOfShape": {0}, "Range": {0, 1, 2},
    "Clip": {1, 2}, "Dropout": {1, 2}, "ReduceSum": {1}, "ReduceMean": {1},
    "ReduceMax": {1}, "Tile": {1}, "TopK": {1}, "CumSum": {1}, "Trilu": {1},
    "ReduceL1": {1}, "ReduceL2": {1}, "ReduceSumSquare": {1}, "ReduceLogSum": {1},
    "ReduceLogSumExp": {1}, "ReduceMin": {1}, "OneHot": {1, 2}, "Resize": {1, 2, 3},
    "ReduceProd": {1},
}
SUPPORTED_ONNX_TYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.INT64,
                        onnx.TensorProto.INT32, onnx.TensorProto.BOOL}


def compile_time_inputs(model):
    names = set()
    for node in model.graph.node:
        for i in COMPILE_TIME_INPUTS.get(node.op_type, ()):
            if i < len(node.input) and node.input[i]:
                names.add(node.input[i])
    return names


def unsupported_type(model):
    """The first element type in the model's signature or casts that the code
    generator does not support, or None."""
    for v in list(model.graph.input) + list(model.graph.output):
        t = v.type.tensor_type.elem_type
        if v.type.HasField("tensor_type") and t not in SUPPORTED_ONNX_TYPES:
            return onnx.TensorProto.DataType.Name(t)
    for node in model.graph.node:
        for a in node.attribute:
            if node.op_type == "Cast" and a.name == "to" and a.i not in SUPPORTED_ONNX_TYPES:
                return onnx.TensorProto.DataType.Name(a.i)
    return None


def default_opset(model):
    return max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
               default=0)


def same_at_13(model, opset):
    """Whether every op of the model has the same schema at opset 13."""
    for node in model.graph.node:
        try:
            old = onnx.defs.get_schema(node.op_type, opset, node.domain).since_version
            new = onnx.defs.get_schema(node.op_type, 13, node.domain).since_version
        except Exception:  # not defined at one of the two opsets
            return False
        if old != new:
            return False
    return True


def model_path(test_dir, work):
    """The model to compile: the test's own, lifted to opset 13 if older, with
    its compile-time inputs bound as initializers from the test data."""
    path = os.path.join(test_dir, "model.onnx")
    model = onnx.load(path)
    changed = False
    if default_opset(model) < 13:
        for o in model.opset_import:
            if o.domain in ("", "ai.onnx"):
                o.version = 13
        changed = True
    bound = compile_time_inputs(model)
    inputs = data_inputs(model)
    values = load_tensors(os.path.join(test_dir, "test_data_set_0"), "input")
    for name, value in zip(inputs, values):
        if name in bound:
            model.graph.initializer.append(numpy_helper.from_array(value, name))
            changed = True
    if not changed:
        return path
    out = os.path.join(work, os.path.basename(test_dir) + ".onnx")
    onnx.save(model, out)
    return out


def data_inputs(model):
    initializers = {i.name for i in model.graph.initializer}
    return [i.name for i in model.graph.input if i.name not in initializers]


def classify(trainc, test_dir, work):
    """None if the test is in scope, else the reason it is skipped."""
    model = onnx.load(os.path.join(test_dir, "model.onnx"))
    opset = default_opset(model)
    if opset > 21 or (opset < 13 and not same_at_13(model, opset)):
        return "opset %d (ops differ at 13..21)" % opset
    # A Loop unrolls at import; If and Scan are not supported.
    if any(n.op_type in ("If", "Scan") for n in model.graph.node):
        return "control flow"
    bad = unsupported_type(model)
    if bad:
        return "element type %s" % bad
    data = os.path.join(test_dir, "test_data_set_0")
    try:
        arrays = load_tensors(data, "input") + load_tensors(data, "output")
    except Exception:  # sequences, optionals, maps are not TensorProtos
        return "inputs or outputs are not plain tensors"
    for array in arrays:
        if not isinstance(array, np.ndarray) or array.dtype not in SUPPORTED_DTYPES:
            return "element type %s" % getattr(array, "dtype", type(array).__name__)
    check = subprocess.run([trainc, "check", model_path(test_dir, work)],
                           capture_output=True, text=True)
    if check.returncode != 0:
        return "op not supported"
    return None


def run_test(trainc, test_dir, work):
    """Returns (ok, message)."""
    name = os.path.basename(test_dir)
    model = onnx.load(os.path.join(test_dir, "model.onnx"))
    folder = os.path.join(work, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(os.path.join(folder, "in"))
    inputs = data_inputs(model)
    bound = compile_time_inputs(model)
    data = os.path.join(test_dir, "test_data_set_0")
    arrays = load_tensors(data, "input")
    if len(arrays) != len(inputs):
        return False, "has %d input files for %d inputs" % (len(arrays), len(inputs))
    for n, a in zip(inputs, arrays):
        if n not in bound:
            np.save(os.path.join(folder, "in", n + ".npy"), a)
    prog = os.path.join(folder, "prog")
    build = subprocess.run([trainc, "compile", model_path(test_dir, work),
                            "--target=cpu", "-o", prog], capture_output=True, text=True)
    if build.returncode != 0:
        return False, "compile: " + build.stderr.strip().splitlines()[0][:300]
    run = subprocess.run([prog, "--run", "--data", os.path.join(folder, "in"),
                          "--out", os.path.join(folder, "out")],
                         capture_output=True, text=True, timeout=120)
    if run.returncode != 0:
        return False, "run: " + run.stderr.strip()[:300]
    for out, want in zip(model.graph.output, load_tensors(data, "output")):
        got = np.load(os.path.join(folder, "out", out.name + ".npy"))
        if got.shape != want.shape:
            return False, "output %s has shape %s, expected %s" % (out.name, got.shape, want.shape)
        if got.dtype != want.dtype:
            return False, "output %s is %s, expected %s" % (out.name, got.dtype, want.dtype)
        if want.dtype == np.bool_ or np.issubdtype(want.dtype, np.integer):
            if not np.array_equal(got, want):
                return False, "output %s differs" % out.name
        elif not np.allclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True):
            return False, "output %s: max abs error %.3g" % (
                out.name, float(np.nanmax(np.abs(got.astype(np.float64) - want))))
    shutil.rmtree(folder, ignore_errors=True)
    return True, ""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("trainc")
    parser.add_argument("work")
    parser.add_argument("--filter", default="")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    root = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")
    excluded = read_excluded()
    os.makedirs(args.work, exist_ok=True)
    # The suite's tests, then extra_tests.py's (ONNX Runtime's outputs).
    dirs = {d: os.path.join(root, d) for d in os.listdir(root)}
    for folder in extra_tests.write_extra_tests(os.path.join(args.work, "extra-tests")):
        dirs[os.path.basename(folder)] = folder
    tests = sorted(d for d in dirs if re.search(args.filter, d))
    in_scope, skipped = [], {}
    for t in tests:
        reason = classify(args.trainc, dirs[t], args.work)
        if reason:
            skipped[reason] = skipped.get(reason, 0) + 1
        else:
            in_scope.append(t)
    os.makedirs(args.work, exist_ok=True)
    passed = failed = expected_failures = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {t: pool.submit(run_test, args.trainc, dirs[t], args.work)
                   for t in in_scope}
        for t in in_scope:
            try:
                ok, message = futures[t].result()
            except Exception as e:  # a crash or timeout of the harness itself
                ok, message = False, "harness: %s" % e
            if t in excluded:
                if ok:
                    print("UNEXPECTED PASS: conformance :: %s (excluded: %s) -- "
                          "remove it from excluded.txt" % (t, excluded[t]))
                    failed += 1
                else:
                    print("EXCLUDED: conformance :: %s (%s)" % (t, excluded[t]))
                    expected_failures += 1
            elif ok:
                print("PASS: conformance :: %s" % t)
                passed += 1
            else:
                print("FAIL: conformance :: %s: %s" % (t, message))
                failed += 1
    print("node tests: %d in scope of %d; skipped: %s" % (
        len(in_scope), len(tests),
        ", ".join("%d %s" % (n, r) for r, n in sorted(skipped.items()))))
    print("%d passed, %d failed, %d skipped" % (passed, failed,
                                                expected_failures + len(tests) - len(in_scope)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
