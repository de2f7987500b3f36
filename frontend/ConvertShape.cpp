//===- ConvertShape.cpp - shape and data-movement ONNX ops ----------------===//
//
// Reshape-like ops resolve their target shape at import (shapes are static),
// and every op here folds on the host when its data input is a constant, so
// the Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains that PyTorch
// exports become attributes.
//
//===----------------------------------------------------------------------===//

#include "frontend/Importer.h"
#include "frontend/ModelLoader.h"

#include "ir/ShapeLogic.h"
#include "ir/TcOps.h"

#include <algorithm>
#include <optional>
#include <cstring>
#include <numeric>

using namespace mlir;
using namespace trainc;
using namespace trainc::frontend;

namespace {

//===----------------------------------------------------------------------===//
// Host data movement for folding
//===----------------------------------------------------------------------===//

/// Builds a tensor of `shape` whose element n is src's element at offset(n).
Tensor gatherElements(const Tensor &src, ArrayRef<int64_t> shape,
                      const std::function<int64_t(ArrayRef<int64_t>)> &offset) {
  Tensor out(src.dtype(), shape);
  size_t size = dtypeSize(src.dtype());
  SmallVector<int64_t> index(shape.size(), 0);
  for (int64_t n = 0; n < out.numElements(); ++n) {
    std::memcpy(out.mutableBytes() + n * size,
                src.bytes().data() + offset(index) * size, size);
    for (int64_t axis = static_cast<int64_t>(shape.size()) - 1; axis >= 0; --axis) {
      if (++index[axis] < shape[axis])
        break;
      index[axis] = 0;
    }
  }
  return out;
}

Tensor hostSlice(const Tensor &src, ArrayRef<int64_t> starts,
                 ArrayRef<int64_t> steps, ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides = stridesOf(src.shape());
  return gatherElements(src, shape, [&](ArrayRef<int64_t> idx) {
    int64_t off = 0;
    for (size_t a = 0; a < idx.size(); ++a)
      off += (starts[a] + idx[a] * steps[a]) * strides[a];
    return off;
  });
}

Tensor hostTranspose(const Tensor &src, ArrayRef<int64_t> perm) {
  SmallVector<int64_t> shape, strides = stridesOf(src.shape());
  for (int64_t p : perm)
    shape.push_back(src.shape()[p]);
  return gatherElements(src, shape, [&](ArrayRef<int64_t> idx) {
    int64_t off = 0;
    for (size_t a = 0; a < idx.size(); ++a)
      off += idx[a] * strides[perm[a]];
    return off;
  });
}

/// Resolves ONNX Reshape's target (0 copies the input dim unless allowzero,
/// -1 is inferred).
FailureOr<SmallVector<int64_t>> resolveReshape(NodeContext &ctx,
                                               ArrayRef<int64_t> in,
                                               ArrayRef<int64_t> target,
                                               bool allowZero) {
  SmallVector<int64_t> shape;
  int64_t inferAt = -1, known = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t d = target[i];
    if (d == 0 && !allowZero) {
      if (i >= in.size())
        return ctx.error("shape entry 0 at axis " + llvm::Twine(i) +
                         " has no input dimension to copy");
      d = in[i];
    }
    if (d == -1) {
      if (inferAt >= 0)
        return ctx.error("shape has more than one -1");
      inferAt = static_cast<int64_t>(i);
      shape.push_back(1);
      continue;
    }
    if (d < 0)
      return ctx.error("shape has a negative entry " + llvm::Twine(d));
    shape.push_back(d);
    auto n = shape::numElements(shape);
    if (!n)
      return ctx.error("shape is too large");
    known = *n;
  }
  auto total = shape::numElements(in);
  if (inferAt >= 0) {
    if (known == 0 || *total % known != 0)
      return ctx.error("cannot infer the -1 entry: " + shape::format(in) +
                       " does not divide into " + shape::format(shape));
    shape[inferAt] = *total / known;
  }
  if (shape::numElements(shape) != total)
    return ctx.error("cannot reshape " + shape::format(in) + " into " +
                     shape::format(shape));
  return shape;
}

/// Binds output 0 to input 0 reshaped, folding constants.
LogicalResult reshapeTo(NodeContext &ctx, ArrayRef<int64_t> shape) {
  if (const Tensor *c = ctx.constant(0)) {
    ctx.setOutput(0, c->reshaped(shape));
    return success();
  }
  FailureOr<Value> x = ctx.input(0);
  if (failed(x))
    return failure();
  if (cast<RankedTensorType>(x->getType()).getShape() == shape) {
    ctx.setOutput(0, *x);
    return success();
  }
  return ctx.emit<tc::ReshapeOp>(*x, {ctx.namedArray("shape", shape)});
}

/// Normalized, sorted, duplicate-free axes.
FailureOr<std::vector<int64_t>> normalizeAxes(NodeContext &ctx,
                                              std::vector<int64_t> axes,
                                              int64_t rank) {
  for (int64_t &a : axes) {
    FailureOr<int64_t> n = ctx.normalizeAxis(a, rank);
    if (failed(n))
      return failure();
    a = *n;
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    return ctx.error("axes name an axis twice");
  return axes;
}

/// Axes of Squeeze/Unsqueeze: an input from opset 13.
FailureOr<std::optional<std::vector<int64_t>>> squeezeAxes(NodeContext &ctx) {
  if (ctx.hasInput(1)) {
    FailureOr<std::vector<int64_t>> v = ctx.constantInts(1, "axes");
    if (failed(v))
      return failure();
    return std::optional<std::vector<int64_t>>(*v);
  }
  return std::optional<std::vector<int64_t>>();
}

/// One slice per axis with clamped bounds, the form tc.slice takes.
struct SliceSpec {
  SmallVector<int64_t> starts, ends, steps, shape;
};

LogicalResult emitSlice(NodeContext &ctx, unsigned output, const SliceSpec &spec) {
  if (const Tensor *c = ctx.constant(0)) {
    ctx.setOutput(output, hostSlice(*c, spec.starts, spec.steps, spec.shape));
    return success();
  }
  FailureOr<Value> x = ctx.input(0);
  if (failed(x))
    return failure();
  auto op = ctx.create<tc::SliceOp>(*x, {ctx.namedArray("starts", spec.starts),
                                         ctx.namedArray("ends", spec.ends),
                                         ctx.namedArray("steps", spec.steps)});
  if (failed(op))
    return failure();
  ctx.setOutput(output, (*op)->getResult(0));
  return success();
}

SliceSpec fullSlice(ArrayRef<int64_t> shape) {
  SliceSpec s;
  for (int64_t d : shape) {
    s.starts.push_back(0);
    s.ends.push_back(d);
    s.steps.push_back(1);
    s.shape.push_back(d);
  }
  return s;
}

} // namespace

namespace trainc::frontend {

LogicalResult convertReshape(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  FailureOr<std::vector<int64_t>> target = ctx.constantInts(1, "shape");
  if (failed(type) || failed(target))
    return failure();
  auto shape = resolveReshape(ctx, type->getShape(), *target,
                              ctx.attrInt("allowzero", 0) != 0);
  return failed(shape) ? failure() : reshapeTo(ctx, *shape);
}

LogicalResult convertFlatten(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  if (failed(type))
    return failure();
  int64_t rank = type->getRank();
  int64_t axis = ctx.attrInt("axis", 1);
  if (axis < -rank || axis > rank)
    return ctx.error("axis " + llvm::Twine(axis) + " is out of range for rank " +
                     llvm::Twine(rank));
  if (axis < 0)
    axis += rank;
  ArrayRef<int64_t> dims = type->getShape();
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i)
    (i < axis ? outer : inner) *= dims[i];
  return reshapeTo(ctx, {outer, inner});
}

LogicalResult convertSqueeze(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  auto axes = squeezeAxes(ctx);
  if (failed(type) || failed(axes))
    return failure();
  ArrayRef<int64_t> dims = type->getShape();
  std::vector<int64_t> chosen;
  if (*axes) {
    auto normalized = normalizeAxes(ctx, **axes, type->getRank());
    if (failed(normalized))
      return failure();
    chosen = *normalized;
    for (int64_t a : chosen)
      if (dims[a] != 1)
        return ctx.error("cannot squeeze axis " + llvm::Twine(a) + " of size " +
                         llvm::Twine(dims[a]));
  } else {
    for (int64_t a = 0; a < type->getRank(); ++a)
      if (dims[a] == 1)
        chosen.push_back(a);
  }
  SmallVector<int64_t> shape;
  for (int64_t a = 0; a < type->getRank(); ++a)
    if (!llvm::is_contained(chosen, a))
      shape.push_back(dims[a]);
  return reshapeTo(ctx, shape);
}

LogicalResult convertUnsqueeze(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  auto axes = squeezeAxes(ctx);
  if (failed(type) || failed(axes))
    return failure();
  if (!*axes)
    return ctx.error("input 'axes' is required");
  int64_t outRank = type->getRank() + static_cast<int64_t>((*axes)->size());
  auto normalized = normalizeAxes(ctx, **axes, outRank);
  if (failed(normalized))
    return failure();
  SmallVector<int64_t> shape;
  ArrayRef<int64_t> dims = type->getShape();
  size_t next = 0;
  for (int64_t a = 0; a < outRank; ++a)
    shape.push_back(llvm::is_contained(*normalized, a) ? 1 : dims[next++]);
  return reshapeTo(ctx, shape);
}

LogicalResult convertTranspose(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  if (failed(type))
    return failure();
  int64_t rank = type->getRank();
  std::vector<int64_t> perm(rank);
  if (auto attr = ctx.attrInts("perm"))
    perm = *attr;
  else
    for (int64_t i = 0; i < rank; ++i)
      perm[i] = rank - 1 - i;
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  bool permutation = sorted.size() == static_cast<size_t>(rank);
  for (int64_t i = 0; permutation && i < rank; ++i)
    permutation = sorted[i] == i;
  if (!permutation)
    return ctx.error("perm has " + llvm::Twine(perm.size()) +
                     " entries but is not a permutation of the " + llvm::Twine(rank) +
                     " axes");
  if (const Tensor *c = ctx.constant(0)) {
    ctx.setOutput(0, hostTranspose(*c, perm));
    return success();
  }
  FailureOr<Value> x = ctx.input(0);
  if (failed(x))
    return failure();
  return ctx.emit<tc::TransposeOp>(*x, {ctx.namedArray("perm", perm)});
}

LogicalResult convertConcat(NodeContext &ctx) {
  if (ctx.numInputs() == 0)
    return ctx.error("expects at least one input");
  FailureOr<RankedTensorType> first = ctx.inputType(0);
  if (failed(first))
    return failure();
  FailureOr<int64_t> axis = ctx.normalizeAxis(ctx.attrInt("axis", 0), first->getRank());
  if (failed(axis))
    return failure();
  if (ctx.allInputsConstant()) {
    // Fold: copy each input's rows into place along the axis.
    SmallVector<int64_t> shape(first->getShape());
    shape[*axis] = 0;
    const Tensor *c0 = ctx.constant(0);
    for (unsigned i = 0; i < ctx.numInputs(); ++i) {
      const Tensor *c = ctx.constant(i);
      if (c->rank() != c0->rank() || c->dtype() != c0->dtype())
        return ctx.error("inputs differ in rank or element type");
      for (int64_t a = 0; a < c->rank(); ++a)
        if (a != *axis && c->shape()[a] != c0->shape()[a])
          return ctx.error("inputs differ outside the concatenation axis");
      shape[*axis] += c->shape()[*axis];
    }
    Tensor out(c0->dtype(), shape);
    size_t size = dtypeSize(c0->dtype());
    int64_t outer = 1, inner = 1;
    for (int64_t a = 0; a < *axis; ++a)
      outer *= shape[a];
    for (int64_t a = *axis + 1; a < static_cast<int64_t>(shape.size()); ++a)
      inner *= shape[a];
    int64_t offset = 0;
    for (unsigned i = 0; i < ctx.numInputs(); ++i) {
      const Tensor *c = ctx.constant(i);
      int64_t rows = c->shape()[*axis] * inner;
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(out.mutableBytes() + (o * shape[*axis] * inner + offset) * size,
                    c->bytes().data() + o * rows * size, rows * size);
      offset += rows;
    }
    ctx.setOutput(0, std::move(out));
    return success();
  }
  SmallVector<Value> inputs;
  for (unsigned i = 0; i < ctx.numInputs(); ++i) {
    FailureOr<Value> v = ctx.input(i);
    if (failed(v))
      return failure();
    inputs.push_back(*v);
  }
  return ctx.emit<tc::ConcatOp>(inputs, {ctx.namedI64("axis", *axis)});
}

LogicalResult convertSlice(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  FailureOr<std::vector<int64_t>> starts = ctx.constantInts(1, "starts");
  FailureOr<std::vector<int64_t>> ends = ctx.constantInts(2, "ends");
  if (failed(type) || failed(starts) || failed(ends))
    return failure();
  int64_t rank = type->getRank();
  std::vector<int64_t> axes(starts->size()), steps(starts->size(), 1);
  std::iota(axes.begin(), axes.end(), 0);
  if (ctx.hasInput(3)) {
    FailureOr<std::vector<int64_t>> v = ctx.constantInts(3, "axes");
    if (failed(v))
      return failure();
    axes = *v;
  }
  if (ctx.hasInput(4)) {
    FailureOr<std::vector<int64_t>> v = ctx.constantInts(4, "steps");
    if (failed(v))
      return failure();
    steps = *v;
  }
  if (ends->size() != starts->size() || axes.size() != starts->size() ||
      steps.size() != starts->size())
    return ctx.error("starts, ends, axes and steps must have one length");
  SliceSpec spec = fullSlice(type->getShape());
  SmallVector<bool> seen(rank, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    FailureOr<int64_t> axis = ctx.normalizeAxis(axes[i], rank);
    if (failed(axis))
      return failure();
    if (seen[*axis])
      return ctx.error("axis " + llvm::Twine(*axis) + " is sliced twice");
    seen[*axis] = true;
    if (steps[i] == 0)
      return ctx.error("step of axis " + llvm::Twine(*axis) + " is zero");
    int64_t start = (*starts)[i], end = (*ends)[i];
    shape::clampSliceBounds(type->getDimSize(*axis), steps[i], start, end);
    spec.starts[*axis] = start;
    spec.ends[*axis] = end;
    spec.steps[*axis] = steps[i];
    spec.shape[*axis] = shape::sliceLength(start, end, steps[i]);
  }
  return emitSlice(ctx, 0, spec);
}

LogicalResult checkSplitSizes(NodeContext &ctx, ArrayRef<int64_t> sizes, int64_t dim) {
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0)
      return ctx.error("split sizes must not be negative");
    total += s;
  }
  if (total != dim)
    return ctx.error("split sizes add up to " + llvm::Twine(total) + ", not the axis size " +
                     llvm::Twine(dim));
  return success();
}

LogicalResult convertSplit(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  if (failed(type))
    return failure();
  FailureOr<int64_t> axis = ctx.normalizeAxis(ctx.attrInt("axis", 0), type->getRank());
  if (failed(axis))
    return failure();
  int64_t dim = type->getDimSize(*axis);
  unsigned outputs = ctx.numOutputs();
  std::vector<int64_t> sizes;
  if (ctx.hasInput(1)) {
    FailureOr<std::vector<int64_t>> v = ctx.constantInts(1, "split");
    if (failed(v))
      return failure();
    sizes = *v;
  } else {
    int64_t parts = ctx.attr("num_outputs") ? ctx.attrInt("num_outputs", 1) : outputs;
    if (parts < 1 || parts != static_cast<int64_t>(outputs))
      return ctx.error("num_outputs " + llvm::Twine(parts) + " does not match the " +
                       llvm::Twine(outputs) + " outputs");
    // Equal parts; with num_outputs (opset 18) the last part may be smaller,
    // before that the axis must divide evenly.
    if (ctx.opset() < 18 && dim % parts != 0)
      return ctx.error("axis " + llvm::Twine(*axis) + " of size " + llvm::Twine(dim) +
                       " does not split evenly into " + llvm::Twine(parts) +
                       " outputs (give the 'split' input)");
    int64_t part = (dim + parts - 1) / parts;
    for (int64_t i = 0; i < parts; ++i)
      sizes.push_back(std::max<int64_t>(0, std::min(part, dim - i * part)));
  }
  if (sizes.size() != outputs)
    return ctx.error("split has " + llvm::Twine(sizes.size()) + " sizes for " +
                     llvm::Twine(outputs) + " outputs");
  if (failed(checkSplitSizes(ctx, sizes, dim)))
    return failure();
  int64_t offset = 0;
  for (unsigned o = 0; o < outputs; ++o) {
    SliceSpec spec = fullSlice(type->getShape());
    spec.starts[*axis] = offset;
    spec.ends[*axis] = offset + sizes[o];
    spec.shape[*axis] = sizes[o];
    offset += sizes[o];
    if (failed(emitSlice(ctx, o, spec)))
      return failure();
  }
  return success();
}

LogicalResult convertGather(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  FailureOr<RankedTensorType> indexType = ctx.inputType(1);
  if (failed(type) || failed(indexType))
    return failure();
  FailureOr<int64_t> axis = ctx.normalizeAxis(ctx.attrInt("axis", 0), type->getRank());
  if (failed(axis))
    return failure();
  int64_t dim = type->getDimSize(*axis);
  const Tensor *data = ctx.constant(0), *indices = ctx.constant(1);
  if (indices)
    for (int64_t i = 0; i < indices->numElements(); ++i)
      if (indices->integer(i) < -dim || indices->integer(i) >= dim)
        return ctx.error("index " + llvm::Twine(indices->integer(i)) +
                         " is out of range for axis size " + llvm::Twine(dim));
  if (data && indices) {
    ArrayRef<int64_t> dims = data->shape();
    SmallVector<int64_t> shape(dims.take_front(*axis));
    shape.append(indices->shape().begin(), indices->shape().end());
    shape.append(dims.begin() + *axis + 1, dims.end());
    SmallVector<int64_t> strides = stridesOf(dims);
    int64_t indexRank = indices->rank();
    SmallVector<int64_t> indexStrides = stridesOf(indices->shape());
    ctx.setOutput(0, gatherElements(*data, shape, [&](ArrayRef<int64_t> idx) {
      int64_t off = 0, flat = 0;
      for (int64_t a = 0; a < *axis; ++a)
        off += idx[a] * strides[a];
      for (int64_t a = 0; a < indexRank; ++a)
        flat += idx[*axis + a] * indexStrides[a];
      int64_t at = indices->integer(flat);
      off += (at < 0 ? at + dim : at) * strides[*axis];
      for (int64_t a = *axis + 1; a < data->rank(); ++a)
        off += idx[a + indexRank - 1] * strides[a];
      return off;
    }));
    return success();
  }
  FailureOr<Value> x = ctx.input(0), idx = ctx.input(1);
  if (failed(x) || failed(idx))
    return failure();
  return ctx.emit<tc::GatherOp>({*x, *idx}, {ctx.namedI64("axis", *axis)});
}

LogicalResult convertExpand(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  FailureOr<std::vector<int64_t>> target = ctx.constantInts(1, "shape");
  if (failed(type) || failed(target))
    return failure();
  auto shape = shape::broadcast(type->getShape(), *target);
  if (!shape || llvm::any_of(*target, [](int64_t d) { return d < 0; }))
    return ctx.error("cannot expand " + shape::format(type->getShape()) + " to " +
                     shape::format(*target));
  if (const Tensor *c = ctx.constant(0)) {
    if (auto n = shape::numElements(*shape); !n || *n > kMaxFoldElements)
      return ctx.error("constant result is too large to fold");
    SmallVector<int64_t> strides = stridesOf(c->shape());
    int64_t lead = static_cast<int64_t>(shape->size()) - c->rank();
    ctx.setOutput(0, gatherElements(*c, *shape, [&](ArrayRef<int64_t> idx) {
      int64_t off = 0;
      for (int64_t a = 0; a < c->rank(); ++a)
        off += (c->shape()[a] == 1 ? 0 : idx[a + lead]) * strides[a];
      return off;
    }));
    return success();
  }
  FailureOr<Value> x = ctx.input(0);
  if (failed(x))
    return failure();
  if (cast<RankedTensorType>(x->getType()).getShape() == ArrayRef<int64_t>(*shape)) {
    ctx.setOutput(0, *x);
    return success();
  }
  return ctx.emit<tc::ExpandOp>(*x, {ctx.namedArray("shape", *target)});
}

LogicalResult convertShape(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  if (failed(type))
    return failure();
  int64_t rank = type->getRank();
  int64_t start = ctx.attrInt("start", 0), end = ctx.attrInt("end", rank);
  start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
  end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
  SmallVector<int64_t> dims;
  for (int64_t a = start; a < end; ++a)
    dims.push_back(type->getDimSize(a));
  int64_t count = static_cast<int64_t>(dims.size());
  ctx.setOutput(0, Tensor::fromIntegers(DType::I64, {count}, dims));
  return success();
}

LogicalResult convertSize(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  if (failed(type))
    return failure();
  ctx.setOutput(0, Tensor::fromIntegers(DType::I64, {}, {type->getNumElements()}));
  return success();
}

LogicalResult convertConstant(NodeContext &ctx) {
  const onnx::AttributeProto *a = nullptr;
  for (const char *name : {"value", "value_float", "value_floats", "value_int",
                           "value_ints", "sparse_value", "value_string", "value_strings"})
    if ((a = ctx.attr(name)))
      break;
  if (!a)
    return ctx.error("has no value attribute");
  if (a->name() == "value") {
    auto tensor = readTensor(a->t(), ctx.modelDir());
    if (!tensor)
      return ctx.error(llvm::toString(tensor.takeError()));
    ctx.setOutput(0, std::move(*tensor));
  } else if (a->name() == "value_float") {
    ctx.setOutput(0, Tensor::scalarReal(DType::F32, a->f()));
  } else if (a->name() == "value_int") {
    ctx.setOutput(0, Tensor::fromIntegers(DType::I64, {}, {a->i()}));
  } else if (a->name() == "value_ints") {
    std::vector<int64_t> v(a->ints().begin(), a->ints().end());
    ctx.setOutput(0, Tensor::fromIntegers(DType::I64, {static_cast<int64_t>(v.size())}, v));
  } else if (a->name() == "value_floats") {
    Tensor t(DType::F32, {a->floats_size()});
    for (int i = 0; i < a->floats_size(); ++i)
      t.setReal(i, a->floats(i));
    ctx.setOutput(0, std::move(t));
  } else {
    return ctx.error("attribute '" + a->name() + "' is not supported");
  }
  return success();
}

LogicalResult convertConstantOfShape(NodeContext &ctx) {
  FailureOr<std::vector<int64_t>> shape = ctx.constantInts(0, "input");
  if (failed(shape))
    return failure();
  if (llvm::Error e = checkDims(*shape))
    return ctx.error(llvm::toString(std::move(e)));
  Tensor fill = Tensor::scalarReal(DType::F32, 0.0);
  if (const onnx::AttributeProto *value = ctx.attr("value")) {
    auto t = readTensor(value->t(), ctx.modelDir());
    if (!t)
      return ctx.error(llvm::toString(t.takeError()));
    if (t->numElements() != 1)
      return ctx.error("attribute 'value' must hold one element");
    fill = std::move(*t);
  }
  auto n = shape::numElements(*shape);
  if (*n > kMaxFoldElements)
    return ctx.error("constant result " + shape::format(*shape) + " is too large");
  Tensor out(fill.dtype(), *shape);
  size_t size = dtypeSize(fill.dtype());
  for (int64_t i = 0; i < out.numElements(); ++i)
    std::memcpy(out.mutableBytes() + i * size, fill.bytes().data(), size);
  ctx.setOutput(0, std::move(out));
  return success();
}

/// The scalar c of a run-time `limit` computed as start + c (c a constant):
/// a range of static length over a start known only at run time
/// (torch.arange(offset, offset + T)).
static std::optional<double> offsetFromStart(NodeContext &ctx) {
  FailureOr<Value> start = ctx.input(0), limit = ctx.input(1);
  if (failed(start) || failed(limit))
    return std::nullopt;
  auto add = limit->getDefiningOp<tc::AddOp>();
  if (!add)
    return std::nullopt;
  for (unsigned k = 0; k < 2; ++k) {
    if (add->getOperand(k) != *start)
      continue;
    auto c = add->getOperand(1 - k).getDefiningOp<tc::ConstantOp>();
    auto attr = c ? dyn_cast<DenseElementsAttr>(c.getValue()) : DenseElementsAttr();
    if (!attr || attr.getNumElements() != 1)
      return std::nullopt;
    if (auto f = dyn_cast<FloatType>(attr.getElementType()))
      return (*attr.getValues<APFloat>().begin()).convertToDouble();
    return static_cast<double>((*attr.getValues<APInt>().begin()).getSExtValue());
  }
  return std::nullopt;
}

/// Range whose start is read at run time and whose limit is start + c:
/// start + [0, d, 2d, ...] of static length ceil(c / d).
static LogicalResult emitOffsetRange(NodeContext &ctx, double span, const Tensor &delta) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  FailureOr<Value> start = ctx.input(0);
  if (failed(type) || failed(start))
    return failure();
  if (type->getRank() != 0 || delta.numElements() != 1)
    return ctx.error("start, limit and delta must be scalars");
  const double d = delta.real(0);
  if (d == 0)
    return ctx.error("delta is zero");
  const double count = std::ceil(span / d);
  if (!(count < static_cast<double>(kMaxFoldElements)) || count < 1)
    return ctx.error("a range of " + llvm::Twine(static_cast<int64_t>(count)) +
                     " elements is not supported");
  const int64_t n = static_cast<int64_t>(count);
  DType dtype = fromMlirType(type->getElementType()).value_or(DType::F32);
  Tensor steps(dtype, {n});
  for (int64_t i = 0; i < n; ++i) {
    if (isFloat(dtype))
      steps.setReal(i, static_cast<double>(i) * d);
    else
      steps.setInteger(i, i * delta.integer(0));
  }
  Value offsets =
      ctx.builder().create<tc::ConstantOp>(ctx.loc(), toAttribute(ctx.context(), steps));
  return ctx.emit<tc::AddOp>({*start, offsets});
}

LogicalResult convertRange(NodeContext &ctx) {
  const Tensor *start = ctx.importTimeValue(0), *limit = ctx.importTimeValue(1),
               *delta = ctx.importTimeValue(2);
  if (!start && !limit && delta)
    if (std::optional<double> span = offsetFromStart(ctx))
      return emitOffsetRange(ctx, *span, *delta);
  if (!start || !limit || !delta)
    return ctx.error("start, limit and delta must be constants known at import time, or "
                     "limit start + c with c and delta constants (the result's shape must "
                     "be static)");
  if (start->numElements() != 1 || limit->numElements() != 1 || delta->numElements() != 1)
    return ctx.error("start, limit and delta must be scalars");
  double s = start->real(0), l = limit->real(0), d = delta->real(0);
  if (d == 0)
    return ctx.error("delta is zero");
  double count = std::ceil((l - s) / d);
  if (!(count < static_cast<double>(kMaxFoldElements)))
    return ctx.error("range is too long");
  int64_t n = std::max<int64_t>(0, static_cast<int64_t>(count));
  Tensor out(start->dtype(), {n});
  for (int64_t i = 0; i < n; ++i) {
    if (isFloat(start->dtype()))
      out.setReal(i, s + static_cast<double>(i) * d);
    else
      out.setInteger(i, start->integer(0) + i * delta->integer(0));
  }
  ctx.setOutput(0, std::move(out));
  return success();
}

/// EyeLike: ones on diagonal k of the input's static [rows, cols] shape, in
/// `dtype` (default: the input's), folded to a constant.
LogicalResult convertEyeLike(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  if (failed(type))
    return failure();
  if (type->getRank() != 2)
    return ctx.error("expects a 2-D input, got " + shape::format(type->getShape()));
  auto dtype = fromMlirType(type->getElementType());
  if (const onnx::AttributeProto *attr = ctx.attr("dtype")) {
    auto converted = convertDataType(static_cast<int32_t>(attr->i()));
    if (!converted)
      return ctx.error(llvm::toString(converted.takeError()));
    dtype = *converted;
  }
  if (!dtype)
    return ctx.error("the input's element type has no constant form");
  ArrayRef<int64_t> s = type->getShape();
  auto n = shape::numElements(s);
  if (!n || *n > kMaxFoldElements)
    return ctx.error("constant result " + shape::format(s) + " is too large");
  const int64_t k = ctx.attrInt("k", 0);
  Tensor out(*dtype, s);
  for (int64_t i = 0; i < s[0]; ++i) {
    const int64_t j = i + k;
    if (j < 0 || j >= s[1])
      continue;
    if (isFloat(*dtype))
      out.setReal(i * s[1] + j, 1.0);
    else
      out.setInteger(i * s[1] + j, 1);
  }
  ctx.setOutput(0, std::move(out));
  return success();
}

/// OneHot(indices, depth, values [off, on]) along `axis`: tc.where of
/// tc.equal between the indices (negative ones counted from depth, as ONNX)
/// and 0..depth-1 laid along the axis (float indices truncated to integers
/// first). depth and values are constants.
LogicalResult convertOneHot(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  FailureOr<Value> indices = ctx.input(0);
  const Tensor *depthValue = ctx.importTimeValue(1), *values = ctx.importTimeValue(2);
  if (failed(type) || failed(indices))
    return failure();
  if (!values || values->numElements() != 2)
    return ctx.error("values must be a constant [off_value, on_value]");
  // depth and the indices may be floats (ONNX's numeric types): whole numbers,
  // as the reference reads them.
  const double asked = !depthValue || depthValue->numElements() != 1 ? 0.0
                      : isFloat(depthValue->dtype()) ? depthValue->real(0)
                                                     : static_cast<double>(depthValue->integer(0));
  if (!(asked >= 1 && asked <= static_cast<double>(kMaxFoldElements)))
    return ctx.error("depth must be one positive constant, at most " +
                     llvm::Twine(kMaxFoldElements));
  const int64_t depth = isFloat(depthValue->dtype())
                            ? static_cast<int64_t>(depthValue->real(0))
                            : depthValue->integer(0);
  const int64_t rank = type->getRank() + 1;
  int64_t axis = ctx.attrInt("axis", -1);
  if (axis < -rank || axis >= rank)
    return ctx.error("axis " + llvm::Twine(axis) + " is out of range for rank " +
                     llvm::Twine(rank));
  if (axis < 0)
    axis += rank;
  SmallVector<int64_t> lifted(type->getShape()), along(rank, 1);
  lifted.insert(lifted.begin() + axis, 1);
  along[axis] = depth;
  Tensor positions(DType::I64, along);
  for (int64_t i = 0; i < depth; ++i)
    positions.setInteger(i, i);
  Tensor depthScalar(DType::I64, {}), zero(DType::I64, {});
  depthScalar.setInteger(0, depth);
  auto constant = [&](const Tensor &t) -> Value {
    return ctx.builder().create<tc::ConstantOp>(ctx.loc(), toAttribute(ctx.context(), t));
  };
  auto one = [&](FailureOr<Operation *> op) {
    return failed(op) ? FailureOr<Value>(failure()) : FailureOr<Value>((*op)->getResult(0));
  };
  Value idx = *indices;
  if (!type->getElementType().isInteger(64))
    idx = ctx.builder().create<tc::CastOp>(ctx.loc(), type->clone(ctx.builder().getI64Type()),
                                           idx, TypeAttr::get(ctx.builder().getI64Type()));
  FailureOr<Value> negative = one(ctx.create<tc::LessOp>({idx, constant(zero)}));
  FailureOr<Value> shifted = one(ctx.create<tc::AddOp>({idx, constant(depthScalar)}));
  if (failed(negative) || failed(shifted))
    return failure();
  FailureOr<Value> wrapped = one(ctx.create<tc::WhereOp>({*negative, *shifted, idx}));
  if (failed(wrapped))
    return failure();
  FailureOr<Value> column =
      one(ctx.create<tc::ReshapeOp>(*wrapped, {ctx.namedArray("shape", lifted)}));
  if (failed(column))
    return failure();
  FailureOr<Value> hit = one(ctx.create<tc::EqualOp>({*column, constant(positions)}));
  if (failed(hit))
    return failure();
  Tensor off(values->dtype(), {}), on(values->dtype(), {});
  if (isFloat(values->dtype())) {
    off.setReal(0, values->real(0));
    on.setReal(0, values->real(1));
  } else {
    off.setInteger(0, values->integer(0));
    on.setInteger(0, values->integer(1));
  }
  return ctx.emit<tc::WhereOp>({*hit, constant(on), constant(off)});
}

} // namespace trainc::frontend
