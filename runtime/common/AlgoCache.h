//===- AlgoCache.h - cuDNN algorithm choices kept across runs ---*- C++ -*-===//
//
// Internal to the runtime. --cudnn-benchmark times the algorithms of each
// convolution plan on its first call; the choices are kept in a small text
// file next to the program (--cudnn-cache), so a later run on the same
// device, library and program skips the search:
//
//   trainc cudnn-cache 1
//   identity <device, library version, program fingerprint, --deterministic>
//   <fwd|data|filter> <plan key: comma-separated integers> <algorithm> <math>
//
// The file comes from disk, so it is untrusted: it is read only when it is
// a regular file of at most kMaxBytes in exactly this form; anything else
// is not used (load() says why) and, when it is not this program's file
// at all, not replaced either. A choice read from it is only a hint: the
// CUDA runtime still asks cuDNN to size it, and searches when that fails.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_COMMON_ALGOCACHE_H
#define TRAINC_RT_COMMON_ALGOCACHE_H

#include "trainc_rt/status.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace trainc::rt {

/// One convolution's algorithm: cuDNN's algorithm and math-type enums.
struct AlgoChoice {
  int algo = 0;
  int mathType = 0;
};

class AlgoCache {
public:
  static constexpr uint64_t kMaxBytes = 1 << 20;
  static constexpr size_t kMaxEntries = 4096;
  static constexpr size_t kMaxKeyValues = 32;
  /// Enum values above these are not cuDNN's (its counts are below 16).
  static constexpr int kMaxAlgo = 64, kMaxMathType = 16;

  /// `identity`: what the choices depend on (one line, no newline).
  explicit AlgoCache(std::string identity);

  /// The key of a plan: its direction (fwd, data, filter) and shape values.
  static std::string keyOf(const std::string &direction, const std::vector<int64_t> &values);

  /// Reads `path`. An absent file is an empty cache. A file that is not a
  /// regular file, not in this form, or made under another identity is not
  /// used: the cache stays empty and `note` says why (empty when used or
  /// absent). Never an error: the search is the fallback.
  void load(const std::string &path, std::string &note);

  /// Writes the choices to `path` (atomically) when they changed since
  /// load(). A file that load() found not to be a cache file, or anything
  /// but an absent or regular file, is left alone and reported.
  Status save(const std::string &path);

  const AlgoChoice *find(const std::string &key) const;
  /// Adds or replaces a choice (beyond kMaxEntries, ignored).
  void insert(const std::string &key, AlgoChoice choice);

  bool changed() const { return dirty; }
  size_t size() const { return choices.size(); }
  /// The file text save() writes.
  std::string text() const;

private:
  std::string identity;
  std::map<std::string, AlgoChoice> choices;
  bool dirty = false;
  /// load() found a file that is not a cache file: save() leaves it alone.
  bool foreign = false;
};

} // namespace trainc::rt

#endif // TRAINC_RT_COMMON_ALGOCACHE_H
