#!/usr/bin/env python3
"""Compile time of the GPT-2-small trainer (12 layers, width 768, 124M
parameters): exports Hugging Face's GPT2LMHeadModel with random weights
through python/trainc_torch.py, then times `trainc compile` of an AdamW
trainer for the CPU target (the whole compile, the C++ build included) and
reports the peak resident memory of the largest process.

Needs the models venv (scripts/models-venv.sh: torch and transformers 4.36):
    build/models-venv/bin/python bench/gpt2_compile.py [--layers 12] [--seq 128]
        [--trainc build/bin/trainc] [--work DIR] [--fuse auto|none]
"""
import argparse
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--trainc", default=os.path.join(ROOT, "build", "bin", "trainc"))
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--fuse", default="auto")
    parser.add_argument("--work", default="/tmp/trainc-gpt2-compile")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    model = os.path.join(args.work, "gpt2_%dl_%d.onnx" % (args.layers, args.seq))
    if not os.path.exists(model):
        import torch
        import transformers
        from trainc_torch import export_for_training
        torch.manual_seed(0)
        config = transformers.GPT2Config(n_layer=args.layers, n_positions=args.seq,
                                         resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                                         use_cache=False)
        net = transformers.GPT2LMHeadModel(config)

        class Logits(torch.nn.Module):
            def __init__(self, m):
                super().__init__()
                self.m = m

            def forward(self, ids):
                return self.m(input_ids=ids, return_dict=True).logits

        wrapped = Logits(net)
        params = sum(p.numel() for p in net.parameters())
        print("exporting GPT-2: %d layers, %d parameters, sequence %d"
              % (args.layers, params, args.seq), flush=True)
        export_for_training(wrapped, (torch.zeros(2, args.seq, dtype=torch.long),), model,
                            ["input_ids"], ["logits"])
    prog = os.path.join(args.work, "trainer")
    cmd = [args.trainc, "compile", model, "--target=cpu", "--batch-size=%d" % args.batch,
           "--loss=cross-entropy", "--class-axis=-1", "--optimizer=adamw",
           "--fuse=" + args.fuse, "-o", prog]
    start = time.perf_counter()
    subprocess.run(cmd, check=True)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    info = subprocess.run([prog, "--info"], capture_output=True, text=True).stdout
    print("gpt2 %d layers, seq %d, batch %d, --fuse=%s: compile %.1f s, peak %.0f MiB"
          % (args.layers, args.seq, args.batch, args.fuse, seconds, peak))
    for line in info.splitlines():
        if "kernels per" in line or "arena" in line or line.startswith("parameters"):
            print("  " + line.strip())


if __name__ == "__main__":
    sys.exit(main())
