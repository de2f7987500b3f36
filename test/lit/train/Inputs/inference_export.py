"""Checks that --export writes the inference model of a Conv + BatchNorm +
Dropout net exported by PyTorch in training mode.

  make OUT.onnx OPSET DATA   (/usr/bin/python3, torch) the model, exported with
                             TrainingMode.TRAINING, and DATA/{x,label}.npy
  ort EXPORT X PRED OUT.npy  (onnx + onnxruntime) onnx.checker, no training-mode
                             BatchNormalization or Dropout left, ONNX Runtime's
                             output against the trainer's --predict (PRED), and
                             ONNX Runtime's output written to OUT.npy
  torch EXPORT X ORT.npy PARAMS  (torch) PyTorch's model.eval() with the weights
                             and running statistics of the export against ONNX
                             Runtime's output; the export's initializers against
                             --save-params (bit for bit)

  data4 DIR                  DIR/{x,label}.npy, [8, 4] float each
  mask EXPORT                (onnx + onnxruntime) the export of
                             dropout-mask-output.onnxtxt: its Dropout keeps the
                             used mask output, which is all true

Outputs are compared within |a - b| <= 1e-5 + 1e-4 |b|.
"""

import sys

import numpy as np

RTOL, ATOL = 1e-4, 1e-5


def make_net():
    import torch.nn as nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 6, 3, padding=1)
            self.bn = nn.BatchNorm2d(6)
            self.drop = nn.Dropout(0.3)
            self.fc1 = nn.Linear(6 * 8 * 8, 16)
            self.bn1 = nn.BatchNorm1d(16)
            self.drop1 = nn.Dropout(0.2)
            self.fc2 = nn.Linear(16, 4)

        def forward(self, x):
            x = x.reshape(-1, 1, 8, 8)
            x = self.drop(self.bn(self.conv(x)).relu()).flatten(1)
            return self.fc2(self.drop1(self.bn1(self.fc1(x)).relu()))

    return Net()


def close(got, want):
    err = np.abs(got.astype(np.float64) - want.astype(np.float64))
    bound = ATOL + RTOL * np.abs(want.astype(np.float64))
    return bool(np.all(err <= bound)), float(err.max())


def make(out, opset, data):
    import os

    import torch

    torch.manual_seed(0)
    net = make_net()
    net.train()
    torch.onnx.export(net, torch.zeros(2, 64), out, opset_version=int(opset),
                      input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}},
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    os.makedirs(data, exist_ok=True)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 64)).astype(np.float32)
    np.save(os.path.join(data, "x.npy"), x)
    np.save(os.path.join(data, "label.npy"), (x[:, :4].argmax(1)).astype(np.int64))


def check_ort(exported, x_path, predicted, out):
    import onnx
    import onnxruntime as ort

    model = onnx.load(exported)
    onnx.checker.check_model(model)
    print("checker ok")
    for node in model.graph.node:
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        if node.op_type == "BatchNormalization":
            if attrs.get("training_mode", 0) != 0 or len(node.output) != 1:
                print("training-mode BatchNormalization %s: training_mode %s, %d outputs" %
                      (node.name, attrs.get("training_mode"), len(node.output)))
        if node.op_type == "Dropout" and len(node.input) > 2 and node.input[2]:
            print("Dropout %s keeps its training_mode input %s" % (node.name, node.input[2]))
    ops = [n.op_type for n in model.graph.node]
    print("BatchNormalization %d, Dropout %d" %
          (ops.count("BatchNormalization"), ops.count("Dropout")))
    session = ort.InferenceSession(exported, providers=["CPUExecutionProvider"])
    got = session.run(None, {"x": np.load(x_path)})[0]
    np.save(out, got)
    ok, err = close(got, np.load(predicted))
    print("onnxruntime %s --predict: max abs error %g" % ("matches" if ok else "DIFFERS FROM", err))


def check_torch(exported, x_path, ort_out, params):
    import os

    import onnx
    import torch
    from onnx import numpy_helper

    weights = {t.name: numpy_helper.to_array(t) for t in onnx.load(exported).graph.initializer}
    net = make_net()
    state = net.state_dict()
    loaded = 0
    for name in state:
        if name in weights:
            state[name] = torch.from_numpy(weights[name].copy())
            saved = np.load(os.path.join(params, name + ".npy"))
            if saved.tobytes() != weights[name].tobytes():
                print("initializer %s differs from --save-params" % name)
            loaded += 1
    net.load_state_dict(state)
    print("loaded %d tensors (running statistics included)" % loaded)
    net.eval()
    with torch.no_grad():
        want = net(torch.from_numpy(np.load(x_path))).numpy()
    ok, err = close(np.load(ort_out), want)
    print("onnxruntime %s PyTorch eval(): max abs error %g" %
          ("matches" if ok else "DIFFERS FROM", err))


def data4(out):
    import os

    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(1)
    for name in ("x", "label"):
        np.save(os.path.join(out, name + ".npy"), rng.normal(size=(8, 4)).astype(np.float32))


def check_mask(exported):
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper

    model = onnx.load(exported)
    onnx.checker.check_model(model)
    node = [n for n in model.graph.node if n.op_type == "Dropout"][0]
    print("Dropout inputs %s, outputs %s" % (list(node.input), list(node.output)))
    w = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}["W"]
    x = np.random.default_rng(2).normal(size=(3, 4)).astype(np.float32)
    session = ort.InferenceSession(exported, providers=["CPUExecutionProvider"])
    z, mask = session.run(["z", "mask"], {"x": x})
    print("mask all true: %s, z equals the MatMul: %s" %
          ("yes" if mask.all() else "no", "yes" if close(z, x @ w)[0] else "no"))


if __name__ == "__main__":
    {"make": make, "ort": check_ort, "torch": check_torch, "data4": data4, "mask": check_mask}[sys.argv[1]](*sys.argv[2:])
