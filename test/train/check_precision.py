#!/usr/bin/python3
"""Mixed precision (--precision=bf16 and fp16) against PyTorch's CPU
autocast and float64, and fp16's dynamic loss scaling.

Usage: check_precision.py TRAINC WORKDIR
           [--only mlp,lenet,gpt,resnet18,lstm,unet,digits,scaler,cuda]
           [--precision bf16,fp16]
           [--gpu-prepare DIR]

For the zoo's MLP, LeNet, GPT, ResNet-18, LSTM classifier and U-Net (a class
per pixel): `trainc compile --precision=bf16
--entry=train_step`, one step on a batch of 16, and the loss and every
parameter gradient against PyTorch's step under
torch.autocast("cpu", dtype=torch.bfloat16). Both are also measured against
PyTorch's float64 step, norm-wise per tensor (bf16 gradients of a batch
of 16 are 1e-3 to 2e-1 from float64, autocast's too, so the comparison of the two
is made through float64):
  * the loss within rtol 1.6e-2 of autocast's, or closer to float64's than
    autocast's is;
  * each gradient no farther from float64's than 4x autocast's own error
    plus 1.6e-2 (a wrong gradient is O(1) off);
  * fp16 (no CPU autocast for it in PyTorch 1.13): the loss within half
    autocast-bf16's error of float64's (at least 2e-3 relative), each
    gradient within autocast-bf16's error + 2e-3 (fp16's error is ~8x
    smaller than bf16's);
  * the rounding is really there: over all tensors ours is farther from
    float64 than PyTorch float32 is (a build that silently ran in f32 fails).
digits: the example MLP trains 200 steps in fp32, bf16 and fp16 (same data
order); each 16-bit loss curve stays within 2% of fp32's (mean of the last
50 steps, and every 25-step window; fp16 under AdamW too) and the held-out
accuracy is >= 97%; --fuse=none logs the same losses bit for bit.
scaler: fp16 dynamic loss scaling (see check_scaler): a skipped step
changes nothing, the scale halves and doubles, resume is bit-exact.
--gpu-prepare DIR packs the zoo cases for test/gpu/run.sh (CUDA programs and
the references; see prepare_gpu_case).
cuda (where nvcc is): every zoo trainer (MLP, LeNet, ResNet-18, GPT) compiles
for CUDA sm_80,sm_90 in bf16 and in fp16 with no warning.
Prints one line per check and 'N passed, N failed'.
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import torch
from onnx import numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from loss_scaling import f32_of, make_overflow_data, read_checkpoint, skipped_step_checks  # noqa: E402

torch.set_num_threads(2)
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BATCH = 16
RTOL = 1.6e-2  # bf16's 8-bit mantissa, the tolerance PyTorch's own tests use


def warnings_in(stderr):
    """What a compile said besides notes (information: a speed flag that does
    not pay on the target, the target --target=auto chose)."""
    return "\n".join(line for line in stderr.splitlines()
                     if line.strip() and not line.startswith("note: "))


def norm_error(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def data_for(name, spec, rng):
    if name == "gpt":
        return ({"idx": rng.randint(0, 64, (BATCH, 16)).astype(np.int64)},
                rng.randint(0, 64, (BATCH, 16)).astype(np.int64), ["--class-axis=-1"])
    if name == "lstm":  # tokens in, a class per sequence
        return ({"ids": rng.randint(0, 1000, (BATCH, 32)).astype(np.int64)},
                rng.randint(0, 10, BATCH).astype(np.int64), [])
    if name == "unet":  # a class per pixel
        return ({"x": rng.randn(BATCH, 3, 64, 64).astype(np.float32)},
                rng.randint(0, 3, (BATCH, 64, 64)).astype(np.int64), [])
    shape = tuple(spec["inputs"]["x"]().shape[1:])
    return ({"x": rng.randn(BATCH, *shape).astype(np.float32)},
            rng.randint(0, 10, BATCH).astype(np.int64), [])


def torch_step(spec, name, state, inputs, labels, mode):
    """Loss and gradients of one PyTorch step: mode is "autocast" (bf16 on
    the CPU), "f32" or "f64"."""
    torch.manual_seed(0)
    net = spec["build"]()
    if mode == "f64":
        net = net.double()
    net.load_state_dict({k: torch.tensor(v) for k, v in state.items()})
    net.train()
    batch = [torch.tensor(v) for v in inputs.values()]
    if mode == "f64":
        batch = [b.double() if b.is_floating_point() else b for b in batch]
    target = torch.tensor(labels)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=mode == "autocast"):
        logits = net(*batch)
        if name == "gpt":
            logits, target = logits.reshape(-1, logits.shape[-1]), target.reshape(-1)
        loss = torch.nn.functional.cross_entropy(logits, target)
    loss.backward()
    return float(loss), {k: p.grad.detach().double().numpy() for k, p in net.named_parameters()}


# With --gpu-prepare DIR, each zoo case but ResNet-18 (too large to carry) is
# also packed for the GPU: DIR/<model>/ (bf16) and DIR/<model>-fp16/ hold the
# CUDA --entry=train_step
# program, its data, and the references (autocast's and float64's loss and
# gradients); test/gpu/compare_precision.py checks the CUDA run with the same
# criteria. DIR/scaler/ holds the CUDA fp16 trainers of check_scaler and
# the overflowing data (test/gpu/compare_scaler.py).
GPU_DIR = None


def prepare_gpu_case(trainc, name, path, flags, data, loss_amp, loss64, grads_amp, grads64,
                     ill, precision):
    out = os.path.join(GPU_DIR, name if precision == "bf16" else name + "-" + precision)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    shutil.copytree(data, os.path.join(out, "data"))
    build = subprocess.run([trainc, "compile", path, "--target=cuda", "--cuda-arch=sm_90",
                            "--batch-size=%d" % BATCH, "--loss=cross-entropy",
                            "--precision=" + precision, "--entry=train_step",
                            "-o", os.path.join(out, "prog")] + flags,
                           capture_output=True, text=True)
    if build.returncode != 0:
        raise RuntimeError("CUDA %s program %s: %s" % (precision, name,
                                                       build.stderr.strip()[:300]))
    shutil.rmtree(os.path.join(out, "prog.build"), ignore_errors=True)
    # What travels stays small: float64's gradients as float32 (6e-8 off,
    # far below every bound) and autocast's only as its norm-wise error.
    np.savez(os.path.join(out, "expected.npz"),
             **{"f64." + k: v.astype(np.float32) for k, v in grads64.items()})
    amp_errors = {k: norm_error(v, grads64[k]) for k, v in grads_amp.items()}
    with open(os.path.join(out, "case.json"), "w") as f:
        json.dump({"loss_amp": loss_amp, "loss64": loss64, "ill": ill, "rtol": RTOL,
                   "precision": precision, "amp_errors": amp_errors}, f)


# fp16 without loss scaling (--entry=train_step has none) underflows on the
# U-Net: a per-pixel mean over 16 x 64 x 64 pixels puts each pixel's gradient
# near 1e-5, below fp16's normal range (6e-5), so sums of them lose most of
# their digits (the ConvTranspose bias' gradient came out 84% off, bf16's
# 11%), as PyTorch's fp16 would without GradScaler. Only its loss-scaled
# step is compared.
UNSCALED_FP16_UNDERFLOWS = {"unet"}


def check_zoo(trainc, work, check, models, precisions):
    sys.path.insert(0, os.path.join(ROOT, "test", "zoo"))
    import make_zoo
    for spec in make_zoo.TORCH_MODELS:
        name = spec["name"]
        if name not in models:
            continue
        torch.manual_seed(0)
        model = spec["build"]()
        model.train()
        inputs, labels, flags = data_for(name, spec, np.random.RandomState(5))
        path = os.path.join(work, name + "_bf16.onnx")
        names = list(inputs)
        torch.onnx.export(model, tuple(torch.tensor(v) for v in inputs.values()), path,
                          input_names=names, output_names=["logits"],
                          dynamic_axes={n: {0: "batch"} for n in names + ["logits"]},
                          opset_version=17, do_constant_folding=False,
                          training=torch.onnx.TrainingMode.TRAINING)
        state = {k: v.detach().numpy() for k, v in model.state_dict().items()}
        data = os.path.join(work, name + "_mixed-data")
        os.makedirs(data, exist_ok=True)
        for key, value in inputs.items():
            np.save(os.path.join(data, key + ".npy"), value)
        np.save(os.path.join(data, "label.npy"), labels)
        np.save(os.path.join(data, "sample_weights.npy"), np.ones(BATCH, np.float32))
        np.save(os.path.join(data, "sample_mask.npy"), np.ones(BATCH, np.float32))
        loss_amp, grads_amp = torch_step(spec, name, state, inputs, labels, "autocast")
        loss32, grads32 = torch_step(spec, name, state, inputs, labels, "f32")
        loss64, grads64 = torch_step(spec, name, state, inputs, labels, "f64")
        refs = (loss_amp, grads_amp, loss32, grads32, loss64, grads64)
        for precision in precisions:
            if precision == "fp16" and name in UNSCALED_FP16_UNDERFLOWS:
                print("note: fp16 %s without loss scaling not compared (its gradients "
                      "underflow fp16, as PyTorch's would without GradScaler); the "
                      "loss-scaled step is" % name)
                check_scaled_step(trainc, work, check, name, path, flags, data, state, refs)
                continue
            outcome = check_zoo_case(trainc, work, check, name, path, flags, data, precision,
                                     refs)
            if precision == "fp16":
                check_scaled_step(trainc, work, check, name, path, flags, data, state, refs)
            # ResNet-18's case (a 47 MB program and 45 MB of references
            # each) would not fit the GPU machine's 64 MiB carry.
            if outcome is not None and GPU_DIR and name != "resnet18":
                prepare_gpu_case(trainc, name, path, flags, data, loss_amp, loss64, grads_amp,
                                 grads64, outcome, precision)


def check_zoo_case(trainc, work, check, name, path, flags, data, precision, refs):
    """One --entry=train_step step in `precision` against the references:
    bf16 against autocast's error (both measured from float64); fp16 (which
    CPU autocast lacks in PyTorch 1.13) against float64 directly, within
    autocast-bf16's error (fp16's mantissa is 3 bits longer, so its error is
    ~8x smaller) plus 2e-3. Returns the ill-conditioned tensors' names
    (a list) when it ran, else None."""
    loss_amp, grads_amp, loss32, grads32, loss64, grads64 = refs
    tag = "%s %s" % (precision, name)
    prog = os.path.join(work, "%s_%s" % (name, precision))
    build = subprocess.run([trainc, "compile", path, "--target=cpu",
                            "--batch-size=%d" % BATCH, "--loss=cross-entropy",
                            "--precision=" + precision, "--entry=train_step", "-o", prog] + flags,
                           capture_output=True, text=True)
    if build.returncode != 0:
        check(False, "%s compiles: %s" % (tag, build.stderr.strip()[:400]))
        return None
    out = os.path.join(work, "%s_%s-out" % (name, precision))
    run = subprocess.run([prog, "--run", "--data", data, "--out", out],
                         capture_output=True, text=True)
    if run.returncode != 0:
        check(False, "%s runs: %s" % (tag, run.stderr.strip()[:400]))
        return None
    loss = float(np.load(os.path.join(out, "loss.npy")))
    if precision == "fp16":
        check(abs(loss - loss64) <= max(abs(loss_amp - loss64) / 2, 2e-3 * abs(loss64)),
              "%s: loss %.6f vs float64 %.6f (rel. diff %.2e; bound: half autocast-bf16's "
              "%.2e, at least 2e-3)" % (tag, loss, loss64, abs(loss - loss64) / abs(loss64),
                                         abs(loss_amp - loss64) / abs(loss64)))
    else:
        # Within bf16's tolerance of autocast's loss, or closer to float64's
        # than autocast's is (ResNet-18's batch norms put autocast 2% off).
        check(abs(loss - loss_amp) <= RTOL * abs(loss_amp) or
              abs(loss - loss64) <= abs(loss_amp - loss64),
              "%s: loss %.6f vs autocast %.6f (float64 %.6f; rel. diff to autocast %.2e, "
              "rtol %g; to float64: ours %.2e, autocast %.2e)"
              % (tag, loss, loss_amp, loss64, abs(loss - loss_amp) / abs(loss_amp), RTOL,
                 abs(loss - loss64) / abs(loss64), abs(loss_amp - loss64) / abs(loss64)))
    grad_of = lambda key: (np.load(os.path.join(out, "grad.%s.npy" % key))  # noqa: E731
                           if os.path.exists(os.path.join(out, "grad.%s.npy" % key)) else None)
    return check_grads(check, tag, precision, grad_of, refs)


def check_scaled_step(trainc, work, check, name, path, flags, data, state, refs):
    """The first good fp16 step with dynamic loss scaling (the backward seeded
    with the scale, the gradients unscaled and probed in the update): SGD
    with lr 2^20, no momentum or decay, so (p0 - p1) / 2^20 is the unscaled
    gradient the update applied; it must meet the fp16 gradient criteria.
    The batch is the data's only one: a step that overflows (ResNet-18's
    batch norms at 65536, as with PyTorch's GradScaler) changes no parameter
    and is run again at half the scale, so the run of k steps whose first
    k - 1 are skipped applies one gradient."""
    tag = "fp16 %s, loss-scaled SGD step" % name
    prog = os.path.join(work, name + "_fp16_sgd")
    build = subprocess.run([trainc, "compile", path, "--target=cpu", "--batch-size=%d" % BATCH,
                            "--loss=cross-entropy", "--optimizer=sgd", "--precision=fp16",
                            "-o", prog] + flags, capture_output=True, text=True)
    if build.returncode != 0:
        check(False, "%s compiles: %s" % (tag, build.stderr.strip()[:400]))
        return
    saved, log = os.path.join(work, name + "_fp16_sgd-params"), os.path.join(work, name + "_fp16_sgd.log")
    lr = 2.0 ** 20
    for steps in range(1, 9):
        shutil.rmtree(saved, ignore_errors=True)
        run = subprocess.run([prog, "--data", data, "--steps", str(steps), "--no-shuffle",
                              "--lr", "%r" % lr, "--momentum", "0", "--save-params", saved,
                              "--log", log], capture_output=True, text=True)
        if run.returncode != 0:
            check(False, "%s trains: %s" % (tag, run.stderr.strip()[:400]))
            return
        records = [json.loads(line) for line in open(log)]
        if not records[-1].get("skipped"):
            break
    scales = [r.get("loss_scale") for r in records]
    check(not records[-1].get("skipped") and all(r.get("skipped") for r in records[:-1]) and
          scales == [65536.0 / 2 ** k for k in range(len(records))],
          "%s: the first good step is step %d, at the scale %g (the steps before it skipped, "
          "the scale halving: %s)" % (tag, len(records), scales[-1],
                                      " ".join("%g" % v for v in scales)))

    def delta(key):
        after = os.path.join(saved, key + ".npy")
        if not os.path.exists(after) or key not in state:
            return None
        return (state[key].astype(np.float64) - np.load(after).astype(np.float64)) / lr
    check_grads(check, tag, "fp16", delta, refs)


def check_grads(check, tag, precision, grad_of, refs):
    """The gradient criteria; grad_of(key) is our gradient of a PyTorch
    parameter (None: missing). Returns the ill-conditioned tensors' names."""
    loss_amp, grads_amp, loss32, grads32, loss64, grads64 = refs
    # Gradient bounds against float64: bf16 within 4x autocast's error +
    # RTOL, fp16 within autocast-bf16's error + 2e-3.
    scale, floor = (4.0, RTOL) if precision == "bf16" else (1.0, 2e-3)
    # Norm-wise errors against float64, per tensor. A tensor whose PyTorch
    # float32 gradient is itself more than 1e-3 from float64's is
    # ill-conditioned (GPT's attention key bias: its exact gradient is 0,
    # softmax ignores a shift of every score) and is named, not compared.
    worst, ill, missing, ours_total, f32_total = ("", 0.0, 0.0, 0.0), [], [], 0.0, 0.0
    for key, want in grads_amp.items():
        got = grad_of(key)
        if got is None:
            missing.append(key)
            continue
        e32 = norm_error(grads32[key], grads64[key])
        if e32 > 1e-3:
            ill.append(key)
            continue
        e_ours, e_amp = norm_error(got, grads64[key]), norm_error(want, grads64[key])
        ours_total += e_ours
        f32_total += e32
        ratio = e_ours / (scale * e_amp + floor)
        if ratio >= worst[1]:
            worst = (key, ratio, e_ours, e_amp)
    check(not missing, "%s: a gradient for every parameter (missing: %s)"
          % (tag, ", ".join(missing) or "none"))
    check(bool(worst[0]) and worst[1] <= 1.0,
          "%s: every gradient within %gx autocast-bf16's error + %g of float64's, norm-wise "
          "(worst %s: ours %.2e, autocast %.2e, %.0f%% of the bound; not compared, "
          "ill-conditioned in float32: %s)" % (tag, scale, floor, worst[0], worst[2], worst[3],
                                                100 * worst[1], ", ".join(ill) or "none"))
    check(ours_total > 10 * f32_total,
          "%s: the %s rounding is visible (summed error vs float64: ours %.2e, "
          "PyTorch float32 %.2e)" % (tag, precision, ours_total, f32_total))
    return ill


def check_digits(trainc, work, check, precisions):
    """200 steps of the example in fp32, bf16 and fp16 (SGD with momentum,
    and fp32 vs fp16 under AdamW), same data order."""
    data = os.path.join(work, "digits-data")
    if not os.path.isdir(os.path.join(data, "train")):
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "examples", "prepare_digits.py"),
                        data], check=True, capture_output=True)
    cases = [("fp32", "auto", "sgd")]
    for p in ("bf16", "fp16"):
        if p in precisions:
            cases += [(p, "auto", "sgd"), (p, "none", "sgd")]
    if "fp16" in precisions:
        cases += [("fp32", "auto", "adamw"), ("fp16", "auto", "adamw")]
    curves, accuracy, logs, skipped = {}, {}, {}, {}
    for precision, fuse, optimizer in cases:
        case = precision + ("" if fuse == "auto" else "-unfused") + \
            ("" if optimizer == "sgd" else "-" + optimizer)
        prog = os.path.join(work, "digits_" + case)
        build = subprocess.run([trainc, "compile", os.path.join(ROOT, "examples",
                                                                "digits_mlp.onnx"),
                                "--target=cpu", "--batch-size=32", "--loss=cross-entropy",
                                "--optimizer=" + optimizer, "--precision=" + precision,
                                "--fuse=" + fuse, "-o", prog],
                               capture_output=True, text=True)
        if build.returncode != 0:
            check(False, "digits %s compiles: %s" % (case, build.stderr.strip()[:400]))
            return
        log = os.path.join(work, "digits_%s.jsonl" % case)
        # 45 steps an epoch: 5 epochs are 225 steps, the first 200 compared.
        hypers = (["--lr", "0.1", "--momentum", "0.9", "--weight-decay", "0.0005"]
                  if optimizer == "sgd" else ["--lr", "0.003"])
        run = subprocess.run([prog, "--data", os.path.join(data, "train"), "--eval-data",
                              os.path.join(data, "val"), "--epochs", "5", "--no-shuffle",
                              "--log", log] + hypers, capture_output=True, text=True)
        if run.returncode != 0:
            check(False, "digits %s trains: %s" % (case, run.stderr.strip()[:400]))
            return
        records = [json.loads(l) for l in open(log)]
        steps = [r for r in records if "loss" in r]
        logs[case] = [r["loss"] for r in steps]
        skipped[case] = sum(1 for r in steps if r.get("skipped"))
        # A skipped step (fp16 overflow) is a gap, so that step k of every
        # curve stays step k.
        curves[case] = [np.nan if r.get("skipped") else r["loss"] for r in steps][:200]
        accuracy[case] = None
        for line in run.stdout.splitlines():
            if line.startswith("accuracy "):
                accuracy[case] = float(line.split()[1])
    for low in [p for p in ("bf16", "fp16") if p in precisions]:
        check(logs[low] == logs[low + "-unfused"],
              "digits: %s with --fuse=none logs the same losses bit for bit (%d steps; each "
              "%s result is rounded in a fused kernel as in its own)"
              % (low, len(logs[low]), low))
        pairs = [("fp32", low)] + ([("fp32-adamw", "fp16-adamw")] if low == "fp16" else [])
        for ref, case in pairs:
            a, b = np.asarray(curves[ref]), np.asarray(curves[case])
            if len(a) < 200 or len(b) < 200:
                check(False, "digits: 200 logged steps (%s %d, %s %d)"
                      % (ref, len(a), case, len(b)))
                continue
            windows = [abs(np.nanmean(b[i:i + 25]) - np.nanmean(a[i:i + 25])) /
                       np.nanmean(a[i:i + 25]) for i in range(0, 200, 25)]
            tail = abs(np.nanmean(b[150:]) - np.nanmean(a[150:])) / np.nanmean(a[150:])
            check(max(windows) <= 0.02 and tail <= 0.02,
                  "digits: %s loss curve within 2%% of %s's over 200 steps (worst 25-step "
                  "window %.2f%%, last 50 steps %.2f%%; final %.4f vs %.4f; %d steps skipped)"
                  % (case, ref, 100 * max(windows), 100 * tail, np.nanmean(b[-25:]),
                     np.nanmean(a[-25:]), skipped[case]))
        check(accuracy[low] is not None and accuracy[low] >= 0.97,
              "digits: %s held-out accuracy %s (fp32 %s) >= 97%%"
              % (low, accuracy[low], accuracy["fp32"]))


def check_scaler(trainc, work, check):
    """fp16 dynamic loss scaling on the digits example (no shuffle, batch
    32): a batch scaled by 1e30 overflows fp16 (its loss is inf); that step
    is skipped with every parameter and optimizer state tensor unchanged bit
    for bit, the scale halves and the skipped steps count; with
    --scale-growth-interval 2 the scale doubles every 2 good steps; a run
    stopped after step 4 (its checkpoint) and resumed ends bit for bit as the
    uninterrupted run (scale, good-step count, skipped steps, Adam's step
    count). A fixed --loss-scale=1024 with --clip-grad-norm skips the same
    step and counts it."""
    data = os.path.join(work, "digits-data")
    if not os.path.isdir(os.path.join(data, "train")):
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "examples", "prepare_digits.py"),
                        data], check=True, capture_output=True)
    ovf = os.path.join(work, "digits-overflow")
    make_overflow_data(os.path.join(data, "train"), ovf)

    def train(prog, folder, tag, *flags):
        shutil.rmtree(os.path.join(work, tag), ignore_errors=True)
        run = subprocess.run([prog, "--data", folder, "--no-shuffle",
                              "--checkpoint-dir", os.path.join(work, tag, "ckpt"),
                              "--save-params", os.path.join(work, tag, "params"),
                              "--log", os.path.join(work, tag, "log")] + list(flags),
                             capture_output=True, text=True)
        if run.returncode != 0:
            check(False, "scaler %s trains: %s" % (tag, run.stderr.strip()[:400]))
            return None
        steps = [json.loads(l) for l in open(os.path.join(work, tag, "log"))]
        tensors, manifest = read_checkpoint(os.path.join(work, tag, "ckpt"))
        return steps, tensors, manifest, run.stderr

    for optimizer, hypers in (("sgd", ["--lr", "0.1", "--momentum", "0.9"]),
                              ("adamw", ["--lr", "0.003"])):
        prog = os.path.join(work, "scaler_" + optimizer)
        build = subprocess.run([trainc, "compile", os.path.join(ROOT, "examples",
                                                                "digits_mlp.onnx"),
                                "--target=cpu", "--batch-size=32", "--loss=cross-entropy",
                                "--optimizer=" + optimizer, "--precision=fp16", "-o", prog],
                               capture_output=True, text=True)
        if build.returncode != 0:
            check(False, "scaler %s compiles: %s" % (optimizer, build.stderr.strip()[:400]))
            continue
        if GPU_DIR:
            gpu = os.path.join(GPU_DIR, "scaler", optimizer)
            shutil.rmtree(gpu, ignore_errors=True)
            shutil.copytree(ovf, os.path.join(gpu, "data"))
            cuda = subprocess.run([trainc, "compile", os.path.join(ROOT, "examples",
                                                                   "digits_mlp.onnx"),
                                   "--target=cuda", "--cuda-arch=sm_90", "--batch-size=32",
                                   "--loss=cross-entropy", "--optimizer=" + optimizer,
                                   "--precision=fp16", "-o", os.path.join(gpu, "prog")],
                                  capture_output=True, text=True)
            if cuda.returncode != 0:
                raise RuntimeError("CUDA fp16 trainer: %s" % cuda.stderr.strip()[:300])
            shutil.rmtree(os.path.join(gpu, "prog.build"), ignore_errors=True)
            with open(os.path.join(gpu, "flags.txt"), "w") as f:
                f.write("\n".join(hypers) + "\n")
        two = train(prog, ovf, optimizer + "-2", "--steps", "2", *hypers)
        three = train(prog, ovf, optimizer + "-3", "--steps", "3", *hypers)
        if not two or not three:
            continue
        for ok, what in skipped_step_checks("scaler " + optimizer, three[0], two[1], three[1],
                                             three[2], optimizer != "sgd"):
            check(ok, what)
        # Growth, then a skip, across a resume: interval 2, 8 steps, the
        # overflow at step 3; killed after step 4 (good-step count 1) and
        # resumed.
        flags = ["--scale-growth-interval", "2"] + hypers
        whole = train(prog, ovf, optimizer + "-whole", "--steps", "8", *flags)
        first = train(prog, ovf, optimizer + "-resumed", "--steps", "4", *flags)
        if not whole or not first:
            continue
        shutil.rmtree(os.path.join(work, optimizer + "-resumed", "params"))
        run = subprocess.run([prog, "--data", ovf, "--no-shuffle", "--steps", "8", "--resume",
                              "--checkpoint-dir", os.path.join(work, optimizer + "-resumed",
                                                               "ckpt"),
                              "--save-params", os.path.join(work, optimizer + "-resumed",
                                                            "params"),
                              "--log", os.path.join(work, optimizer + "-resumed", "log")] + flags,
                             capture_output=True, text=True)
        if run.returncode != 0:
            check(False, "scaler %s resumes: %s" % (optimizer, run.stderr.strip()[:400]))
            continue
        scales = [r["loss_scale"] for r in whole[0]]
        check(scales == [65536, 65536, 131072, 65536, 65536, 131072, 131072, 262144],
              "scaler %s: --scale-growth-interval 2 doubles the scale every 2 good steps and "
              "the skip halves it (scale each step ran with: %s)"
              % (optimizer, " ".join("%g" % v for v in scales)))
        resumed_tensors, resumed_manifest = read_checkpoint(os.path.join(work, optimizer +
                                                                         "-resumed", "ckpt"))
        resumed_log = [json.loads(l) for l in open(os.path.join(work, optimizer + "-resumed",
                                                                "log"))]
        differ = [k for k in whole[1] if resumed_tensors.get(k) != whole[1][k]]
        # The logs alike but for their timing fields (wall_time, samples_per_s).
        untimed = [[{k: v for k, v in r.items() if k not in ("wall_time", "samples_per_s")}
                    for r in log] for log in (resumed_log, whole[0])]
        check(not differ and untimed[0] == untimed[1] and
              resumed_manifest.get("loss_scale") == whole[2].get("loss_scale"),
              "scaler %s: stopped after step 4 and resumed, the run ends bit for bit as the "
              "uninterrupted one (%d tensors incl. the scale %s, good-step count %g and "
              "skipped steps %g; differing: %s) and logs the same steps"
              % (optimizer, len(whole[1]), whole[2].get("loss_scale"),
                 f32_of(whole[1]["state/loss_scale.growth_tracker"]),
                 f32_of(whole[1]["state/loss_scale.skipped_steps"]), ", ".join(differ) or "none"))
    # A fixed scale with gradient clipping (unscaled before the norm).
    prog = os.path.join(work, "scaler_fixed")
    build = subprocess.run([trainc, "compile", os.path.join(ROOT, "examples", "digits_mlp.onnx"),
                            "--target=cpu", "--batch-size=32", "--loss=cross-entropy",
                            "--optimizer=adamw", "--clip-grad-norm=1", "--precision=fp16",
                            "--loss-scale=1024", "-o", prog], capture_output=True, text=True)
    if build.returncode != 0:
        check(False, "scaler fixed compiles: %s" % build.stderr.strip()[:400])
        return
    two = train(prog, ovf, "fixed-2", "--steps", "2", "--lr", "0.003")
    three = train(prog, ovf, "fixed-3", "--steps", "3", "--lr", "0.003")
    if two and three:
        for ok, what in skipped_step_checks("scaler fixed 1024, clipped", three[0], two[1],
                                             three[1], three[2], True, dynamic=False):
            check(ok, what)
        check(all(r.get("loss_scale") == 1024 for r in three[0]),
              "scaler fixed 1024, clipped: every step ran with the scale 1024 (%s)"
              % " ".join("%g" % r.get("loss_scale", 0) for r in three[0]))


def check_cuda(trainc, work, check, precisions):
    """Every zoo trainer compiles for CUDA in bf16 and fp16 (with dynamic
    loss scaling) with no warning (no GPU needed: nvcc, cuBLASLt's and
    cuDNN's 16-bit types)."""
    sys.path.insert(0, os.path.join(ROOT, "test", "zoo"))
    import make_zoo
    for spec in make_zoo.TORCH_MODELS:
        name = spec["name"]
        path = os.path.join(work, name + "_cuda_bf16.onnx")
        torch.manual_seed(0)
        model = spec["build"]()
        model.train()
        inputs, _, flags = data_for(name, spec, np.random.RandomState(5))
        names = list(inputs)
        torch.onnx.export(model, tuple(torch.tensor(v[:2]) for v in inputs.values()), path,
                          input_names=names, output_names=["logits"],
                          dynamic_axes={n: {0: "batch"} for n in names + ["logits"]},
                          opset_version=17, do_constant_folding=False,
                          training=torch.onnx.TrainingMode.TRAINING)
        for precision in [p for p in ("bf16", "fp16") if p in precisions]:
            build = subprocess.run([trainc, "compile", path, "--target=cuda",
                                    "--cuda-arch=sm_80,sm_90", "--batch-size=8",
                                    "--loss=cross-entropy", "--optimizer=adamw",
                                    "--precision=" + precision,
                                    "-o", os.path.join(work, "%s_cuda_%s" % (name, precision))]
                                   + flags, capture_output=True, text=True)
            check(build.returncode == 0 and not warnings_in(build.stderr),
                  "%s zoo %s trainer compiles for CUDA sm_80,sm_90 with no warning%s"
                  % (precision, name,
                     (": " + build.stderr.strip()[:300]) if build.stderr.strip() else ""))


def main():
    global GPU_DIR
    args = sys.argv[1:]
    if len(args) < 2:
        print(__doc__)
        return 2
    trainc, work = args[0], args[1]
    only = {"mlp", "lenet", "gpt", "resnet18", "lstm", "unet", "digits", "scaler", "cuda"}
    precisions = {"bf16", "fp16"}
    rest = args[2:]
    while rest:
        if rest[0] == "--only" and len(rest) > 1:
            only = set(rest[1].split(","))
        elif rest[0] == "--precision" and len(rest) > 1:
            precisions = set(rest[1].split(","))
        elif rest[0] == "--gpu-prepare" and len(rest) > 1:
            GPU_DIR = os.path.abspath(rest[1])
            os.makedirs(GPU_DIR, exist_ok=True)
        else:
            print(__doc__)
            return 2
        rest = rest[2:]
    os.makedirs(work, exist_ok=True)
    results = []

    def check(ok, what):
        results.append(ok)
        print("%s %s" % ("PASS" if ok else "FAIL", what), flush=True)
    check_zoo(trainc, work, check, only & {"mlp", "lenet", "gpt", "resnet18", "lstm", "unet"},
              [p for p in ("bf16", "fp16") if p in precisions])
    if "digits" in only:
        check_digits(trainc, work, check, precisions)
    if "scaler" in only and "fp16" in precisions:
        check_scaler(trainc, work, check)
    if "cuda" in only and os.path.exists("/usr/local/cuda/bin/nvcc"):
        check_cuda(trainc, work, check, precisions)
    passed = sum(results)
    print("%d passed, %d failed" % (passed, len(results) - passed))
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
