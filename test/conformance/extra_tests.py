"""Node tests the ONNX backend suite lacks, with ONNX Runtime as the reference.

The backend suite has no recurrent test with `sequence_lens`, a reverse GRU
without `linear_before_reset`, peepholes with a cell clip, a bidirectional
GRU with it from initial states, or a bidirectional Relu RNN. write_extra_tests(ROOT) writes such
models in the suite's layout (ROOT/NAME/model.onnx, test_data_set_0/
input_K.pb and output_K.pb), their inputs drawn with a fixed seed and their
outputs computed by onnxruntime (the conformance venv's, 1.20): run_node_tests.py
then runs them as it runs the suite's own.
"""

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


def _recurrent(op, name, t, b, i, h, direction="forward", layout=0, lens=None, initial=False,
               peepholes=False, clip=None, attrs=None, seed=0):
    """An RNN/GRU/LSTM node test: weights as initializers, X (and lens,
    initial states) as inputs."""
    rng = np.random.RandomState(seed)
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
    d = 2 if direction == "bidirectional" else 1
    x_shape = [b, t, i] if layout else [t, b, i]
    state_shape = [b, d, h] if layout else [d, b, h]
    inits = [numpy_helper.from_array(rng.uniform(-0.6, 0.6, (d, gates * h, i)).astype(np.float32), "W"),
             numpy_helper.from_array(rng.uniform(-0.6, 0.6, (d, gates * h, h)).astype(np.float32), "R"),
             numpy_helper.from_array(rng.uniform(-0.3, 0.3, (d, 2 * gates * h)).astype(np.float32), "B")]
    feeds = {"X": rng.randn(*x_shape).astype(np.float32)}
    inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, x_shape)]
    node_inputs = ["X", "W", "R", "B", "", "", "", ""]
    if lens is not None:
        feeds["lens"] = np.array(lens, np.int32)
        inputs.append(helper.make_tensor_value_info("lens", TensorProto.INT32, [b]))
        node_inputs[4] = "lens"
    if initial:
        feeds["h0"] = rng.randn(*state_shape).astype(np.float32) * 0.5
        inputs.append(helper.make_tensor_value_info("h0", TensorProto.FLOAT, state_shape))
        node_inputs[5] = "h0"
        if op == "LSTM":
            feeds["c0"] = rng.randn(*state_shape).astype(np.float32) * 0.5
            inputs.append(helper.make_tensor_value_info("c0", TensorProto.FLOAT, state_shape))
            node_inputs[6] = "c0"
    if peepholes:
        inits.append(numpy_helper.from_array(
            rng.uniform(-0.5, 0.5, (d, 3 * h)).astype(np.float32), "P"))
        node_inputs[7] = "P"
    while node_inputs and node_inputs[-1] == "":
        node_inputs.pop()
    outputs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
    kwargs = dict(hidden_size=h, direction=direction, layout=layout, **(attrs or {}))
    if clip is not None:
        kwargs["clip"] = clip
    node = helper.make_node(op, node_inputs, outputs, name=name, **kwargs)
    y_shape = [b, t, d, h] if layout else [t, d, b, h]
    graph = helper.make_graph(
        [node], name, inputs,
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, y_shape)] +
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, state_shape) for o in outputs[1:]],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              ir_version=8)
    return name, model, feeds


def tests():
    return [
        _recurrent("LSTM", "extra_lstm_seq_lens", 5, 3, 2, 4, lens=[5, 2, 3], initial=True),
        _recurrent("LSTM", "extra_lstm_seq_lens_bidirectional", 4, 3, 2, 3,
                   direction="bidirectional", lens=[1, 4, 2], seed=1),
        _recurrent("LSTM", "extra_lstm_peepholes_clip", 4, 2, 3, 3, peepholes=True, clip=0.8,
                   initial=True, seed=2),
        _recurrent("GRU", "extra_gru_reverse_seq_lens", 5, 3, 2, 4, direction="reverse",
                   lens=[3, 5, 1], initial=True, seed=3),
        # ONNX Runtime runs no batch-first (layout 1) GRU; the suite's
        # test_gru_batchwise has one.
        _recurrent("GRU", "extra_gru_linear_before_reset_bidirectional", 4, 2, 3, 3,
                   direction="bidirectional", initial=True,
                   attrs=dict(linear_before_reset=1), seed=4),
        _recurrent("RNN", "extra_rnn_relu_bidirectional_seq_lens", 4, 3, 2, 3,
                   direction="bidirectional", lens=[4, 1, 3], initial=True,
                   attrs=dict(activations=["Relu", "Relu"]), seed=5),
    ]


def write_extra_tests(root):
    """Writes every extra test under `root`; returns their folders."""
    import onnxruntime
    folders = []
    for name, model, feeds in tests():
        folder = os.path.join(root, name)
        data = os.path.join(folder, "test_data_set_0")
        os.makedirs(data, exist_ok=True)
        onnx.save(model, os.path.join(folder, "model.onnx"))
        session = onnxruntime.InferenceSession(model.SerializeToString(),
                                               providers=["CPUExecutionProvider"])
        names = [i.name for i in model.graph.input]
        results = session.run(None, {n: feeds[n] for n in names})
        for k, n in enumerate(names):
            with open(os.path.join(data, "input_%d.pb" % k), "wb") as f:
                f.write(numpy_helper.from_array(feeds[n], n).SerializeToString())
        for k, (out, value) in enumerate(zip(model.graph.output, results)):
            with open(os.path.join(data, "output_%d.pb" % k), "wb") as f:
                f.write(numpy_helper.from_array(value, out.name).SerializeToString())
        folders.append(folder)
    return folders
