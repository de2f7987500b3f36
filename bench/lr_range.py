#!/usr/bin/python3
"""The LR range test on the digits example, and what its suggestion buys.

    /usr/bin/python3 bench/lr_range.py [--trainc build/bin/trainc] [--out DIR]

1. Runs `--find-lr` on the digits MLP (SGD, momentum at 1cycle's peak,
   0.85) and prints the suggested rate; DIR/digits-range.png is its curve.
2. Trains the digits MLP three ways, each with held-out accuracy after every
   epoch: the README's settings (lr 0.1, momentum 0.9, weight decay 5e-4,
   constant, 30 epochs), `--lr=auto --lr-schedule onecycle` for 30 epochs,
   and the same for 10 epochs; prints each run's final and best accuracy and
   the step of its best, and DIR/digits-runs.png draws the three logs.
3. Runs `--find-lr` on the zoo's GPT (random tokens: the loss's descent,
   not a language model) and prints its suggestion; DIR/gpt-range.png.
Everything runs on the CPU target in a minute or two.
"""
import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import run_or_exit as run  # noqa: E402


def suggestion(curve):
    return [json.loads(line) for line in open(curve)][-1]


def digits(trainc, out):
    data = os.path.join(out, "digits-data")
    if not os.path.isdir(os.path.join(data, "train")):
        run(["/usr/bin/python3", os.path.join(ROOT, "examples", "prepare_digits.py"), data])
    prog = os.path.join(out, "digits")
    run([trainc, "compile", os.path.join(ROOT, "examples", "digits_mlp.onnx"), "--target=cpu",
         "--batch-size=32", "--loss=cross-entropy", "--optimizer=sgd", "-o", prog])
    common = [prog, "--data", os.path.join(data, "train"), "--eval-data",
              os.path.join(data, "val")]
    run(common[:3] + ["--find-lr", "--lr-schedule", "onecycle", "--find-lr-out",
                      os.path.join(out, "digits-range")])
    found = suggestion(os.path.join(out, "digits-range.jsonl"))
    print("digits: LR range test over %d steps (%s): suggested lr %.4g (lowest loss / 10), "
          "steepest descent at %.4g; curve in %s"
          % (found["steps"], found["stopped"], found["suggested_lr"], found["steepest_lr"],
             os.path.join(out, "digits-range.png")))
    runs = {
        "readme": ["--epochs", "30", "--lr", "0.1", "--momentum", "0.9", "--weight-decay",
                   "0.0005"],
        "auto-onecycle-30": ["--epochs", "30", "--lr=auto", "--lr-schedule", "onecycle",
                             "--weight-decay", "0.0005"],
        "auto-onecycle-10": ["--epochs", "10", "--lr=auto", "--lr-schedule", "onecycle",
                             "--weight-decay", "0.0005"],
    }
    logs = []
    for name, flags in runs.items():
        log = os.path.join(out, "digits-%s.jsonl" % name)
        run(common + flags + ["--log", log, "--find-lr-out", os.path.join(out, "range-" + name)]
            if "--lr=auto" in flags else common + flags + ["--log", log])
        records = [json.loads(line) for line in open(log)]
        evals = [r for r in records if "eval_accuracy" in r]
        best = max(evals, key=lambda r: r["eval_accuracy"])
        print("digits %-17s %4d steps: held-out accuracy %.4f at the end, best %.4f after step "
              "%d; peak lr %.4g" % (name, max(r["step"] for r in records if "loss" in r),
                                     evals[-1]["eval_accuracy"], best["eval_accuracy"],
                                     best["step"], max(r["lr"] for r in records if "lr" in r)))
        logs.append(log)
    run([trainc, "plot"] + logs + ["-o", os.path.join(out, "digits-runs.png"), "--title",
                                   "digits MLP: README settings against --lr=auto with 1cycle"])


def gpt(trainc, out):
    sys.path.insert(0, os.path.join(ROOT, "test", "train"))
    from check_optimizers import zoo_case  # noqa: E402 (exports the zoo GPT)
    case = zoo_case(out, "gpt")
    prog = os.path.join(out, "gpt")
    run([trainc, "compile", case["path"], "--target=cpu", "--batch-size=4",
         "--loss=cross-entropy", "--class-axis=-1", "--optimizer=adamw", "-o", prog])
    run([prog, "--data", case["data"], "--find-lr", "--find-lr-steps", "100",
         "--find-lr-out", os.path.join(out, "gpt-range")])
    found = suggestion(os.path.join(out, "gpt-range.jsonl"))
    print("zoo gpt (AdamW, random tokens): LR range test over %d steps (%s): suggested lr "
          "%.4g, steepest descent at %.4g; curve in %s"
          % (found["steps"], found["stopped"], found["suggested_lr"], found["steepest_lr"],
             os.path.join(out, "gpt-range.png")))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trainc", default=os.path.join(ROOT, "build", "bin", "trainc"))
    parser.add_argument("--out", default="/tmp/trainc-lr-range")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    digits(args.trainc, args.out)
    gpt(args.trainc, args.out)


if __name__ == "__main__":
    main()
