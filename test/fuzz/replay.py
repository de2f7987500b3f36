#!/usr/bin/python3
"""Replays fuzzer inputs through `trainc import`: each must end in success or a
clear error (exit 0 or 1), never a crash, and within 20 seconds.

Usage: replay.py TRAINC DIR. An input's first byte selects the format like the
fuzz target does (odd: ONNX text, even: binary protobuf).
"""
import os
import subprocess
import sys
import tempfile

trainc, folder = sys.argv[1], sys.argv[2]
bad = 0
names = sorted(os.listdir(folder))
for name in names:
    with open(os.path.join(folder, name), "rb") as f:
        data = f.read()
    suffix = ".onnxtxt" if data[:1] and data[0] & 1 else ".onnx"
    with tempfile.NamedTemporaryFile(suffix=suffix) as model:
        model.write(data[1:])
        model.flush()
        try:
            run = subprocess.run([trainc, "import", model.name, "--batch-size=2"],
                                 capture_output=True, timeout=20)
            code = run.returncode
        except subprocess.TimeoutExpired:
            code = "timeout"
    if code not in (0, 1):
        print("input %s: exit %s" % (name, code))
        bad += 1
print("replayed %d inputs, %d bad" % (len(names), bad))
sys.exit(1 if bad else 0)
