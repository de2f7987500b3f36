#!/usr/bin/env bash
# The main job on the bundled example: set up, build, then report op support
# and print the tc IR of examples/digits_mlp.onnx.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
echo "== trainc check examples/digits_mlp.onnx"
build/bin/trainc check examples/digits_mlp.onnx
echo
echo "== trainc import examples/digits_mlp.onnx --batch-size=32"
build/bin/trainc import examples/digits_mlp.onnx --batch-size=32
