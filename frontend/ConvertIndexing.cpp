//===- ConvertIndexing.cpp - CumSum, Tile, Pad, ScatterND, ArgMax ... ----===//
//
// ONNX ops that index along axes. Each folds on the host when its inputs are
// constants (position ids, masks and shape arithmetic that PyTorch exports),
// and otherwise becomes its tc op, except NonZero: its result shape depends
// on its data, so it folds or is refused with an error naming the node.
//
//===----------------------------------------------------------------------===//

#include "frontend/Importer.h"

#include "ir/ShapeLogic.h"
#include "ir/TcOps.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>

using namespace mlir;
using namespace trainc;
using namespace trainc::frontend;

namespace {

/// Calls fn(n, index) for every element n of a row-major `shape`, with its
/// coordinates.
void forEachIndex(ArrayRef<int64_t> shape,
                  const std::function<void(int64_t, ArrayRef<int64_t>)> &fn) {
  auto count = shape::numElements(shape);
  SmallVector<int64_t> index(shape.size(), 0);
  for (int64_t n = 0; n < *count; ++n) {
    fn(n, index);
    for (int64_t axis = static_cast<int64_t>(shape.size()) - 1; axis >= 0; --axis) {
      if (++index[axis] < shape[axis])
        break;
      index[axis] = 0;
    }
  }
}

/// Fails unless a result of `shape` is small enough to compute on the host.
LogicalResult checkFoldSize(NodeContext &ctx, ArrayRef<int64_t> shape) {
  auto n = shape::numElements(shape);
  if (!n || *n > kMaxFoldElements)
    return ctx.error("constant result " + shape::format(shape) + " is too large to fold");
  return success();
}

void copyElement(Tensor &out, int64_t to, const Tensor &src, int64_t from) {
  size_t size = dtypeSize(src.dtype());
  std::memcpy(out.mutableBytes() + to * size, src.bytes().data() + from * size, size);
}

/// The integer remainder of ONNX Mod: the divisor's sign (fmod = 0, Python's
/// %) or the dividend's (fmod = 1, C's %); 0 for a divisor of 0 (numpy) and
/// for INT_MIN % -1.
int64_t integerMod(int64_t a, int64_t b, bool fmod) {
  if (b == 0 || b == -1)
    return 0;
  int64_t r = a % b;
  if (!fmod && r != 0 && ((r < 0) != (b < 0)))
    r += b;
  return r;
}

/// The scalar integer of optional input `i` (`fallback` when absent); it
/// must be known at import time.
FailureOr<int64_t> scalarInt(NodeContext &ctx, unsigned i, StringRef what, int64_t fallback) {
  if (!ctx.hasInput(i))
    return fallback;
  FailureOr<std::vector<int64_t>> v = ctx.constantInts(i, what);
  if (failed(v))
    return failure();
  if (v->size() != 1)
    return ctx.error("input '" + what + "' must hold one integer, got " +
                     llvm::Twine(v->size()));
  return (*v)[0];
}

/// Whether `v` at position s replaces the best `best` so far in an arg max
/// (`max`) or arg min line: NaN wins (torch.argmax/argmin), the first one
/// unless `last`, where ties and later NaNs move the position on.
bool argTakes(double v, double best, bool max, bool last) {
  if (best != best)
    return last && v != v;
  if (v != v)
    return true;
  return max ? (last ? v >= best : v > best) : (last ? v <= best : v < best);
}

bool argTakesInt(int64_t v, int64_t best, bool max, bool last) {
  return max ? (last ? v >= best : v > best) : (last ? v <= best : v < best);
}

} // namespace

namespace trainc::frontend {

LogicalResult convertCumSum(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  FailureOr<int64_t> rawAxis = scalarInt(ctx, 1, "axis", 0);
  if (failed(type) || failed(rawAxis))
    return failure();
  if (!ctx.hasInput(1))
    return ctx.error("input 'axis' is required");
  FailureOr<int64_t> axis = ctx.normalizeAxis(*rawAxis, type->getRank());
  if (failed(axis))
    return failure();
  bool exclusive = ctx.attrInt("exclusive", 0) != 0, reverse = ctx.attrInt("reverse", 0) != 0;
  if (const Tensor *c = ctx.constant(0)) {
    if (c->dtype() == DType::I1)
      return ctx.error("CumSum of booleans is not defined");
    ArrayRef<int64_t> shape = c->shape();
    int64_t dim = shape[*axis], inner = 1;
    for (int64_t a = *axis + 1; a < c->rank(); ++a)
      inner *= shape[a];
    int64_t outer = dim * inner == 0 ? 0 : c->numElements() / (dim * inner);
    Tensor out(c->dtype(), shape);
    bool real = isFloat(c->dtype());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t in = 0; in < inner; ++in) {
        double accReal = 0;
        int64_t accInt = 0;
        for (int64_t s = 0; s < dim; ++s) {
          int64_t j = reverse ? dim - 1 - s : s;
          int64_t at = (o * dim + j) * inner + in;
          // Integer sums wrap (two's complement) instead of overflowing.
          auto add = [&] {
            if (real)
              accReal += c->real(at);
            else
              accInt = static_cast<int64_t>(static_cast<uint64_t>(accInt) +
                                            static_cast<uint64_t>(c->integer(at)));
          };
          if (!exclusive)
            add();
          real ? out.setReal(at, accReal) : out.setInteger(at, accInt);
          if (exclusive)
            add();
        }
      }
    ctx.setOutput(0, std::move(out));
    return success();
  }
  FailureOr<Value> x = ctx.input(0);
  if (failed(x))
    return failure();
  return ctx.emit<tc::CumSumOp>(*x, {ctx.namedI64("axis", *axis),
                                     ctx.namedBool("exclusive", exclusive),
                                     ctx.namedBool("reverse", reverse)});
}

LogicalResult convertMod(NodeContext &ctx) {
  bool fmod = ctx.attrInt("fmod", 0) != 0;
  FailureOr<RankedTensorType> a = ctx.inputType(0), b = ctx.inputType(1);
  if (failed(a) || failed(b))
    return failure();
  if (isa<FloatType>(a->getElementType()) && !fmod)
    return ctx.error("a float Mod needs fmod = 1 (ONNX: fmod = 0 is for integers)");
  if (ctx.allInputsConstant()) {
    const Tensor *x = ctx.constant(0), *y = ctx.constant(1);
    if (x->dtype() != y->dtype())
      return ctx.error("inputs have different element types");
    if (x->dtype() == DType::I1)
      return ctx.error("Mod of booleans is not defined");
    auto shape = shape::broadcast(x->shape(), y->shape());
    if (!shape)
      return ctx.error("shapes " + shape::format(x->shape()) + " and " +
                       shape::format(y->shape()) + " do not broadcast");
    if (failed(checkFoldSize(ctx, *shape)))
      return failure();
    Tensor out(x->dtype(), *shape);
    bool real = isFloat(x->dtype());
    forEachBroadcast(*shape, {x->shape(), y->shape()}, [&](int64_t n, ArrayRef<int64_t> off) {
      if (real)
        out.setReal(n, std::fmod(x->real(off[0]), y->real(off[1])));
      else
        out.setInteger(n, integerMod(x->integer(off[0]), y->integer(off[1]), fmod));
    });
    ctx.setOutput(0, std::move(out));
    return success();
  }
  FailureOr<Value> x = ctx.input(0), y = ctx.input(1);
  if (failed(x) || failed(y))
    return failure();
  return ctx.emit<tc::ModOp>({*x, *y}, {ctx.namedBool("fmod", fmod)});
}

LogicalResult convertTile(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  FailureOr<std::vector<int64_t>> repeats = ctx.constantInts(1, "repeats");
  if (failed(type) || failed(repeats))
    return failure();
  std::string error;
  auto shape = shape::tile(type->getShape(), *repeats, error);
  if (!shape)
    return ctx.error(error);
  if (const Tensor *c = ctx.constant(0)) {
    if (failed(checkFoldSize(ctx, *shape)))
      return failure();
    Tensor out(c->dtype(), *shape);
    SmallVector<int64_t> strides = stridesOf(c->shape());
    forEachIndex(*shape, [&](int64_t n, ArrayRef<int64_t> idx) {
      int64_t off = 0;
      for (int64_t a = 0; a < c->rank(); ++a)
        off += (idx[a] % c->shape()[a]) * strides[a];
      copyElement(out, n, *c, off);
    });
    ctx.setOutput(0, std::move(out));
    return success();
  }
  if (llvm::all_of(*repeats, [](int64_t r) { return r == 1; }))
    return ctx.forwardInput(0);
  FailureOr<Value> x = ctx.input(0);
  if (failed(x))
    return failure();
  return ctx.emit<tc::TileOp>(*x, {ctx.namedArray("repeats", *repeats)});
}

LogicalResult convertTrilu(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  FailureOr<int64_t> k = scalarInt(ctx, 1, "k", 0);
  if (failed(type) || failed(k))
    return failure();
  if (type->getRank() < 2)
    return ctx.error("input must have rank 2 or more, got rank " +
                     llvm::Twine(type->getRank()));
  bool upper = ctx.attrInt("upper", 1) != 0;
  if (const Tensor *c = ctx.constant(0)) {
    Tensor out(c->dtype(), c->shape());
    std::memset(out.mutableBytes(), 0, out.bytes().size());
    int64_t rank = c->rank();
    forEachIndex(c->shape(), [&](int64_t n, ArrayRef<int64_t> idx) {
      int64_t diff = idx[rank - 1] - idx[rank - 2];
      if (upper ? diff >= *k : diff <= *k)
        copyElement(out, n, *c, n);
    });
    ctx.setOutput(0, std::move(out));
    return success();
  }
  FailureOr<Value> x = ctx.input(0);
  if (failed(x))
    return failure();
  return ctx.emit<tc::TriluOp>(*x, {ctx.namedBool("upper", upper), ctx.namedI64("k", *k)});
}

LogicalResult convertPad(NodeContext &ctx) {
  std::string mode = ctx.attrString("mode", "constant");
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  FailureOr<std::vector<int64_t>> given = ctx.constantInts(1, "pads");
  if (failed(type) || failed(given))
    return failure();
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    return ctx.error("mode '" + mode + "' is not one of constant, reflect, edge, wrap");
  if (mode == "wrap" && ctx.opset() < 19)
    return ctx.error("mode 'wrap' needs opset 19, the model has opset " +
                     llvm::Twine(ctx.opset()));
  int64_t rank = type->getRank();
  // Opset 18's `axes` names the axes that `pads` covers.
  std::vector<int64_t> axes(rank);
  std::iota(axes.begin(), axes.end(), 0);
  if (ctx.hasInput(3)) {
    FailureOr<std::vector<int64_t>> v = ctx.constantInts(3, "axes");
    if (failed(v))
      return failure();
    axes = *v;
  }
  if (given->size() != 2 * axes.size())
    return ctx.error("pads has " + llvm::Twine(given->size()) + " entries for " +
                     llvm::Twine(axes.size()) + " axes (2 per axis)");
  SmallVector<int64_t> pads(2 * rank, 0);
  SmallVector<bool> seen(rank, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    FailureOr<int64_t> axis = ctx.normalizeAxis(axes[i], rank);
    if (failed(axis))
      return failure();
    if (seen[*axis])
      return ctx.error("axes name axis " + llvm::Twine(*axis) + " twice");
    seen[*axis] = true;
    pads[*axis] = (*given)[i];
    pads[rank + *axis] = (*given)[axes.size() + i];
  }
  double value = 0;
  if (ctx.hasInput(2)) {
    const Tensor *v = ctx.importTimeValue(2);
    if (!v)
      return ctx.error("input 'constant_value' must be a constant known at import time");
    if (v->numElements() != 1)
      return ctx.error("input 'constant_value' must hold one element");
    value = isFloat(v->dtype()) ? v->real(0) : static_cast<double>(v->integer(0));
  }
  if (llvm::all_of(pads, [](int64_t p) { return p == 0; }))
    return ctx.forwardInput(0);
  std::string error;
  auto shape = shape::pad(type->getShape(), pads, error);
  if (!shape)
    return ctx.error(error);
  if (const Tensor *c = ctx.constant(0)) {
    // The checks tc.pad's shape function makes, for the host copy.
    int modeId = mode == "constant" ? 0 : mode == "reflect" ? 1 : mode == "edge" ? 2 : 3;
    for (int64_t a = 0; modeId != 0 && a < rank; ++a) {
      int64_t b = pads[a], e = pads[rank + a], n = c->shape()[a];
      if (b < 0 || e < 0)
        return ctx.error("mode '" + mode + "' pads cannot crop (axis " + llvm::Twine(a) + ")");
      if ((b || e) && (modeId != 1 ? n == 0 : (b >= n || e >= n)))
        return ctx.error("mode '" + mode + "' pads " + llvm::Twine(b) + " and " +
                         llvm::Twine(e) + " do not fit axis " + llvm::Twine(a) + " of size " +
                         llvm::Twine(n));
    }
    if (failed(checkFoldSize(ctx, *shape)))
      return failure();
    Tensor fill = Tensor::scalarReal(c->dtype(), value);
    Tensor out(c->dtype(), *shape);
    SmallVector<int64_t> strides = stridesOf(c->shape());
    forEachIndex(*shape, [&](int64_t n, ArrayRef<int64_t> idx) {
      int64_t off = 0;
      for (int64_t a = 0; a < rank && off >= 0; ++a) {
        int64_t j = shape::padSource(idx[a], c->shape()[a], pads[a], modeId);
        off = j < 0 ? -1 : off + j * strides[a];
      }
      if (off < 0)
        copyElement(out, n, fill, 0);
      else
        copyElement(out, n, *c, off);
    });
    ctx.setOutput(0, std::move(out));
    return success();
  }
  FailureOr<Value> x = ctx.input(0);
  if (failed(x))
    return failure();
  return ctx.emit<tc::PadOp>(*x, {ctx.namedArray("pads", pads), ctx.namedString("mode", mode),
                                  ctx.named("value", ctx.builder().getF64FloatAttr(value))});
}

LogicalResult convertScatterND(NodeContext &ctx) {
  std::string reduction = ctx.attrString("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" &&
      reduction != "min")
    return ctx.error("reduction '" + reduction + "' is not one of none, add, mul, max, min");
  if (!ctx.allInputsConstant()) {
    FailureOr<SmallVector<Value>> operands = ctx.inputs(3, 3);
    if (failed(operands))
      return failure();
    return ctx.emit<tc::ScatterNDOp>(*operands, {ctx.namedString("reduction", reduction)});
  }
  // Folded on the host: exactly the three inputs (all constants here).
  if (ctx.numInputs() != 3)
    return ctx.error("expects 3 inputs (data, indices, updates), got " +
                     llvm::Twine(ctx.numInputs()));
  const Tensor *data = ctx.constant(0), *indices = ctx.constant(1), *updates = ctx.constant(2);
  if (!data || !indices || !updates)
    return ctx.error("expects 3 inputs (data, indices, updates)");
  if (isFloat(indices->dtype()) || indices->rank() < 1)
    return ctx.error("indices must be integers of rank 1 or more");
  if (updates->dtype() != data->dtype())
    return ctx.error("updates and data have different element types");
  if (data->dtype() == DType::I1 && reduction != "none")
    return ctx.error("reduction '" + reduction + "' is not defined on booleans");
  int64_t q = indices->shape().back();
  if (q > data->rank())
    return ctx.error("index tuples of length " + llvm::Twine(q) + " for data of rank " +
                     llvm::Twine(data->rank()));
  // updates.shape = indices.shape[:-1] + data.shape[q:]
  SmallVector<int64_t> want(indices->shape().drop_back());
  want.append(data->shape().begin() + q, data->shape().end());
  if (ArrayRef<int64_t>(want) != updates->shape())
    return ctx.error("updates have shape " + shape::format(updates->shape()) + ", expected " +
                     shape::format(want));
  int64_t slice = 1;
  for (int64_t a = q; a < data->rank(); ++a)
    slice *= data->shape()[a];
  SmallVector<int64_t> strides = stridesOf(data->shape());
  Tensor out = *data;
  bool real = isFloat(data->dtype());
  int64_t tuples = q == 0 ? updates->numElements() / std::max<int64_t>(slice, 1)
                          : indices->numElements() / q;
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t base = 0;
    for (int64_t a = 0; a < q; ++a) {
      int64_t dim = data->shape()[a], at = indices->integer(t * q + a);
      if (at < -dim || at >= dim)
        return ctx.error("index " + llvm::Twine(at) + " is out of range for axis " +
                         llvm::Twine(a) + " of size " + llvm::Twine(dim));
      base += (at < 0 ? at + dim : at) * strides[a];
    }
    for (int64_t e = 0; e < slice; ++e) {
      int64_t to = base + e, from = t * slice + e;
      if (reduction == "none") {
        copyElement(out, to, *updates, from);
      } else if (real) {
        double x = out.real(to), u = updates->real(from);
        out.setReal(to, reduction == "add" ? x + u : reduction == "mul" ? x * u
                        : reduction == "max" ? std::max(x, u) : std::min(x, u));
      } else {
        // Sums and products wrap (two's complement) instead of overflowing.
        uint64_t ux = static_cast<uint64_t>(out.integer(to)),
                 uu = static_cast<uint64_t>(updates->integer(from));
        int64_t x = out.integer(to), u = updates->integer(from);
        out.setInteger(to, reduction == "add"   ? static_cast<int64_t>(ux + uu)
                           : reduction == "mul" ? static_cast<int64_t>(ux * uu)
                           : reduction == "max" ? std::max(x, u)
                                                : std::min(x, u));
      }
    }
  }
  ctx.setOutput(0, std::move(out));
  return success();
}

LogicalResult convertArgMax(NodeContext &ctx) {
  bool max = ctx.node().op_type() == "ArgMax";
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  if (failed(type))
    return failure();
  FailureOr<int64_t> axis = ctx.normalizeAxis(ctx.attrInt("axis", 0), type->getRank());
  if (failed(axis))
    return failure();
  bool keepdims = ctx.attrInt("keepdims", 1) != 0;
  bool last = ctx.attrInt("select_last_index", 0) != 0;
  if (type->getElementType().isInteger(1))
    return ctx.error("booleans are not supported (f32, f64, i64 and i32 are)");
  if (type->getShape()[*axis] == 0)
    return ctx.error("axis " + llvm::Twine(*axis) + " is empty");
  if (const Tensor *c = ctx.constant(0)) {
    ArrayRef<int64_t> shape = c->shape();
    int64_t dim = shape[*axis], inner = 1;
    for (int64_t a = *axis + 1; a < c->rank(); ++a)
      inner *= shape[a];
    int64_t lines = c->numElements() / dim;
    SmallVector<int64_t> outShape(shape);
    if (keepdims)
      outShape[*axis] = 1;
    else
      outShape.erase(outShape.begin() + *axis);
    bool real = isFloat(c->dtype());
    std::vector<int64_t> values(lines);
    for (int64_t l = 0; l < lines; ++l) {
      int64_t base = (l / inner) * dim * inner + l % inner, pick = 0;
      for (int64_t s = 1; s < dim; ++s) {
        int64_t at = base + s * inner, was = base + pick * inner;
        if (real ? argTakes(c->real(at), c->real(was), max, last)
                 : argTakesInt(c->integer(at), c->integer(was), max, last))
          pick = s;
      }
      values[l] = pick;
    }
    ctx.setOutput(0, Tensor::fromIntegers(DType::I64, outShape, values));
    return success();
  }
  FailureOr<Value> x = ctx.input(0);
  if (failed(x))
    return failure();
  SmallVector<NamedAttribute> attrs = {ctx.namedI64("axis", *axis),
                                       ctx.namedBool("keepdims", keepdims),
                                       ctx.namedBool("select_last_index", last)};
  if (max)
    return ctx.emit<tc::ArgMaxOp>(*x, attrs);
  return ctx.emit<tc::ArgMinOp>(*x, attrs);
}

/// ScatterElements (every reduction; gradients for none and add).
LogicalResult convertScatterElements(NodeContext &ctx) {
  FailureOr<RankedTensorType> data = ctx.inputType(0), indices = ctx.inputType(1),
                              updates = ctx.inputType(2);
  if (failed(data) || failed(indices) || failed(updates))
    return failure();
  if (data->getElementType().isInteger(1))
    return ctx.error("booleans are not supported");
  if (!isa<IntegerType>(indices->getElementType()) || indices->getElementType().isInteger(1))
    return ctx.error("indices must be int64 or int32");
  FailureOr<int64_t> axis = ctx.normalizeAxis(ctx.attrInt("axis", 0), data->getRank());
  if (failed(axis))
    return failure();
  if (data->getShape()[*axis] == 0)
    return ctx.error("axis " + llvm::Twine(*axis) + " is empty");
  std::string reduction = ctx.attrString("reduction", "none");
  FailureOr<SmallVector<Value>> operands = ctx.inputs(3, 3);
  if (failed(operands))
    return failure();
  return ctx.emit<tc::ScatterElementsOp>(
      *operands, {ctx.namedI64("axis", *axis), ctx.namedString("reduction", reduction)});
}

/// TopK: tc.top_k gives the positions; the values are a tc.gather_elements
/// of the input at them, whose gradient (tc.gather_elements_backward)
/// reaches exactly the selected elements.
LogicalResult convertTopK(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  FailureOr<Value> x = ctx.input(0);
  if (failed(type) || failed(x))
    return failure();
  if (type->getElementType().isInteger(1))
    return ctx.error("booleans are not supported");
  FailureOr<int64_t> axis = ctx.normalizeAxis(ctx.attrInt("axis", -1), type->getRank());
  FailureOr<std::vector<int64_t>> k = ctx.constantInts(1, "K");
  if (failed(axis) || failed(k))
    return failure();
  const int64_t dim = type->getShape()[*axis];
  if (k->size() != 1 || (*k)[0] < 1 || (*k)[0] > dim)
    return ctx.error("K must be one value within [1, " + llvm::Twine(dim) +
                     "] (the axis); an empty result is not supported");
  FailureOr<Operation *> top = ctx.create<tc::TopKOp>(
      *x, {ctx.namedI64("axis", *axis), ctx.namedI64("k", (*k)[0]),
           ctx.namedBool("largest", ctx.attrInt("largest", 1) != 0)});
  if (failed(top))
    return failure();
  Value indices = (*top)->getResult(0);
  if (ctx.outputUsed(0)) {
    FailureOr<Operation *> values =
        ctx.create<tc::GatherElementsOp>({*x, indices}, {ctx.namedI64("axis", *axis)});
    if (failed(values))
      return failure();
    ctx.setOutput(0, (*values)->getResult(0));
  }
  ctx.setOutput(1, indices);
  return success();
}

LogicalResult convertGatherElements(NodeContext &ctx) {
  FailureOr<RankedTensorType> data = ctx.inputType(0), indices = ctx.inputType(1);
  if (failed(data) || failed(indices))
    return failure();
  if (!isa<IntegerType>(indices->getElementType()) || indices->getElementType().isInteger(1))
    return ctx.error("indices must be int64 or int32");
  int64_t rank = data->getRank();
  FailureOr<int64_t> axis = ctx.normalizeAxis(ctx.attrInt("axis", 0), rank);
  if (failed(axis))
    return failure();
  if (indices->getRank() != rank)
    return ctx.error("indices have rank " + llvm::Twine(indices->getRank()) +
                     " but data has rank " + llvm::Twine(rank));
  ArrayRef<int64_t> dShape = data->getShape(), iShape = indices->getShape();
  for (int64_t d = 0; d < rank; ++d)
    if (d != *axis && iShape[d] > dShape[d])
      return ctx.error("indices " + shape::format(iShape) + " are longer than data " +
                       shape::format(dShape) + " on axis " + llvm::Twine(d));
  if (ctx.allInputsConstant()) {
    const Tensor *c = ctx.constant(0), *idx = ctx.constant(1);
    SmallVector<int64_t> strides = stridesOf(c->shape());
    int64_t dim = dShape[*axis];
    Tensor out(c->dtype(), iShape);
    bool bad = false;
    int64_t badIndex = 0;
    forEachIndex(iShape, [&](int64_t n, ArrayRef<int64_t> at) {
      int64_t k = idx->integer(n);
      if (k < -dim || k >= dim) {
        bad = true;
        badIndex = k;
        return;
      }
      int64_t off = 0;
      for (int64_t a = 0; a < rank; ++a)
        off += (a == *axis ? (k < 0 ? k + dim : k) : at[a]) * strides[a];
      copyElement(out, n, *c, off);
    });
    if (bad)
      return ctx.error("index " + llvm::Twine(badIndex) + " is out of range for axis " +
                       llvm::Twine(*axis) + " of size " + llvm::Twine(dim));
    ctx.setOutput(0, std::move(out));
    return success();
  }
  FailureOr<SmallVector<Value>> operands = ctx.inputs(2, 2);
  if (failed(operands))
    return failure();
  return ctx.emit<tc::GatherElementsOp>(*operands, {ctx.namedI64("axis", *axis)});
}

LogicalResult convertNonZero(NodeContext &ctx) {
  const Tensor *c = ctx.constant(0);
  if (!c)
    return ctx.error("NonZero's result shape depends on its data, so it is supported only "
                     "where its input is a constant that folds at import; input '" +
                     ctx.node().input(0) + "' is computed at run time");
  std::vector<int64_t> hits;
  forEachIndex(c->shape(), [&](int64_t n, ArrayRef<int64_t>) {
    if (isFloat(c->dtype()) ? c->real(n) != 0 : c->integer(n) != 0)
      hits.push_back(n);
  });
  int64_t rank = c->rank(), count = static_cast<int64_t>(hits.size());
  SmallVector<int64_t> strides = stridesOf(c->shape());
  std::vector<int64_t> values(rank * count);
  for (int64_t h = 0; h < count; ++h)
    for (int64_t a = 0; a < rank; ++a)
      values[a * count + h] = (hits[h] / strides[a]) % c->shape()[a];
  ctx.setOutput(0, Tensor::fromIntegers(DType::I64, {rank, count}, values));
  return success();
}

} // namespace trainc::frontend
