#!/usr/bin/env bash
# Makes build/conformance-venv: Debian's python3 plus the PyPI onnx whose
# wheel ships the ONNX backend node tests (test data for opsets up to 21),
# onnxruntime, which checks exported models, and tensorboard, whose event
# reader checks the trainer's --tensorboard files.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=build/conformance-venv
version=1.16.2
ort=1.20.1
tensorboard=2.18.0
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import onnx, onnxruntime, tensorboard, sys; sys.exit(onnx.__version__ != '$version' or onnxruntime.__version__ != '$ort' or tensorboard.__version__ != '$tensorboard')" 2>/dev/null; then
  exit 0
fi
/usr/bin/python3 -m venv --system-site-packages "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "onnx==$version" "onnxruntime==$ort" \
  "tensorboard==$tensorboard"
