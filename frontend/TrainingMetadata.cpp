//===- TrainingMetadata.cpp - trainc.* metadata of a model ----------------===//

#include "frontend/TrainingMetadata.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <string>

using namespace trainc::frontend;
namespace json = llvm::json;

namespace {

llvm::Error metadataError(llvm::StringRef key, const llvm::Twine &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "metadata '" + key + "' " + what);
}

/// The deepest nesting of lists and objects in `text` (brackets inside
/// strings do not count).
size_t nestingDepth(llvm::StringRef text) {
  size_t depth = 0, deepest = 0;
  bool inString = false, escaped = false;
  for (char c : text) {
    if (inString) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

/// Parses `text`; the JSON parser's message gives the line, column and byte
/// of the fault, never the text itself. LLVM's parser recurses once per
/// level, so nesting deeper than any valid entry has is refused before it.
llvm::Expected<json::Value> parseJson(llvm::StringRef key,
                                      llvm::StringRef text) {
  constexpr size_t kMaxDepth = 8;
  if (nestingDepth(text) > kMaxDepth)
    return metadataError(key, "nests lists or objects more than " +
                                  llvm::Twine(kMaxDepth) + " levels deep");
  llvm::Expected<json::Value> value = json::parse(text);
  if (!value)
    return metadataError(key, "is not valid JSON (" +
                                  llvm::toString(value.takeError()) + ")");
  return value;
}

llvm::Error readTrainable(llvm::StringRef text, TrainingMetadata &meta) {
  llvm::Expected<json::Value> value = parseJson(kTrainableKey, text);
  if (!value)
    return value.takeError();
  const json::Array *names = value->getAsArray();
  if (!names)
    return metadataError(kTrainableKey,
                         "must be a JSON list of initializer names");
  meta.trainable.emplace();
  for (size_t i = 0; i < names->size(); ++i) {
    std::optional<llvm::StringRef> name = (*names)[i].getAsString();
    if (!name)
      return metadataError(kTrainableKey, "has an entry (" + llvm::Twine(i) +
                                              ") that is not a string");
    meta.trainable->insert(*name);
  }
  return llvm::Error::success();
}

llvm::Error readPaddingIndex(llvm::StringRef text, TrainingMetadata &meta) {
  llvm::Expected<json::Value> value = parseJson(kPaddingIndexKey, text);
  if (!value)
    return value.takeError();
  const json::Object *rows = value->getAsObject();
  if (!rows)
    return metadataError(
        kPaddingIndexKey,
        "must be a JSON object {initializer name: padding index}");
  for (const auto &[name, row] : *rows) {
    std::optional<int64_t> index = row.getAsInteger();
    if (!index || *index < 0)
      return metadataError(kPaddingIndexKey,
                           "gives '" + name.str() +
                               "' a padding index that is not a "
                               "non-negative integer");
    meta.paddingIndex[name.str()] = *index;
  }
  return llvm::Error::success();
}

} // namespace

llvm::Expected<TrainingMetadata>
trainc::frontend::readTrainingMetadata(const onnx::ModelProto &model) {
  TrainingMetadata meta;
  bool seenTrainable = false, seenPadding = false;
  for (const onnx::StringStringEntryProto &entry : model.metadata_props()) {
    bool isTrainable = entry.key() == kTrainableKey;
    bool isPadding = entry.key() == kPaddingIndexKey;
    if (!isTrainable && !isPadding)
      continue;
    bool &seen = isTrainable ? seenTrainable : seenPadding;
    if (seen)
      return metadataError(entry.key(), "appears twice");
    seen = true;
    if (llvm::Error e = isTrainable ? readTrainable(entry.value(), meta)
                                    : readPaddingIndex(entry.value(), meta))
      return std::move(e);
  }
  return meta;
}

llvm::Error trainc::frontend::checkMetadataNames(
    const TrainingMetadata &meta,
    const llvm::StringMap<std::vector<int64_t>> &floatShapes) {
  auto notFloat = [](llvm::StringRef key, llvm::StringRef name) {
    return metadataError(key, "names '" + name +
                                  "', which is not a float initializer");
  };
  if (meta.trainable)
    for (const auto &entry : *meta.trainable)
      if (!floatShapes.contains(entry.getKey()))
        return notFloat(kTrainableKey, entry.getKey());
  for (const auto &entry : meta.paddingIndex) {
    auto it = floatShapes.find(entry.getKey());
    if (it == floatShapes.end())
      return notFloat(kPaddingIndexKey, entry.getKey());
    const std::vector<int64_t> &shape = it->second;
    if (shape.empty() || entry.getValue() >= shape[0]) {
      std::string rows =
          shape.empty() ? "a scalar" : std::to_string(shape[0]) + " rows";
      return metadataError(kPaddingIndexKey,
                           "gives '" + entry.getKey() + "' the padding index " +
                               llvm::Twine(entry.getValue()) +
                               ", which is not a row of its first axis (" +
                               rows + ")");
    }
  }
  return llvm::Error::success();
}
