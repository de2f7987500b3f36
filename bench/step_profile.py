#!/usr/bin/python3
"""What --profile costs, and where the CPU trainers' steps go.

Usage: bench/step_profile.py [--trainc PATH] [--threads N] [--batch B] [--steps S]
                        [--resnet-batch B] [--resnet-steps S] [--repeat R]
                        [--models REGEX] [--tables]

For bench/train_step.py's models (same data, batch, SGD momentum 0.9), three
trainers of one generated source, timed in one interleaved run (the best of
--repeat runs of warm and warm + steps steps, their difference per step):
  * as built: every call is TRAINC_CALL, which tests the context's flag
    before and after the call (--profile off);
  * plain: the same source with every TRAINC_CALL(ctx, id, X) written back
    as TRAINC_RETURN_IF_ERROR(X), built with the command trainc runs
    (codegen/Toolchain.cpp) - the step as it was before the profiler;
  * profiled: as built with --profile --profile-warmup 0 over every step
    (each call between two clock reads; the window's report at the end).
Prints ms/step of each and the ratios to plain. With --tables, each model's
profile table (the profiled run's stderr), and the contractions' rate as a
fraction of this machine's sgemm rate (NumPy's OpenBLAS on a 2048^3 product
with the same threads, the best of 5).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import train_step  # noqa: E402


def plain_build(prog, work):
    """The trainer rebuilt from its source with TRAINC_CALL written back."""
    name = os.path.basename(prog)
    source = open(os.path.join(prog + ".build", name + ".cpp")).read()
    plain_source = re.sub(r"TRAINC_CALL\(ctx, \d+, ", "TRAINC_RETURN_IF_ERROR(", source)
    # The blob's .incbin paths stay absolute: the source may move.
    path = os.path.join(prog + ".build", name + "-plain.cpp")
    open(path, "w").write(plain_source)
    out = prog + "-plain"
    subprocess.run(["g++", "-std=c++20", "-O2", "-fvect-cost-model=dynamic", "-fno-math-errno",
                    "-fopenmp", "-I" + os.path.join(ROOT, "runtime", "include"), path, "-o", out,
                    "-L" + os.path.join(ROOT, "build", "lib"), "-ltrainc_rt_cpu", "-ldnnl",
                    "-lopenblas", "-lz", "-lmvec", "-lpthread"], check=True)
    return out


def profiled_wrapper(prog, table):
    """A script that runs `prog` with --profile over every step (its
    report into `table`)."""
    path = prog + "-profiled"
    with open(path, "w") as f:
        f.write("#!/bin/sh\nexec %s \"$@\" --profile --profile-warmup 0 --profile-steps 10000 "
                "2>%s\n" % (prog, table))
    os.chmod(path, 0o755)
    return path


def sgemm_rate(threads):
    import numpy as np
    os.environ["OMP_NUM_THREADS"] = str(threads)
    a = np.random.rand(2048, 2048).astype(np.float32)
    b = np.random.rand(2048, 2048).astype(np.float32)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return 2 * 2048 ** 3 / best


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trainc", default=os.path.join(ROOT, "build", "bin", "trainc"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--resnet-batch", type=int, default=8)
    parser.add_argument("--resnet-steps", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--models", default="digits|mlp|lenet|gpt|resnet")
    parser.add_argument("--tables", action="store_true")
    args = parser.parse_args()
    if not os.path.exists(os.path.join(train_step.ZOO, "zoo.json")):
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "test", "zoo", "make_zoo.py"),
                        train_step.ZOO], check=True)
    peak = sgemm_rate(args.threads) if args.tables else None
    if peak:
        print("sgemm (NumPy's OpenBLAS, %d threads, 2048^3): %.1f GFLOP/s"
              % (args.threads, peak * 1e-9))
    print("%-14s %10s %10s %10s %12s %12s" % ("model", "plain ms", "built ms", "profiled",
                                               "built/plain", "profiled/plain"))
    with tempfile.TemporaryDirectory() as work:
        for spec in train_step.MODELS:
            if not re.search(args.models, spec["name"]):
                continue
            small = spec.get("small")
            batch = args.resnet_batch if small else args.batch
            steps = args.resnet_steps if small else args.steps
            warm = min(50, steps)
            stem = os.path.join(work, spec["name"].replace(" ", "_"))
            train_step.make_data(spec, batch, steps, warm, stem + "-data")
            failed = train_step.compile_trainc(args.trainc, spec, batch, stem)
            if failed:
                print("%-14s %s" % (spec["name"], failed))
                continue
            table = stem + "-table.txt"
            progs = [plain_build(stem, work), stem, profiled_wrapper(stem, table)]
            t = train_step.time_trainers(progs, steps, warm, stem + "-data", args.threads,
                                         args.repeat)
            plain, built, profiled = (t[p] for p in progs)
            print("%-14s %10s %10s %10s %12.3f %12.3f" % (
                spec["name"], train_step.ms(plain), train_step.ms(built), train_step.ms(profiled),
                built / plain, profiled / plain), flush=True)
            if args.tables:
                text = open(table).read()
                print("\n".join(line for line in text.splitlines()
                                if not line.startswith(("epoch", "run:", "training:"))
                                )[:6000])
                m = re.search(r"contractions \(GEMM, convolution\): ([\d.]+) GFLOP a step at "
                              r"([\d.]+) GFLOP/s", text)
                a = re.search(r"a step: ([\d.]+) ms", text)
                if m and a and peak:
                    gflop, rate = float(m.group(1)), float(m.group(2))
                    print("  -> contractions at %.2f of the sgemm rate; the whole step at %.2f "
                          "(%.3f GFLOP in %.3f ms)\n" % (rate * 1e9 / peak,
                                                       gflop / float(a.group(1)) * 1e12 / peak,
                                                       gflop, float(a.group(1))))


if __name__ == "__main__":
    sys.exit(main())
