#!/usr/bin/env bash
# On the GPU machine: runs every prepared CUDA program's --predict and
# compares it with the CPU target and PyTorch, then every prepared CUDA
# trainer and compares its losses and weights with PyTorch's, then every
# bf16 and fp16 training step with autocast's and float64's gradients, and
# fp16's loss scaling (a skipped step changes nothing), and the
# data-parallel trainers under `mpirun -np 1` (NCCL), and the LAMB and LARS
# trainers against float64.
#   run.sh DIR            (DIR made by test/gpu/prepare.sh)
# The CUDA libraries come from the NVIDIA wheels of the Python that has torch.
set -uo pipefail
dir="${1:?usage: run.sh DIR}"
py="$(command -v python3)"
libs="$("$py" - <<'PY'
import glob, os, site
paths = []
for base in site.getsitepackages():
    paths += glob.glob(os.path.join(base, "nvidia", "*", "lib"))
print(":".join(paths))
PY
)"
export LD_LIBRARY_PATH="${libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}:$dir/mpi-libs"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
# Each program runs under a time limit (GPU_CASE_TIMEOUT seconds, 180 by
# default), so that one that hangs is reported and the rest still run.
limit() { timeout -k 5 "${GPU_CASE_TIMEOUT:-180}" "$@"; }
# Which CUDA libraries the programs load, from where (a missing one is the
# first thing to know when nothing runs).
for prog in "$dir"/*/prog_cuda; do
  [ -x "$prog" ] || continue
  { ldd "$prog" || true; } | awk '/cu|nccl|not found/ {print "ldd:", $1, $3}'
  break
done
status=0
for model in "$dir"/*/; do
  name="$(basename "$model")"
  [ -x "$model/prog_cuda" ] || continue
  if ! limit "$model/prog_cuda" --predict --data "$model/data" --out "$model/cuda" 2> "$model/cuda.log"; then
    echo "FAIL: gpu :: $name: $(tail -c 400 "$model/cuda.log")"
    status=1
    continue
  fi
  "$py" "$dir/compare.py" "$model" "$name" || status=1
done
# Training: each prepared CUDA trainer against PyTorch's losses and weights.
for part in train precision optimizers recipes; do
  if [ -f "$dir/$part.tar.xz" ] && [ ! -d "$dir/$part" ]; then
    "$py" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
      "$dir/$part.tar.xz" "$dir"
  fi
done
for case in "$dir"/train/*/; do
  [ -x "$case/prog" ] || continue
  name="$(basename "$case")"
  mapfile -t flags < <("$py" -c 'import json, sys; print("\n".join(json.load(open(sys.argv[1]))["flags"]))' "$case/case.json")
  rm -rf "$case/saved" "$case/log.jsonl"
  if ! limit "$case/prog" --data "$case/data" --log "$case/log.jsonl" --save-params "$case/saved" \
      "${flags[@]}" 2> "$case/train.log"; then
    echo "FAIL: gpu train :: $name: $(tail -c 400 "$case/train.log")"
    status=1
    continue
  fi
  "$py" "$dir/compare_train.py" "$case" "$name" || status=1
done
# Data parallelism on the GPU: the data-parallel trainers (run above as one
# process) as the one rank of `mpirun -np 1`, each bucket summed by NCCL on
# the trainer's second stream, overlapped (the default) and in the step's
# order; both against PyTorch. Skipped where the machine has no mpirun.
for case in "$dir"/train/*_dp/; do
  [ -x "$case/prog" ] || continue
  name="$(basename "$case")"
  if ! command -v mpirun > /dev/null; then
    echo "SKIP: gpu nccl :: $name: no mpirun on this machine"
    continue
  fi
  mapfile -t flags < <("$py" -c 'import json, sys; print("\n".join(json.load(open(sys.argv[1]))["flags"]))' "$case/case.json")
  for overlap in on off; do
    rm -rf "$case/saved" "$case/log.jsonl"
    if ! limit env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -np 1 \
        -x LD_LIBRARY_PATH "$case/prog" --data "$case/data" --log "$case/log.jsonl" \
        --save-params "$case/saved" --comm-overlap "$overlap" "${flags[@]}" \
        2> "$case/nccl-$overlap.log"; then
      echo "FAIL: gpu nccl :: $name (--comm-overlap $overlap): $(tail -c 400 "$case/nccl-$overlap.log")"
      status=1
      continue
    fi
    grep "data parallelism" "$case/nccl-$overlap.log" | tail -1
    "$py" "$dir/compare_train.py" "$case" "$name (mpirun -np 1, NCCL, --comm-overlap $overlap)" ||
      status=1
  done
done
# cuDNN's searched algorithms are kept next to the program (--cudnn-cache):
# the LeNet trainers' first runs above wrote them; a second run reads them
# instead of searching and trains to the same weights.
for case in "$dir"/train/zoo_lenet_sgd*/; do
  [ -x "$case/prog" ] || continue
  name="$(basename "$case")"
  if [ ! -s "$case/prog.cudnn-cache" ] || ! grep -q '^fwd ' "$case/prog.cudnn-cache"; then
    echo "FAIL: gpu cudnn-cache :: $name: no choices kept in $case/prog.cudnn-cache"
    status=1
    continue
  fi
  mapfile -t flags < <("$py" -c 'import json, sys; print("\n".join(json.load(open(sys.argv[1]))["flags"]))' "$case/case.json")
  rm -rf "$case/saved" "$case/log.jsonl"
  if ! limit "$case/prog" --data "$case/data" --log "$case/log.jsonl" --save-params "$case/saved" \
      "${flags[@]}" 2> "$case/train2.log" || grep -q cudnn-cache "$case/train2.log"; then
    echo "FAIL: gpu cudnn-cache :: $name (second run): $(tail -c 400 "$case/train2.log")"
    status=1
    continue
  fi
  echo "PASS: gpu cudnn-cache :: $name: $(grep -c . "$case/prog.cudnn-cache") lines kept and read back"
  "$py" "$dir/compare_train.py" "$case" "$name (kept algorithms)" || status=1
done
# Mixed precision: each bf16/fp16 training step against autocast and float64.
for case in "$dir"/precision/*/; do
  [ -x "$case/prog" ] || continue
  name="$(basename "$case")"
  rm -rf "$case/out"
  if ! limit "$case/prog" --run --data "$case/data" --out "$case/out" 2> "$case/run.log"; then
    echo "FAIL: gpu bf16 :: $name: $(tail -c 400 "$case/run.log")"
    status=1
    continue
  fi
  "$py" "$dir/compare_precision.py" "$case" "$name" || status=1
done
# fp16 loss scaling: 2 steps, then 3 whose last overflows (skipped).
for case in "$dir"/precision/scaler/*/; do
  [ -x "$case/prog" ] || continue
  name="$(basename "$case")"
  mapfile -t flags < "$case/flags.txt"
  ok=1
  for run in two:2 three:3; do
    sub="${run%%:*}"
    rm -rf "$case/$sub"
    mkdir -p "$case/$sub"
    if ! limit "$case/prog" --data "$case/data" --no-shuffle --steps "${run##*:}" \
        --checkpoint-dir "$case/$sub/ckpt" --log "$case/$sub/log" "${flags[@]}" \
        2> "$case/$sub/train.log"; then
      echo "FAIL: gpu fp16 scaler :: $name ($sub): $(tail -c 400 "$case/$sub/train.log")"
      status=1
      ok=0
    fi
  done
  [ "$ok" = 1 ] && { "$py" "$dir/compare_scaler.py" "$case" "$name" || status=1; }
done
# LAMB and LARS: each CUDA trainer's 10 steps against float64.
for case in "$dir"/optimizers/*/; do
  [ -x "$case/prog" ] || continue
  name="$(basename "$case")"
  mapfile -t flags < <("$py" -c 'import json, sys; print("\n".join(json.load(open(sys.argv[1]))["flags"]))' "$case/case.json")
  rm -rf "$case/saved"
  if ! limit "$case/prog" --data "$case/data" --save-params "$case/saved" "${flags[@]}" \
      2> "$case/train.log"; then
    echo "FAIL: gpu optimizer :: $name: $(tail -c 400 "$case/train.log")"
    status=1
    continue
  fi
  "$py" "$dir/compare_optimizers.py" "$case" "$name" || status=1
done
# Training recipes (1cycle with Adam's beta1 cycled, the gradient norm, EMA):
# each CUDA trainer against the CPU trainer's log and weights.
for case in "$dir"/recipes/*/; do
  [ -x "$case/prog" ] || continue
  name="$(basename "$case")"
  mapfile -t flags < <("$py" -c 'import json, sys; print("\n".join(json.load(open(sys.argv[1]))["flags"]))' "$case/case.json")
  rm -rf "$case/saved" "$case/log.jsonl"
  # A pipeline-parallel trainer: one rank per stage, one GPU per rank.
  ranks="$("$py" -c 'import json, sys; print(json.load(open(sys.argv[1])).get("ranks", 1))' "$case/case.json")"
  launch=()
  if [ "$ranks" -gt 1 ]; then
    gpus="$(nvidia-smi -L 2> /dev/null | wc -l)"
    if ! command -v mpirun > /dev/null || [ "$gpus" -lt "$ranks" ]; then
      echo "SKIP: gpu recipe :: $name: needs mpirun and $ranks GPUs (NCCL takes one per rank; $gpus here)"
      continue
    fi
    launch=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -np "$ranks"
            -x LD_LIBRARY_PATH)
  fi
  if ! limit "${launch[@]}" "$case/prog" --data "$case/data" --log "$case/log.jsonl" \
      --save-params "$case/saved" "${flags[@]}" 2> "$case/train.log"; then
    echo "FAIL: gpu recipe :: $name: $(tail -c 400 "$case/train.log")"
    status=1
    continue
  fi
  "$py" "$dir/compare_recipes.py" "$case" "$name" || status=1
done
exit $status
