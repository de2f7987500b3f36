"""Replays each phase of trainc compile alone in trainc-opt.

usage: replay_phases.py TRAINC TRAINC_OPT MODEL WORKDIR PHASE_OPTIONS -- COMPILE_FLAGS...

For every phase P after import (the previous phase Q), the IR that
`trainc compile --compile-to=Q` writes, run through
`trainc-opt --pass-pipeline='builtin.module(trainc-phase-P{PHASE_OPTIONS})'`,
must be the IR of `trainc compile --compile-to=P`, byte for byte. Prints one
line per phase and a summary.
"""
import difflib
import subprocess
import sys

trainc, trainc_opt, model, work, phase_options = sys.argv[1:6]
flags = sys.argv[sys.argv.index("--") + 1:]
phases = ["import", "loss", "fold-bias-bn", "mixed-precision", "autodiff", "layout", "pad",
          "remat", "grad-accum", "allreduce", "optimizer", "fuse", "plan"]


def compile_to(phase):
    path = "%s/%s.mlir" % (work, phase)
    # With locations: they carry the ONNX node names and the marks that tell
    # the backward from the forward (#tc.phase), which later phases read.
    subprocess.run([trainc, "compile", model, "--compile-to=" + phase, "--print-debuginfo",
                    "-o", path] + flags, check=True)
    return open(path).read()


same = 0
before = compile_to(phases[0])
for phase in phases[1:]:
    after = compile_to(phase)
    pipeline = "builtin.module(trainc-phase-%s{%s})" % (phase, phase_options)
    run = subprocess.run([trainc_opt, "--mlir-print-debuginfo", "--pass-pipeline=" + pipeline],
                         input=before,
                         capture_output=True, text=True)
    if run.returncode != 0:
        print("FAIL %s: trainc-opt failed: %s" % (phase, run.stderr.strip()))
        sys.exit(1)
    replayed = run.stdout
    if replayed.strip() != after.strip():
        print("FAIL %s: the replay differs from trainc compile --compile-to=%s" % (phase, phase))
        for line in list(difflib.unified_diff(after.splitlines(), replayed.splitlines(),
                                              "compile", "replay", lineterm=""))[:20]:
            print(line)
        sys.exit(1)
    changed = "changes the IR" if after != before else "leaves the IR as it is"
    print("replayed %s: identical (%s)" % (phase, changed))
    same += 1
    before = after
print("%d phases replayed identically" % same)
