//===- AllReduce.cpp - data parallelism: gradients averaged over ranks -----===//
//
// The allreduce phase (Passes.td has the rules): @train_step's gradients,
// in the order the backward completes them, are grouped into buckets of at
// most `bucket-bytes`, and each bucket is averaged over the processes of the
// run by one tc.all_reduce placed right after the op that completes its last
// gradient, so that the communication of a bucket can overlap the rest of
// the backward (as PyTorch DDP's buckets do).
//
//===----------------------------------------------------------------------===//

#include "ir/StepAbi.h"
#include "ir/TcOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/DenseMap.h"

#include <algorithm>

namespace trainc {
#define GEN_PASS_DEF_ALLREDUCE
#include "passes/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc;

namespace {

int64_t bytesOf(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  return type.getNumElements() * std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
}

struct AllReducePass : trainc::impl::AllReduceBase<AllReducePass> {
  using AllReduceBase::AllReduceBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (bucketBytes < 1 || firstBucketBytes < 1) {
      module.emitError("the allreduce phase needs bucket sizes of at least 1 byte, got ")
          << static_cast<int64_t>(bucketBytes) << " and a first bucket of "
          << static_cast<int64_t>(firstBucketBytes);
      return signalPassFailure();
    }
    auto step = module.lookupSymbol<func::FuncOp>("train_step");
    if (!step || step->hasAttr(tc::kDataParallelAttrName))
      return;
    if (step->hasAttr(tc::kOptimizerAttrName)) {
      step.emitError("the allreduce phase runs before the optimizer phase (@train_step "
                     "already updates its parameters)");
      return signalPassFailure();
    }
    Block &body = step.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());

    // The values to average: every gradient the step returns, once (with
    // gradient accumulation a total is returned twice: to the optimizer and
    // to its accumulator). The loss stays local: the trainer averages the
    // logged losses over the ranks on the host, micro-batches included.
    SmallVector<Value> values;
    llvm::DenseSet<Value> seen;
    for (unsigned k = 0; k < ret.getNumOperands(); ++k) {
      if (!step.getResultAttr(k, tc::kGradAttrName))
        continue;
      Value v = ret.getOperand(k);
      auto type = dyn_cast<RankedTensorType>(v.getType());
      if (!type || !isa<FloatType>(type.getElementType())) {
        step.emitError("data parallelism averages float gradients; result ")
            << k << " is " << v.getType();
        return signalPassFailure();
      }
      if (seen.insert(v).second)
        values.push_back(v);
    }
    if (values.empty()) {
      step.emitError("data parallelism: @train_step returns no gradient (every parameter "
                     "frozen?)");
      return signalPassFailure();
    }

    // The backward's order: by the position of the op that completes each
    // value (arguments first).
    llvm::DenseMap<Operation *, unsigned> position;
    unsigned index = 0;
    for (Operation &op : body)
      position[&op] = index++;
    auto at = [&](Value v) -> int64_t {
      Operation *def = v.getDefiningOp();
      return def ? static_cast<int64_t>(position.lookup(def)) : -1;
    };
    llvm::stable_sort(values, [&](Value a, Value b) { return at(a) < at(b); });

    // Buckets in that order, each at most bucketBytes, the first at most
    // firstBucketBytes (a larger gradient is a bucket of its own).
    SmallVector<SmallVector<Value>> buckets;
    int64_t filled = 0;
    for (Value v : values) {
      int64_t bytes = bytesOf(v);
      int64_t cap = buckets.size() == 1 ? std::min<int64_t>(bucketBytes, firstBucketBytes)
                                        : static_cast<int64_t>(bucketBytes);
      if (buckets.empty() || (filled > 0 && filled + bytes > cap)) {
        buckets.emplace_back();
        filled = 0;
      }
      buckets.back().push_back(v);
      filled += bytes;
    }

    Builder b(&getContext());
    Value scale = tc::getOrAddHyper(step, tc::Hyper::DataParallelScale);

    for (auto [k, bucket] : llvm::enumerate(buckets)) {
      // Right after the op that completes the bucket's last value.
      OpBuilder builder(ret);
      Value last = bucket.back();
      if (Operation *def = last.getDefiningOp())
        builder.setInsertionPointAfter(def);
      else
        builder.setInsertionPointToStart(&body);
      Location loc = NameLoc::get(b.getStringAttr("all-reduce of bucket " + std::to_string(k)),
                                  last.getLoc());
      auto reduce = builder.create<tc::AllReduceOp>(loc, ValueRange(bucket).getTypes(), bucket,
                                                    scale, b.getI64IntegerAttr(k));
      // Only the step's results read the averages: the backward itself
      // goes on with the local gradients.
      for (auto [local, mean] : llvm::zip(bucket, reduce.getResults()))
        for (OpOperand &use : ret->getOpOperands())
          if (use.get() == local)
            use.set(mean);
    }
    step->setAttr(tc::kDataParallelAttrName, b.getI64IntegerAttr(static_cast<int64_t>(buckets.size())));
  }
};

} // namespace
