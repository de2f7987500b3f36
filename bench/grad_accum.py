#!/usr/bin/python3
"""Gradient accumulation: memory and step time of K micro-batches of B/K
against one batch of B, trainc and PyTorch eager side by side (CPU).

Usage: bench/grad_accum.py [--trainc PATH] [--models REGEX] [--batch B]
                           [--resnet-batch B] [--accum K] [--steps S]
                           [--resnet-steps S] [--repeat R] [--threads N]

For each zoo model: trainc compile --target=cpu --optimizer=sgd at batch B,
and at batch B/K with --grad-accum=K; the activation arena and total device
memory of each (--report-memory), and the seconds per optimizer step (of B
samples) from timed runs (train_step.py's method: two runs of different
lengths, best of --repeat, the programs' runs interleaved). The peer is
PyTorch eager (Debian's torch) with the same SGD at batch B and with its
accumulation loop (K backward passes of B/K, each loss scaled by 1/K, one
step). Prints per model: ms per optimizer step of each side, the slowdown
K-accumulation costs each (accumulated / plain), and trainc's memory.
Numbers from a shared machine: compare within a line.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import train_step  # noqa: E402  (the model list, compile, timing and data helpers)
from batch_sweep import plan_memory  # noqa: E402
from benchlib import best_seconds_per_step  # noqa: E402


def time_torch_accum(net, x, y, batch, accum, steps, warm, tokens, repeat):
    """Seconds per optimizer step of PyTorch's accumulation loop: `accum`
    micro-batches of batch // accum per step (accum 1: the plain loop)."""
    net.train()
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    xt, yt = torch.tensor(x), torch.tensor(y)
    micro = batch // accum

    def step(i):
        opt.zero_grad()
        for m in range(accum):
            first = i * batch + m * micro
            xb, yb = xt[first:first + micro], yt[first:first + micro]
            logits = net(xb)
            if tokens:
                logits, yb = logits.reshape(-1, logits.shape[-1]), yb.reshape(-1)
            (torch.nn.functional.cross_entropy(logits, yb) / accum).backward()
        opt.step()

    for i in range(warm):
        step(i)
    return best_seconds_per_step(step, steps, repeat)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trainc", default=os.path.join(train_step.ROOT, "build", "bin", "trainc"))
    parser.add_argument("--models", default="zoo")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--resnet-batch", type=int, default=16)
    parser.add_argument("--accum", type=int, default=4)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--resnet-steps", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    work = tempfile.mkdtemp(prefix="trainc-accum-")
    k = args.accum
    print("trainc %s, %d threads; ms per optimizer step of B samples: batch B | K=%d "
          "micro-batches of B/%d (accumulated/plain); trainc arena and total MiB"
          % (args.trainc, args.threads, k, k))
    for spec in train_step.MODELS:
        if not re.search(args.models, spec["name"]) or not os.path.exists(spec["path"]):
            continue
        batch = args.resnet_batch if spec.get("small") else args.batch
        steps = args.resnet_steps if spec.get("small") else args.steps
        name = spec["name"].replace(" ", "_")
        data = os.path.join(work, name + "-data")
        _, x, y = train_step.make_data(spec, batch, steps, 2, data)
        progs, memory = [], []
        for tag, b, extra in (("plain", batch, []), ("accum", batch // k,
                                                     ["--grad-accum=%d" % k])):
            prog = os.path.join(work, "%s-%s" % (name, tag))
            failed = train_step.compile_trainc(args.trainc, spec, b, prog, extra=extra)
            if failed:
                print("%-14s %s: %s" % (spec["name"], tag, failed))
                break
            progs.append(prog)
            memory.append(plan_memory(args.trainc, spec, b, extra))
        if len(progs) < 2:
            continue
        times = train_step.time_trainers(progs, steps, 2, data, args.threads, args.repeat)
        ours = [times[p] for p in progs]
        theirs = [time_torch_accum(train_step.torch_model(spec)[0], x, y, batch, a, steps, 2,
                                   spec.get("tokens"), args.repeat) for a in (1, k)]
        if not all(isinstance(t, float) for t in ours):
            print("%-14s %s" % (spec["name"], ours))
            continue
        mem = ["%.1f / %.1f" % (m[0] / 2**20, m[1] / 2**20) if m else "?" for m in memory]
        print("%-14s B=%-4d trainc %s | %s ms (%.2fx), PyTorch %s | %s ms (%.2fx); "
              "trainc memory %s | %s MiB" % (
                  spec["name"], batch, train_step.ms(ours[0]), train_step.ms(ours[1]),
                  ours[1] / ours[0], train_step.ms(theirs[0]), train_step.ms(theirs[1]),
                  theirs[1] / theirs[0], mem[0], mem[1]), flush=True)


if __name__ == "__main__":
    main()
