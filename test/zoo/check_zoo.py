#!/usr/bin/python3
"""Imports every model of the zoo with `trainc import` and checks the result.

Usage: check_zoo.py TRAINC ZOODIR

For every manifest entry, at the manifest's batch size and at batch 5 (for
models with a symbolic batch axis):
  * the import succeeds;
  * @forward returns the outputs the manifest lists (from PyTorch or numpy
    runs), in order, with the batch axis bound as asked;
  * ONNX ops that map one-to-one onto tc ops (Conv, Gemm, MatMul,
    BatchNormalization, ...) appear exactly as often in the IR;
  * no shape sub-graph survives: Shape/Range/ConstantOfShape leave no i64
    tc.constant behind, except as the indices of a gather.
Prints one line per check and a closing 'N passed, N failed'.
"""

import json
import os
import re
import subprocess
import sys

# ONNX op -> tc op, for ops that always stay one op (their data is run time).
ONE_TO_ONE = {
    "Conv": "tc.conv",
    "Gemm": "tc.gemm",
    "MatMul": "tc.matmul",
    "BatchNormalization": "tc.batch_norm",
    "LayerNormalization": "tc.layer_norm",
    "MaxPool": "tc.max_pool",
    "AveragePool": "tc.avg_pool",
    "GlobalAveragePool": "tc.global_avg_pool",
    "Softmax": "tc.softmax",
    "Erf": "tc.erf",
    "Gelu": "tc.gelu",
    "Relu": "tc.relu",
}

DTYPES = {"float32": "f32", "int64": "i64"}


def forward_results(ir):
    m = re.search(r"func\.func @forward\((.*?)\) -> \((.*?)\) \{", ir)
    if not m:
        m = re.search(r"func\.func @forward\((.*?)\) -> (tensor<[^ ]*>)", ir)
    results = re.findall(r'tensor<([^>]*)>(?: \{tc.output = "([^"]*)"\})?', m.group(2))
    return [(name, types) for types, name in results]


def tensor_type(shape, dtype):
    return "x".join(str(d) for d in shape) + ("x" if shape else "") + dtype


def main():
    trainc, zoo = sys.argv[1], sys.argv[2]
    manifest = json.load(open(os.path.join(zoo, "zoo.json")))
    passed = failed = 0

    def check(ok, what):
        nonlocal passed, failed
        print(("PASS" if ok else "FAIL") + ": zoo :: " + what)
        if ok:
            passed += 1
        else:
            failed += 1

    for entry in manifest:
        path = os.path.join(zoo, entry["file"])
        batches = [entry["batch_size"], 5] if entry["batch_size"] else [None]
        for batch in batches:
            tag = "%s (batch %s)" % (entry["file"], batch if batch else "static")
            cmd = [trainc, "import", path]
            if batch:
                cmd.append("--batch-size=%d" % batch)
            run = subprocess.run(cmd, capture_output=True, text=True)
            check(run.returncode == 0, tag + " imports" +
                  ("" if run.returncode == 0 else ": " + run.stderr.strip()[:500]))
            if run.returncode != 0:
                continue
            ir = run.stdout
            expected = []
            for name, shape in entry["outputs"].items():
                shape = list(shape)
                if batch:
                    shape[0] = batch
                expected.append((name, tensor_type(shape, "f32")))
            got = forward_results(ir)
            check(got == expected, tag + " outputs %s (got %s)" % (expected, got))
            for onnx_op, tc_op in ONE_TO_ONE.items():
                want = entry["onnx_op_counts"].get(onnx_op, 0)
                have = len(re.findall(r"= %s " % re.escape(tc_op), ir))
                if want or have:
                    check(want == have, tag + " %s x%d -> %s x%d" % (onnx_op, want, tc_op, have))
            shape_ops = sum(entry["onnx_op_counts"].get(op, 0)
                            for op in ("Shape", "Range", "ConstantOfShape"))
            if shape_ops:
                # An i64 constant may remain only as run-time data: the
                # indices of a gather (positions from Range, say).
                names = re.findall(r"(%\w+) = tc\.constant .*tensor<[0-9x]*i64>", ir)
                leftovers = [n for n in names
                             if len(re.findall(re.escape(n) + r"\b", ir)) - 1 !=
                             len(re.findall(r"tc\.gather %\w+, " + re.escape(n) + r"\b", ir))]
                check(not leftovers, tag + " shape sub-graphs folded (i64 constants used "
                      "other than as gather indices: %s)" % leftovers)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
