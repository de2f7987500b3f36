//===- TcFolds.cpp - folders and canonicalization patterns of tc ops -------===//
//
// Transposes: the identity permutation, a transpose of a transpose and a
// transpose of a splat constant fold away; a transpose of the last two axes
// that feeds a tc.matmul or tc.gemm operand becomes that operand's trans_a /
// trans_b flag, so the product reads the untransposed tensor and the copy
// dies when nothing else uses it.
//
// Casts: a cast to the input's own type and a cast that goes back through an exact widening (bf16 -> f32 -> bf16,
// what autodiff leaves between mixed-precision ops) fold; a cast to f32 of a
// low-precision contraction that nothing else reads becomes the
// contraction's out_type, so its f32 sum is not rounded to bf16 and back.
//
//===----------------------------------------------------------------------===//

#include "ir/TcOps.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace trainc;
using namespace trainc::tc;

namespace {

bool isIdentity(ArrayRef<int64_t> perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i))
      return false;
  return true;
}

/// Whether `perm` swaps the last two axes and keeps every other axis.
bool swapsLastTwo(ArrayRef<int64_t> perm) {
  int64_t rank = perm.size();
  if (rank < 2 || perm[rank - 2] != rank - 1 || perm[rank - 1] != rank - 2)
    return false;
  return isIdentity(perm.drop_back(2));
}

/// transpose(splat constant) -> the splat constant of the transposed shape.
struct TransposeOfSplat : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op, PatternRewriter &rewriter) const override {
    Operation *def = op.getInput().getDefiningOp();
    if (!isSplatConstant(def))
      return rewriter.notifyMatchFailure(op, "input is not a splat constant");
    auto value = cast<DenseElementsAttr>(cast<ConstantOp>(def).getValue());
    auto type = cast<ShapedType>(op.getResult().getType());
    rewriter.replaceOpWithNewOp<ConstantOp>(op, value.resizeSplat(type));
    return success();
  }
};

/// A contraction reading transpose(x, swap of the last two axes) reads x with
/// its flag flipped.
template <typename OpTy>
struct FoldTransposeIntoFlags : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op, PatternRewriter &rewriter) const override {
    bool changed = false;
    for (unsigned i : {0u, 1u}) {
      auto t = op->getOperand(i).template getDefiningOp<TransposeOp>();
      if (!t || !swapsLastTwo(t.getPerm()))
        continue;
      StringAttr name = i == 0 ? op.getTransAAttrName() : op.getTransBAttrName();
      bool flag = i == 0 ? op.getTransA() : op.getTransB();
      rewriter.modifyOpInPlace(op, [&] {
        op->setOperand(i, t.getInput());
        op->setAttr(name, rewriter.getBoolAttr(!flag));
      });
      changed = true;
    }
    return success(changed);
  }
};

/// Whether every value of float type `from` is exactly a value of `to`.
bool isExactWidening(Type from, Type to) {
  auto f = dyn_cast<FloatType>(from), t = dyn_cast<FloatType>(to);
  if (!f || !t || f == t)
    return false;
  if (t.isF64())
    return f.isF32() || f.isF16() || f.isBF16();
  return t.isF32() && (f.isF16() || f.isBF16());
}

/// cast(matmul or gemm of f16/bf16 operands -> f32), the cast the product's
/// only use -> the product with out_type = f32. A gemm's C would have to be
/// f32 too: such a gemm keeps the cast.
struct CastIntoContraction : OpRewritePattern<CastOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CastOp op, PatternRewriter &rewriter) const override {
    Operation *def = op.getInput().getDefiningOp();
    if (!def || !op.getTo().isF32() || !def->hasOneUse() ||
        !isa<MatMulOp, GemmOp>(def))
      return rewriter.notifyMatchFailure(op, "not the only use of a contraction");
    Type in = cast<ShapedType>(op.getInput().getType()).getElementType();
    if ((!in.isBF16() && !in.isF16()) || def->hasAttr("out_type"))
      return rewriter.notifyMatchFailure(op, "not a low-precision contraction");
    if (isa<GemmOp>(def) && cast<GemmOp>(def).getC())
      return rewriter.notifyMatchFailure(op, "C has the low type");
    SmallVector<NamedAttribute> attrs(def->getAttrs());
    attrs.push_back(rewriter.getNamedAttr("out_type", TypeAttr::get(op.getTo())));
    OperationState state(def->getLoc(), def->getName(), def->getOperands(),
                         {op.getResult().getType()}, attrs);
    // Where the product was, not where the cast is: a weight gradient's cast
    // comes at the end of the backward (with the weight's own cast), and a
    // product moved there keeps its operands alive until then.
    rewriter.setInsertionPoint(def);
    Operation *widened = rewriter.create(state);
    rewriter.replaceOp(op, widened->getResult(0));
    rewriter.eraseOp(def);
    return success();
  }
};

} // namespace

OpFoldResult CastOp::fold(FoldAdaptor) {
  Type from = cast<ShapedType>(getInput().getType()).getElementType();
  Type to = getTo();
  if (from == to)
    return getInput();
  auto inner = getInput().getDefiningOp<CastOp>();
  if (!inner)
    return {};
  Type source = cast<ShapedType>(inner.getInput().getType()).getElementType();
  if (!isExactWidening(source, from))
    return {};
  // The widening changed nothing: cast the source directly.
  if (source == to)
    return inner.getInput();
  getInputMutable().assign(inner.getInput());
  return getResult();
}

void CastOp::getCanonicalizationPatterns(RewritePatternSet &patterns, MLIRContext *context) {
  patterns.add<CastIntoContraction>(context);
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  ArrayRef<int64_t> perm = getPerm();
  if (isIdentity(perm))
    return getInput();
  auto inner = getInput().getDefiningOp<TransposeOp>();
  if (!inner)
    return {};
  // Result axis i is this input's axis perm[i], which is the inner input's
  // axis innerPerm[perm[i]].
  ArrayRef<int64_t> innerPerm = inner.getPerm();
  SmallVector<int64_t> composed;
  for (int64_t p : perm)
    composed.push_back(innerPerm[p]);
  if (isIdentity(composed))
    return inner.getInput();
  getInputMutable().assign(inner.getInput());
  setPerm(composed);
  return getResult();
}

void TransposeOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                              MLIRContext *context) {
  patterns.add<TransposeOfSplat>(context);
}

void MatMulOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                           MLIRContext *context) {
  patterns.add<FoldTransposeIntoFlags<MatMulOp>>(context);
}

void GemmOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                         MLIRContext *context) {
  patterns.add<FoldTransposeIntoFlags<GemmOp>>(context);
}
