#!/usr/bin/python3
"""Writes an MLP for the digits (input x [N, 64]) whose 1024-wide hidden
layer goes through exact GELU (Erf), Tanh and Sigmoid (Exp): with a batch of
64 these are element loops of 65536, which the CPU target runs in
vectorized chunks with the vector math library. Deterministic (seed 0),
opset 17, symbolic batch axis. Usage: make_gelu_mlp.py OUT.onnx
"""

import sys

import torch
import torch.nn as nn


class GeluMlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 1024)
        self.fc2 = nn.Linear(1024, 10)

    def forward(self, x):
        h = nn.functional.gelu(self.fc1(x))
        return self.fc2(torch.sigmoid(torch.tanh(h) * 3.0))


torch.manual_seed(0)
torch.onnx.export(GeluMlp(), torch.zeros(2, 64), sys.argv[1], opset_version=17,
                  input_names=["x"], output_names=["logits"],
                  dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}},
                  do_constant_folding=False)
