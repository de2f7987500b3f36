//===- ModelLoader.cpp - reading ONNX files safely ------------------------===//

#include "frontend/ModelLoader.h"

#include "ir/ShapeLogic.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <onnx/defs/parser.h>

#include <cerrno>
#include <cstring>
#include <exception>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace trainc::frontend;
using llvm::createStringError;
using llvm::inconvertibleErrorCode;

namespace {

llvm::Error fail(const llvm::Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

/// A file opened for reading, closed on destruction.
struct ReadFile {
  int fd = -1;
  uint64_t size = 0;
  ReadFile() = default;
  ReadFile(const ReadFile &) = delete;
  ReadFile &operator=(const ReadFile &) = delete;
  ReadFile(ReadFile &&other) : fd(other.fd), size(other.size) { other.fd = -1; }
  ~ReadFile() {
    if (fd >= 0)
      ::close(fd);
  }
};

const char *fileKind(mode_t mode) {
  return S_ISDIR(mode)                    ? "a folder"
         : S_ISFIFO(mode)                 ? "a FIFO (named pipe)"
         : S_ISCHR(mode) || S_ISBLK(mode) ? "a device"
         : S_ISSOCK(mode)                 ? "a socket"
                                          : "not a regular file";
}

/// Opens `path` without blocking and refuses anything but a regular file: a
/// FIFO would block the open or the read forever, a device never end.
/// `label` names the file in messages (the model's path, "external data
/// 'w.bin'").
llvm::Expected<ReadFile> openRegularFile(const std::string &path, const llvm::Twine &label) {
  ReadFile file;
  // stat() first: opening a device can have effects of its own (a watchdog,
  // a tape), so only a regular file is ever opened; fstat() below catches a
  // swap of the name in between.
  struct stat before;
  if (::stat(path.c_str(), &before) == 0 && !S_ISREG(before.st_mode))
    return fail(label + " is " + fileKind(before.st_mode) + ", not a regular file");
  do
    file.fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  while (file.fd < 0 && errno == EINTR);
  if (file.fd < 0)
    return fail(label + ": " + std::strerror(errno));
  struct stat st;
  if (::fstat(file.fd, &st) != 0)
    return fail(label + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return fail(label + " is " + fileKind(st.st_mode) + ", not a regular file");
  file.size = static_cast<uint64_t>(st.st_size);
  return std::move(file);
}

/// Reads `bytes` bytes at `offset` of `file` (pread; a short read means the
/// file shrank under us).
llvm::Error readAt(const ReadFile &file, const llvm::Twine &label, uint64_t offset,
                   size_t bytes, char *out) {
  size_t done = 0;
  while (done < bytes) {
    ssize_t n = ::pread(file.fd, out + done, bytes - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return fail(label + ": " + std::strerror(errno));
    if (n == 0)
      return fail(label + ": truncated while reading (" + llvm::Twine(done) + " of " +
                  llvm::Twine(bytes) + " bytes)");
    done += static_cast<size_t>(n);
  }
  return llvm::Error::success();
}

bool looksLikeText(llvm::StringRef contents) {
  llvm::StringRef trimmed = contents.ltrim();
  return trimmed.starts_with("<") || trimmed.starts_with("#");
}

/// Resolves an external-data location against the model folder, refusing
/// anything that could leave it: absolute paths, `..` components, and
/// symlinks that resolve outside.
llvm::Expected<std::string> resolveExternalPath(llvm::StringRef modelDir,
                                                llvm::StringRef location) {
  if (modelDir.empty())
    return fail("external data '" + location +
                "' is not allowed for a model read from memory");
  if (location.empty() || llvm::sys::path::is_absolute(location) ||
      llvm::sys::path::is_absolute(location, llvm::sys::path::Style::windows) ||
      location.contains('\\'))
    return fail("external data path '" + location +
                "' must be relative to the model's folder");
  for (llvm::StringRef part : llvm::make_range(llvm::sys::path::begin(location),
                                               llvm::sys::path::end(location)))
    if (part == "..")
      return fail("external data path '" + location +
                  "' leaves the model's folder");
  llvm::SmallString<256> dirReal, fileReal, joined(modelDir);
  llvm::sys::path::append(joined, location);
  if (llvm::sys::fs::real_path(modelDir, dirReal) ||
      llvm::sys::fs::real_path(joined, fileReal))
    return fail("external data file '" + location + "' not found next to the model");
  llvm::StringRef dir = dirReal.str(), file = fileReal.str();
  if (!file.starts_with(dir) || file.size() <= dir.size() ||
      file[dir.size()] != '/')
    return fail("external data path '" + location +
                "' resolves outside the model's folder (symlink)");
  return std::string(file);
}

llvm::Error readExternal(const onnx::TensorProto &proto, llvm::StringRef modelDir,
                         size_t expectedBytes, std::vector<char> &out) {
  std::string location;
  uint64_t offset = 0, length = expectedBytes;
  bool hasLength = false;
  for (const auto &entry : proto.external_data()) {
    if (entry.key() == "location") {
      location = entry.value();
    } else if (entry.key() == "offset" || entry.key() == "length") {
      uint64_t v;
      if (llvm::StringRef(entry.value()).getAsInteger(10, v))
        return fail("external data " + entry.key() + " '" + entry.value() +
                    "' is not a number");
      (entry.key() == "offset" ? offset : length) = v;
      hasLength |= entry.key() == "length";
    }
  }
  if (hasLength && length != expectedBytes)
    return fail("external data length " + llvm::Twine(length) + " does not match the " +
                llvm::Twine(expectedBytes) + " bytes its shape needs");
  auto path = resolveExternalPath(modelDir, location);
  if (!path)
    return path.takeError();
  std::string label = "external data '" + location + "'";
  auto file = openRegularFile(*path, label);
  if (!file)
    return file.takeError();
  // Only the bytes the tensor needs are read, after the size is known to
  // hold them.
  uint64_t size = file->size;
  if (offset > size || expectedBytes > size - offset)
    return fail("external data '" + location + "' holds " + llvm::Twine(size) +
                " bytes; " + llvm::Twine(expectedBytes) + " needed at offset " +
                llvm::Twine(offset));
  out.resize(expectedBytes);
  return readAt(*file, label, offset, expectedBytes, out.data());
}

} // namespace

llvm::Error trainc::frontend::parseModel(llvm::StringRef contents,
                                         llvm::StringRef name, bool isText,
                                         onnx::ModelProto &model) {
  if (!isText) {
    if (contents.size() > static_cast<size_t>(INT32_MAX))
      return fail(name + ": larger than 2 GiB; store the weights as external data");
    if (!model.ParseFromArray(contents.data(), static_cast<int>(contents.size())))
      return fail(name + ": not a valid ONNX protobuf (ModelProto)");
    return llvm::Error::success();
  }
  std::string text(contents);
  try {
    auto status = onnx::OnnxParser::Parse(model, text.c_str());
    if (!status.IsOK())
      return fail(name + ": ONNX text format: " + status.ErrorMessage());
  } catch (const std::exception &e) {
    return fail(name + ": ONNX text format: " + e.what());
  }
  return llvm::Error::success();
}

llvm::Error trainc::frontend::loadModelFile(llvm::StringRef path,
                                            onnx::ModelProto &model) {
  auto file = openRegularFile(path.str(), path);
  if (!file)
    return file.takeError();
  // Protobuf reads at most 2 GiB; a larger model keeps its weights outside.
  if (file->size > static_cast<uint64_t>(INT32_MAX))
    return fail(path + ": larger than 2 GiB; store the weights as external data");
  std::string buffer(file->size, '\0');
  if (llvm::Error e = readAt(*file, path, 0, buffer.size(), buffer.data()))
    return e;
  llvm::StringRef contents = buffer;
  llvm::StringRef ext = llvm::sys::path::extension(path);
  if (ext == ".onnxtxt" || ext == ".txt")
    return parseModel(contents, path, /*isText=*/true, model);
  llvm::Error binary = parseModel(contents, path, /*isText=*/false, model);
  if (!binary || !looksLikeText(contents))
    return binary;
  llvm::consumeError(std::move(binary));
  model.Clear();
  return parseModel(contents, path, /*isText=*/true, model);
}

llvm::Expected<int64_t> trainc::frontend::defaultOpset(const onnx::ModelProto &model) {
  std::optional<int64_t> version;
  for (const auto &opset : model.opset_import())
    if (opset.domain().empty() || opset.domain() == "ai.onnx")
      version = opset.version();
  if (!version)
    return fail("the model imports no default-domain (ai.onnx) opset");
  if (*version < kMinOpset || *version > kMaxOpset)
    return fail("opset " + llvm::Twine(*version) + " is not supported; trainc reads "
                "opsets " + llvm::Twine(kMinOpset) + " to " + llvm::Twine(kMaxOpset) +
                " (convert older models with onnx.version_converter)");
  return *version;
}

llvm::Expected<DType> trainc::frontend::convertDataType(int32_t onnxType) {
  using T = onnx::TensorProto;
  switch (onnxType) {
  case T::FLOAT: return DType::F32;
  case T::FLOAT16: return DType::F16;
  case T::BFLOAT16: return DType::BF16;
  case T::DOUBLE: return DType::F64;
  case T::INT64: return DType::I64;
  case T::INT32: return DType::I32;
  case T::BOOL: return DType::I1;
  default: break;
  }
  std::string name = T::DataType_IsValid(onnxType)
                         ? T::DataType_Name(static_cast<T::DataType>(onnxType))
                         : "#" + std::to_string(onnxType);
  return fail("element type " + name + " is not supported (float, float16, "
              "bfloat16, double, int64, int32 and bool are)");
}

llvm::Error trainc::frontend::checkDims(llvm::ArrayRef<int64_t> dims) {
  for (int64_t d : dims)
    if (d < 0)
      return fail("negative dimension " + llvm::Twine(d));
  auto n = trainc::shape::numElements(dims);
  if (!n || *n > kMaxTensorElements)
    return fail("shape " + trainc::shape::format(dims) + " has more than 2^31 elements");
  return llvm::Error::success();
}

llvm::Expected<Tensor> trainc::frontend::readTensor(const onnx::TensorProto &proto,
                                                    llvm::StringRef modelDir) {
  auto dtype = convertDataType(proto.data_type());
  if (!dtype)
    return dtype.takeError();
  llvm::SmallVector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  if (llvm::Error e = checkDims(dims))
    return std::move(e);
  if (proto.has_segment())
    return fail("segmented tensors are not supported");
  int64_t n = *trainc::shape::numElements(dims);
  size_t bytes = static_cast<size_t>(n) * dtypeSize(*dtype);

  auto countMismatch = [&](int64_t have) {
    return fail("holds " + llvm::Twine(have) + " values but its shape [" +
                trainc::shape::format(dims) + "] needs " + llvm::Twine(n));
  };

  // One value field, as the ONNX checker requires: raw_data or external data
  // next to a typed *_data field is ambiguous, so refuse it.
  const std::pair<bool, const char *> present[] = {
      {proto.data_location() == onnx::TensorProto::EXTERNAL, "external data"},
      {proto.has_raw_data(), "raw_data"},
      {proto.float_data_size() > 0, "float_data"},
      {proto.double_data_size() > 0, "double_data"},
      {proto.int32_data_size() > 0, "int32_data"},
      {proto.int64_data_size() > 0, "int64_data"},
      {proto.uint64_data_size() > 0, "uint64_data"},
      {proto.string_data_size() > 0, "string_data"}};
  llvm::SmallVector<const char *> fields;
  for (const auto &[has, name] : present)
    if (has)
      fields.push_back(name);
  if (fields.size() > 1)
    return fail(llvm::Twine("has both ") + fields[0] + " and " + fields[1] +
                "; a tensor holds its values in one field only");
  const char *typedField = *dtype == DType::F32   ? "float_data"
                           : *dtype == DType::F64 ? "double_data"
                           : *dtype == DType::I64 ? "int64_data"
                                                  : "int32_data";
  if (fields.size() == 1 && llvm::StringRef(fields[0]).ends_with("_data") &&
      llvm::StringRef(fields[0]) != "raw_data" && llvm::StringRef(fields[0]) != typedField)
    return fail(llvm::Twine("holds ") + dtypeName(*dtype) + " values in " + fields[0] +
                " (they belong in " + typedField + " or raw_data)");

  // Sizes are checked before anything is allocated: a tiny file can declare
  // a huge shape.
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    std::vector<char> data;
    if (llvm::Error e = readExternal(proto, modelDir, bytes, data))
      return std::move(e);
    Tensor tensor(*dtype, dims);
    std::memcpy(tensor.mutableBytes(), data.data(), bytes);
    return tensor;
  }
  if (proto.has_raw_data()) {
    const std::string &raw = proto.raw_data();
    if (raw.size() != bytes)
      return fail("raw_data has " + llvm::Twine(raw.size()) + " bytes but shape [" +
                  trainc::shape::format(dims) + "] of " + dtypeName(*dtype) +
                  " needs " + llvm::Twine(bytes));
    Tensor tensor(*dtype, dims);
    std::memcpy(tensor.mutableBytes(), raw.data(), bytes);
    return tensor;
  }
  int64_t have = 0;
  switch (*dtype) {
  case DType::F32: have = proto.float_data_size(); break;
  case DType::F64: have = proto.double_data_size(); break;
  case DType::I64: have = proto.int64_data_size(); break;
  default: have = proto.int32_data_size(); break;
  }
  if (have != n)
    return countMismatch(have);
  Tensor tensor(*dtype, dims);
  switch (*dtype) {
  case DType::F32:
    std::memcpy(tensor.mutableBytes(), proto.float_data().data(), bytes);
    break;
  case DType::F64:
    std::memcpy(tensor.mutableBytes(), proto.double_data().data(), bytes);
    break;
  case DType::I64:
    std::memcpy(tensor.mutableBytes(), proto.int64_data().data(), bytes);
    break;
  case DType::I32:
  case DType::I1:
  case DType::F16:
  case DType::BF16:
    // int32_data carries these types, one value (or 16-bit pattern) each.
    for (int64_t i = 0; i < n; ++i) {
      int32_t v = proto.int32_data(static_cast<int>(i));
      char *p = tensor.mutableBytes() + i * dtypeSize(*dtype);
      if (*dtype == DType::I32)
        std::memcpy(p, &v, 4);
      else if (*dtype == DType::I1)
        *p = v != 0;
      else {
        uint16_t bits = static_cast<uint16_t>(v);
        std::memcpy(p, &bits, 2);
      }
    }
    break;
  }
  return tensor;
}
