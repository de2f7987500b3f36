//===- Npy.h - reading and writing NumPy .npy files ------------*- C++ -*-===//
//
// The runtime's data format: one .npy file per tensor. Reading maps the file
// into memory (a data set larger than RAM is paged in on demand, never
// copied); writing streams rows so that predictions need no host copy of the
// whole output. Only little-endian, C-order arrays of the element types of
// DType are supported (bf16 has no NumPy type and cannot be written).
//
// Internal to the runtime library (not installed with trainc_rt/).
// Not thread-safe per object; distinct objects are independent.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_COMMON_NPY_H
#define TRAINC_RT_COMMON_NPY_H

#include "trainc_rt/program.h"

#include <cstdio>
#include <string>
#include <vector>

namespace trainc::rt {

/// The NumPy `descr` string of `type` ("<f4", "|b1", ...), or null for bf16.
const char *npyDescr(DType type);

/// A read-only, memory-mapped .npy file.
class NpyArray {
public:
  NpyArray() = default;
  NpyArray(NpyArray &&other) noexcept;
  NpyArray &operator=(NpyArray &&other) noexcept;
  NpyArray(const NpyArray &) = delete;
  NpyArray &operator=(const NpyArray &) = delete;
  ~NpyArray();

  /// Maps `path` and validates its header against the file size. Every
  /// problem is reported with the file name and what is wrong.
  static Status open(const std::string &path, NpyArray &result);

  const std::string &path() const { return filePath; }
  DType dtype() const { return elementType; }
  const std::vector<int64_t> &shape() const { return dims; }
  int64_t numElements() const { return elementCount; }
  /// The elements, C order; valid while this object lives. Null when the
  /// array has no elements.
  const void *data() const { return dataBegin; }
  size_t dataBytes() const { return byteCount; }

private:
  void reset();

  std::string filePath;
  DType elementType = DType::F32;
  std::vector<int64_t> dims;
  int64_t elementCount = 0;
  void *mapping = nullptr;
  size_t mappingBytes = 0;
  const void *dataBegin = nullptr;
  size_t byteCount = 0;
};

/// Writes a .npy file (format 1.0) row block by row block: open() writes the
/// header, append() the next bytes of data, close() checks that exactly the
/// promised number of bytes was written. The destructor of an unclosed writer
/// closes the file without the check (the file is then incomplete).
class NpyWriter {
public:
  NpyWriter() = default;
  NpyWriter(NpyWriter &&other) noexcept;
  NpyWriter &operator=(NpyWriter &&other) noexcept;
  NpyWriter(const NpyWriter &) = delete;
  NpyWriter &operator=(const NpyWriter &) = delete;
  ~NpyWriter();

  Status open(const std::string &path, DType dtype,
              const std::vector<int64_t> &shape);
  Status append(const void *data, size_t bytes);
  Status close();

private:
  std::string filePath;
  FILE *file = nullptr;
  size_t expectedBytes = 0;
  size_t writtenBytes = 0;
};

/// Writes a whole array; `data` holds the product of `shape` elements.
Status writeNpy(const std::string &path, DType dtype,
                const std::vector<int64_t> &shape, const void *data);

} // namespace trainc::rt

#endif // TRAINC_RT_COMMON_NPY_H
