#!/usr/bin/env bash
# libgomp's wait policies for a trainc CPU trainer, on an idle machine and
# with one busy process competing for the cores (a shared machine).
# Usage: bench/omp_wait.sh [REPEATS]   (after scripts/build.sh)
# Prints the median wall time of each policy; "libgomp default" is
# GOMP_SPINCOUNT=300000, what libgomp uses when neither variable is set
# (the trainer itself would otherwise pick its own short spin).
set -euo pipefail
cd "$(dirname "$0")/.."
repeats=${1:-5}
work=$(mktemp -d /tmp/trainc-omp-wait.XXXXXX)
trap 'rm -rf "$work"; [ -n "${busy:-}" ] && kill "$busy" 2>/dev/null || true' EXIT
[ -f build/zoo/lenet_op17.onnx ] || /usr/bin/python3 test/zoo/make_zoo.py build/zoo > /dev/null
build/bin/trainc compile build/zoo/lenet_op17.onnx --target=cpu --batch-size=32 \
  --loss=cross-entropy --optimizer=sgd -o "$work/lenet" > /dev/null
build/bin/trainc compile examples/digits_mlp.onnx --target=cpu --batch-size=32 \
  --loss=cross-entropy --optimizer=sgd -o "$work/digits" > /dev/null
/usr/bin/python3 - "$work" <<'PY'
import os, sys
import numpy as np
rng = np.random.default_rng(0)
for name, shape in (("lenet", (1024, 1, 28, 28)), ("digits", (1440, 64))):
    os.makedirs(os.path.join(sys.argv[1], name + "-data"))
    np.save(os.path.join(sys.argv[1], name + "-data", "x.npy"), rng.standard_normal(shape).astype(np.float32))
    np.save(os.path.join(sys.argv[1], name + "-data", "label.npy"), rng.integers(0, 10, shape[0]))
PY
run() { # PROG EPOCHS ENV... -> seconds
  local prog=$1 epochs=$2; shift 2
  local start end
  start=$(date +%s.%N)
  env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT "$@" "$work/$prog" --data "$work/$prog-data" \
    --epochs "$epochs" --lr 0.01 --threads 2 > /dev/null 2>&1
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}
median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for load in idle busy; do
  if [ "$load" = busy ]; then sh -c 'while :; do :; done' & busy=$!; fi
  for model in "lenet 2" "digits 40"; do
    set -- $model
    for policy in "libgomp-default GOMP_SPINCOUNT=300000" "passive OMP_WAIT_POLICY=passive" \
                  "trainc-default X=" "spin-10000 GOMP_SPINCOUNT=10000"; do
      name=${policy%% *}; var=${policy#* }
      times=""
      for _ in $(seq "$repeats"); do times="$times $(run "$1" "$2" $var)"; done
      printf '%-5s %-7s %-16s median %6.3f s  (%s )\n' "$load" "$1" "$name" "$(echo $times | median)" "$times"
    done
  done
  if [ "$load" = busy ]; then kill "$busy"; busy=; fi
done
