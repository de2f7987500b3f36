//===- ConvertNN.cpp - contractions, convolution, normalization, pooling,
//                     softmax, reductions and losses -----------------------===//

#include "frontend/Importer.h"

#include "ir/ShapeLogic.h"
#include "ir/TcOps.h"

#include <algorithm>

using namespace mlir;
using namespace trainc;
using namespace trainc::frontend;

namespace {

/// Window attributes of Conv and the pools, after resolving auto_pad.
struct Window {
  SmallVector<int64_t> kernel, strides, pads, dilations;
};

FailureOr<Window> windowAttrs(NodeContext &ctx, ArrayRef<int64_t> inShape,
                              ArrayRef<int64_t> kernel) {
  size_t spatial = inShape.size() - 2;
  Window w;
  w.kernel.assign(kernel.begin(), kernel.end());
  auto orDefault = [&](llvm::StringRef name, size_t n, int64_t fill) {
    auto values = ctx.attrInts(name);
    return values ? SmallVector<int64_t>(values->begin(), values->end())
                  : SmallVector<int64_t>(n, fill);
  };
  w.strides = orDefault("strides", spatial, 1);
  w.dilations = orDefault("dilations", spatial, 1);
  w.pads = orDefault("pads", 2 * spatial, 0);
  if (w.strides.size() != spatial || w.dilations.size() != spatial ||
      w.pads.size() != 2 * spatial || w.kernel.size() != spatial)
    return ctx.error("kernel_shape, strides, dilations and pads must match the " +
                     llvm::Twine(spatial) + " spatial axes of the input");
  for (size_t i = 0; i < spatial; ++i)
    if (w.strides[i] < 1 || w.dilations[i] < 1 || w.kernel[i] < 1)
      return ctx.error("kernel sizes, strides and dilations must be positive");
  std::string autoPad = ctx.attrString("auto_pad", "NOTSET");
  if (autoPad == "VALID") {
    std::fill(w.pads.begin(), w.pads.end(), 0);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t i = 0; i < spatial; ++i) {
      int64_t in = inShape[i + 2];
      int64_t out = (in + w.strides[i] - 1) / w.strides[i];
      int64_t span = (w.kernel[i] - 1) * w.dilations[i] + 1;
      int64_t total = std::max<int64_t>(0, (out - 1) * w.strides[i] + span - in);
      int64_t small = total / 2, large = total - small;
      w.pads[i] = autoPad == "SAME_UPPER" ? small : large;
      w.pads[i + spatial] = autoPad == "SAME_UPPER" ? large : small;
    }
  } else if (autoPad != "NOTSET") {
    return ctx.error("auto_pad '" + autoPad + "' is not one of NOTSET, SAME_UPPER, "
                     "SAME_LOWER, VALID");
  }
  return w;
}

FailureOr<RankedTensorType> spatialInput(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  if (failed(type))
    return failure();
  if (type->getRank() < 3)
    return ctx.error("input must be [N, C, spatial...], got " +
                     shape::format(type->getShape()));
  return type;
}

} // namespace

LogicalResult trainc::frontend::convertMatMul(NodeContext &ctx) {
  FailureOr<Value> a = ctx.input(0), b = ctx.input(1);
  if (failed(a) || failed(b))
    return failure();
  return ctx.emit<tc::MatMulOp>({*a, *b});
}

LogicalResult trainc::frontend::convertGemm(NodeContext &ctx) {
  FailureOr<Value> a = ctx.input(0), b = ctx.input(1);
  if (failed(a) || failed(b))
    return failure();
  SmallVector<Value> operands = {*a, *b};
  if (ctx.hasInput(2)) {
    FailureOr<Value> c = ctx.input(2);
    if (failed(c))
      return failure();
    operands.push_back(*c);
  }
  return ctx.emit<tc::GemmOp>(
      operands, {ctx.namedF32("alpha", ctx.attrFloat("alpha", 1.0f)),
                 ctx.namedF32("beta", ctx.attrFloat("beta", 1.0f)),
                 ctx.namedBool("trans_a", ctx.attrInt("transA", 0) != 0),
                 ctx.namedBool("trans_b", ctx.attrInt("transB", 0) != 0)});
}

LogicalResult trainc::frontend::convertConv(NodeContext &ctx) {
  FailureOr<RankedTensorType> inType = spatialInput(ctx);
  FailureOr<RankedTensorType> wType = ctx.inputType(1);
  if (failed(inType) || failed(wType))
    return failure();
  if (wType->getRank() != inType->getRank())
    return ctx.error("weight rank " + llvm::Twine(wType->getRank()) +
                     " differs from input rank " + llvm::Twine(inType->getRank()));
  ArrayRef<int64_t> kernel = wType->getShape().drop_front(2);
  if (auto declared = ctx.attrInts("kernel_shape"))
    if (ArrayRef<int64_t>(*declared) != kernel)
      return ctx.error("kernel_shape does not match the weight's spatial shape " +
                       shape::format(kernel));
  FailureOr<Window> w = windowAttrs(ctx, inType->getShape(), kernel);
  FailureOr<SmallVector<Value>> operands = ctx.inputs(2, 3);
  if (failed(w) || failed(operands))
    return failure();
  return ctx.emit<tc::ConvOp>(*operands, {ctx.namedArray("strides", w->strides),
                                         ctx.namedArray("pads", w->pads),
                                         ctx.namedArray("dilations", w->dilations),
                                         ctx.namedI64("group", ctx.attrInt("group", 1))});
}

LogicalResult trainc::frontend::convertBatchNorm(NodeContext &ctx) {
  SmallVector<Value> operands;
  for (unsigned i = 0; i < 5; ++i) {
    FailureOr<Value> v = ctx.input(i);
    if (failed(v))
      return failure();
    operands.push_back(*v);
  }
  // @forward has PyTorch's model.eval() semantics whatever training_mode
  // says (an export with TrainingMode.TRAINING sets it); the loss phase
  // switches every batch norm of the training step to batch statistics.
  const bool training = false;
  auto op = ctx.create<tc::BatchNormOp>(
      operands, {ctx.namedF32("epsilon", ctx.attrFloat("epsilon", 1e-5f)),
                 ctx.namedF32("momentum", ctx.attrFloat("momentum", 0.9f)),
                 ctx.namedBool("training", training)});
  if (failed(op))
    return failure();
  for (unsigned i = 0; i < 3; ++i)
    ctx.setOutput(i, (*op)->getResult(i));
  return success();
}

/// The optional Mean and InvStdDev outputs of LayerNormalization, spelled out
/// in tc ops: mean and 1 / sqrt(var + eps) over the normalized axes, kept as
/// size-1 axes (ONNX's shapes).
static LogicalResult emitLayerNormStatistics(NodeContext &ctx, Value x, int64_t axis,
                                             float epsilon) {
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> axes;
  for (int64_t d = axis; d < type.getRank(); ++d)
    axes.push_back(d);
  SmallVector<NamedAttribute> reduce = {ctx.namedArray("axes", axes),
                                        ctx.namedBool("keepdims", true)};
  auto value = [](FailureOr<Operation *> op) {
    return failed(op) ? FailureOr<Value>(failure()) : FailureOr<Value>((*op)->getResult(0));
  };
  FailureOr<Value> mean = value(ctx.create<tc::ReduceMeanOp>(x, reduce));
  if (failed(mean))
    return failure();
  ctx.setOutput(1, *mean);
  if (!ctx.outputUsed(2))
    return success();
  FailureOr<Value> centered = value(ctx.create<tc::SubOp>({x, *mean}));
  if (failed(centered))
    return failure();
  FailureOr<Value> squares = value(ctx.create<tc::MulOp>({*centered, *centered}));
  if (failed(squares))
    return failure();
  FailureOr<Value> variance = value(ctx.create<tc::ReduceMeanOp>(*squares, reduce));
  if (failed(variance))
    return failure();
  Tensor eps = Tensor::scalarReal(fromMlirType(type.getElementType()).value_or(DType::F32),
                                  epsilon);
  Value epsValue =
      ctx.builder().create<tc::ConstantOp>(ctx.loc(), toAttribute(ctx.context(), eps));
  FailureOr<Value> shifted = value(ctx.create<tc::AddOp>({*variance, epsValue}));
  if (failed(shifted))
    return failure();
  FailureOr<Value> deviation = value(ctx.create<tc::SqrtOp>(*shifted));
  if (failed(deviation))
    return failure();
  FailureOr<Value> inverse = value(ctx.create<tc::ReciprocalOp>(*deviation));
  if (failed(inverse))
    return failure();
  ctx.setOutput(2, *inverse);
  return success();
}

LogicalResult trainc::frontend::convertLayerNorm(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  if (failed(type))
    return failure();
  FailureOr<int64_t> axis = ctx.normalizeAxis(ctx.attrInt("axis", -1), type->getRank());
  if (failed(axis))
    return failure();
  FailureOr<SmallVector<Value>> operands = ctx.inputs(2, 3);
  if (failed(operands))
    return failure();
  float epsilon = ctx.attrFloat("epsilon", 1e-5f);
  if (failed(ctx.emit<tc::LayerNormOp>(
          *operands, {ctx.namedI64("axis", *axis), ctx.namedF32("epsilon", epsilon)})))
    return failure();
  if (ctx.outputUsed(1) || ctx.outputUsed(2))
    return emitLayerNormStatistics(ctx, (*operands)[0], *axis, epsilon);
  return success();
}

LogicalResult trainc::frontend::convertPool(NodeContext &ctx) {
  bool isMax = ctx.opType() == "MaxPool";
  if (isMax && ctx.outputUsed(1))
    return ctx.error("the Indices output of MaxPool is not supported");
  FailureOr<RankedTensorType> type = spatialInput(ctx);
  if (failed(type))
    return failure();
  auto kernel = ctx.attrInts("kernel_shape");
  if (!kernel)
    return ctx.error("attribute 'kernel_shape' is required");
  FailureOr<Window> w = windowAttrs(ctx, type->getShape(), *kernel);
  FailureOr<Value> x = ctx.input(0);
  if (failed(w) || failed(x))
    return failure();
  bool ceil = ctx.attrInt("ceil_mode", 0) != 0;
  if (isMax)
    return ctx.emit<tc::MaxPoolOp>(*x, {ctx.namedArray("kernel_shape", w->kernel),
                                        ctx.namedArray("strides", w->strides),
                                        ctx.namedArray("pads", w->pads),
                                        ctx.namedArray("dilations", w->dilations),
                                        ctx.namedBool("ceil_mode", ceil)});
  if (llvm::any_of(w->dilations, [](int64_t d) { return d != 1; }))
    return ctx.error("dilated AveragePool is not supported");
  return ctx.emit<tc::AvgPoolOp>(
      *x, {ctx.namedArray("kernel_shape", w->kernel), ctx.namedArray("strides", w->strides),
           ctx.namedArray("pads", w->pads),
           ctx.namedBool("count_include_pad", ctx.attrInt("count_include_pad", 0) != 0),
           ctx.namedBool("ceil_mode", ceil)});
}

LogicalResult trainc::frontend::convertGlobalPool(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = spatialInput(ctx);
  FailureOr<Value> x = ctx.input(0);
  if (failed(type) || failed(x))
    return failure();
  if (ctx.opType() == "GlobalAveragePool")
    return ctx.emit<tc::GlobalAvgPoolOp>(*x);
  SmallVector<int64_t> axes;
  for (int64_t i = 2; i < type->getRank(); ++i)
    axes.push_back(i);
  return ctx.emit<tc::ReduceMaxOp>(*x, {ctx.namedArray("axes", axes),
                                        ctx.namedBool("keepdims", true)});
}

LogicalResult trainc::frontend::convertSoftmax(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  FailureOr<Value> x = ctx.input(0);
  if (failed(type) || failed(x))
    return failure();
  FailureOr<int64_t> axis = ctx.normalizeAxis(ctx.attrInt("axis", -1), type->getRank());
  if (failed(axis))
    return failure();
  if (ctx.opType() == "Softmax")
    return ctx.emit<tc::SoftmaxOp>(*x, {ctx.namedI64("axis", *axis)});
  return ctx.emit<tc::LogSoftmaxOp>(*x, {ctx.namedI64("axis", *axis)});
}

LogicalResult trainc::frontend::convertReduce(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  FailureOr<Value> x = ctx.input(0);
  if (failed(type) || failed(x))
    return failure();
  // ReduceSum takes axes as an input from opset 13, the others from 18.
  bool axesAsInput = ctx.opType() == "ReduceSum" || ctx.opset() >= 18;
  if (axesAsInput && ctx.attr("axes"))
    return ctx.error("axes are an input at opset " + llvm::Twine(ctx.opset()) +
                     ", not an attribute");
  if (!axesAsInput && ctx.hasInput(1))
    return ctx.error("axes are an attribute at opset " + llvm::Twine(ctx.opset()) +
                     ", not an input (an input from opset 18)");
  std::vector<int64_t> axes;
  if (axesAsInput) {
    if (ctx.hasInput(1)) {
      FailureOr<std::vector<int64_t>> v = ctx.constantInts(1, "axes");
      if (failed(v))
        return failure();
      axes = *v;
    }
  } else if (auto v = ctx.attrInts("axes")) {
    axes = *v;
  }
  if (axes.empty() && ctx.attrInt("noop_with_empty_axes", 0) != 0) {
    ctx.setOutput(0, *x);
    return success();
  }
  for (int64_t &axis : axes) {
    FailureOr<int64_t> a = ctx.normalizeAxis(axis, type->getRank());
    if (failed(a))
      return failure();
    axis = *a;
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    return ctx.error("axes name an axis twice");
  SmallVector<NamedAttribute> attrs = {ctx.namedArray("axes", axes),
                                       ctx.namedBool("keepdims", ctx.attrInt("keepdims", 1) != 0)};
  if (ctx.opType() == "ReduceSum")
    return ctx.emit<tc::ReduceSumOp>(*x, attrs);
  if (ctx.opType() == "ReduceMean")
    return ctx.emit<tc::ReduceMeanOp>(*x, attrs);
  return ctx.emit<tc::ReduceMaxOp>(*x, attrs);
}

LogicalResult trainc::frontend::convertClassLoss(NodeContext &ctx) {
  bool softmax = ctx.opType() == "SoftmaxCrossEntropyLoss";
  if (ctx.hasInput(2))
    return ctx.error("class weights (input 'weights') are not supported");
  FailureOr<Value> scores = ctx.input(0), labels = ctx.input(1);
  if (failed(scores) || failed(labels))
    return failure();
  SmallVector<NamedAttribute> attrs = {
      ctx.namedString("reduction", ctx.attrString("reduction", "mean"))};
  if (ctx.attr("ignore_index"))
    attrs.push_back(ctx.namedI64("ignore_index", ctx.attrInt("ignore_index", 0)));
  if (softmax) {
    if (failed(ctx.emit<tc::SoftmaxCrossEntropyOp>({*scores, *labels}, attrs)))
      return failure();
    if (ctx.outputUsed(1)) {
      // The optional log_prob output: log_softmax over the class axis.
      auto logProb = ctx.create<tc::LogSoftmaxOp>(*scores, {ctx.namedI64("axis", 1)});
      if (failed(logProb))
        return failure();
      ctx.setOutput(1, (*logProb)->getResult(0));
    }
    return success();
  }
  return ctx.emit<tc::NllLossOp>({*scores, *labels}, attrs);
}


