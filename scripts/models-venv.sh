#!/usr/bin/env bash
# Makes build/models-venv: Debian's python3 (torch 1.13, torchvision 0.14,
# onnx 1.12) plus the PyPI Hugging Face transformers that the real-model suite
# (test/models/) builds its language and audio models with. Only code is
# installed: the suite builds every model from a small config, no weights.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=build/models-venv
transformers=4.36.2
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import transformers, sys; sys.exit(transformers.__version__ != '$transformers')" 2>/dev/null; then
  exit 0
fi
/usr/bin/python3 -m venv --system-site-packages "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "transformers==$transformers"
