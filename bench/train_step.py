#!/usr/bin/python3
"""Step time of the CPU trainer against PyTorch and ONNX Runtime training.

Usage: bench/train_step.py [--trainc PATH] [--trainc-before PATH] [--venv DIR]
                           [--precision fp32,bf16,fp16] [--threads N] [--batch B] [--steps S]
                           [--resnet-batch B] [--resnet-steps S] [--repeat R]
                           [--rounds N] [--models REGEX] [--lock FILE]

For the digits example and every zoo model (ResNet-18 at its own, smaller
batch and step count: a step takes seconds on two cores), every side trains
the same ONNX initial weights on the same random data with the same batch
size, thread count, learning rate 0.01 and cross-entropy loss, in this one
run. The sides:
  * trainc: the program `trainc compile --target=cpu --optimizer=sgd` builds
    (SGD, momentum 0.9); its time per step is taken from two runs of
    different lengths (their difference cancels start-up and data loading);
  * trainc before (--trainc-before): the same with a second trainc binary,
    so a before/after ratio comes from the same machine state;
  * PyTorch eager with the running interpreter's torch (Debian's 1.13);
  * with --venv (made by scripts/bench-venv.sh): torch 2.5.1 eager, torch
    2.5.1 torch.compile of the module (default mode; the first step, which
    compiles the forward and backward graphs, is reported as cold start), and
    ONNX Runtime training 1.19.2's on-device training API (artifacts from the
    ONNX model with its cross-entropy loss, Module/Optimizer train_step loop).
    ORT's artifacts offer AdamW and SGD; its SGD has no momentum, so that
    peer runs plain SGD, lr 0.01. They run in a subprocess with the venv's
    python (this file with --worker): that torch cannot load beside Debian's.
With --precision bf16 (or fp32,bf16: both, one line each, the trainers all
timed in one interleaved run) trainc builds with --precision=bf16 and the
PyTorch peers run their forward and loss under torch.autocast("cpu",
dtype=torch.bfloat16); ORT has no bf16 training and is left out; the line
adds trainc bf16/fp32. fp16: trainc --precision=fp16 (dynamic loss
scaling) against the venv's torch under autocast(float16) with
torch.amp.GradScaler("cpu") (torch 1.13 has neither on the CPU).
PyTorch and ORT times come from timed loops after warm-up steps (the best
of --repeat loops). --rounds N times trainc and every peer N times, round
after round, each side keeping its fastest: on a shared machine a slow
minute then weighs on every side alike. Prints one line per model: ms/step of every side and the ratio
trainc / best peer (below 1: trainc is faster), naming that peer. Numbers
from a shared machine: compare ratios, not absolute times.
"""
import argparse
import copy
import json
import os
import re
import subprocess
import sys
import tempfile
import time

from benchlib import best_seconds_per_step, held
import numpy as np
import onnx
import torch
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ZOO = os.path.join(ROOT, "build", "zoo")

# build: "mlp" rebuilds a Linear/ReLU stack from the initializers, anything
# else names a module constructor in test/zoo/make_zoo.py.
MODELS = [
    dict(name="digits_mlp", path=os.path.join(ROOT, "examples", "digits_mlp.onnx"),
         shape=(64,), classes=10, build="mlp"),
    dict(name="zoo mlp", path=os.path.join(ZOO, "mlp_op17.onnx"), shape=(784,), classes=10,
         build="mlp"),
    dict(name="zoo lenet", path=os.path.join(ZOO, "lenet_op17.onnx"), shape=(1, 28, 28),
         classes=10, build="LeNet"),
    dict(name="zoo resnet18", path=os.path.join(ZOO, "resnet18_op17.onnx"), shape=(3, 64, 64),
         classes=10, build="make_resnet18", small=True),
    dict(name="zoo gpt", path=os.path.join(ZOO, "gpt_op17.onnx"), shape=(16,), classes=64,
         build="GPT", tokens=True),
    dict(name="zoo lstm", path=os.path.join(ZOO, "lstm_op17.onnx"), shape=(32,), classes=10,
         build="make_lstm", vocab=1000),
    dict(name="zoo unet", path=os.path.join(ZOO, "unet_op17.onnx"), shape=(3, 64, 64),
         classes=3, build="make_unet", pixels=True, small=True),
]


def onnx_values(path):
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}


def torch_mlp(path):
    """Linear/ReLU stack rebuilt from the ONNX initializers (W, b pairs)."""
    init = list(onnx_values(path).items())
    layers, names = [], {}
    for i in range(0, len(init), 2):
        (wn, w), (bn, b) = init[i], init[i + 1]
        lin = torch.nn.Linear(w.shape[1], w.shape[0])
        lin.weight.data, lin.bias.data = torch.tensor(w), torch.tensor(b)
        names[wn] = names[bn] = True
        layers += [lin, torch.nn.ReLU()]
    return torch.nn.Sequential(*layers[:-1]), sorted(names)


def torch_zoo(build, path):
    """A zoo module with the ONNX file's initial weights and statistics, and
    the ONNX names of its parameters. A weight the exporter renamed (the
    transposed MatMul operand of a Linear on a 3-D input: onnx::MatMul_N) is
    matched in order to the next unclaimed initializer of the transposed shape."""
    sys.path.insert(0, os.path.join(ROOT, "test", "zoo"))
    import make_zoo
    init = onnx_values(path)
    torch.manual_seed(0)
    net = getattr(make_zoo, build)()
    params = dict(net.named_parameters())
    state = net.state_dict()
    unclaimed = [k for k in init if k not in state]
    trainable, loaded = [], {}
    for key, value in state.items():
        if key in init:
            loaded[key] = torch.tensor(init[key])
            onnx_name = key
        elif key in params and value.dim() == 2:
            match = [u for u in unclaimed if init[u].shape == tuple(value.shape[::-1])]
            if not match:
                raise RuntimeError("%s: no ONNX initializer for parameter %s" % (path, key))
            unclaimed.remove(match[0])
            loaded[key] = torch.tensor(np.ascontiguousarray(init[match[0]].T))
            onnx_name = match[0]
        else:
            loaded[key] = value
            onnx_name = None
        if key in params and onnx_name:
            trainable.append(onnx_name)
    net.load_state_dict(loaded)
    return net, trainable


def torch_model(spec):
    if spec["build"] == "mlp":
        return torch_mlp(spec["path"])
    return torch_zoo(spec["build"], spec["path"])


def time_torch(net, x, y, batch, steps, warm, tokens, compiled=False, repeat=3,
               precision="fp32"):
    """(seconds per step, seconds of the first step or None). In bf16 or fp16
    the forward and the loss run under torch.autocast("cpu", dtype=...); fp16
    adds the GradScaler (scale, step, update: torch.amp.GradScaler("cpu"))."""
    net.train()
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    model = torch.compile(net) if compiled else net
    xt, yt = torch.tensor(x), torch.tensor(y)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    scaler = torch.amp.GradScaler("cpu") if precision == "fp16" else None

    def step(i):
        xb, yb = xt[i * batch:(i + 1) * batch], yt[i * batch:(i + 1) * batch]
        opt.zero_grad()
        with torch.autocast("cpu", dtype=dtype or torch.bfloat16, enabled=dtype is not None):
            logits = model(xb)
            if tokens:
                logits, yb = logits.reshape(-1, logits.shape[-1]), yb.reshape(-1)
            loss = torch.nn.functional.cross_entropy(logits, yb)
        if scaler:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()

    start = time.perf_counter()
    step(0)
    cold = time.perf_counter() - start
    for i in range(1, warm):
        step(i)
    return best_seconds_per_step(step, steps, repeat), cold if compiled else None


def time_ort(path, trainable, x, y, batch, steps, warm, tokens, threads, work, repeat=3,
             pixels=False):
    """ONNX Runtime on-device training: (seconds per step, optimizer, setup seconds)."""
    import onnxruntime
    from onnxruntime.training import artifacts, onnxblock
    from onnxruntime.training import api as ort_api

    onnxruntime.set_default_logger_severity(3)
    start = time.perf_counter()
    model = onnx.load(path)
    for value in list(model.graph.input) + list(model.graph.output):
        dim = value.type.tensor_type.shape.dim[0]
        if dim.dim_param:  # the batch, bound as trainc's --batch-size binds it
            dim.dim_value = batch
    for node in model.graph.node:
        # ORT's LayerNormalization gradient reads the optional Mean and
        # InvStdDev outputs, which PyTorch's export leaves out.
        if node.op_type == "LayerNormalization" and len(node.output) == 1:
            node.output.extend([node.output[0] + "_mean", node.output[0] + "_inv_std"])
    floats = [t.name for t in model.graph.initializer if t.data_type == onnx.TensorProto.FLOAT]
    frozen = [n for n in floats if n not in trainable]
    if pixels:
        class PixelCrossEntropy(onnxblock.Block):
            """Mean cross-entropy of [N, C, H, W] logits against [N, H, W] labels."""
            def build(self, logits):
                graph = self.base.graph
                labels = copy.deepcopy(next(o for o in graph.output if o.name == logits))
                labels.name = "labels"
                labels.type.tensor_type.elem_type = onnx.TensorProto.INT64
                del labels.type.tensor_type.shape.dim[1]
                graph.input.append(labels)
                graph.node.append(onnx.helper.make_node(
                    "SoftmaxCrossEntropyLoss", [logits, "labels"], ["loss", "log_prob"],
                    name="loss", reduction="mean"))
                return "loss"
        loss = PixelCrossEntropy()
    elif tokens:
        class TokenCrossEntropy(onnxblock.Block):
            """Mean cross-entropy of [N, T, C] logits against [N, T] labels:
            SoftmaxCrossEntropyLoss (ORT's CrossEntropyLoss) takes the
            classes on axis 1, so the logits are transposed first."""
            def build(self, logits):
                graph = self.base.graph
                labels = copy.deepcopy(next(o for o in graph.output if o.name == logits))
                labels.name = "labels"
                labels.type.tensor_type.elem_type = onnx.TensorProto.INT64
                del labels.type.tensor_type.shape.dim[-1]
                graph.input.append(labels)
                graph.node.append(onnx.helper.make_node("Transpose", [logits], ["logits_nct"],
                                                        name="logits_nct", perm=[0, 2, 1]))
                graph.node.append(onnx.helper.make_node(
                    "SoftmaxCrossEntropyLoss", ["logits_nct", "labels"], ["loss", "log_prob"],
                    name="loss", reduction="mean"))
                return "loss"
        loss = TokenCrossEntropy()
    else:
        loss = artifacts.LossType.CrossEntropyLoss
    optimizer = "SGD" if hasattr(artifacts.OptimType, "SGD") else "AdamW"
    out = os.path.join(work, "ort")
    os.makedirs(out, exist_ok=True)
    artifacts.generate_artifacts(model, requires_grad=trainable, frozen_params=frozen,
                                 loss=loss, optimizer=getattr(artifacts.OptimType, optimizer),
                                 artifact_directory=out)
    opts = onnxruntime.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    state = ort_api.CheckpointState.load_checkpoint(os.path.join(out, "checkpoint"))
    module = ort_api.Module(os.path.join(out, "training_model.onnx"), state,
                            os.path.join(out, "eval_model.onnx"), device="cpu",
                            session_options=opts)
    opt = ort_api.Optimizer(os.path.join(out, "optimizer_model.onnx"), module)
    opt.set_learning_rate(0.01)
    module.train()
    setup = time.perf_counter() - start

    def step(i):
        module(x[i * batch:(i + 1) * batch], y[i * batch:(i + 1) * batch])
        opt.step()
        module.lazy_reset_grad()

    for i in range(warm):
        step(i)
    return best_seconds_per_step(step, steps, repeat), optimizer, setup


# The venv's peers, each in its own process (one that crashes, as ORT can
# with SIGFPE, takes no other down), with extra environment. torch.compile's
# C++ kernels link the system libgomp while the torch wheel brings its own:
# two OpenMP runtimes whose idle threads spin against each other on the same
# cores (a tiny MLP's step goes from under 1 ms to 40 ms on two cores), so
# that peer runs with OMP_WAIT_POLICY=PASSIVE.
VENV_PEERS = [("eager", {}), ("compile", {"OMP_WAIT_POLICY": "PASSIVE"}), ("ort", {})]


def worker(job_path, kind):
    """One venv peer on one model; prints one JSON object."""
    job = json.load(open(job_path))
    torch.set_num_threads(job["threads"])
    x = np.load(os.path.join(job["data"], job["input"] + ".npy"))
    y = np.load(os.path.join(job["data"], "label.npy"))
    common = (x, y, job["batch"], job["steps"], job["warm"], job["tokens"])
    version = torch.__version__.split("+")[0]
    precision = job.get("precision", "fp32")
    amp = precision != "fp32"
    result = dict(peer="torch %s %s%s" % (version, kind, " autocast" if amp else ""))
    try:
        if kind == "eager":
            result["s"] = time_torch(torch_model(job)[0], *common, repeat=job["repeat"],
                                     precision=precision)[0]
        elif kind == "compile":
            result["s"], result["cold"] = time_torch(torch_model(job)[0], *common,
                                                     compiled=True, repeat=job["repeat"],
                                                     precision=precision)
        else:
            import onnxruntime
            result["peer"] = "ORT %s" % onnxruntime.__version__
            trainable = torch_model(job)[1]
            result["s"], result["optimizer"], result["setup"] = time_ort(
                job["path"], trainable, *common, job["threads"], os.path.dirname(job_path),
                job["repeat"], pixels=bool(job.get("pixels")))
    except Exception as e:  # a peer that fails is reported, not fatal
        result["error"] = "%s: %s" % (type(e).__name__, (str(e).strip().splitlines() or [""])[0])
    print(json.dumps(result), flush=True)


def venv_peers(args, job_path, precision):
    """[(peer name, seconds per step or None, note or None)] of the venv's peers
    (in bf16: eager and torch.compile under autocast; ORT trains in f32 only)."""
    out = []
    for kind, extra in VENV_PEERS:
        if kind == "ort" and precision != "fp32":
            continue
        env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), **extra)
        env.pop("PYTHONPATH", None)
        done = subprocess.run([os.path.join(args.venv, "bin", "python"),
                               os.path.abspath(__file__), "--worker", job_path, kind],
                              capture_output=True, text=True, env=env)
        results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        if done.returncode or not results:
            out.append(("venv " + kind, None, "failed (exit %d): %s" % (
                done.returncode, " | ".join(done.stderr.strip().splitlines()[-2:])[:300])))
            continue
        r = results[0]
        peer = r["peer"] + (" " + r["optimizer"] if "optimizer" in r else "")
        if "error" in r:
            out.append((peer, None, "failed: " + r["error"][:300]))
        elif r.get("cold") is not None:
            out.append((peer, r["s"], "cold start (first step, compiling) %.1f s" % r["cold"]))
        else:
            out.append((peer, r["s"], None))
    return out


def compile_trainc(trainc, spec, batch, prog, precision="fp32", extra=()):
    """Builds the trainer (with the `extra` flags); None, or why it failed."""
    built = subprocess.run([trainc, "compile", spec["path"], "--target=cpu",
                            "--batch-size=%d" % batch, "--loss=cross-entropy",
                            "--optimizer=sgd", "-o", prog]
                           + (["--precision=" + precision] if precision != "fp32" else [])
                           + (["--class-axis=-1"] if spec.get("tokens") else []) + list(extra),
                           capture_output=True, text=True)
    if built.returncode:
        return "compile failed: " + (built.stderr.strip().splitlines() or ["?"])[-1]
    return None


def time_trainers(progs, steps, warm, data, threads, repeat=3):
    """Seconds per step of each trainer program: the best of `repeat` runs of
    warm and of warm + steps steps, the programs' runs interleaved."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))

    def run(prog, count):
        start = time.perf_counter()
        subprocess.run([prog, "--data", data, "--steps", str(count), "--lr", "0.01",
                        "--momentum", "0.9", "--no-shuffle", "--threads", str(threads)],
                       check=True, env=env, capture_output=True)
        return time.perf_counter() - start

    short = {prog: float("inf") for prog in progs}
    long, failed = dict(short), {}
    for prog in progs:
        try:
            run(prog, min(10, steps))  # warm the page cache
        except subprocess.CalledProcessError as e:
            failed[prog] = "trainer failed (exit %d): %s" % (
                e.returncode, (e.stderr.decode(errors="replace").strip().splitlines()
                               or ["?"])[-1][:300])
    for _ in range(repeat):
        for prog in progs:
            if prog not in failed:
                short[prog] = min(short[prog], run(prog, warm))
                long[prog] = min(long[prog], run(prog, warm + steps))
    return {prog: failed.get(prog, (long[prog] - short[prog]) / steps) for prog in progs}


def make_data(spec, batch, steps, warm, data):
    samples = batch * (steps + warm)
    rng = np.random.RandomState(0)
    os.makedirs(data, exist_ok=True)
    input_name = onnx.load(spec["path"]).graph.input[0].name
    if spec.get("tokens") or spec.get("vocab"):
        vocab = spec.get("vocab", spec["classes"])
        x = rng.randint(0, vocab, (samples,) + spec["shape"]).astype(np.int64)
    else:
        x = rng.rand(samples, *spec["shape"]).astype(np.float32)
    if spec.get("tokens"):  # a class per token
        y = rng.randint(0, spec["classes"], (samples,) + spec["shape"]).astype(np.int64)
    elif spec.get("pixels"):  # a class per pixel of [C, H, W] inputs
        y = rng.randint(0, spec["classes"], (samples,) + spec["shape"][1:]).astype(np.int64)
    else:
        y = rng.randint(0, spec["classes"], samples).astype(np.int64)
    np.save(os.path.join(data, input_name + ".npy"), x)
    np.save(os.path.join(data, "label.npy"), y)
    return input_name, x, y


def ms(value):
    return "%.3f" % (value * 1e3) if isinstance(value, float) else "n/a"


def time_peers(spec, args, x, y, data, input_name, batch, steps, warm, stem, precision):
    """({peer: seconds per step}, [notes]) of every peer at one precision."""
    amp = precision != "fp32"
    peers, notes = {}, []
    torch.set_num_threads(args.threads)
    if precision == "fp16":
        # torch 1.13's CPU autocast knows bf16 only (and has no CPU
        # GradScaler): the fp16 peers are the venv's.
        notes.append("torch %s: no CPU fp16 autocast" % torch.__version__.split("+")[0])
    else:
        peers["torch %s eager%s" % (torch.__version__.split("+")[0].split("a")[0],
                                    " autocast" if amp else "")] = time_torch(
            torch_model(spec)[0], x, y, batch, steps, warm, spec.get("tokens"),
            repeat=args.repeat, precision=precision)[0]
    if args.venv:
        job = dict(spec, data=data, input=input_name, batch=batch, steps=steps, warm=warm,
                   threads=args.threads, tokens=bool(spec.get("tokens")),
                   repeat=args.repeat, precision=precision)
        job_dir = stem + "-venv-" + precision
        os.makedirs(job_dir, exist_ok=True)
        job_path = os.path.join(job_dir, "job.json")
        json.dump(job, open(job_path, "w"))
        for peer, seconds, note in venv_peers(args, job_path, precision):
            if seconds is not None:
                peers[peer] = seconds
            if note:
                notes.append("%s %s" % (peer, note))
    return peers, notes


def faster(old, new):
    """The faster of two timings (seconds, or a reason there is none)."""
    if not isinstance(new, float):
        return old
    return new if not isinstance(old, float) else min(old, new)


def bench_model(spec, args, work):
    small = spec.get("small")
    batch = args.resnet_batch if small else args.batch
    steps = args.resnet_steps if small else args.steps
    warm = min(50, steps)
    stem = os.path.join(work, spec["name"].replace(" ", "_"))
    data = stem + "-data"
    input_name, x, y = make_data(spec, batch, steps, warm, data)
    sides = [("trainc", args.trainc)] + ([("before", args.trainc_before)]
                                         if args.trainc_before else [])
    # Every trainer of every precision is timed in one interleaved run; with
    # --rounds, trainc and every peer are timed again round after round and
    # each side keeps its fastest, so that a minute of a slow machine weighs
    # on every side alike.
    ours, progs = {}, {}
    for precision in args.precision:
        for side, binary in sides:
            key = (side, precision)
            progs[key] = "%s-%s-%s" % (stem, side, precision)
            ours[key] = compile_trainc(binary, spec, batch, progs[key], precision)
    built = [progs[k] for k in progs if ours[k] is None]
    peers = {precision: {} for precision in args.precision}
    notes = {precision: [] for precision in args.precision}
    for round_ in range(args.rounds):
        timed = time_trainers(built, steps, warm, data, args.threads, args.repeat)
        for key in progs:
            if progs[key] in timed:
                ours[key] = timed[progs[key]] if round_ == 0 else faster(ours[key],
                                                                         timed[progs[key]])
        for precision in args.precision:
            found, said = time_peers(spec, args, x, y, data, input_name, batch, steps, warm,
                                     stem, precision)
            for peer, seconds in found.items():
                peers[precision][peer] = faster(peers[precision].get(peer), seconds)
            # The first round's notes (its cold starts), and a later round's
            # failures once each.
            notes[precision] += [n for n in said if round_ == 0 or
                                 ("failed" in n and n not in notes[precision])]
            if round_ == args.rounds - 1:
                report(spec, args, sides, ours, precision, batch, peers[precision],
                       notes[precision])


def report(spec, args, sides, ours, precision, batch, peers, notes):
    """Prints one model's line at one precision, and its notes."""
    mine = {side: ours[(side, precision)] for side, _ in sides}
    line = "%-12s %s batch %3d threads %d, ms/step: " % (spec["name"], precision, batch,
                                                         args.threads)
    line += ", ".join("%s %s" % (side, ms(mine[side])) for side, _ in sides)
    line += " | " + ", ".join("%s %s" % (p, ms(v)) for p, v in peers.items())
    if not peers:
        print(line + " | no peer", flush=True)
        for note in notes:
            print("    " + note, flush=True)
        return
    best = min(peers, key=peers.get)
    ratios = ["%s/best %.2f" % (side, mine[side] / peers[best])
              for side, _ in sides if isinstance(mine[side], float)]
    if len(sides) > 1 and all(isinstance(mine[side], float) for side, _ in sides):
        ratios.append("trainc/before %.2f" % (mine["trainc"] / mine["before"]))
    if precision != "fp32" and isinstance(mine["trainc"], float) and \
            isinstance(ours.get(("trainc", "fp32")), float):
        ratios.append("trainc %s/fp32 %.2f" % (precision,
                                               mine["trainc"] / ours[("trainc", "fp32")]))
    line += " | best peer %s%s" % (best, ": " + ", ".join(ratios) if ratios else "")
    for side, _ in sides:
        if not isinstance(mine[side], float):
            notes.append("%s: %s" % (side, mine[side]))
    print(line, flush=True)
    for note in notes:
        print("    " + note, flush=True)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        return worker(sys.argv[2], sys.argv[3])
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trainc", default=os.path.join(ROOT, "build", "bin", "trainc"))
    parser.add_argument("--trainc-before", help="a second trainc binary timed in the same run")
    parser.add_argument("--venv", help="the venv of scripts/bench-venv.sh: torch 2.5.1 eager "
                                       "and torch.compile, ONNX Runtime training 1.19.2")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--resnet-batch", type=int, default=8)
    # 20: a step's time is the difference of two runs' times over the steps,
    # and at 5 steps a process's start-up noise (tens of ms) weighed as
    # much as a ResNet-18 or U-Net step.
    parser.add_argument("--resnet-steps", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3,
                        help="timed repetitions of every side; the fastest counts")
    parser.add_argument("--rounds", type=int, default=1,
                        help="time trainc and every peer this many times, round after "
                             "round; each side's fastest counts")
    parser.add_argument("--lock", help="hold this file's flock while timing each model "
                        "(e.g. the build lock, so that no build shares the cores)")
    parser.add_argument("--precision", default="fp32",
                        help="comma list of fp32, bf16 and fp16: trainc --precision=bf16/fp16 "
                             "against PyTorch under torch.autocast('cpu', dtype=...), fp16 "
                             "with the GradScaler (the venv's torch only)")
    parser.add_argument("--models", default="", help="only the models whose name this "
                                                     "regular expression matches (searched)")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds takes a count of at least 1")
    args.precision = args.precision.split(",")
    if not args.precision or any(p not in ("fp32", "bf16", "fp16") for p in args.precision):
        parser.error("--precision takes a comma list of fp32, bf16 and fp16")
    if not os.path.exists(os.path.join(ZOO, "zoo.json")):
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "test", "zoo", "make_zoo.py"), ZOO],
                       check=True)
    print("trainc: %s%s; peers: SGD momentum 0.9 (ORT: its SGD, no momentum), lr 0.01, "
          "cross-entropy" % (args.trainc, "; before: %s" % args.trainc_before
                             if args.trainc_before else ""), flush=True)
    with tempfile.TemporaryDirectory() as work:
        for spec in MODELS:
            if re.search(args.models, spec["name"]):
                with held(args.lock):
                    bench_model(spec, args, work)


if __name__ == "__main__":
    sys.exit(main())
