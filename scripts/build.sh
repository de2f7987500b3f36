#!/usr/bin/env bash
# Configures and builds trainc into build/ (tools in build/bin/).
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS="${JOBS:-2}"
if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DLLVM_USE_LINKER=lld \
    -DMLIR_DIR=/usr/lib/llvm-19/lib/cmake/mlir
fi
cmake --build build -j "$JOBS"
