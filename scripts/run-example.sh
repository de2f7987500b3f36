#!/usr/bin/env bash
# The main job on the bundled example: set up, build, report op support, print
# the tc IR of examples/digits_mlp.onnx, then compile a CPU trainer, train it on
# the digits data that scikit-learn ships (prints the held-out accuracy) and
# predict with the trained parameters.
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
echo "== trainc compile examples/digits_mlp.onnx --target=cpu --batch-size=32 --loss=cross-entropy --optimizer=sgd --report-memory -o build/example/trainer"
mkdir -p build/example
build/bin/trainc compile examples/digits_mlp.onnx --target=cpu --batch-size=32 \
  --loss=cross-entropy --optimizer=sgd --report-memory -o build/example/trainer
/usr/bin/python3 examples/prepare_digits.py build/example/digits-data
echo
echo "== build/example/trainer --data build/example/digits-data/train --eval-data build/example/digits-data/val --epochs 30 --lr 0.1 --momentum 0.9 --weight-decay 0.0005"
build/example/trainer --data build/example/digits-data/train --eval-data build/example/digits-data/val \
  --epochs 30 --lr 0.1 --momentum 0.9 --weight-decay 0.0005 --save-params build/example/trained \
  --export build/example/trained.onnx
echo
echo "== build/example/trainer --predict --params build/example/trained --data build/example/digits-data/val --out build/example/predictions"
build/example/trainer --predict --params build/example/trained --data build/example/digits-data/val --out build/example/predictions
