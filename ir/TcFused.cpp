//===- TcFused.cpp - tc.fused, the kernel group ---------------------------===//

#include "ir/TcOps.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace trainc;

bool tc::isFusible(Operation *op) {
  if (op->hasTrait<tc::OpTrait::Pointwise>() || isa<ExpandOp>(op))
    return true;
  if (auto dropout = dyn_cast<DropoutOp>(op))
    return dropout.getTraining();
  return false;
}

bool tc::isSplatConstant(Operation *op) {
  auto constant = dyn_cast_or_null<ConstantOp>(op);
  auto value = constant ? dyn_cast<DenseElementsAttr>(constant.getValue()) : nullptr;
  return value && value.isSplat();
}

LogicalResult tc::FusedOp::verify() {
  Block &block = getBlock();
  if (block.getNumArguments() != getInputs().size())
    return emitOpError("has ") << getInputs().size() << " inputs but its block has "
                               << block.getNumArguments() << " arguments";
  for (auto [input, arg] : llvm::zip(getInputs(), block.getArguments()))
    if (input.getType() != arg.getType())
      return emitOpError("block argument ") << arg.getArgNumber() << " has type "
                                            << arg.getType() << ", its input "
                                            << input.getType();
  if (getNumResults() == 0)
    return emitOpError("computes nothing");
  ArrayRef<int64_t> shape = getIterationShape();
  for (Type t : getResultTypes())
    if (cast<RankedTensorType>(t).getShape() != shape)
      return emitOpError("results of one group share one shape; got ") << t;
  auto yield = cast<YieldOp>(block.getTerminator());
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yields ") << yield.getValues().size()
                                  << " values whose types differ from its results";
  for (Operation &op : block.without_terminator()) {
    if (isSplatConstant(&op))
      continue;
    if (!isFusible(&op))
      return op.emitOpError("cannot be part of a tc.fused group (not pointwise)");
    for (Type t : op.getResultTypes())
      if (cast<RankedTensorType>(t).getShape() != shape)
        return op.emitOpError("inside a tc.fused group computes ")
               << t << ", not the group's iteration shape";
  }
  return success();
}
