#!/usr/bin/python3
"""Step time of LAMB and LARS trainers against AdamW's, side by side.

Usage: bench/optimizers.py cpu [--trainc PATH] [--threads N] [--repeat R]
       bench/optimizers.py prepare OUTDIR [--trainc PATH]   (CUDA trainers, no GPU needed)
       bench/optimizers.py run OUTDIR                       (on the GPU machine)

The zoo's GPT (batch 64) and ResNet-18 (64x64, batch 8 on the CPU, 64 on
the GPU) are compiled three times, --optimizer=adamw, lamb and lars, and
trained on the same random data, the runs of the three interleaved in one
run of this script. A step's time comes from two runs of different lengths
(their difference cancels start-up and data loading), the best of
--repeat. LAMB and LARS add a pass over each parameter for its two norms
(per-tensor sums in double, then each tensor's factor): the goal is a step
at most 15% slower than AdamW's. Prints one line per model: ms/step of each
and lamb/adamw, lars/adamw. Numbers from a shared machine: compare ratios.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ZOO = os.path.join(ROOT, "build", "zoo")
OPTIMIZERS = {"adamw": ["--lr", "0.001"],
              "lamb": ["--lr", "0.001"],
              "lars": ["--lr", "0.1", "--momentum", "0.9"]}
MODELS = {  # name: (cpu batch, gpu batch, cpu steps, gpu steps, extra compile flags)
    "gpt": (64, 64, 100, 200, ["--class-axis=-1"]),
    "resnet18": (8, 64, 5, 100, []),
}


def make_data(folder, name, batch, steps):
    """Random data: every step's own batch (a few batches, repeated as
    epochs, where they travel to the GPU machine: `steps` is None)."""
    rng = np.random.RandomState(0)
    samples = batch * (steps + 8 if steps else 4)
    os.makedirs(folder, exist_ok=True)
    if name == "gpt":
        np.save(os.path.join(folder, "idx.npy"), rng.randint(0, 64, (samples, 16)).astype(np.int64))
        np.save(os.path.join(folder, "label.npy"),
                rng.randint(0, 64, (samples, 16)).astype(np.int64))
    else:
        np.save(os.path.join(folder, "x.npy"),
                rng.standard_normal((samples, 3, 64, 64)).astype(np.float32))
        np.save(os.path.join(folder, "label.npy"), rng.randint(0, 10, samples).astype(np.int64))


def small_weights_copy(path, out):
    """The model with its large initializers filled with a constant: the
    trainers that travel to the GPU machine pack small (the step's work is
    the same)."""
    import onnx
    from onnx import numpy_helper
    model = onnx.load(path)
    for i, init in enumerate(model.graph.initializer):
        value = numpy_helper.to_array(init)
        if value.dtype == np.float32 and value.size > 4096:
            model.graph.initializer[i].CopyFrom(
                numpy_helper.from_array(np.full(value.shape, 0.01, np.float32), init.name))
    onnx.save(model, out)
    return out


def compile_all(trainc, work, target, gpu):
    cases = []
    for name, (cpu_batch, gpu_batch, cpu_steps, gpu_steps, extra) in MODELS.items():
        batch, steps = (gpu_batch, gpu_steps) if gpu else (cpu_batch, cpu_steps)
        data = os.path.join(work, name + "-data")
        make_data(data, name, batch, None if gpu else steps)
        model = os.path.join(ZOO, name + "_op17.onnx")
        if gpu:
            model = small_weights_copy(model, os.path.join(work, name + ".onnx"))
        for kind in OPTIMIZERS:
            prog = os.path.join(work, "%s_%s" % (name, kind))
            subprocess.run([trainc, "compile", model, "-o", prog,
                            "--batch-size=%d" % batch, "--loss=cross-entropy",
                            "--optimizer=" + kind] + target + extra,
                           check=True, capture_output=True)
            shutil.rmtree(prog + ".build", ignore_errors=True)
            cases.append({"model": name, "optimizer": kind, "prog": os.path.basename(prog),
                          "data": os.path.basename(data), "steps": steps, "batch": batch})
        if gpu:
            os.remove(model)
    return cases


def seconds(prog, data, kind, count, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads)) if threads else None
    cmd = [prog, "--data", data, "--steps", str(count), "--no-shuffle"] + OPTIMIZERS[kind]
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError("%s: %s" % (os.path.basename(prog), done.stderr[-400:]))
    return time.perf_counter() - started


def time_cases(work, cases, repeat, threads):
    """ms/step of every case, the runs interleaved."""
    short = {c["prog"]: float("inf") for c in cases}
    long = dict(short)
    for c in cases:  # warm: page cache, cuDNN's algorithm search
        seconds(os.path.join(work, c["prog"]), os.path.join(work, c["data"]), c["optimizer"], 2,
                threads)
    for _ in range(repeat):
        for c in cases:
            prog, data = os.path.join(work, c["prog"]), os.path.join(work, c["data"])
            short[c["prog"]] = min(short[c["prog"]], seconds(prog, data, c["optimizer"], 3, threads))
            long[c["prog"]] = min(long[c["prog"]],
                                  seconds(prog, data, c["optimizer"], 3 + c["steps"], threads))
    return {c["prog"]: 1000.0 * (long[c["prog"]] - short[c["prog"]]) / c["steps"] for c in cases}


def report(cases, ms, where):
    for name in MODELS:
        mine = {c["optimizer"]: ms[c["prog"]] for c in cases if c["model"] == name}
        batch = next(c["batch"] for c in cases if c["model"] == name)
        print("%-9s %s batch %3d, ms/step: adamw %.3f, lamb %.3f, lars %.3f | lamb/adamw %.3f, "
              "lars/adamw %.3f" % (name, where, batch, mine["adamw"], mine["lamb"], mine["lars"],
                                   mine["lamb"] / mine["adamw"], mine["lars"] / mine["adamw"]),
              flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=["cpu", "prepare", "run"])
    parser.add_argument("outdir", nargs="?")
    parser.add_argument("--trainc", default=os.path.join(ROOT, "build", "bin", "trainc"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not os.path.exists(os.path.join(ZOO, "zoo.json")) and args.mode != "run":
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "test", "zoo", "make_zoo.py"), ZOO],
                       check=True)
    if args.mode == "cpu":
        work = os.path.join(ROOT, "build", "bench-optimizers")
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        cases = compile_all(args.trainc, work, ["--target=cpu"], False)
        report(cases, time_cases(work, cases, args.repeat, args.threads),
               "cpu %d threads" % args.threads)
        return 0
    out = os.path.abspath(args.outdir)
    if args.mode == "prepare":
        work = os.path.join(out, "optbench")
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        cases = compile_all(args.trainc, work, ["--target=cuda", "--cuda-arch=sm_90"], True)
        json.dump(cases, open(os.path.join(work, "cases.json"), "w"), indent=1)
        with tarfile.open(os.path.join(out, "optbench.tar.xz"), "w:xz") as t:
            t.add(work, "optbench")
        shutil.rmtree(work)
        shutil.copy(os.path.abspath(__file__), os.path.join(out, "optimizers_bench.py"))
        print("packed %s: %.1f MiB" % (os.path.join(out, "optbench.tar.xz"),
                                       os.path.getsize(os.path.join(out, "optbench.tar.xz")) / 2**20))
        return 0
    work = os.path.join(out, "optbench")
    if not os.path.isdir(work):
        with tarfile.open(os.path.join(out, "optbench.tar.xz")) as t:
            t.extractall(out)
    cases = json.load(open(os.path.join(work, "cases.json")))
    report(cases, time_cases(work, cases, args.repeat, 0), "cuda")
    return 0


if __name__ == "__main__":
    sys.exit(main())
