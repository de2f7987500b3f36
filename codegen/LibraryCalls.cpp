//===- LibraryCalls.cpp - calls into the runtime's kernels ----------------===//
//
// Contractions (tk::gemm: cuBLAS or OpenBLAS), convolution, pooling, batch
// and layer norm, softmax, reductions over contiguous axes, gathers and the
// losses: one runtime call per op, with its dimensions as literals or a
// descriptor.
//
//===----------------------------------------------------------------------===//

#include "codegen/Escape.h"
#include "codegen/ProgramEmitter.h"
#include "ir/ShapeLogic.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace trainc;
using namespace trainc::codegen;

namespace {

/// "outer, axis, inner" of a gather from a table of shape `data` along `axis`.
std::string gatherDims(ArrayRef<int64_t> data, int64_t axis) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= data[d];
  for (size_t d = axis + 1; d < data.size(); ++d)
    inner *= data[d];
  return std::to_string(outer) + ", " + std::to_string(data[axis]) + ", " +
         std::to_string(inner);
}

/// "rows, cols" of a layer norm over the axes from `axis` on.
std::string layerNormDims(Value input, int64_t axis) {
  ArrayRef<int64_t> s = shapeOf(input);
  int64_t rows = 1;
  for (int64_t d = 0; d < axis; ++d)
    rows *= s[d];
  return std::to_string(rows) + ", " + std::to_string(countOf(input) / std::max<int64_t>(rows, 1));
}

/// "n, c, spatial" of a batch-norm input [N, C, ...] (or channels-last
/// [N, ..., C]).
std::string batchNormDims(ArrayRef<int64_t> x, bool channelsLast) {
  int64_t c = x[channelsLast ? x.size() - 1 : 1], spatial = 1;
  for (size_t d = 1; d < x.size(); ++d)
    spatial *= x[d];
  return std::to_string(x[0]) + ", " + std::to_string(c) + ", " +
         std::to_string(spatial / c);
}

/// The trailing layout argument of the batch-norm kernels.
std::string batchNormLayout(bool channelsLast) {
  return channelsLast ? ", /*channelsLast=*/true" : "";
}

} // namespace

LogicalResult ProgramEmitter::emitLibraryCall(Operation *op) {
  // The runtime's 16-bit entry points are the ops with the
  // LowPrecisionKernel trait (GEMMs, convolutions, batch norm, pooling; a
  // gather moves bytes of any type) and the reductions into f32 (out_type;
  // the mixed-precision phase sends every other library op to f32).
  SmallVector<Type> types(op->getOperandTypes());
  llvm::append_range(types, op->getResultTypes());
  bool widenedReduce =
      isa<tc::ReduceSumOp, tc::ReduceMeanOp, tc::ReduceMaxOp>(op) && op->hasAttr("out_type");
  if (!widenedReduce && !op->hasTrait<tc::OpTrait::LowPrecisionKernel>())
    for (Type type : types)
      if (auto shaped = dyn_cast<ShapedType>(type))
        if (shaped.getElementType().isF16() || shaped.getElementType().isBF16())
          return op->emitError("codegen supports ")
                 << op->getName() << " on f32 only, not " << shaped.getElementType()
                 << " (--precision=bf16 computes it in f32)";
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](tc::MatMulOp o) { return emitMatMul(o); })
      .Case([&](tc::GemmOp o) { return emitGemm(o); })
      .Case([&](tc::ConvOp o) { return emitConv(o); })
      .Case<tc::MaxPoolOp, tc::AvgPoolOp, tc::MaxPoolBackwardOp, tc::AvgPoolBackwardOp>(
          [&](Operation *o) { return emitPool(o); })
      .Case<tc::ConvBackwardDataOp, tc::ConvBackwardFilterOp>(
          [&](Operation *o) { return emitConvBackward(o); })
      .Case([&](tc::GlobalAvgPoolOp o) {
        // The mean of each plane: [N * C, HW, 1], or channels-last [N, HW, C].
        ArrayRef<int64_t> s = shapeOf(o.getInput());
        int64_t c = s[o.getChannelsLast() ? s.size() - 1 : 1];
        int64_t spatial = countOf(o.getInput()) / (s[0] * c);
        int64_t outer = o.getChannelsLast() ? s[0] : s[0] * c;
        int64_t inner = o.getChannelsLast() ? c : 1;
        call("tk::reduce(ctx, trainc::rt::ReduceKind::Mean, " + std::to_string(outer) + ", " +
             std::to_string(spatial) + ", " + std::to_string(inner) + ", " + ptr(o.getInput()) +
             ", " + ptr(o.getResult()) + ")");
        return success();
      })
      .Case<tc::BatchNormOp, tc::BatchNormBackwardOp, tc::LayerNormOp,
            tc::LayerNormBackwardOp, tc::SoftmaxOp, tc::LogSoftmaxOp>([&](Operation *o) {
        emitNormCall(o, [&](Value v) { return ptr(v); }, "");
        return success();
      })
      .Case([&](tc::ReduceSumOp o) { return emitReduce(o, o.getAxes(), "Sum"); })
      .Case([&](tc::ReduceMeanOp o) { return emitReduce(o, o.getAxes(), "Mean"); })
      .Case([&](tc::ReduceMaxOp o) { return emitReduce(o, o.getAxes(), "Max"); })
      .Case([&](tc::GatherOp o) -> LogicalResult {
        if (!cast<ShapedType>(o.getIndices().getType()).getElementType().isInteger(64))
          return o.emitError("codegen supports i64 gather indices only");
        call("tk::gather(ctx, " + gatherDims(shapeOf(o.getData()), o.getAxis()) +
             ", sizeof(" + cType(o.getData().getType()) +
             "), " + ptr(o.getData()) + ", " + ptr(o.getIndices()) + ", " +
             std::to_string(countOf(o.getIndices())) + ", " + ptr(o.getResult()) + ")");
        return success();
      })
      .Case([&](tc::GatherBackwardOp o) -> LogicalResult {
        if (!cast<ShapedType>(o.getIndices().getType()).getElementType().isInteger(64))
          return o.emitError("codegen supports i64 gather indices only");
        call("tk::gatherBackward(ctx, " + gatherDims(o.getDataShape(), o.getAxis()) + ", " +
             ptr(o.getResultGrad()) + ", " + ptr(o.getIndices()) + ", " +
             std::to_string(countOf(o.getIndices())) + ", " +
             std::to_string(o.getPaddingIndexAttr() ? o.getPaddingIndexAttr().getInt() : -1) +
             ", " + ptr(o.getResult()) + ")");
        return success();
      })
      .Case([&](tc::GlobalNormOp o) {
        std::string tensors, sizes;
        for (Value input : o.getInputs()) {
          tensors += (tensors.empty() ? "" : ", ") + ptr(input);
          sizes += (sizes.empty() ? "" : ", ") + std::to_string(countOf(input));
        }
        call("tk::globalNorm(ctx, {" + tensors + "}, {" + sizes + "}, " + ptr(o.getResult()) +
             ")");
        return success();
      })
      .Case([&](tc::DampedInverseOp o) { return emitDampedInverse(o); })
      .Case<tc::SoftmaxCrossEntropyOp, tc::NllLossOp, tc::MseLossOp>(
          [&](Operation *o) { return emitLoss(o); })
      .Default([&](Operation *o) {
        return o->emitError("codegen does not support ") << o->getName() << " yet";
      });
}

void ProgramEmitter::emitNormCall(Operation *op, llvm::function_ref<std::string(Value)> pointer,
                                  StringRef fusion) {
  // With a fusion every batch-norm call spells its layout argument.
  auto layout = [&](bool channelsLast) {
    return fusion.empty() ? batchNormLayout(channelsLast)
                          : std::string(", /*channelsLast=*/") + (channelsLast ? "true" : "false");
  };
  std::string tail = fusion.empty() ? ")" : ", " + fusion.str() + ")";
  auto optional = [&](Value v) { return v ? pointer(v) : std::string("nullptr"); };
  if (auto o = dyn_cast<tc::BatchNormOp>(op)) {
    std::string dims = batchNormDims(shapeOf(o.getInput()), o.getChannelsLast());
    std::string common = pointer(o.getInput()) + ", " + pointer(o.getScale()) + ", " +
                         pointer(o.getBias()) + ", " + pointer(o.getMean()) + ", " +
                         pointer(o.getVar()) + ", ";
    std::string epsilon = literal(o.getEpsilon().convertToFloat(), true);
    if (!o.getTraining()) {
      // Running statistics (the planner aliased the statistics results to
      // the operands).
      call("tk::batchNormInference(ctx, " + dims + ", " + common + epsilon + ", " +
           pointer(o.getResult()) + layout(o.getChannelsLast()) + tail);
      return;
    }
    call("tk::batchNormTraining(ctx, " + dims + ", " + common + optional(o.getSampleMask()) +
         ", " + epsilon + ", " + literal(o.getMomentum().convertToFloat(), true) + ", " +
         pointer(o.getResult()) + ", " + pointer(o.getRunningMean()) + ", " +
         pointer(o.getRunningVar()) + layout(o.getChannelsLast()) + tail);
    return;
  }
  if (auto o = dyn_cast<tc::BatchNormBackwardOp>(op)) {
    call("tk::batchNormBackward(ctx, " +
         batchNormDims(shapeOf(o.getInput()), o.getChannelsLast()) + ", " +
         pointer(o.getInput()) + ", " + pointer(o.getScale()) + ", " +
         pointer(o.getResultGrad()) + ", " + optional(o.getSampleMask()) + ", " +
         literal(o.getEpsilon().convertToFloat(), true) + ", " + pointer(o.getInputGrad()) +
         ", " + pointer(o.getScaleGrad()) + ", " + pointer(o.getBiasGrad()) +
         layout(o.getChannelsLast()) + tail);
    return;
  }
  if (auto o = dyn_cast<tc::LayerNormOp>(op)) {
    call("tk::layerNorm(ctx, " + layerNormDims(o.getInput(), o.getAxis()) + ", " +
         pointer(o.getInput()) + ", " + pointer(o.getScale()) + ", " + optional(o.getBias()) +
         ", " + literal(o.getEpsilon().convertToFloat(), true) + ", " + pointer(o.getResult()) +
         tail);
    return;
  }
  if (isa<tc::SoftmaxOp, tc::LogSoftmaxOp>(op)) {
    int64_t axis = op->getAttrOfType<IntegerAttr>("axis").getInt();
    ArrayRef<int64_t> s = shapeOf(op->getOperand(0));
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d)
      outer *= s[d];
    for (size_t d = axis + 1; d < s.size(); ++d)
      inner *= s[d];
    call("tk::softmax(ctx, " + std::to_string(outer) + ", " + std::to_string(s[axis]) + ", " +
         std::to_string(inner) + ", " + pointer(op->getOperand(0)) + ", " +
         pointer(op->getResult(0)) + ", " + (isa<tc::LogSoftmaxOp>(op) ? "true" : "false") +
         tail);
    return;
  }
  auto o = cast<tc::LayerNormBackwardOp>(op);
  call("tk::layerNormBackward(ctx, " + layerNormDims(o.getInput(), o.getAxis()) + ", " +
       pointer(o.getInput()) + ", " + pointer(o.getScale()) + ", " + pointer(o.getResultGrad()) +
       ", " + literal(o.getEpsilon().convertToFloat(), true) + ", " + pointer(o.getInputGrad()) +
       ", " + pointer(o.getScaleGrad()) + ", " + pointer(o.getBiasGrad()) + tail);
}

LogicalResult ProgramEmitter::emitDampedInverse(tc::DampedInverseOp o) {
  // Both scalars are hyperparameters, read on the host (a step graph is
  // recorded per value of kfac.invert).
  std::string host[2];
  Value scalars[2] = {o.getDamping(), o.getInvert()};
  for (int i = 0; i < 2; ++i) {
    if (!hyperIndex.count(scalars[i]))
      return o.emitError("codegen needs the damping and invert of tc.damped_inverse to be "
                         "hyperparameters of the step");
    hostReadHypers.insert(hyperIndex.lookup(scalars[i]));
    host[i] = "args.hostHypers[" + std::to_string(hyperIndex.lookup(scalars[i])) + "][0]";
  }
  call("tk::dampedInverse(ctx, " + std::to_string(shapeOf(o.getMatrix())[0]) + ", " +
       ptr(o.getMatrix()) + ", " + host[0] + ", " + host[1] + ", " + ptr(o.getPrevious()) +
       ", " + ptr(o.getResult()) + ")");
  return success();
}

std::string ProgramEmitter::GemmDims::operands(StringRef alpha) const {
  return std::string(transA ? "true" : "false") + ", " + (transB ? "true" : "false") + ", " +
         std::to_string(m) + ", " + std::to_string(n) + ", " + std::to_string(k) + ", " +
         (alpha.empty() ? "" : alpha.str() + ", ") + a +
         ", " + std::to_string(lda) + ", " + std::to_string(strideA) + ", " + b + ", " +
         std::to_string(ldb) + ", " + std::to_string(strideB);
}

std::string ProgramEmitter::GemmDims::outputTail() const {
  return ", " + std::to_string(n) + ", " + std::to_string(m * n) + ", " + std::to_string(batch);
}

FailureOr<ProgramEmitter::GemmDims> ProgramEmitter::matmulDims(tc::MatMulOp op, Value lhs,
                                                                Value rhs) {
  ArrayRef<int64_t> a = shapeOf(lhs), b = shapeOf(rhs);
  // f32, or f16/bf16 (tk::gemm's mixed-precision overloads).
  Type element = cast<ShapedType>(lhs.getType()).getElementType();
  if (!element.isF32() && !element.isBF16() && !element.isF16())
    return op.emitError("codegen supports f32, bf16 and f16 matmul only, got ") << element;
  // Row-major: A is stored [.., m, k] (lda = k), or [.., k, m] with trans_a
  // (lda = m); B is [.., k, n] (ldb = n), or [.., n, k] with trans_b (ldb = k).
  // The verifier refuses a flag on a 1-D operand.
  GemmDims g;
  g.transA = op.getTransA();
  g.transB = op.getTransB();
  g.m = a.size() == 1 ? 1 : a[a.size() - (g.transA ? 1 : 2)];
  g.k = g.transA ? a[a.size() - 2] : a.back();
  g.n = b.size() == 1 ? 1 : b[b.size() - (g.transB ? 2 : 1)];
  g.lda = g.transA ? g.m : g.k;
  g.ldb = g.transB ? g.k : g.n;
  auto batchOf = [](ArrayRef<int64_t> s) {
    int64_t p = 1;
    for (size_t d = 0; d + 2 < s.size(); ++d)
      p *= s[d];
    return p;
  };
  g.batch = countOf(op.getResult()) / (g.m * g.n);
  int64_t ba = batchOf(a), bb = batchOf(b);
  if ((ba != g.batch && ba != 1) || (bb != g.batch && bb != 1))
    return op.emitError("codegen does not support partially broadcast matmul batches yet");
  g.strideA = ba == 1 ? 0 : g.m * g.k;
  g.strideB = bb == 1 ? 0 : g.k * g.n;
  g.a = ptr(lhs);
  g.b = ptr(rhs);
  // A batch of row-major A [m, k] blocks against one shared B (a Linear on
  // [N, T, C]) is one GEMM of N T rows: the blocks lie end to end, as do
  // C's. One call with a tall A runs far faster than many small ones.
  if (g.batch > 1 && g.strideB == 0 && g.strideA == g.m * g.k && !g.transA) {
    g.m *= g.batch;
    g.batch = 1;
    g.strideA = 0;
  }
  return g;
}

LogicalResult ProgramEmitter::emitMatMul(tc::MatMulOp op) {
  FailureOr<GemmDims> g = matmulDims(op, op.getLhs(), op.getRhs());
  if (failed(g))
    return failure();
  if (gemmAccumulates(op)) {
    auto [alpha, beta] = accumulatingScales(op, 1.0f);
    call("tk::gemm(ctx, " + g->operands(alpha) + ", " + beta + ", " + ptr(op.getResult()) +
         g->outputTail() + ")");
    return success();
  }
  call("tk::gemm(ctx, " + g->operands("1.0f") + ", 0.0f, " + ptr(op.getResult()) +
       g->outputTail() + ")");
  return success();
}

bool ProgramEmitter::gemmAccumulates(Operation *op) {
  auto offsets = op->getAttrOfType<DenseI64ArrayAttr>(tc::kOffsetsAttrName);
  return offsets && offsets.size() == 1 && offsets[0] < 0 && tc::accumulatingGemmUser(op);
}

std::pair<std::string, std::string> ProgramEmitter::accumulatingScales(Operation *gemm,
                                                                       float alpha) {
  // Host copies of the hyperparameters: cuBLASLt and OpenBLAS take alpha
  // and beta on the host, and beta = 0 (the group's first micro-batch)
  // does not read C, so whatever the accumulator held is not carried over.
  tc::AccumulateGradOp accumulate = tc::accumulatingGemmUser(gemm);
  auto host = [&](Value v) {
    hostReadHypers.insert(hyperIndex.lookup(v));
    return "args.hostHypers[" + std::to_string(hyperIndex.lookup(v)) + "][0]";
  };
  std::string scale = host(accumulate.getWeight());
  if (alpha != 1.0f)
    scale = "(" + scale + " * " + literal(alpha, true) + ")";
  return {scale, "(" + host(accumulate.getKeep()) + " != 0.0f ? 1.0f : 0.0f)"};
}

ProgramEmitter::GemmDims ProgramEmitter::gemmDims(tc::GemmOp op, Value a, Value b) {
  ArrayRef<int64_t> sa = shapeOf(a), y = shapeOf(op.getResult());
  GemmDims g;
  g.transA = op.getTransA();
  g.transB = op.getTransB();
  g.m = y[0];
  g.n = y[1];
  g.k = g.transA ? sa[0] : sa[1];
  g.lda = sa[1];
  g.ldb = shapeOf(b)[1];
  g.strideA = g.strideB = 0;
  g.batch = 1;
  g.a = ptr(a);
  g.b = ptr(b);
  return g;
}

std::string ProgramEmitter::gemmEpilogueArg(Value c, Value result, StringRef activation,
                                            StringRef range, StringRef env) {
  bool whole = c && shapeOf(c) == shapeOf(result);
  return "trainc::rt::GemmEpilogue" +
         designated({{"addend", c && whole ? ptr(c) : "nullptr"},
                     {"bias", c && !whole ? ptr(c) : "nullptr"},
                     {"activation", "trainc::rt::GemmActivation::" + activation.str()},
                     {"range", range.str()},
                     {"env", env.str()}});
}

LogicalResult ProgramEmitter::emitGemm(tc::GemmOp op) {
  GemmDims g = gemmDims(op, op.getA(), op.getB());
  if (tc::isEpilogueHead(op) && op.getC()) {
    // The library adds C (a bias row or a whole matrix, beta 1) itself.
    call("tk::gemmEpilogue(ctx, " + g.operands() + ", " + ptr(op.getResult()) +
         g.outputTail() + ", " +
         gemmEpilogueArg(op.getC(), op.getResult(), "None", "nullptr", "nullptr") + ")");
    return success();
  }
  if (gemmAccumulates(op)) {
    auto [alpha, beta] = accumulatingScales(op, op.getAlpha().convertToFloat());
    call("tk::gemm(ctx, " + g.operands(alpha) + ", " + beta + ", " + ptr(op.getResult()) + ", " +
         std::to_string(g.n) + ", 0, 1)");
    return success();
  }
  ArrayRef<int64_t> y = shapeOf(op.getResult());
  float beta = 0.0f;
  if (Value c = op.getC()) {
    // Y starts as C broadcast to [M, N]; the GEMM then accumulates into it.
    if (failed(emitStridedCopy(op, "broadcast_bias", c, y,
                               broadcastStrides(shapeOf(c), y), 0, rowMajorStrides(y), 0,
                               ptr(op.getResult()))))
      return failure();
    beta = op.getBeta().convertToFloat();
  }
  call("tk::gemm(ctx, " + g.operands(literal(op.getAlpha().convertToFloat(), true)) + ", " +
       literal(beta, true) + ", " + ptr(op.getResult()) + ", " + std::to_string(g.n) +
       ", 0, 1)");
  return success();
}

/// The channels-first view [N, C, H, W] of a 4-D shape stored as
/// [N, H, W, C] when `channelsLast` (a weight's OHWI reads as OIHW).
static SmallVector<int64_t> nchw(ArrayRef<int64_t> s, bool channelsLast) {
  return channelsLast ? shape::channelsFirst(s) : SmallVector<int64_t>(s);
}

/// The descriptors' last field, `channelsLast`, written only when set.

static bool channelsLast(Operation *op) {
  auto flag = op->getAttrOfType<BoolAttr>("channels_last");
  return flag && flag.getValue();
}

/// The runtime's Conv2dDesc for input x, weights w and output y of `op`,
/// shapes as stored (channels-last when the op is).
static std::string convDesc(Operation *op, ArrayRef<int64_t> xs, ArrayRef<int64_t> ws,
                            ArrayRef<int64_t> ys, ArrayRef<int64_t> s, ArrayRef<int64_t> p,
                            ArrayRef<int64_t> d, int64_t group) {
  bool last = channelsLast(op);
  SmallVector<int64_t> x = nchw(xs, last), w = nchw(ws, last), y = nchw(ys, last);
  return designated({{"n", x[0]},        {"c", x[1]},         {"h", x[2]},
                     {"w", x[3]},        {"m", w[0]},         {"kh", w[2]},
                     {"kw", w[3]},       {"strideH", s[0]},   {"strideW", s[1]},
                     {"padTop", p[0]},   {"padLeft", p[1]},   {"padBottom", p[2]},
                     {"padRight", p[3]}, {"dilationH", d[0]}, {"dilationW", d[1]},
                     {"groups", group},  {"outH", y[2]},      {"outW", y[3]},
                     {"channelsLast", last ? "true" : "false"}});
}

/// Emits `{ const DescType d = desc; TRAINC_RETURN_IF_ERROR(call); }`.
void ProgramEmitter::callWithDesc(StringRef type, const std::string &desc,
                                  const std::string &statement) {
  body += "  {\n    const trainc::rt::" + type.str() + " d = " + desc + ";\n  ";
  call(statement);
  body += "  }\n";
}

LogicalResult ProgramEmitter::emitConv(tc::ConvOp op) {
  ArrayRef<int64_t> x = shapeOf(op.getInput());
  if (x.size() != 4)
    return op.emitError("codegen supports 2-D convolution only");
  callWithDesc("Conv2dDesc",
               convDesc(op, x, shapeOf(op.getWeight()), shapeOf(op.getResult()), op.getStrides(),
                        op.getPads(), op.getDilations(), op.getGroup()),
               "tk::conv2d(ctx, d, " + ptr(op.getInput()) + ", " + ptr(op.getWeight()) + ", " +
                   (op.getBias() ? ptr(op.getBias()) : "nullptr") + ", " +
                   ptr(op.getResult()) + ")");
  return success();
}

LogicalResult ProgramEmitter::emitConvBackward(Operation *op) {
  if (auto data = dyn_cast<tc::ConvBackwardDataOp>(op)) {
    ArrayRef<int64_t> x = data.getInputShape();
    if (x.size() != 4)
      return op->emitError("codegen supports 2-D convolution only");
    callWithDesc("Conv2dDesc",
                 convDesc(op, x, shapeOf(data.getWeight()), shapeOf(data.getResultGrad()),
                          data.getStrides(), data.getPads(), data.getDilations(),
                          data.getGroup()),
                 "tk::conv2dBackwardData(ctx, d, " + ptr(data.getResultGrad()) + ", " +
                     ptr(data.getWeight()) + ", " + ptr(data.getResult()) + ")");
    return success();
  }
  auto filter = cast<tc::ConvBackwardFilterOp>(op);
  ArrayRef<int64_t> x = shapeOf(filter.getInput());
  if (x.size() != 4)
    return op->emitError("codegen supports 2-D convolution only");
  callWithDesc("Conv2dDesc",
               convDesc(op, x, filter.getWeightShape(), shapeOf(filter.getResultGrad()),
                        filter.getStrides(), filter.getPads(), filter.getDilations(),
                        filter.getGroup()),
               "tk::conv2dBackwardFilter(ctx, d, " + ptr(filter.getInput()) + ", " +
                   ptr(filter.getResultGrad()) + ", " + ptr(filter.getResult()) + ")");
  return success();
}

LogicalResult ProgramEmitter::emitPool(Operation *op) {
  // Forward: (x) -> y. Backward: max (x, dy) -> dx, avg (dy) -> dx.
  ArrayRef<int64_t> xs = shapeOf(op->getOperand(0)), ys = shapeOf(op->getResult(0));
  if (isa<tc::MaxPoolBackwardOp>(op))
    ys = shapeOf(op->getOperand(1));
  else if (isa<tc::AvgPoolBackwardOp>(op))
    std::swap(xs, ys);
  if (xs.size() != 4)
    return op->emitError("codegen supports 2-D pooling only");
  bool last = channelsLast(op);
  SmallVector<int64_t> x = nchw(xs, last), y = nchw(ys, last);
  auto attr = [&](StringRef name) { return op->getAttrOfType<DenseI64ArrayAttr>(name); };
  ArrayRef<int64_t> k = attr("kernel_shape").asArrayRef(), s = attr("strides").asArrayRef(),
                    p = attr("pads").asArrayRef();
  SmallVector<int64_t> d = {1, 1};
  if (auto dil = attr("dilations"))
    d.assign(dil.asArrayRef().begin(), dil.asArrayRef().end());
  std::string desc = designated(
      {{"n", x[0]},         {"c", x[1]},        {"h", x[2]},         {"w", x[3]},
       {"kh", k[0]},        {"kw", k[1]},       {"strideH", s[0]},   {"strideW", s[1]},
       {"padTop", p[0]},    {"padLeft", p[1]},  {"padBottom", p[2]}, {"padRight", p[3]},
       {"dilationH", d[0]}, {"dilationW", d[1]}, {"outH", y[2]},     {"outW", y[3]},
       {"channelsLast", last ? "true" : "false"}});
  std::string statement;
  auto flag = [&](StringRef name) {
    return op->getAttrOfType<BoolAttr>(name) && op->getAttrOfType<BoolAttr>(name).getValue()
               ? std::string("true")
               : std::string("false");
  };
  if (isa<tc::AvgPoolOp>(op))
    statement = "tk::avgPool2d(ctx, d, " + flag("count_include_pad") + ", " +
                ptr(op->getOperand(0)) + ", " + ptr(op->getResult(0)) + ")";
  else if (isa<tc::MaxPoolOp>(op))
    statement = "tk::maxPool2d(ctx, d, " + ptr(op->getOperand(0)) + ", " +
                ptr(op->getResult(0)) + ")";
  else if (isa<tc::MaxPoolBackwardOp>(op))
    statement = "tk::maxPool2dBackward(ctx, d, " + ptr(op->getOperand(0)) + ", " +
                ptr(op->getOperand(1)) + ", " + ptr(op->getResult(0)) + ")";
  else
    statement = "tk::avgPool2dBackward(ctx, d, " + flag("count_include_pad") + ", " +
                ptr(op->getOperand(0)) + ", " + ptr(op->getResult(0)) + ")";
  callWithDesc("Pool2dDesc", desc, statement);
  return success();
}

LogicalResult ProgramEmitter::emitReduce(Operation *op, ArrayRef<int64_t> axesAttr,
                                         StringRef kind) {
  Value in = op->getOperand(0), out = op->getResult(0);
  ArrayRef<int64_t> s = shapeOf(in);
  SmallVector<int64_t> axes(axesAttr.begin(), axesAttr.end());
  if (axes.empty())
    for (size_t d = 0; d < s.size(); ++d)
      axes.push_back(d);
  bool contiguous = axes.back() - axes.front() + 1 == static_cast<int64_t>(axes.size());
  // tk::reduce: f32, or an f16/bf16 input read in its own type into an f32
  // result (out_type).
  std::string inType = cType(in.getType()), outType = cType(out.getType());
  if (contiguous && outType == "float" &&
      (inType == "float" || inType == "bf16" || inType == "f16")) {
    int64_t outer = 1, mid = 1, inner = 1;
    for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d)
      (d < axes.front() ? outer : d > axes.back() ? inner : mid) *= s[d];
    call("tk::reduce(ctx, trainc::rt::ReduceKind::" + kind.str() + ", " +
         std::to_string(outer) + ", " + std::to_string(mid) + ", " + std::to_string(inner) +
         ", " + ptr(in) + ", " + ptr(out) + ")");
    return success();
  }
  // Scattered axes: a generated kernel, one output element per thread.
  SmallVector<int64_t> kept, keptStrides, reduced, reducedStrides;
  std::vector<int64_t> strides = rowMajorStrides(s);
  // The trailing reduced axes (a convolution's H and W, summed for its
  // bias's gradient) are one contiguous run of `run` values per row.
  int64_t run = 1, trailing = 0;
  for (int64_t d = static_cast<int64_t>(s.size()) - 1; d >= 0 && llvm::is_contained(axes, d);
       --d, ++trailing)
    run *= s[d];
  const bool rows = kind != "Max" && run >= 16;
  for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) {
    bool r = llvm::is_contained(axes, d);
    if (r && rows && d >= static_cast<int64_t>(s.size()) - trailing)
      continue; // in the run
    (r ? reduced : kept).push_back(s[d]);
    (r ? reducedStrides : keptStrides).push_back(strides[d]);
  }
  // The accumulator has the result's type (f32 for an out_type = f32 of a
  // 16-bit input, which is widened as it is read).
  const std::string &t = outType;
  std::string code = decomposeIndex(kept, "i", "c", "  ");
  code += "  const int64_t base = " + linearIndex(keptStrides, 0, "c") + ";\n";
  code += kind == "Max" ? "  " + t + " acc = in[base];\n" : "  " + t + " acc = 0;\n";
  int64_t count = 1;
  for (int64_t r : reduced)
    count *= r;
  code += "  for (int64_t j = 0; j < " + std::to_string(count) + "; ++j) {\n";
  code += decomposeIndex(reduced, "j", "r", "    ");
  bool isFloat = isa<FloatType>(cast<ShapedType>(in.getType()).getElementType());
  if (rows) {
    // Eight partial sums a row: a loop the compiler vectorizes (one sum
    // would chain every add), no index arithmetic per value.
    code += "    const " + inType + " *row = in + base + " + linearIndex(reducedStrides, 0, "r") +
            ";\n    " + t + " part[8] = {};\n    int64_t k = 0;\n" +
            "    for (; k + 8 <= " + std::to_string(run) + "; k += 8)\n" +
            "      for (int u = 0; u < 8; ++u)\n        part[u] += " + t + "(row[k + u]);\n" +
            "    for (; k < " + std::to_string(run) + "; ++k)\n      part[0] += " + t +
            "(row[k]);\n" +
            "    acc += ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + "
            "(part[6] + part[7]));\n";
    count *= run;
  } else {
    code += "    const " + t + " v = in[base + " + linearIndex(reducedStrides, 0, "r") + "];\n";
    if (kind != "Max")
      code += "    acc += v;\n";
    else if (isFloat) // a NaN, once met, stays the maximum (torch.amax)
      code += "    acc = (v > acc || v != v) ? v : acc;\n";
    else
      code += "    acc = v > acc ? v : acc;\n";
  }
  code += "  }\n";
  code += kind == "Mean" ? "  out[i] = acc / " + t + "(" + std::to_string(count) + ");\n"
                         : "  out[i] = acc;\n";
  std::vector<std::string> comment = {opComment(op)};
  // Each output element's loop is the work of `count` values.
  std::string name = kernels.addKernel(("reduce_" + kind.lower()), comment,
                                       {{inType, "in", false}, {t, "out", true}}, countOf(out),
                                       code, false, false, 1, count);
  call(name + "(ctx, " + ptr(in) + ", " + ptr(out) + ")");
  return success();
}

LogicalResult ProgramEmitter::emitLoss(Operation *op) {
  auto reduction = [&](StringRef r) {
    return std::string("trainc::rt::Reduction::") +
           (r == "mean" ? "Mean" : r == "sum" ? "Sum" : "None");
  };
  if (auto mse = dyn_cast<tc::MseLossOp>(op)) {
    call("tk::mseLoss(ctx, " + std::to_string(countOf(mse.getPrediction())) + ", " +
         ptr(mse.getPrediction()) + ", " + ptr(mse.getTarget()) + ", " +
         reduction(mse.getReduction()) + ", " + ptr(mse.getResult()) + ")");
    return success();
  }
  Value scores = op->getOperand(0), labels = op->getOperand(1);
  if (!cast<ShapedType>(labels.getType()).getElementType().isInteger(64))
    return op->emitError("codegen supports i64 labels only");
  ArrayRef<int64_t> s = shapeOf(scores);
  int64_t inner = countOf(scores) / (s[0] * s[1]);
  auto ignore = op->getAttrOfType<IntegerAttr>("ignore_index");
  std::string fn = isa<tc::SoftmaxCrossEntropyOp>(op) ? "softmaxCrossEntropy" : "nllLoss";
  call("tk::" + fn + "(ctx, " + std::to_string(s[0]) + ", " + std::to_string(s[1]) + ", " +
       std::to_string(inner) + ", " + ptr(scores) + ", " + ptr(labels) + ", " +
       (ignore ? "true" : "false") + ", " + std::to_string(ignore ? ignore.getInt() : 0) +
       ", " + reduction(op->getAttrOfType<StringAttr>("reduction").getValue()) + ", " +
       ptr(op->getResult(0)) + ")");
  return success();
}

