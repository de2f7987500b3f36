#!/usr/bin/python3
"""What averaged weights buy on the digits example, and what they cost.

    /usr/bin/python3 bench/averaging.py [--trainc build/bin/trainc] [--out DIR] [--seeds 3]

Trains the digits MLP with the README's settings (SGD, lr 0.1, momentum 0.9,
weight decay 5e-4, 30 epochs) three ways for each seed, evaluating the
held-out set after every epoch: plain; with SWA (--swa-start at two thirds
of the run, an average every epoch, SWALR to 0.05), evaluated on the
average; with EMA (--ema-decay 0.998), evaluated on the average. Prints the
final held-out accuracy and loss of each run, their means over the seeds,
and the steps per second of each (the averaging update's cost, side by side
in the same run). DIR/averaging.png draws the first seed's three logs.
Then the update's cost where it can be seen: the zoo's GPT (AdamW, batch 4)
and ResNet-18 (SGD, batch 8) for a few steps plain, with --ema-decay and
with SWA from step 0, alternated 3 times; prints the median of the runs'
mean seconds per step and the ratio to plain.
"""
import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import run_or_exit as run  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trainc", default=os.path.join(ROOT, "build", "bin", "trainc"))
    parser.add_argument("--out", default="/tmp/trainc-averaging")
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    data = os.path.join(args.out, "digits-data")
    if not os.path.isdir(os.path.join(data, "train")):
        run(["/usr/bin/python3", os.path.join(ROOT, "examples", "prepare_digits.py"), data])
    prog = os.path.join(args.out, "digits")
    run([args.trainc, "compile", os.path.join(ROOT, "examples", "digits_mlp.onnx"),
         "--target=cpu", "--batch-size=32", "--loss=cross-entropy", "--optimizer=sgd",
         "-o", prog])
    common = [prog, "--data", os.path.join(data, "train"), "--eval-data",
              os.path.join(data, "val"), "--epochs", "30", "--lr", "0.1", "--momentum", "0.9",
              "--weight-decay", "0.0005"]
    steps_per_epoch = None
    results = {}
    for seed in range(args.seeds):
        if steps_per_epoch is None:
            log = os.path.join(args.out, "probe.jsonl")
            run(common[:3] + ["--epochs", "1", "--log", log])
            steps_per_epoch = max(json.loads(l).get("step", 0) for l in open(log))
        start = 20 * steps_per_epoch
        kinds = {
            "plain": [],
            "swa": ["--swa-start", str(start), "--swa-every", str(steps_per_epoch), "--swa-lr",
                    "0.05", "--eval-averaged"],
            "ema": ["--ema-decay", "0.998", "--eval-averaged"],
        }
        for kind, flags in kinds.items():
            log = os.path.join(args.out, "%s-%d.jsonl" % (kind, seed))
            began = time.time()
            run(common + flags + ["--seed", str(seed), "--log", log])
            seconds = time.time() - began
            records = [json.loads(line) for line in open(log)]
            last = [r for r in records if "eval_accuracy" in r][-1]
            steps = max(r["step"] for r in records if "loss" in r)
            rate = [r["samples_per_s"] for r in records if "samples_per_s" in r]
            results.setdefault(kind, []).append(
                (last["eval_accuracy"], last["eval_loss"], sorted(rate)[len(rate) // 2]))
            print("seed %d %-5s: held-out accuracy %.4f, loss %.4f after %d steps (%.1f s, "
                  "median %.0f samples/s)" % (seed, kind, last["eval_accuracy"],
                                              last["eval_loss"], steps, seconds,
                                              sorted(rate)[len(rate) // 2]), flush=True)
    for kind, rows in results.items():
        n = len(rows)
        print("%-5s over %d seeds: mean held-out accuracy %.4f, mean loss %.4f, median samples/s "
              "%.0f" % (kind, n, sum(r[0] for r in rows) / n, sum(r[1] for r in rows) / n,
                        sorted(r[2] for r in rows)[n // 2]))
    run([args.trainc, "plot"] + [os.path.join(args.out, "%s-0.jsonl" % k) for k in results] +
        ["-o", os.path.join(args.out, "averaging.png"), "--title",
         "digits MLP: plain, SWA and EMA (evaluated on the averages)"])
    update_cost(args.trainc, args.out)


def step_seconds(words):
    """The mean seconds per step of a run but its first (the log's wall
    times)."""
    log = words[words.index("--log") + 1]
    run(words)
    times = [json.loads(line)["wall_time"] for line in open(log)]
    return (times[-1] - times[1]) / (len(times) - 2)  # the first step warms up


def update_cost(trainc, out):
    sys.path.insert(0, os.path.join(ROOT, "test", "train"))
    from check_optimizers import zoo_case  # noqa: E402 (exports the zoo models)
    for name, optimizer, batch, steps in (("gpt", "adamw", 4, 200), ("resnet18", "sgd", 8, 8)):
        case = zoo_case(out, name)
        prog = os.path.join(out, name)
        run([trainc, "compile", case["path"], "--target=cpu", "--batch-size=%d" % batch,
             "--loss=cross-entropy", "--optimizer=" + optimizer, "-o", prog] + case["loss_flags"])
        params = sum(v.size for v in case["initial"].values())
        kinds = {"plain": [], "ema": ["--ema-decay", "0.999"], "swa": ["--swa-start", "0"]}
        seconds = {k: [] for k in kinds}
        for _ in range(3):
            for kind, flags in kinds.items():
                log = os.path.join(out, "%s-%s.jsonl" % (name, kind))
                seconds[kind].append(step_seconds([prog, "--data", case["data"], "--steps",
                                                   str(steps), "--log", log] + flags))
        plain = sorted(seconds["plain"])[1]
        print("%s (%d parameters): %.4f s per step plain; " % (name, params, plain) + ", ".join(
            "%s %.4f s (x%.3f)" % (k, sorted(v)[1], sorted(v)[1] / plain)
            for k, v in seconds.items() if k != "plain"), flush=True)


if __name__ == "__main__":
    main()
