#!/usr/bin/python3
"""NaN and infinity propagate through every forward op as in PyTorch (CPU target).

Usage: check_nan.py TRAINC WORKDIR [--only NAME,...]

Small ONNX models, several ops each (one compile per model), run with
`PROG --predict` on inputs that hold NaN, +inf and -inf at chosen positions:
the first tap of a pooling window, a later tap, the last element, a whole
row, next to an infinity, and one sample with none. Each output is compared
with PyTorch 1.13 on the same inputs: the NaN positions must be the same,
infinities the same, and the finite values within rtol 1e-4 / atol 1e-5. A
kernel that skips NaN in a comparison (`v > best`, std::max, fmaxf) fails
here. Prints one line per output and 'N passed, N failed'.
"""

import os
import subprocess
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

N, C, H, W = 4, 3, 6, 6
NAN, INF = float("nan"), float("inf")


def inputs():
    """x and y [N, C, H, W] with NaN and infinities at chosen positions."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    y = rng.standard_normal((N, C, H, W)).astype(np.float32)
    x[0, 0, 0, 0] = NAN      # first tap of a 2x2 / 3x3 window, first of a softmax column
    x[1, 1, 2, 3] = NAN      # a later tap of its 2x2 window
    x[1, 2, 3, 3] = NAN      # a window's last tap
    x[2, 2, 5, 5] = NAN      # the last element
    x[2, 0, 4, :] = NAN      # a whole row (layer norm, reductions over W)
    x[1, 0, 1, 1] = INF      # +inf next to NaN-free taps
    x[2, 1, 0, 2] = -INF
    x[2, 1, 0, 3] = NAN      # NaN next to -inf
    # Sample 3 has no NaN: its outputs are all finite.
    y[0, 0, 0, 0] = 1.0      # max/min of NaN and a number
    y[0, 1, 1, 1] = NAN      # number and NaN
    y[1, 1, 2, 3] = NAN      # NaN and NaN
    y[3, 2, 2, 2] = NAN
    return x, y


def vinfo(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def init(name, array):
    return numpy_helper.from_array(np.asarray(array, np.float32), name)


def node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, name=outs[0] + "_node", **attrs)


def library_model(rng):
    """Ops that call the runtime's kernels (pooling, reductions, softmax,
    convolution, GEMM, normalization), with their PyTorch references."""
    conv_w = rng.standard_normal((4, C, 3, 3)).astype(np.float32) * 0.3
    conv_b = rng.standard_normal(4).astype(np.float32)
    gemm_w = rng.standard_normal((5, C * H * W)).astype(np.float32) * 0.1
    gemm_b = rng.standard_normal(5).astype(np.float32)
    bn = [rng.uniform(0.5, 1.5, C), rng.standard_normal(C), rng.standard_normal(C),
          rng.uniform(0.5, 2.0, C)]
    ln_scale = rng.uniform(0.5, 1.5, W).astype(np.float32)
    ln_bias = rng.standard_normal(W).astype(np.float32)
    # [N, 1, 18, 6]: 108 output positions, conv2d's one-GEMM-per-image path
    # (the 6x6 conv above, 36 positions, puts all images in one GEMM).
    tall_w = rng.standard_normal((2, 1, 3, 3)).astype(np.float32)
    nodes = [
        node("MaxPool", ["x"], ["maxpool"], kernel_shape=[2, 2], strides=[2, 2]),
        node("MaxPool", ["x"], ["maxpool_pad"], kernel_shape=[3, 3], strides=[1, 1],
             pads=[1, 1, 1, 1]),
        node("GlobalMaxPool", ["x"], ["global_max"]),
        node("ReduceMax", ["x"], ["reduce_max_hw"], axes=[2, 3], keepdims=1),
        node("ReduceMax", ["x"], ["reduce_max_w"], axes=[3], keepdims=0),
        node("ReduceMax", ["x"], ["reduce_max_c"], axes=[1], keepdims=0),
        node("Softmax", ["x"], ["softmax_c"], axis=1),
        node("Softmax", ["x"], ["softmax_w"], axis=3),
        node("LogSoftmax", ["x"], ["log_softmax_w"], axis=3),
        node("Conv", ["x", "conv_w", "conv_b"], ["conv"], pads=[1, 1, 1, 1]),
        node("Reshape", ["x", "tall_shape"], ["tall"]),
        node("Conv", ["tall", "tall_w"], ["conv_tall"], pads=[1, 1, 1, 1]),
        node("Flatten", ["x"], ["flat"], axis=1),
        node("Gemm", ["flat", "gemm_w", "gemm_b"], ["gemm"], transB=1),
        node("BatchNormalization", ["x", "bn_scale", "bn_bias", "bn_mean", "bn_var"],
             ["batchnorm"], epsilon=1e-5),
        node("LayerNormalization", ["x", "ln_scale", "ln_bias"], ["layernorm"], axis=-1,
             epsilon=1e-5),
        node("AveragePool", ["x"], ["avgpool"], kernel_shape=[2, 2], strides=[2, 2]),
        node("AveragePool", ["x"], ["avgpool_pad"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
             count_include_pad=0),
        node("GlobalAveragePool", ["x"], ["global_avg"]),
        node("ReduceSum", ["x", "sum_axes"], ["reduce_sum_w"], keepdims=0),
    ]
    inits = [init("conv_w", conv_w), init("conv_b", conv_b), init("gemm_w", gemm_w),
             init("gemm_b", gemm_b), init("bn_scale", bn[0]), init("bn_bias", bn[1]),
             init("bn_mean", bn[2]), init("bn_var", bn[3]), init("ln_scale", ln_scale),
             init("ln_bias", ln_bias), init("tall_w", tall_w),
             numpy_helper.from_array(np.array([-1, 1, C * H, W], np.int64), "tall_shape"),
             numpy_helper.from_array(np.array([3], np.int64), "sum_axes")]
    t = lambda a: torch.tensor(np.asarray(a, np.float32))  # noqa: E731
    refs = {
        "maxpool": lambda x, y: F.max_pool2d(x, 2, 2),
        "maxpool_pad": lambda x, y: F.max_pool2d(x, 3, 1, padding=1),
        "global_max": lambda x, y: torch.amax(x, dim=(2, 3), keepdim=True),
        "reduce_max_hw": lambda x, y: torch.amax(x, dim=(2, 3), keepdim=True),
        "reduce_max_w": lambda x, y: torch.amax(x, dim=3),
        "reduce_max_c": lambda x, y: torch.amax(x, dim=1),
        "softmax_c": lambda x, y: torch.softmax(x, dim=1),
        "softmax_w": lambda x, y: torch.softmax(x, dim=3),
        "log_softmax_w": lambda x, y: torch.log_softmax(x, dim=3),
        "conv": lambda x, y: F.conv2d(x, t(conv_w), t(conv_b), padding=1),
        "conv_tall": lambda x, y: F.conv2d(x.reshape(-1, 1, C * H, W), t(tall_w), padding=1),
        "gemm": lambda x, y: F.linear(x.flatten(1), t(gemm_w), t(gemm_b)),
        "batchnorm": lambda x, y: F.batch_norm(x, t(bn[2]), t(bn[3]), t(bn[0]), t(bn[1]),
                                               training=False, eps=1e-5),
        "layernorm": lambda x, y: F.layer_norm(x, (W,), t(ln_scale), t(ln_bias), eps=1e-5),
        "avgpool": lambda x, y: F.avg_pool2d(x, 2, 2),
        "avgpool_pad": lambda x, y: F.avg_pool2d(x, 3, 1, padding=1, count_include_pad=False),
        "global_avg": lambda x, y: torch.mean(x, dim=(2, 3), keepdim=True),
        "reduce_sum_w": lambda x, y: torch.sum(x, dim=3),
    }
    return nodes, inits, ["x"], refs


def pointwise_model(rng):
    """Ops the code generator writes itself (pointwise, scattered reductions)."""
    nodes = [
        node("Relu", ["x"], ["relu"]),
        node("Max", ["x", "y"], ["max"]),
        node("Min", ["x", "y"], ["min"]),
        node("Clip", ["x", "clip_lo", "clip_hi"], ["clip"]),
        node("LeakyRelu", ["x"], ["leaky_relu"], alpha=0.1),
        node("ReduceMax", ["x"], ["reduce_max_cw"], axes=[1, 3], keepdims=0),
        node("ReduceMax", ["x"], ["reduce_max_nc_first"], axes=[1, 2], keepdims=1),
        node("Abs", ["x"], ["abs"]),
        node("Sigmoid", ["x"], ["sigmoid"]),
        node("Tanh", ["x"], ["tanh"]),
    ]
    inits = [init("clip_lo", -0.5), init("clip_hi", 0.5)]
    refs = {
        "relu": lambda x, y: torch.relu(x),
        "max": lambda x, y: torch.maximum(x, y),
        "min": lambda x, y: torch.minimum(x, y),
        "clip": lambda x, y: torch.clamp(x, -0.5, 0.5),
        "leaky_relu": lambda x, y: F.leaky_relu(x, 0.1),
        "reduce_max_cw": lambda x, y: torch.amax(x, dim=(1, 3)),
        "reduce_max_nc_first": lambda x, y: torch.amax(x, dim=(1, 2), keepdim=True),
        "abs": lambda x, y: torch.abs(x),
        "sigmoid": lambda x, y: torch.sigmoid(x),
        "tanh": lambda x, y: torch.tanh(x),
    }
    return nodes, inits, ["x", "y"], refs


def decomposed_model(rng):
    """Ops the importer decomposes into other tc ops (1-D conv and pooling,
    instance norm, HardSigmoid/HardSwish, the norm reductions)."""
    conv1d_w = rng.standard_normal((2, C * H, 3)).astype(np.float32) * 0.3
    in_scale = rng.uniform(0.5, 1.5, C).astype(np.float32)
    in_bias = rng.standard_normal(C).astype(np.float32)
    nodes = [
        node("Reshape", ["x", "rows_shape"], ["rows"]),
        node("Conv", ["rows", "conv1d_w"], ["conv1d"], pads=[1, 1]),
        node("MaxPool", ["rows"], ["maxpool1d"], kernel_shape=[2], strides=[2]),
        node("AveragePool", ["rows"], ["avgpool1d"], kernel_shape=[3], pads=[1, 1],
             count_include_pad=1),
        node("GlobalAveragePool", ["rows"], ["global_avg1d"]),
        node("GlobalMaxPool", ["rows"], ["global_max1d"]),
        node("InstanceNormalization", ["x", "in_scale", "in_bias"], ["instancenorm"]),
        node("HardSigmoid", ["x"], ["hardsigmoid"], alpha=1.0 / 6),
        node("HardSigmoid", ["x"], ["hardsigmoid_onnx"], alpha=0.2, beta=0.5),
        node("HardSwish", ["x"], ["hardswish"]),
        node("ReduceL2", ["x"], ["reduce_l2_w"], axes=[3], keepdims=0),
        node("ReduceL1", ["x"], ["reduce_l1_w"], axes=[3], keepdims=0),
        node("ReduceLogSumExp", ["x"], ["logsumexp_w"], axes=[3], keepdims=0),
        node("ReduceLogSumExp", ["x"], ["logsumexp_c"], axes=[1], keepdims=1),
    ]
    inits = [init("conv1d_w", conv1d_w), init("in_scale", in_scale), init("in_bias", in_bias),
             numpy_helper.from_array(np.array([-1, C * H, W], np.int64), "rows_shape")]
    t = lambda a: torch.tensor(np.asarray(a, np.float32))  # noqa: E731
    rows = lambda x: x.reshape(-1, C * H, W)  # noqa: E731
    refs = {
        "conv1d": lambda x, y: F.conv1d(rows(x), t(conv1d_w), padding=1),
        "maxpool1d": lambda x, y: F.max_pool1d(rows(x), 2, 2),
        "avgpool1d": lambda x, y: F.avg_pool1d(rows(x), 3, 1, padding=1),
        "global_avg1d": lambda x, y: torch.mean(rows(x), dim=2, keepdim=True),
        "global_max1d": lambda x, y: torch.amax(rows(x), dim=2, keepdim=True),
        "instancenorm": lambda x, y: F.instance_norm(x, weight=t(in_scale), bias=t(in_bias),
                                                     eps=1e-5),
        "hardsigmoid": lambda x, y: F.hardsigmoid(x),
        "hardsigmoid_onnx": lambda x, y: torch.clamp(x * 0.2 + 0.5, 0, 1),
        "hardswish": lambda x, y: F.hardswish(x),
        "reduce_l2_w": lambda x, y: torch.norm(x, p=2, dim=3),
        "reduce_l1_w": lambda x, y: torch.norm(x, p=1, dim=3),
        "logsumexp_w": lambda x, y: torch.logsumexp(x, dim=3),
        "logsumexp_c": lambda x, y: torch.logsumexp(x, dim=1, keepdim=True),
    }
    return nodes, inits, ["x"], refs


MODELS = {"library": library_model, "pointwise": pointwise_model,
          "decomposed": decomposed_model}


def build(name, maker, workdir):
    """Writes WORKDIR/NAME.onnx; returns (path, input names, references)."""
    rng = np.random.default_rng(11)
    nodes, inits, input_names, refs = maker(rng)
    x, y = inputs()
    sample = {"x": torch.tensor(x), "y": torch.tensor(y)}
    outputs = []
    for out in refs:
        shape = list(refs[out](sample["x"], sample["y"]).shape)
        shape[0] = "batch"
        outputs.append(vinfo(out, shape))
    graph = helper.make_graph(nodes, name,
                              [vinfo(n, ["batch", C, H, W]) for n in input_names],
                              outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              ir_version=8)
    onnx.checker.check_model(model)
    path = os.path.join(workdir, name + ".onnx")
    onnx.save(model, path)
    return path, input_names, refs


def compare(got, want):
    """'' when got matches want (NaN and inf positions, finite values), else why."""
    if got.shape != want.shape:
        return "shape %s, PyTorch %s" % (got.shape, want.shape)
    nan_got, nan_want = np.isnan(got), np.isnan(want)
    if (nan_got != nan_want).any():
        missing = np.argwhere(nan_want & ~nan_got)
        extra = np.argwhere(nan_got & ~nan_want)
        parts = []
        if len(missing):
            parts.append("%d NaN lost (first at %s, got %g)" %
                         (len(missing), tuple(missing[0]), got[tuple(missing[0])]))
        if len(extra):
            parts.append("%d NaN where PyTorch has a number (first at %s, PyTorch %g)" %
                         (len(extra), tuple(extra[0]), want[tuple(extra[0])]))
        return "; ".join(parts)
    inf_got, inf_want = np.isinf(got), np.isinf(want)
    if (inf_got != inf_want).any() or (got[inf_want] != want[inf_want]).any():
        at = np.argwhere((inf_got != inf_want) | (np.isinf(want) & (got != want)))[0]
        return "infinity differs at %s: %g, PyTorch %g" % (tuple(at), got[tuple(at)],
                                                           want[tuple(at)])
    finite = np.isfinite(want)
    if not np.allclose(got[finite], want[finite], rtol=1e-4, atol=1e-5):
        err = np.abs(got[finite] - want[finite]).max()
        return "finite values differ (max abs error %g)" % err
    return ""


def check_model(trainc, workdir, name):
    """Results (check name, failure text or '') of every output of one model."""
    path, input_names, refs = build(name, MODELS[name], workdir)
    prog = os.path.join(workdir, name)
    comp = subprocess.run([trainc, "compile", path, "--target=cpu", "--batch-size=2",
                           "-o", prog], capture_output=True, text=True)
    if comp.returncode != 0:
        return [("nan %s compile" % name, comp.stderr.strip()[-600:])]
    data = os.path.join(workdir, name + "-data")
    out = os.path.join(workdir, name + "-out")
    os.makedirs(data, exist_ok=True)
    x, y = inputs()
    arrays = {"x": x, "y": y}
    for n in input_names:
        np.save(os.path.join(data, n + ".npy"), arrays[n])
    # Batch 2 of 4 samples: two batches, so each sample runs in both slots.
    run = subprocess.run([prog, "--predict", "--data", data, "--out", out, "--threads", "2"],
                         capture_output=True, text=True)
    if run.returncode != 0:
        return [("nan %s predict" % name, run.stderr.strip()[-600:])]
    results = []
    with torch.no_grad():
        for output, ref in refs.items():
            want = ref(torch.tensor(x), torch.tensor(y)).numpy()
            got = np.load(os.path.join(out, output + ".npy"))
            results.append(("nan %s %s" % (name, output), compare(got, want)))
    return results


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    trainc, workdir = argv[1], argv[2]
    only = None
    if len(argv) > 4 and argv[3] == "--only":
        only = argv[4].split(",")
    os.makedirs(workdir, exist_ok=True)
    passed = failed = 0
    for name in MODELS:
        if only and name not in only:
            continue
        try:
            results = check_model(trainc, workdir, name)
        except Exception as e:  # a model that cannot be checked is a failure
            results = [("nan %s" % name, "could not run: %s" % e)]
        for check, why in results:
            if why:
                failed += 1
                print("FAIL: %s: %s" % (check, why))
            else:
                passed += 1
                print("PASS: %s" % check)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
