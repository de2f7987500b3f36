#!/usr/bin/env python3
"""Label -100 is ignored by --loss=cross-entropy as by PyTorch's CrossEntropyLoss().

usage: ignore_index.py TRAINC WORKDIR

An MLP (16 -> 32 -> ReLU -> 5) exported by python/trainc_torch.py trains 5
steps with SGD (lr 0.1, no momentum or decay; 37 samples, batch 8, so the
last batch has 5) on labels of which about a third are -100: every batch has
some, and one batch has only one real label. PyTorch's loop with
nn.CrossEntropyLoss() (ignore_index=-100 by default) runs on the same batches
in float64 and in float32. Checked, each a PASS/FAIL line:
  * the loss of every step within rtol 1e-5 of PyTorch float64's;
  * every trained tensor's update norm-wise within 1e-5 of float64's, or 10
    times PyTorch float32's own error if that is larger;
  * the same comparisons fail against a loss that counted the ignored
    samples (a mean over the whole batch), so they can see the difference;
  * a label of -1 is still refused before step 1, naming the sample.
Exits 1 if any check fails.
"""

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "..", "python"))
import trainc_torch  # noqa: E402

SAMPLES, BATCH, LR = 37, 8, 0.1


def make_net():
    torch.manual_seed(5)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 5))


def torch_run(init, x, labels, dtype, loss_fn):
    net = make_net().to(dtype)
    net.load_state_dict({k: torch.tensor(v).to(dtype) for k, v in init.items()})
    optimizer = torch.optim.SGD(net.parameters(), lr=LR)
    losses = []
    for first in range(0, SAMPLES, BATCH):
        optimizer.zero_grad()
        loss = loss_fn(net(torch.tensor(x[first:first + BATCH]).to(dtype)),
                       torch.tensor(labels[first:first + BATCH]))
        loss.backward()
        optimizer.step()
        losses.append(float(loss))
    return losses, {k: v.detach().double().numpy() for k, v in net.state_dict().items()}


def counted_everywhere(logits, target):
    """The wrong reading: ignored samples give 0 but stay in the mean."""
    per = nn.functional.cross_entropy(logits, target, reduction="none")
    return per.sum() / target.numel()


def main():
    trainc, work = sys.argv[1], sys.argv[2]
    data = os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    rng = np.random.RandomState(11)
    x = rng.randn(SAMPLES, 16).astype(np.float32)
    labels = rng.randint(0, 5, SAMPLES).astype(np.int64)
    labels[rng.rand(SAMPLES) < 0.35] = -100
    labels[8:16] = -100
    labels[12] = 3  # a batch with one real label
    labels[34] = 2  # (a batch with none would be 0 / 0 on both sides)
    for first in range(0, SAMPLES, BATCH):
        labels[first] = -100  # every batch ignores something
    np.save(os.path.join(data, "x.npy"), x)
    np.save(os.path.join(data, "label.npy"), labels)
    net = make_net()
    init = {k: v.detach().numpy().copy() for k, v in net.state_dict().items()}
    path = os.path.join(work, "mlp.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainc_torch.export_for_training(net, (torch.tensor(x[:BATCH]),), path, ["x"],
                                         ["logits"])
    prog = os.path.join(work, "prog")
    subprocess.run([trainc, "compile", path, "--target=cpu", "--batch-size=%d" % BATCH,
                    "--loss=cross-entropy", "--optimizer=sgd", "-o", prog], check=True)
    log, saved = os.path.join(work, "log.jsonl"), os.path.join(work, "saved")
    run = subprocess.run([prog, "--data", data, "--epochs", "1", "--no-shuffle", "--lr",
                          str(LR), "--momentum", "0", "--weight-decay", "0", "--log", log,
                          "--save-params", saved], capture_output=True, text=True)
    failed = 0

    def check(ok, what):
        nonlocal failed
        failed += not ok
        print(("PASS: " if ok else "FAIL: ") + what)

    check(run.returncode == 0, "trains on labels with -100: %s" % run.stderr.strip()[-300:])
    if run.returncode != 0:
        return 1
    ours = [json.loads(line)["loss"] for line in open(log) if '"step"' in line]
    got = {k: np.load(os.path.join(saved, k + ".npy")).astype(np.float64) for k in init}
    ce = nn.CrossEntropyLoss()

    def compare(losses64, state64, state32, what):
        loss_err = max(abs(a - b) / abs(b) for a, b in zip(ours, losses64))
        worst = 0.0
        for k in init:
            d64 = state64[k] - init[k]
            scale = max(np.linalg.norm(d64), 1e-30)
            mine = np.linalg.norm((got[k] - init[k]) - d64) / scale
            theirs = np.linalg.norm((state32[k] - init[k]) - d64) / scale
            worst = max(worst, mine / max(1e-5, 10 * theirs))
        return len(ours) == len(losses64) and loss_err <= 1e-5 and worst <= 1.0, loss_err, worst

    losses64, state64 = torch_run(init, x, labels, torch.float64, ce)
    _, state32 = torch_run(init, x, labels, torch.float32, ce)
    ok, loss_err, worst = compare(losses64, state64, state32, "")
    check(ok, "%d steps: losses within rtol 1e-5 of nn.CrossEntropyLoss() in float64 (worst "
          "%.2g) and every update within its tolerance (worst at %.2g of it)"
          % (len(ours), loss_err, worst))
    wrong64, wrong_state = torch_run(init, x, labels, torch.float64, counted_everywhere)
    wrong_ok, _, _ = compare(wrong64, wrong_state, state32, "")
    check(not wrong_ok, "the same comparison fails against a mean that counts the ignored "
          "samples")

    bad = os.path.join(work, "bad")
    os.makedirs(bad, exist_ok=True)
    np.save(os.path.join(bad, "x.npy"), x)
    minus_one = labels.copy()
    minus_one[9] = -1
    np.save(os.path.join(bad, "label.npy"), minus_one)
    run = subprocess.run([prog, "--data", bad, "--epochs", "1"], capture_output=True, text=True)
    check(run.returncode != 0 and "training label -1 of sample 9" in run.stderr,
          "label -1 is refused before step 1: %s" % run.stderr.strip()[-200:])
    print("%d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
