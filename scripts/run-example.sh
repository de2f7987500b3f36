#!/usr/bin/env bash
# The main job on the bundled example: set up, build, report op support, print
# the tc IR of examples/digits_mlp.onnx, then compile it for the CPU target and
# predict on the digits data that scikit-learn ships.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
echo "== trainc check examples/digits_mlp.onnx"
build/bin/trainc check examples/digits_mlp.onnx
echo
echo "== trainc import examples/digits_mlp.onnx --batch-size=32"
build/bin/trainc import examples/digits_mlp.onnx --batch-size=32
echo
echo "== trainc compile examples/digits_mlp.onnx --target=cpu --batch-size=32 --report-memory -o build/example/digits"
mkdir -p build/example/data
build/bin/trainc compile examples/digits_mlp.onnx --target=cpu --batch-size=32 --report-memory \
  -o build/example/digits
/usr/bin/python3 - <<'PY'
import numpy as np
from sklearn.datasets import load_digits
x = load_digits().data.astype(np.float32) / 16.0
np.save("build/example/data/x.npy", x)
print("wrote build/example/data/x.npy:", x.shape)
PY
echo
echo "== build/example/digits --predict --data build/example/data --out build/example/out"
build/example/digits --predict --data build/example/data --out build/example/out
/usr/bin/python3 -c "
import numpy as np
y = np.load('build/example/out/logits.npy')
print('logits', y.shape, '(untrained model: training arrives with the trainer)')"
