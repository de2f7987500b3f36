//===- OpChain.cpp - building chains of tc ops for one node ---------------===//

#include "frontend/OpChain.h"

#include "ir/ShapeLogic.h"

using namespace mlir;
using namespace trainc;
using namespace trainc::frontend;

Value OpChain::scalar(Value like, double value) {
  Type element = cast<RankedTensorType>(like.getType()).getElementType();
  Tensor t = Tensor::scalarReal(fromMlirType(element).value_or(DType::F32), value);
  return ctx.builder().create<tc::ConstantOp>(ctx.loc(), toAttribute(ctx.context(), t));
}

FailureOr<Value> OpChain::reshape(FailureOr<Value> v, ArrayRef<int64_t> shape) {
  return op<tc::ReshapeOp>({v}, {ctx.namedArray("shape", shape)});
}

FailureOr<Value> OpChain::slice(FailureOr<Value> v, int64_t axis, int64_t start, int64_t end) {
  if (failed(v))
    return failure();
  ArrayRef<int64_t> shape = cast<RankedTensorType>(v->getType()).getShape();
  SmallVector<int64_t> starts(shape.size(), 0), ends(shape), steps(shape.size(), 1);
  starts[axis] = start;
  ends[axis] = end;
  return op<tc::SliceOp>({v}, {ctx.namedArray("starts", starts), ctx.namedArray("ends", ends),
                               ctx.namedArray("steps", steps)});
}

FailureOr<Value> OpChain::concat(ArrayRef<FailureOr<Value>> parts, int64_t axis) {
  if (parts.size() == 1)
    return parts[0];
  return op<tc::ConcatOp>(parts, {ctx.namedI64("axis", axis)});
}

FailureOr<Value> OpChain::transpose(FailureOr<Value> v, ArrayRef<int64_t> perm) {
  return op<tc::TransposeOp>({v}, {ctx.namedArray("perm", perm)});
}

LogicalResult trainc::frontend::bindOutput(NodeContext &ctx, FailureOr<Value> value) {
  if (failed(value))
    return failure();
  ctx.setOutput(0, *value);
  return success();
}
