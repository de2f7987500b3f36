#!/usr/bin/python3
"""bf16 ResNet training step on a GPU: trainc channels-last against NCHW,
with and without the step as a CUDA graph, beside PyTorch AMP in one run.

Usage:
  bench/gpu_layout.py prepare OUTDIR [--trainc PATH] [--models resnet18,resnet50]
                                     [--batches 32,256] [--smoke]
      (here, no GPU needed) exports each torchvision model (1000 classes,
      224x224 images; every weight 0, so that the trainers' parameter files
      compress to nothing and OUTDIR stays small enough to carry) and builds
      its CUDA trainers: --precision=bf16 --optimizer=sgd at each batch size,
      --layout=nchw and --layout=nhwc. Then packs them into OUTDIR/bench.tar.xz
      beside a copy of this file.
  python3 OUTDIR/gpu_layout.py run OUTDIR [--steps 30] [--no-compile]
      (on the GPU machine) makes random images and labels (4 batches, which
      the trainers cycle through), times each trainer with --cuda-graph on and
      off, and PyTorch (the python3 there: torchvision's model, SGD with
      momentum 0.9, autocast bf16) eager in NCHW and channels_last and
      torch.compile channels_last, each also copying its batch from pinned
      host memory every step as the trainer does.

A trainer's time per step is the difference of two runs of different
lengths (start-up, cuDNN's plans and the graph recording cancel), over the
difference in steps; PyTorch's is CUDA-event time over the timed steps after
warm-up. Prints one line per model and batch: ms/step of every side and the
ratio of trainc's best to PyTorch's best (below 1: trainc is faster).
--smoke (prepare) builds CPU trainers of tiny ResNet-18s at 32x32 pixels and
run then times them against PyTorch on the CPU: a check of this script, not
a benchmark.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CLASSES = 1000


def export_model(name, pixels, path):
    """torchvision's `name` with every parameter 0 (running statistics at
    their defaults), exported for training with a dynamic batch axis."""
    import torch
    import torchvision
    model = getattr(torchvision.models, name)(weights=None, num_classes=CLASSES)
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
    model.train()
    example = torch.zeros(2, 3, pixels, pixels)
    torch.onnx.export(model, example, path, input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}},
                      opset_version=17, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.TRAINING)


def prepare(args):
    out = os.path.abspath(args.outdir)
    work = os.path.join(out, "bench")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    pixels = 32 if args.smoke else 224
    target = ["--target=cpu"] if args.smoke else ["--target=cuda", "--cuda-arch=sm_90"]
    cases = []
    for name in args.models.split(","):
        onnx_path = os.path.join(work, name + ".onnx")
        export_model(name, pixels, onnx_path)
        for batch in (int(b) for b in args.batches.split(",")):
            for layout in ("nchw", "nhwc"):
                case = "%s_b%d_%s" % (name, batch, layout)
                prog = os.path.join(work, case)
                cmd = [args.trainc, "compile", onnx_path, "-o", prog, "--batch-size=%d" % batch,
                       "--loss=cross-entropy", "--optimizer=sgd", "--precision=bf16",
                       "--layout=" + layout] + target
                started = time.time()
                subprocess.run(cmd, check=True)
                shutil.rmtree(prog + ".build", ignore_errors=True)
                print("built %s in %.0f s" % (case, time.time() - started), flush=True)
                cases.append({"case": case, "model": name, "batch": batch, "layout": layout})
        os.remove(onnx_path)
    with open(os.path.join(work, "cases.json"), "w") as f:
        json.dump({"pixels": pixels, "cpu": args.smoke, "cases": cases}, f, indent=1)
    with tarfile.open(os.path.join(out, "bench.tar.xz"), "w:xz") as t:
        t.add(work, "bench")
    shutil.rmtree(work)
    shutil.copy(os.path.abspath(__file__), os.path.join(out, "gpu_layout.py"))
    print("packed %s: %.1f MiB" % (os.path.join(out, "bench.tar.xz"),
                                   os.path.getsize(os.path.join(out, "bench.tar.xz")) / 2**20))


def make_data(folder, batch, pixels, seed):
    import numpy as np
    os.makedirs(folder, exist_ok=True)
    rng = np.random.RandomState(seed)
    samples = 4 * batch
    np.save(os.path.join(folder, "x.npy"),
            rng.standard_normal((samples, 3, pixels, pixels)).astype(np.float32))
    np.save(os.path.join(folder, "label.npy"), rng.randint(0, CLASSES, samples).astype(np.int64))


def trainer_ms(prog, data, steps, graph, cpu):
    """Milliseconds per step: two runs, `steps` apart."""
    def run(n):
        cmd = [prog, "--data", data, "--steps", str(n), "--lr", "0.01", "--momentum", "0.9",
               "--workers", "2" if cpu else "8"]
        if not cpu:
            cmd += ["--cuda-graph", "on" if graph else "off"]
        started = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True)
        seconds = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError("%s: %s" % (os.path.basename(prog), done.stderr[-600:]))
        return seconds, done.stderr
    # The first run searches cuDNN's algorithms and keeps them next to the
    # program (prog.cudnn-cache); the timed runs both read them, so that the
    # search does not land in one of the two and skew the difference.
    run(2)
    short, _ = run(3)
    long, log = run(3 + steps)
    notes = [line for line in log.splitlines() if line.startswith("note:")]
    return 1000.0 * (long - short) / steps, notes


def kernel_profile(prog, data, csv_path):
    """Nsight Compute's per-kernel summary of two steps (no CUDA graph, the
    cuDNN choices read from the cache): the GPU time of every kernel."""
    cmd = ["ncu", "--clock-control", "none", "--metrics", "gpu__time_duration.sum", "--csv",
           "--print-summary", "per-kernel", prog, "--data", data, "--steps", "2", "--lr", "0.01",
           "--momentum", "0.9", "--cuda-graph", "off"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=150)
        with open(csv_path, "w") as f:
            f.write(done.stdout)
        print("  ncu profile of %s: %s" % (os.path.basename(prog), csv_path))
    except (OSError, subprocess.TimeoutExpired) as e:
        print("FAIL: ncu %s: %s" % (os.path.basename(prog), e))


def torch_ms(name, batch, pixels, steps, channels_last, compiled, cpu):
    """PyTorch AMP bf16 SGD steps, the batch copied from pinned memory."""
    import torch
    import torchvision
    device = "cpu" if cpu else "cuda"
    model = getattr(torchvision.models, name)(weights=None, num_classes=CLASSES).to(device)
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    model = model.to(memory_format=fmt)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    host_x = torch.randn(batch, 3, pixels, pixels)
    host_y = torch.randint(0, CLASSES, (batch,))
    if not cpu:
        host_x, host_y = host_x.pin_memory(), host_y.pin_memory()

    def step(x, y):
        with torch.autocast(device_type=device, dtype=torch.bfloat16):
            loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss

    if compiled:
        step = torch.compile(step)

    def one():
        x = host_x.to(device, non_blocking=True).contiguous(memory_format=fmt)
        y = host_y.to(device, non_blocking=True)
        step(x, y)

    for _ in range(5):
        one()
    if cpu:
        started = time.perf_counter()
        for _ in range(steps):
            one()
        return 1000.0 * (time.perf_counter() - started) / steps
    torch.cuda.synchronize()
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    begin.record()
    for _ in range(steps):
        one()
    end.record()
    torch.cuda.synchronize()
    return begin.elapsed_time(end) / steps


def run(args):
    out = os.path.abspath(args.outdir)
    work = os.path.join(out, "bench")
    if not os.path.isdir(work):
        with tarfile.open(os.path.join(out, "bench.tar.xz")) as t:
            t.extractall(out)
    meta = json.load(open(os.path.join(work, "cases.json")))
    pixels, cpu = meta["pixels"], meta["cpu"]
    groups = {}
    for c in meta["cases"]:
        groups.setdefault((c["model"], c["batch"]), []).append(c)
    for (model, batch), cases in groups.items():
        cases = [c for c in cases if not args.cases or c["case"] in args.cases.split(",")]
        if not cases:
            continue
        data = os.path.join(work, "data_b%d" % batch)
        if not os.path.isdir(data):
            make_data(data, batch, pixels, batch)
        row = {}
        for c in cases:
            prog = os.path.join(work, c["case"])
            for graph in ((False,) if cpu else (True, False)):
                key = "trainc %s%s" % (c["layout"], " graph" if graph else "")
                try:
                    row[key], notes = trainer_ms(prog, data, args.steps, graph, cpu)
                    for note in notes:
                        print("  %s: %s" % (key, note))
                except RuntimeError as e:
                    print("FAIL: %s: %s" % (key, e))
            if args.ncu:
                kernel_profile(prog, data, os.path.join(args.ncu, c["case"] + ".csv"))
        peers = [("torch eager nchw", False, False), ("torch eager channels_last", True, False)]
        if not args.no_compile:
            peers.append(("torch.compile channels_last", True, True))
        for key, last, compiled in peers:
            try:
                row[key] = torch_ms(model, batch, pixels, args.steps, last, compiled, cpu)
            except Exception as e:  # reported, the other sides still run
                print("FAIL: %s: %s: %s" % (key, type(e).__name__, str(e)[:300]))
        ours = {k: v for k, v in row.items() if k.startswith("trainc")}
        theirs = {k: v for k, v in row.items() if not k.startswith("trainc")}
        line = ", ".join("%s %.2f ms" % (k, v) for k, v in row.items())
        if ours and theirs:
            best, peer = min(ours.items(), key=lambda kv: kv[1]), min(theirs.items(),
                                                                      key=lambda kv: kv[1])
            line += "; best trainc (%s) / best peer (%s) = %.2fx" % (best[0], peer[0],
                                                                   best[1] / peer[1])
        print("%s batch %d bf16: %s" % (model, batch, line), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("outdir")
    p.add_argument("--trainc", default=os.path.join(ROOT, "build", "bin", "trainc"))
    p.add_argument("--models", default="resnet18,resnet50")
    p.add_argument("--batches", default="32,256")
    p.add_argument("--smoke", action="store_true")
    r = sub.add_parser("run")
    r.add_argument("outdir")
    r.add_argument("--steps", type=int, default=30)
    r.add_argument("--no-compile", action="store_true")
    r.add_argument("--cases", default="", help="only these cases (comma-separated, such as "
                   "resnet18_b32_nhwc)")
    r.add_argument("--ncu", default="", metavar="DIR",
                   help="also write each trainer's per-kernel GPU times (Nsight Compute) to "
                   "DIR/CASE.csv")
    args = parser.parse_args()
    prepare(args) if args.mode == "prepare" else run(args)


if __name__ == "__main__":
    main()
