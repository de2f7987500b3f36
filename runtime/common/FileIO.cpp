//===- FileIO.cpp - reading and replacing files a user names --------------===//

#include "FileIO.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>
#include <vector>

namespace trainc::rt {
namespace {

std::string errnoText() { return std::strerror(errno); }

/// "what: " before a message, or nothing when the caller names the file in
/// its own words.
std::string prefix(const std::string &what) { return what.empty() ? "" : what + ": "; }

/// The process's umask, read without changing it (umask() would, for a
/// moment, for every thread): Linux 4.7 and later report it in
/// /proc/self/status. Where it does not, umask() is read by setting it
/// twice.
mode_t currentUmask() {
  FILE *status = std::fopen("/proc/self/status", "re");
  unsigned mask = 0;
  bool found = false;
  if (status) {
    char line[256];
    while (!found && std::fgets(line, sizeof(line), status))
      found = std::sscanf(line, "Umask: %o", &mask) == 1;
    std::fclose(status);
  }
  if (!found) {
    mode_t old = ::umask(022);
    ::umask(old);
    mask = old;
  }
  return static_cast<mode_t>(mask & 0777);
}

/// What kind of thing a stat() result describes, for messages.
const char *fileKind(mode_t mode) {
  if (S_ISDIR(mode))
    return "a folder";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISSOCK(mode))
    return "a socket";
  if (S_ISLNK(mode))
    return "a symbolic link";
  return "not a regular file";
}

std::string parentFolder(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

/// Clears O_NONBLOCK once the descriptor is known to be a regular file (on
/// which it has no effect, but later readers should not see it).
void makeBlocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0)
    (void)::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
}

} // namespace

FileHandle &FileHandle::operator=(FileHandle &&other) noexcept {
  if (this != &other) {
    if (descriptor >= 0)
      ::close(descriptor);
    descriptor = other.release();
  }
  return *this;
}

FileHandle::~FileHandle() {
  if (descriptor >= 0)
    ::close(descriptor);
}

Status FileHandle::close(const std::string &path) {
  if (descriptor < 0)
    return Status();
  int fd = release();
  if (::close(fd) != 0)
    return Status::error("cannot write " + path + ": " + errnoText());
  return Status();
}

Status openRegularFile(const std::string &path, const std::string &what, FileHandle &file,
                       uint64_t &size, uint64_t maxBytes) {
  // stat() first: opening a device can have effects of its own (a tape
  // rewinds, a watchdog arms), so only what looks like a regular file is
  // opened; fstat() then checks what was opened, in case it was swapped.
  struct stat info;
  if (::stat(path.c_str(), &info) != 0)
    return Status::error(prefix(what) + "cannot open " + path + ": " + errnoText());
  if (!S_ISREG(info.st_mode))
    return Status::error(prefix(what) + path + " is " + fileKind(info.st_mode) +
                         ", not a regular file");
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0)
    return Status::error(prefix(what) + "cannot open " + path + ": " + errnoText());
  FileHandle handle(fd);
  if (::fstat(fd, &info) != 0)
    return Status::error(prefix(what) + "cannot stat " + path + ": " + errnoText());
  if (!S_ISREG(info.st_mode))
    return Status::error(prefix(what) + path + " is " + fileKind(info.st_mode) +
                         ", not a regular file");
  size = static_cast<uint64_t>(info.st_size);
  if (maxBytes && size > maxBytes)
    return Status::error(prefix(what) + path + " is " + std::to_string(size) +
                         " bytes, more than the " + std::to_string(maxBytes) +
                         " bytes it can be");
  makeBlocking(fd);
  file = std::move(handle);
  return Status();
}

Status readAt(const FileHandle &file, const std::string &path, uint64_t offset, void *dst,
              size_t bytes) {
  char *out = static_cast<char *>(dst);
  size_t done = 0;
  while (done < bytes) {
    ssize_t n = ::pread(file.fd(), out + done, bytes - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return Status::error("cannot read " + path + ": " + errnoText());
    if (n == 0)
      return Status::error(path + " was truncated while it was read (byte " +
                           std::to_string(offset + done) + " is missing)");
    done += static_cast<size_t>(n);
  }
  return Status();
}

Status readRegularFile(const std::string &path, const std::string &what, uint64_t maxBytes,
                       std::string &bytes) {
  FileHandle file;
  uint64_t size = 0;
  TRAINC_RETURN_IF_ERROR(openRegularFile(path, what, file, size, maxBytes));
  bytes.assign(size, '\0');
  return readAt(file, path, 0, bytes.data(), size);
}

Status checkReplaceable(const std::string &path, const std::string &what) {
  struct stat info;
  if (::lstat(path.c_str(), &info) != 0) {
    if (errno == ENOENT)
      return Status();
    return Status::error(prefix(what) + "cannot check " + path + ": " + errnoText());
  }
  if (!S_ISREG(info.st_mode))
    return Status::error(prefix(what) + path + " exists and is " + fileKind(info.st_mode) +
                         "; refusing to replace it (name a regular file or a new one)");
  return Status();
}

Status openAppendFile(const std::string &path, const std::string &what, FileHandle &file) {
  TRAINC_RETURN_IF_ERROR(checkReplaceable(path, what));
  int fd = ::open(path.c_str(),
                  O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY,
                  0644);
  if (fd < 0)
    return Status::error(prefix(what) + "cannot open " + path + ": " + errnoText());
  FileHandle handle(fd);
  struct stat info;
  if (::fstat(fd, &info) != 0)
    return Status::error(prefix(what) + "cannot stat " + path + ": " + errnoText());
  if (!S_ISREG(info.st_mode))
    return Status::error(prefix(what) + path + " is " + fileKind(info.st_mode) +
                         ", not a regular file");
  makeBlocking(fd);
  file = std::move(handle);
  return Status();
}

Status writeAll(const FileHandle &file, const std::string &path, const void *data,
                size_t bytes) {
  const char *in = static_cast<const char *>(data);
  size_t done = 0;
  while (done < bytes) {
    ssize_t n = ::write(file.fd(), in + done, bytes - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return Status::error("cannot write " + path + ": " +
                           (n < 0 ? errnoText() : std::string("no progress")));
    done += static_cast<size_t>(n);
  }
  return Status();
}

Status syncFile(const FileHandle &file, const std::string &path) {
  if (::fsync(file.fd()) != 0)
    return Status::error("cannot write " + path + ": fsync: " + errnoText());
  return Status();
}

Status syncParentFolder(const std::string &path) {
  std::string dir = parentFolder(path);
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return Status::error("cannot open folder " + dir + ": " + errnoText());
  FileHandle handle(fd);
  // Some file systems cannot fsync a folder (EINVAL); the rename has still
  // happened, so only real I/O errors count.
  if (::fsync(fd) != 0 && errno != EINVAL && errno != EROFS)
    return Status::error("cannot write " + path + ": fsync of " + dir + ": " + errnoText());
  return Status();
}

AtomicFile::AtomicFile(AtomicFile &&other) noexcept
    : target(std::move(other.target)), temporary(std::move(other.temporary)),
      label(std::move(other.label)), file(std::move(other.file)) {
  other.temporary.clear();
}

AtomicFile &AtomicFile::operator=(AtomicFile &&other) noexcept {
  if (this != &other) {
    abandon();
    target = std::move(other.target);
    temporary = std::move(other.temporary);
    label = std::move(other.label);
    file = std::move(other.file);
    other.temporary.clear();
  }
  return *this;
}

AtomicFile::~AtomicFile() { abandon(); }

Status AtomicFile::open(const std::string &path, const std::string &what) {
  abandon();
  target = path;
  label = what;
  TRAINC_RETURN_IF_ERROR(checkReplaceable(path, what));
  // A name of fixed length in the target's folder (rename() stays within one
  // file system): a target name near the 255-byte limit still leaves room.
  std::string pattern = parentFolder(path) + "/" + kTemporaryPrefix + "XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  int fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0)
    return Status::error(prefix(what) + "cannot create a temporary file next to " + path +
                         ": " + errnoText());
  file = FileHandle(fd);
  temporary = name.data();
  // mkostemp creates the file 0600. A replaced file keeps its permissions;
  // a new one gets what open(O_CREAT, 0666) would give it under the umask.
  struct stat existing;
  mode_t mode = ::lstat(path.c_str(), &existing) == 0 ? existing.st_mode & 0777
                                                      : 0666 & ~currentUmask();
  (void)::fchmod(fd, mode);
  return Status();
}

Status AtomicFile::write(const void *data, size_t bytes) {
  if (!file.valid())
    return Status::error(prefix(label) + target + " is not open for writing");
  // Messages name the target, which the user named, not the temporary file.
  Status written = writeAll(file, target, data, bytes);
  if (!written.ok()) {
    // A failed write leaves a hole: the file can never be committed, and a
    // full disk gets its space back at once.
    abandon();
    return Status::error(prefix(label) + written.message() + " (" + target +
                         " is unchanged)");
  }
  return Status();
}

Status AtomicFile::commit() {
  if (!file.valid())
    return Status::error(prefix(label) + target + " is not open for writing");
  Status synced = syncFile(file, target);
  if (synced.ok())
    synced = file.close(target);
  // The target may have been replaced by something else since open().
  if (synced.ok())
    synced = checkReplaceable(target, label);
  if (synced.ok() && std::rename(temporary.c_str(), target.c_str()) != 0)
    synced = Status::error(prefix(label) + "cannot rename " + temporary + " to " + target +
                           ": " + errnoText());
  if (!synced.ok()) {
    abandon();
    return Status::error(synced.message() + " (" + target + " is unchanged)");
  }
  temporary.clear();
  return syncParentFolder(target);
}

void AtomicFile::abandon() {
  if (file.valid())
    (void)file.close(temporary);
  if (!temporary.empty())
    ::unlink(temporary.c_str());
  temporary.clear();
}

Status removeStaleTemporaries(const std::string &dir) {
  std::error_code error;
  std::filesystem::directory_iterator it(dir, error), end;
  const std::string prefix = kTemporaryPrefix;
  for (; !error && it != end; it.increment(error)) {
    std::string name = it->path().filename().string();
    struct stat info;
    if (name.size() != prefix.size() + 6 || name.compare(0, prefix.size(), prefix) != 0 ||
        ::lstat(it->path().c_str(), &info) != 0 || !S_ISREG(info.st_mode))
      continue;
    if (::unlink(it->path().c_str()) != 0 && errno != ENOENT)
      return Status::error("cannot remove the stale temporary file " + it->path().string() +
                           ": " + errnoText());
  }
  if (error)
    return Status::error("cannot list " + dir + ": " + error.message());
  return Status();
}

Status writeFileAtomically(const std::string &path, const std::string &what, const void *data,
                           size_t bytes) {
  AtomicFile file;
  TRAINC_RETURN_IF_ERROR(file.open(path, what));
  TRAINC_RETURN_IF_ERROR(file.write(data, bytes));
  return file.commit();
}

} // namespace trainc::rt
