//===- Layout.cpp - channels-last convolution, pooling and batch norm -----===//
//
// The layout phase (Passes.td has the rules). Two steps: every 2-D window
// op and 4-D batch norm becomes channels-last between a transpose in and a
// transpose out, then a greedy rewrite moves the transposes toward each
// other until they cancel. The back transpose (NHWC -> NCHW) only sinks
// toward readers and the forward one (NCHW -> NHWC) only rises toward
// producers, so the rewrite cannot undo itself.
//
//===----------------------------------------------------------------------===//

#include "ir/TcOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace trainc {
#define GEN_PASS_DEF_LAYOUT
#include "passes/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc;

namespace {

/// NCHW -> NHWC (and OIHW -> OHWI): result axis i is input axis toLast[i].
constexpr int64_t toLast[] = {0, 2, 3, 1};
/// NHWC -> NCHW, the inverse.
constexpr int64_t toFirst[] = {0, 3, 1, 2};

RankedTensorType tensorType(Value v) { return dyn_cast<RankedTensorType>(v.getType()); }

bool isFourD(Value v) {
  RankedTensorType t = tensorType(v);
  return t && t.getRank() == 4;
}

SmallVector<int64_t> permuted(ArrayRef<int64_t> shape, ArrayRef<int64_t> perm) {
  SmallVector<int64_t> out;
  for (int64_t p : perm)
    out.push_back(shape[p]);
  return out;
}

RankedTensorType permutedType(RankedTensorType t, ArrayRef<int64_t> perm) {
  return RankedTensorType::get(permuted(t.getShape(), perm), t.getElementType());
}

Value transpose(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> perm) {
  return b.create<tc::TransposeOp>(loc, permutedType(tensorType(v), perm), v,
                                   b.getDenseI64ArrayAttr(perm));
}

bool isTransposeBy(Value v, ArrayRef<int64_t> perm) {
  auto t = v.getDefiningOp<tc::TransposeOp>();
  return t && t.getPerm() == perm;
}

/// Whether transposing a tensor of `shape` by `perm` keeps its elements in
/// memory order (it moves only size-1 axes): then it is a reshape.
bool movesOnlyUnitAxes(ArrayRef<int64_t> shape, ArrayRef<int64_t> perm) {
  int64_t last = -1;
  for (int64_t p : perm) {
    if (shape[p] == 1)
      continue;
    if (p < last)
      return false;
    last = p;
  }
  return true;
}

bool allOnes(RankedTensorType t) {
  return llvm::all_of(t.getShape(), [](int64_t d) { return d == 1; });
}

//===----------------------------------------------------------------------===//
// Step 1: the window ops and batch norms become channels-last
//===----------------------------------------------------------------------===//

bool isLayoutOp(Operation *op) {
  if (!isa<tc::ConvOp, tc::ConvBackwardDataOp, tc::ConvBackwardFilterOp, tc::MaxPoolOp,
           tc::AvgPoolOp, tc::MaxPoolBackwardOp, tc::AvgPoolBackwardOp, tc::GlobalAvgPoolOp,
           tc::BatchNormOp, tc::BatchNormBackwardOp>(op))
    return false;
  auto flag = op->getAttrOfType<BoolAttr>("channels_last");
  if ((flag && flag.getValue()) || !isFourD(op->getOperand(0)) || !isFourD(op->getResult(0)))
    return false;
  // cuDNN pads symmetrically; the CUDA runtime pads other convolutions
  // into an NCHW copy, so they stay channels-first.
  if (isa<tc::ConvOp, tc::ConvBackwardDataOp, tc::ConvBackwardFilterOp>(op)) {
    ArrayRef<int64_t> pads = op->getAttrOfType<DenseI64ArrayAttr>("pads").asArrayRef();
    return pads.size() == 4 && pads[0] == pads[2] && pads[1] == pads[3];
  }
  return true;
}

/// Rebuilds `op` channels-last: its 4-D operands through the forward
/// transpose, its shape attributes permuted, its 4-D results transposed back
/// for the readers (which the rewrite then moves).
void makeChannelsLast(Operation *op) {
  OpBuilder b(op);
  Location loc = op->getLoc();
  SmallVector<Value> operands;
  for (Value v : op->getOperands())
    operands.push_back(isFourD(v) ? transpose(b, loc, v, toLast) : v);
  OperationState state(loc, op->getName());
  state.addOperands(operands);
  for (NamedAttribute attr : op->getAttrs()) {
    StringRef name = attr.getName().getValue();
    if (name == "channels_last")
      continue;
    auto shape = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (shape && (name == "input_shape" || name == "weight_shape") && shape.size() == 4)
      state.addAttribute(name, b.getDenseI64ArrayAttr(permuted(shape.asArrayRef(), toLast)));
    else
      state.addAttribute(attr.getName(), attr.getValue());
  }
  state.addAttribute("channels_last", b.getBoolAttr(true));
  for (Value r : op->getResults())
    state.addTypes(isFourD(r) ? Type(permutedType(tensorType(r), toLast)) : r.getType());
  Operation *rebuilt = b.create(state);
  for (auto [old, now] : llvm::zip(op->getResults(), rebuilt->getResults()))
    old.replaceAllUsesWith(isFourD(now) ? transpose(b, loc, now, toFirst) : now);
  op->erase();
}

//===----------------------------------------------------------------------===//
// Step 2: the transposes meet and cancel
//===----------------------------------------------------------------------===//

/// An operand of a pointwise op on 4-D values, seen from the other layout:
/// the value to use there, or null when that costs a copy.
///   - a transpose by `from` is its input (the transposes cancel);
///   - a tensor with size-1 axes only, of any rank, broadcasts alike;
///   - a splat constant, or a 4-D tensor whose transpose by `to` keeps its
///     memory order, is transposed (a fold or a reshape).
Value freeInOtherLayout(PatternRewriter &rewriter, Location loc, Value v,
                        ArrayRef<int64_t> from, ArrayRef<int64_t> to) {
  RankedTensorType t = tensorType(v);
  if (!t)
    return nullptr;
  if (isTransposeBy(v, from))
    return v.getDefiningOp<tc::TransposeOp>().getInput();
  if (allOnes(t))
    return v;
  if (t.getRank() != 4)
    return nullptr;
  if (tc::isSplatConstant(v.getDefiningOp()) || movesOnlyUnitAxes(t.getShape(), to))
    return transpose(rewriter, loc, v, to);
  return nullptr;
}

/// Creates `op` again on `operands`, its result of the same element type
/// and the shape permuted by `perm`.
Value rebuildPointwise(PatternRewriter &rewriter, Operation *op, ValueRange operands,
                       ArrayRef<int64_t> perm) {
  OperationState state(op->getLoc(), op->getName());
  state.addOperands(operands);
  state.addAttributes(op->getAttrs());
  state.addTypes(permutedType(tensorType(op->getResult(0)), perm));
  return rewriter.create(state)->getResult(0);
}

bool isPointwise4D(Operation *op) {
  return op->hasTrait<tc::OpTrait::Pointwise>() && op->getNumResults() == 1 &&
         isFourD(op->getResult(0));
}

/// pointwise(transpose(a, toFirst), ...) -> transpose(pointwise(a, ...), toFirst)
/// when every operand is free channels-last and at least one is a
/// transposed full-size tensor.
struct SinkBackTranspose : RewritePattern {
  explicit SinkBackTranspose(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}

  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    if (!isPointwise4D(op))
      return failure();
    RankedTensorType result = tensorType(op->getResult(0));
    bool moves = llvm::any_of(op->getOperands(), [&](Value v) {
      return isTransposeBy(v, toFirst) && tensorType(v).getShape() == result.getShape();
    });
    if (!moves)
      return rewriter.notifyMatchFailure(op, "no channels-last operand");
    SmallVector<Value> operands;
    for (Value v : op->getOperands()) {
      // Check first, so a failed match creates nothing.
      RankedTensorType t = tensorType(v);
      if (!t || !(isTransposeBy(v, toFirst) || allOnes(t) ||
                  (t.getRank() == 4 && (tc::isSplatConstant(v.getDefiningOp()) ||
                                        movesOnlyUnitAxes(t.getShape(), toLast)))))
        return rewriter.notifyMatchFailure(op, "an operand would need a copy");
    }
    for (Value v : op->getOperands())
      operands.push_back(freeInOtherLayout(rewriter, op->getLoc(), v, toFirst, toLast));
    Value inner = rebuildPointwise(rewriter, op, operands, toLast);
    rewriter.replaceOp(op, transpose(rewriter, op->getLoc(), inner, toFirst));
    return success();
  }
};

/// Whether `v` can be had channels-last without a copy: see
/// freeInOtherLayout, and also a pointwise op or expand that only the
/// transpose reads and whose operands are free (it rises in turn).
bool risesFree(Value v, int depth = 0) {
  RankedTensorType t = tensorType(v);
  if (!t || depth > 16)
    return false;
  if (isTransposeBy(v, toFirst) || allOnes(t))
    return true;
  if (t.getRank() != 4)
    return false;
  Operation *def = v.getDefiningOp();
  if (tc::isSplatConstant(def) || movesOnlyUnitAxes(t.getShape(), toLast))
    return true;
  if (!def || !v.hasOneUse())
    return false;
  if (auto expand = dyn_cast<tc::ExpandOp>(def))
    return isFourD(expand.getInput()) && risesFree(expand.getInput(), depth + 1);
  if (isPointwise4D(def))
    return llvm::all_of(def->getOperands(),
                        [&](Value operand) { return risesFree(operand, depth + 1); });
  return false;
}

/// transpose(pointwise(a, ...), toLast) -> pointwise(transpose(a, toLast), ...)
/// and transpose(expand(a), toLast) -> expand(transpose(a, toLast)) when
/// every operand rises free. Other readers of the pointwise op or expand
/// read the new one through the back transpose (which then sinks).
struct RaiseForwardTranspose : OpRewritePattern<tc::TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tc::TransposeOp op, PatternRewriter &rewriter) const override {
    if (op.getPerm() != ArrayRef<int64_t>(toLast))
      return failure();
    Operation *def = op.getInput().getDefiningOp();
    if (!def)
      return failure();
    // Built where `def` is, so that its other readers see the result.
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointAfter(def);
    Value raised;
    if (auto expand = dyn_cast<tc::ExpandOp>(def)) {
      if (!isFourD(expand.getInput()) || !risesFree(expand.getInput()))
        return failure();
      Value moved = transpose(rewriter, expand.getLoc(), expand.getInput(), toLast);
      raised = rewriter.create<tc::ExpandOp>(
          expand.getLoc(), op.getType(), moved,
          rewriter.getDenseI64ArrayAttr(permuted(expand.getShape(), toLast)));
    } else {
      if (!isPointwise4D(def) ||
          !llvm::all_of(def->getOperands(), [](Value v) { return risesFree(v); }))
        return failure();
      SmallVector<Value> operands;
      for (Value v : def->getOperands()) {
        RankedTensorType t = tensorType(v);
        if (isTransposeBy(v, toFirst))
          operands.push_back(v.getDefiningOp<tc::TransposeOp>().getInput());
        else if (allOnes(t) && t.getRank() != 4)
          operands.push_back(v);
        else
          operands.push_back(transpose(rewriter, def->getLoc(), v, toLast));
      }
      raised = rebuildPointwise(rewriter, def, operands, toLast);
    }
    // Readers other than this transpose get the back transpose (dead, and
    // erased, when there are none).
    Value back = transpose(rewriter, def->getLoc(), raised, toFirst);
    rewriter.replaceOp(op, raised);
    rewriter.replaceOp(def, back);
    return success();
  }
};

/// A transpose that moves only size-1 axes is a reshape (a view).
struct UnitTransposeToReshape : OpRewritePattern<tc::TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tc::TransposeOp op, PatternRewriter &rewriter) const override {
    RankedTensorType in = tensorType(op.getInput());
    if (!in || !movesOnlyUnitAxes(in.getShape(), op.getPerm()))
      return failure();
    rewriter.replaceOpWithNewOp<tc::ReshapeOp>(
        op, op.getType(), op.getInput(),
        rewriter.getDenseI64ArrayAttr(tensorType(op.getResult()).getShape()));
    return success();
  }
};

/// reshape(reshape(x)) -> reshape(x); a reshape to the input's own type is
/// the input.
struct ReshapeOfReshape : OpRewritePattern<tc::ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tc::ReshapeOp op, PatternRewriter &rewriter) const override {
    if (op.getInput().getType() == op.getType()) {
      rewriter.replaceOp(op, op.getInput());
      return success();
    }
    auto inner = op.getInput().getDefiningOp<tc::ReshapeOp>();
    if (!inner)
      return failure();
    rewriter.modifyOpInPlace(op, [&] { op.getInputMutable().assign(inner.getInput()); });
    return success();
  }
};

/// reduce(transpose(x, perm), axes) without keepdims reduces x over the
/// permuted axes when the kept axes stay in order (a conv bias gradient).
template <typename ReduceOp>
struct ReduceOfTranspose : OpRewritePattern<ReduceOp> {
  using OpRewritePattern<ReduceOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(ReduceOp op, PatternRewriter &rewriter) const override {
    auto t = op.getInput().template getDefiningOp<tc::TransposeOp>();
    if (!t || op.getKeepdims() || op.getAxes().empty())
      return failure();
    ArrayRef<int64_t> perm = t.getPerm(), axes = op.getAxes();
    SmallVector<int64_t> mapped;
    int64_t lastKept = -1;
    for (int64_t i = 0; i < static_cast<int64_t>(perm.size()); ++i) {
      if (llvm::is_contained(axes, i)) {
        mapped.push_back(perm[i]);
      } else {
        if (perm[i] < lastKept)
          return failure();
        lastKept = perm[i];
      }
    }
    llvm::sort(mapped);
    rewriter.modifyOpInPlace(op, [&] {
      op.getInputMutable().assign(t.getInput());
      op.setAxes(mapped);
    });
    return success();
  }
};

struct LayoutPass : trainc::impl::LayoutBase<LayoutPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    bool hasConv = false;
    module.walk([&](tc::ConvOp conv) { hasConv |= isFourD(conv.getInput()); });
    if (!hasConv)
      return;
    SmallVector<Operation *> targets;
    module.walk([&](Operation *op) {
      if (isLayoutOp(op))
        targets.push_back(op);
    });
    for (Operation *op : targets)
      makeChannelsLast(op);

    MLIRContext *context = &getContext();
    RewritePatternSet patterns(context);
    patterns.add<SinkBackTranspose, RaiseForwardTranspose, UnitTransposeToReshape,
                 ReshapeOfReshape, ReduceOfTranspose<tc::ReduceSumOp>,
                 ReduceOfTranspose<tc::ReduceMeanOp>, ReduceOfTranspose<tc::ReduceMaxOp>>(
        context);
    tc::TransposeOp::getCanonicalizationPatterns(patterns, context);
    FrozenRewritePatternSet frozen(std::move(patterns));
    GreedyRewriteConfig config;
    config.maxIterations = 64;
    for (auto func : module.getOps<func::FuncOp>())
      if (failed(applyPatternsAndFoldGreedily(func, frozen, config)))
        func.emitWarning("the layout phase's transposes did not settle; some remain");
  }
};

} // namespace
