#!/usr/bin/python3
"""Pipeline parallelism (trainc compile --pipeline-stages) against gradient
accumulation in one process.

Usage: check_pipeline.py TRAINC WORKDIR [--gpu-prepare DIR]

The zoo's MLP, GPT and ResNet-18 (exported in training mode, as the zoo
suite exports them; 10 samples, SGD with momentum 0.9 and weight decay)
are compiled twice: cut into S stages with M micro-batches of batch B, and
as one process with --grad-accum=M at batch B. Under `mpirun -np S` (or
S x D with --data-parallel, against one process at batch D x B) the stages
must train to the same weights (--save-params, each tensor within 1e-6
norm-wise), log the same loss at every step (relative 1e-6) and export a
model equal to the single process's (the graph byte for byte, each
initializer within 1e-6 norm-wise):
  * MLP: 2 stages, 3 stages (one layer each), 2 stages x 2 replicas, and
    the trainer's --micro-batches overriding the compiled M;
  * GPT: 2 and 3 stages (the cuts cross the residual stream), 2 stages x
    2 replicas, and 2 stages in bf16 (the weight casts go with their layers);
  * ResNet-18: 2 and 3 stages (batch norms in every stage; 2 steps);
  * checkpoints every 2 steps, then --resume: each stage resumes its own
    checkpoint, and 4 + 2 steps train the same bytes as 6 in one go; stages
    whose checkpoints are at different steps are refused;
  * python/trainc_torch.py: compile(pipeline_stages=2) and fit (under
    mpirun) train the weights of grad_accum=2 in one process;
  * a stage that stops answering (SIGSTOP) ends the run through the other's
    --comm-timeout, no rank left;
  * misuse is refused: a run outside mpirun, a process count that is not a
    multiple of S, --grad-accum, --eval-data, --comm-overlap on (CPU).
--gpu-prepare DIR packs the CUDA trainer of the MLP in 2 stages beside the
CPU stages' log and weights (DIR/pipeline_mlp_2_stages, with "ranks": 2 in
case.json): test/gpu/run.sh runs it under mpirun -np 2 (NCCL's send and
receive; one GPU per rank) and test/gpu/compare_recipes.py compares.
Prints one line per check and 'N passed, N failed'.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import onnx
import torch
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "test", "zoo"))
from check_training import MPI_ENV, ZOO_SAMPLES, mpirun_command, zoo_data  # noqa: E402

TOLERANCE = 1e-6
GPU_DIR = None
RUN_FLAGS = ["--lr", "0.01", "--momentum", "0.9", "--weight-decay", "1e-4", "--seed", "5"]


def export_zoo(work, name):
    """The zoo model `name` in training mode and its data (10 samples)."""
    import make_zoo
    spec = next(s for s in make_zoo.TORCH_MODELS if s["name"] == name)
    torch.manual_seed(0)
    model = spec["build"]()
    model.train()
    inputs, labels, flags = zoo_data(name, spec, np.random.RandomState(3))
    path = os.path.join(work, name + ".onnx")
    example = tuple(torch.tensor(v[:2]) for v in inputs.values())
    names = list(inputs)
    torch.onnx.export(model, example, path, input_names=names, output_names=["logits"],
                      dynamic_axes={n: {0: "batch"} for n in names + ["logits"]},
                      opset_version=17, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.TRAINING)
    data = os.path.join(work, name + "-data")
    os.makedirs(data, exist_ok=True)
    for key, value in inputs.items():
        np.save(os.path.join(data, key + ".npy"), value)
    np.save(os.path.join(data, "label.npy"), labels)
    return path, data, flags


def run(cmd, env=None):
    """The command's error text, or None."""
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    except subprocess.TimeoutExpired:
        return "timed out: " + " ".join(cmd)
    return None if done.returncode == 0 else (done.stderr.strip()[-3000:] or "failed")


def compile_trainer(trainc, model, out, batch, flags):
    return run([trainc, "compile", model, "--target=cpu", "--loss=cross-entropy",
                "--optimizer=sgd", "--batch-size=%d" % batch, "-o", out] + flags)


def train(prog, data, ranks, flags, out):
    args = ["--data", data, "--save-params", out + ".params", "--export", out + ".onnx",
            "--log", out + ".log"] + RUN_FLAGS + flags
    for stale in (out + ".log",):
        if os.path.exists(stale):
            os.remove(stale)
    if ranks > 1:
        return run(mpirun_command(ranks, prog, args), MPI_ENV)
    return run([prog] + args)


def norm_worst(dir_a, dir_b):
    """The largest ||a - b|| / ||b|| over the tensors saved in both, where,
    and how many."""
    names = sorted(f for f in os.listdir(dir_b) if f.endswith(".npy"))
    worst, where = 0.0, ""
    for f in names:
        if not os.path.exists(os.path.join(dir_a, f)):
            return float("inf"), f[:-4] + " (missing)", len(names)
        a = np.load(os.path.join(dir_a, f)).astype(np.float64)
        b = np.load(os.path.join(dir_b, f)).astype(np.float64)
        err = float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))
        if err > worst:
            worst, where = err, f[:-4]
    return worst, where, len(names)


def log_losses(path):
    import json
    with open(path) as f:
        return [json.loads(line)["loss"] for line in f if '"step"' in line]


def export_verdict(a_path, b_path):
    """Whether two exported models have the same graph and initializers
    within TOLERANCE (norm-wise), and the worst initializer error."""
    a, b = onnx.load(a_path), onnx.load(b_path)
    inits_a = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in a.graph.initializer}
    inits_b = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in b.graph.initializer}
    worst = 0.0
    for name, value in inits_b.items():
        if name not in inits_a or inits_a[name].shape != value.shape:
            return False, float("inf")
        worst = max(worst, float(np.linalg.norm(inits_a[name] - value) /
                                 max(np.linalg.norm(value), 1e-30)))
    for g in (a.graph, b.graph):
        del g.initializer[:]
    return a.SerializeToString() == b.SerializeToString() and len(inits_a) == len(inits_b), worst


def check_case(trainc, work, check, model, data, flags, name, stages, replicas, batch, micro,
               steps, extra_compile=(), extra_run=(), tag_extra=""):
    tag = "%s in %d stages%s, %d micro-batches of %d%s" % (
        name, stages, " x %d replicas" % replicas if replicas > 1 else "", micro, batch,
        tag_extra)
    base = os.path.join(work, "%s_s%d_d%d_m%d%s" % (name, stages, replicas, micro,
                                                   "_x" if tag_extra else ""))
    staged, one = base + "_stages", base + "_one"
    compile_micro = [] if "--micro-batches" in extra_run else ["--micro-batches=%d" % micro]
    error = (compile_trainer(trainc, model, staged, batch,
                             flags + ["--pipeline-stages=%d" % stages] + compile_micro +
                             (["--data-parallel"] if replicas > 1 else []) +
                             list(extra_compile)) or
             compile_trainer(trainc, model, one, batch * replicas,
                             flags + ["--grad-accum=%d" % micro]))
    if error:
        check(False, tag + ": compile: " + error)
        return None
    steps_flags = ["--steps", str(steps)]
    error = (train(staged, data, stages * replicas, steps_flags + list(extra_run), staged) or
             train(one, data, 1, steps_flags, one))
    if error:
        check(False, tag + ": train: " + error)
        return None
    worst, where, count = norm_worst(staged + ".params", one + ".params")
    check(count > 0 and worst <= TOLERANCE,
          "%s: %d steps train the %d tensors of one process with --grad-accum=%d within %g "
          "norm-wise (worst %.2g at %s)" % (tag, steps, count, micro, TOLERANCE, worst, where))
    ours, theirs = log_losses(staged + ".log"), log_losses(one + ".log")
    close = len(ours) == len(theirs) == steps and all(
        abs(a - b) <= TOLERANCE * max(abs(b), 1e-30) for a, b in zip(ours, theirs))
    check(close, "%s: the last stage logs the loss of every step as one process does "
          "(relative %g)" % (tag, TOLERANCE))
    same, err = export_verdict(staged + ".onnx", one + ".onnx")
    check(same and err <= TOLERANCE,
          "%s: --export writes one model, the single process's graph with its initializers "
          "within %g (worst %.2g)" % (tag, TOLERANCE, err))
    return staged


def prepare_gpu_case(trainc, model, data, flags, staged, steps):
    """The CUDA trainer of `model` in 2 stages with the CPU stages' log and
    weights, for test/gpu/run.sh and compare_recipes.py."""
    out = os.path.join(GPU_DIR, "pipeline_mlp_2_stages")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.join(out, "initial"))
    shutil.copytree(data, os.path.join(out, "data"))
    shutil.copytree(staged + ".params", os.path.join(out, "cpu"))
    shutil.copy(staged + ".log", os.path.join(out, "cpu.jsonl"))
    error = run([trainc, "compile", model, "--target=cuda", "--cuda-arch=sm_90",
                 "--loss=cross-entropy", "--optimizer=sgd", "--batch-size=2",
                 "--pipeline-stages=2", "--micro-batches=2", "-o", os.path.join(out, "prog")] +
                flags)
    if error:
        raise RuntimeError("CUDA pipeline trainer: " + error)
    shutil.rmtree(os.path.join(out, "prog.build"), ignore_errors=True)
    for t in onnx.load(model).graph.initializer:
        np.save(os.path.join(out, "initial", t.name + ".npy"), numpy_helper.to_array(t))
    with open(os.path.join(out, "case.json"), "w") as f:
        json.dump({"flags": RUN_FLAGS + ["--steps", str(steps)], "ranks": 2}, f)


def check_resume(work, check, prog, data):
    """Checkpoints every 2 steps to 4, --resume to 6, against 6 in one go."""
    ckpt = os.path.join(work, "pipeline_ckpt")
    straight, resumed = prog + "_straight6", prog + "_resumed6"
    error = (train(prog, data, 2, ["--steps", "6"], straight) or
             train(prog, data, 2, ["--steps", "4", "--checkpoint-dir", ckpt,
                                   "--checkpoint-every", "2"], prog + "_first4") or
             train(prog, data, 2, ["--steps", "6", "--checkpoint-dir", ckpt, "--resume"],
                   resumed))
    if error:
        check(False, "pipeline checkpoint and resume: " + error)
        return
    names = sorted(f for f in os.listdir(straight + ".params") if f.endswith(".npy"))
    same = bool(names) and all(
        np.array_equal(np.load(os.path.join(straight + ".params", f)),
                       np.load(os.path.join(resumed + ".params", f))) for f in names)
    stages = sorted(d for d in os.listdir(ckpt) if d.startswith("stage"))
    check(same and stages == ["stage0", "stage1"],
          "mlp in 2 stages: each stage checkpoints in DIR/stage<k> and 4 steps, then --resume "
          "to 6, train the %d tensors of 6 steps in one go, bit for bit" % len(names))
    # Stage 1's checkpoint from a run of 2 steps beside stage 0's of 4.
    other = os.path.join(work, "pipeline_ckpt_2")
    error = train(prog, data, 2, ["--steps", "2", "--checkpoint-dir", other], prog + "_first2")
    shutil.rmtree(os.path.join(ckpt, "stage1"))
    shutil.copytree(os.path.join(other, "stage1"), os.path.join(ckpt, "stage1"))
    mixed = error or train(prog, data, 2, ["--steps", "6", "--checkpoint-dir", ckpt, "--resume"],
                           prog + "_mixed")
    check(mixed is not None and "checkpoints are at different steps" in mixed,
          "mlp in 2 stages: --resume refuses stages whose checkpoints are at different steps")


def check_stopped_stage(check, prog, data):
    """A stage that stops answering (SIGSTOP) ends the run through the other's
    --comm-timeout, with no rank left behind."""
    run = subprocess.Popen(mpirun_command(2, prog, ["--data", data, "--epochs", "100000",
                                                    "--comm-timeout", "3"]),
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           env=MPI_ENV)
    time.sleep(3)
    ranks = subprocess.run(["pgrep", "-f", "^" + prog + " "], capture_output=True,
                           text=True).stdout.split()
    if len(ranks) == 2:
        os.kill(int(ranks[1]), signal.SIGSTOP)
    started = time.time()
    try:
        _, err = run.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        run.kill()
        subprocess.run(["pkill", "-9", "-f", "^" + prog + " "])
        check(False, "pipeline: a stopped stage leaves the run running after 60 s")
        return
    left = subprocess.run(["pgrep", "-f", "^" + prog + " "], capture_output=True,
                          text=True).stdout.split()
    said = next((line.strip() for line in err.splitlines() if "--comm-timeout" in line),
                "no line naming --comm-timeout")
    check(len(ranks) == 2 and run.returncode != 0 and not left and "--comm-timeout" in said,
          "pipeline: stopping one of 2 stages mid-run ends the run in %.0f s, no rank left (%s)"
          % (time.time() - started, said[:160]))


def check_python(trainc, work, check):
    """python/trainc_torch.py: compile(..., pipeline_stages=2) and fit under
    mpirun train as the CLI does (the same weights as the single process)."""
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import trainc_torch
    torch.manual_seed(3)
    module = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                                 torch.nn.Linear(32, 4))
    rng = np.random.RandomState(4)
    x = rng.randn(64, 16).astype(np.float32)
    y = x[:, :4].argmax(axis=1).astype(np.int64)
    results = {}
    for stages in (1, 2):
        copy = torch.nn.Sequential(*[torch.nn.Linear(16, 32), torch.nn.ReLU(),
                                     torch.nn.Linear(32, 4)])
        copy.load_state_dict(module.state_dict())
        folder = os.path.join(work, "python-pipeline-%d" % stages)
        shutil.rmtree(folder, ignore_errors=True)
        flags = {"pipeline_stages": 2, "micro_batches": 2} if stages == 2 else {"grad_accum": 2}
        try:
            os.environ.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
            trainer = trainc_torch.compile(copy, torch.zeros(8, 16), loss="cross-entropy",
                                           optimizer="sgd", target="cpu", workdir=folder,
                                           trainc=trainc, **flags)
            log = trainer.fit((x, y), steps=3, lr=0.1,
                              mpirun_args=["--oversubscribe", "--mca",
                                           "btl_vader_single_copy_mechanism", "none"])
            trainer.load_into(copy)
        except (RuntimeError, ValueError, OSError) as error:
            check(False, "python: a pipeline trainer compiles and fits: %s" % str(error)[-300:])
            return
        results[stages] = (log, {k: v.clone() for k, v in copy.state_dict().items()})
    same = all(torch.equal(results[1][1][k], results[2][1][k]) for k in results[1][1])
    check(len(results[2][0]) == 3 and same,
          "python: compile(pipeline_stages=2) and fit run the 2 stages under mpirun and train "
          "the weights of grad_accum=2 in one process")


def check_refusals(check, prog, data):
    cases = [
        ("a run outside mpirun", 1, [], "run it under mpirun"),
        ("3 processes for 2 stages", 3, [], "multiple of 2"),
        ("--grad-accum", 2, ["--grad-accum", "2"], "--micro-batches"),
        ("--eval-data", 2, ["--eval-data", data], "--eval-data"),
        ("--comm-overlap on", 2, ["--comm-overlap", "on"], "--comm-overlap on"),
    ]
    for what, ranks, flags, says in cases:
        args = ["--data", data, "--steps", "1"] + flags
        cmd = mpirun_command(ranks, prog, args) if ranks > 1 else [prog] + args
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=MPI_ENV)
        check(done.returncode != 0 and says in done.stderr,
              "pipeline trainer refuses %s, saying '%s'" % (what, says))


def main():
    global GPU_DIR
    trainc, work = sys.argv[1], sys.argv[2]
    if len(sys.argv) == 5 and sys.argv[3] == "--gpu-prepare":
        GPU_DIR = os.path.abspath(sys.argv[4])
        os.makedirs(GPU_DIR, exist_ok=True)
    os.makedirs(work, exist_ok=True)
    results = []

    def check(ok, what):
        results.append(ok)
        print(("PASS " if ok else "FAIL ") + what, flush=True)

    assert ZOO_SAMPLES == 10
    mlp, mlp_data, mlp_flags = export_zoo(work, "mlp")
    gpt, gpt_data, gpt_flags = export_zoo(work, "gpt")
    resnet, resnet_data, resnet_flags = export_zoo(work, "resnet18")
    # 10 samples at batch 2: groups of M micro-batches, the last one short.
    prog = check_case(trainc, work, check, mlp, mlp_data, mlp_flags, "mlp", 2, 1, 2, 2, 5)
    check_case(trainc, work, check, mlp, mlp_data, mlp_flags, "mlp", 3, 1, 2, 4, 3,
               extra_compile=["--stage-boundaries=/fc1/Gemm,/fc2/Gemm"])
    check_case(trainc, work, check, mlp, mlp_data, mlp_flags, "mlp", 2, 2, 2, 2, 5)
    check_case(trainc, work, check, mlp, mlp_data, mlp_flags, "mlp", 2, 1, 2, 3, 4,
               extra_run=["--micro-batches", "3"], tag_extra=" (the trainer's --micro-batches)")
    check_case(trainc, work, check, gpt, gpt_data, gpt_flags, "gpt", 2, 1, 2, 2, 5)
    check_case(trainc, work, check, gpt, gpt_data, gpt_flags, "gpt", 3, 1, 2, 3, 4)
    check_case(trainc, work, check, gpt, gpt_data, gpt_flags, "gpt", 2, 2, 2, 2, 3)
    # bf16: the weight casts the mixed-precision phase puts first go with
    # their layers' stages.
    check_case(trainc, work, check, gpt, gpt_data, gpt_flags + ["--precision=bf16"], "gpt", 2,
               1, 2, 2, 3, tag_extra=" (bf16)")
    check_case(trainc, work, check, resnet, resnet_data, resnet_flags, "resnet18", 2, 1, 2, 2,
               2)
    check_case(trainc, work, check, resnet, resnet_data, resnet_flags, "resnet18", 3, 1, 2, 3,
               2)
    if prog and GPU_DIR:
        prepare_gpu_case(trainc, mlp, mlp_data, mlp_flags, prog, 5)
    if prog:
        check_resume(work, check, prog, mlp_data)
        check_refusals(check, prog, mlp_data)
        check_stopped_stage(check, prog, mlp_data)
    check_python(trainc, work, check)
    passed = sum(results)
    print("%d passed, %d failed" % (passed, len(results) - passed))
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
