#!/usr/bin/python3
"""Writes examples/digits_mlp.onnx: the bundled example model.

A 64-128-10 MLP for the 8x8 digits images that scikit-learn ships, exported by
PyTorch at opset 17 with a symbolic batch axis. Deterministic (seed 0).
Usage: /usr/bin/python3 examples/make_example.py [OUT.onnx]
"""

import os
import sys

import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "digits_mlp.onnx")
torch.onnx.export(model, torch.zeros(1, 64), out, opset_version=17,
                  input_names=["x"], output_names=["logits"],
                  dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}})
print("wrote", out)
