//===- Optimizer.cpp - the optimizer phase: fused parameter updates -------===//

#include "ir/StepAbi.h"
#include "ir/TcOps.h"
#include "passes/Kfac.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/Support/Regex.h"

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
    if (clipGradValue < 0 || (clipGradValue > 0 && clipGradNorm > 0)) {
      module.emitError("--clip-grad-value must be positive, and excludes --clip-grad-norm");
      return signalPassFailure();
    }
    optimizer = tc::fromRuntime(kind);
    if (step->hasAttr(tc::kOptimizerAttrName))
      return; // already rewritten
    rewrite(step);
    if (earlyUpdates) {
      scheduleUpdates(step);
      hoistGradNorm(step.getBody().front());
    }
    step->setAttr(tc::kOptimizerAttrName, tc::OptimizerAttr::get(&getContext(), optimizer));
  }

  /// The location of the ops that measure the gradient norm (without
  /// clipping; clipping's own are "gradient clipping").
  static constexpr const char *kGradNormLoc = "gradient norm";

  /// With early updates: each op of the gradient norm moves up to just after
  /// the last of its operands (a gradient's square and sum right after the
  /// gradient), so that no gradient stays live until the end of the
  /// backward for the norm.
  static void hoistGradNorm(Block &body) {
    SmallVector<Operation *> measuring;
    for (Operation &op : body)
      if (auto name = dyn_cast<NameLoc>(op.getLoc()); name && name.getName() == kGradNormLoc)
        measuring.push_back(&op);
    for (Operation *op : measuring) {
      Operation *after = nullptr;
      for (Value operand : op->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (def && def->getBlock() == &body && (!after || after->isBeforeInBlock(def)))
          after = def;
      }
      if (after)
        op->moveAfter(after);
      else
        op->moveBefore(&body.front());
    }
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
      if (op.hasTrait<tc::OpTrait::ParamUpdate>())
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

  /// What every update of the step shares: the gradients' factor (loss
  /// scaling and clipping, null when 1) and Adam's bias corrections (null
  /// for SGD and LARS).
  struct StepFactors {
    Value gradScale, stepSize, bc1, bc2Sqrt;
    /// fp16 loss scaling: a non-finite gradScale skips the updates.
    bool skipNonfinite = false;
  };

  /// Whether the optimizer keeps Adam's moments (adam, adamw, lamb).
  bool usesMoments() const { return rt::isAdam(tc::toRuntime(optimizer)); }

  /// The --no-decay group, resolved: every parameter of rank 0 or 1, none,
  /// or the names a regular expression matches (searched).
  struct NoDecayGroup {
    enum class Rule { Rank1, None, Regex } rule = Rule::None;
    std::optional<llvm::Regex> regex;
    bool contains(StringRef name, Type type) const {
      switch (rule) {
      case Rule::Rank1: return cast<ShapedType>(type).getRank() <= 1;
      case Rule::None: return false;
      case Rule::Regex: return regex->match(name);
      }
      return false;
    }
  };

  FailureOr<NoDecayGroup> noDecayGroup(ModuleOp module) {
    NoDecayGroup group;
    std::string rule = noDecay;
    if (rule == "auto")
      rule = optimizer == tc::Optimizer::Sgd || optimizer == tc::Optimizer::Adam ||
                     optimizer == tc::Optimizer::Kfac
                 ? "none"
                 : "1d";
    if (rule == "1d")
      group.rule = NoDecayGroup::Rule::Rank1;
    else if (rule != "none") {
      group.rule = NoDecayGroup::Rule::Regex;
      group.regex.emplace(rule);
      std::string error;
      if (rule.empty() || !group.regex->isValid(error))
        return module.emitError("--no-decay='")
               << rule << "' is neither 1d, none nor a regular expression"
               << (error.empty() ? "" : ": " + error);
    }
    return group;
  }

  /// Adam's step count on the device, and the bias corrections the updates
  /// read, computed from it in this one place (capturable Adam's way): a
  /// step that fp16 loss scaling skips (`ok` false) does not advance it. In
  /// f64 from 1 - beta (the trainer's one_minus_beta1/2, computed in
  /// double): 1 - beta^t from an f32 beta would be 1.3e-5 off for beta2 =
  /// 0.999 at t = 1. Rounded to f32 once.
  template <typename KeepState>
  void deviceCorrections(func::FuncOp step, OpBuilder &b, Location loc, Value ok,
                         StepFactors &f, KeepState &keepState) {
    auto scalar = RankedTensorType::get({}, b.getF32Type());
    Value t = state(step, scalar, tc::StateRole::AdamStep);
    Value next = b.create<tc::AddOp>(loc, ValueRange{t, f32Scalar(b, loc, 1.0f)})->getResult(0);
    Value t1 = ok ? where(b, loc, ok, next, t) : next;
    keepState(t1, tc::stateName(tc::StateRole::AdamStep));
    auto f64 = b.getF64Type();
    auto scalar64 = RankedTensorType::get({}, f64);
    auto widen = [&](Value v) {
      return b.create<tc::CastOp>(loc, scalar64, v, TypeAttr::get(f64)).getResult();
    };
    auto narrow = [&](Value v) {
      return b.create<tc::CastOp>(loc, scalar, v, TypeAttr::get(b.getF32Type())).getResult();
    };
    Value one = b.create<tc::ConstantOp>(loc, DenseElementsAttr::get(scalar64, 1.0)).getResult();
    Value t64 = widen(t1);
    auto correction = [&](tc::Hyper oneMinusBeta) {
      Value beta = b.create<tc::SubOp>(loc, ValueRange{one, widen(hyper(step, oneMinusBeta))})
                       ->getResult(0);
      Value power = b.create<tc::PowOp>(loc, ValueRange{beta, t64})->getResult(0);
      return b.create<tc::SubOp>(loc, ValueRange{one, power})->getResult(0);
    };
    if (optimizer == tc::Optimizer::Lamb) {
      f.bc1 = narrow(correction(tc::Hyper::OneMinusBeta1));
    } else {
      Value lr = widen(hyper(step, tc::Hyper::Lr));
      f.stepSize = narrow(
          b.create<tc::DivOp>(loc, ValueRange{lr, correction(tc::Hyper::OneMinusBeta1)})->getResult(0));
    }
    f.bc2Sqrt = narrow(b.create<tc::SqrtOp>(loc, correction(tc::Hyper::OneMinusBeta2))->getResult(0));
  }

  /// One parameter's update: its next value and its states' (name, value).
  struct Update {
    Value param;
    SmallVector<std::pair<std::string, Value>> states;
  };

  Update buildUpdate(func::FuncOp step, OpBuilder &b, Value p, Value g, StringRef name,
                     bool decays, const StepFactors &f, Value zero) {
    // The update kernel is named after the parameter it writes.
    Location loc = NameLoc::get(b.getStringAttr("update of " + name), step.getLoc());
    Value lr = hyper(step, tc::Hyper::Lr);
    Value wd = decays ? hyper(step, tc::Hyper::WeightDecay) : zero;
    SmallVector<NamedAttribute> flags;
    if (nesterov && optimizer == tc::Optimizer::Sgd)
      flags.push_back(b.getNamedAttr("nesterov", b.getUnitAttr()));
    if (optimizer == tc::Optimizer::AdamW)
      flags.push_back(b.getNamedAttr("decoupled", b.getUnitAttr()));
    if (decays && rt::isLayerAdaptive(tc::toRuntime(optimizer)))
      flags.push_back(b.getNamedAttr("layer_adaptation", b.getUnitAttr()));
    if (f.skipNonfinite)
      flags.push_back(b.getNamedAttr("skip_nonfinite", b.getUnitAttr()));
    auto withScale = [&](SmallVector<Value> operands) {
      if (f.gradScale)
        operands.push_back(f.gradScale);
      return operands;
    };
    auto stateOf = [&](tc::StateRole role) { return state(step, p.getType(), role, name); };
    auto named = [&](tc::StateRole role, Value v) {
      return std::make_pair(tc::stateName(role, name), v);
    };
    if (optimizer == tc::Optimizer::Sgd || optimizer == tc::Optimizer::Lars ||
        optimizer == tc::Optimizer::Kfac) {
      // K-FAC's update is SGD's on the preconditioned gradient.
      Value momentum = hyper(step, tc::Hyper::Momentum);
      Value buffer = stateOf(tc::StateRole::Momentum);
      Operation *update;
      if (optimizer != tc::Optimizer::Lars)
        update = b.create<tc::SgdUpdateOp>(loc, withScale({p, g, buffer, lr, momentum, wd}), flags);
      else
        update = b.create<tc::LarsUpdateOp>(
            loc, withScale({p, g, buffer, lr, momentum, wd, hyper(step, tc::Hyper::TrustCoefficient),
                            hyper(step, tc::Hyper::Eps)}),
            flags);
      return {update->getResult(0), {named(tc::StateRole::Momentum, update->getResult(1))}};
    }
    // The hyperparameters first, then the state (the step's argument order).
    SmallVector<Value> scalars = {lr,
                                  hyper(step, tc::Hyper::Beta1),
                                  hyper(step, tc::Hyper::Beta2),
                                  hyper(step, tc::Hyper::OneMinusBeta1),
                                  hyper(step, tc::Hyper::OneMinusBeta2),
                                  hyper(step, tc::Hyper::Eps),
                                  wd};
    bool lamb = optimizer == tc::Optimizer::Lamb;
    scalars.push_back(lamb ? f.bc1 : f.stepSize);
    scalars.push_back(f.bc2Sqrt);
    Value m = stateOf(tc::StateRole::ExpAvg), v = stateOf(tc::StateRole::ExpAvgSq);
    SmallVector<Value> operands = {p, g, m, v};
    operands.append(scalars.begin(), scalars.end());
    Operation *update = lamb ? b.create<tc::LambUpdateOp>(loc, withScale(operands), flags)
                                   .getOperation()
                             : b.create<tc::AdamUpdateOp>(loc, withScale(operands), flags)
                                   .getOperation();
    return {update->getResult(0),
            {named(tc::StateRole::ExpAvg, update->getResult(1)),
             named(tc::StateRole::ExpAvgSq, update->getResult(2))}};
  }

  /// The parameter argument of `step` that gradient result `symbol` is of.
  static Value paramArg(func::FuncOp step, FlatSymbolRefAttr symbol) {
    for (BlockArgument arg : step.getArguments())
      if (step.getArgAttr(arg.getArgNumber(), tc::kParamAttrName) == symbol)
        return arg;
    return nullptr;
  }

  void rewrite(func::FuncOp step) {
    auto ret = cast<func::ReturnOp>(step.getBody().front().getTerminator());
    if (llvm::none_of(llvm::seq(1u, ret.getNumOperands()), [&](unsigned i) {
          return step.getResultAttr(i, tc::kGradAttrName) != nullptr;
        }))
      return; // no gradient: it returns updates already, or trains nothing
    OpBuilder b(ret);
    Location loc = step.getLoc();
    ModuleOp module = step->getParentOfType<ModuleOp>();
    FailureOr<NoDecayGroup> group = noDecayGroup(module);
    if (failed(group))
      return signalPassFailure();

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
    Attribute scaling = module->getAttr(tc::kLossScaleAttrName);
    std::optional<Scaler> scaler;
    if (scaling) {
      if (!isa<FloatAttr>(scaling) && !tc::findState(step, tc::StateRole::LossScale)) {
        step.emitError("dynamic loss scaling: @train_step has no loss_scale state (run "
                       "trainc-autodiff on a module with tc.loss_scale)");
        return;
      }
      scaler = buildScaler(step, b, NameLoc::get(b.getStringAttr("loss scaling"), loc), scaling,
                           ret.getOperands());
    }
    StepFactors factors;
    Value norm = measureGradients(step, b, loc, ret.getOperands(), scaler, factors);
    if (norm) {
      (void)state(step, norm.getType(), tc::StateRole::GradNorm);
      keepState(norm, tc::stateName(tc::StateRole::GradNorm));
    }
    if (scaler) {
      Location scaleLoc = NameLoc::get(b.getStringAttr("loss scaling"), loc);
      // (g / scale) * clip: 1 / scale is a power of two for the dynamic
      // scale, so this equals unscaling first. Plus the probe: unchanged
      // (+ 0) or inf, which makes the updates skip.
      Value factor = factors.gradScale
                         ? b.create<tc::MulOp>(scaleLoc, ValueRange{scaler->unscale,
                                                                    factors.gradScale})
                               ->getResult(0)
                         : scaler->unscale;
      factors.gradScale =
          b.create<tc::AddOp>(scaleLoc, ValueRange{factor, scaler->probe})->getResult(0);
      // The step is good exactly when the updates do not skip: the same
      // test (an infinite 1 / scale, below 2^-126, skips too and counts).
      scaler->ok = isFinite(b, scaleLoc, factors.gradScale);
      factors.skipNonfinite = true;
      if (usesMoments())
        deviceCorrections(step, b, NameLoc::get(b.getStringAttr("adam step count"), loc),
                          scaler->ok, factors, keepState);
      updateScale(step, b, scaleLoc, scaling, *scaler, keepState);
    } else if (usesMoments()) {
      deviceCorrections(step, b, NameLoc::get(b.getStringAttr("adam step count"), loc), Value(),
                        factors, keepState);
    }

    SmallVector<Value> grads = clipByValue(step, b, loc, ret.getOperands(), scaler);
    if (optimizer == tc::Optimizer::Kfac) {
      SmallVector<std::string> plain;
      std::function<void(Value, const std::string &)> keep = keepState;
      if (failed(preconditionKfac(step, b, ret.getOperands(), grads, keep, plain)))
        return signalPassFailure();
      SmallVector<Attribute> lines;
      if (auto autodiffs = step->getAttrOfType<ArrayAttr>(kKfacPlainAttrName))
        lines.append(autodiffs.begin(), autodiffs.end());
      for (const std::string &line : plain)
        lines.push_back(b.getStringAttr(line));
      if (!lines.empty())
        step->setAttr(kKfacPlainAttrName, b.getArrayAttr(lines));
    }

    // The updates, those with weight decay first: a run of updates with the
    // same operands and flags is one multi-tensor kernel.
    Value zero;
    DenseMap<unsigned, Update> updates;
    for (bool decayedPass : {true, false})
      for (unsigned i = 1; i < ret.getNumOperands(); ++i) {
        auto symbol = step.getResultAttrOfType<FlatSymbolRefAttr>(i, tc::kGradAttrName);
        if (!symbol)
          continue;
        Value p = paramArg(step, symbol);
        bool decays = !group->contains(symbol.getValue(), p.getType());
        if (decays != decayedPass)
          continue;
        if (!decays) {
          if (!zero)
            zero = f32Scalar(b, NameLoc::get(b.getStringAttr("no weight decay"), loc), 0.0f);
          if (auto param = module.lookupSymbol<tc::ParamOp>(symbol.getValue()))
            param.setNoDecay(true);
        }
        updates[i] = buildUpdate(step, b, p, grads[i], symbol.getValue(), decays, factors,
                                 zero);
      }
    if (group->rule == NoDecayGroup::Rule::Regex && !zero) {
      module.emitError("--no-decay='") << noDecay << "' matches no trained parameter";
      return signalPassFailure();
    }

    for (unsigned i = 1; i < ret.getNumOperands(); ++i) {
      auto symbol = step.getResultAttrOfType<FlatSymbolRefAttr>(i, tc::kGradAttrName);
      if (!symbol) {
        // Not a gradient: the per-sample losses, running statistics and
        // earlier phases' states (gradient accumulators) as they are.
        if (step.getResultAttr(i, tc::kUpdateAttrName) ||
            step.getResultAttr(i, tc::kStateUpdateAttrName) ||
            step.getResultAttr(i, tc::kSampleLossesAttrName)) {
          results.push_back(ret.getOperand(i));
          attrs.push_back(step.getResultAttrDict(i));
        }
        continue;
      }
      const Update &update = updates[i];
      for (const auto &[name, value] : update.states)
        keepState(value, name);
      results.push_back(update.param);
      attrs.push_back(b.getDictionaryAttr(
          {b.getNamedAttr(tc::kOutputAttrName,
                          b.getStringAttr("param." + symbol.getValue().str())),
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
    if (isa<FloatAttr>(scaling))
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

  /// The global gradient norm (unscaled, before clipping), for the
  /// trainer's log and --clip-grad-norm: with clipping, the norm of the
  /// unscaled gradients (GradScaler's unscale_ comes before
  /// clip_grad_norm_), whose clip coefficient goes to `factors`; else (with
  /// grad-norm) the norm of the gradients as they are, times 1 / scale
  /// under loss scaling; else null.
  Value measureGradients(func::FuncOp step, OpBuilder &b, Location loc, ValueRange grads,
                         const std::optional<Scaler> &scaler, StepFactors &factors) {
    if (clipGradNorm > 0) {
      Location clipLoc = NameLoc::get(b.getStringAttr("gradient clipping"), loc);
      // GradScaler's unscale_ first: the norm of the unscaled gradients is
      // the scaled ones' times 1 / scale (positive), with no pass over them.
      Value norm = globalNorm(step, b, clipLoc, grads);
      if (norm && scaler)
        norm = b.create<tc::MulOp>(clipLoc, ValueRange{norm, scaler->unscale})->getResult(0);
      factors.gradScale = clipCoefficient(step, b, clipLoc, norm);
      step->setAttr(tc::kClipGradNormAttrName, b.getF64FloatAttr(clipGradNorm));
      return norm;
    }
    if (!gradNorm)
      return nullptr;
    Location normLoc = NameLoc::get(b.getStringAttr(kGradNormLoc), loc);
    Value norm = globalNorm(step, b, normLoc, grads, earlyUpdates);
    if (norm && scaler)
      norm = b.create<tc::MulOp>(normLoc, ValueRange{norm, scaler->unscale})->getResult(0);
    return norm;
  }

  /// clip_grad_value_ (after GradScaler's unscale_): each gradient element
  /// (results 1.. of the return that are gradients) clamped to [-X, X];
  /// under loss scaling the scaled gradient to [-X scale, X scale], the same
  /// for the dynamic scale's powers of two. The scaler's probe saw the
  /// gradients unclamped. Without --clip-grad-value, `grads` as they are.
  SmallVector<Value> clipByValue(func::FuncOp step, OpBuilder &b, Location loc,
                                 ValueRange grads, const std::optional<Scaler> &scaler) {
    SmallVector<Value> out(grads);
    if (clipGradValue <= 0)
      return out;
    Location clipLoc = NameLoc::get(b.getStringAttr("gradient clipping by value"), loc);
    Value bound, lowest;
    if (scaler) {
      bound = b.create<tc::MulOp>(clipLoc, ValueRange{scaler->scale,
                                                      f32Scalar(b, clipLoc, clipGradValue)})
                  ->getResult(0);
      lowest = b.create<tc::NegOp>(clipLoc, bound)->getResult(0);
    }
    for (unsigned i = 1; i < out.size(); ++i) {
      if (!step.getResultAttr(i, tc::kGradAttrName))
        continue;
      if (!scaler) {
        out[i] = b.create<tc::ClipOp>(clipLoc, out[i], b.getF32FloatAttr(-clipGradValue),
                                      b.getF32FloatAttr(clipGradValue))
                     .getResult();
        continue;
      }
      Value raised = b.create<tc::MaxOp>(clipLoc, ValueRange{out[i], lowest})->getResult(0);
      out[i] = b.create<tc::MinOp>(clipLoc, ValueRange{raised, bound})->getResult(0);
    }
    return out;
  }

  /// sqrt of the sum of all squared gradient elements (results 1.. of the
  /// return that are gradients): one tc.global_norm over them all, or with
  /// `perGradient` one per gradient and one over those norms (the norm of
  /// the norms, as clip_grad_norm_ computes it), so that each gradient's
  /// can follow it at once (hoistGradNorm); null when the step has none.
  static Value globalNorm(func::FuncOp step, OpBuilder &b, Location loc, ValueRange grads,
                          bool perGradient = false) {
    SmallVector<Value> measured;
    for (unsigned i = 1; i < grads.size(); ++i) {
      if (!step.getResultAttr(i, tc::kGradAttrName))
        continue;
      Value grad = grads[i];
      auto type = cast<RankedTensorType>(grad.getType());
      if (!type.getElementType().isF32())
        grad = b.create<tc::CastOp>(loc, type.clone(b.getF32Type()), grad,
                                    TypeAttr::get(b.getF32Type()))
                   .getResult();
      measured.push_back(grad);
    }
    if (measured.empty())
      return nullptr;
    auto scalar = RankedTensorType::get({}, b.getF32Type());
    if (perGradient)
      for (Value &grad : measured)
        grad = b.create<tc::GlobalNormOp>(loc, scalar, ValueRange{grad}).getResult();
    return b.create<tc::GlobalNormOp>(loc, scalar, measured).getResult();
  }

  /// torch.nn.utils.clip_grad_norm_: the factor every gradient is scaled by,
  /// min(1, max_norm / (norm + 1e-6)); null when there is no norm.
  Value clipCoefficient(func::FuncOp step, OpBuilder &b, Location loc, Value norm) {
    if (!norm)
      return nullptr;
    Value denominator = b.create<tc::AddOp>(loc, ValueRange{norm, f32Scalar(b, loc, 1e-6f)})->getResult(0);
    Value ratio = b.create<tc::DivOp>(loc, ValueRange{hyper(step, tc::Hyper::MaxGradNorm), denominator})
                      ->getResult(0);
    return b.create<tc::MinOp>(loc, ValueRange{ratio, f32Scalar(b, loc, 1.0f)})->getResult(0);
  }
};

} // namespace
