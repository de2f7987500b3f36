#!/usr/bin/python3
"""LAMB, LARS and parameter groups (--no-decay) against float64 references.

Usage: check_optimizers.py TRAINC WORKDIR [--only groups,lamb,lars,variants,digits]
           [--gpu-prepare DIR]

On the zoo's MLP and GPT (CPU trainers, 10 steps of batch 4 in file order
from the ONNX initial weights):
  * groups: AdamW with weight decay 0.1 and the default --no-decay=1d
    against torch.optim.AdamW with two parameter groups (rank >= 2 with
    weight decay 0.1, the rest with 0);
  * lamb, lars: against the update rules of the issue written out in
    PyTorch (You et al. 2020 Algorithm 2 with Adam's bias correction, as
    apex FusedLAMB; LARS in LARC's form), default --no-decay=1d, and LARS
    with --no-decay=REGEX too.
Each run in float64 is the reference; each in float32 is PyTorch float32's
own error. Compared (test/pylib/float64_compare.py), over all parameters:
the weights norm-wise (||ours - f64|| / ||f64|| at most 1e-6, or 4x PyTorch
float32's own error where that is larger: AdamW's sign-like first steps
turn float32 gradient noise into 2e-6 (MLP) to 3.5e-5 (GPT) for PyTorch
itself) and each tensor's 10-step change (||(ours - w0) - (f64 - w0)|| /
||f64 - w0||, at most 4x PyTorch float32's own such error, at least 1e-4):
a wrong trust ratio or a decayed bias is O(1e-3) to O(1) off there.
variants (MLP): LAMB and LARS with --grad-accum=4 at batch 1 against batches
of 4 (each tensor's change norm-wise within 1e-4), and under --precision=fp16 (dynamic loss scaling) against the
float64 reference (each change within 5e-2 for LAMB, 0.2 for LARS: fp16
activations and gradients, which LARS's large steps on the undecayed biases
amplify over 10 steps; here SGD under fp16 is 2e-2 off, LAMB 4e-3, LARS
9e-2; an unscaled or a skipped step is O(1) off).
digits: the example MLP trained 5 epochs with AdamW, LAMB and LARS; LAMB
and LARS reach AdamW's held-out accuracy (within one point).
--gpu-prepare DIR packs the MLP and GPT LAMB/LARS cases as CUDA trainers
with their float64 references (test/gpu/compare_optimizers.py runs them).
Prints one line per check and 'N passed, N failed'.
"""
import json
import math
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import onnx
import torch
from onnx import numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from float64_compare import compare_weights  # noqa: E402

torch.set_num_threads(2)
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SAMPLES, BATCH = 40, 4  # 10 steps, in file order
FP16_CHANGE_TOL = {"lamb": 5e-2, "lars": 0.2}

# name: (trainer flags, update rule(dtype-free hyperparameters), compile flags)
LAMB = dict(lr=0.01, beta1=0.9, beta2=0.999, eps=1e-6, weight_decay=0.01)
LARS = dict(lr=0.5, momentum=0.9, weight_decay=5e-4, trust=0.001, eps=1e-8)


def lamb_rule(h, no_decay):
    """You et al. 2020, Algorithm 2, with Adam's bias correction (apex
    FusedLAMB(bias_correction=True, max_grad_norm=0) computes the same)."""
    def update(named, state, t):
        for name, p in named:
            g = p.grad
            m, v = state.get(name, (torch.zeros_like(p), torch.zeros_like(p)))
            m = h["beta1"] * m + (1 - h["beta1"]) * g
            v = h["beta2"] * v + (1 - h["beta2"]) * g * g
            state[name] = (m, v)
            decay = name not in no_decay
            r = (m / (1 - h["beta1"] ** t)) / (v.sqrt() / math.sqrt(1 - h["beta2"] ** t)
                                               + h["eps"])
            if decay:
                r = r + h["weight_decay"] * p
            pn, rn = float(p.norm()), float(r.norm())
            trust = pn / rn if decay and pn > 0 and rn > 0 else 1.0
            p -= (h["lr"] * trust) * r
    return update


def lars_rule(h, no_decay):
    """LARS in LARC's form: local lr = trust ||w|| / (||g|| + wd ||w|| + eps)."""
    def update(named, state, t):
        for name, p in named:
            g = p.grad
            decay = name not in no_decay
            wd = h["weight_decay"] if decay else 0.0
            pn, gn = float(p.norm()), float(g.norm())
            local = (h["trust"] * pn / (gn + wd * pn + h["eps"])
                     if decay and pn > 0 and gn > 0 else 1.0)
            b = h["momentum"] * state.get(name, torch.zeros_like(p)) + \
                (h["lr"] * local) * (g + wd * p)
            state[name] = b
            p -= b
    return update


def adamw_groups_rule(lr, weight_decay, no_decay):
    """torch.optim.AdamW with two parameter groups, made on first use."""
    def update(named, state, t):
        if "opt" not in state:
            decay = [p for n, p in named if n not in no_decay]
            rest = [p for n, p in named if n in no_decay]
            state["opt"] = torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                                              {"params": rest, "weight_decay": 0.0}], lr=lr)
        with torch.enable_grad():
            state["opt"].step()
    return update


def zoo_case(work, name):
    """The zoo model `name` exported for training, its initial weights, 40
    samples and the loss flags."""
    sys.path.insert(0, os.path.join(ROOT, "test", "zoo"))
    import make_zoo
    spec = next(s for s in make_zoo.TORCH_MODELS if s["name"] == name)
    torch.manual_seed(0)
    model = spec["build"]()
    model.train()
    rng = np.random.RandomState(5)
    if name == "gpt":
        inputs = {"idx": rng.randint(0, 64, (SAMPLES, 16)).astype(np.int64)}
        labels = rng.randint(0, 64, (SAMPLES, 16)).astype(np.int64)
        loss_flags = ["--class-axis=-1"]
    else:
        shape = tuple(spec["inputs"]["x"]().shape[1:])
        inputs = {"x": rng.randn(SAMPLES, *shape).astype(np.float32)}
        labels = rng.randint(0, 10, SAMPLES).astype(np.int64)
        loss_flags = []
    path = os.path.join(work, name + "_train.onnx")
    names = list(inputs)
    example = tuple(torch.tensor(v[:BATCH]) for v in inputs.values())
    torch.onnx.export(model, example, path, input_names=names, output_names=["logits"],
                      dynamic_axes={n: {0: "batch"} for n in names + ["logits"]},
                      opset_version=17, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.TRAINING)
    initial = {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}
    data = os.path.join(work, name + "-data")
    os.makedirs(data, exist_ok=True)
    for key, value in inputs.items():
        np.save(os.path.join(data, key + ".npy"), value)
    np.save(os.path.join(data, "label.npy"), labels)
    return dict(name=name, spec=spec, path=path, initial=initial, inputs=inputs,
                labels=labels, data=data, loss_flags=loss_flags)


def reference_run(case, dtype, update):
    """10 steps of `update` in `dtype` from the initial weights: the final
    state dict."""
    torch.manual_seed(0)
    net = case["spec"]["build"]()
    net.load_state_dict({k: torch.tensor(case["initial"][k]) if k in case["initial"] else v
                         for k, v in net.state_dict().items()})
    net = net.to(dtype)
    net.train()
    state = {}
    named = list(net.named_parameters())
    for t, first in enumerate(range(0, SAMPLES, BATCH), 1):
        batch = [torch.tensor(v[first:first + BATCH]) for v in case["inputs"].values()]
        batch = [b.to(dtype) if b.is_floating_point() else b for b in batch]
        target = torch.tensor(case["labels"][first:first + BATCH])
        net.zero_grad()
        logits = net(*batch)
        if case["name"] == "gpt":
            logits, target = logits.reshape(-1, logits.shape[-1]), target.reshape(-1)
        torch.nn.functional.cross_entropy(logits, target).backward()
        with torch.no_grad():
            update(named, state, t)
    return {k: v.detach().double().numpy() for k, v in net.state_dict().items()}


def trained_params(case):
    return [k for k, v in case["initial"].items() if v.dtype == np.float32]


def no_decay_names(case, rule):
    """The --no-decay group as trainc reads it: rank <= 1, or REGEX searched."""
    names = trained_params(case)
    if rule == "1d":
        return {k for k in names if case["initial"][k].ndim <= 1}
    if rule == "none":
        return set()
    return {k for k in names if re.search(rule, k)}


def compare(check, tag, case, saved, ref64, ref32, change_tol=None):
    """Ours (--save-params DIR) against the float64 reference, next to
    PyTorch float32's own errors (test/pylib/float64_compare.py)."""
    names = [k for k in trained_params(case) if k in ref64]
    ours = {k: np.load(os.path.join(saved, k + ".npy")) for k in names}
    ok, text = compare_weights({k: case["initial"][k] for k in names}, ours,
                               {k: ref64[k] for k in names}, {k: ref32[k] for k in names},
                               change_tol)
    check(ok, "%s: 10 steps against float64, %s" % (tag, text))


def train(trainc, check, tag, case, compile_flags, run_flags, work):
    prog = os.path.join(work, tag.replace(" ", "_").replace("/", "_"))
    build = subprocess.run([trainc, "compile", case["path"], "--target=cpu",
                            "--batch-size=%d" % BATCH, "--loss=cross-entropy", "-o", prog]
                           + case["loss_flags"] + compile_flags, capture_output=True, text=True)
    if build.returncode != 0:
        check(False, "%s compiles: %s" % (tag, build.stderr.strip()[:300]))
        return None
    saved = prog + ".params"
    shutil.rmtree(saved, ignore_errors=True)
    run = subprocess.run([prog, "--data", case["data"], "--epochs", "1", "--no-shuffle",
                          "--save-params", saved] + run_flags, capture_output=True, text=True)
    if run.returncode != 0:
        check(False, "%s trains: %s" % (tag, run.stderr.strip()[:300]))
        return None
    return saved


def lamb_flags():
    return ["--lr", str(LAMB["lr"]), "--beta1", str(LAMB["beta1"]), "--beta2",
            str(LAMB["beta2"]), "--eps", str(LAMB["eps"]), "--weight-decay",
            str(LAMB["weight_decay"])]


def lars_flags():
    return ["--lr", str(LARS["lr"]), "--momentum", str(LARS["momentum"]), "--weight-decay",
            str(LARS["weight_decay"]), "--trust-coefficient", str(LARS["trust"]), "--eps",
            str(LARS["eps"])]


GPU_DIR = None


def prepare_gpu_case(trainc, tag, case, compile_flags, run_flags, ref64, ref32):
    """A CUDA trainer of the case with its data and references, for
    test/gpu/compare_optimizers.py."""
    if GPU_DIR is None:
        return
    out = os.path.join(GPU_DIR, "opt_" + re.sub(r"[^A-Za-z0-9_.-]", "_", tag))
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.join(out, "ref64"))
    os.makedirs(os.path.join(out, "ref32"))
    os.makedirs(os.path.join(out, "initial"))
    shutil.copytree(case["data"], os.path.join(out, "data"))
    build = subprocess.run([trainc, "compile", case["path"], "--target=cuda",
                            "--cuda-arch=sm_90", "--batch-size=%d" % BATCH,
                            "--loss=cross-entropy", "-o", os.path.join(out, "prog")]
                           + case["loss_flags"] + compile_flags, capture_output=True, text=True)
    if build.returncode != 0:
        raise RuntimeError("CUDA trainer %s: %s" % (tag, build.stderr.strip()[:300]))
    shutil.rmtree(os.path.join(out, "prog.build"), ignore_errors=True)
    for k in trained_params(case):
        np.save(os.path.join(out, "ref64", k + ".npy"), ref64[k])
        np.save(os.path.join(out, "ref32", k + ".npy"), ref32[k])
        np.save(os.path.join(out, "initial", k + ".npy"), case["initial"][k])
    with open(os.path.join(out, "case.json"), "w") as f:
        json.dump({"flags": ["--epochs", "1", "--no-shuffle"] + run_flags}, f)


def check_rules(trainc, work, check, cases, parts):
    for case in cases:
        name = case["name"]
        runs = []
        if "groups" in parts:
            nd = no_decay_names(case, "1d")
            runs.append(("%s adamw groups" % name, ["--optimizer=adamw"],
                         ["--lr", "0.01", "--weight-decay", "0.1"],
                         adamw_groups_rule(0.01, 0.1, nd)))
        if "lamb" in parts:
            runs.append(("%s lamb" % name, ["--optimizer=lamb"], lamb_flags(),
                         lamb_rule(LAMB, no_decay_names(case, "1d"))))
        if "lars" in parts:
            runs.append(("%s lars" % name, ["--optimizer=lars"], lars_flags(),
                         lars_rule(LARS, no_decay_names(case, "1d"))))
            if name == "mlp":
                runs.append(("mlp lars no-decay=fc3", ["--optimizer=lars", "--no-decay=fc3"],
                             lars_flags(), lars_rule(LARS, no_decay_names(case, "fc3"))))
        for tag, compile_flags, run_flags, rule in runs:
            ref64 = reference_run(case, torch.float64, rule)
            ref32 = reference_run(case, torch.float32, rule)
            saved = train(trainc, check, tag, case, compile_flags, run_flags, work)
            if saved:
                compare(check, tag, case, saved, ref64, ref32)
            if "groups" not in tag:
                prepare_gpu_case(trainc, tag, case, compile_flags, run_flags, ref64, ref32)


def check_variants(trainc, work, check, mlp):
    """Gradient accumulation and fp16 loss scaling under LAMB and LARS."""
    for kind, flags, rule in (("lamb", lamb_flags(), lamb_rule), ("lars", lars_flags(),
                                                                    lars_rule)):
        h = LAMB if kind == "lamb" else LARS
        plain = train(trainc, check, "mlp %s plain" % kind, mlp, ["--optimizer=" + kind], flags,
                      work)
        quarter = dict(mlp)
        prog = os.path.join(work, "mlp_%s_accum" % kind)
        build = subprocess.run([trainc, "compile", mlp["path"], "--target=cpu",
                                "--batch-size=%d" % (BATCH // 4), "--grad-accum=4",
                                "--loss=cross-entropy", "--optimizer=" + kind, "-o", prog],
                               capture_output=True, text=True)
        if build.returncode != 0 or plain is None:
            check(False, "mlp %s --grad-accum=4 compiles: %s" % (kind, build.stderr[:300]))
            continue
        saved = prog + ".params"
        shutil.rmtree(saved, ignore_errors=True)
        run = subprocess.run([prog, "--data", quarter["data"], "--epochs", "1", "--no-shuffle",
                              "--save-params", saved] + flags, capture_output=True, text=True)
        if run.returncode != 0:
            check(False, "mlp %s --grad-accum=4 trains: %s" % (kind, run.stderr[:300]))
            continue
        # Each tensor's 10-step change, norm-wise: the sums run in another
        # order (4 gradients of 1 sample added up), nothing else.
        worst = max(float(np.linalg.norm(np.load(os.path.join(saved, k + ".npy")) -
                                         np.load(os.path.join(plain, k + ".npy")))) /
                    max(float(np.linalg.norm(np.load(os.path.join(plain, k + ".npy")) -
                                             mlp["initial"][k])), 1e-30)
                    for k in trained_params(mlp))
        check(worst <= 1e-4,
              "mlp %s: --grad-accum=4 at batch 1 trains as batches of 4 (10 steps, each "
              "tensor's change norm-wise within %.3g, tolerance 1e-4)" % (kind, worst))
        ref64 = reference_run(mlp, torch.float64, rule(h, no_decay_names(mlp, "1d")))
        ref32 = reference_run(mlp, torch.float32, rule(h, no_decay_names(mlp, "1d")))
        saved = train(trainc, check, "mlp %s fp16" % kind, mlp,
                      ["--optimizer=" + kind, "--precision=fp16"], flags, work)
        if saved:
            compare(check, "mlp %s fp16 (dynamic loss scaling)" % kind, mlp, saved, ref64,
                    ref32, change_tol=FP16_CHANGE_TOL[kind])


def check_digits(trainc, work, check):
    data = os.path.join(work, "digits-data")
    if not os.path.isdir(os.path.join(data, "train")):
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "examples", "prepare_digits.py"),
                        data], check=True, capture_output=True)
    runs = {"adamw": ["--lr", "0.003"],
            "lamb": ["--lr", "0.01"],
            "lars": ["--lr", "0.05", "--momentum", "0.9", "--trust-coefficient", "0.05"]}
    accuracy = {}
    for kind, flags in runs.items():
        prog = os.path.join(work, "digits_" + kind)
        build = subprocess.run([trainc, "compile", os.path.join(ROOT, "examples",
                                                                "digits_mlp.onnx"),
                                "--target=cpu", "--batch-size=32", "--loss=cross-entropy",
                                "--optimizer=" + kind, "-o", prog], capture_output=True, text=True)
        if build.returncode != 0:
            check(False, "digits %s compiles: %s" % (kind, build.stderr[:300]))
            return
        run = subprocess.run([prog, "--data", os.path.join(data, "train"), "--eval-data",
                              os.path.join(data, "val"), "--epochs", "5", "--no-shuffle"] + flags,
                             capture_output=True, text=True)
        accuracy[kind] = None
        for line in run.stdout.splitlines():
            if line.startswith("accuracy "):
                accuracy[kind] = float(line.split()[1])
    for kind in ("lamb", "lars"):
        check(accuracy[kind] is not None and accuracy["adamw"] is not None and
              accuracy[kind] >= accuracy["adamw"] - 0.01,
              "digits: %s reaches AdamW's held-out accuracy after 5 epochs (%s, AdamW %s; "
              "flags %s)" % (kind, accuracy[kind], accuracy["adamw"], " ".join(runs[kind])))


def main():
    global GPU_DIR
    trainc, work = sys.argv[1], sys.argv[2]
    parts = {"groups", "lamb", "lars", "variants", "digits"}
    args = sys.argv[3:]
    while args:
        if args[0] == "--only" and len(args) > 1:
            parts = set(args[1].split(","))
        elif args[0] == "--gpu-prepare" and len(args) > 1:
            GPU_DIR = os.path.abspath(args[1])
            os.makedirs(GPU_DIR, exist_ok=True)
        else:
            print(__doc__)
            return 2
        args = args[2:]
    os.makedirs(work, exist_ok=True)
    passed = failed = 0

    def check(ok, what):
        nonlocal passed, failed
        print(("PASS" if ok else "FAIL") + ": optimizers :: " + what, flush=True)
        passed, failed = passed + ok, failed + (not ok)

    cases = [zoo_case(work, "mlp"), zoo_case(work, "gpt")]
    if parts & {"groups", "lamb", "lars"}:
        check_rules(trainc, work, check, cases, parts)
    if "variants" in parts:
        check_variants(trainc, work, check, cases[0])
    if "digits" in parts:
        check_digits(trainc, work, check)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
