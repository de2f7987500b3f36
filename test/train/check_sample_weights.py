#!/usr/bin/python3
"""Per-sample losses and the user's sample weights against PyTorch.

Usage: check_sample_weights.py TRAINC WORKDIR [--gpu-prepare DIR]

On the zoo's MLP (CPU trainers, batch 4, in file order, SGD with momentum
0.9, 10 steps, from the ONNX initial weights), with DIR/sample_weights.npy
(random weights in [0, 2], some of them 0):
  * cross-entropy, mse and bce, each with --sample-weight-norm=sum
    ((w * l).sum() / w.sum()) and mean ((w * l).mean()), where l is
    PyTorch's reduction='none' loss averaged over each sample's positions:
    each step's loss (relative 1e-5) and the weights after 10 steps against
    PyTorch float64 (test/pylib/float64_compare.py: norm-wise 1e-6, or 4x
    PyTorch float32's own error);
  * each step's per-sample losses, before the weights: the log's
    sample_loss_min, _median and _max against PyTorch float64's (relative
    1e-5);
  * --grad-accum=2: the normalization is over the whole effective batch of
    8 (sum and mean); data parallelism (mpirun -np 2 at batch 2) trains as
    one process at batch 4 (sum and mean, each tensor within 1e-5
    norm-wise);
  * a model with batch norm, 38 samples (the last batch padded): a sample of
    weight 0 is in the batch statistics (as in PyTorch), a padding row is
    not;
  * a batch whose weights are all 0 (0/0 under sum): not run, the log says
    so, the weights equal PyTorch's without that update; under mean it
    trains (loss 0, momentum only);
  * bad files are refused before step 1, naming the file and the sample: a
    negative, NaN or infinite weight, the wrong shape or dtype;
  * --sampler=priority and mh (--trace-batches): each batch's importance
    weights against a NumPy replay of the priorities from the traced losses
    ((loss + eps)^alpha, untrained samples at the running maximum, the
    losses of batch n counted from the draw of batch n + 2, weights
    (p_i / p_min)^-beta with beta annealed to 1), and the run against
    PyTorch float64 training on the traced rows with those weights (each
    step's loss, the weights after 10 steps); a run stopped at a checkpoint
    and resumed draws and trains the same bytes; misuse is refused.
  * --select=topk (trainc compile --select-batch=16, batch 4): each step's
    candidates, their losses (relative 1e-5) and the chosen rows against
    torch.topk of PyTorch float64's per-sample losses (model.train(), batch
    norm on the candidates' statistics without updating the running ones),
    and training on the chosen rows against PyTorch float64 (each step's
    loss, the weights after 6 steps), with --select-fraction 2/16 too (the
    step's other rows padding); on the MLP and a model with batch norm (40
    samples: the last 8 candidates padded to 16); resume bit-exact;
    --predict --per-sample-loss against PyTorch's reduction='none'; misuse
    refused, --per-sample-loss without a selection entry included;
  * --select=prob (beta 2, history 32, 60 steps): each selection's CDF
    replayed in NumPy from the traced losses (the history before the
    batch); a candidate above the whole history is always kept, one below
    it never; the kept share against the mean of CDF^beta (within 5 binomial
    standard deviations); the steps train the kept rows first in, first out,
    against PyTorch float64 (each step's loss, the weights); resume
    bit-exact.
(test/runtime/SamplerTest.cpp checks 10^5 draws of each sampler against the
target distribution.)
--gpu-prepare DIR packs CUDA trainers of the MLP with sample weights
(cross-entropy, sum) and with --select=topk beside the CPU trainer's log and
weights, as check_recipes.py's (test/gpu/compare_recipes.py compares them).
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
from check_optimizers import trained_params, zoo_case  # noqa: E402
import check_recipes  # noqa: E402
from check_recipes import bn_case, prepare_gpu_case, relative_error, without_timing  # noqa: E402
from float64_compare import compare_weights  # noqa: E402

torch.set_num_threads(2)
BATCH, STEPS, LR, MOMENTUM = 4, 10, 0.1, 0.9
F = torch.nn.functional


def initial_net(case, dtype):
    """The case's model at its initial weights in `dtype`, in train mode."""
    torch.manual_seed(0)
    net = case["spec"]["build"]()
    net.load_state_dict({k: torch.tensor(case["initial"][k]) if k in case["initial"] else v
                         for k, v in net.state_dict().items()})
    net = net.to(dtype)
    net.train()
    return net


def final_state(net):
    return {k: v.detach().double().numpy() for k, v in net.state_dict().items()}


def per_sample(kind, out, target):
    """PyTorch's reduction='none' loss of `kind`, averaged over each
    sample's positions: [N]."""
    if kind == "cross-entropy":
        l = F.cross_entropy(out, target, reduction="none")
    elif kind == "mse":
        l = F.mse_loss(out, target, reduction="none")
    else:
        l = F.binary_cross_entropy_with_logits(out, target, reduction="none")
    return l.reshape(l.shape[0], -1).mean(dim=1)


def reference(case, kind, norm, weights, dtype, accum=1, samples=None):
    """STEPS optimizer steps in file order: each step's loss, each step's
    per-sample losses (the batches of its group), the final state dict. A
    group whose weights are all 0 under sum is not run (loss NaN)."""
    net = initial_net(case, dtype)
    optimizer = torch.optim.SGD(net.parameters(), lr=LR, momentum=MOMENTUM)
    x_all = case["inputs"]["x"] if samples is None else case["inputs"]["x"][:samples]
    n = len(x_all)
    batches = (n + BATCH - 1) // BATCH
    losses, sample_losses = [], []
    for k in range(STEPS):
        group = [((k * accum + j) % batches) for j in range(accum)]
        rows = [list(range(b * BATCH, min(n, (b + 1) * BATCH))) for b in group]
        w_all = torch.tensor(np.concatenate([weights[r] for r in rows]), dtype=dtype)
        if norm == "sum" and float(w_all.sum()) == 0:
            losses.append(math.nan)
            sample_losses.append(None)
            continue
        divisor = w_all.sum() if norm == "sum" else torch.tensor(float(len(w_all)), dtype=dtype)
        optimizer.zero_grad()
        total, seen = 0.0, []
        for r in rows:
            x = torch.tensor(x_all[r]).to(dtype)
            y = torch.tensor(case["labels"][r])
            if y.is_floating_point():
                y = y.to(dtype)
            l = per_sample(kind, net(x), y)
            loss = (torch.tensor(weights[r], dtype=dtype) * l).sum() / divisor
            loss.backward()
            total += float(loss)
            seen.extend(l.detach().double().tolist())
        optimizer.step()
        losses.append(total)
        sample_losses.append(seen)
    state = final_state(net)
    return losses, sample_losses, state


def compile_trainer(trainc, check, case, work, kind, flags):
    prog = os.path.join(work, "_".join([case["name"], kind] + [f.strip("-").replace("=", "-")
                                                                for f in flags]))
    build = subprocess.run([trainc, "compile", case["path"], "--target=cpu",
                            "--batch-size=%d" % BATCH, "--loss=" + kind, "--optimizer=sgd",
                            "-o", prog] + flags, capture_output=True, text=True)
    if build.returncode != 0:
        check(False, "%s %s compiles: %s" % (kind, flags, build.stderr.strip()[:300]))
        return None
    return prog


def write_data(case, folder, weights, samples=None):
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    end = samples or len(case["labels"])
    np.save(os.path.join(folder, "x.npy"), case["inputs"]["x"][:end])
    np.save(os.path.join(folder, "label.npy"), case["labels"][:end])
    if weights is not None:
        np.save(os.path.join(folder, "sample_weights.npy"), weights)
    return folder


def train(prog, folder, tag, work, flags=()):
    """Trains STEPS steps (in file order, unless `flags` names a sampler)."""
    log = os.path.join(work, tag + ".jsonl")
    saved = os.path.join(work, tag + ".params")
    shutil.rmtree(saved, ignore_errors=True)
    order = [] if "--sampler" in flags else ["--no-shuffle"]
    run = subprocess.run([prog, "--data", folder] + order + ["--log", log, "--save-params",
                          saved, "--steps", str(STEPS), "--lr", str(LR), "--momentum",
                          str(MOMENTUM)] + list(flags), capture_output=True, text=True)
    records = ([without_timing(json.loads(line)) for line in open(log)]
               if run.returncode == 0 and os.path.exists(log) else [])
    return run, records, saved


def compare_run(check, case, tag, records, saved, refs):
    (losses64, samples64, ref64), (_, _, ref32) = refs
    got = [r.get("loss") for r in records]
    want = [l for l in losses64]
    ran = [(g, w) for g, w in zip(got, want) if not math.isnan(w)]
    error = relative_error([g for g, _ in ran], [w for _, w in ran])
    check(len(got) == STEPS and all(g is not None for g, _ in ran) and error <= 1e-5,
          "%s: each step's loss against PyTorch float64 (max relative error %.3g, "
          "tolerance 1e-5)" % (tag, error))
    stats_got, stats_want = [], []
    for r, s in zip(records, samples64):
        if s is None:
            continue
        stats_got += [r.get("sample_loss_min", math.nan), r.get("sample_loss_median", math.nan),
                      r.get("sample_loss_max", math.nan)]
        stats_want += [min(s), float(np.median(s)), max(s)]
    error = relative_error(stats_got, stats_want)
    check(len(stats_got) == len(stats_want) and error <= 1e-5,
          "%s: each step's per-sample losses (min, median, max, before the weights) against "
          "PyTorch float64's reduction='none' (max relative error %.3g)" % (tag, error))
    names = [k for k in trained_params(case) if k in ref64]
    ok, text = compare_weights({k: case["initial"][k] for k in names},
                               {k: np.load(os.path.join(saved, k + ".npy")) for k in names},
                               {k: ref64[k] for k in names}, {k: ref32[k] for k in names})
    check(ok, "%s: weights after %d steps against PyTorch float64, %s" % (tag, STEPS, text))


def mlp_case(work, kind):
    """The zoo MLP with class labels (cross-entropy) or float targets [N, 10]
    (mse: normal; bce: in [0, 1])."""
    case = dict(zoo_case(work, "mlp"))
    rng = np.random.RandomState(11)
    if kind == "mse":
        case["labels"] = rng.randn(len(case["labels"]), 10).astype(np.float32)
    elif kind == "bce":
        case["labels"] = rng.rand(len(case["labels"]), 10).astype(np.float32)
    return case


def weights_for(n, seed=3):
    rng = np.random.RandomState(seed)
    w = (2 * rng.rand(n)).astype(np.float32)
    w[rng.rand(n) < 0.2] = 0
    return w


def check_losses(trainc, work, check):
    for kind in ("cross-entropy", "mse", "bce"):
        case = mlp_case(work, kind)
        weights = weights_for(len(case["labels"]))
        folder = write_data(case, os.path.join(work, kind + "-data"), weights)
        for norm, accum in (("sum", 1), ("mean", 1), ("sum", 2), ("mean", 2)):
            if accum == 2 and kind != "cross-entropy":
                continue
            flags = ["--sample-weight-norm=" + norm] + (["--grad-accum=2"] if accum > 1 else [])
            prog = compile_trainer(trainc, check, case, work, kind, flags)
            if not prog:
                continue
            tag = "%s, --sample-weight-norm=%s%s" % (kind, norm,
                                                    ", --grad-accum=2" if accum > 1 else "")
            run, records, saved = train(prog, folder, tag.replace(" ", "").replace(",", "_"),
                                        work)
            if run.returncode != 0:
                check(False, "%s trains: %s" % (tag, run.stderr.strip()[-300:]))
                continue
            refs = [reference(case, kind, norm, weights, dtype, accum)
                    for dtype in (torch.float64, torch.float32)]
            compare_run(check, case, tag, records, saved, refs)
            if kind == "cross-entropy" and norm == "sum" and accum == 1:
                prepare_gpu_case(trainc, "sample weights", dict(case, data=folder), "sgd",
                                 flags, ["--steps", str(STEPS), "--lr", str(LR), "--momentum",
                                         str(MOMENTUM)], saved,
                                 os.path.join(work, tag.replace(" ", "").replace(",", "_") +
                                              ".jsonl"))


def check_data_parallel(trainc, work, check):
    """Two ranks at batch 2 against one process at batch 4, with weights
    (zeros among them): the normalization is over the global batch."""
    from check_training import MPI_ENV, mpirun_command
    if not shutil.which("mpirun"):
        check(False, "sample weights under data parallelism: mpirun is missing")
        return
    case = mlp_case(work, "cross-entropy")
    weights = weights_for(len(case["labels"]), seed=6)
    folder = write_data(case, os.path.join(work, "dp-data"), weights)
    for norm in ("sum", "mean"):
        saved = {}
        for ranks, batch in ((2, 2), (1, 4)):
            prog = os.path.join(work, "dp_%s_%d" % (norm, ranks))
            build = subprocess.run([trainc, "compile", case["path"], "--target=cpu",
                                    "--batch-size=%d" % batch, "--loss=cross-entropy",
                                    "--optimizer=sgd", "--sample-weight-norm=" + norm, "-o",
                                    prog] + (["--data-parallel"] if ranks > 1 else []),
                                   capture_output=True, text=True)
            out = os.path.join(work, "dp_%s_%d.params" % (norm, ranks))
            shutil.rmtree(out, ignore_errors=True)
            args = ["--data", folder, "--no-shuffle", "--steps", "10", "--lr", str(LR),
                    "--momentum", str(MOMENTUM), "--save-params", out]
            cmd = mpirun_command(ranks, prog, args) if ranks > 1 else [prog] + args
            run = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=MPI_ENV) \
                if build.returncode == 0 else build
            saved[ranks] = out if run.returncode == 0 else run.stderr.strip()[-200:]
        if not all(os.path.isdir(str(v)) for v in saved.values()):
            check(False, "sample weights (%s) under data parallelism train: %s" % (norm, saved))
            continue
        worst = 0.0
        for f in os.listdir(saved[1]):
            a, b = np.load(os.path.join(saved[2], f)), np.load(os.path.join(saved[1], f))
            worst = max(worst, float(np.linalg.norm(a - b) / np.linalg.norm(b)))
        check(worst <= 1e-5, "--sample-weight-norm=%s: 2 ranks at batch 2 train as 1 process at "
                             "batch 4 with the same weights (worst tensor norm-wise %.2g, "
                             "tolerance 1e-5; the sums differ only in order)" % (norm, worst))


def check_batch_norm(trainc, work, check):
    """38 samples: batch 10 has 2 real rows and 2 of padding."""
    case = bn_case(work)
    samples = 38
    weights = weights_for(samples, seed=4)
    weights[5] = 0  # batch 2: a real row of weight 0, in the batch statistics
    folder = write_data(case, os.path.join(work, "bn-weighted"), weights, samples)
    prog = compile_trainer(trainc, check, case, work, "cross-entropy", [])
    if not prog:
        return
    run, records, saved = train(prog, folder, "bn_weighted", work)
    if run.returncode != 0:
        check(False, "batch norm with sample weights trains: %s" % run.stderr.strip()[-300:])
        return
    refs = [reference(case, "cross-entropy", "sum", weights, dtype, samples=samples)
            for dtype in (torch.float64, torch.float32)]
    compare_run(check, case, "batch norm, 38 samples (a short last batch), a weight of 0",
                records, saved, refs)


def check_zero_batch(trainc, work, check):
    case = mlp_case(work, "cross-entropy")
    weights = weights_for(len(case["labels"]), seed=5)
    weights[8:12] = 0  # step 3
    folder = write_data(case, os.path.join(work, "zero-batch"), weights)
    for norm in ("sum", "mean"):
        prog = compile_trainer(trainc, check, case, work, "cross-entropy",
                               ["--sample-weight-norm=" + norm])
        if not prog:
            continue
        run, records, saved = train(prog, folder, "zero_" + norm, work)
        if run.returncode != 0:
            check(False, "a batch of weight 0 (%s) trains on: %s" % (norm, run.stderr[-300:]))
            continue
        third = records[2] if len(records) > 2 else {}
        if norm == "sum":
            check(third.get("loss", 0) is None and third.get("skipped") is True and
                  "step 3: nothing in its batch counts" in run.stderr,
                  "sum: step 3's weights all 0 (0/0): not run, the log says so (%s)" % third)
        else:
            check(third.get("loss") == 0.0 and not third.get("skipped"),
                  "mean: step 3's weights all 0: the loss is 0 and the step runs (%s)" % third)
        refs = [reference(case, "cross-entropy", norm, weights, dtype)
                for dtype in (torch.float64, torch.float32)]
        compare_run(check, case, "a batch of weight 0, --sample-weight-norm=" + norm, records,
                    saved, refs)


def check_bad_files(trainc, work, check):
    case = mlp_case(work, "cross-entropy")
    prog = compile_trainer(trainc, check, case, work, "cross-entropy", [])
    if not prog:
        return
    n = len(case["labels"])
    good = np.ones(n, np.float32)
    bad = {
        "a negative weight": (np.where(np.arange(n) == 7, -1, good).astype(np.float32),
                              "sample 7 has weight -1"),
        "a NaN weight": (np.where(np.arange(n) == 9, np.nan, good).astype(np.float32),
                         "sample 9 has weight nan"),
        "an infinite weight": (np.where(np.arange(n) == 0, np.inf, good).astype(np.float32),
                               "sample 0 has weight inf"),
        "float64": (good.astype(np.float64), "sample weights are float32 of shape (40,)"),
        "one weight short": (good[:-1], "sample weights are float32 of shape (40,)"),
        "two columns": (np.ones((n, 2), np.float32), "sample weights are float32 of shape"),
    }
    for tag, (weights, message) in bad.items():
        folder = write_data(case, os.path.join(work, "bad-weights"), weights)
        run = subprocess.run([prog, "--data", folder, "--steps", "1"], capture_output=True,
                             text=True)
        path = os.path.join(folder, "sample_weights.npy")
        check(run.returncode != 0 and message in run.stderr and path in run.stderr and
              "step 1" not in run.stdout,
              "%s in sample_weights.npy is refused before step 1, naming the file and %s "
              "(%s)" % (tag, message, run.stderr.strip()[-200:]))


def replay_weights(trace, alpha, eps, beta0, samples, steps):
    """The importance weights of each drawn batch from the traced losses, in
    NumPy: the worst relative error against the trace's, and whether each
    batch's beta is the annealed one."""
    draws = [r for r in trace if "rows" in r]
    losses = {r["batch"]: np.asarray(r["losses"], np.float64) for r in trace if "losses" in r}
    priority = np.full(samples, np.nan)
    max_p, applied, worst, betas_ok = 1.0, 0, 0.0, True
    for d in draws:
        n = d["batch"]
        while applied <= n - 2:
            rows_n = next(x["rows"] for x in draws if x["batch"] == applied)
            if applied in losses:
                for row, loss in zip(rows_n, losses[applied]):
                    priority[row] = (loss + eps) ** alpha
                    max_p = max(max_p, priority[row])
            applied += 1
        current = np.where(np.isnan(priority), max_p, priority)
        beta = beta0 + (1 - beta0) * min(1.0, n / (steps - 1))
        betas_ok &= abs(d["beta"] - beta) <= 1e-12
        want = (current[d["rows"]] / current.min()) ** -beta
        worst = max(worst, float(np.max(np.abs(np.asarray(d["weights"]) - want) / want)))
    return worst, betas_ok


def replay_training(case, trace, dtype):
    """PyTorch SGD (momentum 0.9) over the traced batches, each loss
    (w * l).sum() / batch: each step's loss and the final state."""
    net = initial_net(case, dtype)
    optimizer = torch.optim.SGD(net.parameters(), lr=LR, momentum=MOMENTUM)
    losses = []
    for d in (r for r in trace if "rows" in r):
        rows = d["rows"]
        x = torch.tensor(case["inputs"]["x"][rows]).to(dtype)
        y = torch.tensor(case["labels"][rows])
        w = torch.tensor(d["weights"], dtype=dtype)
        optimizer.zero_grad()
        loss = (w * per_sample("cross-entropy", net(x), y)).sum() / len(rows)
        loss.backward()
        optimizer.step()
        losses.append(float(loss))
    return losses, final_state(net)


def check_samplers(trainc, work, check):
    case = mlp_case(work, "cross-entropy")
    folder = write_data(case, os.path.join(work, "sampler-data"), None)
    prog = compile_trainer(trainc, check, case, work, "cross-entropy",
                           ["--sample-weight-norm=mean"])
    if not prog:
        return
    n = len(case["labels"])
    for kind, alpha in (("priority", 0.6), ("mh", 1.0)):
        trace_path = os.path.join(work, kind + ".trace.jsonl")
        run, records, saved = train(prog, folder, "sampler_" + kind, work,
                                    ["--sampler", kind, "--trace-batches", trace_path])
        if run.returncode != 0:
            check(False, "--sampler=%s trains: %s" % (kind, run.stderr.strip()[-300:]))
            continue
        trace = [json.loads(line) for line in open(trace_path)]
        worst, betas_ok = replay_weights(trace, alpha, 1e-6, 0.4, n, STEPS)
        check(betas_ok and worst <= 1e-6,
              "--sampler=%s: each batch's importance weights against NumPy's replay of the "
              "priorities from the traced losses, beta annealed from 0.4 to 1 (max relative "
              "error %.3g)" % (kind, worst))
        drawn = sorted({row for r in trace if "rows" in r for row in r["rows"]})
        check(len([r for r in trace if "rows" in r]) == STEPS and len(drawn) > 4,
              "--sampler=%s: %d batches drawn, %d distinct samples" % (kind, STEPS, len(drawn)))
        (losses64, ref64), (_, ref32) = [replay_training(case, trace, dtype)
                                         for dtype in (torch.float64, torch.float32)]
        got = [r.get("loss") for r in records]
        error = relative_error(got, losses64) if None not in got else math.inf
        check(len(got) == STEPS and error <= 1e-5,
              "--sampler=%s: each step's loss, (w * l).mean() on the drawn rows, against "
              "PyTorch float64 (max relative error %.3g)" % (kind, error))
        names = [k for k in trained_params(case) if k in ref64]
        ok, text = compare_weights({k: case["initial"][k] for k in names},
                                   {k: np.load(os.path.join(saved, k + ".npy")) for k in names},
                                   {k: ref64[k] for k in names}, {k: ref32[k] for k in names})
        check(ok, "--sampler=%s: weights after %d steps against PyTorch float64 on the same "
                  "rows and weights, %s" % (kind, STEPS, text))
        # Stopped after step 5's checkpoint (simulated: --steps 5, with beta
        # 1 throughout, as the annealing depends on the run's length) and
        # resumed: the same draws and bytes as the uninterrupted run.
        ckpt = os.path.join(work, kind + "-ckpt")
        shutil.rmtree(ckpt, ignore_errors=True)
        trace_path = os.path.join(work, kind + ".beta1.jsonl")
        resumed_trace = os.path.join(work, kind + ".resumed.jsonl")
        beta1 = ["--sampler", kind, "--priority-beta", "1"]
        _, _, saved = train(prog, folder, "sampler_%s_beta1" % kind, work,
                            beta1 + ["--trace-batches", trace_path])
        flags = beta1 + ["--trace-batches", resumed_trace, "--checkpoint-dir", ckpt,
                         "--checkpoint-every", "5"]
        first = subprocess.run([prog, "--data", folder, "--steps", "5", "--lr", str(LR),
                                "--momentum", str(MOMENTUM)] + flags, capture_output=True,
                               text=True)
        second, _, resumed = train(prog, folder, "sampler_%s_resumed" % kind, work,
                                   flags + ["--resume"])
        same = first.returncode == 0 and second.returncode == 0 and all(
            open(os.path.join(saved, f), "rb").read() == open(os.path.join(resumed, f),
                                                              "rb").read()
            for f in os.listdir(saved))
        draws = lambda path: [l for l in open(path) if '"rows"' in l] if os.path.exists(path) \
            else []
        check(same and draws(resumed_trace) == draws(trace_path),
              "--sampler=%s: a run stopped after step 5's checkpoint and resumed draws the same "
              "batches and writes the uninterrupted run's bytes (%s)"
              % (kind, (first.stderr + second.stderr).strip()[-200:]))
    refusals = {
        "--priority-alpha without --sampler": (["--priority-alpha", "0.5"],
                                               "--priority-alpha is a parameter of --sampler"),
        "--sampler with --no-shuffle": (["--sampler", "priority", "--no-shuffle"],
                                        "exclude each other"),
        "--priority-beta above 1": (["--sampler", "mh", "--priority-beta", "1.5"],
                                    "--priority-beta must be in [0, 1]"),
    }
    for tag, (flags, message) in refusals.items():
        run = subprocess.run([prog, "--data", folder, "--steps", "1"] + flags,
                             capture_output=True, text=True)
        check(run.returncode != 0 and message in run.stderr,
              "%s is refused (%s)" % (tag, run.stderr.strip()[-160:]))


SELECT_BATCH, SELECT_STEPS = 16, 6


def select_reference(case, dtype, keep):
    """SELECT_STEPS steps of topk selection in file order: each step's
    candidates' losses and chosen rows, each step's loss, the final state."""
    net = initial_net(case, dtype)
    optimizer = torch.optim.SGD(net.parameters(), lr=LR, momentum=MOMENTUM)
    n = len(case["labels"])
    per_epoch = (n + SELECT_BATCH - 1) // SELECT_BATCH
    out = []
    for step in range(SELECT_STEPS):
        first = (step % per_epoch) * SELECT_BATCH
        rows = list(range(first, min(n, first + SELECT_BATCH)))
        x = torch.tensor(case["inputs"]["x"][rows]).to(dtype)
        y = torch.tensor(case["labels"][rows])
        # The selection forward updates no running statistic.
        buffers = {k: v.clone() for k, v in net.named_buffers()}
        with torch.no_grad():
            candidate_losses = per_sample("cross-entropy", net(x), y)
        for k, v in net.named_buffers():
            v.copy_(buffers[k])
        top = torch.topk(candidate_losses, min(keep, len(rows))).indices
        chosen = sorted(rows[i] for i in top.tolist())
        optimizer.zero_grad()
        xs = torch.tensor(case["inputs"]["x"][chosen]).to(dtype)
        loss = per_sample("cross-entropy", net(xs), torch.tensor(case["labels"][chosen])).mean()
        loss.backward()
        optimizer.step()
        out.append((rows, candidate_losses.tolist(), chosen, float(loss)))
    return out, final_state(net)


def check_selection(trainc, work, check):
    mlp = mlp_case(work, "cross-entropy")
    for case, keep, fraction in ((mlp, 4, None), (mlp, 2, "0.125"), (bn_case(work), 4, None)):
        tag = "--select=topk, %s, %d of %d candidates" % (case["name"], keep, SELECT_BATCH)
        prog = compile_trainer(trainc, check, case, work, "cross-entropy",
                               ["--select-batch=%d" % SELECT_BATCH])
        if not prog:
            continue
        folder = write_data(case, os.path.join(work, "select-" + case["name"]), None)
        trace_path = os.path.join(work, "select-%s-%d.jsonl" % (case["name"], keep))
        extra = ["--select-fraction", fraction] if fraction else []
        flags = ["--select", "topk", "--trace-batches", trace_path] + extra
        log = os.path.join(work, "select.jsonl")
        saved = os.path.join(work, "select.params")
        shutil.rmtree(saved, ignore_errors=True)
        run = subprocess.run([prog, "--data", folder, "--no-shuffle", "--steps",
                              str(SELECT_STEPS), "--lr", str(LR), "--momentum", str(MOMENTUM),
                              "--log", log, "--save-params", saved] + flags,
                             capture_output=True, text=True)
        if run.returncode != 0:
            check(False, "%s trains: %s" % (tag, run.stderr.strip()[-300:]))
            continue
        trace = [json.loads(line) for line in open(trace_path)]
        records = [json.loads(line) for line in open(log)]
        (ref64, state64), (_, state32) = [select_reference(case, dtype, keep)
                                          for dtype in (torch.float64, torch.float32)]
        same_candidates = [t["candidates"] for t in trace] == [r[0] for r in ref64]
        loss_error = relative_error([l for t in trace for l in t["losses"]],
                                    [l for r in ref64 for l in r[1]])
        check(same_candidates and loss_error <= 1e-5,
              "%s: each step's candidates and their losses against PyTorch float64's "
              "(max relative error %.3g)" % (tag, loss_error))
        check([t["rows"] for t in trace] == [r[2] for r in ref64],
              "%s: the rows each step trains are torch.topk's of PyTorch's losses (%s)"
              % (tag, [t["rows"] for t in trace][:2]))
        error = relative_error([r["loss"] for r in records], [r[3] for r in ref64])
        check(len(records) == SELECT_STEPS and error <= 1e-5,
              "%s: each step's loss, the mean over the chosen rows, against PyTorch float64 "
              "(max relative error %.3g)" % (tag, error))
        names = [k for k in state64 if k in case["initial"] and
                 np.asarray(case["initial"][k]).dtype.kind == "f"]
        ok, text = compare_weights({k: case["initial"][k] for k in names},
                                   {k: np.load(os.path.join(saved, k + ".npy")) for k in names},
                                   {k: state64[k] for k in names}, {k: state32[k] for k in names})
        check(ok, "%s: weights after %d steps against PyTorch float64, %s"
              % (tag, SELECT_STEPS, text))
        if case is not mlp or fraction:
            continue
        prepare_gpu_case(trainc, "select topk", dict(case, data=folder), "sgd",
                         ["--select-batch=%d" % SELECT_BATCH],
                         ["--steps", str(SELECT_STEPS), "--lr", str(LR), "--momentum",
                          str(MOMENTUM), "--select", "topk"], saved, log)
        ckpt = os.path.join(work, "select-ckpt")
        shutil.rmtree(ckpt, ignore_errors=True)
        resumed = os.path.join(work, "select-resumed.params")
        shutil.rmtree(resumed, ignore_errors=True)
        common = [prog, "--data", folder, "--no-shuffle", "--lr", str(LR), "--momentum",
                  str(MOMENTUM), "--select", "topk", "--checkpoint-dir", ckpt,
                  "--checkpoint-every", "3"]
        first = subprocess.run(common + ["--steps", "3"], capture_output=True, text=True)
        second = subprocess.run(common + ["--steps", str(SELECT_STEPS), "--resume",
                                          "--save-params", resumed],
                                capture_output=True, text=True)
        same = first.returncode == 0 and second.returncode == 0 and all(
            open(os.path.join(saved, f), "rb").read() ==
            open(os.path.join(resumed, f), "rb").read() for f in os.listdir(saved))
        check(same, "%s: a run stopped after step 3's checkpoint and resumed writes the "
                    "uninterrupted run's bytes (%s)" % (tag, second.stderr.strip()[-200:]))
        # --predict --per-sample-loss: the selection entry over the data set.
        losses_path = os.path.join(work, "per-sample-loss.npy")
        run = subprocess.run([prog, "--predict", "--data", folder, "--out",
                              os.path.join(work, "predicted"), "--per-sample-loss", losses_path],
                             capture_output=True, text=True)
        net = initial_net(case, torch.float64)
        with torch.no_grad():
            want = per_sample("cross-entropy", net(torch.tensor(case["inputs"]["x"]).double()),
                              torch.tensor(case["labels"])).numpy()
        got = np.load(losses_path) if run.returncode == 0 else np.zeros(0)
        error = relative_error(got.tolist(), want.tolist()) if got.shape == want.shape else 1.0
        check(got.shape == want.shape and error <= 1e-5,
              "--predict --per-sample-loss: the %d samples' losses of the initial weights "
              "against PyTorch float64's reduction='none' (max relative error %.3g) %s"
              % (len(want), error, run.stderr.strip()[-120:]))
        plain = compile_trainer(trainc, check, case, work, "cross-entropy", [])
        for what, program, args, message in (
                ("--select without a selection entry", plain, ["--select", "topk"],
                 "--select needs a program compiled with --select-batch"),
                ("--select-fraction without --select", prog, ["--select-fraction", "0.5"],
                 "--select-fraction is a parameter of --select=topk"),
                ("--per-sample-loss without a selection entry", plain,
                 ["--predict", "--out", os.path.join(work, "p2"), "--per-sample-loss",
                  os.path.join(work, "p2.npy")],
                 "--per-sample-loss needs a program compiled with --select-batch"),
                ("--select-fraction beyond the compiled batch", prog,
                 ["--select", "topk", "--select-fraction", "0.5"],
                 "must keep from 1 to the compiled batch of 4 samples")):
            steps = [] if "--predict" in args else ["--steps", "1"]
            run = subprocess.run([program, "--data", folder] + steps + args,
                                 capture_output=True, text=True)
            check(run.returncode != 0 and message in run.stderr,
                  "%s is refused (%s)" % (what, run.stderr.strip()[-160:]))


def check_selection_prob(trainc, work, check):
    case = mlp_case(work, "cross-entropy")
    prog = compile_trainer(trainc, check, case, work, "cross-entropy",
                           ["--select-batch=%d" % SELECT_BATCH])
    if not prog:
        return
    folder = write_data(case, os.path.join(work, "select-prob"), None)
    steps, beta, history = 60, 2.0, 32
    trace_path = os.path.join(work, "select-prob.jsonl")
    log = os.path.join(work, "select-prob-log.jsonl")
    saved = os.path.join(work, "select-prob.params")
    shutil.rmtree(saved, ignore_errors=True)
    flags = ["--select", "prob", "--select-beta", "2", "--select-history", str(history),
             "--lr", "0.02", "--momentum", "0.5"]
    run = subprocess.run([prog, "--data", folder, "--steps", str(steps), "--trace-batches",
                          trace_path, "--log", log, "--save-params", saved] + flags,
                         capture_output=True, text=True)
    if run.returncode != 0:
        check(False, "--select=prob trains: %s" % run.stderr.strip()[-300:])
        return
    trace = [json.loads(line) for line in open(trace_path)]
    past, edges_ok, expected, kept_total, count_total, order = [], True, 0.0, 0, 0, []
    for t in trace:
        losses = np.asarray(t["losses"], np.float64)
        kept = set(t["rows"])
        hist = np.asarray(past[-history:])
        for row, loss in zip(t["candidates"], losses):
            cdf = 1.0 if len(hist) == 0 else float(np.mean(hist <= np.float32(loss)))
            keep = row in kept
            if cdf == 1.0 and not keep or cdf == 0.0 and keep:
                edges_ok = False
            expected += cdf ** beta
            kept_total += keep
            count_total += 1
        past.extend(np.float32(losses).tolist())
        order.extend(r for r in t["candidates"] if r in kept)
    sd = math.sqrt(max(expected * (1 - expected / max(count_total, 1)), 1.0))
    check(edges_ok and abs(kept_total - expected) <= 5 * sd,
          "--select=prob: a candidate above the history is kept, one below it is not, and %d "
          "of %d candidates kept against %.1f expected from CDF^2 (5 sd: %.1f)"
          % (kept_total, count_total, expected, 5 * sd))
    # The steps train the kept rows first in, first out.
    batches = [order[i * 4:(i + 1) * 4] for i in range(steps)]

    def replay(dtype):
        net = initial_net(case, dtype)
        optimizer = torch.optim.SGD(net.parameters(), lr=0.02, momentum=0.5)
        losses = []
        for rows in batches:
            optimizer.zero_grad()
            loss = per_sample("cross-entropy", net(torch.tensor(case["inputs"]["x"][rows]).to(
                dtype)), torch.tensor(case["labels"][rows])).mean()
            loss.backward()
            optimizer.step()
            losses.append(float(loss))
        return losses, final_state(net)

    (losses64, ref64), (losses32, ref32) = replay(torch.float64), replay(torch.float32)
    got = [json.loads(line)["loss"] for line in open(log)]
    error, tolerance = relative_error(got, losses64), max(1e-5,
                                                          4 * relative_error(losses32, losses64))
    check(len(got) == steps and error <= tolerance,
          "--select=prob: each step's loss on the kept rows, first in first out, against "
          "PyTorch float64 (max relative error %.3g; tolerance %.3g, 4x PyTorch float32's)"
          % (error, tolerance))
    names = [k for k in trained_params(case) if k in ref64]
    ok, text = compare_weights({k: case["initial"][k] for k in names},
                               {k: np.load(os.path.join(saved, k + ".npy")) for k in names},
                               {k: ref64[k] for k in names}, {k: ref32[k] for k in names})
    check(ok, "--select=prob: weights after %d steps against PyTorch float64, %s"
          % (steps, text))
    ckpt = os.path.join(work, "select-prob-ckpt")
    shutil.rmtree(ckpt, ignore_errors=True)
    resumed = os.path.join(work, "select-prob-resumed.params")
    shutil.rmtree(resumed, ignore_errors=True)
    common = [prog, "--data", folder, "--checkpoint-dir", ckpt, "--checkpoint-every", "25"] + flags
    first = subprocess.run(common + ["--steps", "25"], capture_output=True, text=True)
    second = subprocess.run(common + ["--steps", str(steps), "--resume", "--save-params",
                                      resumed], capture_output=True, text=True)
    same = first.returncode == 0 and second.returncode == 0 and all(
        open(os.path.join(saved, f), "rb").read() == open(os.path.join(resumed, f), "rb").read()
        for f in os.listdir(saved))
    check(same, "--select=prob: a run stopped after step 25's checkpoint and resumed (the "
                "passes, the kept samples, the history and the RNG in the checkpoint) writes "
                "the uninterrupted run's bytes (%s)" % second.stderr.strip()[-200:])


def main():
    if len(sys.argv) == 5 and sys.argv[3] == "--gpu-prepare":
        check_recipes.GPU_DIR = os.path.abspath(sys.argv[4])
        os.makedirs(check_recipes.GPU_DIR, exist_ok=True)
    elif len(sys.argv) != 3:
        print(__doc__)
        return 2
    trainc, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    passed = failed = 0

    def check(ok, what):
        nonlocal passed, failed
        print(("PASS" if ok else "FAIL") + ": sample weights :: " + what, flush=True)
        passed, failed = passed + ok, failed + (not ok)

    check_losses(trainc, work, check)
    check_data_parallel(trainc, work, check)
    check_batch_norm(trainc, work, check)
    check_zero_batch(trainc, work, check)
    check_bad_files(trainc, work, check)
    check_samplers(trainc, work, check)
    check_selection(trainc, work, check)
    check_selection_prob(trainc, work, check)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
