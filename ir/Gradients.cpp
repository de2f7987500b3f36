//===- Gradients.cpp - reverse-mode rules of the tc ops -------------------===//
//
// One rule per differentiable op (GradientOpInterface). Rules are written in
// tc ops, so the gradient code goes through the same shape functions,
// planning, fusion and code generation as the forward pass. Every rule checks
// what it needs and fails with an error on the op when it cannot
// differentiate a case, rather than producing a wrong gradient.
//
//===----------------------------------------------------------------------===//

#include "ir/TcOps.h"

#include "mlir/IR/Builders.h"

#include <cmath>

using namespace mlir;
using namespace trainc;
using namespace trainc::tc;

#include "ir/TcInterfaces.cpp.inc"

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

template <typename OpTy>
Value make(OpBuilder &b, Location loc, ValueRange operands,
           ArrayRef<NamedAttribute> attrs = {}) {
  return b.create<OpTy>(loc, operands, attrs)->getResult(0);
}

/// A scalar constant of `like`'s element type.
Value scalar(OpBuilder &b, Location loc, Value like, double value) {
  Type element = typeOf(like).getElementType();
  auto type = RankedTensorType::get({}, element);
  return b.create<ConstantOp>(loc, DenseElementsAttr::get(type, b.getFloatAttr(element, value)))
      .getResult();
}

/// A constant zero of `like`'s type.
Value zerosLike(OpBuilder &b, Location loc, Value like) {
  RankedTensorType type = typeOf(like);
  return b.create<ConstantOp>(loc, DenseElementsAttr::get(
                                       type, b.getFloatAttr(type.getElementType(), 0.0)))
      .getResult();
}

Value reshapeTo(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> shape) {
  if (typeOf(v).getShape() == shape)
    return v;
  return make<ReshapeOp>(b, loc, v, {b.getNamedAttr("shape", b.getDenseI64ArrayAttr(shape))});
}

/// Sums a broadcast gradient back to the shape of the operand it belongs to
/// (the adjoint of numpy broadcasting).
Value sumToShape(OpBuilder &b, Location loc, Value grad, Type target) {
  ArrayRef<int64_t> from = typeOf(grad).getShape();
  ArrayRef<int64_t> to = cast<RankedTensorType>(target).getShape();
  if (from == to)
    return grad;
  SmallVector<int64_t> axes;
  int64_t lead = static_cast<int64_t>(from.size()) - static_cast<int64_t>(to.size());
  for (int64_t d = 0; d < static_cast<int64_t>(from.size()); ++d)
    if (d < lead || (to[d - lead] == 1 && from[d] != 1))
      axes.push_back(d);
  Value summed = make<ReduceSumOp>(b, loc, grad,
                                   {b.getNamedAttr("axes", b.getDenseI64ArrayAttr(axes)),
                                    b.getNamedAttr("keepdims", b.getBoolAttr(false))});
  return reshapeTo(b, loc, summed, to);
}

Value mul(OpBuilder &b, Location loc, Value x, Value y) { return make<MulOp>(b, loc, {x, y}); }
Value add(OpBuilder &b, Location loc, Value x, Value y) { return make<AddOp>(b, loc, {x, y}); }
Value sub(OpBuilder &b, Location loc, Value x, Value y) { return make<SubOp>(b, loc, {x, y}); }
Value div(OpBuilder &b, Location loc, Value x, Value y) { return make<DivOp>(b, loc, {x, y}); }
Value neg(OpBuilder &b, Location loc, Value x) { return make<NegOp>(b, loc, x); }

/// dy where `keep` holds, 0 elsewhere.
Value select(OpBuilder &b, Location loc, Value keep, Value dy) {
  return make<WhereOp>(b, loc, {keep, dy, scalar(b, loc, dy, 0.0)});
}

/// `v` converted to element type `element` (itself when it has that type):
/// a mixed-precision contraction's f32 result gradient enters its backward
/// products in the operands' precision, as autocast's backward does.
Value castTo(OpBuilder &b, Location loc, Value v, Type element) {
  if (typeOf(v).getElementType() == element)
    return v;
  return make<CastOp>(b, loc, v, {b.getNamedAttr("to", TypeAttr::get(element))});
}

/// trans_a / trans_b attributes of a contraction (both given: the shape
/// function sees the attributes before the op fills in defaults).
SmallVector<NamedAttribute> transFlags(OpBuilder &b, bool ta, bool tb) {
  return {b.getNamedAttr("trans_a", b.getBoolAttr(ta)),
          b.getNamedAttr("trans_b", b.getBoolAttr(tb))};
}

/// The gradient of a keepdims=false reduction, broadcast back to the input.
Value unreduce(OpBuilder &b, Location loc, Value dy, Value input, ArrayRef<int64_t> axesAttr) {
  ArrayRef<int64_t> in = typeOf(input).getShape();
  SmallVector<int64_t> kept(in.begin(), in.end());
  for (size_t d = 0; d < in.size(); ++d)
    if (axesAttr.empty() || llvm::is_contained(axesAttr, static_cast<int64_t>(d)))
      kept[d] = 1;
  Value shaped = reshapeTo(b, loc, dy, kept);
  if (typeOf(shaped).getShape() == in)
    return shaped;
  return make<ExpandOp>(b, loc, shaped, {b.getNamedAttr("shape", b.getDenseI64ArrayAttr(in))});
}

} // namespace

//===----------------------------------------------------------------------===//
// Pointwise
//===----------------------------------------------------------------------===//

#define TC_UNARY_GRADIENT(OP, BODY)                                            \
  LogicalResult OP::buildGradients(OpBuilder &b, ArrayRef<Value> dys,          \
                                   SmallVectorImpl<Value> &dxs) {              \
    Location loc = getLoc();                                                   \
    Value dy = dys[0], x = getInput(), y = getResult();                        \
    (void)x;                                                                   \
    (void)loc;                                                                 \
    (void)y;                                                                   \
    dxs.push_back(BODY);                                                       \
    return success();                                                          \
  }

TC_UNARY_GRADIENT(NegOp, neg(b, loc, dy))
// dy * sign(x), with sign(0) = sign(NaN) = 0 as PyTorch's sgn.
TC_UNARY_GRADIENT(AbsOp, make<WhereOp>(b, loc, {make<GreaterOp>(b, loc, {x, scalar(b, loc, x, 0.0)}), dy, select(b, loc, make<LessOp>(b, loc, {x, scalar(b, loc, x, 0.0)}), neg(b, loc, dy))}))
// threshold_backward on the result, as PyTorch's relu: 0 where y <= 0, dy
// elsewhere (NaN included). y <= 0 exactly where x <= 0, and reading y lets
// the forward keep only the activation (the pre-activation of a
// matmul + bias + relu epilogue is never stored).
TC_UNARY_GRADIENT(ReluOp, make<WhereOp>(b, loc, {make<LessEqualOp>(b, loc, {y, scalar(b, loc, y, 0.0)}), scalar(b, loc, dy, 0.0), dy}))
TC_UNARY_GRADIENT(SigmoidOp, mul(b, loc, dy, mul(b, loc, y, sub(b, loc, scalar(b, loc, y, 1.0), y))))
TC_UNARY_GRADIENT(TanhOp, mul(b, loc, dy, sub(b, loc, scalar(b, loc, y, 1.0), mul(b, loc, y, y))))
TC_UNARY_GRADIENT(ExpOp, mul(b, loc, dy, y))
TC_UNARY_GRADIENT(LogOp, div(b, loc, dy, x))
TC_UNARY_GRADIENT(SqrtOp, div(b, loc, mul(b, loc, dy, scalar(b, loc, y, 0.5)), y))
TC_UNARY_GRADIENT(ReciprocalOp, neg(b, loc, mul(b, loc, dy, mul(b, loc, y, y))))
// d erf(x) = 2 / sqrt(pi) * exp(-x^2)
TC_UNARY_GRADIENT(ErfOp, mul(b, loc, dy, mul(b, loc, scalar(b, loc, x, 1.1283791670955126), make<ExpOp>(b, loc, neg(b, loc, mul(b, loc, x, x))))))
// Trigonometry, as PyTorch's derivatives.yaml: tan's from its result
// (1 + y^2), asin's and acos's through 1 / sqrt(1 - x^2).
TC_UNARY_GRADIENT(SinOp, mul(b, loc, dy, make<CosOp>(b, loc, x)))
TC_UNARY_GRADIENT(CosOp, mul(b, loc, dy, neg(b, loc, make<SinOp>(b, loc, x))))
TC_UNARY_GRADIENT(TanOp, mul(b, loc, dy, add(b, loc, scalar(b, loc, y, 1.0), mul(b, loc, y, y))))
TC_UNARY_GRADIENT(AtanOp, div(b, loc, dy, add(b, loc, mul(b, loc, x, x), scalar(b, loc, x, 1.0))))
TC_UNARY_GRADIENT(AsinOp, div(b, loc, dy, make<SqrtOp>(b, loc, sub(b, loc, scalar(b, loc, x, 1.0), mul(b, loc, x, x)))))
TC_UNARY_GRADIENT(AcosOp, neg(b, loc, div(b, loc, dy, make<SqrtOp>(b, loc, sub(b, loc, scalar(b, loc, x, 1.0), mul(b, loc, x, x))))))
TC_UNARY_GRADIENT(SinhOp, mul(b, loc, dy, make<CoshOp>(b, loc, x)))
TC_UNARY_GRADIENT(CoshOp, mul(b, loc, dy, make<SinhOp>(b, loc, x)))
// sign, ceil, floor and round are piecewise constant: a zero gradient of
// dy's shape, as PyTorch's backward (zeros_like, so a NaN dy gives 0 too).
TC_UNARY_GRADIENT(SignOp, zerosLike(b, loc, dy))
TC_UNARY_GRADIENT(CeilOp, zerosLike(b, loc, dy))
TC_UNARY_GRADIENT(FloorOp, zerosLike(b, loc, dy))
TC_UNARY_GRADIENT(RoundOp, zerosLike(b, loc, dy))
#undef TC_UNARY_GRADIENT

// Outside training dropout is the identity. In training the mask is a
// function of (key, stream, element), so the same dropout of dy applies
// exactly the forward's mask and scale.
LogicalResult DropoutOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                        SmallVectorImpl<Value> &dxs) {
  Value dy = dys[0];
  if (!getTraining()) {
    dxs.push_back(dy);
    return success();
  }
  auto masked = b.create<DropoutOp>(getLoc(), ValueRange{dy, getKey()},
                                    (*this)->getAttrDictionary().getValue());
  dxs.append({masked.getResult(), nullptr});
  return success();
}

LogicalResult LeakyReluOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                          SmallVectorImpl<Value> &dxs) {
  Location loc = getLoc();
  Value dy = dys[0], x = getInput();
  // As leaky_relu_backward: dy where x > 0, alpha * dy elsewhere (0 and NaN
  // included).
  Value scaled = mul(b, loc, dy, scalar(b, loc, dy, getAlpha().convertToFloat()));
  dxs.push_back(make<WhereOp>(
      b, loc, {make<GreaterOp>(b, loc, {x, scalar(b, loc, x, 0.0)}), dy, scaled}));
  return success();
}

LogicalResult ClipOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                     SmallVectorImpl<Value> &dxs) {
  // Gradient flows where the input is strictly inside (min, max), as
  // PyTorch's hardtanh_backward: nn.ReLU6 and nn.Hardtanh export as Clip, and
  // a dead channel of MobileNet's batch norm gives exactly 0 into ReLU6, where
  // PyTorch passes no gradient. torch.clamp also exports as Clip and passes
  // the gradient at the bounds themselves; ONNX cannot tell the two apart, and
  // the activations are the common case on a gradient path.
  Location loc = getLoc();
  Value dy = dys[0], x = getInput();
  Value keep;
  if (auto lo = getMin())
    keep = make<GreaterOp>(b, loc, {x, scalar(b, loc, x, lo->convertToFloat())});
  if (auto hi = getMax()) {
    Value below = make<LessOp>(b, loc, {x, scalar(b, loc, x, hi->convertToFloat())});
    keep = keep ? make<AndOp>(b, loc, {keep, below}) : below;
  }
  dxs.push_back(keep ? select(b, loc, keep, dy) : dy);
  return success();
}

LogicalResult GeluOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                     SmallVectorImpl<Value> &dxs) {
  Location loc = getLoc();
  Value dy = dys[0], x = getInput();
  Value derivative;
  if (getApproximate() == "none") {
    // Phi(x) + x phi(x) = 0.5 (1 + erf(x / sqrt 2)) + x exp(-x^2 / 2) / sqrt(2 pi)
    Value cdf = mul(b, loc, scalar(b, loc, x, 0.5),
                    make<AddOp>(b, loc, {scalar(b, loc, x, 1.0),
                                         make<ErfOp>(b, loc, mul(b, loc, x, scalar(b, loc, x, M_SQRT1_2)))}));
    Value pdf = mul(b, loc, scalar(b, loc, x, 0.3989422804014327),
                    make<ExpOp>(b, loc, mul(b, loc, scalar(b, loc, x, -0.5), mul(b, loc, x, x))));
    derivative = make<AddOp>(b, loc, {cdf, mul(b, loc, x, pdf)});
  } else {
    // u = k (x + c x^3), t = tanh(u):
    // 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2)
    const double k = 0.7978845608028654, c = 0.044715;
    Value x2 = mul(b, loc, x, x);
    Value u = mul(b, loc, scalar(b, loc, x, k),
                  make<AddOp>(b, loc, {x, mul(b, loc, scalar(b, loc, x, c), mul(b, loc, x2, x))}));
    Value t = make<TanhOp>(b, loc, u);
    Value left = mul(b, loc, scalar(b, loc, x, 0.5), make<AddOp>(b, loc, {scalar(b, loc, x, 1.0), t}));
    Value sech2 = sub(b, loc, scalar(b, loc, x, 1.0), mul(b, loc, t, t));
    Value du = mul(b, loc, scalar(b, loc, x, k),
                   make<AddOp>(b, loc, {scalar(b, loc, x, 1.0), mul(b, loc, scalar(b, loc, x, 3 * c), x2)}));
    Value right = mul(b, loc, mul(b, loc, scalar(b, loc, x, 0.5), x), mul(b, loc, sech2, du));
    derivative = make<AddOp>(b, loc, {left, right});
  }
  dxs.push_back(mul(b, loc, dy, derivative));
  return success();
}

LogicalResult AddOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &dxs) {
  Location loc = getLoc();
  dxs.push_back(sumToShape(b, loc, dys[0], getLhs().getType()));
  dxs.push_back(sumToShape(b, loc, dys[0], getRhs().getType()));
  return success();
}

LogicalResult SubOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &dxs) {
  Location loc = getLoc();
  dxs.push_back(sumToShape(b, loc, dys[0], getLhs().getType()));
  dxs.push_back(sumToShape(b, loc, neg(b, loc, dys[0]), getRhs().getType()));
  return success();
}

LogicalResult MulOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &dxs) {
  Location loc = getLoc();
  dxs.push_back(sumToShape(b, loc, mul(b, loc, dys[0], getRhs()), getLhs().getType()));
  dxs.push_back(sumToShape(b, loc, mul(b, loc, dys[0], getLhs()), getRhs().getType()));
  return success();
}

LogicalResult DivOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &dxs) {
  // d(a/b) = da / b - db * (a/b) / b
  Location loc = getLoc();
  Value dy = dys[0], rhs = getRhs(), y = getResult();
  dxs.push_back(sumToShape(b, loc, div(b, loc, dy, rhs), getLhs().getType()));
  dxs.push_back(sumToShape(b, loc, neg(b, loc, div(b, loc, mul(b, loc, dy, y), rhs)),
                           rhs.getType()));
  return success();
}

LogicalResult PowOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &dxs) {
  // d(a^e) = e a^(e-1) da + a^e log(a) de
  Location loc = getLoc();
  Value dy = dys[0], a = getLhs(), e = getRhs(), y = getResult();
  Value power = make<PowOp>(b, loc, {a, sub(b, loc, e, scalar(b, loc, e, 1.0))});
  dxs.push_back(sumToShape(b, loc, mul(b, loc, dy, mul(b, loc, e, power)), a.getType()));
  dxs.push_back(sumToShape(b, loc, mul(b, loc, dy, mul(b, loc, y, make<LogOp>(b, loc, a))),
                           e.getType()));
  return success();
}

namespace {

/// The gradients of an elementwise max (`greater` = true) or min, as
/// torch.maximum / torch.minimum: none to the losing operand, half to each on
/// a tie, all of dy otherwise (to both where an operand is NaN).
LogicalResult extremumGradients(OpBuilder &b, Location loc, Value lhs, Value rhs, Value dy,
                                bool greater, SmallVectorImpl<Value> &dxs) {
  if (!isa<FloatType>(typeOf(dy).getElementType())) {
    dxs.append({nullptr, nullptr});
    return success();
  }
  Value lhsLoses = greater ? make<LessOp>(b, loc, {lhs, rhs}) : make<GreaterOp>(b, loc, {lhs, rhs});
  Value rhsLoses = greater ? make<GreaterOp>(b, loc, {lhs, rhs}) : make<LessOp>(b, loc, {lhs, rhs});
  Value half = mul(b, loc, dy, scalar(b, loc, dy, 0.5));
  Value tie = make<EqualOp>(b, loc, {lhs, rhs});
  Value zero = scalar(b, loc, dy, 0.0);
  Value share = make<WhereOp>(b, loc, {tie, half, dy});
  dxs.push_back(sumToShape(b, loc, make<WhereOp>(b, loc, {lhsLoses, zero, share}), lhs.getType()));
  dxs.push_back(sumToShape(b, loc, make<WhereOp>(b, loc, {rhsLoses, zero, share}), rhs.getType()));
  return success();
}

} // namespace

LogicalResult MaxOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &dxs) {
  return extremumGradients(b, getLoc(), getLhs(), getRhs(), dys[0], true, dxs);
}

LogicalResult MinOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &dxs) {
  return extremumGradients(b, getLoc(), getLhs(), getRhs(), dys[0], false, dxs);
}

LogicalResult WhereOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                      SmallVectorImpl<Value> &dxs) {
  Location loc = getLoc();
  Value dy = dys[0], c = getCondition();
  Value zero = scalar(b, loc, dy, 0.0);
  dxs.push_back(nullptr); // the condition is boolean
  dxs.push_back(sumToShape(b, loc, make<WhereOp>(b, loc, {c, dy, zero}), getTrueValue().getType()));
  dxs.push_back(sumToShape(b, loc, make<WhereOp>(b, loc, {c, zero, dy}), getFalseValue().getType()));
  return success();
}

LogicalResult CastOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                     SmallVectorImpl<Value> &dxs) {
  // Only float-to-float casts carry gradients; others cut the path.
  Type from = typeOf(getInput()).getElementType();
  if (!isa<FloatType>(from) || !isa<FloatType>(typeOf(getResult()).getElementType())) {
    dxs.push_back(nullptr);
    return success();
  }
  dxs.push_back(make<CastOp>(b, getLoc(), dys[0], {b.getNamedAttr("to", TypeAttr::get(from))}));
  return success();
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

LogicalResult GemmOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                     SmallVectorImpl<Value> &dxs) {
  // Y = alpha op(A) op(B) + beta C.
  Location loc = getLoc();
  Value a = getA(), bm = getB();
  Value dy = castTo(b, loc, dys[0], typeOf(a).getElementType());
  bool ta = getTransA(), tb = getTransB();
  auto gemm = [&](Value x, Value y, bool tx, bool ty) {
    SmallVector<NamedAttribute> attrs = transFlags(b, tx, ty);
    attrs.push_back(b.getNamedAttr("alpha", getAlphaAttr()));
    return make<GemmOp>(b, loc, {x, y}, attrs);
  };
  // dA = alpha dY op(B)^T (transposed back when A was transposed).
  dxs.push_back(ta ? gemm(bm, dy, tb, true) : gemm(dy, bm, false, !tb));
  // dB = alpha op(A)^T dY (transposed back when B was transposed).
  dxs.push_back(tb ? gemm(dy, a, true, ta) : gemm(a, dy, !ta, false));
  if (Value c = getC()) {
    Value dc = dys[0]; // C has the result's type
    if (getBeta().convertToFloat() != 1.0f)
      dc = mul(b, loc, dc, scalar(b, loc, dc, getBeta().convertToFloat()));
    dxs.push_back(sumToShape(b, loc, dc, c.getType()));
  }
  return success();
}

LogicalResult MatMulOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                       SmallVectorImpl<Value> &dxs) {
  Location loc = getLoc();
  Value a = getLhs(), bm = getRhs();
  Value dy = castTo(b, loc, dys[0], typeOf(a).getElementType());
  if (typeOf(a).getRank() < 2 || typeOf(bm).getRank() < 2)
    return emitOpError("has no gradient rule for 1-D operands yet");
  // Y = op(A) op(B): d op(A) = dY op(B)^T, d op(B) = op(A)^T dY, transposed
  // back through the flags when the operand was transposed; each is summed
  // over broadcast batch axes. No tc.transpose: the flags do it.
  bool ta = getTransA(), tb = getTransB();
  auto matmul = [&](Value x, Value y, bool tx, bool ty) {
    return make<MatMulOp>(b, loc, {x, y}, transFlags(b, tx, ty));
  };
  Value da = ta ? matmul(bm, dy, tb, true) : matmul(dy, bm, false, !tb);
  dxs.push_back(sumToShape(b, loc, da, a.getType()));
  // A weight shared by a batch (A [..., M, K] untransposed, B 2-D): the rows
  // of every batch are rows of one [P*M, K] matrix, so d op(B) is one GEMM
  // over them, not P products of [K, N] summed afterwards (P times the
  // memory of the gradient, and P small GEMMs).
  auto aType = typeOf(a), dyType = typeOf(dy);
  if (!ta && typeOf(bm).getRank() == 2 && aType.getRank() > 2 && aType.getNumElements() > 0) {
    int64_t k = aType.getShape().back(), n = dyType.getShape().back();
    int64_t rows = aType.getNumElements() / k;
    Value a2 = reshapeTo(b, loc, a, {rows, k});
    Value dy2 = reshapeTo(b, loc, dy, {rows, n});
    dxs.push_back(tb ? matmul(dy2, a2, true, false) : matmul(a2, dy2, true, false));
    return success();
  }
  Value db = tb ? matmul(dy, a, true, ta) : matmul(a, dy, !ta, false);
  dxs.push_back(sumToShape(b, loc, db, bm.getType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

/// The window attributes a convolution and its gradients share.
template <typename OpTy>
SmallVector<NamedAttribute> convWindow(OpBuilder &b, OpTy op) {
  return {b.getNamedAttr("strides", op.getStridesAttr()), b.getNamedAttr("pads", op.getPadsAttr()),
          b.getNamedAttr("dilations", op.getDilationsAttr()),
          b.getNamedAttr("group", op.getGroupAttr())};
}

LogicalResult ConvOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                     SmallVectorImpl<Value> &dxs) {
  Location loc = getLoc();
  Value dy = castTo(b, loc, dys[0], typeOf(getInput()).getElementType());
  SmallVector<NamedAttribute> window = convWindow(b, *this);
  SmallVector<NamedAttribute> data = window, filter = window;
  data.push_back(b.getNamedAttr(
      "input_shape", b.getDenseI64ArrayAttr(typeOf(getInput()).getShape())));
  filter.push_back(b.getNamedAttr(
      "weight_shape", b.getDenseI64ArrayAttr(typeOf(getWeight()).getShape())));
  dxs.push_back(make<ConvBackwardDataOp>(b, loc, {dy, getWeight()}, data));
  dxs.push_back(make<ConvBackwardFilterOp>(b, loc, {getInput(), dy}, filter));
  if (getBias()) {
    // The bias gradient sums dy over everything but the channel axis.
    SmallVector<int64_t> axes = {0};
    for (int64_t d = 2; d < typeOf(dy).getRank(); ++d)
      axes.push_back(d);
    dxs.push_back(make<ReduceSumOp>(b, loc, dys[0], // the bias has the result's type
                                    {b.getNamedAttr("axes", b.getDenseI64ArrayAttr(axes)),
                                     b.getNamedAttr("keepdims", b.getBoolAttr(false))}));
  }
  return success();
}

/// ConvTranspose y = conv_backward_data(x, w): y is the adjoint of the
/// convolution with w, so dx = conv(dy, w) and dw is the weight gradient of
/// that convolution with input dy and result gradient x.
LogicalResult ConvBackwardDataOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                                 SmallVectorImpl<Value> &dxs) {
  Location loc = getLoc();
  Value dy = castTo(b, loc, dys[0], typeOf(getResultGrad()).getElementType());
  SmallVector<NamedAttribute> window = convWindow(b, *this);
  SmallVector<NamedAttribute> filter = window;
  filter.push_back(b.getNamedAttr(
      "weight_shape", b.getDenseI64ArrayAttr(typeOf(getWeight()).getShape())));
  dxs.push_back(make<ConvOp>(b, loc, {dy, getWeight()}, window));
  dxs.push_back(make<ConvBackwardFilterOp>(b, loc, {dy, getResultGrad()}, filter));
  return success();
}

LogicalResult MaxPoolOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                        SmallVectorImpl<Value> &dxs) {
  dxs.push_back(make<MaxPoolBackwardOp>(
      b, getLoc(), {getInput(), dys[0]},
      {b.getNamedAttr("kernel_shape", getKernelShapeAttr()),
       b.getNamedAttr("strides", getStridesAttr()), b.getNamedAttr("pads", getPadsAttr()),
       b.getNamedAttr("dilations", getDilationsAttr()),
       b.getNamedAttr("ceil_mode", getCeilModeAttr())}));
  return success();
}

LogicalResult AvgPoolOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                        SmallVectorImpl<Value> &dxs) {
  dxs.push_back(make<AvgPoolBackwardOp>(
      b, getLoc(), dys[0],
      {b.getNamedAttr("input_shape", b.getDenseI64ArrayAttr(typeOf(getInput()).getShape())),
       b.getNamedAttr("kernel_shape", getKernelShapeAttr()),
       b.getNamedAttr("strides", getStridesAttr()), b.getNamedAttr("pads", getPadsAttr()),
       b.getNamedAttr("count_include_pad", getCountIncludePadAttr()),
       b.getNamedAttr("ceil_mode", getCeilModeAttr())}));
  return success();
}

LogicalResult GlobalAvgPoolOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                              SmallVectorImpl<Value> &dxs) {
  // Every input element of a plane receives dy / (its spatial size).
  Location loc = getLoc();
  int64_t count = typeOf(getInput()).getNumElements() / typeOf(getResult()).getNumElements();
  Value scaled = div(b, loc, dys[0], scalar(b, loc, dys[0], static_cast<double>(count)));
  dxs.push_back(make<ExpandOp>(
      b, loc, scaled,
      {b.getNamedAttr("shape", b.getDenseI64ArrayAttr(typeOf(getInput()).getShape()))}));
  return success();
}

//===----------------------------------------------------------------------===//
// Shapes and reductions
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                        SmallVectorImpl<Value> &dxs) {
  dxs.push_back(reshapeTo(b, getLoc(), dys[0], typeOf(getInput()).getShape()));
  return success();
}

LogicalResult TransposeOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                          SmallVectorImpl<Value> &dxs) {
  ArrayRef<int64_t> perm = getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inverse[perm[i]] = i;
  dxs.push_back(make<TransposeOp>(b, getLoc(), dys[0],
                                  {b.getNamedAttr("perm", b.getDenseI64ArrayAttr(inverse))}));
  return success();
}

LogicalResult ExpandOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                       SmallVectorImpl<Value> &dxs) {
  dxs.push_back(sumToShape(b, getLoc(), dys[0], getInput().getType()));
  return success();
}

LogicalResult ReduceSumOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                          SmallVectorImpl<Value> &dxs) {
  Value dy = castTo(b, getLoc(), dys[0], typeOf(getInput()).getElementType()); // out_type
  dxs.push_back(unreduce(b, getLoc(), dy, getInput(), getAxes()));
  return success();
}

LogicalResult ReduceMeanOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                           SmallVectorImpl<Value> &dxs) {
  Location loc = getLoc();
  int64_t count = typeOf(getInput()).getNumElements() / typeOf(getResult()).getNumElements();
  Value dy = castTo(b, loc, dys[0], typeOf(getInput()).getElementType()); // out_type
  Value scaled = div(b, loc, dy, scalar(b, loc, dy, static_cast<double>(count)));
  dxs.push_back(unreduce(b, loc, scaled, getInput(), getAxes()));
  return success();
}

LogicalResult ReduceMaxOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                          SmallVectorImpl<Value> &dxs) {
  // As torch.amax: dy spread evenly over the elements equal to the maximum.
  Location loc = getLoc();
  Value x = getInput();
  if (!isa<FloatType>(typeOf(x).getElementType())) {
    dxs.push_back(nullptr);
    return success();
  }
  // With out_type, y (a maximum: one of x's values) and dy go back to x's type exactly.
  Type element = typeOf(x).getElementType();
  Value dy = castTo(b, loc, dys[0], element);
  ArrayRef<int64_t> axes = getAxes();
  Value y = castTo(b, loc, getResult(), element);
  if (!getKeepdims())
    y = unreduce(b, loc, y, x, axes);
  else if (typeOf(y).getShape() != typeOf(x).getShape())
    y = make<ExpandOp>(b, loc, y, {b.getNamedAttr("shape", b.getDenseI64ArrayAttr(typeOf(x).getShape()))});
  Value hit = make<CastOp>(b, loc, make<EqualOp>(b, loc, {x, y}),
                           {b.getNamedAttr("to", TypeAttr::get(typeOf(x).getElementType()))});
  Value count = make<ReduceSumOp>(b, loc, hit,
                                  {b.getNamedAttr("axes", getAxesAttr()),
                                   b.getNamedAttr("keepdims", b.getBoolAttr(getKeepdims()))});
  Value share = div(b, loc, dy, count);
  if (!getKeepdims())
    share = unreduce(b, loc, share, x, axes);
  dxs.push_back(mul(b, loc, hit, share));
  return success();
}

LogicalResult SoftmaxOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                        SmallVectorImpl<Value> &dxs) {
  // dx = y (dy - sum(dy y, axis))
  Location loc = getLoc();
  Value dy = dys[0], y = getResult();
  auto axis = b.getNamedAttr("axes", b.getDenseI64ArrayAttr({static_cast<int64_t>(getAxis())}));
  Value dot = make<ReduceSumOp>(b, loc, mul(b, loc, dy, y), {axis, b.getNamedAttr("keepdims", b.getBoolAttr(true))});
  dxs.push_back(mul(b, loc, y, sub(b, loc, dy, dot)));
  return success();
}

LogicalResult LogSoftmaxOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                           SmallVectorImpl<Value> &dxs) {
  // dx = dy - exp(y) sum(dy, axis)
  Location loc = getLoc();
  Value dy = dys[0], y = getResult();
  auto axis = b.getNamedAttr("axes", b.getDenseI64ArrayAttr({static_cast<int64_t>(getAxis())}));
  Value total = make<ReduceSumOp>(b, loc, dy, {axis, b.getNamedAttr("keepdims", b.getBoolAttr(true))});
  dxs.push_back(sub(b, loc, dy, mul(b, loc, make<ExpOp>(b, loc, y), total)));
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

namespace {

/// The gradient of a class-index loss with respect to its [N, C, d...] input:
/// onehot(labels) scaled by the per-position upstream gradient, which
/// `reduction` spreads (mean: over the positions whose label is not
/// `ignoreIndex`); ignored positions get nothing. Returns the scaled onehot
/// and the per-position gradient [N, 1, d...].
std::pair<Value, Value> classLossParts(OpBuilder &b, Location loc, Value input, Value labels,
                                       Value dy, StringRef reduction,
                                       std::optional<int64_t> ignoreIndex) {
  auto inputType = typeOf(input);
  ArrayRef<int64_t> shape = inputType.getShape();
  Type element = inputType.getElementType();
  int64_t classes = shape[1];
  SmallVector<int64_t> positions(shape.begin(), shape.end());
  positions.erase(positions.begin() + 1); // [N, d...]
  int64_t count = 1;
  for (int64_t d : positions)
    count *= d;
  Type labelElement = typeOf(labels).getElementType();
  auto labelScalar = [&](int64_t v) {
    auto type = RankedTensorType::get({}, labelElement);
    return b.create<ConstantOp>(loc, DenseElementsAttr::get(
                                         type, APInt(labelElement.getIntOrFloatBitWidth(), v,
                                                     /*isSigned=*/true)))
        .getResult();
  };
  // 1 where the label counts, [N, d...].
  Value counted;
  if (ignoreIndex)
    counted = make<CastOp>(
        b, loc, make<NotOp>(b, loc, make<EqualOp>(b, loc, {labels, labelScalar(*ignoreIndex)})),
        {b.getNamedAttr("to", TypeAttr::get(element))});
  // Per-position upstream gradient, [N, d...].
  Value perPosition = dy;
  if (reduction != "none") {
    if (reduction == "mean") {
      Value denominator = scalar(b, loc, dy, static_cast<double>(count));
      if (counted)
        denominator = make<ReduceSumOp>(b, loc, counted,
                                        {b.getNamedAttr("axes", b.getDenseI64ArrayAttr({})),
                                         b.getNamedAttr("keepdims", b.getBoolAttr(false))});
      perPosition = div(b, loc, dy, denominator);
    }
    perPosition = make<ExpandOp>(b, loc, perPosition,
                                 {b.getNamedAttr("shape", b.getDenseI64ArrayAttr(positions))});
  }
  if (counted)
    perPosition = mul(b, loc, perPosition, counted);
  // [N, 1, d...] so it broadcasts over the class axis.
  SmallVector<int64_t> withClass(positions.begin(), positions.end());
  withClass.insert(withClass.begin() + 1, 1);
  Value dl = reshapeTo(b, loc, perPosition, withClass);
  // onehot: labels [N, 1, d...] == iota [1, C, 1...].
  SmallVector<int64_t> iotaShape(shape.size(), 1);
  iotaShape[1] = classes;
  SmallVector<APInt> iota;
  for (int64_t c = 0; c < classes; ++c)
    iota.push_back(APInt(labelElement.getIntOrFloatBitWidth(), c));
  Value classIds =
      b.create<ConstantOp>(loc, DenseElementsAttr::get(
                                    RankedTensorType::get(iotaShape, labelElement), iota))
          .getResult();
  Value hits = make<EqualOp>(b, loc, {reshapeTo(b, loc, labels, withClass), classIds});
  Value onehot = make<CastOp>(b, loc, hits, {b.getNamedAttr("to", TypeAttr::get(element))});
  return {onehot, dl};
}

} // namespace

LogicalResult SoftmaxCrossEntropyOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                                    SmallVectorImpl<Value> &dxs) {
  // dlogits = (softmax(logits) - onehot(labels)) * dl, with dl per position.
  Location loc = getLoc();
  auto [onehot, dl] = classLossParts(b, loc, getLogits(), getLabels(), dys[0], getReduction(),
                                     getIgnoreIndex());
  Value probabilities =
      make<SoftmaxOp>(b, loc, getLogits(), {b.getNamedAttr("axis", b.getI64IntegerAttr(1))});
  dxs.push_back(mul(b, loc, sub(b, loc, probabilities, onehot), dl));
  dxs.push_back(nullptr); // labels
  return success();
}

LogicalResult NllLossOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                        SmallVectorImpl<Value> &dxs) {
  // dlogp = -onehot(labels) * dl.
  Location loc = getLoc();
  auto [onehot, dl] = classLossParts(b, loc, getLogProbs(), getLabels(), dys[0],
                                     getReduction(), getIgnoreIndex());
  dxs.push_back(neg(b, loc, mul(b, loc, onehot, dl)));
  dxs.push_back(nullptr); // labels
  return success();
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

LogicalResult BatchNormOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                          SmallVectorImpl<Value> &dxs) {
  Location loc = getLoc();
  Value dy = dys[0], x = getInput();
  if (!dy)
    return emitOpError("has no gradient rule for its running statistics");
  // The loss phase puts every batch norm of a training step in training
  // mode (PyTorch's model.train()); a frozen, inference-mode one has no rule.
  if (!getTraining())
    return emitOpError("in inference mode has no gradient rule (the loss phase switches "
                       "batch norms to training mode)");
  SmallVector<Value> operands = {x, getScale(), dy};
  if (Value mask = getSampleMask())
    operands.push_back(mask);
  auto backward = b.create<BatchNormBackwardOp>(
      loc, operands, ArrayRef<NamedAttribute>{b.getNamedAttr("epsilon", getEpsilonAttr())});
  dxs.append({backward.getInputGrad(), backward.getScaleGrad(), backward.getBiasGrad()});
  dxs.append({nullptr, nullptr}); // running statistics
  if (getSampleMask())
    dxs.push_back(nullptr);
  return success();
}

LogicalResult LayerNormOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                          SmallVectorImpl<Value> &dxs) {
  // One op recomputes the row statistics and returns dx, dscale and dbias
  // (see tc.layer_norm_backward for the formulas).
  auto backward = b.create<LayerNormBackwardOp>(
      getLoc(), ValueRange{getInput(), getScale(), dys[0]},
      ArrayRef<NamedAttribute>{b.getNamedAttr("axis", getAxisAttr()),
                               b.getNamedAttr("epsilon", getEpsilonAttr())});
  dxs.push_back(backward.getInputGrad());
  dxs.push_back(backward.getScaleGrad());
  if (getBias())
    dxs.push_back(backward.getBiasGrad());
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult ConcatOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                       SmallVectorImpl<Value> &dxs) {
  // Each input's gradient is its slice of dy along the axis.
  Location loc = getLoc();
  Value dy = dys[0];
  ArrayRef<int64_t> shape = typeOf(dy).getShape();
  int64_t axis = getAxis(), at = 0;
  for (Value in : getInputs()) {
    int64_t length = typeOf(in).getDimSize(axis);
    SmallVector<int64_t> starts(shape.size(), 0), ends(shape), steps(shape.size(), 1);
    starts[axis] = at;
    ends[axis] = at + length;
    at += length;
    dxs.push_back(make<SliceOp>(b, loc, dy,
                                {b.getNamedAttr("starts", b.getDenseI64ArrayAttr(starts)),
                                 b.getNamedAttr("ends", b.getDenseI64ArrayAttr(ends)),
                                 b.getNamedAttr("steps", b.getDenseI64ArrayAttr(steps))}));
  }
  return success();
}

LogicalResult SliceOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                      SmallVectorImpl<Value> &dxs) {
  dxs.push_back(make<SliceBackwardOp>(
      b, getLoc(), dys[0],
      {b.getNamedAttr("input_shape", b.getDenseI64ArrayAttr(typeOf(getInput()).getShape())),
       b.getNamedAttr("starts", getStartsAttr()), b.getNamedAttr("ends", getEndsAttr()),
       b.getNamedAttr("steps", getStepsAttr())}));
  return success();
}

LogicalResult GatherOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                       SmallVectorImpl<Value> &dxs) {
  SmallVector<NamedAttribute> attrs = {
      b.getNamedAttr("axis", getAxisAttr()),
      b.getNamedAttr("data_shape", b.getDenseI64ArrayAttr(typeOf(getData()).getShape()))};
  if (IntegerAttr padding = getPaddingIndexAttr()) // that row gets no gradient
    attrs.push_back(b.getNamedAttr("padding_index", padding));
  dxs.push_back(make<GatherBackwardOp>(b, getLoc(), {dys[0], getIndices()}, attrs));
  dxs.push_back(nullptr); // indices
  return success();
}

//===----------------------------------------------------------------------===//
// Cumulative sums, remainders, tiles, triangles and pads
//===----------------------------------------------------------------------===//

namespace {
bool isFloatTensor(Value v) { return isa<FloatType>(typeOf(v).getElementType()); }
} // namespace

// y_j = sum of x_i over i <= j (or i < j): dx_i = sum of dy_j over j >= i (or
// j > i), the cumsum of dy in the other direction with the same exclusivity.
LogicalResult CumSumOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                       SmallVectorImpl<Value> &dxs) {
  if (!isFloatTensor(getInput())) {
    dxs.push_back(nullptr);
    return success();
  }
  dxs.push_back(make<CumSumOp>(b, getLoc(), dys[0],
                               {b.getNamedAttr("axis", getAxisAttr()),
                                b.getNamedAttr("exclusive", b.getBoolAttr(getExclusive())),
                                b.getNamedAttr("reverse", b.getBoolAttr(!getReverse()))}));
  return success();
}

// fmod(a, b) = a - trunc(a / b) * b: d/da = 1, d/db = -trunc(a / b), with
// trunc(t) = t - fmod(t, 1) (exact in floating point), as torch.fmod's
// backward computes a.div(b, rounding_mode="trunc").
LogicalResult ModOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &dxs) {
  if (!isFloatTensor(getLhs())) {
    dxs.push_back(nullptr);
    dxs.push_back(nullptr);
    return success();
  }
  Location loc = getLoc();
  Value dy = dys[0], q = div(b, loc, getLhs(), getRhs());
  Value frac = make<ModOp>(b, loc, {q, scalar(b, loc, q, 1.0)},
                           {b.getNamedAttr("fmod", b.getBoolAttr(true))});
  Value trunc = sub(b, loc, q, frac);
  dxs.push_back(sumToShape(b, loc, dy, getLhs().getType()));
  dxs.push_back(sumToShape(b, loc, neg(b, loc, mul(b, loc, dy, trunc)), getRhs().getType()));
  return success();
}

// The result is [r0 * d0, r1 * d1, ...] with the tile index outermost on
// each axis: viewed as [r0, d0, r1, d1, ...], the gradient sums the r axes.
LogicalResult TileOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                     SmallVectorImpl<Value> &dxs) {
  if (!isFloatTensor(getInput())) {
    dxs.push_back(nullptr);
    return success();
  }
  Location loc = getLoc();
  ArrayRef<int64_t> in = typeOf(getInput()).getShape();
  SmallVector<int64_t> split, axes;
  for (auto [d, r] : llvm::enumerate(getRepeats())) {
    if (r != 1) {
      axes.push_back(static_cast<int64_t>(split.size()));
      split.push_back(r);
    }
    split.push_back(in[d]);
  }
  if (axes.empty()) {
    dxs.push_back(dys[0]);
    return success();
  }
  Value summed = make<ReduceSumOp>(b, loc, reshapeTo(b, loc, dys[0], split),
                                   {b.getNamedAttr("axes", b.getDenseI64ArrayAttr(axes)),
                                    b.getNamedAttr("keepdims", b.getBoolAttr(false))});
  dxs.push_back(reshapeTo(b, loc, summed, in));
  return success();
}

LogicalResult TriluOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                      SmallVectorImpl<Value> &dxs) {
  if (!isFloatTensor(getInput())) {
    dxs.push_back(nullptr);
    return success();
  }
  dxs.push_back(make<TriluOp>(b, getLoc(), dys[0],
                              {b.getNamedAttr("upper", b.getBoolAttr(getUpper())),
                               b.getNamedAttr("k", getKAttr())}));
  return success();
}

// A constant pad's adjoint is the pad with negated pads: it crops what the
// forward added and puts zeros where the forward cropped. Reflect, edge and
// wrap pads copy some input elements more than once: pad_backward adds them
// up.
LogicalResult PadOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &dxs) {
  if (!isFloatTensor(getInput())) {
    dxs.push_back(nullptr);
    return success();
  }
  Location loc = getLoc();
  if (getMode() == "constant") {
    SmallVector<int64_t> negated;
    for (int64_t p : getPads())
      negated.push_back(-p);
    dxs.push_back(make<PadOp>(b, loc, dys[0],
                              {b.getNamedAttr("pads", b.getDenseI64ArrayAttr(negated)),
                               b.getNamedAttr("mode", b.getStringAttr("constant")),
                               b.getNamedAttr("value", b.getF64FloatAttr(0.0))}));
    return success();
  }
  dxs.push_back(make<PadBackwardOp>(
      b, loc, dys[0],
      {b.getNamedAttr("input_shape", b.getDenseI64ArrayAttr(typeOf(getInput()).getShape())),
       b.getNamedAttr("pads", getPadsAttr()), b.getNamedAttr("mode", getModeAttr())}));
  return success();
}

// y[c] = x[c with axis -> idx[c]]: dx scatter-adds dy back along the axis,
// in a fixed order (gather_elements_backward), as torch.gather's backward.
LogicalResult ScatterElementsOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                                SmallVectorImpl<Value> &dxs) {
  if (!isFloatTensor(getData())) {
    dxs.append(3, nullptr);
    return success();
  }
  llvm::StringRef reduction = getReduction();
  if (reduction != "none" && reduction != "add")
    return emitOpError("has no gradient rule for reduction '") << reduction
                                                              << "' (none and add have one)";
  Location loc = getLoc();
  Value dy = dys[0];
  NamedAttribute axis = b.getNamedAttr("axis", getAxisAttr());
  Value ddata = dy;
  if (reduction == "none") {
    // The written positions take nothing from data: dy with zeros scattered there.
    auto type = typeOf(getUpdates());
    Value zeros = b.create<ConstantOp>(loc, DenseElementsAttr::get(
                                                type, b.getZeroAttr(type.getElementType())));
    ddata = make<ScatterElementsOp>(b, loc, {dy, getIndices(), zeros},
                                    {axis, b.getNamedAttr("reduction", b.getStringAttr("none"))});
  }
  dxs.push_back(ddata);
  dxs.push_back(nullptr); // indices
  dxs.push_back(make<GatherElementsOp>(b, loc, {dy, getIndices()}, {axis}));
  return success();
}

LogicalResult GatherElementsOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                               SmallVectorImpl<Value> &dxs) {
  if (!isFloatTensor(getData())) {
    dxs.push_back(nullptr);
    dxs.push_back(nullptr);
    return success();
  }
  dxs.push_back(make<GatherElementsBackwardOp>(
      b, getLoc(), {dys[0], getIndices()},
      {b.getNamedAttr("axis", getAxisAttr()),
       b.getNamedAttr("data_shape", b.getDenseI64ArrayAttr(typeOf(getData()).getShape()))}));
  dxs.push_back(nullptr); // indices
  return success();
}
