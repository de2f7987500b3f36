//===- PlanMemory.cpp - static memory plan: one arena, compile-time offsets ===//
//
// Lifetimes come from BufferLiveness (Liveness.h): the op order is the
// schedule.
// Offsets are chosen greedy-by-size: buffers sorted by size, largest first,
// each placed at the lowest aligned offset that does not overlap a buffer
// already placed whose lifetime intersects its own. On the straight-line
// graphs of a training step this stays close to the peak of live bytes.
// A concat of contiguous pieces gets its operands computed in its own
// buffer (BufferLiveness::concatInPlace) and is marked tc.in_place: an
// LSTM's per-step gate gradients land in the rows the weight gradient's
// one GEMM reads.
//
//===----------------------------------------------------------------------===//

#include "ir/TcOps.h"
#include "passes/Liveness.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/DenseMap.h"

#include <algorithm>

namespace trainc {
#define GEN_PASS_DEF_PLANMEMORY
#include "passes/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc;

namespace {

struct PlanMemoryPass : trainc::impl::PlanMemoryBase<PlanMemoryPass> {
  using PlanMemoryBase::PlanMemoryBase;

  void runOnOperation() override {
    if (alignment < 1 || (alignment & (alignment - 1))) {
      getOperation().emitError("trainc-plan: alignment must be a power of two");
      return signalPassFailure();
    }
    getOperation().walk([&](func::FuncOp func) { planFunction(func); });
  }

  void planFunction(func::FuncOp func) {
    if (func.isExternal())
      return;
    Block &body = func.getBody().front();
    const BufferLiveness &liveness = getChildAnalysis<BufferLiveness>(func);
    llvm::ArrayRef<BufferLife> buffers = liveness.buffers();

    // Greedy placement, lowest fitting offset, in four orders (largest
    // first; largest lifetime x size first; first defined first; last
    // used first), keeping
    // the smallest arena: one order alone is a heuristic that a removed or
    // added buffer can make worse.
    std::vector<unsigned> bySize(buffers.size());
    for (unsigned i = 0; i < bySize.size(); ++i)
      bySize[i] = i;
    std::vector<unsigned> byArea = bySize, byStart = bySize, byEnd = bySize;
    std::stable_sort(bySize.begin(), bySize.end(), [&](unsigned a, unsigned b) {
      return buffers[a].bytes > buffers[b].bytes;
    });
    auto area = [&](const BufferLife &b) { return b.bytes * (b.last - b.first + 1); };
    std::stable_sort(byArea.begin(), byArea.end(), [&](unsigned a, unsigned b) {
      return area(buffers[a]) > area(buffers[b]);
    });
    // Longest-lived last: buffers that die late stack above the early ones.
    std::stable_sort(byEnd.begin(), byEnd.end(), [&](unsigned a, unsigned b) {
      return buffers[a].last > buffers[b].last ||
             (buffers[a].last == buffers[b].last && buffers[a].bytes > buffers[b].bytes);
    });
    int64_t arena = -1;
    std::vector<int64_t> best;
    for (const std::vector<unsigned> *order : {&bySize, &byArea, &byStart, &byEnd}) {
      std::vector<int64_t> offsets;
      int64_t size = place(buffers, *order, offsets);
      if (arena < 0 || size < arena) {
        arena = size;
        best = std::move(offsets);
      }
    }

    OpBuilder builder(func.getContext());
    for (Operation &op : body) {
      if (op.getNumResults() == 0 || isa<tc::ConstantOp>(op))
        continue;
      SmallVector<int64_t> offsets;
      for (OpResult result : op.getResults()) {
        if (auto member = liveness.bucketMemberOf(result)) {
          // A gradient bucket or an in-place concat: its members side by
          // side in one buffer.
          offsets.push_back(best[member->first] + member->second);
          continue;
        }
        std::optional<unsigned> buffer = liveness.bufferOf(result);
        offsets.push_back(buffer ? best[*buffer] : -1);
      }
      op.setAttr(tc::kOffsetsAttrName, builder.getDenseI64ArrayAttr(offsets));
      if (liveness.concatInPlace(&op))
        op.setAttr(tc::kInPlaceAttrName, builder.getUnitAttr());
    }
    func->setAttr(tc::kArenaBytesAttrName, builder.getI64IntegerAttr(alignUp(arena)));
  }

  /// Places the buffers in `order` at the lowest aligned offset that does
  /// not overlap a placed buffer alive at the same time; returns the arena
  /// size and each buffer's offset.
  int64_t place(llvm::ArrayRef<BufferLife> buffers, const std::vector<unsigned> &order,
                std::vector<int64_t> &offsets) const {
    offsets.assign(buffers.size(), -1);
    std::vector<unsigned> placed;
    int64_t arena = 0;
    for (unsigned i : order) {
      const BufferLife &buffer = buffers[i];
      // Intervals [offset, end) of placed buffers alive at the same time.
      std::vector<std::pair<int64_t, int64_t>> busy;
      for (unsigned j : placed) {
        const BufferLife &other = buffers[j];
        if (other.last >= buffer.first && buffer.last >= other.first)
          busy.emplace_back(offsets[j], offsets[j] + other.bytes);
      }
      std::sort(busy.begin(), busy.end());
      int64_t candidate = 0;
      for (auto [begin, end] : busy) {
        if (candidate + buffer.bytes <= begin)
          break;
        candidate = std::max(candidate, alignUp(end));
      }
      offsets[i] = candidate;
      arena = std::max(arena, candidate + buffer.bytes);
      placed.push_back(i);
    }
    return arena;
  }

  int64_t alignUp(int64_t v) const {
    int64_t a = alignment;
    return (v + a - 1) / a * a;
  }
};

} // namespace
