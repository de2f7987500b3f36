#!/usr/bin/python3
"""Pipeline parallelism on one machine: the step time of S = 1, 2, 3 stages
at M = 1, 2, 4, 8 micro-batches against the ideal, and each stage's planned
memory against one process (CPU).

Usage: bench/pipeline.py [--trainc PATH] [--batch B] [--layers L] [--width D]
                         [--steps N] [--repeat R] [--stages 1,2,3]
                         [--micro 1,2,4,8]

The model is a GPT (the zoo's architecture: L blocks of width D, 4 heads,
vocabulary 256, 64 tokens) exported from PyTorch, trained with SGD on random
tokens. S = 1 is one process with --grad-accum=M (no accumulation at M = 1);
S > 1 is `trainc compile --pipeline-stages=S --micro-batches=M` under
`mpirun -np S`, the cuts chosen by the compiler. Every process runs one
thread (--threads 1), so S stages have S cores where the machine has them;
beyond its cores the ranks share (the line says so).

Each configuration's seconds per optimizer step come from two runs of N and
3 N steps (their difference cancels start-up), the best of R. The ideal of
S stages is one process's step divided by S, stretched by the pipeline's
bubble: T(1, M) / S * (M + S - 1) / M, i.e. a bubble fraction of
(S - 1) / (M + S - 1). The memory is what the programs plan (--info):
parameters, optimizer state, and the arena (times the micro-batches a stage
keeps in flight).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test", "zoo"))
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def mpirun(ranks):
    return ["mpirun", "-np", str(ranks), "--oversubscribe", "--bind-to", "none", "--mca",
            "btl_vader_single_copy_mechanism", "none"]


def run_or_exit(cmd):
    start = time.time()
    done = subprocess.run(cmd, capture_output=True, text=True, env=ENV)
    if done.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), done.stderr[-1200:]))
    return time.time() - start, done.stdout


def export_gpt(path, layers, width, batch):
    import make_zoo
    torch.manual_seed(0)
    model = make_zoo.GPT(vocab=256, ctx=64, n_layer=layers, n_head=4, d_model=width)
    model.train()
    idx = torch.randint(0, 256, (batch, 64))
    torch.onnx.export(model, (idx,), path, input_names=["idx"], output_names=["logits"],
                      dynamic_axes={"idx": {0: "batch"}, "logits": {0: "batch"}},
                      opset_version=17, do_constant_folding=True,
                      training=torch.onnx.TrainingMode.TRAINING)


def planned_bytes(info):
    """One process's or each stage's planned bytes from --info: parameters,
    optimizer state and arenas (per stage: times its micro-batches in
    flight)."""
    states = [int(b) for b in re.findall(r"optimizer state: \d+ tensors, (\d+) bytes", info)]
    arenas = [int(b) for b in re.findall(r"^  arena: (\d+) bytes", info, re.M)]
    stages = re.findall(r"^stage \d+: \d+ parameters, (\d+) bytes;.*?(\d+) micro-batch", info,
                        re.M)
    if not stages:
        params = int(re.search(r"^parameters: .*?, (\d+) bytes", info, re.M).group(1))
        return [params + states[0] + arenas[-1]]
    return [int(p) + s + a * int(f) for (p, f), s, a in zip(stages, states, arenas)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--trainc", default=os.path.join(HERE, "..", "build", "bin", "trainc"))
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--stages", default="1,2,3")
    parser.add_argument("--micro", default="1,2,4,8")
    args = parser.parse_args()
    stage_counts = [int(s) for s in args.stages.split(",")]
    micro_counts = [int(m) for m in args.micro.split(",")]
    cores = os.cpu_count()
    work = tempfile.mkdtemp(prefix="trainc-pipeline-")
    model = os.path.join(work, "gpt.onnx")
    export_gpt(model, args.layers, args.width, args.batch)
    data = os.path.join(work, "data")
    os.makedirs(data)
    rng = np.random.RandomState(0)
    samples = args.batch * max(micro_counts) * 3 * args.steps
    np.save(os.path.join(data, "idx.npy"), rng.randint(0, 256, (samples, 64)).astype(np.int64))
    np.save(os.path.join(data, "label.npy"), rng.randint(0, 256, (samples, 64)).astype(np.int64))
    print("GPT: %d blocks of width %d, vocabulary 256, 64 tokens; micro-batch %d; SGD; "
          "%d cores, one thread per process" % (args.layers, args.width, args.batch, cores))
    print("%-6s %-4s %12s %12s %10s %8s  %s" % ("stages", "M", "s/step", "ideal", "bubble",
                                              "vs ideal", "planned MB per process"))
    one = {}
    for m in micro_counts:
        for s in stage_counts:
            prog = os.path.join(work, "gpt_s%d_m%d" % (s, m))
            flags = (["--pipeline-stages=%d" % s, "--micro-batches=%d" % m] if s > 1 else
                     (["--grad-accum=%d" % m] if m > 1 else []))
            run_or_exit([args.trainc, "compile", model, "--target=cpu", "--loss=cross-entropy",
                         "--class-axis=-1", "--optimizer=sgd", "--batch-size=%d" % args.batch,
                         "-o", prog] + flags)
            _, info = run_or_exit([prog, "--info"])
            memory = planned_bytes(info)
            launch = mpirun(s) if s > 1 else []

            def seconds(steps):
                return run_or_exit(launch + [prog, "--data", data, "--steps", str(steps),
                                             "--threads", "1", "--lr", "0.01"])[0]

            best = min((seconds(3 * args.steps) - seconds(args.steps)) / (2 * args.steps)
                       for _ in range(args.repeat))
            if s == 1:
                one[m] = best
            ideal = one[m] / s * (m + s - 1) / m
            bubble = (s - 1) / (m + s - 1)
            print("%-6d %-4d %12.4f %12.4f %9.0f%% %7.2fx  %s%s" % (
                s, m, best, ideal, 100 * bubble, best / ideal,
                " ".join("%.1f" % (b / 1e6) for b in memory),
                "  (%d ranks on %d cores)" % (s, cores) if s > cores else ""), flush=True)


if __name__ == "__main__":
    main()
