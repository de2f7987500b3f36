"""A small CNN with BatchNorm and Dropout, exported the plain way (eval mode,
constant folding: torch.onnx.export's defaults) to OUT/eval.onnx and for
training (python/trainc_torch.py) to OUT/train.onnx.

usage: make_eval_export.py OUT
"""
import os
import sys
import warnings

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "python"))
from trainc_torch import export_for_training  # noqa: E402

out = sys.argv[1]
torch.manual_seed(0)
net = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Dropout(0.5),
                    nn.Flatten(), nn.Linear(4 * 6 * 6, 3))
x = torch.zeros(2, 1, 8, 8)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    net.eval()
    torch.onnx.export(net, x, os.path.join(out, "eval.onnx"), input_names=["x"],
                      output_names=["logits"], dynamic_axes={"x": {0: "b"}, "logits": {0: "b"}})
    net.train()
    export_for_training(net, (x,), os.path.join(out, "train.onnx"), ["x"], ["logits"])
