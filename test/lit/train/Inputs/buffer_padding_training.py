#!/usr/bin/env python3
"""Buffers, frozen weights and embedding padding rows train as in PyTorch.

usage: buffer_padding_training.py TRAINC WORKDIR

A token model (ids [N, 4] -> Embedding(8, 6, padding_idx=1) -> mean over the
tokens + a float buffer -> a Linear with a frozen weight -> tanh -> Linear ->
logits [N, 5]) is exported by python/trainc_torch.py and trained by trainc for
10 steps (40 samples, batch 8, 2 epochs, --no-shuffle) with SGD (momentum 0.9,
no weight decay) and with AdamW (weight decay 0.1), next to PyTorch's
model.train() loop on the same batches. The padding row starts non-zero, so
"unchanged" says something. Checked, each a PASS/FAIL line:
  * the loss of every step within rtol 1e-4 / atol 1e-5 of PyTorch's;
  * the buffer and the frozen weight: trainc's saved values bit-identical to
    the initial ones, as PyTorch's;
  * the padding row: under SGD bit-identical to its initial value (its
    gradient is 0), as PyTorch's; under AdamW it only decays, as PyTorch's
    (gradient 0, weight decay still applies), within rtol 1e-4 / atol 1e-5;
  * every trained tensor's final value within rtol 1e-4 / atol 1e-5 of PyTorch's.
Then the same model without the metadata (plain torch.onnx.export) shows what
the check guards against: trainc trains the buffer and the padding row.
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

SAMPLES, BATCH, EPOCHS, PAD = 40, 8, 2, 1
RUNS = {  # name: (trainc flags, PyTorch optimizer)
    "sgd": (["--lr", "0.1", "--momentum", "0.9", "--weight-decay", "0"],
            lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9)),
    "adamw": (["--lr", "0.01", "--weight-decay", "0.1"],
              lambda ps: torch.optim.AdamW(ps, lr=0.01, weight_decay=0.1)),
}


class TokenNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(8, 6, padding_idx=PAD)
        self.register_buffer("shift", torch.randn(6) * 0.5)
        self.frozen = nn.Linear(6, 6)
        self.frozen.weight.requires_grad_(False)
        self.fc = nn.Linear(6, 5)
        with torch.no_grad():
            self.emb.weight[PAD] = torch.linspace(-1, 1, 6)

    def forward(self, ids):
        return self.fc(torch.tanh(self.frozen(self.emb(ids).mean(dim=1) + self.shift)))


def torch_run(init, make_optimizer, ids, labels):
    net = TokenNet()
    net.load_state_dict({k: torch.tensor(v) for k, v in init.items()})
    net.train()
    optimizer = make_optimizer([p for p in net.parameters() if p.requires_grad])
    losses = []
    for _ in range(EPOCHS):
        for first in range(0, SAMPLES, BATCH):
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(net(torch.tensor(ids[first:first + BATCH])),
                                               torch.tensor(labels[first:first + BATCH]))
            loss.backward()
            optimizer.step()
            losses.append(float(loss))
    return losses, {k: v.detach().numpy() for k, v in net.state_dict().items()}


def trainc_run(trainc, work, onnx_path, name, optimizer, flags):
    prog = os.path.join(work, name)
    subprocess.run([trainc, "compile", onnx_path, "--target=cpu", "--batch-size=%d" % BATCH,
                    "--loss=cross-entropy", "--optimizer=" + optimizer, "-o", prog]
                   # PyTorch's AdamW here decays every parameter (one group).
                   + (["--no-decay=none"] if optimizer == "adamw" else []), check=True)
    log, saved = prog + ".jsonl", prog + ".params"
    subprocess.run([prog, "--data", os.path.join(work, "data"), "--epochs", str(EPOCHS),
                    "--no-shuffle", "--log", log, "--save-params", saved] + flags,
                   check=True, capture_output=True)
    losses = [json.loads(line)["loss"] for line in open(log) if '"step"' in line]
    return losses, lambda n: np.load(os.path.join(saved, n + ".npy"))


def main():
    trainc, work = sys.argv[1], sys.argv[2]
    os.makedirs(os.path.join(work, "data"), exist_ok=True)
    torch.manual_seed(3)
    net = TokenNet()
    rng = np.random.RandomState(3)
    ids = rng.randint(0, 8, (SAMPLES, 4)).astype(np.int64)
    lengths = rng.randint(1, 5, SAMPLES)
    for i, n in enumerate(lengths):
        ids[i, n:] = PAD  # padded sequences: the padding row is read often
    labels = rng.randint(0, 5, SAMPLES).astype(np.int64)
    np.save(os.path.join(work, "data", "ids.npy"), ids)
    np.save(os.path.join(work, "data", "label.npy"), labels)
    init = {k: v.detach().numpy().copy() for k, v in net.state_dict().items()}
    path = os.path.join(work, "tokens.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainable, padding = trainc_torch.export_for_training(
            net, (torch.tensor(ids[:BATCH]),), path, ["ids"], ["logits"])
    print("metadata: trainable %s, padding %s" % (json.dumps(trainable), json.dumps(padding)))

    failed = 0

    def check(ok, what):
        nonlocal failed
        failed += not ok
        print(("PASS: " if ok else "FAIL: ") + what)

    for name, (flags, make_optimizer) in RUNS.items():
        ours, load = trainc_run(trainc, work, path, name, name, flags)
        theirs, want = torch_run(init, make_optimizer, ids, labels)
        err = max(abs(a - b) for a, b in zip(ours, theirs)) if len(ours) == len(theirs) else -1
        check(len(ours) == len(theirs) and np.allclose(ours, theirs, rtol=1e-4, atol=1e-5),
              "%s: loss of each of %d steps matches PyTorch (max abs error %.3g)"
              % (name, len(theirs), err))
        for frozen in ("shift", "frozen.weight"):
            check(np.array_equal(load(frozen), init[frozen])
                  and np.array_equal(want[frozen], init[frozen]),
                  "%s: %s unchanged after %d steps, bit for bit, as in PyTorch"
                  % (name, frozen, len(theirs)))
        row, row0, row_want = load("emb.weight")[PAD], init["emb.weight"][PAD], want["emb.weight"][PAD]
        if name == "sgd":
            check(np.array_equal(row, row0) and np.array_equal(row_want, row0),
                  "sgd: padding row %d unchanged, bit for bit, as in PyTorch" % PAD)
        else:
            decayed = row0 * (1 - 0.01 * 0.1) ** len(theirs)
            check(np.allclose(row, row_want, rtol=1e-4, atol=1e-5)
                  and np.allclose(row_want, decayed, rtol=1e-6, atol=0),
                  "adamw: padding row %d only decays by (1 - lr wd)^%d, as in PyTorch (max abs "
                  "error %.3g)" % (PAD, len(theirs), float(np.abs(row - row_want).max())))
        for tensor in trainable:
            got, ref = load(tensor), want[tensor]
            check(np.allclose(got, ref, rtol=1e-4, atol=1e-5) and not np.array_equal(ref, init[tensor]),
                  "%s: trained %s matches PyTorch (max abs error %.3g, moved %.3g)"
                  % (name, tensor, float(np.abs(got - ref).max()),
                     float(np.abs(ref - init[tensor]).max())))

    # Without the metadata every float initializer trains: what the checks above catch.
    plain = os.path.join(work, "plain.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, (torch.tensor(ids[:BATCH]),), plain, opset_version=17,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                          input_names=["ids"], output_names=["logits"],
                          dynamic_axes={"ids": {0: "N"}, "logits": {0: "N"}},
                          **trainc_torch.torchscript_exporter())
    _, load = trainc_run(trainc, work, plain, "plain", "sgd", RUNS["sgd"][0])
    moved = {n: float(np.abs(load(n) - init[n]).max()) for n in ("shift", "frozen.weight")}
    moved["padding row"] = float(np.abs(load("emb.weight")[PAD] - init["emb.weight"][PAD]).max())
    check(all(v > 0 for v in moved.values()),
          "without the metadata, sgd moves %s" % ", ".join(
              "%s by %.3g" % kv for kv in moved.items()))
    print("%d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
