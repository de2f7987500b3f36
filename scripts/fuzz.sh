#!/usr/bin/env bash
# Fuzzes trainc's input readers with libFuzzer for a fixed time per target.
#   scripts/fuzz.sh [SECONDS] [TARGET]     (default 600 s, every target)
# TARGET: import (the ONNX importer), npy (the runtime's .npy reader:
# NpyArray::open and its row reads), checkpoint (the --resume loader,
# readCheckpoint), or all.
#
# The importer target needs build-fuzz/, a clang build of trainc with
# AddressSanitizer and coverage instrumentation (about 6 minutes on 2 cores
# from scratch, seconds when up to date). The runtime targets are compiled
# straight from the runtime sources with clang++ -fsanitize=fuzzer,address
# into build-fuzz/bin/ (about a minute). Seed corpora: zoo models under 1 MB
# and the lit text models (import), small .npy files of every dtype
# (test/fuzz/make_npy_seeds.py), a checkpoint of a digits run (needs build/),
# plus test/fuzz/regressions/. Crashing inputs go to build-fuzz/crashes/TARGET/.
# A crash found is a bug: fix it and copy the input to test/fuzz/regressions/
# (import: top level; npy/, checkpoint/), which lit replays
# (test/lit/errors/fuzz-regressions.test).
#
# Prints "PASS: fuzz :: TARGET ..." or "FAIL: ..." per target and a closing
# "N passed, N failed"; exits 1 if any target found a crash or did not build.
set -uo pipefail
cd "$(dirname "$0")/.."
SECONDS_TO_RUN="${1:-600}"
TARGET="${2:-all}"
case "$TARGET" in
  all) targets="import npy checkpoint" ;;
  import|npy|checkpoint) targets="$TARGET" ;;
  *) echo "usage: scripts/fuzz.sh [SECONDS] [import|npy|checkpoint|all]" >&2; exit 2 ;;
esac
command -v clang++ > /dev/null || bash scripts/install-deps.sh
mkdir -p build-fuzz/bin
passed=0
failed=0
report() { # report OK TARGET TEXT
  if [ "$1" = 0 ]; then echo "PASS: fuzz :: $2 $3"; passed=$((passed + 1));
  else echo "FAIL: fuzz :: $2 $3"; failed=$((failed + 1)); fi
}

# Whether build-fuzz/bin/trainc-TARGET-fuzzer is newer than every runtime
# source and the target's own source.
up_to_date() {
  local bin=build-fuzz/bin/trainc-$1-fuzzer
  [ -f "$bin" ] && [ -z "$(find runtime/common runtime/include test/fuzz -newer "$bin" \
    \( -name '*.cpp' -o -name '*.h' \) -print -quit)" ]
}

# Builds build-fuzz/bin/trainc-TARGET-fuzzer; prints why on failure.
build_target() {
  local target=$1 log=build-fuzz/build-$1.log
  local rt=runtime/common flags="-std=c++17 -g -O1 -fsanitize=fuzzer,address -I. -Iruntime/include"
  [ "$target" != import ] && up_to_date "$target" && return 0
  case "$target" in
    import)
      if [ ! -f build-fuzz/build.ninja ]; then
        CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja \
          -DCMAKE_BUILD_TYPE=Release -DLLVM_USE_LINKER=lld -DTRAINC_ENABLE_FUZZER=ON \
          -DMLIR_DIR=/usr/lib/llvm-19/lib/cmake/mlir > "$log" 2>&1 || return 1
      fi
      cmake --build build-fuzz -j "${JOBS:-2}" --target trainc-import-fuzzer >> "$log" 2>&1 ;;
    npy)
      clang++ $flags test/fuzz/NpyFuzzer.cpp $rt/Npy.cpp $rt/FileIO.cpp $rt/DType.cpp \
        -o build-fuzz/bin/trainc-npy-fuzzer > "$log" 2>&1 ;;
    checkpoint)
      clang++ $flags test/fuzz/CheckpointFuzzer.cpp $rt/Checkpoint.cpp $rt/FileIO.cpp \
        $rt/DType.cpp -lz -o build-fuzz/bin/trainc-checkpoint-fuzzer > "$log" 2>&1 ;;
  esac
}

# Fills build-fuzz/corpus/TARGET with the seeds.
seed_target() {
  local target=$1 corpus=build-fuzz/corpus/$1
  mkdir -p "$corpus"
  case "$target" in
    import)
      if [ ! -f build/zoo/zoo.json ]; then
        /usr/bin/python3 test/zoo/make_zoo.py build/zoo > /dev/null || return 1
      fi
      # The first byte selects the format: 0 binary, 1 text.
      for f in build/zoo/*.onnx examples/*.onnx; do
        [ "$(stat -c %s "$f")" -lt 1000000 ] || continue
        { printf '\x00'; cat "$f"; } > "$corpus/bin-$(basename "$f")"
      done
      for f in $(find test/lit -name '*.onnxtxt'); do
        { printf '\x01'; cat "$f"; } > "$corpus/txt-$(basename "$f")"
      done
      find test/fuzz/regressions -maxdepth 1 -type f -exec cp {} "$corpus/" \; ;;
    npy)
      /usr/bin/python3 test/fuzz/make_npy_seeds.py "$corpus" > /dev/null || return 1
      cp test/fuzz/regressions/npy/* "$corpus/" 2> /dev/null || true ;;
    checkpoint)
      # A checkpoint of the digits MLP trained with SGD and momentum for 10
      # steps: the run CheckpointFuzzer.cpp expects.
      if [ ! -f "$corpus/digits-sgd.safetensors" ]; then
        local work=build-fuzz/checkpoint-seed
        rm -rf "$work" && mkdir -p "$work"
        /usr/bin/python3 examples/prepare_digits.py "$work/digits" > /dev/null &&
          build/bin/trainc compile examples/digits_mlp.onnx --target=cpu --batch-size=32 \
            --loss=cross-entropy --optimizer=sgd -o "$work/trainer" > /dev/null 2>&1 &&
          "$work/trainer" --data "$work/digits/train" --steps 10 --momentum 0.9 \
            --checkpoint-dir "$work/ck" --checkpoint-every 5 > /dev/null 2>&1 &&
          cp "$work/ck/checkpoint.safetensors" "$corpus/digits-sgd.safetensors" || return 1
      fi
      cp test/fuzz/regressions/checkpoint/* "$corpus/" 2> /dev/null || true ;;
  esac
}

for target in $targets; do
  start=$(date +%s)
  if ! build_target "$target"; then
    report 1 "$target" "does not build (build-fuzz/build-$target.log): $(tail -c 300 build-fuzz/build-$target.log)"
    continue
  fi
  built=$(($(date +%s) - start))
  if ! seed_target "$target"; then
    report 1 "$target" "could not make its seed corpus"
    continue
  fi
  crashes=build-fuzz/crashes/$target
  mkdir -p "$crashes"
  fuzzer=build-fuzz/bin/trainc-$target-fuzzer
  case "$target" in
    import) max_len=1048576 ;;
    npy) max_len=65536 ;;
    checkpoint) max_len=131072 ;;
  esac
  log=build-fuzz/fuzz-$target.log
  # allow_user_poisoning=0: LLVM's headers poison the unused tail of their
  # allocators' slabs in an AddressSanitizer build (LLVM_ADDRESS_SANITIZER_BUILD),
  # and the importer target's instrumented objects instantiate those templates
  # while the prebuilt MLIR libraries are not instrumented: the linker may
  # give MLIR our poisoning instance, and MLIR's own context set-up then reads
  # as a use-after-poison. ASan's redzones, freed-memory and bounds checks
  # are unaffected.
  ASAN_OPTIONS=detect_leaks=0:allow_user_poisoning=0 "$fuzzer" "build-fuzz/corpus/$target" \
    -max_total_time="$SECONDS_TO_RUN" -max_len=$max_len -rss_limit_mb=4096 \
    -timeout=20 -artifact_prefix="$crashes/" -print_final_stats=1 > "$log" 2>&1
  status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  if [ "$status" = 0 ]; then
    report 0 "$target" "(${runs:-?} inputs in ${SECONDS_TO_RUN} s, no crash; built in ${built} s)"
  else
    report 1 "$target" "found a crash (exit $status, inputs in $crashes/, log $log): $(grep -m1 -E 'ERROR|deadly|timeout' "$log")"
  fi
done
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
