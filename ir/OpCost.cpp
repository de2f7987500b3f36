//===- OpCost.cpp - what an op costs, estimated ---------------------------===//

#include "ir/OpCost.h"

#include "ir/TcOps.h"

#include "mlir/IR/BuiltinTypes.h"

#include <algorithm>

using namespace mlir;

namespace {

double elements(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type ? static_cast<double>(type.getNumElements()) : 0.0;
}

int64_t dim(Value v, int64_t axis) {
  auto type = cast<RankedTensorType>(v.getType());
  return type.getDimSize(axis < 0 ? type.getRank() + axis : axis);
}

} // namespace

int64_t trainc::valueBytes(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type)
    return 0;
  unsigned bits = type.getElementType().getIntOrFloatBitWidth();
  return type.getNumElements() * std::max<int64_t>(1, bits / 8);
}

double trainc::contractionFlops(Operation *op) {
  if (auto fused = dyn_cast<tc::FusedOp>(op)) {
    double flops = 0.0;
    for (Operation &inner : fused.getBlock().without_terminator())
      flops += contractionFlops(&inner);
    return flops;
  }
  if (op->getNumResults() == 0)
    return 0.0;
  double out = elements(op->getResult(0));
  if (auto gemm = dyn_cast<tc::GemmOp>(op))
    return 2.0 * out * dim(gemm.getA(), gemm.getTransA() ? 0 : 1);
  if (auto matmul = dyn_cast<tc::MatMulOp>(op))
    return 2.0 * out * dim(matmul.getLhs(), matmul.getTransA() ? -2 : -1);
  if (auto conv = dyn_cast<tc::ConvOp>(op)) // weight [Cout, Cin/group, k...]
    return 2.0 * out * elements(conv.getWeight()) / dim(conv.getWeight(), 0);
  // The gradients: as many multiply-adds as the forward, whose output is
  // the result gradient and whose weight is [Cout, Cin/group, k...].
  if (auto data = dyn_cast<tc::ConvBackwardDataOp>(op))
    return 2.0 * elements(data.getResultGrad()) * elements(data.getWeight()) /
           dim(data.getWeight(), 0);
  if (auto filter = dyn_cast<tc::ConvBackwardFilterOp>(op))
    return 2.0 * elements(filter.getResultGrad()) * out / dim(filter.getResult(), 0);
  return 0.0;
}

double trainc::opFlops(Operation *op) {
  if (op->getNumResults() == 0)
    return 0.0;
  if (double flops = isa<tc::FusedOp>(op) ? 0.0 : contractionFlops(op); flops > 0)
    return flops;
  double flops = 0.0;
  for (Value r : op->getResults())
    flops += elements(r);
  return flops;
}

int64_t trainc::opBytes(Operation *op) {
  int64_t bytes = 0;
  for (Value v : op->getOperands())
    bytes += valueBytes(v);
  for (Value v : op->getResults())
    bytes += valueBytes(v);
  return bytes;
}

double trainc::opSeconds(Operation *op) {
  return std::max(opFlops(op) / kReferenceFlops,
                  static_cast<double>(opBytes(op)) / kReferenceBytesPerSecond);
}
