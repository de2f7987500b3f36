//===- EmitProgram.cpp - tc (after planning) to C++ / CUDA source ---------===//
//
// Walks the planned @forward once, in order. Every tensor becomes a typed
// pointer: into the arena at its planned offset, into the parameter or input
// arrays, or, for views, the pointer of what it aliases. Pointwise ops and
// data movement become generated kernels (KernelWriter); contractions,
// convolution, normalization, pooling, softmax, reductions and losses call
// the runtime (`tk::`). The output is deterministic for a given module.
//
//===----------------------------------------------------------------------===//

#include "codegen/Emitter.h"
#include "codegen/Escape.h"
#include "codegen/IndexKernels.h"

#include "ir/TcOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstdio>

using namespace mlir;
using namespace trainc;
using namespace trainc::codegen;

namespace {

//===----------------------------------------------------------------------===//
// Small text helpers
//===----------------------------------------------------------------------===//

/// The C++ element type of a tensor type, or "" if codegen does not support it.
std::string cType(Type type) {
  Type e = isa<ShapedType>(type) ? cast<ShapedType>(type).getElementType() : type;
  if (e.isF32()) return "float";
  if (e.isF64()) return "double";
  if (e.isInteger(64)) return "int64_t";
  if (e.isInteger(32)) return "int32_t";
  if (e.isInteger(1)) return "bool";
  return "";
}

std::string dtypeEnum(Type type) {
  Type e = cast<ShapedType>(type).getElementType();
  const char *name = e.isF32() ? "F32" : e.isF16() ? "F16" : e.isBF16() ? "BF16"
                     : e.isF64() ? "F64" : e.isInteger(64) ? "I64"
                     : e.isInteger(32) ? "I32" : "I1";
  return std::string("trainc::rt::DType::") + name;
}

int64_t elementBytes(Type type) {
  Type e = cast<ShapedType>(type).getElementType();
  return e.isInteger(1) ? 1 : e.getIntOrFloatBitWidth() / 8;
}

ArrayRef<int64_t> shapeOf(Value v) { return cast<RankedTensorType>(v.getType()).getShape(); }
int64_t countOf(Value v) { return cast<RankedTensorType>(v.getType()).getNumElements(); }

std::string shapeText(ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s;
}

/// The ONNX node name a location carries.
std::string nodeName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (auto name = dyn_cast<NameLoc>(inner))
        return name.getName().str();
  return "";
}

/// A float literal of the element type (f32 gets an `f` suffix).
std::string literal(double v, bool f32) {
  if (std::isnan(v))
    return f32 ? "__builtin_nanf(\"\")" : "__builtin_nan(\"\")";
  if (std::isinf(v))
    return std::string(v < 0 ? "-" : "") + (f32 ? "__builtin_inff()" : "__builtin_inf()");
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), f32 ? "%.9g" : "%.17g", v);
  std::string s = buffer;
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0";
  return f32 ? s + "f" : s;
}

/// The element strides and base offset of a strided slice of a tensor of
/// shape `in` (the slice's positions, as a view of the sliced tensor).
std::pair<std::vector<int64_t>, int64_t> sliceStrides(ArrayRef<int64_t> in,
                                                      ArrayRef<int64_t> starts,
                                                      ArrayRef<int64_t> steps) {
  std::vector<int64_t> own = rowMajorStrides(in), strides;
  int64_t base = 0;
  for (size_t d = 0; d < own.size(); ++d) {
    strides.push_back(own[d] * steps[d]);
    base += starts[d] * own[d];
  }
  return {strides, base};
}

/// "outer, axis, inner" of a gather from a table of shape `data` along `axis`.
std::string gatherDims(ArrayRef<int64_t> data, int64_t axis) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= data[d];
  for (size_t d = axis + 1; d < data.size(); ++d)
    inner *= data[d];
  return std::to_string(outer) + ", " + std::to_string(data[axis]) + ", " +
         std::to_string(inner);
}

/// "rows, cols" of a layer norm over the axes from `axis` on.
std::string layerNormDims(Value input, int64_t axis) {
  ArrayRef<int64_t> s = shapeOf(input);
  int64_t rows = 1;
  for (int64_t d = 0; d < axis; ++d)
    rows *= s[d];
  return std::to_string(rows) + ", " + std::to_string(countOf(input) / std::max<int64_t>(rows, 1));
}

/// "n, c, spatial" of a batch-norm input [N, C, ...].
std::string batchNormDims(ArrayRef<int64_t> x) {
  int64_t spatial = 1;
  for (size_t d = 2; d < x.size(); ++d)
    spatial *= x[d];
  return std::to_string(x[0]) + ", " + std::to_string(x[1]) + ", " + std::to_string(spatial);
}

/// Ops whose result is their first operand's buffer: reshape, and dropout
/// outside training.
bool isView(Operation *op) {
  if (auto dropout = dyn_cast<tc::DropoutOp>(op))
    return !dropout.getTraining();
  return isa<tc::ReshapeOp>(op);
}

/// Per-axis strides to read `in` broadcast to `out` (numpy rules): 0 on
/// broadcast axes.
std::vector<int64_t> broadcastStrides(ArrayRef<int64_t> in, ArrayRef<int64_t> out) {
  std::vector<int64_t> own = rowMajorStrides(in), strides(out.size(), 0);
  size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d)
    strides[lead + d] = in[d] == 1 && out[lead + d] != 1 ? 0 : own[d];
  return strides;
}

//===----------------------------------------------------------------------===//
// The emitter
//===----------------------------------------------------------------------===//

class ProgramEmitter {
public:
  ProgramEmitter(ModuleOp module, const EmitOptions &options, std::vector<char> &blob)
      : module(module), options(options), kernels(options.target), blob(blob) {}

  LogicalResult run(raw_ostream &os);

private:
  struct ParamEntry {
    std::string name;
    Type type;
    uint64_t offset, bytes;
    bool trainable, constant;
  };

  LogicalResult declareArguments(func::FuncOp func);
  LogicalResult emitOp(Operation *op);
  LogicalResult emitPointwise(Operation *op);
  LogicalResult emitDropout(tc::DropoutOp op);
  LogicalResult emitUpdate(Operation *op);
  LogicalResult emitIndexing(Operation *op);
  LogicalResult emitStridedCopy(Operation *op, StringRef what, Value in,
                                ArrayRef<int64_t> shape, ArrayRef<int64_t> inStrides,
                                int64_t inBase, ArrayRef<int64_t> outStrides,
                                int64_t outBase, StringRef outPtr);
  LogicalResult emitMatMul(tc::MatMulOp op);
  LogicalResult emitGemm(tc::GemmOp op);
  LogicalResult emitConv(tc::ConvOp op);
  LogicalResult emitConvBackward(Operation *op);
  void callWithDesc(StringRef type, const std::string &desc, const std::string &statement);
  LogicalResult emitPool(Operation *op);
  LogicalResult emitReduce(Operation *op, ArrayRef<int64_t> axes, StringRef kind);
  LogicalResult emitLoss(Operation *op);
  LogicalResult emitReturn(func::ReturnOp op);

  uint64_t appendToBlob(DenseElementsAttr value);
  /// Declares the arena pointer of an op result.
  void declareResult(OpResult result, int64_t offset);
  std::string ptr(Value v) { return names.lookup(v); }
  std::string opComment(Operation *op);
  void call(const std::string &statement) {
    body += "  TRAINC_RETURN_IF_ERROR(" + statement + ");\n";
  }

  ModuleOp module;
  const EmitOptions &options;
  KernelWriter kernels;
  std::vector<char> &blob;
  std::vector<ParamEntry> params;
  llvm::StringMap<unsigned> paramIndex;
  /// Per emitted function: its inputs, outputs (forward), hyperparameters and
  /// optimizer state (training step), value names and body.
  std::vector<std::pair<std::string, Type>> inputs, outputs, states;
  std::vector<std::string> hypers;
  bool trainRole = false;
  llvm::DenseMap<Value, std::string> names;
  /// Optimizer update results written over the argument they replace.
  llvm::DenseSet<Value> inPlace;
  std::string body;
  int64_t arenaBytes = 0;

  /// What one emitted function contributes to the program.
  struct Emitted {
    std::string body;
    std::vector<std::pair<std::string, Type>> inputs, outputs, states;
    std::vector<std::string> hypers;
    int64_t arena = 0;
  };
  LogicalResult declareParams();
  FailureOr<Emitted> emitFunction(func::FuncOp func, bool train);
};

std::string ProgramEmitter::opComment(Operation *op) {
  std::string name = nodeName(op->getLoc());
  std::string s = op->getName().getStringRef().str();
  if (!name.empty())
    s += " '" + name + "'";
  if (op->getNumResults())
    s += " -> " + shapeText(shapeOf(op->getResult(0)));
  return s;
}

uint64_t ProgramEmitter::appendToBlob(DenseElementsAttr value) {
  // 64-byte alignment keeps every parameter's initial value cache-line
  // aligned for the host copy.
  blob.resize((blob.size() + 63) / 64 * 64, 0);
  uint64_t offset = blob.size();
  int64_t count = value.getNumElements();
  if (value.getElementType().isInteger(1)) {
    for (bool b : value.getValues<bool>())
      blob.push_back(b ? 1 : 0);
    return offset;
  }
  ArrayRef<char> raw = value.getRawData();
  int64_t bytes = elementBytes(value.getType());
  if (value.isSplat()) {
    for (int64_t i = 0; i < count; ++i)
      blob.insert(blob.end(), raw.begin(), raw.begin() + bytes);
  } else {
    blob.insert(blob.end(), raw.begin(), raw.end());
  }
  return offset;
}

void ProgramEmitter::declareResult(OpResult result, int64_t offset) {
  std::string name = "t" + std::to_string(names.size());
  names[result] = name;
  body += "  " + cType(result.getType()) + " *" + name + " = reinterpret_cast<" +
          cType(result.getType()) + " *>(args.arena + " + std::to_string(offset) +
          "); // " + shapeText(shapeOf(result)) + "\n";
}

LogicalResult ProgramEmitter::declareArguments(func::FuncOp func) {
  for (BlockArgument arg : func.getArguments()) {
    Type type = arg.getType();
    if (cType(type).empty())
      return func.emitError("codegen does not support element type of argument ")
             << arg.getArgNumber() << " (" << type << ") yet";
    StringAttr input =
        func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), tc::kInputAttrName);
    if (!input)
      input = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), tc::kLabelAttrName);
    if (!input && func.getArgAttr(arg.getArgNumber(), tc::kSampleWeightsAttrName))
      input = StringAttr::get(func.getContext(), "sample_weights");
    if (!input && func.getArgAttr(arg.getArgNumber(), tc::kDropoutKeyAttrName))
      input = StringAttr::get(func.getContext(), tc::kDropoutKeyInputName);
    if (input) {
      std::string name = "in" + std::to_string(inputs.size());
      body += "  const " + cType(type) + " *" + name + " = static_cast<const " +
              cType(type) + " *>(args.inputs[" + std::to_string(inputs.size()) +
              "]); " +
              commentLine("input '" + input.getValue().str() + "' " + shapeText(shapeOf(arg)));
      inputs.emplace_back(input.getValue().str(), type);
      names[arg] = name;
      continue;
    }
    if (auto hyper = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "tc.hyper")) {
      std::string name = "h" + std::to_string(hypers.size());
      body += "  const float *" + name + " = static_cast<const float *>(args.hypers[" +
              std::to_string(hypers.size()) + "]); " +
              commentLine("hyperparameter '" + hyper.getValue().str() + "'");
      hypers.push_back(hyper.getValue().str());
      names[arg] = name;
      continue;
    }
    if (auto state = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "tc.state")) {
      std::string name = "s" + std::to_string(states.size());
      body += "  const " + cType(type) + " *" + name + " = static_cast<const " + cType(type) +
              " *>(args.states[" + std::to_string(states.size()) + "]); " +
              commentLine("state '" + state.getValue().str() + "' " + shapeText(shapeOf(arg)));
      states.emplace_back(state.getValue().str(), type);
      names[arg] = name;
      continue;
    }
    auto symbol = func.getArgAttrOfType<FlatSymbolRefAttr>(arg.getArgNumber(),
                                                           tc::kParamAttrName);
    auto it = symbol ? paramIndex.find(symbol.getValue()) : paramIndex.end();
    if (it == paramIndex.end())
      return func.emitError("argument ") << arg.getArgNumber()
                                         << " is neither an input nor a parameter";
    std::string name = "p" + std::to_string(it->second);
    body += "  const " + cType(type) + " *" + name + " = static_cast<const " +
            cType(type) + " *>(args.params[" + std::to_string(it->second) + "]); " +
            commentLine(symbol.getValue().str() + " " + shapeText(shapeOf(arg)));
    names[arg] = name;
  }
  return success();
}

LogicalResult ProgramEmitter::declareParams() {
  // Every parameter, in module order: both functions index the same table.
  for (auto param : module.getOps<tc::ParamOp>()) {
    auto init = dyn_cast_or_null<DenseElementsAttr>(param.getInitialValueAttr());
    if (!init)
      return param.emitError("codegen needs a dense initial value");
    Type type = param.getType();
    if (cType(type).empty())
      return param.emitError("codegen does not support element type of ") << type << " yet";
    paramIndex[param.getSymName()] = params.size();
    params.push_back({param.getSymName().str(), type, appendToBlob(init),
                      static_cast<uint64_t>(cast<RankedTensorType>(type).getNumElements() *
                                            elementBytes(type)),
                      param.getTrainable(), false});
  }
  return success();
}

FailureOr<ProgramEmitter::Emitted> ProgramEmitter::emitFunction(func::FuncOp func,
                                                                 bool train) {
  auto arena = func->getAttrOfType<IntegerAttr>("tc.arena_bytes");
  if (!arena)
    return func.emitError("codegen needs a planned function (run trainc-plan)");
  names.clear();
  inPlace.clear();
  body.clear();
  inputs.clear();
  outputs.clear();
  states.clear();
  hypers.clear();
  trainRole = train;
  if (failed(declareArguments(func)))
    return failure();
  for (Operation &op : func.getBody().front())
    if (failed(emitOp(&op)))
      return failure();
  return Emitted{body, inputs, outputs, states, hypers, arena.getInt()};
}

LogicalResult ProgramEmitter::run(raw_ostream &os) {
  auto func = module.lookupSymbol<func::FuncOp>(options.entry);
  if (!func || func.isExternal())
    return module.emitError("codegen needs a func.func @") << options.entry << " with a body";
  if (failed(declareParams()))
    return failure();
  FailureOr<Emitted> forwardFn = emitFunction(func, /*train=*/false);
  if (failed(forwardFn))
    return failure();
  // A training program: @train_step updates parameters (trainc-optimizer ran).
  std::optional<Emitted> trainFn;
  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  if (step && options.entry == "forward" && step->hasAttr("tc.optimizer")) {
    FailureOr<Emitted> emitted = emitFunction(step, /*train=*/true);
    if (failed(emitted))
      return failure();
    trainFn = *emitted;
  }
  inputs = forwardFn->inputs;
  outputs = forwardFn->outputs;
  arenaBytes = forwardFn->arena;

  int64_t batch = 1;
  if (auto attr = module->getAttrOfType<IntegerAttr>("tc.batch_size"))
    batch = attr.getInt();
  else if (!inputs.empty() && !cast<RankedTensorType>(inputs[0].second).getShape().empty())
    batch = cast<RankedTensorType>(inputs[0].second).getDimSize(0);
  bool cuda = options.target == Target::Cuda;

  os << commentLine("Generated by trainc from " + options.modelName + " for the " +
                    (cuda ? "CUDA" : "CPU") + " target. Do not edit.")
     << "//\n// Kernels first (each names the tc ops and ONNX nodes it implements),\n"
     << "// then the forward pass, then the program description.\n\n"
     << "#include \"trainc_rt/generated.h\"\n\n"
     << "namespace {\n\n"
     << "namespace tk = trainc::" << (cuda ? "cuda" : "cpu") << ";\n"
     << "using trainc::rt::Context;\nusing trainc::rt::Status;\n\n"
     << kernels.text()
     << "/// @" << commentText(options.entry) << " on one batch of " << batch << ".\n"
     << "Status forward(Context &ctx, const trainc::rt::ForwardArgs &args) {\n"
     << "  (void)ctx;\n"
     << forwardFn->body << "  return Status();\n}\n\n";
  if (trainFn)
    os << "/// One training step on a batch of " << batch
       << ": forward, loss, backward and the parameter update.\n"
       << "Status trainStep(Context &ctx, const trainc::rt::TrainArgs &args) {\n"
       << "  (void)ctx;\n"
       << trainFn->body << "  return Status();\n}\n\n";

  auto tensorInfo = [](const std::string &name, Type type) {
    auto tensor = cast<RankedTensorType>(type);
    std::string s = "{" + cStringLiteral(name) + ", " + dtypeEnum(type) + ", " +
                    std::to_string(tensor.getRank()) + ", {";
    for (int64_t d = 0; d < tensor.getRank(); ++d)
      s += (d ? ", " : "") + std::to_string(tensor.getDimSize(d));
    return s + "}}";
  };
  auto table = [&](const char *type, const char *name,
                   const std::vector<std::pair<std::string, Type>> &entries) {
    if (entries.empty())
      return;
    os << "const trainc::rt::" << type << " " << name << "[] = {\n";
    for (const auto &[n, t] : entries)
      os << "    " << tensorInfo(n, t) << ",\n";
    os << "};\n";
  };
  table("TensorInfo", "kInputs", inputs);
  table("TensorInfo", "kOutputs", outputs);
  if (trainFn) {
    table("TensorInfo", "kTrainInputs", trainFn->inputs);
    table("TensorInfo", "kStates", trainFn->states);
    os << "const char *const kHypers[] = {";
    for (const std::string &h : trainFn->hypers)
      os << cStringLiteral(h) << ", ";
    os << "};\n";
    auto optimizer = step->getAttrOfType<StringAttr>("tc.optimizer");
    auto clip = step->getAttrOfType<FloatAttr>("tc.clip_grad_norm");
    os << "const trainc::rt::TrainStep kTrain = {\n"
       << "    " << cStringLiteral(optimizer ? optimizer.getValue() : "sgd") << ",\n"
       << "    " << llvm::format("%.17g", clip ? clip.getValueAsDouble() : 0.0) << ",\n"
       << "    " << trainFn->inputs.size() << ", kTrainInputs,\n"
       << "    " << trainFn->hypers.size() << ", kHypers,\n"
       << "    " << trainFn->states.size() << ", "
       << (trainFn->states.empty() ? "nullptr" : "kStates") << ",\n"
       << "    " << trainFn->arena << ", trainStep};\n";
  }
  if (!params.empty()) {
    os << "const trainc::rt::ParamInfo kParams[] = {\n";
    for (const ParamEntry &p : params)
      os << "    {" << tensorInfo(p.name, p.type) << ", " << p.offset << ", " << p.bytes
         << ", " << (p.trainable ? "true" : "false") << ", "
         << (p.constant ? "true" : "false") << "},\n";
    os << "};\n";
  }
  bool exporting = trainFn && !options.exportSegmentsPath.empty();
  if (exporting) {
    // The export interleaves the segments with the parameters' trained bytes:
    // each model parameter once, with the size the model gives its data.
    std::vector<bool> placed(params.size(), false);
    uint64_t segmentSum = 0;
    os << "// --export: segment bytes, then the parameter (index, bytes), in file order.\n"
       << "const trainc::rt::ExportPiece kExportPieces[] = {\n";
    for (const EmitOptions::ExportPiece &piece : options.exportPieces) {
      segmentSum += piece.segmentBytes;
      if (piece.param.empty()) {
        os << "    {" << piece.segmentBytes << ", -1, 0},\n";
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
      os << "    {" << piece.segmentBytes << ", " << it->second << ", " << p.bytes << "}, "
         << commentLine(p.name);
    }
    os << "};\n";
    for (size_t i = 0; i < params.size(); ++i)
      if (!params[i].constant && !placed[i])
        return module.emitError("parameter '") << params[i].name << "' is not in the export";
    if (options.exportPieces.empty() || !options.exportPieces.back().param.empty() ||
        segmentSum != options.exportSegmentsBytes)
      return module.emitError("the export's pieces do not cover its segments");
  }
  // The blob's path goes into an assembler string inside a C++ string.
  auto incbin = [](const std::string &path) {
    return cStringLiteral(".incbin " + asmStringLiteral(path) + "\n");
  };
  os << "\n} // namespace\n\n"
     << "// Initial values of parameters and constants: " << blob.size() << " bytes.\n"
     << "__asm__(\".section .rodata\\n\"\n"
     << "        \".balign 64\\n\"\n"
     << "        \"trainc_param_blob:\\n\"\n"
     << "        " << incbin(options.paramBlobPath) << "\n"
     << "        \".previous\\n\");\n"
     << "extern \"C\" const unsigned char trainc_param_blob[];\n\n";
  if (exporting)
    os << "// The ONNX model --export writes, between its parameters: "
       << options.exportSegmentsBytes << " bytes.\n"
       << "__asm__(\".section .rodata\\n\"\n"
       << "        \".balign 64\\n\"\n"
       << "        \"trainc_export_segments:\\n\"\n"
       << "        " << incbin(options.exportSegmentsPath) << "\n"
       << "        \".previous\\n\");\n"
       << "extern \"C\" const unsigned char trainc_export_segments[];\n\n";
  os << "namespace {\n";
  if (exporting)
    os << "const trainc::rt::ExportInfo kExport = {trainc_export_segments, "
       << options.exportSegmentsBytes << ", " << options.exportPieces.size()
       << ", kExportPieces};\n";
  os << "const trainc::rt::Program kProgram = {\n"
     << "    " << cStringLiteral(options.modelName) << ", " << cStringLiteral(cuda ? "cuda" : "cpu")
     << ", " << batch << ",\n"
     << "    " << inputs.size() << ", " << (inputs.empty() ? "nullptr" : "kInputs") << ", "
     << outputs.size() << ", " << (outputs.empty() ? "nullptr" : "kOutputs") << ",\n"
     << "    " << params.size() << ", " << (params.empty() ? "nullptr" : "kParams")
     << ", trainc_param_blob, " << blob.size() << ",\n"
     << "    " << arenaBytes << ", forward, " << (trainFn ? "&kTrain" : "nullptr") << ", "
     << (exporting ? "&kExport" : "nullptr") << ",\n"
     << "    \"" << programFingerprint(module, options) << "\"};\n"
     << "} // namespace\n\n"
     << "int main(int argc, char **argv) {\n"
     << "  trainc::rt::prepareProcess(argc, argv);\n"
     << "  return trainc::rt::programMain(argc, argv, kProgram);\n}\n";
  return success();
}

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

LogicalResult ProgramEmitter::emitOp(Operation *op) {
  if (auto ret = dyn_cast<func::ReturnOp>(op))
    return emitReturn(ret);
  if (auto constant = dyn_cast<tc::ConstantOp>(op)) {
    auto value = dyn_cast<DenseElementsAttr>(constant.getValue());
    if (!value || cType(value.getType()).empty())
      return op->emitError("codegen does not support this constant yet");
    std::string name = "p" + std::to_string(params.size());
    Type type = value.getType();
    body += "  const " + cType(type) + " *" + name + " = static_cast<const " +
            cType(type) + " *>(args.params[" + std::to_string(params.size()) +
            "]); " + commentLine("constant of " + opComment(op));
    params.push_back({"constant:" + std::to_string(params.size()), type,
                      appendToBlob(value),
                      static_cast<uint64_t>(countOf(constant) * elementBytes(type)),
                      false, true});
    names[constant.getResult()] = name;
    return success();
  }
  for (Value operand : op->getOperands())
    if (cType(operand.getType()).empty())
      return op->emitError("codegen does not support element type ")
             << cast<ShapedType>(operand.getType()).getElementType() << " yet";

  // Results: arena pointers, or the pointer of the aliased operand (views).
  auto offsets = op->getAttrOfType<DenseI64ArrayAttr>("tc.offsets");
  if (!offsets || offsets.size() != static_cast<int64_t>(op->getNumResults()))
    return op->emitError("codegen needs planned offsets (run trainc-plan)");
  body += commentLine(opComment(op), "  ");
  for (OpResult result : op->getResults()) {
    if (cType(result.getType()).empty())
      return op->emitError("codegen does not support element type ")
             << cast<ShapedType>(result.getType()).getElementType() << " yet";
    int64_t offset = offsets[result.getResultNumber()];
    if (offset >= 0) {
      declareResult(result, offset);
      continue;
    }
    Value aliased;
    if (isView(op))
      aliased = op->getOperand(0);
    else if (isa<tc::BatchNormOp>(op) && result.getResultNumber() > 0)
      aliased = op->getOperand(result.getResultNumber() + 2);
    if (Value replaced = tc::replacedOperand(result)) {
      // An optimizer update in place: it writes the argument it replaces.
      names[result] = "const_cast<float *>(" + ptr(replaced) + ")";
      inPlace.insert(result);
      continue;
    }
    if (!aliased)
      return op->emitError("codegen cannot place result ") << result.getResultNumber();
    names[result] = ptr(aliased);
  }

  if (isView(op))
    return success(); // views: the result is the operand's buffer
  if (op->hasTrait<tc::OpTrait::Pointwise>())
    return emitPointwise(op);
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](tc::DropoutOp o) { return emitDropout(o); })
      .Case<tc::SgdUpdateOp, tc::AdamUpdateOp>([&](Operation *o) { return emitUpdate(o); })
      .Case([&](tc::MatMulOp o) { return emitMatMul(o); })
      .Case([&](tc::GemmOp o) { return emitGemm(o); })
      .Case([&](tc::ConvOp o) { return emitConv(o); })
      .Case<tc::MaxPoolOp, tc::AvgPoolOp, tc::MaxPoolBackwardOp, tc::AvgPoolBackwardOp>(
          [&](Operation *o) { return emitPool(o); })
      .Case<tc::ConvBackwardDataOp, tc::ConvBackwardFilterOp>(
          [&](Operation *o) { return emitConvBackward(o); })
      .Case([&](tc::GlobalAvgPoolOp o) {
        ArrayRef<int64_t> s = shapeOf(o.getInput());
        int64_t spatial = countOf(o.getInput()) / (s[0] * s[1]);
        call("tk::reduce(ctx, trainc::rt::ReduceKind::Mean, " + std::to_string(s[0] * s[1]) +
             ", " + std::to_string(spatial) + ", 1, " + ptr(o.getInput()) + ", " +
             ptr(o.getResult()) + ")");
        return success();
      })
      .Case([&](tc::BatchNormOp o) {
        std::string dims = batchNormDims(shapeOf(o.getInput()));
        std::string common = ptr(o.getInput()) + ", " + ptr(o.getScale()) + ", " +
                             ptr(o.getBias()) + ", " + ptr(o.getMean()) + ", " +
                             ptr(o.getVar()) + ", ";
        std::string epsilon = literal(o.getEpsilon().convertToFloat(), true);
        if (!o.getTraining()) {
          // Running statistics (the planner aliased the statistics results
          // to the operands).
          call("tk::batchNormInference(ctx, " + dims + ", " + common + epsilon + ", " +
               ptr(o.getResult()) + ")");
          return success();
        }
        call("tk::batchNormTraining(ctx, " + dims + ", " + common +
             (o.getSampleMask() ? ptr(o.getSampleMask()) : "nullptr") + ", " + epsilon +
             ", " + literal(o.getMomentum().convertToFloat(), true) + ", " +
             ptr(o.getResult()) + ", " + ptr(o.getRunningMean()) + ", " +
             ptr(o.getRunningVar()) + ")");
        return success();
      })
      .Case([&](tc::BatchNormBackwardOp o) {
        call("tk::batchNormBackward(ctx, " + batchNormDims(shapeOf(o.getInput())) + ", " +
             ptr(o.getInput()) + ", " + ptr(o.getScale()) + ", " + ptr(o.getResultGrad()) +
             ", " + (o.getSampleMask() ? ptr(o.getSampleMask()) : "nullptr") + ", " +
             literal(o.getEpsilon().convertToFloat(), true) + ", " + ptr(o.getInputGrad()) +
             ", " + ptr(o.getScaleGrad()) + ", " + ptr(o.getBiasGrad()) + ")");
        return success();
      })
      .Case([&](tc::LayerNormOp o) {
        call("tk::layerNorm(ctx, " + layerNormDims(o.getInput(), o.getAxis()) + ", " +
             ptr(o.getInput()) + ", " + ptr(o.getScale()) + ", " +
             (o.getBias() ? ptr(o.getBias()) : "nullptr") + ", " +
             literal(o.getEpsilon().convertToFloat(), true) + ", " +
             ptr(o.getResult()) + ")");
        return success();
      })
      .Case([&](tc::LayerNormBackwardOp o) {
        call("tk::layerNormBackward(ctx, " + layerNormDims(o.getInput(), o.getAxis()) + ", " +
             ptr(o.getInput()) + ", " + ptr(o.getScale()) + ", " + ptr(o.getResultGrad()) +
             ", " + literal(o.getEpsilon().convertToFloat(), true) + ", " +
             ptr(o.getInputGrad()) + ", " + ptr(o.getScaleGrad()) + ", " +
             ptr(o.getBiasGrad()) + ")");
        return success();
      })
      .Case<tc::SoftmaxOp, tc::LogSoftmaxOp>([&](Operation *o) {
        int64_t axis = o->getAttrOfType<IntegerAttr>("axis").getInt();
        ArrayRef<int64_t> s = shapeOf(o->getOperand(0));
        int64_t outer = 1, inner = 1;
        for (int64_t d = 0; d < axis; ++d)
          outer *= s[d];
        for (size_t d = axis + 1; d < s.size(); ++d)
          inner *= s[d];
        call("tk::softmax(ctx, " + std::to_string(outer) + ", " + std::to_string(s[axis]) +
             ", " + std::to_string(inner) + ", " + ptr(o->getOperand(0)) + ", " +
             ptr(o->getResult(0)) + ", " +
             (isa<tc::LogSoftmaxOp>(o) ? "true" : "false") + ")");
        return success();
      })
      .Case([&](tc::ReduceSumOp o) { return emitReduce(o, o.getAxes(), "Sum"); })
      .Case([&](tc::ReduceMeanOp o) { return emitReduce(o, o.getAxes(), "Mean"); })
      .Case([&](tc::ReduceMaxOp o) { return emitReduce(o, o.getAxes(), "Max"); })
      .Case([&](tc::TransposeOp o) {
        std::vector<int64_t> own = rowMajorStrides(shapeOf(o.getInput())), strides;
        for (int64_t p : o.getPerm())
          strides.push_back(own[p]);
        ArrayRef<int64_t> out = shapeOf(o.getResult());
        return emitStridedCopy(o, "transpose", o.getInput(), out, strides,
                               0, rowMajorStrides(out), 0, ptr(o.getResult()));
      })
      .Case([&](tc::SliceOp o) {
        auto [strides, base] = sliceStrides(shapeOf(o.getInput()), o.getStarts(), o.getSteps());
        ArrayRef<int64_t> out = shapeOf(o.getResult());
        return emitStridedCopy(o, "slice", o.getInput(), out, strides, base,
                               rowMajorStrides(out), 0, ptr(o.getResult()));
      })
      .Case([&](tc::SliceBackwardOp o) {
        // Zeros, then dy copied onto the sliced positions.
        auto [strides, base] = sliceStrides(o.getInputShape(), o.getStarts(), o.getSteps());
        call("ctx.fill(" + ptr(o.getResult()) + ", 0, " +
             std::to_string(countOf(o.getResult())) + " * sizeof(" +
             cType(o.getResult().getType()) + "))");
        ArrayRef<int64_t> dy = shapeOf(o.getResultGrad());
        return emitStridedCopy(o, "slice_backward", o.getResultGrad(), dy,
                               rowMajorStrides(dy), 0, strides, base, ptr(o.getResult()));
      })
      .Case([&](tc::ExpandOp o) {
        ArrayRef<int64_t> out = shapeOf(o.getResult());
        return emitStridedCopy(o, "expand", o.getInput(), out,
                               broadcastStrides(shapeOf(o.getInput()), out), 0,
                               rowMajorStrides(out), 0, ptr(o.getResult()));
      })
      .Case([&](tc::ConcatOp o) {
        ArrayRef<int64_t> out = shapeOf(o.getResult());
        std::vector<int64_t> outStrides = rowMajorStrides(out);
        int64_t axis = o.getAxis(), at = 0;
        for (Value in : o.getInputs()) {
          ArrayRef<int64_t> shape = shapeOf(in);
          if (failed(emitStridedCopy(o, "concat", in, shape,
                                     rowMajorStrides(shape), 0, outStrides,
                                     at * outStrides[axis], ptr(o.getResult()))))
            return failure();
          at += shape[axis];
        }
        return success();
      })
      .Case([&](tc::GatherOp o) -> LogicalResult {
        if (!cast<ShapedType>(o.getIndices().getType()).getElementType().isInteger(64))
          return o.emitError("codegen supports i64 gather indices only");
        call("tk::gather(ctx, " + gatherDims(shapeOf(o.getData()), o.getAxis()) +
             ", sizeof(" + cType(o.getData().getType()) +
             "), " + ptr(o.getData()) + ", " + ptr(o.getIndices()) + ", " +
             std::to_string(countOf(o.getIndices())) + ", " + ptr(o.getResult()) + ")");
        return success();
      })
      .Case([&](tc::GatherBackwardOp o) -> LogicalResult {
        if (!cast<ShapedType>(o.getIndices().getType()).getElementType().isInteger(64))
          return o.emitError("codegen supports i64 gather indices only");
        call("tk::gatherBackward(ctx, " + gatherDims(o.getDataShape(), o.getAxis()) + ", " +
             ptr(o.getResultGrad()) + ", " + ptr(o.getIndices()) + ", " +
             std::to_string(countOf(o.getIndices())) + ", " +
             std::to_string(o.getPaddingIndexAttr() ? o.getPaddingIndexAttr().getInt() : -1) +
             ", " + ptr(o.getResult()) + ")");
        return success();
      })
      .Case<tc::SoftmaxCrossEntropyOp, tc::NllLossOp, tc::MseLossOp>(
          [&](Operation *o) { return emitLoss(o); })
      .Case<tc::CumSumOp, tc::TileOp, tc::TriluOp, tc::PadOp, tc::PadBackwardOp,
            tc::ScatterNDOp, tc::ArgMaxOp, tc::ArgMinOp, tc::GatherElementsOp,
            tc::GatherElementsBackwardOp>(
          [&](Operation *o) { return emitIndexing(o); })
      .Default([&](Operation *o) {
        return o->emitError("codegen does not support ") << o->getName() << " yet";
      });
}

/// Training-mode dropout: each element redraws its keep decision from the
/// step's key (trainc::random), so the gradient's dropout of dy applies the
/// forward's mask.
LogicalResult ProgramEmitter::emitDropout(tc::DropoutOp op) {
  Type elem = cast<ShapedType>(op.getType()).getElementType();
  bool f32 = elem.isF32();
  float ratio = op.getRatio().convertToFloat();
  std::string t = cType(elem);
  // A multiplication by 0, not a select, drops an element: NaN and
  // infinity stay NaN, as in PyTorch's input * mask * scale.
  std::string code = "  out[i] = in[i] * (trainc::random::dropoutKeeps(key, " +
                     std::to_string(op.getStream()) + "u, i, " + literal(ratio, true) +
                     ") ? " + literal(1.0 / (1.0 - static_cast<double>(ratio)), f32) +
                     " : " + t + "(0));\n";
  std::vector<std::string> comment = {
      opComment(op), "keeps an element with probability 1 - " + literal(ratio, true) +
                         " (stream " + std::to_string(op.getStream()) + ")"};
  std::string name = kernels.addKernel(
      "dropout", comment, {{t, "in", false}, {"int64_t", "key", false}, {t, "out", true}},
      countOf(op.getResult()), code);
  call(name + "(ctx, " + ptr(op.getInput()) + ", " + ptr(op.getKey()) + ", " +
       ptr(op.getResult()) + ")");
  return success();
}

/// A fused optimizer update: one kernel reads the parameter, its gradient
/// and its state once and writes their next values (in place when planned
/// so; the body reads every element before it writes it).
LogicalResult ProgramEmitter::emitUpdate(Operation *op) {
  bool sgd = isa<tc::SgdUpdateOp>(op);
  bool decoupled = !sgd && cast<tc::AdamUpdateOp>(op).getDecoupled();
  std::vector<std::string> tensors =
      sgd ? std::vector<std::string>{"param", "grad", "buf"}
          : std::vector<std::string>{"param", "grad", "m", "v"};
  std::vector<std::string> scalars =
      sgd ? std::vector<std::string>{"lr", "momentum", "wd"}
          : std::vector<std::string>{"lr",  "beta1", "beta2", "omb1",   "omb2",
                                     "eps", "wd",    "step",  "bc2sqrt"};
  if (op->getNumOperands() > tensors.size() + scalars.size())
    scalars.push_back("scale");
  std::vector<KernelParam> kparams;
  for (const std::string &t : tensors)
    kparams.push_back({"float", t, false});
  for (const std::string &h : scalars)
    kparams.push_back({"float", h, false});
  std::vector<std::string> outs = sgd ? std::vector<std::string>{"param_out", "buf_out"}
                                      : std::vector<std::string>{"param_out", "m_out", "v_out"};
  for (const std::string &o : outs)
    kparams.push_back({"float", o, true});
  std::string g = scalars.back() == "scale" ? "grad[i] * scale[0]" : "grad[i]";
  std::string code;
  if (sgd) {
    bool nesterov = cast<tc::SgdUpdateOp>(op).getNesterov();
    code = "  const float p = param[i];\n"
           "  const float d = " + g + " + wd[0] * p;\n"
           "  const float b = momentum[0] * buf[i] + d;\n"
           "  param_out[i] = p - lr[0] * " + (nesterov ? "(d + momentum[0] * b)" : "b") + ";\n"
           "  buf_out[i] = b;\n";
  } else {
    // PyTorch's order (torch.optim.Adam, _single_tensor_adam): omb1/omb2
    // are 1 - beta1/2, step is lr / bias_correction1 and bc2sqrt is
    // sqrt(bias_correction2), each computed in double by the trainer.
    code = std::string("  float p = param[i], g = ") + g + ";\n" +
           (decoupled ? "  p = p * (1.0f - lr[0] * wd[0]);\n"
                      : "  (void)lr; // in step\n  g = g + wd[0] * p;\n") +
           "  const float m1 = beta1[0] * m[i] + omb1[0] * g;\n"
           "  const float v1 = beta2[0] * v[i] + (omb2[0] * g) * g;\n"
           "  param_out[i] = p - (step[0] * m1) / (sqrtf(v1) / bc2sqrt[0] + eps[0]);\n"
           "  m_out[i] = m1;\n"
           "  v_out[i] = v1;\n";
  }
  std::vector<std::string> comment = {opComment(op)};
  bool anyInPlace = llvm::any_of(op->getResults(), [&](Value r) { return inPlace.contains(r); });
  if (anyInPlace)
    comment.push_back("in place: the results overwrite the parameter and its state");
  std::string name = kernels.addKernel(
      sgd ? "sgd_update" : (decoupled ? "adamw_update" : "adam_update"), comment, kparams,
      countOf(op->getResult(0)), code, /*mayAlias=*/true);
  std::string args = "ctx";
  for (Value v : op->getOperands())
    args += ", " + ptr(v);
  for (Value r : op->getResults())
    args += ", " + ptr(r);
  call(name + "(" + args + ")");
  return success();
}

LogicalResult ProgramEmitter::emitPointwise(Operation *op) {
  Value result = op->getResult(0);
  ArrayRef<int64_t> out = shapeOf(result);
  Type outElem = cast<ShapedType>(result.getType()).getElementType();
  bool needsCoords = false;
  for (Value v : op->getOperands())
    needsCoords |= shapeOf(v) != out && countOf(v) != 1;

  std::vector<KernelParam> kparams;
  std::string code;
  if (needsCoords) {
    SmallVector<bool> used(out.size(), false);
    for (Value v : op->getOperands())
      if (shapeOf(v) != out && countOf(v) != 1)
        for (auto [d, stride] : llvm::enumerate(broadcastStrides(shapeOf(v), out)))
          used[d] = used[d] || stride != 0;
    code += decomposeIndex(out, "i", "c", "  ", used);
  }
  std::vector<std::string> a;
  for (auto [k, v] : llvm::enumerate(op->getOperands())) {
    std::string name = "in" + std::to_string(k);
    kparams.push_back({cType(v.getType()), name, false});
    std::string index = shapeOf(v) == out ? "i"
                        : countOf(v) == 1  ? "0"
                                           : linearIndex(broadcastStrides(shapeOf(v), out), 0, "c");
    code += "  const " + cType(v.getType()) + " a" + std::to_string(k) + " = " + name + "[" +
            index + "];\n";
    a.push_back("a" + std::to_string(k));
  }
  kparams.push_back({cType(result.getType()), "out", true});

  Type inElem = cast<ShapedType>(op->getOperand(0).getType()).getElementType();
  bool f32 = inElem.isF32();
  std::string t = cType(inElem);
  auto fn = [&](StringRef name) { return (name + (f32 ? "f" : "")).str(); };
  std::string expr;
  StringRef mnemonic = op->getName().stripDialect();
  if (mnemonic == "neg") expr = "-" + a[0];
  else if (mnemonic == "abs") expr = isa<FloatType>(inElem) ? fn("fabs") + "(" + a[0] + ")"
                                                            : "(" + a[0] + " < 0 ? -" + a[0] + " : " + a[0] + ")";
  // Comparison-based ops propagate NaN as PyTorch does: each test is
  // written so that a NaN operand selects the NaN (relu(-0) is -0, a tie of
  // max/min selects the first operand, as std::max/std::min in ATen).
  else if (mnemonic == "relu") expr = "(" + a[0] + " < " + t + "(0) ? " + t + "(0) : " + a[0] + ")";
  else if (mnemonic == "sigmoid") expr = f32 ? "trainc::gen::sigmoid(" + a[0] + ")"
                                             : "1.0 / (1.0 + exp(-" + a[0] + "))";
  else if (mnemonic == "tanh" || mnemonic == "erf" || mnemonic == "exp" ||
           mnemonic == "log" || mnemonic == "sqrt")
    expr = fn(mnemonic) + "(" + a[0] + ")";
  else if (mnemonic == "reciprocal") expr = t + "(1) / " + a[0];
  else if (mnemonic == "not") expr = "!" + a[0];
  // sign keeps NaN (both tests fail: a - a); round is rint under the default
  // rounding mode, halves to even as ONNX Round.
  else if (mnemonic == "sign")
    expr = isa<FloatType>(inElem)
               ? "(" + a[0] + " > " + t + "(0) ? " + t + "(1) : " + a[0] + " < " + t + "(0) ? " + t +
                     "(-1) : " + a[0] + " - " + a[0] + ")"
               : "(" + a[0] + " > 0 ? " + t + "(1) : " + a[0] + " < 0 ? " + t + "(-1) : " + t + "(0))";
  else if (mnemonic == "ceil" || mnemonic == "floor")
    expr = fn(mnemonic) + "(" + a[0] + ")";
  else if (mnemonic == "round") expr = fn("rint") + "(" + a[0] + ")";
  else if (auto gelu = dyn_cast<tc::GeluOp>(op)) {
    if (!f32)
      return op->emitError("codegen supports f32 gelu only");
    expr = (gelu.getApproximate() == "tanh" ? "trainc::gen::geluTanh(" : "trainc::gen::geluErf(") +
           a[0] + ")";
  } else if (auto leaky = dyn_cast<tc::LeakyReluOp>(op)) {
    // NaN fails the test and is scaled: NaN.
    expr = "(" + a[0] + " >= " + t + "(0) ? " + a[0] + " : " +
           literal(leaky.getAlpha().convertToFloat(), f32) + " * " + a[0] + ")";
  } else if (auto clip = dyn_cast<tc::ClipOp>(op)) {
    // NaN fails both tests and passes through (torch.clamp).
    expr = a[0];
    if (auto lo = clip.getMin())
      expr = "(" + expr + " < " + literal(lo->convertToFloat(), f32) + " ? " +
             literal(lo->convertToFloat(), f32) + " : " + expr + ")";
    if (auto hi = clip.getMax())
      expr = "(" + expr + " > " + literal(hi->convertToFloat(), f32) + " ? " +
             literal(hi->convertToFloat(), f32) + " : " + expr + ")";
  } else if (mnemonic == "add") expr = a[0] + " + " + a[1];
  else if (mnemonic == "sub") expr = a[0] + " - " + a[1];
  else if (mnemonic == "mul") expr = a[0] + " * " + a[1];
  else if (mnemonic == "div") expr = a[0] + " / " + a[1];
  else if (mnemonic == "pow") expr = fn("pow") + "(" + a[0] + ", " + a[1] + ")";
  else if (mnemonic == "max" || mnemonic == "min") {
    // b when it wins or is NaN, else a (NaN included): torch.maximum/minimum.
    std::string wins = mnemonic == "max" ? a[0] + " < " + a[1] : a[1] + " < " + a[0];
    if (isa<FloatType>(inElem))
      wins += " || " + a[1] + " != " + a[1];
    expr = "(" + wins + " ? " + a[1] + " : " + a[0] + ")";
  }
  else if (mnemonic == "equal") expr = a[0] + " == " + a[1];
  else if (mnemonic == "less") expr = a[0] + " < " + a[1];
  else if (mnemonic == "less_equal") expr = a[0] + " <= " + a[1];
  else if (mnemonic == "greater") expr = a[0] + " > " + a[1];
  else if (mnemonic == "greater_equal") expr = a[0] + " >= " + a[1];
  else if (mnemonic == "and") expr = a[0] + " && " + a[1];
  else if (mnemonic == "or") expr = a[0] + " || " + a[1];
  else if (mnemonic == "where") expr = a[0] + " ? " + a[1] + " : " + a[2];
  else if (auto mod = dyn_cast<tc::ModOp>(op))
    expr = modExpr(a[0], a[1], isa<FloatType>(inElem), f32, mod.getFmod(), t);
  else if (mnemonic == "cast")
    expr = outElem.isInteger(1) ? a[0] + " != 0" : "static_cast<" + cType(outElem) + ">(" + a[0] + ")";
  else
    return op->emitError("codegen has no pointwise rule for ") << op->getName();
  code += "  out[i] = " + expr + ";\n";

  std::vector<std::string> comment = {opComment(op)};
  std::string name = kernels.addKernel(mnemonic, comment, kparams, countOf(result), code);
  std::string args = "ctx";
  for (Value v : op->getOperands())
    args += ", " + ptr(v);
  call(name + "(" + args + ", " + ptr(result) + ")");
  return success();
}

/// Cumulative sums, tiles, triangles and pads: generated kernels whose
/// bodies come from IndexKernels.cpp.
LogicalResult ProgramEmitter::emitIndexing(Operation *op) {
  Value in = op->getOperand(0), out = op->getResult(0);
  Type elem = cast<ShapedType>(in.getType()).getElementType();
  std::string t = cType(elem), what, code;
  int64_t count = countOf(out);
  if (auto scatter = dyn_cast<tc::ScatterNDOp>(op)) {
    // A copy of data, then one kernel element per slice element.
    std::vector<std::string> comment = {opComment(op)};
    std::string copy = kernels.addKernel("scatter_nd_copy", comment,
                                         {{t, "in", false}, {t, "out", true}}, count,
                                         "  out[i] = in[i];\n");
    call(copy + "(ctx, " + ptr(in) + ", " + ptr(out) + ")");
    ArrayRef<int64_t> idx = shapeOf(scatter.getIndices());
    int64_t q = idx.back(), tuples = q == 0 ? 1 : countOf(scatter.getIndices()) / q, slice = 1;
    if (q == 0)
      for (size_t d = 0; d + 1 < idx.size(); ++d)
        tuples *= idx[d];
    for (size_t d = q; d < shapeOf(in).size(); ++d)
      slice *= shapeOf(in)[d];
    std::string name = kernels.addKernel(
        "scatter_nd", comment,
        {{cType(scatter.getIndices().getType()), "idx", false}, {t, "upd", false},
         {t, "out", true}},
        slice,
        scatterNDBody(shapeOf(in), q, tuples, slice, scatter.getReduction(),
                      isa<FloatType>(elem)));
    call(name + "(ctx, " + ptr(scatter.getIndices()) + ", " + ptr(scatter.getUpdates()) + ", " +
         ptr(out) + ")");
    return success();
  }
  if (isa<tc::ArgMaxOp, tc::ArgMinOp>(op)) {
    bool max = isa<tc::ArgMaxOp>(op);
    int64_t axis = cast<IntegerAttr>(op->getAttr("axis")).getInt();
    bool last = cast<BoolAttr>(op->getAttr("select_last_index")).getValue();
    std::string name = kernels.addKernel(
        max ? "argmax" : "argmin", {opComment(op)}, {{t, "in", false}, {"int64_t", "out", true}},
        count, argReduceBody(shapeOf(in), axis, max, last, isa<FloatType>(elem)));
    call(name + "(ctx, " + ptr(in) + ", " + ptr(out) + ")");
    return success();
  }
  if (isa<tc::GatherElementsOp, tc::GatherElementsBackwardOp>(op)) {
    bool back = isa<tc::GatherElementsBackwardOp>(op);
    Value idx = op->getOperand(1);
    int64_t axis = cast<IntegerAttr>(op->getAttr("axis")).getInt();
    std::string name = kernels.addKernel(
        back ? "gather_elements_backward" : "gather_elements", {opComment(op)},
        {{t, "in", false}, {cType(idx.getType()), "idx", false}, {t, "out", true}}, count,
        back ? gatherElementsBackwardBody(shapeOf(out), shapeOf(idx), axis, t)
             : gatherElementsBody(shapeOf(in), shapeOf(idx), axis, t));
    call(name + "(ctx, " + ptr(in) + ", " + ptr(idx) + ", " + ptr(out) + ")");
    return success();
  }
  if (auto cumsum = dyn_cast<tc::CumSumOp>(op)) {
    what = "cumsum";
    code = cumsumBody(shapeOf(in), cumsum.getAxis(), cumsum.getExclusive(), cumsum.getReverse(),
                      t);
    count = cumsumLines(shapeOf(in), cumsum.getAxis());
  } else if (isa<tc::TileOp>(op)) {
    what = "tile";
    code = tileBody(shapeOf(in), shapeOf(out));
  } else if (auto trilu = dyn_cast<tc::TriluOp>(op)) {
    what = trilu.getUpper() ? "triu" : "tril";
    code = triluBody(shapeOf(in), trilu.getUpper(), trilu.getK(), t);
  } else if (auto pad = dyn_cast<tc::PadOp>(op)) {
    what = "pad_" + pad.getMode().str();
    double v = pad.getValue().convertToDouble();
    std::string value = isa<FloatType>(elem) ? literal(v, elem.isF32())
                        : elem.isInteger(1)  ? std::string(v != 0 ? "true" : "false")
                                             : t + "(" + intLiteral(static_cast<int64_t>(v)) + ")";
    code = padBody(shapeOf(in), shapeOf(out), pad.getPads(), pad.getMode(), value);
  } else {
    auto back = cast<tc::PadBackwardOp>(op);
    what = "pad_" + back.getMode().str() + "_backward";
    code = padBackwardBody(shapeOf(out), shapeOf(in), back.getPads(), back.getMode(), t);
  }
  std::vector<std::string> comment = {opComment(op)};
  std::string name = kernels.addKernel(what, comment, {{t, "in", false}, {t, "out", true}}, count,
                                       code);
  call(name + "(ctx, " + ptr(in) + ", " + ptr(out) + ")");
  return success();
}

LogicalResult ProgramEmitter::emitStridedCopy(Operation *op, StringRef what, Value in,
                                              ArrayRef<int64_t> shape,
                                              ArrayRef<int64_t> inStrides, int64_t inBase,
                                              ArrayRef<int64_t> outStrides, int64_t outBase,
                                              StringRef outPtr) {
  std::string t = cType(in.getType());
  std::vector<int64_t> dense = rowMajorStrides(shape);
  // A side that is walked densely is indexed by `i` itself.
  bool denseOut = outBase == 0 && ArrayRef<int64_t>(dense) == outStrides;
  bool denseIn = inBase == 0 && ArrayRef<int64_t>(dense) == inStrides;
  SmallVector<bool> used(shape.size(), false);
  for (size_t d = 0; d < shape.size(); ++d)
    used[d] = (!denseIn && inStrides[d] != 0) || (!denseOut && outStrides[d] != 0);
  std::string code = decomposeIndex(shape, "i", "c", "  ", used);
  code += "  out[" + (denseOut ? std::string("i") : linearIndex(outStrides, outBase, "c")) +
          "] = in[" + (denseIn ? std::string("i") : linearIndex(inStrides, inBase, "c")) +
          "];\n";
  std::vector<std::string> comment = {opComment(op)};
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  std::string name = kernels.addKernel(what, comment, {{t, "in", false}, {t, "out", true}},
                                       count, code);
  call(name + "(ctx, " + ptr(in) + ", " + outPtr.str() + ")");
  return success();
}

LogicalResult ProgramEmitter::emitMatMul(tc::MatMulOp op) {
  ArrayRef<int64_t> a = shapeOf(op.getLhs()), b = shapeOf(op.getRhs());
  if (!cast<ShapedType>(op.getLhs().getType()).getElementType().isF32())
    return op.emitError("codegen supports f32 matmul only");
  int64_t m = a.size() == 1 ? 1 : a[a.size() - 2], k = a.back();
  int64_t n = b.size() == 1 ? 1 : b.back();
  auto batchOf = [](ArrayRef<int64_t> s) {
    int64_t p = 1;
    for (size_t d = 0; d + 2 < s.size(); ++d)
      p *= s[d];
    return p;
  };
  int64_t batch = countOf(op.getResult()) / (m * n);
  int64_t ba = batchOf(a), bb = batchOf(b);
  if ((ba != batch && ba != 1) || (bb != batch && bb != 1))
    return op.emitError("codegen does not support partially broadcast matmul batches yet");
  int64_t strideA = ba == 1 ? 0 : m * k, strideB = bb == 1 ? 0 : k * n;
  call("tk::gemm(ctx, false, false, " + std::to_string(m) + ", " + std::to_string(n) + ", " +
       std::to_string(k) + ", 1.0f, " + ptr(op.getLhs()) + ", " + std::to_string(k) + ", " +
       std::to_string(strideA) + ", " + ptr(op.getRhs()) + ", " + std::to_string(n) + ", " +
       std::to_string(strideB) + ", 0.0f, " + ptr(op.getResult()) + ", " + std::to_string(n) +
       ", " + std::to_string(m * n) + ", " + std::to_string(batch) + ")");
  return success();
}

LogicalResult ProgramEmitter::emitGemm(tc::GemmOp op) {
  ArrayRef<int64_t> a = shapeOf(op.getA()), y = shapeOf(op.getResult());
  int64_t m = y[0], n = y[1], k = op.getTransA() ? a[0] : a[1];
  float beta = 0.0f;
  if (Value c = op.getC()) {
    // Y starts as C broadcast to [M, N]; the GEMM then accumulates into it.
    if (failed(emitStridedCopy(op, "broadcast_bias", c, y,
                               broadcastStrides(shapeOf(c), y), 0, rowMajorStrides(y), 0,
                               ptr(op.getResult()))))
      return failure();
    beta = op.getBeta().convertToFloat();
  }
  int64_t lda = a[1], ldb = shapeOf(op.getB())[1];
  call("tk::gemm(ctx, " + std::string(op.getTransA() ? "true" : "false") + ", " +
       (op.getTransB() ? "true" : "false") + ", " + std::to_string(m) + ", " +
       std::to_string(n) + ", " + std::to_string(k) + ", " +
       literal(op.getAlpha().convertToFloat(), true) + ", " + ptr(op.getA()) + ", " +
       std::to_string(lda) + ", 0, " + ptr(op.getB()) + ", " + std::to_string(ldb) + ", 0, " +
       literal(beta, true) + ", " + ptr(op.getResult()) + ", " + std::to_string(n) + ", 0, 1)");
  return success();
}

/// The runtime's Conv2dDesc for input x, weights w and output y.
static std::string convDesc(ArrayRef<int64_t> x, ArrayRef<int64_t> w, ArrayRef<int64_t> y,
                            ArrayRef<int64_t> s, ArrayRef<int64_t> p, ArrayRef<int64_t> d,
                            int64_t group) {
  return llvm::formatv("{{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, {10}, "
                       "{11}, {12}, {13}, {14}, {15}, {16}, {17}}",
                       x[0], x[1], x[2], x[3], w[0], w[2], w[3], s[0], s[1], p[0], p[1], p[2],
                       p[3], d[0], d[1], group, y[2], y[3])
      .str();
}

/// Emits `{ const DescType d = desc; TRAINC_RETURN_IF_ERROR(call); }`.
void ProgramEmitter::callWithDesc(StringRef type, const std::string &desc,
                                  const std::string &statement) {
  body += "  {\n    const trainc::rt::" + type.str() + " d = " + desc + ";\n  ";
  call(statement);
  body += "  }\n";
}

LogicalResult ProgramEmitter::emitConv(tc::ConvOp op) {
  ArrayRef<int64_t> x = shapeOf(op.getInput());
  if (x.size() != 4)
    return op.emitError("codegen supports 2-D convolution only");
  callWithDesc("Conv2dDesc",
               convDesc(x, shapeOf(op.getWeight()), shapeOf(op.getResult()), op.getStrides(),
                        op.getPads(), op.getDilations(), op.getGroup()),
               "tk::conv2d(ctx, d, " + ptr(op.getInput()) + ", " + ptr(op.getWeight()) + ", " +
                   (op.getBias() ? ptr(op.getBias()) : "nullptr") + ", " +
                   ptr(op.getResult()) + ")");
  return success();
}

LogicalResult ProgramEmitter::emitConvBackward(Operation *op) {
  if (auto data = dyn_cast<tc::ConvBackwardDataOp>(op)) {
    ArrayRef<int64_t> x = data.getInputShape();
    if (x.size() != 4)
      return op->emitError("codegen supports 2-D convolution only");
    callWithDesc("Conv2dDesc",
                 convDesc(x, shapeOf(data.getWeight()), shapeOf(data.getResultGrad()),
                          data.getStrides(), data.getPads(), data.getDilations(),
                          data.getGroup()),
                 "tk::conv2dBackwardData(ctx, d, " + ptr(data.getResultGrad()) + ", " +
                     ptr(data.getWeight()) + ", " + ptr(data.getResult()) + ")");
    return success();
  }
  auto filter = cast<tc::ConvBackwardFilterOp>(op);
  ArrayRef<int64_t> x = shapeOf(filter.getInput());
  if (x.size() != 4)
    return op->emitError("codegen supports 2-D convolution only");
  callWithDesc("Conv2dDesc",
               convDesc(x, filter.getWeightShape(), shapeOf(filter.getResultGrad()),
                        filter.getStrides(), filter.getPads(), filter.getDilations(),
                        filter.getGroup()),
               "tk::conv2dBackwardFilter(ctx, d, " + ptr(filter.getInput()) + ", " +
                   ptr(filter.getResultGrad()) + ", " + ptr(filter.getResult()) + ")");
  return success();
}

LogicalResult ProgramEmitter::emitPool(Operation *op) {
  // Forward: (x) -> y. Backward: max (x, dy) -> dx, avg (dy) -> dx.
  ArrayRef<int64_t> x = shapeOf(op->getOperand(0)), y = shapeOf(op->getResult(0));
  if (isa<tc::MaxPoolBackwardOp>(op))
    y = shapeOf(op->getOperand(1));
  else if (isa<tc::AvgPoolBackwardOp>(op))
    std::swap(x, y);
  if (x.size() != 4)
    return op->emitError("codegen supports 2-D pooling only");
  auto attr = [&](StringRef name) { return op->getAttrOfType<DenseI64ArrayAttr>(name); };
  ArrayRef<int64_t> k = attr("kernel_shape").asArrayRef(), s = attr("strides").asArrayRef(),
                    p = attr("pads").asArrayRef();
  SmallVector<int64_t> d = {1, 1};
  if (auto dil = attr("dilations"))
    d.assign(dil.asArrayRef().begin(), dil.asArrayRef().end());
  std::string desc =
      llvm::formatv("{{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, {10}, {11}, {12}, "
                    "{13}, {14}, {15}}",
                    x[0], x[1], x[2], x[3], k[0], k[1], s[0], s[1], p[0], p[1], p[2], p[3], d[0],
                    d[1], y[2], y[3])
          .str();
  std::string statement;
  auto flag = [&](StringRef name) {
    return op->getAttrOfType<BoolAttr>(name) && op->getAttrOfType<BoolAttr>(name).getValue()
               ? std::string("true")
               : std::string("false");
  };
  if (isa<tc::AvgPoolOp>(op))
    statement = "tk::avgPool2d(ctx, d, " + flag("count_include_pad") + ", " +
                ptr(op->getOperand(0)) + ", " + ptr(op->getResult(0)) + ")";
  else if (isa<tc::MaxPoolOp>(op))
    statement = "tk::maxPool2d(ctx, d, " + ptr(op->getOperand(0)) + ", " +
                ptr(op->getResult(0)) + ")";
  else if (isa<tc::MaxPoolBackwardOp>(op))
    statement = "tk::maxPool2dBackward(ctx, d, " + ptr(op->getOperand(0)) + ", " +
                ptr(op->getOperand(1)) + ", " + ptr(op->getResult(0)) + ")";
  else
    statement = "tk::avgPool2dBackward(ctx, d, " + flag("count_include_pad") + ", " +
                ptr(op->getOperand(0)) + ", " + ptr(op->getResult(0)) + ")";
  callWithDesc("Pool2dDesc", desc, statement);
  return success();
}

LogicalResult ProgramEmitter::emitReduce(Operation *op, ArrayRef<int64_t> axesAttr,
                                         StringRef kind) {
  Value in = op->getOperand(0), out = op->getResult(0);
  ArrayRef<int64_t> s = shapeOf(in);
  SmallVector<int64_t> axes(axesAttr.begin(), axesAttr.end());
  if (axes.empty())
    for (size_t d = 0; d < s.size(); ++d)
      axes.push_back(d);
  bool contiguous = axes.back() - axes.front() + 1 == static_cast<int64_t>(axes.size());
  if (contiguous && cType(in.getType()) == "float") {
    int64_t outer = 1, mid = 1, inner = 1;
    for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d)
      (d < axes.front() ? outer : d > axes.back() ? inner : mid) *= s[d];
    call("tk::reduce(ctx, trainc::rt::ReduceKind::" + kind.str() + ", " +
         std::to_string(outer) + ", " + std::to_string(mid) + ", " + std::to_string(inner) +
         ", " + ptr(in) + ", " + ptr(out) + ")");
    return success();
  }
  // Scattered axes: a generated kernel, one output element per thread.
  SmallVector<int64_t> kept, keptStrides, reduced, reducedStrides;
  std::vector<int64_t> strides = rowMajorStrides(s);
  for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) {
    bool r = llvm::is_contained(axes, d);
    (r ? reduced : kept).push_back(s[d]);
    (r ? reducedStrides : keptStrides).push_back(strides[d]);
  }
  std::string t = cType(in.getType());
  std::string code = decomposeIndex(kept, "i", "c", "  ");
  code += "  const int64_t base = " + linearIndex(keptStrides, 0, "c") + ";\n";
  code += kind == "Max" ? "  " + t + " acc = in[base];\n" : "  " + t + " acc = 0;\n";
  int64_t count = 1;
  for (int64_t r : reduced)
    count *= r;
  code += "  for (int64_t j = 0; j < " + std::to_string(count) + "; ++j) {\n";
  code += decomposeIndex(reduced, "j", "r", "    ");
  code += "    const " + t + " v = in[base + " + linearIndex(reducedStrides, 0, "r") + "];\n";
  bool isFloat = isa<FloatType>(cast<ShapedType>(in.getType()).getElementType());
  if (kind != "Max")
    code += "    acc += v;\n";
  else if (isFloat) // a NaN, once met, stays the maximum (torch.amax)
    code += "    acc = (v > acc || v != v) ? v : acc;\n";
  else
    code += "    acc = v > acc ? v : acc;\n";
  code += "  }\n";
  code += kind == "Mean" ? "  out[i] = acc / " + t + "(" + std::to_string(count) + ");\n"
                         : "  out[i] = acc;\n";
  std::vector<std::string> comment = {opComment(op)};
  std::string name = kernels.addKernel(("reduce_" + kind.lower()), comment,
                                       {{t, "in", false}, {t, "out", true}}, countOf(out), code);
  call(name + "(ctx, " + ptr(in) + ", " + ptr(out) + ")");
  return success();
}

LogicalResult ProgramEmitter::emitLoss(Operation *op) {
  auto reduction = [&](StringRef r) {
    return std::string("trainc::rt::Reduction::") +
           (r == "mean" ? "Mean" : r == "sum" ? "Sum" : "None");
  };
  if (auto mse = dyn_cast<tc::MseLossOp>(op)) {
    call("tk::mseLoss(ctx, " + std::to_string(countOf(mse.getPrediction())) + ", " +
         ptr(mse.getPrediction()) + ", " + ptr(mse.getTarget()) + ", " +
         reduction(mse.getReduction()) + ", " + ptr(mse.getResult()) + ")");
    return success();
  }
  Value scores = op->getOperand(0), labels = op->getOperand(1);
  if (!cast<ShapedType>(labels.getType()).getElementType().isInteger(64))
    return op->emitError("codegen supports i64 labels only");
  ArrayRef<int64_t> s = shapeOf(scores);
  int64_t inner = countOf(scores) / (s[0] * s[1]);
  auto ignore = op->getAttrOfType<IntegerAttr>("ignore_index");
  std::string fn = isa<tc::SoftmaxCrossEntropyOp>(op) ? "softmaxCrossEntropy" : "nllLoss";
  call("tk::" + fn + "(ctx, " + std::to_string(s[0]) + ", " + std::to_string(s[1]) + ", " +
       std::to_string(inner) + ", " + ptr(scores) + ", " + ptr(labels) + ", " +
       (ignore ? "true" : "false") + ", " + std::to_string(ignore ? ignore.getInt() : 0) +
       ", " + reduction(op->getAttrOfType<StringAttr>("reduction").getValue()) + ", " +
       ptr(op->getResult(0)) + ")");
  return success();
}

LogicalResult ProgramEmitter::emitReturn(func::ReturnOp op) {
  auto func = op->getParentOfType<func::FuncOp>();
  body += "  // outputs\n";
  for (auto [k, v] : llvm::enumerate(op.getOperands())) {
    auto name = func.getResultAttrOfType<StringAttr>(k, tc::kOutputAttrName);
    std::string outName = name ? name.getValue().str() : "output" + std::to_string(k);
    std::string t = cType(v.getType());
    std::string dst;
    if (!trainRole) {
      outputs.emplace_back(outName, v.getType());
      dst = "static_cast<" + t + " *>(args.outputs[" + std::to_string(k) + "])";
    } else if (k == 0) {
      dst = "static_cast<" + t + " *>(args.loss)";
    } else if (auto p = func.getResultAttrOfType<FlatSymbolRefAttr>(k, "tc.update")) {
      // In place: every read of the old value happened before the return.
      dst = "static_cast<" + t + " *>(args.params[" +
            std::to_string(paramIndex.lookup(p.getValue())) + "])";
    } else if (auto st = func.getResultAttrOfType<StringAttr>(k, "tc.state_update")) {
      auto it = llvm::find_if(states, [&](const auto &e) { return e.first == st.getValue(); });
      if (it == states.end())
        return op.emitError("no state argument named ") << st;
      dst = "static_cast<" + t + " *>(args.states[" + std::to_string(it - states.begin()) + "])";
    } else {
      return op.emitError("training step result ") << k << " is neither the loss, a parameter "
                                                       "update nor a state update";
    }
    if (inPlace.contains(v)) {
      body += commentLine("'" + outName + "' was updated in place", "  ");
      continue;
    }
    std::vector<std::string> comment = {"copy of output '" + outName + "' " +
                                        shapeText(shapeOf(v))};
    std::string kname = kernels.addKernel("copy_output", comment,
                                          {{t, "in", false}, {t, "out", true}}, countOf(v),
                                          "  out[i] = in[i];\n");
    call(kname + "(ctx, " + ptr(v) + ", " + dst + ")");
  }
  return success();
}

} // namespace

LogicalResult trainc::codegen::emitProgram(ModuleOp module, const EmitOptions &options,
                                           raw_ostream &source, std::vector<char> &paramBlob) {
  paramBlob.clear();
  ProgramEmitter emitter(module, options, paramBlob);
  return emitter.run(source);
}
