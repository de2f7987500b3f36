//===- ProfiledCalls.cpp - what --profile reports of each call ------------===//
//
// Every call a step function makes (a generated kernel or a runtime call)
// is TRAINC_CALL(ctx, id, ...), and row `id` of the program's kCalls table
// tells the trainer's --profile what it is: the kernel, the IR op, the ONNX
// nodes, the function, the part of the step, and its cost (a contraction's
// floating-point operations, the bytes of its operands and results).
//
//===----------------------------------------------------------------------===//

#include "codegen/Escape.h"
#include "codegen/ProgramEmitter.h"

#include "ir/OpCost.h"
#include "ir/TcAttrs.h"

using namespace mlir;
using namespace trainc;
using namespace trainc::codegen;

namespace {

constexpr size_t kMaxNodesBytes = 400;

/// The IR op a call computes, as the profile names it.
std::string opLabel(Operation *op, size_t runLength) {
  if (auto fused = dyn_cast<tc::FusedOp>(op))
    return "tc.fused " + fused.getKernel().str();
  if (isa<func::ReturnOp>(op))
    return "the function's outputs";
  std::string label = op->getName().getStringRef().str();
  if (runLength > 1)
    label += " (" + std::to_string(runLength) + " tensors)";
  return label;
}

/// Where the calls' double values go in generated C++ (exact round trip).
std::string cDoubleOf(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

} // namespace

rt::StepPart ProgramEmitter::stepPart(Operation *op) {
  if (functionName != "train_step" && functionName != "accumulate_step")
    return rt::StepPart::Forward;
  if (isa<tc::AllReduceOp>(op))
    return rt::StepPart::AllReduce;
  if (std::optional<tc::StepPhase> phase = tc::markedPhase(op->getLoc()))
    return *phase == tc::StepPhase::Recompute ? rt::StepPart::Recompute
                                              : rt::StepPart::Backward;
  if (isa<tc::AccumulateGradOp>(op))
    return rt::StepPart::Backward;
  // The optimizer's ops (updates, clipping, loss scaling, K-FAC) follow the
  // backward's first op; the forward's and the loss's come before it.
  return pastBackward || op->hasTrait<tc::OpTrait::ParamUpdate>() ? rt::StepPart::Update
                                                                 : rt::StepPart::Forward;
}

int ProgramEmitter::profiledCall(const std::string &statement) {
  CallEntry entry;
  entry.kernel = statement.substr(0, statement.find('('));
  entry.function = functionName;
  entry.part = rt::StepPart::Forward;
  if (llvm::StringRef(statement).starts_with("ctx.allReduce")) {
    entry.op = "tc.all_reduce";
    entry.part = rt::StepPart::AllReduce;
  } else if (!callOps.empty()) {
    entry.op = opLabel(callOps.front(), callOps.size());
    entry.nodes = nodeList(callOps);
    if (entry.nodes.size() > kMaxNodesBytes) // a model's names may be any length
      entry.nodes = entry.nodes.substr(0, kMaxNodesBytes - 3) + "...";
    entry.part = stepPart(callOps.front());
    // The outputs' copies: what each copies is not the return's whole.
    callCostTaken |= isa<func::ReturnOp>(callOps.front());
    if (!callCostTaken)
      for (Operation *op : callOps) {
        entry.flops += contractionFlops(op);
        entry.bytes += static_cast<double>(opBytes(op));
      }
    callCostTaken = true;
  }
  callTable.push_back(std::move(entry));
  return static_cast<int>(callTable.size()) - 1;
}

void ProgramEmitter::emitCallTable(raw_ostream &os) {
  if (callTable.empty())
    return;
  os << "// What --profile reports of each TRAINC_CALL, by its id.\n"
     << "const trainc::rt::ProfiledCall kCalls[] = {\n";
  for (const CallEntry &c : callTable)
    os << "    "
       << designated({{"kernel", cStringLiteral(c.kernel)},
                      {"op", cStringLiteral(c.op)},
                      {"nodes", cStringLiteral(c.nodes)},
                      {"function", cStringLiteral(c.function)},
                      {"part", std::string("trainc::rt::StepPart::") + rt::spelling(c.part)},
                      {"flops", cDoubleOf(c.flops)},
                      {"bytes", cDoubleOf(c.bytes)}})
       << ",\n";
  os << "};\n";
}

std::vector<Field> ProgramEmitter::callTableFields() const {
  return {{"numCalls", static_cast<int64_t>(callTable.size())},
          {"calls", callTable.empty() ? "nullptr" : "kCalls"}};
}
