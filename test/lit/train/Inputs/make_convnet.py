#!/usr/bin/python3
"""Writes a small conv net for the 8x8 digits images (input x [N, 64]).

The image is upsampled to 16x16 (Expand + Reshape), so the first convolution
has 256 output positions per image (conv2d's image-per-thread path) and the
second, after a 2x2 max pool, 64 (the all-images GEMM path); both are
followed by a training-mode BatchNorm and ReLU; then global average pooling,
an average pool and a Linear layer. Deterministic (seed 0), opset 17, with
a symbolic batch axis and TrainingMode.TRAINING (BatchNorm keeps its
running statistics). Usage: make_convnet.py OUT.onnx
"""

import sys

import torch
import torch.nn as nn


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(16)
        self.avg = nn.AvgPool2d(2)
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        n = x.shape[0]
        x = x.view(n, 1, 8, 1, 8, 1).expand(n, 1, 8, 2, 8, 2).reshape(n, 1, 16, 16)
        x = self.pool(torch.relu(self.bn1(self.conv1(x))))
        x = self.avg(torch.relu(self.bn2(self.conv2(x))))
        return self.fc(x.flatten(1))


torch.manual_seed(0)
model = ConvNet()
model.train()
torch.onnx.export(model, torch.zeros(2, 64), sys.argv[1], opset_version=17,
                  input_names=["x"], output_names=["logits"],
                  dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}},
                  training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
