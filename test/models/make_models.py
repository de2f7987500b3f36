#!/usr/bin/env python3
"""Builds the real-model suite: torchvision and Hugging Face models at small size.

Usage:  build/models-venv/bin/python test/models/make_models.py OUTDIR [--only REGEX]

Run with build/models-venv/bin/python (scripts/models-venv.sh: Debian's torch
1.13, torchvision 0.14 and onnx 1.12 plus transformers 4.36.2). No weights are
downloaded: every model is built from its constructor or a tiny config, seeded,
with every dropout probability 0 so that one training step is deterministic.

For every model NAME it writes OUTDIR/NAME/:
  model.onnx        python/trainc_torch.py's export_for_training (training
                    mode, no constant folding, dynamic batch axis, the
                    trainable-parameter metadata)
  data/             one .npy per model input, label.npy (the label of
                    --loss=cross-entropy|mse; none for --loss=output) and
                    sample_weights.npy (ones): the inputs of `PROG --run`
  grads32.npz       PyTorch float32 gradients of the loss of one step
                    (model.train()), keyed by ONNX initializer name
  grads64.npz       the same on module.double() of a deep copy, inputs in
                    float64: the reference both are measured against
  sgd3_32.npz,      for the specs marked sgd3: the weights after three plain
  sgd3_64.npz       SGD steps (lr SGD_LR) on the same batch, float32 and float64
  eval_OUTPUT.npy   model.eval() outputs on the same inputs (initial weights)
  eval64_OUTPUT.npy the same in float64 (printed beside the predict check)
  meta.json         loss kind, class axis, inputs, outputs, trainable
                    initializers, the float32 and float64 loss, ONNX op counts
and OUTDIR/models.json listing them. check_models.py rebuilds each module with
build_module(NAME) to compare an exported, trained model with PyTorch.
"""

import argparse
import collections
import copy
import json
import os
import re
import shutil
import sys
import warnings

import numpy as np
import onnx
from onnx import numpy_helper
import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
from trainc_torch import export_for_training  # noqa: E402

warnings.filterwarnings("ignore")
torch.set_num_threads(min(2, os.cpu_count() or 1))


# ---------------------------------------------------------------------------
# Models. Each spec builds a module whose forward takes the inputs in order and
# returns one tensor or a tuple (the outputs, in order).
# ---------------------------------------------------------------------------

def no_dropout(module):
    """Every dropout and stochastic-depth probability 0 (deterministic step)."""
    for m in module.modules():
        if isinstance(m, nn.Dropout) or type(m).__name__ == "StochasticDepth":
            m.p = 0.0
        if isinstance(m, nn.MultiheadAttention):
            m.dropout = 0.0
    return module


def torchvision_model(fn, **kwargs):
    def build():
        import torchvision
        return no_dropout(getattr(torchvision.models, fn)(weights=None, **kwargs))
    return build


def vit():
    # vit_b_16's architecture (torchvision's VisionTransformer) at 32x32
    # pixels, patch 8, 2 layers, hidden 64: vit_b_16() itself fixes 12 layers
    # of width 768.
    # Its classifier starts at zero, which would leave every other gradient
    # zero: a random head instead.
    from torchvision.models import VisionTransformer
    model = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4,
                              hidden_dim=64, mlp_dim=128, num_classes=10)
    nn.init.normal_(model.heads.head.weight, std=0.05)
    nn.init.normal_(model.heads.head.bias, std=0.05)
    return no_dropout(model)


class HFOutputs(nn.Module):
    """A Hugging Face model called with keyword inputs; returns the chosen outputs."""

    def __init__(self, model, input_keys, outputs):
        super().__init__()
        self.m = model
        self.input_keys = input_keys
        self.outputs = outputs

    def forward(self, *inputs):
        out = self.m(**dict(zip(self.input_keys, inputs)), return_dict=True)
        values = tuple(getattr(out, k) for k in self.outputs)
        return values[0] if len(values) == 1 else values


def hf(config_fn, model_cls, input_keys, outputs):
    def build():
        import transformers
        config = config_fn(transformers)
        model = getattr(transformers, model_cls)(config)
        return no_dropout(HFOutputs(model, input_keys, outputs))
    return build


def gpt2_config(t):
    return t.GPT2Config(vocab_size=200, n_positions=32, n_embd=32, n_layer=2, n_head=2,
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, use_cache=False)


def bert_config(t):
    return t.BertConfig(vocab_size=200, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=32,
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                        classifier_dropout=0.0, num_labels=3)


def t5_config(t):
    return t.T5Config(vocab_size=200, d_model=32, d_kv=16, d_ff=64, num_layers=2, num_heads=2,
                      relative_attention_num_buckets=8, relative_attention_max_distance=16,
                      dropout_rate=0.0, use_cache=False)


def llama_config(t):
    return t.LlamaConfig(vocab_size=200, hidden_size=32, intermediate_size=64,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=32, attention_dropout=0.0, use_cache=False)


def whisper_config(t):
    # Whisper's encoder expects 2 * max_source_positions input frames.
    return t.WhisperConfig(vocab_size=100, num_mel_bins=16, encoder_layers=2,
                           encoder_attention_heads=2, encoder_ffn_dim=64, d_model=32,
                           decoder_layers=1, decoder_attention_heads=2, decoder_ffn_dim=64,
                           max_source_positions=16, max_target_positions=16,
                           dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
                           encoder_layerdrop=0.0, decoder_layerdrop=0.0, num_labels=4,
                           classifier_proj_size=16, use_weighted_layer_sum=False)


# Architectures written here as users write them: recurrent text models, a
# U-Net, every activation trainc decomposes, and a transformer with rotary
# position embeddings and multi-query attention.

class LSTMClassifier(nn.Module):
    """Embedding, a 2-layer LSTM (batch first), a Linear on the last step."""

    def __init__(self, vocab=200, dim=16, hidden=24, classes=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.rnn = nn.LSTM(dim, hidden, num_layers=2, batch_first=True)
        self.fc = nn.Linear(hidden, classes)

    def forward(self, ids):
        y, _ = self.rnn(self.emb(ids))
        return self.fc(y[:, -1])


class GRUTagger(nn.Module):
    """Embedding, a bidirectional GRU, a tag per token."""

    def __init__(self, vocab=200, dim=16, hidden=16, tags=5):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.rnn = nn.GRU(dim, hidden, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(2 * hidden, tags)

    def forward(self, ids):
        y, _ = self.rnn(self.emb(ids))
        return self.fc(y)


def conv_block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(),
                         nn.Conv2d(cout, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU())


class UNet(nn.Module):
    """Two levels down (max pool), up by ConvTranspose2d with the skip
    connections concatenated, per-pixel class logits; widths w, 2w, 4w."""

    def __init__(self, classes=3, width=8):
        super().__init__()
        w = width
        self.down1, self.down2 = conv_block(3, w), conv_block(w, 2 * w)
        self.mid = conv_block(2 * w, 4 * w)
        self.up2 = nn.ConvTranspose2d(4 * w, 2 * w, 2, stride=2)
        self.dec2 = conv_block(4 * w, 2 * w)
        self.up1 = nn.ConvTranspose2d(2 * w, w, 2, stride=2)
        self.dec1 = conv_block(2 * w, w)
        self.head = nn.Conv2d(w, classes, 1)

    def forward(self, x):
        d1 = self.down1(x)
        d2 = self.down2(F.max_pool2d(d1, 2))
        m = self.mid(F.max_pool2d(d2, 2))
        u2 = self.dec2(torch.cat([self.up2(m), d2], 1))
        u1 = self.dec1(torch.cat([self.up1(u2), d1], 1))
        return self.head(u1)


def lraspp():
    """torchvision's LRASPP head on MobileNetV3-Large, its logits ('out')."""
    from torchvision.models.segmentation import lraspp_mobilenet_v3_large

    class Out(nn.Module):
        def __init__(self):
            super().__init__()
            self.m = lraspp_mobilenet_v3_large(weights=None, weights_backbone=None,
                                               num_classes=3)

        def forward(self, x):
            return self.m(x)["out"]
    return no_dropout(Out())


class Activations(nn.Module):
    """A Linear before each activation ONNX has an op (or an export) for."""

    def __init__(self, width=12, classes=4):
        super().__init__()
        acts = [nn.PReLU(width), nn.ELU(0.7), nn.SELU(), nn.CELU(1.3), nn.Softplus(),
                nn.Mish(), nn.Softsign(), nn.Hardtanh(-0.8, 0.9), nn.Hardsigmoid(),
                nn.Hardswish(), nn.LeakyReLU(0.1), nn.GELU(), nn.SiLU()]
        layers = [nn.Linear(8, width)]
        for act in acts:
            layers += [act, nn.Linear(width, width)]
        layers.append(nn.Linear(width, classes))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


class RotaryMQA(nn.Module):
    """A 2-block causal transformer: rotary position embeddings computed in
    the forward (positions, sin, cos), multi-query attention (4 query heads
    against one key and value head: [B, 4, T, D] x [B, 1, D, T])."""

    def __init__(self, vocab=200, dim=32, heads=4, blocks=2):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.emb = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList()
        for _ in range(blocks):
            self.blocks.append(nn.ModuleDict(dict(
                norm1=nn.LayerNorm(dim), q=nn.Linear(dim, dim), kv=nn.Linear(dim, 2 * self.head_dim),
                proj=nn.Linear(dim, dim), norm2=nn.LayerNorm(dim),
                mlp=nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim)))))
        self.out = nn.Linear(dim, vocab)

    def rotate(self, x, cos, sin):
        half = x.shape[-1] // 2
        x1, x2 = x[..., :half], x[..., half:]
        return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)

    def forward(self, ids):
        b, t = ids.shape
        d = self.head_dim
        pos = torch.arange(t, dtype=torch.float32)
        inv = 1.0 / (10000 ** (torch.arange(0, d // 2, dtype=torch.float32) / (d // 2)))
        angles = pos[:, None] * inv[None, :]
        cos, sin = torch.cos(angles), torch.sin(angles)
        mask = torch.triu(torch.full((t, t), float("-inf")), diagonal=1)
        h = self.emb(ids)
        for blk in self.blocks:
            x = blk["norm1"](h)
            q = blk["q"](x).reshape(b, t, self.heads, d).transpose(1, 2)
            k, v = blk["kv"](x).reshape(b, t, 1, 2 * d).transpose(1, 2).split(d, dim=-1)
            q, k = self.rotate(q, cos, sin), self.rotate(k, cos, sin)
            att = torch.softmax(q @ k.transpose(-1, -2) / d ** 0.5 + mask, dim=-1)
            h = h + blk["proj"]((att @ v).transpose(1, 2).reshape(b, t, -1))
            h = h + blk["mlp"](blk["norm2"](h))
        return self.out(h)


# sgd3: also the weights after three SGD steps on the batch (sgd3_32.npz,
# sgd3_64.npz), which check_models.py compares with a three-epoch trainer.
Spec = collections.namedtuple("Spec", "name build inputs outputs loss class_axis cuda sgd3",
                              defaults=(False,))
# The learning rate of the SGD steps both scripts take.
SGD_LR = 0.01


def images(batch, size):
    return lambda g: {"x": torch.randn(batch, 3, size, size, generator=g)}


def tokens(batch, seq, vocab, *names):
    def make(g):
        ids = torch.randint(0, vocab, (batch, seq), generator=g)
        return {n: ids.clone() for n in names}
    return make


def padded_pair(batch, seq, vocab):
    """A sentence pair per sample (token types 0 then 1), the last sample
    padded: its attention mask ends in zeros."""
    def make(g):
        ids = torch.randint(1, vocab, (batch, seq), generator=g)
        mask = torch.ones(batch, seq, dtype=torch.int64)
        mask[-1, seq * 3 // 4:] = 0
        ids[mask == 0] = 0
        types = torch.zeros(batch, seq, dtype=torch.int64)
        types[:, seq // 2:] = 1
        return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
    return make


B, PX = 4, 32
SPECS = [
    Spec("resnet18", torchvision_model("resnet18", num_classes=10), images(B, PX), ["logits"],
         "cross-entropy", 1, True),
    Spec("resnet50", torchvision_model("resnet50", num_classes=10), images(B, PX), ["logits"],
         "cross-entropy", 1, False),
    Spec("mobilenet_v2", torchvision_model("mobilenet_v2", num_classes=10), images(B, 2 * PX),
         ["logits"], "cross-entropy", 1, True),
    Spec("mobilenet_v3_small", torchvision_model("mobilenet_v3_small", num_classes=10),
         images(B, PX), ["logits"], "cross-entropy", 1, False),
    Spec("efficientnet_b0", torchvision_model("efficientnet_b0", num_classes=10), images(B, PX),
         ["logits"], "cross-entropy", 1, False),
    Spec("convnext_tiny", torchvision_model("convnext_tiny", num_classes=10), images(B, PX),
         ["logits"], "cross-entropy", 1, False),
    Spec("densenet121", torchvision_model("densenet121", num_classes=10), images(B, PX),
         ["logits"], "cross-entropy", 1, False),
    Spec("shufflenet_v2_x0_5", torchvision_model("shufflenet_v2_x0_5", num_classes=10),
         images(B, 2 * PX), ["logits"], "cross-entropy", 1, False),
    Spec("vit_b_16", vit, images(B, PX), ["logits"], "cross-entropy", 1, True),
    Spec("gpt2", hf(gpt2_config, "GPT2LMHeadModel", ["input_ids"], ["logits"]),
         tokens(2, 16, 200, "input_ids"), ["logits"], "cross-entropy", -1, True),
    Spec("gpt2_loss", hf(gpt2_config, "GPT2LMHeadModel", ["input_ids", "labels"],
                         ["loss", "logits"]),
         tokens(2, 16, 200, "input_ids", "labels"), ["loss", "logits"], "output", None, False),
    Spec("bert", hf(bert_config, "BertForSequenceClassification", ["input_ids"], ["logits"]),
         tokens(2, 16, 200, "input_ids"), ["logits"], "cross-entropy", 1, False),
    Spec("bert_masked", hf(bert_config, "BertForSequenceClassification",
                           ["input_ids", "attention_mask", "token_type_ids"], ["logits"]),
         padded_pair(2, 16, 200), ["logits"], "cross-entropy", 1, False),
    Spec("t5_encoder", hf(t5_config, "T5EncoderModel", ["input_ids"], ["last_hidden_state"]),
         tokens(2, 16, 200, "input_ids"), ["hidden"], "mse", None, False),
    Spec("llama", hf(llama_config, "LlamaForCausalLM", ["input_ids"], ["logits"]),
         tokens(2, 16, 200, "input_ids"), ["logits"], "cross-entropy", -1, False),
    Spec("lstm_classifier", LSTMClassifier, tokens(2, 12, 200, "ids"), ["logits"],
         "cross-entropy", 1, False, True),
    Spec("gru_tagger", GRUTagger, tokens(2, 12, 200, "ids"), ["logits"], "cross-entropy", -1,
         False, True),
    Spec("unet", UNet, images(2, 32), ["logits"], "cross-entropy", 1, False, True),
    Spec("lraspp", lraspp, images(2, 64), ["logits"], "cross-entropy", 1, False, True),
    Spec("activations", Activations, lambda g: {"x": torch.randn(4, 8, generator=g)},
         ["logits"], "cross-entropy", 1, False, True),
    Spec("rotary_mqa", RotaryMQA, tokens(2, 16, 200, "ids"), ["logits"], "cross-entropy", -1,
         False, True),
    Spec("whisper_classifier", hf(whisper_config, "WhisperForAudioClassification",
                                  ["input_features"], ["logits"]),
         lambda g: {"input_features": torch.randn(2, 16, 32, generator=g)}, ["logits"],
         "cross-entropy", 1, False),
]
SPEC_BY_NAME = {s.name: s for s in SPECS}


def seed_for(name):
    return sum(ord(c) * (i + 1) for i, c in enumerate(name)) % 10007


def build_module(name):
    """The module of spec NAME with its initial (seeded) weights, in train mode."""
    torch.manual_seed(seed_for(name))
    module = SPEC_BY_NAME[name].build().float()
    module.train()
    return module


def make_inputs(name):
    g = torch.Generator().manual_seed(seed_for(name) + 1)
    return SPEC_BY_NAME[name].inputs(g)


# ---------------------------------------------------------------------------
# The PyTorch reference.
# ---------------------------------------------------------------------------

def torch_loss(spec, outputs, label):
    y = outputs[0] if isinstance(outputs, tuple) else outputs
    if spec.loss == "output":
        return y
    if spec.loss == "mse":
        return F.mse_loss(y, label)
    if spec.class_axis == -1:  # [N, T, V] logits, [N, T] labels
        return F.cross_entropy(y.reshape(-1, y.shape[-1]), label.reshape(-1))
    return F.cross_entropy(y, label)


def as_tuple(out):
    return out if isinstance(out, tuple) else (out,)


def eval_float64(module, inputs):
    """model.eval() of a float64 copy (tensors the forward makes in float64 too)."""
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        with torch.no_grad():
            return copy.deepcopy(module).double().eval()(
                *[x.double() if x.is_floating_point() else x for x in inputs])
    finally:
        torch.set_default_dtype(default)


def make_label(spec, outputs, g):
    y = as_tuple(outputs)[0]
    if spec.loss == "output":
        return None
    if spec.loss == "mse":
        return torch.randn(y.shape, generator=g)
    if spec.class_axis == -1:
        return torch.randint(0, y.shape[-1], tuple(y.shape[:-1]), generator=g)
    # [N, C] logits: [N] classes; [N, C, H, W] (segmentation): [N, H, W].
    return torch.randint(0, y.shape[1], (y.shape[0],) + tuple(y.shape[2:]), generator=g)


def gradients(module, inputs, label, spec, init_of_param, dtype):
    """(loss, {initializer: gradient}) of one model.train() step in `dtype`."""
    m = copy.deepcopy(module).to(dtype)
    m.train()
    args = [x.to(dtype) if x.is_floating_point() else x for x in inputs]
    lab = None
    if label is not None:
        lab = label.to(dtype) if label.is_floating_point() else label
    # Tensors the forward creates (transformers' masks: torch.full without a
    # dtype) take the reference's precision too.
    # oneDNN is off: torch 1.13's float32 GELU backward through it is wrong
    # when the incoming gradient is not contiguous (Whisper's GELU then
    # permute: relative error 1; see test/models/README.md).
    default = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.backends.mkldnn.flags(enabled=False):
            loss = torch_loss(spec, m(*args), lab)
            loss.backward()
    finally:
        torch.set_default_dtype(default)
    params = dict(m.named_parameters())
    grads = {}
    for init, pname in init_of_param.items():
        g = params[pname].grad
        grads[init] = (np.zeros(params[pname].shape) if g is None
                       else g.detach().numpy()).astype(np.float32 if dtype == torch.float32
                                                        else np.float64)
    return float(loss), grads


def sgd_weights(module, inputs, label, spec, init_of_param, dtype, steps):
    """{initializer: weight} after `steps` plain SGD steps (SGD_LR) on the
    one batch, in model.train() and `dtype` throughout."""
    m = copy.deepcopy(module).to(dtype)
    m.train()
    args = [x.to(dtype) if x.is_floating_point() else x for x in inputs]
    lab = label.to(dtype) if label is not None and label.is_floating_point() else label
    params = dict(m.named_parameters())
    default = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.backends.mkldnn.flags(enabled=False):
            for _ in range(steps):
                m.zero_grad()
                torch_loss(spec, m(*args), lab).backward()
                with torch.no_grad():
                    for p in params.values():
                        if p.grad is not None:
                            p -= torch.tensor(SGD_LR, dtype=dtype) * p.grad
    finally:
        torch.set_default_dtype(default)
    return {init: params[pname].detach().numpy().copy() for init, pname in init_of_param.items()}


def initializer_names(proto, module, trainable):
    """ONNX initializer -> module parameter name, for every trainable initializer."""
    params = dict(module.named_parameters())
    inits = {t.name: t for t in proto.graph.initializer}
    mapping = {}
    for name in trainable:
        if name in params:
            mapping[name] = name
            continue
        value = numpy_helper.to_array(inits[name])
        same = [p for p, t in params.items()
                if tuple(t.shape) == value.shape and np.array_equal(t.detach().numpy(), value)]
        if len(same) != 1:
            raise RuntimeError("initializer %s matches parameters %s by value" % (name, same))
        mapping[name] = same[0]
    return mapping


def load_initializers(module, proto):
    """Copies every initializer named like a state_dict entry into the module
    (the export's forward pass may have moved batch-norm running statistics)."""
    state = module.state_dict()
    with torch.no_grad():
        for t in proto.graph.initializer:
            if t.name in state:
                state[t.name].copy_(torch.from_numpy(numpy_helper.to_array(t).copy()))


def make_model(name, outdir):
    spec = SPEC_BY_NAME[name]
    mdir = os.path.join(outdir, name)
    shutil.rmtree(mdir, ignore_errors=True)
    data = os.path.join(mdir, "data")
    os.makedirs(data)
    module = build_module(name)
    feed = make_inputs(name)
    input_names = list(feed)
    inputs = [feed[n] for n in input_names]
    saved = copy.deepcopy(module.state_dict())
    path = os.path.join(mdir, "model.onnx")
    trainable, _ = export_for_training(module, tuple(inputs), path, input_names, spec.outputs)
    module.load_state_dict(saved)
    proto = onnx.load(path)
    load_initializers(module, proto)
    init_of_param = initializer_names(proto, module, trainable)
    missing = sorted(set(p for p, t in module.named_parameters()) - set(init_of_param.values()))

    with torch.no_grad():
        evalm = copy.deepcopy(module).eval()
        eval_out = as_tuple(evalm(*inputs))
        train_out = copy.deepcopy(module)(*inputs)
        eval64 = as_tuple(eval_float64(module, inputs))
    label = make_label(spec, train_out, torch.Generator().manual_seed(seed_for(name) + 2))
    loss32, g32 = gradients(module, inputs, label, spec, init_of_param, torch.float32)
    loss64, g64 = gradients(module, inputs, label, spec, init_of_param, torch.float64)

    for n, x in feed.items():
        np.save(os.path.join(data, n + ".npy"), x.numpy())
    if label is not None:
        np.save(os.path.join(data, "label.npy"), label.numpy())
    batch = inputs[0].shape[0]
    np.save(os.path.join(data, "sample_weights.npy"), np.ones(batch, np.float32))
    np.save(os.path.join(data, "sample_mask.npy"), np.ones(batch, np.float32))
    np.savez(os.path.join(mdir, "grads32.npz"), **g32)
    np.savez(os.path.join(mdir, "grads64.npz"), **g64)
    if spec.sgd3:
        for dtype, tag in ((torch.float32, "32"), (torch.float64, "64")):
            np.savez(os.path.join(mdir, "sgd3_%s.npz" % tag),
                     **sgd_weights(module, inputs, label, spec, init_of_param, dtype, 3))
    for n, y, y64 in zip(spec.outputs, eval_out, eval64):
        np.save(os.path.join(mdir, "eval_%s.npy" % n), y.numpy())
        np.save(os.path.join(mdir, "eval64_%s.npy" % n), y64.numpy())
    ops = collections.Counter(n.op_type for n in proto.graph.node)
    meta = dict(name=name, batch=batch, loss=spec.loss, class_axis=spec.class_axis,
                sgd3=spec.sgd3,
                inputs=input_names, outputs=spec.outputs, cuda=spec.cuda,
                trainable=sorted(init_of_param), param_of_initializer=init_of_param,
                unexported_params=missing, loss32=loss32, loss64=loss64,
                parameters=int(sum(p.numel() for p in module.parameters())),
                onnx_ops=dict(sorted(ops.items())))
    with open(os.path.join(mdir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    return meta


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--only", help="only the models whose name matches REGEX (re.search)")
    args = ap.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    names = [s.name for s in SPECS if not args.only or re.search(args.only, s.name)]
    if not names:
        print("no model matches --only %r" % args.only)
        return 1
    made, failed = [], []
    for name in names:
        try:
            meta = make_model(name, args.outdir)
            made.append(name)
            print("%s: %d parameters, %d ONNX nodes, loss %.6g" %
                  (name, meta["parameters"], sum(meta["onnx_ops"].values()), meta["loss32"]),
                  flush=True)
        except Exception as e:  # one broken model does not stop the others
            failed.append(name)
            print("%s: export failed: %s: %s" % (name, type(e).__name__,
                                                str(e).strip().splitlines()[0] if str(e)
                                                else ""), flush=True)
    listing = os.path.join(args.outdir, "models.json")
    known = json.load(open(listing)) if os.path.exists(listing) else {}
    for name in made:
        known[name] = "ok"
    for name in failed:
        known[name] = "export failed"
    with open(listing, "w") as f:
        json.dump(known, f, indent=1, sort_keys=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
