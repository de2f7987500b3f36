//===- Tensor.h - host tensors of the importer -----------------*- C++ -*-===//
//
// A small host tensor: initializer data read from the model, and the values
// that the importer folds at import time (shape sub-graphs, constants). No
// ONNX or MLIR types here.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_FRONTEND_TENSOR_H
#define TRAINC_FRONTEND_TENSOR_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace trainc::frontend {

/// Element types the tc dialect knows.
enum class DType { F32, F16, BF16, F64, I64, I32, I1 };

llvm::StringRef dtypeName(DType type);
size_t dtypeSize(DType type);
bool isFloat(DType type);

class Tensor {
public:
  Tensor() = default;
  Tensor(DType dtype, llvm::ArrayRef<int64_t> shape);

  DType dtype() const { return type; }
  llvm::ArrayRef<int64_t> shape() const { return dims; }
  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  int64_t numElements() const { return count; }

  /// Little-endian element storage in the layout MLIR uses, except that i1
  /// takes one byte per element.
  llvm::ArrayRef<char> bytes() const { return storage; }
  char *mutableBytes() { return storage.data(); }

  double real(int64_t i) const;
  int64_t integer(int64_t i) const;
  /// Stores `v` converted to the element type (round to nearest for floats,
  /// truncation toward zero for integers, v != 0 for i1).
  void setReal(int64_t i, double v);
  void setInteger(int64_t i, int64_t v);

  /// All elements as integers (truncating floats).
  std::vector<int64_t> integers() const;

  /// Same elements, another shape with the same element count.
  Tensor reshaped(llvm::ArrayRef<int64_t> newShape) const;
  /// Element-wise conversion.
  Tensor castTo(DType target) const;

  static Tensor fromIntegers(DType dtype, llvm::ArrayRef<int64_t> shape,
                             llvm::ArrayRef<int64_t> values);
  static Tensor scalarReal(DType dtype, double v);

private:
  DType type = DType::F32;
  llvm::SmallVector<int64_t> dims;
  int64_t count = 1;
  std::vector<char> storage;
};

/// Calls `fn(outIndex, inOffsets)` for every element of the broadcast of
/// `inputs` (numpy rules) whose shape is `outShape`.
void forEachBroadcast(llvm::ArrayRef<int64_t> outShape,
                      llvm::ArrayRef<llvm::ArrayRef<int64_t>> inputs,
                      const std::function<void(int64_t, llvm::ArrayRef<int64_t>)> &fn);

/// Row-major strides of a shape.
llvm::SmallVector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape);

} // namespace trainc::frontend

#endif // TRAINC_FRONTEND_TENSOR_H
