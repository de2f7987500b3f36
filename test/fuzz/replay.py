#!/usr/bin/python3
"""Replays fuzzer inputs: each must end in success or a clear error, never a
crash, and within 20 seconds.

Usage: replay.py TRAINC DIR
  the importer's inputs (the files directly in DIR) through `trainc import`:
  exit 0 or 1. An input's first byte selects the format like the fuzz
  target does (odd: ONNX text, even: binary protobuf).
Usage: replay.py --driver PROG DIR
  a runtime target's inputs (every file in DIR) through PROG FILE, the fuzz
  target linked with test/fuzz/ReplayMain.cpp: exit 0 (a trap or a crash is
  a signal).
"""
import os
import subprocess
import sys
import tempfile


def run(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, timeout=20).returncode
    except subprocess.TimeoutExpired:
        return "timeout"


def main(argv):
    driver = argv[1] == "--driver"
    prog, folder = argv[2] if driver else argv[1], argv[3] if driver else argv[2]
    bad = 0
    names = sorted(n for n in os.listdir(folder) if os.path.isfile(os.path.join(folder, n)))
    for name in names:
        path = os.path.join(folder, name)
        if driver:
            code, ok = run([prog, path]), (0,)
        else:
            with open(path, "rb") as f:
                data = f.read()
            suffix = ".onnxtxt" if data[:1] and data[0] & 1 else ".onnx"
            with tempfile.NamedTemporaryFile(suffix=suffix) as model:
                model.write(data[1:])
                model.flush()
                code, ok = run([prog, "import", model.name, "--batch-size=2"]), (0, 1)
        if code not in ok:
            print("input %s: exit %s" % (name, code))
            bad += 1
    print("replayed %d inputs, %d bad" % (len(names), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
