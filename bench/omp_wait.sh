#!/usr/bin/env bash
# How a trainc CPU trainer's threads wait, under three loads: an idle
# machine, one other busy process, and two copies of the trainer at once.
# Usage: bench/omp_wait.sh [REPEATS]   (after scripts/build.sh)
# Policies: "short" GOMP_SPINCOUNT=1000, "long" GOMP_SPINCOUNT=300000
# (libgomp's own default), and "trainc" (neither set: the trainer picks long
# when no other task is runnable as it starts, short otherwise;
# runtime/common/ProcessWaits.h). Prints the median wall time of each
# policy and load, the zoo MLP (3000 steps) and LeNet (300 steps) at batch
# 64 on 2 threads.
set -euo pipefail
cd "$(dirname "$0")/.."
repeats=${1:-5}
work=$(mktemp -d /tmp/trainc-omp-wait.XXXXXX)
trap 'rm -rf "$work"; [ -n "${busy:-}" ] && kill "$busy" 2>/dev/null || true' EXIT
[ -f build/zoo/lenet_op17.onnx ] || /usr/bin/python3 test/zoo/make_zoo.py build/zoo > /dev/null
for model in mlp lenet; do
  build/bin/trainc compile "build/zoo/${model}_op17.onnx" --target=cpu --batch-size=64 \
    --loss=cross-entropy --optimizer=sgd -o "$work/$model" > /dev/null
done
/usr/bin/python3 - "$work" <<'PY'
import os, sys
import numpy as np
rng = np.random.default_rng(0)
for name, shape in (("mlp", (6400, 784)), ("lenet", (3200, 1, 28, 28))):
    os.makedirs(os.path.join(sys.argv[1], name + "-data"))
    np.save(os.path.join(sys.argv[1], name + "-data", "x.npy"), rng.standard_normal(shape).astype(np.float32))
    np.save(os.path.join(sys.argv[1], name + "-data", "label.npy"), rng.integers(0, 10, shape[0]))
PY
train() { # PROG STEPS ENV...
  local prog=$1 steps=$2; shift 2
  env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT "$@" "$work/$prog" --data "$work/$prog-data" \
    --steps "$steps" --lr 0.01 --no-shuffle --threads 2 > /dev/null 2>&1
}
run() { # LOAD PROG STEPS ENV... -> seconds
  local load=$1 start end; shift
  start=$(date +%s.%N)
  if [ "$load" = pair ]; then train "$@" & train "$@"; wait; else train "$@"; fi
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}
median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for load in idle busy pair; do
  if [ "$load" = busy ]; then sh -c 'while :; do :; done' & busy=$!; fi
  for model in "mlp 3000" "lenet 300"; do
    set -- $model
    for policy in "short GOMP_SPINCOUNT=1000" "long GOMP_SPINCOUNT=300000" "trainc X="; do
      name=${policy%% *}; var=${policy#* }
      times=""
      for _ in $(seq "$repeats"); do times="$times $(run "$load" "$1" "$2" $var)"; done
      printf '%-5s %-6s %-7s median %6.3f s  (%s )\n' "$load" "$1" "$name" "$(echo $times | median)" "$times"
    done
  done
  if [ "$load" = busy ]; then kill "$busy"; busy=; fi
done
