#!/usr/bin/python3
"""Asynchronous SGD: the trainer's --async-workers (Hogwild! threads of one
process).

Usage: check_async.py TRAINC WORKDIR

On the digits example (examples/digits_mlp.onnx, SGD, batch 32):
  * --async-workers 2 with the learning rate 0 (nothing changes, so the
    workers' races do not matter): every step's loss and per-sample loss
    statistics, in step order, and the evaluations equal a plain run's bit
    for bit (each worker's own batch, inputs, hyperparameters and arena;
    one thread per worker against --threads 1);
  * with lr 0.1 and momentum 0.9 the workers' racing updates still train:
    30 epochs reach a held-out accuracy of at least 0.95 (a plain run:
    about 0.978; a lost update path stays near 0.1);
  * checkpoints and --save-params see one state (the lanes drained):
    the last checkpoint's parameters equal the saved ones byte for byte; a
    run paused (--until-step) and resumed logs every step once;
  * refusals: averaging, --sampler, --lr=auto, --grad-accum above 1.
Prints one line per check and 'N passed, N failed'.
"""

import json
import os
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "test", "pylib"))
from loss_scaling import read_checkpoint  # noqa: E402

TIMING = ("wall_time", "samples_per_s")


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def log_records(path):
    with open(path) as f:
        return [{k: v for k, v in json.loads(line).items() if k not in TIMING} for line in f]


def check_workers(check, trainer, data, work):
    base = [trainer, "--data", data + "/train", "--eval-data", data + "/val"]
    plain, lanes = os.path.join(work, "plain.jsonl"), os.path.join(work, "lanes.jsonl")
    a = run(base + ["--epochs", "2", "--lr", "0", "--threads", "1", "--log", plain])
    b = run(base + ["--epochs", "2", "--lr", "0", "--threads", "2", "--async-workers", "2",
                    "--log", lanes])
    ok = a.returncode == 0 and b.returncode == 0
    check(ok and "2 asynchronous workers (Hogwild!" in b.stderr and
          log_records(plain) == log_records(lanes),
          "--async-workers 2 at lr 0: the 90 steps' losses and the evaluations equal a plain "
          "run's bit for bit, in step order")
    r = run(base + ["--epochs", "30", "--lr", "0.1", "--momentum", "0.9", "--weight-decay",
                    "0.0005", "--async-workers", "2", "--threads", "2"])
    accuracy = float(r.stdout.split()[-1]) if r.returncode == 0 else 0.0
    check(accuracy >= 0.95,
          "--async-workers 2 trains the digits to held-out accuracy %.4f (at least 0.95)"
          % accuracy)
    ck, params = os.path.join(work, "ck"), os.path.join(work, "params")
    shutil.rmtree(ck, ignore_errors=True)
    shutil.rmtree(params, ignore_errors=True)
    log = os.path.join(work, "paused.jsonl")
    first = run(base + ["--epochs", "3", "--lr", "0.05", "--async-workers", "2",
                        "--checkpoint-dir", ck, "--resume=auto", "--until-step", "70",
                        "--log", log])
    second = run(base + ["--epochs", "3", "--lr", "0.05", "--async-workers", "2",
                         "--checkpoint-dir", ck, "--resume=auto", "--log", log,
                         "--save-params", params])
    steps = [r["step"] for r in log_records(log) if "loss" in r]
    tensors, manifest = read_checkpoint(ck)
    same = second.returncode == 0 and manifest["step"] == "135" and all(
        np.array_equal(np.frombuffer(tensors["param/" + name[:-4]], np.float32),
                       np.load(os.path.join(params, name)).reshape(-1))
        for name in os.listdir(params))
    check(first.returncode == 0 and steps == list(range(1, 136)) and same,
          "--async-workers: a run paused at step 70 and resumed logs steps 1-135 once; its "
          "last checkpoint's parameters equal --save-params byte for byte")
    refusals = [(["--ema-decay", "0.99"], "--ema-decay or --swa-start"),
                (["--sampler", "priority"], "--sampler or --select"),
                (["--lr", "auto"], "--find-lr or --lr=auto")]
    for extra, expected in refusals:
        r = run(base[:3] + ["--epochs", "1", "--async-workers", "2"] +
                (extra if "auto" in extra else ["--lr", "0.1"] + extra))
        check(r.returncode == 1 and "--async-workers is not for " + expected in r.stderr,
              "refused: --async-workers with %s (%s)"
              % (" ".join(extra), r.stderr.strip().splitlines()[-1:]))


def main():
    trainc, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    os.makedirs(work, exist_ok=True)
    results = []

    def check(ok, what):
        results.append(bool(ok))
        print(("PASS " if ok else "FAIL ") + what, flush=True)

    model = os.path.join(ROOT, "examples", "digits_mlp.onnx")
    trainer = os.path.join(work, "trainer")
    r = run([trainc, "compile", model, "--target=cpu", "--batch-size=32",
             "--loss=cross-entropy", "--optimizer=sgd", "-o", trainer])
    accum = run([trainc, "compile", model, "--target=cpu", "--batch-size=32",
                 "--loss=cross-entropy", "--optimizer=sgd", "--grad-accum=2", "-o",
                 trainer + "-accum"])
    data = os.path.join(work, "digits")
    run(["/usr/bin/python3", os.path.join(ROOT, "examples", "prepare_digits.py"), data])
    if r.returncode != 0 or accum.returncode != 0:
        check(False, "compiling the digits trainers: " + r.stderr + accum.stderr)
    else:
        check_workers(check, trainer, data, work)
        r = run([trainer + "-accum", "--data", data + "/train", "--epochs", "1", "--lr", "0.1",
                 "--async-workers", "2"])
        check(r.returncode == 1 and "--async-workers is not for --grad-accum above 1" in
              r.stderr, "refused: --async-workers with --grad-accum 2")
    passed = sum(results)
    print("%d passed, %d failed" % (passed, len(results) - passed))
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
