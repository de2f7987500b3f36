//===- OpChain.h - building chains of tc ops for one node ------*- C++ -*-===//
//
// Converters that decompose an ONNX op into several tc ops build them through
// an OpChain: each call takes operands that may be failures and returns a
// failure after the first one, so a chain of calls needs one check at its end.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_FRONTEND_OPCHAIN_H
#define TRAINC_FRONTEND_OPCHAIN_H

#include "frontend/Importer.h"

#include "ir/TcOps.h"

namespace trainc::frontend {

class OpChain {
public:
  explicit OpChain(NodeContext &ctx) : ctx(ctx) {}

  /// A single-result tc op of `operands` (the first failed one fails it).
  template <typename OpTy>
  mlir::FailureOr<mlir::Value> op(llvm::ArrayRef<mlir::FailureOr<mlir::Value>> operands,
                                  llvm::ArrayRef<mlir::NamedAttribute> attrs = {}) {
    llvm::SmallVector<mlir::Value> values;
    for (const mlir::FailureOr<mlir::Value> &v : operands) {
      if (mlir::failed(v))
        return mlir::failure();
      values.push_back(*v);
    }
    mlir::FailureOr<mlir::Operation *> made = ctx.create<OpTy>(values, attrs);
    if (mlir::failed(made))
      return mlir::failure();
    return (*made)->getResult(0);
  }

  /// A rank-0 constant of `like`'s element type.
  mlir::Value scalar(mlir::Value like, double value);
  /// `v` reshaped to `shape`.
  mlir::FailureOr<mlir::Value> reshape(mlir::FailureOr<mlir::Value> v,
                                       llvm::ArrayRef<int64_t> shape);
  /// v[start:end] along `axis`, every other axis whole.
  mlir::FailureOr<mlir::Value> slice(mlir::FailureOr<mlir::Value> v, int64_t axis,
                                     int64_t start, int64_t end);
  /// `parts` joined along `axis` (one part is returned as it is).
  mlir::FailureOr<mlir::Value> concat(llvm::ArrayRef<mlir::FailureOr<mlir::Value>> parts,
                                      int64_t axis);
  /// `v` with its axes permuted.
  mlir::FailureOr<mlir::Value> transpose(mlir::FailureOr<mlir::Value> v,
                                         llvm::ArrayRef<int64_t> perm);

  NodeContext &node() { return ctx; }

private:
  NodeContext &ctx;
};

/// Binds `value` to output 0 of the node.
mlir::LogicalResult bindOutput(NodeContext &ctx, mlir::FailureOr<mlir::Value> value);

} // namespace trainc::frontend

#endif // TRAINC_FRONTEND_OPCHAIN_H
