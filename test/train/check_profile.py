#!/usr/bin/python3
"""The trainer's --profile: what it times, what it reports, what it costs.

Usage: check_profile.py TRAINC WORKDIR

  * the digits MLP trains the same losses, bit for bit, with --profile as
    without it (timing changes nothing it computes);
  * the window: steps 6-25 after 5 of warm-up, or fewer where the run is
    shorter; a resumed run's window starts after its own warm-up;
  * the Chrome trace: valid JSON, one "step N" span per window step and, in
    each, one event per call the generated trainStep makes (counted in the
    generated source), in order and without overlap;
  * the table: one row per call site, each called once a step; its totals
    add up to the trace's durations; the shares to at most 100%; rows of
    "backward of" nodes are backward, of "update of" nodes update, of the
    model's own nodes forward;
  * the costs: LeNet's convolutions, their two gradients and its GEMMs carry
    2 FLOPs per multiply-add as PyTorch's shapes give them, and the GFLOP/s
    column is FLOPs over the mean time;
  * gradient accumulation: accumulate_step's calls are timed too; under
    mpirun the all-reduce calls form their own part and rank 0 alone reports;
  * misuse is refused (the parameters without --profile, --predict, a trace
    path that is a folder or a symlink, --async-workers, --find-lr).
Prints one line per check and 'N passed, N failed'.
"""

import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "test", "zoo"))
sys.path.insert(0, os.path.join(ROOT, "test", "pylib"))
from check_training import MPI_ENV, mpirun_command  # noqa: E402
from checksuite import suite_main  # noqa: E402

ROW = re.compile(r"^\s+(\d+\.\d)%\s+([\d.]+)\s+(\d+)\s+([\d.]+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(.*)$")


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def table(stderr):
    """The profile's rows: share, total ms, calls, mean us, GFLOP/s, GB/s,
    part, kernel, op, nodes."""
    rows = []
    for line in stderr.splitlines():
        m = ROW.match(line)
        if m:
            # kernel, op and nodes are two spaces apart (an op has single ones).
            kernel, op, nodes = (m.group(8).split("  ", 2) + ["", ""])[:3]
            rows.append(dict(share=float(m.group(1)), total=float(m.group(2)),
                             calls=int(m.group(3)), mean=float(m.group(4)),
                             gflops=m.group(5), gbs=m.group(6), part=m.group(7),
                             kernel=kernel, op=op, nodes=nodes))
    return rows


def step_calls(source, function):
    """The TRAINC_CALLs in the generated `function` (with its parts)."""
    text = open(source).read()
    start = text.index("Status %s(Context &ctx" % function)
    body = text[start:text.index("\n}\n", start)]
    calls = body.count("TRAINC_CALL(ctx, ")
    for part in re.findall(r"TRAINC_RETURN_IF_ERROR\((\w+_part\d+)\(ctx", body):
        s = text.index("Status %s(Context &ctx" % part)
        calls += text[s:text.index("\n}\n", s)].count("TRAINC_CALL(ctx, ")
    return calls


def check_mlp(check, trainc, work, data):
    model = os.path.join(ROOT, "examples", "digits_mlp.onnx")
    prog = os.path.join(work, "mlp")
    r = run([trainc, "compile", model, "--target=cpu", "--batch-size=32",
             "--loss=cross-entropy", "--optimizer=sgd", "-o", prog])
    if r.returncode != 0:
        check(False, "compiling the digits MLP: " + r.stderr[-400:])
        return None
    base = [prog, "--data", data + "/train", "--epochs", "2", "--lr", "0.1", "--momentum", "0.9",
            "--threads", "1", "--seed", "3"]
    trace = os.path.join(work, "mlp-trace.json")
    logs = [os.path.join(work, "plain.jsonl"), os.path.join(work, "profiled.jsonl")]
    plain = run(base + ["--log", logs[0]])
    profiled = run(base + ["--log", logs[1], "--profile=" + trace])
    losses = [[rec["loss"] for rec in map(json.loads, open(log)) if "loss" in rec]
              if os.path.exists(log) else None for log in logs]
    check(plain.returncode == 0 and profiled.returncode == 0 and losses[0] == losses[1] and
          len(losses[0]) == 90,
          "the digits MLP trains the same 90 losses bit for bit with --profile as without")
    header = re.search(r"profile: steps (\d+)-(\d+) on the cpu target \((\d+) timed after (\d+) "
                       r"of warm-up\)", profiled.stderr)
    check(header and header.groups() == ("6", "25", "20", "5"),
          "the window is steps 6-25 after 5 of warm-up (%s)"
          % (header.group(0) if header else profiled.stderr[-300:]))
    per_step = step_calls(prog + ".build/mlp.cpp", "trainStep")
    try:
        events = json.load(open(trace))["traceEvents"]
    except (OSError, ValueError) as e:
        check(False, "the trace is JSON: %s" % e)
        return None
    steps = [e for e in events if e.get("cat") == "step"]
    calls = [e for e in events if e.get("ph") == "X" and e.get("cat") != "step"]
    by_step = {}
    for e in calls:
        by_step.setdefault(e["args"]["step"], []).append(e)
    ordered = all(a["ts"] + a["dur"] <= b["ts"] + 1e-3
                  for evs in by_step.values() for a, b in zip(evs, evs[1:]))
    inside = all(s["ts"] - 1e-3 <= e["ts"] and e["ts"] + e["dur"] <= s["ts"] + s["dur"] + 1e-3
                 for s in steps for e in by_step.get(int(s["name"].split()[1]), []))
    check([s["name"] for s in steps] == ["step %d" % k for k in range(6, 26)] and
          sorted(by_step) == list(range(6, 26)) and
          all(len(v) == per_step for v in by_step.values()) and ordered and inside,
          "the trace has steps 6-25, each with the %d calls of the generated trainStep, in "
          "order, not overlapping, inside their step" % per_step)
    rows = table(profiled.stderr)
    total_trace = sum(e["dur"] for e in calls) / 1e3
    total_table = sum(r["total"] for r in rows)
    check(len(rows) == per_step and all(r["calls"] == 20 for r in rows) and
          abs(total_table - total_trace) <= 0.0006 * len(rows) + 1e-9 and
          sum(r["share"] for r in rows) <= 100.0 + 0.05 * len(rows),
          "the table has a row per call site (%d), each called 20 times; its totals add up to "
          "the trace's %.3f ms (%.3f); the shares to %.1f%%"
          % (len(rows), total_trace, total_table, sum(r["share"] for r in rows)))
    parts_ok = all(("backward of" in r["nodes"]) == (r["part"] == "backward")
                   for r in rows if r["nodes"] and "update of" not in r["nodes"]) and all(
        r["part"] == "update" for r in rows if "update of" in r["nodes"]) and any(
        r["part"] == "forward" and r["nodes"].startswith("'/") for r in rows)
    check(parts_ok, "rows of 'backward of' nodes are backward, of 'update of' update, of the "
          "model's nodes forward (%s)" % sorted({(r["part"], r["nodes"][:30]) for r in rows}))
    gemm = [e for e in calls if e["args"]["nodes"].startswith("'/0/Gemm'")]
    check(gemm and all(abs(e["args"]["gflop"] - 2 * 32 * 128 * 64 * 1e-9) < 1e-15 for e in gemm),
          "the first Gemm (32x64 by 64x128) costs 2*32*128*64 FLOPs in the trace")
    return prog, base


def check_windows(check, prog, base, work):
    r = run(base[:3] + ["--steps", "3", "--lr", "0.1", "--threads", "1", "--profile"])
    check(r.returncode == 0 and "profile: steps 3-3 on the cpu target (1 timed after 2 of "
          "warm-up, fewer: the run is shorter)" in r.stderr,
          "a run of 3 steps profiles step 3 after 2 of warm-up and says so")
    ck = os.path.join(work, "ck")
    shutil.rmtree(ck, ignore_errors=True)
    first = run(base + ["--checkpoint-dir", ck, "--until-step", "30"])
    second = run(base + ["--checkpoint-dir", ck, "--resume", "--profile", "--profile-warmup",
                         "2", "--profile-steps", "4"])
    check(first.returncode == 0 and second.returncode == 0 and
          "profile: steps 33-36 on the cpu target (4 timed after 2 of warm-up)" in second.stderr,
          "a run resumed at step 30 profiles steps 33-36 (--profile-warmup 2 --profile-steps 4)")
    r = run(base[:3] + ["--steps", "2", "--lr", "0.1", "--profile", "--profile-warmup", "0",
                        "--profile-steps", "1"])
    check(r.returncode == 0 and "profile: steps 1-1" in r.stderr and
          "profile: steps 2" not in r.stderr,
          "--profile-warmup 0 --profile-steps 1 profiles step 1 alone")


def conv_flops(model, shape, batch):
    """{node kind: FLOPs} of LeNet's layers from PyTorch's shapes."""
    import torch
    flops = []

    def hook(module, inputs, output):
        if isinstance(module, torch.nn.Conv2d):
            k = module.weight[0].numel()  # Cin/groups * kh * kw
            flops.append(("Conv", 2.0 * output.numel() * k))
        elif isinstance(module, torch.nn.Linear):
            flops.append(("Gemm", 2.0 * output.numel() * module.in_features))
    for m in model.modules():
        if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)):
            m.register_forward_hook(hook)
    model(torch.zeros((batch,) + shape))
    return flops


def check_lenet(check, trainc, work):
    import torch
    import make_zoo
    spec = next(s for s in make_zoo.TORCH_MODELS if s["name"] == "lenet")
    torch.manual_seed(0)
    model = spec["build"]()
    shape = tuple(spec["inputs"]["x"]().shape[1:])
    path = os.path.join(work, "lenet.onnx")
    torch.onnx.export(model, torch.zeros((2,) + shape), path, input_names=["x"],
                      output_names=["logits"], dynamic_axes={"x": {0: "b"}, "logits": {0: "b"}},
                      opset_version=17)
    data = os.path.join(work, "lenet-data")
    os.makedirs(data, exist_ok=True)
    rng = np.random.RandomState(2)
    np.save(os.path.join(data, "x.npy"), rng.randn(64, *shape).astype(np.float32))
    np.save(os.path.join(data, "label.npy"), rng.randint(0, 10, 64).astype(np.int64))
    prog = os.path.join(work, "lenet")
    r = run([trainc, "compile", path, "--target=cpu", "--batch-size=8", "--loss=cross-entropy",
             "--optimizer=sgd", "-o", prog])
    if r.returncode != 0:
        check(False, "compiling LeNet: " + r.stderr[-400:])
        return
    trace = os.path.join(work, "lenet-trace.json")
    r = run([prog, "--data", data, "--steps", "8", "--lr", "0.01", "--threads", "1",
             "--profile=" + trace, "--profile-warmup", "1", "--profile-steps", "2"])
    if r.returncode != 0:
        check(False, "LeNet with --profile: " + r.stderr[-400:])
        return
    want = conv_flops(model, shape, 8)
    events = [e for e in json.load(open(trace))["traceEvents"]
              if e.get("ph") == "X" and e.get("args", {}).get("step") == 2]
    forward = [(e["args"]["op"], e["args"].get("gflop", 0) * 1e9) for e in events
               if e["cat"] == "forward" and e["args"].get("gflop")]
    got_forward = [f for _, f in forward]
    convs = [f for kind, f in want if kind == "Conv"]
    gemms = [f for kind, f in want if kind == "Gemm"]
    backward = sorted(e["args"]["gflop"] * 1e9 for e in events
                      if e["cat"] == "backward" and e["args"].get("gflop"))
    # Each conv: its data gradient (not the first's: the input needs none)
    # and its filter gradient; each Gemm: its input's gradient (not the
    # first's) and its weight's.
    expected_backward = sorted(convs + convs[1:] + gemms + gemms)
    close = lambda a, b: len(a) == len(b) and all(abs(x - y) <= 1e-9 * y for x, y in zip(a, b))
    check(close(sorted(got_forward), sorted(convs + gemms)) and
          close(backward, expected_backward),
          "LeNet: the forward's convolutions and GEMMs and their gradients carry PyTorch's "
          "FLOPs (forward %s, backward %d contractions)" % (
              [round(f / 1e6, 3) for f in got_forward], len(backward)))
    # GFLOP/s = FLOPs / mean (both printed rounded: 0.1 GFLOP/s, 0.1 us).
    rows = [row for row in table(r.stderr) if row["gflops"] != "-"]

    def row_flops(row):
        hits = [e["args"]["gflop"] * 1e9 for e in events
                if e["name"] == row["kernel"] and e["args"]["op"] == row["op"] and
                e["args"]["nodes"][:20] == row["nodes"][:20]]
        return hits[0] if hits else None
    bad = [row for row in rows if row_flops(row) is None or
           abs(float(row["gflops"]) - row_flops(row) / (row["mean"] * 1e-6) * 1e-9) >
           0.06 + float(row["gflops"]) * (0.051 / max(row["mean"], 0.05) + 1e-3)]
    check(len(rows) == len(convs + gemms) + len(expected_backward) and not bad,
          "LeNet: the GFLOP/s column is each contraction's FLOPs over its mean time (%d rows%s)"
          % (len(rows), "; off: %s" % bad[:2] if bad else ""))


def check_accumulation_and_ranks(check, trainc, work, data):
    model = os.path.join(ROOT, "examples", "digits_mlp.onnx")
    prog = os.path.join(work, "mlp-accum")
    r = run([trainc, "compile", model, "--target=cpu", "--batch-size=16", "--loss=cross-entropy",
             "--optimizer=sgd", "--grad-accum=2", "-o", prog])
    trace = os.path.join(work, "accum-trace.json")
    r = run([prog, "--data", data + "/train", "--steps", "12", "--lr", "0.1", "--threads", "1",
             "--profile=" + trace, "--profile-steps", "4"]) if r.returncode == 0 else r
    functions = {}
    if r.returncode == 0:
        for e in json.load(open(trace))["traceEvents"]:
            if e.get("ph") == "X" and e.get("cat") != "step":
                functions.setdefault(e["args"]["function"], set()).add(e["args"]["step"])
    check(r.returncode == 0 and functions.get("train_step") == {6, 7, 8, 9} and
          functions.get("accumulate_step") == {6, 7, 8, 9},
          "--grad-accum 2: steps 6-9's accumulate_step and train_step calls are timed (%s)"
          % {k: sorted(v) for k, v in functions.items()})
    dp = os.path.join(work, "mlp-dp")
    r = run([trainc, "compile", model, "--target=cpu", "--batch-size=16", "--loss=cross-entropy",
             "--optimizer=sgd", "--data-parallel", "-o", dp])
    r = run(mpirun_command(2, dp, ["--data", data + "/train", "--steps", "10", "--lr", "0.1",
                                   "--threads", "1", "--profile", "--profile-steps", "3"]),
            env=MPI_ENV) if r.returncode == 0 else r
    rows = table(r.stderr)
    check(r.returncode == 0 and r.stderr.count("profile: steps 6-8") == 1 and
          any(row["part"] == "all-reduce" and "allReduce" in row["kernel"] for row in rows),
          "under mpirun (2 ranks) rank 0 alone reports, with the all-reduce calls as their own "
          "part")


def check_refusals(check, prog, base, work):
    folder = os.path.join(work, "a-folder")
    os.makedirs(folder, exist_ok=True)
    link = os.path.join(work, "a-link.json")
    if not os.path.lexists(link):
        os.symlink(os.path.join(work, "elsewhere.json"), link)
    cases = [
        (["--profile-steps", "3"], "--profile-steps is a parameter of --profile"),
        (["--profile-warmup", "1"], "--profile-warmup is a parameter of --profile"),
        (["--profile=" + folder], "--profile"),
        (["--profile=" + link], "--profile"),
        (["--profile", "--async-workers", "2"], "--async-workers is not for --profile"),
        (["--profile", "--profile-steps", "0"], "--profile-steps needs an integer in [1, 10000]"),
    ]
    for extra, expected in cases:
        r = run(base + extra)
        check(r.returncode == 1 and expected in r.stderr and "profile: steps" not in r.stderr,
              "refused: %s (%s)" % (" ".join(extra), r.stderr.strip().splitlines()[-1:]))
    r = run([prog, "--predict", "--data", work + "/digits/val", "--out", work + "/pred",
             "--profile"])
    check(r.returncode == 1 and "--profile is a training flag" in r.stderr,
          "refused: --predict --profile")
    r = run(base[:3] + ["--find-lr", "--profile"])
    check(r.returncode == 1 and "--profile is a training flag; --find-lr" in r.stderr,
          "refused: --find-lr --profile")


def checks(check, trainc, work):
    data = os.path.join(work, "digits")
    run(["/usr/bin/python3", os.path.join(ROOT, "examples", "prepare_digits.py"), data])
    got = check_mlp(check, trainc, work, data)
    if got:
        prog, base = got
        check_windows(check, prog, base, work)
        check_refusals(check, prog, base, work)
    check_lenet(check, trainc, work)
    check_accumulation_and_ranks(check, trainc, work, data)


if __name__ == "__main__":
    sys.exit(suite_main(checks))
