#!/usr/bin/python3
"""K-FAC against SGD with momentum and AdamW: steps and time to a target.

Usage: bench/kfac.py [--trainc build/bin/trainc] [--seeds 1,2,3] [--target 0.95]
                     [--models digits,lenet] [--epochs 20]

Each model is compiled three times (--optimizer=sgd, adamw, kfac) at batch
32 and trained on scikit-learn's digits (LeNet: the digits scaled to
28 x 28, the zoo LeNet's input), evaluated on the 360 held-out digits every
15 steps. For each optimizer: the steps and the seconds (from step 1) to
the first evaluation at or above --target held-out accuracy, and the final
accuracy; the median over the seeds (data order). Settings: SGD lr 0.1
(LeNet 0.05), momentum 0.9, weight decay 5e-4; AdamW lr 1e-3, weight decay
1e-2; K-FAC the same lr and momentum as SGD, weight decay 5e-4, damping
1e-3, KL clip 1e-3, inverses every 10 steps. One thread.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from async_sgd import digits_data, run_or_exit  # noqa: E402


def lenet(work):
    import torch
    sys.path.insert(0, os.path.join(ROOT, "test", "zoo"))
    import make_zoo
    torch.manual_seed(0)
    path = os.path.join(work, "lenet.onnx")
    torch.onnx.export(make_zoo.LeNet(), torch.zeros(2, 1, 28, 28), path, input_names=["x"],
                      output_names=["logits"],
                      dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}},
                      opset_version=17)
    return path


def as_images(folder, out):
    import numpy as np
    for part in ("train", "val"):
        os.makedirs(os.path.join(out, part), exist_ok=True)
        x = np.load(os.path.join(folder, part, "x.npy"))
        np.save(os.path.join(out, part, "x.npy"), x.reshape(-1, 1, 28, 28))
        np.save(os.path.join(out, part, "label.npy"),
                np.load(os.path.join(folder, part, "label.npy")))
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--trainc", default=os.path.join(ROOT, "build", "bin", "trainc"))
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--target", type=float, default=0.95)
    parser.add_argument("--models", default="digits,lenet")
    parser.add_argument("--epochs", type=int, default=20)
    args = parser.parse_args()
    trainc = os.path.abspath(args.trainc)
    work = tempfile.mkdtemp(prefix="trainc-kfac-bench-")
    digits, digits28 = digits_data(work)
    models = {"digits": (os.path.join(ROOT, "examples", "digits_mlp.onnx"), digits, "0.1"),
              "lenet": (lenet(work), as_images(digits28, os.path.join(work, "images")), "0.05")}
    print("batch 32, one thread; target held-out accuracy %.2f; medians of seeds %s"
          % (args.target, args.seeds))
    print("%-7s %-7s %14s %16s %10s %12s" % ("model", "opt", "steps to target",
                                             "s to target", "accuracy", "s per step"))
    for name in args.models.split(","):
        model, data, lr = models[name]
        settings = {
            "sgd": ["--lr", lr, "--momentum", "0.9", "--weight-decay", "0.0005"],
            "adamw": ["--lr", "0.001", "--weight-decay", "0.01"],
            "kfac": ["--lr", lr, "--momentum", "0.9", "--weight-decay", "0.0005",
                     "--kfac-inverse-every", "10"],
        }
        for opt, flags in settings.items():
            prog = os.path.join(work, "%s-%s" % (name, opt))
            run_or_exit([trainc, "compile", model, "-o", prog, "--target=cpu", "--batch-size=32",
                         "--loss=cross-entropy", "--optimizer=" + opt])
            results = []
            for seed in args.seeds.split(","):
                log = os.path.join(work, "%s-%s-%s.jsonl" % (name, opt, seed))
                run_or_exit([prog, "--data", data + "/train", "--eval-data", data + "/val",
                             "--epochs", str(args.epochs), "--eval-every", "15", "--threads",
                             "1", "--seed", seed, "--log", log] + flags)
                steps, evals = {}, []
                for line in open(log):
                    r = json.loads(line)
                    if "loss" in r:
                        steps[r["step"]] = r["wall_time"]
                    elif "eval_accuracy" in r:
                        evals.append((r["step"], r["eval_accuracy"]))
                first = steps[min(steps)]
                hit = next(((s, steps[s] - first) for s, a in evals
                            if a >= args.target and s in steps), (float("nan"),) * 2)
                per_step = (steps[max(steps)] - first) / max(1, len(steps) - 1)
                results.append((hit[0], hit[1], evals[-1][1], per_step))
            med = [statistics.median(r[i] for r in results) for i in range(4)]
            print("%-7s %-7s %14.0f %16.3f %10.4f %12.5f" % (name, opt, *med), flush=True)


if __name__ == "__main__":
    main()
