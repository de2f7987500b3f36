//===- Optimizer.cpp - the optimizer phase: fused parameter updates -------===//

#include "ir/TcOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace trainc {
#define GEN_PASS_DEF_OPTIMIZER
#include "passes/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc;

namespace {

Value f32Scalar(OpBuilder &b, Location loc, float value) {
  auto type = RankedTensorType::get({}, b.getF32Type());
  return b.create<tc::ConstantOp>(loc, DenseElementsAttr::get(type, value)).getResult();
}

struct OptimizerPass : trainc::impl::OptimizerBase<OptimizerPass> {
  using OptimizerBase::OptimizerBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = module.lookupSymbol<func::FuncOp>("train_step");
    if (!step)
      return;
    if (clipGradNorm < 0) {
      module.emitError("--clip-grad-norm must be positive, got ") << clipGradNorm;
      return signalPassFailure();
    }
    if (kind != "sgd" && kind != "adam" && kind != "adamw") {
      module.emitError("--optimizer must be sgd, adam or adamw, got '") << kind << "'";
      return signalPassFailure();
    }
    if (step->hasAttr(tc::kOptimizerAttrName))
      return; // already rewritten
    rewrite(step);
    step->setAttr(tc::kOptimizerAttrName, StringAttr::get(&getContext(), kind));
  }

  /// The hyperparameter argument `name` of `step`, added on first use. The
  /// argument itself is the record (no map in the pass: a pass instance runs
  /// on many modules, and a Value kept from one run would belong to another
  /// module's function).
  Value hyper(func::FuncOp step, OpBuilder &b, StringRef name) {
    for (BlockArgument arg : step.getArguments())
      if (auto attr = step.getArgAttrOfType<StringAttr>(arg.getArgNumber(), tc::kHyperAttrName))
        if (attr.getValue() == name)
          return arg;
    auto type = RankedTensorType::get({}, b.getF32Type());
    unsigned index = step.getNumArguments();
    (void)step.insertArgument(index, type,
                              b.getDictionaryAttr(b.getNamedAttr(tc::kHyperAttrName, b.getStringAttr(name))),
                              step.getLoc());
    return step.getArgument(index);
  }

  Value state(func::FuncOp step, OpBuilder &b, Type type, const std::string &name) {
    unsigned index = step.getNumArguments();
    (void)step.insertArgument(index, type,
                              b.getDictionaryAttr(b.getNamedAttr(tc::kStateAttrName, b.getStringAttr(name))),
                              step.getLoc());
    return step.getArgument(index);
  }

  void rewrite(func::FuncOp step) {
    auto ret = cast<func::ReturnOp>(step.getBody().front().getTerminator());
    OpBuilder b(ret);
    Location loc = step.getLoc();

    SmallVector<Value> results = {ret.getOperand(0)};
    SmallVector<DictionaryAttr> attrs = {step.getResultAttrDict(0)};
    Value gradScale;
    if (clipGradNorm > 0) {
      gradScale = clipCoefficient(step, b, NameLoc::get(b.getStringAttr("gradient clipping"), loc),
                                  ret.getOperands());
      step->setAttr("tc.clip_grad_norm", b.getF64FloatAttr(clipGradNorm));
    }
    SmallVector<Value> stateResults;
    SmallVector<DictionaryAttr> stateAttrs;
    auto keepState = [&](Value v, const std::string &name) {
      stateResults.push_back(v);
      stateAttrs.push_back(b.getDictionaryAttr(
          {b.getNamedAttr(tc::kOutputAttrName, b.getStringAttr(name)),
           b.getNamedAttr(tc::kStateUpdateAttrName, b.getStringAttr(name))}));
    };

    for (unsigned i = 1; i < ret.getNumOperands(); ++i) {
      auto symbol = step.getResultAttrOfType<FlatSymbolRefAttr>(i, tc::kGradAttrName);
      if (!symbol) {
        // Not a gradient: running statistics written back as they are.
        if (step.getResultAttr(i, tc::kUpdateAttrName)) {
          results.push_back(ret.getOperand(i));
          attrs.push_back(step.getResultAttrDict(i));
        }
        continue;
      }
      Value g = ret.getOperand(i);
      Value p;
      for (BlockArgument arg : step.getArguments())
        if (step.getArgAttr(arg.getArgNumber(), tc::kParamAttrName) == symbol)
          p = arg;
      std::string name = symbol.getValue().str();
      // The update kernel is named after the parameter it writes.
      Location updateLoc = NameLoc::get(b.getStringAttr("update of " + name), loc);
      Value lr = hyper(step, b, "lr"), wd = hyper(step, b, "weight_decay");
      Value updated;
      if (kind == "sgd") {
        Value momentum = hyper(step, b, "momentum");
        Value buffer = state(step, b, p.getType(), "momentum." + name);
        SmallVector<Value> operands = {p, g, buffer, lr, momentum, wd};
        if (gradScale)
          operands.push_back(gradScale);
        SmallVector<NamedAttribute> flags;
        if (nesterov)
          flags.push_back(b.getNamedAttr("nesterov", b.getUnitAttr()));
        auto update = b.create<tc::SgdUpdateOp>(updateLoc, operands, flags);
        updated = update.getNewParam();
        keepState(update.getNewMomentumBuffer(), "momentum." + name);
      } else {
        Value beta1 = hyper(step, b, "beta1"), beta2 = hyper(step, b, "beta2");
        Value oneMinusBeta1 = hyper(step, b, "one_minus_beta1");
        Value oneMinusBeta2 = hyper(step, b, "one_minus_beta2");
        Value eps = hyper(step, b, "eps");
        Value stepSize = hyper(step, b, "step_size");
        Value bc2Sqrt = hyper(step, b, "bias_correction2_sqrt");
        Value m = state(step, b, p.getType(), "exp_avg." + name);
        Value v = state(step, b, p.getType(), "exp_avg_sq." + name);
        SmallVector<Value> operands = {p,  g,     m,  v,        lr,     beta1,  beta2,
                                       oneMinusBeta1, oneMinusBeta2, eps, wd, stepSize, bc2Sqrt};
        if (gradScale)
          operands.push_back(gradScale);
        SmallVector<NamedAttribute> flags;
        if (kind == "adamw")
          flags.push_back(b.getNamedAttr("decoupled", b.getUnitAttr()));
        auto update = b.create<tc::AdamUpdateOp>(updateLoc, operands, flags);
        updated = update.getNewParam();
        keepState(update.getNewExpAvg(), "exp_avg." + name);
        keepState(update.getNewExpAvgSq(), "exp_avg_sq." + name);
      }
      results.push_back(updated);
      attrs.push_back(b.getDictionaryAttr(
          {b.getNamedAttr(tc::kOutputAttrName, b.getStringAttr("param." + name)),
           b.getNamedAttr(tc::kUpdateAttrName, symbol)}));
    }
    results.append(stateResults.begin(), stateResults.end());
    attrs.append(stateAttrs.begin(), stateAttrs.end());
    b.create<func::ReturnOp>(ret.getLoc(), results);
    ret.erase();
    step.setFunctionType(b.getFunctionType(step.getArgumentTypes(),
                                           ValueRange(results).getTypes()));
    step.setAllResultAttrs(attrs);
  }

  /// torch.nn.utils.clip_grad_norm_: the factor every gradient is scaled by,
  /// min(1, max_norm / (sqrt(sum of all squared gradient elements) + 1e-6));
  /// null when the step has no gradient.
  Value clipCoefficient(func::FuncOp step, OpBuilder &b, Location loc, ValueRange grads) {
    auto all = b.getNamedAttr("axes", b.getDenseI64ArrayAttr({}));
    auto drop = b.getNamedAttr("keepdims", b.getBoolAttr(false));
    Value total;
    for (unsigned i = 1; i < grads.size(); ++i) {
      if (!step.getResultAttr(i, tc::kGradAttrName))
        continue;
      Value squares = b.create<tc::MulOp>(loc, ValueRange{grads[i], grads[i]})->getResult(0);
      Value sum = b.create<tc::ReduceSumOp>(loc, ValueRange{squares}, ArrayRef<NamedAttribute>{all, drop})
                      ->getResult(0);
      total = total ? b.create<tc::AddOp>(loc, ValueRange{total, sum})->getResult(0) : sum;
    }
    if (!total)
      return nullptr;
    Value norm = b.create<tc::SqrtOp>(loc, total)->getResult(0);
    Value denominator = b.create<tc::AddOp>(loc, ValueRange{norm, f32Scalar(b, loc, 1e-6f)})->getResult(0);
    Value ratio = b.create<tc::DivOp>(loc, ValueRange{hyper(step, b, "max_grad_norm"), denominator})
                      ->getResult(0);
    return b.create<tc::MinOp>(loc, ValueRange{ratio, f32Scalar(b, loc, 1.0f)})->getResult(0);
  }
};

} // namespace
