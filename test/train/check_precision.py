#!/usr/bin/python3
"""Mixed precision (--precision=bf16) against PyTorch's CPU autocast.

Usage: check_precision.py TRAINC WORKDIR [--only mlp,lenet,gpt,resnet18,digits,cuda]
                          [--gpu-prepare DIR]

For the zoo's MLP, LeNet, GPT and ResNet-18: `trainc compile --precision=bf16
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
  * the rounding is really there: over all tensors ours is farther from
    float64 than PyTorch float32 is (a build that silently ran in f32 fails).
digits: the example MLP trains 200 steps in fp32 and in bf16 (same data
order); the bf16 loss curve stays within 2% of fp32's (mean of the last 50
steps, and every 25-step window) and the held-out accuracy is >= 97%; bf16
with --fuse=none logs the same losses bit for bit.
--gpu-prepare DIR packs the zoo cases for test/gpu/run.sh (CUDA programs and
the references; see prepare_gpu_case).
cuda (where nvcc is): every zoo trainer (MLP, LeNet, ResNet-18, GPT) compiles
for CUDA sm_80,sm_90 in bf16 with no warning.
Prints one line per check and 'N passed, N failed'.
"""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import torch
from onnx import numpy_helper

torch.set_num_threads(2)
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BATCH = 16
RTOL = 1.6e-2  # bf16's 8-bit mantissa, the tolerance PyTorch's own tests use


def norm_error(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def data_for(name, spec, rng):
    if name == "gpt":
        return ({"idx": rng.randint(0, 64, (BATCH, 16)).astype(np.int64)},
                rng.randint(0, 64, (BATCH, 16)).astype(np.int64), ["--class-axis=-1"])
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


# With --gpu-prepare DIR, each zoo case is also packed for the GPU:
# DIR/<model>/ holds the CUDA --entry=train_step program in bf16, its data,
# and the references (autocast's and float64's loss and gradients);
# test/gpu/compare_precision.py checks the CUDA run with the same criteria.
GPU_DIR = None


def prepare_gpu_case(trainc, name, path, flags, data, loss_amp, loss64, grads_amp, grads64,
                     ill):
    import shutil
    out = os.path.join(GPU_DIR, name)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    shutil.copytree(data, os.path.join(out, "data"))
    build = subprocess.run([trainc, "compile", path, "--target=cuda", "--cuda-arch=sm_90",
                            "--batch-size=%d" % BATCH, "--loss=cross-entropy",
                            "--precision=bf16", "--entry=train_step",
                            "-o", os.path.join(out, "prog")] + flags,
                           capture_output=True, text=True)
    if build.returncode != 0:
        raise RuntimeError("CUDA bf16 program %s: %s" % (name, build.stderr.strip()[:300]))
    shutil.rmtree(os.path.join(out, "prog.build"), ignore_errors=True)
    np.savez(os.path.join(out, "expected.npz"),
             **{"amp." + k: v for k, v in grads_amp.items()},
             **{"f64." + k: v for k, v in grads64.items()})
    with open(os.path.join(out, "case.json"), "w") as f:
        json.dump({"loss_amp": loss_amp, "loss64": loss64, "ill": ill, "rtol": RTOL}, f)


def check_zoo(trainc, work, check, models):
    sys.path.insert(0, os.path.join(ROOT, "test", "zoo"))
    import make_zoo
    for spec in make_zoo.TORCH_MODELS:
        name = spec["name"]
        if name not in models:
            continue
        tag = "bf16 %s" % name
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
        prog = os.path.join(work, name + "_bf16")
        build = subprocess.run([trainc, "compile", path, "--target=cpu",
                                "--batch-size=%d" % BATCH, "--loss=cross-entropy",
                                "--precision=bf16", "--entry=train_step", "-o", prog] + flags,
                               capture_output=True, text=True)
        if build.returncode != 0:
            check(False, "%s compiles: %s" % (tag, build.stderr.strip()[:400]))
            continue
        data, out = os.path.join(work, name + "_bf16-data"), os.path.join(work, name + "_bf16-out")
        os.makedirs(data, exist_ok=True)
        for key, value in inputs.items():
            np.save(os.path.join(data, key + ".npy"), value)
        np.save(os.path.join(data, "label.npy"), labels)
        np.save(os.path.join(data, "sample_weights.npy"), np.ones(BATCH, np.float32))
        run = subprocess.run([prog, "--run", "--data", data, "--out", out],
                             capture_output=True, text=True)
        if run.returncode != 0:
            check(False, "%s runs: %s" % (tag, run.stderr.strip()[:400]))
            continue
        loss_amp, grads_amp = torch_step(spec, name, state, inputs, labels, "autocast")
        loss32, grads32 = torch_step(spec, name, state, inputs, labels, "f32")
        loss64, grads64 = torch_step(spec, name, state, inputs, labels, "f64")
        loss = float(np.load(os.path.join(out, "loss.npy")))
        # Within bf16's tolerance of autocast's loss, or closer to float64's
        # than autocast's is (ResNet-18's batch norms put autocast 2% off).
        check(abs(loss - loss_amp) <= RTOL * abs(loss_amp) or
              abs(loss - loss64) <= abs(loss_amp - loss64),
              "%s: loss %.6f vs autocast %.6f (float64 %.6f; rel. diff to autocast %.2e, "
              "rtol %g; to float64: ours %.2e, autocast %.2e)"
              % (tag, loss, loss_amp, loss64, abs(loss - loss_amp) / abs(loss_amp), RTOL,
                 abs(loss - loss64) / abs(loss64), abs(loss_amp - loss64) / abs(loss64)))
        # Norm-wise errors against float64, per tensor. A tensor whose PyTorch
        # float32 gradient is itself more than 1e-3 from float64's is
        # ill-conditioned (GPT's attention key bias: its exact gradient is 0,
        # softmax ignores a shift of every score) and is named, not compared.
        worst, ill, missing, ours_total, f32_total = ("", 0.0, 0.0, 0.0), [], [], 0.0, 0.0
        for key, want in grads_amp.items():
            path_grad = os.path.join(out, "grad.%s.npy" % key)
            if not os.path.exists(path_grad):
                missing.append(key)
                continue
            e32 = norm_error(grads32[key], grads64[key])
            if e32 > 1e-3:
                ill.append(key)
                continue
            got = np.load(path_grad)
            e_ours, e_amp = norm_error(got, grads64[key]), norm_error(want, grads64[key])
            ours_total += e_ours
            f32_total += e32
            ratio = e_ours / (4 * e_amp + RTOL)
            if ratio >= worst[1]:
                worst = (key, ratio, e_ours, e_amp)
        check(not missing, "%s: a gradient for every parameter (missing: %s)"
              % (tag, ", ".join(missing) or "none"))
        check(bool(worst[0]) and worst[1] <= 1.0,
              "%s: every gradient within 4x autocast's error + %g of float64's, norm-wise "
              "(worst %s: ours %.2e, autocast %.2e; not compared, ill-conditioned in float32: "
              "%s)" % (tag, RTOL, worst[0], worst[2], worst[3], ", ".join(ill) or "none"))
        check(ours_total > 10 * f32_total,
              "%s: the bf16 rounding is visible (summed error vs float64: ours %.2e, "
              "PyTorch float32 %.2e)" % (tag, ours_total, f32_total))
        if GPU_DIR:
            prepare_gpu_case(trainc, name, path, flags, data, loss_amp, loss64, grads_amp,
                             grads64, ill)


def check_digits(trainc, work, check):
    """200 steps of the example in fp32 and in bf16, same data order."""
    data = os.path.join(work, "digits-data")
    if not os.path.isdir(os.path.join(data, "train")):
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "examples", "prepare_digits.py"),
                        data], check=True, capture_output=True)
    curves, accuracy, logs = {}, {}, {}
    for precision, fuse in (("fp32", "auto"), ("bf16", "auto"), ("bf16", "none")):
        case = precision if fuse == "auto" else precision + "-unfused"
        prog = os.path.join(work, "digits_" + case)
        build = subprocess.run([trainc, "compile", os.path.join(ROOT, "examples",
                                                                "digits_mlp.onnx"),
                                "--target=cpu", "--batch-size=32", "--loss=cross-entropy",
                                "--optimizer=sgd", "--precision=" + precision,
                                "--fuse=" + fuse, "-o", prog],
                               capture_output=True, text=True)
        if build.returncode != 0:
            check(False, "digits %s compiles: %s" % (precision, build.stderr.strip()[:400]))
            return
        log = os.path.join(work, "digits_%s.jsonl" % case)
        # 45 steps an epoch: 5 epochs are 225 steps, the first 200 compared.
        run = subprocess.run([prog, "--data", os.path.join(data, "train"), "--eval-data",
                              os.path.join(data, "val"), "--epochs", "5", "--lr", "0.1",
                              "--momentum", "0.9", "--weight-decay", "0.0005", "--no-shuffle",
                              "--log", log], capture_output=True, text=True)
        if run.returncode != 0:
            check(False, "digits %s trains: %s" % (precision, run.stderr.strip()[:400]))
            return
        logs[case] = [json.loads(l)["loss"] for l in open(log)
                      if "loss" in json.loads(l) and "eval" not in l]
        curves[case] = logs[case][:200]
        accuracy[case] = None
        for line in run.stdout.splitlines():
            if line.startswith("accuracy "):
                accuracy[case] = float(line.split()[1])
    check(logs["bf16"] == logs["bf16-unfused"],
          "digits: bf16 with --fuse=none logs the same losses bit for bit (%d steps; each "
          "bf16 result is rounded in a fused kernel as in its own)" % len(logs["bf16"]))
    a, b = np.asarray(curves["fp32"]), np.asarray(curves["bf16"])
    if len(a) < 200 or len(b) < 200:
        check(False, "digits: 200 logged steps (fp32 %d, bf16 %d)" % (len(a), len(b)))
        return
    windows = [abs(b[i:i + 25].mean() - a[i:i + 25].mean()) / a[i:i + 25].mean()
               for i in range(0, 200, 25)]
    tail = abs(b[150:].mean() - a[150:].mean()) / a[150:].mean()
    check(max(windows) <= 0.02 and tail <= 0.02,
          "digits: bf16 loss curve within 2%% of fp32's over 200 steps (worst 25-step window "
          "%.2f%%, last 50 steps %.2f%%; fp32 final %.4f, bf16 %.4f)"
          % (100 * max(windows), 100 * tail, a[-25:].mean(), b[-25:].mean()))
    check(accuracy["bf16"] is not None and accuracy["bf16"] >= 0.97,
          "digits: bf16 held-out accuracy %s (fp32 %s) >= 97%%"
          % (accuracy["bf16"], accuracy["fp32"]))


def check_cuda(trainc, work, check):
    """Every zoo trainer compiles for CUDA in bf16 with no warning (no GPU
    needed: nvcc, cuBLASLt's and cuDNN's bf16 types)."""
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
        build = subprocess.run([trainc, "compile", path, "--target=cuda",
                                "--cuda-arch=sm_80,sm_90", "--batch-size=8",
                                "--loss=cross-entropy", "--optimizer=adamw", "--precision=bf16",
                                "-o", os.path.join(work, name + "_cuda_bf16")] + flags,
                               capture_output=True, text=True)
        check(build.returncode == 0 and not build.stderr.strip(),
              "bf16 zoo %s trainer compiles for CUDA sm_80,sm_90 with no warning%s"
              % (name, (": " + build.stderr.strip()[:300]) if build.stderr.strip() else ""))


def main():
    global GPU_DIR
    args = sys.argv[1:]
    if len(args) < 2:
        print(__doc__)
        return 2
    trainc, work = args[0], args[1]
    only = {"mlp", "lenet", "gpt", "resnet18", "digits", "cuda"}
    rest = args[2:]
    while rest:
        if rest[0] == "--only" and len(rest) > 1:
            only = set(rest[1].split(","))
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
    check_zoo(trainc, work, check, only & {"mlp", "lenet", "gpt", "resnet18"})
    if "digits" in only:
        check_digits(trainc, work, check)
    if "cuda" in only and os.path.exists("/usr/local/cuda/bin/nvcc"):
        check_cuda(trainc, work, check)
    passed = sum(results)
    print("%d passed, %d failed" % (passed, len(results) - passed))
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
