//===- Liveness.h - buffer lifetimes of a function, by kind ----*- C++ -*-===//
//
// The analysis the memory plan, the memory report and the passes that trade
// memory for compute share: which results of a function's body need a buffer
// of their own (not a view, an in-place update or a constant), how many
// bytes, and from which op to which op (in the body's order, which is the
// schedule) each is live. In @train_step each buffer also has a kind: a
// forward value the backward reads (saved for the backward), a parameter's
// gradient, or a temporary.
//
// Usable as an MLIR analysis (getAnalysis<BufferLiveness>() on a
// func::FuncOp) or on its own.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_PASSES_LIVENESS_H
#define TRAINC_PASSES_LIVENESS_H

#include "mlir/IR/Location.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace trainc {

enum class BufferKind {
  /// Defined in the forward and read by an op of the backward (the return
  /// alone does not count: the loss is an output).
  Saved,
  /// A parameter's gradient: an optimizer update's gradient operand, or a
  /// result returned as tc.grad.
  Gradient,
  /// A parameter's low-precision copy (--precision: its tc.cast), which
  /// both the forward and the backward read.
  WeightCopy,
  /// Everything else: forward values that die in the forward, the
  /// backward's intermediate values, outputs.
  Temporary,
};

llvm::StringRef bufferKindName(BufferKind kind);

/// The bytes of a ranked tensor type's buffer (i1 is stored as one byte).
int64_t tensorBytes(mlir::Type type);


/// Whether `loc` is the location autodiff gives the ops of the backward
/// ("backward of <node>"), the one remat gives what it recomputes there
/// ("recompute of <node>"), or a fused location that holds one: marked
/// #tc.phase (tc::markedPhase), whatever the names say.
bool isBackwardLoc(mlir::Location loc);

/// Moves each of `ops` (in block order) to just before its first reader in
/// its block, the last first, so that a chain lands in order: what only
/// arguments feed is computed where it is needed, not kept from the start.
void sinkToFirstReaders(llvm::ArrayRef<mlir::Operation *> ops);

struct BufferLife {
  mlir::Value value;     // the result that owns the buffer
  int64_t bytes = 0;     // i1 is stored as one byte; a bucket's members summed
  int64_t first = 0;     // index of the op that defines it
  int64_t last = 0;      // index of its last reader (views' readers included)
  BufferKind kind = BufferKind::Temporary;
};

class BufferLiveness {
public:
  /// `op` is a func::FuncOp with a body.
  explicit BufferLiveness(mlir::Operation *op);

  llvm::ArrayRef<BufferLife> buffers() const { return lives; }
  /// The buffer `result` owns, or none (a view, an in-place update, a
  /// constant, a bucket's member after the first, or not a result of the
  /// body).
  std::optional<unsigned> bufferOf(mlir::Value result) const;
  /// A gradient bucket's member (a result of tc.all_reduce), or an operand
  /// of a concat computed in place (concatInPlace): the buffer of the whole
  /// bucket or concat and the member's byte offset in it. None for any
  /// other value.
  std::optional<std::pair<unsigned, int64_t>> bucketMemberOf(mlir::Value result) const;
  /// Whether the operands of `concat` (a tc.concat of the body) are
  /// computed where the concat puts them, in its own buffer: it copies
  /// nothing. So are the concats whose pieces are each one contiguous run
  /// of the result (every axis before the concat's has size 1) and whose
  /// operands are results of the body's ops that own their buffers, read
  /// by no other such concat, at offsets that keep kBucketMemberAlignment.
  bool concatInPlace(mlir::Operation *concat) const;
  /// The number of ops in the body (terminator included).
  int64_t opCount() const { return ops; }
  /// Index of the backward's first op, or -1 in a function with no backward.
  int64_t backwardBegin() const { return boundary; }
  /// Bytes live while op `index` runs, all kinds or one.
  int64_t liveBytes(int64_t index) const;
  int64_t liveBytes(int64_t index, BufferKind kind) const;
  /// The op at which the most bytes are live (the first such), and how many.
  int64_t peakIndex() const { return peakAt; }
  int64_t peakBytes() const { return liveBytes(peakAt); }
  /// Bytes of every buffer of a kind, live at the same time or not.
  int64_t totalBytes(BufferKind kind) const;

private:
  std::vector<BufferLife> lives;
  llvm::DenseMap<mlir::Value, unsigned> owner;
  llvm::DenseMap<mlir::Value, std::pair<unsigned, int64_t>> members;
  /// In-place concats' operands: the concat's result and the byte offset.
  llvm::DenseMap<mlir::Value, std::pair<mlir::Value, int64_t>> concatPieces;
  llvm::DenseSet<mlir::Operation *> inPlaceConcats;
  void findInPlaceConcats(mlir::Block &body);
  int64_t ops = 0, boundary = -1, peakAt = 0;
};

} // namespace trainc

#endif // TRAINC_PASSES_LIVENESS_H
