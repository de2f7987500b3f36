//===- TensorBoard.cpp - scalars as TensorBoard event files ---------------===//

#include "TensorBoard.h"

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <unistd.h>

namespace trainc::rt::detail {
namespace {

/// Protobuf's wire format: varints, keys, fixed 64/32-bit values and
/// length-delimited fields.
void varint(std::string &out, uint64_t value) {
  while (value >= 0x80) {
    out += static_cast<char>((value & 0x7f) | 0x80);
    value >>= 7;
  }
  out += static_cast<char>(value);
}
void key(std::string &out, int field, int wireType) {
  varint(out, static_cast<uint64_t>(field) << 3 | wireType);
}
void fixed(std::string &out, const void *value, size_t bytes) {
  out.append(static_cast<const char *>(value), bytes); // little-endian, as x86-64 stores it
}
void delimited(std::string &out, int field, const std::string &bytes) {
  key(out, field, 2);
  varint(out, bytes.size());
  out += bytes;
}

/// Event: wall_time = 1 (double), step = 2 (int64), file_version = 3
/// (string), summary = 5 (Summary).
std::string event(double wallTime, int64_t step) {
  std::string out;
  key(out, 1, 1);
  fixed(out, &wallTime, 8);
  key(out, 2, 0);
  varint(out, static_cast<uint64_t>(step));
  return out;
}

/// TFRecord's masked CRC: rotated right by 15 bits plus a constant.
uint32_t masked(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

} // namespace

uint32_t crc32c(const void *data, size_t bytes) {
  static const auto table = [] {
    std::vector<uint32_t> t(256);
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k)
        c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t crc = ~0u;
  const auto *p = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < bytes; ++i)
    crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

Status TensorBoardWriter::open(const std::string &dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error || !std::filesystem::is_directory(dir, error))
    return Status::error("--tensorboard: cannot use " + dir + " as a folder" +
                         (error ? ": " + error.message() : std::string()));
  char host[256] = "host";
  if (gethostname(host, sizeof(host) - 1) != 0)
    std::strcpy(host, "host");
  host[sizeof(host) - 1] = '\0';
  std::string name = host;
  for (char &c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.')
      c = '_';
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const double seconds = std::chrono::duration<double>(now).count();
  filePath = dir + "/events.out.tfevents." +
             std::to_string(static_cast<int64_t>(seconds)) + "." + name + "." +
             std::to_string(getpid()) + ".trainc";
  // A new file: an existing one (or a link) is never written into.
  int fd = ::open(filePath.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0)
    return Status::error("--tensorboard: cannot create " + filePath + ": " +
                         std::strerror(errno));
  file = FileHandle(fd);
  std::string first = event(seconds, 0);
  delimited(first, 3, "brain.Event:2");
  return record(first);
}

Status TensorBoardWriter::record(const std::string &data) {
  std::string out;
  const uint64_t length = data.size();
  fixed(out, &length, 8);
  const uint32_t lengthCrc = masked(crc32c(&length, 8)), dataCrc = masked(crc32c(data.data(), data.size()));
  fixed(out, &lengthCrc, 4);
  out += data;
  fixed(out, &dataCrc, 4);
  Status written = writeAll(file, filePath, out.data(), out.size());
  if (!written.ok())
    return Status::error("--tensorboard: " + written.message());
  return Status();
}

Status TensorBoardWriter::scalars(int64_t step, double wallTime,
                                  const std::vector<std::pair<std::string, double>> &values) {
  if (!file.valid())
    return Status();
  // Summary: value = 1 (repeated Value); Value: tag = 1, simple_value = 2 (float).
  std::string summary;
  for (const auto &[tag, value] : values) {
    std::string entry;
    delimited(entry, 1, tag);
    const float simple = static_cast<float>(value);
    key(entry, 2, 5);
    fixed(entry, &simple, 4);
    delimited(summary, 1, entry);
  }
  std::string out = event(wallTime, step);
  delimited(out, 5, summary);
  return record(out);
}

Status TensorBoardWriter::sync() {
  if (!file.valid())
    return Status();
  Status synced = syncFile(file, filePath);
  if (!synced.ok())
    return Status::error("--tensorboard: " + synced.message());
  return Status();
}

} // namespace trainc::rt::detail
