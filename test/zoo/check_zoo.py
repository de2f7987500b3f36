#!/usr/bin/python3
"""Imports every model of the zoo with `trainc import` and checks the result.

Usage: check_zoo.py TRAINC ZOODIR

For every manifest entry, at the manifest's batch size and at batch 5 (for
models with a symbolic batch axis):
  * the import succeeds;
  * @forward returns the outputs the manifest lists (from PyTorch or numpy
    runs), in order, with the batch axis bound as asked;
  * ONNX ops that map one-to-one onto tc ops (Conv, Gemm, MatMul,
    BatchNormalization, ...) appear exactly as often in the IR (but those a
    recurrent op of the model also unrolls into);
  * no shape sub-graph survives: Shape/Range/ConstantOfShape leave no i64
    tc.constant behind, except as the indices of a gather.
and, at the manifest's batch size:
  * the model compiles for the CPU target, and `--predict` on the stored
    input matches the stored PyTorch (or numpy) eval-mode output within
    rtol 1e-4 / atol 1e-5, with a short last batch (3 samples at batch 2);
  * the model compiles for the CUDA target with nvcc for sm_80 and sm_90
    with no warning (skipped, and said so, where nvcc is absent).
Prints one line per check and a closing 'N passed, N failed'.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

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

# ONNX ops that become several of ONE_TO_ONE's tc ops (a recurrent op unrolls
# into a GEMM per time step): in a model with one, those counts are not
# checked.
DECOMPOSED = {"LSTM": {"tc.gemm"}, "GRU": {"tc.gemm"}, "RNN": {"tc.gemm", "tc.relu"}}

DTYPES = {"float32": "f32", "int64": "i64"}


def warnings_in(stderr):
    """What a compile said besides notes (information: a speed flag that does
    not pay on the target, the target --target=auto chose)."""
    return "\n".join(line for line in stderr.splitlines()
                     if line.strip() and not line.startswith("note: "))


def forward_results(ir):
    m = re.search(r"func\.func @forward\((.*?)\) -> \((.*?)\) \{", ir)
    if not m:
        m = re.search(r"func\.func @forward\((.*?)\) -> (tensor<[^ ]*>)", ir)
    results = re.findall(r'tensor<([^>]*)>(?: \{tc.output = "([^"]*)"\})?', m.group(2))
    return [(name, types) for types, name in results]


def tensor_type(shape, dtype):
    return "x".join(str(d) for d in shape) + ("x" if shape else "") + dtype


def check_predict(trainc, zoo, entry, work, check, flags=()):
    """Compiles for the CPU target (with `flags`) and compares --predict with
    the reference."""
    tag = entry["file"] + "".join(" " + f for f in flags)
    path = os.path.join(zoo, entry["file"])
    prog = os.path.join(work, entry["file"].replace(".onnx", "") +
                        "".join(f.replace("=", "_") for f in flags))
    cmd = [trainc, "compile", path, "--target=cpu", "-o", prog] + list(flags)
    if entry["batch_size"]:
        cmd.append("--batch-size=%d" % entry["batch_size"])
    run = subprocess.run(cmd, capture_output=True, text=True)
    # Notes (a speed flag that does not pay on the CPU) are information; any
    # other line (a warning, an error) fails the check.
    said = [line for line in run.stderr.splitlines()
            if line.strip() and not line.startswith("note: ")]
    check(run.returncode == 0 and not said,
          tag + " compiles for the CPU target" + (": " + "\n".join(said)[-800:] if said else ""))
    if run.returncode != 0:
        return
    data = prog + ".data"
    os.makedirs(data, exist_ok=True)
    refs = entry["reference"]
    samples = None
    for name, file in refs["inputs"].items():
        x = np.load(os.path.join(zoo, file))
        if entry["batch_size"]:
            # Three samples at batch 2: one full batch and a short last batch.
            x = np.concatenate([x, x[:1]], axis=0)
        samples = x.shape[0]
        np.save(os.path.join(data, name + ".npy"), x)
    out = prog + ".out"
    run = subprocess.run([prog, "--predict", "--data", data, "--out", out],
                         capture_output=True, text=True)
    check(run.returncode == 0, tag + " --predict runs" +
          ("" if run.returncode == 0 else ": " + run.stderr[-800:]))
    if run.returncode != 0:
        return
    for name, file in refs["outputs"].items():
        want = np.load(os.path.join(zoo, file))
        if entry["batch_size"]:
            want = np.concatenate([want, want[:1]], axis=0)
        got = np.load(os.path.join(out, name + ".npy"))
        ok = got.shape == want.shape and np.allclose(got, want, rtol=1e-4, atol=1e-5)
        err = float(np.abs(got - want).max()) if got.shape == want.shape else float("nan")
        check(ok, "%s predict '%s' (%d samples) matches the reference within rtol 1e-4 "
              "(max abs error %.3g)" % (tag, name, samples, err))


def check_cuda_compile(trainc, zoo, entry, work, check):
    tag = entry["file"]
    prog = os.path.join(work, entry["file"].replace(".onnx", "") + "_cuda")
    cmd = [trainc, "compile", os.path.join(zoo, entry["file"]), "--target=cuda",
           "--cuda-arch=sm_80,sm_90", "-o", prog]
    if entry["batch_size"]:
        cmd.append("--batch-size=%d" % entry["batch_size"])
    run = subprocess.run(cmd, capture_output=True, text=True)
    check(run.returncode == 0 and not warnings_in(run.stderr),
          tag + " compiles for CUDA sm_80,sm_90 with no warning" +
          (": " + run.stderr[-800:] if run.stderr else ""))
    # The trainers with the layout and padding flags (the step's CUDA graph
    # is a run-time flag): bf16 with --layout=auto and --pad-to=auto, which
    # pick channels-last and padding to 8 on CUDA, for every model with
    # a Gemm, MatMul or Conv; LeNet (odd channels and widths) also in fp32
    # channels-last, fp32 padded, and bf16 with both off.
    # The new flags once per model (its opset-17 file).
    model = entry.get("model")
    if model not in ("lenet", "resnet18") and not (model in ("mlp", "gpt") and
                                                   "op17" in entry["file"]):
        return
    variants = [["--precision=bf16", "--layout=auto", "--pad-to=auto"]]
    if model in ("mlp", "gpt") and "op17" in entry["file"]:
        # Data parallelism: the buckets' share kernels, linked against NCCL
        # and MPI.
        variants.append(["--precision=bf16", "--data-parallel", "--bucket-size=64KiB"])
    if model == "lenet" and "op17" in entry["file"]:
        variants += [["--layout=nhwc", "--pad-to=off"], ["--layout=nchw", "--pad-to=8"],
                     ["--precision=bf16", "--layout=nchw", "--pad-to=off"]]
    for variant in variants:
        train = cmd + ["--loss=cross-entropy", "--optimizer=sgd"] + variant
        train[train.index("-o") + 1] = prog + "_train"
        run = subprocess.run(train, capture_output=True, text=True)
        check(run.returncode == 0 and not warnings_in(run.stderr),
              "%s trainer (%s) compiles for CUDA sm_80,sm_90 with no warning%s"
              % (tag, " ".join(variant), ": " + run.stderr[-800:] if run.stderr else ""))


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
            unchecked = set().union(*(DECOMPOSED[op] for op in entry["onnx_op_counts"]
                                      if op in DECOMPOSED))
            for onnx_op, tc_op in ONE_TO_ONE.items():
                if tc_op in unchecked:
                    continue
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
    work = tempfile.mkdtemp(prefix="trainc-zoo-")
    have_nvcc = os.path.exists("/usr/local/cuda/bin/nvcc")
    if not have_nvcc:
        print("note: no nvcc at /usr/local/cuda/bin: CUDA compile checks skipped")
    try:
        for entry in manifest:
            check_predict(trainc, zoo, entry, work, check)
            if entry.get("model") in ("lenet", "resnet18"):
                # The inference function channels-last (batch norm with its
                # running statistics, a short last batch).
                check_predict(trainc, zoo, entry, work, check, ["--layout=nhwc"])
            if have_nvcc:
                check_cuda_compile(trainc, zoo, entry, work, check)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
