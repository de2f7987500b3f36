//===- TcOpsIndexing.cpp - shape functions of the indexing ops -----------===//
//
// The shape functions and verifiers of the ops that index along axes: the
// cumulative sum, the remainder's verifier, tiling, triangles, padding,
// scatters, arg max/min and gather along an axis.
// Like those of TcOps.cpp they never assume the op is valid.
//
//===----------------------------------------------------------------------===//

#include "ir/ShapeLogic.h"
#include "ir/TcOps.h"

#include "mlir/IR/Diagnostics.h"

#include <cmath>

using namespace mlir;
using namespace trainc;
using namespace trainc::tc;

namespace {

/// A pad's mode, read unchecked from the attribute dictionary (absent means
/// the default, "constant"; not a string gives "").
StringRef padMode(DictionaryAttr attrs) {
  Attribute mode = attrs ? attrs.get("mode") : Attribute();
  if (!mode)
    return "constant";
  auto text = dyn_cast<StringAttr>(mode);
  return text ? text.getValue() : StringRef();
}

/// A dense i64 array attribute read unchecked from the dictionary.
FailureOr<ArrayRef<int64_t>> arrayAttr(std::optional<Location> location, DictionaryAttr attrs,
                                       StringRef name) {
  auto array = dyn_cast_or_null<DenseI64ArrayAttr>(attrs ? attrs.get(name) : Attribute());
  if (!array)
    return emitOptionalError(location, "expects an i64 array '", name, "'");
  return array.asArrayRef();
}

/// Checks a pad's mode against its pads and input shape; the result shape
/// goes to `out`.
LogicalResult padShape(std::optional<Location> location, ArrayRef<int64_t> in,
                       ArrayRef<int64_t> pads, StringRef mode,
                       SmallVectorImpl<int64_t> &out) {
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    return emitOptionalError(location,
                             "mode must be 'constant', 'reflect', 'edge' or 'wrap', got '", mode,
                             "'");
  std::string error;
  auto shape = shape::pad(in, pads, error);
  if (!shape)
    return emitOptionalError(location, error);
  size_t rank = in.size();
  for (size_t d = 0; mode != "constant" && d < rank; ++d) {
    int64_t b = pads[d], e = pads[rank + d];
    if (b < 0 || e < 0)
      return emitOptionalError(location, "mode '", mode, "' pads cannot crop (axis ", d,
                               " has pads ", b, " and ", e, ")");
    if ((b || e) && (mode == "edge" || mode == "wrap") && in[d] == 0)
      return emitOptionalError(location, "mode '", mode, "' pads need a non-empty axis (axis ",
                               d, ")");
    if ((b || e) && mode == "reflect" && (b >= in[d] || e >= in[d]))
      return emitOptionalError(location, "reflect pads must be smaller than the axis (axis ",
                               d, " of size ", in[d], " has pads ", b, " and ", e, ")");
  }
  out.assign(shape->begin(), shape->end());
  return success();
}

} // namespace

LogicalResult CumSumOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                         Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  auto type = dyn_cast<RankedTensorType>(adaptor.getInput().getType());
  if (!type)
    return emitOptionalError(location, "expects a ranked operand");
  // Also called by the parser before the attributes are verified, so the
  // attribute is read unchecked from the dictionary.
  auto axisAttr = dyn_cast_or_null<IntegerAttr>(adaptor.getAttributes().get("axis"));
  if (!axisAttr || !axisAttr.getType().isSignlessInteger(64))
    return emitOptionalError(location, "expects an integer 'axis'");
  int64_t axis = axisAttr.getInt();
  if (axis < 0 || axis >= type.getRank())
    return emitOptionalError(location, "axis ", axis, " is out of range for rank ",
                             type.getRank());
  inferred.push_back(type);
  return success();
}

LogicalResult ModOp::verify() {
  if (isa<FloatType>(cast<ShapedType>(getLhs().getType()).getElementType()) && !getFmod())
    return emitOpError("a float remainder needs fmod = true (ONNX Mod)");
  return success();
}

LogicalResult TileOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                       Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  auto type = dyn_cast<RankedTensorType>(adaptor.getInput().getType());
  if (!type)
    return emitOptionalError(location, "expects a ranked input");
  FailureOr<ArrayRef<int64_t>> repeats = arrayAttr(location, adaptor.getAttributes(), "repeats");
  if (failed(repeats))
    return failure();
  std::string error;
  auto shape = shape::tile(type.getShape(), *repeats, error);
  if (!shape)
    return emitOptionalError(location, error);
  inferred.push_back(RankedTensorType::get(*shape, type.getElementType()));
  return success();
}

LogicalResult TriluOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                        Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  auto type = dyn_cast<RankedTensorType>(adaptor.getInput().getType());
  if (!type)
    return emitOptionalError(location, "expects a ranked operand");
  if (type.getRank() < 2)
    return emitOptionalError(location, "expects an operand of rank 2 or more, got rank ",
                             type.getRank());
  inferred.push_back(type);
  return success();
}


LogicalResult PadOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                      Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  auto type = dyn_cast<RankedTensorType>(adaptor.getInput().getType());
  if (!type)
    return emitOptionalError(location, "expects a ranked input");
  FailureOr<ArrayRef<int64_t>> pads = arrayAttr(location, adaptor.getAttributes(), "pads");
  if (failed(pads))
    return failure();
  SmallVector<int64_t> shape;
  if (failed(padShape(location, type.getShape(), *pads, padMode(adaptor.getAttributes()), shape)))
    return failure();
  inferred.push_back(RankedTensorType::get(shape, type.getElementType()));
  return success();
}

LogicalResult PadOp::verify() {
  // An integer pad value must be an integer the element type holds (the
  // code generator writes it as an integer literal).
  Type elem = getType().getElementType();
  double v = getValue().convertToDouble();
  if (isa<IntegerType>(elem)) {
    unsigned bits = elem.getIntOrFloatBitWidth();
    double lo = bits == 1 ? 0 : -std::ldexp(1.0, bits - 1);
    double hi = bits == 1 ? 1 : std::ldexp(1.0, bits - 1) - 1;
    if (!(v >= lo && v <= hi) || std::trunc(v) != v)
      return emitOpError("pad value ") << v << " is not an integer of " << elem;
  }
  return success();
}

LogicalResult PadBackwardOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &inferred) {
  auto dy = dyn_cast<RankedTensorType>(adaptor.getResultGrad().getType());
  if (!dy)
    return emitOptionalError(location, "expects a ranked result gradient");
  DictionaryAttr attrs = adaptor.getAttributes();
  FailureOr<ArrayRef<int64_t>> inShape = arrayAttr(location, attrs, "input_shape");
  FailureOr<ArrayRef<int64_t>> pads = arrayAttr(location, attrs, "pads");
  if (failed(inShape) || failed(pads))
    return failure();
  ArrayRef<int64_t> in = *inShape;
  for (int64_t d : in)
    if (d < 0)
      return emitOptionalError(location, "input_shape has a negative dimension");
  if (!attrs.get("mode") || padMode(attrs) == "constant")
    return emitOptionalError(location, "expects mode 'reflect', 'edge' or 'wrap' (a constant "
                                       "pad's gradient is a tc.pad)");
  SmallVector<int64_t> shape;
  if (failed(padShape(location, in, *pads, padMode(attrs), shape)))
    return failure();
  if (ArrayRef<int64_t>(shape) != dy.getShape())
    return emitOptionalError(location, "the result gradient has shape ",
                             shape::format(dy.getShape()), " but the pad gives ",
                             shape::format(shape));
  inferred.push_back(RankedTensorType::get(in, dy.getElementType()));
  return success();
}

LogicalResult ScatterNDOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                            Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  auto data = dyn_cast<RankedTensorType>(adaptor.getData().getType());
  auto indices = dyn_cast<RankedTensorType>(adaptor.getIndices().getType());
  auto updates = dyn_cast<RankedTensorType>(adaptor.getUpdates().getType());
  if (!data || !indices || !updates)
    return emitOptionalError(location, "expects ranked operands");
  Attribute reductionAttr = adaptor.getAttributes().get("reduction");
  StringRef reduction = "none";
  if (reductionAttr) {
    auto text = dyn_cast<StringAttr>(reductionAttr);
    reduction = text ? text.getValue() : StringRef();
  }
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" &&
      reduction != "min")
    return emitOptionalError(location, "reduction must be none, add, mul, max or min, got '",
                             reduction, "'");
  if (reduction != "none" && data.getElementType().isInteger(1))
    return emitOptionalError(location, "reduction '", reduction, "' is not defined on i1");
  if (updates.getElementType() != data.getElementType())
    return emitOptionalError(location, "updates have element type ", updates.getElementType(),
                             " but data has ", data.getElementType());
  if (indices.getRank() < 1)
    return emitOptionalError(location, "indices must have rank 1 or more");
  int64_t q = indices.getShape().back();
  if (q > data.getRank())
    return emitOptionalError(location, "index tuples of length ", q, " for data of rank ",
                             data.getRank());
  SmallVector<int64_t> want(indices.getShape().drop_back());
  want.append(data.getShape().begin() + q, data.getShape().end());
  if (ArrayRef<int64_t>(want) != updates.getShape())
    return emitOptionalError(location, "updates have shape ", shape::format(updates.getShape()),
                             ", expected ", shape::format(want));
  inferred.push_back(data);
  return success();
}

namespace {

/// The shape function of tc.argmax and tc.argmin: the input with `axis`
/// kept as 1 (`keepdims`) or dropped, as int64.
LogicalResult argReduceType(MLIRContext *context, std::optional<Location> location,
                            Type inputType, DictionaryAttr attrs,
                            SmallVectorImpl<Type> &inferred) {
  auto type = dyn_cast<RankedTensorType>(inputType);
  if (!type)
    return emitOptionalError(location, "expects a ranked input");
  auto axisAttr = dyn_cast_or_null<IntegerAttr>(attrs ? attrs.get("axis") : Attribute());
  if (!axisAttr || !axisAttr.getType().isSignlessInteger(64))
    return emitOptionalError(location, "expects an integer 'axis'");
  int64_t axis = axisAttr.getInt();
  if (axis < 0 || axis >= type.getRank())
    return emitOptionalError(location, "axis ", axis, " is out of range for rank ",
                             type.getRank());
  if (type.getShape()[axis] == 0)
    return emitOptionalError(location, "axis ", axis, " is empty");
  bool keepdims = true;
  if (Attribute k = attrs ? attrs.get("keepdims") : Attribute()) {
    auto b = dyn_cast<BoolAttr>(k);
    if (!b)
      return emitOptionalError(location, "expects a bool 'keepdims'");
    keepdims = b.getValue();
  }
  SmallVector<int64_t> shape(type.getShape());
  if (keepdims)
    shape[axis] = 1;
  else
    shape.erase(shape.begin() + axis);
  inferred.push_back(RankedTensorType::get(shape, IntegerType::get(context, 64)));
  return success();
}

} // namespace

LogicalResult ArgMaxOp::inferReturnTypes(MLIRContext *context, std::optional<Location> location,
                                         Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  return argReduceType(context, location, adaptor.getInput().getType(), adaptor.getAttributes(),
                       inferred);
}

LogicalResult ArgMinOp::inferReturnTypes(MLIRContext *context, std::optional<Location> location,
                                         Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  return argReduceType(context, location, adaptor.getInput().getType(), adaptor.getAttributes(),
                       inferred);
}

LogicalResult TopKOp::inferReturnTypes(MLIRContext *context, std::optional<Location> location,
                                       Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  auto type = dyn_cast<RankedTensorType>(adaptor.getInput().getType());
  if (!type)
    return emitOptionalError(location, "expects a ranked input");
  const int64_t axis = adaptor.getAxis(), k = adaptor.getK();
  if (axis < 0 || axis >= type.getRank())
    return emitOptionalError(location, "axis ", axis, " is out of range for rank ",
                             type.getRank());
  if (k < 1 || k > type.getShape()[axis])
    return emitOptionalError(location, "k = ", k, " is not within [1, ", type.getShape()[axis],
                             "] (the axis)");
  SmallVector<int64_t> shape(type.getShape());
  shape[axis] = k;
  inferred.push_back(RankedTensorType::get(shape, IntegerType::get(context, 64)));
  return success();
}

namespace {

/// Checks the indices of a gather_elements over `data` along the attribute
/// axis: the same rank, each other axis no longer than data's.
LogicalResult gatherElementsCheck(std::optional<Location> location, ArrayRef<int64_t> data,
                                  RankedTensorType indices, DictionaryAttr attrs) {
  auto axisAttr = dyn_cast_or_null<IntegerAttr>(attrs ? attrs.get("axis") : Attribute());
  if (!axisAttr || !axisAttr.getType().isSignlessInteger(64))
    return emitOptionalError(location, "expects an integer 'axis'");
  int64_t axis = axisAttr.getInt(), rank = static_cast<int64_t>(data.size());
  if (axis < 0 || axis >= rank)
    return emitOptionalError(location, "axis ", axis, " is out of range for rank ", rank);
  if (indices.getRank() != rank)
    return emitOptionalError(location, "indices have rank ", indices.getRank(),
                             " but data has rank ", rank);
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && indices.getShape()[d] > data[d])
      return emitOptionalError(location, "indices have shape ",
                               shape::format(indices.getShape()), ", longer than data ",
                               shape::format(data), " on axis ", d);
  return success();
}

} // namespace

LogicalResult GatherElementsOp::inferReturnTypes(MLIRContext *,
                                                 std::optional<Location> location,
                                                 Adaptor adaptor,
                                                 SmallVectorImpl<Type> &inferred) {
  auto data = dyn_cast<RankedTensorType>(adaptor.getData().getType());
  auto indices = dyn_cast<RankedTensorType>(adaptor.getIndices().getType());
  if (!data || !indices)
    return emitOptionalError(location, "expects ranked operands");
  if (failed(gatherElementsCheck(location, data.getShape(), indices, adaptor.getAttributes())))
    return failure();
  inferred.push_back(RankedTensorType::get(indices.getShape(), data.getElementType()));
  return success();
}

LogicalResult ScatterElementsOp::inferReturnTypes(MLIRContext *,
                                                  std::optional<Location> location,
                                                  Adaptor adaptor,
                                                  SmallVectorImpl<Type> &inferred) {
  auto data = dyn_cast<RankedTensorType>(adaptor.getData().getType());
  auto indices = dyn_cast<RankedTensorType>(adaptor.getIndices().getType());
  auto updates = dyn_cast<RankedTensorType>(adaptor.getUpdates().getType());
  if (!data || !indices || !updates)
    return emitOptionalError(location, "expects ranked operands");
  if (failed(gatherElementsCheck(location, data.getShape(), indices, adaptor.getAttributes())))
    return failure();
  if (updates.getShape() != indices.getShape())
    return emitOptionalError(location, "updates have shape ", shape::format(updates.getShape()),
                             " but indices have ", shape::format(indices.getShape()));
  if (updates.getElementType() != data.getElementType())
    return emitOptionalError(location, "updates must have data's element type");
  llvm::StringRef reduction = adaptor.getReduction();
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" &&
      reduction != "min")
    return emitOptionalError(location, "reduction '", reduction,
                             "' is not one of none, add, mul, max, min");
  inferred.push_back(data);
  return success();
}

LogicalResult GatherElementsBackwardOp::inferReturnTypes(MLIRContext *,
                                                         std::optional<Location> location,
                                                         Adaptor adaptor,
                                                         SmallVectorImpl<Type> &inferred) {
  auto dy = dyn_cast<RankedTensorType>(adaptor.getResultGrad().getType());
  auto indices = dyn_cast<RankedTensorType>(adaptor.getIndices().getType());
  if (!dy || !indices)
    return emitOptionalError(location, "expects ranked operands");
  FailureOr<ArrayRef<int64_t>> data = arrayAttr(location, adaptor.getAttributes(), "data_shape");
  if (failed(data))
    return failure();
  for (int64_t d : *data)
    if (d < 0)
      return emitOptionalError(location, "data_shape has a negative dimension");
  if (failed(gatherElementsCheck(location, *data, indices, adaptor.getAttributes())))
    return failure();
  if (dy.getShape() != indices.getShape())
    return emitOptionalError(location, "the result gradient has shape ",
                             shape::format(dy.getShape()), " but indices have ",
                             shape::format(indices.getShape()));
  inferred.push_back(RankedTensorType::get(*data, dy.getElementType()));
  return success();
}
