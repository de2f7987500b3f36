#!/usr/bin/env python3
"""Exports a small module with python/trainc_torch.py and prints its trainc metadata.

usage: export_for_training.py OUT.onnx

The module has a trainable Embedding(5, 3, padding_idx=1) tied to a Linear's
weight, a trainable Linear, a Linear whose weight is frozen (its bias trains),
and a float buffer added in forward. The checks here fail with an assertion;
the printed metadata is checked by FileCheck.
"""

import json
import os
import sys
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "python"))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

import trainc_torch  # noqa: E402


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(5, 3, padding_idx=1)
        self.fc = nn.Linear(6, 4)
        self.frozen = nn.Linear(4, 4)
        self.frozen.weight.requires_grad_(False)
        self.register_buffer("offset", torch.arange(4.0))
        self.out = nn.Linear(3, 5, bias=False)
        self.out.weight = self.emb.weight  # tied: one initializer

    def forward(self, ids):
        e = self.emb(ids)
        h = self.frozen(torch.relu(self.fc(e.flatten(1)))) + self.offset
        return h, self.out(e)


def main():
    path = sys.argv[1]
    torch.manual_seed(0)
    net = Net().eval()
    net.fc.train()  # a submodule in another mode: both flags come back
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns that ONNX cannot say padding_idx
        trainable, padding = trainc_torch.export_for_training(
            net, (torch.tensor([[0, 1], [2, 1], [4, 3]]),), path, ["ids"], ["h", "logits"])
    assert not net.training and net.fc.training and not net.emb.training

    m = onnx.load(path)
    props = {p.key: p.value for p in m.metadata_props}
    assert json.loads(props["trainc.trainable"]) == trainable
    assert json.loads(props["trainc.padding_index"]) == padding
    print("trainable:", props["trainc.trainable"])
    print("padding:", props["trainc.padding_index"])
    inits = {i.name for i in m.graph.initializer}
    print("initializers:", json.dumps(sorted(inits)))
    for v in list(m.graph.input) + list(m.graph.output):
        print("batch axis of %s: %s" % (v.name, v.type.tensor_type.shape.dim[0].dim_param))
    assert any(n.op_type == "Gather" for n in m.graph.node)  # not folded away

    # Tracing in training mode moves batch-norm statistics; the helper puts the
    # module's and the model's back to their values from before the export.
    bn = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    with torch.no_grad():
        bn[1].running_var.uniform_(1, 2)
    before = {k: v.clone() for k, v in bn.state_dict().items()}
    bn_path = os.path.join(os.path.dirname(path), "bn.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainc_torch.export_for_training(bn, (torch.randn(5, 3),), bn_path, ["x"], ["y"])
    kept = all(torch.equal(v, before[k]) for k, v in bn.state_dict().items())
    inits = onnx.load(bn_path).graph.initializer
    kept_onnx = all(np.array_equal(numpy_helper.to_array(t), before[t.name].numpy()) for t in inits)
    print("batch norm statistics kept: module %s, model %s (%d initializers)"
          % (kept, kept_onnx, len(inits)))

    # An initializer that does not carry its state_dict key is matched by value.
    for init in m.graph.initializer:
        if init.name in ("emb.weight", "out.weight"):
            tied = init.name
            init.name = "onnx::Gather_7"
        elif init.name == "offset":
            init.name = "onnx::Add_8"
    t2, p2 = trainc_torch._trainc_metadata(net, m, os.path.dirname(path))
    print("renamed: trainable:", json.dumps(t2), "padding:", json.dumps(p2))
    assert sorted(t2) == sorted(["onnx::Gather_7" if n == tied else n for n in trainable])

    # A value that is both a buffer and a trainable parameter cannot be classified.
    with torch.no_grad():
        net.fc.bias.copy_(torch.arange(4.0))
    for init in m.graph.initializer:
        if init.name == "fc.bias":
            init.name = "onnx::Gemm_9"
    try:
        trainc_torch._trainc_metadata(net, m, os.path.dirname(path))
        raise AssertionError("ambiguous initializer accepted")
    except ValueError as e:
        print("ambiguous:", e)


if __name__ == "__main__":
    main()
