#!/usr/bin/env bash
# Makes the benchmark venv (default /tmp/bench-venv, or the path in $1):
# Debian's python3 without its site packages (Debian's torch 1.13 must not
# shadow the venv's), with a current PyTorch (2.5.1, used on the CPU),
# torchvision 0.20.1 (the zoo's ResNet-18), ONNX Runtime's training package
# (1.19.2: on-device training API and its artifact generator), onnx and
# numpy. For bench/train_step.py --venv only;
# CI never uses it. Everything comes from PyPI alone: its torch pulls ~5 GB
# of CUDA wheels but runs on the CPU.
set -euo pipefail
venv=${1:-/tmp/bench-venv}
torch=2.5.1
torchvision=0.20.1
ort=1.19.2
# The onnx and numpy of ORT 1.19.2's time: a newer onnx writes IR versions that ORT 1.19 refuses.
onnx=1.16.2
numpy=1.26.4
check() {
  "$venv/bin/python" - <<PY 2>/dev/null
import sys, torch, torchvision, onnx, numpy, onnxruntime, onnxruntime.training
from onnxruntime.training import artifacts, api
sys.exit(not (torch.__version__.split("+")[0] == "$torch" and onnxruntime.__version__ == "$ort" and onnx.__version__ == "$onnx"))
PY
}
if [ -x "$venv/bin/python" ] && check; then
  exit 0
fi
/usr/bin/python3 -m venv "$venv"
pip=("$venv/bin/pip" install --quiet --disable-pip-version-check)
"${pip[@]}" --upgrade pip
"${pip[@]}" "torch==$torch" "torchvision==$torchvision"
"${pip[@]}" "onnxruntime-training-cpu==$ort" "onnx==$onnx" "numpy==$numpy"
if ! check; then
  echo "bench-venv: $venv does not import torch $torch and onnxruntime.training $ort" >&2
  exit 1
fi
"$venv/bin/python" -c "import sys, torch, onnx, onnxruntime; print('bench venv:', sys.version.split()[0], 'torch', torch.__version__, 'onnxruntime', onnxruntime.__version__, 'onnx', onnx.__version__)"
