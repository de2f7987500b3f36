//===- Npy.cpp - reading and writing NumPy .npy files ---------------------===//
//
// Format:
// https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
//   "\x93NUMPY" major minor, header length (uint16 LE in 1.0, uint32 LE in
//   2.0/3.0), a Python dict literal {'descr': ..., 'fortran_order': ...,
//   'shape': (...)} padded with spaces and ended by '\n', then the data.
//
//===----------------------------------------------------------------------===//

#include "Npy.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace trainc::rt {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicBytes = 6;
/// NumPy itself refuses headers over 10000 bytes unless asked; a header this
/// long is certainly not one of ours and must not make us scan a huge file.
constexpr size_t kMaxHeaderBytes = 1 << 20;

Status fail(const std::string &path, const std::string &what) {
  return Status::error(path + ": " + what);
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      text += ", ";
    text += std::to_string(shape[i]);
  }
  if (shape.size() == 1)
    text += ",";
  return text + ")";
}

/// The parsed header dict.
struct NpyHeader {
  std::string descr;
  bool fortranOrder = false;
  std::vector<int64_t> shape;
};

/// A recursive-descent parser for the one dict literal NumPy writes. It
/// accepts either quote style and the trailing commas NumPy emits, nothing
/// more: anything else is a malformed header, never undefined behaviour.
class HeaderParser {
public:
  explicit HeaderParser(const std::string &text) : text(text) {}

  /// Returns an empty string on success, else what is wrong.
  std::string parse(NpyHeader &header) {
    bool seenDescr = false, seenOrder = false, seenShape = false;
    skipSpace();
    if (!consume('{'))
      return "header is not a dict";
    while (true) {
      skipSpace();
      if (consume('}'))
        break;
      std::string key;
      if (!parseString(key))
        return "expected a quoted key at offset " + std::to_string(pos);
      skipSpace();
      if (!consume(':'))
        return "expected ':' after '" + key + "'";
      skipSpace();
      if (key == "descr") {
        if (!parseString(header.descr))
          return "unsupported dtype (descr is not a simple type string; "
                 "structured arrays are not supported)";
        seenDescr = true;
      } else if (key == "fortran_order") {
        if (!parseBool(header.fortranOrder))
          return "fortran_order is not True or False";
        seenOrder = true;
      } else if (key == "shape") {
        std::string error = parseShape(header.shape);
        if (!error.empty())
          return error;
        seenShape = true;
      } else {
        return "unexpected key '" + key + "'";
      }
      skipSpace();
      if (consume(','))
        continue;
      if (consume('}'))
        break;
      return "expected ',' or '}' after '" + key + "'";
    }
    if (!seenDescr || !seenOrder || !seenShape)
      return std::string("missing key '") +
             (!seenDescr   ? "descr"
              : !seenOrder ? "fortran_order"
                           : "shape") +
             "'";
    return "";
  }

private:
  void skipSpace() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' ||
                                 text[pos] == '\n' || text[pos] == '\r'))
      ++pos;
  }
  bool consume(char c) {
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }
  bool consumeWord(const char *word) {
    size_t n = std::strlen(word);
    if (text.compare(pos, n, word) != 0)
      return false;
    pos += n;
    return true;
  }
  bool parseString(std::string &out) {
    if (pos >= text.size() || (text[pos] != '\'' && text[pos] != '"'))
      return false;
    char quote = text[pos++];
    size_t end = text.find(quote, pos);
    if (end == std::string::npos)
      return false;
    out = text.substr(pos, end - pos);
    pos = end + 1;
    return true;
  }
  bool parseBool(bool &out) {
    if (consumeWord("True"))
      out = true;
    else if (consumeWord("False"))
      out = false;
    else
      return false;
    return true;
  }
  std::string parseShape(std::vector<int64_t> &shape) {
    shape.clear();
    if (!consume('('))
      return "shape is not a tuple";
    while (true) {
      skipSpace();
      if (consume(')'))
        return "";
      if (pos >= text.size() || text[pos] < '0' || text[pos] > '9')
        return "shape has a non-integer or negative dimension";
      int64_t value = 0;
      while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
        if (__builtin_mul_overflow(value, int64_t(10), &value) ||
            __builtin_add_overflow(value, int64_t(text[pos] - '0'), &value))
          return "shape dimension overflows int64";
        ++pos;
      }
      consume('L'); // Python 2 long literals, written by old NumPy.
      shape.push_back(value);
      skipSpace();
      if (consume(','))
        continue;
      if (consume(')'))
        return "";
      return "shape tuple is malformed";
    }
  }

  const std::string &text;
  size_t pos = 0;
};

bool descrToDType(const std::string &descr, DType &type) {
  static const std::pair<const char *, DType> kTable[] = {
      {"<f4", DType::F32}, {"<f8", DType::F64}, {"<f2", DType::F16},
      {"<i8", DType::I64}, {"<i4", DType::I32}, {"|b1", DType::I1},
      {"|u1", DType::U8}};
  for (const auto &[name, dtype] : kTable) {
    if (descr == name) {
      type = dtype;
      return true;
    }
  }
  return false;
}

} // namespace

const char *npyDescr(DType type) {
  switch (type) {
  case DType::F32:
    return "<f4";
  case DType::F64:
    return "<f8";
  case DType::F16:
    return "<f2";
  case DType::I64:
    return "<i8";
  case DType::I32:
    return "<i4";
  case DType::I1:
    return "|b1";
  case DType::U8:
    return "|u1";
  case DType::BF16:
    break;
  }
  return nullptr;
}

uint64_t npyMaxFileBytes(uint64_t dataBytes) {
  // Magic, version, a 4-byte header length, the header.
  return dataBytes + kMagicBytes + 2 + 4 + kMaxHeaderBytes;
}

//===----------------------------------------------------------------------===//
// NpyArray
//===----------------------------------------------------------------------===//

Status NpyArray::open(const std::string &path, NpyArray &result, uint64_t maxFileBytes) {
  result = NpyArray();
  FileHandle file;
  uint64_t fileBytes = 0;
  TRAINC_RETURN_IF_ERROR(openRegularFile(path, "", file, fileBytes, maxFileBytes));
  if (fileBytes == 0)
    return fail(path, "bad magic (empty file, not a .npy file)");

  // The fixed prefix: magic, version, header length.
  unsigned char bytes[12] = {};
  const size_t prefixRead = static_cast<size_t>(std::min<uint64_t>(fileBytes, sizeof(bytes)));
  TRAINC_RETURN_IF_ERROR(readAt(file, path, 0, bytes, prefixRead));
  if (std::memcmp(bytes, kMagic, std::min(prefixRead, kMagicBytes)) != 0)
    return fail(path, "bad magic (not a .npy file)");
  if (fileBytes < kMagicBytes + 2)
    return fail(path, "truncated header (file has " + std::to_string(fileBytes) + " bytes)");
  unsigned major = bytes[6], minor = bytes[7];
  size_t lengthBytes;
  if (major == 1)
    lengthBytes = 2;
  else if (major == 2 || major == 3)
    lengthBytes = 4;
  else
    return fail(path, "unsupported .npy format version " + std::to_string(major) + "." +
                          std::to_string(minor));
  const size_t prefixBytes = kMagicBytes + 2 + lengthBytes;
  if (fileBytes < prefixBytes)
    return fail(path, "truncated header (file has " + std::to_string(fileBytes) + " bytes)");
  size_t headerBytes = 0;
  for (size_t i = 0; i < lengthBytes; ++i)
    headerBytes |= size_t(bytes[8 + i]) << (8 * i);
  if (headerBytes > kMaxHeaderBytes)
    return fail(path, "header too long (" + std::to_string(headerBytes) + " bytes; at most " +
                          std::to_string(kMaxHeaderBytes) + ")");
  if (fileBytes < prefixBytes + headerBytes)
    return fail(path, "truncated header (header needs " +
                          std::to_string(prefixBytes + headerBytes) + " bytes, file has " +
                          std::to_string(fileBytes) + ")");
  std::string headerText(headerBytes, '\0');
  TRAINC_RETURN_IF_ERROR(readAt(file, path, prefixBytes, headerText.data(), headerBytes));
  NpyHeader header;
  std::string error = HeaderParser(headerText).parse(header);
  if (!error.empty())
    return fail(path, "malformed header: " + error);
  DType dtype;
  if (!descrToDType(header.descr, dtype))
    return fail(path, "unsupported dtype '" + header.descr +
                          "' (supported: <f4, <f8, <f2, <i8, <i4, |b1, |u1)");
  if (header.fortranOrder)
    return fail(path, "fortran_order arrays are not supported (save a "
                      "C-order array, e.g. np.ascontiguousarray)");
  if (header.shape.size() > static_cast<size_t>(kMaxRank))
    return fail(path, "rank " + std::to_string(header.shape.size()) +
                          " exceeds the maximum of " + std::to_string(kMaxRank));
  int64_t count = 1;
  size_t dataBytes = 0;
  for (int64_t dim : header.shape)
    if (__builtin_mul_overflow(count, dim, &count))
      return fail(path, "shape " + shapeString(header.shape) + " has too many elements");
  if (__builtin_mul_overflow(static_cast<size_t>(count), dtypeSize(dtype), &dataBytes))
    return fail(path, "shape " + shapeString(header.shape) + " is too large");
  const uint64_t available = fileBytes - prefixBytes - headerBytes;
  if (available != dataBytes)
    return fail(path, "shape/data size mismatch: shape " + shapeString(header.shape) + " of " +
                          header.descr + " needs " + std::to_string(dataBytes) +
                          " data bytes, file has " + std::to_string(available));
  result.filePath = path;
  result.file = std::move(file);
  result.elementType = dtype;
  result.dims = std::move(header.shape);
  result.elementCount = count;
  result.dataOffset = prefixBytes + headerBytes;
  result.byteCount = dataBytes;
  if (dataBytes > 0 && dataBytes <= kInMemoryBytes) {
    std::vector<char> memory(dataBytes);
    TRAINC_RETURN_IF_ERROR(readAt(result.file, path, result.dataOffset, memory.data(), dataBytes));
    result.memory = std::move(memory);
  }
  return Status();
}

Status NpyArray::fileSize(uint64_t &size) const {
  if (!file.valid())
    return fail(filePath, "read from an array that is not open");
  struct stat st;
  if (::fstat(file.fd(), &st) != 0)
    return Status::error("cannot read " + filePath + ": " + std::strerror(errno));
  size = static_cast<uint64_t>(st.st_size);
  return Status();
}

Status NpyArray::readBytesOf(uint64_t fileBytes, uint64_t offset, uint64_t bytes,
                             void *dst) const {
  if (offset > byteCount || bytes > byteCount - offset)
    return fail(filePath, "reading data bytes [" + std::to_string(offset) + ", " +
                              std::to_string(offset) + " + " + std::to_string(bytes) +
                              ") outside the " + std::to_string(byteCount) + " data bytes");
  if (memory.empty())
    return readAt(file, filePath, dataOffset + offset, dst, static_cast<size_t>(bytes));
  // The bytes of the file as it is now: a file cut short since open() is
  // the error a pread would give, naming the first missing byte.
  const uint64_t end = dataOffset + offset + bytes;
  if (bytes > 0 && fileBytes < end)
    return Status::error(filePath + " was truncated while it was read (byte " +
                         std::to_string(std::max(fileBytes, dataOffset + offset)) +
                         " is missing)");
  std::memcpy(dst, memory.data() + offset, static_cast<size_t>(bytes));
  return Status();
}

uint64_t NpyArray::rowBytes() const {
  int64_t rows = numRows();
  return rows > 0 ? byteCount / static_cast<uint64_t>(rows) : 0;
}

Status NpyArray::readBytes(uint64_t offset, uint64_t bytes, void *dst) const {
  if (!file.valid())
    return fail(filePath, "read from an array that is not open");
  if (offset > byteCount || bytes > byteCount - offset)
    return fail(filePath, "reading data bytes [" + std::to_string(offset) + ", " +
                              std::to_string(offset) + " + " + std::to_string(bytes) +
                              ") outside the " + std::to_string(byteCount) + " data bytes");
  uint64_t size = 0;
  if (!memory.empty())
    TRAINC_RETURN_IF_ERROR(fileSize(size));
  return readBytesOf(size, offset, bytes, dst);
}

Status NpyArray::readRows(int64_t firstRow, int64_t rows, void *dst) const {
  const int64_t total = numRows();
  if (firstRow < 0 || rows < 0 || firstRow > total || rows > total - firstRow)
    return fail(filePath, "reading rows [" + std::to_string(firstRow) + ", " +
                              std::to_string(firstRow) + " + " + std::to_string(rows) +
                              ") of " + std::to_string(total));
  const uint64_t row = rowBytes();
  return readBytes(static_cast<uint64_t>(firstRow) * row, static_cast<uint64_t>(rows) * row,
                   dst);
}

//===----------------------------------------------------------------------===//
// NpyWriter
//===----------------------------------------------------------------------===//

Status NpyWriter::open(const std::string &path, DType dtype, const std::vector<int64_t> &shape,
                       const std::string &what) {
  if (file.isOpen())
    return fail(path, "NpyWriter is already open on " + filePath);
  const char *descr = npyDescr(dtype);
  if (!descr)
    return fail(path, std::string("cannot write ") + dtypeName(dtype) +
                          ": NumPy has no such dtype");
  int64_t count = 1;
  size_t bytes = 0;
  for (int64_t dim : shape)
    if (dim < 0 || __builtin_mul_overflow(count, dim, &count))
      return fail(path, "invalid shape " + shapeString(shape));
  if (__builtin_mul_overflow(static_cast<size_t>(count), dtypeSize(dtype), &bytes))
    return fail(path, "invalid shape " + shapeString(shape));
  std::string header = std::string("{'descr': '") + descr +
                       "', 'fortran_order': False, 'shape': " + shapeString(shape) + ", }";
  // Pad with spaces so the data starts 64-byte aligned (what NumPy does), so
  // that a reader can use aligned loads.
  size_t total = kMagicBytes + 2 + 2 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  if (header.size() > 65535)
    return fail(path, "header too long for .npy format 1.0");

  filePath = path;
  expectedBytes = bytes;
  writtenBytes = 0;
  TRAINC_RETURN_IF_ERROR(file.open(path, what));
  unsigned char prefix[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  prefix[8] = header.size() & 0xff;
  prefix[9] = (header.size() >> 8) & 0xff;
  std::string head(reinterpret_cast<const char *>(prefix), sizeof(prefix));
  head += header;
  return file.write(head.data(), head.size());
}

Status NpyWriter::append(const void *data, size_t bytes) {
  if (!file.isOpen())
    return fail(filePath, "NpyWriter::append on a writer that is not open");
  if (bytes > expectedBytes - writtenBytes)
    return fail(filePath, "writing " + std::to_string(writtenBytes + bytes) +
                              " data bytes, the shape holds " + std::to_string(expectedBytes));
  if (bytes)
    TRAINC_RETURN_IF_ERROR(file.write(data, bytes));
  writtenBytes += bytes;
  return Status();
}

Status NpyWriter::close() {
  if (!file.isOpen())
    return fail(filePath, "NpyWriter::close on a writer that is not open");
  if (writtenBytes != expectedBytes) {
    file.abandon();
    return fail(filePath, "incomplete: wrote " + std::to_string(writtenBytes) + " of " +
                              std::to_string(expectedBytes) + " data bytes (" + filePath +
                              " is unchanged)");
  }
  return file.commit();
}

Status writeNpy(const std::string &path, DType dtype,
                const std::vector<int64_t> &shape, const void *data) {
  NpyWriter writer;
  TRAINC_RETURN_IF_ERROR(writer.open(path, dtype, shape));
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  size_t bytes = static_cast<size_t>(count) * dtypeSize(dtype);
  if (bytes && !data)
    return fail(path, "writeNpy: null data");
  TRAINC_RETURN_IF_ERROR(writer.append(data, bytes));
  return writer.close();
}

} // namespace trainc::rt
