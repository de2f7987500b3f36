#!/usr/bin/env python3
"""What a training step keeps for its backward: trainc against PyTorch.

Usage: /usr/bin/python3 bench/saved_memory.py [--trainc build/bin/trainc]
           [--venv /tmp/bench-venv] [--models REGEX] [--batch 64]

For each model of the zoo (build/zoo; test/zoo/make_zoo.py makes it) named
here, side by side:
  trainc   `trainc compile --report-memory` of the SGD trainer at the batch:
           "saved for the backward" (every forward value the backward reads)
           and the whole arena of the step's activations;
  torch    the bytes of the tensors autograd saves in one forward in train
           mode (torch.autograd.graph.saved_tensors_hooks; each storage
           counted once, parameters and inputs left out), for Debian's torch
           and, with --venv, the venv's (torch 2.5, whose CPU LSTM is
           oneDNN's RNN with its workspace).
Memory is a count of bytes, not a timing: one run is enough.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import train_step  # noqa: E402

MODELS = ["zoo lstm", "zoo unet", "zoo gpt", "zoo resnet18"]


def trainc_bytes(trainc, spec, batch, work):
    """(saved for the backward, the activations' arena) from --report-memory."""
    out = subprocess.run([trainc, "compile", spec["path"], "--target=cpu",
                          "--batch-size=%d" % batch, "--loss=cross-entropy", "--optimizer=sgd",
                          "--report-memory", "-o", os.path.join(work, "prog")]
                         + (["--class-axis=-1"] if spec.get("tokens") else []),
                         capture_output=True, text=True)
    if out.returncode:
        return None, None
    saved = re.search(r"^  saved for the backward\s+(\d+) bytes", out.stdout, re.M)
    arena = re.search(r"^activations\s+(\d+) bytes", out.stdout, re.M)
    return (int(saved.group(1)) if saved else None), (int(arena.group(1)) if arena else None)


def torch_saved(spec, batch):
    """Bytes of the distinct storages autograd saves in one train-mode forward."""
    net, _ = train_step.torch_model(spec)
    net.train()
    x, _ = make_batch(spec, batch)
    keep = {p.data_ptr() for p in net.parameters()} | {x.data_ptr()}
    seen = {}

    def pack(t):
        if t.data_ptr() not in keep and t.device.type == "cpu":
            seen[t.data_ptr()] = max(seen.get(t.data_ptr(), 0),
                                     t.untyped_storage().nbytes()
                                     if hasattr(t, "untyped_storage")
                                     else t.storage().nbytes())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        net(x)
    return sum(seen.values())


def make_batch(spec, batch):
    g = torch.Generator().manual_seed(0)
    if spec.get("tokens") or spec.get("vocab"):
        vocab = spec.get("vocab", spec["classes"])
        return torch.randint(0, vocab, (batch,) + tuple(spec["shape"]), generator=g), None
    return torch.rand((batch,) + tuple(spec["shape"]), generator=g), None


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        spec = json.loads(sys.argv[2])
        print(json.dumps({"bytes": torch_saved(spec, int(sys.argv[3])),
                          "torch": torch.__version__.split("+")[0]}))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trainc", default=os.path.join(ROOT, "build", "bin", "trainc"))
    ap.add_argument("--venv", help="a venv with another torch (scripts/bench-venv.sh)")
    ap.add_argument("--models", default="", help="only the models whose name matches")
    ap.add_argument("--batch", type=int, default=64)
    args = ap.parse_args()
    mib = lambda n: "%.2f MiB" % (n / 2**20) if n is not None else "n/a"  # noqa: E731
    for spec in train_step.MODELS:
        if spec["name"] not in MODELS or not re.search(args.models, spec["name"]):
            continue
        batch = 8 if spec.get("small") else args.batch
        with tempfile.TemporaryDirectory() as work:
            saved, arena = trainc_bytes(args.trainc, spec, batch, work)
        line = "%-13s batch %3d | trainc saved %s (arena %s) | torch %s saved %s" % (
            spec["name"], batch, mib(saved), mib(arena), torch.__version__.split("+")[0],
            mib(torch_saved(spec, batch)))
        if args.venv:
            env = dict(os.environ)
            env.pop("PYTHONPATH", None)
            done = subprocess.run([os.path.join(args.venv, "bin", "python"),
                                   os.path.abspath(__file__), "--worker", json.dumps(spec),
                                   str(batch)], capture_output=True, text=True, env=env)
            rows = [json.loads(l) for l in done.stdout.splitlines() if l.startswith("{")]
            line += " | torch %s saved %s" % (rows[0]["torch"], mib(rows[0]["bytes"])) if rows \
                else " | venv torch failed: %s" % done.stderr.strip()[-200:]
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
