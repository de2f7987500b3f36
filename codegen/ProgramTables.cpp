//===- ProgramTables.cpp - the program description the runtime reads -----===//
//
// After the step functions, the generated source describes the program to
// the runtime (trainc_rt/program.h): the tables of inputs, outputs, optimizer
// state and parameters, the training step, the export and the program
// itself, then main. Every struct is filled with designated initializers
// and every role, hyperparameter, optimizer and precision is an enumerator
// of trainc_rt/abi.h, so the runtime never reads a name to decide anything.
//
//===----------------------------------------------------------------------===//

#include "codegen/Escape.h"
#include "codegen/ProgramEmitter.h"
#include "codegen/StepFunctions.h"
#include "codegen/Toolchain.h"

#include "ir/StepAbi.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace trainc;
using namespace trainc::codegen;

namespace {

/// An enumerator of trainc_rt/abi.h as generated code writes it.
template <typename Enum> std::string enumerator(const char *type, Enum value) {
  return std::string("trainc::rt::") + type + "::" + rt::spelling(value);
}

std::string cDouble(double value) { return llvm::formatv("{0}", llvm::format("%.17g", value)); }

/// The ops of `func` that run channels-last (the layout phase's), for the
/// program's --info.
int channelsLastOps(func::FuncOp func) {
  int count = 0;
  func.walk([&](Operation *op) {
    auto flag = op->getAttrOfType<BoolAttr>("channels_last");
    count += flag && flag.getValue();
  });
  return count;
}

} // namespace

std::string ProgramEmitter::tensorInfo(const std::string &name, Type type,
                                       std::optional<rt::InputRole> role,
                                       const llvm::StringMap<IndexLimit> &limits) {
  auto tensor = cast<RankedTensorType>(type);
  std::string shape = "{";
  for (int64_t d = 0; d < tensor.getRank(); ++d)
    shape += (d ? ", " : "") + std::to_string(tensor.getDimSize(d));
  shape += "}";
  SmallVector<Field> fields = {{"name", cStringLiteral(name)},
                               {"dtype", dtypeEnum(type)},
                               {"rank", tensor.getRank()},
                               {"shape", shape},
                               {"role", enumerator("InputRole", role.value_or(rt::InputRole::Data))}};
  auto limit = limits.find(name);
  bool limited = role && limit != limits.end();
  fields.push_back({"indexLimit", limited ? limit->second.rows : 0});
  fields.push_back({"indexNode", limited ? cStringLiteral(limit->second.node) : "nullptr"});
  return designated(fields);
}

void ProgramEmitter::emitTensorTable(raw_ostream &os, const char *name,
                                     const std::vector<std::pair<std::string, Type>> &entries,
                                     const std::vector<rt::InputRole> &roles,
                                     const llvm::StringMap<IndexLimit> &limits) {
  if (entries.empty())
    return;
  os << "const trainc::rt::TensorInfo " << name << "[] = {\n";
  for (auto [k, entry] : llvm::enumerate(entries)) {
    std::optional<rt::InputRole> role;
    if (k < roles.size())
      role = roles[k];
    os << "    " << tensorInfo(entry.first, entry.second, role, limits) << ",\n";
  }
  os << "};\n";
}

LogicalResult ProgramEmitter::emitTrainStepTable(raw_ostream &os, func::FuncOp step,
                                                 const Emitted &train,
                                                 const Emitted *accumulate,
                                                 const llvm::StringMap<IndexLimit> &limits) {
  const llvm::StringMap<IndexLimit> noLimits;
  emitTensorTable(os, "kTrainInputs", train.inputs, train.roles, limits);
  if (!train.states.empty()) {
    os << "const trainc::rt::StateInfo kStates[] = {\n";
    for (const StateEntry &state : train.states)
      os << "    "
         << designated({{"tensor", tensorInfo(state.name, state.type, std::nullopt, noLimits)},
                        {"role", enumerator("StateRole", toRuntime(state.role))},
                        {"init", llvm::formatv("{0}", llvm::format("%.9g", state.init)).str()}})
         << ",\n";
    os << "};\n";
  }
  os << "const trainc::rt::Hyper kHypers[] = {";
  for (auto [k, h] : llvm::enumerate(train.hypers))
    os << (k ? ", " : "") << enumerator("Hyper", toRuntime(h));
  os << "};\n";
  if (!hostReadHypers.empty()) {
    os << "const int kHostReadHypers[] = {";
    for (size_t index : hostReadHypers)
      os << index << (index == *hostReadHypers.rbegin() ? "" : ", ");
    os << "};\n";
  }

  std::optional<tc::Optimizer> optimizer = tc::stepOptimizer(step);
  if (!optimizer)
    return step.emitError("codegen needs @train_step after the optimizer phase");
  rt::LossScaling scaling = rt::LossScaling::None;
  double fixedScale = 0;
  if (Attribute attr = module->getAttr(tc::kLossScaleAttrName)) {
    auto fixed = dyn_cast<FloatAttr>(attr);
    scaling = fixed ? rt::LossScaling::Fixed : rt::LossScaling::Dynamic;
    fixedScale = fixed ? fixed.getValueAsDouble() : 0.0;
  }
  auto accumAttr = step->getAttrOfType<IntegerAttr>(tc::kGradAccumAttrName);
  auto clip = step->getAttrOfType<FloatAttr>(tc::kClipGradNormAttrName);
  auto ignore = module->getAttrOfType<IntegerAttr>(tc::kIgnoreIndexAttrName);
  auto norm = module->getAttrOfType<StringAttr>(tc::kSampleWeightNormAttrName);
  int64_t sampleLosses = 0;
  for (unsigned k = 0; k < step.getNumResults(); ++k)
    if (step.getResultAttr(k, tc::kSampleLossesAttrName))
      sampleLosses = cast<RankedTensorType>(step.getResultTypes()[k]).getDimSize(0);
  auto bucketsAttr = step->getAttrOfType<IntegerAttr>(tc::kDataParallelAttrName);
  int64_t buckets = bucketsAttr ? bucketsAttr.getInt() : 0;
  bool cuda = options.target == Target::Cuda;
  SmallVector<Field> fields = {
      {"optimizer", enumerator("Optimizer", toRuntime(*optimizer))},
      {"clipGradNorm", cDouble(clip ? clip.getValueAsDouble() : 0.0)},
      {"ignoreIndex", ignore ? ignore.getInt() : int64_t(-100)},
      {"sampleWeightNorm",
       enumerator("SampleWeightNorm", norm && norm.getValue() == "mean"
                                          ? rt::SampleWeightNorm::Mean
                                          : rt::SampleWeightNorm::Sum)},
      {"sampleLosses", sampleLosses},
      {"numInputs", static_cast<int64_t>(train.inputs.size())},
      {"inputs", train.inputs.empty() ? "nullptr" : "kTrainInputs"},
      {"numHypers", static_cast<int64_t>(train.hypers.size())},
      {"hypers", "kHypers"},
      {"numStates", static_cast<int64_t>(train.states.size())},
      {"states", train.states.empty() ? "nullptr" : "kStates"},
      {"arenaBytes", std::max(train.arena, accumulate ? accumulate->arena : 0)},
      {"step", "trainStep"},
      {"generatedKernels", train.generated},
      {"libraryCalls", train.library},
      {"precision", enumerator("Precision", toRuntime(tc::modulePrecision(module)))},
      {"lossScaling", enumerator("LossScaling", scaling)},
      {"fixedLossScale", cDouble(fixedScale)},
      {"accumulate", accumulate ? "accumulateStep" : "nullptr"},
      {"gradAccum", accumulate && accumAttr ? accumAttr.getInt() : 1},
      {"accumulateGeneratedKernels", accumulate ? accumulate->generated : 0},
      {"accumulateLibraryCalls", accumulate ? accumulate->library : 0},
      {"channelsLastOps", channelsLastOps(step)},
      {"numHostReadHypers", static_cast<int64_t>(hostReadHypers.size())},
      {"hostReadHypers", hostReadHypers.empty() ? "nullptr" : "kHostReadHypers"}};
  // The pad phase's record (ONNX node names: escaped).
  auto multiple = module->getAttrOfType<IntegerAttr>(tc::kPadToAttrName);
  std::string lines;
  if (auto list = module->getAttrOfType<ArrayAttr>(tc::kPaddingAttrName))
    for (Attribute line : list)
      lines += cast<StringAttr>(line).getValue().str() + "\n";
  auto copyBytes = step->getAttrOfType<IntegerAttr>(tc::kPaddingCopyBytesAttrName);
  fields.push_back({"padTo", multiple ? multiple.getInt() : 0});
  fields.push_back({"padding", multiple ? cStringLiteral(lines) : "nullptr"});
  fields.push_back({"paddingCopyBytes", multiple && copyBytes ? copyBytes.getInt() : 0});
  fields.push_back({"dataParallelBuckets", buckets});
  fields.push_back({"createCommunicator", !buckets && train.links.empty() ? "nullptr"
                                          : !cuda                  ? "trainc::rt::createMpiCommunicator"
                                          : ncclAvailable()        ? "trainc::rt::createNcclCommunicator"
                                                                   : "nullptr"});
  if (!train.links.empty()) {
    emitLinkTable(os, train);
    bool cut = train.body.find(kBackwardMarker) != std::string::npos;
    fields.push_back({"numLinks", static_cast<int64_t>(train.links.size())});
    fields.push_back({"links", "kLinks"});
    fields.push_back({"stepLinks", "trainStepLinks"});
    fields.push_back({"stepBackward", cut ? "trainStepBackward" : "nullptr"});
    fields.push_back({"accumulateLinks", accumulate ? "accumulateStepLinks" : "nullptr"});
    fields.push_back(
        {"accumulateBackward", accumulate && cut ? "accumulateStepBackward" : "nullptr"});
  }
  os << "const trainc::rt::TrainStep kTrain = " << designated(fields, /*block=*/true) << ";\n";
  return success();
}

void ProgramEmitter::emitLinkTable(raw_ostream &os, const Emitted &train) {
  os << "const trainc::rt::PipelineLink kLinks[] = {\n";
  for (const LinkEntry &link : train.links)
    os << "    "
       << designated({{"tensor", cStringLiteral(link.tensor)},
                      {"send", link.send ? "true" : "false"},
                      {"gradient", link.gradient ? "true" : "false"},
                      {"peer", link.peer},
                      {"slot", link.slot},
                      {"dtype", dtypeEnum(link.type)},
                      {"bytes", cast<RankedTensorType>(link.type).getNumElements() * elementBytes(link.type)}})
       << ",\n";
  os << "};\n";
}

LogicalResult ProgramEmitter::emitExportTable(raw_ostream &os) {
  // The export interleaves the segments with the parameters' trained bytes:
  // each model parameter once, with the size the model gives its data.
  std::vector<bool> placed(params.size(), false);
  uint64_t segmentSum = 0;
  os << "// --export: segment bytes, then the parameter (index, bytes), in file order.\n"
     << "const trainc::rt::ExportPiece kExportPieces[] = {\n";
  for (const EmitOptions::ExportPiece &piece : options.exportPieces) {
    segmentSum += piece.segmentBytes;
    if (piece.param.empty()) {
      os << "    " << designated({{"segmentBytes", std::to_string(piece.segmentBytes)},
                                  {"param", -1},
                                  {"paramBytes", 0}})
         << ",\n";
      continue;
    }
    auto it = paramIndex.find(piece.param);
    if (it == paramIndex.end() || placed[it->second])
      return module.emitError("the export names parameter '")
             << piece.param << "' " << (it == paramIndex.end() ? "unknown" : "twice");
    const ParamEntry &p = params[it->second];
    if (p.bytes != piece.paramBytes)
      return module.emitError("parameter '")
             << p.name << "' has " << piece.paramBytes << " bytes of data in the model but "
             << p.bytes << " in the program";
    placed[it->second] = true;
    os << "    "
       << designated({{"segmentBytes", std::to_string(piece.segmentBytes)},
                      {"param", static_cast<int64_t>(it->second)},
                      {"paramBytes", std::to_string(p.bytes)}})
       << ", " << commentLine(p.name);
  }
  os << "};\n";
  for (size_t i = 0; i < params.size(); ++i)
    if (!params[i].constant && !placed[i])
      return module.emitError("parameter '") << params[i].name << "' is not in the export";
  if (options.exportPieces.empty() || !options.exportPieces.back().param.empty() ||
      segmentSum != options.exportSegmentsBytes)
    return module.emitError("the export's pieces do not cover its segments");
  return success();
}

void ProgramEmitter::emitParamTable(raw_ostream &os) {
  if (params.empty())
    return;
  const llvm::StringMap<IndexLimit> noLimits;
  os << "const trainc::rt::ParamInfo kParams[] = {\n";
  for (const ParamEntry &p : params)
    os << "    "
       << designated({{"tensor", tensorInfo(p.name, p.type, std::nullopt, noLimits)},
                      {"blobOffset", std::to_string(p.offset)},
                      {"bytes", std::to_string(p.bytes)},
                      {"trainable", p.trainable ? "true" : "false"},
                      {"constant", p.constant ? "true" : "false"},
                      {"noDecay", p.noDecay ? "true" : "false"},
                      {"statisticOf",
                       p.statisticOf.empty() ? "nullptr" : cStringLiteral(p.statisticOf)},
                      {"statisticMomentum", literal(p.statisticMomentum, true)}})
       << ",\n";
  os << "};\n";
}

void ProgramEmitter::markStatistics(func::FuncOp forward) {
  forward.walk([&](tc::BatchNormOp norm) {
    for (Value statistic : {norm.getMean(), norm.getVar()}) {
      // A norm heading a tc.fused group reads the group's input.
      if (auto inner = dyn_cast<BlockArgument>(statistic))
        if (auto fused = dyn_cast<tc::FusedOp>(inner.getOwner()->getParentOp()))
          statistic = fused.getInputs()[inner.getArgNumber()];
      auto arg = dyn_cast<BlockArgument>(statistic);
      if (!arg || arg.getOwner()->getParentOp() != forward)
        continue;
      auto symbol = forward.getArgAttrOfType<FlatSymbolRefAttr>(arg.getArgNumber(),
                                                                tc::kParamAttrName);
      auto it = symbol ? paramIndex.find(symbol.getValue()) : paramIndex.end();
      if (it == paramIndex.end())
        continue;
      std::string node = nodeName(norm.getLoc());
      params[it->second].statisticOf = node.empty() ? "BatchNormalization" : node;
      params[it->second].statisticMomentum = norm.getMomentum().convertToDouble();
    }
  });
}

LogicalResult ProgramEmitter::emitTables(raw_ostream &os, const Functions &fns) {
  markStatistics(fns.forwardFunc);
  // The forward's token-id inputs, which the step reads as they are.
  const llvm::StringMap<IndexLimit> limits = indexLimits(fns.forwardFunc);
  emitTensorTable(os, "kInputs", inputs, fns.forward->roles, limits);
  emitTensorTable(os, "kOutputs", outputs, {}, {});
  if (fns.train &&
      failed(emitTrainStepTable(os, fns.stepFunc, *fns.train, fns.accumulate, limits)))
    return failure();
  if (fns.select) {
    emitTensorTable(os, "kSelectInputs", fns.select->inputs, fns.select->roles, limits);
    const int64_t candidates =
        cast<RankedTensorType>(func::FuncOp(fns.selectFunc).getResultTypes()[1]).getDimSize(0);
    os << "const trainc::rt::SelectStep kSelect = "
       << designated({{"batch", candidates},
                      {"numInputs", static_cast<int64_t>(fns.select->inputs.size())},
                      {"inputs", "kSelectInputs"},
                      {"arenaBytes", fns.select->arena},
                      {"run", "selectForward"},
                      {"generatedKernels", fns.select->generated},
                      {"libraryCalls", fns.select->library}})
       << ";\n";
  }
  emitParamTable(os);
  bool exporting = (fns.train || !options.stageSources.empty()) &&
                   !options.exportSegmentsPath.empty();
  if (exporting && failed(emitExportTable(os)))
    return failure();
  // The blob's path goes into an assembler string inside a C++ string.
  auto incbin = [](const std::string &path) {
    return cStringLiteral(".incbin " + asmStringLiteral(path) + "\n");
  };
  auto embed = [&](const char *symbol, const std::string &path) {
    os << "__asm__(\".section .rodata\\n\"\n"
       << "        \".balign 64\\n\"\n"
       << "        \"" << symbol << ":\\n\"\n"
       << "        " << incbin(path) << "\n"
       << "        \".previous\\n\");\n"
       << "extern \"C\" const unsigned char " << symbol << "[];\n\n";
  };
  os << "\n} // namespace\n\n"
     << "// Initial values of parameters and constants: " << blob.size() << " bytes.\n";
  embed("trainc_param_blob", options.paramBlobPath);
  if (exporting) {
    os << "// The ONNX model --export writes, between its parameters: "
       << options.exportSegmentsBytes << " bytes.\n";
    embed("trainc_export_segments", options.exportSegmentsPath);
  }
  os << "namespace {\n";
  if (exporting)
    os << "const trainc::rt::ExportInfo kExport = "
       << designated({{"segments", "trainc_export_segments"},
                      {"segmentsBytes", std::to_string(options.exportSegmentsBytes)},
                      {"numPieces", static_cast<int64_t>(options.exportPieces.size())},
                      {"pieces", "kExportPieces"}})
       << ";\n";
  bool cuda = options.target == Target::Cuda;
  SmallVector<Field> fields = {
      {"modelName", cStringLiteral(options.modelName)},
      {"target", cStringLiteral(cuda ? "cuda" : "cpu")},
      {"batchSize", fns.batch},
      {"numInputs", static_cast<int64_t>(inputs.size())},
      {"inputs", inputs.empty() ? "nullptr" : "kInputs"},
      {"numOutputs", static_cast<int64_t>(outputs.size())},
      {"outputs", outputs.empty() ? "nullptr" : "kOutputs"},
      {"numParams", static_cast<int64_t>(params.size())},
      {"params", params.empty() ? "nullptr" : "kParams"},
      {"paramBlob", "trainc_param_blob"},
      {"paramBlobBytes", static_cast<int64_t>(blob.size())},
      {"arenaBytes", arenaBytes},
      {"forward", "forward"},
      {"train", fns.train ? "&kTrain" : "nullptr"},
      {"exportInfo", exporting ? "&kExport" : "nullptr"},
      {"fingerprint", "\"" + programFingerprint(module, options) + "\""},
      {"generatedKernels", fns.forward->generated},
      {"libraryCalls", fns.forward->library},
      // The model as imported: checkpoints of it resume here.
      {"modelFingerprint", options.modelFingerprint.empty()
                               ? std::string("nullptr")
                               : cStringLiteral(options.modelFingerprint)}};
  if (fns.select)
    fields.push_back({"select", "&kSelect"});
  if (!options.stageSources.empty()) {
    os << "const trainc::rt::Program *const kStages[] = {";
    for (size_t k = 0; k < options.stageSources.size(); ++k)
      os << (k ? ", " : "") << "&stage" << k << "::kProgram";
    os << "};\nconst double kStageSeconds[] = {";
    for (size_t k = 0; k < options.stageSeconds.size(); ++k)
      os << (k ? ", " : "") << cDouble(options.stageSeconds[k]);
    os << "};\n"
       << "const trainc::rt::Pipeline kPipeline = "
       << designated({{"numStages", static_cast<int64_t>(options.stageSources.size())},
                      {"stages", "kStages"},
                      {"microBatches", options.microBatches},
                      {"stageSeconds", "kStageSeconds"}})
       << ";\n";
    fields.push_back({"pipeline", "&kPipeline"});
  }
  for (const Field &field : callTableFields())
    fields.push_back(field);
  emitCallTable(os);
  os << "const trainc::rt::Program kProgram = " << designated(fields, /*block=*/true) << ";\n"
     << "} // namespace\n\n"
     << "int main(int argc, char **argv) {\n"
     << "  trainc::rt::prepareProcess(argc, argv);\n"
     << "  return trainc::rt::programMain(argc, argv, kProgram);\n}\n";
  return success();
}
