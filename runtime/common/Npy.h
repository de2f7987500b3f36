//===- Npy.h - reading and writing NumPy .npy files ------------*- C++ -*-===//
//
// The runtime's data format: one .npy file per tensor. Reading validates the
// header against the file size, keeps the file open and reads rows with
// pread() into the caller's buffers (a data set larger than RAM is read as
// it is needed, never copied whole; a file truncated while it is read is an
// error naming it, never a SIGBUS as with a mapping). Writing streams rows
// into a temporary file that replaces the target only when complete, so
// predictions need no host copy of the whole output and a full disk leaves
// no partial file. Only little-endian, C-order arrays of the element types of
// DType are supported (bf16 has no NumPy type and cannot be written).
//
// Internal to the runtime library (not installed with trainc_rt/).
// NpyArray's read functions may be called from several threads at once;
// otherwise not thread-safe per object; distinct objects are independent.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_COMMON_NPY_H
#define TRAINC_RT_COMMON_NPY_H

#include "FileIO.h"
#include "trainc_rt/program.h"

#include <cstdint>
#include <string>
#include <vector>

namespace trainc::rt {

/// The NumPy `descr` string of `type` ("<f4", "|b1", ...), or null for bf16.
const char *npyDescr(DType type);

/// The largest .npy file that can hold `dataBytes` bytes of data: the data
/// plus the longest header NpyArray accepts. A file known to hold a given
/// array (a parameter) is refused by size above this, before it is read.
uint64_t npyMaxFileBytes(uint64_t dataBytes);

/// A read-only .npy file, open for pread().
class NpyArray {
public:
  NpyArray() = default;
  NpyArray(NpyArray &&other) noexcept = default;
  NpyArray &operator=(NpyArray &&other) noexcept = default;
  NpyArray(const NpyArray &) = delete;
  NpyArray &operator=(const NpyArray &) = delete;

  /// Opens `path` (a regular file: a FIFO or a device is refused without
  /// blocking) and validates its header against the file size, refusing a
  /// file of more than `maxFileBytes` bytes (0: no limit) unread. Every
  /// problem is reported with the file name and what is wrong.
  static Status open(const std::string &path, NpyArray &result, uint64_t maxFileBytes = 0);

  const std::string &path() const { return filePath; }
  DType dtype() const { return elementType; }
  const std::vector<int64_t> &shape() const { return dims; }
  int64_t numElements() const { return elementCount; }
  size_t dataBytes() const { return byteCount; }
  /// The first axis (1 for a scalar), and the bytes of one row along it.
  int64_t numRows() const { return dims.empty() ? 1 : dims[0]; }
  uint64_t rowBytes() const;

  /// Reads `bytes` bytes from `offset` of the data into `dst`. A range
  /// outside the data, or a file that has shrunk since open() ("truncated"),
  /// is an error naming the file.
  Status readBytes(uint64_t offset, uint64_t bytes, void *dst) const;
  /// Reads rows [firstRow, firstRow + rows) into `dst` (rows * rowBytes()).
  Status readRows(int64_t firstRow, int64_t rows, void *dst) const;
  /// An array of at most kInMemoryBytes of data is read whole by open(),
  /// and reads copy from that: a shuffled batch is then no pread a row. The
  /// file is still checked: a read of bytes the file no longer holds fails
  /// as a pread would. readBytes asks the file's size each time;
  /// readBytesOf takes the size the caller asked (fileSize) for a batch.
  static constexpr uint64_t kInMemoryBytes = 64ull << 20;
  bool inMemory() const { return !memory.empty(); }
  Status fileSize(uint64_t &size) const;
  Status readBytesOf(uint64_t fileBytes, uint64_t offset, uint64_t bytes, void *dst) const;
  /// Reads the whole array: for small arrays (labels, parameters), never a
  /// sample file of unknown size. `T` must divide the element size.
  template <typename T> Status readAll(std::vector<T> &values) const {
    if (byteCount % sizeof(T) != 0)
      return Status::error(filePath + ": cannot read " + std::to_string(byteCount) +
                           " bytes as elements of " + std::to_string(sizeof(T)) + " bytes");
    values.resize(byteCount / sizeof(T));
    return readBytes(0, byteCount, values.data());
  }

private:
  std::string filePath;
  FileHandle file;
  DType elementType = DType::F32;
  std::vector<int64_t> dims;
  int64_t elementCount = 0;
  uint64_t dataOffset = 0;
  size_t byteCount = 0;
  /// The data, for a small array (kInMemoryBytes).
  std::vector<char> memory;
};

/// Writes a .npy file (format 1.0) row block by row block: open() checks the
/// target (absent or a regular file) and writes the header to a temporary
/// file next to it, append() the next bytes of data, close() checks that
/// exactly the promised number of bytes was written, fsyncs and renames the
/// file over the target. A writer destroyed unclosed, or one whose write or
/// check failed, removes its temporary file and leaves the target as it was.
class NpyWriter {
public:
  NpyWriter() = default;
  NpyWriter(NpyWriter &&other) noexcept = default;
  NpyWriter &operator=(NpyWriter &&other) noexcept = default;
  NpyWriter(const NpyWriter &) = delete;
  NpyWriter &operator=(const NpyWriter &) = delete;

  /// `what` names the output in messages ("--out", "--save-params").
  Status open(const std::string &path, DType dtype, const std::vector<int64_t> &shape,
              const std::string &what = "");
  Status append(const void *data, size_t bytes);
  Status close();

private:
  std::string filePath;
  AtomicFile file;
  size_t expectedBytes = 0;
  size_t writtenBytes = 0;
};

/// Writes a whole array; `data` holds the product of `shape` elements.
Status writeNpy(const std::string &path, DType dtype,
                const std::vector<int64_t> &shape, const void *data);

} // namespace trainc::rt

#endif // TRAINC_RT_COMMON_NPY_H
