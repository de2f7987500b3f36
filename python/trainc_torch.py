"""Export a PyTorch module to ONNX for training with trainc.

ONNX cannot say which initializers are parameters, so trainc trains every float
initializer of a plain export. `export_for_training` exports the graph PyTorch
trains and records what only PyTorch knows in the model's `metadata_props`:

  trainc.trainable      JSON list of the initializer names that are trainable
                        parameters (parameters with requires_grad; buffers such as
                        BART's final_logits_bias and frozen parameters are not listed)
  trainc.padding_index  JSON object {initializer name: padding index} for every
                        nn.Embedding with padding_idx set (its row gets no gradient)

Usage (tested with torch 1.13 and 2.9.1 on onnx 1.12; torch 2.x exports with the
TorchScript exporter, see torchscript_exporter):

    import sys; sys.path.insert(0, "<trainc>/python")
    from trainc_torch import export_for_training
    export_for_training(model, (x,), "model.onnx", ["x"], ["logits"])

Initializers usually carry the state_dict key of their tensor; one that does not
(a renamed `onnx::...` initializer) is matched by value against the module's
parameters and buffers. An initializer whose value matches both a trainable and a
non-trainable tensor is an error; a trainable parameter found in no initializer
(unused by forward) is a warning naming it. Only nn.Embedding modules are seen:
F.embedding(..., padding_idx=p) in a forward is not.
"""

import inspect
import json
import os
import warnings

import numpy as np
import onnx
from onnx import numpy_helper
import torch

TRAINABLE_KEY = "trainc.trainable"
PADDING_KEY = "trainc.padding_index"


def _module_tensors(model):
    """Every name (aliases of tied weights included) -> tensor of the module."""
    named = dict(model.state_dict(keep_vars=True))
    for name, buf in model.named_buffers():  # non-persistent buffers too
        named.setdefault(name, buf)
    for name, param in model.named_parameters():
        named.setdefault(name, param)
    return named


def _same_value(tensor, value):
    """Whether a module tensor holds exactly the initializer's array."""
    try:
        mine = tensor.detach().cpu().numpy()
    except (TypeError, RuntimeError):  # bfloat16 has no numpy type: no match
        return False
    return mine.dtype == value.dtype and np.array_equal(mine, value)


def _match_initializers(proto, named, base_dir):
    """ONNX initializer name -> list of module tensors it stands for."""
    matches = {}
    for init in proto.graph.initializer:
        if init.name in named:
            matches[init.name] = [named[init.name]]
            continue
        value = numpy_helper.to_array(init, base_dir)
        found = {}
        for tensor in named.values():
            if tuple(tensor.shape) == value.shape and _same_value(tensor, value):
                found[id(tensor)] = tensor
        matches[init.name] = list(found.values())
    return matches


def _is_trainable(tensor):
    return isinstance(tensor, torch.nn.Parameter) and tensor.requires_grad


def _trainc_metadata(model, proto, base_dir):
    named = _module_tensors(model)
    matches = _match_initializers(proto, named, base_dir)
    trainable = []
    for init_name, tensors in matches.items():
        kinds = {_is_trainable(t) for t in tensors}
        if len(kinds) > 1:
            names = sorted(n for n, t in named.items() if any(t is m for m in tensors))
            raise ValueError(
                "initializer '%s' matches both trainable and non-trainable tensors "
                "by value: %s; cannot tell whether it is trained" % (init_name, names))
        if kinds == {True}:
            trainable.append(init_name)
    for name, param in model.named_parameters():
        if param.requires_grad and not any(
                any(t is param for t in ts) for ts in matches.values()):
            warnings.warn("trainc_torch: trainable parameter '%s' is in no ONNX "
                          "initializer (unused by forward?)" % name)
    padding = {}
    for mod_name, mod in model.named_modules():
        if not isinstance(mod, torch.nn.Embedding) or mod.padding_idx is None:
            continue
        inits = [n for n, ts in matches.items() if any(t is mod.weight for t in ts)]
        if not inits:
            warnings.warn("trainc_torch: the weight of embedding '%s' (padding_idx %d) "
                          "is in no ONNX initializer" % (mod_name, mod.padding_idx))
        for init_name in inits:
            padding[init_name] = int(mod.padding_idx)
    return trainable, padding


def _restore_buffers(proto, buffers):
    """Initializers of buffers get their values from before the export."""
    for init in proto.graph.initializer:
        before = buffers.get(init.name)
        if before is None or init.data_location == onnx.TensorProto.EXTERNAL:
            continue
        try:
            value = before.cpu().numpy()
        except (TypeError, RuntimeError):
            continue
        if not np.array_equal(numpy_helper.to_array(init), value):
            init.CopyFrom(numpy_helper.from_array(value, init.name))


def torchscript_exporter():
    """torch.onnx.export arguments that select the TorchScript exporter, which
    honours `training` (torch 2.9 defaults to the dynamo exporter, which does not)."""
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        return {"dynamo": False}
    return {}


def export_for_training(model, args, path, input_names, output_names,
                        opset_version=17, dynamic_batch=True, **extra):
    """Export `model` in training mode to `path` with trainc's metadata.

    Constant folding is off (it would fold parameters into constants), axis 0 of
    every input and output is the dynamic axis "batch" unless dynamic_batch=False
    (a `dynamic_axes` in `extra` is merged over it), and `extra` goes to
    torch.onnx.export. The training flag of every submodule and the buffers
    (which the traced forward updates) are restored after; the model holds the
    buffers' values from before the export.
    Returns the metadata written: (trainable names, {name: padding index}).
    """
    input_names, output_names = list(input_names), list(output_names)
    kwargs = dict(training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                  keep_initializers_as_inputs=False)
    if dynamic_batch:
        kwargs["dynamic_axes"] = {n: {0: "batch"} for n in input_names + output_names}
    kwargs["dynamic_axes"] = dict(kwargs.get("dynamic_axes", {}),
                                  **extra.pop("dynamic_axes", {}))
    kwargs.update(torchscript_exporter())
    kwargs.update(extra)
    if not isinstance(args, tuple):
        args = (args,)
    flags = [(m, m.training) for m in model.modules()]
    # Tracing in training mode runs forward once, which moves batch-norm
    # statistics: the module and the model get the values from before it.
    buffers = {n: b.detach().clone() for n, b in model.named_buffers()}
    try:
        torch.onnx.export(model, args, path, input_names=input_names,
                          output_names=output_names, opset_version=opset_version,
                          **kwargs)
    finally:
        for mod, was_training in flags:
            mod.training = was_training
        with torch.no_grad():
            for name, buf in model.named_buffers():
                buf.copy_(buffers[name])
    base_dir = os.path.dirname(os.path.abspath(path))
    proto = onnx.load(path, load_external_data=False)
    _restore_buffers(proto, buffers)
    trainable, padding = _trainc_metadata(model, proto, base_dir)
    props = {p.key: p.value for p in proto.metadata_props}
    props[TRAINABLE_KEY] = json.dumps(trainable)
    props[PADDING_KEY] = json.dumps(padding, sort_keys=True)
    del proto.metadata_props[:]
    for key, value in props.items():
        proto.metadata_props.add(key=key, value=value)
    onnx.save(proto, path)  # external data, if any, stays where torch wrote it
    return trainable, padding

