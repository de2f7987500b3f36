//===- ConvertResize.cpp - Resize as gathers along each resized axis ------===//
//
// Nearest and (bi)linear Resize are separable: along each resized axis, an
// output element reads one input element (nearest) or two, weighted
// (linear), at positions that depend on the axis sizes and the attributes
// alone. So each axis becomes a tc.gather with constant indices, and for
// linear a second gather and the weighted sum, the last axis first as
// PyTorch's upsample_bilinear2d sums. The gradient is then the gathers'
// tc.gather_backward, a scatter-add that adds repeated rows in index order
// (deterministic, the same on every run), times the weights.
//
//===----------------------------------------------------------------------===//

#include "frontend/OpChain.h"

#include "ir/ShapeLogic.h"

#include <cmath>
#include <optional>

using namespace mlir;
using namespace trainc;
using namespace trainc::frontend;

namespace {

enum class Mode { Nearest, Linear };

/// ONNX's coordinate_transformation_mode (tf_crop_and_resize, which reads
/// roi, is refused).
enum class Transform { HalfPixel, HalfPixelSymmetric, PytorchHalfPixel, AlignCorners,
                       Asymmetric, TfHalfPixelForNearest };

enum class Rounding { PreferFloor, PreferCeil, Floor, Ceil };

/// keep_aspect_ratio_policy (opset 18), for sizes.
enum class Aspect { Stretch, NotLarger, NotSmaller };

struct ResizeAttrs {
  Mode mode = Mode::Nearest;
  Transform transform = Transform::HalfPixel;
  Rounding rounding = Rounding::PreferFloor;
  Aspect aspect = Aspect::Stretch;
};

FailureOr<ResizeAttrs> parseAttrs(NodeContext &ctx) {
  ResizeAttrs a;
  std::string mode = ctx.attrString("mode", "nearest");
  if (mode == "linear")
    a.mode = Mode::Linear;
  else if (mode != "nearest")
    return ctx.error("mode '" + mode + "' is not supported (nearest and linear are)");
  std::string transform = ctx.attrString("coordinate_transformation_mode",
                                         ctx.opset() < 11 ? "asymmetric" : "half_pixel");
  static const std::pair<const char *, Transform> transforms[] = {
      {"half_pixel", Transform::HalfPixel},
      {"half_pixel_symmetric", Transform::HalfPixelSymmetric},
      {"pytorch_half_pixel", Transform::PytorchHalfPixel},
      {"align_corners", Transform::AlignCorners},
      {"asymmetric", Transform::Asymmetric},
      {"tf_half_pixel_for_nearest", Transform::TfHalfPixelForNearest}};
  bool known = false;
  for (const auto &[name, value] : transforms)
    if (transform == name) {
      a.transform = value;
      known = true;
    }
  if (!known)
    return ctx.error("coordinate_transformation_mode '" + transform +
                     "' is not supported (half_pixel, half_pixel_symmetric, "
                     "pytorch_half_pixel, align_corners, asymmetric and "
                     "tf_half_pixel_for_nearest are)");
  std::string rounding = ctx.attrString("nearest_mode", "round_prefer_floor");
  if (rounding == "round_prefer_ceil")
    a.rounding = Rounding::PreferCeil;
  else if (rounding == "floor")
    a.rounding = Rounding::Floor;
  else if (rounding == "ceil")
    a.rounding = Rounding::Ceil;
  else if (rounding != "round_prefer_floor")
    return ctx.error("nearest_mode '" + rounding + "' is not one of round_prefer_floor, "
                     "round_prefer_ceil, floor, ceil");
  if (ctx.attrInt("antialias", 0) != 0)
    return ctx.error("antialias=1 is not supported");
  std::string policy = ctx.attrString("keep_aspect_ratio_policy", "stretch");
  if (policy == "not_larger")
    a.aspect = Aspect::NotLarger;
  else if (policy == "not_smaller")
    a.aspect = Aspect::NotSmaller;
  else if (policy != "stretch")
    return ctx.error("keep_aspect_ratio_policy '" + policy +
                     "' is not one of stretch, not_larger, not_smaller");
  return a;
}

/// The output sizes and the scales of every axis, from the node's scales or
/// sizes (import-time constants) and its axes (opset 18).
LogicalResult outputGeometry(NodeContext &ctx, const ResizeAttrs &attrs, ArrayRef<int64_t> in,
                             SmallVector<int64_t> &out, SmallVector<float> &scales) {
  const int64_t rank = static_cast<int64_t>(in.size());
  SmallVector<int64_t> axes;
  if (auto given = ctx.attrInts("axes")) {
    for (int64_t a : *given) {
      FailureOr<int64_t> axis = ctx.normalizeAxis(a, rank, "axes");
      if (failed(axis))
        return failure();
      if (llvm::is_contained(axes, *axis))
        return ctx.error("axes repeats axis " + llvm::Twine(*axis));
      axes.push_back(*axis);
    }
  } else {
    for (int64_t a = 0; a < rank; ++a)
      axes.push_back(a);
  }
  out.assign(in.begin(), in.end());
  scales.assign(rank, 1.0f);
  // Opset 10 has (X, scales); later ones (X, roi, scales, sizes).
  const unsigned scalesInput = ctx.opset() < 11 ? 1 : 2, sizesInput = 3;
  auto present = [&](unsigned i) {
    if (!ctx.hasInput(i))
      return false;
    FailureOr<RankedTensorType> t = ctx.inputType(i);
    return succeeded(t) && t->getNumElements() > 0;
  };
  const bool hasScales = present(scalesInput), hasSizes = ctx.opset() >= 11 && present(sizesInput);
  if (hasScales == hasSizes)
    return ctx.error("exactly one of scales and sizes must be given");
  const unsigned input = hasScales ? scalesInput : sizesInput;
  const Tensor *given = ctx.importTimeValue(input);
  if (!given)
    return ctx.error(llvm::Twine(hasScales ? "scales" : "sizes") +
                     " must be known at import time (a constant, or computed from shapes)");
  if (given->numElements() != static_cast<int64_t>(axes.size()))
    return ctx.error(llvm::Twine(hasScales ? "scales" : "sizes") + " has " +
                     llvm::Twine(given->numElements()) + " values for " +
                     llvm::Twine(axes.size()) + " axes");
  // not_larger / not_smaller: one scale for every axis, the smallest
  // (largest) of sizes / input, and each size round(scale * input).
  std::optional<float> common;
  if (hasSizes && attrs.aspect != Aspect::Stretch)
    for (size_t k = 0; k < axes.size(); ++k) {
      const float s = static_cast<float>(given->integer(k)) / static_cast<float>(in[axes[k]]);
      if (!common || (attrs.aspect == Aspect::NotLarger ? s < *common : s > *common))
        common = s;
    }
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t a = axes[k];
    if (common) {
      out[a] = static_cast<int64_t>(std::nearbyint(*common * static_cast<float>(in[a])));
      scales[a] = *common;
      if (out[a] < 1 || out[a] > (int64_t(1) << 24))
        return ctx.error("axis " + llvm::Twine(a) + " resizes to " + llvm::Twine(out[a]) +
                         " elements, not within [1, 2^24]");
    } else if (hasScales) {
      const double s = given->real(k);
      if (!(s > 0.0) || !std::isfinite(s) || std::floor(in[a] * s) > (int64_t(1) << 24))
        return ctx.error("scale " + std::to_string(s) + " of axis " + std::to_string(a) +
                         " must be positive and give at most 2^24 elements on the axis");
      scales[a] = static_cast<float>(s);
      out[a] = static_cast<int64_t>(std::floor(in[a] * static_cast<double>(scales[a])));
    } else {
      const int64_t n = given->integer(k);
      if (n < 1 || n > (int64_t(1) << 24))
        return ctx.error("size " + std::to_string(n) + " of axis " + std::to_string(a) +
                         " is not within [1, 2^24]");
      out[a] = n;
      scales[a] = static_cast<float>(n) / static_cast<float>(in[a]);
    }
    if (out[a] < 1)
      return ctx.error("axis " + llvm::Twine(a) + " of size " + llvm::Twine(in[a]) +
                       " resizes to nothing");
  }
  if (!shape::numElements(out))
    return ctx.error("the output " + shape::format(out) + " is too large");
  return success();
}

/// Output position `o`'s coordinate in the input, as ONNX defines it (in
/// float, as ONNX Runtime and PyTorch compute it). ONNX's length_resized is
/// in * scale before flooring: it differs from `out` where scales, not
/// sizes, gave a fractional size.
float sourceCoordinate(Transform t, int64_t o, int64_t in, int64_t out, float scale) {
  const float x = static_cast<float>(o);
  const float resized = static_cast<float>(in) * scale;
  switch (t) {
  case Transform::HalfPixel:
    return (x + 0.5f) / scale - 0.5f;
  case Transform::HalfPixelSymmetric: {
    const float adjustment = static_cast<float>(out) / (scale * static_cast<float>(in));
    const float center = static_cast<float>(in) / 2.0f;
    return center * (1.0f - adjustment) + (x + 0.5f) / scale - 0.5f;
  }
  case Transform::PytorchHalfPixel:
    return resized > 1.0f ? (x + 0.5f) / scale - 0.5f : 0.0f;
  case Transform::AlignCorners:
    return resized == 1.0f ? 0.0f : x * static_cast<float>(in - 1) / (resized - 1.0f);
  case Transform::Asymmetric:
    return x / scale;
  case Transform::TfHalfPixelForNearest:
    return (x + 0.5f) / scale;
  }
  return x;
}

int64_t nearestIndex(Rounding r, float x, int64_t in) {
  const float fl = std::floor(x);
  float picked;
  switch (r) {
  case Rounding::Floor:
    picked = fl;
    break;
  case Rounding::Ceil:
    picked = std::ceil(x);
    break;
  case Rounding::PreferFloor:
    picked = x == fl + 0.5f ? fl : std::round(x);
    break;
  case Rounding::PreferCeil:
    picked = x == fl + 0.5f ? fl + 1.0f : std::round(x);
    break;
  }
  return std::clamp<int64_t>(static_cast<int64_t>(picked), 0, in - 1);
}

/// One axis's gather: `x` read at `indices` along `axis`.
FailureOr<Value> gatherAlong(OpChain &b, FailureOr<Value> x, int64_t axis,
                             ArrayRef<int64_t> indices) {
  NodeContext &ctx = b.node();
  Tensor t = Tensor::fromIntegers(DType::I64, {static_cast<int64_t>(indices.size())}, indices);
  Value idx = ctx.builder().create<tc::ConstantOp>(ctx.loc(), toAttribute(ctx.context(), t));
  return b.op<tc::GatherOp>({x, idx}, {ctx.namedI64("axis", axis)});
}

/// Per-position weights [out] along `axis` of a rank-`rank` value, shaped to
/// broadcast against it.
Value weightsAlong(OpChain &b, int64_t axis, int64_t rank, ArrayRef<float> w) {
  NodeContext &ctx = b.node();
  SmallVector<int64_t> shape(rank, 1);
  shape[axis] = static_cast<int64_t>(w.size());
  Tensor t(DType::F32, shape);
  for (size_t i = 0; i < w.size(); ++i)
    t.setReal(static_cast<int64_t>(i), w[i]);
  return ctx.builder().create<tc::ConstantOp>(ctx.loc(), toAttribute(ctx.context(), t));
}

FailureOr<Value> resizeAxis(OpChain &b, const ResizeAttrs &attrs, FailureOr<Value> x,
                            int64_t axis, int64_t in, int64_t out, float scale) {
  if (failed(x))
    return failure();
  const int64_t rank = cast<RankedTensorType>(x->getType()).getRank();
  SmallVector<int64_t> lo(out), hi(out);
  SmallVector<float> wlo(out), whi(out);
  bool identity = out == in;
  for (int64_t o = 0; o < out; ++o) {
    const float src = sourceCoordinate(attrs.transform, o, in, out, scale);
    if (attrs.mode == Mode::Nearest) {
      lo[o] = nearestIndex(attrs.rounding, src, in);
      identity = identity && lo[o] == o;
      continue;
    }
    // As ONNX Runtime: the coordinate clamped to [0, in - 1]; the upper
    // neighbour is the lower one at the last element.
    const float c = std::clamp(src, 0.0f, static_cast<float>(in - 1));
    lo[o] = std::min<int64_t>(static_cast<int64_t>(c), in - 1);
    hi[o] = std::min<int64_t>(lo[o] + 1, in - 1);
    whi[o] = c - static_cast<float>(lo[o]);
    wlo[o] = 1.0f - whi[o];
    identity = identity && lo[o] == o && whi[o] == 0.0f;
  }
  if (identity)
    return x;
  if (attrs.mode == Mode::Nearest)
    return gatherAlong(b, x, axis, lo);
  return b.op<tc::AddOp>(
      {b.op<tc::MulOp>({gatherAlong(b, x, axis, lo), weightsAlong(b, axis, rank, wlo)}),
       b.op<tc::MulOp>({gatherAlong(b, x, axis, hi), weightsAlong(b, axis, rank, whi)})});
}

} // namespace

/// Resize (opsets 10 to 19): nearest and linear, every coordinate transform
/// but tf_crop_and_resize, scales or sizes, axes; no antialias.
LogicalResult trainc::frontend::convertResize(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  if (failed(type))
    return failure();
  if (!type->getElementType().isF32())
    return ctx.error("Resize supports float32 data only");
  FailureOr<ResizeAttrs> attrs = parseAttrs(ctx);
  if (failed(attrs))
    return failure();
  ArrayRef<int64_t> in = type->getShape();
  SmallVector<int64_t> out;
  SmallVector<float> scales;
  if (failed(outputGeometry(ctx, *attrs, in, out, scales)))
    return failure();
  OpChain b(ctx);
  FailureOr<Value> y = ctx.input(0);
  for (int64_t axis = type->getRank() - 1; axis >= 0 && succeeded(y); --axis)
    if (out[axis] != in[axis] || scales[axis] != 1.0f)
      y = resizeAxis(b, *attrs, y, axis, in[axis], out[axis], scales[axis]);
  return bindOutput(ctx, y);
}
