#!/usr/bin/python3
"""Data parallelism on one machine: 2 ranks (mpirun) at batch B against one
process at batch 2B, trainc and PyTorch DDP (gloo) side by side (CPU).

Usage: bench/data_parallel.py [--trainc PATH] [--batch B] [--samples N]
                              [--epochs E] [--repeat R] [--hidden H]
                              [--bucket-size SIZE]

The model is an MLP 784-H-H-10 (ONNX, exported from the same torch module
both sides train) on N random samples. trainc: `--optimizer=sgd` at batch
2B (one process, 2 threads) and `--data-parallel` at batch B under
`mpirun -np 2` (1 thread each), with each bucket's sum on a thread of its
own while the backward goes on (--comm-overlap on) and with the sums in
the step's order (off: what auto picks under mpirun's binding of a core
per rank); the trainer's own figures for rank 0's
time in sums over the ranks and for how long its steps waited for them. PyTorch: the same SGD at batch 2B in one process
(2 threads), and DistributedDataParallel over gloo with 2 processes at
batch B (1 thread each). Each side's samples per second comes from two runs
of different lengths (their difference cancels start-up), the best of
--repeat. Numbers from a shared machine: compare within a line.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
MPI = ["mpirun", "-np", "2", "--oversubscribe", "--mca", "btl_vader_single_copy_mechanism",
       "none"]


def mlp(hidden):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(784, hidden), torch.nn.ReLU(),
                               torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
                               torch.nn.Linear(hidden, 10))


def timed(cmd, env=None):
    start = time.time()
    run = subprocess.run(cmd, capture_output=True, text=True, env=env or ENV)
    if run.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), run.stderr[-800:]))
    return time.time() - start, run.stderr


def samples_per_second(make_cmd, epochs, samples, repeat):
    """From runs of `epochs` and 3 * `epochs` epochs (the difference cancels
    start-up), the best of `repeat`."""
    best = 0.0
    stderr = ""
    for _ in range(repeat):
        short, _ = timed(make_cmd(epochs))
        long_, stderr = timed(make_cmd(3 * epochs))
        best = max(best, 2 * epochs * samples / max(long_ - short, 1e-9))
    return best, stderr


DDP_WORKER = r'''
import os, sys, time
import numpy as np, torch, torch.distributed as dist
rank, world, batch, epochs, hidden, data = (int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]),
    int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
torch.set_num_threads(int(sys.argv[5]))
x, y = torch.tensor(np.load(data + "/x.npy")), torch.tensor(np.load(data + "/label.npy"))
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(784, hidden), torch.nn.ReLU(),
                          torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
                          torch.nn.Linear(hidden, 10))
if world > 1:
    dist.init_process_group("gloo")
    net = torch.nn.parallel.DistributedDataParallel(net)
opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
n = x.shape[0]
for e in range(epochs):
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(e))
    for first in range(0, n, batch * world):
        idx = perm[first + rank * batch:first + (rank + 1) * batch]
        if len(idx) == 0:
            idx = perm[:1]
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(x[idx]), y[idx]).backward()
        opt.step()
if world > 1:
    dist.destroy_process_group()
'''


# torch.distributed.run of Debian's torch 1.13 fails on Python 3.11: the
# ranks are started here, with the environment it would set.
DDP_LAUNCH = r'''
import os, socket, subprocess, sys
world = int(sys.argv[1])
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
procs = [subprocess.Popen(sys.argv[2:], env=dict(os.environ, RANK=str(r), WORLD_SIZE=str(world),
                                                  LOCAL_RANK=str(r), MASTER_ADDR="127.0.0.1",
                                                  MASTER_PORT=str(port)))
         for r in range(world)]
sys.exit(max(p.wait() for p in procs))
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trainc", default=os.path.join(os.path.dirname(__file__), "..", "build",
                                                     "bin", "trainc"))
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--samples", type=int, default=8192)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--bucket-size", default="1MiB",
                    help="trainc --bucket-size (default 1MiB: 8 buckets of the default MLP; "
                         "one bucket would leave nothing to overlap)")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="trainc-dp-bench-")
    data = os.path.join(work, "data")
    os.makedirs(data)
    rng = np.random.RandomState(0)
    np.save(os.path.join(data, "x.npy"), rng.randn(args.samples, 784).astype(np.float32))
    np.save(os.path.join(data, "label.npy"), rng.randint(0, 10, args.samples).astype(np.int64))
    model = os.path.join(work, "mlp.onnx")
    net = mlp(args.hidden)
    torch.onnx.export(net, torch.zeros(2, 784), model, input_names=["x"],
                      output_names=["logits"], dynamic_axes={"x": {0: "b"}, "logits": {0: "b"}},
                      opset_version=17)
    B = args.batch
    one, ranks = os.path.join(work, "one"), os.path.join(work, "ranks")
    for out, batch, extra in ((one, 2 * B, []), (ranks, B, ["--data-parallel", "--bucket-size=" + args.bucket_size])):
        subprocess.run([args.trainc, "compile", model, "--target=cpu", "--loss=cross-entropy",
                        "--optimizer=sgd", "--batch-size=%d" % batch, "-o", out] + extra,
                       check=True)
    common = ["--data", data, "--lr", "0.01", "--momentum", "0.9", "--workers", "1"]
    ours1, _ = samples_per_second(
        lambda e: [one] + common + ["--epochs", str(e), "--threads", "2"],
        args.epochs, args.samples, args.repeat)
    ours2, said = samples_per_second(
        lambda e: MPI + [ranks] + common + ["--epochs", str(e), "--threads", "1",
                                            "--comm-overlap", "on"],
        args.epochs, args.samples, args.repeat)
    ours2off, said_off = samples_per_second(
        lambda e: MPI + [ranks] + common + ["--epochs", str(e), "--threads", "1",
                                            "--comm-overlap", "off"],
        args.epochs, args.samples, args.repeat)
    pattern = (r"rank 0 spent ([0-9.]+) s of ([0-9.]+) s in (\d+) sums.*its steps waited "
               r"([0-9.]+) s")
    sums, sums_off = re.search(pattern, said), re.search(pattern, said_off)
    worker = os.path.join(work, "ddp_worker.py")
    with open(worker, "w") as f:
        f.write(DDP_WORKER)

    launcher = os.path.join(work, "ddp_launch.py")
    with open(launcher, "w") as f:
        f.write(DDP_LAUNCH)

    def torch_cmd(world, batch, threads):
        def make(e):
            return [sys.executable, launcher, str(world), sys.executable, worker, str(batch),
                    str(e), str(args.hidden), data, str(threads)]
        return make
    theirs1, _ = samples_per_second(torch_cmd(1, 2 * B, 2), args.epochs, args.samples,
                                    args.repeat)
    theirs2, _ = samples_per_second(torch_cmd(2, B, 1), args.epochs, args.samples, args.repeat)
    print("MLP 784-%d-%d-10, %d samples, SGD; samples/s (higher is better)"
          % (args.hidden, args.hidden, args.samples))
    print("  trainc  1 process batch %d: %8.0f   2 ranks batch %d: %8.0f   2 ranks / 1: %.2f"
          % (2 * B, ours1, B, ours2off, ours2off / ours1))
    print("  trainc  2 ranks, sums overlapped with the backward (--comm-overlap on): %8.0f   "
          "overlapped / in order: %.2f" % (ours2, ours2 / ours2off))
    print("  PyTorch 1 process batch %d: %8.0f   DDP 2 ranks batch %d: %8.0f   2 ranks / 1: %.2f"
          % (2 * B, theirs1, B, theirs2, theirs2 / theirs1))
    print("  trainc / PyTorch: 1 process %.2f, 2 ranks %.2f" % (ours1 / theirs1,
                                                                ours2off / theirs2))
    for what, found in (("overlapped", sums), ("in order", sums_off)):
        if found:
            print("  trainc rank 0, %s (longest run): %s sums over the ranks (gradient buckets "
                  "and logged losses) took %s s of %s s (%.0f%%); its steps waited %s s for "
                  "the gradient sums" % (what, found.group(3), found.group(1), found.group(2),
                                         100 * float(found.group(1)) / float(found.group(2)),
                                         found.group(4)))
    if sums and sums_off:
        print("  trainc: the steps' wait for the gradient sums, overlapped / in order: %.2f"
              % (float(sums.group(4)) / max(float(sums_off.group(4)), 1e-9)))


if __name__ == "__main__":
    main()
