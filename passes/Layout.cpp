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

/// The shape of `t` as a 4-D broadcast operand: size-1 axes in front.
SmallVector<int64_t> broadcastShape(RankedTensorType t) {
  SmallVector<int64_t> shape(4 - std::min<int64_t>(t.getRank(), 4), 1);
  shape.append(t.getShape().begin(), t.getShape().end());
  return shape;
}

/// Ops that compute the same in either layout given their attributes
/// permuted: pointwise ops, concat, slice and its gradient, and expand (which
/// only rises: its operand broadcasts).
bool isMovable(Operation *op) {
  if (op->getNumResults() != 1 || !isFourD(op->getResult(0)))
    return false;
  if (op->hasTrait<tc::OpTrait::Pointwise>() ||
      isa<tc::ConcatOp, tc::SliceOp, tc::SliceBackwardOp>(op))
    return true;
  if (auto expand = dyn_cast<tc::ExpandOp>(op))
    return isFourD(expand.getInput());
  return false;
}

/// Whether operand `v` of a movable op can be had channels-last without a
/// copy, with `deep` also through movable ops whose operands are free in
/// turn (they then move too; their other readers read them through a back
/// transpose, which sinks):
///   - the back transpose of a channels-last value (the two cancel);
///   - a tensor with size-1 axes only, of any rank, which broadcasts alike;
///   - a splat constant (it folds), or a tensor whose forward transpose
///     (of its 4-D broadcast shape: a [C, 1, 1] layer scale reads as
///     [1, C, 1, 1]) keeps its memory order (a reshape);
///   - a value that is also transposed channels-last for another reader (a
///     conv's input that a concat reads too): CSE merges the two.
bool freeChannelsLast(Value v, bool deep, int depth = 0) {
  RankedTensorType t = tensorType(v);
  if (!t || depth > 16)
    return false;
  if (isTransposeBy(v, toFirst) || allOnes(t))
    return true;
  if (t.getRank() > 4)
    return false;
  if (movesOnlyUnitAxes(broadcastShape(t), toLast))
    return true;
  if (t.getRank() != 4)
    return false;
  Operation *def = v.getDefiningOp();
  if (tc::isSplatConstant(def) || llvm::any_of(v.getUsers(), [](Operation *user) {
        auto t = dyn_cast<tc::TransposeOp>(user);
        return t && t.getPerm() == ArrayRef<int64_t>(toLast);
      }))
    return true;
  if (!deep || !def || !isMovable(def))
    return false;
  return llvm::all_of(def->getOperands(),
                      [&](Value operand) { return freeChannelsLast(operand, true, depth + 1); });
}

/// The channels-last value of a free operand (see freeChannelsLast).
Value channelsLastOperand(PatternRewriter &rewriter, Location loc, Value v) {
  RankedTensorType t = tensorType(v);
  if (isTransposeBy(v, toFirst))
    return v.getDefiningOp<tc::TransposeOp>().getInput();
  if (allOnes(t) && t.getRank() != 4)
    return v;
  if (t.getRank() < 4)
    return rewriter.create<tc::ReshapeOp>(
        loc, RankedTensorType::get(permuted(broadcastShape(t), toLast), t.getElementType()), v,
        rewriter.getDenseI64ArrayAttr(permuted(broadcastShape(t), toLast)));
  return transpose(rewriter, loc, v, toLast);
}

/// Creates the channels-last twin of movable `op` on `operands`: the result
/// shape, the per-axis attributes (`starts`, `ends`, `steps`, `input_shape`,
/// `shape`) permuted and a concat's `axis` moved with its axis.
Value rebuildChannelsLast(PatternRewriter &rewriter, Operation *op, ValueRange operands) {
  OperationState state(op->getLoc(), op->getName());
  state.addOperands(operands);
  for (NamedAttribute attr : op->getAttrs()) {
    StringRef name = attr.getName().getValue();
    auto array = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (array && array.size() == 4 &&
        (name == "starts" || name == "ends" || name == "steps" || name == "input_shape" ||
         name == "shape"))
      state.addAttribute(name, rewriter.getDenseI64ArrayAttr(permuted(array.asArrayRef(), toLast)));
    else if (isa<tc::ConcatOp>(op) && name == "axis")
      state.addAttribute(name, rewriter.getI64IntegerAttr(
                                   toFirst[cast<IntegerAttr>(attr.getValue()).getInt()]));
    else
      state.addAttribute(attr.getName(), attr.getValue());
  }
  state.addTypes(permutedType(tensorType(op->getResult(0)), toLast));
  return rewriter.create(state)->getResult(0);
}

/// op(transpose(a, toFirst), ...) -> transpose(op(a, ...), toFirst) for a
/// movable op (not expand) whose operands are all free channels-last, at
/// least one a back transpose.
struct SinkBackTranspose : RewritePattern {
  explicit SinkBackTranspose(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}

  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    if (!isMovable(op) || isa<tc::ExpandOp>(op))
      return failure();
    if (!llvm::any_of(op->getOperands(), [](Value v) { return isTransposeBy(v, toFirst); }))
      return rewriter.notifyMatchFailure(op, "no channels-last operand");
    if (!llvm::all_of(op->getOperands(), [](Value v) { return freeChannelsLast(v, false); }))
      return rewriter.notifyMatchFailure(op, "an operand would need a copy");
    SmallVector<Value> operands;
    for (Value v : op->getOperands())
      operands.push_back(channelsLastOperand(rewriter, op->getLoc(), v));
    Value inner = rebuildChannelsLast(rewriter, op, operands);
    rewriter.replaceOp(op, transpose(rewriter, op->getLoc(), inner, toFirst));
    return success();
  }
};

/// transpose(op(a, ...), toLast) -> op(transpose(a, toLast), ...) for a
/// movable op whose operands all rise free (freeChannelsLast, deep). Other
/// readers of the op read the new one through the back transpose (which
/// then sinks).
struct RaiseForwardTranspose : OpRewritePattern<tc::TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tc::TransposeOp op, PatternRewriter &rewriter) const override {
    if (op.getPerm() != ArrayRef<int64_t>(toLast))
      return failure();
    Operation *def = op.getInput().getDefiningOp();
    if (!def || !isMovable(def) ||
        !llvm::all_of(def->getOperands(), [](Value v) { return freeChannelsLast(v, true); }))
      return failure();
    // Built where `def` is, so that its other readers see the result.
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointAfter(def);
    SmallVector<Value> operands;
    for (Value v : def->getOperands())
      operands.push_back(channelsLastOperand(rewriter, def->getLoc(), v));
    Value raised = rebuildChannelsLast(rewriter, def, operands);
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

/// reduce(transpose(x, perm), axes) reduces x over the permuted axes: with
/// keepdims the result is transposed after (size-1 axes: a reshape when
/// only those move), without it the kept axes must stay in order (a conv
/// bias gradient).
template <typename ReduceOp>
struct ReduceOfTranspose : OpRewritePattern<ReduceOp> {
  using OpRewritePattern<ReduceOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(ReduceOp op, PatternRewriter &rewriter) const override {
    auto t = op.getInput().template getDefiningOp<tc::TransposeOp>();
    if (!t || op.getAxes().empty())
      return failure();
    ArrayRef<int64_t> perm = t.getPerm(), axes = op.getAxes();
    SmallVector<int64_t> mapped;
    int64_t lastKept = -1;
    for (int64_t i = 0; i < static_cast<int64_t>(perm.size()); ++i) {
      if (llvm::is_contained(axes, i)) {
        mapped.push_back(perm[i]);
      } else if (!op.getKeepdims()) {
        if (perm[i] < lastKept)
          return failure();
        lastKept = perm[i];
      }
    }
    llvm::sort(mapped);
    if (!op.getKeepdims()) {
      rewriter.modifyOpInPlace(op, [&] {
        op.getInputMutable().assign(t.getInput());
        op.setAxes(mapped);
      });
      return success();
    }
    SmallVector<int64_t> shape(tensorType(t.getInput()).getShape());
    for (int64_t axis : mapped)
      shape[axis] = 1;
    auto type = RankedTensorType::get(shape, tensorType(op.getResult()).getElementType());
    auto inner = rewriter.create<ReduceOp>(op.getLoc(), type, t.getInput(), op->getAttrs());
    inner.setAxes(mapped);
    rewriter.replaceOp(op, transpose(rewriter, op.getLoc(), inner.getResult(), perm));
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
    // Every rewrite is exact, so a limit reached leaves correct IR with
    // some transposes in it.
    for (auto func : module.getOps<func::FuncOp>())
      (void)applyPatternsAndFoldGreedily(func, frozen, config);
  }
};

} // namespace
