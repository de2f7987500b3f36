#!/usr/bin/python3
"""Throughput and memory against batch size: the CPU trainer of every zoo
model at a range of batch sizes, without and with --remat=auto.

Usage: bench/batch_sweep.py [--trainc PATH] [--models REGEX] [--batches LIST]
                            [--resnet-batches LIST] [--steps S] [--resnet-steps S]
                            [--repeat R] [--threads N] [--budget SIZE]

For each model and batch size: `trainc compile --target=cpu --optimizer=sgd`
(and the same with --remat=auto), the activation arena and total device
memory its --report-memory prints, and samples per second from timed runs
(train_step.py's method: the difference of two runs of different lengths,
best of --repeat, the two programs' runs interleaved). With --budget (e.g.
1GiB) it also prints, per model, the largest batch whose plan fits that much
memory without and with remat (trainc compile --device-memory). Numbers from
a shared machine: compare within a line, not across runs.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import train_step  # noqa: E402  (the model list, compile, timing and data helpers)


def plan_memory(trainc, spec, batch, extra):
    """(arena bytes, total bytes) from --report-memory, or None."""
    out = subprocess.run([trainc, "compile", spec["path"], "--batch-size=%d" % batch,
                          "--loss=cross-entropy", "--optimizer=sgd", "--compile-to=plan",
                          "--report-memory", "--elide-constants=1"]
                         + (["--class-axis=-1"] if spec.get("tokens") else []) + extra,
                         capture_output=True, text=True)
    arena = re.search(r"^activations\s+(\d+) bytes", out.stdout, re.M)
    total = re.search(r"^total\s+(\d+) bytes", out.stdout, re.M)
    return (int(arena.group(1)), int(total.group(1))) if arena and total else None


def largest_batches(trainc, spec, budget):
    out = subprocess.run([trainc, "compile", spec["path"], "--batch-size=1",
                          "--loss=cross-entropy", "--optimizer=sgd", "--compile-to=plan",
                          "--device-memory=" + budget, "--elide-constants=1"]
                         + (["--class-axis=-1"] if spec.get("tokens") else []),
                         capture_output=True, text=True)
    found = dict(re.findall(r"largest batch that fits (without remat|with --remat=auto): (\S+)",
                            out.stdout))
    return found.get("without remat", "?"), found.get("with --remat=auto", "?")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trainc", default=os.path.join(train_step.ROOT, "build", "bin", "trainc"))
    parser.add_argument("--models", default="zoo")
    parser.add_argument("--batches", default="8,32,128,512")
    parser.add_argument("--resnet-batches", default="4,8,16,32")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--resnet-steps", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--budget", default="")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="trainc-sweep-")
    print("trainc %s, %d threads; samples/s (arena MiB / total MiB) without | with --remat=auto"
          % (args.trainc, args.threads))
    for spec in train_step.MODELS:
        if not re.search(args.models, spec["name"]) or not os.path.exists(spec["path"]):
            continue
        batches = args.resnet_batches if spec.get("small") else args.batches
        steps = args.resnet_steps if spec.get("small") else args.steps
        for batch in [int(b) for b in batches.split(",")]:
            cells, progs = [], []
            data = os.path.join(work, "%s-%d-data" % (spec["name"].replace(" ", "_"), batch))
            train_step.make_data(spec, batch, steps, 2, data)
            for tag, extra in (("none", []), ("auto", ["--remat=auto"])):
                prog = os.path.join(work, "%s-%d-%s" % (spec["name"].replace(" ", "_"), batch, tag))
                failed = train_step.compile_trainc(args.trainc, spec, batch, prog, extra=extra)
                progs.append(None if failed else prog)
                cells.append([plan_memory(args.trainc, spec, batch, extra), failed])
            times = train_step.time_trainers([p for p in progs if p], steps, 2, data,
                                             args.threads, args.repeat)
            text = []
            for prog, (memory, failed) in zip(progs, cells):
                seconds = times.get(prog) if prog else None
                rate = "%.0f" % (batch / seconds) if isinstance(seconds, float) else (failed or seconds)
                mem = "%.1f / %.1f" % (memory[0] / 2**20, memory[1] / 2**20) if memory else "?"
                text.append("%s (%s)" % (rate, mem))
            print("%-14s batch %4d: %s | %s" % (spec["name"], batch, text[0], text[1]), flush=True)
        if args.budget:
            plain, remat = largest_batches(args.trainc, spec, args.budget)
            print("%-14s largest batch in %s: %s without remat, %s with --remat=auto"
                  % (spec["name"], args.budget, plain, remat), flush=True)


if __name__ == "__main__":
    main()
