//===- FuzzSupport.h - what the runtime fuzz targets share -----*- C++ -*-===//
//
// The runtime's readers take paths, so each input is written to a file of
// this process's own under $TMPDIR (or /tmp) first.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_TEST_FUZZ_FUZZSUPPORT_H
#define TRAINC_TEST_FUZZ_FUZZSUPPORT_H

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace trainc::fuzz {

/// `$TMPDIR/trainc-<what>-fuzz-<pid><suffix>`: private to this process.
inline std::string scratchName(const char *what, const char *suffix) {
  const char *dir = std::getenv("TMPDIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/trainc-" + what + "-fuzz-" +
         std::to_string(getpid()) + suffix;
}

/// Writes the fuzzer's input to `path`; false when it cannot (the input is
/// then skipped, not a finding).
inline bool writeInput(const std::string &path, const uint8_t *data, size_t size) {
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    return false;
  bool ok = std::fwrite(data, 1, size, f) == size;
  return std::fclose(f) == 0 && ok;
}

} // namespace trainc::fuzz

#endif // TRAINC_TEST_FUZZ_FUZZSUPPORT_H
