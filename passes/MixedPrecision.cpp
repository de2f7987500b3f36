//===- MixedPrecision.cpp - autocast's rules on @loss ---------------------===//
//
// Decides, op by op in program order, the element type each float op of
// @loss computes in, and places the casts that make it so. The rules are
// PyTorch autocast's (torch/csrc/autograd/autocast_mode.cpp):
//  - contractions (matmul, gemm, conv) read f16/bf16 operands and accumulate
//    in f32; their result is low precision, as autocast's. A gemm's C stays
//    f32: the op's out_type is f32, C is added to the f32 sum, and a cast
//    rounds the result once;
//  - the f32 ops (softmax, log-softmax, layer norm, reductions, exp, log,
//    pow, reciprocal, the losses) read f32;
//  - batch norm keeps a bf16 input and output, with f32 statistics, scale
//    and bias (autocast runs cudnn_batch_norm so);
//  - other pointwise ops, and concat, compute in the widest type of their
//    non-parameter operands; parameters and constants are cast to it (as
//    autocast casts a Linear's bias with its weight);
//  - reshape, transpose, expand, slice and max/average pooling keep their
//    input's type;
//  - every other op reads f32: their runtime kernels are f32 (global
//    pooling, gather, cumsum, ...). Function results keep their declared types.
// After autodiff the pass runs again on @train_step (legalize-step): the
// gradient rules build ops in their operands' types, and those that must
// compute in f32 are made to: a reduction (a bias gradient's reduce_sum of a
// bf16 dy) gets out_type = f32 and reads dy as it is; other ops read f32.
// A cast is placed once per value and type. Autodiff then differentiates
// the casts (the gradient of a cast is the cast back), and the cleanup's
// folds cancel the round trips that leaves (bf16 -> f32 -> bf16) and give a
// contraction whose result is only widened out_type = f32.
//
//===----------------------------------------------------------------------===//

#include "ir/StepAbi.h"
#include "ir/TcOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace trainc {
#define GEN_PASS_DEF_MIXEDPRECISION
#include "passes/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc;

namespace {

enum class Rule {
  /// matmul, gemm, conv: low-precision operands, f32 accumulation.
  Contraction,
  /// Reads f32.
  F32,
  /// The widest type of the non-parameter float operands.
  Widest,
  /// Keeps the input's type.
  Follow,
  /// batch_norm: the input keeps its type, the statistics are f32.
  Norm,
};

Rule ruleOf(Operation *op) {
  if (op->hasTrait<tc::OpTrait::Contraction>())
    return Rule::Contraction;
  if (op->hasTrait<tc::OpTrait::AutocastFollow>())
    return Rule::Follow;
  if (op->hasTrait<tc::OpTrait::AutocastNorm>())
    return Rule::Norm;
  if (op->hasTrait<tc::OpTrait::AutocastF32>())
    return Rule::F32;
  if (op->hasTrait<tc::OpTrait::Pointwise>() || op->hasTrait<tc::OpTrait::AutocastWidest>())
    return Rule::Widest;
  return Rule::F32;
}

Type elementOf(Value v) { return cast<ShapedType>(v.getType()).getElementType(); }
bool isFloat(Value v) { return isa<FloatType>(elementOf(v)); }

/// Float rank of the types this pass chooses between.
int width(Type t) { return t.isF64() ? 3 : t.isF32() ? 2 : 1; }

struct MixedPrecisionPass : trainc::impl::MixedPrecisionBase<MixedPrecisionPass> {
  using MixedPrecisionBase::MixedPrecisionBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (precision == rt::Precision::Fp32)
      return;
    auto fn = module.lookupSymbol<func::FuncOp>(legalizeStep ? "train_step" : "loss");
    if (!fn)
      return;
    OpBuilder b(module.getContext());
    module->setAttr(tc::kPrecisionAttrName,
                    tc::PrecisionAttr::get(module.getContext(), tc::fromRuntime(precision)));
    if (!legalizeStep && failed(recordLossScale(module, b)))
      return signalPassFailure();
    low = precision == rt::Precision::Bf16 ? Type(b.getBF16Type()) : Type(b.getF16Type());
    f32 = b.getF32Type();
    params.clear();
    casts.clear();
    for (BlockArgument arg : fn.getArguments())
      if (fn.getArgAttr(arg.getArgNumber(), tc::kParamAttrName))
        params.insert(arg);
    for (Operation &op : llvm::make_early_inc_range(fn.getBody().front()))
      if (failed(legalizeStep ? legalize(b, &op) : visit(b, &op)))
        return signalPassFailure();
  }

  /// `loss-scale` as the module's tc.loss_scale: #tc.loss_scaling<dynamic>,
  /// or the fixed scale; nothing for none.
  LogicalResult recordLossScale(ModuleOp module, OpBuilder &b) {
    const LossScale &scale = lossScale;
    if (scale.scaling == rt::LossScaling::None)
      return success();
    if (precision != rt::Precision::Fp16)
      return module.emitError("loss scaling is for fp16 (")
             << optionName(precision.getValue()) << " has f32's exponent range and needs none)";
    if (scale.scaling == rt::LossScaling::Dynamic)
      module->setAttr(tc::kLossScaleAttrName,
                      tc::LossScalingAttr::get(b.getContext(), tc::LossScaling::Dynamic));
    else
      module->setAttr(tc::kLossScaleAttrName, b.getF32FloatAttr(scale.value));
    return success();
  }

  /// Whether `v` is a parameter or a constant (cast to its reader's type).
  bool isWeight(Value v) const {
    return params.contains(v) || isa_and_nonnull<tc::ConstantOp>(v.getDefiningOp());
  }

  /// `v` in element type `to`: itself, a splat constant of that type, or a
  /// cast placed once after its definition.
  Value convert(OpBuilder &b, Value v, Type to) {
    if (elementOf(v) == to)
      return v;
    auto key = std::make_pair(v, to);
    if (Value done = casts.lookup(key))
      return done;
    OpBuilder::InsertionGuard guard(b);
    if (auto def = v.getDefiningOp())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(cast<BlockArgument>(v).getOwner());
    auto type = cast<RankedTensorType>(v.getType()).clone(to);
    Value converted;
    auto constant = v.getDefiningOp<tc::ConstantOp>();
    if (constant && tc::isSplatConstant(constant)) {
      APFloat value = cast<DenseElementsAttr>(constant.getValue()).getSplatValue<APFloat>();
      bool lost = false;
      value.convert(cast<FloatType>(to).getFloatSemantics(), APFloat::rmNearestTiesToEven,
                    &lost);
      converted = b.create<tc::ConstantOp>(v.getLoc(), DenseElementsAttr::get(type, value))
                      .getResult();
    } else {
      converted = b.create<tc::CastOp>(v.getLoc(), type, v, TypeAttr::get(to)).getResult();
    }
    casts[key] = converted;
    return converted;
  }

  /// Sets float operand `i` of `op` to its value in type `to`.
  void setOperand(OpBuilder &b, Operation *op, unsigned i, Type to) {
    Value v = op->getOperand(i);
    if (v && isFloat(v))
      op->setOperand(i, convert(b, v, to));
  }

  /// Re-infers the result types after the operands changed.
  LogicalResult reinfer(Operation *op) {
    auto infer = dyn_cast<InferTypeOpInterface>(op);
    if (!infer)
      return success();
    SmallVector<Type> types;
    if (failed(infer.inferReturnTypes(op->getContext(), op->getLoc(), op->getOperands(),
                                      op->getAttrDictionary(), op->getPropertiesStorage(),
                                      op->getRegions(), types)))
      return op->emitError("mixed precision: the op does not take these element types");
    for (auto [result, type] : llvm::zip(op->getResults(), types))
      result.setType(type);
    return success();
  }

  LogicalResult visit(OpBuilder &b, Operation *op) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      auto fn = cast<func::FuncOp>(ret->getParentOp());
      for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
        Type declared = cast<ShapedType>(fn.getResultTypes()[i]).getElementType();
        if (isFloat(ret.getOperand(i)))
          ret->setOperand(i, convert(b, ret.getOperand(i), declared));
      }
      return success();
    }
    if (isa<tc::CastOp, tc::ConstantOp>(op) ||
        llvm::none_of(op->getOperands(), [](Value v) { return isFloat(v); }))
      return success();
    switch (ruleOf(op)) {
    case Rule::Contraction:
      return contraction(b, op);
    case Rule::F32:
      for (unsigned i = 0; i < op->getNumOperands(); ++i)
        if (elementOf(op->getOperand(i)) != b.getF64Type())
          setOperand(b, op, i, f32);
      return reinfer(op);
    case Rule::Follow:
      return reinfer(op);
    case Rule::Norm:
      // bf16 in and out, f32 statistics (the runtime's mixed batch norm),
      // as autocast runs cudnn_batch_norm on a bf16 input.
      for (unsigned i = 1; i < op->getNumOperands(); ++i)
        setOperand(b, op, i, f32);
      return reinfer(op);
    case Rule::Widest: {
      Type widest;
      auto consider = [&](bool weights) {
        for (Value v : op->getOperands())
          if (isFloat(v) && isWeight(v) == weights &&
              (!widest || width(elementOf(v)) > width(widest)))
            widest = elementOf(v);
      };
      consider(false);
      if (!widest)
        consider(true); // parameters and constants alone: nothing changes
      for (unsigned i = 0; i < op->getNumOperands(); ++i)
        setOperand(b, op, i, widest);
      return reinfer(op);
    }
    }
    return success();
  }

  /// A contraction reads its data operands in the low type. A gemm's C
  /// stays f32 and its f32 result is rounded by one cast; a conv's bias is
  /// cast with its weight (cuDNN convolves one type), as autocast does.
  LogicalResult contraction(OpBuilder &b, Operation *op) {
    for (Value v : op->getOperands())
      if (elementOf(v).isF64())
        return success(); // the model's own choice
    bool gemmBias = isa<tc::GemmOp>(op) && op->getNumOperands() > 2;
    for (unsigned i = 0; i < op->getNumOperands(); ++i)
      setOperand(b, op, i, i == 2 && gemmBias ? f32 : low);
    if (gemmBias)
      op->setAttr("out_type", TypeAttr::get(f32));
    if (failed(reinfer(op)))
      return failure();
    if (!gemmBias)
      return success();
    Value sum = op->getResult(0);
    Value rounded = convert(b, sum, low);
    sum.replaceAllUsesExcept(rounded, rounded.getDefiningOp());
    return success();
  }

  /// After autodiff: an op of @train_step whose kernel computes in f32 only
  /// (the gradient rules build them in their operands' type: a bias
  /// gradient's reduce_sum of a bf16 dy) reads f32, and each result that
  /// changed type is cast back to the type the rule gave it.
  LogicalResult legalize(OpBuilder &b, Operation *op) {
    if (isa<func::ReturnOp, tc::CastOp, tc::ConstantOp>(op) ||
        op->hasTrait<tc::OpTrait::LowPrecisionKernel>() || ruleOf(op) != Rule::F32)
      return success();
    if (llvm::none_of(op->getOperands(), [](Value v) {
          return isFloat(v) && width(elementOf(v)) < 2;
        }))
      return success();
    SmallVector<Type> before(op->getResultTypes());
    if (isa<tc::ReduceSumOp, tc::ReduceMeanOp, tc::ReduceMaxOp>(op) && !op->hasAttr("out_type")) {
      // Reductions read a 16-bit input as it is, into an f32 result: no f32
      // copy of the input (a bias gradient's dy, as big as an activation).
      op->setAttr("out_type", TypeAttr::get(f32));
    } else {
      for (unsigned i = 0; i < op->getNumOperands(); ++i)
        if (isFloat(op->getOperand(i)) && width(elementOf(op->getOperand(i))) < 2)
          setOperand(b, op, i, f32);
    }
    if (failed(reinfer(op)))
      return failure();
    for (auto [result, type] : llvm::zip(op->getResults(), before)) {
      Type original = cast<ShapedType>(type).getElementType();
      if (elementOf(result) == original)
        continue;
      // A reader that widens the result again (the gradient of an f32
      // parameter's cast: a bias gradient) takes the f32 result as it is,
      // as a weight gradient keeps the f32 sum of its GEMM (out_type).
      SmallVector<OpOperand *> lowReaders;
      SmallVector<tc::CastOp> widens;
      for (OpOperand &use : result.getUses()) {
        auto widen = dyn_cast<tc::CastOp>(use.getOwner());
        if (widen && widen.getTo() == elementOf(result))
          widens.push_back(widen);
        else
          lowReaders.push_back(&use);
      }
      for (tc::CastOp widen : widens) // left dead for the cleanup (the walk holds the next op)
        widen.getResult().replaceAllUsesWith(result);
      if (lowReaders.empty())
        continue;
      Value back = convert(b, result, original);
      for (OpOperand *use : lowReaders)
        use->set(back);
    }
    return success();
  }

  Type low, f32;
  llvm::DenseSet<Value> params;
  llvm::DenseMap<std::pair<Value, Type>, Value> casts;
};

} // namespace
