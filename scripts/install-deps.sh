#!/usr/bin/env bash
# Installs every Debian package trainc needs to build and test. Idempotent, non-interactive.
set -euo pipefail

PACKAGES=(
  # Build
  cmake ninja-build g++ lld libgtest-dev
  # LLVM / MLIR 19: dialect, passes, textual IR, lit + FileCheck
  llvm-19-dev llvm-19-tools libmlir-19-dev mlir-19-tools
  # ONNX model files
  libonnx-dev libprotobuf-dev protobuf-compiler
  # CPU target (oneDNN: the convolutions)
  libopenblas-dev libomp-dev libdnnl-dev
  # Multi-process (CPU collectives, launcher)
  openmpi-bin libopenmpi-dev
  # Trainer flags, manifests and logs, checkpoint checksums
  libcli11-dev nlohmann-json3-dev zlib1g-dev
  # Fuzzing the importer
  clang libclang-rt-14-dev
  # References in tests
  python3-torch python3-torchvision python3-onnx python3-numpy python3-sklearn python3-venv
  # Plots (the LR range test, trainc plot)
  python3-matplotlib
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
