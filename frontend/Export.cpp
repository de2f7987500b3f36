//===- Export.cpp - the ONNX template a trainer exports into --------------===//
//
// The trainer has no protobuf library, so trainc hands it the model to export
// already serialized, cut at the parameters: the bytes between parameters
// (the segments) and, in file order, which parameter's data goes between
// them. Exporting is writing segment, trained parameter, segment, ...: the
// parameter data is not stored twice in the trainer, since the trained values
// it already holds are the raw_data of the export.
//
// The export is the inference model (PyTorch's model.eval()), not the
// training graph a TrainingMode.TRAINING export gives: every
// BatchNormalization normalizes with its running statistics (the initializers
// the trainer updates) and every Dropout passes its input through. The rest
// of the graph, the names, opsets and metadata stay as the user wrote them.
//
// The parameter ranges are found by serializing once with a distinct marker in
// each parameter's raw_data and checking every marker occurs exactly once
// (reseeding the markers otherwise).
//
//===----------------------------------------------------------------------===//

#include "frontend/Frontend.h"
#include "frontend/ModelLoader.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <random>

using namespace trainc::frontend;

static llvm::Error exportError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message.str());
}

/// The node's name as the importer reports it.
static std::string nodeName(const onnx::NodeProto &node, int index) {
  return node.name().empty() ? node.op_type() + "_" + std::to_string(index) : node.name();
}

/// Drops trailing empty (omitted optional) names.
static void trimOmitted(google::protobuf::RepeatedPtrField<std::string> &names) {
  while (!names.empty() && names.Get(names.size() - 1).empty())
    names.RemoveLast();
}

/// Rewrites the training graph into the inference graph:
///
/// - BatchNormalization: the training_mode attribute (opset 14 and later) is
///   removed, and only output Y is kept. At opset 13 (BatchNormalization-9)
///   there is no attribute: the node is in training mode when it has the
///   running-statistics outputs, which PyTorch emits (Y, running mean and
///   var, saved mean and var), so dropping them is the whole change. A model
///   that reads one of those outputs (another node or a graph output) has no
///   inference form and is refused, naming the node.
/// - Dropout: the training_mode input is removed (its default is false).
///   The node stays a Dropout rather than becoming an Identity: in inference
///   mode it is the identity by the spec, and the exported model keeps the
///   node, its name and its ratio as the user wrote them (fine-tuning the
///   export trains it again). An unused mask output is dropped; a used one
///   stays, and in inference mode is all true, as trainc's forward pass
///   computes it (the importer refuses the mask of a training-mode Dropout).
///   A Constant that fed only removed training_mode inputs is removed too.
static llvm::Error toInferenceGraph(onnx::GraphProto &graph) {
  // Who reads each value, for the errors.
  llvm::StringMap<std::string> reader;
  for (int i = 0; i < graph.node_size(); ++i)
    for (const std::string &in : graph.node(i).input())
      if (!in.empty())
        reader.try_emplace(in, "is read by node '" + nodeName(graph.node(i), i) + "'");
  for (const onnx::ValueInfoProto &out : graph.output())
    reader.try_emplace(out.name(), "is a graph output");

  llvm::StringSet<> removed, trainingFlags;
  for (int i = 0; i < graph.node_size(); ++i) {
    onnx::NodeProto &node = *graph.mutable_node(i);
    if (!node.domain().empty() && node.domain() != "ai.onnx")
      continue;
    if (node.op_type() == "BatchNormalization") {
      for (int k = 1; k < node.output_size(); ++k) {
        const std::string &out = node.output(k);
        if (out.empty())
          continue;
        auto it = reader.find(out);
        if (it != reader.end())
          return exportError("node '" + nodeName(node, i) +
                             "' (BatchNormalization): output '" + out + "' (output " +
                             std::to_string(k) + ", a training-mode statistic) " + it->second +
                             "; a trainer's --export writes the inference model, where "
                             "BatchNormalization has only output Y");
        removed.insert(out);
      }
      while (node.output_size() > 1)
        node.mutable_output()->RemoveLast();
      auto *attrs = node.mutable_attribute();
      attrs->erase(std::remove_if(attrs->begin(), attrs->end(),
                                  [](const onnx::AttributeProto &a) {
                                    return a.name() == "training_mode";
                                  }),
                   attrs->end());
    } else if (node.op_type() == "Dropout") {
      if (node.input_size() > 2) {
        if (!node.input(2).empty())
          trainingFlags.insert(node.input(2));
        while (node.input_size() > 2)
          node.mutable_input()->RemoveLast();
        trimOmitted(*node.mutable_input());
      }
      if (node.output_size() == 2 && !node.output(1).empty() &&
          !reader.count(node.output(1))) {
        removed.insert(node.output(1));
        node.mutable_output()->RemoveLast();
      }
      trimOmitted(*node.mutable_output());
    }
  }

  // Constants that fed only the removed training_mode inputs.
  llvm::StringSet<> stillRead;
  for (const onnx::NodeProto &node : graph.node())
    for (const std::string &in : node.input())
      stillRead.insert(in);
  for (const onnx::ValueInfoProto &out : graph.output())
    stillRead.insert(out.name());
  auto *nodes = graph.mutable_node();
  nodes->erase(std::remove_if(nodes->begin(), nodes->end(),
                              [&](const onnx::NodeProto &node) {
                                if (node.op_type() != "Constant" || node.output_size() != 1 ||
                                    !trainingFlags.count(node.output(0)) ||
                                    stillRead.count(node.output(0)))
                                  return false;
                                removed.insert(node.output(0));
                                return true;
                              }),
               nodes->end());
  auto *infos = graph.mutable_value_info();
  infos->erase(std::remove_if(infos->begin(), infos->end(),
                              [&](const onnx::ValueInfoProto &info) {
                                return removed.count(info.name()) != 0;
                              }),
               infos->end());
  return llvm::Error::success();
}

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
  if (llvm::Error e = toInferenceGraph(*model.mutable_graph()))
    return std::move(e);

  llvm::StringMap<unsigned> wanted;
  for (unsigned i = 0; i < paramNames.size(); ++i)
    wanted[paramNames[i]] = i;
  std::vector<onnx::TensorProto *> protos(paramNames.size(), nullptr);
  std::vector<uint64_t> sizes(paramNames.size());
  for (onnx::TensorProto &init : *model.mutable_graph()->mutable_initializer()) {
    auto it = wanted.find(init.name());
    if (it == wanted.end())
      continue;
    auto tensor = readTensor(init, dir);
    if (!tensor)
      return tensor.takeError();
    // Inline raw data only: external data and typed fields are replaced.
    sizes[it->second] = tensor->bytes().size();
    init.clear_float_data();
    init.clear_double_data();
    init.clear_int32_data();
    init.clear_int64_data();
    init.clear_external_data();
    init.set_data_location(onnx::TensorProto::DEFAULT);
    protos[it->second] = &init;
  }
  for (unsigned i = 0; i < paramNames.size(); ++i) {
    if (!protos[i])
      return exportError("parameter '" + paramNames[i] + "' is not an initializer of the model");
    if (sizes[i] == 0)
      return exportError("parameter '" + paramNames[i] + "' has no elements to export");
  }

  for (unsigned attempt = 0; attempt < 16; ++attempt) {
    std::mt19937_64 rng(0x7472616e63ULL + attempt);
    std::vector<std::string> markers(paramNames.size());
    for (unsigned i = 0; i < paramNames.size(); ++i) {
      markers[i].resize(sizes[i]);
      for (char &c : markers[i])
        c = static_cast<char>(rng());
      protos[i]->set_raw_data(markers[i]);
    }
    std::string bytes;
    if (!model.SerializeToString(&bytes))
      return exportError("cannot serialize the model for export");
    // (offset, parameter) in file order.
    std::vector<std::pair<uint64_t, unsigned>> found;
    bool unique = true;
    for (unsigned i = 0; i < paramNames.size() && unique; ++i) {
      size_t at = bytes.find(markers[i]);
      unique = at != std::string::npos &&
               bytes.find(markers[i], at + 1) == std::string::npos;
      found.emplace_back(at, i);
    }
    if (!unique)
      continue;
    std::sort(found.begin(), found.end());
    ExportTemplate result;
    uint64_t end = 0;
    for (auto [at, i] : found) {
      if (at < end) // overlapping markers cannot be told apart
        return exportError("cannot locate the parameters in the serialized model");
      result.segments.append(bytes, end, at - end);
      result.pieces.push_back({at - end, static_cast<int64_t>(i), sizes[i]});
      end = at + sizes[i];
    }
    result.segments.append(bytes, end, std::string::npos);
    result.pieces.push_back({bytes.size() - end, -1, 0});
    return result;
  }
  return exportError("cannot locate the parameters in the serialized model");
}
