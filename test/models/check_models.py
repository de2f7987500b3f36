#!/usr/bin/env python3
"""The real-model suite: torchvision and Hugging Face models train right in trainc.

Usage:  build/models-venv/bin/python test/models/check_models.py TRAINC WORKDIR
            [--only REGEX] [--cuda] [--keep]

The models come from make_models.py, made into WORKDIR/models (again when
make_models.py is newer than a model's meta.json); programs are built in
WORKDIR/runs/NAME, removed after a model passes unless --keep. Per model, the
checks (named as printed):

  imports       `trainc import` at the model's batch size; a failure also
                prints `trainc check --training`.
  compile       `trainc compile --target=cpu --loss=L --entry=train_step`;
  step-runs     `PROG --run` on the stored inputs: the loss and grad.<param>.
  grad          with err(X) = ||g_X - g_64|| / ||g_64|| over all trainable
                parameters' gradients concatenated (g_64: PyTorch float64 on
                the same weights and inputs): err(trainc) <= 10 *
                max(err(PyTorch float32), 1e-7). The floor 1e-7 is float32's
                unit roundoff (6e-8) rounded up: where PyTorch's float32
                happens to be almost exact, trainc still rounds a few times
                per element.
  loss          the same rule for the loss of the step.
  trainer       an SGD trainer (`--optimizer=sgd`) builds;
  predict-runs  `PROG --predict` (`--run` for a model with a scalar output,
  predict       which --predict refuses) against PyTorch model.eval() with the
                initial weights in float64: norm-wise within max(1e-4, 10 *
                PyTorch float32's error); --predict gets one sample more than
                a batch (a short last batch).
  export        `PROG --data D --epochs 1 --lr 0.01 --no-shuffle --export E.onnx`
                (one step);
  sgd-step      E.onnx's trainable weights W: e(W) = ||W - (w0 - lr g_64)|| /
                ||lr g_64|| is at most 10 * max(e of PyTorch's float32 step, 1e-7).
  sgd-3-steps   for the models make_models.py marks sgd3: `--epochs 3` on the one
                batch, the exported weights W against PyTorch's after three SGD
                steps in float64: ||W - w3_64|| / ||w3_64 - w0|| within 10 *
                max(that of PyTorch's float32 steps, 1e-7).
  ort-runs      E.onnx's initializers loaded by name into the PyTorch module,
  ort           model.eval() in float32 and float64: ONNX Runtime
                (build/conformance-venv) on E.onnx is norm-wise within
                max(1e-4, 10 * PyTorch float32's error) of float64.
  cuda          with --cuda, for the models marked so: the SGD trainer builds
                with nvcc (`--target=cuda --emit=binary`; compile only; skipped,
                and said so, without nvcc).

A check that cannot run because an earlier one failed is not counted. A
failure listed in expected_failures.txt ('model check reason') prints XFAIL
and counts as skipped; a listed check that passes prints UNEXPECTED PASS (and
counts as passed: ops land while the list is written). Prints one line per
check (PASS/FAIL/XFAIL: model :: check :: numbers), a summary table (model |
imports | compiles CPU | CUDA | grad error ratio | SGD step ratio | predict |
ORT) and a closing 'N passed, N failed, N skipped'.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import numpy_helper
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import make_models  # noqa: E402

ORT_PYTHON = os.path.join(ROOT, "build", "conformance-venv", "bin", "python")
NVCC = "/usr/local/cuda/bin/nvcc"
RATIO_LIMIT = 10.0
ERR_FLOOR = 1e-7
RTOL = 1e-4
LR = make_models.SGD_LR
COMPILE_TIMEOUT = 1800
RUN_TIMEOUT = 600

ORT_SCRIPT = r"""
import sys, json, numpy as np, onnxruntime as ort
model, data, out = sys.argv[1:4]
inputs, outputs = json.loads(sys.argv[4]), json.loads(sys.argv[5])
so = ort.SessionOptions(); so.intra_op_num_threads = 2
sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
feed = {n: np.load("%s/%s.npy" % (data, n)) for n in inputs}
for name, value in zip(outputs, sess.run(outputs, feed)):
    np.save("%s/%s.npy" % (out, name), value)
"""


def first_line(text):
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()
    return "(no message)"


def error_line(text):
    """The first line that says 'error', else the first line."""
    for line in (text or "").splitlines():
        if "error" in line.lower():
            return line.strip()
    return first_line(text)


def run(cmd, timeout, cwd=None):
    """(ok, combined output) of a command; a timeout is a failure."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        return False, "timed out after %d s: %s" % (timeout, " ".join(cmd))
    out = (p.stderr or "") + (p.stdout or "")
    if p.returncode != 0:
        return False, "exit %d: %s" % (p.returncode, error_line(out))
    return True, out


def rel_err(got, want):
    """||got - want|| / ||want|| in float64 (inf on a shape mismatch or non-finite)."""
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    if got.shape != want.shape or not np.all(np.isfinite(got)):
        return float("inf")
    denom = np.linalg.norm(want.ravel())
    num = np.linalg.norm((got - want).ravel())
    return float(num / denom) if denom > 0 else float(num)


def read_expected(path):
    """{(model, check): reason} from expected_failures.txt ('model check reason')."""
    expected = {}
    if os.path.exists(path):
        for line in open(path):
            line = line.strip()
            if line and not line.startswith("#"):
                model, check, reason = (line.split(None, 2) + [""])[:3]
                expected[(model, check)] = reason
    return expected


class Results:
    """Counts the checks; a failure listed in expected_failures.txt is counted
    as skipped (XFAIL), and a listed check that passes says to remove its line."""

    def __init__(self, expected):
        self.expected = expected
        self.passed = 0
        self.failed = 0
        self.xfailed = 0
        self.rows = {}

    def check(self, ok, model, what, numbers):
        reason = self.expected.get((model, what))
        if ok:
            self.passed += 1
            tag, note = "PASS", ""
            if reason is not None:
                note = (" (UNEXPECTED PASS: listed in expected_failures.txt as '%s': "
                        "remove the line)" % reason)
        elif reason is not None:
            self.xfailed += 1
            tag, note = "XFAIL", " (expected: %s)" % reason
        else:
            self.failed += 1
            tag, note = "FAIL", ""
        print("%s: %s :: %s :: %s%s" % (tag, model, what, numbers, note), flush=True)
        return ok

    def cell(self, model, column, text):
        self.rows.setdefault(model, {})[column] = text


def compile_program(trainc, onnx_path, flags, prog):
    """`trainc compile` at low priority; a failed C++/CUDA build adds the first
    error of the compiler log trainc keeps in PROG.build/."""
    ok, text = run(["nice", "-n", "10", trainc, "compile", onnx_path] + flags + ["-o", prog],
                   COMPILE_TIMEOUT)
    log = os.path.join(prog + ".build", os.path.basename(prog) + ".compile.log")
    if not ok and "compiling the generated" in text and os.path.exists(log):
        text += " | first compiler error: " + error_line(open(log, errors="replace").read())
    return ok, text


def trainc_flags(meta):
    flags = ["--target=cpu", "--batch-size=%d" % meta["batch"], "--loss=" + meta["loss"]]
    if meta["class_axis"] not in (None, 1):
        flags.append("--class-axis=%d" % meta["class_axis"])
    return flags


def check_imports(trainc, meta, onnx_path, mdir, res):
    name = meta["name"]
    ok, out = run([trainc, "import", onnx_path, "--batch-size=%d" % meta["batch"],
                   "-o", os.path.join(mdir, "import.mlir")], COMPILE_TIMEOUT)
    res.check(ok, name, "imports", "ok" if ok else out)
    res.cell(name, "imports", "yes" if ok else "NO")
    if not ok:
        p = subprocess.run([trainc, "check", "--training", onnx_path], capture_output=True,
                           text=True)
        print("  trainc check --training %s:" % name)
        for line in (p.stdout + p.stderr).splitlines():
            print("    " + line)
    return ok


def check_grads(prog, meta, mdir, res, what="grad"):
    """The step's loss and gradients against PyTorch float64. `what` names
    the check (and, when not "grad", keeps it out of the table)."""
    name = meta["name"]
    table = what == "grad"
    out = os.path.join(mdir, "step-out")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    ok, text = run([prog, "--run", "--data", os.path.join(mdir, "data"), "--out", out],
                   RUN_TIMEOUT)
    if not res.check(ok, name, what + " step-runs", "PROG --run" if ok else text):
        if table:
            res.cell(name, "grad", "run fails")
        return
    g32 = np.load(os.path.join(mdir, "grads32.npz"))
    g64 = np.load(os.path.join(mdir, "grads64.npz"))
    got, ref32, ref64, missing, worst = [], [], [], [], (0.0, "")
    for init in meta["trainable"]:
        path = os.path.join(out, "grad.%s.npy" % init)
        if os.path.exists(path):
            g = np.load(path).astype(np.float64)
        elif not np.any(g64[init]):
            g = np.zeros(g64[init].shape)  # a parameter the loss does not reach
        else:
            missing.append(init)
            continue
        if g.shape != g64[init].shape:
            missing.append("%s (shape %s, want %s)" % (init, list(g.shape),
                                                       list(g64[init].shape)))
            continue
        e = rel_err(g, g64[init])
        e32 = rel_err(g32[init], g64[init])
        if e / max(e32, ERR_FLOOR) > worst[0]:
            worst = (e / max(e32, ERR_FLOOR), "%s: err %.3g, f32 %.3g" % (init, e, e32))
        got.append(g.ravel())
        ref32.append(g32[init].astype(np.float64).ravel())
        ref64.append(g64[init].ravel())
    if missing:
        res.check(False, name, what, "no or misshapen gradient for %d of %d parameters: %s"
                  % (len(missing), len(meta["trainable"]), ", ".join(missing[:5])))
        if table:
            res.cell(name, "grad", "missing grads")
        return
    got, ref32, ref64 = (np.concatenate(v) for v in (got, ref32, ref64))
    err = rel_err(got, ref64)
    err32 = rel_err(ref32, ref64)
    ratio = err / max(err32, ERR_FLOOR)
    ok = ratio <= RATIO_LIMIT
    # What the check can see: a gradient 0.1% too large in every parameter
    # would have err 1e-3.
    res.check(ok, name, what,
              "err(trainc) %.3g, err(torch f32) %.3g, ratio %.3g (limit %g, floor %g; a 0.1%% "
              "scale error: ratio %.3g); largest per-parameter ratio %.3g (%s)"
              % (err, err32, ratio, RATIO_LIMIT, ERR_FLOOR, 1e-3 / max(err32, ERR_FLOOR),
                 worst[0], worst[1]))
    if table:
        res.cell(name, "grad", "%.3g" % ratio)
    loss = float(np.load(os.path.join(out, "loss.npy")))
    lerr = abs(loss - meta["loss64"]) / abs(meta["loss64"])
    lerr32 = abs(meta["loss32"] - meta["loss64"]) / abs(meta["loss64"])
    lratio = lerr / max(lerr32, ERR_FLOOR)
    res.check(lratio <= RATIO_LIMIT, name, what.replace("grad", "loss"),
              "trainc %.8g, torch f64 %.8g, f32 %.8g: rel err %.3g, torch f32's %.3g, ratio %.3g "
              "(limit %g, floor %g)" % (loss, meta["loss64"], meta["loss32"], lerr, lerr32, lratio,
                                        RATIO_LIMIT, ERR_FLOOR))


def judge_outputs(res, name, what, out, outputs, want, want64, column, program):
    """Outputs against PyTorch float64 eval(): norm-wise within max(1e-4, 10x
    PyTorch float32's own error). Where eval() is ill-conditioned (a batch
    norm whose running variance is ~0 reading a channel that varies:
    MobileNet v2 and EfficientNet-B0 once their statistics were calibrated)
    float32 PyTorch is itself 1e-4 to 3e-2 from float64, and 1e-4 from it
    would fail the better result."""
    errs, worst, tol = [], 0.0, RTOL
    for o in outputs:
        path = os.path.join(out, o + ".npy")
        if not os.path.exists(path):
            res.check(False, name, what, "%s wrote no %s" % (program, o))
            res.cell(name, column, "no output")
            return
        got = np.load(path)
        e, e32 = rel_err(got, want64[o]), rel_err(want[o], want64[o])
        if not (np.isfinite(e32) and np.all(np.isfinite(want64[o]))):
            res.check(False, name, what, "PyTorch's eval() %s is not finite (float32 error "
                      "%.3g): nothing to compare with" % (o, e32))
            res.cell(name, column, "ref not finite")
            return
        worst = max(worst, e)
        tol = max(tol, RATIO_LIMIT * e32)
        errs.append("%s: %s %.3g, torch f32 %.3g (%s vs torch f32 %.3g)"
                    % (o, program, e, e32, program, rel_err(got, want[o])))
    res.check(worst <= tol, name, what, "against float64 eval() %s; limit max(%g, 10x torch "
              "f32's) = %.3g" % ("; ".join(errs), RTOL, tol))
    res.cell(name, column, "%.2g" % worst)


def check_predict(prog, meta, mdir, res):
    """--predict against eval(); a model with a scalar output (an in-model loss,
    which --predict refuses: not per-sample) runs its eval forward with --run."""
    name = meta["name"]
    out = os.path.join(mdir, "predict-out")
    shutil.rmtree(out, ignore_errors=True)
    data = os.path.join(mdir, "predict-data")
    shutil.rmtree(data, ignore_errors=True)
    os.makedirs(data)
    want = {o: np.load(os.path.join(mdir, "eval_%s.npy" % o)) for o in meta["outputs"]}
    mode = "--predict" if all(w.ndim > 0 for w in want.values()) else "--run"
    for n in meta["inputs"]:
        x = np.load(os.path.join(mdir, "data", n + ".npy"))
        if mode == "--predict":
            # One sample more than a batch: the short last batch is padded
            # and trimmed (eval() treats every sample alone).
            x = np.concatenate([x, x[:1]])
        np.save(os.path.join(data, n + ".npy"), x)
    want64 = {o: np.load(os.path.join(mdir, "eval64_%s.npy" % o)) for o in meta["outputs"]}
    if mode == "--predict":
        want = {o: np.concatenate([w, w[:1]]) for o, w in want.items()}
        want64 = {o: np.concatenate([w, w[:1]]) for o, w in want64.items()}
    ok, text = run([prog, mode, "--data", data, "--out", out], RUN_TIMEOUT)
    if not res.check(ok, name, "predict-runs", "PROG " + mode if ok else text):
        res.cell(name, "predict", "fails")
        return
    judge_outputs(res, name, "predict", out, meta["outputs"], want, want64, "predict", "trainc")


def check_sgd_update(trained, meta, mdir, res):
    """The exported weights are one SGD step from the initial ones: with
    e(W) = ||W - (w0 - lr g_64)|| / ||lr g_64|| over all trainable parameters,
    e(trainc) <= 10 * max(e(PyTorch float32 step), 1e-7), the float32 step being
    w0 - lr * g_32 computed in float32 (which rounds w0 + update)."""
    name = meta["name"]
    initial = {t.name: numpy_helper.to_array(t)
               for t in onnx.load(os.path.join(mdir, "model.onnx")).graph.initializer}
    g32 = np.load(os.path.join(mdir, "grads32.npz"))
    g64 = np.load(os.path.join(mdir, "grads64.npz"))
    lr32 = np.float32(LR)
    num = num32 = denom = 0.0
    for init in meta["trainable"]:
        if init not in trained or trained[init].shape != initial[init].shape:
            res.check(False, name, "sgd-step", "no trained %s in the export" % init)
            res.cell(name, "sgd", "missing")
            return
        want = initial[init].astype(np.float64) - float(lr32) * g64[init]
        step32 = initial[init] - lr32 * g32[init].astype(np.float32)
        num += float(np.sum((trained[init].astype(np.float64) - want) ** 2))
        num32 += float(np.sum((step32.astype(np.float64) - want) ** 2))
        denom += float(np.sum((float(lr32) * g64[init]) ** 2))
    err, err32 = np.sqrt(num / denom), np.sqrt(num32 / denom)
    ratio = err / max(err32, ERR_FLOOR)
    res.check(ratio <= RATIO_LIMIT, name, "sgd-step",
              "exported weights vs w0 - lr g_64: err(trainc) %.3g, err(torch f32) %.3g, "
              "ratio %.3g (limit %g)" % (err, err32, ratio, RATIO_LIMIT))
    res.cell(name, "sgd", "%.3g" % ratio)


def check_three_steps(prog, meta, mdir, res):
    """Three SGD steps (three epochs of the one batch) against PyTorch's
    float64 weights after three steps: with e(W) = ||W - w3_64|| /
    ||w3_64 - w0||, e(trainc) <= 10 * max(e(PyTorch's float32 steps), 1e-7)."""
    name = meta["name"]
    data = os.path.join(mdir, "train-data")
    exported = os.path.join(mdir, "trained3.onnx")
    ok, text = run([prog, "--data", data, "--epochs", "3", "--lr", str(LR), "--no-shuffle",
                    "--export", exported], RUN_TIMEOUT)
    if not res.check(ok, name, "sgd-3-steps runs", "three SGD steps, --export" if ok else text):
        return
    trained = {t.name: numpy_helper.to_array(t) for t in onnx.load(exported).graph.initializer}
    initial = {t.name: numpy_helper.to_array(t)
               for t in onnx.load(os.path.join(mdir, "model.onnx")).graph.initializer}
    w32 = np.load(os.path.join(mdir, "sgd3_32.npz"))
    w64 = np.load(os.path.join(mdir, "sgd3_64.npz"))
    num = num32 = denom = 0.0
    for init in meta["trainable"]:
        if init not in trained:
            res.check(False, name, "sgd-3-steps", "no trained %s in the export" % init)
            return
        want = w64[init].astype(np.float64)
        num += float(np.sum((trained[init].astype(np.float64) - want) ** 2))
        num32 += float(np.sum((w32[init].astype(np.float64) - want) ** 2))
        denom += float(np.sum((want - initial[init].astype(np.float64)) ** 2))
    err, err32 = np.sqrt(num / denom), np.sqrt(num32 / denom)
    ratio = err / max(err32, ERR_FLOOR)
    res.check(ratio <= RATIO_LIMIT, name, "sgd-3-steps",
              "weights after 3 steps vs PyTorch float64's: err(trainc) %.3g, err(torch f32) "
              "%.3g, ratio %.3g (limit %g)" % (err, err32, ratio, RATIO_LIMIT))


def check_export(prog, meta, mdir, res):
    name = meta["name"]
    data = os.path.join(mdir, "train-data")
    shutil.rmtree(data, ignore_errors=True)
    os.makedirs(data)
    for n in meta["inputs"] + ([] if meta["loss"] == "output" else ["label"]):
        shutil.copy(os.path.join(mdir, "data", n + ".npy"), data)
    exported = os.path.join(mdir, "trained.onnx")
    if os.path.exists(exported):
        os.remove(exported)
    ok, text = run([prog, "--data", data, "--epochs", "1", "--lr", str(LR), "--no-shuffle",
                    "--export", exported], RUN_TIMEOUT)
    if not res.check(ok, name, "export", "one SGD step, --export" if ok else text):
        res.cell(name, "ort", "export fails")
        return
    proto = onnx.load(exported)
    trained = {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}
    check_sgd_update(trained, meta, mdir, res)
    if meta.get("sgd3"):
        check_three_steps(prog, meta, mdir, res)
    # PyTorch eval() with the exported weights, loaded by name.
    module = make_models.build_module(name)
    state = module.state_dict()
    key_of = dict(meta["param_of_initializer"])
    unmatched = [i for i in meta["trainable"] if i not in trained]
    if unmatched:
        res.check(False, name, "ort", "trainable initializers missing from the export: %s"
                  % ", ".join(unmatched[:5]))
        res.cell(name, "ort", "params missing")
        return
    loaded = 0
    with torch.no_grad():
        for init, value in trained.items():
            key = key_of.get(init, init)
            if key in state and tuple(state[key].shape) == value.shape:
                state[key].copy_(torch.from_numpy(value.copy()))
                loaded += 1
    module.eval()
    feed = [torch.from_numpy(np.load(os.path.join(data, n + ".npy"))) for n in meta["inputs"]]
    with torch.no_grad():
        want = make_models.as_tuple(module(*feed))
        want64 = make_models.as_tuple(make_models.eval_float64(module, feed))
    want = {o: w.numpy() for o, w in zip(meta["outputs"], want)}
    want64 = {o: w.numpy() for o, w in zip(meta["outputs"], want64)}
    out = os.path.join(mdir, "ort-out")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    ok, text = run([ORT_PYTHON, "-c", ORT_SCRIPT, exported, data, out,
                    json.dumps(meta["inputs"]), json.dumps(meta["outputs"])], RUN_TIMEOUT)
    if not res.check(ok, name, "ort-runs", "ONNX Runtime runs the export" if ok else text):
        res.cell(name, "ort", "ORT fails")
        return
    judge_outputs(res, name, "ort", out, meta["outputs"], want, want64, "ort", "ORT")


def check_cuda(trainc, meta, onnx_path, mdir, res):
    name = meta["name"]
    if not os.path.exists(NVCC):
        print("note: %s :: cuda :: no nvcc at %s, skipped" % (name, NVCC))
        res.cell(name, "cuda", "no nvcc")
        return
    flags = [f for f in trainc_flags(meta) if not f.startswith("--target")]
    ok, text = compile_program(trainc, onnx_path, ["--target=cuda", "--emit=binary"] + flags +
                               ["--optimizer=sgd"], os.path.join(mdir, "prog-cuda"))
    res.check(ok, name, "cuda", "the SGD trainer builds with nvcc" if ok else text)
    res.cell(name, "cuda", "yes" if ok else "NO")


def has_conv(onnx_path):
    """Whether the model has a 2-D convolution (the layout phase's work)."""
    graph = onnx.load(onnx_path, load_external_data=False).graph
    return any(node.op_type == "Conv" for node in graph.node)


def check_model(trainc, models, work, name, cuda, res):
    meta = json.load(open(os.path.join(models, name, "meta.json")))
    mdir = os.path.join(work, name)
    os.makedirs(mdir, exist_ok=True)
    for item in ["data", "grads32.npz", "grads64.npz", "model.onnx"] + [
            "eval%s_%s.npy" % (kind, o) for o in meta["outputs"] for kind in ("", "64")] + (
            ["sgd3_32.npz", "sgd3_64.npz"] if meta.get("sgd3") else []):
        dst = os.path.join(mdir, item)
        if os.path.lexists(dst):
            os.remove(dst)
        os.symlink(os.path.join(models, name, item), dst)
    onnx_path = os.path.join(models, name, "model.onnx")
    if not check_imports(trainc, meta, onnx_path, mdir, res):
        return
    step = os.path.join(mdir, "prog-step")
    ok, text = compile_program(trainc, onnx_path, trainc_flags(meta) + ["--entry=train_step"],
                               step)
    res.check(ok, name, "compile", "train_step program" if ok else text)
    res.cell(name, "cpu", "yes" if ok else "NO")
    if ok:
        check_grads(step, meta, mdir, res)
        def check_variant(flag, what):
            """The train_step program with `flag` gets the same gradients by
            the same criterion (checks named "compile WHAT", "grad-WHAT")."""
            prog = os.path.join(mdir, "prog-step-" + what)
            ok, text = compile_program(trainc, onnx_path, trainc_flags(meta) +
                                       ["--entry=train_step", flag], prog)
            if res.check(ok, name, "compile " + what, flag + " train_step program"
                         if ok else text):
                check_grads(prog, meta, mdir, res, "grad-" + what)

        if has_conv(onnx_path):
            check_variant("--layout=nhwc", "nhwc")  # channels-last
        # Padded to multiples of 8 (the default on CUDA with bf16/fp16), where
        # anything is padded.
        ir = subprocess.run([trainc, "compile", onnx_path] + trainc_flags(meta) +
                            ["--entry=train_step", "--pad-to=8", "--compile-to=pad"],
                            capture_output=True, text=True).stdout
        if re.search(r"tc\.padding = \[\S", ir):
            check_variant("--pad-to=8", "pad")
    sgd = os.path.join(mdir, "prog-sgd")
    ok, text = compile_program(trainc, onnx_path, trainc_flags(meta) + ["--optimizer=sgd"], sgd)
    res.check(ok, name, "trainer", "SGD trainer" if ok else text)
    if not ok:
        res.cell(name, "cpu", res.rows[name]["cpu"] + ", trainer NO")
    else:
        check_predict(sgd, meta, mdir, res)
        check_export(sgd, meta, mdir, res)
    if cuda and meta["cuda"]:
        check_cuda(trainc, meta, onnx_path, mdir, res)


def ensure_models(models, names):
    """Makes the models whose meta.json is missing or older than make_models.py."""
    stale = [n for n in names
             if not os.path.exists(os.path.join(models, n, "meta.json")) or
             os.path.getmtime(os.path.join(models, n, "meta.json")) <
             os.path.getmtime(make_models.__file__)]
    made = {}
    for n in stale:
        try:
            make_models.make_model(n, models)
            made[n] = None
        except Exception as e:  # reported per model
            made[n] = "%s: %s" % (type(e).__name__, first_line(str(e)))
    return made


def print_table(res, names):
    cols = [("imports", "imports"), ("cpu", "compiles CPU"), ("cuda", "CUDA"),
            ("grad", "grad error ratio"), ("sgd", "SGD step ratio"), ("predict", "predict"),
            ("ort", "ORT")]
    print()
    print("| model | " + " | ".join(c[1] for c in cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for n in names:
        row = res.rows.get(n, {})
        print("| %s | %s |" % (n, " | ".join(row.get(c[0], "-") for c in cols)))
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trainc")
    ap.add_argument("workdir")
    ap.add_argument("--only", help="only the models whose name matches REGEX (re.search)")
    ap.add_argument("--keep", action="store_true",
                    help="keep the programs of models that pass (WORKDIR/runs/NAME)")
    ap.add_argument("--cuda", action="store_true",
                    help="also build the CUDA trainer of the models marked for it")
    args = ap.parse_args()
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    trainc = os.path.abspath(args.trainc)
    work = os.path.abspath(args.workdir)
    models = os.path.join(work, "models")
    os.makedirs(models, exist_ok=True)
    names = [s.name for s in make_models.SPECS if not args.only or re.search(args.only, s.name)]
    if not names:
        print("no model matches --only %r" % args.only)
    res = Results(read_expected(os.path.join(HERE, "expected_failures.txt")))
    made = ensure_models(models, names)
    times = {}
    for n in names:
        start = time.time()
        if made.get(n):
            res.check(False, n, "export", "make_models.py failed: " + made[n])
            res.cell(n, "imports", "export fails")
            continue
        failed = res.failed
        try:
            check_model(trainc, models, os.path.join(work, "runs"), n, args.cuda, res)
        except Exception as e:  # a harness error is a failure, never a crash
            res.check(False, n, "harness", "%s: %s" % (type(e).__name__, first_line(str(e))))
        if res.failed == failed and not args.keep:
            # The programs of a model that passed (up to 0.6 GB each) go.
            shutil.rmtree(os.path.join(work, "runs", n), ignore_errors=True)
        times[n] = time.time() - start
        print("note: %s checked in %.0f s" % (n, times[n]), flush=True)
    print_table(res, names)
    print("expected failures (expected_failures.txt): %d" % res.xfailed)
    print("%d passed, %d failed, %d skipped" % (res.passed, res.failed, res.xfailed))
    return 1 if res.failed else 0


if __name__ == "__main__":
    sys.exit(main())
