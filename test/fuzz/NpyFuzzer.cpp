//===- NpyFuzzer.cpp - libFuzzer target for the .npy reader ---------------===//
//
// The input is a .npy file: written to a private temporary file, opened with
// NpyArray::open (header, dtype, shape and size checks) and, when that
// accepts it, read back row by row, a block of rows, the whole array, and
// out-of-range requests that must be refused. Any crash, sanitizer report or
// hang is a bug: a bad file must end in a Status naming it.
//
// Built by test/fuzz/build_runtime_fuzzers.sh with clang++
// -fsanitize=fuzzer,address straight from the runtime sources.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"
#include "runtime/common/Npy.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

/// A file of this process's own for the input (the reader takes a path).
const std::string &scratchPath() {
  static const std::string path = trainc::fuzz::scratchName("npy", ".npy");
  return path;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string &path = scratchPath();
  if (!trainc::fuzz::writeInput(path, data, size))
    return 0;
  using trainc::rt::NpyArray;
  NpyArray array;
  // A limit the size of the input: large-shape headers are refused by size.
  if (!NpyArray::open(path, array, /*maxFileBytes=*/1 << 20).ok())
    return 0;
  const uint64_t rowBytes = array.rowBytes();
  const int64_t rows = array.numRows();
  if (rowBytes > (1u << 20) || array.dataBytes() > (1u << 20))
    __builtin_trap(); // open() accepted more data than the file can hold
  std::vector<char> buffer(rowBytes * 2 + 1);
  for (int64_t r = 0; r < rows && r < 64; ++r)
    (void)array.readRows(r, 1, buffer.data());
  if (rows >= 2)
    (void)array.readRows(rows - 2, 2, buffer.data());
  // Out of range: must be refused, never read.
  if (array.readRows(rows, 1, buffer.data()).ok() && rowBytes > 0)
    __builtin_trap();
  if (array.readBytes(array.dataBytes(), 1, buffer.data()).ok())
    __builtin_trap();
  (void)array.readRows(-1, 1, buffer.data());
  std::vector<uint8_t> all;
  (void)array.readAll(all);
  if (!all.empty() && all.size() != array.dataBytes())
    __builtin_trap();
  return 0;
}
