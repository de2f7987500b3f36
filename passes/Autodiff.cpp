//===- Autodiff.cpp - reverse mode: @loss -> @train_step ------------------===//
//
// Straight-line reverse mode over one block: which values need gradients is
// the intersection of "reachable from a trainable parameter" and "reaches the
// loss"; then ops are visited in reverse and each op's GradientOpInterface
// rule turns result gradients into operand gradients, accumulated with
// tc.add where a value has several readers.
//
//===----------------------------------------------------------------------===//

#include "ir/TcAttrs.h"
#include "runtime/include/trainc_rt/defaults.h"
#include "ir/StepAbi.h"
#include "ir/TcOps.h"
#include "passes/Kfac.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/Regex.h"

namespace trainc {
#define GEN_PASS_DEF_AUTODIFF
#include "passes/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc;

namespace {

bool isFloatTensor(Value v) {
  return isa<FloatType>(cast<RankedTensorType>(v.getType()).getElementType());
}

std::string nodeName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  return "";
}

/// The one axis along which a unit-step tc.slice_backward places its
/// gradient (every other axis whole), or -1.
int64_t placementAxis(tc::SliceBackwardOp op) {
  ArrayRef<int64_t> shape = op.getInputShape(), starts = op.getStarts(), ends = op.getEnds(),
                    steps = op.getSteps();
  int64_t axis = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (steps[i] != 1)
      return -1;
    if (starts[i] == 0 && ends[i] == shape[i])
      continue;
    if (axis >= 0)
      return -1;
    axis = static_cast<int64_t>(i);
  }
  return axis;
}

/// Sums gradients that tc.slice_backward placed into zeros along one axis
/// at disjoint ranges (a value read by many slices: an unrolled time loop's
/// steps, the gates of a cell, the heads of a split) as one tc.concat of
/// the pieces and the zeros between them, instead of a tc.add of full-size
/// tensors per slice. Returns the merged gradients and the contributions it
/// could not merge.
SmallVector<Value> mergeSliceGradients(OpBuilder &b, ArrayRef<tc::SliceBackwardOp> pieces) {
  llvm::MapVector<int64_t, SmallVector<tc::SliceBackwardOp>> byAxis;
  SmallVector<Value> sums;
  for (tc::SliceBackwardOp op : pieces) {
    int64_t axis = placementAxis(op);
    // A piece that is two contributions (an op reading a value twice)
    // stays a piece, added twice.
    if (axis < 0 || llvm::count(pieces, op) > 1)
      sums.push_back(op.getResult());
    else
      byAxis[axis].push_back(op);
  }
  for (auto &[axis, ops] : byAxis) {
    llvm::stable_sort(ops, [&](tc::SliceBackwardOp x, tc::SliceBackwardOp y) {
      return x.getStarts()[axis] < y.getStarts()[axis];
    });
    auto type = cast<RankedTensorType>(ops.front().getType());
    SmallVector<Value> parts;
    SmallVector<tc::SliceBackwardOp> used;
    int64_t at = 0;
    auto zeros = [&](int64_t from, int64_t to, Location loc) {
      SmallVector<int64_t> shape(type.getShape());
      shape[axis] = to - from;
      auto t = RankedTensorType::get(shape, type.getElementType());
      parts.push_back(b.create<tc::ConstantOp>(loc, DenseElementsAttr::get(
                                                        t, b.getZeroAttr(t.getElementType())))
                          .getResult());
    };
    for (tc::SliceBackwardOp op : ops) {
      const int64_t start = op.getStarts()[axis], end = op.getEnds()[axis];
      if (start < at || end <= start) { // overlaps a placed piece: add it
        sums.push_back(op.getResult());
        continue;
      }
      if (start > at)
        zeros(at, start, op.getLoc());
      parts.push_back(op.getResultGrad());
      used.push_back(op);
      at = end;
    }
    if (used.size() < 2) {
      for (tc::SliceBackwardOp op : used)
        sums.push_back(op.getResult());
      continue;
    }
    if (at < type.getShape()[axis])
      zeros(at, type.getShape()[axis], used.back().getLoc());
    Value joined = b.create<tc::ConcatOp>(used.front().getLoc(), type, parts,
                                          b.getI64IntegerAttr(axis))
                       .getResult();
    sums.push_back(joined);
    for (tc::SliceBackwardOp op : used)
      op.erase();
  }
  return sums;
}

/// Whether a gradient contribution is a product op(A)^T B summed over the
/// rows of A and B (the weight gradient of y = x W^T): such products of one
/// value join into one GEMM over all their rows.
bool isRowProduct(Value g) {
  auto gemm = g.getDefiningOp<tc::GemmOp>();
  return gemm && gemm.getTransA() && !gemm.getTransB() && !gemm.getC();
}

/// Sums the row products of one value (a weight read by the GEMM of every
/// step of an unrolled time loop) as one GEMM of their operands concatenated
/// along the rows, instead of one small GEMM per step and a sum of their
/// results. Products whose attributes differ stay as they are.
SmallVector<Value> mergeRowProducts(OpBuilder &b, ArrayRef<Value> products) {
  SmallVector<Value> sums;
  SmallVector<SmallVector<tc::GemmOp>> groups;
  for (Value g : products) {
    auto gemm = g.getDefiningOp<tc::GemmOp>();
    auto same = llvm::find_if(groups, [&](SmallVector<tc::GemmOp> &group) {
      tc::GemmOp first = group.front();
      return first->getAttrDictionary() == gemm->getAttrDictionary() &&
             first.getA().getType().getElementType() == gemm.getA().getType().getElementType() &&
             first.getB().getType().getElementType() == gemm.getB().getType().getElementType();
    });
    if (same == groups.end() || llvm::is_contained(*same, gemm))
      groups.push_back({gemm});
    else
      same->push_back(gemm);
  }
  for (SmallVector<tc::GemmOp> &group : groups) {
    tc::GemmOp first = group.front();
    if (group.size() < 2) {
      sums.push_back(first.getResult());
      continue;
    }
    auto joined = [&](bool lhs) {
      SmallVector<Value> parts;
      int64_t rows = 0;
      for (tc::GemmOp gemm : group) {
        parts.push_back(lhs ? gemm.getA() : gemm.getB());
        rows += cast<RankedTensorType>(parts.back().getType()).getShape()[0];
      }
      auto type = cast<RankedTensorType>(parts.front().getType());
      SmallVector<int64_t> shape(type.getShape());
      shape[0] = rows;
      return b.create<tc::ConcatOp>(first.getLoc(), type.clone(shape), parts,
                                    b.getI64IntegerAttr(0))
          .getResult();
    };
    Value lhs = joined(true), rhs = joined(false);
    auto merged = b.create<tc::GemmOp>(first.getLoc(), first.getType(), ValueRange{lhs, rhs},
                                       first->getAttrs());
    sums.push_back(merged.getResult());
    for (tc::GemmOp gemm : group)
      gemm.erase();
  }
  return sums;
}

/// The gradient of each value, summed as its contributions arrive: with
/// tc.add, except that slice gradients and row products wait until the
/// value's gradient is read (settle), to be joined by mergeSliceGradients
/// and mergeRowProducts.
class GradientSums {
public:
  explicit GradientSums(OpBuilder &b) : b(b) {}

  void accumulate(Value v, Value g, Location loc) {
    if (auto piece = g.getDefiningOp<tc::SliceBackwardOp>())
      pendingSlices[v].push_back(piece);
    else if (isRowProduct(g))
      pendingProducts[v].push_back(g);
    else
      add(v, g, loc);
  }

  /// Sums the contributions that wait for `v` into its gradient.
  void settle(Value v) {
    if (auto it = pendingSlices.find(v); it != pendingSlices.end()) {
      SmallVector<tc::SliceBackwardOp> pieces = std::move(it->second);
      pendingSlices.erase(it);
      for (Value g : mergeSliceGradients(b, pieces))
        add(v, g, g.getLoc());
    }
    if (auto it = pendingProducts.find(v); it != pendingProducts.end()) {
      SmallVector<Value> products = std::move(it->second);
      pendingProducts.erase(it);
      for (Value g : mergeRowProducts(b, products))
        add(v, g, g.getLoc());
    }
  }

  /// Settled gradients.
  llvm::DenseMap<Value, Value> grads;

private:
  void add(Value v, Value g, Location loc) {
    auto it = grads.find(v);
    if (it == grads.end())
      grads[v] = g;
    else
      it->second = b.create<tc::AddOp>(loc, ValueRange{it->second, g})->getResult(0);
  }

  OpBuilder &b;
  llvm::DenseMap<Value, SmallVector<tc::SliceBackwardOp>> pendingSlices;
  llvm::DenseMap<Value, SmallVector<Value>> pendingProducts;
};

struct AutodiffPass : trainc::impl::AutodiffBase<AutodiffPass> {
  using AutodiffBase::AutodiffBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto loss = module.lookupSymbol<func::FuncOp>("loss");
    if (!loss || module.lookupSymbol("train_step"))
      return;
    if (failed(differentiate(module, loss)))
      signalPassFailure();
  }

  /// Which values autodiff differentiates: those that depend on a trainable
  /// float parameter (not frozen) and that the loss depends on.
  struct Activity {
    llvm::DenseSet<Value> varying, useful;
    /// The arguments that get a gradient, in order.
    SmallVector<unsigned> params;
  };
  FailureOr<Activity> findActive(ModuleOp module, func::FuncOp step, ArrayRef<Value> seeds) {
    Block &body = step.getBody().front();
    // Forward: values that depend on a trainable float parameter.
    Activity a;
    llvm::DenseSet<Value> &varying = a.varying;
    SmallVector<unsigned> &params = a.params;
    llvm::Regex frozen(freeze);
    std::string regexError;
    if (!freeze.empty() && !frozen.isValid(regexError))
      return step.emitError("--freeze='") << freeze << "' is not a regular expression: "
                                          << regexError;
    bool froze = false;
    for (BlockArgument arg : step.getArguments()) {
      auto symbol = step.getArgAttrOfType<FlatSymbolRefAttr>(arg.getArgNumber(),
                                                             tc::kParamAttrName);
      auto param = symbol ? module.lookupSymbol<tc::ParamOp>(symbol) : nullptr;
      if (!param || !param.getTrainable() || !isFloatTensor(arg))
        continue;
      if (!freeze.empty() && frozen.match(symbol.getValue())) {
        froze = true;
        continue;
      }
      varying.insert(arg);
      params.push_back(arg.getArgNumber());
    }
    if (!freeze.empty() && !froze)
      return step.emitError("--freeze='") << freeze << "' matches no trainable parameter";
    // A pipeline stage's received activations are differentiated too: their
    // gradients go back to the stage before.
    step.walk([&](tc::RecvOp recv) {
      if (!recv.getGradient() && isFloatTensor(recv.getResult()))
        varying.insert(recv.getResult());
    });
    for (Operation &op : body.without_terminator()) {
      bool depends = llvm::any_of(op.getOperands(), [&](Value v) { return varying.contains(v); });
      if (depends)
        for (Value r : op.getResults())
          if (isFloatTensor(r))
            varying.insert(r);
    }
    // Backward: values the loss depends on.
    llvm::DenseSet<Value> &useful = a.useful;
    useful.insert(seeds.begin(), seeds.end());
    for (Operation &op : llvm::reverse(body.without_terminator()))
      if (llvm::any_of(op.getResults(), [&](Value r) { return useful.contains(r); }))
        for (Value v : op.getOperands())
          useful.insert(v);
    return a;
  }

  /// Seeds the backward with d loss = 1, or the loss scale (GradScaler's
  /// scale(loss).backward(): d (scale * loss) = scale).
  LogicalResult seedLoss(ModuleOp module, func::FuncOp step, OpBuilder &b, Value lossValue,
                         llvm::DenseMap<Value, Value> &grads) {
    auto one =
        RankedTensorType::get({}, cast<RankedTensorType>(lossValue.getType()).getElementType());
    Location seedLoc =
        tc::phaseLoc("backward of the loss", b.getUnknownLoc(), tc::StepPhase::Backward);
    Attribute scaling = module->getAttr(tc::kLossScaleAttrName);
    if (!scaling) {
      grads[lossValue] =
          b.create<tc::ConstantOp>(seedLoc, DenseElementsAttr::get(one, 1.0f)).getResult();
      return success();
    }
    if (!one.getElementType().isF32())
      return step.emitError("loss scaling needs an f32 loss, got ") << lossValue.getType();
    if (auto fixed = dyn_cast<FloatAttr>(scaling)) {
      grads[lossValue] =
          b.create<tc::ConstantOp>(
               tc::phaseLoc("backward of the loss (scaled)", b.getUnknownLoc(),
                            tc::StepPhase::Backward),
               DenseElementsAttr::get(one, static_cast<float>(fixed.getValueAsDouble())))
              .getResult();
    } else {
      grads[lossValue] = tc::addState(step, one, tc::StateRole::LossScale, {},
                                      static_cast<float>(rt::kInitialLossScale));
    }
    return success();
  }

  /// A pipeline stage: the gradient of each float tensor it sent on, received
  /// back from the same stage and slot where the backward starts.
  void receiveGradients(OpBuilder &b, ArrayRef<tc::SendOp> sends,
                        llvm::function_ref<void(Value, Value)> seed) {
    for (tc::SendOp send : sends) {
      if (!isFloatTensor(send.getValue()))
        continue;
      Location loc = tc::phaseLoc("gradient of " + send.getTensor().str() + " from stage " +
                                      std::to_string(send.getPeer()),
                                  send.getLoc(), tc::StepPhase::Backward);
      auto recv = b.create<tc::RecvOp>(loc, send.getValue().getType(), send.getPeer(),
                                       send.getSlot(), /*gradient=*/true, send.getTensor());
      seed(send.getValue(), recv.getResult());
    }
  }

  /// A pipeline stage: the gradient of each float tensor it received, sent
  /// back to the stage before (zeros where the stage does not differentiate
  /// it: the stage before waits for every one).
  void sendGradients(OpBuilder &b, ArrayRef<tc::RecvOp> recvs, GradientSums &sums) {
    for (tc::RecvOp recv : recvs) {
      if (recv.getGradient() || !isFloatTensor(recv.getResult()))
        continue;
      sums.settle(recv.getResult());
      Value g = sums.grads.lookup(recv.getResult());
      Location loc = tc::phaseLoc("gradient of " + recv.getTensor().str() + " to stage " +
                                      std::to_string(recv.getPeer()),
                                  recv.getLoc(), tc::StepPhase::Backward);
      if (!g) {
        auto type = cast<RankedTensorType>(recv.getType());
        g = b.create<tc::ConstantOp>(
                 loc, DenseElementsAttr::get(type, b.getZeroAttr(type.getElementType())))
                .getResult();
      }
      b.create<tc::SendOp>(loc, g, recv.getPeer(), recv.getSlot(), /*gradient=*/true,
                           recv.getTensor());
    }
  }

  /// --optimizer=kfac: the rows of `op` (result gradient `dy`) when its
  /// weight is a trained parameter, or why K-FAC leaves that weight to SGD.
  static void captureRows(func::FuncOp step, OpBuilder &b, Operation *op, Value dy,
                          llvm::function_ref<bool(Value)> active,
                          SmallVectorImpl<KfacCapture> &captures,
                          SmallVectorImpl<Attribute> &plain) {
    std::string why;
    if (auto capture = captureKfacRows(
            step, b, op, dy, [&](Value v) { return isa<BlockArgument>(v) && active(v); }, why))
      captures.push_back(*capture);
    else if (!why.empty())
      plain.push_back(b.getStringAttr(why));
  }

  /// K-FAC's rows as results, for the optimizer phase (which drops them),
  /// and the weights left to SGD on the step.
  static void returnRows(func::FuncOp step, OpBuilder &b, ArrayRef<KfacCapture> captures,
                         ArrayRef<Attribute> plain, SmallVectorImpl<Value> &results,
                         SmallVectorImpl<DictionaryAttr> &attrs) {
    if (!plain.empty())
      step->setAttr(tc::kKfacPlainAttrName, b.getArrayAttr(plain));
    for (const KfacCapture &capture : captures) {
      results.push_back(capture.rows);
      attrs.push_back(capture.rowsAttrs);
      results.push_back(capture.outputGrads);
      attrs.push_back(capture.outputGradAttrs);
    }
  }

  LogicalResult differentiate(ModuleOp module, func::FuncOp lossFunc) {
    func::FuncOp step = lossFunc.clone();
    step.setSymName("train_step");
    module.push_back(step);
    Block &body = step.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    // A pipeline stage before the last sends activations on and has no
    // loss: each sent tensor's gradient, received back, seeds its backward.
    SmallVector<tc::SendOp> sends;
    SmallVector<tc::RecvOp> recvs;
    step.walk([&](tc::SendOp op) { sends.push_back(op); });
    step.walk([&](tc::RecvOp op) { recvs.push_back(op); });
    bool hasLoss = ret.getNumOperands() > 0 &&
                   cast<RankedTensorType>(ret.getOperand(0).getType()).getRank() == 0 &&
                   !step.getResultAttr(0, tc::kUpdateAttrName);
    if (!hasLoss && sends.empty())
      return step.emitError("@loss must return the scalar loss first");
    Value lossValue = hasLoss ? ret.getOperand(0) : Value();
    SmallVector<Value> seeds;
    if (lossValue)
      seeds.push_back(lossValue);
    for (tc::SendOp send : sends)
      if (isFloatTensor(send.getValue()))
        seeds.push_back(send.getValue());

    FailureOr<Activity> activity = findActive(module, step, seeds);
    if (failed(activity))
      return failure();
    llvm::DenseSet<Value> &varying = activity->varying, &useful = activity->useful;
    SmallVector<unsigned> &params = activity->params;
    auto active = [&](Value v) { return varying.contains(v) && useful.contains(v); };

    OpBuilder b(ret);
    GradientSums sums(b);
    auto &grads = sums.grads;
    receiveGradients(b, sends, [&](Value v, Value g) {
      if (active(v))
        sums.accumulate(v, g, g.getLoc());
    });
    if (lossValue && failed(seedLoss(module, step, b, lossValue, grads)))
      return failure();

    SmallVector<Operation *> forward;
    for (Operation &op : body.without_terminator())
      forward.push_back(&op);
    SmallVector<KfacCapture> captures;
    SmallVector<Attribute> kfacPlain; // the layers K-FAC leaves to SGD, and why
    for (Operation *op : llvm::reverse(forward)) {
      for (Value r : op->getResults())
        sums.settle(r);
      bool needsAny = llvm::any_of(op->getOperands(), [&](Value v) { return active(v); });
      bool hasGrad = llvm::any_of(op->getResults(), [&](Value r) { return grads.count(r); });
      if (!needsAny || !hasGrad)
        continue;
      auto rule = dyn_cast<tc::GradientOpInterface>(op);
      if (!rule) {
        std::string node = nodeName(op->getLoc());
        return op->emitError("no gradient rule for ")
               << op->getName() << (node.empty() ? "" : " (ONNX node '" + node + "')")
               << ", which lies between a trainable parameter and the loss";
      }
      SmallVector<Value> resultGrads;
      for (Value r : op->getResults())
        resultGrads.push_back(grads.lookup(r));
      SmallVector<Value> operandGrads;
      Operation *mark = ret->getPrevNode();
      if (failed(rule.buildGradients(b, resultGrads, operandGrads)))
        return failure();
      // --optimizer=kfac: the layer's input and output-gradient rows.
      if (kfac)
        captureRows(step, b, op, resultGrads.front(), active, captures, kfacPlain);
      for (auto [operand, g] : llvm::zip(op->getOperands(), operandGrads))
        if (g && active(operand))
          sums.accumulate(operand, g, op->getLoc());
      // The ops of the rule (and the sums of gradients) say whose gradient
      // they compute: a kernel reads 'backward of /fc1/Gemm', not the
      // forward node's name alone. The location is marked as the
      // backward's (#tc.phase), which no node name can imitate.
      std::string node = nodeName(op->getLoc());
      Location gradLoc = tc::phaseLoc(node.empty() ? "backward" : "backward of " + node,
                                      op->getLoc(), tc::StepPhase::Backward);
      for (Operation *o = mark ? mark->getNextNode() : &body.front(); o && o != ret.getOperation();
           o = o->getNextNode())
        o->setLoc(gradLoc);
    }

    sendGradients(b, recvs, sums);

    // Return the loss, then one gradient per differentiated parameter.
    SmallVector<Value> results;
    SmallVector<DictionaryAttr> attrs;
    if (lossValue) {
      results.push_back(lossValue);
      attrs.push_back(step.getResultAttrDict(0));
    }
    for (unsigned index : params) {
      sums.settle(step.getArgument(index));
      Value g = grads.lookup(step.getArgument(index));
      auto symbol = step.getArgAttrOfType<FlatSymbolRefAttr>(index, tc::kParamAttrName);
      // A bias that trainc-fold-bias-bn removed has the gradient 0 exactly
      // (batch norm cancels it): it still gets one, so that momentum and
      // weight decay treat it as PyTorch does.
      if (!g && step.getArgAttr(index, tc::kFoldedBiasAttrName)) {
        auto type = cast<RankedTensorType>(step.getArgument(index).getType());
        g = b.create<tc::ConstantOp>(NameLoc::get(b.getStringAttr(
                                         "gradient of " + symbol.getValue().str() +
                                         " (folded before a batch norm: 0)")),
                                     DenseElementsAttr::get(type, b.getZeroAttr(type.getElementType())))
                .getResult();
      }
      if (!g)
        continue; // no path to the loss: no gradient code
      results.push_back(g);
      attrs.push_back(b.getDictionaryAttr(
          {b.getNamedAttr(tc::kOutputAttrName,
                          b.getStringAttr("grad." + symbol.getValue().str())),
           b.getNamedAttr(tc::kGradAttrName, symbol)}));
    }
    returnRows(step, b, captures, kfacPlain, results, attrs);
    // The per-sample losses and the running-statistics updates of the
    // training forward go through as they are.
    for (unsigned i = lossValue ? 1 : 0; i < ret.getNumOperands(); ++i)
      if (step.getResultAttr(i, tc::kUpdateAttrName) ||
          step.getResultAttr(i, tc::kSampleLossesAttrName)) {
        results.push_back(ret.getOperand(i));
        attrs.push_back(step.getResultAttrDict(i));
      }
    b.create<func::ReturnOp>(ret.getLoc(), results);
    ret.erase();
    step.setFunctionType(b.getFunctionType(step.getArgumentTypes(),
                                           ValueRange(results).getTypes()));
    step.setAllResultAttrs(attrs);

    // Forward values only the dropped outputs read are dead now.
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
      if (isOpTriviallyDead(&op))
        op.erase();
    return success();
  }
};

} // namespace
