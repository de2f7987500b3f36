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

bool tc::isNormHead(Operation *op) {
  if (!isa<BatchNormOp, LayerNormOp, BatchNormBackwardOp, LayerNormBackwardOp, SoftmaxOp,
           LogSoftmaxOp>(op))
    return false;
  auto f32 = [](Type t) { return cast<RankedTensorType>(t).getElementType().isF32(); };
  if (!llvm::all_of(op->getOperandTypes(), f32) || !llvm::all_of(op->getResultTypes(), f32))
    return false;
  // An inference batch norm's statistics results are views of its
  // operands, which a group would have to copy.
  if (auto bn = dyn_cast<BatchNormOp>(op); bn && !bn.getTraining())
    return bn.getRunningMean().use_empty() && bn.getRunningVar().use_empty();
  return true;
}

Value tc::streamedOperand(Operation *normHead) {
  if (auto bn = dyn_cast<BatchNormBackwardOp>(normHead))
    return bn.getResultGrad();
  if (auto ln = dyn_cast<LayerNormBackwardOp>(normHead))
    return ln.getResultGrad();
  return normHead->getOperand(0); // the input of the forward norms and softmaxes
}

Operation *tc::groupHead(Block &block) {
  for (Operation &op : block.without_terminator())
    if (isNormHead(&op) || isEpilogueHead(&op))
      return &op;
  return nullptr;
}

Value tc::FusedOp::getReplacedOperand(unsigned index) {
  // A training batch norm's running statistic, which replaced its operand.
  auto yielded = dyn_cast<OpResult>(getBlock().getTerminator()->getOperand(index));
  if (!yielded || !tc::isNormHead(yielded.getOwner()))
    return nullptr;
  auto arg = dyn_cast_or_null<BlockArgument>(tc::replacedOperand(yielded));
  return arg ? getInputs()[arg.getArgNumber()] : Value();
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
  auto yield = cast<YieldOp>(block.getTerminator());
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yields ") << yield.getValues().size()
                                  << " values whose types differ from its results";
  Operation *head = nullptr;
  for (Operation &op : block.without_terminator())
    if (isNormHead(&op)) {
      if (failed(verifyNormHead(&op)))
        return failure();
      head = &op;
      break;
    }
  for (auto [k, v] : llvm::enumerate(yield.getValues())) {
    // A normalization head's other results keep their own shapes.
    bool statistic = head && v.getDefiningOp() == head && cast<OpResult>(v).getResultNumber() > 0;
    if (statistic && k == 0)
      return emitOpError("yields a normalization's statistics first; its first result has "
                         "the group's shape");
    if (!statistic && cast<RankedTensorType>(v.getType()).getShape() != shape)
      return emitOpError("results of one group share one shape; got ") << v.getType();
  }
  for (Operation &op : block.without_terminator()) {
    if (isSplatConstant(&op) || &op == head)
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
    // A slice of a group input: the kernel reads the sliced elements in place.
    auto slice = dyn_cast<SliceOp>(op);
    bool readsInput = slice && isa<BlockArgument>(slice.getInput());
    if (!isFusible(&op) && !readsInput)
      return op.emitOpError("cannot be part of a tc.fused group (not pointwise, nor a slice of "
                            "one of its inputs)");
    for (Type t : op.getResultTypes())
      if (cast<RankedTensorType>(t).getShape() != shape)
        return op.emitOpError("inside a tc.fused group computes ")
               << t << ", not the group's iteration shape";
  }
  return success();
}

LogicalResult tc::FusedOp::verifyNormHead(Operation *head) {
  Block &block = getBlock();
  auto yield = cast<tc::YieldOp>(block.getTerminator());
  Value streamed = tc::streamedOperand(head);
  for (Value operand : head->getOperands()) {
    if (isa<BlockArgument>(operand))
      continue;
    if (operand != streamed)
      return head->emitOpError("heading a tc.fused group reads its operands but the streamed one "
                               "from the group's inputs");
    if (!llvm::is_contained(yield.getValues(), operand))
      return head->emitOpError("heading a tc.fused group reads a value its prologue computes "
                               "from memory: the group must yield it");
  }
  for (OpResult r : llvm::drop_begin(head->getResults()))
    for (Operation *user : r.getUsers())
      if (user != yield)
        return head->emitOpError("heading a tc.fused group: its result ")
               << r.getResultNumber() << " is read inside the group (only its first is)";
  Value product = head->getResult(0);
  bool read = llvm::any_of(product.getUsers(), [&](Operation *u) { return u != yield; });
  bool hostResult = llvm::is_contained(yield.getValues(), product) ||
                    llvm::any_of(yield.getValues(), [&](Value v) {
                      Operation *def = v.getDefiningOp();
                      return def && def != head && head->isBeforeInBlock(def) &&
                             cast<RankedTensorType>(v.getType()).getElementType().isF32();
                    });
  if (read && !hostResult)
    return head->emitOpError("heads a tc.fused group without an f32 result its epilogue "
                             "computes in");
  return success();
}
