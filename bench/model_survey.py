#!/usr/bin/env python3
"""Survey: which public architectures train with trainc, as a new user would try them.

Not part of the test run. 68 models: torchvision 0.14 classification and segmentation models,
Hugging Face transformers 4.36.2 from tiny configs (no downloads) and timm 0.9.12
(when it imports), all exported for training with python/trainc_torch.py
(torch 1.13, opset 17) at small size (batch 2, 32-80 px images, 16 tokens,
2 layers, hidden 32-64, every dropout 0; alexnet and vgg11_bn at 224 px, the
smallest size their adaptive pooling exports at; inception_v3 at 80 px, its minimum
is 75).

Run with a venv that has transformers 4.36.2 and timm 0.9.12 next to Debian's torch:

    /usr/bin/python3 -m venv --system-site-packages /tmp/survey-venv
    /tmp/survey-venv/bin/pip install transformers==4.36.2 timm==0.9.12
    /tmp/survey-venv/bin/python bench/model_survey.py build/bin/trainc WORKDIR [--only REGEX]

(build/models-venv/bin/python works too; it has no timm, so the timm rows say so.)
Per model, in WORKDIR/NAME/:
  exports   export_for_training(...) succeeds (a failure here is PyTorch's exporter,
            not trainc);
  check     `trainc check --training --target=cpu --batch-size=2 [--loss=output]`
            exits 0 (every op imports and has a gradient rule, and it says it builds);
  compiles  `nice -n 10 trainc compile --target=cpu --batch-size=2 --loss=L
            [--class-axis=-1] --optimizer=sgd -o PROG` within 180 s (one compile at a
            time);
  step runs `PROG --data D --steps 1 --lr 1 --no-shuffle --export E.onnx` exits 0;
  sgd ratio E.onnx's trainable weights against w0 - lr g_64 (PyTorch float64, same
            weights and inputs): ||W - want|| / ||lr g_64|| divided by the same for
            PyTorch's float32 step (as test/models/check_models.py's sgd-step; <= 10
            is agreement).
Prints one line per model as it goes, then a markdown table and, for every model
that does not train, the full `trainc check --training` output.
Takes about 35-45 minutes on the busy 2-core machine: the exports with PyTorch's
float64 reference (maxvit_t and vgg11_bn at 224 px: minutes each) and the C++ builds
(3-100 s each; densenet121 the longest).
"""

import argparse
import collections
import copy
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import traceback
import warnings

import numpy as np
import onnx
from onnx import numpy_helper
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "test", "models"))
sys.path.insert(0, os.path.join(ROOT, "python"))
import make_models as mm  # noqa: E402
from trainc_torch import export_for_training  # noqa: E402

warnings.filterwarnings("ignore")
torch.set_num_threads(min(2, os.cpu_count() or 1))
COMPILE_TIMEOUT = 180
LR = 1.0  # --lr: large, so that the float32 rounding of w0 - lr g does not hide
          # the gradient's own error (at 0.01 both steps round the same and the
          # ratio is 1 for most models)

S = collections.namedtuple("S", "name source build inputs outputs loss class_axis")


def img(size, batch=2):
    return lambda g: {"x": torch.randn(batch, 3, size, size, generator=g)}


def toks(*names, batch=2, seq=16, vocab=200, low=3):
    def make(g):
        ids = torch.randint(low, vocab, (batch, seq), generator=g)
        return {n: ids.clone() for n in names}
    return make


def tv(fn, **kw):
    def build():
        import torchvision
        return mm.no_dropout(getattr(torchvision.models, fn)(weights=None, num_classes=10, **kw))
    return build


def tv_vit():
    return mm.vit()


def hf(config_fn, cls, keys, outs):
    return mm.hf(config_fn, cls, keys, outs)


def timm_model(name, **kw):
    def build():
        import timm
        return mm.no_dropout(timm.create_model(name, pretrained=False, num_classes=10,
                                               drop_rate=0.0, drop_path_rate=0.0, **kw))
    return build


def timm_class(module, cls, **kw):
    """A timm architecture class with other sizes than its registered variants
    (mixer_s16_224's entry point fixes patch_size and num_blocks)."""
    def build():
        import importlib
        mod = importlib.import_module("timm.models." + module)
        return mm.no_dropout(getattr(mod, cls)(num_classes=10, drop_rate=0.0,
                                               drop_path_rate=0.0, **kw))
    return build


def tv_segmentation(fn, **kw):
    """A torchvision segmentation model (3 classes, no auxiliary head), its 'out'."""
    class Out(nn.Module):
        def __init__(self):
            super().__init__()
            import torchvision.models.segmentation as seg
            self.m = getattr(seg, fn)(weights=None, weights_backbone=None, num_classes=3, **kw)

        def forward(self, x):
            return self.m(x)["out"]
    return lambda: mm.no_dropout(Out())


class ReluRNN(nn.Module):
    """nn.RNN(nonlinearity='relu'), 2 layers, into a Linear on the last step."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(200, 16)
        self.rnn = nn.RNN(16, 16, num_layers=2, nonlinearity="relu", batch_first=True)
        self.fc = nn.Linear(16, 4)

    def forward(self, ids):
        return self.fc(self.rnn(self.emb(ids))[0][:, -1])


D0 = dict(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
ENC = dict(vocab_size=200, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
           intermediate_size=64, max_position_embeddings=40)


def c(cls, **kw):
    return lambda t: getattr(t, cls)(**kw)


SPECS = [
    # torchvision 0.14
    S("resnet18", "torchvision", tv("resnet18"), img(32), ["logits"], "cross-entropy", 1),
    S("resnet34", "torchvision", tv("resnet34"), img(32), ["logits"], "cross-entropy", 1),
    S("resnet50", "torchvision", tv("resnet50"), img(32), ["logits"], "cross-entropy", 1),
    S("resnext50_32x4d", "torchvision", tv("resnext50_32x4d"), img(32), ["logits"],
      "cross-entropy", 1),
    S("wide_resnet50_2", "torchvision", tv("wide_resnet50_2"), img(32), ["logits"],
      "cross-entropy", 1),
    S("mobilenet_v2", "torchvision", tv("mobilenet_v2"), img(32), ["logits"], "cross-entropy", 1),
    S("mobilenet_v3_small", "torchvision", tv("mobilenet_v3_small"), img(32), ["logits"],
      "cross-entropy", 1),
    S("mobilenet_v3_large", "torchvision", tv("mobilenet_v3_large"), img(32), ["logits"],
      "cross-entropy", 1),
    S("efficientnet_b0", "torchvision", tv("efficientnet_b0"), img(32), ["logits"],
      "cross-entropy", 1),
    S("efficientnet_b1", "torchvision", tv("efficientnet_b1"), img(32), ["logits"],
      "cross-entropy", 1),
    S("efficientnet_v2_s", "torchvision", tv("efficientnet_v2_s"), img(32), ["logits"],
      "cross-entropy", 1),
    S("regnet_x_400mf", "torchvision", tv("regnet_x_400mf"), img(32), ["logits"],
      "cross-entropy", 1),
    S("regnet_y_400mf", "torchvision", tv("regnet_y_400mf"), img(32), ["logits"],
      "cross-entropy", 1),
    S("convnext_tiny", "torchvision", tv("convnext_tiny"), img(32), ["logits"], "cross-entropy", 1),
    S("densenet121", "torchvision", tv("densenet121"), img(32), ["logits"], "cross-entropy", 1),
    S("shufflenet_v2_x0_5", "torchvision", tv("shufflenet_v2_x0_5"), img(32), ["logits"],
      "cross-entropy", 1),
    S("squeezenet1_0", "torchvision", tv("squeezenet1_0"), img(64), ["logits"], "cross-entropy", 1),
    S("mnasnet0_5", "torchvision", tv("mnasnet0_5"), img(32), ["logits"], "cross-entropy", 1),
    S("alexnet", "torchvision", tv("alexnet"), img(224), ["logits"], "cross-entropy", 1),
    S("vgg11_bn", "torchvision", tv("vgg11_bn"), img(224), ["logits"], "cross-entropy", 1),
    S("googlenet", "torchvision", tv("googlenet", aux_logits=False, init_weights=True), img(64),
      ["logits"], "cross-entropy", 1),
    S("inception_v3", "torchvision", tv("inception_v3", aux_logits=False, init_weights=True),
      img(80), ["logits"], "cross-entropy", 1),
    S("vit_b_16 (2 layers, 64 wide)", "torchvision", tv_vit, img(32), ["logits"],
      "cross-entropy", 1),
    S("swin_t", "torchvision", tv("swin_t"), img(64), ["logits"], "cross-entropy", 1),
    S("maxvit_t", "torchvision", tv("maxvit_t"), img(224), ["logits"], "cross-entropy", 1),
    # Hugging Face transformers 4.36.2, tiny configs
    S("gpt2", "transformers", mm.SPEC_BY_NAME["gpt2"].build, toks("input_ids"), ["logits"],
      "cross-entropy", -1),
    S("gpt2 with labels", "transformers", mm.SPEC_BY_NAME["gpt2_loss"].build,
      toks("input_ids", "labels"), ["loss", "logits"], "output", None),
    S("bert-seq-cls", "transformers", mm.SPEC_BY_NAME["bert"].build, toks("input_ids"),
      ["logits"], "cross-entropy", 1),
    S("roberta", "transformers",
      hf(c("RobertaConfig", **ENC, **D0, classifier_dropout=0.0, type_vocab_size=1,
           num_labels=3), "RobertaForSequenceClassification", ["input_ids"], ["logits"]),
      toks("input_ids"), ["logits"], "cross-entropy", 1),
    S("distilbert", "transformers",
      hf(c("DistilBertConfig", vocab_size=200, dim=32, n_layers=2, n_heads=2, hidden_dim=64,
           max_position_embeddings=32, dropout=0.0, attention_dropout=0.0,
           seq_classif_dropout=0.0, num_labels=3),
         "DistilBertForSequenceClassification", ["input_ids"], ["logits"]),
      toks("input_ids"), ["logits"], "cross-entropy", 1),
    S("albert", "transformers",
      hf(c("AlbertConfig", **ENC, **D0, embedding_size=16, classifier_dropout_prob=0.0,
           num_labels=3), "AlbertForSequenceClassification", ["input_ids"], ["logits"]),
      toks("input_ids"), ["logits"], "cross-entropy", 1),
    S("electra", "transformers",
      hf(c("ElectraConfig", **ENC, **D0, embedding_size=16, classifier_dropout=0.0,
           num_labels=3), "ElectraForSequenceClassification", ["input_ids"], ["logits"]),
      toks("input_ids"), ["logits"], "cross-entropy", 1),
    S("deberta-v2", "transformers",
      hf(c("DebertaV2Config", **ENC, **D0, relative_attention=True, position_buckets=8,
           pos_att_type=["p2c", "c2p"], pooler_dropout=0.0, num_labels=3),
         "DebertaV2ForSequenceClassification", ["input_ids"], ["logits"]),
      toks("input_ids"), ["logits"], "cross-entropy", 1),
    S("t5 encoder", "transformers", mm.SPEC_BY_NAME["t5_encoder"].build, toks("input_ids"),
      ["hidden"], "mse", None),
    S("t5 with labels", "transformers",
      hf(lambda t: t.T5Config(**dict(mm.t5_config(t).to_dict(), decoder_start_token_id=0,
                                   pad_token_id=0)), "T5ForConditionalGeneration", ["input_ids", "labels"],
         ["loss", "logits"]),
      toks("input_ids", "labels"), ["loss", "logits"], "output", None),
    S("bart with labels", "transformers",
      hf(c("BartConfig", vocab_size=200, d_model=32, encoder_layers=2, decoder_layers=2,
           encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64,
           decoder_ffn_dim=64, max_position_embeddings=32, dropout=0.0,
           attention_dropout=0.0, activation_dropout=0.0, classifier_dropout=0.0,
           encoder_layerdrop=0.0, decoder_layerdrop=0.0, use_cache=False),
         "BartForConditionalGeneration", ["input_ids", "labels"], ["loss", "logits"]),
      toks("input_ids", "labels"), ["loss", "logits"], "output", None),
    S("llama", "transformers", mm.SPEC_BY_NAME["llama"].build, toks("input_ids"), ["logits"],
      "cross-entropy", -1),
    S("mistral", "transformers",
      hf(c("MistralConfig", vocab_size=200, hidden_size=32, intermediate_size=64,
           num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
           max_position_embeddings=32, sliding_window=8, use_cache=False),
         "MistralForCausalLM", ["input_ids"], ["logits"]),
      toks("input_ids"), ["logits"], "cross-entropy", -1),
    S("opt", "transformers",
      hf(c("OPTConfig", vocab_size=200, hidden_size=32, num_hidden_layers=2,
           num_attention_heads=2, ffn_dim=64, max_position_embeddings=32,
           word_embed_proj_dim=32, dropout=0.0, attention_dropout=0.0, layerdrop=0.0,
           use_cache=False), "OPTForCausalLM", ["input_ids"], ["logits"]),
      toks("input_ids"), ["logits"], "cross-entropy", -1),
    S("gpt-neo", "transformers",
      hf(c("GPTNeoConfig", vocab_size=200, max_position_embeddings=32, hidden_size=32,
           num_layers=2, attention_types=[[["global", "local"], 1]], num_heads=2,
           intermediate_size=64, window_size=8, embed_dropout=0.0, attention_dropout=0.0,
           resid_dropout=0.0, use_cache=False), "GPTNeoForCausalLM", ["input_ids"], ["logits"]),
      toks("input_ids"), ["logits"], "cross-entropy", -1),
    S("bloom", "transformers",
      hf(c("BloomConfig", vocab_size=200, hidden_size=32, n_layer=2, n_head=2,
           hidden_dropout=0.0, attention_dropout=0.0, use_cache=False),
         "BloomForCausalLM", ["input_ids"], ["logits"]),
      toks("input_ids"), ["logits"], "cross-entropy", -1),
    S("whisper audio classifier", "transformers", mm.SPEC_BY_NAME["whisper_classifier"].build,
      lambda g: {"input_features": torch.randn(2, 16, 32, generator=g)}, ["logits"],
      "cross-entropy", 1),
    S("wav2vec2 classifier", "transformers",
      hf(c("Wav2Vec2Config", vocab_size=32, hidden_size=32, num_hidden_layers=2,
           num_attention_heads=2, intermediate_size=64, conv_dim=(16, 16),
           conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16,
           num_conv_pos_embedding_groups=2, feat_extract_norm="group",
           hidden_dropout=0.0, activation_dropout=0.0, attention_dropout=0.0,
           feat_proj_dropout=0.0, final_dropout=0.0, layerdrop=0.0, mask_time_prob=0.0,
           mask_feature_prob=0.0, classifier_proj_size=16, num_labels=4,
           use_weighted_layer_sum=False),
         "Wav2Vec2ForSequenceClassification", ["input_values"], ["logits"]),
      lambda g: {"input_values": torch.randn(2, 400, generator=g)}, ["logits"],
      "cross-entropy", 1),
    S("vit (HF)", "transformers",
      hf(c("ViTConfig", image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2,
           num_attention_heads=2, intermediate_size=64, **D0, num_labels=10),
         "ViTForImageClassification", ["pixel_values"], ["logits"]),
      lambda g: {"pixel_values": torch.randn(2, 3, 32, 32, generator=g)}, ["logits"],
      "cross-entropy", 1),
    S("deit (HF)", "transformers",
      hf(c("DeiTConfig", image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2,
           num_attention_heads=2, intermediate_size=64, **D0, num_labels=10),
         "DeiTForImageClassification", ["pixel_values"], ["logits"]),
      lambda g: {"pixel_values": torch.randn(2, 3, 32, 32, generator=g)}, ["logits"],
      "cross-entropy", 1),
    S("swin (HF)", "transformers",
      hf(c("SwinConfig", image_size=32, patch_size=4, embed_dim=16, depths=[1, 1],
           num_heads=[2, 2], window_size=4, hidden_dropout_prob=0.0,
           attention_probs_dropout_prob=0.0, drop_path_rate=0.0, num_labels=10),
         "SwinForImageClassification", ["pixel_values"], ["logits"]),
      lambda g: {"pixel_values": torch.randn(2, 3, 32, 32, generator=g)}, ["logits"],
      "cross-entropy", 1),
    S("convnext (HF)", "transformers",
      hf(c("ConvNextConfig", num_stages=2, hidden_sizes=[16, 32], depths=[1, 1], drop_path_rate=0.0,
           num_labels=10), "ConvNextForImageClassification", ["pixel_values"], ["logits"]),
      lambda g: {"pixel_values": torch.randn(2, 3, 32, 32, generator=g)}, ["logits"],
      "cross-entropy", 1),
    S("clip text (pooled)", "transformers",
      hf(c("CLIPTextConfig", vocab_size=200, hidden_size=32, intermediate_size=64,
           num_hidden_layers=2, num_attention_heads=2, max_position_embeddings=32,
           dropout=0.0, attention_dropout=0.0), "CLIPTextModel", ["input_ids"],
         ["pooler_output"]),
      toks("input_ids"), ["pooled"], "mse", None),
    S("mobilebert", "transformers",
      hf(c("MobileBertConfig", vocab_size=200, hidden_size=32, embedding_size=16,
           num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
           intra_bottleneck_size=16, max_position_embeddings=32, **D0,
           classifier_dropout=0.0, num_labels=3),
         "MobileBertForSequenceClassification", ["input_ids"], ["logits"]),
      toks("input_ids"), ["logits"], "cross-entropy", 1),
    # Recurrent, segmentation and upsampling, activations, rotary and
    # multi-query attention
    S("lstm classifier (2 layers)", "torch.nn", mm.LSTMClassifier, toks("ids", seq=12),
      ["logits"], "cross-entropy", 1),
    S("gru tagger (bidirectional)", "torch.nn", mm.GRUTagger, toks("ids", seq=12), ["logits"],
      "cross-entropy", -1),
    S("rnn relu (2 layers)", "torch.nn", ReluRNN, toks("ids", seq=12), ["logits"],
      "cross-entropy", 1),
    S("u-net (ConvTranspose2d)", "torch.nn", mm.UNet, img(32), ["logits"], "cross-entropy", 1),
    S("every activation", "torch.nn", mm.Activations,
      lambda g: {"x": torch.randn(2, 8, generator=g)}, ["logits"], "cross-entropy", 1),
    S("rotary multi-query transformer", "torch.nn", mm.RotaryMQA, toks("ids"), ["logits"],
      "cross-entropy", -1),
    S("fcn_resnet50", "torchvision", tv_segmentation("fcn_resnet50", aux_loss=False), img(64),
      ["logits"], "cross-entropy", 1),
    S("lraspp_mobilenet_v3_large", "torchvision", mm.lraspp, img(64), ["logits"],
      "cross-entropy", 1),
    S("deeplabv3_mobilenet_v3_large", "torchvision",
      tv_segmentation("deeplabv3_mobilenet_v3_large", aux_loss=False), img(64), ["logits"],
      "cross-entropy", 1),
    S("gpt-bigcode (multi-query)", "transformers",
      hf(c("GPTBigCodeConfig", vocab_size=200, n_positions=32, n_embd=32, n_layer=2, n_head=4,
           multi_query=True, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
           use_cache=False), "GPTBigCodeForCausalLM", ["input_ids"], ["logits"]),
      toks("input_ids"), ["logits"], "cross-entropy", -1),
    S("gpt-neox (rotary)", "transformers",
      hf(c("GPTNeoXConfig", vocab_size=200, hidden_size=32, num_hidden_layers=2,
           num_attention_heads=4, intermediate_size=64, max_position_embeddings=32,
           hidden_dropout=0.0, attention_dropout=0.0, use_cache=False),
         "GPTNeoXForCausalLM", ["input_ids"], ["logits"]),
      toks("input_ids"), ["logits"], "cross-entropy", -1),
    S("falcon (rotary, multi-query)", "transformers",
      hf(c("FalconConfig", vocab_size=200, hidden_size=32, num_hidden_layers=2,
           num_attention_heads=4, multi_query=True, hidden_dropout=0.0, attention_dropout=0.0,
           use_cache=False), "FalconForCausalLM", ["input_ids"], ["logits"]),
      toks("input_ids"), ["logits"], "cross-entropy", -1),
    S("phi (partial rotary)", "transformers",
      hf(c("PhiConfig", vocab_size=200, hidden_size=32, intermediate_size=64,
           num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=32,
           resid_pdrop=0.0, embd_pdrop=0.0, attention_dropout=0.0, use_cache=False),
         "PhiForCausalLM", ["input_ids"], ["logits"]),
      toks("input_ids"), ["logits"], "cross-entropy", -1),
    # timm 0.9.12
    S("timm resnet18", "timm", timm_model("resnet18"), img(32), ["logits"], "cross-entropy", 1),
    S("timm efficientnet_b0", "timm", timm_model("efficientnet_b0"), img(32), ["logits"],
      "cross-entropy", 1),
    S("timm convnext_atto", "timm", timm_model("convnext_atto"), img(32), ["logits"],
      "cross-entropy", 1),
    S("timm vit_tiny (2 layers)", "timm",
      timm_model("vit_tiny_patch16_224", img_size=32, patch_size=8, depth=2), img(32),
      ["logits"], "cross-entropy", 1),
    S("timm mixer_s16 (2 blocks)", "timm",
      timm_class("mlp_mixer", "MlpMixer", img_size=32, patch_size=8, num_blocks=2,
                 embed_dim=64), img(32),
      ["logits"], "cross-entropy", 1),
    S("timm mobilevit_xxs", "timm", timm_model("mobilevit_xxs"), img(64), ["logits"],
      "cross-entropy", 1),
]


def slug(name):
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_")


def seed_for(name):
    return sum(ord(ch) * (i + 1) for i, ch in enumerate(name)) % 10007


def tail(text, n=1):
    lines = [l.strip() for l in (text or "").splitlines() if l.strip()]
    return " | ".join(lines[-n:]) if lines else "(no message)"


def run(cmd, timeout, nice=False):
    """(returncode or 'timeout', output); the whole process group goes on a timeout."""
    if nice:
        cmd = ["nice", "-n", "10"] + cmd
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        return p.returncode, out
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        return "timeout", out


def refused_ops(check_out):
    """'Op (no import)' / 'Op (no gradient)' for the rows of trainc check's op table."""
    found = []
    for line in check_out.splitlines():
        m = re.match(r"(\w+)\s+(\d+)\s+(yes|NO)\s+(yes|n/a|not yet|NO)\b", line)
        if m and m.group(3) == "NO":
            found.append("%s (no import)" % m.group(1))
        elif m and m.group(4) in ("not yet", "NO"):
            found.append("%s (no gradient)" % m.group(1))
    return found or [tail(check_out, 1)[:200]]


def clone(spec, module):
    """A deep copy; a module that deepcopy refuses (weight_norm's computed weight in
    torch 1.13) is built again and given the state."""
    try:
        return copy.deepcopy(module)
    except RuntimeError:
        torch.manual_seed(seed_for(spec.name))
        fresh = spec.build().float()
        fresh.load_state_dict(module.state_dict())
        fresh.train(module.training)
        return fresh


def gradients(spec, mspec, module, inputs, label, init_of_param, dtype):
    """make_models.gradients on a private clone: its own deep copy is skipped (a
    weight_norm module, wav2vec2's, cannot be deep-copied in torch 1.13)."""
    m = clone(spec, module)
    orig = mm.copy.deepcopy
    mm.copy.deepcopy = lambda x, memo=None: x
    try:
        return mm.gradients(m, inputs, label, mspec, init_of_param, dtype)
    finally:
        mm.copy.deepcopy = orig


def export(spec, mdir):
    """Exports the model, writes the data and PyTorch's float32/float64 gradients."""
    torch.manual_seed(seed_for(spec.name))
    module = spec.build().float()
    module.train()
    feed = spec.inputs(torch.Generator().manual_seed(seed_for(spec.name) + 1))
    names = list(feed)
    inputs = [feed[n] for n in names]
    saved = copy.deepcopy(module.state_dict())
    path = os.path.join(mdir, "model.onnx")
    trainable, _ = export_for_training(module, tuple(inputs), path, names, spec.outputs,
                                       opset_version=17)
    module.load_state_dict(saved)
    proto = onnx.load(path)
    mm.load_initializers(module, proto)
    init_of_param = mm.initializer_names(proto, module, trainable)
    with torch.no_grad():
        out = clone(spec, module)(*inputs)
    mspec = mm.Spec(spec.name, None, None, spec.outputs, spec.loss, spec.class_axis, False)
    label = mm.make_label(mspec, out, torch.Generator().manual_seed(seed_for(spec.name) + 2))
    data = os.path.join(mdir, "data")
    os.makedirs(data)
    for n, x in feed.items():
        np.save(os.path.join(data, n + ".npy"), x.numpy())
    if label is not None:
        np.save(os.path.join(data, "label.npy"), label.numpy())
    grads = {}
    try:
        for dt in (torch.float32, torch.float64):
            grads[dt] = gradients(spec, mspec, module, inputs, label, init_of_param, dt)[1]
    except Exception as e:  # the ratio is then not measured
        grads = {"error": "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")}
    ops = collections.Counter(n.op_type for n in proto.graph.node)
    return dict(trainable=sorted(init_of_param), grads=grads, nodes=len(proto.graph.node),
                ops=ops, params=int(sum(p.numel() for p in module.parameters())))


def sgd_ratio(mdir, exported, info):
    g = info["grads"]
    if "error" in g:
        return "ref failed: " + g["error"]
    initial = {t.name: numpy_helper.to_array(t)
               for t in onnx.load(os.path.join(mdir, "model.onnx")).graph.initializer}
    trained = {t.name: numpy_helper.to_array(t) for t in onnx.load(exported).graph.initializer}
    g32, g64 = g[torch.float32], g[torch.float64]
    lr = np.float32(LR)
    num = num32 = den = 0.0
    for init in info["trainable"]:
        if init not in trained:
            return "no %s in export" % init
        want = initial[init].astype(np.float64) - float(lr) * g64[init]
        step32 = initial[init] - lr * g32[init].astype(np.float32)
        num += float(np.sum((trained[init].astype(np.float64) - want) ** 2))
        num32 += float(np.sum((step32.astype(np.float64) - want) ** 2))
        den += float(np.sum((float(lr) * g64[init]) ** 2))
    if den == 0:
        return "zero gradient"
    err, err32 = np.sqrt(num / den), np.sqrt(num32 / den)
    return "%.3g (err %.2g, f32 %.2g)" % (err / max(err32, 1e-7), err, err32)


def survey(trainc, spec, work, check_only=False):
    row = dict(model=spec.name, source=spec.source, exports="-", check="-", compiles="-",
               step="-", ratio="-", notes="", check_out=None)
    mdir = os.path.join(work, slug(spec.name))
    shutil.rmtree(mdir, ignore_errors=True)
    os.makedirs(mdir)
    t0 = time.time()
    try:
        info = export(spec, mdir)
        row["exports"] = "yes"
        row["notes"] = "%d nodes" % info["nodes"]
    except Exception as e:
        msg = (str(e).strip().splitlines() or [""])[0][:300]
        row["exports"] = "NO"
        row["notes"] = "export: %s: %s" % (type(e).__name__, msg)
        if isinstance(e, ModuleNotFoundError) or "No module named" in msg:
            row["exports"] = "n/a"
        with open(os.path.join(mdir, "export-error.txt"), "w") as f:
            f.write(traceback.format_exc())
        return row
    onnx_path = os.path.join(mdir, "model.onnx")
    flags = ["--target=cpu", "--batch-size=2"]
    if spec.loss == "output":
        flags.append("--loss=output")
    rc, out = run([trainc, "check", "--training"] + flags + [onnx_path], 300)
    row["check_out"] = out
    row["check"] = "ok" if rc == 0 else "REFUSES: " + ", ".join(refused_ops(out))
    # A refusal that only lists op types without a gradient rule still says whether
    # the trainer builds (the op may fold at import or carry integer data): try it.
    if check_only or (rc != 0 and "trainc compile builds this model" not in out):
        return row
    prog = os.path.join(mdir, "prog")
    cflags = ["--target=cpu", "--batch-size=2", "--loss=" + spec.loss, "--optimizer=sgd"]
    if spec.class_axis not in (None, 1):
        cflags.append("--class-axis=%d" % spec.class_axis)
    t1 = time.time()
    rc, out = run([trainc, "compile", onnx_path] + cflags + ["-o", prog], COMPILE_TIMEOUT,
                  nice=True)
    ct = time.time() - t1
    if rc == "timeout":
        row["compiles"] = "gave up (> %d s)" % COMPILE_TIMEOUT
        return row
    if rc != 0:
        row["compiles"] = "NO"
        row["notes"] += "; compile: " + tail(out, 2)[:300]
        return row
    row["compiles"] = "yes (%.0f s)" % ct
    exported = os.path.join(mdir, "trained.onnx")
    rc, out = run([prog, "--data", os.path.join(mdir, "data"), "--steps", "1", "--lr", str(LR),
                   "--no-shuffle", "--export", exported], 600)
    if rc != 0:
        row["step"] = "NO"
        row["notes"] += "; step: " + tail(out, 2)[:300]
        return row
    row["step"] = "yes"
    try:
        row["ratio"] = sgd_ratio(mdir, exported, info)
    except Exception as e:
        row["ratio"] = "n/a (%s)" % type(e).__name__
    # The program (hundreds of MB for VGG) goes; the model and data stay.
    shutil.rmtree(prog + ".build", ignore_errors=True)
    for p in (prog, exported):
        if os.path.exists(p):
            os.remove(p)
    row["notes"] += "; %.0f s in all" % (time.time() - t0)
    return row


def main():
    global LR
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trainc")
    ap.add_argument("workdir")
    ap.add_argument("--only", help="only the models whose name matches REGEX (re.search)")
    ap.add_argument("--json", help="also write the rows to this JSON file")
    ap.add_argument("--lr", type=float, default=LR,
                    help="learning rate of the one SGD step (default %(default)s)")
    ap.add_argument("--check-only", action="store_true",
                    help="export and `trainc check --training` only (no compile, no step)")
    args = ap.parse_args()
    LR = args.lr
    trainc = os.path.abspath(args.trainc)
    work = os.path.abspath(args.workdir)
    os.makedirs(work, exist_ok=True)
    specs = [s for s in SPECS if not args.only or re.search(args.only, s.name)]
    rows = []
    for spec in specs:
        row = survey(trainc, spec, work, args.check_only)
        rows.append(row)
        print("%s: exports %s, check %s, compiles %s, step %s, sgd ratio %s; %s" % (
            row["model"], row["exports"], row["check"], row["compiles"], row["step"],
            row["ratio"], row["notes"]), flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(rows, f, indent=1)
    print()
    print("| model | source | exports | check | compiles | step runs | sgd ratio | notes |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["model"], r["source"], r["exports"], r["check"], r["compiles"], r["step"],
            r["ratio"], r["notes"].replace("|", "/")))
    trained = sum(1 for r in rows if r["step"] == "yes")
    print("\n%d of %d models train one step\n" % (trained, len(rows)))
    for r in rows:
        if r["step"] != "yes" and r["check_out"]:
            print("### %s: trainc check --training\n" % r["model"])
            print("```\n%s```\n" % r["check_out"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
