//===- ScalarExpr.h - one element of a pointwise op, as C++ ----*- C++ -*-===//
//
// The per-op scalar-expression table from which kernel groups are composed:
// for each pointwise op (and expand, training dropout, splat constants) the
// C++ expression of one result element from its operands' elements. It knows
// the element types (float gets f-suffixed functions and literals, double
// and the integer types their own forms, i1 is bool) and writes constants as
// literals. The expressions keep PyTorch's NaN behaviour (comments below).
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_CODEGEN_SCALAREXPR_H
#define TRAINC_CODEGEN_SCALAREXPR_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"

#include <string>

namespace trainc::codegen {

/// The expression of element `i` of `op`'s result, given the expressions of
/// the corresponding elements of its operands (`a[k]`, each a variable name
/// or literal of that operand's element type). For a training dropout, a[1]
/// is the pointer to the step's dropout key and `index` the element's linear
/// index. Fails (with a diagnostic on the op) for an op with no rule.
mlir::FailureOr<std::string> scalarExpression(mlir::Operation *op,
                                              llvm::ArrayRef<std::string> a,
                                              llvm::StringRef index);

/// The literal of a splat constant's value in its element type.
std::string splatLiteral(mlir::DenseElementsAttr value);

} // namespace trainc::codegen

#endif // TRAINC_CODEGEN_SCALAREXPR_H
