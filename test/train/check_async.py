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
The --data-parallel trainer's --async under mpirun (a parameter server in
rank 0, MPI one-sided):
  * on one rank, reading the server, stepping and adding the change trains
    the synchronous run's weights (135 steps, norm-wise 1e-6: the change is
    exact wherever the old and new value are within a factor of 2);
  * on two ranks it trains the digits to a held-out accuracy of at least
    0.95;
  * --staleness-bound 2: rank 1 stopped (SIGSTOP) for 2 s holds rank 0 back
    (a gap of at least 1.5 s between its logged steps); without a bound
    rank 0 trains on (no gap of 1 s);
  * a run paused at step 30 resumes from its checkpoint (the server's
    parameters at one version) and logs each step once;
  * refusals: one process, --staleness-bound alone, early stopping,
    --async-workers with ranks.
Prints one line per check and 'N passed, N failed'.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "test", "pylib"))
from loss_scaling import read_checkpoint  # noqa: E402
from checksuite import suite_main  # noqa: E402

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


MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def mpirun(ranks, cmd):
    return ["mpirun", "-np", str(ranks), "--oversubscribe", "--bind-to", "none", "--mca",
            "btl_vader_single_copy_mechanism", "none"] + cmd


def same_folders(a, b):
    return sorted(os.listdir(a)) == sorted(os.listdir(b)) and all(
        np.array_equal(np.load(os.path.join(a, n)), np.load(os.path.join(b, n)))
        for n in os.listdir(a))


def rank_pid(parent, rank):
    """The pid of mpirun's child whose MPI rank is `rank`."""
    for _ in range(200):
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open("/proc/%s/environ" % entry, "rb") as f:
                    env = f.read().split(b"\0")
                with open("/proc/%s/stat" % entry) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            if ppid == parent and b"OMPI_COMM_WORLD_RANK=%d" % rank in env:
                return int(entry)
        time.sleep(0.01)
    return None


def largest_gap(log):
    """The longest wall time between two of rank 0's consecutive steps."""
    times = [r["wall_time"] for r in map(json.loads, open(log)) if "loss" in r]
    return max(b - a for a, b in zip(times, times[1:])), len(times)


def check_ranks(check, dp, data, work):
    base = [dp, "--data", data + "/train", "--eval-data", data + "/val", "--threads", "1"]
    # One rank: the server's parameters plus each step's change are the
    # step's parameters.
    outputs = {}
    for name, extra in (("sync", []), ("async", ["--async"])):
        folder = os.path.join(work, "one-rank-" + name)
        shutil.rmtree(folder, ignore_errors=True)
        r = subprocess.run(mpirun(1, base + ["--epochs", "3", "--lr", "0.05", "--momentum", "0.9",
                                             "--save-params", folder] + extra),
                           capture_output=True, text=True, env=MPI_ENV)
        outputs[name] = (r, folder)
    ok = all(r.returncode == 0 for r, _ in outputs.values())
    worst = 0.0
    if ok:
        for name in os.listdir(outputs["sync"][1]):
            a = np.load(os.path.join(outputs["sync"][1], name)).astype(np.float64)
            b = np.load(os.path.join(outputs["async"][1], name)).astype(np.float64)
            worst = max(worst, np.linalg.norm(a - b) / max(np.linalg.norm(a), 1e-30))
    check(ok and worst <= 1e-6,
          "--async on one rank (read the server, step, add the change) trains the synchronous "
          "run's weights: 135 steps, norm-wise %.2g (at most 1e-6)" % worst)
    # Synchronous data parallelism with evaluations between epochs' ends:
    # every rank drains its steps where rank 0 evaluates, so their loss sums
    # pair up (they once crossed: MPI_ERR_TRUNCATE) and training is as
    # without the evaluations.
    trained = []
    for extra in ([], ["--eval-every", "5"]):
        folder = os.path.join(work, "dp-eval%d" % len(extra))
        shutil.rmtree(folder, ignore_errors=True)
        log = folder + ".jsonl"
        r = subprocess.run(mpirun(2, base + ["--epochs", "2", "--lr", "0.05", "--save-params",
                                             folder, "--log", log] + extra),
                           capture_output=True, text=True, env=MPI_ENV)
        evals = [x["step"] for x in map(json.loads, open(log)) if "eval_loss" in x] \
            if r.returncode == 0 else []
        trained.append((r.returncode == 0 and same_folders(folder, trained[0][1])
                        if trained else r.returncode == 0, folder, evals))
    check(trained[0][0] and trained[1][0] and
          trained[1][2] == [5, 10, 15, 20, 23, 25, 30, 35, 40, 45, 46],
          "synchronous --data-parallel with --eval-every 5 on 2 ranks evaluates after steps %s "
          "and trains the weights of the run without it" % trained[1][2])
    r = subprocess.run(mpirun(2, base + ["--epochs", "30", "--lr", "0.1", "--momentum", "0.9",
                                         "--weight-decay", "0.0005", "--async"]),
                       capture_output=True, text=True, env=MPI_ENV)
    accuracy = float(r.stdout.split()[-1]) if r.returncode == 0 else 0.0
    check(accuracy >= 0.95 and "training asynchronously over rank 0's parameter server" in
          r.stderr and "asynchronous SGD: 2 ranks" in r.stderr,
          "--async on 2 ranks trains the digits to held-out accuracy %.4f (at least 0.95)"
          % accuracy)
    # A rank stopped for 2 s: with --staleness-bound 2 rank 0 waits for it.
    gaps = {}
    for bound in ([], ["--staleness-bound", "2"]):
        log = os.path.join(work, "stale%s.jsonl" % len(bound))
        if os.path.exists(log):
            os.unlink(log)
        process = subprocess.Popen(
            mpirun(2, base + ["--epochs", "400", "--lr", "0.01", "--async", "--log", log] +
                   bound), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=MPI_ENV)
        pid = rank_pid(process.pid, 1)
        # Stopped once rank 0 has logged 50 steps (of 9200): mid-run on any
        # machine.
        for _ in range(2000):
            if os.path.exists(log) and sum(1 for _ in open(log)) >= 50:
                break
            time.sleep(0.01)
        if pid:
            os.kill(pid, signal.SIGSTOP)
            time.sleep(2.0)
            os.kill(pid, signal.SIGCONT)
        code = process.wait()
        gaps[len(bound)] = largest_gap(log) if code == 0 and pid else (0, 0)
    (free, steps), (held, _) = gaps[0], gaps[2]
    check(held >= 1.5 and 0 < free < 1.0 and steps == 9200,
          "a rank stopped for 2 s: with --staleness-bound 2 rank 0 waits for it (its longest "
          "gap between steps %.2f s), without a bound it trains on (%.2f s)" % (held, free))
    ck = os.path.join(work, "async-ck")
    shutil.rmtree(ck, ignore_errors=True)
    log = os.path.join(work, "async-paused.jsonl")
    runs = [subprocess.run(mpirun(2, base + ["--epochs", "3", "--lr", "0.05", "--async",
                                             "--checkpoint-dir", ck, "--resume=auto", "--log",
                                             log] + extra),
                           capture_output=True, text=True, env=MPI_ENV)
            for extra in (["--until-step", "30"], [])]
    steps = [r["step"] for r in map(json.loads, open(log)) if "loss" in r] if os.path.exists(
        log) else []
    check(all(r.returncode == 0 for r in runs) and steps == list(range(1, 70)) and
          "resumed from" in runs[1].stderr,
          "--async: a run paused at step 30 resumes from the checkpoint of the server's "
          "parameters; rank 0 logs steps 1-69 once")
    refusals = [
        ([dp, "--data", data + "/train", "--epochs", "1", "--lr", "0.1", "--async"], 1,
         "--async is asynchronous SGD over the ranks of a --data-parallel trainer under mpirun"),
        ([dp, "--data", data + "/train", "--epochs", "1", "--lr", "0.1", "--staleness-bound",
          "2"], 1, "--staleness-bound is a parameter of --async"),
        (base + ["--epochs", "1", "--lr", "0.1", "--async", "--early-stop-patience", "2"], 2,
         "--async is not for --early-stop-patience"),
        (base + ["--epochs", "1", "--lr", "0.1", "--async-workers", "2"], 2,
         "--async-workers is not for more than one process"),
    ]
    for cmd, ranks, expected in refusals:
        r = subprocess.run(mpirun(ranks, cmd) if ranks > 1 else cmd, capture_output=True,
                           text=True, env=MPI_ENV)
        check(r.returncode != 0 and expected in r.stderr,
              "refused: %s" % (expected))


def checks(check, trainc, work):
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
        dp = trainer + "-dp"
        r = run([trainc, "compile", model, "--target=cpu", "--batch-size=32",
                 "--loss=cross-entropy", "--optimizer=sgd", "--data-parallel", "-o", dp])
        if r.returncode == 0:
            check_ranks(check, dp, data, work)
        else:
            check(False, "compiling the data-parallel digits trainer: " + r.stderr)
        r = run([trainer + "-accum", "--data", data + "/train", "--epochs", "1", "--lr", "0.1",
                 "--async-workers", "2"])
        check(r.returncode == 1 and "--async-workers is not for --grad-accum above 1" in
              r.stderr, "refused: --async-workers with --grad-accum 2")


if __name__ == "__main__":
    sys.exit(suite_main(checks))
