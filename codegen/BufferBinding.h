//===- BufferBinding.h - where each value of an emitted function lives -*- C++ -*-===//
//
// Private to codegen/. Every value of the function being emitted has a C++
// pointer expression: an argument its table entry (input, hyperparameter,
// optimizer state, parameter; declareArguments binds them), a result the
// buffer the plan placed it in (`tc.offsets`: an arena offset), and a result
// the plan gave no buffer (offset -1) the buffer of the operand it is tied
// to, read through TiedOpInterface: a view's source, or the argument an
// in-place update overwrites. A GEMM whose gradient accumulation the plan
// folded into it writes the accumulator.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_CODEGEN_BUFFERBINDING_H
#define TRAINC_CODEGEN_BUFFERBINDING_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <string>

namespace trainc::codegen {

class BufferBinding {
public:
  /// Forgets the previous function's values.
  void clear() {
    names.clear();
    inPlaceResults.clear();
    direct.clear();
  }
  /// Places `v`, a result the plan gave no buffer (tc::isPlacedOutput), at
  /// the C++ expression `dst`: the output's buffer, which its op writes.
  void placeAt(mlir::Value v, std::string dst) { direct[v] = std::move(dst); }
  /// Whether `v` was placed by placeAt.
  bool placed(mlir::Value v) const { return direct.count(v); }
  /// Binds `v` to the C++ expression `name`.
  void bind(mlir::Value v, std::string name) { names[v] = std::move(name); }
  /// The C++ expression of `v` ("" if it has none).
  std::string ptr(mlir::Value v) const { return names.lookup(v); }
  /// Whether `v` is an update written over the argument it replaces.
  bool inPlace(mlir::Value v) const { return inPlaceResults.contains(v); }

  /// Binds the results of `op` (its planned offsets checked): a result with
  /// an arena offset is declared in `body` as a pointer into the arena; one
  /// placed by placeAt gets its expression; one
  /// without gets the pointer of the operand it replaces or views, or of
  /// `accumulator` (a GEMM that accumulates into it; null otherwise).
  mlir::LogicalResult bindResults(mlir::Operation *op, std::string &body,
                                  mlir::Value accumulator);

private:
  llvm::DenseMap<mlir::Value, std::string> names;
  llvm::DenseSet<mlir::Value> inPlaceResults;
  llvm::DenseMap<mlir::Value, std::string> direct;
};

} // namespace trainc::codegen

#endif // TRAINC_CODEGEN_BUFFERBINDING_H
