//===- EmitProgram.cpp - tc (after planning) to C++ / CUDA source ---------===//
//
// Walks each planned function (@forward, and @train_step for a trainer) once,
// in order. Every tensor becomes a typed pointer (BufferBinding.h): into
// the arena at its planned offset, into the parameter or input arrays, or,
// for views and in-place updates, the pointer of the operand it is tied to. Kernel groups and data movement become
// generated kernels (KernelGroups.cpp, DataMovement.cpp); contractions,
// convolution, normalization, pooling, softmax, reductions and losses call
// the runtime (LibraryCalls.cpp). Then the program description (the tables
// the runtime reads) and main. The output is deterministic for a given
// module.
//
//===----------------------------------------------------------------------===//

#include "codegen/Escape.h"
#include "codegen/ProgramEmitter.h"
#include "codegen/Toolchain.h"
#include "codegen/StepFunctions.h"

#include "ir/TcAttrs.h"
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

std::string trainc::codegen::nodeList(ArrayRef<Operation *> ops) {
  std::vector<std::string> nodes;
  auto add = [&](Operation *op) {
    std::string n = nodeName(op->getLoc());
    if (!n.empty() && llvm::find(nodes, n) == nodes.end())
      nodes.push_back(n);
  };
  for (Operation *op : ops) {
    if (auto fused = dyn_cast<tc::FusedOp>(op))
      for (Operation &inner : fused.getBlock().without_terminator())
        add(&inner);
    else
      add(op);
  }
  std::string s;
  for (size_t i = 0; i < nodes.size() && i < 6; ++i)
    s += (i ? ", '" : "'") + nodes[i] + "'";
  if (nodes.size() > 6)
    s += " and " + std::to_string(nodes.size() - 6) + " more";
  return s;
}

std::string ProgramEmitter::opComment(Operation *op) {
  if (auto fused = dyn_cast<tc::FusedOp>(op)) // the group and the ONNX nodes it computes
    return "tc.fused " + fused.getKernel().str() + " (" + nodeList(op) + ") -> " +
           shapeText(shapeOf(op->getResult(0)));
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

LogicalResult ProgramEmitter::declareArguments(func::FuncOp func) {
  for (BlockArgument arg : func.getArguments()) {
    Type type = arg.getType();
    if (cType(type).empty())
      return func.emitError("codegen does not support element type of argument ")
             << arg.getArgNumber() << " (" << type << ") yet";
    // The step inputs' roles (trainc::rt::InputRole): the runtime reads
    // them, not the names.
    StringAttr input =
        func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), tc::kInputAttrName);
    rt::InputRole role = rt::InputRole::Data;
    if (!input && (input = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                              tc::kLabelAttrName)))
      role = rt::InputRole::Label;
    if (!input && func.getArgAttr(arg.getArgNumber(), tc::kSampleWeightsAttrName)) {
      input = StringAttr::get(func.getContext(), tc::kSampleWeightsInputName);
      role = rt::InputRole::SampleWeights;
    }
    if (!input && func.getArgAttr(arg.getArgNumber(), tc::kSampleMaskAttrName)) {
      input = StringAttr::get(func.getContext(), tc::kSampleMaskInputName);
      role = rt::InputRole::SampleMask;
    }
    if (!input && func.getArgAttr(arg.getArgNumber(), tc::kDropoutKeyAttrName)) {
      input = StringAttr::get(func.getContext(), tc::kDropoutKeyInputName);
      role = rt::InputRole::DropoutKey;
    }
    if (input) {
      std::string name = "in" + std::to_string(inputs.size());
      body += "  const " + cType(type) + " *" + name + " = static_cast<const " +
              cType(type) + " *>(args.inputs[" + std::to_string(inputs.size()) +
              "]); " +
              commentLine("input '" + input.getValue().str() + "' " + shapeText(shapeOf(arg)));
      inputs.emplace_back(input.getValue().str(), type);
      inputRoles.push_back(role);
      buffers.bind(arg, name);
      continue;
    }
    if (std::optional<tc::Hyper> hyper = tc::argHyper(func, arg.getArgNumber())) {
      std::string hyperName = tc::stringifyHyper(*hyper).str();
      size_t index = llvm::find(hypers, *hyper) - hypers.begin();
      if (!sharedTables)
        hypers.push_back(*hyper);
      else if (index == hypers.size())
        return func.emitError("hyperparameter '") << hyperName << "' is not one of @train_step's";
      std::string name = "h" + std::to_string(index);
      hyperIndex[arg] = index;
      // K-FAC's damping and invert flag are read on the host alone
      // (args.hostHypers, by tc.damped_inverse): no device pointer.
      if (!arg.use_empty() && llvm::all_of(arg.getUsers(), [](Operation *user) {
            return isa<tc::DampedInverseOp>(user);
          })) {
        body += "  " + commentLine("hyperparameter '" + hyperName + "': args.hostHypers[" +
                                   std::to_string(index) + "], read on the host");
        continue;
      }
      body += "  const float *" + name + " = static_cast<const float *>(args.hypers[" +
              std::to_string(index) + "]); " + commentLine("hyperparameter '" + hyperName + "'");
      buffers.bind(arg, name);
      continue;
    }
    if (std::optional<tc::StateRole> role = tc::argStateRole(func, arg.getArgNumber())) {
      auto state = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), tc::kStateAttrName);
      auto init = func.getArgAttrOfType<FloatAttr>(arg.getArgNumber(), tc::kStateInitAttrName);
      StateEntry entry{state.getValue().str(), type, *role,
                       init ? init.getValueAsDouble() : 0.0};
      size_t index = llvm::find(states, entry) - states.begin();
      if (!sharedTables)
        states.push_back(entry);
      else if (index == states.size())
        return func.emitError("state '") << state.getValue() << "' is not one of @train_step's";
      std::string name = "s" + std::to_string(index);
      if (arg.use_empty()) {
        // A state the step only writes (the gradient norm): no pointer to
        // read it through, which the compilers would warn about.
        body += "  " + commentLine("state '" + entry.name + "' " + shapeText(shapeOf(arg)) +
                                   ": written only, args.states[" + std::to_string(index) + "]");
        continue;
      }
      body += "  const " + cType(type) + " *" + name + " = static_cast<const " + cType(type) +
              " *>(args.states[" + std::to_string(index) + "]); " +
              commentLine("state '" + entry.name + "' " + shapeText(shapeOf(arg)));
      buffers.bind(arg, name);
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
    buffers.bind(arg, name);
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
    // Another stage's emitter of the same source may have placed it.
    uint64_t offset;
    if (options.paramOffsets && options.paramOffsets->count(param.getSymName().str())) {
      offset = options.paramOffsets->at(param.getSymName().str());
    } else {
      offset = appendToBlob(init);
      if (options.paramOffsets)
        (*options.paramOffsets)[param.getSymName().str()] = offset;
    }
    params.push_back({param.getSymName().str(), type, offset,
                      static_cast<uint64_t>(cast<RankedTensorType>(type).getNumElements() *
                                            elementBytes(type)),
                      param.getTrainable(), false, param.getNoDecay()});
  }
  return success();
}

FailureOr<ProgramEmitter::Emitted> ProgramEmitter::emitFunction(func::FuncOp func, bool train,
                                                                 const Emitted *tables) {
  auto arena = func->getAttrOfType<IntegerAttr>(tc::kArenaBytesAttrName);
  if (!arena)
    return func.emitError("codegen needs a planned function (run trainc-plan)");
  buffers.clear();
  hyperIndex.clear();
  pendingSums.clear();
  startedBuckets.clear();
  body.clear();
  inputs.clear();
  outputs.clear();
  states.clear();
  hypers.clear();
  inputRoles.clear();
  links.clear();
  linkStatements.clear();
  generatedCalls = libraryCalls = 0;
  functionName = func.getSymName().str();
  pastBackward = false;
  trainRole = train;
  sharedTables = tables != nullptr;
  if (tables) {
    hypers = tables->hypers;
    states = tables->states;
  }
  if (failed(declareArguments(func)))
    return failure();
  if (tables && inputs != tables->inputs)
    return func.emitError("the inputs differ from @train_step's");
  placeOutputs(func);
  for (Operation &op : func.getBody().front())
    if (failed(emitOp(&op)))
      return failure();
  return Emitted{body,       links,          linkStatements, inputs,      outputs, states,
                 hypers,     inputRoles,     arena.getInt(), generatedCalls, libraryCalls};
}

/// Integer inputs of `func` that index a table's rows (tc.gather's indices,
/// as an nn.Embedding's token ids), by input name: the trainer refuses ids
/// outside [0, rows) before step 1, as PyTorch's nn.Embedding raises on them.
/// The rows are the parameter's own (before any padding of the table); an
/// input that indexes two tables gets the smaller.
llvm::StringMap<ProgramEmitter::IndexLimit> ProgramEmitter::indexLimits(func::FuncOp func) {
  llvm::StringMap<IndexLimit> limits;
  for (BlockArgument arg : func.getArguments()) {
    auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), tc::kInputAttrName);
    if (!name)
      continue;
    SmallVector<Value> values = {arg};
    while (!values.empty()) {
      Value value = values.pop_back_val();
      for (OpOperand &use : value.getUses()) {
        Operation *user = use.getOwner();
        if (isa<tc::ReshapeOp>(user)) {
          values.push_back(user->getResult(0));
          continue;
        }
        auto gather = dyn_cast<tc::GatherOp>(user);
        if (!gather || use.getOperandNumber() != 1)
          continue;
        Value table = gather.getData();
        // Through a padding of the table to its parameter.
        while (Operation *def = table.getDefiningOp()) {
          if (def->getNumOperands() == 0 || !isa<tc::PadOp>(def))
            break;
          table = def->getOperand(0);
        }
        int64_t rows = cast<RankedTensorType>(table.getType()).getDimSize(gather.getAxis());
        IndexLimit &limit = limits[name.getValue()];
        if (limit.rows == 0 || rows < limit.rows)
          limit = {rows, nodeName(gather.getLoc())};
      }
    }
  }
  return limits;
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
  if (step && options.entry == "forward" && step->hasAttr(tc::kOptimizerAttrName)) {
    FailureOr<Emitted> emitted = emitFunction(step, /*train=*/true);
    if (failed(emitted))
      return failure();
    trainFn = *emitted;
  }
  // Gradient accumulation: @accumulate_step runs on a group's micro-batches
  // but the last, with @train_step's arguments.
  std::optional<Emitted> accumulateFn;
  auto accumulate = module.lookupSymbol<func::FuncOp>("accumulate_step");
  if (trainFn && accumulate) {
    FailureOr<Emitted> emitted = emitFunction(accumulate, /*train=*/true, &*trainFn);
    if (failed(emitted))
      return failure();
    accumulateFn = *emitted;
  }
  // Selective backprop: @select, the forward and per-sample losses at the
  // selection batch size.
  std::optional<Emitted> selectFn;
  auto select = module.lookupSymbol<func::FuncOp>("select");
  if (trainFn && select) {
    FailureOr<Emitted> emitted = emitFunction(select, /*train=*/false);
    if (failed(emitted))
      return failure();
    selectFn = *emitted;
  }
  inputs = forwardFn->inputs;
  outputs = forwardFn->outputs;
  arenaBytes = forwardFn->arena;

  int64_t batch = 1;
  if (auto attr = module->getAttrOfType<IntegerAttr>(tc::kBatchSizeAttrName))
    batch = attr.getInt();
  else if (!inputs.empty() && !cast<RankedTensorType>(inputs[0].second).getShape().empty())
    batch = cast<RankedTensorType>(inputs[0].second).getDimSize(0);
  bool cuda = options.target == Target::Cuda;

  os << commentLine("Generated by trainc from " + options.modelName + " for the " +
                    (cuda ? "CUDA" : "CPU") + " target. Do not edit.")
     << "//\n// Kernels first (each names the tc ops and ONNX nodes it implements),\n"
     << "// then the forward pass, then the program description.\n\n"
     << "#include \"trainc_rt/generated.h\"\n\n"
     << (options.stageSources.empty()
             ? ""
             : "// The stages' programs read their initial values here too.\n"
               "extern \"C\" const unsigned char trainc_param_blob[];\n\n")
     << "namespace {\n\n"
     << "namespace tk = trainc::" << (cuda ? "cuda" : "cpu") << ";\n"
     << "using trainc::rt::Context;\nusing trainc::rt::Status;\n"
     << "using trainc::rt::bf16; // storage of 16-bit floats (trainc_rt/half.h)\n"
     << "using trainc::rt::f16;\n\n"
     << kernels.text()
     << stepFunction("forward", "ForwardArgs",
                     "/// @" + commentText(options.entry) + " on one batch of " +
                         std::to_string(batch) + ".\n",
                     forwardFn->body);
  if (trainFn)
    os << stepFunction("trainStep", "TrainArgs",
                       "/// One training step on a batch of " + std::to_string(batch) +
                           ": forward, loss, backward and the parameter update.\n",
                       trainFn->body);
  if (accumulateFn)
    os << stepFunction("accumulateStep", "TrainArgs",
                       "/// One micro-batch of gradient accumulation on a batch of " +
                           std::to_string(batch) +
                           ": forward, loss, backward, the gradients added to their "
                           "accumulators (no update).\n",
                       accumulateFn->body);
  if (selectFn)
    os << stepFunction("selectForward", "ForwardArgs",
                       "/// Selective backprop: the forward and each sample's loss over " +
                           std::to_string(cast<RankedTensorType>(select.getResultTypes()[1])
                                              .getDimSize(0)) +
                           " candidates (no backward).\n",
                       selectFn->body);

  for (const std::string &stage : options.stageSources)
    os << stage;

  Functions fns{func, step, select, &*forwardFn, trainFn ? &*trainFn : nullptr,
                accumulateFn ? &*accumulateFn : nullptr, selectFn ? &*selectFn : nullptr, batch};
  return emitTables(os, fns);
}

void ProgramEmitter::emitStageFunctions(raw_ostream &os, const Emitted &fn, StringRef name,
                                        StringRef what) {
  size_t cut = fn.body.find(kBackwardMarker);
  if (cut == std::string::npos) {
    os << stepFunction(name, "TrainArgs",
                       ("/// " + what + ": forward, loss and backward (the last stage).\n").str(),
                       fn.body);
  } else {
    // Each part declares the pointers it uses.
    std::string first = fn.body.substr(0, cut), second = fn.body.substr(cut);
    first = withDeclarations(fn.body, withoutDeclarations(first));
    second = withDeclarations(fn.body, withoutDeclarations(second));
    os << stepFunction(name, "TrainArgs",
                       ("/// " + what + ", first part: the forward, up to what the next stage "
                                        "needs.\n")
                           .str(),
                       first)
       << stepFunction((name + "Backward").str(), "TrainArgs",
                       ("/// " + what + ", second part: the backward, from the gradients the "
                                        "next stage sent back.\n")
                           .str(),
                       second);
  }
  os << stepFunction((name + "Links").str(), "TrainArgs",
                     ("/// Where " + name + "'s sent and received tensors live "
                                           "(TrainArgs::links); runs nothing.\n")
                         .str(),
                     withDeclarations(fn.body, fn.linkStatements));
}

LogicalResult ProgramEmitter::runStage(raw_ostream &os) {
  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  if (!step || !step->hasAttr(tc::kOptimizerAttrName))
    return module.emitError("codegen of a pipeline stage needs @train_step after the "
                            "optimizer phase");
  if (failed(declareParams()))
    return failure();
  FailureOr<Emitted> trainFn = emitFunction(step, /*train=*/true);
  if (failed(trainFn))
    return failure();
  std::optional<Emitted> accumulateFn;
  if (auto accumulate = module.lookupSymbol<func::FuncOp>("accumulate_step")) {
    FailureOr<Emitted> emitted = emitFunction(accumulate, /*train=*/true, &*trainFn);
    if (failed(emitted))
      return failure();
    if (emitted->links != trainFn->links)
      return accumulate.emitError("@accumulate_step sends and receives other tensors than "
                                  "@train_step");
    accumulateFn = *emitted;
  }
  int64_t batch = 1;
  if (auto attr = module->getAttrOfType<IntegerAttr>(tc::kBatchSizeAttrName))
    batch = attr.getInt();
  const std::string &ns = options.stageNamespace;
  os << "//===- " << ns << " "
     << std::string(ns.size() < 60 ? 60 - ns.size() : 0, '-') << "===//\n\n"
     << "namespace " << ns << " {\n\n"
     << kernels.text();
  std::string what = "One micro-batch of " + std::to_string(batch) + " in pipeline " + ns;
  emitStageFunctions(os, *trainFn, "trainStep", what + " (the last of an optimizer step: the "
                                                       "parameter update too)");
  if (accumulateFn)
    emitStageFunctions(os, *accumulateFn, "accumulateStep",
                       what + " (gradients added to their accumulators, no update)");
  const llvm::StringMap<IndexLimit> noLimits;
  if (failed(emitTrainStepTable(os, step, *trainFn, accumulateFn ? &*accumulateFn : nullptr,
                                noLimits)))
    return failure();
  emitParamTable(os);
  bool cuda = options.target == Target::Cuda;
  emitCallTable(os);
  std::vector<Field> calls = callTableFields();
  os << "const trainc::rt::Program kProgram = "
     << designated({{"modelName", cStringLiteral(options.modelName)},
                    {"target", cStringLiteral(cuda ? "cuda" : "cpu")},
                    {"batchSize", batch},
                    {"numInputs", 0},
                    {"inputs", "nullptr"},
                    {"numOutputs", 0},
                    {"outputs", "nullptr"},
                    {"numParams", static_cast<int64_t>(params.size())},
                    {"params", params.empty() ? "nullptr" : "kParams"},
                    {"paramBlob", "trainc_param_blob"},
                    {"paramBlobBytes", static_cast<int64_t>(blob.size())},
                    {"arenaBytes", 0},
                    {"forward", "nullptr"},
                    {"train", "&kTrain"},
                    {"exportInfo", "nullptr"},
                    {"fingerprint", "\"" + programFingerprint(module, options) + "\""},
                    {"generatedKernels", 0},
                    {"libraryCalls", 0},
                    {"modelFingerprint", options.modelFingerprint.empty()
                                             ? std::string("nullptr")
                                             : cStringLiteral(options.modelFingerprint)},
                    calls[0], calls[1]},
                   /*block=*/true)
     << ";\n\n} // namespace " << ns << "\n\n";
  return success();
}

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

LogicalResult ProgramEmitter::emitOp(Operation *op) {
  waitForSums(op);
  callOps.assign(1, op);
  callCostTaken = false;
  if (tc::markedPhase(op->getLoc()) == tc::StepPhase::Backward)
    pastBackward = true;
  if (auto ret = dyn_cast<func::ReturnOp>(op))
    return emitReturn(ret);
  if (auto constant = dyn_cast<tc::ConstantOp>(op)) {
    auto value = dyn_cast<DenseElementsAttr>(constant.getValue());
    if (!value || cType(value.getType()).empty())
      return op->emitError("codegen does not support this constant yet");
    // A splat that only pointwise kernels read is a literal in them.
    if (tc::isSplatConstant(op) && llvm::all_of(op->getUsers(), [](Operation *user) {
          return tc::isFusible(user) && !isa<tc::ExpandOp>(user);
        }))
      return success();
    std::string name = "p" + std::to_string(params.size());
    Type type = value.getType();
    body += "  const " + cType(type) + " *" + name + " = static_cast<const " +
            cType(type) + " *>(args.params[" + std::to_string(params.size()) +
            "]); " + commentLine("constant of " + opComment(op));
    params.push_back({"constant:" + std::to_string(params.size()), type,
                      appendToBlob(value),
                      static_cast<uint64_t>(countOf(constant) * elementBytes(type)),
                      false, true, false});
    buffers.bind(constant.getResult(), name);
    return success();
  }
  for (Value operand : op->getOperands())
    if (cType(operand.getType()).empty())
      return op->emitError("codegen does not support element type ")
             << cast<ShapedType>(operand.getType()).getElementType() << " yet";
  if (isa<tc::SendOp, tc::RecvOp>(op))
    return emitLink(op);

  // Results: arena pointers, or the pointer of the operand they are tied to.
  body += commentLine(opComment(op), "  ");
  Value accumulator = gemmAccumulates(op) ? tc::accumulatingGemmUser(op).getAccumulator()
                                          : Value();
  if (failed(buffers.bindResults(op, body, accumulator)))
    return failure();

  if (tc::isView(op))
    return success(); // views: the result is the operand's buffer
  if (auto fused = dyn_cast<tc::FusedOp>(op))
    return emitFused(fused);
  if (isa<tc::CastOp>(op) && isWeightCast(op))
    return emitWeightCast(op);
  if (tc::isFusible(op) && !isa<tc::ExpandOp>(op))
    return emitPointwise(op);
  if (op->hasTrait<tc::OpTrait::ParamUpdate>())
    return emitUpdate(op);
  if (isa<tc::AccumulateGradOp>(op))
    return emitAccumulate(op);
  if (auto probe = dyn_cast<tc::NonfiniteProbeOp>(op))
    return emitNonfiniteProbe(probe);
  if (auto reduce = dyn_cast<tc::AllReduceOp>(op))
    return emitAllReduce(reduce);
  if (isa<tc::TransposeOp, tc::SliceOp, tc::SliceBackwardOp, tc::ExpandOp, tc::ConcatOp,
          tc::CumSumOp, tc::TileOp, tc::TriluOp, tc::PadOp, tc::PadBackwardOp,
          tc::ScatterNDOp, tc::ArgMaxOp, tc::ArgMinOp, tc::TopKOp, tc::GatherElementsOp,
          tc::GatherElementsBackwardOp, tc::ScatterElementsOp>(op))
    return emitDataMovement(op);
  return emitLibraryCall(op);
}

/// Where output `k` of the function goes: a forward output, the loss or the
/// per-sample losses (empty for a parameter or state update).
std::string ProgramEmitter::outputBuffer(func::FuncOp func, unsigned k, Type type) {
  std::string t = cType(type);
  auto update = func.getResultAttrOfType<FlatSymbolRefAttr>(k, tc::kUpdateAttrName);
  auto stateUpdate = func.getResultAttrOfType<StringAttr>(k, tc::kStateUpdateAttrName);
  if (!trainRole)
    return "static_cast<" + t + " *>(args.outputs[" + std::to_string(k) + "])";
  if (k == 0 && !update && !stateUpdate) // a pipeline stage may have no loss
    return "static_cast<" + t + " *>(args.loss)";
  if (func.getResultAttr(k, tc::kSampleLossesAttrName))
    return "static_cast<" + t + " *>(args.sampleLosses)";
  return "";
}

void ProgramEmitter::placeOutputs(func::FuncOp func) {
  // An output its op writes straight into the output's buffer (the plan
  // gave it no arena space): no copy at the end.
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  for (auto [k, v] : llvm::enumerate(ret.getOperands()))
    if (auto result = dyn_cast<OpResult>(v); result && tc::isPlacedOutput(result))
      if (std::string dst = outputBuffer(func, k, v.getType()); !dst.empty())
        buffers.placeAt(v, dst);
}

LogicalResult ProgramEmitter::emitReturn(func::ReturnOp op) {
  auto func = op->getParentOfType<func::FuncOp>();
  body += "  // outputs\n";
  for (auto [k, v] : llvm::enumerate(op.getOperands())) {
    auto name = func.getResultAttrOfType<StringAttr>(k, tc::kOutputAttrName);
    std::string outName = name ? name.getValue().str() : "output" + std::to_string(k);
    std::string t = cType(v.getType());
    std::string dst = outputBuffer(func, k, v.getType());
    auto update = func.getResultAttrOfType<FlatSymbolRefAttr>(k, tc::kUpdateAttrName);
    auto stateUpdate = func.getResultAttrOfType<StringAttr>(k, tc::kStateUpdateAttrName);
    if (!trainRole)
      outputs.emplace_back(outName, v.getType());
    if (buffers.placed(v)) {
      body += commentLine("'" + outName + "' was written there by its op", "  ");
      continue;
    }
    if (!dst.empty()) {
      // the output's buffer
    } else if (update) {
      // In place: every read of the old value happened before the return.
      dst = "static_cast<" + t + " *>(args.params[" +
            std::to_string(paramIndex.lookup(update.getValue())) + "])";
    } else if (stateUpdate) {
      auto it = llvm::find_if(states,
                              [&](const auto &e) { return e.name == stateUpdate.getValue(); });
      if (it == states.end())
        return op.emitError("no state argument named ") << stateUpdate;
      dst = "static_cast<" + t + " *>(args.states[" + std::to_string(it - states.begin()) + "])";
    } else {
      return op.emitError("training step result ")
             << k << " is neither the loss, the per-sample losses, a parameter update nor a "
                     "state update";
    }
    if (buffers.inPlace(v) && trainRole) {
      body += commentLine("'" + outName + "' was updated in place", "  ");
      continue;
    }
    // Outside a training step (a loss or gradient entry run with --run) an
    // in-place value is still an output: it is copied from the argument it
    // overwrote.
    std::vector<std::string> comment = {"copy of output '" + outName + "' " +
                                        shapeText(shapeOf(v))};
    std::string kname = kernels.addKernel("copy_output", comment,
                                          {{t, "in", false}, {t, "out", true}}, countOf(v),
                                          "  out[i] = in[i];\n");
    call(kname + "(ctx, " + ptr(v) + ", " + dst + ")");
  }
  return success();
}

LogicalResult ProgramEmitter::emitLink(Operation *op) {
  auto send = dyn_cast<tc::SendOp>(op);
  auto recv = dyn_cast<tc::RecvOp>(op);
  bool gradient = send ? send.getGradient() : recv.getGradient();
  if (recv && gradient && body.find(kBackwardMarker) == std::string::npos)
    body += kBackwardMarker;
  Value value = send ? send.getValue() : recv.getResult();
  LinkEntry link{(send ? send.getTensor() : recv.getTensor()).str(), send != nullptr, gradient,
                 static_cast<int64_t>(send ? send.getPeer() : recv.getPeer()),
                 static_cast<int64_t>(send ? send.getSlot() : recv.getSlot()), value.getType()};
  std::string what = std::string(gradient ? "the gradient of '" : "'") + link.tensor + "' " +
                     (send ? "to" : "from") + " stage " + std::to_string(link.peer) +
                     " (slot " + std::to_string(link.slot) + ")";
  if (recv) {
    body += commentLine(std::string("tc.recv of ") + what + " -> " + shapeText(shapeOf(value)) +
                            ": the trainer receives it here before this part runs",
                        "  ");
    if (failed(buffers.bindResults(op, body, Value())))
      return failure();
  } else {
    body += commentLine("tc.send of " + what + ": the trainer sends it after this part", "  ");
  }
  linkStatements += "  args.links[" + std::to_string(links.size()) +
                    "] = const_cast<void *>(static_cast<const void *>(" + ptr(value) + ")); " +
                    commentLine(what);
  links.push_back(link);
  return success();
}

LogicalResult trainc::codegen::emitProgram(ModuleOp module, const EmitOptions &options,
                                           raw_ostream &source, std::vector<char> &paramBlob) {
  paramBlob.clear();
  ProgramEmitter emitter(module, options, paramBlob);
  return emitter.run(source);
}

LogicalResult trainc::codegen::emitPipelineProgram(ModuleOp module, ArrayRef<ModuleOp> stages,
                                                   const EmitOptions &options,
                                                   raw_ostream &source,
                                                   std::vector<char> &paramBlob) {
  paramBlob.clear();
  std::map<std::string, uint64_t> offsets;
  EmitOptions top = options;
  top.paramOffsets = &offsets;
  for (auto [k, stage] : llvm::enumerate(stages)) {
    EmitOptions own = top;
    own.stageNamespace = "stage" + std::to_string(k);
    own.exportSegmentsPath.clear();
    own.exportPieces.clear();
    std::string text;
    llvm::raw_string_ostream os(text);
    ProgramEmitter emitter(stage, own, paramBlob);
    if (failed(emitter.runStage(os)))
      return failure();
    top.stageSources.push_back(std::move(text));
    auto loss = ModuleOp(stage).lookupSymbol<func::FuncOp>("loss");
    auto cost = loss ? loss->getAttrOfType<FloatAttr>(tc::kStageCostAttrName) : FloatAttr();
    top.stageSeconds.push_back(cost ? cost.getValueAsDouble() : 0.0);
  }
  ProgramEmitter emitter(module, top, paramBlob);
  return emitter.run(source);
}
