//===- Kfac.cpp - K-FAC: Kronecker-factored preconditioning ---------------===//
//
// The arithmetic (per preconditioned layer, with a bias column where the
// layer has a trained bias; N the batch, R the rows, T = R / N the
// positions per sample: 1 for a Gemm, H' W' for a convolution):
//
//   A_batch = [X 1]^T [X 1] / N                   (KFC's sum over positions)
//   G_batch = (N / T) D^T D    (D = dL/dy of the mean loss: N D are the
//                               samples' own gradients, averaged over T)
//   A = stat_decay A + (1 - stat_decay) A_batch    (A and G start as I)
//   A^-1 = (A + sqrt(damping) I)^-1 on steps with kfac.invert, else kept
//   V = G^-1 [dW db] A^-1
//   nu = min(1, sqrt(kl_clip / (lr^2 sum over layers of sum(V * [dW db]))))
//   [dW db] <- nu V
//
//===----------------------------------------------------------------------===//

#include "passes/Kfac.h"

#include "ir/StepAbi.h"
#include "ir/TcOps.h"

#include <map>

using namespace mlir;

namespace trainc {
namespace {

/// The largest factor side K-FAC keeps (a factor of 4096 rows is 64 MiB
/// and its inverse costs ~10^11 flops in double every few steps).
constexpr int64_t kMaxFactorSide = 4096;

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

template <typename OpTy>
Value make(OpBuilder &b, Location loc, ValueRange operands, ArrayRef<NamedAttribute> attrs = {}) {
  return b.create<OpTy>(loc, operands, attrs)->getResult(0);
}

Value constant(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, float value) {
  auto type = RankedTensorType::get(shape, b.getF32Type());
  return b.create<tc::ConstantOp>(loc, DenseElementsAttr::get(type, value)).getResult();
}

Value reshape(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> shape) {
  if (typeOf(v).getShape() == shape)
    return v;
  return make<tc::ReshapeOp>(b, loc, v, {b.getNamedAttr("shape", b.getDenseI64ArrayAttr(shape))});
}

Value transpose(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> perm) {
  return make<tc::TransposeOp>(b, loc, v, {b.getNamedAttr("perm", b.getDenseI64ArrayAttr(perm))});
}

/// alpha op(x) op(y) (op: the transpose where asked).
Value gemm(OpBuilder &b, Location loc, Value x, Value y, bool tx, bool ty, float alpha = 1.0f) {
  return make<tc::GemmOp>(b, loc, {x, y},
                          {b.getNamedAttr("trans_a", b.getBoolAttr(tx)),
                           b.getNamedAttr("trans_b", b.getBoolAttr(ty)),
                           b.getNamedAttr("alpha", b.getF32FloatAttr(alpha))});
}

Value columns(OpBuilder &b, Location loc, Value v, int64_t from, int64_t to) {
  int64_t rows = typeOf(v).getShape()[0];
  return make<tc::SliceOp>(b, loc, v,
                           {b.getNamedAttr("starts", b.getDenseI64ArrayAttr({0, from})),
                            b.getNamedAttr("ends", b.getDenseI64ArrayAttr({rows, to})),
                            b.getNamedAttr("steps", b.getDenseI64ArrayAttr({1, 1}))});
}

/// The one-hot kernel [K, C, kh, kw] (K = C kh kw) whose convolution with x
/// is x's patches: output channel c kh kw + i kw + j is x[c] at offset
/// (i, j) of each window.
Value patchKernel(OpBuilder &b, Location loc, ArrayRef<int64_t> weightShape) {
  const int64_t c = weightShape[1], kh = weightShape[2], kw = weightShape[3];
  const int64_t k = c * kh * kw;
  std::vector<float> values(static_cast<size_t>(k * k), 0.0f);
  for (int64_t p = 0; p < k; ++p)
    values[p * k + p] = 1.0f; // [p, c, i, j] with p = (c kh + i) kw + j
  auto type = RankedTensorType::get({k, c, kh, kw}, b.getF32Type());
  return b.create<tc::ConstantOp>(loc, DenseElementsAttr::get(type, llvm::ArrayRef(values)))
      .getResult();
}

} // namespace

std::optional<KfacCapture> captureKfacRows(func::FuncOp step, OpBuilder &b, Operation *op,
                                           Value dy, llvm::function_ref<bool(Value)> trained,
                                           std::string &why) {
  auto symbolOf = [&](Value v) -> FlatSymbolRefAttr {
    auto arg = dyn_cast_or_null<BlockArgument>(v);
    if (!arg || arg.getOwner() != &step.getBody().front() || !trained(v))
      return {};
    return step.getArgAttrOfType<FlatSymbolRefAttr>(arg.getArgNumber(), tc::kParamAttrName);
  };
  auto isF32 = [](Value v) { return typeOf(v).getElementType().isF32(); };
  if (!dy || !isF32(dy))
    return std::nullopt;
  FlatSymbolRefAttr weight, bias;
  Value x, rows, grads;
  StringRef layout;
  auto name = dyn_cast<NameLoc>(op->getLoc());
  Location loc = NameLoc::get(b.getStringAttr(
      "K-FAC rows of " + (name ? name.getName().str() : std::string("a layer"))));
  if (auto g = dyn_cast<tc::GemmOp>(op)) {
    weight = symbolOf(g.getB());
    x = g.getA();
    if (!weight)
      return std::nullopt;
    if (g.getTransA() || g.getAlpha().convertToFloat() != 1.0f || !isF32(x) || symbolOf(x)) {
      why = weight.getValue().str() + ": its Gemm transposes or scales the input, or it is "
            "not f32";
      return std::nullopt;
    }
    rows = x;
    grads = dy;
    layout = g.getTransB() ? "out_in" : "in_out";
    if (Value c = g.getC(); c && g.getBeta().convertToFloat() == 1.0f && typeOf(c).getRank() == 1)
      bias = symbolOf(c);
  } else if (auto m = dyn_cast<tc::MatMulOp>(op)) {
    weight = symbolOf(m.getRhs());
    x = m.getLhs();
    if (!weight)
      return std::nullopt;
    if (m.getTransA() || typeOf(m.getRhs()).getRank() != 2 || typeOf(x).getRank() < 2 ||
        !isF32(x) || typeOf(x).getNumElements() == 0) {
      why = weight.getValue().str() + ": its MatMul transposes the input, has no 2-D weight, "
            "or is not f32";
      return std::nullopt;
    }
    const int64_t k = typeOf(x).getShape().back(), out = typeOf(dy).getShape().back();
    const int64_t r = typeOf(x).getNumElements() / k;
    rows = reshape(b, loc, x, {r, k});
    grads = reshape(b, loc, dy, {r, out});
    layout = m.getTransB() ? "out_in" : "in_out";
  } else if (auto conv = dyn_cast<tc::ConvOp>(op)) {
    weight = symbolOf(conv.getWeight());
    x = conv.getInput();
    ArrayRef<int64_t> w = typeOf(conv.getWeight()).getShape();
    if (!weight)
      return std::nullopt;
    if (conv.getGroup() != 1 || conv.getChannelsLast() || typeOf(x).getRank() != 4 ||
        !isF32(x) || w[1] * w[2] * w[3] > kMaxFactorSide) {
      why = weight.getValue().str() +
            (conv.getGroup() != 1 ? std::string(": a grouped convolution")
             : w[1] * w[2] * w[3] > kMaxFactorSide
                 ? ": a convolution of more than " + std::to_string(kMaxFactorSide) +
                       " patch elements"
                 : std::string(": not a 2-D NCHW f32 convolution"));
      return std::nullopt;
    }
    // The patches: a convolution with a one-hot kernel copies each window.
    Value kernel = patchKernel(b, loc, w);
    Value patches = b.create<tc::ConvOp>(loc, ValueRange{x, kernel},
                                         conv->getAttrDictionary().getValue())
                        ->getResult(0);
    ArrayRef<int64_t> y = typeOf(dy).getShape();
    const int64_t r = y[0] * y[2] * y[3], k = w[1] * w[2] * w[3];
    rows = reshape(b, loc, transpose(b, loc, patches, {0, 2, 3, 1}), {r, k});
    grads = reshape(b, loc, transpose(b, loc, dy, {0, 2, 3, 1}), {r, y[1]});
    layout = "conv";
    if (Value c = conv.getBias())
      bias = symbolOf(c);
  } else {
    return std::nullopt;
  }
  SmallVector<NamedAttribute> attrs = {
      b.getNamedAttr(tc::kOutputAttrName,
                     b.getStringAttr("kfac.input." + weight.getValue().str())),
      b.getNamedAttr(kKfacInputAttrName, weight),
      b.getNamedAttr(kKfacLayoutAttrName, b.getStringAttr(layout)),
      b.getNamedAttr(kKfacSamplesAttrName, b.getI64IntegerAttr(typeOf(x).getShape()[0]))};
  if (bias)
    attrs.push_back(b.getNamedAttr(kKfacBiasAttrName, bias));
  KfacCapture capture;
  capture.rows = rows;
  capture.outputGrads = grads;
  capture.rowsAttrs = b.getDictionaryAttr(attrs);
  capture.outputGradAttrs = b.getDictionaryAttr(
      {b.getNamedAttr(tc::kOutputAttrName,
                      b.getStringAttr("kfac.output_grad." + weight.getValue().str())),
       b.getNamedAttr(kKfacOutputGradAttrName, weight)});
  return capture;
}

namespace {

/// A captured layer, as the optimizer phase finds it among the results.
struct Layer {
  Value rows, outputGrads;
  std::string layout, bias;
  int64_t samples = 0;
  int captures = 0;
  int weightResult = -1, biasResult = -1;
};

/// The factors' next values and the preconditioned gradient V (before the
/// KL clip) of one layer, with `full` = [dW db] as [M, K (+1)].
struct Preconditioned {
  Value v, full;
};

Preconditioned precondition(func::FuncOp step, OpBuilder &b, const std::string &weight,
                            const Layer &layer, Value gradW, Value gradB,
                            const std::function<void(Value, const std::string &)> &keepState) {
  Location factorLoc = NameLoc::get(b.getStringAttr("K-FAC factors of " + weight));
  Location loc = NameLoc::get(b.getStringAttr("K-FAC preconditioning of " + weight));
  ArrayRef<int64_t> x = typeOf(layer.rows).getShape(), d = typeOf(layer.outputGrads).getShape();
  const int64_t r = x[0], k = x[1], m = d[1], n = layer.samples;
  const bool withBias = static_cast<bool>(gradB);
  Value rows = layer.rows;
  if (withBias)
    rows = make<tc::ConcatOp>(b, factorLoc, {rows, constant(b, factorLoc, {r, 1}, 1.0f)},
                              {b.getNamedAttr("axis", b.getI64IntegerAttr(1))});
  const int64_t kb = k + (withBias ? 1 : 0);
  Value aBatch = gemm(b, factorLoc, rows, rows, true, false, 1.0f / static_cast<float>(n));
  Value gBatch = gemm(b, factorLoc, layer.outputGrads, layer.outputGrads, true, false,
                      static_cast<float>(static_cast<double>(n) * n / r));
  Value decay = tc::getOrAddHyper(step, tc::Hyper::KfacStatDecay);
  Value keep = make<tc::SubOp>(b, factorLoc, {constant(b, factorLoc, {}, 1.0f), decay});
  Value damping = tc::getOrAddHyper(step, tc::Hyper::KfacDamping);
  Value invert = tc::getOrAddHyper(step, tc::Hyper::KfacInvert);
  auto factor = [&](Value batch, int64_t side, tc::StateRole role, tc::StateRole inverseRole) {
    auto type = RankedTensorType::get({side, side}, b.getF32Type());
    Value old = tc::addState(step, type, role, weight);
    Value next = make<tc::AddOp>(b, factorLoc, {make<tc::MulOp>(b, factorLoc, {old, decay}),
                                                make<tc::MulOp>(b, factorLoc, {batch, keep})});
    keepState(next, tc::stateName(role, weight));
    Value previous = tc::addState(step, type, inverseRole, weight);
    Value inverse = make<tc::DampedInverseOp>(b, factorLoc, {next, damping, invert, previous});
    keepState(inverse, tc::stateName(inverseRole, weight));
    return inverse;
  };
  Value aInverse = factor(aBatch, kb, tc::StateRole::KfacA, tc::StateRole::KfacAInverse);
  Value gInverse = factor(gBatch, m, tc::StateRole::KfacG, tc::StateRole::KfacGInverse);
  // [dW db] as [M, K (+1)].
  Value full = layer.layout == "in_out" ? transpose(b, loc, gradW, {1, 0})
                                        : reshape(b, loc, gradW, {m, k});
  if (withBias)
    full = make<tc::ConcatOp>(b, loc, {full, reshape(b, loc, gradB, {m, 1})},
                              {b.getNamedAttr("axis", b.getI64IntegerAttr(1))});
  Value v = gemm(b, loc, gInverse, gemm(b, loc, full, aInverse, false, false), false, false);
  return {v, full};
}

} // namespace

LogicalResult preconditionKfac(func::FuncOp step, OpBuilder &b, ValueRange returned,
                               SmallVectorImpl<Value> &grads,
                               const std::function<void(Value, const std::string &)> &keepState,
                               SmallVectorImpl<std::string> &notes) {
  std::map<std::string, Layer> layers;
  std::map<std::string, int> gradResult;
  for (unsigned i = 1; i < returned.size(); ++i) {
    if (auto g = step.getResultAttrOfType<FlatSymbolRefAttr>(i, tc::kGradAttrName))
      gradResult[g.getValue().str()] = static_cast<int>(i);
    if (auto w = step.getResultAttrOfType<FlatSymbolRefAttr>(i, kKfacInputAttrName)) {
      Layer &layer = layers[w.getValue().str()];
      ++layer.captures;
      layer.rows = returned[i];
      layer.layout = step.getResultAttrOfType<StringAttr>(i, kKfacLayoutAttrName).getValue().str();
      layer.samples = step.getResultAttrOfType<IntegerAttr>(i, kKfacSamplesAttrName).getInt();
      if (auto bias = step.getResultAttrOfType<FlatSymbolRefAttr>(i, kKfacBiasAttrName))
        layer.bias = bias.getValue().str();
    }
    if (auto w = step.getResultAttrOfType<FlatSymbolRefAttr>(i, kKfacOutputGradAttrName))
      layers[w.getValue().str()].outputGrads = returned[i];
  }
  std::vector<std::pair<std::string, Preconditioned>> done;
  for (auto &[weight, layer] : layers) {
    auto found = gradResult.find(weight);
    if (found == gradResult.end())
      continue;
    layer.weightResult = found->second;
    if (layer.captures != 1) {
      notes.push_back(weight + ": read by " + std::to_string(layer.captures) +
                      " layers (a shared weight has no one pair of factors)");
      continue;
    }
    const int64_t k = typeOf(layer.rows).getShape()[1], m = typeOf(layer.outputGrads).getShape()[1];
    if (k + 1 > kMaxFactorSide || m > kMaxFactorSide) {
      notes.push_back(weight + ": a factor would have more than " +
                      std::to_string(kMaxFactorSide) + " rows");
      continue;
    }
    auto bias = gradResult.find(layer.bias);
    if (!layer.bias.empty() && bias != gradResult.end())
      layer.biasResult = bias->second;
    Value gradB = layer.biasResult >= 0 ? grads[layer.biasResult] : Value();
    done.push_back({weight, precondition(step, b, weight, layer, grads[layer.weightResult], gradB,
                                         keepState)});
  }
  if (done.empty())
    return success();
  // The KL clip over every preconditioned layer together.
  Location loc = NameLoc::get(b.getStringAttr("K-FAC KL clip"));
  Value total;
  for (auto &[weight, p] : done) {
    Value product = make<tc::MulOp>(b, loc, {p.v, p.full});
    Value sum = make<tc::ReduceSumOp>(b, loc, product,
                                      {b.getNamedAttr("axes", b.getDenseI64ArrayAttr({0, 1})),
                                       b.getNamedAttr("keepdims", b.getBoolAttr(false))});
    total = total ? make<tc::AddOp>(b, loc, {total, sum}) : sum;
  }
  Value lr = tc::getOrAddHyper(step, tc::Hyper::Lr);
  total = make<tc::MulOp>(b, loc, {total, make<tc::MulOp>(b, loc, {lr, lr})});
  total = make<tc::MaxOp>(b, loc, {total, constant(b, loc, {}, 0.0f)});
  Value ratio = make<tc::DivOp>(b, loc, {tc::getOrAddHyper(step, tc::Hyper::KfacKlClip), total});
  Value nu = make<tc::MinOp>(b, loc, {make<tc::SqrtOp>(b, loc, ratio), constant(b, loc, {}, 1.0f)});
  for (auto &[weight, p] : done) {
    const Layer &layer = layers[weight];
    Location back = NameLoc::get(b.getStringAttr("K-FAC gradient of " + weight));
    Value scaled = make<tc::MulOp>(b, back, {p.v, nu});
    const int64_t k = typeOf(layer.rows).getShape()[1], m = typeOf(scaled).getShape()[0];
    Value w = layer.biasResult >= 0 ? columns(b, back, scaled, 0, k) : scaled;
    Type weightType = grads[layer.weightResult].getType();
    grads[layer.weightResult] =
        layer.layout == "in_out"
            ? transpose(b, back, w, {1, 0})
            : reshape(b, back, w, cast<RankedTensorType>(weightType).getShape());
    if (layer.biasResult >= 0)
      grads[layer.biasResult] = reshape(b, back, columns(b, back, scaled, k, k + 1), {m});
  }
  return success();
}

} // namespace trainc
