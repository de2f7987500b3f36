#!/usr/bin/env python3
"""NaN through relu, max, min, clip, leaky relu, abs and a max reduction, as
in PyTorch (torch.relu, torch.maximum, torch.minimum, torch.clamp,
F.leaky_relu, torch.abs, torch.amax), forward and gradient.

usage: nan_ops.py make DIR          DIR/forward.onnx, DIR/grad.onnx and their data
       nan_ops.py check-forward DIR compare DIR/fwd-out/*.npy with PyTorch
       nan_ops.py check-grads DIR   compare DIR/grad-out/grad.*.npy with PyTorch

forward.onnx: inputs x, z [N, 6]; outputs relu(x), max(x, z), min(x, z),
clip(x, -0.5, 0.5), leaky_relu(x, 0.1) and amax(x as [N, 2, 3, 1], axes 1, 3)
(a generated reduction kernel: the axes are not adjacent).
grad.onnx: input x [4, 5]; y = sum(relu(x + wr) + max(x + wa, wb) +
min(x + wm, wn) + leaky_relu(x + wl) + clip(x + wc) + abs(x + wab)), the
w* parameters [4, 5]; trainc's train_step with --loss=output gives the
gradients of y. x holds NaN, zeros, -0.0 and ties with wb / wn.
Values must agree where finite (rtol 1e-6) and be NaN at the same positions.
"""

import os
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

NAN = np.float32("nan")
PARAMS = ["wr", "wa", "wb", "wm", "wn", "wl", "wc", "wab"]


def save_model(graph, path):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def forward_inputs():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 6)).astype(np.float32)
    z = rng.standard_normal((8, 6)).astype(np.float32)
    x[0, 0] = x[1, 3] = x[2, 5] = x[5, 1] = NAN
    z[0, 1] = z[1, 3] = z[3, 2] = NAN   # [1, 3]: both NaN
    x[3, 0], x[3, 1] = 0.0, -0.0
    z[4, :] = x[4, :]                   # ties
    return x, z


def grad_inputs():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 5)).astype(np.float32)
    x[0, 0] = x[1, 2] = x[3, 4] = NAN
    x[2, 0], x[2, 1] = 0.0, -0.0
    params = {p: (rng.standard_normal((4, 5)) * 0.5).astype(np.float32) for p in PARAMS}
    params["wa"][2, :] = 0.0
    params["wb"][2, :] = x[2, :]        # ties in max
    params["wm"][2, :] = 0.0
    params["wn"][2, :] = x[2, :]        # ties in min
    for p in ["wr", "wl", "wc", "wab"]:
        params[p][2, :] = 0.0           # x + w is exactly 0 and -0
    return x, params


def make(dir):
    f = TensorProto.FLOAT
    x = helper.make_tensor_value_info("x", f, ["N", 6])
    z = helper.make_tensor_value_info("z", f, ["N", 6])
    outs = [helper.make_tensor_value_info(n, f, ["N", 6])
            for n in ["relu", "max", "min", "clip", "leaky"]]
    outs.append(helper.make_tensor_value_info("amax", f, ["N", 3]))
    inits = [numpy_helper.from_array(np.array(-0.5, np.float32), "lo"),
             numpy_helper.from_array(np.array(0.5, np.float32), "hi"),
             numpy_helper.from_array(np.array([-1, 2, 3, 1], np.int64), "shape4")]
    nodes = [
        helper.make_node("Relu", ["x"], ["relu"]),
        helper.make_node("Max", ["x", "z"], ["max"]),
        helper.make_node("Min", ["x", "z"], ["min"]),
        helper.make_node("Clip", ["x", "lo", "hi"], ["clip"]),
        helper.make_node("LeakyRelu", ["x"], ["leaky"], alpha=0.1),
        helper.make_node("Reshape", ["x", "shape4"], ["x4"]),
        helper.make_node("ReduceMax", ["x4"], ["amax"], axes=[1, 3], keepdims=0),
    ]
    save_model(helper.make_graph(nodes, "nan_forward", [x, z], outs, initializer=inits),
               os.path.join(dir, "forward.onnx"))
    xs, zs = forward_inputs()
    os.makedirs(os.path.join(dir, "fwd-data"), exist_ok=True)
    np.save(os.path.join(dir, "fwd-data", "x.npy"), xs)
    np.save(os.path.join(dir, "fwd-data", "z.npy"), zs)

    gx, params = grad_inputs()
    x = helper.make_tensor_value_info("x", f, ["N", 5])
    y = helper.make_tensor_value_info("y", f, [])
    inits = [numpy_helper.from_array(v, k) for k, v in params.items()]
    inits += [numpy_helper.from_array(np.array(-0.5, np.float32), "lo"),
              numpy_helper.from_array(np.array(0.5, np.float32), "hi")]
    nodes = []
    for p in PARAMS:
        if p not in ("wb", "wn"):
            nodes.append(helper.make_node("Add", ["x", p], ["x_" + p]))
    nodes += [
        helper.make_node("Relu", ["x_wr"], ["r"]),
        helper.make_node("Max", ["x_wa", "wb"], ["m"]),
        helper.make_node("Min", ["x_wm", "wn"], ["n"]),
        helper.make_node("LeakyRelu", ["x_wl"], ["l"], alpha=0.1),
        helper.make_node("Clip", ["x_wc", "lo", "hi"], ["c"]),
        helper.make_node("Abs", ["x_wab"], ["a"]),
        helper.make_node("Sum", ["r", "m", "n", "l", "c", "a"], ["s"]),
        helper.make_node("ReduceSum", ["s"], ["y"], keepdims=0),
    ]
    save_model(helper.make_graph(nodes, "nan_grad", [x], [y], initializer=inits),
               os.path.join(dir, "grad.onnx"))
    os.makedirs(os.path.join(dir, "grad-data"), exist_ok=True)
    np.save(os.path.join(dir, "grad-data", "x.npy"), gx)
    np.save(os.path.join(dir, "grad-data", "sample_weights.npy"), np.ones(4, np.float32))
    np.save(os.path.join(dir, "grad-data", "sample_mask.npy"), np.ones(4, np.float32))


def compare(name, got, want):
    want = np.asarray(want, np.float32)
    if got.shape != want.shape:
        sys.exit(f"{name}: shape {got.shape}, PyTorch {want.shape}")
    if not np.array_equal(np.isnan(got), np.isnan(want)):
        sys.exit(f"{name}: NaN at {np.argwhere(np.isnan(got)).tolist()}, "
                 f"PyTorch at {np.argwhere(np.isnan(want)).tolist()}")
    finite = ~np.isnan(want)
    if not np.allclose(got[finite], want[finite], rtol=1e-6, atol=0):
        sys.exit(f"{name}: values differ:\n{got}\n{want}")
    return int(np.isnan(want).sum())


def check_forward(dir):
    xs, zs = forward_inputs()
    x, z = torch.from_numpy(xs), torch.from_numpy(zs)
    want = {
        "relu": torch.relu(x),
        "max": torch.maximum(x, z),
        "min": torch.minimum(x, z),
        "clip": torch.clamp(x, -0.5, 0.5),
        "leaky": F.leaky_relu(x, 0.1),
        "amax": torch.amax(x.reshape(-1, 2, 3, 1), dim=(1, 3)),
    }
    for name, w in want.items():
        nans = compare(name, np.load(os.path.join(dir, "fwd-out", name + ".npy")), w.numpy())
        print(f"forward {name}: matches PyTorch ({nans} NaN)")


def check_grads(dir):
    gx, params = grad_inputs()
    x = torch.from_numpy(gx)
    w = {k: torch.from_numpy(v).requires_grad_() for k, v in params.items()}
    s = (torch.relu(x + w["wr"]) + torch.maximum(x + w["wa"], w["wb"]) +
         torch.minimum(x + w["wm"], w["wn"]) + F.leaky_relu(x + w["wl"], 0.1) +
         torch.clamp(x + w["wc"], -0.5, 0.5) + torch.abs(x + w["wab"]))
    s.sum().backward()
    for name in PARAMS:
        got = np.load(os.path.join(dir, "grad-out", "grad." + name + ".npy"))
        nans = compare("grad " + name, got, w[name].grad.numpy())
        print(f"grad {name}: matches PyTorch ({nans} NaN)")


if __name__ == "__main__":
    {"make": make, "check-forward": check_forward, "check-grads": check_grads}[sys.argv[1]](
        sys.argv[2])
