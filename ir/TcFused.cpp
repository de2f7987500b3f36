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

bool tc::isEpilogueHead(Operation *op) {
  if (!isa<MatMulOp, GemmOp>(op) ||
      !cast<RankedTensorType>(op->getResult(0).getType()).getElementType().isF32())
    return false;
  auto gemm = dyn_cast<GemmOp>(op);
  if (!gemm)
    return true;
  // The GEMM call adds C itself: a bias row or a whole matrix, beta 1.
  if (gemm.getAlpha().convertToFloat() != 1.0f)
    return false;
  if (!gemm.getC())
    return true;
  ArrayRef<int64_t> c = cast<RankedTensorType>(gemm.getC().getType()).getShape();
  ArrayRef<int64_t> y = cast<RankedTensorType>(gemm.getType()).getShape();
  bool row = (c.size() == 1 && c[0] == y[1]) || (c.size() == 2 && c[0] == 1 && c[1] == y[1]);
  return gemm.getBeta().convertToFloat() == 1.0f && (row || c == y);
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
  Operation *head = nullptr;
  for (Operation &op : block.without_terminator()) {
    if (isSplatConstant(&op))
      continue;
    if (!head && isEpilogueHead(&op) && llvm::all_of(block.without_terminator(), [&](Operation &o) {
          return &o == &op || isSplatConstant(&o) || op.isBeforeInBlock(&o);
        })) {
      // The GEMM whose output the rest of the group finishes: the kernel
      // reads its value in place in a yielded f32 result.
      head = &op;
      if (cast<RankedTensorType>(op.getResult(0).getType()).getShape() != shape)
        return op.emitOpError("heading a tc.fused group computes ")
               << op.getResult(0).getType() << ", not the group's iteration shape";
      if (llvm::is_contained(yield.getValues(), op.getResult(0)))
        return op.emitOpError("heading a tc.fused group is not one of its results");
      if (llvm::none_of(getResultTypes(), [](Type t) {
            return cast<RankedTensorType>(t).getElementType().isF32();
          }))
        return op.emitOpError("heads a tc.fused group without an f32 result to compute in");
      continue;
    }
    if (!isFusible(&op))
      return op.emitOpError("cannot be part of a tc.fused group (not pointwise)");
    for (Type t : op.getResultTypes())
      if (cast<RankedTensorType>(t).getShape() != shape)
        return op.emitOpError("inside a tc.fused group computes ")
               << t << ", not the group's iteration shape";
  }
  return success();
}
