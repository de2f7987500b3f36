//===- Pad.cpp - tensor-core-friendly sizes -------------------------------===//
//
// The pad phase (Passes.td has the rules). Two steps, as in the layout
// phase: every matrix product and ungrouped convolution whose stored
// dimensions are not multiples of `multiple` reads zero-padded operands and
// is cropped after (tc.pad in, tc.slice out); then a greedy rewrite sinks
// the crops through the ops that compute the same on the padded tensor
// (pointwise ops, pooling, reductions over other axes) and drops a pad whose
// operand is a crop of a tensor whose padded part is known to be zero. Each
// rewrite is exact: the padded part of a contraction is zero on one side,
// and every other padded element is cropped before it is read.
//
//===----------------------------------------------------------------------===//

#include "ir/TcOps.h"
#include "passes/Liveness.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <set>
#include <tuple>

namespace trainc {
#define GEN_PASS_DEF_PAD
#include "passes/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc;

namespace {

RankedTensorType tensorType(Value v) { return dyn_cast<RankedTensorType>(v.getType()); }

int64_t roundUp(int64_t n, int64_t multiple) { return (n + multiple - 1) / multiple * multiple; }

/// Target sizes of some axes: axis -> padded size.
using AxisSizes = std::map<int64_t, int64_t>;

/// `v` zero-padded at the end of the axes in `sizes` (no op when none grows).
Value padTo(OpBuilder &b, Location loc, Value v, const AxisSizes &sizes) {
  RankedTensorType t = tensorType(v);
  SmallVector<int64_t> shape(t.getShape()), pads(2 * t.getRank(), 0);
  bool grows = false;
  for (auto [axis, size] : sizes)
    if (size > shape[axis]) {
      pads[t.getRank() + axis] = size - shape[axis];
      shape[axis] = size;
      grows = true;
    }
  if (!grows)
    return v;
  return b.create<tc::PadOp>(loc, RankedTensorType::get(shape, t.getElementType()), v,
                             b.getDenseI64ArrayAttr(pads), b.getStringAttr("constant"),
                             b.getF64FloatAttr(0.0));
}

/// The leading `shape` block of `v` (a crop; no op when `v` has that shape).
Value cropTo(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> shape) {
  RankedTensorType t = tensorType(v);
  if (t.getShape() == shape)
    return v;
  SmallVector<int64_t> zeros(shape.size(), 0), ones(shape.size(), 1);
  return b.create<tc::SliceOp>(loc, RankedTensorType::get(shape, t.getElementType()), v,
                               b.getDenseI64ArrayAttr(zeros), b.getDenseI64ArrayAttr(shape),
                               b.getDenseI64ArrayAttr(ones));
}

/// Whether `v` is a crop made here: a slice from 0 with unit steps.
tc::SliceOp asCrop(Value v) {
  auto slice = v.getDefiningOp<tc::SliceOp>();
  if (!slice || !llvm::all_of(slice.getStarts(), [](int64_t s) { return s == 0; }) ||
      !llvm::all_of(slice.getSteps(), [](int64_t s) { return s == 1; }))
    return nullptr;
  return slice;
}

/// The channel axis of a convolution, pooling or batch-norm operand.
int64_t channelAxis(Operation *op, int64_t rank) {
  auto flag = op->getAttrOfType<BoolAttr>("channels_last");
  return flag && flag.getValue() ? rank - 1 : 1;
}

//===----------------------------------------------------------------------===//
// Step 1: contractions read padded operands
//===----------------------------------------------------------------------===//

/// What step 1 did, for --info: one line per ONNX node and dimension.
struct Report {
  std::set<std::string> lines;
  void add(Operation *op, StringRef what, int64_t from, int64_t to) {
    // The gradients pad the same dimensions as their forward op.
    if (from == to || isBackwardLoc(op->getLoc()))
      return;
    std::string node = "(unnamed)";
    Location loc = op->getLoc();
    // The gradients of a node carry "backward of <node>" around its own name.
    while (auto name = dyn_cast<NameLoc>(loc)) {
      node = name.getName().str();
      if (!isa<NameLoc>(name.getChildLoc()))
        break;
      loc = name.getChildLoc();
    }
    // Node names come from the model file: printable, escaped otherwise.
    std::string shown;
    llvm::raw_string_ostream os(shown);
    llvm::printEscapedString(node, os);
    lines.insert(llvm::formatv("'{0}': {1} {2} -> {3}", shown, what, from, to).str());
  }
};

/// Rebuilds `op` on `operands` with result type `type` and the attributes
/// in `changed` replaced, and returns its result cropped to the old shape.
void rebuild(Operation *op, ValueRange operands, RankedTensorType type,
             ArrayRef<NamedAttribute> changed) {
  OpBuilder b(op);
  OperationState state(op->getLoc(), op->getName());
  state.addOperands(operands);
  for (NamedAttribute attr : op->getAttrs())
    if (!llvm::any_of(changed, [&](NamedAttribute c) { return c.getName() == attr.getName(); }))
      state.addAttribute(attr.getName(), attr.getValue());
  for (NamedAttribute attr : changed)
    state.addAttribute(attr.getName(), attr.getValue());
  state.addTypes(type);
  Operation *padded = b.create(state);
  Value result = op->getResult(0);
  result.replaceAllUsesWith(
      cropTo(b, op->getLoc(), padded->getResult(0), tensorType(result).getShape()));
  op->erase();
}

/// A matrix product whose stored rows are not multiples of `m` (what
/// cuBLASLt's 16-byte alignment sees): N, the result's row length, K when
/// it is the row length of A or B, and M when A is stored transposed. Products of two batched operands (attention) are left
/// alone: their padded results would be copied whole.
template <typename OpT>
bool padProduct(OpT op, int64_t m, Report &report) {
  Value lhs = op->getOperand(0), rhs = op->getOperand(1);
  RankedTensorType lt = tensorType(lhs), rt = tensorType(rhs), yt = tensorType(op.getResult());
  if (!lt || !rt || !yt || lt.getRank() < 2 || rt.getRank() < 2 ||
      (lt.getRank() > 2 && rt.getRank() > 2))
    return false;
  int64_t rl = lt.getRank(), rr = rt.getRank(), ry = yt.getRank();
  bool ta = op.getTransA(), tb = op.getTransB();
  int64_t mAxis = ta ? rl - 1 : rl - 2, kAxisL = ta ? rl - 2 : rl - 1;
  int64_t kAxisR = tb ? rr - 1 : rr - 2, nAxis = tb ? rr - 2 : rr - 1;
  int64_t mDim = lt.getDimSize(mAxis), kDim = lt.getDimSize(kAxisL), nDim = rt.getDimSize(nAxis);
  // K is a stored row length unless A is stored transposed and B is not
  // (a weight gradient, where K is the batch).
  int64_t kp = !ta || tb ? roundUp(kDim, m) : kDim;
  int64_t np = roundUp(nDim, m), mp = ta ? roundUp(mDim, m) : mDim;
  if (kp == kDim && np == nDim && mp == mDim)
    return false;
  OpBuilder b(op);
  Location loc = op.getLoc();
  SmallVector<Value> operands = {padTo(b, loc, lhs, {{kAxisL, kp}, {mAxis, mp}}),
                                 padTo(b, loc, rhs, {{kAxisR, kp}, {nAxis, np}})};
  if constexpr (std::is_same_v<OpT, tc::GemmOp>) {
    if (Value c = op.getC()) {
      // C broadcasts to [M, N]: its axes of full size grow with them.
      RankedTensorType ct = tensorType(c);
      AxisSizes sizes;
      int64_t rc = ct.getRank();
      if (rc >= 1 && ct.getDimSize(rc - 1) == nDim && nDim > 1)
        sizes[rc - 1] = np;
      if (rc == 2 && ct.getDimSize(0) == mDim && mDim > 1)
        sizes[0] = mp;
      operands.push_back(padTo(b, loc, c, sizes));
    }
  }
  SmallVector<int64_t> shape(yt.getShape());
  shape[ry - 1] = np;
  shape[ry - 2] = mp;
  report.add(op, "contraction K", kDim, kp);
  report.add(op, "output columns N", nDim, np);
  report.add(op, "transposed rows M", mDim, mp);
  rebuild(op, operands, RankedTensorType::get(shape, yt.getElementType()), {});
  return true;
}

/// Pads the channel axis `axis` of attribute `name` (input_shape or
/// weight_shape) to `size`.
NamedAttribute shapeAttr(Operation *op, StringRef name, const AxisSizes &sizes) {
  SmallVector<int64_t> shape(op->getAttrOfType<DenseI64ArrayAttr>(name).asArrayRef());
  for (auto [axis, size] : sizes)
    shape[axis] = size;
  Builder b(op->getContext());
  return b.getNamedAttr(name, b.getDenseI64ArrayAttr(shape));
}

RankedTensorType withSizes(RankedTensorType t, const AxisSizes &sizes) {
  SmallVector<int64_t> shape(t.getShape());
  for (auto [axis, size] : sizes)
    shape[axis] = size;
  return RankedTensorType::get(shape, t.getElementType());
}

/// An ungrouped convolution (or gradient) with input channels C or output
/// channels M not multiples of `m`: both padded. The weight is [M, C, k...]
/// ([M, k..., C] channels-last).
bool padConvolution(Operation *op, int64_t m, Report &report) {
  auto group = op->getAttrOfType<IntegerAttr>("group");
  if (group && group.getInt() != 1)
    return false;
  OpBuilder b(op);
  Location loc = op->getLoc();
  if (auto conv = dyn_cast<tc::ConvOp>(op)) {
    RankedTensorType xt = tensorType(conv.getInput()), wt = tensorType(conv.getWeight());
    int64_t r = xt.getRank(), ch = channelAxis(op, r), wc = ch == 1 ? 1 : r - 1;
    int64_t c = xt.getDimSize(ch), mo = wt.getDimSize(0);
    int64_t cp = roundUp(c, m), mp = roundUp(mo, m);
    if (cp == c && mp == mo)
      return false;
    SmallVector<Value> operands = {padTo(b, loc, conv.getInput(), {{ch, cp}}),
                                   padTo(b, loc, conv.getWeight(), {{0, mp}, {wc, cp}})};
    if (Value bias = conv.getBias())
      operands.push_back(padTo(b, loc, bias, {{0, mp}}));
    report.add(op, "input channels", c, cp);
    report.add(op, "output channels", mo, mp);
    rebuild(op, operands, withSizes(tensorType(conv.getResult()), {{ch, mp}}), {});
    return true;
  }
  if (auto data = dyn_cast<tc::ConvBackwardDataOp>(op)) {
    RankedTensorType dyt = tensorType(data.getResultGrad()), wt = tensorType(data.getWeight());
    int64_t r = dyt.getRank(), ch = channelAxis(op, r), wc = ch == 1 ? 1 : r - 1;
    int64_t mo = dyt.getDimSize(ch), c = wt.getDimSize(wc);
    int64_t cp = roundUp(c, m), mp = roundUp(mo, m);
    if (cp == c && mp == mo)
      return false;
    SmallVector<Value> operands = {padTo(b, loc, data.getResultGrad(), {{ch, mp}}),
                                   padTo(b, loc, data.getWeight(), {{0, mp}, {wc, cp}})};
    report.add(op, "input channels", c, cp);
    report.add(op, "output channels", mo, mp);
    rebuild(op, operands, withSizes(tensorType(data.getResult()), {{ch, cp}}),
            {shapeAttr(op, "input_shape", {{ch, cp}})});
    return true;
  }
  auto filter = cast<tc::ConvBackwardFilterOp>(op);
  RankedTensorType xt = tensorType(filter.getInput());
  int64_t r = xt.getRank(), ch = channelAxis(op, r), wc = ch == 1 ? 1 : r - 1;
  int64_t c = xt.getDimSize(ch), mo = tensorType(filter.getResultGrad()).getDimSize(ch);
  int64_t cp = roundUp(c, m), mp = roundUp(mo, m);
  if (cp == c && mp == mo)
    return false;
  SmallVector<Value> operands = {padTo(b, loc, filter.getInput(), {{ch, cp}}),
                                 padTo(b, loc, filter.getResultGrad(), {{ch, mp}})};
  report.add(op, "input channels", c, cp);
  report.add(op, "output channels", mo, mp);
  rebuild(op, operands, withSizes(tensorType(filter.getResult()), {{0, mp}, {wc, cp}}),
          {shapeAttr(op, "weight_shape", {{0, mp}, {wc, cp}})});
  return true;
}

//===----------------------------------------------------------------------===//
// What is known to be zero
//===----------------------------------------------------------------------===//

/// The answers of one zeroTail question's search, by (value, axis, from):
/// a value reached along several paths (the two operands of a residual
/// add lead back to the same earlier values) is looked at once, so the
/// search is linear in the graph, not exponential in its depth.
using ZeroMemo = llvm::DenseMap<std::tuple<Value, int64_t, int64_t>, bool>;

/// How far back a search goes (ops between the value and the pad or
/// product it comes from); farther is not known zero. Bounds the recursion.
constexpr int kMaxZeroDepth = 512;

bool zeroTailAt(Value v, int64_t axis, int64_t from, int depth, ZeroMemo &memo);
bool zeroTailUncached(Value v, int64_t axis, int64_t from, int depth, ZeroMemo &memo);

/// Whether `v`'s elements at index `from` and after along `axis` are known
/// to be zero.
bool zeroTail(Value v, int64_t axis, int64_t from) {
  ZeroMemo memo;
  return zeroTailAt(v, axis, from, 0, memo);
}

/// Whether `v` is a constant whose elements are all zero.
bool isZeroSplat(Value v) {
  auto constant = v.getDefiningOp<tc::ConstantOp>();
  auto value = constant ? dyn_cast<DenseElementsAttr>(constant.getValue()) : nullptr;
  if (!value || !value.isSplat())
    return false;
  if (isa<FloatType>(value.getElementType()))
    return value.getSplatValue<APFloat>().isZero();
  return value.getElementType().isIntOrIndex() && value.getSplatValue<APInt>().isZero();
}

/// Operand `operand` of an op with result rank `rank`, aligned to the
/// result's trailing axes (numpy broadcasting): its axis for result axis
/// `axis`, or -1 when it has none or broadcasts along it.
int64_t operandAxis(Value operand, int64_t rank, int64_t axis) {
  RankedTensorType t = tensorType(operand);
  int64_t a = axis - (rank - t.getRank());
  if (a < 0 || t.getDimSize(a) == 1)
    return -1;
  return a;
}

/// Pointwise ops with f(0) = 0 (f(0, 0) = 0 for two operands).
bool keepsZero(Operation *op) { return op->hasTrait<tc::OpTrait::KeepsZero>(); }

/// Whether every element of `v` along `axis` (`v`'s own axis) is finite:
/// a known zero, a broadcast value (not padded) or a comparison.
bool finiteTail(Value v, int64_t rank, int64_t axis, int64_t from, int depth,
                ZeroMemo &memo) {
  int64_t a = operandAxis(v, rank, axis);
  if (a < 0 || zeroTailAt(v, a, from, depth + 1, memo))
    return true;
  Operation *def = v.getDefiningOp();
  if (def && isa<tc::EqualOp, tc::LessOp, tc::LessEqualOp, tc::GreaterOp, tc::GreaterEqualOp,
                 tc::AndOp, tc::OrOp, tc::NotOp>(def))
    return true;
  if (auto cast = dyn_cast_or_null<tc::CastOp>(def))
    if (tensorType(cast.getInput()).getElementType().isInteger(1))
      return true;
  return false;
}

bool zeroTailAt(Value v, int64_t axis, int64_t from, int depth, ZeroMemo &memo) {
  RankedTensorType t = tensorType(v);
  if (!t || depth > kMaxZeroDepth || axis < 0 || axis >= t.getRank() || from >= t.getDimSize(axis))
    return false;
  auto key = std::make_tuple(v, axis, from);
  if (auto known = memo.find(key); known != memo.end())
    return known->second;
  // Unknown until answered (a cycle cannot occur in a block, but a value
  // reached again while it is being answered counts as not known zero).
  memo[key] = false;
  bool zero = zeroTailUncached(v, axis, from, depth, memo);
  memo[key] = zero;
  return zero;
}

bool zeroTailUncached(Value v, int64_t axis, int64_t from, int depth, ZeroMemo &memo) {
  RankedTensorType t = tensorType(v);
  Operation *def = v.getDefiningOp();
  if (!def)
    return false;
  int64_t rank = t.getRank();
  if (auto pad = dyn_cast<tc::PadOp>(def)) {
    ArrayRef<int64_t> pads = pad.getPads();
    if (pad.getMode() != "constant" || pad.getValue().convertToDouble() != 0.0 ||
        pads[axis] != 0)
      return false;
    int64_t in = tensorType(pad.getInput()).getDimSize(axis);
    return from >= in || zeroTailAt(pad.getInput(), axis, from, depth + 1, memo);
  }
  if (auto slice = asCrop(v))
    return zeroTailAt(slice.getInput(), axis, from, depth + 1, memo);
  if (auto matmul = dyn_cast<tc::MatMulOp>(def)) {
    RankedTensorType lt = tensorType(matmul.getLhs()), rt = tensorType(matmul.getRhs());
    if (lt.getRank() < 2 || rt.getRank() < 2)
      return false;
    if (axis == rank - 1)
      return zeroTailAt(matmul.getRhs(), matmul.getTransB() ? rt.getRank() - 2 : rt.getRank() - 1,
                      from, depth + 1, memo);
    if (axis == rank - 2)
      return zeroTailAt(matmul.getLhs(), matmul.getTransA() ? lt.getRank() - 1 : lt.getRank() - 2,
                      from, depth + 1, memo);
    return false;
  }
  if (auto gemm = dyn_cast<tc::GemmOp>(def)) {
    Value c = gemm.getC();
    bool cZero = !c || (operandAxis(c, 2, axis) >= 0 &&
                        zeroTailAt(c, operandAxis(c, 2, axis), from, depth + 1, memo));
    if (axis == 1)
      return cZero && zeroTailAt(gemm.getB(), gemm.getTransB() ? 0 : 1, from, depth + 1, memo);
    return cZero && zeroTailAt(gemm.getA(), gemm.getTransA() ? 1 : 0, from, depth + 1, memo);
  }
  if (auto conv = dyn_cast<tc::ConvOp>(def)) {
    if (conv.getGroup() != 1 || axis != channelAxis(def, rank))
      return false;
    return zeroTailAt(conv.getWeight(), 0, from, depth + 1, memo) &&
           (!conv.getBias() || zeroTailAt(conv.getBias(), 0, from, depth + 1, memo));
  }
  if (auto data = dyn_cast<tc::ConvBackwardDataOp>(def)) {
    int64_t ch = channelAxis(def, rank);
    return data.getGroup() == 1 && axis == ch &&
           zeroTailAt(data.getWeight(), ch == 1 ? 1 : rank - 1, from, depth + 1, memo);
  }
  if (auto filter = dyn_cast<tc::ConvBackwardFilterOp>(def)) {
    if (filter.getGroup() != 1)
      return false;
    int64_t ch = channelAxis(def, rank);
    if (axis == 0)
      return zeroTailAt(filter.getResultGrad(), ch, from, depth + 1, memo);
    return axis == (ch == 1 ? 1 : rank - 1) && zeroTailAt(filter.getInput(), ch, from, depth + 1, memo);
  }
  if (isa<tc::MaxPoolOp, tc::AvgPoolOp, tc::GlobalAvgPoolOp, tc::AvgPoolBackwardOp>(def))
    return axis == channelAxis(def, rank) && zeroTailAt(def->getOperand(0), axis, from, depth + 1, memo);
  if (isa<tc::MaxPoolBackwardOp>(def))
    return axis == channelAxis(def, rank) && zeroTailAt(def->getOperand(1), axis, from, depth + 1, memo);
  if (auto transpose = dyn_cast<tc::TransposeOp>(def))
    return zeroTailAt(transpose.getInput(), transpose.getPerm()[axis], from, depth + 1, memo);
  if (isa<tc::ReduceSumOp, tc::ReduceMeanOp, tc::ReduceMaxOp>(def)) {
    auto axes = def->getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef();
    bool keep = def->getAttrOfType<BoolAttr>("keepdims").getValue();
    if (axes.empty())
      return false;
    // The input axis that result axis `axis` is.
    int64_t in = axis;
    if (!keep)
      for (int64_t a : axes)
        if (a <= in)
          ++in;
    return !llvm::is_contained(axes, in) && zeroTailAt(def->getOperand(0), in, from, depth + 1, memo);
  }
  // A pointwise operand is zero there when it is padded with zeros along
  // the axis or is a zero constant (which broadcasts).
  auto zero = [&](Value operand) {
    int64_t a = operandAxis(operand, rank, axis);
    return a >= 0 ? zeroTailAt(operand, a, from, depth + 1, memo) : isZeroSplat(operand);
  };
  if (isa<tc::WhereOp>(def))
    return zero(def->getOperand(1)) && zero(def->getOperand(2));
  if (isa<tc::MulOp>(def))
    // 0 * finite = 0.
    return (zero(def->getOperand(0)) && finiteTail(def->getOperand(1), rank, axis, from, depth, memo)) ||
           (zero(def->getOperand(1)) && finiteTail(def->getOperand(0), rank, axis, from, depth, memo));
  if (def->hasTrait<tc::OpTrait::Pointwise>() && keepsZero(def))
    return llvm::all_of(def->getOperands(), zero);
  return false;
}

//===----------------------------------------------------------------------===//
// Step 2: crops sink, pads of zero-padded values go
//===----------------------------------------------------------------------===//

/// The padded sizes of `v`'s axes when it is a crop, by axis.
AxisSizes cropSizes(tc::SliceOp crop) {
  AxisSizes sizes;
  RankedTensorType in = tensorType(crop.getInput()), out = tensorType(crop.getResult());
  for (int64_t a = 0; a < in.getRank(); ++a)
    if (in.getDimSize(a) != out.getDimSize(a))
      sizes[a] = in.getDimSize(a);
  return sizes;
}

/// op(crop(a), ...) -> crop(op(a, ...)) for a pointwise op: every operand is
/// a crop to the same padded sizes (aligned to the result), broadcasts
/// along the padded axes, or is small (an eighth of the result or less; it
/// is zero-padded: a bias).
struct SinkCropThroughPointwise : RewritePattern {
  explicit SinkCropThroughPointwise(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}

  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    if (!op->hasTrait<tc::OpTrait::Pointwise>() || op->getNumResults() != 1)
      return failure();
    RankedTensorType yt = tensorType(op->getResult(0));
    if (!yt)
      return failure();
    int64_t rank = yt.getRank();
    // The padded sizes, in result axes, from the first crop operand.
    AxisSizes sizes;
    for (Value v : op->getOperands())
      if (tc::SliceOp crop = asCrop(v)) {
        int64_t shift = rank - tensorType(v).getRank();
        for (auto [a, size] : cropSizes(crop))
          sizes[a + shift] = size;
        break;
      }
    if (sizes.empty())
      return failure();
    SmallVector<Value> operands;
    for (Value v : op->getOperands()) {
      RankedTensorType t = tensorType(v);
      int64_t shift = rank - t.getRank();
      AxisSizes own;
      for (auto [a, size] : sizes)
        if (a - shift >= 0 && t.getDimSize(a - shift) != 1)
          own[a - shift] = size;
      if (own.empty()) {
        operands.push_back(v);
        continue;
      }
      tc::SliceOp crop = asCrop(v);
      if (crop && cropSizes(crop) == own) {
        operands.push_back(crop.getInput());
        continue;
      }
      if (t.getNumElements() * 8 > yt.getNumElements())
        return rewriter.notifyMatchFailure(op, "an operand would need a large copy");
      operands.push_back(padTo(rewriter, op->getLoc(), v, own));
    }
    OperationState state(op->getLoc(), op->getName());
    state.addOperands(operands);
    state.addAttributes(op->getAttrs());
    state.addTypes(withSizes(yt, sizes));
    Operation *padded = rewriter.create(state);
    rewriter.replaceOp(op, cropTo(rewriter, op->getLoc(), padded->getResult(0), yt.getShape()));
    return success();
  }
};

/// pool(crop(x)) -> crop(pool(x)) when only the channel axis is cropped:
/// pooling and its gradients work channel by channel.
struct SinkCropThroughPooling : RewritePattern {
  explicit SinkCropThroughPooling(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}

  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    if (!isa<tc::MaxPoolOp, tc::AvgPoolOp, tc::GlobalAvgPoolOp, tc::MaxPoolBackwardOp,
             tc::AvgPoolBackwardOp>(op))
      return failure();
    RankedTensorType yt = tensorType(op->getResult(0));
    int64_t ch = channelAxis(op, yt.getRank());
    SmallVector<Value> operands;
    int64_t padded = -1;
    for (Value v : op->getOperands()) {
      tc::SliceOp crop = asCrop(v);
      AxisSizes sizes = crop ? cropSizes(crop) : AxisSizes();
      if (sizes.size() != 1 || sizes.begin()->first != ch ||
          (padded >= 0 && sizes.begin()->second != padded))
        return failure();
      padded = sizes.begin()->second;
      operands.push_back(crop.getInput());
    }
    OperationState state(op->getLoc(), op->getName());
    state.addOperands(operands);
    for (NamedAttribute attr : op->getAttrs())
      if (attr.getName() == "input_shape")
        state.addAttribute(attr.getName(), shapeAttr(op, "input_shape", {{ch, padded}}).getValue());
      else
        state.addAttribute(attr.getName(), attr.getValue());
    state.addTypes(withSizes(yt, {{ch, padded}}));
    Operation *rebuilt = rewriter.create(state);
    rewriter.replaceOp(op, cropTo(rewriter, op->getLoc(), rebuilt->getResult(0), yt.getShape()));
    return success();
  }
};

/// reduce(crop(x), axes) -> crop(reduce(x, axes)) when no cropped axis is
/// reduced (a bias gradient).
template <typename ReduceOp>
struct SinkCropThroughReduce : OpRewritePattern<ReduceOp> {
  using OpRewritePattern<ReduceOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(ReduceOp op, PatternRewriter &rewriter) const override {
    tc::SliceOp crop = asCrop(op.getInput());
    ArrayRef<int64_t> axes = op.getAxes();
    if (!crop || axes.empty())
      return failure();
    AxisSizes sizes = cropSizes(crop), out;
    for (auto [a, size] : sizes) {
      if (llvm::is_contained(axes, a))
        return failure();
      int64_t at = a;
      if (!op.getKeepdims())
        at -= llvm::count_if(axes, [&](int64_t r) { return r < a; });
      out[at] = size;
    }
    RankedTensorType yt = tensorType(op.getResult());
    auto inner = rewriter.create<ReduceOp>(op.getLoc(), withSizes(yt, out), crop.getInput(),
                                           op->getAttrs());
    rewriter.replaceOp(op, cropTo(rewriter, op.getLoc(), inner.getResult(), yt.getShape()));
    return success();
  }
};

/// pad(crop(x)) -> x when the pad restores x's shape and x is zero where the
/// crop cut it off.
struct PadOfZeroPaddedCrop : OpRewritePattern<tc::PadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tc::PadOp op, PatternRewriter &rewriter) const override {
    tc::SliceOp crop = asCrop(op.getInput());
    if (!crop || op.getMode() != "constant" || op.getValue().convertToDouble() != 0.0 ||
        crop.getInput().getType() != op.getType())
      return failure();
    RankedTensorType in = tensorType(op.getInput());
    ArrayRef<int64_t> pads = op.getPads();
    for (int64_t a = 0; a < in.getRank(); ++a) {
      if (pads[a] != 0)
        return failure();
      if (pads[in.getRank() + a] != 0 && !zeroTail(crop.getInput(), a, in.getDimSize(a)))
        return rewriter.notifyMatchFailure(op, "the cropped part may not be zero");
    }
    rewriter.replaceOp(op, crop.getInput());
    return success();
  }
};

/// crop(crop(x)) -> crop(x).
struct CropOfCrop : OpRewritePattern<tc::SliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tc::SliceOp op, PatternRewriter &rewriter) const override {
    tc::SliceOp inner = asCrop(op.getInput());
    if (!inner || !asCrop(op.getResult()))
      return failure();
    rewriter.modifyOpInPlace(op, [&] { op.getInputMutable().assign(inner.getInput()); });
    return success();
  }
};

/// Bytes a function's pads and crops write (each distinct one once, as CSE
/// will leave them).
int64_t copyBytes(func::FuncOp func) {
  int64_t bytes = 0;
  llvm::DenseSet<std::pair<Value, Type>> seen;
  func.walk([&](Operation *op) {
    if (!isa<tc::PadOp>(op) && !(isa<tc::SliceOp>(op) && asCrop(op->getResult(0))))
      return;
    RankedTensorType t = tensorType(op->getResult(0));
    if (!t || !t.getElementType().isIntOrFloat() ||
        !seen.insert({op->getOperand(0), Type(t)}).second)
      return;
    bytes += t.getNumElements() * std::max<int64_t>(1, t.getElementTypeBitWidth() / 8);
  });
  return bytes;
}

struct PadPass : trainc::impl::PadBase<PadPass> {
  using PadBase::PadBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (multiple < 2) {
      module.emitError("the pad phase needs a multiple of at least 2, got ")
          << static_cast<int64_t>(multiple);
      return signalPassFailure();
    }
    // Pads and crops that were there before are not this phase's cost.
    std::map<std::string, int64_t> before;
    for (auto func : module.getOps<func::FuncOp>())
      before[func.getName().str()] = copyBytes(func);
    SmallVector<Operation *> targets;
    module.walk([&](Operation *op) {
      if (isa<tc::MatMulOp, tc::GemmOp, tc::ConvOp, tc::ConvBackwardDataOp,
              tc::ConvBackwardFilterOp>(op))
        targets.push_back(op);
    });
    Report report;
    bool changed = false;
    for (Operation *op : targets) {
      if (auto matmul = dyn_cast<tc::MatMulOp>(op))
        changed |= padProduct(matmul, multiple, report);
      else if (auto gemm = dyn_cast<tc::GemmOp>(op))
        changed |= padProduct(gemm, multiple, report);
      else
        changed |= padConvolution(op, multiple, report);
    }
    Builder b(&getContext());
    module->setAttr(tc::kPadToAttrName, b.getI64IntegerAttr(multiple));
    if (!changed)
      return;

    MLIRContext *context = &getContext();
    RewritePatternSet patterns(context);
    patterns.add<SinkCropThroughPointwise, SinkCropThroughPooling, PadOfZeroPaddedCrop,
                 CropOfCrop, SinkCropThroughReduce<tc::ReduceSumOp>,
                 SinkCropThroughReduce<tc::ReduceMeanOp>, SinkCropThroughReduce<tc::ReduceMaxOp>>(
        context);
    FrozenRewritePatternSet frozen(std::move(patterns));
    GreedyRewriteConfig config;
    config.maxIterations = 64;
    for (auto func : module.getOps<func::FuncOp>()) {
      // Every rewrite is exact, so a limit reached leaves correct IR with
      // some copies in it.
      (void)applyPatternsAndFoldGreedily(func, frozen, config);
      int64_t added = copyBytes(func) - before[func.getName().str()];
      if (added > 0)
        func->setAttr(tc::kPaddingCopyBytesAttrName, b.getI64IntegerAttr(added));
    }
    SmallVector<Attribute> lines;
    for (const std::string &line : report.lines)
      lines.push_back(b.getStringAttr(line));
    module->setAttr(tc::kPaddingAttrName, b.getArrayAttr(lines));
  }
};

} // namespace
