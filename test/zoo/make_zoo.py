#!/usr/bin/python3
"""Build the trainc ONNX model zoo.

Usage:  /usr/bin/python3 test/zoo/make_zoo.py OUTDIR

Writes into OUTDIR:
  * {model}_op13.onnx / {model}_op17.onnx   PyTorch exports (mlp, lenet, resnet18, lstm, unet, gpt)
  * op18_reduce.onnx, op20_gelu.onnx, op21_layernorm.onnx   hand-built with onnx.helper
  * {model}_input_{name}.npy                 the input fed to the reference run
  * {model}_ref_{name}.npy                   the reference output for that input
  * zoo.json                                 manifest describing every .onnx file

Deterministic: every model re-seeds torch / numpy before it is built.
Needs python3-torch (1.13), python3-torchvision (0.14), python3-onnx (1.12),
python3-numpy (the Debian packages; use /usr/bin/python3).
"""

import collections
import json
import math
import os
import sys
import time
import warnings

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2
TORCH_OPSETS = (13, 17)

torch.set_num_threads(min(2, os.cpu_count() or 1))
warnings.filterwarnings("ignore")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
import make_models  # noqa: E402  (the architectures both suites build)


# ---------------------------------------------------------------------------
# PyTorch models
# ---------------------------------------------------------------------------

class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 128)
        self.fc2 = nn.Linear(128, 64)
        self.fc3 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.pool1 = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.pool2 = nn.AvgPool2d(2)
        self.fc1 = nn.Linear(400, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool1(F.relu(self.conv1(x)))
        x = self.pool2(F.relu(self.conv2(x)))
        # Deliberately x.view(x.size(0), -1) rather than torch.flatten: with a
        # dynamic batch axis this exports as a Shape->Gather->Unsqueeze->
        # Concat->Reshape subgraph, which the compiler must fold / handle.
        x = x.view(x.size(0), -1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, n_head, ctx):
        super().__init__()
        assert d_model % n_head == 0
        self.n_head = n_head
        self.head_dim = d_model // n_head
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)
        self.v = nn.Linear(d_model, d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.register_buffer("mask", torch.tril(torch.ones(ctx, ctx)).view(1, 1, ctx, ctx))

    def forward(self, x):
        B, T, C = x.size()
        H, D = self.n_head, self.head_dim
        q = self.q(x).view(B, T, H, D).transpose(1, 2)  # B,H,T,D
        k = self.k(x).view(B, T, H, D).transpose(1, 2)
        v = self.v(x).view(B, T, H, D).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D))
        att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v  # B,H,T,D
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, d_model, n_head, ctx):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_head, ctx)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, 4 * d_model),
            nn.GELU(),  # exact (erf) form
            nn.Linear(4 * d_model, d_model),
        )

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        x = x + self.mlp(self.ln2(x))
        return x


class GPT(nn.Module):
    def __init__(self, vocab=64, ctx=16, n_layer=2, n_head=2, d_model=32):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab, d_model)
        self.pos_emb = nn.Embedding(ctx, d_model)
        self.blocks = nn.ModuleList([Block(d_model, n_head, ctx) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, idx):
        B, T = idx.size()
        pos = torch.arange(T, dtype=torch.long, device=idx.device)
        x = self.tok_emb(idx) + self.pos_emb(pos)
        for blk in self.blocks:
            x = blk(x)
        x = self.ln_f(x)
        return self.head(x)


def distinct_batch_norms(model):
    """Freshly initialised BatchNorm layers all have weight=1, bias=0, mean=0,
    var=1: BN would be (almost) the identity, and the exporter's initializer
    de-duplication would turn most BN parameters into Identity nodes aliasing
    one tensor (a bias then shares its initializer with a running mean). Every
    BN gets distinct, deterministic affine parameters and running statistics,
    so the reference output really exercises BN."""
    with torch.no_grad():
        for mod in model.modules():
            if isinstance(mod, nn.BatchNorm2d):
                mod.weight.uniform_(0.5, 1.5)
                mod.bias.normal_(0.0, 0.1)
                mod.running_mean.normal_(0.0, 0.1)
                mod.running_var.uniform_(0.5, 1.5)
    return model


def make_resnet18():
    import torchvision
    return distinct_batch_norms(torchvision.models.resnet18(weights=None, num_classes=10))


def make_lstm():
    """Text classification: Embedding(1000, 64), a 2-layer LSTM(64, 128), a
    Linear on the last step (test/models/make_models.py's, larger)."""
    return make_models.LSTMClassifier(vocab=1000, dim=64, hidden=128, classes=10)


def make_unet():
    """test/models/make_models.py's U-Net at widths 16, 32, 64."""
    return distinct_batch_norms(make_models.UNet(width=16))


def gen_float(shape, seed=1234):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g)


def gen_tokens(shape, vocab, seed=1234):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab, shape, generator=g, dtype=torch.long)


# name -> (builder, {input name: tensor factory}, [output names], export kwargs, notes)
TORCH_MODELS = [
    dict(
        name="mlp",
        build=MLP,
        inputs={"x": lambda: gen_float((BATCH, 784))},
        outputs=["logits"],
        export=dict(do_constant_folding=True),
        notes="Linear/ReLU MLP (Gemm or MatMul+Add after export).",
    ),
    dict(
        name="lenet",
        build=LeNet,
        inputs={"x": lambda: gen_float((BATCH, 1, 28, 28))},
        outputs=["logits"],
        export=dict(do_constant_folding=True),
        notes="LeNet-5: Conv/ReLU/MaxPool/AveragePool; flatten written as "
              "x.view(x.size(0), -1) so the dynamic batch yields a "
              "Shape->Gather->Unsqueeze->Concat->Reshape shape subgraph.",
    ),
    dict(
        name="resnet18",
        build=make_resnet18,
        inputs={"x": lambda: gen_float((BATCH, 3, 64, 64))},
        outputs=["logits"],
        export=dict(do_constant_folding=False,
                    training=torch.onnx.TrainingMode.PRESERVE),
        notes="torchvision resnet18(num_classes=10) at 64x64; exported in eval "
              "mode with do_constant_folding=False, "
              "training=TrainingMode.PRESERVE so BatchNormalization nodes are kept "
              "(inference-mode BN using running stats). BN weight/bias/running stats are "
              "re-randomised deterministically after construction so they are "
              "non-trivial and distinct.",
    ),
    dict(
        name="lstm",
        build=make_lstm,
        inputs={"ids": lambda: gen_tokens((BATCH, 32), 1000)},
        outputs=["logits"],
        export=dict(do_constant_folding=False),
        notes="LSTM text classifier (weights kept as PyTorch names them: no constant folding): Embedding(1000, 64), a 2-layer LSTM(64, 128, "
              "batch_first), a Linear on the last step; 32 tokens. One ONNX LSTM node "
              "per layer.",
    ),
    dict(
        name="unet",
        build=make_unet,
        inputs={"x": lambda: gen_float((BATCH, 3, 64, 64))},
        outputs=["logits"],
        export=dict(do_constant_folding=False,
                    training=torch.onnx.TrainingMode.PRESERVE),
        notes="U-Net at 64x64: widths 16/32/64, MaxPool down, ConvTranspose (stride 2) "
              "up, skip connections concatenated, 3 classes per pixel.",
    ),
    dict(
        name="gpt",
        build=GPT,
        inputs={"idx": lambda: gen_tokens((BATCH, 16), 64)},
        outputs=["logits"],
        export=dict(do_constant_folding=True),
        notes="Tiny GPT decoder: vocab 64, ctx 16, 2 layers, 2 heads, d_model 32; "
              "token+learned position Embedding (Gather), pre-LN blocks, hand-written "
              "causal attention (tril buffer, masked_fill(-inf), Softmax), exact GELU "
              "(Erf), final LayerNorm, Linear lm head. LayerNorm is decomposed at "
              "opset 13 and LayerNormalization at opset 17.",
    ),
]


def op_counts(model):
    c = collections.Counter(n.op_type for n in model.graph.node)
    return dict(sorted(c.items()))


def np_dtype_name(a):
    return str(np.asarray(a).dtype)


def export_torch_model(spec, outdir, manifest):
    name = spec["name"]
    torch.manual_seed(0)
    model = spec["build"]()
    model.eval()

    in_names = list(spec["inputs"].keys())
    out_names = spec["outputs"]
    inputs = [spec["inputs"][n]() for n in in_names]

    with torch.no_grad():
        ref = model(*inputs)
    refs = ref if isinstance(ref, (tuple, list)) else (ref,)
    assert len(refs) == len(out_names)

    for n, t in zip(in_names, inputs):
        np.save(os.path.join(outdir, f"{name}_input_{n}.npy"), t.numpy())
    for n, t in zip(out_names, refs):
        np.save(os.path.join(outdir, f"{name}_ref_{n}.npy"), t.detach().numpy())

    dyn = {n: {0: "batch"} for n in in_names + out_names}
    for opset in TORCH_OPSETS:
        fname = f"{name}_op{opset}.onnx"
        path = os.path.join(outdir, fname)
        torch.onnx.export(
            model,
            tuple(inputs),
            path,
            input_names=in_names,
            output_names=out_names,
            dynamic_axes=dyn,
            opset_version=opset,
            **spec["export"],
        )
        m = onnx.load(path)
        onnx.checker.check_model(m)
        # export must not have flipped the model out of eval mode
        assert not model.training
        counts = op_counts(m)
        notes = spec["notes"]
        if name == "resnet18":
            assert counts.get("BatchNormalization", 0) > 0, \
                "BatchNormalization was fused away"
        manifest.append(dict(
            file=fname,
            model=name,
            opset=opset,
            batch_size=BATCH,
            inputs={n: list(t.shape) for n, t in zip(in_names, inputs)},
            input_dtypes={n: np_dtype_name(t.numpy()) for n, t in zip(in_names, inputs)},
            outputs={n: list(t.shape) for n, t in zip(out_names, refs)},
            onnx_op_counts=counts,
            ir_version=m.ir_version,
            reference={
                "inputs": {n: f"{name}_input_{n}.npy" for n in in_names},
                "outputs": {n: f"{name}_ref_{n}.npy" for n in out_names},
            },
            notes=notes,
        ))


# ---------------------------------------------------------------------------
# Hand-built models (newer opsets than onnx 1.12's checker knows: no checker)
# ---------------------------------------------------------------------------

_erf = np.vectorize(math.erf, otypes=[np.float64])


def gelu_exact(x):
    x = x.astype(np.float64)
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def gelu_tanh(x):
    x = x.astype(np.float64)
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def vinfo(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def init(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def build_op18_reduce(rng):
    X = rng.standard_normal((2, 3, 4)).astype(np.float32)
    nodes = [
        helper.make_node("ReduceMean", ["X", "axes_last"], ["m"], keepdims=1),
        helper.make_node("ReduceSum", ["m", "axes_1"], ["Y"], keepdims=0),
        helper.make_node("Split", ["X"], ["s0", "s1"], axis=2, num_outputs=2),
        helper.make_node("Add", ["s0", "s1"], ["Z"]),
    ]
    inits = [
        init("axes_last", np.array([-1], dtype=np.int64)),
        init("axes_1", np.array([1], dtype=np.int64)),
    ]
    graph = helper.make_graph(nodes, "op18_reduce", [vinfo("X", [2, 3, 4])],
                              [vinfo("Y", [2, 1]), vinfo("Z", [2, 3, 2])], inits)
    Y = X.astype(np.float64).mean(axis=-1, keepdims=True).sum(axis=1, keepdims=False)
    Z = X[:, :, :2] + X[:, :, 2:]
    return graph, {"X": X}, {"Y": Y.astype(np.float32), "Z": Z.astype(np.float32)}, \
        "opset 18: ReduceMean with axes as an input (new in 18), ReduceSum with axes " \
        "input, Split with the num_outputs attribute (new in 18)."


def build_op20_gelu(rng):
    X = rng.standard_normal((4, 8)).astype(np.float32)
    W = (rng.standard_normal((8, 8)) * 0.5).astype(np.float32)
    b = (rng.standard_normal((8,)) * 0.1).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["X", "W"], ["xw"]),
        helper.make_node("Add", ["xw", "b"], ["h"]),
        helper.make_node("Gelu", ["h"], ["g1"], approximate="tanh"),
        helper.make_node("Gelu", ["g1"], ["Y"]),
    ]
    graph = helper.make_graph(nodes, "op20_gelu", [vinfo("X", [4, 8])],
                              [vinfo("Y", [4, 8])], [init("W", W), init("b", b)])
    h = X.astype(np.float64) @ W.astype(np.float64) + b.astype(np.float64)
    Y = gelu_exact(gelu_tanh(h))
    return graph, {"X": X}, {"Y": Y.astype(np.float32)}, \
        "opset 20: Gelu (new in 20) with approximate='tanh' followed by default " \
        "approximate='none' (exact erf form)."


def build_op21_layernorm(rng):
    X = rng.standard_normal((2, 5, 8)).astype(np.float32) * 3.0
    scale = (1.0 + 0.1 * rng.standard_normal((8,))).astype(np.float32)
    bias = (0.5 + rng.standard_normal((8,))).astype(np.float32)
    nodes = [
        helper.make_node("LayerNormalization", ["X", "scale", "bias"], ["ln"],
                         axis=-1, epsilon=1e-5),
        helper.make_node("Unsqueeze", ["ln", "axes0"], ["u"]),
        helper.make_node("Squeeze", ["u", "axes0"], ["s"]),
        helper.make_node("Clip", ["s", "clip_min", "clip_max"], ["Y"]),
    ]
    inits = [
        init("scale", scale), init("bias", bias),
        init("axes0", np.array([0], dtype=np.int64)),
        init("clip_min", np.array(0.0, dtype=np.float32)),
        init("clip_max", np.array(6.0, dtype=np.float32)),
    ]
    graph = helper.make_graph(nodes, "op21_layernorm", [vinfo("X", [2, 5, 8])],
                              [vinfo("Y", [2, 5, 8])], inits)
    x = X.astype(np.float64)
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    ln = (x - mu) / np.sqrt(var + 1e-5) * scale.astype(np.float64) + bias.astype(np.float64)
    Y = np.clip(ln, 0.0, 6.0)
    return graph, {"X": X}, {"Y": Y.astype(np.float32)}, \
        "opset 21: LayerNormalization (scale, bias, axis=-1, eps=1e-5), " \
        "Unsqueeze/Squeeze with axes as input, Clip with min/max scalar inputs."


# (name, opset, ir_version, builder). IR version matches what onnx itself pairs
# with the opset (18 -> 8, 20 -> 9, 21 -> 10).
HAND_MODELS = [
    ("op18_reduce", 18, 8, build_op18_reduce),
    ("op20_gelu", 20, 9, build_op20_gelu),
    ("op21_layernorm", 21, 10, build_op21_layernorm),
]


def export_hand_model(name, opset, ir_version, builder, outdir, manifest):
    rng = np.random.default_rng(0)
    graph, ins, outs, notes = builder(rng)
    model = helper.make_model(graph, producer_name="trainc-make_zoo",
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = ir_version
    fname = f"{name}.onnx"
    onnx.save(model, os.path.join(outdir, fname))
    for n, a in ins.items():
        np.save(os.path.join(outdir, f"{name}_input_{n}.npy"), a)
    for n, a in outs.items():
        np.save(os.path.join(outdir, f"{name}_ref_{n}.npy"), a)
    manifest.append(dict(
        file=fname,
        model=name,
        opset=opset,
        batch_size=None,
        inputs={n: list(a.shape) for n, a in ins.items()},
        input_dtypes={n: np_dtype_name(a) for n, a in ins.items()},
        outputs={n: list(a.shape) for n, a in outs.items()},
        onnx_op_counts=op_counts(model),
        ir_version=ir_version,
        reference={
            "inputs": {n: f"{name}_input_{n}.npy" for n in ins},
            "outputs": {n: f"{name}_ref_{n}.npy" for n in outs},
        },
        notes=notes + " Hand-built with onnx.helper; not run through onnx.checker "
                      "(onnx 1.12 only knows opsets <= 17). Static shapes.",
    ))


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    outdir = argv[1]
    os.makedirs(outdir, exist_ok=True)
    manifest = []
    t0 = time.time()
    for spec in TORCH_MODELS:
        t = time.time()
        export_torch_model(spec, outdir, manifest)
        print(f"[make_zoo] {spec['name']}: {time.time() - t:.2f}s", file=sys.stderr)
    for name, opset, irv, builder in HAND_MODELS:
        export_hand_model(name, opset, irv, builder, outdir, manifest)
    with open(os.path.join(outdir, "zoo.json"), "w") as f:
        json.dump(manifest, f, indent=2, sort_keys=False)
        f.write("\n")
    print(f"[make_zoo] wrote {len(manifest)} models to {outdir} "
          f"in {time.time() - t0:.2f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
