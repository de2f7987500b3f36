//===- KernelGroups.cpp - generated element kernels -----------------------===//
//
// Pointwise ops and tc.fused groups, training-mode dropout and the fused
// optimizer updates: each becomes one generated kernel (KernelWriter) whose
// element body the two targets share.
//
//===----------------------------------------------------------------------===//

#include "codegen/Escape.h"
#include "codegen/IndexKernels.h"
#include "codegen/ProgramEmitter.h"
#include "codegen/ScalarExpr.h"
#include "runtime/include/trainc_rt/defaults.h"

#include "llvm/ADT/TypeSwitch.h"

#include <array>
#include <cctype>
#include <functional>

using namespace mlir;
using namespace trainc;
using namespace trainc::codegen;

/// Whether update `b` can join the multi-tensor kernel of update `a`: the
/// same optimizer and attributes, the same hyperparameter operands, and no
/// operand computed by `a`.
static bool sameUpdateKind(Operation *a, Operation *b, unsigned tensors) {
  if (a->getName() != b->getName() || a->getNumOperands() != b->getNumOperands())
    return false;
  for (NamedAttribute attr : a->getAttrs())
    if (attr.getName() != tc::kOffsetsAttrName && b->getAttr(attr.getName()) != attr.getValue())
      return false;
  for (unsigned k = tensors; k < a->getNumOperands(); ++k)
    if (a->getOperand(k) != b->getOperand(k))
      return false;
  return llvm::none_of(b->getOperands(), [&](Value v) { return v.getDefiningOp() == a; });
}

/// `skip ? old : next` under loss scaling, else `next`.
using KeepFn = std::function<std::string(const std::string &old, const std::string &next)>;

/// The tensors one multi-tensor launch takes at most: its pointer arrays
/// stay under CUDA's 4 KiB of kernel parameters.
constexpr size_t kMaxUpdateTensors = 64;

LogicalResult ProgramEmitter::emitUpdate(Operation *op) {
  // The tensors: the parameter, its gradient and one per state.
  unsigned tensorCount = op->getNumResults() + 1;
  pendingUpdates.push_back(op);
  Operation *next = op->getNextNode();
  if (next && pendingUpdates.size() < kMaxUpdateTensors &&
      sameUpdateKind(pendingUpdates.front(), next, tensorCount))
    return success(); // emitted with the run's last update
  std::vector<Operation *> ops = std::move(pendingUpdates);
  pendingUpdates.clear();
  return emitUpdates(ops);
}

/// The comment lines (the first 12 ops, then how many more) and the element
/// counts of a multi-tensor kernel's run of per-parameter ops.
void ProgramEmitter::describeRun(ArrayRef<Operation *> ops, std::vector<std::string> &comment,
                                 std::vector<int64_t> &counts) {
  for (Operation *op : ops) {
    if (comment.size() < 12)
      comment.push_back(opComment(op));
    counts.push_back(countOf(op->getResult(0)));
  }
  if (ops.size() > 12)
    comment.push_back("... and " + std::to_string(ops.size() - 12) + " more parameters");
}

namespace {

/// The generated kernel of one kind of optimizer update: its per-tensor
/// arrays (operands, then results), its shared scalars and its element
/// code; LAMB and LARS add the per-tensor norms' passes (normCode, factorCode).
struct UpdateKernel {
  std::string what;
  std::vector<std::string> tensors, outs, scalars;
  std::string code, normCode, factorCode;
};

/// SGD (torch.optim.SGD, dampening 0).
void sgdKernel(tc::SgdUpdateOp op, const std::string &g, const KeepFn &keep, UpdateKernel &k) {
  k.what = "sgd_update";
  k.tensors = {"param", "grad", "buf"};
  k.outs = {"param_out", "buf_out"};
  k.scalars = {"lr", "momentum", "wd"};
  k.code = "  const float p = param[i], b0 = buf[i];\n"
           "  const float d = " + g + " + wd[0] * p;\n"
           "  const float b = momentum[0] * b0 + d;\n"
           "  param_out[i] = " + keep("p", std::string("p - lr[0] * ") +
                                          (op.getNesterov() ? "(d + momentum[0] * b)" : "b")) +
           ";\n"
           "  buf_out[i] = " + keep("b0", "b") + ";\n";
}

/// Adam and AdamW, PyTorch's order (torch.optim.Adam, _single_tensor_adam):
/// omb1/omb2 are 1 - beta1/2 (computed in double by the trainer), step is
/// lr / bias_correction1 and bc2sqrt is sqrt(bias_correction2) (computed in
/// double from the step count, on the device).
void adamKernel(tc::AdamUpdateOp op, const std::string &g, const KeepFn &keep, UpdateKernel &k) {
  bool decoupled = op.getDecoupled();
  k.what = decoupled ? "adamw_update" : "adam_update";
  k.tensors = {"param", "grad", "m", "v"};
  k.outs = {"param_out", "m_out", "v_out"};
  k.scalars = {"lr", "beta1", "beta2", "omb1", "omb2", "eps", "wd", "step", "bc2sqrt"};
  k.code = std::string("  const float p0 = param[i], m0 = m[i], v0 = v[i];\n") +
           "  float p = p0, g = " + g + ";\n" +
           (decoupled ? "  p = p * (1.0f - lr[0] * wd[0]);\n"
                      : "  (void)lr; // in step\n  g = g + wd[0] * p;\n") +
           "  const float m1 = beta1[0] * m0 + omb1[0] * g;\n"
           "  const float v1 = beta2[0] * v0 + (omb2[0] * g) * g;\n"
           "  param_out[i] = " +
           keep("p0", "p - (step[0] * m1) / (sqrtf(v1) / bc2sqrt[0] + eps[0])") + ";\n"
           "  m_out[i] = " + keep("m0", "m1") + ";\n"
           "  v_out[i] = " + keep("v0", "v1") + ";\n";
}

/// LAMB (tc.lamb_update): pass one writes the moments and sums p^2 and
/// r^2; the factor is lr times the trust ratio; pass two recomputes r from
/// the new moments and steps.
void lambKernel(tc::LambUpdateOp op, const std::string &g, const KeepFn &keep, UpdateKernel &k) {
  k.what = "lamb_update";
  k.tensors = {"param", "grad", "m", "v"};
  k.outs = {"param_out", "m_out", "v_out"};
  k.scalars = {"lr", "beta1", "beta2", "omb1", "omb2", "eps", "wd", "bc1", "bc2sqrt"};
  const std::string r = "(m1 / bc1[0]) / (sqrtf(v1) / bc2sqrt[0] + eps[0]) + wd[0] * p";
  k.normCode = "  const float p = param[i], m0 = m[i], v0 = v[i], g = " + g + ";\n"
               "  const float m1 = beta1[0] * m0 + omb1[0] * g;\n"
               "  const float v1 = beta2[0] * v0 + (omb2[0] * g) * g;\n"
               "  const float r = " + r + ";\n"
               "  m_out[i] = " + keep("m0", "m1") + ";\n"
               "  v_out[i] = " + keep("v0", "v1") + ";\n"
               "  sa += static_cast<double>(p) * p;\n"
               "  sb += static_cast<double>(r) * r;\n";
  k.factorCode = op.getLayerAdaptation()
                     ? "  // lr * trust ratio ||p|| / ||r|| (1 where either norm is 0)\n"
                       "  const double pn = sqrt(sa), rn = sqrt(sb);\n"
                       "  return static_cast<float>(lr[0] * (pn > 0.0 && rn > 0.0 ? pn / rn : 1.0));\n"
                     : "  // no layer adaptation (--no-decay)\n"
                       "  return lr[0];\n";
  k.code = "  const float p = param[i], m1 = m_out[i], v1 = v_out[i];\n"
           "  const float r = " + r + ";\n"
           "  param_out[i] = " + keep("p", "p - factor * r") + ";\n";
}

/// LARS in LARC's form (tc.lars_update): pass one sums p^2 and g^2; the
/// factor is lr times the local learning rate; pass two steps.
void larsKernel(tc::LarsUpdateOp op, const std::string &g, const KeepFn &keep, UpdateKernel &k) {
  k.what = "lars_update";
  k.tensors = {"param", "grad", "buf"};
  k.outs = {"param_out", "buf_out"};
  k.scalars = {"lr", "momentum", "wd", "trust", "eps"};
  k.normCode = "  const float p = param[i], g = " + g + ";\n"
               "  sa += static_cast<double>(p) * p;\n"
               "  sb += static_cast<double>(g) * g;\n";
  k.factorCode =
      op.getLayerAdaptation()
          ? "  // lr * trust * ||p|| / (||g|| + wd ||p|| + eps) (1 where either norm is 0)\n"
            "  const double pn = sqrt(sa), gn = sqrt(sb);\n"
            "  const double local = pn > 0.0 && gn > 0.0\n"
            "      ? trust[0] * pn / (gn + wd[0] * pn + eps[0]) : 1.0;\n"
            "  return static_cast<float>(lr[0] * local);\n"
          : "  // no layer adaptation (--no-decay)\n"
            "  return lr[0];\n";
  k.code = "  const float p = param[i], b0 = buf[i], g = " + g + ";\n"
           "  const float b = momentum[0] * b0 + factor * (g + wd[0] * p);\n"
           "  param_out[i] = " + keep("p", "p - b") + ";\n"
           "  buf_out[i] = " + keep("b0", "b") + ";\n";
}

} // namespace

/// Fused optimizer updates: one kernel reads each parameter, its gradient
/// and its state once and writes their next values (in place when planned
/// so; the body reads every element before it writes it). A run of updates
/// of one optimizer is one multi-tensor kernel; LAMB's and LARS's are two
/// passes, the first summing each tensor's squares.
LogicalResult ProgramEmitter::emitUpdates(ArrayRef<Operation *> ops) {
  callOps.assign(ops.begin(), ops.end());
  callCostTaken = false;
  Operation *op = ops.front();
  const bool scaled =
      llvm::TypeSwitch<Operation *, bool>(op)
          .Case<tc::SgdUpdateOp, tc::AdamUpdateOp, tc::LambUpdateOp, tc::LarsUpdateOp>(
              [](auto u) { return bool(u.getGradScale()); })
          .Default([](Operation *) { return false; });
  std::string g = scaled ? "grad[i] * scale[0]" : "grad[i]";
  // Loss scaling: a non-finite scale (inf or NaN in some gradient) keeps
  // every value as it is, bit for bit.
  bool skippable = op->hasAttr("skip_nonfinite");
  KeepFn keep = [&](const std::string &old, const std::string &next) {
    return skippable ? "skip ? " + old + " : " + next : next;
  };
  UpdateKernel k;
  if (auto sgd = dyn_cast<tc::SgdUpdateOp>(op))
    sgdKernel(sgd, g, keep, k);
  else if (auto adam = dyn_cast<tc::AdamUpdateOp>(op))
    adamKernel(adam, g, keep, k);
  else if (auto lamb = dyn_cast<tc::LambUpdateOp>(op))
    lambKernel(lamb, g, keep, k);
  else if (auto lars = dyn_cast<tc::LarsUpdateOp>(op))
    larsKernel(lars, g, keep, k);
  else
    return op->emitError("codegen has no kernel for this update");
  if (scaled)
    k.scalars.push_back("scale");
  std::string skip =
      skippable ? "  const bool skip = !trainc::gen::isFinite(scale[0]); // step skipped\n" : "";
  std::vector<KernelParam> perTensor, shared;
  for (const std::string &t : k.tensors)
    perTensor.push_back({"float", t, false});
  for (const std::string &o : k.outs)
    perTensor.push_back({"float", o, true});
  for (const std::string &h : k.scalars)
    shared.push_back({"float", h, false});
  std::vector<std::string> comment;
  std::vector<int64_t> counts;
  describeRun(ops, comment, counts);
  bool anyInPlace = llvm::any_of(ops, [&](Operation *u) {
    return llvm::any_of(u->getResults(), [&](Value r) { return buffers.inPlace(r); });
  });
  if (anyInPlace)
    comment.push_back("in place: the results overwrite the parameters and their state");
  if (skippable)
    comment.push_back("loss scaling: the gradients are unscaled by 'scale'; a non-finite scale "
                      "skips the step");
  std::string name =
      k.normCode.empty()
          ? kernels.addMultiTensorKernel(k.what, comment, perTensor, shared, counts, skip + k.code)
          : kernels.addMultiTensorNormKernel(k.what, comment, perTensor, shared, counts,
                                             skip + k.normCode, k.factorCode, skip + k.code);
  // The pointer arrays, then the call.
  body += "  {\n";
  std::string args = "ctx";
  auto array = [&](const std::string &arrayName, bool output, auto valueOf) {
    body += std::string("    ") + (output ? "float" : "const float") + " *const " + arrayName +
            "[] = {";
    for (auto [n, u] : llvm::enumerate(ops))
      body += (n ? ", " : "") + ptr(valueOf(u));
    body += "};\n";
    args += ", " + arrayName;
  };
  for (auto [n, t] : llvm::enumerate(k.tensors))
    array(t, false, [&, n = n](Operation *u) { return u->getOperand(n); });
  for (auto [n, o] : llvm::enumerate(k.outs))
    array(o, true, [&, n = n](Operation *u) { return u->getResult(n); });
  for (size_t n = 0; n < k.scalars.size(); ++n)
    args += ", " + ptr(op->getOperand(k.tensors.size() + n));
  body += "  ";
  call(name + "(" + args + ")");
  body += "  }\n";
  return success();
}

LogicalResult ProgramEmitter::emitAccumulate(Operation *op) {
  auto folded = [&](Operation *accumulate) {
    Operation *producer = accumulate->getOperand(1).getDefiningOp();
    return producer && gemmAccumulates(producer);
  };
  if (folded(op)) {
    body += "  // accumulated by the GEMM above (alpha = weight, beta = keep)\n";
    return success();
  }
  pendingAccumulates.push_back(op);
  Operation *next = op->getNextNode();
  if (next && pendingAccumulates.size() < kMaxUpdateTensors && isa<tc::AccumulateGradOp>(next) &&
      !folded(next) && next->getOperand(2) == op->getOperand(2) &&
      next->getOperand(3) == op->getOperand(3))
    return success(); // emitted with the run's last accumulation
  std::vector<Operation *> ops = std::move(pendingAccumulates);
  pendingAccumulates.clear();
  callOps = ops;
  callCostTaken = false;
  std::vector<std::string> comment;
  std::vector<int64_t> counts;
  describeRun(ops, comment, counts);
  bool anyInPlace = llvm::any_of(ops, [&](Operation *u) { return buffers.inPlace(u->getResult(0)); });
  comment.push_back(anyInPlace ? "gradient accumulation, in place: acc = keep ? acc + w * grad : "
                                 "w * grad (the group's first micro-batch writes)"
                               : "gradient accumulation: the group's gradient for the update, "
                                 "keep ? acc + w * grad : w * grad");
  std::string name = kernels.addMultiTensorKernel(
      "accumulate_grad", comment,
      {{"float", "acc", false}, {"float", "grad", false}, {"float", "out", true}},
      {{"float", "weight", false}, {"float", "keep", false}}, counts,
      "  const float g = weight[0] * grad[i];\n"
      "  out[i] = keep[0] != 0.0f ? acc[i] + g : g;\n");
  body += "  {\n";
  auto array = [&](const char *arrayName, bool output, auto valueOf) {
    body += std::string("    ") + (output ? "float" : "const float") + " *const " + arrayName +
            "[] = {";
    for (auto [k, u] : llvm::enumerate(ops))
      body += (k ? ", " : "") + ptr(valueOf(u));
    body += "};\n";
  };
  array("acc", false, [](Operation *u) { return u->getOperand(0); });
  array("grad", false, [](Operation *u) { return u->getOperand(1); });
  array("out", true, [](Operation *u) { return u->getResult(0); });
  body += "  ";
  call(name + "(ctx, acc, grad, out, " + ptr(op->getOperand(2)) + ", " + ptr(op->getOperand(3)) +
       ")");
  body += "  }\n";
  return success();
}

/// A cast of a parameter (an f32 master weight) to a 16-bit type: the
/// mixed-precision step's per-step copy of a weight.
bool trainc::codegen::isWeightCast(Operation *op) {
  auto castOp = dyn_cast_or_null<tc::CastOp>(op);
  auto arg = castOp ? dyn_cast<BlockArgument>(castOp->getOperand(0)) : nullptr;
  auto func = arg ? dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()) : nullptr;
  if (!func || !func.getArgAttr(arg.getArgNumber(), tc::kParamAttrName))
    return false;
  Type from = cast<ShapedType>(op->getOperand(0).getType()).getElementType();
  Type to = cast<ShapedType>(op->getResult(0).getType()).getElementType();
  return from.isF32() && (to.isBF16() || to.isF16());
}

/// A run of weight casts to one type is one multi-tensor kernel (as the
/// optimizer's updates): one launch casts every weight of the step. A lone
/// one is an ordinary pointwise kernel.
LogicalResult ProgramEmitter::emitWeightCast(Operation *op) {
  pendingCasts.push_back(op);
  Operation *next = op->getNextNode();
  if (next && pendingCasts.size() < kMaxUpdateTensors && isWeightCast(next) &&
      cast<ShapedType>(next->getResult(0).getType()).getElementType() ==
          cast<ShapedType>(op->getResult(0).getType()).getElementType())
    return success(); // emitted with the run's last cast
  std::vector<Operation *> ops = std::move(pendingCasts);
  pendingCasts.clear();
  callOps = ops;
  callCostTaken = false;
  if (ops.size() == 1)
    return emitPointwise(op);
  std::string low = cType(op->getResult(0).getType());
  std::vector<std::string> comment;
  std::vector<int64_t> counts;
  describeRun(ops, comment, counts);
  comment.push_back("this step's " + low + " copies of the f32 master weights");
  std::string name = kernels.addMultiTensorKernel(
      "cast_weights", comment, {{"float", "in", false}, {low, "out", true}}, {}, counts,
      "  out[i] = static_cast<" + low + ">(in[i]);\n");
  body += "  {\n    const float *const in[] = {";
  for (auto [k, c] : llvm::enumerate(ops))
    body += (k ? ", " : "") + ptr(c->getOperand(0));
  body += "};\n    " + low + " *const out[] = {";
  for (auto [k, c] : llvm::enumerate(ops))
    body += (k ? ", " : "") + ptr(c->getResult(0));
  body += "};\n  ";
  call(name + "(ctx, in, out)");
  body += "  }\n";
  return success();
}

/// The loss scaler's probe: the flag is zeroed, then one multi-tensor
/// kernel (per kMaxUpdateTensors operands) reads every gradient element once
/// and raises the flag to +inf on an inf or NaN.
LogicalResult ProgramEmitter::emitNonfiniteProbe(tc::NonfiniteProbeOp op) {
  std::string flag = ptr(op.getResult());
  call("ctx.fill(" + flag + ", 0, sizeof(float))");
  ValueRange values = op.getValues();
  for (size_t first = 0; first < values.size(); first += kMaxUpdateTensors) {
    ValueRange part = values.slice(first, std::min(kMaxUpdateTensors, values.size() - first));
    std::vector<int64_t> counts;
    for (Value v : part)
      counts.push_back(countOf(v));
    std::vector<std::string> comment = {
        opComment(op),
        "loss scaling: +inf when an element of the " + std::to_string(values.size()) +
            " gradients is inf or NaN (the step is then skipped), else 0"};
    std::string name = kernels.addMultiTensorKernel(
        "nonfinite_probe", comment, {{"float", "grad", false}}, {{"float", "found", true}},
        counts, "  if (!trainc::gen::isFinite(grad[i]))\n    trainc::gen::raiseFlag(found);\n");
    body += "  {\n    const float *const grad[] = {";
    for (auto [k, v] : llvm::enumerate(part))
      body += (k ? ", " : "") + ptr(v);
    body += "};\n  ";
    call(name + "(ctx, grad, " + flag + ")");
    body += "  }\n";
  }
  return success();
}

/// Data parallelism: each gradient of the bucket times the rank's scale
/// into its result (one multi-tensor kernel per kMaxUpdateTensors), then the
/// start of one in-place sum over the ranks of the whole bucket, whose
/// results the plan put side by side (ctx.allReduceStart). emitOp waits for
/// it (ctx.allReduceWait) before the first op that reads a result, so the
/// ops between run while the ranks sum. A single process has nothing to
/// add.
LogicalResult ProgramEmitter::emitAllReduce(tc::AllReduceOp op) {
  for (Value v : op.getValues())
    if (!cast<ShapedType>(v.getType()).getElementType().isF32())
      return op.emitError("codegen averages f32 gradients over the ranks; got ") << v.getType();
  // The bucket's extent: its members in order, side by side (at most the
  // plan's alignment between them), so the one sum covers nothing else.
  auto offsets = op->getAttrOfType<DenseI64ArrayAttr>(tc::kOffsetsAttrName);
  int64_t end = 0;
  for (auto [k, r] : llvm::enumerate(op.getResults())) {
    int64_t at = offsets[k];
    if (at < 0 || at % 4 || (k > 0 && (at < end || at - end >= trainc::rt::kBucketMemberAlignment)))
      return op.emitError("codegen needs the bucket's results side by side in the plan "
                          "(trainc-plan)");
    end = at + countOf(r) * 4;
  }
  if (!startedBuckets.insert(op.getBucket()).second)
    return op.emitError("bucket ") << op.getBucket() << " is summed twice in one step";
  int64_t count = (end - offsets[0]) / 4;

  std::string scale = ptr(op.getScale());
  ValueRange values = op.getValues();
  for (size_t first = 0; first < values.size(); first += kMaxUpdateTensors) {
    size_t size = std::min(kMaxUpdateTensors, values.size() - first);
    std::vector<int64_t> counts;
    for (size_t k = first; k < first + size; ++k)
      counts.push_back(countOf(values[k]));
    std::vector<std::string> comment = {
        opComment(op), "data parallelism: this rank's share (data_parallel.scale) of " +
                           std::to_string(values.size()) + " gradients, before the sum over "
                           "the ranks"};
    std::string name = kernels.addMultiTensorKernel(
        "all_reduce_share", comment, {{"float", "grad", false}, {"float", "share", true}},
        {{"float", "scale", false}}, counts, "  share[i] = grad[i] * scale[0];\n");
    body += "  {\n    const float *const grad[] = {";
    for (size_t k = first; k < first + size; ++k)
      body += (k > first ? ", " : "") + ptr(values[k]);
    body += "};\n    float *const share[] = {";
    for (size_t k = first; k < first + size; ++k)
      body += (k > first ? ", " : "") + ptr(op.getResult(k));
    body += "};\n  ";
    call(name + "(ctx, grad, share, " + scale + ")");
    body += "  }\n";
  }
  body += "  // bucket " + std::to_string(op.getBucket()) + ": " +
          std::to_string(op.getNumResults()) + " gradients, " + std::to_string(count) +
          " floats in one buffer, summed over the ranks while the step goes on\n";
  call("ctx.allReduceStart(" + std::to_string(op.getBucket()) + ", " + ptr(op.getResult(0)) +
       ", " + std::to_string(count) + ")");
  for (Value r : op.getResults())
    pendingSums[r] = op.getBucket();
  // Nothing reads the bucket: the plan may reuse its bytes at once.
  if (llvm::all_of(op.getResults(), [](Value r) { return r.use_empty(); }))
    waitForBucket(op.getBucket());
  return success();
}

/// Before `op` reads a result of a bucket still being summed: the wait.
void ProgramEmitter::waitForSums(Operation *op) {
  for (Value operand : op->getOperands())
    if (auto it = pendingSums.find(operand); it != pendingSums.end())
      waitForBucket(it->second);
}

/// The wait for bucket `bucket`; its results are no longer pending.
void ProgramEmitter::waitForBucket(int64_t bucket) {
  call("ctx.allReduceWait(" + std::to_string(bucket) + ")");
  SmallVector<Value> members;
  for (auto &[value, of] : pendingSums)
    if (of == bucket)
      members.push_back(value);
  for (Value member : members)
    pendingSums.erase(member);
}

namespace {

/// A kernel name from letters, digits and underscores only.
std::string kernelStem(StringRef name) {
  std::string s;
  for (char c : name)
    s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  return s.empty() ? "group" : s;
}

} // namespace

LogicalResult ProgramEmitter::emitFused(tc::FusedOp fused) {
  if (Operation *head = tc::groupHead(fused.getBlock()))
    return tc::isNormHead(head) ? emitNormGroup(fused, head) : emitEpilogueGroup(fused, head);
  SmallVector<Operation *> ops;
  for (Operation &op : fused.getBlock().without_terminator())
    ops.push_back(&op);
  SmallVector<std::string> inputPtrs, outputPtrs;
  for (Value v : fused.getInputs())
    inputPtrs.push_back(ptr(v));
  for (Value v : fused.getResults())
    outputPtrs.push_back(ptr(v));
  auto yield = cast<tc::YieldOp>(fused.getBlock().getTerminator());
  SmallVector<Value> inputs(fused.getBlock().getArguments().begin(),
                            fused.getBlock().getArguments().end());
  SmallVector<Value> outputs(yield.getValues().begin(), yield.getValues().end());
  return emitGroup(fused, ops, inputs, inputPtrs, outputs, outputPtrs,
                   kernelStem(fused.getKernel()));
}

LogicalResult ProgramEmitter::emitPointwise(Operation *op) {
  SmallVector<Value> inputs;
  SmallVector<std::string> inputPtrs;
  for (Value v : op->getOperands()) {
    if (tc::isSplatConstant(v.getDefiningOp()) || llvm::is_contained(inputs, v))
      continue; // inlined as a literal, or read once
    inputs.push_back(v);
    inputPtrs.push_back(ptr(v));
  }
  Value result = op->getResult(0);
  return emitGroup(op, {op}, inputs, inputPtrs, {result}, {ptr(result)},
                   op->getName().stripDialect().str());
}

/// One kernel for a group of pointwise ops over one iteration shape: each
/// input is read once per element (at its broadcast index), each op's
/// element is a local variable, each output is written once.
namespace {

/// Whether the group's ops read `v` only as a dropout's key (passed as a
/// pointer, not read).
bool onlyKey(ArrayRef<Operation *> ops, Value v) {
  return llvm::all_of(v.getUses(), [&](OpOperand &use) {
    return !llvm::is_contained(ops, use.getOwner()) ||
           (isa<tc::DropoutOp>(use.getOwner()) && use.getOperandNumber() == 1);
  });
}

/// Whether only slices of the group read `v`: each slice reads its elements
/// at its own strides (tc.fused's slice members).
bool onlySliced(ArrayRef<Operation *> ops, Value v) {
  return llvm::all_of(v.getUsers(), [&](Operation *user) {
    return !llvm::is_contained(ops, user) || isa<tc::SliceOp>(user);
  });
}

/// The element loop's coordinates: the code that computes them from `i`
/// where an input is broadcast or sliced, and the row length a loop hands
/// the kernel where the innermost one is read (a bias row; a GEMM's
/// epilogue too, its blocks' ranges cut at row ends).
struct GroupIndexing {
  std::string code;
  int64_t innerExtent = 1;
};

GroupIndexing groupIndexing(ArrayRef<Operation *> ops, ArrayRef<Value> inputs,
                            ArrayRef<int64_t> shape) {
  SmallVector<bool> used(shape.size(), false);
  bool needsCoords = false;
  auto useStrides = [&](ArrayRef<int64_t> strides) {
    needsCoords = true;
    for (auto [d, stride] : llvm::enumerate(strides))
      used[d] = used[d] || stride != 0;
  };
  for (Value v : inputs)
    if (!onlyKey(ops, v) && !onlySliced(ops, v) && shapeOf(v) != shape && countOf(v) != 1)
      useStrides(broadcastStrides(shapeOf(v), shape));
  for (Operation *op : ops)
    if (auto slice = dyn_cast<tc::SliceOp>(op))
      useStrides(sliceStrides(shapeOf(slice.getInput()), slice.getStarts(), slice.getSteps()).first);
  GroupIndexing indexing;
  indexing.innerExtent = needsCoords && shape.size() > 1 && used.back() ? shape.back() : 1;
  if (needsCoords)
    indexing.code = decomposeIndex(shape, "i", "c", "  ", used,
                                   indexing.innerExtent > 1 ? "inner" : "");
  return indexing;
}

/// A group kernel's body as it is written: its parameters, the code
/// before the stores, the stores, each value's element expression, each
/// input's pointer and the comment lines.
struct GroupBody {
  std::vector<KernelParam> params;
  std::string code, stores;
  llvm::DenseMap<Value, std::string> element, pointer;
  std::vector<std::string> comment;
};

/// Reads every input's element (a broadcast input at its strides, a scalar
/// at 0); a dropout's key and an input only slices read stay pointers.
LogicalResult readGroupInputs(Operation *anchor, ArrayRef<Operation *> ops,
                              ArrayRef<Value> inputs, ArrayRef<int64_t> shape, GroupBody &body) {
  for (auto [k, v] : llvm::enumerate(inputs)) {
    std::string name = "in" + std::to_string(k), t = cType(v.getType());
    if (t.empty())
      return anchor->emitError("codegen does not support element type ")
             << cast<ShapedType>(v.getType()).getElementType() << " yet";
    body.params.push_back({t, name, false});
    body.pointer[v] = name;
    if (onlyKey(ops, v) || onlySliced(ops, v)) {
      body.element[v] = name;
      continue;
    }
    std::string index = shapeOf(v) == shape ? "i"
                        : countOf(v) == 1   ? "0"
                                            : linearIndex(broadcastStrides(shapeOf(v), shape), 0, "c");
    std::string a = "a" + std::to_string(k);
    body.code += "  const " + valueType(v.getType()) + " " + a + " = " + name + "[" + index + "];\n";
    body.element[v] = a;
  }
  return success();
}

/// One output is `out`; several are out0, out1, ...
std::string outputName(ArrayRef<Value> outputs, size_t k) {
  return outputs.size() == 1 ? std::string("out") : "out" + std::to_string(k);
}

/// Writes every op of the group in order: a constant as its literal, a
/// slice as a read in place at its strides, any other op as its scalar
/// expression, kept in a local or, where only the group's output takes it,
/// stored there. The first 12 ops are named in the comment (`describe`).
LogicalResult writeGroupOps(ArrayRef<Operation *> ops, ArrayRef<Value> outputs,
                            llvm::function_ref<std::string(Operation *)> describe,
                            GroupBody &body) {
  int64_t shown = 0, computed = 0;
  for (Operation *op : ops) {
    if (auto constant = dyn_cast<tc::ConstantOp>(op)) {
      body.element[constant.getResult()] =
          splatLiteral(cast<DenseElementsAttr>(constant.getValue()));
      continue;
    }
    if (auto slice = dyn_cast<tc::SliceOp>(op)) {
      auto [strides, base] =
          sliceStrides(shapeOf(slice.getInput()), slice.getStarts(), slice.getSteps());
      std::string v = "v" + std::to_string(computed++);
      body.code += "  const " + valueType(slice.getType()) + " " + v + " = " +
                   body.pointer.lookup(slice.getInput()) + "[" +
                   linearIndex(strides, base, "c") + "];\n";
      body.element[slice.getResult()] = v;
      if (shown++ < 12)
        body.comment.push_back(describe(op) + " (read in place)");
      continue;
    }
    SmallVector<std::string> a;
    for (Value operand : op->getOperands()) {
      if (!body.element.count(operand)) {
        // A splat constant outside the group (a lone op's operand).
        auto constant = dyn_cast_or_null<tc::ConstantOp>(operand.getDefiningOp());
        if (!constant || !tc::isSplatConstant(constant))
          return op->emitError("codegen: operand of a kernel group is not available");
        body.element[operand] = splatLiteral(cast<DenseElementsAttr>(constant.getValue()));
      }
      a.push_back(body.element[operand]);
    }
    FailureOr<std::string> expr = scalarExpression(op, a, "i");
    if (failed(expr))
      return failure();
    Value result = op->getResult(0);
    std::string t = cType(result.getType());
    if (t.empty())
      return op->emitError("codegen does not support element type ")
             << cast<ShapedType>(result.getType()).getElementType() << " yet";
    // A 16-bit result is rounded to its type as PyTorch's op would (computed
    // in float, kept in a float local): fused and unfused kernels agree
    // bit for bit. A cast to the type rounds by itself.
    if (t != valueType(result.getType()) && !isa<tc::CastOp>(op))
      *expr = t + "(" + *expr + ")";
    // A result that only leaves the group is written straight to its output.
    auto output = llvm::find(outputs, result);
    if (output != outputs.end() && llvm::none_of(result.getUsers(), [&](Operation *user) {
          return llvm::is_contained(ops, user);
        })) {
      body.stores +=
          "  " + outputName(outputs, output - outputs.begin()) + "[i] = " + *expr + ";\n";
      body.element[result] = "";
    } else {
      std::string v = "v" + std::to_string(computed++);
      body.code += "  const " + valueType(result.getType()) + " " + v + " = " + *expr + ";\n";
      body.element[result] = v;
    }
    if (shown++ < 12) {
      body.comment.push_back(describe(op));
      if (auto dropout = dyn_cast<tc::DropoutOp>(op))
        body.comment.push_back("keeps an element with probability 1 - " +
                               literal(dropout.getRatio().convertToFloat(), true) +
                               " (stream " + std::to_string(dropout.getStream()) + ")");
    }
  }
  if (shown > 12)
    body.comment.push_back("... and " + std::to_string(shown - 12) + " more ops");
  return success();
}

} // namespace

LogicalResult ProgramEmitter::emitGroup(Operation *anchor, ArrayRef<Operation *> ops,
                                        ArrayRef<Value> inputs,
                                        ArrayRef<std::string> inputPtrs,
                                        ArrayRef<Value> outputs,
                                        ArrayRef<std::string> outputPtrs, StringRef what,
                                        Value product, unsigned productOutput,
                                        std::string *kernel, StringRef note) {
  ArrayRef<int64_t> shape = shapeOf(outputs.front());
  GroupIndexing indexing = groupIndexing(ops, inputs, shape);
  GroupBody body;
  body.code = indexing.code;
  if (product) {
    // The GEMM's element, read before anything writes it.
    body.code += "  const float p = " + outputName(outputs, productOutput) + "[i]; // " +
                 (tc::isNormHead(product.getDefiningOp()) ? "the call's value" : "the product") +
                 "\n";
    body.element[product] = "p";
  }
  if (failed(readGroupInputs(anchor, ops, inputs, shape, body)))
    return failure();
  if (!note.empty())
    body.comment.push_back(note.str());
  if (product)
    body.comment.push_back(opComment(product.getDefiningOp()) +
                           (tc::isNormHead(product.getDefiningOp())
                                ? " (the library call; this kernel finishes each plane or row "
                                  "of its output in place, right after the call wrote it)"
                                : " (the GEMM; this kernel finishes its output in place)"));
  if (failed(writeGroupOps(ops, outputs, [&](Operation *op) { return opComment(op); }, body)))
    return failure();
  for (auto [k, v] : llvm::enumerate(outputs)) {
    body.params.push_back({cType(v.getType()), outputName(outputs, k), true});
    if (!body.element[v].empty())
      body.code += "  " + outputName(outputs, k) + "[i] = " + body.element[v] + ";\n";
  }
  body.code += body.stores;
  bool cpu = options.target == Target::Cpu;
  // A GEMM's product is read and written through the same output pointer
  // only, and the planner keeps inputs and outputs apart: __restrict__ holds.
  std::string name = kernels.addKernel(what, body.comment, body.params, countOf(outputs.front()),
                                       body.code, /*mayAlias=*/false,
                                       /*cpuRange=*/kernel && cpu, indexing.innerExtent);
  if (kernel) {
    *kernel = name; // a GEMM's epilogue: emitEpilogueGroup calls it
    return success();
  }
  std::string args;
  for (const std::string &p : inputPtrs)
    args += ", " + p;
  for (const std::string &p : outputPtrs)
    args += ", " + p;
  call(name + "(ctx" + args + ")");
  return success();
}

namespace {

/// A group cuBLASLt's epilogues compute on their own: the product plus a
/// same-shaped addend (beta = 1) or a bias row [.., n] (BIAS), then
/// optionally ReLU after a bias (RELU_BIAS), yielding only the last value.
/// The addend or bias is a tc.gemm head's C, or the block argument that the
/// group's first op adds to a matmul's product.
struct LibraryEpilogue {
  Value addend, bias;
  bool relu = false;
};

std::optional<LibraryEpilogue> libraryEpilogue(tc::FusedOp fused, Operation *head) {
  Value product = head->getResult(0);
  SmallVector<Operation *> rest;
  for (Operation &op : fused.getBlock().without_terminator())
    if (&op != head)
      rest.push_back(&op);
  auto yield = cast<tc::YieldOp>(fused.getBlock().getTerminator());
  if (rest.empty() || yield.getValues().size() != 1 ||
      yield.getValues()[0] != rest.back()->getResult(0))
    return std::nullopt;
  Value c, sum = product;
  if (auto gemm = dyn_cast<tc::GemmOp>(head); gemm && gemm.getC()) {
    c = gemm.getC();
  } else {
    auto add = dyn_cast<tc::AddOp>(rest.front());
    if (!add || (add.getLhs() != product && add.getRhs() != product))
      return std::nullopt;
    c = add.getLhs() == product ? add.getRhs() : add.getLhs();
    if (!isa<BlockArgument>(c) || c == product)
      return std::nullopt;
    sum = add.getResult();
    rest.erase(rest.begin());
  }
  LibraryEpilogue e;
  ArrayRef<int64_t> shape = shapeOf(product), o = shapeOf(c);
  if (o == shape)
    e.addend = c;
  else if (!o.empty() && o.back() == shape.back() &&
           llvm::all_of(o.drop_back(), [](int64_t d) { return d == 1; }))
    e.bias = c;
  else
    return std::nullopt;
  if (rest.empty())
    return e;
  auto relu = dyn_cast<tc::ReluOp>(rest.front());
  if (rest.size() != 1 || !relu || relu.getInput() != sum || !e.bias)
    return std::nullopt;
  e.relu = true;
  return e;
}

} // namespace

LogicalResult ProgramEmitter::emitEpilogueGroup(tc::FusedOp fused, Operation *head) {
  Block &block = fused.getBlock();
  auto outside = [&](Value v) {
    auto arg = dyn_cast<BlockArgument>(v);
    return arg ? fused.getInputs()[arg.getArgNumber()] : Value();
  };
  GemmDims gemm;
  if (auto matmul = dyn_cast<tc::MatMulOp>(head)) {
    FailureOr<GemmDims> dims =
        matmulDims(matmul, outside(matmul.getLhs()), outside(matmul.getRhs()));
    if (failed(dims))
      return failure();
    gemm = *dims;
  } else {
    auto g = cast<tc::GemmOp>(head);
    gemm = gemmDims(g, outside(g.getA()), outside(g.getB()));
  }
  Value product = head->getResult(0);
  auto gemmOp = dyn_cast<tc::GemmOp>(head);
  // A tc.gemm head's C is added by the library call.
  Value c = gemmOp && gemmOp.getC() ? outside(gemmOp.getC()) : Value();
  bool cpu = options.target == Target::Cpu;
  if (!cpu)
    if (std::optional<LibraryEpilogue> e = libraryEpilogue(fused, head)) {
      call("tk::gemmEpilogue(ctx, " + gemm.operands() + ", " + ptr(fused.getResult(0)) +
           gemm.outputTail() + ", trainc::rt::GemmEpilogue" +
           designated({{"addend", e->addend ? ptr(outside(e->addend)) : "nullptr"},
                       {"bias", e->bias ? ptr(outside(e->bias)) : "nullptr"},
                       {"activation", std::string("trainc::rt::GemmActivation::") +
                                          (e->relu ? "Relu" : "None")},
                       {"range", "nullptr"},
                       {"env", "nullptr"}}) +
           ")");
      return success();
    }
  SmallVector<Operation *> ops;
  for (Operation &op : block.without_terminator())
    if (&op != head)
      ops.push_back(&op);
  SmallVector<std::string> inputPtrs, outputPtrs;
  SmallVector<Value> inputs;
  for (auto [input, arg] : llvm::zip(fused.getInputs(), block.getArguments())) {
    // The GEMM's own operands are not the epilogue's.
    if (llvm::all_of(arg.getUsers(), [&](Operation *u) { return u == head; }))
      continue;
    inputs.push_back(arg);
    inputPtrs.push_back(ptr(input));
  }
  for (Value v : fused.getResults())
    outputPtrs.push_back(ptr(v));
  auto yield = cast<tc::YieldOp>(block.getTerminator());
  SmallVector<Value> outputs(yield.getValues().begin(), yield.getValues().end());
  unsigned host = 0;
  while (!cast<ShapedType>(outputs[host].getType()).getElementType().isF32())
    ++host; // the verifier promises one
  std::string kernel;
  if (failed(emitGroup(fused, ops, inputs, inputPtrs, outputs, outputPtrs,
                       kernelStem(fused.getKernel()), product, host, &kernel)))
    return failure();
  std::string args;
  for (const std::string &p : llvm::concat<const std::string>(inputPtrs, outputPtrs))
    args += ", " + p;
  std::string hostPtr = outputPtrs[host];
  if (!cpu) {
    // The GEMM, then the kernel over its output.
    if (c)
      call("tk::gemmEpilogue(ctx, " + gemm.operands() + ", " + hostPtr + gemm.outputTail() +
           ", " + gemmEpilogueArg(c, product, "None", "nullptr", "nullptr") + ")");
    else
      call("tk::gemm(ctx, " + gemm.operands("1.0f") + ", 0.0f, " + hostPtr +
           gemm.outputTail() + ")");
    call(kernel + "(ctx" + args + ")");
    return success();
  }
  // Each block of rows is finished on the thread that computed it.
  body += "  {\n    const " + kernel + "_env env{" + args.substr(2) + "};\n  ";
  call("tk::gemmEpilogue(ctx, " + gemm.operands() + ", " + hostPtr + gemm.outputTail() + ", " +
       gemmEpilogueArg(c, product, "None", kernel + "_range", "&env") + ")");
  body += "  }\n";
  return success();
}

LogicalResult ProgramEmitter::emitNormGroup(tc::FusedOp fused, Operation *head) {
  Block &block = fused.getBlock();
  auto pointer = [&](Value v) { return groupValuePtr(fused, v); };
  SmallVector<Operation *> prologue, epilogue;
  // Splat constants are literals wherever they are read.
  for (Operation &op : block.without_terminator())
    if (&op != head && !tc::isSplatConstant(&op))
      (op.isBeforeInBlock(head) ? prologue : epilogue).push_back(&op);
  Value product = head->getResult(0);
  std::string productPtr = pointer(product);
  NormPart pro, epi;
  if (!prologue.empty() &&
      failed(emitNormPart(fused, head, prologue, /*isEpilogue=*/false, pro, productPtr)))
    return failure();
  if (!epilogue.empty() &&
      failed(emitNormPart(fused, head, epilogue, /*isEpilogue=*/true, epi, productPtr)))
    return failure();
  // The norm's first result goes where the epilogue finishes it.
  auto pointerOrHost = [&](Value v) { return v == product ? productPtr : pointer(v); };
  if (options.target != Target::Cpu) {
    if (!pro.kernel.empty())
      call(pro.kernel + "(ctx" + pro.args + ")");
    emitNormCall(head, pointerOrHost, "");
    if (!epi.kernel.empty())
      call(epi.kernel + "(ctx" + epi.args + ")");
    return success();
  }
  // Each plane (row) is written by the prologue right before the norm reads
  // it, and finished by the epilogue right after the norm wrote it.
  body += "  {\n";
  std::string fields[4] = {"nullptr", "nullptr", "nullptr", "nullptr"};
  for (auto [k, part] : llvm::enumerate(std::array<NormPart *, 2>{&pro, &epi})) {
    if (part->kernel.empty())
      continue;
    std::string env = k == 0 ? "prologue" : "epilogue";
    body += "    const " + part->kernel + "_env " + env + "{" + part->args.substr(2) + "};\n";
    fields[2 * k] = part->kernel + "_range";
    fields[2 * k + 1] = "&" + env;
  }
  body += "    const trainc::rt::NormFusion fusion" +
          designated({{"prologue", fields[0]},
                      {"prologueEnv", fields[1]},
                      {"epilogue", fields[2]},
                      {"epilogueEnv", fields[3]}}) +
          ";\n  ";
  emitNormCall(head, pointerOrHost, "&fusion");
  body += "  }\n";
  return success();
}

std::string ProgramEmitter::groupValuePtr(tc::FusedOp fused, Value v) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    return ptr(fused.getInputs()[arg.getArgNumber()]);
  auto yield = cast<tc::YieldOp>(fused.getBlock().getTerminator());
  for (auto [k, y] : llvm::enumerate(yield.getValues()))
    if (y == v)
      return ptr(fused.getResult(k));
  return "";
}

LogicalResult ProgramEmitter::emitNormPart(tc::FusedOp fused, Operation *head,
                                           ArrayRef<Operation *> ops, bool isEpilogue,
                                           NormPart &part, std::string &productPtr) {
  auto yield = cast<tc::YieldOp>(fused.getBlock().getTerminator());
  Value product = head->getResult(0);
  // Its inputs: the values it reads from memory (the group's inputs, and
  // for the epilogue the prologue's results); its outputs: the group's
  // results it computes.
  SmallVector<Value> inputs, outputs;
  SmallVector<std::string> inputPtrs, outputPtrs;
  for (Operation *op : ops)
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      bool inside = def && (llvm::is_contained(ops, def) || def == head);
      if (inside || tc::isSplatConstant(def) || llvm::is_contained(inputs, operand))
        continue;
      inputs.push_back(operand);
      inputPtrs.push_back(groupValuePtr(fused, operand));
      if (inputPtrs.back().empty())
        return op->emitError("codegen: a norm's epilogue reads a prologue value the group "
                             "does not keep");
    }
  for (auto [k, y] : llvm::enumerate(yield.getValues()))
    if (Operation *def = y.getDefiningOp();
        (def && llvm::is_contained(ops, def)) || (isEpilogue && y == product)) {
      outputs.push_back(y);
      outputPtrs.push_back(ptr(fused.getResult(k)));
    }
  unsigned host = 0;
  if (isEpilogue) {
    // The norm writes its result where the epilogue finishes it: its own
    // result when the group yields it, else the first f32 one.
    auto own = llvm::find(outputs, product);
    if (own != outputs.end())
      host = own - outputs.begin();
    else
      while (!cast<ShapedType>(outputs[host].getType()).getElementType().isF32())
        ++host; // the verifier promises one
    productPtr = outputPtrs[host];
  }
  std::string what = kernelStem(fused.getKernel()) + (isEpilogue ? "_epilogue" : "_prologue");
  std::string note =
      isEpilogue ? ""
                 : "the prologue of " + opComment(head) +
                       ": the library call runs it on each plane or row of its operand right "
                       "before reading it";
  if (failed(emitGroup(fused, ops, inputs, inputPtrs, outputs, outputPtrs, what,
                       isEpilogue ? product : Value(), host, &part.kernel, note)))
    return failure();
  for (const std::string &p : llvm::concat<const std::string>(inputPtrs, outputPtrs))
    part.args += ", " + p;
  return success();
}
