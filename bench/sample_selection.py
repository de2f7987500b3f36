#!/usr/bin/python3
"""Spending the backward on the samples that teach: steps and time to a
held-out accuracy with uniform batches, selective backprop (--select=topk,
--select=prob) and prioritized batches (--sampler=priority, mh), and what a
selection costs.

    /usr/bin/python3 bench/sample_selection.py [--trainc build/bin/trainc] [--out DIR] [--seeds 3]

Two tasks on scikit-learn's digits (examples/prepare_digits.py), the
digits MLP, SGD with lr 0.05 and momentum 0.9, batch 32, evaluated every
10 steps on the held-out set:
  * digits: the example's 1437 training samples;
  * rare: classes 8 and 9 kept at 1 sample in 9 (hard samples are rare),
    evaluated on the balanced held-out set.
For each seed and way: the first step whose held-out accuracy reaches the
task's target, and the training time to it (the log's wall time from step 1,
so set-up is left out; evaluations are in it, alike for every way), or the
best accuracy when the target is not reached in the steps given. The
selective ways compile --select-batch=128 (4 candidates per trained sample);
the priority ways compile --sample-weight-norm=mean (prioritized experience
replay's (w * l).mean()).
Then the cost: seconds per step of uniform at batch 32 and at batch 128,
and of --select=topk (a selection forward over 128 and a step at 32), each
the best of 3 runs of 3000 steps in file order, timed by the log from step
200 on.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import run_or_exit as run  # noqa: E402

BATCH, CANDIDATES, STEPS, EVERY = 32, 128, 600, 10
WAYS = {
    "uniform": ("plain", []),
    "topk": ("select", ["--select", "topk"]),
    "prob": ("select", ["--select", "prob", "--select-beta", "2"]),
    "priority": ("mean", ["--sampler", "priority"]),
    "mh": ("mean", ["--sampler", "mh"]),
}
TARGETS = {"digits": 0.95, "rare": 0.90}


def make_rare(data, out):
    """Classes 8 and 9 kept at 1 sample in 9."""
    x = np.load(os.path.join(data, "train", "x.npy"))
    y = np.load(os.path.join(data, "train", "label.npy"))
    rng = np.random.RandomState(0)
    keep = (y < 8) | (rng.rand(len(y)) < 1 / 9)
    os.makedirs(out, exist_ok=True)
    np.save(os.path.join(out, "x.npy"), x[keep])
    np.save(os.path.join(out, "label.npy"), y[keep])
    return int(keep.sum())


def to_target(log, target):
    """(step, seconds from step 1) of the first evaluation at or above the
    target, or (None, best accuracy)."""
    records = [json.loads(line) for line in open(log)]
    walls = {r["step"]: r["wall_time"] for r in records if "wall_time" in r}
    best = 0.0
    for r in records:
        if "eval_accuracy" in r:
            best = max(best, r["eval_accuracy"])
            if r["eval_accuracy"] >= target:
                return r["step"], walls[r["step"]] - walls[1]
    return None, best


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trainc", default=os.path.join(ROOT, "build", "bin", "trainc"))
    parser.add_argument("--out", default="/tmp/trainc-sample-selection")
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    data = os.path.join(args.out, "digits-data")
    if not os.path.isdir(os.path.join(data, "train")):
        run(["/usr/bin/python3", os.path.join(ROOT, "examples", "prepare_digits.py"), data])
    rare = os.path.join(args.out, "rare-train")
    print("rare: %d training samples" % make_rare(data, rare))
    model = os.path.join(ROOT, "examples", "digits_mlp.onnx")
    progs = {}
    for kind, flags in (("plain", []), ("select", ["--select-batch=%d" % CANDIDATES]),
                        ("mean", ["--sample-weight-norm=mean"]),
                        ("wide", [])):
        progs[kind] = os.path.join(args.out, "digits_" + kind)
        batch = CANDIDATES if kind == "wide" else BATCH
        run([args.trainc, "compile", model, "--target=cpu", "--batch-size=%d" % batch,
             "--loss=cross-entropy", "--optimizer=sgd", "-o", progs[kind]] + flags)
    tasks = {"digits": os.path.join(data, "train"), "rare": rare}
    print("%-8s %-9s %s" % ("task", "way", "  ".join("seed %d: step, s (or best acc)" % s
                                                      for s in range(args.seeds))))
    for task, train in tasks.items():
        for way, (kind, flags) in WAYS.items():
            cells, steps, seconds = [], [], []
            for seed in range(args.seeds):
                log = os.path.join(args.out, "%s-%s-%d.jsonl" % (task, way, seed))
                run([progs[kind], "--data", train, "--eval-data", os.path.join(data, "val"),
                     "--steps", str(STEPS), "--eval-every", str(EVERY), "--lr", "0.05",
                     "--momentum", "0.9", "--seed", str(seed), "--log", log] + flags)
                step, value = to_target(log, TARGETS[task])
                if step is None:
                    cells.append("not reached (best %.3f)" % value)
                else:
                    cells.append("%4d, %.3f s" % (step, value))
                    steps.append(step)
                    seconds.append(value)
            summary = ("median %d steps, %.3f s" % (statistics.median(steps),
                                                      statistics.median(seconds))
                       if len(steps) == args.seeds else "%d of %d seeds reach %.2f"
                       % (len(steps), args.seeds, TARGETS[task]))
            print("%-8s %-9s %s  | %s" % (task, way, "  ".join(cells), summary), flush=True)
    # The cost of a selection, in file order: the log's wall time from step
    # 200 to the last, so that start-up and warm-up are left out.
    costs = {}
    for name, prog, flags in (("uniform at 32", progs["plain"], []),
                              ("uniform at 128", progs["wide"], []),
                              ("topk (128 -> 32)", progs["select"], ["--select", "topk"])):
        best = float("inf")
        for _ in range(3):
            log = os.path.join(args.out, "cost.jsonl")
            run([prog, "--data", os.path.join(data, "train"), "--steps", "3000",
                 "--no-shuffle", "--lr", "0.05", "--log", log])
            walls = [json.loads(line)["wall_time"] for line in open(log)]
            best = min(best, (walls[-1] - walls[199]) / (len(walls) - 200))
        costs[name] = best
    base = costs["uniform at 32"]
    for name, seconds in costs.items():
        print("%-17s %.1f us per step (%.2fx uniform at 32)" % (name, seconds * 1e6,
                                                              seconds / base))
    print("the selection forward over %d candidates: about %.0f%% of a topk step"
          % (CANDIDATES, 100 * max(0.0, costs["topk (128 -> 32)"] - base) /
             costs["topk (128 -> 32)"]))


if __name__ == "__main__":
    main()
