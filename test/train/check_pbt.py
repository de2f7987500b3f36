#!/usr/bin/python3
"""Population-based training (trainc pbt) and the trainer's --until-step.

Usage: check_pbt.py TRAINC WORKDIR

On the digits example (examples/digits_mlp.onnx, SGD, batch 32, 45 steps an
epoch; trainers run with --threads 1, so runs are bit for bit repeatable):
  * --until-step: a run paused at steps 30 and 70 and resumed twice trains
    the bytes of the uninterrupted run (--save-params), logs its steps, and
    evaluates at each pause; misuse is refused; a diverging loss ends the
    trainer with exit status 3.
  * exploit and explore: after one round, every copied member's checkpoint
    equals its parent's byte for byte (parameters, optimizer state,
    position), and its hyperparameters are the parent's times 0.8 or 1.25
    (or clipped to the searched range); the next round trains the copy
    with those values (a trainer run by hand from the copy with the
    member's flags writes the same bytes).
  * resumable and repeatable: the run stopped after rounds 1 and 2
    (--stop-after-rounds) and continued, the run in one go with
    --parallel 1, and a run whose driver is killed (SIGKILL) at 5 random
    moments and started again all end with the same state, lineage and
    member checkpoints, byte for byte.
  * --hosts localhost:2: the members as `mpirun -np 1 --host` jobs end
    the same, byte for byte;
  * the lineage's records, best.json (the best final score), --export (the
    best member's parameters), trainc plot of the lineage (a PNG); a
    member that diverges is replaced by a copy; flags the driver owns or
    searches are refused in the trainer's flags, as are bad ranges, a
    folder of other files, a second driver on the same folder and a rerun
    with other options.
Prints one line per check and 'N passed, N failed'.
"""

import fcntl
import json
import os
import random
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


def run(cmd, **kwargs):
    return subprocess.run(cmd, capture_output=True, text=True, **kwargs)


def read_log(path, evals=False):
    """The step records (or the evaluations) of a trainer's --log, without
    the timing fields."""
    records = []
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if ("eval_loss" in r) != evals:
                continue
            records.append({k: v for k, v in r.items() if k not in TIMING})
    return records


def read_folder(path):
    """Every .npy file of a folder, by name."""
    return {name: np.load(os.path.join(path, name)) for name in sorted(os.listdir(path))}


def same_arrays(a, b):
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def member_dir(run_dir, m):
    return os.path.join(run_dir, "members", "%02d" % m)


def run_state(run_dir, members):
    """What a finished run is: its state file, its lineage and every member's
    checkpoint bytes."""
    with open(os.path.join(run_dir, "pbt.json")) as f:
        state = json.load(f)
    with open(os.path.join(run_dir, "lineage.jsonl")) as f:
        lineage = f.read()
    blobs = []
    for m in range(members):
        with open(os.path.join(member_dir(run_dir, m), "checkpoint",
                               "checkpoint.safetensors"), "rb") as f:
            blobs.append(f.read())
    return state, lineage, blobs


def check_until_step(check, trainer, data, work):
    base = [trainer, "--data", data + "/train", "--eval-data", data + "/val", "--epochs", "2",
            "--lr", "0.05", "--momentum", "0.9", "--threads", "1"]
    whole, paused = os.path.join(work, "whole"), os.path.join(work, "paused")
    for d in (whole, paused):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    run(base + ["--log", whole + "/log.jsonl", "--save-params", whole + "/params"])
    outputs = []
    for until in ("30", "70", None):
        extra = ["--until-step", until] if until else []
        r = run(base + ["--checkpoint-dir", paused + "/ck", "--resume=auto", "--log",
                        paused + "/log.jsonl", "--save-params", paused + "/params"] + extra)
        outputs.append(r)
    check(all(r.returncode == 0 for r in outputs) and
          "paused after step 30 of 90 (--until-step)" in outputs[0].stderr and
          "paused after step 70 of 90" in outputs[1].stderr,
          "--until-step 30, then 70, then the rest: each part ends as asked (%s)"
          % [r.returncode for r in outputs])
    check(same_arrays(read_folder(whole + "/params"), read_folder(paused + "/params")) and
          read_log(whole + "/log.jsonl") == read_log(paused + "/log.jsonl"),
          "--until-step: the paused and resumed run trains the uninterrupted run's bytes and "
          "logs its 90 steps")
    eval_steps = [r.get("step") for r in read_log(paused + "/log.jsonl", evals=True)]
    check(30 in eval_steps and 70 in eval_steps and 90 in eval_steps,
          "--until-step evaluates at each pause (evaluations after steps %s)" % eval_steps)
    refusals = [
        (base + ["--until-step", "10"], "--until-step is about checkpoints"),
        (base + ["--checkpoint-dir", paused + "/ck", "--resume", "--until-step", "20"],
         "past --until-step 20"),
        ([trainer, "--data", data + "/train", "--find-lr", "--until-step", "5"],
         "--until-step is a training flag"),
    ]
    for cmd, expected in refusals:
        r = run(cmd)
        check(r.returncode == 1 and expected in r.stderr,
              "refused: %s (%s)" % (" ".join(cmd[7:] if len(cmd) > 7 else cmd[1:]),
                                    r.stderr.strip().splitlines()[-1:] or "no message"))
    r = run([trainer, "--data", data + "/train", "--epochs", "1", "--lr", "1e30",
             "--threads", "1"])
    check(r.returncode == 3 and "the loss became" in r.stderr,
          "a diverging loss ends the trainer with exit status 3 (got %d)" % r.returncode)


def pbt_command(trainc, trainer, data, run_dir, extra=(), trainer_extra=()):
    return ([trainc, "pbt", "--population", "6", "--ready-every", "20",
             "--hyper", "lr=log:0.003,0.5", "--hyper", "momentum=lin:0.5,0.95",
             "--seed", "4", "--dir", run_dir] + list(extra) +
            ["--", trainer, "--data", data + "/train", "--eval-data", data + "/val",
             "--epochs", "2", "--threads", "1"] + list(trainer_extra))


def check_exploit(check, trainc, trainer, data, work):
    """Round by round: the copies equal their parents and train on with the
    explored values. Returns the run's final state."""
    run_dir = os.path.join(work, "rounds")
    shutil.rmtree(run_dir, ignore_errors=True)
    command = pbt_command(trainc, trainer, data, run_dir, ["--parallel", "2",
                                                           "--stop-after-rounds", "1"])
    r = run(command)
    check(r.returncode == 0 and "stopped after 1 rounds" in r.stderr,
          "pbt --stop-after-rounds 1 stops after round 1 (%s)"
          % (r.stderr.strip().splitlines()[-1:] or r.returncode))
    with open(os.path.join(run_dir, "pbt.json")) as f:
        state = json.load(f)
    lineage = [json.loads(line) for line in open(os.path.join(run_dir, "lineage.jsonl"))]
    exploits = [e for e in lineage if e["event"] == "exploit"]
    ready = [e for e in lineage if e["event"] == "ready"]
    scores = sorted((e["score"], -e["member"]) for e in ready)
    check(len(exploits) == 1 and len(ready) == 6 and
          exploits[0]["member"] == -scores[0][1] and
          exploits[0]["parent"] == -scores[-1][1],
          "round 1: the worst of 6 members (truncation 0.25: floor(1.5) = 1) copies the best "
          "(%s)" % [(e["member"], e["parent"]) for e in exploits])
    copies_equal, explored = True, True
    for e in exploits:
        child = os.path.join(member_dir(run_dir, e["member"]), "checkpoint")
        parent = os.path.join(member_dir(run_dir, e["parent"]), "checkpoint")
        for name in ("checkpoint.safetensors", "checkpoint.json"):
            with open(os.path.join(child, name), "rb") as a, \
                    open(os.path.join(parent, name), "rb") as b:
                copies_equal &= a.read() == b.read()
        parent_hypers = state["members"][e["parent"]]["hypers"]
        child_hypers = state["members"][e["member"]]["hypers"]
        bounds = {"lr": (0.003, 0.5), "momentum": (0.5, 0.95)}
        for name, value in child_hypers.items():
            low, high = bounds[name]
            options = [min(high, max(low, parent_hypers[name] * f)) for f in (0.8, 1.25)]
            explored &= value in options and value == e["hypers"][name]
    tensors, manifest = read_checkpoint(
        os.path.join(member_dir(run_dir, exploits[0]["member"]), "checkpoint"))
    check(copies_equal and manifest["step"] == "20" and
          any(k.startswith("state/momentum.") for k in tensors),
          "the copied member's checkpoint (parameters, momentum buffers, step 20) equals its "
          "parent's byte for byte before the next round")
    check(explored, "the copied member's lr and momentum are its parent's times 0.8 or 1.25, "
                    "within the searched ranges")
    # The next round trains the copy with the member's values: a trainer run
    # by hand from the copy writes the same bytes.
    child = exploits[0]["member"]
    by_hand = os.path.join(work, "by-hand")
    shutil.rmtree(by_hand, ignore_errors=True)
    shutil.copytree(os.path.join(member_dir(run_dir, child), "checkpoint"), by_hand)
    hypers = state["members"][child]["hypers"]
    run([trainer, "--data", data + "/train", "--eval-data", data + "/val", "--epochs", "2",
         "--threads", "1", "--checkpoint-dir", by_hand, "--resume", "--until-step", "40",
         "--lr", "%.9g" % hypers["lr"], "--momentum", "%.9g" % hypers["momentum"]])
    r = run(command)
    with open(os.path.join(by_hand, "checkpoint.safetensors"), "rb") as a, \
            open(os.path.join(member_dir(run_dir, child), "checkpoint",
                              "checkpoint.safetensors"), "rb") as b:
        same = a.read() == b.read()
    check(r.returncode == 0 and same,
          "round 2 trains the copy with its explored values: member %d's checkpoint at step 40 "
          "equals a trainer's run by hand from the copy with --lr %.4g --momentum %.4g"
          % (child, hypers["lr"], hypers["momentum"]))
    r = run(pbt_command(trainc, trainer, data, run_dir, ["--parallel", "2"]))
    check(r.returncode == 0 and "the best member is" in r.stderr,
          "the run continued after two stops finishes (%s)"
          % (r.stderr.strip().splitlines()[-1:] or r.returncode))
    return run_dir, r.stdout


def check_repeatable(check, trainc, trainer, data, work, stopped_dir):
    reference = run_state(stopped_dir, 6)
    one_go = os.path.join(work, "one-go")
    shutil.rmtree(one_go, ignore_errors=True)
    started = time.time()
    r = run(pbt_command(trainc, trainer, data, one_go, ["--parallel", "1"]))
    seconds = time.time() - started
    check(r.returncode == 0 and run_state(one_go, 6) == reference,
          "the run in one go with --parallel 1 ends as the run stopped twice with --parallel "
          "2: state, lineage and the 6 checkpoints byte for byte")
    # Kills at random moments, each within the first tenth of a run: 5 of
    # them fall before the end (a run that ends first starts over in a new
    # folder, with shorter waits).
    draws = random.Random(17)
    longest = max(0.1, seconds / 10)
    for attempt in range(3):
        killed = os.path.join(work, "killed")
        shutil.rmtree(killed, ignore_errors=True)
        kills, finished = 0, False
        while not finished:
            process = subprocess.Popen(
                pbt_command(trainc, trainer, data, killed, ["--parallel", "2"]),
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if kills < 5:
                time.sleep(draws.uniform(0.02, longest))
                if process.poll() is None:
                    process.send_signal(signal.SIGKILL)
                    kills += 1
            finished = process.wait() == 0
        if kills == 5:
            break
        longest /= 2
    check(kills == 5 and run_state(killed, 6) == reference,
          "a driver killed (SIGKILL) at 5 random moments and started again ends as the "
          "uninterrupted run, byte for byte (%d kills)" % kills)
    # Across machines: each member an `mpirun -np 1 --host H` job (here the
    # one host, with 2 slots).
    hosts = os.path.join(work, "hosts")
    shutil.rmtree(hosts, ignore_errors=True)
    mpi = ["--hosts", "localhost:2"]
    for word in ("--oversubscribe", "--mca", "btl_vader_single_copy_mechanism", "none"):
        mpi += ["--mpirun-arg", word]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    r = subprocess.run(pbt_command(trainc, trainer, data, hosts, mpi), capture_output=True,
                       text=True, env=env)
    with open(os.path.join(member_dir(hosts, 0), "trainer.log")) as f:
        placed = "== trainc pbt: round 1" in f.read()
    check(r.returncode == 0 and placed and run_state(hosts, 6) == reference,
          "--hosts localhost:2 (each member under mpirun -np 1 --host) ends as the run in one "
          "process tree, byte for byte")


def check_outputs(check, trainc, trainer, data, work, run_dir, table):
    lineage = [json.loads(line) for line in open(os.path.join(run_dir, "lineage.jsonl"))]
    with open(os.path.join(run_dir, "best.json")) as f:
        best = json.load(f)
    final = [e for e in lineage if e["event"] == "ready" and e["step"] == 90]
    keys = {"event", "round", "member", "step", "metric", "score", "hypers", "parent"}
    check(len(final) == 6 and all(keys <= set(e) for e in final) and
          best["score"] == max(e["score"] for e in final) and
          best["member"] == min(e["member"] for e in final if e["score"] == best["score"]) and
          "(best)" in table,
          "lineage.jsonl: every member's ready points with score, hyperparameters and parent; "
          "best.json names the best final score (member %d, eval_accuracy %.4f)"
          % (best["member"], best["score"]))
    model = os.path.join(work, "best.onnx")
    if os.path.exists(model):
        os.unlink(model)
    r = run(pbt_command(trainc, trainer, data, run_dir, ["--export", model]))
    ok = r.returncode == 0 and os.path.exists(model)
    if ok:
        import onnx
        from onnx import numpy_helper
        tensors, _ = read_checkpoint(best["checkpoint"])
        initializers = {i.name: numpy_helper.to_array(i)
                        for i in onnx.load(model).graph.initializer}
        params = {k[len("param/"):]: v for k, v in tensors.items() if k.startswith("param/")}
        ok = params and all(np.array_equal(np.frombuffer(v, np.float32).reshape(-1),
                                           initializers[k].reshape(-1))
                            for k, v in params.items())
    check(ok, "pbt --export (on the finished run) writes the best member's parameters")
    png = os.path.join(work, "population.png")
    r = run([trainc, "plot", os.path.join(run_dir, "lineage.jsonl"), "-o", png])
    ok = r.returncode == 0 and os.path.exists(png)
    if ok:
        import matplotlib.image
        ok = matplotlib.image.imread(png).shape[0] > 100
    check(ok, "trainc plot draws the lineage (the metric and each hyperparameter per member)")


def check_diverged(check, trainc, trainer, data, work):
    run_dir = os.path.join(work, "diverging")
    shutil.rmtree(run_dir, ignore_errors=True)
    r = run([trainc, "pbt", "--population", "4", "--ready-every", "45", "--hyper",
             "lr=log:0.01,1e30", "--seed", "3", "--parallel", "2", "--dir", run_dir, "--",
             trainer, "--data", data + "/train", "--eval-data", data + "/val", "--epochs", "2",
             "--threads", "1"])
    lineage = [json.loads(line) for line in open(os.path.join(run_dir, "lineage.jsonl"))]
    diverged = [e for e in lineage if e["event"] == "exploit" and e["why"] == "diverged"]
    check(r.returncode == 0 and diverged and
          all(e["score"] is None and e["parent_score"] is not None for e in diverged),
          "members whose loss diverges (exit status 3) take copies of ranked members (%d "
          "copies) and the run finishes" % len(diverged))


def check_refusals(check, trainc, trainer, data, work):
    good = pbt_command(trainc, trainer, data, os.path.join(work, "refused"))
    split = good.index("--")
    driver, members = good[:split], good[split:]
    cases = [
        (driver + members + ["--log", "x.jsonl"], "--log is the driver's to set"),
        (driver + members + ["--lr", "0.1"], "--lr is searched"),
        (driver + members + ["--until-step", "5"], "--until-step is the driver's to set"),
        (driver + ["--hyper", "dropout=lin:0,0.5"] + members, "'dropout' is not a hyperparam"),
        (driver + ["--hyper", "weight_decay=log:0,0.1"] + members, "a log scale needs LOW > 0"),
        (driver + ["--hyper", "beta1=lin:0.5,1"] + members, "beta1 must stay below 1"),
        (driver + ["--exploit", "truncation:0.6"] + members, "0 < F <= 0.5"),
        (driver + ["--explore", "perturb:0.8,-1"] + members, "factors > 0"),
        (driver + ["--metric", "eval_top5"] + members, "needs the trainer's --topk 5"),
        (driver + members[:-6] + ["--epochs", "2", "--threads", "1"], "need --eval-data DIR"),
        (driver, "the trainer's command goes after '--'"),
        (driver + ["--hosts", "a b:2"] + members, "--hosts needs HOST:SLOTS"),
        (driver + ["--hosts", "h:2", "--parallel", "2"] + members,
         "--parallel is the slots of --hosts"),
        (driver + ["--mpirun-arg", "-v"] + members, "--mpirun-arg is a word of --hosts'"),
    ]
    for cmd, expected in cases:
        r = run(cmd)
        check(r.returncode == 1 and expected in r.stderr,
              "pbt refuses: %s" % (r.stderr.strip() or "no message"))
    other = os.path.join(work, "other-files")
    os.makedirs(other, exist_ok=True)
    open(os.path.join(other, "notes.txt"), "w").close()
    r = run(pbt_command(trainc, trainer, data, other))
    check(r.returncode == 1 and "holds files but no pbt.json" in r.stderr,
          "pbt refuses a --dir of other files")
    locked = os.path.join(work, "locked")
    shutil.rmtree(locked, ignore_errors=True)
    os.makedirs(locked)
    with open(os.path.join(locked, "pbt.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        r = run(pbt_command(trainc, trainer, data, locked))
    check(r.returncode == 1 and "another trainc pbt runs in" in r.stderr,
          "pbt refuses a second driver on the same folder")
    changed = pbt_command(trainc, trainer, data, os.path.join(work, "rounds"))
    changed[changed.index("--population") + 1] = "5"
    r = run(changed)
    check(r.returncode == 1 and "was started with other options (population: 6" in r.stderr,
          "pbt refuses to continue a run with other options (%s)"
          % (r.stderr.strip().splitlines()[-1:] or "no message"))


def checks(check, trainc, work):
    trainer = os.path.join(work, "trainer")
    r = run([trainc, "compile", os.path.join(ROOT, "examples", "digits_mlp.onnx"),
             "--target=cpu", "--batch-size=32", "--loss=cross-entropy", "--optimizer=sgd",
             "-o", trainer])
    data = os.path.join(work, "digits")
    run(["/usr/bin/python3", os.path.join(ROOT, "examples", "prepare_digits.py"), data])
    if r.returncode != 0 or not os.path.exists(data + "/val/x.npy"):
        check(False, "compiling the digits trainer: " + r.stderr)
    else:
        check_until_step(check, trainer, data, work)
        run_dir, table = check_exploit(check, trainc, trainer, data, work)
        check_repeatable(check, trainc, trainer, data, work, run_dir)
        check_outputs(check, trainc, trainer, data, work, run_dir, table)
        check_diverged(check, trainc, trainer, data, work)
        check_refusals(check, trainc, trainer, data, work)


if __name__ == "__main__":
    sys.exit(suite_main(checks))
