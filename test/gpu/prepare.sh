#!/usr/bin/env bash
# Prepares the GPU check on a machine with trainc (no GPU needed):
#   test/gpu/prepare.sh OUTDIR
# For every zoo model at opset 17: the CUDA program, the CPU target's
# --predict output and PyTorch's reference, on the same input; and the
# training comparisons of test/train/check_training.py --gpu-prepare and the
# bf16/fp16 steps and fp16 loss-scaling trainers of
# test/train/check_precision.py --gpu-prepare (the data-parallel trainers
# among them, with Open MPI's libraries), and the LAMB and LARS trainers of
# test/train/check_optimizers.py --gpu-prepare, and the recipe trainers of
# test/train/check_recipes.py and test/train/check_sample_weights.py
# --gpu-prepare. OUTDIR
# then travels to the GPU machine, where test/gpu/run.sh OUTDIR compares.
# ResNet-18's prediction program holds its 47 MB of weights: it goes to
# OUTDIR.resnet18 (with its own run.sh), so that each folder stays under the
# 64 MiB one device call carries; run.sh OUTDIR.resnet18 checks it there.
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:?usage: prepare.sh OUTDIR}"
mkdir -p "$out" "$out.resnet18"
[ -f build/zoo/zoo.json ] || /usr/bin/python3 test/zoo/make_zoo.py build/zoo
for model in mlp lenet resnet18 gpt lstm unet; do
  dir="$out/$model"
  [ "$model" = resnet18 ] && dir="$out.resnet18/$model"
  mkdir -p "$dir/data" "$dir/ref"
  for f in build/zoo/${model}_input_*.npy; do
    cp "$f" "$dir/data/$(basename "$f" | sed "s/^${model}_input_//")"
  done
  for f in build/zoo/${model}_ref_*.npy; do
    cp "$f" "$dir/ref/$(basename "$f" | sed "s/^${model}_ref_//")"
  done
  build/bin/trainc compile "build/zoo/${model}_op17.onnx" --batch-size=2 --target=cuda \
    --cuda-arch=sm_90 -o "$dir/prog_cuda"
  build/bin/trainc compile "build/zoo/${model}_op17.onnx" --batch-size=2 --target=cpu \
    -o "$dir/prog_cpu"
  "$dir/prog_cpu" --predict --data "$dir/data" --out "$dir/cpu"
  rm -rf "$dir/prog_cpu" "$dir/prog_cpu.build" "$dir/prog_cuda.build"
done
# The CPU comparisons below also write the CUDA programs and references: one
# that fails is reported (its log stays in OUTDIR, and the last line of this
# script names it) but does not stop the preparation of the GPU check.
failed=()
cpu_checks() {
  local name="$1"
  shift
  if "$@" >"$out/$name.log" 2>&1; then
    tail -n 1 "$out/$name.log"
  else
    tail -n 1 "$out/$name.log"
    grep '^FAIL' "$out/$name.log" | head -n 5 || true
    failed+=("$name (see $out/$name.log)")
  fi
}
# The training comparisons: CUDA trainers with PyTorch's expected results.
cpu_checks check_training /usr/bin/python3 test/train/check_training.py build/bin/trainc \
  "$out/train-work" --gpu-prepare "$out/train"
rm -rf "$out/train-work"
# Mixed precision: the zoo's bf16 and fp16 training steps (CUDA
# --entry=train_step) with autocast's and float64's losses and gradients, and
# the fp16 trainers of the loss-scaling check with their overflowing data.
cpu_checks check_precision /usr/bin/python3 test/train/check_precision.py build/bin/trainc \
  "$out/precision-work" --only mlp,lenet,gpt,resnet18,scaler --gpu-prepare "$out/precision"
rm -rf "$out/precision-work"
# LAMB and LARS: CUDA trainers of the zoo's MLP and GPT with their float64
# references.
cpu_checks check_optimizers /usr/bin/python3 test/train/check_optimizers.py build/bin/trainc \
  "$out/optimizers-work" --only lamb,lars --gpu-prepare "$out/optimizers"
rm -rf "$out/optimizers-work"
# Training recipes: CUDA trainers of 1cycle with Adam, of the gradient
# norm and of EMA weights with the CPU trainer's logs and weights.
cpu_checks check_recipes /usr/bin/python3 test/train/check_recipes.py build/bin/trainc \
  "$out/recipes-work" --only schedules,gradnorm,averaging --gpu-prepare "$out/recipes"
rm -rf "$out/recipes-work"
# Sample weights and selective backprop (--select=topk): CUDA trainers with
# the CPU trainer's log and weights, run as the recipes are.
cpu_checks check_sample_weights /usr/bin/python3 test/train/check_sample_weights.py \
  build/bin/trainc "$out/samples-work" --gpu-prepare "$out/recipes"
rm -rf "$out/samples-work"
# Pipeline parallelism: the MLP's CUDA trainer in 2 stages with the CPU
# stages' log and weights (run.sh runs it under mpirun -np 2 where the
# machine has 2 GPUs: NCCL takes one GPU per rank).
cpu_checks check_pipeline /usr/bin/python3 test/train/check_pipeline.py build/bin/trainc \
  "$out/pipeline-work" --gpu-prepare "$out/recipes"
rm -rf "$out/pipeline-work"
# Open MPI's libraries, which data-parallel trainers load (the GPU machine's
# image has NCCL in its wheels, not Open MPI); run.sh puts them last on the
# library path.
mkdir -p "$out/mpi-libs"
if [ -x "$out/train/zoo_mlp_sgd_dp/prog" ]; then
  { ldd "$out/train/zoo_mlp_sgd_dp/prog" || true; } |
    awk '/libmpi|libopen-|libhwloc|libevent/ && $3 ~ /^\// {print $3}' |
    while read -r lib; do cp -L "$lib" "$out/mpi-libs/"; done
fi
# Packed with xz (the trainers shrink to a third), so that OUTDIR stays under
# the 64 MiB a device run may carry; run.sh unpacks them.
for part in train precision optimizers recipes; do
  [ -d "$out/$part" ] || { failed+=("$part (nothing prepared)"); continue; }
  /usr/bin/python3 -c 'import sys, tarfile; t = tarfile.open(sys.argv[1], "w:xz"); t.add(sys.argv[2], sys.argv[3]); t.close()' \
    "$out/$part.tar.xz" "$out/$part" "$part"
  rm -rf "$out/$part"
done
# The layout and graph benchmark (not part of run.sh: run it on its own,
# python3 OUTDIR/gpu_layout.py run OUTDIR): bf16 ResNet-18 and ResNet-50
# trainers at batch 32 and 256, NCHW and NHWC, zero weights (they pack small).
/usr/bin/python3 bench/gpu_layout.py prepare "$out" | tail -1
cp test/gpu/run.sh test/gpu/compare.py test/gpu/compare_train.py test/gpu/compare_precision.py \
  test/gpu/compare_scaler.py test/gpu/compare_optimizers.py test/gpu/compare_recipes.py \
  test/pylib/loss_scaling.py \
  test/pylib/float64_compare.py "$out/"
cp test/gpu/run.sh test/gpu/compare.py "$out.resnet18/"
du -sh "$out" "$out.resnet18"
if [ ${#failed[@]} -gt 0 ]; then
  echo "prepare: the GPU check is prepared, but CPU comparisons failed on this machine: ${failed[*]}"
fi
