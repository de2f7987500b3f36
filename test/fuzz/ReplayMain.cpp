//===- ReplayMain.cpp - runs a libFuzzer target on files, without libFuzzer ===//
//
// Linked with a fuzz target's source (NpyFuzzer.cpp, CheckpointFuzzer.cpp)
// by g++ in the normal test run, so the inputs in test/fuzz/regressions/ are
// replayed without clang: `PROG FILE...` calls LLVMFuzzerTestOneInput on
// each file and exits 0; a bug shows as a crash (a signal) or a trap.
//
//===----------------------------------------------------------------------===//

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    std::ifstream in(argv[i], std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "%s: cannot read %s\n", argv[0], argv[i]);
      return 2;
    }
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size());
  }
  return 0;
}
