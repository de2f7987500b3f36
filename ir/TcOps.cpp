//===- TcOps.cpp - shape functions and verifiers of the tc ops -------------===//
//
// One shape function per op (`inferReturnTypes`). The verifier calls it through
// InferTypeOpInterface and compares with the declared result types; builders
// and the importer call it to create ops. Shape functions must never assume
// that the op is valid: they check everything they use and report with the
// op's location, which carries the ONNX node name.
//
//===----------------------------------------------------------------------===//

#include "ir/TcOps.h"
#include "ir/ShapeLogic.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace trainc;
using namespace trainc::tc;

namespace {

/// The operand's type as a ranked tensor, or null.
RankedTensorType ranked(Type type) { return dyn_cast<RankedTensorType>(type); }
RankedTensorType ranked(Value value) {
  return value ? ranked(value.getType()) : RankedTensorType();
}

/// Fails with an error at `loc` unless every type is a ranked tensor.
LogicalResult requireRanked(std::optional<Location> loc,
                            ArrayRef<RankedTensorType> types) {
  for (RankedTensorType t : types)
    if (!t)
      return emitOptionalError(loc, "expects ranked tensor operands");
  return success();
}

LogicalResult requireSameElementType(std::optional<Location> loc,
                                     RankedTensorType a, RankedTensorType b,
                                     StringRef what, StringRef first = "the input") {
  if (a.getElementType() != b.getElementType())
    return emitOptionalError(loc, what, " has element type ", b.getElementType(),
                             " but ", first, " has ", a.getElementType());
  return success();
}

/// The result element type of a contraction (matmul, gemm) or a reduction
/// over operands of element type `input`: that type, or f32 when `outType`
/// asks for it, which only f16 and bf16 operands may do (they accumulate in
/// f32 and the result keeps that sum unrounded).
FailureOr<Type> widenedResult(std::optional<Location> loc, Type input, TypeAttr outType) {
  if (!outType)
    return input;
  if (!input.isF16() && !input.isBF16())
    return emitOptionalError(loc, "out_type ", outType.getValue(),
                             " needs f16 or bf16 operands, got ", input);
  return outType.getValue();
}

/// The channels-first view of `shape` when `channelsLast`
/// (shape::channelsFirst), else the shape itself.
SmallVector<int64_t> channelsFirst(ArrayRef<int64_t> shape, bool channelsLast) {
  return channelsLast ? shape::channelsFirst(shape) : SmallVector<int64_t>(shape);
}

/// The inverse: [N, C, spatial...] stored channels-last when `channelsLast`.
SmallVector<int64_t> channelsLastIf(ArrayRef<int64_t> shape, bool channelsLast) {
  return channelsLast ? shape::channelsLast(shape) : SmallVector<int64_t>(shape);
}

RankedTensorType channelsFirst(RankedTensorType type, bool channelsLast) {
  return type && channelsLast
             ? RankedTensorType::get(channelsFirst(type.getShape(), true), type.getElementType())
             : type;
}

/// Shape function of sliding-window ops (convolution and pooling) over the
/// spatial axes 2.. of an NC... input.
LogicalResult inferWindowShape(std::optional<Location> loc,
                               ArrayRef<int64_t> inShape,
                               ArrayRef<int64_t> kernel,
                               ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                               ArrayRef<int64_t> dilations, bool ceilMode,
                               SmallVectorImpl<int64_t> &outShape) {
  size_t spatial = inShape.size() - 2;
  if (kernel.size() != spatial || strides.size() != spatial ||
      dilations.size() != spatial || pads.size() != 2 * spatial)
    return emitOptionalError(
        loc, "expects ", spatial,
        " kernel sizes, strides and dilations and ", 2 * spatial,
        " pads for an input of rank ", inShape.size(), ", got ", kernel.size(),
        ", ", strides.size(), ", ", dilations.size(), " and ", pads.size());
  for (size_t i = 0; i < spatial; ++i) {
    if (kernel[i] < 1 || strides[i] < 1 || dilations[i] < 1)
      return emitOptionalError(loc, "kernel sizes, strides and dilations must be "
                                    "positive");
    if (pads[i] < 0 || pads[i + spatial] < 0)
      return emitOptionalError(loc, "pads must not be negative");
    int64_t out =
        shape::windowOutputSize(inShape[i + 2], kernel[i], strides[i], pads[i],
                                pads[i + spatial], dilations[i], ceilMode);
    if (out < 1)
      return emitOptionalError(loc, "window of size ", kernel[i], " (dilation ",
                               dilations[i], ") does not fit spatial axis ",
                               i + 2, " of size ", inShape[i + 2],
                               " with its padding");
    outShape.push_back(out);
  }
  return success();
}

/// A default-false flag as a shape function sees it: builders call the shape
/// function before the op fills in its default attributes, so it may be absent.
bool flagOf(BoolAttr attr) { return attr && attr.getValue(); }

LogicalResult checkReduction(std::optional<Location> loc, StringRef reduction) {
  if (reduction != "mean" && reduction != "sum" && reduction != "none")
    return emitOptionalError(loc, "reduction must be 'mean', 'sum' or 'none', got '",
                             reduction, "'");
  return success();
}

/// Shape function of the class-index losses: [N, C, d...] scores against
/// [N, d...] labels.
LogicalResult inferClassLoss(std::optional<Location> loc, Value scoresValue,
                             Value labelsValue, StringRef reduction,
                             SmallVectorImpl<Type> &inferred) {
  RankedTensorType scores = ranked(scoresValue), labels = ranked(labelsValue);
  if (failed(requireRanked(loc, {scores, labels})) ||
      failed(checkReduction(loc, reduction)))
    return failure();
  if (scores.getRank() < 2)
    return emitOptionalError(loc, "scores must be [N, C, d...], got rank ",
                             scores.getRank());
  SmallVector<int64_t> expected(scores.getShape());
  expected.erase(expected.begin() + 1);
  if (labels.getShape() != ArrayRef<int64_t>(expected))
    return emitOptionalError(loc, "labels must have shape ",
                             shape::format(expected), " for scores of shape ",
                             shape::format(scores.getShape()), ", got ",
                             shape::format(labels.getShape()));
  if (reduction == "none")
    inferred.push_back(RankedTensorType::get(expected, scores.getElementType()));
  else
    inferred.push_back(RankedTensorType::get({}, scores.getElementType()));
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Shared shape functions
//===----------------------------------------------------------------------===//

LogicalResult tc::inferBroadcastResult(std::optional<Location> location,
                                       ArrayRef<Type> operands, bool boolResult,
                                       SmallVectorImpl<Type> &inferred) {
  SmallVector<int64_t> shape;
  Type element;
  for (Type t : operands) {
    RankedTensorType type = ranked(t);
    if (!type)
      return emitOptionalError(location, "expects ranked tensor operands");
    if (!element)
      element = type.getElementType();
    else if (type.getElementType() != element)
      return emitOptionalError(location, "operands have different element types ",
                               element, " and ", type.getElementType());
    auto joined = shape::broadcast(shape, type.getShape());
    if (!joined)
      return emitOptionalError(location, "shapes ", shape::format(shape), " and ",
                               shape::format(type.getShape()),
                               " do not broadcast");
    shape = *joined;
  }
  Type resultElement =
      boolResult ? IntegerType::get(element.getContext(), 1) : element;
  inferred.push_back(RankedTensorType::get(shape, resultElement));
  return success();
}

LogicalResult tc::inferReduceResult(std::optional<Location> location,
                                    Type inputType, ArrayRef<int64_t> axes,
                                    bool keepdims, TypeAttr outType,
                                    SmallVectorImpl<Type> &inferred) {
  RankedTensorType input = ranked(inputType);
  if (!input)
    return emitOptionalError(location, "expects a ranked tensor operand");
  int64_t rank = input.getRank();
  SmallVector<bool> reduced(rank, axes.empty());
  int64_t previous = -1;
  for (int64_t axis : axes) {
    if (axis < 0 || axis >= rank)
      return emitOptionalError(location, "axis ", axis,
                               " is out of range for rank ", rank);
    if (axis <= previous)
      return emitOptionalError(location, "axes must be strictly increasing");
    previous = axis;
    reduced[axis] = true;
  }
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced[i])
      shape.push_back(input.getDimSize(i));
    else if (keepdims)
      shape.push_back(1);
  }
  FailureOr<Type> element = widenedResult(location, input.getElementType(), outType);
  if (failed(element))
    return failure();
  inferred.push_back(RankedTensorType::get(shape, *element));
  return success();
}

//===----------------------------------------------------------------------===//
// Parameters and constants
//===----------------------------------------------------------------------===//

LogicalResult ParamOp::verify() {
  if (std::optional<ElementsAttr> init = getInitialValue())
    if (init->getType() != getType())
      return emitOpError("initial value has type ")
             << init->getType() << " but the parameter is " << getType();
  return success();
}

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> location,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &inferred) {
  auto value = dyn_cast_or_null<ElementsAttr>(adaptor.getValueAttr());
  if (!value || !isa<RankedTensorType>(value.getType()))
    return emitOptionalError(location, "expects a ranked tensor value");
  inferred.push_back(value.getType());
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

LogicalResult GlobalNormOp::inferReturnTypes(MLIRContext *context, std::optional<Location>,
                                             Adaptor, SmallVectorImpl<Type> &inferred) {
  inferred.push_back(RankedTensorType::get({}, Float32Type::get(context)));
  return success();
}

LogicalResult GlobalNormOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one operand");
  for (Value input : getInputs())
    if (!cast<ShapedType>(input.getType()).getElementType().isF32())
      return emitOpError("operands must be f32, got ") << input.getType();
  auto result = cast<ShapedType>(getResult().getType());
  if (result.getRank() != 0 || !result.getElementType().isF32())
    return emitOpError("result must be tensor<f32>, got ") << result;
  return success();
}

LogicalResult DampedInverseOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                                Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  inferred.push_back(adaptor.getMatrix().getType());
  return success();
}

LogicalResult DampedInverseOp::verify() {
  auto matrix = cast<ShapedType>(getMatrix().getType());
  if (matrix.getRank() != 2 || matrix.getDimSize(0) != matrix.getDimSize(1) ||
      !matrix.getElementType().isF32())
    return emitOpError("matrix must be a square f32 matrix, got ") << matrix;
  if (getPrevious().getType() != matrix || getResult().getType() != matrix)
    return emitOpError("previous and the result must have the matrix's type ") << matrix;
  for (Value scalar : {getDamping(), getInvert()}) {
    auto type = cast<ShapedType>(scalar.getType());
    if (type.getRank() != 0 || !type.getElementType().isF32())
      return emitOpError("damping and invert must be tensor<f32>, got ") << type;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Pointwise ops
//===----------------------------------------------------------------------===//

LogicalResult GeluOp::verify() {
  if (getApproximate() != "none" && getApproximate() != "tanh")
    return emitOpError("approximate must be 'none' or 'tanh', got '")
           << getApproximate() << "'";
  return success();
}

LogicalResult DropoutOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                          Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  inferred.push_back(adaptor.getInput().getType());
  return success();
}

LogicalResult DropoutOp::verify() {
  float ratio = getRatio().convertToFloat();
  if (!(ratio >= 0.0f && ratio < 1.0f))
    return emitOpError("ratio must be in [0, 1), got ") << ratio;
  if (getTraining() != static_cast<bool>(getKey()))
    return emitOpError(getTraining() ? "in training needs a key operand [seed, step]"
                                     : "outside training takes no key operand");
  if (Value key = getKey()) {
    auto type = cast<RankedTensorType>(key.getType());
    if (type.getShape() != ArrayRef<int64_t>{2})
      return emitOpError("key must be tensor<2xi64> [seed, step], got ") << type;
  }
  if (getStream() > UINT32_MAX)
    return emitOpError("stream must be in [0, 2^32), got ") << getStream();
  return success();
}

LogicalResult WhereOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> location,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  RankedTensorType cond = ranked(adaptor.getCondition());
  if (!cond)
    return emitOptionalError(location, "expects a ranked condition");
  SmallVector<Type> values;
  if (failed(inferBroadcastResult(location,
                                  {adaptor.getTrueValue().getType(),
                                   adaptor.getFalseValue().getType()},
                                  false, values)))
    return failure();
  auto joined = shape::broadcast(cond.getShape(),
                                 cast<RankedTensorType>(values[0]).getShape());
  if (!joined)
    return emitOptionalError(location, "condition shape ",
                             shape::format(cond.getShape()),
                             " does not broadcast with the values");
  inferred.push_back(RankedTensorType::get(
      *joined, cast<RankedTensorType>(values[0]).getElementType()));
  return success();
}

LogicalResult CastOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> location,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  RankedTensorType input = ranked(adaptor.getInput());
  auto to = dyn_cast_or_null<TypeAttr>(adaptor.getToAttr());
  if (!input || !to)
    return emitOptionalError(location, "expects a ranked input and a 'to' type");
  inferred.push_back(RankedTensorType::get(input.getShape(), to.getValue()));
  return success();
}

//===----------------------------------------------------------------------===//
// Contractions and convolution
//===----------------------------------------------------------------------===//

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  RankedTensorType lhs = ranked(adaptor.getLhs()), rhs = ranked(adaptor.getRhs());
  if (failed(requireRanked(location, {lhs, rhs})) ||
      failed(requireSameElementType(location, lhs, rhs, "the right operand",
                                        "the left operand")))
    return failure();
  // trans_a / trans_b swap the last two axes of that operand; a vector has
  // no second axis to swap with.
  auto transposed = [&](RankedTensorType t, bool flag, StringRef name,
                        SmallVectorImpl<int64_t> &out) -> LogicalResult {
    out.assign(t.getShape().begin(), t.getShape().end());
    if (!flag)
      return success();
    if (out.size() < 2)
      return emitOptionalError(location, name, " needs an operand of rank >= 2, got ",
                               shape::format(t.getShape()));
    std::swap(out[out.size() - 1], out[out.size() - 2]);
    return success();
  };
  SmallVector<int64_t> a, b;
  bool ta = flagOf(adaptor.getTransAAttr()), tb = flagOf(adaptor.getTransBAttr());
  if (failed(transposed(lhs, ta, "trans_a", a)) ||
      failed(transposed(rhs, tb, "trans_b", b)))
    return failure();
  std::string error;
  auto shape = shape::matmul(a, b, error);
  if (!shape)
    return emitOptionalError(location, error,
                             ta || tb ? " (operands as transposed by trans_a/trans_b)" : "");
  FailureOr<Type> element =
      widenedResult(location, lhs.getElementType(), adaptor.getOutTypeAttr());
  if (failed(element))
    return failure();
  inferred.push_back(RankedTensorType::get(*shape, *element));
  return success();
}

LogicalResult GemmOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> location,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  RankedTensorType a = ranked(adaptor.getA()), b = ranked(adaptor.getB());
  if (failed(requireRanked(location, {a, b})) ||
      failed(requireSameElementType(location, a, b, "B", "A")))
    return failure();
  if (a.getRank() != 2 || b.getRank() != 2)
    return emitOptionalError(location, "A and B must be matrices, got ",
                             shape::format(a.getShape()), " and ",
                             shape::format(b.getShape()));
  bool ta = flagOf(adaptor.getTransAAttr()), tb = flagOf(adaptor.getTransBAttr());
  int64_t m = a.getDimSize(ta ? 1 : 0), ka = a.getDimSize(ta ? 0 : 1);
  int64_t kb = b.getDimSize(tb ? 1 : 0), n = b.getDimSize(tb ? 0 : 1);
  if (ka != kb)
    return emitOptionalError(location, "contraction dimensions differ: op(A) is ",
                             m, "x", ka, ", op(B) is ", kb, "x", n);
  SmallVector<int64_t> shape = {m, n};
  FailureOr<Type> element =
      widenedResult(location, a.getElementType(), adaptor.getOutTypeAttr());
  if (failed(element))
    return failure();
  if (RankedTensorType c = ranked(adaptor.getC())) {
    if (c.getElementType() != *element)
      return emitOptionalError(location, "C has element type ", c.getElementType(),
                               " but the result has ", *element);
    auto joined = shape::broadcast(c.getShape(), shape);
    if (!joined || ArrayRef<int64_t>(*joined) != ArrayRef<int64_t>(shape))
      return emitOptionalError(location, "C of shape ",
                               shape::format(c.getShape()),
                               " does not broadcast to ", shape::format(shape));
  }
  inferred.push_back(RankedTensorType::get(shape, *element));
  return success();
}

LogicalResult ConvOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> location,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  // A channels-last conv is checked as its channels-first view.
  bool last = flagOf(adaptor.getChannelsLastAttr());
  RankedTensorType input = channelsFirst(ranked(adaptor.getInput()), last);
  RankedTensorType weight = channelsFirst(ranked(adaptor.getWeight()), last);
  if (failed(requireRanked(location, {input, weight})) ||
      failed(requireSameElementType(location, input, weight, "the weight")))
    return failure();
  if (input.getRank() < 3 || weight.getRank() != input.getRank())
    return emitOptionalError(location, "expects input [N, C, spatial...] and "
                                       "weight [M, C/group, kernel...] of one "
                                       "rank >= 3, got ",
                             shape::format(input.getShape()), " and ",
                             shape::format(weight.getShape()));
  int64_t group = adaptor.getGroup();
  int64_t channels = input.getDimSize(1), filters = weight.getDimSize(0);
  if (group < 1 || channels % group != 0 || filters % group != 0 ||
      weight.getDimSize(1) != channels / group)
    return emitOptionalError(location, "weight ", shape::format(weight.getShape()),
                             " does not match ", channels,
                             " input channels in ", group, " group(s)");
  if (RankedTensorType bias = ranked(adaptor.getBias())) {
    if (failed(requireSameElementType(location, input, bias, "the bias")))
      return failure();
    if (bias.getRank() != 1 || bias.getDimSize(0) != filters)
      return emitOptionalError(location, "bias must have shape ", filters,
                               ", got ", shape::format(bias.getShape()));
  }
  SmallVector<int64_t> shape = {input.getDimSize(0), filters};
  if (failed(inferWindowShape(location, input.getShape(),
                              weight.getShape().drop_front(2),
                              adaptor.getStrides(), adaptor.getPads(),
                              adaptor.getDilations(), false, shape)))
    return failure();
  inferred.push_back(RankedTensorType::get(channelsLastIf(shape, last), input.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Gradients of convolution and pooling
//===----------------------------------------------------------------------===//

/// Checks that a window op over `inShape` yields `outShape` ([N, C|M] as given
/// in `lead`, then the windows).
static LogicalResult checkWindowResult(std::optional<Location> loc, ArrayRef<int64_t> inShape,
                                       ArrayRef<int64_t> lead, ArrayRef<int64_t> kernel,
                                       ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                                       ArrayRef<int64_t> dilations, bool ceilMode,
                                       ArrayRef<int64_t> outShape) {
  if (inShape.size() < 3)
    return emitOptionalError(loc, "expects [N, C, spatial...] shapes");
  SmallVector<int64_t> expected(lead.begin(), lead.end());
  if (failed(inferWindowShape(loc, inShape, kernel, strides, pads, dilations, ceilMode,
                              expected)))
    return failure();
  if (ArrayRef<int64_t>(expected) != outShape)
    return emitOptionalError(loc, "the result gradient has shape ", shape::format(outShape),
                             " but the forward op produces ", shape::format(expected));
  return success();
}

LogicalResult ConvBackwardDataOp::inferReturnTypes(MLIRContext *,
                                                   std::optional<Location> location,
                                                   Adaptor adaptor,
                                                   SmallVectorImpl<Type> &inferred) {
  bool last = flagOf(adaptor.getChannelsLastAttr());
  RankedTensorType dy = channelsFirst(ranked(adaptor.getResultGrad()), last),
                   w = channelsFirst(ranked(adaptor.getWeight()), last);
  if (failed(requireRanked(location, {dy, w})) ||
      failed(requireSameElementType(location, dy, w, "the weight", "the result gradient")))
    return failure();
  SmallVector<int64_t> in = channelsFirst(adaptor.getInputShape(), last);
  if (in.size() != static_cast<size_t>(w.getRank()) || in.size() < 3)
    return emitOptionalError(location, "input_shape must have the weight's rank");
  if (failed(checkWindowResult(location, in, {in[0], w.getDimSize(0)},
                               w.getShape().drop_front(2), adaptor.getStrides(),
                               adaptor.getPads(), adaptor.getDilations(), false,
                               dy.getShape())))
    return failure();
  inferred.push_back(RankedTensorType::get(adaptor.getInputShape(), dy.getElementType()));
  return success();
}

LogicalResult ConvBackwardFilterOp::inferReturnTypes(MLIRContext *,
                                                     std::optional<Location> location,
                                                     Adaptor adaptor,
                                                     SmallVectorImpl<Type> &inferred) {
  bool last = flagOf(adaptor.getChannelsLastAttr());
  RankedTensorType x = channelsFirst(ranked(adaptor.getInput()), last),
                   dy = channelsFirst(ranked(adaptor.getResultGrad()), last);
  if (failed(requireRanked(location, {x, dy})) ||
      failed(requireSameElementType(location, x, dy, "the result gradient")))
    return failure();
  SmallVector<int64_t> ws = channelsFirst(adaptor.getWeightShape(), last);
  if (ws.size() != static_cast<size_t>(x.getRank()) || ws.size() < 3)
    return emitOptionalError(location, "weight_shape must have the input's rank");
  if (failed(checkWindowResult(location, x.getShape(), {x.getDimSize(0), ws[0]},
                               ArrayRef<int64_t>(ws).drop_front(2), adaptor.getStrides(),
                               adaptor.getPads(), adaptor.getDilations(), false,
                               dy.getShape())))
    return failure();
  inferred.push_back(RankedTensorType::get(adaptor.getWeightShape(), x.getElementType()));
  return success();
}

LogicalResult MaxPoolBackwardOp::inferReturnTypes(MLIRContext *,
                                                  std::optional<Location> location,
                                                  Adaptor adaptor,
                                                  SmallVectorImpl<Type> &inferred) {
  bool last = flagOf(adaptor.getChannelsLastAttr());
  RankedTensorType x = channelsFirst(ranked(adaptor.getInput()), last),
                   dy = channelsFirst(ranked(adaptor.getResultGrad()), last);
  if (failed(requireRanked(location, {x, dy})))
    return failure();
  if (failed(checkWindowResult(location, x.getShape(), x.getShape().take_front(2),
                               adaptor.getKernelShape(), adaptor.getStrides(),
                               adaptor.getPads(), adaptor.getDilations(),
                               adaptor.getCeilMode(), dy.getShape())))
    return failure();
  inferred.push_back(adaptor.getInput().getType());
  return success();
}

LogicalResult AvgPoolBackwardOp::inferReturnTypes(MLIRContext *,
                                                  std::optional<Location> location,
                                                  Adaptor adaptor,
                                                  SmallVectorImpl<Type> &inferred) {
  bool last = flagOf(adaptor.getChannelsLastAttr());
  RankedTensorType dy = channelsFirst(ranked(adaptor.getResultGrad()), last);
  if (!dy)
    return emitOptionalError(location, "expects a ranked result gradient");
  SmallVector<int64_t> view = channelsFirst(adaptor.getInputShape(), last);
  ArrayRef<int64_t> in = view;
  SmallVector<int64_t> ones(in.size() > 2 ? in.size() - 2 : 0, 1);
  if (in.size() < 3 ||
      failed(checkWindowResult(location, in, in.take_front(2), adaptor.getKernelShape(),
                               adaptor.getStrides(), adaptor.getPads(), ones,
                               adaptor.getCeilMode(), dy.getShape())))
    return in.size() < 3 ? emitOptionalError(location, "input_shape must be [N, C, spatial...]")
                         : failure();
  inferred.push_back(RankedTensorType::get(adaptor.getInputShape(), dy.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

/// A batch-norm sample mask is one f32 weight per sample of the input.
/// Whether `t` may be the element type of a batch norm's statistics, scale,
/// bias or sample mask for an input of element type `input`: the input's
/// own, or f32 for an f16/bf16 input (mixed precision keeps them f32).
static bool isStatisticsType(Type t, Type input) {
  return t == input || (t.isF32() && (input.isF16() || input.isBF16()));
}

static LogicalResult checkSampleMask(std::optional<Location> location,
                                     RankedTensorType input, Value mask) {
  if (!mask)
    return success();
  RankedTensorType type = ranked(mask);
  if (!type || type.getRank() != 1 || type.getDimSize(0) != input.getDimSize(0) ||
      !isStatisticsType(type.getElementType(), input.getElementType()))
    return emitOptionalError(location, "sample_mask must have one ", input.getElementType(),
                             " per sample (", input.getDimSize(0), ")");
  return success();
}

LogicalResult BatchNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> location,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  RankedTensorType input = ranked(adaptor.getInput());
  if (!input || input.getRank() < 2)
    return emitOptionalError(location, "expects an input of rank >= 2");
  int64_t channels =
      input.getDimSize(flagOf(adaptor.getChannelsLastAttr()) ? input.getRank() - 1 : 1);
  RankedTensorType stats[] = {ranked(adaptor.getScale()), ranked(adaptor.getBias()),
                              ranked(adaptor.getMean()), ranked(adaptor.getVar())};
  const char *names[] = {"scale", "bias", "mean", "var"};
  for (int i = 0; i < 4; ++i) {
    if (!stats[i] || stats[i].getRank() != 1 || stats[i].getDimSize(0) != channels)
      return emitOptionalError(location, names[i], " must have shape ", channels,
                               " (the channel count)");
    // One type for the four: the input's, or f32 for a 16-bit input.
    if (!isStatisticsType(stats[i].getElementType(), input.getElementType()) ||
        stats[i].getElementType() != stats[0].getElementType())
      return emitOptionalError(location, names[i], " has element type ",
                               stats[i].getElementType(), " but the input has ",
                               input.getElementType(), " and scale ",
                               stats[0].getElementType());
  }
  if (failed(checkSampleMask(location, input, adaptor.getSampleMask())))
    return failure();
  inferred.push_back(input);
  inferred.push_back(stats[2]);
  inferred.push_back(stats[3]);
  return success();
}

LogicalResult BatchNormBackwardOp::inferReturnTypes(MLIRContext *,
                                                    std::optional<Location> location,
                                                    Adaptor adaptor,
                                                    SmallVectorImpl<Type> &inferred) {
  RankedTensorType input = ranked(adaptor.getInput()), scale = ranked(adaptor.getScale()),
                   dy = ranked(adaptor.getResultGrad());
  if (failed(requireRanked(location, {input, scale, dy})))
    return failure();
  if (input.getRank() < 2)
    return emitOptionalError(location, "expects an input of rank >= 2");
  if (dy != input)
    return emitOptionalError(location, "the result gradient must have the input's type");
  int64_t channels =
      input.getDimSize(flagOf(adaptor.getChannelsLastAttr()) ? input.getRank() - 1 : 1);
  if (scale.getRank() != 1 || scale.getDimSize(0) != channels)
    return emitOptionalError(location, "scale must have shape ", channels,
                             " (the channel count)");
  if (!isStatisticsType(scale.getElementType(), input.getElementType()))
    return emitOptionalError(location, "scale has element type ", scale.getElementType(),
                             " but the input has ", input.getElementType());
  if (failed(checkSampleMask(location, input, adaptor.getSampleMask())))
    return failure();
  inferred.push_back(input);
  inferred.push_back(scale);
  inferred.push_back(scale);
  return success();
}

namespace {

/// The checks of a layer norm over the axes from `axis` on: scale and the
/// optional bias have the normalized shape and the input's element type.
LogicalResult checkLayerNorm(std::optional<Location> location, RankedTensorType input,
                             RankedTensorType scale, RankedTensorType bias, int64_t axis) {
  if (failed(requireRanked(location, {input, scale})))
    return failure();
  if (axis < 0 || axis >= input.getRank())
    return emitOptionalError(location, "axis ", axis, " is out of range for rank ",
                             input.getRank());
  ArrayRef<int64_t> normalized = input.getShape().drop_front(axis);
  for (RankedTensorType t : {scale, bias}) {
    if (!t)
      continue;
    if (failed(requireSameElementType(location, input, t, "scale/bias")))
      return failure();
    if (t.getShape() != normalized)
      return emitOptionalError(location, "scale and bias must have shape ",
                               shape::format(normalized), ", got ",
                               shape::format(t.getShape()));
  }
  return success();
}

} // namespace

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> location,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  RankedTensorType input = ranked(adaptor.getInput());
  if (failed(checkLayerNorm(location, input, ranked(adaptor.getScale()),
                            ranked(adaptor.getBias()), adaptor.getAxis())))
    return failure();
  inferred.push_back(input);
  return success();
}

LogicalResult LayerNormBackwardOp::inferReturnTypes(MLIRContext *,
                                                    std::optional<Location> location,
                                                    Adaptor adaptor,
                                                    SmallVectorImpl<Type> &inferred) {
  // The forward op's checks, then dy must have the input's type.
  RankedTensorType input = ranked(adaptor.getInput());
  if (failed(checkLayerNorm(location, input, ranked(adaptor.getScale()), nullptr,
                            adaptor.getAxis())))
    return failure();
  if (ranked(adaptor.getResultGrad()) != input)
    return emitOptionalError(location, "the result gradient must have the input's type");
  inferred.push_back(input);
  inferred.push_back(adaptor.getScale().getType());
  inferred.push_back(adaptor.getScale().getType());
  return success();
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

/// Shape function of the pooling ops: [N, C] then one window per spatial axis.
static LogicalResult inferPoolResult(std::optional<Location> location, Value inputValue,
                                     bool channelsLast,
                                     ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                                     ArrayRef<int64_t> pads,
                                     std::optional<ArrayRef<int64_t>> dilations,
                                     bool ceilMode, SmallVectorImpl<Type> &inferred) {
  RankedTensorType input = channelsFirst(ranked(inputValue), channelsLast);
  if (!input || input.getRank() < 3)
    return emitOptionalError(location, "expects an input [N, C, spatial...]");
  SmallVector<int64_t> shape(input.getShape().take_front(2));
  SmallVector<int64_t> ones(input.getRank() - 2, 1);
  if (failed(inferWindowShape(location, input.getShape(), kernel, strides, pads,
                              dilations ? *dilations : ArrayRef<int64_t>(ones), ceilMode,
                              shape)))
    return failure();
  inferred.push_back(
      RankedTensorType::get(channelsLastIf(shape, channelsLast), input.getElementType()));
  return success();
}

LogicalResult MaxPoolOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> location,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return inferPoolResult(location, adaptor.getInput(), flagOf(adaptor.getChannelsLastAttr()),
                         adaptor.getKernelShape(), adaptor.getStrides(), adaptor.getPads(),
                         adaptor.getDilations(),
                         adaptor.getCeilMode(), inferred);
}

LogicalResult AvgPoolOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> location,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return inferPoolResult(location, adaptor.getInput(), flagOf(adaptor.getChannelsLastAttr()),
                         adaptor.getKernelShape(), adaptor.getStrides(), adaptor.getPads(),
                         std::nullopt,
                         adaptor.getCeilMode(), inferred);
}

LogicalResult GlobalAvgPoolOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> location,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &inferred) {
  bool last = flagOf(adaptor.getChannelsLastAttr());
  RankedTensorType input = channelsFirst(ranked(adaptor.getInput()), last);
  if (!input || input.getRank() < 3)
    return emitOptionalError(location, "expects an input [N, C, spatial...]");
  SmallVector<int64_t> shape(input.getShape().take_front(2));
  shape.append(input.getRank() - 2, 1);
  inferred.push_back(RankedTensorType::get(channelsLastIf(shape, last), input.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> location,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  RankedTensorType input = ranked(adaptor.getInput());
  if (!input)
    return emitOptionalError(location, "expects a ranked input");
  ArrayRef<int64_t> shape = adaptor.getShape();
  auto have = shape::numElements(input.getShape());
  auto want = shape::numElements(shape);
  if (!want || have != want)
    return emitOptionalError(location, "cannot reshape ",
                             shape::format(input.getShape()), " into ",
                             shape::format(shape));
  inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> location,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  RankedTensorType input = ranked(adaptor.getInput());
  if (!input)
    return emitOptionalError(location, "expects a ranked input");
  ArrayRef<int64_t> perm = adaptor.getPerm();
  int64_t rank = input.getRank();
  SmallVector<bool> seen(rank, false);
  if (static_cast<int64_t>(perm.size()) != rank)
    return emitOptionalError(location, "perm has ", perm.size(),
                             " entries for rank ", rank);
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p])
      return emitOptionalError(location, "perm is not a permutation of 0..",
                               rank - 1);
    seen[p] = true;
    shape.push_back(input.getDimSize(p));
  }
  inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return emitOptionalError(location, "expects at least one input");
  RankedTensorType first = ranked(inputs.front());
  if (!first)
    return emitOptionalError(location, "expects ranked inputs");
  int64_t axis = adaptor.getAxis(), rank = first.getRank();
  if (axis < 0 || axis >= rank)
    return emitOptionalError(location, "axis ", axis, " is out of range for rank ",
                             rank);
  SmallVector<int64_t> shape(first.getShape());
  for (Value v : inputs.drop_front()) {
    RankedTensorType t = ranked(v);
    if (!t || t.getRank() != rank)
      return emitOptionalError(location, "inputs must all have rank ", rank);
    if (failed(requireSameElementType(location, first, t, "an input",
                                        "the first input")))
      return failure();
    for (int64_t i = 0; i < rank; ++i) {
      if (i == axis) {
        if (shape[i] > (int64_t(1) << 62) - t.getDimSize(i))
          return emitOptionalError(location, "concatenated axis ", axis,
                                   " is too large");
        shape[i] += t.getDimSize(i);
      }
      else if (t.getDimSize(i) != shape[i])
        return emitOptionalError(location, "inputs ", shape::format(first.getShape()),
                                 " and ", shape::format(t.getShape()),
                                 " differ outside axis ", axis);
    }
  }
  inferred.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

/// The shape of an ONNX-normalized slice of `in`, checking the bounds.
static LogicalResult sliceShape(std::optional<Location> location, ArrayRef<int64_t> in,
                                ArrayRef<int64_t> starts, ArrayRef<int64_t> ends,
                                ArrayRef<int64_t> steps, SmallVectorImpl<int64_t> &shape) {
  int64_t rank = in.size();
  if (static_cast<int64_t>(starts.size()) != rank ||
      static_cast<int64_t>(ends.size()) != rank ||
      static_cast<int64_t>(steps.size()) != rank)
    return emitOptionalError(location, "expects one start, end and step per axis (",
                             rank, ")");
  for (int64_t i = 0; i < rank; ++i) {
    int64_t dim = in[i];
    if (steps[i] == 0)
      return emitOptionalError(location, "step of axis ", i, " is zero");
    // ONNX Slice clamping: [0, dim] for positive steps; for negative steps the
    // start is in [0, dim-1] and the end in [-1, dim-1].
    bool forward = steps[i] > 0;
    int64_t startLo = 0, startHi = forward ? dim : std::max<int64_t>(dim - 1, 0);
    int64_t endLo = forward ? 0 : -1, endHi = forward ? dim : dim - 1;
    if (starts[i] < startLo || starts[i] > startHi || ends[i] < endLo ||
        ends[i] > endHi)
      return emitOptionalError(location, "bounds [", starts[i], ", ", ends[i],
                               ") of axis ", i, " are not clamped to its size ",
                               dim);
    shape.push_back(shape::sliceLength(starts[i], ends[i], steps[i]));
  }
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> location,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  RankedTensorType input = ranked(adaptor.getInput());
  if (!input)
    return emitOptionalError(location, "expects a ranked input");
  SmallVector<int64_t> shape;
  if (failed(sliceShape(location, input.getShape(), adaptor.getStarts(), adaptor.getEnds(),
                        adaptor.getSteps(), shape)))
    return failure();
  inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult SliceBackwardOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> location,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &inferred) {
  RankedTensorType dy = ranked(adaptor.getResultGrad());
  if (!dy)
    return emitOptionalError(location, "expects a ranked result gradient");
  ArrayRef<int64_t> in = adaptor.getInputShape();
  for (int64_t d : in)
    if (d < 0)
      return emitOptionalError(location, "input_shape has a negative dimension");
  SmallVector<int64_t> shape;
  if (failed(sliceShape(location, in, adaptor.getStarts(), adaptor.getEnds(),
                        adaptor.getSteps(), shape)))
    return failure();
  if (ArrayRef<int64_t>(shape) != dy.getShape())
    return emitOptionalError(location, "the result gradient has shape ",
                             shape::format(dy.getShape()), " but the slice has ",
                             shape::format(shape));
  inferred.push_back(RankedTensorType::get(in, dy.getElementType()));
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  RankedTensorType data = ranked(adaptor.getData());
  RankedTensorType indices = ranked(adaptor.getIndices());
  if (failed(requireRanked(location, {data, indices})))
    return failure();
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis >= data.getRank())
    return emitOptionalError(location, "axis ", axis, " is out of range for rank ",
                             data.getRank());
  SmallVector<int64_t> shape(data.getShape().take_front(axis));
  shape.append(indices.getShape().begin(), indices.getShape().end());
  shape.append(data.getShape().begin() + axis + 1, data.getShape().end());
  inferred.push_back(RankedTensorType::get(shape, data.getElementType()));
  return success();
}

LogicalResult GatherBackwardOp::inferReturnTypes(MLIRContext *,
                                                 std::optional<Location> location,
                                                 Adaptor adaptor,
                                                 SmallVectorImpl<Type> &inferred) {
  RankedTensorType dy = ranked(adaptor.getResultGrad());
  RankedTensorType indices = ranked(adaptor.getIndices());
  if (failed(requireRanked(location, {dy, indices})))
    return failure();
  ArrayRef<int64_t> data = adaptor.getDataShape();
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis >= static_cast<int64_t>(data.size()))
    return emitOptionalError(location, "axis ", axis, " is out of range for rank ",
                             data.size());
  SmallVector<int64_t> gathered(data.take_front(axis));
  gathered.append(indices.getShape().begin(), indices.getShape().end());
  gathered.append(data.begin() + axis + 1, data.end());
  if (ArrayRef<int64_t>(gathered) != dy.getShape())
    return emitOptionalError(location, "the result gradient has shape ",
                             shape::format(dy.getShape()), " but the gather has ",
                             shape::format(gathered));
  inferred.push_back(RankedTensorType::get(data, dy.getElementType()));
  return success();
}

LogicalResult ExpandOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  RankedTensorType input = ranked(adaptor.getInput());
  if (!input)
    return emitOptionalError(location, "expects a ranked input");
  for (int64_t d : adaptor.getShape())
    if (d < 0)
      return emitOptionalError(location, "shape has a negative dimension");
  auto shape = shape::broadcast(input.getShape(), adaptor.getShape());
  if (!shape)
    return emitOptionalError(location, "cannot expand ",
                             shape::format(input.getShape()), " to ",
                             shape::format(adaptor.getShape()));
  inferred.push_back(RankedTensorType::get(*shape, input.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxCrossEntropyOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  return inferClassLoss(location, adaptor.getLogits(), adaptor.getLabels(),
                        adaptor.getReduction(), inferred);
}

LogicalResult NllLossOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> location,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return inferClassLoss(location, adaptor.getLogProbs(), adaptor.getLabels(),
                        adaptor.getReduction(), inferred);
}

LogicalResult MseLossOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> location,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  RankedTensorType pred = ranked(adaptor.getPrediction());
  RankedTensorType target = ranked(adaptor.getTarget());
  if (failed(requireRanked(location, {pred, target})) ||
      failed(checkReduction(location, adaptor.getReduction())))
    return failure();
  if (pred != target)
    return emitOptionalError(location, "prediction ", pred, " and target ", target,
                             " must have one type");
  inferred.push_back(adaptor.getReduction() == "none"
                         ? Type(pred)
                         : RankedTensorType::get({}, pred.getElementType()));
  return success();
}

#define GET_OP_CLASSES
#include "ir/TcOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

namespace {

/// Shape function of the fused updates (every op with the ParamUpdate
/// trait): the operands are the parameter, its gradient and `states` state
/// tensors of one f32 type, then f32 scalars (the hyperparameters and the
/// optional grad_scale, last); the results are the parameter's and the
/// states' next values.
template <typename Adaptor>
LogicalResult inferParamUpdate(std::optional<Location> location, Adaptor adaptor,
                               unsigned states, SmallVectorImpl<Type> &inferred) {
  if (adaptor.getSkipNonfinite() && !adaptor.getGradScale())
    return emitOptionalError(location, "skip_nonfinite needs a grad_scale operand");
  ValueRange operands = adaptor.getOperands();
  RankedTensorType param = ranked(operands[0]);
  if (!param || !param.getElementType().isF32())
    return emitOptionalError(location, "expects an f32 parameter");
  for (Value v : operands.take_front(states + 2))
    if (ranked(v) != param)
      return emitOptionalError(location, "gradient and state must have the parameter's type ",
                               param, ", got ", v.getType());
  for (Value v : operands.drop_front(states + 2)) {
    RankedTensorType t = ranked(v);
    if (!t || t.getRank() != 0 || !t.getElementType().isF32())
      return emitOptionalError(location, "hyperparameters must be tensor<f32> scalars, got ",
                               v.getType());
  }
  inferred.append(states + 1, param);
  return success();
}

} // namespace

LogicalResult SgdUpdateOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                            Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  return inferParamUpdate(location, adaptor, 1, inferred);
}

LogicalResult AdamUpdateOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                             Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  return inferParamUpdate(location, adaptor, 2, inferred);
}

LogicalResult LambUpdateOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                             Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  return inferParamUpdate(location, adaptor, 2, inferred);
}

LogicalResult LarsUpdateOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                             Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  return inferParamUpdate(location, adaptor, 1, inferred);
}

LogicalResult NonfiniteProbeOp::inferReturnTypes(MLIRContext *context,
                                                 std::optional<Location> location,
                                                 Adaptor adaptor,
                                                 SmallVectorImpl<Type> &inferred) {
  if (adaptor.getValues().empty())
    return emitOptionalError(location, "expects at least one tensor to probe");
  for (Value v : adaptor.getValues())
    if (!ranked(v) || !ranked(v).getElementType().isF32())
      return emitOptionalError(location, "probes f32 tensors, got ", v.getType());
  inferred.push_back(RankedTensorType::get({}, Float32Type::get(context)));
  return success();
}

LogicalResult AccumulateGradOp::inferReturnTypes(MLIRContext *context,
                                                 std::optional<Location> location,
                                                 Adaptor adaptor,
                                                 SmallVectorImpl<Type> &inferred) {
  auto acc = ranked(adaptor.getAccumulator());
  if (!acc || !acc.getElementType().isF32() || adaptor.getGrad().getType() != acc)
    return emitOptionalError(location, "accumulates an f32 gradient into an f32 accumulator of "
                                       "its type, got ", adaptor.getAccumulator().getType(),
                             " and ", adaptor.getGrad().getType());
  for (Value scalar : {adaptor.getWeight(), adaptor.getKeep()})
    if (!ranked(scalar) || ranked(scalar).getRank() != 0 ||
        !ranked(scalar).getElementType().isF32())
      return emitOptionalError(location, "weight and keep are f32 scalars, got ",
                               scalar.getType());
  inferred.push_back(acc);
  return success();
}

LogicalResult AllReduceOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                            Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  if (adaptor.getValues().empty())
    return emitOptionalError(location, "reduces at least one tensor");
  auto scale = ranked(adaptor.getScale());
  if (!scale || scale.getRank() != 0 || !scale.getElementType().isF32())
    return emitOptionalError(location, "scale is an f32 scalar, got ",
                             adaptor.getScale().getType());
  if (auto bucket = adaptor.getBucketAttr(); bucket && bucket.getInt() < 0)
    return emitOptionalError(location, "bucket is a non-negative number, got ",
                             bucket.getInt());
  for (Value v : adaptor.getValues())
    inferred.push_back(v.getType());
  return success();
}

AccumulateGradOp trainc::tc::accumulatingGemmUser(Operation *op) {
  if (!op || op->getNumResults() != 1 || !op->getResult(0).hasOneUse())
    return nullptr;
  auto gemm = dyn_cast<GemmOp>(op);
  if (!isa<MatMulOp>(op) && !(gemm && !gemm.getC()))
    return nullptr;
  auto accumulate = dyn_cast<AccumulateGradOp>(*op->getResult(0).getUsers().begin());
  if (!accumulate || accumulate.getGrad() != op->getResult(0) ||
      accumulate->getBlock() != op->getBlock() || !accumulate.getAccumulator().hasOneUse() ||
      !isa<BlockArgument>(accumulate.getAccumulator()))
    return nullptr;
  return accumulate;
}

Value trainc::tc::replacedOperand(OpResult result) {
  if (auto tied = dyn_cast<TiedOpInterface>(result.getOwner()))
    return tied.getReplacedOperand(result.getResultNumber());
  return nullptr;
}

Value trainc::tc::viewSource(OpResult result) {
  if (auto tied = dyn_cast<TiedOpInterface>(result.getOwner()))
    return tied.getViewSource(result.getResultNumber());
  return nullptr;
}

bool trainc::tc::isView(Operation *op) {
  auto tied = dyn_cast<TiedOpInterface>(op);
  if (!tied || op->getNumResults() == 0)
    return false;
  for (unsigned i = 0; i < op->getNumResults(); ++i)
    if (!tied.getViewSource(i))
      return false;
  return true;
}

// Tied results (TiedOpInterface).
Value ReshapeOp::getViewSource(unsigned) { return getInput(); }

namespace {
/// The element offset of a slice that is one contiguous run of its input's
/// elements, or -1: unit steps, every axis after the last cut one whole, and
/// a single index on every axis before it.
int64_t contiguousSliceOffset(SliceOp op) {
  ArrayRef<int64_t> shape = cast<RankedTensorType>(op.getInput().getType()).getShape();
  ArrayRef<int64_t> starts = op.getStarts(), ends = op.getEnds(), steps = op.getSteps();
  const int64_t rank = static_cast<int64_t>(shape.size());
  int64_t cut = -1; // the last axis not taken whole
  for (int64_t d = 0; d < rank; ++d) {
    if (steps[d] != 1)
      return -1;
    if (starts[d] != 0 || ends[d] != shape[d])
      cut = d;
  }
  for (int64_t d = 0; d < cut; ++d)
    if (ends[d] - starts[d] != 1)
      return -1;
  int64_t offset = 0, stride = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    offset += starts[d] * stride;
    stride *= shape[d];
  }
  return offset;
}
} // namespace

Value SliceOp::getViewSource(unsigned) {
  return contiguousSliceOffset(*this) >= 0 ? getInput() : Value();
}
int64_t SliceOp::getViewOffset(unsigned) { return std::max<int64_t>(0, contiguousSliceOffset(*this)); }

/// Outside training dropout is the identity.
Value DropoutOp::getViewSource(unsigned) { return getTraining() ? Value() : getInput(); }

/// Batch norm's running statistics (results 1 and 2, operands 3 and 4):
/// passed through outside training, updated in place in training.
Value BatchNormOp::getViewSource(unsigned index) {
  return !getTraining() && index > 0 ? getOperand(index + 2) : Value();
}
Value BatchNormOp::getReplacedOperand(unsigned index) {
  return getTraining() && index > 0 ? getOperand(index + 2) : Value();
}

Value AccumulateGradOp::getReplacedOperand(unsigned) { return getAccumulator(); }

//===----------------------------------------------------------------------===//
// Pipeline stages: tc.send, tc.recv
//===----------------------------------------------------------------------===//

namespace {
LogicalResult verifyLink(Operation *op, int64_t peer, int64_t slot) {
  if (peer < 0)
    return op->emitOpError("peer is a stage number (0 or more), got ") << peer;
  if (slot < 0)
    return op->emitOpError("slot is a non-negative number, got ") << slot;
  return success();
}
} // namespace

LogicalResult SendOp::verify() { return verifyLink(*this, getPeer(), getSlot()); }
LogicalResult RecvOp::verify() { return verifyLink(*this, getPeer(), getSlot()); }
