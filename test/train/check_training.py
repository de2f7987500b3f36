#!/usr/bin/python3
"""Training matches PyTorch step for step (CPU target).

Usage: check_training.py TRAINC WORKDIR

For the MLP below with each optimizer, and the zoo's LeNet with SGD: `trainc compile --loss
--optimizer`, then N steps with a fixed data order (--no-shuffle) from the
ONNX initial weights, against PyTorch's model.train() loop on the same data,
batches and hyperparameters. The sample count leaves a short last batch, so
the per-sample weights are exercised. Compared: the loss of every step
(--log) and the final weights (--save-params), within rtol 1e-4 / atol 1e-5.
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
SAMPLES, BATCH, EPOCHS = 50, 16, 2  # 4 batches per epoch, the last of 2 samples

OPTIMIZERS = {
    "sgd": (dict(lr=0.1, momentum=0.9, weight_decay=5e-4),
            lambda params: torch.optim.SGD(params, lr=0.1, momentum=0.9, weight_decay=5e-4)),
    "sgd-plain": (dict(lr=0.05),
                  lambda params: torch.optim.SGD(params, lr=0.05)),
    "adam": (dict(lr=0.01, weight_decay=1e-3),
             lambda params: torch.optim.Adam(params, lr=0.01, weight_decay=1e-3)),
    "adamw": (dict(lr=0.01, weight_decay=0.01),
              lambda params: torch.optim.AdamW(params, lr=0.01, weight_decay=0.01)),
}


def torch_mlp(initializers, names):
    """The ONNX MLP as torch modules with the ONNX initial weights."""
    layers = []
    for i, (w, b) in enumerate(names):
        lin = torch.nn.Linear(initializers[w].shape[1], initializers[w].shape[0])
        lin.weight.data = torch.tensor(initializers[w])
        lin.bias.data = torch.tensor(initializers[b])
        layers.append(lin)
        if i + 1 < len(names):
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def main():
    trainc, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    passed = failed = 0

    def check(ok, what):
        nonlocal passed, failed
        print(("PASS" if ok else "FAIL") + ": train :: " + what)
        passed, failed = passed + ok, failed + (not ok)

    model_path = os.path.join(ROOT, "examples", "digits_mlp.onnx")
    model = onnx.load(model_path)
    init = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    layer_names = [("0.weight", "0.bias"), ("2.weight", "2.bias")]
    # Seed 1 keeps every hidden unit away from the ReLU kink during the run:
    # at the kink, GEMM rounding decides the gradient's sign, and Adam's
    # normalized step turns that into a full-size difference (seed 0 has
    # such a unit).
    rng = np.random.RandomState(1)
    x = rng.rand(SAMPLES, 64).astype(np.float32)
    y = rng.randint(0, 10, SAMPLES).astype(np.int64)
    data = os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    np.save(os.path.join(data, "x.npy"), x)
    np.save(os.path.join(data, "label.npy"), y)

    for name, (hyper, make_optimizer) in OPTIMIZERS.items():
        kind = name.split("-")[0]
        prog = os.path.join(work, "mlp_" + name)
        build = subprocess.run([trainc, "compile", model_path, "--target=cpu",
                                "--batch-size=%d" % BATCH, "--loss=cross-entropy",
                                "--optimizer=" + kind, "-o", prog],
                               capture_output=True, text=True)
        if build.returncode != 0:
            check(False, "%s compiles: %s" % (name, build.stderr.strip()[:300]))
            continue
        log = os.path.join(work, name + ".jsonl")
        saved = os.path.join(work, name + ".params")
        flags = ["--data", data, "--epochs", str(EPOCHS), "--no-shuffle", "--log", log,
                 "--save-params", saved]
        for key, value in hyper.items():
            flags += ["--" + key.replace("_", "-"), repr(value)]
        if kind == "sgd" and "momentum" not in hyper:
            flags += ["--momentum", "0"]
        if "weight_decay" not in hyper:
            flags += ["--weight-decay", "0"]
        run = subprocess.run([prog] + flags, capture_output=True, text=True)
        if run.returncode != 0:
            check(False, "%s trains: %s" % (name, run.stderr.strip()[:300]))
            continue
        ours = [json.loads(line)["loss"] for line in open(log)]

        net = torch_mlp(init, layer_names)
        net.train()
        optimizer = make_optimizer(net.parameters())
        theirs = []
        for _ in range(EPOCHS):
            for first in range(0, SAMPLES, BATCH):
                xb = torch.tensor(x[first:first + BATCH])
                yb = torch.tensor(y[first:first + BATCH])
                optimizer.zero_grad()
                loss = torch.nn.functional.cross_entropy(net(xb), yb)
                loss.backward()
                optimizer.step()
                theirs.append(float(loss))
        ok = len(ours) == len(theirs) and np.allclose(ours, theirs, rtol=1e-4, atol=1e-5)
        err = max(abs(a - b) for a, b in zip(ours, theirs)) if len(ours) == len(theirs) else float("nan")
        check(ok, "%s: loss of each of %d steps matches PyTorch (max abs error %.3g)"
              % (name, len(theirs), err))
        state = dict(net.named_parameters())
        for param in [p for pair in layer_names for p in pair]:
            got = np.load(os.path.join(saved, param + ".npy"))
            want = state[param].detach().numpy()
            check(np.allclose(got, want, rtol=1e-4, atol=1e-5),
                  "%s: final %s matches PyTorch (max abs error %.3g)"
                  % (name, param, float(np.abs(got - want).max())))
    # Learning-rate schedules, plain SGD on the MLP against PyTorch's
    # schedulers stepped once per step (8 steps: 2 epochs of 4 batches).
    total = EPOCHS * ((SAMPLES + BATCH - 1) // BATCH)
    sched = torch.optim.lr_scheduler
    schedules = {
        "step": (["--lr-schedule", "step", "--step-size", "3", "--gamma", "0.5"],
                 lambda o: sched.StepLR(o, step_size=3, gamma=0.5)),
        "cosine": (["--lr-schedule", "cosine", "--min-lr", "0.01"],
                   lambda o: sched.CosineAnnealingLR(o, T_max=total, eta_min=0.01)),
        "onecycle": (["--lr-schedule", "onecycle"],
                     lambda o: sched.OneCycleLR(o, max_lr=0.1, total_steps=total,
                                                cycle_momentum=False)),
        "cyclic": (["--lr-schedule", "cyclic", "--min-lr", "0.01", "--step-size", "3"],
                   lambda o: sched.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3,
                                            cycle_momentum=False)),
        "warmup": (["--warmup-steps", "3"],
                   lambda o: sched.LambdaLR(o, lambda k: min(1.0, (k + 1) / 3))),
    }
    prog = os.path.join(work, "mlp_sgd-plain")
    for name, (flags, make_scheduler) in schedules.items():
        log = os.path.join(work, "schedule-%s.jsonl" % name)
        saved = os.path.join(work, "schedule-%s.params" % name)
        run = subprocess.run([prog, "--data", data, "--epochs", str(EPOCHS), "--no-shuffle",
                              "--lr", "0.1", "--momentum", "0", "--weight-decay", "0",
                              "--log", log, "--save-params", saved] + flags,
                             capture_output=True, text=True)
        if run.returncode != 0:
            check(False, "schedule %s trains: %s" % (name, run.stderr.strip()[:300]))
            continue
        ours = [json.loads(line) for line in open(log)]
        net = torch_mlp(init, layer_names)
        net.train()
        optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
        scheduler = make_scheduler(optimizer)
        theirs, lrs = [], []
        for _ in range(EPOCHS):
            for first in range(0, SAMPLES, BATCH):
                lrs.append(optimizer.param_groups[0]["lr"])
                optimizer.zero_grad()
                loss = torch.nn.functional.cross_entropy(
                    net(torch.tensor(x[first:first + BATCH])), torch.tensor(y[first:first + BATCH]))
                loss.backward()
                optimizer.step()
                scheduler.step()
                theirs.append(float(loss))
        got_lrs = [o["lr"] for o in ours]
        check(len(got_lrs) == len(lrs) and np.allclose(got_lrs, lrs, rtol=1e-6, atol=1e-9),
              "schedule %s: learning rate of each step matches PyTorch (%s)"
              % (name, ", ".join("%.4g" % v for v in got_lrs)))
        got = np.load(os.path.join(saved, "2.weight.npy"))
        want = dict(net.named_parameters())["2.weight"].detach().numpy()
        check(np.allclose([o["loss"] for o in ours], theirs, rtol=1e-4, atol=1e-5) and
              np.allclose(got, want, rtol=1e-4, atol=1e-5),
              "schedule %s: losses and final weights match PyTorch (max weight error %.3g)"
              % (name, float(np.abs(got - want).max())))

    # The zoo's LeNet (convolution, max and average pooling, the folded
    # view(), three Linear layers): SGD with momentum, step for step.
    zoo = os.path.join(ROOT, "build", "zoo")
    sys.path.insert(0, os.path.join(ROOT, "test", "zoo"))
    import make_zoo
    lenet_path = os.path.join(zoo, "lenet_op17.onnx")
    prog = os.path.join(work, "lenet_sgd")
    build = subprocess.run([trainc, "compile", lenet_path, "--target=cpu", "--batch-size=8",
                            "--loss=cross-entropy", "--optimizer=sgd", "-o", prog],
                           capture_output=True, text=True)
    if build.returncode != 0:
        check(False, "lenet compiles: %s" % build.stderr.strip()[:300])
    else:
        rng = np.random.RandomState(2)
        lx = rng.rand(20, 1, 28, 28).astype(np.float32)
        ly = rng.randint(0, 10, 20).astype(np.int64)
        ldata = os.path.join(work, "lenet-data")
        os.makedirs(ldata, exist_ok=True)
        np.save(os.path.join(ldata, "x.npy"), lx)
        np.save(os.path.join(ldata, "label.npy"), ly)
        log, saved = os.path.join(work, "lenet.jsonl"), os.path.join(work, "lenet.params")
        run = subprocess.run([prog, "--data", ldata, "--epochs", "2", "--no-shuffle",
                              "--lr", "0.05", "--momentum", "0.9", "--log", log,
                              "--save-params", saved], capture_output=True, text=True)
        if run.returncode != 0:
            check(False, "lenet trains: %s" % run.stderr.strip()[:300])
        else:
            ours = [json.loads(line)["loss"] for line in open(log)]
            init = {t.name: numpy_helper.to_array(t) for t in onnx.load(lenet_path).graph.initializer}
            net = make_zoo.LeNet()
            for name, p in net.named_parameters():
                p.data = torch.tensor(init[name])
            net.train()
            optimizer = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
            theirs = []
            for _ in range(2):
                for first in range(0, 20, 8):
                    optimizer.zero_grad()
                    loss = torch.nn.functional.cross_entropy(
                        net(torch.tensor(lx[first:first + 8])), torch.tensor(ly[first:first + 8]))
                    loss.backward()
                    optimizer.step()
                    theirs.append(float(loss))
            err = max(abs(a - b) for a, b in zip(ours, theirs)) if len(ours) == len(theirs) else float("nan")
            check(len(ours) == len(theirs) and np.allclose(ours, theirs, rtol=1e-4, atol=1e-5),
                  "lenet sgd: loss of each of %d steps matches PyTorch (max abs error %.3g)"
                  % (len(theirs), err))
            for name, p in net.named_parameters():
                got = np.load(os.path.join(saved, name + ".npy"))
                want = p.detach().numpy()
                check(np.allclose(got, want, rtol=1e-4, atol=1e-5),
                      "lenet sgd: final %s matches PyTorch (max abs error %.3g)"
                      % (name, float(np.abs(got - want).max())))
    # Every trainer above also compiles for the CUDA target (no GPU needed).
    if os.path.exists("/usr/local/cuda/bin/nvcc"):
        for name, path in (("mlp", model_path), ("lenet", lenet_path)):
            build = subprocess.run([trainc, "compile", path, "--target=cuda",
                                    "--cuda-arch=sm_80,sm_90", "--batch-size=8",
                                    "--loss=cross-entropy", "--optimizer=adamw",
                                    "-o", os.path.join(work, name + "_cuda")],
                                   capture_output=True, text=True)
            check(build.returncode == 0 and not build.stderr.strip(),
                  "%s trainer compiles for CUDA sm_80,sm_90 with no warning%s"
                  % (name, (": " + build.stderr.strip()[:300]) if build.stderr.strip() else ""))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
