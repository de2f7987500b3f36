"""Writes OUT/model_loss.onnx (an MLP whose cross-entropy is inside the model,
as a Hugging Face model given labels computes it: inputs x [N, 8] and labels
[N], output the scalar loss) and OUT/data (22 samples) and OUT/tiny (3)."""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

out = sys.argv[1]
torch.manual_seed(0)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x, labels):
        return F.cross_entropy(self.fc(x), labels)


torch.onnx.export(Net(), (torch.zeros(4, 8), torch.zeros(4, dtype=torch.int64)),
                  os.path.join(out, "model_loss.onnx"), opset_version=17,
                  do_constant_folding=False, training=torch.onnx.TrainingMode.TRAINING,
                  input_names=["x", "labels"], output_names=["loss"],
                  dynamic_axes={"x": {0: "N"}, "labels": {0: "N"}})
rng = np.random.default_rng(0)
for name, n in (("data", 22), ("tiny", 3)):
    os.makedirs(os.path.join(out, name), exist_ok=True)
    np.save(os.path.join(out, name, "x.npy"), rng.standard_normal((n, 8)).astype(np.float32))
    np.save(os.path.join(out, name, "labels.npy"), rng.integers(0, 4, n).astype(np.int64))
