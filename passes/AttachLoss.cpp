//===- AttachLoss.cpp - the loss phase: func.func @loss -------------------===//
//
// Clones @forward into @loss and appends the loss computation, weighted per
// sample so that one mechanism masks the padding of a short last batch and,
// later, carries selective-backprop and importance-sampling weights. @loss is
// the training forward (PyTorch's model.train()): batch norms use batch
// statistics and return their updated running statistics.
//
//===----------------------------------------------------------------------===//

#include "ir/TcOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/StringSet.h"

#include <tuple>

namespace trainc {
#define GEN_PASS_DEF_ATTACHLOSS
#include "passes/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc;

namespace {

/// Creates a single-result tc op whose type comes from its shape function.
template <typename OpTy>
Value make(OpBuilder &b, Location loc, ValueRange operands,
           ArrayRef<NamedAttribute> attrs = {}) {
  return b.create<OpTy>(loc, operands, attrs)->getResult(0);
}

Value scalarConstant(OpBuilder &b, Location loc, float value) {
  auto type = RankedTensorType::get({}, b.getF32Type());
  return b.create<tc::ConstantOp>(loc, DenseElementsAttr::get(type, value)).getResult();
}

struct AttachLossPass : trainc::impl::AttachLossBase<AttachLossPass> {
  using AttachLossBase::AttachLossBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (module.lookupSymbol("loss"))
      return;
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward || forward.isExternal()) {
      module.emitError("trainc-loss needs a func.func @forward with a body");
      return signalPassFailure();
    }
    if (kind != LossKind::CrossEntropy &&
        (classAxis != 1 || labelSmoothing != 0.0 || !classWeights.empty() ||
         ignoreIndex != -100)) {
      module.emitError("--class-axis, --label-smoothing, --class-weights and --ignore-index "
                       "apply to --loss=cross-entropy only");
      return signalPassFailure();
    }
    if (!(labelSmoothing >= 0.0 && labelSmoothing <= 1.0)) {
      module.emitError("--label-smoothing must be in [0, 1]");
      return signalPassFailure();
    }
    // The trainer checks labels against it and leaves it out of evaluation
    // (absent: PyTorch's -100).
    if (kind == LossKind::CrossEntropy && ignoreIndex != -100)
      module->setAttr(tc::kIgnoreIndexAttrName,
                      IntegerAttr::get(IntegerType::get(module.getContext(), 64), ignoreIndex));
    if (kind != LossKind::Output && sampleWeightNorm == rt::SampleWeightNorm::Mean)
      module->setAttr(tc::kSampleWeightNormAttrName,
                      StringAttr::get(module.getContext(), optionName(sampleWeightNorm.getValue())));
    if (failed(attach(module, forward)))
      signalPassFailure();
  }

  LogicalResult attach(ModuleOp module, func::FuncOp forward) {
    func::FuncOp loss = forward.clone();
    loss.setSymName("loss");
    module.push_back(loss);
    auto ret = cast<func::ReturnOp>(loss.getBody().front().getTerminator());

    // The output the loss reads.
    unsigned index = 0;
    if (!outputName.empty()) {
      bool found = false;
      for (unsigned i = 0; i < loss.getNumResults() && !found; ++i)
        if (auto name = loss.getResultAttrOfType<StringAttr>(i, tc::kOutputAttrName))
          if (name.getValue() == outputName) {
            index = i;
            found = true;
          }
      if (!found)
        return loss.emitError("the model has no output named '") << outputName << "'";
    }
    if (loss.getNumResults() == 0)
      return loss.emitError("the model has no output to compute a loss from");
    Value prediction = ret.getOperand(index);
    auto predType = cast<RankedTensorType>(prediction.getType());
    // The loss ops have a location of their own, which names the output
    // they read: a kernel reads 'loss (cross-entropy of /fc3/Gemm)'.
    std::string source;
    if (auto name = dyn_cast<NameLoc>(prediction.getLoc()))
      source = name.getName().str();
    else if (auto output = loss.getResultAttrOfType<StringAttr>(index, tc::kOutputAttrName))
      source = "output " + output.getValue().str();
    Location loc = NameLoc::get(
        StringAttr::get(loss.getContext(),
                        "loss (" + std::string(optionName(kind.getValue())) + (source.empty() ? "" : " of " + source) + ")"),
        prediction.getLoc());
    OpBuilder b(ret);

    SmallVector<Value> results;
    SmallVector<DictionaryAttr> resultAttrs = {b.getDictionaryAttr(
        b.getNamedAttr(tc::kOutputAttrName, b.getStringAttr("loss")))};
    if (kind == LossKind::Output) {
      if (predType.getRank() != 0 || !predType.getElementType().isF32())
        return loss.emitError("--loss=output needs a scalar f32 model output, got ")
               << predType;
      results.push_back(prediction);
    } else {
      FailureOr<std::pair<Value, Value>> losses = weightedLoss(b, loss, prediction, loc);
      if (failed(losses))
        return failure();
      results = {losses->first, losses->second};
      resultAttrs.push_back(b.getDictionaryAttr(
          {b.getNamedAttr(tc::kOutputAttrName, b.getStringAttr("sample_losses")),
           b.getNamedAttr(tc::kSampleLossesAttrName, b.getUnitAttr())}));
    }
    results.append(ret.getOperands().begin(), ret.getOperands().end());
    for (unsigned i = 0; i < loss.getNumResults(); ++i)
      resultAttrs.push_back(loss.getResultAttrDict(i));
    if (failed(trainMode(module, loss, b, results, resultAttrs)) || failed(checkInputNames(loss)))
      return failure();
    b.create<func::ReturnOp>(ret.getLoc(), results);
    ret.erase();
    loss.setFunctionType(b.getFunctionType(loss.getArgumentTypes(),
                                           ValueRange(results).getTypes()));
    loss.setAllResultAttrs(resultAttrs);
    return success();
  }

  /// PyTorch's model.train(): every batch norm normalizes with the batch
  /// statistics of the samples whose loss weight is non-zero, and its updated
  /// running statistics become results that write the parameters back
  /// (`tc.update`).
  LogicalResult trainMode(ModuleOp module, func::FuncOp loss, OpBuilder &b,
                          SmallVectorImpl<Value> &results,
                          SmallVectorImpl<DictionaryAttr> &resultAttrs) {
    // The real rows (a short batch's padding left out): the mask where there
    // is one, else the weights (padding 0, every sample 1).
    Value weights;
    for (BlockArgument arg : loss.getArguments())
      if (loss.getArgAttr(arg.getArgNumber(), tc::kSampleMaskAttrName) ||
          (!weights && loss.getArgAttr(arg.getArgNumber(), tc::kSampleWeightsAttrName)))
        weights = arg;
    dropoutTraining(loss, b);
    llvm::StringSet<> updated;
    WalkResult walk = loss.walk([&](tc::BatchNormOp bn) {
      bn.setTrainingAttr(b.getBoolAttr(true));
      auto input = cast<RankedTensorType>(bn.getInput().getType());
      if (weights && !bn.getSampleMask() &&
          cast<RankedTensorType>(weights.getType()).getDimSize(0) == input.getDimSize(0))
        bn.getSampleMaskMutable().assign(weights);
      for (auto [stat, next] : {std::pair<Value, Value>{bn.getMean(), bn.getRunningMean()},
                                {bn.getVar(), bn.getRunningVar()}}) {
        auto arg = dyn_cast<BlockArgument>(stat);
        auto symbol = arg ? loss.getArgAttrOfType<FlatSymbolRefAttr>(arg.getArgNumber(),
                                                                     tc::kParamAttrName)
                          : nullptr;
        if (!symbol)
          continue; // a constant statistic stays as it is
        if (!updated.insert(symbol.getValue()).second) {
          bn.emitError("running statistic ")
              << symbol << " is read by more than one batch norm; each needs its own";
          return WalkResult::interrupt();
        }
        if (auto param = module.lookupSymbol<tc::ParamOp>(symbol); param && param.getTrainable()) {
          bn.emitError("running statistic ") << symbol << " is marked trainable";
          return WalkResult::interrupt();
        }
        results.push_back(next);
        resultAttrs.push_back(b.getDictionaryAttr(
            {b.getNamedAttr(tc::kOutputAttrName, b.getStringAttr(symbol.getValue())),
             b.getNamedAttr(tc::kUpdateAttrName, symbol)}));
      }
      return WalkResult::advance();
    });
    return failure(walk.wasInterrupted());
  }

  /// The step's inputs are files named after them: a model input may not
  /// take the name of the label, the sample weights or the dropout key.
  LogicalResult checkInputNames(func::FuncOp loss) {
    llvm::StringSet<> modelInputs;
    for (unsigned i = 0; i < loss.getNumArguments(); ++i)
      if (auto name = loss.getArgAttrOfType<StringAttr>(i, tc::kInputAttrName))
        modelInputs.insert(name.getValue());
    for (unsigned i = 0; i < loss.getNumArguments(); ++i) {
      StringRef added;
      if (auto label = loss.getArgAttrOfType<StringAttr>(i, tc::kLabelAttrName))
        added = label.getValue();
      else if (loss.getArgAttr(i, tc::kSampleWeightsAttrName))
        added = tc::kSampleWeightsInputName;
      else if (loss.getArgAttr(i, tc::kSampleMaskAttrName))
        added = tc::kSampleMaskInputName;
      else if (loss.getArgAttr(i, tc::kDropoutKeyAttrName))
        added = tc::kDropoutKeyInputName;
      if (added.empty() || !modelInputs.contains(added))
        continue;
      if (loss.getArgAttr(i, tc::kLabelAttrName))
        return loss.emitError("the model has an input named '")
               << added << "', the name of the label input; choose another with --label=NAME";
      return loss.emitError("the model has an input named '")
             << added << "', which the training step reserves for its own input";
    }
    return success();
  }

  /// Every dropout that drops something draws its mask from the step's key
  /// [seed, step], a new input after the data, label and weight inputs.
  void dropoutTraining(func::FuncOp loss, OpBuilder &b) {
    SmallVector<tc::DropoutOp> dropouts;
    loss.walk([&](tc::DropoutOp d) {
      if (!d.getTraining() && !d.getRatio().isZero())
        dropouts.push_back(d);
    });
    if (dropouts.empty())
      return;
    unsigned at = 0;
    while (at < loss.getNumArguments() &&
           (loss.getArgAttr(at, tc::kInputAttrName) || loss.getArgAttr(at, tc::kLabelAttrName) ||
            loss.getArgAttr(at, tc::kSampleWeightsAttrName) ||
            loss.getArgAttr(at, tc::kSampleMaskAttrName)))
      ++at;
    (void)loss.insertArgument(
        at, RankedTensorType::get({2}, b.getI64Type()),
        b.getDictionaryAttr(b.getNamedAttr(tc::kDropoutKeyAttrName, b.getUnitAttr())),
        loss.getLoc());
    Value key = loss.getArgument(at);
    for (tc::DropoutOp d : dropouts) {
      d.setTrainingAttr(b.getBoolAttr(true));
      d.getKeyMutable().assign(key);
    }
  }

  /// torch.nn.CrossEntropyLoss(weight, ignore_index, label_smoothing) per
  /// position, before the mean: the elements
  ///   (1 - eps) w[y] (-log p_y) + eps / C sum_c w[c] (-log p_c)
  /// (0 where the label is ignore_index) and what each counts in the mean's
  /// denominator, w[y] (1 without class weights; 0 where ignored).
  /// `logits` has its classes on axis 1.
  std::pair<Value, Value> crossEntropy(OpBuilder &b, Value logits, Value label, Location loc) {
    auto logitsType = cast<RankedTensorType>(logits.getType());
    const int64_t classes = logitsType.getDimSize(1);
    // The label ignore_index (PyTorch's default -100) adds nothing to the
    // loss and is left out of the mean.
    Value nll = make<tc::SoftmaxCrossEntropyOp>(
        b, loc, {logits, label},
        {b.getNamedAttr("reduction", b.getStringAttr("none")),
         b.getNamedAttr("ignore_index", b.getI64IntegerAttr(ignoreIndex))});
    auto indexScalar = RankedTensorType::get({}, b.getI64Type());
    auto indexConstant = [&](int64_t value) -> Value {
      return b.create<tc::ConstantOp>(
          loc, DenseElementsAttr::get(indexScalar, APInt(64, value, /*isSigned=*/true)));
    };
    Value ignored = make<tc::EqualOp>(b, loc, {label, indexConstant(ignoreIndex)});
    const Value kept = make<tc::CastOp>(b, loc, make<tc::NotOp>(b, loc, ignored),
                                        {b.getNamedAttr("to", TypeAttr::get(b.getF32Type()))});
    Value counted = kept, table;
    if (!classWeights.empty()) {
      // w[y], with an ignored label read as class 0 and then zeroed.
      SmallVector<float> weights(classWeights.begin(), classWeights.end());
      auto tableType = RankedTensorType::get({classes}, b.getF32Type());
      table = b.create<tc::ConstantOp>(loc, DenseElementsAttr::get(tableType,
                                                                   ArrayRef<float>(weights)));
      Value safe = make<tc::WhereOp>(b, loc, {ignored, indexConstant(0), label});
      Value picked = make<tc::GatherOp>(b, loc, {table, safe},
                                        {b.getNamedAttr("axis", b.getI64IntegerAttr(0))});
      counted = make<tc::MulOp>(b, loc, {picked, counted});
      nll = make<tc::MulOp>(b, loc, {nll, counted});
    }
    if (labelSmoothing == 0.0)
      return std::make_pair(nll, counted);
    // sum_c w[c] (-log p_c) at every counted position.
    Value logp = make<tc::LogSoftmaxOp>(b, loc, logits,
                                        {b.getNamedAttr("axis", b.getI64IntegerAttr(1))});
    if (table) {
      SmallVector<int64_t> shape(logitsType.getRank(), 1);
      shape[1] = classes;
      logp = make<tc::MulOp>(
          b, loc,
          {logp, make<tc::ReshapeOp>(b, loc, table,
                                     {b.getNamedAttr("shape", b.getDenseI64ArrayAttr(shape))})});
    }
    Value spread = make<tc::NegOp>(
        b, loc,
        make<tc::ReduceSumOp>(b, loc, logp,
                              {b.getNamedAttr("axes", b.getDenseI64ArrayAttr({1})),
                               b.getNamedAttr("keepdims", b.getBoolAttr(false))}));
    spread = make<tc::MulOp>(b, loc, {spread, kept});
    const double eps = labelSmoothing;
    Value elements = make<tc::AddOp>(
        b, loc,
        {make<tc::MulOp>(b, loc, {nll, scalarConstant(b, loc, static_cast<float>(1 - eps))}),
         make<tc::MulOp>(b, loc,
                         {spread, scalarConstant(b, loc, static_cast<float>(eps / classes))})});
    return std::make_pair(elements, counted);
  }

  /// The logits with the classes moved to axis 1, the other axes in order
  /// (labels keep their shape).
  Value classesOnAxis1(OpBuilder &b, Value prediction, int64_t axis, Location loc) {
    if (axis == 1)
      return prediction;
    SmallVector<int64_t> perm = {0, axis};
    for (int64_t d = 1; d < cast<RankedTensorType>(prediction.getType()).getRank(); ++d)
      if (d != axis)
        perm.push_back(d);
    return make<tc::TransposeOp>(b, loc, prediction,
                                 {b.getNamedAttr("perm", b.getDenseI64ArrayAttr(perm))});
  }

  /// crossEntropy of logits [N, ..., C] with the classes last (a language
  /// model's [N, T, vocab]): as [N * ..., C] rows, a reshape that moves no
  /// data (a transpose to [N, C, ...] copied the logits forward and their
  /// gradient back, and left each sample's classes strided); the results
  /// back in the labels' shape.
  std::pair<Value, Value> lastAxisCrossEntropy(OpBuilder &b, Value prediction, Value label,
                                               Location loc) {
    auto predType = cast<RankedTensorType>(prediction.getType());
    auto labelShape = cast<RankedTensorType>(label.getType()).getShape();
    int64_t rows = 1;
    for (int64_t size : labelShape)
      rows *= size;
    auto reshape = [&](Value v, ArrayRef<int64_t> shape) {
      return make<tc::ReshapeOp>(b, loc, v,
                                 {b.getNamedAttr("shape", b.getDenseI64ArrayAttr(shape))});
    };
    // One statement each: the ops' order does not hang on the order in
    // which a compiler evaluates arguments.
    Value logits = reshape(prediction, {rows, predType.getShape().back()});
    Value labels = reshape(label, {rows});
    auto [rowLosses, rowCounts] = crossEntropy(b, logits, labels, loc);
    Value elements = reshape(rowLosses, labelShape);
    Value counted = reshape(rowCounts, labelShape);
    return std::make_pair(elements, counted);
  }

  /// Adds the label, weight and (where needed) mask inputs and returns the
  /// weighted mean loss and the per-sample losses [N].
  FailureOr<std::pair<Value, Value>> weightedLoss(OpBuilder &b, func::FuncOp loss,
                                                  Value prediction, Location loc) {
    auto predType = cast<RankedTensorType>(prediction.getType());
    if (predType.getRank() < 1 || !predType.getElementType().isF32())
      return loss.emitError("--loss=") << optionName(kind.getValue()) << " needs an f32 output with a batch axis, got "
                                       << predType;
    int64_t batch = predType.getDimSize(0);
    if (kind == LossKind::CrossEntropy && predType.getRank() < 2)
      return loss.emitError("--loss=cross-entropy needs logits [N, C, ...], got ") << predType;
    int64_t axis = classAxis < 0 ? classAxis + predType.getRank() : classAxis;
    if (kind == LossKind::CrossEntropy && (axis < 1 || axis >= predType.getRank()))
      return loss.emitError("--class-axis=")
             << static_cast<int64_t>(classAxis)
             << " is not an axis after the batch axis of the logits " << predType;

    if (kind == LossKind::CrossEntropy && !classWeights.empty() &&
        static_cast<int64_t>(classWeights.size()) != predType.getDimSize(axis))
      return loss.emitError("--class-weights has ")
             << classWeights.size() << " weights; the logits " << predType << " have "
             << predType.getDimSize(axis) << " classes";

    // Label and weights go after the data inputs, before the parameters.
    unsigned at = 0;
    while (at < loss.getNumArguments() &&
           loss.getArgAttr(at, tc::kInputAttrName))
      ++at;
    Type labelType = predType;
    if (kind == LossKind::CrossEntropy) {
      SmallVector<int64_t> shape(predType.getShape());
      shape.erase(shape.begin() + axis);
      labelType = RankedTensorType::get(shape, b.getI64Type());
    }
    auto weightType = RankedTensorType::get({batch}, b.getF32Type());
    (void)loss.insertArgument(at, labelType,
                              b.getDictionaryAttr(b.getNamedAttr(
                                  tc::kLabelAttrName, b.getStringAttr(labelName))),
                              loc);
    (void)loss.insertArgument(at + 1, weightType,
                              b.getDictionaryAttr(b.getNamedAttr(
                                  tc::kSampleWeightsAttrName, b.getUnitAttr())),
                              loc);
    Value label = loss.getArgument(at), weights = loss.getArgument(at + 1);
    // The real rows: what the mean divides by, and the rows a batch norm
    // normalizes over (a sample of weight 0 is in PyTorch's batch
    // statistics, a padding row is not).
    Value mask;
    if (sampleWeightNorm == rt::SampleWeightNorm::Mean || hasBatchNorm(loss, batch)) {
      (void)loss.insertArgument(at + 2, weightType,
                                b.getDictionaryAttr(b.getNamedAttr(
                                    tc::kSampleMaskAttrName, b.getUnitAttr())),
                                loc);
      mask = loss.getArgument(at + 2);
    }

    // Element-wise (or per-position) losses, [N, ...], and for
    // cross-entropy which of them count (1) or are ignored (0).
    Value elements, counted;
    if (kind == LossKind::CrossEntropy) {
      std::tie(elements, counted) =
          axis == predType.getRank() - 1 && axis > 1
              ? lastAxisCrossEntropy(b, prediction, label, loc)
              : crossEntropy(b, classesOnAxis1(b, prediction, axis, loc), label, loc);
    } else if (kind == LossKind::Mse) {
      Value diff = make<tc::SubOp>(b, loc, {prediction, label});
      elements = make<tc::MulOp>(b, loc, {diff, diff});
    } else {
      // BCE with logits, stable: max(x, 0) - x t + log(1 + exp(-|x|)).
      Value positive = make<tc::ReluOp>(b, loc, prediction);
      Value xt = make<tc::MulOp>(b, loc, {prediction, label});
      Value negAbs = make<tc::NegOp>(b, loc, make<tc::AbsOp>(b, loc, prediction));
      Value softplus = make<tc::LogOp>(
          b, loc,
          make<tc::AddOp>(b, loc, {make<tc::ExpOp>(b, loc, negAbs), scalarConstant(b, loc, 1.0f)}));
      elements = make<tc::AddOp>(b, loc, {make<tc::SubOp>(b, loc, {positive, xt}), softplus});
    }

    // s_i = sum_j l_ij / M, each sample's loss before the weights (PyTorch's
    // reduction='none', averaged over the sample's positions), and
    //   loss = sum_i w_i s_i / (sum_i d_i)            (every position counts)
    //   loss = sum_i w_i s_i / (sum_ij d_i c_ij / M)  (cross-entropy: c_ij,
    //                                                  what position j counts)
    // with d = w (--sample-weight-norm=sum) or the real rows (mean).
    auto elementType = cast<RankedTensorType>(elements.getType());
    const int64_t perSample = elementType.getNumElements() / batch;
    auto all = b.getNamedAttr("axes", b.getDenseI64ArrayAttr({}));
    auto drop = b.getNamedAttr("keepdims", b.getBoolAttr(false));
    auto perRow = [&](Value v) {
      if (cast<RankedTensorType>(v.getType()).getRank() == 1)
        return v;
      SmallVector<int64_t> axes;
      for (int64_t d = 1; d < elementType.getRank(); ++d)
        axes.push_back(d);
      Value sum = make<tc::ReduceSumOp>(
          b, loc, v, {b.getNamedAttr("axes", b.getDenseI64ArrayAttr(axes)), drop});
      return make<tc::MulOp>(b, loc,
                             {sum, scalarConstant(b, loc, 1.0f / static_cast<float>(perSample))});
    };
    Value sampleLosses = perRow(elements);
    Value total = make<tc::ReduceSumOp>(
        b, loc, make<tc::MulOp>(b, loc, {sampleLosses, weights}), {all, drop});
    Value d = sampleWeightNorm == rt::SampleWeightNorm::Mean ? mask : weights;
    Value denominator = counted ? make<tc::MulOp>(b, loc, {perRow(counted), d}) : d;
    denominator = make<tc::ReduceSumOp>(b, loc, denominator, {all, drop});
    return std::make_pair(make<tc::DivOp>(b, loc, {total, denominator}), sampleLosses);
  }

  /// Whether a batch norm of `loss` normalizes a batch of `batch` rows.
  static bool hasBatchNorm(func::FuncOp loss, int64_t batch) {
    bool found = false;
    loss.walk([&](tc::BatchNormOp bn) {
      found |= cast<RankedTensorType>(bn.getInput().getType()).getDimSize(0) == batch;
    });
    return found;
  }
};

} // namespace
