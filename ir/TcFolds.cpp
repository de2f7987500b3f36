//===- TcFolds.cpp - folders and canonicalization patterns of tc ops -------===//
//
// Transposes: the identity permutation, a transpose of a transpose and a
// transpose of a splat constant fold away; a transpose of the last two axes
// that feeds a tc.matmul or tc.gemm operand becomes that operand's trans_a /
// trans_b flag, so the product reads the untransposed tensor and the copy
// dies when nothing else uses it.
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

} // namespace

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
