//===- FoldBiasBeforeBatchNorm.cpp - drop biases that batch norm cancels --===//

#include "ir/TcOps.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace trainc {
#define GEN_PASS_DEF_FOLDBIASBEFOREBATCHNORM
#include "passes/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc;

namespace {

/// The training-mode batch_norm that is the only user of `value`, or null.
tc::BatchNormOp soleTrainingBatchNormUser(Value value) {
  if (!value.hasOneUse())
    return nullptr;
  auto bn = dyn_cast<tc::BatchNormOp>(*value.getUsers().begin());
  if (!bn || !bn.getTraining() || bn.getInput() != value)
    return nullptr;
  return bn;
}

struct FoldBiasBeforeBatchNormPass
    : trainc::impl::FoldBiasBeforeBatchNormBase<FoldBiasBeforeBatchNormPass> {
  void runOnOperation() override {
    SmallVector<std::pair<Operation *, tc::BatchNormOp>> targets;
    getOperation().walk([&](Operation *op) {
      if (auto conv = dyn_cast<tc::ConvOp>(op)) {
        if (!conv.getBias())
          return;
        if (auto bn = soleTrainingBatchNormUser(conv.getResult()))
          targets.emplace_back(op, bn);
      } else if (auto gemm = dyn_cast<tc::GemmOp>(op)) {
        // Over [N, C] batch_norm normalizes each column; only a bias that is
        // constant down the columns (shape [C] or [1, C]) cancels.
        Value c = gemm.getC();
        auto bn = c ? soleTrainingBatchNormUser(gemm.getResult()) : nullptr;
        if (!bn)
          return;
        auto cType = cast<RankedTensorType>(c.getType());
        int64_t columns = cast<RankedTensorType>(gemm.getType()).getDimSize(1);
        if (cType.getNumElements() == columns &&
            (cType.getRank() == 1 || (cType.getRank() == 2 && cType.getDimSize(0) == 1)))
          targets.emplace_back(op, bn);
      }
    });
    for (auto [op, bn] : targets) {
      // The bias is always the last operand of both ops.
      Value bias = op->getOperand(op->getNumOperands() - 1);
      float biasScale = 1.0f;
      op->eraseOperand(op->getNumOperands() - 1);
      if (auto gemm = dyn_cast<tc::GemmOp>(op)) {
        biasScale = gemm.getBeta().convertToFloat();
        gemm->removeAttr(gemm.getBetaAttrName());
      }
      keepRunningMeanExact(bn, bias, biasScale);
      markFolded(bias);
    }
  }

  /// The batch mean no longer contains the bias, but PyTorch's running mean
  /// does: add back what the bias (times gemm's beta) contributes to the
  /// update, running = m * running + (1 - m) * (mean + beta * bias).
  static void keepRunningMeanExact(tc::BatchNormOp bn, Value bias, float biasScale) {
    Value runningMean = bn.getRunningMean();
    if (runningMean.use_empty())
      return;
    OpBuilder b(bn->getContext());
    b.setInsertionPointAfter(bn);
    Location loc = bn.getLoc();
    auto meanType = cast<RankedTensorType>(runningMean.getType());
    if (cast<RankedTensorType>(bias.getType()).getShape() != meanType.getShape())
      bias = b.create<tc::ReshapeOp>(loc, ValueRange{bias},
                                     ArrayRef<NamedAttribute>{b.getNamedAttr(
                                         "shape", b.getDenseI64ArrayAttr(meanType.getShape()))})
                 ->getResult(0);
    auto scalar = RankedTensorType::get({}, meanType.getElementType());
    float share = (1.0f - bn.getMomentum().convertToFloat()) * biasScale;
    Value weight = b.create<tc::ConstantOp>(loc, DenseElementsAttr::get(scalar, share));
    Value shifted = b.create<tc::MulOp>(loc, ValueRange{bias, weight})->getResult(0);
    Value corrected = b.create<tc::AddOp>(loc, ValueRange{runningMean, shifted})->getResult(0);
    runningMean.replaceAllUsesExcept(corrected, corrected.getDefiningOp());
  }

  /// A bias that is a function argument (a parameter) is marked for autodiff:
  /// its true gradient is exactly 0, which it gets, so momentum and weight
  /// decay still apply to it as in PyTorch.
  static void markFolded(Value bias) {
    auto arg = dyn_cast<BlockArgument>(bias);
    if (!arg)
      return;
    if (auto func = dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp()))
      func.setArgAttr(arg.getArgNumber(), tc::kFoldedBiasAttrName, UnitAttr::get(func->getContext()));
  }
};

} // namespace
