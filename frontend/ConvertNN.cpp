//===- ConvertNN.cpp - contractions, convolution, normalization, pooling,
//                     softmax, reductions and losses -----------------------===//

#include "frontend/Importer.h"
#include "frontend/OpChain.h"

#include "ir/ShapeLogic.h"
#include "ir/TcOps.h"

#include <algorithm>
#include <limits>

using namespace mlir;
using namespace trainc;
using namespace trainc::frontend;

namespace {

/// Window attributes of Conv and the pools, after resolving auto_pad.
struct Window {
  SmallVector<int64_t> kernel, strides, pads, dilations;
};

/// The integers of attribute `name`, or `n` times `fill` where it is absent.
SmallVector<int64_t> intsOr(NodeContext &ctx, llvm::StringRef name, size_t n, int64_t fill) {
  auto values = ctx.attrInts(name);
  return values ? SmallVector<int64_t>(values->begin(), values->end())
                : SmallVector<int64_t>(n, fill);
}

FailureOr<Window> windowAttrs(NodeContext &ctx, ArrayRef<int64_t> inShape,
                              ArrayRef<int64_t> kernel) {
  size_t spatial = inShape.size() - 2;
  Window w;
  w.kernel.assign(kernel.begin(), kernel.end());
  auto orDefault = [&](llvm::StringRef name, size_t n, int64_t fill) {
    return intsOr(ctx, name, n, fill);
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

/// The single result of a new tc op.
template <typename OpTy>
FailureOr<Value> build(NodeContext &ctx, ValueRange operands,
                       ArrayRef<NamedAttribute> attrs = {}) {
  FailureOr<Operation *> op = ctx.create<OpTy>(operands, attrs);
  if (failed(op))
    return failure();
  return (*op)->getResult(0);
}

FailureOr<Value> reshapeTo(NodeContext &ctx, Value v, ArrayRef<int64_t> shape) {
  return build<tc::ReshapeOp>(ctx, v, {ctx.namedArray("shape", shape)});
}

/// A rank-0 constant of `like`'s element type.
Value scalarLike(NodeContext &ctx, Value like, double value) {
  Type element = cast<RankedTensorType>(like.getType()).getElementType();
  Tensor t = Tensor::scalarReal(fromMlirType(element).value_or(DType::F32), value);
  return ctx.builder().create<tc::ConstantOp>(ctx.loc(), toAttribute(ctx.context(), t));
}

/// Refuses at import what the code generator cannot emit for a window op
/// (convolution, pooling) or a normalization that calls the runtime: more
/// than two spatial axes, element types other than f32. `what` names the op
/// family in the message.
LogicalResult checkRuntimeKernel(NodeContext &ctx, RankedTensorType type,
                                 llvm::StringRef what, bool windowed) {
  if (windowed && type.getRank() > 4)
    return ctx.error(llvm::Twine(type.getRank() - 2) + "-D " + what +
                     " is not supported (code generation has 1-D and 2-D " + what +
                     "); input " + shape::format(type.getShape()));
  if (type.getElementType().isF64())
    return ctx.error("the model computes in float64 here (" + what +
                     "); trainc compiles float32 models (export the PyTorch model after "
                     "model.float(), or convert the initializers and inputs to float32)");
  if (!type.getElementType().isF32()) {
    auto dtype = fromMlirType(type.getElementType());
    return ctx.error("code generation supports float32 " + what + " only, got " +
                     (dtype ? dtypeName(*dtype) : llvm::StringRef("another type")));
  }
  return success();
}

/// A 1-D window [k] as the 2-D window [1, k] over [N, C, 1, L]: no padding,
/// stride and dilation 1 on the added axis.
Window liftTo2d(const Window &w) {
  Window lifted;
  lifted.kernel = {1, w.kernel[0]};
  lifted.strides = {1, w.strides[0]};
  lifted.dilations = {1, w.dilations[0]};
  lifted.pads = {0, w.pads[0], 0, w.pads[1]};
  return lifted;
}

/// [d0, d1, rest...] -> [d0, d1, 1, rest...].
SmallVector<int64_t> withUnitAxis2(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> lifted(shape.begin(), shape.begin() + 2);
  lifted.push_back(1);
  lifted.append(shape.begin() + 2, shape.end());
  return lifted;
}

/// Reshapes the [N, C, 1, L] result of a lifted 1-D op back to [N, C, L].
LogicalResult bindDroppingAxis2(NodeContext &ctx, FailureOr<Value> lifted) {
  if (failed(lifted))
    return failure();
  ArrayRef<int64_t> s = cast<RankedTensorType>(lifted->getType()).getShape();
  FailureOr<Value> out = reshapeTo(ctx, *lifted, {s[0], s[1], s[3]});
  if (failed(out))
    return failure();
  ctx.setOutput(0, *out);
  return success();
}

/// A lifted 1-D window op's data and weight operands (the first two) as
/// [N, C, 1, L] and [M, C, 1, k].
LogicalResult liftOperands(NodeContext &ctx, SmallVector<Value> &operands) {
  for (unsigned i = 0; i < 2; ++i) {
    auto type = cast<RankedTensorType>(operands[i].getType());
    FailureOr<Value> lifted = reshapeTo(ctx, operands[i], withUnitAxis2(type.getShape()));
    if (failed(lifted))
      return failure();
    operands[i] = *lifted;
  }
  return success();
}

/// The node's output: `y`, or with `oneD` its [N, C, L] form.
LogicalResult bindWindowResult(NodeContext &ctx, FailureOr<Value> y, bool oneD) {
  if (oneD)
    return bindDroppingAxis2(ctx, y);
  if (failed(y))
    return failure();
  ctx.setOutput(0, *y);
  return success();
}

} // namespace

/// MatMul. Batch axes broadcast as numpy's; an operand whose batch is
/// neither one matrix nor the whole broadcast batch (multi-query attention's
/// [B, 1, T, D] against [B, H, D, T]) is expanded to the whole batch first,
/// so the GEMM sees equal batches and the expand's gradient sums back over
/// the broadcast axes.
LogicalResult trainc::frontend::convertMatMul(NodeContext &ctx) {
  FailureOr<Value> a = ctx.input(0), b = ctx.input(1);
  if (failed(a) || failed(b))
    return failure();
  ArrayRef<int64_t> as = cast<RankedTensorType>(a->getType()).getShape(),
                    bs = cast<RankedTensorType>(b->getType()).getShape();
  if (as.size() >= 3 || bs.size() >= 3) {
    ArrayRef<int64_t> ab = as.size() > 2 ? as.drop_back(2) : ArrayRef<int64_t>(),
                      bb = bs.size() > 2 ? bs.drop_back(2) : ArrayRef<int64_t>();
    SmallVector<int64_t> batch(std::max(ab.size(), bb.size()), 1);
    for (size_t i = 0; i < batch.size(); ++i) {
      const int64_t x = i < batch.size() - ab.size() ? 1 : ab[i - (batch.size() - ab.size())];
      const int64_t y = i < batch.size() - bb.size() ? 1 : bb[i - (batch.size() - bb.size())];
      if (x != y && x != 1 && y != 1)
        return ctx.error("the batch axes " + shape::format(ab) + " and " + shape::format(bb) +
                         " do not broadcast");
      batch[i] = std::max(x, y);
    }
    auto product = [](ArrayRef<int64_t> s) {
      int64_t p = 1;
      for (int64_t d : s)
        p *= d;
      return p;
    };
    const int64_t whole = product(batch);
    for (auto [operand, own] : {std::pair<Value *, ArrayRef<int64_t>>{&*a, ab}, {&*b, bb}}) {
      ArrayRef<int64_t> s = cast<RankedTensorType>(operand->getType()).getShape();
      const int64_t p = product(own);
      if (s.size() < 3 || p == 1 || p == whole)
        continue;
      SmallVector<int64_t> full(batch);
      full.append(s.end() - 2, s.end());
      FailureOr<Value> expanded =
          build<tc::ExpandOp>(ctx, *operand, {ctx.namedArray("shape", full)});
      if (failed(expanded))
        return failure();
      *operand = *expanded;
    }
  }
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

/// Conv over 1 or 2 spatial axes. A 1-D Conv [N, C, L] (audio models'
/// Conv1d) becomes the 2-D tc.conv of [N, C, 1, L] with weights [M, C/g, 1, k]
/// and the result reshaped back, so it trains through the 2-D kernels.
LogicalResult trainc::frontend::convertConv(NodeContext &ctx) {
  FailureOr<RankedTensorType> inType = spatialInput(ctx);
  FailureOr<RankedTensorType> wType = ctx.inputType(1);
  if (failed(inType) || failed(wType))
    return failure();
  if (failed(checkRuntimeKernel(ctx, *inType, "convolution", /*windowed=*/true)))
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
  bool oneD = inType->getRank() == 3;
  if (oneD) {
    *w = liftTo2d(*w);
    if (failed(liftOperands(ctx, *operands)))
      return failure();
  }
  FailureOr<Value> y = build<tc::ConvOp>(ctx, *operands,
                                         {ctx.namedArray("strides", w->strides),
                                          ctx.namedArray("pads", w->pads),
                                          ctx.namedArray("dilations", w->dilations),
                                          ctx.namedI64("group", ctx.attrInt("group", 1))});
  return bindWindowResult(ctx, y, oneD);
}

/// ConvTranspose over 1 or 2 spatial axes, as the gradient of a convolution
/// with respect to its input (tc.conv_backward_data): x is that
/// convolution's result gradient, the weights [C_in, C_out / group, kernel]
/// are its weights, and the output is its input, of the shape ONNX gives:
/// strides (in - 1) + output_padding + (kernel - 1) dilations + 1 - pads,
/// or `output_shape` with the pads it implies. The bias is added per
/// channel. A 1-D one is lifted to [N, C, 1, L] as Conv is.
LogicalResult trainc::frontend::convertConvTranspose(NodeContext &ctx) {
  FailureOr<RankedTensorType> inType = spatialInput(ctx);
  FailureOr<RankedTensorType> wType = ctx.inputType(1);
  if (failed(inType) || failed(wType))
    return failure();
  if (failed(checkRuntimeKernel(ctx, *inType, "transposed convolution", /*windowed=*/true)))
    return failure();
  const int64_t group = ctx.attrInt("group", 1);
  ArrayRef<int64_t> in = inType->getShape(), w = wType->getShape();
  if (wType->getRank() != inType->getRank() || w[0] != in[1] || group < 1)
    return ctx.error("the weight " + shape::format(w) + " must be [C_in, C_out / group, "
                     "kernel...] for the input " + shape::format(in) + " (group " +
                     llvm::Twine(group) + ")");
  ArrayRef<int64_t> kernel = w.drop_front(2);
  if (auto declared = ctx.attrInts("kernel_shape"))
    if (ArrayRef<int64_t>(*declared) != kernel)
      return ctx.error("kernel_shape does not match the weight's spatial shape " +
                       shape::format(kernel));
  const size_t spatial = in.size() - 2;
  auto orDefault = [&](llvm::StringRef name, size_t n, int64_t fill) {
    return intsOr(ctx, name, n, fill);
  };
  Window win{SmallVector<int64_t>(kernel.begin(), kernel.end()), orDefault("strides", spatial, 1),
             orDefault("pads", 2 * spatial, 0), orDefault("dilations", spatial, 1)};
  SmallVector<int64_t> outputPadding = orDefault("output_padding", spatial, 0);
  auto outputShape = ctx.attrInts("output_shape");
  if (win.strides.size() != spatial || win.dilations.size() != spatial ||
      win.pads.size() != 2 * spatial || outputPadding.size() != spatial ||
      (outputShape && outputShape->size() != spatial))
    return ctx.error("strides, dilations, pads, output_padding and output_shape must match "
                     "the " + llvm::Twine(spatial) + " spatial axes of the input");
  const std::string autoPad = ctx.attrString("auto_pad", "NOTSET");
  if (autoPad != "NOTSET" && autoPad != "VALID" && autoPad != "SAME_UPPER" &&
      autoPad != "SAME_LOWER")
    return ctx.error("auto_pad '" + autoPad + "' is not one of NOTSET, SAME_UPPER, "
                     "SAME_LOWER, VALID");
  SmallVector<int64_t> out = {in[0], w[1] * group};
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t s = win.strides[i], d = win.dilations[i], op = outputPadding[i];
    if (s < 1 || d < 1 || kernel[i] < 1 || op < 0 || op >= std::max(s, d))
      return ctx.error("strides, dilations and kernel sizes must be positive and each "
                       "output_padding below its stride or dilation");
    // No overflow below: the sizes of a real model are far from these.
    constexpr int64_t kLimit = int64_t(1) << 24;
    if (s > kLimit || d > kLimit || kernel[i] > kLimit || in[i + 2] > kLimit ||
        std::abs(win.pads[i]) > kLimit || std::abs(win.pads[i + spatial]) > kLimit ||
        (outputShape && std::abs((*outputShape)[i]) > kLimit))
      return ctx.error("a size, stride, dilation or pad beyond 2^24");
    const int64_t full = s * (in[i + 2] - 1) + op + (kernel[i] - 1) * d + 1;
    if (outputShape || autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      // The pads that give the asked size: ONNX puts the odd one at the
      // end for SAME_UPPER, at the beginning otherwise.
      // A size past the full one (by less than the stride) is PyTorch's
      // output_size: the extra rows at the end, as output_padding.
      const int64_t size = outputShape ? (*outputShape)[i] : in[i + 2] * s;
      const int64_t total = full - size;
      if (total <= -std::max(s, d))
        return ctx.error("output_shape " + llvm::Twine(size) + " is past the " +
                         llvm::Twine(full) + " the input and window give by a stride or more");
      win.pads[i] = total < 0 ? 0 : autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      win.pads[i + spatial] = total < 0 ? total : total - win.pads[i];
    } else if (autoPad == "VALID") {
      win.pads[i] = win.pads[i + spatial] = 0;
    }
    if (win.pads[i] < 0 || (win.pads[i + spatial] < 0 && !outputShape && autoPad == "NOTSET"))
      return ctx.error("negative pads are not supported");
    out.push_back(full - win.pads[i] - win.pads[i + spatial]);
    win.pads[i + spatial] = std::max<int64_t>(win.pads[i + spatial], 0);
    if (out.back() < 1)
      return ctx.error("the pads leave no output along spatial axis " + llvm::Twine(i));
  }
  FailureOr<SmallVector<Value>> operands = ctx.inputs(2, 3);
  if (failed(operands))
    return failure();
  const bool oneD = spatial == 1;
  if (oneD) {
    win = liftTo2d(win);
    out = withUnitAxis2(out);
    if (failed(liftOperands(ctx, *operands)))
      return failure();
  }
  FailureOr<Value> y = build<tc::ConvBackwardDataOp>(
      ctx, {(*operands)[0], (*operands)[1]},
      {ctx.namedArray("input_shape", out), ctx.namedArray("strides", win.strides),
       ctx.namedArray("pads", win.pads), ctx.namedArray("dilations", win.dilations),
       ctx.namedI64("group", group)});
  if (operands->size() == 3 && succeeded(y)) {
    // The bias [C_out] per channel: [1, C_out, 1, 1] broadcast.
    SmallVector<int64_t> biasShape(out.size(), 1);
    biasShape[1] = out[1];
    FailureOr<Value> bias = reshapeTo(ctx, (*operands)[2], biasShape);
    y = failed(bias) ? FailureOr<Value>(failure()) : build<tc::AddOp>(ctx, {*y, *bias});
  }
  return bindWindowResult(ctx, y, oneD);
}

/// DepthToSpace and SpaceToDepth: a reshape to six axes, a transpose and a
/// reshape back, exact and with their gradients (DCR and CRD as ONNX).
LogicalResult trainc::frontend::convertDepthSpace(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  FailureOr<Value> x = ctx.input(0);
  if (failed(type) || failed(x))
    return failure();
  const int64_t b = ctx.attrInt("blocksize", 0);
  if (type->getRank() != 4 || b < 1 || b > (int64_t(1) << 16))
    return ctx.error("expects a [N, C, H, W] input and a blocksize in [1, 65536]");
  ArrayRef<int64_t> s = type->getShape();
  const int64_t n = s[0], c = s[1], h = s[2], w = s[3];
  SmallVector<int64_t> split, perm, out;
  if (ctx.opType() == "DepthToSpace") {
    if (c % (b * b) != 0)
      return ctx.error("the channels " + llvm::Twine(c) + " are not a multiple of blocksize^2");
    const std::string mode = ctx.attrString("mode", "DCR");
    if (mode != "DCR" && mode != "CRD")
      return ctx.error("mode '" + mode + "' is not DCR or CRD");
    if (mode == "DCR") {
      split = {n, b, b, c / (b * b), h, w};
      perm = {0, 3, 4, 1, 5, 2};
    } else {
      split = {n, c / (b * b), b, b, h, w};
      perm = {0, 1, 4, 2, 5, 3};
    }
    out = {n, c / (b * b), h * b, w * b};
  } else {
    if (h % b != 0 || w % b != 0)
      return ctx.error("the height and width are not multiples of the blocksize");
    split = {n, c, h / b, b, w / b, b};
    perm = {0, 3, 5, 1, 2, 4};
    out = {n, c * b * b, h / b, w / b};
  }
  FailureOr<Value> y = reshapeTo(ctx, *x, split);
  if (succeeded(y))
    y = build<tc::TransposeOp>(ctx, *y, {ctx.namedArray("perm", perm)});
  if (succeeded(y))
    y = reshapeTo(ctx, *y, out);
  if (failed(y))
    return failure();
  ctx.setOutput(0, *y);
  return success();
}

/// GroupNormalization (opsets 18 and 21): the layer norm of [N, G, C / G *
/// spatial] (as InstanceNormalization is), then the scale and bias, per
/// group at opset 18 ([G]), per channel from 21 ([C]).
LogicalResult trainc::frontend::convertGroupNorm(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = spatialInput(ctx);
  if (failed(type) ||
      failed(checkRuntimeKernel(ctx, *type, "GroupNormalization", /*windowed=*/false)))
    return failure();
  ArrayRef<int64_t> shape = type->getShape();
  const int64_t channels = shape[1], groups = ctx.attrInt("num_groups", 0);
  if (groups < 1 || channels % groups != 0)
    return ctx.error("num_groups " + llvm::Twine(groups) + " must divide the " +
                     llvm::Twine(channels) + " channels");
  if (ctx.attrInt("stash_type", 1) != 1)
    return ctx.error("stash_type must be 1 (float32 statistics)");
  const bool perGroup = ctx.opset() < 21;
  const int64_t affine = perGroup ? groups : channels;
  for (unsigned i = 1; i <= 2; ++i) {
    FailureOr<RankedTensorType> t = ctx.inputType(i);
    if (failed(t))
      return failure();
    if (t->getShape() != ArrayRef<int64_t>{affine})
      return ctx.error(llvm::Twine(i == 1 ? "scale" : "bias") + " must have shape [" +
                       llvm::Twine(affine) + "], got " + shape::format(t->getShape()));
  }
  int64_t rest = 1;
  for (int64_t d : shape.drop_front(1))
    rest *= d;
  rest /= groups;
  FailureOr<Value> input = ctx.input(0);
  if (failed(input))
    return failure();
  Value x = *input;
  FailureOr<Value> rows = reshapeTo(ctx, x, {shape[0], groups, rest});
  FailureOr<Value> ones =
      build<tc::ExpandOp>(ctx, scalarLike(ctx, x, 1.0), {ctx.namedArray("shape", {rest})});
  if (failed(rows) || failed(ones))
    return failure();
  FailureOr<Value> y = build<tc::LayerNormOp>(
      ctx, {*rows, *ones},
      {ctx.namedI64("axis", 2), ctx.namedF32("epsilon", ctx.attrFloat("epsilon", 1e-5f))});
  if (succeeded(y))
    y = reshapeTo(ctx, *y, shape);
  // scale and bias as [C, 1, ...] (a group's value repeated over its
  // channels at opset 18) against [N, C, spatial...].
  SmallVector<int64_t> perChannel(type->getRank() - 1, 1);
  perChannel[0] = channels;
  for (unsigned i = 1; i <= 2 && succeeded(y); ++i) {
    FailureOr<Value> v = ctx.input(i);
    if (succeeded(v) && perGroup) {
      v = reshapeTo(ctx, *v, {groups, 1});
      if (succeeded(v))
        v = build<tc::ExpandOp>(ctx, *v,
                                {ctx.namedArray("shape", {groups, channels / groups})});
    }
    if (succeeded(v))
      v = reshapeTo(ctx, *v, perChannel);
    if (failed(v))
      return failure();
    y = i == 1 ? build<tc::MulOp>(ctx, {*y, *v}) : build<tc::AddOp>(ctx, {*y, *v});
  }
  if (failed(y))
    return failure();
  ctx.setOutput(0, *y);
  return success();
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

/// Whether input `i` is a host constant whose every element is `value`.
static bool isConstantFill(NodeContext &ctx, unsigned i, double value) {
  const Tensor *t = ctx.constant(i);
  if (!t)
    return false;
  for (int64_t k = 0; k < t->numElements(); ++k)
    if (t->real(k) != value)
      return false;
  return true;
}

/// InstanceNormalization (also how PyTorch exports GroupNorm: Reshape to
/// [N, G, -1], InstanceNormalization with constant ones and zeros, Reshape
/// back, then the affine Mul and Add). Decomposed as tc.layer_norm over the
/// last axis of x reshaped to [N, C, prod(spatial)], with a scale of ones,
/// then scale and bias [C] broadcast over [C, 1, ...] (skipped when they are
/// constant ones and zeros).
LogicalResult trainc::frontend::convertInstanceNorm(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = spatialInput(ctx);
  if (failed(type) ||
      failed(checkRuntimeKernel(ctx, *type, "InstanceNormalization", /*windowed=*/false)))
    return failure();
  if (ctx.numInputs() != 3 || !ctx.hasInput(1) || !ctx.hasInput(2))
    return ctx.error("expects inputs input, scale and B");
  ArrayRef<int64_t> shape = type->getShape();
  int64_t channels = shape[1];
  for (unsigned i = 1; i <= 2; ++i) {
    FailureOr<RankedTensorType> t = ctx.inputType(i);
    if (failed(t))
      return failure();
    if (t->getShape() != ArrayRef<int64_t>{channels})
      return ctx.error(llvm::Twine(i == 1 ? "scale" : "B") + " must have shape [" +
                       llvm::Twine(channels) + "], got " + shape::format(t->getShape()));
  }
  int64_t spatial = 1;
  for (int64_t d : shape.drop_front(2))
    spatial *= d;
  FailureOr<Value> input = ctx.input(0);
  if (failed(input))
    return failure();
  Value x = *input;
  FailureOr<Value> rows = x;
  if (type->getRank() != 3)
    rows = reshapeTo(ctx, x, {shape[0], channels, spatial});
  if (failed(rows))
    return failure();
  // The layer norm's own scale: ones broadcast to [spatial] at run time (no
  // constant of that size in the program).
  FailureOr<Value> ones =
      build<tc::ExpandOp>(ctx, scalarLike(ctx, x, 1.0), {ctx.namedArray("shape", {spatial})});
  if (failed(ones))
    return failure();
  FailureOr<Value> y = build<tc::LayerNormOp>(
      ctx, {*rows, *ones},
      {ctx.namedI64("axis", 2), ctx.namedF32("epsilon", ctx.attrFloat("epsilon", 1e-5f))});
  if (succeeded(y) && type->getRank() != 3)
    y = reshapeTo(ctx, *y, shape);
  if (failed(y))
    return failure();
  // scale and B as [C, 1, ...] against [N, C, spatial...].
  SmallVector<int64_t> perChannel(type->getRank() - 1, 1);
  perChannel[0] = channels;
  for (unsigned i = 1; i <= 2; ++i) {
    if (isConstantFill(ctx, i, i == 1 ? 1.0 : 0.0))
      continue;
    FailureOr<Value> v = ctx.input(i);
    if (succeeded(v))
      v = reshapeTo(ctx, *v, perChannel);
    if (failed(v))
      return failure();
    y = i == 1 ? build<tc::MulOp>(ctx, {*y, *v}) : build<tc::AddOp>(ctx, {*y, *v});
    if (failed(y))
      return failure();
  }
  ctx.setOutput(0, *y);
  return success();
}

/// MaxPool and AveragePool over 1 or 2 spatial axes; a 1-D pool is the 2-D
/// pool of [N, C, 1, L] with window [1, k], as for Conv.
LogicalResult trainc::frontend::convertPool(NodeContext &ctx) {
  bool isMax = ctx.opType() == "MaxPool";
  if (isMax && ctx.outputUsed(1))
    return ctx.error("the Indices output of MaxPool is not supported");
  FailureOr<RankedTensorType> type = spatialInput(ctx);
  if (failed(type) || failed(checkRuntimeKernel(ctx, *type, "pooling", /*windowed=*/true)))
    return failure();
  auto kernel = ctx.attrInts("kernel_shape");
  if (!kernel)
    return ctx.error("attribute 'kernel_shape' is required");
  FailureOr<Window> w = windowAttrs(ctx, type->getShape(), *kernel);
  FailureOr<Value> x = ctx.input(0);
  if (failed(w) || failed(x))
    return failure();
  if (!isMax && llvm::any_of(w->dilations, [](int64_t d) { return d != 1; }))
    return ctx.error("dilated AveragePool is not supported");
  bool oneD = type->getRank() == 3;
  if (oneD) {
    *w = liftTo2d(*w);
    x = reshapeTo(ctx, *x, withUnitAxis2(type->getShape()));
    if (failed(x))
      return failure();
  }
  bool ceil = ctx.attrInt("ceil_mode", 0) != 0;
  FailureOr<Value> y =
      isMax ? build<tc::MaxPoolOp>(ctx, *x,
                                   {ctx.namedArray("kernel_shape", w->kernel),
                                    ctx.namedArray("strides", w->strides),
                                    ctx.namedArray("pads", w->pads),
                                    ctx.namedArray("dilations", w->dilations),
                                    ctx.namedBool("ceil_mode", ceil)})
            : build<tc::AvgPoolOp>(
                  ctx, *x,
                  {ctx.namedArray("kernel_shape", w->kernel),
                   ctx.namedArray("strides", w->strides), ctx.namedArray("pads", w->pads),
                   ctx.namedBool("count_include_pad", ctx.attrInt("count_include_pad", 0) != 0),
                   ctx.namedBool("ceil_mode", ceil)});
  return bindWindowResult(ctx, y, oneD);
}

LogicalResult trainc::frontend::convertGlobalPool(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = spatialInput(ctx);
  FailureOr<Value> x = ctx.input(0);
  if (failed(type) || failed(x))
    return failure();
  // Both are reductions over every spatial axis (any number of them);
  // the mean calls the runtime's float32 reduction.
  if (ctx.opType() == "GlobalAveragePool") {
    if (failed(checkRuntimeKernel(ctx, *type, "GlobalAveragePool", /*windowed=*/false)))
      return failure();
    return ctx.emit<tc::GlobalAvgPoolOp>(*x);
  }
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

namespace {

/// The reduced axes of a Reduce* node (sorted, non-negative) and whether it is
/// a no-op (no axes and noop_with_empty_axes).
struct ReduceAxes {
  std::vector<int64_t> axes;
  bool keepdims = true;
  bool noop = false;
};

FailureOr<ReduceAxes> reduceAxes(NodeContext &ctx, RankedTensorType type) {
  // ReduceSum takes axes as an input from opset 13, the others from 18.
  bool axesAsInput = ctx.opType() == "ReduceSum" || ctx.opset() >= 18;
  if (axesAsInput && ctx.attr("axes"))
    return ctx.error("axes are an input at opset " + llvm::Twine(ctx.opset()) +
                     ", not an attribute");
  if (!axesAsInput && ctx.hasInput(1))
    return ctx.error("axes are an attribute at opset " + llvm::Twine(ctx.opset()) +
                     ", not an input (an input from opset 18)");
  ReduceAxes r;
  r.keepdims = ctx.attrInt("keepdims", 1) != 0;
  if (axesAsInput) {
    if (ctx.hasInput(1)) {
      FailureOr<std::vector<int64_t>> v = ctx.constantInts(1, "axes");
      if (failed(v))
        return failure();
      r.axes = *v;
    }
  } else if (auto v = ctx.attrInts("axes")) {
    r.axes = *v;
  }
  if (r.axes.empty() && ctx.attrInt("noop_with_empty_axes", 0) != 0) {
    r.noop = true;
    return r;
  }
  for (int64_t &axis : r.axes) {
    FailureOr<int64_t> a = ctx.normalizeAxis(axis, type.getRank());
    if (failed(a))
      return failure();
    axis = *a;
  }
  std::sort(r.axes.begin(), r.axes.end());
  if (std::adjacent_find(r.axes.begin(), r.axes.end()) != r.axes.end())
    return ctx.error("axes name an axis twice");
  return r;
}

/// ReduceL2: sqrt(sum(x^2)). Where the sum is 0 the square root is taken of 1
/// and the result replaced by 0 (both through tc.where), so the gradient there
/// is 0 as PyTorch's norm backward, not 0 * inf.
FailureOr<Value> emitL2(NodeContext &ctx, Value x, ArrayRef<NamedAttribute> attrs) {
  FailureOr<Value> squares = build<tc::MulOp>(ctx, {x, x});
  if (failed(squares))
    return failure();
  FailureOr<Value> sum = build<tc::ReduceSumOp>(ctx, *squares, attrs);
  if (failed(sum))
    return failure();
  FailureOr<Value> zero = build<tc::EqualOp>(ctx, {*sum, scalarLike(ctx, x, 0.0)});
  if (failed(zero))
    return failure();
  FailureOr<Value> safe = build<tc::WhereOp>(ctx, {*zero, scalarLike(ctx, x, 1.0), *sum});
  if (failed(safe))
    return failure();
  FailureOr<Value> root = build<tc::SqrtOp>(ctx, *safe);
  if (failed(root))
    return failure();
  return build<tc::WhereOp>(ctx, {*zero, scalarLike(ctx, x, 0.0), *root});
}

/// ReduceLogSumExp as torch.logsumexp: m = max over the axes (0 where it is
/// infinite), log(sum(exp(x - m))) + m.
FailureOr<Value> emitLogSumExp(NodeContext &ctx, Value x, ArrayRef<int64_t> axes,
                               bool keepdims) {
  FailureOr<Value> max = build<tc::ReduceMaxOp>(
      ctx, x, {ctx.namedArray("axes", axes), ctx.namedBool("keepdims", true)});
  if (failed(max))
    return failure();
  FailureOr<Value> magnitude = build<tc::AbsOp>(ctx, *max);
  if (failed(magnitude))
    return failure();
  FailureOr<Value> infinite = build<tc::EqualOp>(
      ctx, {*magnitude, scalarLike(ctx, x, std::numeric_limits<double>::infinity())});
  if (failed(infinite))
    return failure();
  FailureOr<Value> shift = build<tc::WhereOp>(ctx, {*infinite, scalarLike(ctx, x, 0.0), *max});
  if (failed(shift))
    return failure();
  FailureOr<Value> centered = build<tc::SubOp>(ctx, {x, *shift});
  if (failed(centered))
    return failure();
  FailureOr<Value> exps = build<tc::ExpOp>(ctx, *centered);
  if (failed(exps))
    return failure();
  FailureOr<Value> sum = build<tc::ReduceSumOp>(
      ctx, *exps, {ctx.namedArray("axes", axes), ctx.namedBool("keepdims", keepdims)});
  if (failed(sum))
    return failure();
  FailureOr<Value> log = build<tc::LogOp>(ctx, *sum);
  if (failed(log))
    return failure();
  if (!keepdims) {
    shift = reshapeTo(ctx, *shift, cast<RankedTensorType>(log->getType()).getShape());
    if (failed(shift))
      return failure();
  }
  return build<tc::AddOp>(ctx, {*log, *shift});
}

} // namespace

/// The axes a reduction keeps or drops: every axis when `axes` is empty.
SmallVector<int64_t> reducedAxes(const ReduceAxes &r, int64_t rank) {
  SmallVector<int64_t> axes(r.axes.begin(), r.axes.end());
  if (axes.empty())
    for (int64_t a = 0; a < rank; ++a)
      axes.push_back(a);
  return axes;
}

/// Most elements along one axis a run-time ReduceProd multiplies in a chain.
constexpr int64_t kMaxProductChain = 1024;

/// ReduceProd. Of a host constant (the shape arithmetic exporters emit, such
/// as the product of a Shape's dimensions) it folds; at run time it is a
/// chain of tc.mul over the slices along each reduced axis, so the gradient
/// is the product rule's, exact at zeros (PyTorch's prod_backward).
static LogicalResult convertReduceProd(NodeContext &ctx, RankedTensorType type, Value x,
                                       const ReduceAxes &r) {
  ArrayRef<int64_t> shape = type.getShape();
  const int64_t rank = type.getRank();
  SmallVector<int64_t> axes = reducedAxes(r, rank);
  SmallVector<int64_t> kept(shape);
  for (int64_t a : axes)
    kept[a] = 1;
  SmallVector<int64_t> outShape;
  for (int64_t a = 0; a < rank; ++a)
    if (r.keepdims || !llvm::is_contained(axes, a))
      outShape.push_back(kept[a]);
  const Tensor *c = ctx.constant(0);
  const bool empty = llvm::any_of(axes, [&](int64_t a) { return shape[a] == 0; });
  if (c || empty) {
    // The product of nothing is 1.
    DType dtype = c ? c->dtype() : fromMlirType(type.getElementType()).value_or(DType::F32);
    Tensor out(dtype, outShape);
    const bool real = isFloat(dtype);
    for (int64_t i = 0; i < out.numElements(); ++i)
      real ? out.setReal(i, 1.0) : out.setInteger(i, 1);
    if (!c) {
      ctx.setOutput(0, std::move(out));
      return success();
    }
    SmallVector<int64_t> strides(rank, 1);
    for (int64_t a = rank - 2; a >= 0; --a)
      strides[a] = strides[a + 1] * kept[a + 1];
    for (int64_t i = 0; i < c->numElements(); ++i) {
      int64_t rest = i, o = 0;
      for (int64_t a = rank - 1; a >= 0; --a) {
        const int64_t coord = rest % shape[a];
        rest /= shape[a];
        if (kept[a] != 1 || !llvm::is_contained(axes, a))
          o += coord * strides[a];
      }
      if (real)
        out.setReal(o, out.real(o) * c->real(i));
      else // two's complement wrap, as the kernels' integer arithmetic
        out.setInteger(o, static_cast<int64_t>(static_cast<uint64_t>(out.integer(o)) *
                                               static_cast<uint64_t>(c->integer(i))));
    }
    ctx.setOutput(0, std::move(out));
    return success();
  }
  OpChain b(ctx);
  FailureOr<Value> y = x;
  for (int64_t a : axes) {
    if (shape[a] > kMaxProductChain)
      return ctx.error("a run-time ReduceProd over axis " + llvm::Twine(a) + " of " +
                       llvm::Twine(shape[a]) + " elements (at most " +
                       llvm::Twine(kMaxProductChain) + " are multiplied in a chain)");
    FailureOr<Value> line = y;
    y = b.slice(line, a, 0, 1);
    for (int64_t k = 1; k < shape[a]; ++k)
      y = b.op<tc::MulOp>({y, b.slice(line, a, k, k + 1)});
  }
  if (!r.keepdims)
    y = b.reshape(y, outShape);
  return bindOutput(ctx, y);
}

LogicalResult trainc::frontend::convertReduce(NodeContext &ctx) {
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  FailureOr<Value> x = ctx.input(0);
  if (failed(type) || failed(x))
    return failure();
  FailureOr<ReduceAxes> r = reduceAxes(ctx, *type);
  if (failed(r))
    return failure();
  llvm::StringRef op = ctx.opType();
  bool direct = op == "ReduceSum" || op == "ReduceMean" || op == "ReduceMax";
  if (r->noop) {
    // The ONNX reference returns the input unchanged for some of the
    // decomposed reductions and its square for ReduceSumSquare; PyTorch
    // never exports this form.
    if (!direct)
      return ctx.error("noop_with_empty_axes with no axes is not supported for " + op);
    ctx.setOutput(0, *x);
    return success();
  }
  if (!direct && op != "ReduceProd" && !isa<FloatType>(type->getElementType()))
    return ctx.error(op + " is supported on floating-point tensors only");
  SmallVector<NamedAttribute> attrs = {ctx.namedArray("axes", r->axes),
                                       ctx.namedBool("keepdims", r->keepdims)};
  if (op == "ReduceSum")
    return ctx.emit<tc::ReduceSumOp>(*x, attrs);
  if (op == "ReduceMean")
    return ctx.emit<tc::ReduceMeanOp>(*x, attrs);
  if (op == "ReduceMax")
    return ctx.emit<tc::ReduceMaxOp>(*x, attrs);
  if (op == "ReduceProd")
    return convertReduceProd(ctx, *type, *x, *r);
  // Decomposed into tc ops with gradient rules.
  FailureOr<Value> y = failure();
  if (op == "ReduceMin") {
    // -max(-x): the minimum, its gradient spread over the ties as torch.amin's.
    y = build<tc::NegOp>(ctx, *x);
    if (succeeded(y))
      y = build<tc::ReduceMaxOp>(ctx, *y, attrs);
    if (succeeded(y))
      y = build<tc::NegOp>(ctx, *y);
  } else if (op == "ReduceL2") {
    y = emitL2(ctx, *x, attrs);
  } else if (op == "ReduceLogSumExp") {
    y = emitLogSumExp(ctx, *x, r->axes, r->keepdims);
  } else {
    // ReduceL1: sum(|x|); ReduceSumSquare: sum(x^2); ReduceLogSum: log(sum(x)).
    FailureOr<Value> terms = op == "ReduceL1"          ? build<tc::AbsOp>(ctx, *x)
                             : op == "ReduceSumSquare" ? build<tc::MulOp>(ctx, {*x, *x})
                                                       : FailureOr<Value>(*x);
    if (succeeded(terms))
      y = build<tc::ReduceSumOp>(ctx, *terms, attrs);
    if (succeeded(y) && op == "ReduceLogSum")
      y = build<tc::LogOp>(ctx, *y);
  }
  if (failed(y))
    return failure();
  ctx.setOutput(0, *y);
  return success();
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


