#!/usr/bin/env bash
# Runs the trainer tests (test/lit/train) with AddressSanitizer: the CPU
# runtime is built with -fsanitize=address into build-asan/, and every CPU
# program those tests compile is built with it and linked against that
# runtime (TRAINC_ASAN_RUNTIME_DIR). A report fails the test that made it.
# Not part of scripts/test.sh (it takes about as long as the whole train suite).
#   scripts/asan.sh [LIT FILTER REGEX]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
if [ ! -f build-asan/build.ninja ]; then
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Release -DLLVM_USE_LINKER=lld \
    -DMLIR_DIR=/usr/lib/llvm-19/lib/cmake/mlir \
    -DCMAKE_CXX_FLAGS="-fsanitize=address -fno-omit-frame-pointer"
fi
cmake --build build-asan -j "${JOBS:-2}" --target trainc_rt_cpu trainc_rt_mpi
# OpenMP's and oneDNN's own allocations are not ours to check for leaks.
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:${ASAN_OPTIONS:-}"
export TRAINC_ASAN_RUNTIME_DIR="$PWD/build-asan/lib"
/usr/bin/python3 /usr/lib/llvm-19/build/utils/lit/lit.py -sv build/test/lit/train \
  ${1:+--filter "$1"}
