#!/usr/bin/python3
"""Runs every trainc test suite and prints one closing line 'N passed, N failed'.

Suites: lit (import, dialect, passes, codegen, error messages), unit
(GoogleTest: shape logic, importer tensors), runtime (GoogleTest: the CPU
kernels, npy, the program main), zoo (every zoo model imports, predicts like
PyTorch on the CPU target and compiles for CUDA), grad (gradients of every
differentiable op against PyTorch autograd), train (SGD/Adam/AdamW training
steps against PyTorch), nan (NaN and infinities through every forward op as
in PyTorch), recipes (schedules and the LR range test against PyTorch and
fastai), samples (per-sample losses and sample weights against PyTorch),
pipeline (pipeline-parallel trainers under mpirun against gradient accumulation),
pbt (population-based training: exploit copies, kills and reruns, --until-step),
async (asynchronous SGD: Hogwild! workers, the MPI parameter server),
kfac (K-FAC's factors, inverses and updates against float64),
profile (the trainer's --profile: its window, table, trace and costs), fusion
(normalization groups against --fuse=none, bit for bit; what fuses),
conformance (the ONNX backend node tests on the CPU target),
models (torchvision and Hugging Face models: gradients of one step against
PyTorch float64, predict, SGD export in ONNX Runtime), fuzz (every libFuzzer
target, 60 s each: scripts/fuzz.sh; TRAINC_FUZZ_SECONDS overrides, 0 skips the suite). Run from the repository root after building into build/.
"""

import os
import subprocess
import sys
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build")
RESULTS = os.path.join(BUILD, "test-results")
LIT = "/usr/lib/llvm-19/build/utils/lit/lit.py"


def junit_counts(path):
    """(passed, failed) from a JUnit XML file."""
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    total = failed = skipped = 0
    for s in suites:
        total += int(s.get("tests", 0))
        failed += int(s.get("failures", 0)) + int(s.get("errors", 0))
        skipped += int(s.get("skipped", 0) or 0)
    return total - failed - skipped, failed


def run_lit():
    xml = os.path.join(RESULTS, "lit.xml")
    subprocess.run([sys.executable, LIT, "-sv", "--xunit-xml-output", xml,
                    os.path.join(BUILD, "test")])
    return junit_counts(xml)


def run_unit():
    xml = os.path.join(RESULTS, "unit.xml")
    subprocess.run([os.path.join(BUILD, "bin", "trainc-unit-tests"),
                    "--gtest_output=xml:" + xml])
    return junit_counts(xml)


def run_runtime():
    xml = os.path.join(RESULTS, "runtime.xml")
    subprocess.run([os.path.join(BUILD, "bin", "trainc-runtime-tests"),
                    "--gtest_output=xml:" + xml])
    return junit_counts(xml)


def last_line_counts(stdout, suite):
    """(passed, failed) from a closing 'N passed, N failed[, N skipped]' line."""
    lines = stdout.strip().splitlines()
    try:
        parts = lines[-1].split(",")
        return int(parts[0].split()[0]), int(parts[1].split()[0])
    except (IndexError, ValueError):
        print("FAIL: %s :: printed no summary" % suite)
        return 0, 1


def run_conformance():
    python = os.path.join(BUILD, "conformance-venv", "bin", "python")
    run = subprocess.run([python, os.path.join(ROOT, "test", "conformance", "run_node_tests.py"),
                          os.path.join(BUILD, "bin", "trainc"),
                          os.path.join(BUILD, "conformance-work")],
                         capture_output=True, text=True)
    sys.stdout.write(run.stdout)
    sys.stderr.write(run.stderr)
    return last_line_counts(run.stdout, "conformance")


def run_python_suite(script, suite):
    run = subprocess.run(["/usr/bin/python3", script, os.path.join(BUILD, "bin", "trainc"),
                          os.path.join(BUILD, suite + "-work")],
                         capture_output=True, text=True)
    sys.stdout.write(run.stdout)
    sys.stderr.write(run.stderr)
    return last_line_counts(run.stdout, suite)


def run_grad():
    return run_python_suite(os.path.join(ROOT, "test", "grad", "check_grads.py"), "grad")


def run_train():
    return run_python_suite(os.path.join(ROOT, "test", "train", "check_training.py"), "train")


def run_precision():
    return run_python_suite(os.path.join(ROOT, "test", "train", "check_precision.py"),
                            "precision")


def run_optimizers():
    return run_python_suite(os.path.join(ROOT, "test", "train", "check_optimizers.py"),
                            "optimizers")


def run_recipes():
    return run_python_suite(os.path.join(ROOT, "test", "train", "check_recipes.py"), "recipes")


def run_samples():
    return run_python_suite(os.path.join(ROOT, "test", "train", "check_sample_weights.py"),
                            "samples")


def run_pipeline():
    return run_python_suite(os.path.join(ROOT, "test", "train", "check_pipeline.py"),
                            "pipeline")


def run_pbt():
    return run_python_suite(os.path.join(ROOT, "test", "train", "check_pbt.py"), "pbt")


def run_async():
    return run_python_suite(os.path.join(ROOT, "test", "train", "check_async.py"), "async")


def run_kfac():
    return run_python_suite(os.path.join(ROOT, "test", "train", "check_kfac.py"), "kfac")


def run_profile():
    return run_python_suite(os.path.join(ROOT, "test", "train", "check_profile.py"), "profile")


def run_fusion():
    return run_python_suite(os.path.join(ROOT, "test", "train", "check_fusion.py"), "fusion")


def run_nan():
    return run_python_suite(os.path.join(ROOT, "test", "nan", "check_nan.py"), "nan")


def run_fuzz():
    seconds = os.environ.get("TRAINC_FUZZ_SECONDS", "60")
    if seconds == "0":
        return 0, 0
    run = subprocess.run(["bash", os.path.join(ROOT, "scripts", "fuzz.sh"), seconds, "all"],
                         capture_output=True, text=True)
    sys.stdout.write(run.stdout)
    sys.stderr.write(run.stderr)
    return last_line_counts(run.stdout, "fuzz")


def run_models():
    """The real-model suite (test/models/), CUDA builds where nvcc is."""
    python = os.path.join(BUILD, "models-venv", "bin", "python")
    run = subprocess.run([python, os.path.join(ROOT, "test", "models", "check_models.py"),
                          os.path.join(BUILD, "bin", "trainc"),
                          os.path.join(BUILD, "models-work"), "--cuda"],
                         capture_output=True, text=True)
    sys.stdout.write(run.stdout)
    sys.stderr.write(run.stderr)
    return last_line_counts(run.stdout, "models")


def run_zoo():
    zoo = os.path.join(BUILD, "zoo")
    script = os.path.join(ROOT, "test", "zoo", "make_zoo.py")
    manifest = os.path.join(zoo, "zoo.json")
    if (not os.path.exists(manifest) or
            os.path.getmtime(manifest) < os.path.getmtime(script)):
        made = subprocess.run(["/usr/bin/python3", script, zoo])
        if made.returncode != 0:
            print("FAIL: zoo :: make_zoo.py failed")
            return 0, 1
    run = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "test", "zoo", "check_zoo.py"),
                          os.path.join(BUILD, "bin", "trainc"), zoo],
                         capture_output=True, text=True)
    sys.stdout.write(run.stdout)
    sys.stderr.write(run.stderr)
    return last_line_counts(run.stdout, "zoo")


def main():
    os.makedirs(RESULTS, exist_ok=True)
    totals = {}
    for name, fn in (("lit", run_lit), ("unit", run_unit), ("runtime", run_runtime),
                     ("zoo", run_zoo), ("grad", run_grad), ("train", run_train),
                     ("precision", run_precision), ("optimizers", run_optimizers),
                     ("recipes", run_recipes), ("samples", run_samples),
                     ("pipeline", run_pipeline), ("pbt", run_pbt),
                     ("async", run_async), ("kfac", run_kfac), ("profile", run_profile),
                     ("fusion", run_fusion),
                     ("nan", run_nan),
                     ("conformance", run_conformance), ("models", run_models),
                     ("fuzz", run_fuzz)):
        print("== %s tests" % name, flush=True)
        try:
            totals[name] = fn()
        except Exception as e:  # a suite that cannot run counts as a failure
            print("FAIL: %s :: could not run: %s" % (name, e))
            totals[name] = (0, 1)
        print("%s: %d passed, %d failed" % ((name,) + totals[name]), flush=True)
    passed = sum(p for p, _ in totals.values())
    failed = sum(f for _, f in totals.values())
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
