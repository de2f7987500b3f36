#!/usr/bin/python3
"""Training recipes against PyTorch's own implementations.

Usage: check_recipes.py TRAINC WORKDIR
           [--only schedules,rangetest,evaluation,loss,gradnorm,averaging,images,python] [--gpu-prepare DIR]

On the zoo's MLP (CPU trainers, batch 4, 40 samples in file order, from the
ONNX initial weights):
  * schedules: OneCycleLR (two and three phases, cos and linear, momentum or
    Adam's beta1 cycled or not) and CyclicLR (triangular2 with momentum
    cycled, exp_range), 50 steps each. The learning rate and the momentum
    (or beta1) of every step, as the trainer's --log records them, equal
    what torch.optim.lr_scheduler sets (relative 1e-12: both are computed
    in double); the weights after 50 steps match the same loop in PyTorch
    float64 (test/pylib/float64_compare.py: norm-wise 1e-6, or 4x PyTorch
    float32's own error).
  * rangetest: --find-lr. Each step's loss matches PyTorch float64 training
    at the same exponentially growing rate (relative 1e-4, up to the step of
    the lowest smoothed loss: past it the run diverges); the smoothed loss,
    the stopping step and both suggestions are fastai's LRFinder formulas
    applied to the recorded losses (1e-12); the PNG decodes; --lr=auto then
    trains exactly as --lr with the suggested rate does (the same bytes:
    the test left no trace); flags the test would ignore are refused.
  * evaluation: --eval-every (every N steps and at epochs' ends, once
    each), the last evaluation's loss, accuracy and top-3 accuracy against
    numpy on --predict's logits of the trained parameters; --keep-best keeps
    the checkpoint of the first best evaluation (resumed, it evaluates to
    that accuracy); --keep-last 2 keeps the last two; --early-stop-patience
    stops where Keras's EarlyStopping rule says; a run stopped and resumed
    (--resume=auto) logs, keeps the best and trains as the uninterrupted one.
  * loss: --label-smoothing, --class-weights and --ignore-index against
    torch.nn.CrossEntropyLoss(weight, ignore_index, label_smoothing), and
    --clip-grad-value against clip_grad_value_, 10 steps of SGD with
    momentum: each step's loss (relative 1e-5) and the weights (as above)
    against PyTorch float64. A batch whose every label is ignored (0/0 in
    PyTorch) is not run: the run goes on, its log record says so, and the
    weights equal PyTorch's without that update.
  * gradnorm: the log's grad_norm (--log-grad-norm, and --clip-grad-norm's
    own) against the total norm clip_grad_norm_ returns, step for step.
  * averaging: --ema-decay (and --ema-warmup) against timm's ModelEmaV2 by
    hand over the weights and batch-norm statistics, --swa-start with
    --swa-every and SWALR against torch.optim.swa_utils (the learning rate
    of each step, relative 1e-12; the averaged weights --save-params writes,
    as above); an EMA run stopped and resumed writes the uninterrupted
    run's bytes; --eval-averaged evaluates what --save-params writes;
    --report-memory shows the averaged weights; SWA of a model with batch
    norm writes update_bn's statistics.
  * images: a conv net on uint8 H x W x C images with --normalize and
    --augment crop:2,flip: each step's loss (relative 1e-5) and the weights
    (as above) against PyTorch on torchvision's RandomCrop(padding=2),
    RandomHorizontalFlip, ToTensor and Normalize with the trainer's draws
    (test/pylib/philox.py's augment_draw); without --augment, uint8 files
    in either layout train, evaluate and predict bit for bit as the float32
    file normalized by hand; a stopped and resumed run draws the same.
  * python: python/trainc_torch.py's compile, fit (arrays in, log records
    out), load_into and predict on a module with batch norm and dropout: the
    module's eval() output after load_into equals the trainer's --predict.
--gpu-prepare DIR packs CUDA trainers of 1cycle with Adam (beta1 cycled),
of --log-grad-norm and of --ema-decay (its weights the EMA's) with the CPU
trainer's log and weights (three cases:
the GPU check's folder must stay under the 64 MiB a device run carries)
(test/gpu/compare_recipes.py compares them on the GPU machine).
Prints one line per check and 'N passed, N failed'.
"""
import json
import math
import os
import shutil
import subprocess
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "pylib"))
from check_optimizers import BATCH, SAMPLES, trained_params, zoo_case  # noqa: E402
from float64_compare import compare_weights  # noqa: E402

torch.set_num_threads(2)
STEPS = 50
sched = torch.optim.lr_scheduler


def reference_loop(case, dtype, make_optimizer, make_scheduler, steps, lr_of_step=None,
                   criterion=None, after_backward=None, after_step=None, labels=None):
    """`steps` optimizer steps over the case's data in file order (epochs
    repeated), as the trainer runs them: the per-step learning rate, momentum
    (or beta1), loss and what `after_backward(net)` returns (a clipping
    rule's measure), and the final state dict. `after_step(net, k)` runs
    after optimizer step k (0-based), before the scheduler's step. `labels`
    replaces the case's; a batch whose labels are all -100 gets no update
    (its loss, 0/0 in PyTorch, is NaN)."""
    torch.manual_seed(0)
    net = case["spec"]["build"]()
    net.load_state_dict({k: torch.tensor(case["initial"][k]) if k in case["initial"] else v
                         for k, v in net.state_dict().items()})
    net = net.to(dtype)
    net.train()
    optimizer = make_optimizer(net.parameters())
    scheduler = make_scheduler(optimizer) if make_scheduler else None
    criterion = criterion or torch.nn.functional.cross_entropy
    lrs, momenta, losses, measured = [], [], [], []
    for k in range(steps):
        first = (k * BATCH) % SAMPLES
        group = optimizer.param_groups[0]
        if lr_of_step:
            group["lr"] = lr_of_step(k)
        lrs.append(group["lr"])
        momenta.append(group["betas"][0] if "betas" in group else group.get("momentum"))
        x = torch.tensor(case["inputs"]["x"][first:first + BATCH]).to(dtype)
        y = torch.tensor((case["labels"] if labels is None else labels)[first:first + BATCH])
        if bool((y == -100).all()):
            losses.append(math.nan)
            if scheduler:
                scheduler.step()
            continue
        optimizer.zero_grad()
        loss = criterion(net(x), y)
        loss.backward()
        if after_backward:
            measured.append(after_backward(net))
        optimizer.step()
        if after_step:
            after_step(net, k)
        if scheduler:
            scheduler.step()
        losses.append(float(loss))
    state = {k: v.detach().double().numpy() for k, v in net.state_dict().items()}
    return lrs, momenta, losses, state, measured


COMPILED = {}


def compile_mlp(trainc, check, case, work, optimizer, flags=()):
    """The MLP's CPU trainer with `optimizer` and compile `flags`, compiled
    once per run."""
    key = (case["name"], optimizer) + tuple(flags)
    if key in COMPILED:
        return COMPILED[key]
    name = "_".join([optimizer] + [f.strip("-").split("=")[0] for f in flags])
    prog = os.path.join(work, case["name"] + "_" + name)
    build = subprocess.run([trainc, "compile", case["path"], "--target=cpu",
                            "--batch-size=%d" % BATCH, "--loss=cross-entropy",
                            "--optimizer=" + optimizer, "-o", prog] + list(flags),
                           capture_output=True, text=True)
    if build.returncode != 0:
        check(False, "%s compiles: %s" % (" ".join(key), build.stderr.strip()[:300]))
        prog = None
    COMPILED[key] = prog
    return prog


def without_timing(record):
    """A log record but its timing fields (a rerun's differ)."""
    return {k: v for k, v in record.items() if k not in ("wall_time", "samples_per_s")}


def run_trainer(prog, case, tag, flags, work):
    """Runs the trainer over the case's data: (run, log records, saved dir)."""
    log = os.path.join(work, tag + ".jsonl")
    saved = os.path.join(work, tag + ".params")
    shutil.rmtree(saved, ignore_errors=True)
    run = subprocess.run([prog, "--data", case["data"], "--no-shuffle", "--log", log,
                          "--save-params", saved] + flags, capture_output=True, text=True)
    records = ([without_timing(json.loads(line)) for line in open(log)]
               if run.returncode == 0 and os.path.exists(log) else [])
    return run, records, saved


def relative_error(got, want):
    return max((abs(g - w) / max(abs(w), 1e-300) for g, w in zip(got, want)), default=0.0)


# tag: (optimizer, trainer flags, torch optimizer, torch scheduler)
SCHEDULES = {
    "onecycle sgd": (
        "sgd", ["--lr", "0.05", "--lr-schedule", "onecycle"],
        lambda p: torch.optim.SGD(p, lr=0.05),
        lambda o: sched.OneCycleLR(o, max_lr=0.05, total_steps=STEPS)),
    "onecycle sgd three-phase linear": (
        "sgd", ["--lr", "0.05", "--lr-schedule", "onecycle", "--three-phase", "--anneal-strategy",
                "linear", "--pct-start", "0.25", "--div-factor", "10", "--final-div-factor",
                "100", "--base-momentum", "0.8", "--max-momentum", "0.92"],
        lambda p: torch.optim.SGD(p, lr=0.05),
        lambda o: sched.OneCycleLR(o, max_lr=0.05, total_steps=STEPS, three_phase=True,
                                   anneal_strategy="linear", pct_start=0.25, div_factor=10,
                                   final_div_factor=100, base_momentum=0.8,
                                   max_momentum=0.92)),
    "onecycle sgd momentum fixed": (
        "sgd", ["--lr", "0.05", "--lr-schedule", "onecycle", "--cycle-momentum", "false",
                "--momentum", "0.9"],
        lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9),
        lambda o: sched.OneCycleLR(o, max_lr=0.05, total_steps=STEPS, cycle_momentum=False)),
    "onecycle adam beta1": (
        "adam", ["--lr", "0.01", "--lr-schedule", "onecycle", "--pct-start", "0.4"],
        lambda p: torch.optim.Adam(p, lr=0.01),
        lambda o: sched.OneCycleLR(o, max_lr=0.01, total_steps=STEPS, pct_start=0.4)),
    "cyclic triangular2 momentum": (
        "sgd", ["--lr", "0.05", "--lr-schedule", "cyclic", "--cyclic-mode", "triangular2",
                "--min-lr", "0.005", "--step-size", "4", "--step-size-down", "6"],
        lambda p: torch.optim.SGD(p, lr=0.05),
        lambda o: sched.CyclicLR(o, base_lr=0.005, max_lr=0.05, step_size_up=4,
                                 step_size_down=6, mode="triangular2")),
    "cyclic exp_range": (
        "sgd", ["--lr", "0.05", "--lr-schedule", "cyclic", "--cyclic-mode", "exp_range",
                "--cyclic-gamma", "0.97", "--step-size", "5", "--cycle-momentum", "false",
                "--momentum", "0.5"],
        lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.5),
        lambda o: sched.CyclicLR(o, base_lr=0.005, max_lr=0.05, step_size_up=5,
                                 mode="exp_range", gamma=0.97, cycle_momentum=False)),
}


GPU_DIR = None


def prepare_gpu_case(trainc, tag, case, optimizer, compile_flags, run_flags, saved, log):
    """With --gpu-prepare: the case's CUDA trainer, data, initial weights and
    the CPU trainer's log and weights, for test/gpu/compare_recipes.py."""
    if GPU_DIR is None:
        return
    out = os.path.join(GPU_DIR, "recipe_" + "".join(c if c.isalnum() else "_" for c in tag))
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.join(out, "initial"))
    shutil.copytree(case["data"], os.path.join(out, "data"))
    shutil.copytree(saved, os.path.join(out, "cpu"))
    shutil.copy(log, os.path.join(out, "cpu.jsonl"))
    build = subprocess.run([trainc, "compile", case["path"], "--target=cuda",
                            "--cuda-arch=sm_90", "--batch-size=%d" % BATCH,
                            "--loss=cross-entropy", "--optimizer=" + optimizer,
                            "-o", os.path.join(out, "prog")] + list(compile_flags),
                           capture_output=True, text=True)
    if build.returncode != 0:
        raise RuntimeError("CUDA trainer %s: %s" % (tag, build.stderr.strip()[:300]))
    shutil.rmtree(os.path.join(out, "prog.build"), ignore_errors=True)
    for k in trained_params(case):
        np.save(os.path.join(out, "initial", k + ".npy"), case["initial"][k])
    with open(os.path.join(out, "case.json"), "w") as f:
        json.dump({"flags": ["--no-shuffle"] + list(run_flags)}, f)


def check_schedules(trainc, work, check, case):
    for tag, (optimizer, flags, make_optimizer, make_scheduler) in SCHEDULES.items():
        prog = compile_mlp(trainc, check, case, work, optimizer)
        if not prog:
            continue
        run, records, saved = run_trainer(prog, case, tag.replace(" ", "_"),
                                          ["--steps", str(STEPS)] + flags, work)
        if run.returncode != 0:
            check(False, "%s trains: %s" % (tag, run.stderr.strip()[:300]))
            continue
        if tag == "onecycle adam beta1":
            prepare_gpu_case(trainc, tag, case, optimizer, [], ["--steps", str(STEPS)] + flags,
                             saved, os.path.join(work, tag.replace(" ", "_") + ".jsonl"))
        lrs, momenta, _, ref64, _ = reference_loop(case, torch.float64, make_optimizer,
                                                   make_scheduler, STEPS)
        ref32 = reference_loop(case, torch.float32, make_optimizer, make_scheduler, STEPS)[3]
        key = "beta1" if optimizer == "adam" else "momentum"
        got_lrs = [r["lr"] for r in records]
        got_momenta = [r.get(key) for r in records]
        check(len(got_lrs) == STEPS and relative_error(got_lrs, lrs) <= 1e-12 and
              None not in got_momenta and relative_error(got_momenta, momenta) <= 1e-12,
              "%s: the learning rate and %s of each of %d steps equal PyTorch's scheduler "
              "(relative error %.3g and %.3g; lr from %.4g via %.4g to %.4g, %s from %.4g to "
              "%.4g)" % (tag, key, STEPS, relative_error(got_lrs, lrs),
                         relative_error([m or 0 for m in got_momenta], momenta), lrs[0],
                         max(lrs), lrs[-1], key, max(momenta), min(momenta)))
        names = [k for k in trained_params(case) if k in ref64]
        ours = {k: np.load(os.path.join(saved, k + ".npy")) for k in names}
        ok, text = compare_weights({k: case["initial"][k] for k in names}, ours,
                                   {k: ref64[k] for k in names}, {k: ref32[k] for k in names})
        check(ok, "%s: weights after %d steps against PyTorch float64, %s" % (tag, STEPS, text))


def fastai_range_test(losses, steps, beta=0.98):
    """fastai's AvgSmoothLoss + LRFinder.after_batch on the recorded losses:
    the smoothed values up to where the test stops."""
    average, best, smoothed = 0.0, math.inf, []
    for count, loss in enumerate(losses, 1):
        average = loss + beta * (average - loss)
        value = average / (1 - beta ** count)
        smoothed.append(value)
        if math.isfinite(value):
            best = min(best, value)
        if not math.isfinite(value) or value > 4 * best or count >= steps:
            break
    return smoothed


def fastai_suggestions(lrs, smoothed, steps):
    """fastai's `minimum` (lr of the lowest loss / 10) and `steep` (steepest
    descent against log lr), over the points but the first tenth of the steps
    and the last 5."""
    finite = next((i for i, v in enumerate(smoothed) if not math.isfinite(v)), len(smoothed))
    first, end = steps // 10, min(finite, len(smoothed) - 5)
    if end < first + 2:
        first, end = 0, finite
    lowest = min(range(first, end), key=lambda i: smoothed[i])
    slopes = [(smoothed[i + 1] - smoothed[i]) / (math.log(lrs[i + 1]) - math.log(lrs[i]))
              for i in range(first, end - 1)]
    steepest = first + int(np.argmin(slopes))
    return lrs[lowest] / 10, lrs[steepest]


def check_range_test(trainc, work, check, case):
    prog = compile_mlp(trainc, check, case, work, "sgd")
    if not prog:
        return
    steps, low, high = 60, 1e-4, 30.0
    prefix = os.path.join(work, "range")
    for suffix in (".jsonl", ".png"):
        if os.path.exists(prefix + suffix):
            os.unlink(prefix + suffix)
    run = subprocess.run([prog, "--data", case["data"], "--no-shuffle", "--find-lr",
                          "--find-lr-steps", str(steps), "--find-lr-min", str(low),
                          "--find-lr-max", str(high), "--find-lr-out", prefix, "--momentum",
                          "0.9"], capture_output=True, text=True)
    if run.returncode != 0:
        check(False, "range test runs: %s" % run.stderr.strip()[:300])
        return
    records = [json.loads(line) for line in open(prefix + ".jsonl")]
    points, summary = records[:-1], records[-1]
    lrs = [p["lr"] for p in points]
    losses = [p["loss"] if p["loss"] is not None else math.nan for p in points]
    want_lrs = [low * (high / low) ** (k / (steps - 1)) for k in range(len(points))]
    smoothed = fastai_range_test(losses, steps)
    got_smoothed = [p["smoothed_loss"] if p["smoothed_loss"] is not None else math.nan
                    for p in points]
    check(relative_error(lrs, want_lrs) <= 1e-12 and len(smoothed) == len(points) and
          all(abs(a - b) <= 1e-12 * abs(b) or (math.isnan(a) and math.isnan(b))
              for a, b in zip(got_smoothed, smoothed)),
          "range test: the rates grow exponentially from %g to %g, the loss is smoothed and "
          "the test stops as fastai's LRFinder (%d of %d steps, stopped: %s)"
          % (low, high, len(points), steps, summary["stopped"]))
    minimum, steepest = fastai_suggestions(lrs, smoothed, steps)
    check(summary["suggested_lr"] == summary["minimum_lr"] and
          relative_error([summary["minimum_lr"], summary["steepest_lr"]],
                         [minimum, steepest]) <= 1e-12,
          "range test: suggestions as fastai's minimum and steep (suggested %.4g, steepest "
          "%.4g)" % (summary["minimum_lr"], summary["steepest_lr"]))
    # The losses against PyTorch float64 at the same rates, up to the lowest
    # smoothed loss (past it the steps blow up and differences grow).
    lowest = min(range(len(points)), key=lambda i: got_smoothed[i]
                 if math.isfinite(got_smoothed[i]) else math.inf)
    _, _, ref_losses, _, _ = reference_loop(case, torch.float64,
                                         lambda p: torch.optim.SGD(p, lr=low, momentum=0.9),
                                         None, lowest + 1, lambda k: want_lrs[k])
    error = relative_error(losses[:lowest + 1], ref_losses)
    check(error <= 1e-4,
          "range test: the losses of steps 1..%d equal PyTorch float64 training at the same "
          "rates (max relative error %.3g, tolerance 1e-4)" % (lowest + 1, error))
    try:
        import matplotlib.image
        image = matplotlib.image.imread(prefix + ".png")
        drawn = image.ndim == 3 and image.shape[0] >= 200 and image.shape[1] >= 300 and \
            float(image[..., :3].std()) > 0.01
        shape = image.shape
    except Exception as error:  # noqa: BLE001 (the message is the check's)
        drawn, shape = False, str(error)
    check(drawn, "range test: %s.png decodes as a drawn image (%s)" % (prefix, shape))
    # --lr=auto trains as --lr <suggestion> does, byte for byte.
    flags = ["--steps", "15", "--momentum", "0.9"]
    test_flags = ["--find-lr-steps", str(steps), "--find-lr-min", str(low), "--find-lr-max",
                  str(high), "--find-lr-out", prefix + "-auto"]
    auto, auto_log, auto_saved = run_trainer(prog, case, "lr-auto",
                                             flags + ["--lr=auto"] + test_flags, work)
    given, given_log, given_saved = run_trainer(
        prog, case, "lr-given", flags + ["--lr", repr(summary["suggested_lr"])], work)
    same = auto.returncode == 0 and given.returncode == 0 and auto_log == given_log and all(
        open(os.path.join(auto_saved, f), "rb").read() ==
        open(os.path.join(given_saved, f), "rb").read() for f in os.listdir(given_saved))
    check(same, "range test: --lr=auto trains as --lr %r does (the same log and parameters, "
          "byte for byte)%s" % (summary["suggested_lr"],
                                "" if auto.returncode == 0 else ": " + auto.stderr[-300:]))
    # Flags the range test alone would ignore are refused.
    refused = subprocess.run([prog, "--data", case["data"], "--find-lr", "--epochs", "3"],
                             capture_output=True, text=True)
    check(refused.returncode != 0 and "--epochs is a training flag" in refused.stderr,
          "range test: --find-lr refuses --epochs (%s)" % refused.stderr.strip()[-160:])


def eval_data(case, work):
    """24 of the training samples as the evaluation set (the labels are
    random: only samples it trains on can be learnt, so that the accuracy
    moves), the last 3 left out (label -100)."""
    folder = os.path.join(work, "mlp-eval")
    os.makedirs(folder, exist_ok=True)
    np.save(os.path.join(folder, "x.npy"), case["inputs"]["x"][:24])
    labels = case["labels"][:24].copy()
    labels[-3:] = -100
    np.save(os.path.join(folder, "label.npy"), labels)
    return folder


def checkpoint_step(folder):
    return int(json.load(open(os.path.join(folder, "checkpoint.json")))["step"])


def predicted_metrics(prog, params, held, work):
    """The held-out loss, accuracy and top-3 accuracy (float64, numpy) of
    --predict's logits with the parameters in `params`."""
    out = os.path.join(work, "eval-pred")
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run([prog, "--predict", "--params", params, "--data", held, "--out", out],
                   check=True, capture_output=True)
    labels = np.load(os.path.join(held, "label.npy"))
    kept = labels != -100
    logits = np.load(os.path.join(out, "logits.npy")).astype(np.float64)[kept]
    labels = labels[kept]
    shifted = logits - logits.max(axis=1, keepdims=True)
    loss = float(np.mean(np.log(np.exp(shifted).sum(axis=1)) -
                         shifted[np.arange(len(labels)), labels]))
    accuracy = float(np.mean(logits.argmax(axis=1) == labels))
    top3 = float(np.mean([(row > row[y]).sum() < 3 for row, y in zip(logits, labels)]))
    return loss, accuracy, top3


def check_evaluation(trainc, work, check, case):
    prog = compile_mlp(trainc, check, case, work, "sgd")
    if not prog:
        return
    held = eval_data(case, work)
    ck = os.path.join(work, "eval-ck")
    shutil.rmtree(ck, ignore_errors=True)
    common = ["--eval-data", held, "--momentum", "0.9", "--topk", "3"]
    run, records, saved = run_trainer(
        prog, case, "eval", common + ["--lr", "0.003", "--steps", "60", "--eval-every", "7",
                                      "--checkpoint-dir",
                                      ck, "--keep-best", "eval_accuracy", "--keep-last", "2",
                                      "--checkpoint-every", "4"], work)
    if run.returncode != 0:
        check(False, "evaluation run trains: %s" % run.stderr.strip()[-300:])
        return
    evals = [r for r in records if "eval_loss" in r]
    want_steps = sorted(set(list(range(7, 61, 7)) + list(range(10, 61, 10))))
    check([r["step"] for r in evals] == want_steps,
          "--eval-every 7: evaluations after steps %s (every 7 and at each epoch's end, once "
          "each)" % [r["step"] for r in evals])
    # The last evaluation against the trained parameters' predictions.
    loss, accuracy, top3 = predicted_metrics(prog, saved, held, work)
    last = evals[-1]
    check(abs(last["eval_loss"] - loss) <= 1e-6 * abs(loss) and last["eval_accuracy"] == accuracy
          and last["eval_top3"] == top3,
          "the last evaluation equals the metrics of --predict's logits (loss %.6g vs %.6g, "
          "accuracy %.4g vs %.4g, top-3 %.4g vs %.4g)"
          % (last["eval_loss"], loss, last["eval_accuracy"], accuracy, last["eval_top3"], top3))
    best = max(evals, key=lambda r: r["eval_accuracy"])  # the first of the best
    check(os.path.isdir(os.path.join(ck, "best")) and
          checkpoint_step(os.path.join(ck, "best")) == best["step"],
          "--keep-best eval_accuracy: DIR/best holds the checkpoint after step %d, the first "
          "evaluation of the best accuracy %.4g" % (best["step"], best["eval_accuracy"]))
    resumed = subprocess.run([prog, "--data", case["data"], "--no-shuffle", "--steps",
                              str(best["step"]), "--checkpoint-dir", os.path.join(ck, "best"),
                              "--resume"] + common, capture_output=True, text=True)
    got = next((float(l.split()[1]) for l in resumed.stdout.splitlines()
                if l.startswith("accuracy ")), None)
    check(got is not None and abs(got - best["eval_accuracy"]) <= 5e-5,
          "the best checkpoint's weights evaluate to the best accuracy (%s)" % got)
    steps = sorted(int(name[5:]) for name in os.listdir(ck) if name.startswith("step-"))
    check(steps == [56, 60] and checkpoint_step(ck) == 60,
          "--keep-last 2: DIR/step-56 and DIR/step-60 remain, the latest is DIR (%s)" % steps)
    # Early stopping as Keras's EarlyStopping(patience=2, min_delta=0.01) on eval_loss.
    run, records, _ = run_trainer(prog, case, "early", common + [
        "--steps", "200", "--lr", "0.2", "--eval-every", "5", "--early-stop-patience", "2",
        "--early-stop-min-delta", "0.01"], work)
    losses = [(r["step"], r["eval_loss"]) for r in records if "eval_loss" in r]
    best_loss, wait, stop = math.inf, 0, None
    for step, value in losses:
        if value + 0.01 < best_loss:
            best_loss, wait = value, 0
        else:
            wait += 1
            if wait >= 2:
                stop = step
                break
    last_step = max(r["step"] for r in records)
    check(run.returncode == 0 and stop is not None and last_step == stop and
          "early stop after step %d" % stop in run.stderr,
          "--early-stop-patience 2 --early-stop-min-delta 0.01: the run ends after step %s, as "
          "Keras's rule on its evaluations says (%s)" % (last_step, stop))
    # A run stopped at step 23 (simulated: --steps 23) and resumed writes the
    # uninterrupted run's log and weights.
    flags = common + ["--lr", "0.02", "--eval-every", "7", "--checkpoint-every", "4", "--keep-best",
                      "eval_loss", "--early-stop-patience", "50"]
    whole_ck, part_ck = os.path.join(work, "whole-ck"), os.path.join(work, "part-ck")
    for folder in (whole_ck, part_ck):
        shutil.rmtree(folder, ignore_errors=True)
    whole, whole_log, whole_saved = run_trainer(
        prog, case, "whole", flags + ["--steps", "40", "--checkpoint-dir", whole_ck], work)
    first = subprocess.run([prog, "--data", case["data"], "--no-shuffle", "--steps", "23",
                            "--log", os.path.join(work, "part.jsonl"), "--checkpoint-dir",
                            part_ck] + flags, capture_output=True, text=True)
    part, part_log, part_saved = run_trainer(
        prog, case, "part", flags + ["--steps", "40", "--checkpoint-dir", part_ck,
                                     "--resume=auto"], work)
    same = (whole.returncode == 0 and first.returncode == 0 and part.returncode == 0 and
            whole_log == part_log and all(
                open(os.path.join(whole_saved, f), "rb").read() ==
                open(os.path.join(part_saved, f), "rb").read() for f in os.listdir(whole_saved))
            and checkpoint_step(os.path.join(whole_ck, "best")) ==
            checkpoint_step(os.path.join(part_ck, "best")))
    check(same, "stopped after step 23 and resumed (--resume=auto, checkpoint after step 20), "
          "the run logs, keeps the best and trains as the uninterrupted one%s"
          % ("" if part.returncode == 0 else ": " + part.stderr[-300:]))


def check_loss_options(trainc, work, check, case):
    """CrossEntropyLoss(weight, ignore_index, label_smoothing) and
    clip_grad_value_ against PyTorch float64, 10 steps of SGD."""
    weights = np.linspace(0.5, 2.0, 10)
    weights_path = os.path.join(work, "class-weights.npy")
    np.save(weights_path, weights.astype(np.float32))
    cases = {
        "label smoothing, class weights, ignore index 3": (
            ["--label-smoothing=0.1", "--class-weights=" + weights_path, "--ignore-index=3"],
            lambda dtype: torch.nn.CrossEntropyLoss(
                weight=torch.tensor(weights, dtype=dtype), ignore_index=3, label_smoothing=0.1),
            None),
        "label smoothing alone": (
            ["--label-smoothing=0.2"],
            lambda dtype: torch.nn.CrossEntropyLoss(label_smoothing=0.2), None),
        "clip grad value": (
            ["--clip-grad-value=0.01"], lambda dtype: torch.nn.CrossEntropyLoss(), 0.01),
    }
    for tag, (flags, make_loss, clip) in cases.items():
        prog = compile_mlp(trainc, check, case, work, "sgd", flags)
        if not prog:
            continue
        name = "loss-" + tag.split(",")[0].replace(" ", "_")
        run_flags = ["--steps", "10", "--lr", "0.1", "--momentum", "0.9"]
        run, records, saved = run_trainer(prog, case, name, run_flags, work)
        if run.returncode != 0:
            check(False, "%s trains: %s" % (tag, run.stderr.strip()[:300]))
            continue


        def reference(dtype):
            clipping = ((lambda net: torch.nn.utils.clip_grad_value_(net.parameters(), clip))
                        if clip else None)
            _, _, losses, state, _ = reference_loop(
                case, dtype, lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9), None, 10,
                criterion=make_loss(dtype), after_backward=clipping)
            return losses, state

        losses64, ref64 = reference(torch.float64)
        _, ref32 = reference(torch.float32)
        got = [r["loss"] for r in records]
        error = relative_error(got, losses64)
        check(len(got) == 10 and error <= 1e-5,
              "%s: the loss of each of 10 steps matches PyTorch float64's CrossEntropyLoss "
              "(max relative error %.3g, tolerance 1e-5)" % (tag, error))
        names = [k for k in trained_params(case) if k in ref64]
        ours = {k: np.load(os.path.join(saved, k + ".npy")) for k in names}
        ok, text = compare_weights({k: case["initial"][k] for k in names}, ours,
                                   {k: ref64[k] for k in names}, {k: ref32[k] for k in names})
        check(ok, "%s: weights after 10 steps against PyTorch float64, %s" % (tag, text))


def check_no_label(trainc, work, check, case):
    """A batch whose every label is --ignore-index: no update, no stop, a
    log record that says so; a batch with some ignored labels trains."""
    prog = compile_mlp(trainc, check, case, work, "sgd")
    if not prog:
        return
    labels = case["labels"].copy()
    labels[8:12] = -100   # step 3: nothing counts
    labels[17:19] = -100  # step 5: half counts
    folder = os.path.join(work, "no-label")
    os.makedirs(folder, exist_ok=True)
    np.save(os.path.join(folder, "x.npy"), case["inputs"]["x"])
    np.save(os.path.join(folder, "label.npy"), labels)
    run, records, saved = run_trainer(prog, dict(case, data=folder), "no_label", [
        "--steps", "10", "--lr", "0.1", "--momentum", "0.9"], work)
    if run.returncode != 0:
        check(False, "a batch without a counted label trains on: %s" % run.stderr.strip()[-300:])
        return
    refs = [reference_loop(case, dtype, lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9), None,
                           10, labels=labels) for dtype in (torch.float64, torch.float32)]
    third = records[2] if len(records) > 2 else {}
    check(third.get("loss", 0) is None and third.get("skipped") is True and
          third.get("skip_reason") == "no label counts" and "step 3: nothing in its batch "
          "counts" in run.stderr,
          "every label of step 3's batch ignored: the run goes on, the log's record has loss "
          "null, skipped and its reason (%s)" % third)
    got = [r["loss"] for r in records if r.get("loss") is not None]
    want = [l for l in refs[0][2] if not math.isnan(l)]
    check(len(got) == 9 and relative_error(got, want) <= 1e-5,
          "the other 9 steps' losses equal PyTorch's, which skips the update at step 3 "
          "(relative error %.3g)" % relative_error(got, want))
    names = [k for k in trained_params(case) if k in refs[0][3]]
    ok, text = compare_weights({k: case["initial"][k] for k in names},
                               {k: np.load(os.path.join(saved, k + ".npy")) for k in names},
                               {k: refs[0][3][k] for k in names},
                               {k: refs[1][3][k] for k in names})
    check(ok, "no update at step 3: weights after 10 steps against PyTorch float64, %s" % text)


def check_grad_norm(trainc, work, check, case):
    """The log's grad_norm against the total norm torch.nn.utils.
    clip_grad_norm_ returns (before clipping), step for step."""
    for tag, flags, clip in (("--log-grad-norm", ["--log-grad-norm"], None),
                             ("--clip-grad-norm=0.5", ["--clip-grad-norm=0.5"], 0.5)):
        prog = compile_mlp(trainc, check, case, work, "sgd", flags)
        if not prog:
            continue
        name = "norm-" + tag.strip("-").split("=")[0]
        run_flags = ["--steps", "10", "--lr", "0.1", "--momentum", "0.9"]
        run, records, saved = run_trainer(prog, case, name, run_flags, work)
        if run.returncode == 0 and not clip:
            prepare_gpu_case(trainc, tag, case, "sgd", flags, run_flags, saved,
                             os.path.join(work, name + ".jsonl"))
        norms = reference_loop(
            case, torch.float64, lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9), None, 10,
            after_backward=lambda net: float(torch.nn.utils.clip_grad_norm_(
                net.parameters(), clip if clip else float("inf"))))[4]
        got = [r.get("grad_norm") for r in records]
        error = relative_error([g or 0.0 for g in got], norms)
        check(run.returncode == 0 and len(got) == 10 and None not in got and error <= 1e-5,
              "%s: the log's grad_norm of each of 10 steps equals the total norm PyTorch "
              "float64's clip_grad_norm_ measures (max relative error %.3g, tolerance 1e-5; "
              "%.4g to %.4g)" % (tag, error, min(norms), max(norms)))


def ema_hook(case, dtype, decay, warmup, out):
    """timm's ModelEmaV2 by hand (ModelEmaV3's decay warmup with `warmup`),
    over every float entry of the state dict (weights and batch-norm
    statistics), from the initial weights: an after_step hook that leaves
    the average in `out`."""
    def after_step(net, k):
        if not out:
            out.update({name: torch.tensor(case["initial"][name]).to(dtype)
                        for name, v in net.state_dict().items() if v.is_floating_point()})
        n = k + 1
        d = decay
        if warmup:
            d = 0.0 if n - 1 <= 0 else max(0.0, min(decay, 1 - (1 + (n - 1)) ** (-2.0 / 3.0)))
        with torch.no_grad():
            for name, v in net.state_dict().items():
                if name in out:
                    out[name] = out[name] * d + (1 - d) * v
    return after_step


class SwaRecipe:
    """torch.optim.swa_utils' recipe stepped per optimizer step: the base
    schedule (or none) until step `start`, then AveragedModel.update_parameters
    every `every` steps and SWALR (with `swa_lr`)."""

    def __init__(self, start, every, swa_lr=None, anneal=10, strategy="cos", base=None):
        self.start, self.every, self.swa_lr = start, every, swa_lr
        self.anneal, self.strategy, self.base = anneal, strategy, base
        self.model = None

    def make_scheduler(self, optimizer):
        self.scheduler = self.base(optimizer) if self.base else None
        self.swalr = (torch.optim.swa_utils.SWALR(optimizer, swa_lr=self.swa_lr,
                                                  anneal_epochs=self.anneal,
                                                  anneal_strategy=self.strategy)
                      if self.swa_lr is not None else None)
        self.steps = 0
        return self

    def step(self):
        self.steps += 1
        if self.steps > self.start and self.swalr:
            self.swalr.step()
        elif self.scheduler:
            self.scheduler.step()

    def after_step(self, net, k):
        if self.model is None:
            self.model = torch.optim.swa_utils.AveragedModel(net)
        if k + 1 > self.start and (k + 1 - self.start) % self.every == 0:
            self.model.update_parameters(net)

    def averaged(self):
        return {name[len("module."):]: v.detach() for name, v in self.model.state_dict().items()
                if name.startswith("module.")}


def bn_case(work):
    """A small model with batch normalization, as zoo_case gives the zoo's."""
    torch.manual_seed(2)
    build = lambda: torch.nn.Sequential(torch.nn.Linear(16, 24), torch.nn.BatchNorm1d(24),
                                        torch.nn.ReLU(), torch.nn.Linear(24, 10))
    model = build()
    rng = np.random.RandomState(6)
    x = rng.randn(SAMPLES, 16).astype(np.float32)
    labels = rng.randint(0, 10, SAMPLES).astype(np.int64)
    path = os.path.join(work, "bn_train.onnx")
    torch.onnx.export(model, (torch.tensor(x[:BATCH]),), path, input_names=["x"],
                      output_names=["logits"], dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}},
                      opset_version=17, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.TRAINING)
    initial = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    data = os.path.join(work, "bn-data")
    os.makedirs(data, exist_ok=True)
    np.save(os.path.join(data, "x.npy"), x)
    np.save(os.path.join(data, "label.npy"), labels)
    return dict(name="bn", spec={"build": lambda: build()}, path=path, initial=initial,
                inputs={"x": x}, labels=labels, data=data, loss_flags=[])


def compare_averaged(check, case, saved, ref64, ref32, what):
    names = [k for k in ref64 if k in case["initial"] and ref64[k].is_floating_point()]
    ours = {k: np.load(os.path.join(saved, k + ".npy")) for k in names}
    ok, text = compare_weights({k: case["initial"][k] for k in names}, ours,
                               {k: ref64[k].double().numpy() for k in names},
                               {k: ref32[k].double().numpy() for k in names})
    check(ok, "%s (%d tensors), %s" % (what, len(names), text))


def check_ema(trainc, work, check, case, bn):
    """--ema-decay against timm's rule by hand, --ema-warmup, resume."""
    for tag, c, decay, warmup in (("mlp", case, 0.9, False), ("mlp", case, 0.99, True),
                                  ("bn", bn, 0.8, False)):
        prog = compile_mlp(trainc, check, c, work, "sgd")
        if not prog:
            continue
        flags = ["--steps", "30", "--lr", "0.05", "--momentum", "0.9", "--ema-decay", str(decay)]
        flags += ["--ema-warmup"] if warmup else []
        run, _, saved = run_trainer(prog, c, "ema_" + tag, flags, work)
        if run.returncode != 0:
            check(False, "ema %s trains: %s" % (tag, run.stderr.strip()[-300:]))
            continue
        if tag == "mlp" and not warmup:
            prepare_gpu_case(trainc, "ema", c, "sgd", [], flags, saved,
                             os.path.join(work, "ema_" + tag + ".jsonl"))
        refs = []
        for dtype in (torch.float64, torch.float32):
            out = {}
            reference_loop(c, dtype, lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9), None,
                           30, after_step=ema_hook(c, dtype, decay, warmup, out))
            refs.append(out)
        compare_averaged(check, c, saved, refs[0], refs[1],
                         "%s --ema-decay %g%s: --save-params writes timm's EMA after 30 steps "
                         "of SGD against PyTorch float64, weights%s" %
                         (tag, decay, " --ema-warmup" if warmup else "",
                          " and batch-norm statistics" if tag == "bn" else ""))
    prog = compile_mlp(trainc, check, case, work, "sgd")
    if not prog:
        return
    common = ["--lr", "0.05", "--momentum", "0.9", "--ema-decay", "0.9", "--checkpoint-every", "5"]
    whole_ck, part_ck = os.path.join(work, "ema-whole-ck"), os.path.join(work, "ema-part-ck")
    for folder in (whole_ck, part_ck):
        shutil.rmtree(folder, ignore_errors=True)
    whole, whole_log, whole_saved = run_trainer(
        prog, case, "ema_whole", common + ["--steps", "30", "--checkpoint-dir", whole_ck], work)
    first = subprocess.run([prog, "--data", case["data"], "--no-shuffle", "--steps", "17",
                            "--log", os.path.join(work, "ema_part.jsonl"),
                            "--checkpoint-dir", part_ck] + common, capture_output=True, text=True)
    other = subprocess.run([prog, "--data", case["data"], "--no-shuffle", "--steps", "30",
                            "--checkpoint-dir", part_ck, "--resume"] + common[:-4] +
                           ["--ema-decay", "0.95"], capture_output=True, text=True)
    part, part_log, part_saved = run_trainer(
        prog, case, "ema_part", common + ["--steps", "30", "--checkpoint-dir", part_ck,
                                          "--resume"], work)
    same = (whole.returncode == 0 and first.returncode == 0 and part.returncode == 0 and
            whole_log == part_log and sorted(os.listdir(whole_saved)) and all(
                open(os.path.join(whole_saved, f), "rb").read() ==
                open(os.path.join(part_saved, f), "rb").read() for f in os.listdir(whole_saved)))
    check(same, "--ema-decay: stopped after step 17 and resumed from the checkpoint after step "
          "15, the run writes the uninterrupted one's EMA weights, byte for byte%s"
          % ("" if part.returncode == 0 else ": " + part.stderr[-300:]))
    check(other.returncode != 0 and "written with --ema-decay 0.9" in other.stderr,
          "a checkpoint of --ema-decay 0.9 resumed with --ema-decay 0.95 is refused (%s)"
          % other.stderr.strip()[-160:])
    # --eval-averaged evaluates the weights --save-params writes.
    held = eval_data(case, work)
    run, records, saved = run_trainer(prog, case, "ema_eval", [
        "--steps", "30", "--lr", "0.05", "--momentum", "0.9", "--ema-decay", "0.9",
        "--eval-data", held, "--eval-averaged", "--report-memory"], work)
    evals = [r for r in records if "eval_loss" in r]
    if run.returncode != 0 or not evals:
        check(False, "--eval-averaged runs: %s" % run.stderr.strip()[-300:])
        return
    loss, accuracy, _ = predicted_metrics(prog, saved, held, work)
    check(abs(evals[-1]["eval_loss"] - loss) <= 1e-6 * abs(loss) and
          evals[-1]["eval_accuracy"] == accuracy and "of the EMA weights" in run.stderr,
          "--eval-averaged: the last evaluation is that of the EMA weights --save-params wrote "
          "(loss %.6g vs %.6g)" % (evals[-1]["eval_loss"], loss))
    averaged = sum(v.nbytes for v in case["initial"].values())
    check("averaged weights (EMA): %d bytes" % averaged in run.stdout,
          "--report-memory shows the EMA weights as their own kind (%d bytes): %s"
          % (averaged, [l for l in run.stdout.splitlines() if "averaged" in l]))


SWA_RECIPES = {
    # tag: (trainer flags, SwaRecipe arguments)
    "cosine then SWALR cos": (
        ["--lr-schedule", "cosine", "--swa-start", "20", "--swa-every", "5", "--swa-lr", "0.01",
         "--swa-anneal-steps", "4"],
        dict(start=20, every=5, swa_lr=0.01, anneal=4,
             base=lambda o: sched.CosineAnnealingLR(o, T_max=STEPS))),
    "constant then SWALR linear": (
        ["--swa-start", "30", "--swa-lr", "0.02", "--swa-anneal-steps", "7", "--swa-anneal",
         "linear"],
        dict(start=30, every=1, swa_lr=0.02, anneal=7, strategy="linear")),
}


def check_swa(trainc, work, check, case, bn):
    """--swa-start against AveragedModel and SWALR."""
    prog = compile_mlp(trainc, check, case, work, "sgd")
    if not prog:
        return
    for tag, (flags, recipe) in SWA_RECIPES.items():
        run, records, saved = run_trainer(prog, case, "swa_" + tag.replace(" ", "_"), [
            "--steps", str(STEPS), "--lr", "0.05", "--momentum", "0.9"] + flags, work)
        if run.returncode != 0:
            check(False, "swa %s trains: %s" % (tag, run.stderr.strip()[-300:]))
            continue
        refs = []
        for dtype in (torch.float64, torch.float32):
            swa = SwaRecipe(**recipe)
            lrs = reference_loop(case, dtype, lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9),
                                 swa.make_scheduler, STEPS, after_step=swa.after_step)[0]
            refs.append(swa.averaged())
            if dtype == torch.float64:
                want_lrs = lrs
        got = [r["lr"] for r in records if "lr" in r]
        check(len(got) == STEPS and relative_error(got, want_lrs) <= 1e-12,
              "swa %s: the learning rate of each of %d steps equals the schedule's, then "
              "SWALR's (relative error %.3g; %.4g at step 20, %.4g at the end)"
              % (tag, STEPS, relative_error(got, want_lrs), want_lrs[19], want_lrs[-1]))
        compare_averaged(check, case, saved, refs[0], refs[1],
                         "swa %s: --save-params writes AveragedModel's average against "
                         "PyTorch float64" % tag)
    # With batch norm: the statistics of the average as update_bn computes
    # them (over the training data in file order, batches of 4).
    prog = compile_mlp(trainc, check, bn, work, "sgd")
    if not prog:
        return
    run, _, saved = run_trainer(prog, bn, "swa_bn", [
        "--steps", "30", "--lr", "0.05", "--momentum", "0.9", "--swa-start", "10",
        "--swa-every", "2"], work)
    if run.returncode != 0:
        check(False, "swa bn trains: %s" % run.stderr.strip()[-300:])
        return
    refs = []
    for dtype in (torch.float64, torch.float32):
        swa = SwaRecipe(start=10, every=2)
        reference_loop(bn, dtype, lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9),
                       swa.make_scheduler, 30, after_step=swa.after_step)
        x = torch.tensor(bn["inputs"]["x"]).to(dtype)
        torch.optim.swa_utils.update_bn([x[i:i + BATCH] for i in range(0, len(x), BATCH)],
                                        swa.model)
        refs.append(swa.averaged())
    compare_averaged(check, bn, saved, refs[0], refs[1],
                     "swa with batch norm: --save-params writes AveragedModel's average and "
                     "update_bn's statistics against PyTorch float64")
    check("update_bn: the SWA weights' batch-norm statistics over 40 training samples" in
          run.stderr, "swa with batch norm: the run says it ran update_bn")


MEAN, STD = (0.5, 0.4, 0.3), (0.2, 0.25, 0.3)
NORMALIZE = "x:%s:%s" % (",".join(map(str, MEAN)), ",".join(map(str, STD)))


def image_case(work):
    """A small conv net on 8x8 RGB images stored as users store them: uint8,
    H x W x C (CIFAR's numpy layout)."""
    torch.manual_seed(4)
    build = lambda: torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
        torch.nn.Linear(4 * 8 * 8, 5))
    model = build()
    rng = np.random.RandomState(8)
    images = rng.randint(0, 256, (SAMPLES, 8, 8, 3)).astype(np.uint8)
    labels = rng.randint(0, 5, SAMPLES).astype(np.int64)
    path = os.path.join(work, "images_train.onnx")
    torch.onnx.export(model, (torch.zeros(BATCH, 3, 8, 8),), path, input_names=["x"],
                      output_names=["logits"],
                      dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}},
                      opset_version=17, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.TRAINING)
    data = {}
    for kind in ("hwc", "chw", "float"):
        data[kind] = os.path.join(work, "images-" + kind)
        os.makedirs(data[kind], exist_ok=True)
        np.save(os.path.join(data[kind], "label.npy"), labels)
    np.save(os.path.join(data["hwc"], "x.npy"), images)
    np.save(os.path.join(data["chw"], "x.npy"), np.ascontiguousarray(images.transpose(0, 3, 1, 2)))
    # ToTensor and Normalize by hand, in float32.
    scaled = images.transpose(0, 3, 1, 2).astype(np.float32) / np.float32(255)
    normalized = ((scaled - np.array(MEAN, np.float32)[:, None, None]) /
                  np.array(STD, np.float32)[:, None, None]).astype(np.float32)
    np.save(os.path.join(data["float"], "x.npy"), normalized)
    initial = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    return dict(name="images", spec={"build": build}, path=path, initial=initial, images=images,
                labels=labels, data=data["hwc"], folders=data, loss_flags=[])


def torchvision_batch(case, first, epoch, seed, padding):
    """Samples [first, first + BATCH) through torchvision's RandomCrop(padding),
    RandomHorizontalFlip, ToTensor and Normalize, with the trainer's draws."""
    import torchvision.transforms as T
    import torchvision.transforms.functional as F
    from philox import augment_draw
    out = []
    for sample in range(first, first + BATCH):
        top, left, flip = augment_draw(seed, epoch, sample, padding)
        x = T.ToTensor()(case["images"][sample])  # H x W x C uint8 -> C x H x W / 255
        x = F.crop(F.pad(x, [padding]), top, left, 8, 8)
        if flip:
            x = F.hflip(x)
        out.append(T.Normalize(MEAN, STD)(x))
    return torch.stack(out)


def augmented_reference(case, dtype, steps, seed, padding):
    """SGD over the augmented batches in file order: the loss of each step
    and the final state dict."""
    net = case["spec"]["build"]()
    net.load_state_dict({k: torch.tensor(v) for k, v in case["initial"].items()})
    net = net.to(dtype).train()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    losses = []
    per_epoch = SAMPLES // BATCH
    for k in range(steps):
        first = (k % per_epoch) * BATCH
        x = torchvision_batch(case, first, k // per_epoch + 1, seed, padding).to(dtype)
        y = torch.tensor(case["labels"][first:first + BATCH])
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(x), y)
        loss.backward()
        optimizer.step()
        losses.append(float(loss))
    return losses, {k: v.detach().double().numpy() for k, v in net.state_dict().items()}


def same_files(a, b):
    return sorted(os.listdir(a)) == sorted(os.listdir(b)) and all(
        open(os.path.join(a, f), "rb").read() == open(os.path.join(b, f), "rb").read()
        for f in os.listdir(a))


def check_images(trainc, work, check):
    """uint8 images, --normalize and --augment against torchvision."""
    case = image_case(work)
    prog = compile_mlp(trainc, check, case, work, "sgd")
    if not prog:
        return
    base = ["--lr", "0.05", "--momentum", "0.9", "--seed", "7"]
    flags = base + ["--steps", "20"]
    augmentation = ["--normalize", NORMALIZE, "--augment", "crop:2,flip"]
    augmented = flags + augmentation
    run, records, saved = run_trainer(prog, case, "images_aug", augmented, work)
    if run.returncode != 0:
        check(False, "images: --augment trains: %s" % run.stderr.strip()[-300:])
        return
    losses64, ref64 = augmented_reference(case, torch.float64, 20, 7, 2)
    losses32, ref32 = augmented_reference(case, torch.float32, 20, 7, 2)
    got = [r["loss"] for r in records if "loss" in r and "step" in r]
    check(len(got) == 20 and relative_error(got, losses64) <= 1e-5,
          "images: uint8 H x W x C, --normalize and --augment crop:2,flip: the loss of each of "
          "20 steps (2 epochs) equals PyTorch's on torchvision's RandomCrop(padding=2), "
          "RandomHorizontalFlip, ToTensor and Normalize with the same draws (relative error "
          "%.3g)" % relative_error(got, losses64))
    names = [k for k in ref64 if k in case["initial"]]
    ok, text = compare_weights({k: case["initial"][k] for k in names},
                               {k: np.load(os.path.join(saved, k + ".npy")) for k in names},
                               {k: ref64[k] for k in names}, {k: ref32[k] for k in names})
    check(ok, "images: the weights after 20 augmented steps against PyTorch float64, %s" % text)
    # Without --augment, a uint8 file (either layout) trains exactly as the
    # float32 file normalized by hand.
    plain = flags + ["--normalize", NORMALIZE]
    runs = {}
    for kind in ("hwc", "chw", "float"):
        folder = case["folders"][kind]
        runs[kind] = run_trainer(prog, dict(case, data=folder), "images_" + kind,
                                 plain if kind != "float" else flags, work)
    check(all(r[0].returncode == 0 for r in runs.values()) and
          runs["hwc"][1] == runs["float"][1] and same_files(runs["hwc"][2], runs["float"][2])
          and same_files(runs["chw"][2], runs["float"][2]),
          "images: uint8 files (H x W x C and C x H x W) with --normalize train bit for bit as "
          "the float32 file normalized by hand (ToTensor and Normalize in float32)")
    # --predict and evaluation read them the same way.
    outs = {}
    for kind in ("hwc", "float"):
        outs[kind] = os.path.join(work, "images-pred-" + kind)
        shutil.rmtree(outs[kind], ignore_errors=True)
        extra = ["--normalize", NORMALIZE] if kind == "hwc" else []
        subprocess.run([prog, "--predict", "--params", saved, "--data", case["folders"][kind],
                        "--out", outs[kind]] + extra, check=True, capture_output=True)
    check(same_files(outs["hwc"], outs["float"]),
          "images: --predict --normalize on the uint8 file writes what it writes for the "
          "normalized float32 file")
    evals = {}
    for kind in ("hwc", "float"):
        evals[kind] = run_trainer(prog, dict(case, data=case["folders"][kind]),
                                  "images_eval_" + kind, flags + ["--eval-data",
                                                                  case["folders"][kind]] +
                                  (["--normalize", NORMALIZE] if kind == "hwc" else []), work)
    check(evals["hwc"][0].returncode == 0 and evals["hwc"][1] == evals["float"][1],
          "images: evaluation of the uint8 file with --normalize logs what the normalized "
          "float32 file's does (never augmented)")
    # A run stopped after step 13 and resumed draws the same augmentations.
    ck = os.path.join(work, "images-ck")
    shutil.rmtree(ck, ignore_errors=True)
    first = subprocess.run([prog, "--data", case["data"], "--no-shuffle", "--log",
                            os.path.join(work, "images_part.jsonl"), "--checkpoint-dir", ck,
                            "--checkpoint-every", "3", "--steps", "13"] + base + augmentation,
                           capture_output=True, text=True)
    part = run_trainer(prog, case, "images_part", augmented + ["--checkpoint-dir", ck,
                                                               "--checkpoint-every", "3",
                                                               "--resume"], work)
    check(first.returncode == 0 and part[0].returncode == 0 and part[1] == records and
          same_files(part[2], saved),
          "images: a run stopped after step 13 and resumed (checkpoint after step 12) draws the "
          "same augmentations and trains as the uninterrupted one%s"
          % ("" if part[0].returncode == 0 else ": " + part[0].stderr[-300:]))


def check_python(trainc, work, check):
    """python/trainc_torch.py's compile, fit, predict and load_into on a
    module with batch norm and dropout."""
    sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
    import trainc_torch
    torch.manual_seed(3)
    module = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.BatchNorm1d(32),
                                 torch.nn.ReLU(), torch.nn.Dropout(0.1), torch.nn.Linear(32, 4))
    rng = np.random.RandomState(4)
    x = rng.randn(96, 16).astype(np.float32)
    y = (x[:, :4].argmax(axis=1)).astype(np.int64)  # learnable
    vx, vy = x[:24] + 0.1 * rng.randn(24, 16).astype(np.float32), y[:24]
    before = {k: v.detach().clone() for k, v in module.state_dict().items()}
    folder = os.path.join(work, "python-api")
    shutil.rmtree(folder, ignore_errors=True)
    try:
        trainer = trainc_torch.compile(module, torch.zeros(8, 16), loss="cross-entropy",
                                       optimizer="sgd", target="cpu", workdir=folder,
                                       trainc=trainc)
        log = trainer.fit((x, y), eval_data=(vx, vy), epochs=4, lr=0.1, momentum=0.9)
        loaded = trainer.load_into(module)
    except (RuntimeError, ValueError, OSError) as error:
        check(False, "python: compile, fit and load_into run: %s" % str(error)[-300:])
        return
    evals = [r for r in log if "eval_accuracy" in r]
    check(len([r for r in log if "loss" in r]) == 48 and len(evals) == 4,
          "python: fit trains 4 epochs of 12 steps and returns the log (%d records, last "
          "held-out accuracy %s)" % (len(log), evals[-1]["eval_accuracy"] if evals else None))
    changed = [k for k in loaded if not torch.equal(module.state_dict()[k], before[k])]
    check(len(loaded) == len(before) - 1 and "1.running_mean" in changed,
          "python: load_into copies the %d trained parameters and batch-norm statistics (%s), "
          "all but num_batches_tracked" % (len(loaded), ", ".join(loaded)))
    module.eval()
    with torch.no_grad():
        ours = module(torch.tensor(vx)).numpy()
    theirs = trainer.predict((vx,))["logits"]
    error = float(np.abs(ours - theirs).max())
    check(np.allclose(ours, theirs, rtol=1e-5, atol=1e-5),
          "python: the module's eval() output after load_into equals the trainer's --predict "
          "(max abs error %.3g)" % error)


def main():
    global GPU_DIR
    trainc, work = sys.argv[1], sys.argv[2]
    parts = {"schedules", "rangetest", "evaluation", "loss", "gradnorm", "averaging", "images",
             "python"}
    args = sys.argv[3:]
    while args:
        if args[0] == "--only" and len(args) > 1:
            parts = set(args[1].split(","))
        elif args[0] == "--gpu-prepare" and len(args) > 1:
            GPU_DIR = os.path.abspath(args[1])
            os.makedirs(GPU_DIR, exist_ok=True)
        else:
            print(__doc__)
            return 2
        args = args[2:]
    os.makedirs(work, exist_ok=True)
    passed = failed = 0

    def check(ok, what):
        nonlocal passed, failed
        print(("PASS" if ok else "FAIL") + ": recipes :: " + what, flush=True)
        passed, failed = passed + ok, failed + (not ok)

    case = zoo_case(work, "mlp")
    if "schedules" in parts:
        check_schedules(trainc, work, check, case)
    if "rangetest" in parts:
        check_range_test(trainc, work, check, case)
    if "evaluation" in parts:
        check_evaluation(trainc, work, check, case)
    if "loss" in parts:
        check_loss_options(trainc, work, check, case)
        check_no_label(trainc, work, check, case)
    if "gradnorm" in parts:
        check_grad_norm(trainc, work, check, case)
    if "averaging" in parts:
        bn = bn_case(work)
        check_ema(trainc, work, check, case, bn)
        check_swa(trainc, work, check, case, bn)
    if "images" in parts:
        check_images(trainc, work, check)
    if "python" in parts:
        check_python(trainc, work, check)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
