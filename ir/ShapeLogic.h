//===- ShapeLogic.h - shape arithmetic shared across trainc -----*- C++ -*-===//
//
// Pure shape arithmetic (broadcasting, convolution and pooling windows,
// matmul), free of MLIR so that the dialect, the importer and the runtime all
// compute shapes with the same code.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_IR_SHAPELOGIC_H
#define TRAINC_IR_SHAPELOGIC_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <optional>
#include <string>

namespace trainc::shape {

/// Numpy/ONNX multidirectional broadcast of two shapes; std::nullopt if a pair
/// of dimensions is neither equal nor 1.
std::optional<llvm::SmallVector<int64_t>> broadcast(llvm::ArrayRef<int64_t> a,
                                                    llvm::ArrayRef<int64_t> b);

/// Number of elements of a shape; std::nullopt on a negative dimension or on
/// overflow past 2^62.
std::optional<int64_t> numElements(llvm::ArrayRef<int64_t> shape);

/// The channels-first view [N, C, spatial...] of a shape stored
/// channels-last, [N, spatial..., C] (a weight's OHWI reads as OIHW); shapes
/// of rank < 3 are returned as they are.
llvm::SmallVector<int64_t> channelsFirst(llvm::ArrayRef<int64_t> shape);

/// The inverse of channelsFirst: [N, C, spatial...] stored channels-last.
llvm::SmallVector<int64_t> channelsLast(llvm::ArrayRef<int64_t> shape);

/// Output length of a sliding window (convolution or pooling) over one axis.
/// Returns a value < 1 when the window does not fit.
int64_t windowOutputSize(int64_t input, int64_t kernel, int64_t stride,
                         int64_t padBegin, int64_t padEnd, int64_t dilation,
                         bool ceilMode);

/// Result shape of numpy matmul; on failure returns std::nullopt and sets
/// `error` to a sentence describing the mismatch.
std::optional<llvm::SmallVector<int64_t>>
matmul(llvm::ArrayRef<int64_t> lhs, llvm::ArrayRef<int64_t> rhs,
       std::string &error);

/// Number of elements of a strided slice of one axis, with `start` and `end`
/// already clamped as ONNX Slice does.
int64_t sliceLength(int64_t start, int64_t end, int64_t step);

/// Clamps ONNX Slice's start/end for an axis of size `dim` and a step (ONNX
/// Slice-13 rules: negative values count from the end, then clamp to [0, dim]
/// for positive steps; for negative steps the start clamps to [0, dim-1] and
/// the end to [-1, dim-1]).
void clampSliceBounds(int64_t dim, int64_t step, int64_t &start, int64_t &end);

/// Result shape of a pad (ONNX Pad, `pads` = begin pads of every axis then
/// end pads; a negative pad crops). On failure returns std::nullopt and sets
/// `error` to a sentence naming the axis.
std::optional<llvm::SmallVector<int64_t>> pad(llvm::ArrayRef<int64_t> in,
                                              llvm::ArrayRef<int64_t> pads,
                                              std::string &error);

/// Result shape of a tile (ONNX Tile): dimension d times repeats[d]. On
/// failure returns std::nullopt and sets `error`.
std::optional<llvm::SmallVector<int64_t>> tile(llvm::ArrayRef<int64_t> in,
                                               llvm::ArrayRef<int64_t> repeats,
                                               std::string &error);

/// The input index that position `at` of a padded axis reads (`size` the
/// input axis, `begin` its begin pad), or -1 where a constant pad writes its
/// value. `mode` is 0 constant, 1 reflect, 2 edge, 3 wrap; reflect needs
/// begin, end < size, edge and wrap size > 0.
int64_t padSource(int64_t at, int64_t size, int64_t begin, int mode);

/// Formats a shape as "2x3x4" (or "scalar" for rank 0).
std::string format(llvm::ArrayRef<int64_t> shape);

} // namespace trainc::shape

#endif // TRAINC_IR_SHAPELOGIC_H
