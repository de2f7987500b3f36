#!/usr/bin/python3
"""Population-based training against random search with the same compute.

Usage: bench/pbt.py [--trainc build/bin/trainc] [--seeds 1,2,3] [--population 8]
                    [--parallel 2] [--tasks digits,gpt]

For each task and seed, `trainc pbt` trains a population of N members
(truncation 0.25, perturb 0.8/1.25) and random search trains the same N
first draws (read from the PBT run's lineage) for as many steps each,
without exploiting: the same steps in all, the same trainer, data order
(the trainer's --seed) and thread count. Each side's result is its best
member's held-out metric at the end of training.
  * digits: the digits example MLP (SGD), 20 epochs of 45 steps, ready every
    45 steps; lr log-uniform in [1e-3, 1], momentum uniform in [0, 0.95];
    eval_accuracy on the 360 held-out digits.
  * gpt: the zoo's GPT (vocabulary 64, 16 tokens, 2 blocks of width 32;
    AdamW, batch 32) as a character model of the licence texts in
    /usr/share/common-licenses (the 63 commonest bytes and one for the rest;
    the last tenth held out); 600 steps, ready every 50; lr log-uniform in
    [1e-4, 3e-2], weight decay log-uniform in [1e-4, 0.3]; eval_loss.
Prints one row per task and seed and the means; the wall times are for the
whole population on this machine (--parallel trainers at once, one thread
each).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "test", "zoo"))


def run_or_exit(cmd):
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), done.stderr[-1500:]))
    return done


def digits_task(trainc, work):
    trainer = os.path.join(work, "digits-trainer")
    run_or_exit([trainc, "compile", os.path.join(ROOT, "examples", "digits_mlp.onnx"),
                 "--target=cpu", "--batch-size=32", "--loss=cross-entropy", "--optimizer=sgd",
                 "-o", trainer])
    data = os.path.join(work, "digits")
    run_or_exit(["/usr/bin/python3", os.path.join(ROOT, "examples", "prepare_digits.py"), data])
    return dict(name="digits", trainer=trainer, metric="eval_accuracy", ready=45,
                hypers=["lr=log:1e-3,1", "momentum=lin:0,0.95"],
                flags=["--data", data + "/train", "--eval-data", data + "/val", "--epochs", "20"])


def text_tokens():
    """The licence texts as tokens 0..63: the 63 commonest bytes, 63 for
    the rest."""
    folder = "/usr/share/common-licenses"
    blob = b"".join(open(os.path.join(folder, name), "rb").read()
                    for name in sorted(os.listdir(folder))
                    if os.path.isfile(os.path.join(folder, name)))
    raw = np.frombuffer(blob, np.uint8)
    common = np.argsort(-np.bincount(raw, minlength=256), kind="stable")[:63]
    table = np.full(256, 63, np.int64)
    table[common] = np.arange(63)
    return table[raw]


def gpt_task(trainc, work):
    import torch
    import make_zoo
    class WithLoss(torch.nn.Module):
        """The GPT and its mean next-token cross-entropy: the trainer
        evaluates a model's own loss (labels [N, 16] are an input)."""

        def __init__(self):
            super().__init__()
            self.gpt = make_zoo.GPT()

        def forward(self, idx, targets):
            logits = self.gpt(idx)
            return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                     targets.reshape(-1))

    torch.manual_seed(0)
    model = WithLoss()
    model.train()
    path = os.path.join(work, "gpt.onnx")
    example = (torch.zeros(2, 16, dtype=torch.long), torch.zeros(2, 16, dtype=torch.long))
    torch.onnx.export(model, example, path, input_names=["idx", "targets"],
                      output_names=["loss"],
                      dynamic_axes={"idx": {0: "batch"}, "targets": {0: "batch"}},
                      opset_version=17, do_constant_folding=True,
                      training=torch.onnx.TrainingMode.TRAINING)
    trainer = os.path.join(work, "gpt-trainer")
    run_or_exit([trainc, "compile", path, "--target=cpu", "--batch-size=32", "--loss=output",
                 "--optimizer=adamw", "-o", trainer])
    tokens = text_tokens()
    windows = np.lib.stride_tricks.sliding_window_view(tokens, 17)[::8]
    split = len(windows) * 9 // 10
    for name, part in (("train", windows[:split]), ("val", windows[split:])):
        folder = os.path.join(work, "text", name)
        os.makedirs(folder, exist_ok=True)
        np.save(os.path.join(folder, "idx.npy"), np.ascontiguousarray(part[:, :16]))
        np.save(os.path.join(folder, "targets.npy"), np.ascontiguousarray(part[:, 1:]))
    data = os.path.join(work, "text")
    return dict(name="gpt", trainer=trainer, metric="eval_loss", ready=50,
                hypers=["lr=log:1e-4,3e-2", "weight_decay=log:1e-4,0.3"],
                flags=["--data", data + "/train", "--eval-data", data + "/val", "--steps", "600"])


def last_metric(log, key):
    value = None
    for line in open(log):
        record = json.loads(line)
        if key in record:
            value = record[key]
    return value


def random_search(task, start_hypers, seed, parallel, folder):
    """Each first draw trained to the end without exploiting: the best final
    metric."""
    os.makedirs(folder, exist_ok=True)
    jobs, scores = [], []
    for m, hypers in enumerate(start_hypers):
        flags = []
        for name, value in sorted(hypers.items()):
            flags += ["--" + name.replace("_", "-"), "%.9g" % value]
        log = os.path.join(folder, "member%02d.jsonl" % m)
        jobs.append(([task["trainer"]] + task["flags"] + flags +
                     ["--seed", str(seed), "--threads", "1", "--log", log], log))
    running = []
    for cmd, log in jobs:
        while len(running) >= parallel:
            running.pop(0).wait()
        running.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL))
    for process in running:
        process.wait()
    for _, log in jobs:
        value = last_metric(log, task["metric"])
        scores.append(value if value is not None else float("nan"))
    return scores


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--trainc", default=os.path.join(ROOT, "build", "bin", "trainc"))
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--population", type=int, default=8)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--tasks", default="digits,gpt")
    args = parser.parse_args()
    trainc = os.path.abspath(args.trainc)
    work = tempfile.mkdtemp(prefix="trainc-pbt-bench-")
    builders = {"digits": digits_task, "gpt": gpt_task}
    print("population %d, %d trainers at once (one thread each), %d cores"
          % (args.population, args.parallel, os.cpu_count()))
    print("%-7s %-5s %-14s %12s %12s %9s %9s" % ("task", "seed", "metric", "PBT", "random",
                                                  "PBT s", "random s"))
    for name in args.tasks.split(","):
        task = builders[name](trainc, work)
        lower = task["metric"] == "eval_loss"
        best = min if lower else max
        rows = []
        for seed in [int(s) for s in args.seeds.split(",")]:
            run_dir = os.path.join(work, "%s-pbt-%d" % (name, seed))
            cmd = [trainc, "pbt", "--population", str(args.population), "--ready-every",
                   str(task["ready"]), "--metric", task["metric"], "--seed", str(seed),
                   "--parallel", str(args.parallel), "--dir", run_dir]
            for hyper in task["hypers"]:
                cmd += ["--hyper", hyper]
            started = time.time()
            run_or_exit(cmd + ["--", task["trainer"]] + task["flags"] +
                        ["--seed", str(seed), "--threads", "1"])
            pbt_seconds = time.time() - started
            pbt_best = json.load(open(os.path.join(run_dir, "best.json")))["score"]
            lineage = [json.loads(line) for line in open(os.path.join(run_dir, "lineage.jsonl"))]
            start = [e["hypers"] for e in sorted((e for e in lineage if e["event"] == "start"),
                                                 key=lambda e: e["member"])]
            started = time.time()
            scores = random_search(task, start, seed, args.parallel,
                                   os.path.join(work, "%s-random-%d" % (name, seed)))
            random_seconds = time.time() - started
            finite = [s for s in scores if s == s]
            random_best = best(finite) if finite else float("nan")
            rows.append((pbt_best, random_best))
            print("%-7s %-5d %-14s %12.4f %12.4f %9.1f %9.1f" % (
                name, seed, task["metric"], pbt_best, random_best, pbt_seconds, random_seconds),
                flush=True)
        pbt_mean = np.mean([r[0] for r in rows])
        random_mean = np.mean([r[1] for r in rows])
        wins = sum((r[0] < r[1]) if lower else (r[0] > r[1]) for r in rows)
        print("%-7s %-5s %-14s %12.4f %12.4f   PBT better in %d of %d (%s is better)" % (
            name, "mean", task["metric"], pbt_mean, random_mean, wins, len(rows),
            "lower" if lower else "higher"), flush=True)


if __name__ == "__main__":
    main()
