//===- FoldBiasBeforeBatchNorm.cpp - drop biases that batch norm cancels --===//

#include "ir/TcOps.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"

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
    SmallVector<Operation *> targets;
    getOperation().walk([&](Operation *op) {
      if (auto conv = dyn_cast<tc::ConvOp>(op)) {
        if (conv.getBias() && soleTrainingBatchNormUser(conv.getResult()))
          targets.push_back(op);
      } else if (auto gemm = dyn_cast<tc::GemmOp>(op)) {
        // Over [N, C] batch_norm normalizes each column; only a bias that is
        // constant down the columns (shape [C] or [1, C]) cancels.
        Value c = gemm.getC();
        if (!c || !soleTrainingBatchNormUser(gemm.getResult()))
          return;
        auto cType = cast<RankedTensorType>(c.getType());
        if (cType.getRank() == 1 ||
            (cType.getRank() == 2 && cType.getDimSize(0) == 1))
          targets.push_back(op);
      }
    });
    for (Operation *op : targets) {
      // The bias is always the last operand of both ops.
      op->eraseOperand(op->getNumOperands() - 1);
      if (auto gemm = dyn_cast<tc::GemmOp>(op))
        gemm->removeAttr(gemm.getBetaAttrName());
    }
  }
};

} // namespace
