#!/usr/bin/python3
"""Asynchronous SGD against synchronous data parallelism with the same workers.

Usage: bench/async_sgd.py [--trainc build/bin/trainc] [--seeds 1,2,3] [--workers 2]
                          [--target 0.95] [--models digits,mlp]

Four ways to train with W workers on W cores, each worker a batch of 32:
  * sync: a --data-parallel trainer under `mpirun -np W` (the gradients
    summed every step: one step is W batches), one thread per rank;
  * async: the same trainer with --async (rank 0's parameter server, no
    rank waiting for another), one thread per rank;
  * hogwild: one process, --async-workers W (W threads of its own);
  * one: one process at batch 32 with W threads (no workers).
Models: the digits example MLP (64-32-10 on scikit-learn's digits) and the
zoo's MLP (784-128-64-10, on the same digits scaled to 28 x 28), SGD with lr
0.1 (the MLP 0.02), momentum 0.9 and weight decay 5e-4, 30 epochs, evaluated on the held-out
digits every 1440 samples. For each: samples/s over the run (steps x the
samples of a step / the time from step 1 to the last), the time from step 1
to the first evaluation at or above --target held-out accuracy, and the
final accuracy; the median of the seeds (the trainer's --seed: data order).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def run_or_exit(cmd):
    done = subprocess.run(cmd, capture_output=True, text=True, env=ENV)
    if done.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), done.stderr[-1500:]))
    return done


def mpirun(ranks):
    return ["mpirun", "-np", str(ranks), "--oversubscribe", "--bind-to", "none", "--mca",
            "btl_vader_single_copy_mechanism", "none"]


def digits_data(work):
    data = os.path.join(work, "digits")
    run_or_exit(["/usr/bin/python3", os.path.join(ROOT, "examples", "prepare_digits.py"), data])
    big = os.path.join(work, "digits28")
    import torch
    for part in ("train", "val"):
        os.makedirs(os.path.join(big, part), exist_ok=True)
        x = torch.tensor(np.load(os.path.join(data, part, "x.npy"))).reshape(-1, 1, 8, 8)
        x = torch.nn.functional.interpolate(x, size=(28, 28), mode="bilinear",
                                            align_corners=False)
        np.save(os.path.join(big, part, "x.npy"), x.reshape(-1, 784).numpy().astype(np.float32))
        np.save(os.path.join(big, part, "label.npy"),
                np.load(os.path.join(data, part, "label.npy")))
    return data, big


def zoo_mlp(work):
    import torch
    sys.path.insert(0, os.path.join(ROOT, "test", "zoo"))
    import make_zoo
    torch.manual_seed(0)
    path = os.path.join(work, "zoo_mlp.onnx")
    torch.onnx.export(make_zoo.MLP(), torch.zeros(2, 784), path, input_names=["x"],
                      output_names=["logits"],
                      dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}},
                      opset_version=17)
    return path


def measure(cmd, log, samples_per_step, target):
    run_or_exit(cmd)
    steps, evals = [], []
    for line in open(log):
        r = json.loads(line)
        if "loss" in r:
            steps.append((r["step"], r["wall_time"]))
        elif "eval_accuracy" in r:
            evals.append((r["step"], r["eval_accuracy"]))
    wall = dict(steps)
    first = steps[0][1]
    seconds = steps[-1][1] - first
    rate = (len(steps) - 1) * samples_per_step / seconds if seconds > 0 else float("nan")
    hit = next((wall[s] - first for s, a in evals if a >= target and s in wall), float("nan"))
    return rate, hit, evals[-1][1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--trainc", default=os.path.join(ROOT, "build", "bin", "trainc"))
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--target", type=float, default=0.95)
    parser.add_argument("--models", default="digits,mlp")
    args = parser.parse_args()
    trainc = os.path.abspath(args.trainc)
    w, batch = args.workers, 32
    work = tempfile.mkdtemp(prefix="trainc-async-bench-")
    digits, digits28 = digits_data(work)
    # The zoo MLP's 784 inputs sum to about 12 times the digits' 64: a rate
    # of 0.1 diverges at batch 32 in one process.
    models = {"digits": (os.path.join(ROOT, "examples", "digits_mlp.onnx"), digits, "0.1"),
              "mlp": (zoo_mlp(work), digits28, "0.02")}
    print("%d workers on %d cores, batch %d each; target held-out accuracy %.2f; medians of "
          "seeds %s" % (w, os.cpu_count(), batch, args.target, args.seeds))
    print("%-7s %-8s %12s %16s %10s" % ("model", "how", "samples/s", "s to target", "accuracy"))
    for name in args.models.split(","):
        model, data, lr = models[name]
        plain, dp = os.path.join(work, name + "-plain"), os.path.join(work, name + "-dp")
        common = ["--target=cpu", "--batch-size=%d" % batch, "--loss=cross-entropy",
                  "--optimizer=sgd"]
        run_or_exit([trainc, "compile", model, "-o", plain] + common)
        run_or_exit([trainc, "compile", model, "-o", dp, "--data-parallel"] + common)
        every = 1440 // batch
        ways = {
            "sync": (mpirun(w) + [dp], ["--threads", "1", "--eval-every", str(every // w)],
                     batch * w),
            "async": (mpirun(w) + [dp], ["--threads", "1", "--async", "--eval-every",
                                         str(every // w)], batch * w),
            "hogwild": ([plain], ["--threads", str(w), "--async-workers", str(w),
                                  "--eval-every", str(every)], batch),
            "one": ([plain], ["--threads", str(w), "--eval-every", str(every)], batch),
        }
        for how, (launch, flags, per_step) in ways.items():
            results = []
            for seed in args.seeds.split(","):
                log = os.path.join(work, "%s-%s-%s.jsonl" % (name, how, seed))
                cmd = launch + ["--data", data + "/train", "--eval-data", data + "/val",
                                "--epochs", "30", "--lr", lr, "--momentum", "0.9",
                                "--weight-decay", "0.0005", "--seed", seed, "--log", log] + flags
                results.append(measure(cmd, log, per_step, args.target))
            rate, hit, accuracy = (statistics.median(r[i] for r in results) for i in range(3))
            print("%-7s %-8s %12.0f %16.3f %10.4f" % (name, how, rate, hit, accuracy),
                  flush=True)


if __name__ == "__main__":
    main()
