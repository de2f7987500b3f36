#!/usr/bin/python3
"""Step time of the CPU trainer against PyTorch's CPU training loop.

Usage: bench/train_step.py [--threads N] [--batch B] [--steps S]
                           [--resnet-batch B] [--resnet-steps S]

For the digits example and every zoo model (ResNet-18 at its own, smaller
batch and step count: a step takes seconds on two cores), both sides train the same ONNX initial weights on the same
random data with SGD (momentum 0.9) at the same batch size and thread count,
in this one run. trainc's time per step is taken from two runs of different
lengths (their difference cancels start-up and data loading); PyTorch's
from a timed loop after warm-up steps. Prints ms/step for each and the ratio
trainc / PyTorch (below 1: trainc is faster). Numbers from a shared machine:
compare ratios, not absolute times.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import torch
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TRAINC = os.path.join(ROOT, "build", "bin", "trainc")


def torch_mlp(path):
    """Linear/ReLU stack rebuilt from the ONNX initializers (W, b pairs)."""
    init = [numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer]
    layers = []
    for i in range(0, len(init), 2):
        w, b = init[i], init[i + 1]
        lin = torch.nn.Linear(w.shape[1], w.shape[0])
        lin.weight.data, lin.bias.data = torch.tensor(w), torch.tensor(b)
        layers += [lin, torch.nn.ReLU()]
    return torch.nn.Sequential(*layers[:-1])


def bench_model(name, path, shape, classes, args, work, build_torch=None, batch=None,
                steps=None, tokens=False):
    """`tokens`: int64 token input [N, *shape] below `classes` with one label
    per token (a language model: --class-axis=-1)."""
    batch, steps = batch or args.batch, steps or args.steps
    prog = os.path.join(work, name.replace(" ", "_"))
    subprocess.run([TRAINC, "compile", path, "--target=cpu", "--batch-size=%d" % batch,
                    "--loss=cross-entropy", "--optimizer=sgd", "-o", prog]
                   + (["--class-axis=-1"] if tokens else []), check=True)
    warm = min(50, steps)
    samples = batch * (steps + warm)
    rng = np.random.RandomState(0)
    data = os.path.join(work, name.replace(" ", "_") + "-data")
    os.makedirs(data, exist_ok=True)
    input_name = onnx.load(path).graph.input[0].name
    if tokens:
        x = rng.randint(0, classes, (samples,) + shape).astype(np.int64)
        y = rng.randint(0, classes, (samples,) + shape).astype(np.int64)
    else:
        x = rng.rand(samples, *shape).astype(np.float32)
        y = rng.randint(0, classes, samples).astype(np.int64)
    np.save(os.path.join(data, input_name + ".npy"), x)
    np.save(os.path.join(data, "label.npy"), y)
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))

    def run(count):
        start = time.perf_counter()
        subprocess.run([prog, "--data", data, "--steps", str(count), "--lr", "0.01",
                        "--momentum", "0.9", "--no-shuffle", "--threads", str(args.threads)],
                       check=True, env=env, capture_output=True)
        return time.perf_counter() - start

    run(min(10, steps))  # warm the page cache
    short = min(run(warm) for _ in range(3))
    long = min(run(warm + steps) for _ in range(3))
    ours = (long - short) / steps

    torch.set_num_threads(args.threads)
    net = build_torch() if build_torch else torch_mlp(path)
    net.train()
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    xt, yt = torch.tensor(x), torch.tensor(y)

    def step(i):
        xb, yb = xt[i * batch:(i + 1) * batch], yt[i * batch:(i + 1) * batch]
        opt.zero_grad()
        logits = net(xb)
        if tokens:
            logits, yb = logits.reshape(-1, logits.shape[-1]), yb.reshape(-1)
        torch.nn.functional.cross_entropy(logits, yb).backward()
        opt.step()

    for i in range(warm):
        step(i)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for i in range(steps):
            step(i)
        best = min(best, time.perf_counter() - start)
    theirs = best / steps
    print("%-12s batch %4d threads %d: trainc %.3f ms/step, PyTorch %.3f ms/step, ratio %.2f"
          % (name, batch, args.threads, ours * 1e3, theirs * 1e3, ours / theirs), flush=True)


def zoo_module(make, path):
    """A zoo module with the ONNX file's initial weights and statistics."""
    def build():
        init = {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}
        torch.manual_seed(0)
        net = make()
        net.load_state_dict({k: torch.tensor(init[k]) if k in init else v
                             for k, v in net.state_dict().items()})
        return net
    return build


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--resnet-batch", type=int, default=8)
    parser.add_argument("--resnet-steps", type=int, default=5)
    args = parser.parse_args()
    zoo = os.path.join(ROOT, "build", "zoo")
    if not os.path.exists(os.path.join(zoo, "zoo.json")):
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "test", "zoo", "make_zoo.py"), zoo],
                       check=True)
    with tempfile.TemporaryDirectory() as work:
        bench_model("digits_mlp", os.path.join(ROOT, "examples", "digits_mlp.onnx"), (64,), 10,
                    args, work)
        bench_model("zoo mlp", os.path.join(zoo, "mlp_op17.onnx"), (784,), 10, args, work)
        sys.path.insert(0, os.path.join(ROOT, "test", "zoo"))
        import make_zoo
        lenet_path = os.path.join(zoo, "lenet_op17.onnx")
        bench_model("zoo lenet", lenet_path, (1, 28, 28), 10, args, work,
                    zoo_module(make_zoo.LeNet, lenet_path))
        resnet_path = os.path.join(zoo, "resnet18_op17.onnx")
        bench_model("zoo resnet18", resnet_path, (3, 64, 64), 10, args, work,
                    zoo_module(make_zoo.make_resnet18, resnet_path),
                    batch=args.resnet_batch, steps=args.resnet_steps)
        gpt_path = os.path.join(zoo, "gpt_op17.onnx")
        bench_model("zoo gpt", gpt_path, (16,), 64, args, work,
                    zoo_module(make_zoo.GPT, gpt_path), tokens=True)

if __name__ == "__main__":
    sys.exit(main())
