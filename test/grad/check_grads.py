#!/usr/bin/python3
"""Gradient check: trainc's train_step against PyTorch autograd.

Usage: check_grads.py TRAINC WORKDIR [--filter REGEX] [--forward] [--keep-going]

For every model of MODELS (small PyTorch modules, each exercising one op's
gradient; float32, batch 4, deterministic seeds):
  * export it to ONNX (opset 17, training mode, no constant folding, input
    "x", output "y", batch axis symbolic);
  * `TRAINC compile MODEL.onnx --target=cpu --batch-size=4 --loss=KIND
    --entry=train_step -o PROG`;
  * write DIR/x.npy, DIR/label.npy and DIR/sample_weights.npy (all ones) and
    run `PROG --run --data DIR --out OUT`;
  * compare OUT/loss.npy and OUT/grad.<initializer>.npy for every parameter
    with PyTorch (model.train(), loss with reduction='mean', autograd) within
    rtol 1e-4 / atol 1e-5.
Models with metadata=True are exported by python/trainc_torch.py (trainc.trainable,
trainc.padding_index): trainc must write gradients for exactly the requires_grad
parameters (none for buffers and frozen weights), and a padding row's is 0.
Some models are run a second time with sample_weights [1, 1, 1, 0] and compared
with PyTorch on the first three samples only (the padding mechanism). Batch
norm models also compare the updated running statistics with PyTorch's
buffers after the same model.train() forward. Dropout models also write
DIR/dropout_key.npy; their PyTorch reference applies the masks trainc draws for
that key (test/pylib/philox.py, written from the tc.dropout spec).

A model that does not compile or run is one FAIL line with the first line of
the error. Prints one line per check and a closing 'N passed, N failed'.

--filter REGEX   only the models whose name matches (re.search)
--forward        instead of the gradient check, compile the plain forward
                 program (no --loss) and compare y with PyTorch: tells an
                 import/codegen problem from an autodiff one.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import warnings

import numpy as np
import onnx
from onnx import numpy_helper
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
import philox  # noqa: E402

RTOL = 1e-4
ATOL = 1e-5
BATCH = 4
TOL_TEXT = "rtol %g, atol %g" % (RTOL, ATOL)


# ---------------------------------------------------------------------------
# Models. Each is a function of nothing that returns an nn.Module; Model holds
# the input shape (batch first), the loss and an optional validity check on the
# forward pass (to keep activations away from kinks).
# ---------------------------------------------------------------------------

class Lambda(nn.Module):
    """Parameters given as a dict of modules/parameters plus a forward function."""

    def __init__(self, fn, **parts):
        super().__init__()
        self.fn = fn
        for name, part in parts.items():
            setattr(self, name, part)

    def forward(self, x):
        return self.fn(self, x)


class MaskedDropout(nn.Module):
    """nn.Dropout(p) that exports as an ONNX Dropout; in the PyTorch reference
    it applies trainc's mask for the step (mask_fn, set by the harness)."""

    def __init__(self, p):
        super().__init__()
        self.p = p
        self.mask_fn = None

    def forward(self, x):
        if self.mask_fn is None:
            return F.dropout(x, self.p, training=True)
        # The mask covers the whole compiled batch; a weighted run compares
        # the first samples only.
        mask = self.mask_fn((BATCH,) + tuple(x.shape[1:]))
        return x * torch.from_numpy(mask[:x.shape[0]])


class Buffer(nn.Module):
    """An int64 constant of the model (class targets of an in-model loss)."""

    def __init__(self, values):
        super().__init__()
        self.register_buffer("value", torch.tensor(values, dtype=torch.int64))


def param(*shape, scale=1.0):
    return nn.Parameter(torch.randn(*shape) * scale)


class Model:
    def __init__(self, name, what, build, in_shape, loss, valid=None, weighted=False,
                 vocab=None, metadata=False):
        self.vocab = vocab        # integer token input in [0, vocab) instead of floats
        # exported by python/trainc_torch.py with trainc.* metadata: buffers and
        # frozen parameters must get no gradient, padding rows gradient 0
        self.metadata = metadata
        self.name = name
        self.what = what          # the op(s) whose gradient it exercises
        self.build = build        # () -> nn.Module
        self.in_shape = in_shape  # without the batch axis
        self.loss = loss          # cross-entropy | mse | bce
        self.valid = valid        # (module, x) -> bool: no activation near a kink
        self.weighted = weighted  # also run with sample_weights [1, 1, 1, 0]


def away_from_zero(fn, margin=0.05):
    """A validity check: every element of fn(module, x) is at least margin from 0."""
    def check(m, x):
        with torch.no_grad():
            return bool(fn(m, x).abs().min() > margin)
    return check


def output_away_from_zero(margin=0.05):
    return away_from_zero(lambda m, x: m(x), margin)


def padded_tied_embedding():
    """ids [N, 3] -> Embedding(6, 4, padding_idx=0) + buffer -> mean over tokens ->
    frozen Linear -> tanh -> logits against the same embedding table."""
    def forward(m, x):
        h = (m.emb(x) + m.shift).mean(dim=1)
        return torch.tanh(m.frozen(h)) @ m.emb.weight.t()
    module = Lambda(forward, emb=nn.Embedding(6, 4, padding_idx=0), frozen=nn.Linear(4, 4))
    module.register_buffer("shift", torch.randn(4))
    module.frozen.weight.requires_grad_(False)
    return module


def relu6_dead_channel():
    m = nn.Sequential(nn.Linear(6, 5), nn.BatchNorm1d(5), nn.ReLU6(), nn.Linear(5, 3))
    with torch.no_grad():
        m[0].weight[0].zero_()
        m[0].bias[0] = 0.0
    return m


MODELS = [
    Model("linear", "Gemm (Linear with bias)",
          lambda: nn.Sequential(nn.Linear(6, 5)), (6,), "mse"),
    Model("linear_nobias", "Linear without bias (PyTorch exports Transpose + MatMul)",
          lambda: nn.Sequential(nn.Linear(6, 5, bias=False)), (6,), "mse"),
    Model("relu", "Relu",
          lambda: nn.Sequential(nn.Linear(6, 5), nn.ReLU()), (6,), "mse",
          valid=away_from_zero(lambda m, x: m[0](x))),
    Model("sigmoid", "Sigmoid",
          lambda: nn.Sequential(nn.Linear(6, 5), nn.Sigmoid()), (6,), "mse"),
    Model("tanh", "Tanh",
          lambda: nn.Sequential(nn.Linear(6, 5), nn.Tanh()), (6,), "mse"),
    Model("exp", "Exp",
          lambda: Lambda(lambda m, x: torch.exp(m.fc(x)), fc=nn.Linear(6, 5)), (6,), "mse"),
    Model("log", "Log of a positive value: log(exp(h) + 1)",
          lambda: Lambda(lambda m, x: torch.log(torch.exp(m.fc(x)) + 1.0), fc=nn.Linear(6, 5)),
          (6,), "mse"),
    Model("mul_broadcast", "Mul, parameter vector [5] times activations [4, 5]",
          lambda: Lambda(lambda m, x: m.fc(x) * m.scale, fc=nn.Linear(6, 5), scale=param(5)),
          (6,), "mse"),
    Model("add_bias", "Add, activations [4, 5] plus a parameter vector [5]",
          lambda: Lambda(lambda m, x: m.fc(x) + m.bias, fc=nn.Linear(6, 5, bias=False),
                         bias=param(5)),
          (6,), "mse"),
    Model("sub", "Sub, activations minus activations, minus a broadcast parameter [5]",
          lambda: Lambda(lambda m, x: m.a(x) - m.b(x) - m.c, a=nn.Linear(6, 5), b=nn.Linear(6, 5),
                         c=param(5)),
          (6,), "mse"),
    Model("div", "Div, denominator sigmoid(h) + 0.5 in [0.5, 1.5]",
          lambda: Lambda(lambda m, x: m.a(x) / (torch.sigmoid(m.b(x)) + 0.5),
                         a=nn.Linear(6, 5), b=nn.Linear(6, 5)),
          (6,), "mse"),
    Model("matmul3d", "MatMul, activations [4, 3, 6] times a parameter [6, 5]",
          lambda: Lambda(lambda m, x: torch.matmul(x, m.w), w=param(6, 5, scale=0.4)),
          (3, 6), "mse"),
    Model("reshape", "Reshape (x.view(x.size(0), -1)) between two layers",
          lambda: Lambda(lambda m, x: m.fc(torch.matmul(x, m.w).view(x.size(0), -1)),
                         w=param(3, 4, scale=0.5), fc=nn.Linear(8, 3)),
          (2, 3), "mse"),
    Model("flatten", "Flatten (torch.flatten(h, 1)) between two layers",
          lambda: Lambda(lambda m, x: m.fc(torch.flatten(torch.matmul(x, m.w), 1)),
                         w=param(3, 4, scale=0.5), fc=nn.Linear(8, 3)),
          (2, 3), "mse"),
    Model("transpose", "Transpose (permute(0, 2, 1)) between two MatMuls",
          lambda: Lambda(lambda m, x: torch.matmul(torch.matmul(x, m.w1).permute(0, 2, 1), m.w2),
                         w1=param(6, 5, scale=0.4), w2=param(3, 2, scale=0.5)),
          (3, 6), "mse"),
    Model("reduce_sum", "ReduceSum over axis 1 of [4, 3, 5]",
          lambda: Lambda(lambda m, x: torch.matmul(x, m.w).sum(dim=1), w=param(6, 5, scale=0.4)),
          (3, 6), "mse"),
    Model("reduce_mean", "ReduceMean over the last axis of [4, 3, 5]",
          lambda: Lambda(lambda m, x: torch.matmul(x, m.w).mean(dim=-1), w=param(6, 5, scale=0.4)),
          (3, 6), "mse"),
    Model("softmax_linear", "Softmax (axis 1) followed by a Linear",
          lambda: Lambda(lambda m, x: m.fc2(torch.softmax(m.fc1(x), dim=1)),
                         fc1=nn.Linear(6, 5), fc2=nn.Linear(5, 3)),
          (6,), "mse"),
    Model("loss_ce", "cross-entropy loss on logits [4, 5]",
          lambda: nn.Sequential(nn.Linear(6, 5)), (6,), "cross-entropy"),
    Model("loss_mse", "mse loss on a [4, 3, 5] output (mean over positions too)",
          lambda: Lambda(lambda m, x: m.fc(x), fc=nn.Linear(6, 5)), (3, 6), "mse",
          weighted=True),
    Model("loss_bce", "bce-with-logits loss on logits [4, 5]",
          lambda: nn.Sequential(nn.Linear(6, 5)), (6,), "bce",
          valid=output_away_from_zero()),
    Model("mlp", "two-layer MLP (Linear, ReLU, Linear) with cross-entropy",
          lambda: nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)), (8,),
          "cross-entropy", valid=away_from_zero(lambda m, x: m[0](x)), weighted=True),
    Model("conv", "Conv with bias, stride 2, padding 1",
          lambda: nn.Sequential(nn.Conv2d(2, 3, 3, stride=2, padding=1), nn.Flatten()),
          (2, 7, 7), "mse"),
    Model("conv_groups_dilation", "Conv with 2 groups, dilation 2, no bias",
          lambda: nn.Sequential(nn.Conv2d(4, 6, 3, dilation=2, groups=2, bias=False),
                                nn.Flatten()),
          (4, 8, 8), "mse"),
    Model("conv_1x1", "pointwise Conv (1x1, stride 1)",
          lambda: nn.Sequential(nn.Conv2d(3, 4, 1), nn.Flatten()), (3, 5, 5), "mse"),
    Model("maxpool", "MaxPool 2x2 after a Conv (distinct values: no ties)",
          lambda: nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.MaxPool2d(2), nn.Flatten()),
          (2, 6, 6), "mse"),
    Model("maxpool_overlap", "MaxPool 3x3 stride 2 padding 1 (overlapping windows)",
          lambda: nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.MaxPool2d(3, 2, 1),
                                nn.Flatten()),
          (2, 7, 7), "mse"),
    Model("avgpool", "AveragePool 2x2 after a Conv",
          lambda: nn.Sequential(nn.Conv2d(2, 3, 3), nn.AvgPool2d(2), nn.Flatten()),
          (2, 6, 6), "mse"),
    Model("avgpool_pad", "AveragePool 3x3 stride 2 padding 1, count_include_pad False",
          lambda: nn.Sequential(nn.Conv2d(2, 3, 3, padding=1),
                                nn.AvgPool2d(3, 2, 1, count_include_pad=False), nn.Flatten()),
          (2, 7, 7), "mse"),
    Model("global_avgpool", "GlobalAveragePool (adaptive average pooling to 1x1)",
          lambda: nn.Sequential(nn.Conv2d(2, 5, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten()),
          (2, 6, 6), "cross-entropy"),
    Model("lenet", "a small LeNet: Conv, ReLU, MaxPool, Conv, ReLU, AvgPool, Linear",
          lambda: nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                nn.Conv2d(4, 6, 3), nn.ReLU(), nn.AvgPool2d(2), nn.Flatten(),
                                nn.Linear(6, 5)),
          (1, 8, 8), "cross-entropy",
          valid=lambda m, x: bool(m[0](x).abs().min() > 1e-3 and
                                  m[3](m[2](m[1](m[0](x)))).abs().min() > 1e-3)),
    Model("batchnorm2d", "BatchNormalization in training mode (batch statistics) after a Conv",
          lambda: nn.Sequential(nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3), nn.Flatten()),
          (2, 5, 5), "mse", weighted=True),
    Model("batchnorm1d", "BatchNorm1d on [4, 6] between two Linears, cross-entropy",
          lambda: nn.Sequential(nn.Linear(5, 6), nn.BatchNorm1d(6), nn.Tanh(), nn.Linear(6, 3)),
          (5,), "cross-entropy", weighted=True),
    Model("layernorm", "LayerNormalization over the last axis of [4, 3, 6]",
          lambda: nn.Sequential(nn.Linear(5, 6), nn.LayerNorm(6)), (3, 5), "mse"),
    Model("layernorm_2axes", "LayerNormalization over the last two axes, no bias",
          lambda: Lambda(lambda m, x: F.layer_norm(m.fc(x), (3, 6), m.g), fc=nn.Linear(5, 6),
                         g=param(3, 6)),
          (3, 5), "mse"),
    Model("embedding", "Gather (nn.Embedding) with repeated tokens, then a Linear",
          lambda: nn.Sequential(nn.Embedding(7, 5), nn.Flatten(), nn.Linear(30, 3)),
          (6,), "cross-entropy", vocab=7),
    Model("embedding_padding", "Gather of nn.Embedding(padding_idx=1): the padding row, "
          "read twice or more, gets gradient 0 (trainc.padding_index)",
          lambda: nn.Sequential(nn.Embedding(7, 5, padding_idx=1), nn.Flatten(),
                                nn.Linear(30, 3)),
          (6,), "cross-entropy", vocab=7, metadata=True,
          valid=lambda m, x: int((x == 1).sum()) >= 2 and int((x != 1).sum()) >= 8),
    Model("embedding_padding_tied_buffer",
          "Embedding(padding_idx=0) tied to the output projection (its row 0 still gets the "
          "projection's gradient), a float buffer added and a frozen Linear (trainc.trainable)",
          lambda: padded_tied_embedding(), (3,), "cross-entropy", vocab=6, metadata=True,
          weighted=True, valid=lambda m, x: int((x == 0).sum()) >= 2),
    Model("slice", "Slice: a contiguous and a strided slice of one activation",
          lambda: Lambda(lambda m, x: m.fc(x)[:, 1:4] * m.fc(x)[:, 0:6:2], fc=nn.Linear(5, 7)),
          (5,), "mse"),
    Model("concat", "Concat of two activations along axis 1",
          lambda: Lambda(lambda m, x: torch.cat([m.a(x), torch.tanh(m.b(x))], dim=1),
                         a=nn.Linear(5, 3), b=nn.Linear(5, 2)),
          (5,), "mse"),
    Model("split", "Split of one activation into [3, 4], recombined",
          lambda: Lambda(lambda m, x: (lambda p: p[0] * torch.sigmoid(p[1][:, :3]))(
              m.fc(x).split([3, 4], dim=1)), fc=nn.Linear(5, 7)),
          (5,), "mse"),
    Model("max_min", "Max and Min (torch.maximum / torch.minimum) of activations and a "
          "broadcast parameter, no ties",
          lambda: Lambda(lambda m, x: torch.minimum(torch.maximum(m.a(x), m.b(x)), m.c),
                         a=nn.Linear(6, 5), b=nn.Linear(6, 5), c=param(5, scale=0.3)),
          (6,), "mse",
          valid=lambda m, x: bool((m.a(x) - m.b(x)).abs().min() > 0.05 and
                                  (torch.maximum(m.a(x), m.b(x)) - m.c).abs().min() > 0.05)),
    Model("reduce_max", "ReduceMax (amax over axis 1 of [4, 3, 5]), no ties",
          lambda: Lambda(lambda m, x: torch.amax(torch.matmul(x, m.w), dim=1),
                         w=param(6, 5, scale=0.4)),
          (3, 6), "mse",
          valid=lambda m, x: bool((lambda t: (t[:, -1] - t[:, -2]).min() > 0.05)(
              torch.sort(torch.matmul(x, m.w), dim=1).values))),
    Model("reduce_max_spatial", "ReduceMax over axes 2 and 3 with keepdims after a Conv "
          "(the tc.reduce_max GlobalMaxPool imports as)",
          lambda: Lambda(lambda m, x: torch.amax(m.conv(x), dim=(2, 3), keepdim=True).flatten(1),
                         conv=nn.Conv2d(2, 3, 3)),
          (2, 5, 5), "mse",
          valid=lambda m, x: bool((lambda t: (t[..., -1] - t[..., -2]).min() > 0.02)(
              torch.sort(m.conv(x).flatten(2), dim=2).values))),
    Model("nll_loss", "NegativeLogLikelihoodLoss in the model (--loss=output), ignore_index",
          lambda: Lambda(lambda m, x: F.nll_loss(torch.tanh(m.fc(x)), m.target.value,
                                                 ignore_index=2),
                         fc=nn.Linear(6, 4), target=Buffer([1, 2, 0, 3])),
          (6,), "output"),
    Model("softmax_ce_ignore", "SoftmaxCrossEntropyLoss in the model, ignore_index, [N, C, T]",
          lambda: Lambda(lambda m, x: F.cross_entropy(m.fc(x).transpose(1, 2), m.target.value,
                                                      ignore_index=0),
                         fc=nn.Linear(6, 4), target=Buffer([[1, 0, 3], [2, 2, 0], [0, 1, 1],
                                                            [3, 3, 2]])),
          (3, 6), "output"),
    # Ops of real models with their own tc op
    Model("cumsum", "CumSum along axis 1 of [4, 3, 5] (torch.cumsum; the gradient is a "
          "reverse cumsum)",
          lambda: Lambda(lambda m, x: torch.cumsum(torch.matmul(x, m.w), dim=1),
                         w=param(6, 5, scale=0.4)),
          (3, 6), "mse"),
    Model("cumsum_last", "CumSum along the last axis scaled by a parameter (torch.cumsum)",
          lambda: Lambda(lambda m, x: torch.cumsum(m.fc(x), dim=-1) * m.s,
                         fc=nn.Linear(6, 5), s=param(5)),
          (6,), "mse"),
    Model("pad_constant", "Pad constant 0.5 with a crop (F.pad, pads (1, 2) on the last axis "
          "and (-1, 1) on axis 1 of [4, 3, 5])",
          lambda: Lambda(lambda m, x: F.pad(torch.matmul(x, m.w), (1, 2, -1, 1), value=0.5) * m.s,
                         w=param(6, 5, scale=0.4), s=param(3, 8)),
          (3, 6), "mse"),
    Model("pad_reflect", "Pad reflect (F.pad mode='reflect', (2, 1, 1, 3)) of a conv map",
          lambda: Lambda(lambda m, x: F.pad(m.conv(x), (2, 1, 1, 3), mode="reflect").flatten(1),
                         conv=nn.Conv2d(2, 3, 3)),
          (2, 6, 6), "mse"),
    Model("pad_edge", "Pad edge (F.pad mode='replicate', (2, 1, 1, 3)) of a conv map",
          lambda: Lambda(lambda m, x: F.pad(m.conv(x), (2, 1, 1, 3), mode="replicate").flatten(1),
                         conv=nn.Conv2d(2, 3, 3)),
          (2, 6, 6), "mse"),
    Model("tile", "Tile (x.repeat(1, 2, 3) of [4, 3, 5]) scaled by a parameter",
          lambda: Lambda(lambda m, x: torch.matmul(x, m.w).repeat(1, 2, 3) * m.s,
                         w=param(6, 5, scale=0.4), s=param(6, 15)),
          (3, 6), "mse"),
    Model("trilu", "Trilu: torch.triu(h, 1) - torch.tril(g, -1) of [4, 3, 5] maps",
          lambda: Lambda(lambda m, x: torch.triu(torch.matmul(x, m.a), 1) -
                         torch.tril(torch.matmul(x, m.b), -1),
                         a=param(6, 5, scale=0.4), b=param(6, 5, scale=0.4)),
          (3, 6), "mse"),
    Model("fmod", "Mod fmod=1 (torch.fmod) of activations by a parameter vector, quotients "
          "away from integers",
          lambda: Lambda(lambda m, x: torch.fmod(3 * m.fc(x), m.d),
                         fc=nn.Linear(6, 5), d=nn.Parameter(torch.tensor([0.7, -1.1, 1.3, 0.9, -0.8]))),
          (6,), "mse",
          valid=lambda m, x: bool((lambda q: ((q - torch.trunc(q)).abs() - 0.5).abs().max() < 0.45)(
              3 * m.fc(x) / m.d))),
    # ArgMax and GatherElements
    Model("gather_elements", "GatherElements along the last axis of [4, 3, 5] scores (torch.gather, "
          "an expanded constant index with repeats: the gradient scatter-adds them)",
          lambda: Lambda(lambda m, x: torch.gather(
              torch.matmul(x, m.w), -1,
              torch.tensor([[[0, 2, 2, 4], [1, 1, 1, 3], [4, 0, 4, 0]]]).expand(x.shape[0], -1, -1)) * m.s,
                         w=param(6, 5, scale=0.4), s=param(3, 4)),
          (3, 6), "mse"),
    # Clip's gradient at its bounds is hardtanh's (nn.ReLU6 exports as Clip): a
    # batch-norm channel of a constant input is exactly 0 into ReLU6, where
    # PyTorch passes no gradient (MobileNet v2's dead channels).
    Model("relu6_bound", "Clip from nn.ReLU6 with inputs exactly at 0 (a constant channel "
          "through BatchNorm): no gradient at the bound, as PyTorch's hardtanh",
          lambda: relu6_dead_channel(), (6,), "mse"),
    Model("dropout", "Dropout 0.3 in training between two Linears (trainc's mask in PyTorch)",
          lambda: nn.Sequential(nn.Linear(6, 8), nn.Tanh(), MaskedDropout(0.3), nn.Linear(8, 3)),
          (6,), "mse", weighted=True),
    Model("dropout_two", "two Dropouts (0.5 on a conv map, 0.2 on logits): distinct masks",
          lambda: nn.Sequential(nn.Conv2d(2, 3, 3), MaskedDropout(0.5), nn.Flatten(),
                                nn.Linear(27, 4), MaskedDropout(0.2)),
          (2, 5, 5), "cross-entropy"),
    # Einsum and rounding ops
    Model("einsum_attention", "Einsum with maxvit's equations: scores 'B G H I D, B G H J D -> "
          "B G H I J', softmax, then 'B G H I J, B G H J D -> B G H I D' (torch.einsum)",
          lambda: Lambda(lambda m, x: torch.einsum(
              "B G H I J, B G H J D -> B G H I D",
              torch.softmax(torch.einsum("B G H I D, B G H J D -> B G H I J",
                                         torch.matmul(x, m.wq), torch.matmul(x, m.wk)), dim=-1),
              torch.matmul(x, m.wv)).flatten(1),
              wq=param(4, 4, scale=0.5), wk=param(4, 4, scale=0.5), wv=param(4, 4, scale=0.5)),
          (2, 3, 5, 4), "mse"),
    Model("sign_rounding", "Sign, Ceil, Floor, Round (torch.sign/ceil/floor/round; zero "
          "gradients) of 3 * Linear, Sign also scaling a second Linear",
          lambda: Lambda(lambda m, x: (lambda h: m.fc(x) * (1 + 0.5 * torch.sign(h)) +
                                       torch.ceil(h) + torch.floor(h) + torch.round(h))(3 * m.g(x)),
                         fc=nn.Linear(6, 5), g=nn.Linear(6, 5)),
          (6,), "mse",
          valid=lambda m, x: bool((lambda f: torch.minimum(torch.minimum(f, (f - 0.5).abs()),
                                                           1 - f).min() > 0.02)(
              torch.frac(3 * m.g(x)).abs()))),
    # Ops of real models, decomposed at import
    Model("conv1d", "1-D Conv (Conv1d, stride 2, padding 1, bias) as a 2-D tc.conv",
          lambda: nn.Sequential(nn.Conv1d(2, 3, 3, stride=2, padding=1), nn.Flatten()),
          (2, 9), "mse"),
    Model("conv1d_groups_dilation", "1-D Conv with 2 groups, dilation 2, no bias",
          lambda: nn.Sequential(nn.Conv1d(4, 6, 3, dilation=2, groups=2, bias=False),
                                nn.Flatten()),
          (4, 10), "mse"),
    Model("maxpool1d", "MaxPool1d 3, stride 2, padding 1, and 2 with ceil_mode (no ties)",
          lambda: nn.Sequential(nn.Conv1d(2, 3, 3, padding=1), nn.MaxPool1d(3, 2, 1),
                                nn.MaxPool1d(2, ceil_mode=True), nn.Flatten()),
          (2, 9), "mse"),
    Model("avgpool1d", "AvgPool1d 3, stride 2, padding 1 without the padding in the count, "
          "then 2 with ceil_mode",
          lambda: nn.Sequential(nn.Conv1d(2, 3, 3, padding=1),
                                nn.AvgPool1d(3, 2, 1, count_include_pad=False),
                                nn.AvgPool1d(2, ceil_mode=True), nn.Flatten()),
          (2, 9), "mse"),
    Model("global_pool1d", "GlobalAveragePool and a MaxPool over all of L (PyTorch's exports "
          "of AdaptiveAvgPool1d(1) and AdaptiveMaxPool1d(1)) on [N, C, L]",
          lambda: Lambda(lambda m, x: torch.cat([F.adaptive_avg_pool1d(m.conv(x), 1),
                                                 F.adaptive_max_pool1d(m.conv(x), 1)],
                                                dim=1).flatten(1),
                         conv=nn.Conv1d(2, 3, 3)),
          (2, 7), "cross-entropy",
          valid=lambda m, x: bool((lambda t: (t[..., -1] - t[..., -2]).min() > 0.02)(
              torch.sort(m.conv(x), dim=2).values))),
    Model("groupnorm", "GroupNorm(2, 4) after a Conv (InstanceNormalization of [N, 2, 18])",
          lambda: nn.Sequential(nn.Conv2d(2, 4, 3), nn.GroupNorm(2, 4), nn.Flatten()),
          (2, 5, 5), "mse"),
    Model("instancenorm", "InstanceNorm1d(3, affine) after a Conv1d, eps 1e-3",
          lambda: nn.Sequential(nn.Conv1d(2, 3, 3), nn.InstanceNorm1d(3, eps=1e-3, affine=True),
                                nn.Flatten()),
          (2, 8), "mse"),
    Model("hardsigmoid", "HardSigmoid (F.hardsigmoid: alpha 1/6, beta 1/2) after a Linear",
          lambda: nn.Sequential(nn.Linear(6, 5, bias=True), nn.Hardsigmoid()), (6,), "mse",
          valid=lambda m, x: bool(((m[0](x).abs() - 3).abs() > 0.05).all())),
    Model("hardswish", "HardSwish after a Linear, scaled so some inputs pass -3 and 3",
          lambda: nn.Sequential(nn.Linear(6, 5), Lambda(lambda m, x: F.hardswish(3 * x))),
          (6,), "mse",
          valid=lambda m, x: bool(((3 * m[0](x)).abs() - 3).abs().min() > 0.05)),
    Model("hardsigmoid_bounds", "HardSigmoid at exactly -3 and 3 and their float neighbours "
          "(s * points, s ones: PyTorch's gradient 0 at the bounds)",
          lambda: Lambda(lambda m, x: F.hardsigmoid(m.s * m.points) + 0 * x, s=nn.Parameter(torch.ones(9)),
                         points=nn.Parameter(torch.tensor([-3.0, 3.0, -4.0, 4.0, 0.5, 2.9999998,
                                                           -2.9999998, 3.0000002, -3.0000002]))),
          (9,), "mse"),
    Model("hardswish_bounds", "HardSwish at exactly -3 and 3 and their float neighbours "
          "(s * points, s ones: PyTorch's gradient -1/2 and 3/2 at the bounds)",
          lambda: Lambda(lambda m, x: F.hardswish(m.s * m.points) + 0 * x, s=nn.Parameter(torch.ones(9)),
                         points=nn.Parameter(torch.tensor([-3.0, 3.0, -4.0, 4.0, 0.5, 2.9999998,
                                                           -2.9999998, 3.0000002, -3.0000002]))),
          (9,), "mse"),
    Model("elu_selu_celu", "Elu (alpha 0.7), Selu and Celu (alpha 1.3) after a Linear",
          lambda: nn.Sequential(nn.Linear(6, 5), Lambda(lambda m, x: torch.cat(
              [F.elu(x, alpha=0.7), F.selu(x), F.celu(x, alpha=1.3)], dim=1))),
          (6,), "mse", valid=away_from_zero(lambda m, x: m[0](x))),
    Model("softplus_mish_softsign", "Softplus, Mish (Softplus, Tanh, Mul) and Softsign after "
          "a Linear", lambda: nn.Sequential(nn.Linear(6, 5), Lambda(lambda m, x: torch.cat(
              [F.softplus(2 * x), F.mish(2 * x), F.softsign(2 * x)], dim=1))),
          (6,), "mse"),
    Model("prelu", "PRelu: nn.PReLU(3) per channel after a Conv (the slope's gradient summed "
          "over N, H, W)", lambda: nn.Sequential(nn.Conv2d(2, 3, 3), nn.PReLU(3), nn.Flatten()),
          (2, 5, 5), "mse", valid=away_from_zero(lambda m, x: m[0](x), margin=0.002)),
    Model("hardtanh", "Hardtanh(-0.5, 0.8) (exported as Clip) after a Linear",
          lambda: nn.Sequential(nn.Linear(6, 5), nn.Hardtanh(-0.5, 0.8)), (6,), "mse",
          valid=lambda m, x: bool(((m[0](x) + 0.5).abs().min() > 0.02) and
                                  ((m[0](x) - 0.8).abs().min() > 0.02))),
    Model("trig", "Sin, Cos, Tan, Atan, Asin, Acos, Sinh and Cosh after a Linear",
          lambda: nn.Sequential(nn.Linear(6, 5), Lambda(lambda m, x: torch.cat(
              [torch.sin(2 * x), torch.cos(2 * x), torch.tan(0.5 * x), torch.atan(2 * x),
               torch.asin(0.9 * torch.tanh(x)), torch.acos(0.9 * torch.tanh(x)),
               torch.sinh(x), torch.cosh(x)], dim=1))),
          (6,), "mse"),
    Model("conv_transpose", "ConvTranspose2d(3, 4, 3, stride 2, padding 1, output_padding 1) "
          "with bias", lambda: nn.Sequential(nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1,
                                                                 output_padding=1), nn.Flatten()),
          (3, 4, 5), "mse"),
    Model("conv_transpose_groups", "ConvTranspose2d(4, 6, (2, 3), stride (2, 1), groups 2, "
          "dilation (1, 2)) without bias", lambda: nn.Sequential(
              nn.ConvTranspose2d(4, 6, (2, 3), stride=(2, 1), groups=2, dilation=(1, 2),
                                 bias=False), nn.Flatten()),
          (4, 3, 4), "mse"),
    Model("conv_transpose_1d", "ConvTranspose1d(2, 3, 4, stride 2, padding 1) after a Conv1d",
          lambda: nn.Sequential(nn.Conv1d(2, 2, 3), nn.ConvTranspose1d(2, 3, 4, stride=2,
                                                                       padding=1), nn.Flatten()),
          (2, 7), "mse"),
    Model("pixel_shuffle", "DepthToSpace (nn.PixelShuffle(2), CRD) after a Conv",
          lambda: nn.Sequential(nn.Conv2d(2, 8, 3, padding=1), nn.PixelShuffle(2), nn.Flatten()),
          (2, 3, 4), "mse"),
    Model("amin", "ReduceMin (torch.amin over axis 2) after a Linear",
          lambda: nn.Sequential(nn.Linear(6, 5), Lambda(lambda m, x: torch.amin(
              x.reshape(x.shape[0], 1, 5), dim=2))),
          (6,), "mse"),
    Model("mqa_matmul", "MatMul with partially broadcast batch axes (multi-query attention: "
          "one key head [N, 1, 3, 2] against two query heads [N, 2, 3, 2])",
          lambda: Lambda(lambda m, x: torch.matmul(
              torch.matmul(x, m.q).reshape(x.shape[0], 3, 2, 2).transpose(1, 2),
              torch.matmul(x, m.k).reshape(x.shape[0], 1, 3, 2).transpose(2, 3)).flatten(1),
              q=param(4, 4, scale=0.5), k=param(4, 2, scale=0.5)),
          (3, 4), "mse"),
    Model("lstm", "LSTM: nn.LSTM(3, 4, 2 layers, batch_first), Y of the top layer and both "
          "layers' final h and c", lambda: Lambda(lambda m, x: torch.cat(
              [m.rnn(x)[0].flatten(1)] + [s.transpose(0, 1).flatten(1) for s in m.rnn(x)[1]], 1),
              rnn=nn.LSTM(3, 4, num_layers=2, batch_first=True)),
          (5, 3), "mse"),
    Model("lstm_initial_state", "LSTM from learned initial h and c (initial_h, initial_c "
          "inputs), reverse direction by flipping", lambda: Lambda(lambda m, x: m.rnn(
              x.flip(1), (m.h0.expand(1, x.shape[0], 4).contiguous(),
                          m.c0.expand(1, x.shape[0], 4).contiguous()))[0].flatten(1),
              rnn=nn.LSTM(3, 4, batch_first=True), h0=param(1, 1, 4), c0=param(1, 1, 4)),
          (4, 3), "mse"),
    Model("gru_bidirectional", "GRU: nn.GRU(3, 4, bidirectional, batch_first) "
          "(linear_before_reset), Y and the final h of both directions",
          lambda: Lambda(lambda m, x: torch.cat(
              [m.rnn(x)[0].flatten(1), m.rnn(x)[1].transpose(0, 1).flatten(1)], 1),
              rnn=nn.GRU(3, 4, bidirectional=True, batch_first=True)),
          (5, 3), "mse"),
    Model("rnn_tanh", "RNN: nn.RNN(3, 4, 2 layers, tanh, batch_first) into a Linear",
          lambda: Lambda(lambda m, x: m.fc(m.rnn(x)[0][:, -1]),
                         rnn=nn.RNN(3, 4, num_layers=2, batch_first=True), fc=nn.Linear(4, 3)),
          (5, 3), "cross-entropy"),
    Model("upsample_nearest", "Resize nearest (F.interpolate scale 2, asymmetric, floor) "
          "after a Conv: the gradient sums each 2x2 block",
          lambda: nn.Sequential(nn.Conv2d(2, 3, 3), Lambda(lambda m, x: F.interpolate(
              x, scale_factor=2, mode="nearest")), nn.Flatten()),
          (2, 4, 5), "mse"),
    Model("upsample_bilinear", "Resize linear (F.interpolate bilinear scale 2, "
          "pytorch_half_pixel) after a Conv", lambda: nn.Sequential(
              nn.Conv2d(2, 3, 3), Lambda(lambda m, x: F.interpolate(
                  x, scale_factor=2, mode="bilinear", align_corners=False)), nn.Flatten()),
          (2, 4, 5), "mse"),
    Model("resize_bilinear_align_corners", "Resize linear to a size (7, 9) with "
          "align_corners, and down by 0.5 (half pixel)", lambda: nn.Sequential(
              nn.Conv2d(2, 3, 1), Lambda(lambda m, x: torch.cat([F.interpolate(
                  x, size=(7, 9), mode="bilinear", align_corners=True).flatten(1),
                  F.interpolate(x, scale_factor=0.5, mode="bilinear").flatten(1)], 1))),
          (2, 4, 6), "mse"),
    Model("reduce_prod", "ReduceProd (torch.prod over axis 2 of [N, 3, 4]) after a Linear, "
          "one input row of exact zeros: the product rule's gradient at 0",
          lambda: Lambda(lambda m, x: torch.prod(torch.matmul(x, m.w).reshape(
              x.shape[0], 3, 4) * torch.tensor([[1.0] * 4, [1.0, 0.0, 1.0, 1.0], [1.0] * 4]),
              dim=2), w=param(6, 12, scale=0.5)),
          (6,), "mse"),
    Model("topk", "TopK (torch.topk k=3 largest over axis 1, and k=2 smallest over axis 2) "
          "after a Linear: the gradient reaches the selected elements only",
          lambda: Lambda(lambda m, x: torch.cat([
              torch.topk(torch.matmul(x, m.w), 3, dim=1)[0].flatten(1),
              torch.topk(torch.matmul(x, m.w), 2, dim=2, largest=False)[0].flatten(1)], 1),
              w=param(6, 5, scale=0.5)),
          (4, 6), "mse"),
    Model("scatter_elements", "ScatterElements: torch.scatter (none: data's gradient zeroed "
          "where written) and scatter_add (add), data and updates both from Linears",
          lambda: Lambda(lambda m, x: torch.cat([
              torch.matmul(x, m.d).scatter(2, torch.zeros_like(torch.matmul(x, m.u)).long() +
                                           torch.tensor([[4, 0], [2, 5], [1, 3]]),
                                           torch.matmul(x, m.u)).flatten(1),
              torch.matmul(x, m.d).scatter_add(2, torch.zeros_like(x[:, :, :3]).long() +
                                               torch.tensor([0, 0, 5]),
                                               torch.matmul(x[:, :, :3], m.v)).flatten(1)], 1),
              d=param(4, 6, scale=0.5), u=param(4, 2, scale=0.5), v=param(3, 3, scale=0.5)),
          (3, 4), "mse"),
    Model("repeat_interleave_batch", "repeat_interleave over the dynamic batch (exported as "
          "Loop, SplitToSequence, SequenceInsert, ConcatFromSequence): unrolled at import",
          lambda: Lambda(lambda m, x: torch.matmul(x, m.w).repeat_interleave(2, dim=0).reshape(
              x.shape[0], 10), w=param(6, 5, scale=0.5)),
          (6,), "mse"),
    Model("reduce_l2", "ReduceL2 (torch.norm(p=2) over axis 1 of [4, 3, 5]) and F.normalize",
          lambda: Lambda(lambda m, x: torch.cat([torch.norm(torch.matmul(x, m.w), p=2, dim=1),
                                                 F.normalize(torch.matmul(x, m.w), dim=2)[:, 0]],
                                                dim=1),
                         w=param(6, 5, scale=0.4)),
          (3, 6), "mse"),
    Model("reduce_l2_zero", "ReduceL2 over a slice of zeros: gradient 0 as PyTorch's, not NaN",
          lambda: Lambda(lambda m, x: torch.norm(torch.matmul(x, m.w) * torch.tensor(
              [[0.0], [1.0], [1.0]]), p=2, dim=2, keepdim=True).flatten(1),
              w=param(6, 5, scale=0.4)),
          (3, 6), "mse"),
    Model("reduce_l1", "ReduceL1 (torch.norm(p=1)) over the last axis, keepdim",
          lambda: Lambda(lambda m, x: torch.norm(torch.matmul(x, m.w), p=1, dim=2,
                                                 keepdim=True).flatten(1),
                         w=param(6, 5, scale=0.4)),
          (3, 6), "mse", valid=away_from_zero(lambda m, x: torch.matmul(x, m.w))),
    Model("logsumexp", "ReduceLogSumExp (torch.logsumexp over axis 1, and over axes 1, 2 kept)",
          lambda: Lambda(lambda m, x: torch.cat(
              [torch.logsumexp(torch.matmul(x, m.w), dim=1),
               torch.logsumexp(torch.matmul(x, m.w), dim=(1, 2), keepdim=True).flatten(1)],
              dim=1), w=param(6, 5, scale=2.0)),
          (3, 6), "mse"),
]


# ---------------------------------------------------------------------------
# Data and the PyTorch reference.
# ---------------------------------------------------------------------------

def make_instance(model, index):
    """The module, its input and label, with seeds tried until `valid` holds."""
    for attempt in range(200):
        seed = 1000 * index + attempt
        torch.manual_seed(seed)
        module = model.build().float()
        module.train()
        if model.vocab:
            # Every row repeats a token, so the embedding gradient accumulates.
            x = torch.randint(0, model.vocab, (BATCH,) + model.in_shape)
            x[:, -1] = x[:, 0]
        else:
            x = torch.randn(BATCH, *model.in_shape, dtype=torch.float32)
        if model.valid is None or model.valid(module, x):
            break
    else:
        raise RuntimeError("no seed keeps %s away from its kinks" % model.name)
    with torch.no_grad():
        y = module(x)
    gen = torch.Generator().manual_seed(seed + 7)
    if model.loss == "output":  # no label input
        label = torch.zeros(())
    elif model.loss == "cross-entropy":
        label = torch.randint(0, y.shape[1], (y.shape[0],) + tuple(y.shape[2:]), generator=gen)
    elif model.loss == "mse":
        label = torch.randn(y.shape, generator=gen)
    else:  # bce: mostly hard 0/1 targets, some soft ones
        label = (torch.rand(y.shape, generator=gen) > 0.5).float()
        label[0] = torch.rand(y.shape[1:], generator=gen)
    return module, x, label


def torch_loss(kind, y, label):
    if kind == "output":  # the model's own scalar loss
        return y
    if kind == "cross-entropy":
        return F.cross_entropy(y, label, reduction="mean")
    if kind == "mse":
        return F.mse_loss(y, label, reduction="mean")
    return F.binary_cross_entropy_with_logits(y, label, reduction="mean")


def reference(module, x, label, kind, samples):
    """Loss and gradients by name, on the first `samples` samples."""
    module.zero_grad()
    y = module(x[:samples])
    loss = torch_loss(kind, y, label[:samples] if label.dim() else label)
    loss.backward()
    grads = {name: p.grad.detach().numpy().copy() if p.grad is not None
             else np.zeros(p.shape, np.float32)
             for name, p in module.named_parameters()}
    return loss.detach().numpy().astype(np.float32), grads


def export_with_metadata(module, x, path):
    """export() through python/trainc_torch.py, which adds the trainc.* metadata."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "..", "python"))
    import trainc_torch
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: ONNX itself cannot say padding_idx
        trainc_torch.export_for_training(module, (x,), path, ["x"], ["y"])
    m = onnx.load(path)
    float_inits = [i.name for i in m.graph.initializer
                   if i.data_type == onnx.TensorProto.FLOAT]
    return float_inits, sorted({n.op_type for n in m.graph.node})


def export(module, x, path):
    # torch 1.13's exporter has no symbolic for sinh and cosh (ONNX Sinh and
    # Cosh since opset 9): the one-node mapping, as later releases export them.
    for name in ("sinh", "cosh"):
        torch.onnx.register_custom_op_symbolic(
            "aten::" + name, lambda g, t, op=name.capitalize(): g.op(op, t), 9)
    # Constant folding off, training mode: the graph PyTorch trains.
    torch.onnx.export(module, (x,), path, opset_version=17, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.TRAINING,
                      input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "N"}, "y": {0: "N"}},
                      keep_initializers_as_inputs=False)
    m = onnx.load(path)
    float_inits = [i.name for i in m.graph.initializer
                   if i.data_type == onnx.TensorProto.FLOAT]
    ops = sorted({n.op_type for n in m.graph.node})
    return float_inits, ops


# ---------------------------------------------------------------------------
# Running trainc.
# ---------------------------------------------------------------------------

def first_line(text):
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return "(no message)"


def compile_program(trainc, onnx_path, prog, loss):
    cmd = [trainc, "compile", onnx_path, "--target=cpu", "--batch-size=%d" % BATCH]
    if loss:
        cmd += ["--loss=" + loss, "--entry=train_step"]
    cmd += ["-o", prog]
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return "timed out after 600 s: " + " ".join(cmd)
    if run.returncode != 0:
        return "exit %d: %s" % (run.returncode, first_line(run.stderr or run.stdout))
    if not os.path.exists(prog):
        return "exit 0 but no program at " + prog
    return None


def run_program(prog, data, out):
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    try:
        run = subprocess.run([prog, "--run", "--data", data, "--out", out],
                             capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return "timed out after 300 s"
    if run.returncode != 0:
        return "exit %d: %s" % (run.returncode, first_line(run.stderr or run.stdout))
    return None


def write_data(data, x, label, weights, dropout_key=None):
    shutil.rmtree(data, ignore_errors=True)
    os.makedirs(data)
    if dropout_key is not None:
        np.save(os.path.join(data, "dropout_key.npy"), np.asarray(dropout_key, np.int64))
    np.save(os.path.join(data, "x.npy"),
            x.numpy() if x.dtype == torch.int64 else x.numpy().astype(np.float32))
    lab = label.numpy()
    lab = lab.astype(np.int64) if lab.dtype.kind in "iu" else lab.astype(np.float32)
    np.save(os.path.join(data, "label.npy"), lab)
    np.save(os.path.join(data, "sample_weights.npy"), np.asarray(weights, np.float32))
    # The real rows (a batch norm's, when the model has one): the weighted
    # runs drop a sample as the padding of a short batch.
    np.save(os.path.join(data, "sample_mask.npy"),
            (np.asarray(weights, np.float32) != 0).astype(np.float32))


def compare(got, want):
    """(ok, max abs err, note)."""
    if got.shape != want.shape:
        return False, float("nan"), "shape %s, want %s" % (list(got.shape), list(want.shape))
    if got.dtype != np.float32:
        return False, float("nan"), "dtype %s, want float32" % got.dtype
    err = float(np.abs(got.astype(np.float64) - want.astype(np.float64)).max()) \
        if got.size else 0.0
    ok = bool(np.allclose(got, want, rtol=RTOL, atol=ATOL)) and bool(np.all(np.isfinite(got)))
    note = ""
    if not ok:
        # Hints for a wrong rule: a scale factor (a missing 1/N, a factor 2,
        # a sign) shows as a ratio; NaN/Inf and the worst element are named.
        g, w = got.astype(np.float64).ravel(), want.astype(np.float64).ravel()
        if not np.all(np.isfinite(g)):
            note = "%d non-finite values" % int((~np.isfinite(g)).sum())
        else:
            worst = int(np.abs(g - w).argmax())
            note = "worst at flat index %d: got %.6g, want %.6g" % (worst, g[worst], w[worst])
            if float(w @ w) > 0:
                note += "; got ~ %.4g x want" % (float(g @ w) / float(w @ w))
    return ok, err, note


class Checker:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def __call__(self, ok, what):
        print(("PASS" if ok else "FAIL") + ": grad :: " + what, flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed += 1


def check_outputs(check, tag, out, loss_ref, grads_ref, float_inits):
    """Loss and one check per parameter."""
    path = os.path.join(out, "loss.npy")
    if not os.path.exists(path):
        check(False, "%s loss: no loss.npy in the output" % tag)
    else:
        ok, err, note = compare(np.load(path), loss_ref)
        check(ok, "%s loss (max abs err %.3g, %s)%s" % (tag, err, TOL_TEXT,
                                                       ": " + note if note else ""))
    for name, want in grads_ref.items():
        path = os.path.join(out, "grad.%s.npy" % name)
        if not os.path.exists(path):
            written = sorted(f for f in os.listdir(out) if f.startswith("grad."))
            check(False, "%s grad.%s: no grad.%s.npy (written: %s)"
                  % (tag, name, name, ", ".join(written) or "none"))
            continue
        ok, err, note = compare(np.load(path), want)
        check(ok, "%s grad.%s (max abs err %.3g, %s)%s" % (tag, name, err, TOL_TEXT,
                                                           ": " + note if note else ""))


def check_untrained(check, tag, out, module, grads_ref):
    """With the metadata, frozen parameters and buffers get no gradient at all:
    trainc writes grad.NAME.npy for exactly the requires_grad parameters."""
    trained = sorted(n for n, p in module.named_parameters() if p.requires_grad)
    for name in list(grads_ref):
        if name not in trained:
            del grads_ref[name]
    written = sorted(f[len("grad."):-len(".npy")] for f in os.listdir(out)
                     if f.startswith("grad.") and f.endswith(".npy"))
    check(written == trained, "%s gradients written for %s (the trainable parameters: %s)"
          % (tag, ", ".join(written), ", ".join(trained)))


def check_model(trainc, work, model, index, check, forward_only):
    module, x, label = make_instance(model, index)
    mdir = os.path.join(work, model.name)
    shutil.rmtree(mdir, ignore_errors=True)
    os.makedirs(mdir)
    onnx_path = os.path.join(mdir, model.name + ".onnx")
    if model.metadata:
        float_inits, ops = export_with_metadata(module, x, onnx_path)
    else:
        float_inits, ops = export(module, x, onnx_path)
    params = [n for n, _ in module.named_parameters()]
    missing = [p for p in params if p not in float_inits]
    if missing:
        # The harness's own problem (PyTorch renamed an initializer): say so.
        check(False, "%s export: parameters %s are not ONNX initializers (initializers: %s)"
              % (model.name, missing, float_inits))
        return
    prog = os.path.join(mdir, "prog")
    data = os.path.join(mdir, "data")
    out = os.path.join(mdir, "out")

    if forward_only:
        err = compile_program(trainc, onnx_path, prog, None)
        if err:
            check(False, "%s forward compiles [%s]: %s" % (model.name, " ".join(ops), err))
            return
        write_data(data, x, label, np.ones(BATCH))
        err = run_program(prog, data, out)
        if err:
            check(False, "%s forward runs: %s" % (model.name, err))
            return
        with torch.no_grad():
            want = module(x).numpy()
        ok, e, note = compare(np.load(os.path.join(out, "y.npy")), want)
        check(ok, "%s forward y (max abs err %.3g, %s)%s" % (model.name, e, TOL_TEXT,
                                                              ": " + note if note else ""))
        return

    err = compile_program(trainc, onnx_path, prog, model.loss)
    if err:
        check(False, "%s compiles (--loss=%s; ONNX ops %s): %s"
              % (model.name, model.loss, " ".join(ops), err))
        return

    graph = onnx.load(onnx_path).graph
    initial = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    # Dropout: the step draws its masks from the key [seed, step]; PyTorch
    # applies the same masks (the k-th Dropout node is the k-th dropout module
    # run, and its stream is its node position).
    dropout_key = None
    dropouts = [m for m in module.modules() if isinstance(m, MaskedDropout)]
    if dropouts:
        dropout_key = (9000 + index, 3)
        streams = [i for i, n in enumerate(graph.node) if n.op_type == "Dropout"]
        if len(streams) != len(dropouts):
            check(False, "%s export: %d Dropout nodes for %d dropout modules"
                  % (model.name, len(streams), len(dropouts)))
            return
        for m, stream in zip(dropouts, streams):
            m.mask_fn = (lambda p, s: lambda shape: philox.dropout_scale_mask(
                shape, p, dropout_key[0], dropout_key[1], s))(m.p, stream)
    runs = [("", np.ones(BATCH), BATCH)]
    if model.weighted:
        runs.append((" weights [1,1,1,0]", np.array([1, 1, 1, 0]), BATCH - 1))
    for suffix, weights, samples in runs:
        tag = model.name + suffix
        write_data(data, x, label, weights, dropout_key)
        err = run_program(prog, data, out)
        if err:
            check(False, "%s runs: %s" % (tag, err))
            continue
        # Batch norm buffers start from the exported values; PyTorch's forward
        # in train mode then updates them as the step must.
        stats = {name: buf for name, buf in module.named_buffers()
                 if name in initial and buf.dtype == torch.float32}
        if model.metadata:  # only batch-norm statistics are written back
            stats = {n: b for n, b in stats.items()
                     if n.rsplit(".", 1)[-1] in ("running_mean", "running_var")}
        with torch.no_grad():
            for name, buf in stats.items():
                buf.copy_(torch.tensor(initial[name]))
        loss_ref, grads_ref = reference(module, x, label, model.loss, samples)
        if model.metadata:
            check_untrained(check, tag, out, module, grads_ref)
        check_outputs(check, tag, out, loss_ref, grads_ref, float_inits)
        for name, buf in stats.items():
            path = os.path.join(out, name + ".npy")
            if not os.path.exists(path):
                check(False, "%s running statistic %s: no %s.npy" % (tag, name, name))
                continue
            ok, err, note = compare(np.load(path), buf.numpy())
            check(ok, "%s updated %s (max abs err %.3g, %s)%s"
                  % (tag, name, err, TOL_TEXT, ": " + note if note else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trainc")
    ap.add_argument("workdir")
    ap.add_argument("--filter", default=None, help="only models whose name matches REGEX")
    ap.add_argument("--forward", action="store_true",
                    help="check the plain forward program instead of the gradients")
    args = ap.parse_args()

    torch.set_num_threads(1)
    trainc = os.path.abspath(args.trainc)
    work = os.path.abspath(args.workdir)
    os.makedirs(work, exist_ok=True)
    check = Checker()
    selected = [(i, m) for i, m in enumerate(MODELS)
                if args.filter is None or re.search(args.filter, m.name)]
    if not selected:
        print("no model matches --filter %r" % args.filter)
    for index, model in selected:
        try:
            check_model(trainc, work, model, index, check, args.forward)
        except Exception as e:  # a harness error is a failure too, never a crash
            check(False, "%s: harness error %s: %s" % (model.name, type(e).__name__,
                                                       first_line(str(e))))
    print("%d passed, %d failed" % (check.passed, check.failed))
    return 1 if check.failed else 0


if __name__ == "__main__":
    sys.exit(main())
