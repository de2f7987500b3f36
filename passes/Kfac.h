//===- Kfac.h - K-FAC: Kronecker-factored preconditioning ------*- C++ -*-===//
//
// --optimizer=kfac (Martens and Grosse 2015; convolutions as KFC, Grosse and
// Martens 2016). Two halves:
//
// - Autodiff (captureKfacRows) returns, for each Gemm, MatMul and ungrouped
//   NCHW Conv whose weight is a trained parameter, the layer's input rows X
//   [R, K] (a convolution's patches, found by convolving with a one-hot
//   kernel: exact) and its output-gradient rows D [R, M], both as they
//   already exist in the step, as results marked tc.kfac_input and
//   tc.kfac_output_grad.
// - The optimizer phase (preconditionKfac) turns them into the factors'
//   running averages A (with a bias column) and G, inverts them every few
//   steps (tc.damped_inverse), preconditions each such weight's gradient
//   (and its bias's) as G^-1 [dW db] A^-1, scales every preconditioned
//   gradient by the KL clip, and drops the captured results. The updates
//   are then SGD's, with momentum and weight decay.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_PASSES_KFAC_H
#define TRAINC_PASSES_KFAC_H

#include "ir/TcOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <functional>
#include <string>

namespace trainc {

// The attributes of the captured rows (ir/TcOps.h).
using tc::kKfacBiasAttrName;
using tc::kKfacInputAttrName;
using tc::kKfacLayoutAttrName;
using tc::kKfacOutputGradAttrName;
using tc::kKfacPlainAttrName;
using tc::kKfacSamplesAttrName;

/// One layer's captured rows, as autodiff returns them.
struct KfacCapture {
  mlir::Value rows, outputGrads;
  mlir::DictionaryAttr rowsAttrs, outputGradAttrs;
};

/// Autodiff: the rows of forward op `op` (a Gemm, MatMul or Conv) whose
/// result gradient is `dy`, built at `b`'s insertion point, if its weight is
/// one of the trained parameter arguments `trained`; else nothing, and
/// `why` says why where the weight is trained (K-FAC leaves it to SGD).
std::optional<KfacCapture> captureKfacRows(mlir::func::FuncOp step, mlir::OpBuilder &b,
                                           mlir::Operation *op, mlir::Value dy,
                                           llvm::function_ref<bool(mlir::Value)> trained,
                                           std::string &why);

/// The optimizer phase: replaces `grads[i]` of each captured layer's weight
/// (and bias) by its preconditioned, KL-clipped gradient. `keepState`
/// records a state's next value by name. `notes` gets, per trained weight of
/// a Gemm, MatMul or Conv that keeps its plain gradient, why.
mlir::LogicalResult
preconditionKfac(mlir::func::FuncOp step, mlir::OpBuilder &b, mlir::ValueRange returned,
                 llvm::SmallVectorImpl<mlir::Value> &grads,
                 const std::function<void(mlir::Value, const std::string &)> &keepState,
                 llvm::SmallVectorImpl<std::string> &notes);

} // namespace trainc

#endif // TRAINC_PASSES_KFAC_H
