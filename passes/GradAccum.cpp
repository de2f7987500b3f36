//===- GradAccum.cpp - gradient accumulation: @accumulate_step ------------===//
//
// K micro-batches per optimizer step. The trainer runs @accumulate_step on
// every micro-batch of a group but the last and @train_step on the last;
// both fold the micro-batch's gradient into an f32 accumulator with one
// tc.accumulate_grad each (see Passes.td). The functions do not depend on
// K, so one program serves any K the trainer is given.
//
//===----------------------------------------------------------------------===//

#include "ir/StepAbi.h"
#include "ir/TcOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace trainc {
#define GEN_PASS_DEF_GRADACCUM
#include "passes/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc;

namespace {

struct GradAccumPass : trainc::impl::GradAccumBase<GradAccumPass> {
  using GradAccumBase::GradAccumBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (microBatches < 1) {
      module.emitError("--grad-accum must be at least 1, got ") << std::to_string(microBatches);
      return signalPassFailure();
    }
    auto step = module.lookupSymbol<func::FuncOp>("train_step");
    if (microBatches == 1 || !step || module.lookupSymbol("accumulate_step"))
      return;
    if (step->hasAttr(tc::kOptimizerAttrName)) {
      step.emitError("gradient accumulation runs before the optimizer phase (@train_step "
                     "already updates its parameters)");
      return signalPassFailure();
    }
    Builder b(&getContext());
    Value weight = tc::getOrAddHyper(step, tc::Hyper::GradAccumWeight);
    Value keep = tc::getOrAddHyper(step, tc::Hyper::GradAccumKeep);

    // One accumulator per gradient the step returns, folded in just after
    // the op that completes the gradient (its buffer is then free for the
    // rest of the backward, as PyTorch's accumulation into .grad).
    auto ret = cast<func::ReturnOp>(step.getBody().front().getTerminator());
    SmallVector<std::pair<unsigned, std::string>> accumulated; // result, state name
    for (unsigned k = 0; k < ret.getNumOperands(); ++k) {
      auto param = step.getResultAttrOfType<FlatSymbolRefAttr>(k, tc::kGradAttrName);
      if (!param)
        continue;
      Value grad = ret.getOperand(k);
      auto type = dyn_cast<RankedTensorType>(grad.getType());
      if (!type || !type.getElementType().isF32()) {
        step.emitError("gradient accumulation needs f32 gradients; the gradient of @")
            << param.getValue() << " is " << grad.getType();
        return signalPassFailure();
      }
      std::string name = tc::stateName(tc::StateRole::GradAccum, param.getValue());
      Value acc = tc::addState(step, type, tc::StateRole::GradAccum, param.getValue());
      OpBuilder at(ret);
      if (Operation *def = grad.getDefiningOp())
        at.setInsertionPointAfter(def);
      Location loc = NameLoc::get(b.getStringAttr("gradient accumulation of " +
                                                  param.getValue()),
                                  grad.getLoc());
      Value total = at.create<tc::AccumulateGradOp>(loc, type, acc, grad, weight, keep);
      ret.setOperand(k, total);
      accumulated.emplace_back(k, name);
    }
    if (accumulated.empty()) {
      step.emitError("gradient accumulation: @train_step returns no gradient");
      return signalPassFailure();
    }
    step->setAttr(tc::kGradAccumAttrName, b.getI64IntegerAttr(microBatches));

    // @accumulate_step: the same function, whose accumulated gradients are
    // the accumulator states' next values instead of the optimizer's input.
    OpBuilder top(module.getBody(), std::next(Block::iterator(step)));
    auto accumulate = cast<func::FuncOp>(top.clone(*step));
    accumulate.setSymName("accumulate_step");
    accumulate->removeAttr(tc::kGradAccumAttrName);
    for (const auto &[k, name] : accumulated)
      accumulate.setResultAttrs(k, stateUpdate(name));

    // @train_step writes the accumulated gradients back to their states
    // too: the sums go to the accumulators' buffers in place instead of a
    // second gradient-sized buffer each (what the states hold after the
    // step does not matter: the next group's first micro-batch overwrites
    // them).
    SmallVector<Value> results(ret.getOperands());
    SmallVector<DictionaryAttr> attrs;
    for (unsigned k = 0; k < ret.getNumOperands(); ++k)
      attrs.push_back(step.getResultAttrDict(k));
    for (const auto &[k, name] : accumulated) {
      results.push_back(ret.getOperand(k));
      attrs.push_back(stateUpdate(name));
    }
    OpBuilder end(ret);
    end.create<func::ReturnOp>(ret.getLoc(), results);
    ret.erase();
    step.setFunctionType(b.getFunctionType(step.getArgumentTypes(), ValueRange(results).getTypes()));
    step.setAllResultAttrs(attrs);
  }

  DictionaryAttr stateUpdate(StringRef name) {
    Builder b(&getContext());
    return b.getDictionaryAttr({b.getNamedAttr(tc::kOutputAttrName, b.getStringAttr(name)),
                                b.getNamedAttr(tc::kStateUpdateAttrName, b.getStringAttr(name))});
  }
};

} // namespace
