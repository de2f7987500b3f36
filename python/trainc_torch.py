"""Export a PyTorch module to ONNX for training with trainc.

ONNX cannot say which initializers are parameters, so trainc trains every float
initializer of a plain export. `export_for_training` exports the graph PyTorch
trains and records what only PyTorch knows in the model's `metadata_props`:

  trainc.trainable      JSON list of the initializer names that are trainable
                        parameters (parameters with requires_grad; buffers such as
                        BART's final_logits_bias and frozen parameters are not listed)
  trainc.padding_index  JSON object {initializer name: padding index} for every
                        nn.Embedding with padding_idx set (its row gets no gradient)

`compile(module, example_inputs, loss=..., optimizer=..., **flags)` exports and
compiles in one call; its Trainer's `fit(data, eval_data=..., **trainer_flags)`
writes the data as the trainer reads it, trains with the progress shown and
returns the log records, `predict(data)` runs the trained program, and
`load_into(module)` copies the trained parameters and buffers back:

    trainer = compile(model, torch.zeros(32, 3, 32, 32), loss="cross-entropy",
                      optimizer="sgd", target="cpu")
    log = trainer.fit((x, y), eval_data=(vx, vy), epochs=10, lr=0.1, momentum=0.9)
    trainer.load_into(model)

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
import shutil
import subprocess
import sys
import tempfile
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



# ---------------------------------------------------------------------------
# compile / fit / load_into: a thin layer over the trainc CLI (the CLI stays
# the one truth; every flag below is the command line's).


def _find_trainc(trainc=None):
    """The trainc binary: `trainc`, $TRAINC, trainc on PATH, or this
    checkout's build/bin/trainc."""
    candidates = [trainc, os.environ.get("TRAINC"), shutil.which("trainc"),
                  os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                               "build", "bin", "trainc")]
    for path in candidates:
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise FileNotFoundError("trainc not found: pass trainc=PATH, set $TRAINC or put it on PATH")


def _flag_words(flags):
    """Python keyword flags as command-line words: lr=0.1 -> --lr=0.1,
    no_shuffle=True -> --no-shuffle (False and None are left out)."""
    words = []
    for key, value in flags.items():
        name = "--" + key.replace("_", "-")
        if value is True:
            words.append(name)
        elif value is False or value is None:
            continue
        else:
            words.append("%s=%s" % (name, value))
    return words


def _run(words, what, stream_stderr=False):
    """Runs a command; an error carries its last lines of stderr."""
    if stream_stderr:
        # The trainer's progress goes straight to the caller's stderr (redrawn
        # in place on a terminal); only the last lines are kept for an error.
        process = subprocess.Popen(words, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True)
        tail = []
        for line in process.stderr:
            sys.stderr.write(line)
            tail = (tail + [line])[-5:]
        stdout = process.stdout.read()
        code = process.wait()
        stderr = "".join(tail)
    else:
        run = subprocess.run(words, capture_output=True, text=True)
        code, stdout, stderr = run.returncode, run.stdout, run.stderr
    if code != 0:
        raise RuntimeError("%s failed (exit %d): %s" % (what, code, stderr.strip()[-2000:]))
    return stdout


class Trainer:
    """A program trainc compiled from a PyTorch module (see `compile`)."""

    def __init__(self, program, workdir, input_names, output_names, label, names):
        self.program = program
        self.workdir = workdir
        self.input_names = list(input_names)
        self.output_names = list(output_names)
        self.label = label
        # ONNX initializer name -> the module's state_dict keys it stands for.
        self.names = names
        self.params_dir = None
        # The processes fit() starts under mpirun (1: the program alone).
        self.ranks = 1

    def _write_data(self, data, folder, with_labels):
        """A folder as the trainer reads it: one .npy per input (float
        arrays as float32, integer ones as int64) and LABEL.npy."""
        if isinstance(data, (str, os.PathLike)):
            return os.fspath(data)
        if isinstance(data, dict):
            arrays = dict(data)
        else:
            data = list(data) if isinstance(data, (tuple, list)) else [data]
            names = self.input_names + ([self.label] if with_labels else [])
            if len(data) != len(names):
                raise ValueError("expected %d arrays (%s), got %d"
                                 % (len(names), ", ".join(names), len(data)))
            arrays = dict(zip(names, data))
        os.makedirs(folder, exist_ok=True)
        for name, value in arrays.items():
            array = value.detach().cpu().numpy() if isinstance(value, torch.Tensor) else \
                np.asarray(value)
            if np.issubdtype(array.dtype, np.floating):
                array = array.astype(np.float32)
            elif np.issubdtype(array.dtype, np.integer) or array.dtype == np.bool_:
                array = array.astype(np.int64)
            if os.path.basename(name) != name or name in ("", ".", ".."):
                raise ValueError("'%s' is not a file name" % name)
            np.save(os.path.join(folder, name + ".npy"), array)
        return folder

    def fit(self, data, eval_data=None, ranks=None, mpirun_args=(), **flags):
        """Trains on `data` (a folder as the trainer reads it, a dict
        {input or label name: array}, or a tuple of the inputs' arrays and the
        labels) with the trainer's flags as keywords (epochs=10, lr=0.1,
        lr_schedule="onecycle", ...). The progress goes to stderr; returns the
        run's log records. The trained parameters stay for `load_into`.
        `ranks`: the processes of an `mpirun -np RANKS` run, with
        `mpirun_args` before the program (default: the pipeline's stages, as
        compiled with pipeline_stages=S; 1 runs the program alone)."""
        train_dir = self._write_data(data, os.path.join(self.workdir, "train"), True)
        ranks = self.ranks if ranks is None else int(ranks)
        launch = ["mpirun", "-np", str(ranks)] + list(mpirun_args) if ranks > 1 else []
        words = launch + [self.program, "--data", train_dir]
        if eval_data is not None:
            words += ["--eval-data",
                      self._write_data(eval_data, os.path.join(self.workdir, "eval"), True)]
        log = os.path.join(self.workdir, "fit.jsonl")
        params = os.path.join(self.workdir, "params")
        if "epochs" not in flags and "steps" not in flags and not flags.get("find_lr"):
            raise ValueError("fit needs epochs=N or steps=N")
        range_test_only = flags.get("find_lr") and flags.get("lr") != "auto"
        if range_test_only:
            # The range test alone writes its curve, not a log or parameters.
            _run(words + _flag_words(flags), "the trainer", stream_stderr=True)
            return []
        words += ["--log", log, "--save-params", params] + _flag_words(flags)
        _run(words, "the trainer", stream_stderr=True)
        self.params_dir = params
        with open(log) as stream:
            return [json.loads(line) for line in stream]

    def predict(self, data):
        """The trained model's outputs on `data` (arrays of the inputs, as
        `fit` takes them, without labels): {output name: array}."""
        if self.params_dir is None:
            raise RuntimeError("predict after fit (the trained parameters come from it)")
        folder = self._write_data(data, os.path.join(self.workdir, "predict-in"), False)
        out = os.path.join(self.workdir, "predict-out")
        _run([self.program, "--predict", "--params", self.params_dir, "--data", folder,
              "--out", out], "the trainer's --predict")
        return {n: np.load(os.path.join(out, n + ".npy")) for n in self.output_names}

    def load_into(self, module):
        """Copies the trained parameters and buffers (batch-norm statistics)
        into `module`, by the names the export recorded; a tensor whose
        shape differs is an error."""
        if self.params_dir is None:
            raise RuntimeError("load_into after fit (the trained parameters come from it)")
        state = module.state_dict()
        loaded = set()
        with torch.no_grad():
            for init_name, keys in self.names.items():
                # A name from the model is a file name here only when it is
                # one (the trainer refuses to save any other).
                if os.path.basename(init_name) != init_name or init_name in ("", ".", ".."):
                    continue
                path = os.path.join(self.params_dir, init_name + ".npy")
                if not os.path.isfile(path):
                    continue
                value = np.load(path, allow_pickle=False)
                for key in keys:
                    target = state[key]
                    if tuple(target.shape) != value.shape:
                        raise ValueError("%s: trained %s, module %s"
                                         % (key, value.shape, tuple(target.shape)))
                    target.copy_(torch.from_numpy(value).to(target.dtype))
                    loaded.add(key)
        return sorted(loaded)


def compile(module, example_inputs, loss="cross-entropy", optimizer="sgd", workdir=None,
            input_names=None, output_names=None, trainc=None, **flags):
    """Exports `module` for training and compiles it with `trainc compile`:
    the loss and optimizer as the CLI's --loss and --optimizer, the batch
    size that of `example_inputs` unless batch_size= says, and every other
    trainc compile flag as a keyword (precision="bf16", label_smoothing=0.1,
    target="cpu", ...). Returns a Trainer whose fit() trains."""
    if not isinstance(example_inputs, tuple):
        example_inputs = (example_inputs,)
    workdir = workdir or tempfile.mkdtemp(prefix="trainc-")
    os.makedirs(workdir, exist_ok=True)
    input_names = list(input_names or (["x"] if len(example_inputs) == 1 else
                                       ["x%d" % i for i in range(len(example_inputs))]))
    output_names = list(output_names or ["logits"])
    path = os.path.join(workdir, "model.onnx")
    export_for_training(module, example_inputs, path, input_names, output_names)
    # ONNX initializer -> the state_dict keys of the tensors it holds.
    proto = onnx.load(path, load_external_data=False)
    named = _module_tensors(module)
    keys = {}
    for init_name, tensors in _match_initializers(proto, named, workdir).items():
        keys[init_name] = sorted(k for k, t in module.state_dict(keep_vars=True).items()
                                 if any(t is m for m in tensors))
    batch_size = flags.pop("batch_size", int(example_inputs[0].shape[0]))
    label = flags.get("label", "label")
    program = os.path.join(workdir, "trainer")
    words = [_find_trainc(trainc), "compile", path, "--batch-size=%d" % batch_size,
             "--loss=" + loss, "--optimizer=" + optimizer, "-o", program] + _flag_words(flags)
    _run(words, "trainc compile")
    trainer = Trainer(program, workdir, input_names, output_names, label, keys)
    # A pipeline-parallel trainer runs one stage per mpirun rank.
    trainer.ranks = int(flags.get("pipeline_stages", 1))
    return trainer
