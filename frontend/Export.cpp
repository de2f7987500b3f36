//===- Export.cpp - the ONNX template a trainer exports into --------------===//
//
// The trainer has no protobuf library, so trainc hands it the original model
// serialized with every parameter stored as raw_data, plus the byte range of
// each parameter's raw_data in that serialization. Exporting is then copying
// the template and overwriting those ranges with the trained values: the
// graph, names, opsets and metadata stay exactly as the user wrote them.
//
// The ranges are found by serializing once with a distinct marker in each
// parameter's raw_data, checking every marker occurs exactly once (reseeding
// the markers otherwise), and writing the real initial values back.
//
//===----------------------------------------------------------------------===//

#include "frontend/Frontend.h"
#include "frontend/ModelLoader.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Path.h"

#include <cstring>
#include <random>

using namespace trainc::frontend;

llvm::Expected<ExportTemplate>
trainc::frontend::buildExportTemplate(llvm::StringRef path,
                                      llvm::ArrayRef<std::string> paramNames) {
  onnx::ModelProto model;
  if (llvm::Error e = loadModelFile(path, model))
    return std::move(e);
  llvm::SmallString<256> dir(path);
  llvm::sys::path::remove_filename(dir);
  if (dir.empty())
    dir = ".";

  llvm::StringMap<unsigned> wanted;
  for (unsigned i = 0; i < paramNames.size(); ++i)
    wanted[paramNames[i]] = i;
  std::vector<onnx::TensorProto *> protos(paramNames.size(), nullptr);
  std::vector<std::string> values(paramNames.size());
  for (onnx::TensorProto &init : *model.mutable_graph()->mutable_initializer()) {
    auto it = wanted.find(init.name());
    if (it == wanted.end())
      continue;
    auto tensor = readTensor(init, dir);
    if (!tensor)
      return tensor.takeError();
    // Inline raw data only: external data and typed fields are replaced.
    values[it->second].assign(tensor->bytes().begin(), tensor->bytes().end());
    init.clear_float_data();
    init.clear_double_data();
    init.clear_int32_data();
    init.clear_int64_data();
    init.clear_external_data();
    init.set_data_location(onnx::TensorProto::DEFAULT);
    protos[it->second] = &init;
  }
  for (unsigned i = 0; i < paramNames.size(); ++i)
    if (!protos[i])
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "parameter '" + paramNames[i] +
                                         "' is not an initializer of the model");

  for (unsigned attempt = 0; attempt < 16; ++attempt) {
    std::mt19937_64 rng(0x7472616e63ULL + attempt);
    std::vector<std::string> markers(paramNames.size());
    for (unsigned i = 0; i < paramNames.size(); ++i) {
      markers[i].resize(values[i].size());
      for (char &c : markers[i])
        c = static_cast<char>(rng());
      protos[i]->set_raw_data(markers[i]);
    }
    std::string bytes;
    if (!model.SerializeToString(&bytes))
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "cannot serialize the model for export");
    ExportTemplate result;
    bool unique = true;
    for (unsigned i = 0; i < paramNames.size() && unique; ++i) {
      size_t at = bytes.find(markers[i]);
      unique = !markers[i].empty() && at != std::string::npos &&
               bytes.find(markers[i], at + 1) == std::string::npos;
      result.regions.emplace_back(at, markers[i].size());
    }
    if (!unique)
      continue;
    for (unsigned i = 0; i < paramNames.size(); ++i)
      std::memcpy(&bytes[result.regions[i].first], values[i].data(), values[i].size());
    result.bytes = std::move(bytes);
    return result;
  }
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "cannot locate the parameters in the serialized model");
}
