#!/usr/bin/python3
"""Normalization epilogues and prologues: a batch norm or layer norm heading
a tc.fused group computes the same numbers as the norm and the group's
kernels one after the other, in fewer calls.

Usage: check_fusion.py TRAINC WORKDIR

  * a small residual conv net (conv, batch norm, ReLU, residual adds, a
    strided block with a downsample branch) and a small pre-norm residual
    MLP (layer norms after residual adds): --fuse=auto trains the same
    losses and ends with the same weights and running statistics as
    --fuse=none, bit for bit, over steps that include a short last batch
    (its padding masked out of the batch statistics): in fp32, channels-last
    (NHWC), with --grad-accum=2, and the residual MLP too (the
    --fuse=none programs are the ones the grad, zoo and training suites
    compare with PyTorch);
  * what fuses: every batch norm of the conv net's training step that a
    ReLU or a residual add follows heads a group, so does every backward
    batch norm whose gradient a ReLU mask computes, and every layer norm;
    torchvision's ResNet-18 launches at most 0.6 as many calls a training
    step fused as unfused (0.78 with GEMM epilogues and pointwise groups
    alone).
Prints one line per check and 'N passed, N failed'.
"""

import json
import os
import re
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "test", "pylib"))
from checksuite import suite_main  # noqa: E402


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def conv_net():
    import torch
    import torch.nn as nn

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

        def forward(self, x):
            y = self.bn2(self.conv2(self.bn1(self.conv1(x)).relu()))
            return (y + (self.down(x) if self.down is not None else x)).relu()

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1, bias=False), nn.BatchNorm2d(8),
                                      nn.ReLU())
            self.blocks = nn.Sequential(Block(8, 8, 1), Block(8, 16, 2))
            self.fc = nn.Linear(16, 10)

        def forward(self, x):
            return self.fc(self.blocks(self.stem(x)).mean((2, 3)))

    net = Net()
    distinct_statistics(net)
    return net, (3, 12, 12)


def distinct_statistics(net):
    """Distinct, non-trivial batch-norm statistics and affine parameters
    (fresh ones are 0s and 1s, which the exporter would share between
    initializers)."""
    import torch
    import torch.nn as nn
    for k, m in enumerate(m for m in net.modules() if isinstance(m, nn.BatchNorm2d)):
        g = torch.Generator().manual_seed(10 + k)
        n = m.num_features
        with torch.no_grad():
            m.weight.copy_(1 + 0.1 * torch.randn(n, generator=g))
            m.bias.copy_(0.1 * torch.randn(n, generator=g))
            m.running_mean.copy_(0.1 * torch.randn(n, generator=g))
            m.running_var.copy_(1 + 0.1 * torch.rand(n, generator=g))


def residual_mlp():
    import torch
    import torch.nn as nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.pos = nn.Parameter(torch.randn(6, 32) * 0.1)
            self.norms = nn.ModuleList([nn.LayerNorm(32) for _ in range(3)])
            self.mlps = nn.ModuleList([nn.Sequential(nn.Linear(32, 64), nn.GELU(),
                                                     nn.Linear(64, 32)) for _ in range(2)])
            self.head = nn.Linear(32, 10)

        def forward(self, x):
            h = x + self.pos
            for norm, mlp in zip(self.norms, self.mlps):
                h = h + mlp(norm(h))
            return self.head(self.norms[-1](h).mean(1))

    return Net(), (6, 32)


def export(model, shape, path):
    """Batch norms kept as nodes (not folded into the convolutions), as the
    zoo exports them."""
    import torch
    model.eval()
    torch.onnx.export(model, torch.zeros((2,) + shape), path, input_names=["x"],
                      output_names=["logits"], dynamic_axes={"x": {0: "b"}, "logits": {0: "b"}},
                      opset_version=17, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.PRESERVE)


def train(check, trainc, work, tag, onnx, data, flags, run_flags=()):
    """Compiles and trains; returns (losses, {param: bytes}) or None."""
    prog = os.path.join(work, tag)
    r = run([trainc, "compile", onnx, "--target=cpu", "--batch-size=8",
             "--loss=cross-entropy", "--optimizer=sgd", "-o", prog] + list(flags))
    if r.returncode != 0:
        check(False, "%s compiles: %s" % (tag, r.stderr[-400:]))
        return None
    log = os.path.join(work, tag + ".jsonl")
    params = os.path.join(work, tag + "-params")
    r = run([prog, "--data", data, "--steps", "6", "--lr", "0.05", "--momentum", "0.9",
             "--no-shuffle", "--threads", "2", "--log", log, "--save-params", params]
            + list(run_flags))
    if r.returncode != 0:
        check(False, "%s trains: %s" % (tag, r.stderr[-400:]))
        return None
    losses = [json.loads(l)["loss"] for l in open(log) if '"loss"' in l]
    weights = {f: open(os.path.join(params, f), "rb").read() for f in sorted(os.listdir(params))}
    return losses, weights


def same_run(check, what, a, b):
    if a is None or b is None:
        return
    differ = [name for name in a[1] if a[1][name] != b[1].get(name)]
    check(a[0] == b[0] and len(a[0]) == 6 and not differ and a[1].keys() == b[1].keys(),
          "%s: the same %d losses and %d saved tensors bit for bit (last loss %.6f; "
          "tensors that differ: %s)" % (what, len(a[0]), len(a[1]), a[0][-1] if a[0] else
                                        float("nan"), ", ".join(differ[:4]) or "none"))


def source_of(prog):
    return open(os.path.join(prog + ".build", os.path.basename(prog) + ".cpp")).read()


def calls_per_step(prog):
    r = run([prog, "--info"])
    m = re.search(r"kernels per training step: (\d+)", r.stdout)
    return int(m.group(1)) if m else None


def model_and_data(build, name, seed, work):
    """The ONNX file of build() (torch seeded with `seed`) and a data folder
    of 20 random samples: at batch 8 every third batch is 4 samples and 4
    masked."""
    import torch
    torch.manual_seed(seed)
    model, shape = build()
    onnx = os.path.join(work, name + ".onnx")
    export(model, shape, onnx)
    data = os.path.join(work, name + "-data")
    os.makedirs(data, exist_ok=True)
    rng = np.random.RandomState(seed + 3)
    np.save(os.path.join(data, "x.npy"), rng.randn(20, *shape).astype(np.float32))
    np.save(os.path.join(data, "label.npy"), rng.randint(0, 10, 20).astype(np.int64))
    return onnx, data


def check_conv_net(check, trainc, work):
    onnx, data = model_and_data(conv_net, "convnet", 0, work)
    runs = {}
    for tag, flags in [("conv-auto", []), ("conv-none", ["--fuse=none"]),
                       ("conv-nhwc-auto", ["--layout=nhwc"]),
                       ("conv-nhwc-none", ["--layout=nhwc", "--fuse=none"]),
                       ("conv-accum-auto", ["--grad-accum=2"]),
                       ("conv-accum-none", ["--grad-accum=2", "--fuse=none"])]:
        runs[tag] = train(check, trainc, work, tag, onnx, data, flags)
    same_run(check, "conv net, fp32", runs["conv-auto"], runs["conv-none"])
    same_run(check, "conv net, channels-last (NHWC)", runs["conv-nhwc-auto"],
             runs["conv-nhwc-none"])
    same_run(check, "conv net, --grad-accum=2", runs["conv-accum-auto"], runs["conv-accum-none"])
    if runs["conv-auto"] is None:
        return
    source = source_of(os.path.join(work, "conv-auto"))
    # 6 batch norms: 3 followed by a ReLU, 2 by a residual add (and its
    # ReLU), the downsample's read by that add; in the backward 5 ReLU masks
    # (the stem's, the blocks' inner ones and their outputs').
    groups = re.findall(r"// tc\.fused (\w*batch_norm\w*) \(", source)
    fused = re.findall(r"tk::(batchNorm\w+)\(.*&fusion\)\);", source)
    check(groups.count("batch_norm_relu") == 6 and groups.count("batch_norm_add_relu") == 4 and
          fused.count("batchNormTraining") == 5 and fused.count("batchNormBackward") == 5,
          "conv net: 5 training batch norms head their ReLU or residual add and ReLU, 5 backward "
          "ones a ReLU mask (each forward group twice: the step and the forward pass; fused "
          "calls %s; groups %s)" % (sorted(fused), sorted(set(groups))))


def check_residual_mlp(check, trainc, work):
    onnx, data = model_and_data(residual_mlp, "resmlp", 1, work)
    auto = train(check, trainc, work, "resmlp-auto", onnx, data, [])
    none = train(check, trainc, work, "resmlp-none", onnx, data, ["--fuse=none"])
    same_run(check, "residual MLP with layer norms", auto, none)
    if auto is None:
        return
    heads = re.findall(r"tk::(layerNorm\w*)\(.*&fusion\)\);",
                       source_of(os.path.join(work, "resmlp-auto")))
    # The first norm takes the positional add as its prologue (the later
    # residual adds finish GEMMs); every backward one the gradients' sum.
    check(heads.count("layerNorm") == 2 and heads.count("layerNormBackward") == 3,
          "residual MLP: the first layer norm takes the positional add as its prologue (in the "
          "step and the forward pass), the 3 backward ones the residual gradients' sums "
          "(fused calls: %s)" % heads)


def check_resnet18_calls(check, trainc, work):
    import torch
    import torchvision
    torch.manual_seed(0)
    onnx = os.path.join(work, "resnet18.onnx")
    net = torchvision.models.resnet18(num_classes=10)
    distinct_statistics(net)
    export(net, (3, 32, 32), onnx)
    counts = {}
    for fuse in ("auto", "pointwise", "none"):
        prog = os.path.join(work, "resnet18-" + fuse)
        r = run([trainc, "compile", onnx, "--target=cpu", "--batch-size=4",
                 "--loss=cross-entropy", "--optimizer=sgd", "--fuse=" + fuse,
                 "-o", prog])
        counts[fuse] = calls_per_step(prog) if r.returncode == 0 else None
        if r.returncode != 0:
            print(r.stderr[-400:])
    ok = None not in counts.values()
    check(ok and counts["auto"] <= 0.6 * counts["none"],
          "ResNet-18: %s calls a training step fused, %s with --fuse=pointwise, %s unfused "
          "(ratio %s)" % (counts["auto"], counts["pointwise"], counts["none"],
                          "%.3f" % (counts["auto"] / counts["none"]) if ok else "-"))


def checks(check, trainc, work):
    check_conv_net(check, trainc, work)
    check_residual_mlp(check, trainc, work)
    check_resnet18_calls(check, trainc, work)


if __name__ == "__main__":
    sys.exit(suite_main(checks))
