//===- Optimizer.cpp - the optimizer phase: fused parameter updates -------===//

#include "ir/StepAbi.h"
#include "ir/TcOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

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

  /// --optimizer, parsed.
  tc::Optimizer optimizer = tc::Optimizer::Sgd;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = module.lookupSymbol<func::FuncOp>("train_step");
    if (!step)
      return;
    if (clipGradNorm < 0) {
      module.emitError("--clip-grad-norm must be positive, got ") << clipGradNorm;
      return signalPassFailure();
    }
    std::optional<tc::Optimizer> parsed = tc::symbolizeOptimizer(kind);
    if (!parsed) {
      module.emitError("--optimizer must be sgd, adam or adamw, got '") << kind << "'";
      return signalPassFailure();
    }
    optimizer = *parsed;
    if (step->hasAttr(tc::kOptimizerAttrName))
      return; // already rewritten
    rewrite(step);
    if (earlyUpdates)
      scheduleUpdates(step);
    step->setAttr(tc::kOptimizerAttrName, tc::OptimizerAttr::get(&getContext(), optimizer));
  }

  /// Moves each update up to just after the last op it must follow: the
  /// producers of its operands and every other reader of the parameter and
  /// the state it overwrites in place. Without clipping or loss scaling
  /// (whose factors need every gradient) that is as soon as its gradient is
  /// complete and the backward has read the parameter for the last time, as
  /// PyTorch's optimizer-in-backward hooks do: the gradient's buffer is free
  /// for the rest of the backward instead of all gradients being live at
  /// its end. The arithmetic is the same.
  static void scheduleUpdates(func::FuncOp step) {
    Block &body = step.getBody().front();
    SmallVector<Operation *> updates;
    for (Operation &op : body)
      if (isa<tc::SgdUpdateOp, tc::AdamUpdateOp>(op))
        updates.push_back(&op);
    // Last first: updates that follow the same op keep their order.
    for (Operation *update : llvm::reverse(updates)) {
      // An op that only this update reads (a bf16 gradient's cast to f32,
      // which autodiff leaves at the end of the backward) moves up to just
      // after its own operands first.
      for (Value operand : update->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (!def || !def->hasOneUse() || !isMemoryEffectFree(def) || def->getNumRegions() ||
            def->getBlock() != &body)
          continue;
        Operation *ready = nullptr;
        for (Value input : def->getOperands())
          if (Operation *producer = input.getDefiningOp();
              producer && producer->getBlock() == &body &&
              (!ready || ready->isBeforeInBlock(producer)))
            ready = producer;
        if (ready && ready->isBeforeInBlock(def))
          def->moveAfter(ready);
      }
      Operation *last = nullptr;
      auto follow = [&](Operation *op) {
        if (!op || op == update || op->getBlock() != &body ||
            op->hasTrait<OpTrait::IsTerminator>())
          return;
        if (!last || last->isBeforeInBlock(op))
          last = op;
      };
      for (Value operand : update->getOperands()) {
        follow(operand.getDefiningOp());
        auto arg = dyn_cast<BlockArgument>(operand);
        if (arg && (step.getArgAttr(arg.getArgNumber(), tc::kParamAttrName) ||
                    step.getArgAttr(arg.getArgNumber(), tc::kStateAttrName)))
          for (Operation *user : arg.getUsers())
            follow(user);
      }
      if (last)
        update->moveAfter(last);
      else
        update->moveBefore(&body.front());
    }
  }

  /// The hyperparameter argument `which` of `step`, added on first use. The
  /// argument itself is the record (no map in the pass: a pass instance runs
  /// on many modules, and a Value kept from one run would belong to another
  /// module's function).
  static Value hyper(func::FuncOp step, tc::Hyper which) { return tc::getOrAddHyper(step, which); }

  static Value state(func::FuncOp step, Type type, tc::StateRole role, StringRef param = {}) {
    return tc::addState(step, type, role, param);
  }

  /// What the loss scaler of an fp16 step decides on the device (see
  /// Passes.td): `unscale` multiplies the gradients back (1 / scale), `probe`
  /// is 0 when every gradient element is finite and +inf otherwise
  /// (tc.nonfinite_probe), `ok` (i1) says the step is good: its unscale
  /// factor (with the probe added) is finite, the updates' own test.
  struct Scaler {
    Value scale, unscale, ok, probe;
  };

  /// 1 / scale and the probe of `grads` (results 1.. of the return that are
  /// gradients): one pass over all of them.
  Scaler buildScaler(func::FuncOp step, OpBuilder &b, Location loc, Attribute scaling,
                     ValueRange grads) {
    Scaler s;
    if (auto fixed = dyn_cast<FloatAttr>(scaling))
      s.scale = f32Scalar(b, loc, static_cast<float>(fixed.getValueAsDouble()));
    else
      s.scale = tc::findState(step, tc::StateRole::LossScale);
    s.unscale = b.create<tc::ReciprocalOp>(loc, s.scale)->getResult(0);
    SmallVector<Value> probed;
    for (unsigned i = 1; i < grads.size(); ++i)
      if (step.getResultAttr(i, tc::kGradAttrName))
        probed.push_back(grads[i]);
    s.probe = probed.empty() ? f32Scalar(b, loc, 0.0f)
                             : b.create<tc::NonfiniteProbeOp>(loc, probed).getResult();
    return s;
  }

  /// |x| <= FLT_MAX: false for inf and NaN.
  static Value isFinite(OpBuilder &b, Location loc, Value x) {
    Value magnitude = b.create<tc::AbsOp>(loc, x)->getResult(0);
    return b.create<tc::LessEqualOp>(loc, ValueRange{magnitude,
                                                     f32Scalar(b, loc, 3.40282347e38f)})
        ->getResult(0);
  }

  Value where(OpBuilder &b, Location loc, Value condition, Value yes, Value no) {
    return b.create<tc::WhereOp>(loc, ValueRange{condition, yes, no})->getResult(0);
  }

  void rewrite(func::FuncOp step) {
    auto ret = cast<func::ReturnOp>(step.getBody().front().getTerminator());
    OpBuilder b(ret);
    Location loc = step.getLoc();

    SmallVector<Value> results = {ret.getOperand(0)};
    SmallVector<DictionaryAttr> attrs = {step.getResultAttrDict(0)};
    SmallVector<Value> stateResults;
    SmallVector<DictionaryAttr> stateAttrs;
    auto keepState = [&](Value v, const std::string &name) {
      stateResults.push_back(v);
      stateAttrs.push_back(b.getDictionaryAttr(
          {b.getNamedAttr(tc::kOutputAttrName, b.getStringAttr(name)),
           b.getNamedAttr(tc::kStateUpdateAttrName, b.getStringAttr(name))}));
    };
    ModuleOp module = step->getParentOfType<ModuleOp>();
    Attribute scaling = module->getAttr(tc::kLossScaleAttrName);
    std::optional<Scaler> scaler;
    if (scaling) {
      if (isa<StringAttr>(scaling) && !tc::findState(step, tc::StateRole::LossScale)) {
        step.emitError("dynamic loss scaling: @train_step has no loss_scale state (run "
                       "trainc-autodiff on a module with tc.loss_scale)");
        return;
      }
      scaler = buildScaler(step, b, NameLoc::get(b.getStringAttr("loss scaling"), loc), scaling,
                           ret.getOperands());
    }
    // The gradients the clipping measures: unscaled ones under loss scaling
    // (GradScaler's unscale_ comes before clip_grad_norm_).
    SmallVector<Value> measured(ret.getOperands());
    if (scaler)
      for (unsigned i = 1; i < measured.size(); ++i)
        if (step.getResultAttr(i, tc::kGradAttrName))
          measured[i] = b.create<tc::MulOp>(NameLoc::get(b.getStringAttr("gradient clipping"), loc),
                                            ValueRange{measured[i], scaler->unscale})
                            ->getResult(0);
    Value gradScale;
    if (clipGradNorm > 0) {
      gradScale = clipCoefficient(step, b, NameLoc::get(b.getStringAttr("gradient clipping"), loc),
                                  measured);
      step->setAttr(tc::kClipGradNormAttrName, b.getF64FloatAttr(clipGradNorm));
    }
    // Adam's step count on the device: a skipped step does not advance it.
    Value stepSize, bc2Sqrt;
    if (scaler) {
      Location scaleLoc = NameLoc::get(b.getStringAttr("loss scaling"), loc);
      // (g / scale) * clip: 1 / scale is a power of two for the dynamic
      // scale, so this equals unscaling first. Plus the probe: unchanged
      // (+ 0) or inf, which makes the updates skip.
      Value factor = gradScale ? b.create<tc::MulOp>(scaleLoc, ValueRange{scaler->unscale,
                                                                          gradScale})
                                     ->getResult(0)
                               : scaler->unscale;
      gradScale = b.create<tc::AddOp>(scaleLoc, ValueRange{factor, scaler->probe})->getResult(0);
      // The step is good exactly when the updates do not skip: the same
      // test (an infinite 1 / scale, below 2^-126, skips too and counts).
      scaler->ok = isFinite(b, scaleLoc, gradScale);
      if (optimizer != tc::Optimizer::Sgd) {
        Location countLoc = NameLoc::get(b.getStringAttr("adam step count"), loc);
        auto scalar = RankedTensorType::get({}, b.getF32Type());
        Value t = state(step, scalar, tc::StateRole::AdamStep);
        Value t1 = where(b, countLoc, scaler->ok,
                         b.create<tc::AddOp>(countLoc, ValueRange{t, f32Scalar(b, countLoc, 1.0f)})
                             ->getResult(0),
                         t);
        keepState(t1, tc::stateName(tc::StateRole::AdamStep));
        // In f64 from 1 - beta (the trainer's one_minus_beta1/2, computed in
        // double): 1 - beta^t from an f32 beta would be 1.3e-5 off for beta2
        // = 0.999 at t = 1. Rounded to f32 once, as the trainer's step_size
        // and bias_correction2_sqrt are.
        auto f64 = b.getF64Type();
        auto scalar64 = RankedTensorType::get({}, f64);
        auto widen = [&](Value v) {
          return b.create<tc::CastOp>(countLoc, scalar64, v, TypeAttr::get(f64)).getResult();
        };
        auto narrow = [&](Value v) {
          return b.create<tc::CastOp>(countLoc, RankedTensorType::get({}, b.getF32Type()), v,
                                      TypeAttr::get(b.getF32Type()))
              .getResult();
        };
        Value one = b.create<tc::ConstantOp>(countLoc, DenseElementsAttr::get(scalar64, 1.0))
                        .getResult();
        Value t64 = widen(t1);
        auto correction = [&](tc::Hyper oneMinusBeta) {
          Value beta = b.create<tc::SubOp>(countLoc, ValueRange{one, widen(hyper(step, oneMinusBeta))})
                           ->getResult(0);
          Value power = b.create<tc::PowOp>(countLoc, ValueRange{beta, t64})->getResult(0);
          return b.create<tc::SubOp>(countLoc, ValueRange{one, power})->getResult(0);
        };
        stepSize = narrow(b.create<tc::DivOp>(countLoc, ValueRange{widen(hyper(step, tc::Hyper::Lr)),
                                                                   correction(tc::Hyper::OneMinusBeta1)})
                              ->getResult(0));
        bc2Sqrt = narrow(b.create<tc::SqrtOp>(countLoc, correction(tc::Hyper::OneMinusBeta2))->getResult(0));
      }
      updateScale(step, b, scaleLoc, scaling, *scaler, keepState);
    }

    for (unsigned i = 1; i < ret.getNumOperands(); ++i) {
      auto symbol = step.getResultAttrOfType<FlatSymbolRefAttr>(i, tc::kGradAttrName);
      if (!symbol) {
        // Not a gradient: running statistics and earlier phases' states
        // (gradient accumulators) written back as they are.
        if (step.getResultAttr(i, tc::kUpdateAttrName) ||
            step.getResultAttr(i, tc::kStateUpdateAttrName)) {
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
      Value lr = hyper(step, tc::Hyper::Lr), wd = hyper(step, tc::Hyper::WeightDecay);
      Value updated;
      if (optimizer == tc::Optimizer::Sgd) {
        Value momentum = hyper(step, tc::Hyper::Momentum);
        Value buffer = state(step, p.getType(), tc::StateRole::Momentum, name);
        SmallVector<Value> operands = {p, g, buffer, lr, momentum, wd};
        if (gradScale)
          operands.push_back(gradScale);
        SmallVector<NamedAttribute> flags;
        if (nesterov)
          flags.push_back(b.getNamedAttr("nesterov", b.getUnitAttr()));
        if (scaler)
          flags.push_back(b.getNamedAttr("skip_nonfinite", b.getUnitAttr()));
        auto update = b.create<tc::SgdUpdateOp>(updateLoc, operands, flags);
        updated = update.getNewParam();
        keepState(update.getNewMomentumBuffer(), tc::stateName(tc::StateRole::Momentum, name));
      } else {
        Value beta1 = hyper(step, tc::Hyper::Beta1), beta2 = hyper(step, tc::Hyper::Beta2);
        Value oneMinusBeta1 = hyper(step, tc::Hyper::OneMinusBeta1);
        Value oneMinusBeta2 = hyper(step, tc::Hyper::OneMinusBeta2);
        Value eps = hyper(step, tc::Hyper::Eps);
        if (!scaler) {
          stepSize = hyper(step, tc::Hyper::StepSize);
          bc2Sqrt = hyper(step, tc::Hyper::BiasCorrection2Sqrt);
        }
        Value m = state(step, p.getType(), tc::StateRole::ExpAvg, name);
        Value v = state(step, p.getType(), tc::StateRole::ExpAvgSq, name);
        SmallVector<Value> operands = {p,  g,     m,  v,        lr,     beta1,  beta2,
                                       oneMinusBeta1, oneMinusBeta2, eps, wd, stepSize, bc2Sqrt};
        if (gradScale)
          operands.push_back(gradScale);
        SmallVector<NamedAttribute> flags;
        if (optimizer == tc::Optimizer::AdamW)
          flags.push_back(b.getNamedAttr("decoupled", b.getUnitAttr()));
        if (scaler)
          flags.push_back(b.getNamedAttr("skip_nonfinite", b.getUnitAttr()));
        auto update = b.create<tc::AdamUpdateOp>(updateLoc, operands, flags);
        updated = update.getNewParam();
        keepState(update.getNewExpAvg(), tc::stateName(tc::StateRole::ExpAvg, name));
        keepState(update.getNewExpAvgSq(), tc::stateName(tc::StateRole::ExpAvgSq, name));
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

  /// The loss scaler's next state (GradScaler's _amp_update_scale_): a
  /// skipped step counts and, when dynamic, halves the scale and resets the
  /// good-step count; the scale_growth_interval-th good step in a row
  /// doubles it (kept when the double is not finite) and resets the count.
  template <typename KeepState>
  void updateScale(func::FuncOp step, OpBuilder &b, Location loc, Attribute scaling,
                   const Scaler &s, KeepState &keepState) {
    auto scalar = RankedTensorType::get({}, b.getF32Type());
    auto add = [&](Value x, Value y) { return b.create<tc::AddOp>(loc, ValueRange{x, y})->getResult(0); };
    auto mul = [&](Value x, float k) {
      return b.create<tc::MulOp>(loc, ValueRange{x, f32Scalar(b, loc, k)})->getResult(0);
    };
    Value skipped = state(step, scalar, tc::StateRole::LossScaleSkippedSteps);
    keepState(where(b, loc, s.ok, skipped, add(skipped, f32Scalar(b, loc, 1.0f))),
              tc::stateName(tc::StateRole::LossScaleSkippedSteps));
    if (!isa<StringAttr>(scaling))
      return; // a fixed scale
    Value count = state(step, scalar, tc::StateRole::LossScaleGrowthTracker);
    Value next = add(count, f32Scalar(b, loc, 1.0f));
    Value due = b.create<tc::GreaterEqualOp>(loc, ValueRange{next, hyper(step, tc::Hyper::ScaleGrowthInterval)})
                    ->getResult(0);
    Value doubled = mul(s.scale, 2.0f);
    Value grown = where(b, loc, due, where(b, loc, isFinite(b, loc, doubled), doubled, s.scale),
                        s.scale);
    keepState(where(b, loc, s.ok, grown, mul(s.scale, 0.5f)), tc::stateName(tc::StateRole::LossScale));
    keepState(where(b, loc, s.ok, where(b, loc, due, f32Scalar(b, loc, 0.0f), next),
                    f32Scalar(b, loc, 0.0f)),
              tc::stateName(tc::StateRole::LossScaleGrowthTracker));
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
    Value ratio = b.create<tc::DivOp>(loc, ValueRange{hyper(step, tc::Hyper::MaxGradNorm), denominator})
                      ->getResult(0);
    return b.create<tc::MinOp>(loc, ValueRange{ratio, f32Scalar(b, loc, 1.0f)})->getResult(0);
  }
};

} // namespace
