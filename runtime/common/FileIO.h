//===- FileIO.h - reading and replacing files a user names -----*- C++ -*-===//
//
// Internal to the runtime. Every file the program reads or writes is named by
// a user who may be careless or hostile, so:
// - opening never blocks (a FIFO or a device is opened with O_NONBLOCK, then
//   refused by its type), and anything but a regular file is refused;
// - a file's size is checked before it is read into memory;
// - reads are pread() calls with every short read reported (a file truncated
//   while we read it is an error naming the file, never a SIGBUS);
// - outputs are written to a temporary file in the same folder, fsynced and
//   renamed over the target, which must be absent or a regular file (never a
//   symlink, a device or a folder), so a reader never sees half a file and a
//   full disk leaves the previous file intact.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_COMMON_FILEIO_H
#define TRAINC_RT_COMMON_FILEIO_H

#include "trainc_rt/status.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace trainc::rt {

/// A file descriptor that closes itself.
class FileHandle {
public:
  FileHandle() = default;
  explicit FileHandle(int fd) : descriptor(fd) {}
  FileHandle(FileHandle &&other) noexcept : descriptor(other.release()) {}
  FileHandle &operator=(FileHandle &&other) noexcept;
  FileHandle(const FileHandle &) = delete;
  FileHandle &operator=(const FileHandle &) = delete;
  ~FileHandle();

  int fd() const { return descriptor; }
  bool valid() const { return descriptor >= 0; }
  int release() {
    int fd = descriptor;
    descriptor = -1;
    return fd;
  }
  /// Closes the descriptor; a failing close() is reported.
  Status close(const std::string &path);

private:
  int descriptor = -1;
};

/// Opens `path` read-only. Refuses (with `what` and the path in the message)
/// anything that is not a regular file after following symlinks, without
/// opening it (so never blocking on a FIFO or touching a device), and a file
/// larger than `maxBytes` (0: no limit).
///
/// In every function here, messages start with "`what`: " and name the path;
/// an empty `what` leaves the prefix out.
Status openRegularFile(const std::string &path, const std::string &what, FileHandle &file,
                       uint64_t &size, uint64_t maxBytes = 0);

/// Reads exactly `bytes` bytes at `offset`; a short read (the file was
/// truncated since it was opened) is an error naming `path`.
Status readAt(const FileHandle &file, const std::string &path, uint64_t offset, void *dst,
              size_t bytes);

/// Reads a whole regular file of at most `maxBytes` bytes.
Status readRegularFile(const std::string &path, const std::string &what, uint64_t maxBytes,
                       std::string &bytes);

/// Checks that `path` may be replaced by a new file: it is absent or a
/// regular file (lstat: a symlink, a device, a FIFO or a folder is refused).
Status checkReplaceable(const std::string &path, const std::string &what);

/// Opens `path` for appending (created if absent, O_NOFOLLOW), refusing
/// anything that is not a regular file without blocking on a FIFO.
Status openAppendFile(const std::string &path, const std::string &what, FileHandle &file);

/// Writes all `bytes` bytes to `file` (retrying short writes); a failure
/// (ENOSPC, EFBIG, EIO) is an error naming `path`.
Status writeAll(const FileHandle &file, const std::string &path, const void *data,
                size_t bytes);

/// fsync() of a file, and of the folder holding `path` (so that a rename or
/// a creation reaches the disk).
Status syncFile(const FileHandle &file, const std::string &path);
Status syncParentFolder(const std::string &path);

/// Temporary files of AtomicFile are named `<folder>/.trainc-tmp-XXXXXX`.
inline constexpr char kTemporaryPrefix[] = ".trainc-tmp-";

/// Removes the temporary files a killed writer left in `dir` (regular files
/// named kTemporaryPrefix + 6 characters). Only for a folder no other
/// program writes into at the same time (the checkpoint folder).
Status removeStaleTemporaries(const std::string &dir);

/// A file written whole or not at all: open() creates a temporary file in the
/// folder of `path`, write() appends, commit() fsyncs it and renames it over
/// `path`. Destroying an uncommitted AtomicFile removes the temporary file,
/// leaving `path` as it was.
class AtomicFile {
public:
  AtomicFile() = default;
  AtomicFile(AtomicFile &&other) noexcept;
  AtomicFile &operator=(AtomicFile &&other) noexcept;
  AtomicFile(const AtomicFile &) = delete;
  AtomicFile &operator=(const AtomicFile &) = delete;
  ~AtomicFile();

  /// `what` names the output in messages ("--export", "checkpoint", ...).
  Status open(const std::string &path, const std::string &what);
  Status write(const void *data, size_t bytes);
  Status commit();
  /// Removes the temporary file; `path` is left as it was.
  void abandon();
  /// True between a successful open() and commit() or abandon(). A failed
  /// write() abandons the file: it can no longer be committed.
  bool isOpen() const { return file.valid(); }
  const std::string &path() const { return target; }

private:
  std::string target, temporary, label;
  FileHandle file;
};

/// AtomicFile in one call.
Status writeFileAtomically(const std::string &path, const std::string &what, const void *data,
                           size_t bytes);

} // namespace trainc::rt

#endif // TRAINC_RT_COMMON_FILEIO_H
