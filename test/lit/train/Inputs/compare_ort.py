"""Checks an exported model: onnx.checker, ONNX Runtime against the trainer's
--predict output (atol 1e-5), and that the weights differ from the original."""
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

exported, x_path, predicted, original = sys.argv[1:5]
model = onnx.load(exported)
onnx.checker.check_model(model)
print("checker ok")
session = ort.InferenceSession(exported, providers=["CPUExecutionProvider"])
x = np.load(x_path)
got = session.run(None, {session.get_inputs()[0].name: x})[0]
want = np.load(predicted)
err = float(np.abs(got - want).max())
print("onnxruntime matches --predict: max abs error %g, %s" %
      (err, "within 1e-5" if err <= 1e-5 else "NOT within 1e-5"))
before = {t.name: numpy_helper.to_array(t) for t in onnx.load(original).graph.initializer}
after = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
changed = all(not np.array_equal(before[k], after[k]) for k in before)
print("weights changed by training: %s" % ("yes" if changed else "no"))
