//===- Checkpoint.cpp - trainer checkpoints (safetensors) -----------------===//

#include "Checkpoint.h"

#include "FileIO.h"

#include <nlohmann/json.hpp>
#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <sstream>
#include <sys/stat.h>

namespace trainc::rt::detail {
namespace {

using Json = nlohmann::ordered_json;

const char kCrcPrefix[] = "crc32.";

const char *safetensorsDtype(DType type) {
  switch (type) {
  case DType::F32: return "F32";
  case DType::F16: return "F16";
  case DType::BF16: return "BF16";
  case DType::F64: return "F64";
  case DType::I64: return "I64";
  case DType::I32: return "I32";
  case DType::I1: return "BOOL";
  case DType::U8: return "U8";
  }
  return "?";
}

std::string crcText(const std::vector<char> &bytes) {
  uLong crc = crc32_z(0L, Z_NULL, 0);
  crc = crc32_z(crc, reinterpret_cast<const Bytef *>(bytes.data()), bytes.size());
  char text[16];
  std::snprintf(text, sizeof(text), "%08lx", static_cast<unsigned long>(crc));
  return text;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

/// A JSON value from the file for a message: strings and numbers as
/// written, anything else by its kind (never a recursive dump of input).
std::string describe(const nlohmann::json &value) {
  if (value.is_string())
    return "\"" + value.get<std::string>().substr(0, 64) + "\"";
  if (value.is_number())
    return value.dump();
  if (value.is_array()) {
    std::string text = "[";
    for (size_t i = 0; i < value.size() && i < 16; ++i)
      text += (i ? ", " : "") + (value[i].is_number() ? value[i].dump()
                                                       : std::string(value[i].type_name()));
    return text + (value.size() > 16 ? ", ...]" : "]");
  }
  return std::string("a JSON ") + value.type_name();
}

/// Strict decimal integer: an optional '-' and digits, nothing else.
/// `overflow` tells a number beyond int64 from text that is not a number.
bool parseInteger(const std::string &text, int64_t &out, bool &overflow) {
  const char *begin = text.data(), *end = text.data() + text.size();
  overflow = false;
  if (begin == end || (*begin != '-' && (*begin < '0' || *begin > '9')))
    return false;
  auto [ptr, error] = std::from_chars(begin, end, out);
  overflow = error == std::errc::result_out_of_range && ptr == end;
  return error == std::errc() && ptr == end;
}

bool parseUnsigned(const std::string &text, uint64_t &out) {
  const char *begin = text.data(), *end = text.data() + text.size();
  if (begin == end || *begin < '0' || *begin > '9')
    return false;
  auto [ptr, error] = std::from_chars(begin, end, out);
  return error == std::errc() && ptr == end;
}

/// The run's sampler (the same as this run's) and the fields the
/// monitor, the sampler and the selection read back themselves.
Status takeRunState(const std::string &path, const std::map<std::string, std::string> &manifest,
                    const ResumeExpectation &expect, ResumePoint &point) {
  auto sampler = manifest.find("sampler");
  const std::string drawnBy = sampler == manifest.end() ? "uniform" : sampler->second;
  if (drawnBy != expect.sampler)
    return Status::error("the checkpoint " + path + " was written with --sampler=" + drawnBy +
                         "; resume it with the same sampler (this run has --sampler=" +
                         expect.sampler + ")");
  for (const auto &[key, value] : manifest) {
    if (key.rfind("monitor_", 0) == 0)
      point.monitor[key] = value;
    if (key.rfind("sampler", 0) == 0 || key.rfind("select", 0) == 0)
      point.sampler[key] = value;
  }
  return Status();
}

/// Checks every manifest field and returns the position; errors name `path`.
Status checkManifest(const std::string &path, const std::map<std::string, std::string> &manifest,
                     const ResumeExpectation &expect, ResumePoint &point) {
  auto corrupt = [&](const std::string &why) {
    return Status::error("corrupt checkpoint " + path + ": " + why);
  };
  auto text = [&](const char *key, std::string &out) -> Status {
    auto it = manifest.find(key);
    if (it == manifest.end())
      return corrupt("the manifest lacks '" + std::string(key) + "'");
    out = it->second;
    return Status();
  };
  auto integer = [&](const char *key, int64_t &out, int64_t low, int64_t high,
                     const std::string &why) -> Status {
    std::string value;
    TRAINC_RETURN_IF_ERROR(text(key, value));
    bool overflow = false;
    if (!parseInteger(value, out, overflow) && !overflow)
      return corrupt("manifest field '" + std::string(key) + "' is '" + value +
                     "', not a decimal integer");
    if (overflow || out < low || out > high)
      return corrupt("manifest field '" + std::string(key) + "' is " + value + ", outside [" +
                     std::to_string(low) + ", " + std::to_string(high) + "] (" + why + ")");
    return Status();
  };

  std::string format, optimizer, fingerprint, rng, seedText;
  TRAINC_RETURN_IF_ERROR(text("format", format));
  if (format != "trainc checkpoint 1")
    return corrupt("unknown format '" + format + "' (expected 'trainc checkpoint 1')");
  TRAINC_RETURN_IF_ERROR(text("optimizer", optimizer));
  int64_t batchSize = 0;
  TRAINC_RETURN_IF_ERROR(integer("batch_size", batchSize, 1,
                                 std::numeric_limits<int64_t>::max(), "a batch size"));
  if (optimizer != expect.optimizer || batchSize != expect.batchSize)
    return Status::error("the checkpoint " + path + " belongs to another program (optimizer " +
                         optimizer + ", batch size " + std::to_string(batchSize) +
                         "; this program: optimizer " + expect.optimizer + ", batch size " +
                         std::to_string(expect.batchSize) + ")");
  // The model, as imported: speed flags, the target and thread counts do not
  // change it, so any program built from the model resumes its checkpoints.
  // Older checkpoints name only the whole program.
  if (auto model = manifest.find("model_fingerprint");
      model != manifest.end() && expect.modelFingerprint) {
    if (model->second != expect.modelFingerprint && !expect.otherModel)
      return Status::error("the checkpoint " + path + " is of another model: its model "
                           "fingerprint is " + model->second + ", this program's is " +
                           expect.modelFingerprint + " (the graph as imported differs; "
                           "--resume-other-model resumes it anyway where every tensor "
                           "matches)");
  } else if (expect.fingerprint && !expect.otherModel) {
    auto it = manifest.find("fingerprint");
    std::string theirs = it == manifest.end() ? "none" : it->second;
    if (theirs != expect.fingerprint)
      return Status::error("the checkpoint " + path +
                           " belongs to another program: its fingerprint is " + theirs +
                           ", this program's is " + expect.fingerprint);
  }

  TRAINC_RETURN_IF_ERROR(text("seed", seedText));
  uint64_t seed = 0;
  if (!parseUnsigned(seedText, seed))
    return corrupt("manifest field 'seed' is '" + seedText + "', not an unsigned integer");
  if (seed != expect.seed)
    return Status::error("the checkpoint " + path + " was written with --seed " + seedText +
                         "; resume with the same --seed (this run has " +
                         std::to_string(expect.seed) + ")");

  int64_t samples = 0;
  TRAINC_RETURN_IF_ERROR(integer("samples", samples, 1, std::numeric_limits<int64_t>::max(),
                                 "a sample count"));
  if (samples != expect.samples)
    return Status::error("the checkpoint " + path + " was written for " +
                         std::to_string(samples) + " training samples; this run's data has " +
                         std::to_string(expect.samples) + " (resume with the same --data)");
  std::string shuffle;
  TRAINC_RETURN_IF_ERROR(text("shuffle", shuffle));
  if (shuffle != "true" && shuffle != "false")
    return corrupt("manifest field 'shuffle' is '" + shuffle + "', not true or false");
  if ((shuffle == "true") != expect.shuffle)
    return Status::error("the checkpoint " + path + " was written " +
                         (shuffle == "true" ? "with shuffled epochs; resume without --no-shuffle"
                                            : "with --no-shuffle; resume with it"));

  int64_t accum = 1;
  if (manifest.count("grad_accum"))
    TRAINC_RETURN_IF_ERROR(integer("grad_accum", accum, 1, std::numeric_limits<int64_t>::max(),
                                   "a number of batches per step"));
  if (accum != expect.gradAccum)
    return Status::error("the checkpoint " + path + " was written with --grad-accum " +
                         std::to_string(accum) + "; resume with the same --grad-accum (this "
                         "run has " + std::to_string(expect.gradAccum) + ")");
  // Steps per epoch: one per group of `accum` batches, the last group short.
  const int64_t batches = expect.batchesPerEpoch, total = expect.totalSteps;
  const int64_t perEpoch = (batches + accum - 1) / accum;
  TRAINC_RETURN_IF_ERROR(integer("step", point.step, 0, std::numeric_limits<int64_t>::max(),
                                 "a step count"));
  if (point.step > total)
    return Status::error("the checkpoint " + path + " is at step " +
                         std::to_string(point.step) + ", already past the " +
                         std::to_string(total) + " steps this run asks for (--steps or " +
                         "--epochs): to go on training, ask for more than " +
                         std::to_string(point.step) + " steps");
  TRAINC_RETURN_IF_ERROR(integer("batch", point.batch, 0, batches,
                                 "the data has " + std::to_string(batches) +
                                     " batches per epoch"));
  TRAINC_RETURN_IF_ERROR(integer("epoch", point.epoch, 1, total / perEpoch + 1,
                                 "this run has " + std::to_string(total) + " steps of " +
                                     std::to_string(perEpoch) + " per epoch"));
  // A checkpoint follows a group's last batch. Epoch e starts at step
  // (e - 1) * perEpoch; no overflow, as epoch is at most total / perEpoch + 1.
  if ((point.batch % accum != 0 && point.batch != batches) ||
      (point.epoch - 1) * perEpoch + (point.batch + accum - 1) / accum != point.step)
    return corrupt("step " + std::to_string(point.step) + " is not batch " +
                   std::to_string(point.batch) + " of epoch " + std::to_string(point.epoch) +
                   " with " + std::to_string(batches) + " batches per epoch" +
                   (accum > 1 ? " in groups of " + std::to_string(accum) : std::string()) +
                   " (a checkpoint of other data?)");

  // Averaged weights: the same averaging, and no more updates than steps.
  auto averaging = manifest.find("averaging");
  const std::string theirs = averaging == manifest.end() ? "none" : averaging->second;
  if (theirs != expect.averaging)
    return Status::error("the checkpoint " + path + " was written " +
                         (theirs == "none" ? std::string("without averaged weights")
                                           : "with " + theirs) +
                         "; resume it with the same averaging flags (this run has " +
                         (expect.averaging == "none" ? std::string("none") : expect.averaging) +
                         ")");
  if (theirs != "none")
    TRAINC_RETURN_IF_ERROR(integer("averaged_updates", point.averagedUpdates, 0, point.step,
                                   "the updates of the average, at most one per step"));
  TRAINC_RETURN_IF_ERROR(takeRunState(path, manifest, expect, point));
  TRAINC_RETURN_IF_ERROR(text("rng", point.rng));
  std::mt19937_64 engine;
  std::istringstream state(point.rng);
  if (!(state >> engine) || !(state >> std::ws).eof())
    return corrupt("manifest field 'rng' is not an RNG state");
  return Status();
}

} // namespace

Status writeCheckpoint(const std::string &dir, const std::vector<CheckpointTensor> &tensors,
                       const std::map<std::string, std::string> &manifest) {
  // JSON text is UTF-8: the model name (a file name, any bytes) is recorded
  // with invalid bytes replaced; it is for people, never compared.
  auto forJson = [](const std::string &key, const std::string &value) -> Json {
    if (key != "model")
      return value;
    return Json::parse(Json(value).dump(-1, ' ', false, Json::error_handler_t::replace));
  };
  Json metadata = Json::object();
  for (const auto &[key, value] : manifest)
    metadata[key] = forJson(key, value);
  for (const CheckpointTensor &t : tensors)
    metadata[kCrcPrefix + t.name] = crcText(t.bytes);
  Json header = Json::object();
  header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const CheckpointTensor &t : tensors) {
    header[t.name] = {{"dtype", safetensorsDtype(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception &) {
    return Status::error("checkpoint: a tensor name is not valid UTF-8, which the JSON header of "
                         "a safetensors file cannot hold");
  }
  text.append((8 - text.size() % 8) % 8, ' '); // data starts 8-byte aligned
  char length[8];
  uint64_t size = text.size();
  std::memcpy(length, &size, 8);

  const std::string path = dir + "/checkpoint.safetensors";
  AtomicFile file;
  TRAINC_RETURN_IF_ERROR(file.open(path, "checkpoint"));
  TRAINC_RETURN_IF_ERROR(file.write(length, 8));
  TRAINC_RETURN_IF_ERROR(file.write(text.data(), text.size()));
  for (const CheckpointTensor &t : tensors)
    TRAINC_RETURN_IF_ERROR(file.write(t.bytes.data(), t.bytes.size()));
  TRAINC_RETURN_IF_ERROR(file.commit());

  Json json = Json::object();
  for (const auto &[key, value] : manifest)
    json[key] = forJson(key, value);
  std::string readable = json.dump(2) + "\n";
  return writeFileAtomically(dir + "/checkpoint.json", "checkpoint", readable.data(),
                             readable.size());
}

Status readCheckpoint(const std::string &dir, const ResumeExpectation &expect,
                      std::vector<CheckpointTensor> &tensors, ResumePoint &point) {
  const std::string path = dir + "/checkpoint.safetensors";
  auto corrupt = [&](const std::string &why) {
    return Status::error("corrupt checkpoint " + path + ": " + why);
  };
  // The file can hold the tensors, their header entries and the manifest
  // (the RNG state is about 7 KB); anything larger is refused unread.
  uint64_t dataBytes = 0, headerLimit = 64 * 1024;
  for (const CheckpointTensor &t : tensors) {
    uint64_t bytes = dtypeSize(t.dtype);
    for (int64_t d : t.shape)
      bytes *= static_cast<uint64_t>(d);
    dataBytes += bytes;
    headerLimit += 2 * t.name.size() + 512;
  }
  struct stat info;
  if (::lstat(path.c_str(), &info) != 0 && errno == ENOENT)
    return Status::error("no checkpoint to resume from: cannot open " + path);
  FileHandle file;
  uint64_t size = 0;
  Status opened = openRegularFile(path, "checkpoint", file, size, 8 + headerLimit + dataBytes);
  if (!opened.ok())
    return Status::error("cannot resume: " + opened.message());
  uint64_t length = 0;
  if (size < 8)
    return corrupt("shorter than its 8-byte header length");
  TRAINC_RETURN_IF_ERROR(readAt(file, path, 0, &length, 8));
  if (length > headerLimit || length > size - 8)
    return corrupt("header length " + std::to_string(length) + " exceeds the file or the " +
                   std::to_string(headerLimit) + " bytes a header of this program can have");
  std::string text(length, '\0');
  TRAINC_RETURN_IF_ERROR(readAt(file, path, 8, text.data(), length));
  const uint64_t dataStart = 8 + length;

  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception &e) {
    return corrupt(std::string("unreadable header: ") + e.what());
  }
  if (!header.is_object())
    return corrupt("the header is not a JSON object");
  std::map<std::string, std::string> crcs, manifest;
  if (auto it = header.find("__metadata__"); it != header.end()) {
    if (!it->is_object())
      return corrupt("__metadata__ is not an object");
    for (const auto &[key, value] : it->items()) {
      if (!value.is_string())
        return corrupt("manifest field '" + key + "' is not a string");
      if (key.rfind(kCrcPrefix, 0) == 0)
        crcs[key.substr(sizeof(kCrcPrefix) - 1)] = value.get<std::string>();
      else
        manifest[key] = value.get<std::string>();
    }
  }
  TRAINC_RETURN_IF_ERROR(checkManifest(path, manifest, expect, point));
  // A tensor of the program that the file lacks (a checkpoint of a trainer
  // with other optimizer state) is named, before the sizes disagree.
  for (const CheckpointTensor &t : tensors)
    if (header.is_object() && !header.contains(t.name))
      return Status::error("the checkpoint " + path + " has no tensor " + t.name +
                           ": it was written by a trainer without it (another optimizer or "
                           "an earlier trainc); resume it with the trainer that wrote it");
  if (size - 8 - length != dataBytes)
    return corrupt("holds " + std::to_string(size - 8 - length) +
                   " bytes of tensor data, the program's tensors are " +
                   std::to_string(dataBytes) + " bytes");
  std::set<std::string> expected;
  for (const CheckpointTensor &t : tensors)
    expected.insert(t.name);
  for (const auto &[key, value] : header.items())
    if (key != "__metadata__" && !expected.count(key))
      return corrupt("holds a tensor '" + key + "' that this program does not have");

  // Byte ranges of the tensors read, to check that they tile the data.
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (CheckpointTensor &t : tensors) {
    const nlohmann::json &entry = header[t.name]; // present: checked above
    auto bad = [&](const std::string &why) { return corrupt("tensor " + t.name + ": " + why); };
    if (!entry.is_object() || entry.size() != 3 || !entry.contains("dtype") ||
        !entry.contains("shape") || !entry.contains("data_offsets"))
      return bad("needs exactly dtype, shape and data_offsets");
    const nlohmann::json &dtype = entry["dtype"], &shape = entry["shape"],
                         &offsets = entry["data_offsets"];
    if (!dtype.is_string() || dtype.get<std::string>() != safetensorsDtype(t.dtype))
      return Status::error("checkpoint tensor " + t.name + " in " + path + " has dtype " +
                           describe(dtype) + ", the program's is " + safetensorsDtype(t.dtype));
    // Dimensions are compared as unsigned JSON numbers (a negative or
    // fractional one never matches), so nothing is multiplied.
    bool shapeOk = shape.is_array() && shape.size() == t.shape.size();
    for (size_t d = 0; shapeOk && d < t.shape.size(); ++d)
      shapeOk = shape[d].is_number_unsigned() &&
                shape[d].get<uint64_t>() == static_cast<uint64_t>(t.shape[d]);
    if (!shapeOk)
      return Status::error("checkpoint tensor " + t.name + " in " + path + " has shape " +
                           describe(shape) + ", the program's is " + shapeString(t.shape));
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned())
      return bad("data_offsets must be two non-negative integers");
    const uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
    uint64_t bytes = dtypeSize(t.dtype);
    for (int64_t d : t.shape)
      bytes *= static_cast<uint64_t>(d);
    if (end < begin || end > dataBytes || end - begin != bytes)
      return bad("data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                 "] do not hold its " + std::to_string(bytes) + " bytes within the " +
                 std::to_string(dataBytes) + " bytes of data");
    ranges.push_back({begin, end});
    t.bytes.assign(bytes, '\0');
    TRAINC_RETURN_IF_ERROR(readAt(file, path, dataStart + begin, t.bytes.data(), bytes));
    auto crc = crcs.find(t.name);
    if (crc == crcs.end())
      return bad("has no crc32 in the manifest");
    if (crc->second != crcText(t.bytes))
      return bad("crc32 " + crcText(t.bytes) + " of its bytes does not match the recorded " +
                 crc->second + " (the file is damaged)");
    if (int64_t at = firstNonFinite(t.dtype, t.bytes.data(),
                                    static_cast<int64_t>(t.bytes.size() / dtypeSize(t.dtype)));
        at >= 0)
      return Status::error("checkpoint " + path + ": tensor " + t.name +
                           " holds NaN or infinity (element " + std::to_string(at) + ")");
  }
  // As safetensors requires: the ranges cover the data exactly, without
  // overlaps (two tensors sharing bytes) or holes.
  std::sort(ranges.begin(), ranges.end());
  uint64_t covered = 0;
  for (const auto &[begin, end] : ranges) {
    if (begin != covered)
      return corrupt("tensor data_offsets overlap or leave a hole at byte " +
                     std::to_string(std::min(begin, covered)));
    covered = end;
  }
  if (covered != dataBytes)
    return corrupt("tensor data_offsets leave bytes " + std::to_string(covered) + " to " +
                   std::to_string(dataBytes) + " unused");
  return Status();
}

} // namespace trainc::rt::detail
