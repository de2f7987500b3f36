//===- Checkpoint.cpp - trainer checkpoints (safetensors) -----------------===//

#include "Checkpoint.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <unistd.h>

namespace trainc::rt::detail {
namespace {

const char *safetensorsDtype(DType type) {
  switch (type) {
  case DType::F32: return "F32";
  case DType::F16: return "F16";
  case DType::BF16: return "BF16";
  case DType::F64: return "F64";
  case DType::I64: return "I64";
  case DType::I32: return "I32";
  case DType::I1: return "BOOL";
  }
  return "?";
}

bool parseDtype(const std::string &name, DType &type) {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I64, DType::I32,
                  DType::I1})
    if (name == safetensorsDtype(t)) {
      type = t;
      return true;
    }
  return false;
}

std::string quote(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

/// A small reader for the JSON this file writes (objects, arrays, strings,
/// integers); anything else is an error.
class Json {
public:
  explicit Json(const std::string &text) : s(text) {}
  bool object(const std::function<bool(const std::string &)> &member) {
    if (!eat('{'))
      return false;
    if (eat('}'))
      return true;
    do {
      std::string key;
      if (!string(key) || !eat(':') || !member(key))
        return false;
    } while (eat(','));
    return eat('}');
  }
  bool string(std::string &out) {
    skip();
    if (i >= s.size() || s[i] != '"')
      return false;
    for (++i; i < s.size() && s[i] != '"'; ++i) {
      if (s[i] == '\\' && i + 1 < s.size())
        ++i;
      out += s[i];
    }
    return i < s.size() && s[i++] == '"';
  }
  bool integer(int64_t &out) {
    skip();
    size_t start = i;
    if (i < s.size() && s[i] == '-')
      ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])))
      ++i;
    if (start == i)
      return false;
    out = std::strtoll(s.substr(start, i - start).c_str(), nullptr, 10);
    return true;
  }
  bool integers(std::vector<int64_t> &out) {
    if (!eat('['))
      return false;
    if (eat(']'))
      return true;
    do {
      int64_t v;
      if (!integer(v))
        return false;
      out.push_back(v);
    } while (eat(','));
    return eat(']');
  }
  bool done() {
    skip();
    return i == s.size();
  }

private:
  void skip() {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i])))
      ++i;
  }
  bool eat(char c) {
    skip();
    if (i < s.size() && s[i] == c) {
      ++i;
      return true;
    }
    return false;
  }
  const std::string &s;
  size_t i = 0;
};

Status writeFileAtomically(const std::string &path, const std::string &bytes) {
  std::string temporary = path + ".tmp";
  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    return Status::error("cannot write " + temporary + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) {
      ::close(fd);
      std::remove(temporary.c_str());
      return Status::error("cannot write " + temporary + ": " + std::strerror(errno));
    }
    done += static_cast<size_t>(n);
  }
  bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!synced || std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    return Status::error("cannot replace " + path + ": " + std::strerror(errno));
  }
  // The rename itself must reach the disk before the file counts as written.
  std::string dir = std::filesystem::path(path).parent_path().string();
  int dirFd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dirFd >= 0) {
    ::fsync(dirFd);
    ::close(dirFd);
  }
  return Status();
}

} // namespace

Status writeCheckpoint(const std::string &dir, const std::vector<CheckpointTensor> &tensors,
                       const std::map<std::string, std::string> &manifest) {
  std::string header = "{\"__metadata__\": {";
  bool first = true;
  for (const auto &[key, value] : manifest) {
    header += (first ? "" : ", ") + quote(key) + ": " + quote(value);
    first = false;
  }
  header += "}";
  uint64_t offset = 0;
  for (const CheckpointTensor &t : tensors) {
    header += ", " + quote(t.name) + ": {\"dtype\": \"" + safetensorsDtype(t.dtype) +
              "\", \"shape\": [";
    for (size_t d = 0; d < t.shape.size(); ++d)
      header += (d ? ", " : "") + std::to_string(t.shape[d]);
    header += "], \"data_offsets\": [" + std::to_string(offset) + ", " +
              std::to_string(offset + t.bytes.size()) + "]}";
    offset += t.bytes.size();
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' '); // data starts 8-byte aligned
  std::string bytes(8, '\0');
  uint64_t length = header.size();
  std::memcpy(&bytes[0], &length, 8);
  bytes += header;
  for (const CheckpointTensor &t : tensors)
    bytes.append(t.bytes.begin(), t.bytes.end());
  TRAINC_RETURN_IF_ERROR(writeFileAtomically(dir + "/checkpoint.safetensors", bytes));
  std::string json = "{\n";
  first = true;
  for (const auto &[key, value] : manifest) {
    json += std::string(first ? "" : ",\n") + "  " + quote(key) + ": " + quote(value);
    first = false;
  }
  json += "\n}\n";
  return writeFileAtomically(dir + "/checkpoint.json", json);
}

Status readCheckpoint(const std::string &dir, std::vector<CheckpointTensor> &tensors,
                      std::map<std::string, std::string> &manifest) {
  std::string path = dir + "/checkpoint.safetensors";
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::error("no checkpoint to resume from: cannot open " + path);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto corrupt = [&](const std::string &why) {
    return Status::error("corrupt checkpoint " + path + ": " + why);
  };
  uint64_t length = 0;
  if (bytes.size() < 8)
    return corrupt("shorter than its 8-byte header length");
  std::memcpy(&length, bytes.data(), 8);
  if (length > bytes.size() - 8)
    return corrupt("header length " + std::to_string(length) + " exceeds the file");
  std::string header = bytes.substr(8, length);
  const uint64_t dataStart = 8 + length, dataBytes = bytes.size() - dataStart;
  Json json(header);
  bool ok = json.object([&](const std::string &key) {
    if (key == "__metadata__")
      return json.object([&](const std::string &k) {
        std::string v;
        if (!json.string(v))
          return false;
        manifest[k] = v;
        return true;
      });
    CheckpointTensor t;
    t.name = key;
    std::vector<int64_t> offsets;
    std::string dtype;
    bool fields = json.object([&](const std::string &field) {
      if (field == "dtype")
        return json.string(dtype);
      if (field == "shape")
        return json.integers(t.shape);
      if (field == "data_offsets")
        return json.integers(offsets);
      return false;
    });
    if (!fields || !parseDtype(dtype, t.dtype) || offsets.size() != 2 || offsets[0] < 0 ||
        offsets[1] < offsets[0] || static_cast<uint64_t>(offsets[1]) > dataBytes)
      return false;
    t.bytes.assign(bytes.begin() + dataStart + offsets[0], bytes.begin() + dataStart + offsets[1]);
    tensors.push_back(std::move(t));
    return true;
  });
  if (!ok || !json.done())
    return corrupt("unreadable header");
  return Status();
}

} // namespace trainc::rt::detail
