#!/usr/bin/env bash
# Fuzzes the ONNX importer with libFuzzer for a fixed time.
#   scripts/fuzz.sh [SECONDS]        (default 600)
# Builds build-fuzz/ with clang, AddressSanitizer and coverage instrumentation,
# seeds the corpus from the model zoo (models under 1 MB) and the lit text
# models, and writes crashing inputs to build-fuzz/crashes/. A crash found is a
# bug: fix it and copy the input to test/fuzz/regressions/ (replayed by lit).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TO_RUN="${1:-600}"
bash scripts/install-deps.sh
if [ ! -f build-fuzz/build.ninja ]; then
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DLLVM_USE_LINKER=lld -DTRAINC_ENABLE_FUZZER=ON \
    -DMLIR_DIR=/usr/lib/llvm-19/lib/cmake/mlir
fi
cmake --build build-fuzz -j "${JOBS:-2}" --target trainc-import-fuzzer

corpus=build-fuzz/corpus
mkdir -p "$corpus" build-fuzz/crashes
if [ ! -f build/zoo/zoo.json ]; then
  /usr/bin/python3 test/zoo/make_zoo.py build/zoo
fi
# The first byte selects the format: 0 binary, 1 text.
for f in build/zoo/*.onnx examples/*.onnx; do
  [ "$(stat -c %s "$f")" -lt 1000000 ] || continue
  { printf '\x00'; cat "$f"; } > "$corpus/bin-$(basename "$f")"
done
for f in $(find test/lit -name '*.onnxtxt') $(find test/lit -path '*Inputs*' -name '*.onnxtxt'); do
  { printf '\x01'; cat "$f"; } > "$corpus/txt-$(basename "$f")"
done
for f in test/fuzz/regressions/*; do
  [ -f "$f" ] && cp "$f" "$corpus/"
done

ASAN_OPTIONS=detect_leaks=0 build-fuzz/bin/trainc-import-fuzzer "$corpus" \
  -max_total_time="$SECONDS_TO_RUN" -max_len=1048576 -rss_limit_mb=4096 \
  -timeout=20 -artifact_prefix=build-fuzz/crashes/ -print_final_stats=1
