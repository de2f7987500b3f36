//===- OpCost.h - what an op costs, estimated --------------------*- C++ -*-===//
//
// A roofline estimate of one op's forward time: its floating-point
// operations at kReferenceFlops, or its bytes read and written at
// kReferenceBytesPerSecond, whichever is longer. The pipeline phase
// balances its stages with it (a relative measure: the rates are a
// reference device's, not the target's). The trainer's --profile reports
// each call's rate from the same counts (contractionFlops, opBytes).
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_IR_OPCOST_H
#define TRAINC_IR_OPCOST_H

#include "mlir/IR/Operation.h"

#include <cstdint>

namespace trainc {

/// The reference device: 20 TFLOP/s and 1 TB/s.
inline constexpr double kReferenceFlops = 20e12;
inline constexpr double kReferenceBytesPerSecond = 1e12;

/// Floating-point operations of `op`'s forward: 2 per multiply-add of a
/// contraction (GEMM, matrix product, convolution), one per result element
/// elsewhere.
double opFlops(mlir::Operation *op);
/// Floating-point operations of a contraction, 2 per multiply-add: a GEMM,
/// a matrix product, a convolution or either of its gradients, or a
/// tc.fused group headed by one of them (its epilogue not counted). 0 for
/// any other op.
double contractionFlops(mlir::Operation *op);
/// Bytes of `op`'s tensor operands and results.
int64_t opBytes(mlir::Operation *op);
/// Seconds of `op`'s forward at the reference rates.
double opSeconds(mlir::Operation *op);
/// Bytes of a ranked tensor value (0 for anything else).
int64_t valueBytes(mlir::Value v);

} // namespace trainc

#endif // TRAINC_IR_OPCOST_H
