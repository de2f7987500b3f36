//===- ConvertSequence.cpp - sequences and Loop, resolved at import -------===//
//
// Exporters write shape code that only looks dynamic with sequences and
// loops: torch.repeat_interleave over a dynamic batch becomes a Loop whose
// trip count is the batch, over SplitToSequence of its inputs, gathering its
// pieces with SequenceInsert and ConcatFromSequence. Once --batch-size binds
// the batch, every length and trip count is known at import, so:
//
//   * a sequence is held as the list of its elements (each a tc value or a
//     host constant), never as a run-time object;
//   * a Loop is unrolled: its body is imported once per iteration, in a
//     scope of its own, with the iteration number and the condition bound as
//     constants and the carried values threaded through.
//
// What stays dynamic (a trip count or condition computed from data, a
// sequence position read at run time) is refused naming the node.
//
//===----------------------------------------------------------------------===//

#include "frontend/OpChain.h"

#include "ir/ShapeLogic.h"

#include <cstring>

using namespace mlir;
using namespace trainc;
using namespace trainc::frontend;

namespace {

/// Most iterations a Loop unrolls into.
constexpr int64_t kMaxLoopIterations = 4096;

/// Elements [start, end) of host tensor `t` along `axis`.
Tensor sliceHost(const Tensor &t, int64_t axis, int64_t start, int64_t end) {
  ArrayRef<int64_t> shape = t.shape();
  int64_t outer = 1, inner = dtypeSize(t.dtype());
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  for (int64_t d = axis + 1; d < t.rank(); ++d)
    inner *= shape[d];
  SmallVector<int64_t> outShape(shape);
  outShape[axis] = end - start;
  Tensor out(t.dtype(), outShape);
  const int64_t rowBytes = (end - start) * inner;
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(out.mutableBytes() + o * rowBytes,
                t.bytes().data() + (o * shape[axis] + start) * inner, rowBytes);
  return out;
}

/// Host tensors joined along `axis` (equal shapes elsewhere, one type).
Tensor concatHost(ArrayRef<const Tensor *> parts, int64_t axis) {
  SmallVector<int64_t> shape(parts.front()->shape());
  shape[axis] = 0;
  for (const Tensor *p : parts)
    shape[axis] += p->shape()[axis];
  Tensor out(parts.front()->dtype(), shape);
  int64_t outer = 1, inner = dtypeSize(out.dtype());
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  for (int64_t d = axis + 1; d < out.rank(); ++d)
    inner *= shape[d];
  char *dst = out.mutableBytes();
  for (int64_t o = 0; o < outer; ++o)
    for (const Tensor *p : parts) {
      const int64_t bytes = p->shape()[axis] * inner;
      std::memcpy(dst, p->bytes().data() + o * bytes, bytes);
      dst += bytes;
    }
  return out;
}

/// The static type of an element.
RankedTensorType typeOf(NodeContext &ctx, const ImportedValue &v) {
  if (v.constant)
    return RankedTensorType::get(v.constant->shape(),
                                 toMlirType(ctx.context(), v.constant->dtype()));
  return cast<RankedTensorType>(v.value.getType());
}

/// The element as a tc value (a constant is materialized).
Value valueOf(NodeContext &ctx, const ImportedValue &v) {
  if (v.value)
    return v.value;
  return ctx.builder().create<tc::ConstantOp>(ctx.loc(), toAttribute(ctx.context(), *v.constant));
}

/// A position input (SequenceAt, SequenceInsert): an import-time integer,
/// negative from the end, within [0, size] (`inclusive`) or [0, size).
FailureOr<int64_t> position(NodeContext &ctx, unsigned i, int64_t size, bool inclusive) {
  FailureOr<std::vector<int64_t>> p = ctx.constantInts(i, "position");
  if (failed(p))
    return failure();
  if (p->size() != 1)
    return ctx.error("position must be one integer");
  int64_t at = (*p)[0] < 0 ? (*p)[0] + size : (*p)[0];
  if (at < 0 || at > size || (!inclusive && at == size))
    return ctx.error("position " + llvm::Twine((*p)[0]) + " is outside the sequence of " +
                     llvm::Twine(size) + " elements");
  return at;
}

/// Stacks values of one shape along a new axis 0 (a Loop's scan outputs):
/// on the host when every one is a constant.
FailureOr<ImportedValue> stackAlongNewAxis(NodeContext &ctx, ArrayRef<ImportedValue> parts,
                                           int64_t axis) {
  RankedTensorType first = typeOf(ctx, parts.front());
  for (const ImportedValue &p : parts)
    if (typeOf(ctx, p) != first)
      return ctx.error("the elements to join differ in shape or type: " +
                       shape::format(first.getShape()) + " and " +
                       shape::format(typeOf(ctx, p).getShape()));
  SmallVector<int64_t> lifted(first.getShape());
  lifted.insert(lifted.begin() + axis, 1);
  if (llvm::all_of(parts, [](const ImportedValue &p) { return p.constant.has_value(); })) {
    std::vector<Tensor> reshaped;
    for (const ImportedValue &p : parts)
      reshaped.push_back(p.constant->reshaped(lifted));
    SmallVector<const Tensor *> ptrs;
    for (const Tensor &t : reshaped)
      ptrs.push_back(&t);
    return ctx.held(concatHost(ptrs, axis));
  }
  OpChain b(ctx);
  SmallVector<FailureOr<Value>> values;
  for (const ImportedValue &p : parts)
    values.push_back(b.reshape(valueOf(ctx, p), lifted));
  FailureOr<Value> joined = b.concat(values, axis);
  if (failed(joined))
    return failure();
  return ctx.held(*joined);
}

} // namespace

namespace trainc::frontend {

LogicalResult convertSequenceEmpty(NodeContext &ctx) {
  ctx.setOutputSequence(0, {});
  return success();
}

LogicalResult convertSequenceConstruct(NodeContext &ctx) {
  std::vector<ImportedValue> elements;
  for (unsigned i = 0; i < ctx.numInputs(); ++i) {
    FailureOr<const ImportedValue *> v = ctx.inputValue(i);
    if (failed(v))
      return failure();
    if ((*v)->isSequence)
      return ctx.error("a sequence of sequences is not supported");
    elements.push_back(**v);
  }
  ctx.setOutputSequence(0, std::move(elements));
  return success();
}

LogicalResult convertSequenceInsert(NodeContext &ctx) {
  FailureOr<const std::vector<ImportedValue> *> seq = ctx.inputSequence(0);
  FailureOr<const ImportedValue *> tensor = ctx.inputValue(1);
  if (failed(seq) || failed(tensor))
    return failure();
  if ((*tensor)->isSequence)
    return ctx.error("a sequence of sequences is not supported");
  std::vector<ImportedValue> elements = **seq;
  int64_t at = static_cast<int64_t>(elements.size());
  if (ctx.hasInput(2)) {
    FailureOr<int64_t> p = position(ctx, 2, at, /*inclusive=*/true);
    if (failed(p))
      return failure();
    at = *p;
  }
  elements.insert(elements.begin() + at, **tensor);
  ctx.setOutputSequence(0, std::move(elements));
  return success();
}

LogicalResult convertSequenceAt(NodeContext &ctx) {
  FailureOr<const std::vector<ImportedValue> *> seq = ctx.inputSequence(0);
  if (failed(seq))
    return failure();
  FailureOr<int64_t> at =
      position(ctx, 1, static_cast<int64_t>((*seq)->size()), /*inclusive=*/false);
  if (failed(at))
    return failure();
  ctx.setOutput(0, (**seq)[*at]);
  return success();
}

LogicalResult convertSequenceLength(NodeContext &ctx) {
  FailureOr<const std::vector<ImportedValue> *> seq = ctx.inputSequence(0);
  if (failed(seq))
    return failure();
  ctx.setOutput(0, Tensor::fromIntegers(DType::I64, {},
                                        {static_cast<int64_t>((*seq)->size())}));
  return success();
}

/// SplitToSequence: pieces of size 1 (no split; keepdims 0 drops the axis),
/// of one size (a scalar split; the last may be shorter) or of the listed
/// sizes. Slices of a host constant fold.
LogicalResult convertSplitToSequence(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  if (failed(type))
    return failure();
  FailureOr<int64_t> axis = ctx.normalizeAxis(ctx.attrInt("axis", 0), type->getRank());
  if (failed(axis))
    return failure();
  const int64_t dim = type->getShape()[*axis];
  std::vector<int64_t> sizes;
  bool keepdims = true;
  if (!ctx.hasInput(1)) {
    sizes.assign(dim, 1);
    keepdims = ctx.attrInt("keepdims", 1) != 0;
  } else {
    FailureOr<std::vector<int64_t>> split = ctx.constantInts(1, "split");
    if (failed(split))
      return failure();
    FailureOr<RankedTensorType> splitType = ctx.inputType(1);
    if (failed(splitType))
      return failure();
    if (splitType->getRank() == 0) {
      const int64_t each = (*split)[0];
      if (each < 1)
        return ctx.error("split " + llvm::Twine(each) + " must be positive");
      for (int64_t at = 0; at < dim; at += each)
        sizes.push_back(std::min(each, dim - at));
    } else {
      sizes = *split;
      if (failed(checkSplitSizes(ctx, sizes, dim)))
        return failure();
    }
  }
  if (static_cast<int64_t>(sizes.size()) > kMaxLoopIterations)
    return ctx.error(llvm::Twine(sizes.size()) + " pieces exceed the " +
                     llvm::Twine(kMaxLoopIterations) + " a sequence may hold");
  SmallVector<int64_t> dropped(type->getShape());
  dropped.erase(dropped.begin() + *axis);
  const Tensor *c = ctx.constant(0);
  OpChain b(ctx);
  FailureOr<Value> x = c ? FailureOr<Value>(Value()) : ctx.input(0);
  if (failed(x))
    return failure();
  std::vector<ImportedValue> pieces;
  int64_t at = 0;
  for (int64_t n : sizes) {
    if (c) {
      Tensor piece = sliceHost(*c, *axis, at, at + n);
      pieces.push_back(ctx.held(keepdims ? std::move(piece) : piece.reshaped(dropped)));
    } else {
      FailureOr<Value> piece = b.slice(*x, *axis, at, at + n);
      if (!keepdims)
        piece = b.reshape(piece, dropped);
      if (failed(piece))
        return failure();
      pieces.push_back(ctx.held(*piece));
    }
    at += n;
  }
  ctx.setOutputSequence(0, std::move(pieces));
  return success();
}

/// ConcatFromSequence: the elements joined along `axis` (new_axis: stacked).
LogicalResult convertConcatFromSequence(NodeContext &ctx) {
  FailureOr<const std::vector<ImportedValue> *> seq = ctx.inputSequence(0);
  if (failed(seq))
    return failure();
  if ((*seq)->empty())
    return ctx.error("the sequence is empty (a tensor of no elements is not supported)");
  const bool newAxis = ctx.attrInt("new_axis", 0) != 0;
  const int64_t rank = typeOf(ctx, (*seq)->front()).getRank() + (newAxis ? 1 : 0);
  FailureOr<int64_t> axis = ctx.normalizeAxis(ctx.attrInt("axis", 0), rank);
  if (failed(axis))
    return failure();
  if (newAxis) {
    FailureOr<ImportedValue> stacked = stackAlongNewAxis(ctx, **seq, *axis);
    if (failed(stacked))
      return failure();
    ctx.setOutput(0, std::move(*stacked));
    return success();
  }
  if (llvm::all_of(**seq, [](const ImportedValue &v) { return v.constant.has_value(); })) {
    SmallVector<const Tensor *> parts;
    for (const ImportedValue &v : **seq)
      parts.push_back(&*v.constant);
    ctx.setOutput(0, concatHost(parts, *axis));
    return success();
  }
  OpChain b(ctx);
  SmallVector<FailureOr<Value>> parts;
  for (const ImportedValue &v : **seq)
    parts.push_back(valueOf(ctx, v));
  return bindOutput(ctx, b.concat(parts, *axis));
}

/// Loop with a trip count and a condition known at import: unrolled. The
/// body's condition output must fold to a constant in every iteration;
/// carried values may be tensors or sequences; scan outputs are stacked.
LogicalResult convertLoop(NodeContext &ctx) {
  const onnx::AttributeProto *bodyAttr = ctx.attr("body");
  if (!bodyAttr || !bodyAttr->has_g())
    return ctx.error("has no body graph");
  const onnx::GraphProto &body = bodyAttr->g();
  if (!ctx.hasInput(0))
    return ctx.error("has no trip count M: a loop that runs until a condition computed "
                     "from data is not supported");
  FailureOr<std::vector<int64_t>> trips = ctx.constantInts(0, "M");
  if (failed(trips))
    return failure();
  if (trips->size() != 1 || (*trips)[0] < 0 || (*trips)[0] > kMaxLoopIterations)
    return ctx.error("the trip count must be one value within [0, " +
                     llvm::Twine(kMaxLoopIterations) + "]");
  bool cond = true;
  if (ctx.hasInput(1)) {
    const Tensor *c = ctx.constant(1);
    if (!c || c->numElements() != 1)
      return ctx.error("the condition must be known at import time");
    cond = c->integer(0) != 0;
  }
  const unsigned carried = ctx.numInputs() - 2;
  if (body.input_size() != static_cast<int>(carried) + 2 ||
      body.output_size() < static_cast<int>(carried) + 1)
    return ctx.error("the body's inputs and outputs do not match the loop's " +
                     llvm::Twine(carried) + " carried values");
  const unsigned scans = body.output_size() - 1 - carried;
  std::vector<ImportedValue> state;
  for (unsigned k = 0; k < carried; ++k) {
    FailureOr<const ImportedValue *> v = ctx.inputValue(k + 2);
    if (failed(v))
      return failure();
    state.push_back(**v);
  }
  // The iteration number and condition take the shapes the body declares
  // ([] or [1]).
  auto scalarOf = [&](int input, DType dtype, int64_t value) {
    const auto &dims = body.input(input).type().tensor_type().shape();
    SmallVector<int64_t> shape(dims.dim_size() == 1 ? 1 : 0, 1);
    return ctx.held(Tensor::fromIntegers(dtype, shape, {value}));
  };
  std::vector<std::vector<ImportedValue>> scanned(scans);
  for (int64_t i = 0; i < (*trips)[0] && cond; ++i) {
    if (failed(ctx.chargeUnrolling(body.node_size() + 1, "unrolling the loop")))
      return failure();
    std::vector<ImportedValue> inputs = {scalarOf(0, DType::I64, i),
                                         scalarOf(1, DType::I1, 1)};
    inputs.insert(inputs.end(), state.begin(), state.end());
    FailureOr<std::vector<ImportedValue>> outputs = ctx.importSubgraph(body, inputs);
    if (failed(outputs))
      return ctx.error("in iteration " + llvm::Twine(i) + " of the body");
    const ImportedValue &next = (*outputs)[0];
    if (!next.constant || next.constant->numElements() != 1)
      return ctx.error("the body's condition output depends on data in iteration " +
                       llvm::Twine(i) + " (only loops whose end is known at import unroll)");
    cond = next.constant->integer(0) != 0;
    state.assign(outputs->begin() + 1, outputs->begin() + 1 + carried);
    for (unsigned k = 0; k < scans; ++k)
      scanned[k].push_back((*outputs)[1 + carried + k]);
  }
  for (unsigned k = 0; k < carried; ++k)
    ctx.setOutput(k, state[k]);
  for (unsigned k = 0; k < scans; ++k) {
    if (!ctx.outputUsed(carried + k))
      continue;
    if (scanned[k].empty())
      return ctx.error("scan output " + llvm::Twine(k) + " of no iterations is empty "
                       "(a tensor of no elements is not supported)");
    FailureOr<ImportedValue> stacked = stackAlongNewAxis(ctx, scanned[k], 0);
    if (failed(stacked))
      return failure();
    ctx.setOutput(carried + k, std::move(*stacked));
  }
  return success();
}

} // namespace trainc::frontend
