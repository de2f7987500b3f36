//===- ConvertElementwise.cpp - pointwise ONNX ops ------------------------===//
//
// Unary, binary (broadcasting), variadic and select ops. When every input is a
// host constant the op folds on the host (this is how the shape arithmetic
// PyTorch exports disappears); otherwise it becomes the matching tc op.
//
//===----------------------------------------------------------------------===//

#include "frontend/Importer.h"
#include "frontend/ModelLoader.h"
#include "frontend/OpChain.h"

#include "ir/ScalarSemantics.h"
#include "ir/ShapeLogic.h"
#include "ir/TcOps.h"

#include "llvm/ADT/StringSwitch.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

using namespace mlir;
using namespace trainc;
using namespace trainc::frontend;

namespace {

using EmitFn = FailureOr<Value> (*)(NodeContext &, ValueRange);
template <typename OpTy> FailureOr<Value> emitOp(NodeContext &ctx, ValueRange v) {
  FailureOr<Operation *> op = ctx.create<OpTy>(v);
  if (failed(op))
    return failure();
  return (*op)->getResult(0);
}

enum class Kind { Unary, Arith, Compare, Logical };

struct ElementwiseRule {
  Kind kind;
  EmitFn emit;
  /// Host evaluation for folding, on doubles (floats) or integers.
  double (*real)(double, double);
  int64_t (*integer)(int64_t, int64_t);
};

/// ScalarSemantics' algebra of host numbers: double for floats, int64 for
/// integers and booleans; a comparison gives 1 or 0. Integer arithmetic
/// wraps (two's complement), as the kernels' does.
template <class T> struct HostAlgebra {
  using Value = T;
  static constexpr bool kFloat = std::is_floating_point_v<T>;
  bool isFloat() const { return kFloat; }
  T constant(int v) const { return T(v); }
  static T wrap(uint64_t v) { return static_cast<T>(static_cast<int64_t>(v)); }
  T neg(T x) const {
    if constexpr (kFloat)
      return -x;
    else
      return wrap(0 - static_cast<uint64_t>(x));
  }
  T logicalNot(T x) const { return !x; }
  T binary(tc::ScalarBinary op, T x, T y) const {
    using B = tc::ScalarBinary;
    switch (op) {
    case B::Add:
    case B::Sub:
    case B::Mul:
      if constexpr (!kFloat) {
        uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
        return wrap(op == B::Add ? ux + uy : op == B::Sub ? ux - uy : ux * uy);
      }
      return op == B::Add ? x + y : op == B::Sub ? x - y : x * y;
    case B::Div:
      if constexpr (!kFloat) {
        if (y == 0) // refused before folding
          return 0;
        if (y == -1) // INT64_MIN / -1 wraps
          return neg(x);
      }
      return x / y;
    case B::Less: return x < y;
    case B::LessEqual: return x <= y;
    case B::Greater: return x > y;
    case B::GreaterEqual: return x >= y;
    case B::Equal: return x == y;
    case B::NotEqual: return x != y;
    case B::And: return x && y;
    case B::Or: return x || y;
    }
    return T(0);
  }
  /// Floats only (the fold table gives these ops no integer rule).
  T fn(tc::ScalarFn f, T x) const {
    using F = tc::ScalarFn;
    double d = static_cast<double>(x);
    switch (f) {
    case F::Exp: return T(std::exp(d));
    case F::Log: return T(std::log(d));
    case F::Sqrt: return T(std::sqrt(d));
    case F::Tanh: return T(std::tanh(d));
    case F::Erf: return T(std::erf(d));
    case F::Sin: return T(std::sin(d));
    case F::Cos: return T(std::cos(d));
    case F::Tan: return T(std::tan(d));
    case F::Atan: return T(std::atan(d));
    case F::Asin: return T(std::asin(d));
    case F::Acos: return T(std::acos(d));
    case F::Sinh: return T(std::sinh(d));
    case F::Cosh: return T(std::cosh(d));
    case F::Ceil: return T(std::ceil(d));
    case F::Floor: return T(std::floor(d));
    case F::Rint: return T(std::nearbyint(d));
    case F::Fabs: return T(std::fabs(d));
    case F::Sigmoid: return T(1.0 / (1.0 + std::exp(-d)));
    case F::Pow: break;
    }
    return T(0);
  }
  T fn(tc::ScalarFn, T x, T y) const {
    return T(std::pow(static_cast<double>(x), static_cast<double>(y)));
  }
  T select(T c, T x, T y) const { return c ? x : y; }
};

template <typename OpTy> double foldReal(double a, double b) {
  HostAlgebra<double> s;
  const double v[] = {a, b};
  return tc::ScalarSemantics<OpTy>::apply(s, v);
}
template <typename OpTy> int64_t foldInteger(int64_t a, int64_t b) {
  HostAlgebra<int64_t> s;
  const int64_t v[] = {a, b};
  return tc::ScalarSemantics<OpTy>::apply(s, v);
}

/// Which constants an op folds on: floats, integers (booleans included) or
/// both.
enum Domains { kReal = 1, kInteger = 2, kBoth = 3 };

/// The rule of an ONNX op that becomes OpTy, folding by OpTy's scalar
/// semantics (ir/ScalarSemantics.h), as its kernel computes it.
template <typename OpTy> ElementwiseRule rule(Kind kind, Domains domains) {
  return {kind, emitOp<OpTy>, domains & kReal ? foldReal<OpTy> : nullptr,
          domains & kInteger ? foldInteger<OpTy> : nullptr};
}

const ElementwiseRule *ruleFor(llvm::StringRef op) {
  static const llvm::StringMap<ElementwiseRule> rules = {
      {"Relu", rule<tc::ReluOp>(Kind::Unary, kReal)},
      {"Sigmoid", rule<tc::SigmoidOp>(Kind::Unary, kReal)},
      {"Tanh", rule<tc::TanhOp>(Kind::Unary, kReal)},
      {"Erf", rule<tc::ErfOp>(Kind::Unary, kReal)},
      {"Sin", rule<tc::SinOp>(Kind::Unary, kReal)},
      {"Cos", rule<tc::CosOp>(Kind::Unary, kReal)},
      {"Tan", rule<tc::TanOp>(Kind::Unary, kReal)},
      {"Atan", rule<tc::AtanOp>(Kind::Unary, kReal)},
      {"Asin", rule<tc::AsinOp>(Kind::Unary, kReal)},
      {"Acos", rule<tc::AcosOp>(Kind::Unary, kReal)},
      {"Sinh", rule<tc::SinhOp>(Kind::Unary, kReal)},
      {"Cosh", rule<tc::CoshOp>(Kind::Unary, kReal)},
      {"Exp", rule<tc::ExpOp>(Kind::Unary, kReal)},
      {"Log", rule<tc::LogOp>(Kind::Unary, kReal)},
      {"Sqrt", rule<tc::SqrtOp>(Kind::Unary, kReal)},
      {"Reciprocal", rule<tc::ReciprocalOp>(Kind::Unary, kReal)},
      {"Neg", rule<tc::NegOp>(Kind::Unary, kBoth)},
      {"Abs", rule<tc::AbsOp>(Kind::Unary, kBoth)},
      {"Sign", rule<tc::SignOp>(Kind::Unary, kBoth)},
      {"Ceil", rule<tc::CeilOp>(Kind::Unary, kReal)},
      {"Floor", rule<tc::FloorOp>(Kind::Unary, kReal)},
      {"Round", rule<tc::RoundOp>(Kind::Unary, kReal)},
      {"Not", rule<tc::NotOp>(Kind::Unary, kInteger)},
      {"Add", rule<tc::AddOp>(Kind::Arith, kBoth)},
      {"Sub", rule<tc::SubOp>(Kind::Arith, kBoth)},
      {"Mul", rule<tc::MulOp>(Kind::Arith, kBoth)},
      {"Div", rule<tc::DivOp>(Kind::Arith, kBoth)},
      {"Pow", rule<tc::PowOp>(Kind::Arith, kReal)},
      {"Max", rule<tc::MaxOp>(Kind::Arith, kBoth)},
      {"Min", rule<tc::MinOp>(Kind::Arith, kBoth)},
      {"Sum", rule<tc::AddOp>(Kind::Arith, kBoth)},
      {"Equal", rule<tc::EqualOp>(Kind::Compare, kBoth)},
      {"Less", rule<tc::LessOp>(Kind::Compare, kBoth)},
      {"LessOrEqual", rule<tc::LessEqualOp>(Kind::Compare, kBoth)},
      {"Greater", rule<tc::GreaterOp>(Kind::Compare, kBoth)},
      {"GreaterOrEqual", rule<tc::GreaterEqualOp>(Kind::Compare, kBoth)},
      {"And", rule<tc::AndOp>(Kind::Logical, kInteger)},
      {"Or", rule<tc::OrOp>(Kind::Logical, kInteger)},
  };
  auto it = rules.find(op);
  return it == rules.end() ? nullptr : &it->second;
}

/// Folds a unary or binary pointwise op over host constants.
FailureOr<Tensor> foldPointwise(NodeContext &ctx, const ElementwiseRule &rule,
                                llvm::ArrayRef<const Tensor *> in) {
  DType inType = in[0]->dtype();
  for (const Tensor *t : in)
    if (t->dtype() != inType)
      return ctx.error("operands have different element types " +
                       dtypeName(inType) + " and " + dtypeName(t->dtype()));
  SmallVector<int64_t> shape(in[0]->shape());
  SmallVector<ArrayRef<int64_t>> shapes;
  for (const Tensor *t : in) {
    auto joined = shape::broadcast(shape, t->shape());
    if (!joined)
      return ctx.error("shapes " + shape::format(shape) + " and " +
                       shape::format(t->shape()) + " do not broadcast");
    shape = *joined;
    shapes.push_back(t->shape());
  }
  if (auto n = shape::numElements(shape); !n || *n > kMaxFoldElements)
    return ctx.error("constant result " + shape::format(shape) + " is too large to fold");
  bool compare = rule.kind == Kind::Compare;
  DType outType = compare || rule.kind == Kind::Logical ? DType::I1 : inType;
  bool useReal = isFloat(inType) ? rule.real != nullptr : rule.integer == nullptr;
  if (!useReal && !rule.integer)
    return ctx.error("cannot fold on " + dtypeName(inType));
  if (useReal && !rule.real)
    return ctx.error("cannot fold on " + dtypeName(inType));
  if (ctx.opType() == "Div" && !isFloat(inType))
    for (int64_t i = 0; i < in.back()->numElements(); ++i)
      if (in.back()->integer(i) == 0)
        return ctx.error("integer division by zero in a constant");
  Tensor out(outType, shape);
  forEachBroadcast(shape, shapes, [&](int64_t n, ArrayRef<int64_t> off) {
    if (useReal) {
      double a = in[0]->real(off[0]), b = in.size() > 1 ? in[1]->real(off[1]) : 0.0;
      out.setReal(n, rule.real(a, b));
    } else {
      int64_t a = in[0]->integer(off[0]), b = in.size() > 1 ? in[1]->integer(off[1]) : 0;
      out.setInteger(n, rule.integer(a, b));
    }
  });
  return out;
}

/// The operands of a binary op, with Pow's exponent cast to the base's type
/// (ONNX Pow allows a different exponent type; tc.pow does not).
FailureOr<SmallVector<Value>> binaryOperands(NodeContext &ctx, unsigned lhs,
                                             unsigned rhs) {
  FailureOr<Value> a = ctx.input(lhs), b = ctx.input(rhs);
  if (failed(a) || failed(b))
    return failure();
  auto aType = cast<RankedTensorType>(a->getType());
  auto bType = cast<RankedTensorType>(b->getType());
  if (ctx.opType() == "Pow" && aType.getElementType() != bType.getElementType()) {
    auto cast = ctx.create<tc::CastOp>(
        *b, {ctx.named("to", TypeAttr::get(aType.getElementType()))});
    if (failed(cast))
      return failure();
    b = (*cast)->getResult(0);
  }
  return SmallVector<Value>{*a, *b};
}

} // namespace

LogicalResult trainc::frontend::convertElementwise(NodeContext &ctx) {
  const ElementwiseRule *rule = ruleFor(ctx.opType());
  unsigned arity = rule->kind == Kind::Unary ? 1 : 2;
  if (ctx.numInputs() != arity)
    return ctx.error("expects " + llvm::Twine(arity) + " input(s), got " +
                     llvm::Twine(ctx.numInputs()));
  if (ctx.allInputsConstant()) {
    SmallVector<const Tensor *> in;
    for (unsigned i = 0; i < arity; ++i)
      in.push_back(ctx.constant(i));
    Tensor exponent;
    if (ctx.opType() == "Pow" && in[1]->dtype() != in[0]->dtype()) {
      exponent = in[1]->castTo(in[0]->dtype());
      in[1] = &exponent;
    }
    FailureOr<Tensor> folded = foldPointwise(ctx, *rule, in);
    if (failed(folded))
      return failure();
    ctx.setOutput(0, std::move(*folded));
    return success();
  }
  if (arity == 1) {
    FailureOr<Value> x = ctx.input(0);
    return failed(x) ? failure() : bindOutput(ctx, rule->emit(ctx, *x));
  }
  auto operands = binaryOperands(ctx, 0, 1);
  return failed(operands) ? failure() : bindOutput(ctx, rule->emit(ctx, *operands));
}

/// Max, Min, Sum, Mean with any number of inputs: a chain of binary ops.
LogicalResult trainc::frontend::convertVariadic(NodeContext &ctx) {
  bool mean = ctx.opType() == "Mean";
  const ElementwiseRule *rule = ruleFor(mean ? "Sum" : ctx.opType());
  if (ctx.numInputs() < 1)
    return ctx.error("expects at least one input");
  if (ctx.allInputsConstant() && !mean && ctx.numInputs() > 1) {
    FailureOr<Tensor> folded = foldPointwise(ctx, *rule, {ctx.constant(0), ctx.constant(1)});
    for (unsigned i = 2; i < ctx.numInputs() && succeeded(folded); ++i) {
      FailureOr<Tensor> next = foldPointwise(ctx, *rule, {&*folded, ctx.constant(i)});
      folded = std::move(next);
    }
    if (failed(folded))
      return failure();
    ctx.setOutput(0, std::move(*folded));
    return success();
  }
  FailureOr<Value> acc = ctx.input(0);
  if (failed(acc))
    return failure();
  for (unsigned i = 1; i < ctx.numInputs(); ++i) {
    FailureOr<Value> next = ctx.input(i);
    if (failed(next))
      return failure();
    acc = rule->emit(ctx, {*acc, *next});
    if (failed(acc))
      return failure();
  }
  if (mean && ctx.numInputs() > 1) {
    auto type = cast<RankedTensorType>(acc->getType());
    Tensor count = Tensor::scalarReal(fromMlirType(type.getElementType()).value_or(DType::F32),
                                      static_cast<double>(ctx.numInputs()));
    Value divisor = ctx.builder().create<tc::ConstantOp>(
        ctx.loc(), toAttribute(ctx.context(), count));
    auto div = ctx.create<tc::DivOp>({*acc, divisor});
    if (failed(div))
      return failure();
    acc = (*div)->getResult(0);
  }
  ctx.setOutput(0, *acc);
  return success();
}

//===----------------------------------------------------------------------===//
// Other pointwise ops
//===----------------------------------------------------------------------===//

namespace trainc::frontend {

LogicalResult convertWhere(NodeContext &ctx) {
  if (ctx.numInputs() != 3)
    return ctx.error("expects 3 inputs (condition, X, Y), got " + llvm::Twine(ctx.numInputs()));
  if (ctx.allInputsConstant()) {
    const Tensor *c = ctx.constant(0), *x = ctx.constant(1), *y = ctx.constant(2);
    if (x->dtype() != y->dtype())
      return ctx.error("values have different element types");
    SmallVector<int64_t> shape(c->shape());
    for (const Tensor *t : {x, y}) {
      auto joined = shape::broadcast(shape, t->shape());
      if (!joined)
        return ctx.error("shapes do not broadcast");
      shape = *joined;
    }
    if (auto n = shape::numElements(shape); !n || *n > kMaxFoldElements)
      return ctx.error("constant result is too large to fold");
    Tensor out(x->dtype(), shape);
    size_t size = dtypeSize(x->dtype());
    forEachBroadcast(shape, {c->shape(), x->shape(), y->shape()},
                     [&](int64_t n, ArrayRef<int64_t> off) {
                       const Tensor *src = c->integer(off[0]) ? x : y;
                       int64_t at = c->integer(off[0]) ? off[1] : off[2];
                       std::memcpy(out.mutableBytes() + n * size,
                                   src->bytes().data() + at * size, size);
                     });
    ctx.setOutput(0, std::move(out));
    return success();
  }
  FailureOr<Value> c = ctx.input(0), x = ctx.input(1), y = ctx.input(2);
  if (failed(c) || failed(x) || failed(y))
    return failure();
  return ctx.emit<tc::WhereOp>({*c, *x, *y});
}

static LogicalResult castTo(NodeContext &ctx, Type target) {
  auto dtype = fromMlirType(target);
  if (!dtype)
    return ctx.error("unsupported target type");
  if (const Tensor *c = ctx.constant(0)) {
    ctx.setOutput(0, c->castTo(*dtype));
    return success();
  }
  FailureOr<Value> x = ctx.input(0);
  if (failed(x))
    return failure();
  if (cast<RankedTensorType>(x->getType()).getElementType() == target) {
    ctx.setOutput(0, *x);
    return success();
  }
  return ctx.emit<tc::CastOp>(*x, {ctx.named("to", TypeAttr::get(target))});
}

LogicalResult convertCast(NodeContext &ctx) {
  const onnx::AttributeProto *to = ctx.attr("to");
  if (!to)
    return ctx.error("attribute 'to' is required");
  auto dtype = convertDataType(static_cast<int32_t>(to->i()));
  if (!dtype)
    return ctx.error(llvm::toString(dtype.takeError()));
  return castTo(ctx, toMlirType(ctx.context(), *dtype));
}

LogicalResult convertCastLike(NodeContext &ctx) {
  FailureOr<RankedTensorType> like = ctx.inputType(1);
  if (failed(like))
    return failure();
  return castTo(ctx, like->getElementType());
}

LogicalResult convertIdentity(NodeContext &ctx) { return ctx.forwardInput(0); }

LogicalResult convertClip(NodeContext &ctx) {
  // On a host constant (DeBERTa clamps its int64 relative positions, built
  // from constant ranges) Clip folds, for integers too.
  if (const Tensor *in = ctx.constant(0)) {
    const Tensor *bounds[2] = {nullptr, nullptr};
    for (unsigned i = 1; i <= 2; ++i)
      if (ctx.hasInput(i)) {
        bounds[i - 1] = ctx.importTimeValue(i);
        if (!bounds[i - 1] || bounds[i - 1]->numElements() != 1)
          return ctx.error(i == 1 ? "input 'min' must be a scalar constant known at import time"
                                  : "input 'max' must be a scalar constant known at import time");
      }
    Tensor out(in->dtype(), in->shape());
    for (int64_t n = 0; n < in->numElements(); ++n) {
      if (isFloat(in->dtype())) {
        double v = in->real(n);
        if (bounds[0] && v < bounds[0]->real(0))
          v = bounds[0]->real(0);
        if (bounds[1] && v > bounds[1]->real(0))
          v = bounds[1]->real(0);
        out.setReal(n, v);
      } else {
        int64_t v = in->integer(n);
        if (bounds[0])
          v = std::max(v, bounds[0]->integer(0));
        if (bounds[1])
          v = std::min(v, bounds[1]->integer(0));
        out.setInteger(n, v);
      }
    }
    ctx.setOutput(0, std::move(out));
    return success();
  }
  FailureOr<Value> x = ctx.input(0);
  if (failed(x))
    return failure();
  if (!isa<FloatType>(cast<RankedTensorType>(x->getType()).getElementType()))
    return ctx.error("Clip of integers is supported on constants only (it folds at import); "
                     "this input is computed at run time");
  SmallVector<NamedAttribute> attrs;
  const char *names[] = {"min", "max"};
  for (unsigned i = 1; i <= 2; ++i) {
    if (!ctx.hasInput(i))
      continue;
    const Tensor *bound = ctx.importTimeValue(i);
    if (!bound || bound->numElements() != 1)
      return ctx.error(llvm::Twine("input '") + names[i - 1] +
                       "' must be a scalar constant known at import time");
    attrs.push_back(ctx.namedF32(names[i - 1], static_cast<float>(bound->real(0))));
  }
  return ctx.emit<tc::ClipOp>(*x, attrs);
}

LogicalResult convertGelu(NodeContext &ctx) {
  FailureOr<Value> x = ctx.input(0);
  if (failed(x))
    return failure();
  return ctx.emit<tc::GeluOp>(
      *x, {ctx.namedString("approximate", ctx.attrString("approximate", "none"))});
}

LogicalResult convertLeakyRelu(NodeContext &ctx) {
  FailureOr<Value> x = ctx.input(0);
  if (failed(x))
    return failure();
  return ctx.emit<tc::LeakyReluOp>(*x, {ctx.namedF32("alpha", ctx.attrFloat("alpha", 0.01f))});
}

LogicalResult convertDropout(NodeContext &ctx) {
  FailureOr<Value> x = ctx.input(0);
  if (failed(x))
    return failure();
  if (ctx.outputUsed(1)) {
    // Outside training the mask keeps everything. In a training step the mask
    // is drawn with the output, which the importer cannot represent yet.
    const Tensor *training = ctx.importTimeValue(2);
    if (ctx.hasInput(2) && (!training || training->numElements() != 1 ||
                            training->integer(0) != 0))
      return ctx.error("the mask output of a training-mode Dropout is not supported");
    auto type = cast<RankedTensorType>(x->getType());
    Tensor mask(DType::I1, type.getShape());
    for (int64_t i = 0; i < mask.numElements(); ++i)
      mask.setInteger(i, 1);
    ctx.setOutput(1, std::move(mask));
  }
  float ratio = 0.5f;
  if (ctx.hasInput(1)) {
    const Tensor *r = ctx.importTimeValue(1);
    if (!r || r->numElements() != 1)
      return ctx.error("input 'ratio' must be a scalar constant known at import time");
    ratio = static_cast<float>(r->real(0));
  }
  // The node's position tells its masks apart from other dropouts' in a
  // training step.
  return ctx.emit<tc::DropoutOp>(
      *x, {ctx.namedF32("ratio", ratio), ctx.namedI64("stream", ctx.nodeIndex())});
}

} // namespace trainc::frontend

//===----------------------------------------------------------------------===//
// HardSigmoid and HardSwish, decomposed into tc ops with gradient rules
//===----------------------------------------------------------------------===//

namespace {

FailureOr<Value> floatInput(NodeContext &ctx) {
  FailureOr<Value> x = ctx.input(0);
  if (failed(x))
    return failure();
  if (!isa<FloatType>(cast<RankedTensorType>(x->getType()).getElementType()))
    return ctx.error("expects a floating-point input");
  return x;
}

} // namespace

namespace trainc::frontend {

/// HardSigmoid max(0, min(1, alpha * x + beta)). With PyTorch's constants
/// (alpha 1/6, beta 1/2, how F.hardsigmoid exports) it is computed as PyTorch
/// does, (x + 3) / 6 between -3 and 3, and tested on x. The gradient is
/// PyTorch's hardsigmoid_backward: alpha strictly inside the bounds, 0 at and
/// outside them and at NaN. A clip would pass it at the bounds, so the value
/// outside the open interval is a constant picked by tc.where (1 above, 0
/// below, NaN for NaN), which carries no gradient.
LogicalResult convertHardSigmoid(NodeContext &ctx) {
  FailureOr<Value> x = floatInput(ctx);
  if (failed(x))
    return failure();
  float alpha = ctx.attrFloat("alpha", 0.2f), beta = ctx.attrFloat("beta", 0.5f);
  bool torchForm = alpha == 1.0f / 6.0f && beta == 0.5f;
  OpChain b(ctx);
  // v is compared with [lo, hi]; t is the value inside.
  FailureOr<Value> v = *x, t;
  double lo = -3.0, hi = 3.0;
  if (torchForm) {
    t = b.op<tc::DivOp>({b.op<tc::AddOp>({*x, b.scalar(*x, 3.0)}), b.scalar(*x, 6.0)});
  } else {
    v = b.op<tc::AddOp>({b.op<tc::MulOp>({*x, b.scalar(*x, alpha)}), b.scalar(*x, beta)});
    t = v;
    lo = 0.0;
    hi = 1.0;
  }
  if (failed(v) || failed(t))
    return failure();
  FailureOr<Value> inside = b.op<tc::AndOp>(
      {b.op<tc::GreaterOp>({*v, b.scalar(*x, lo)}), b.op<tc::LessOp>({*v, b.scalar(*x, hi)})});
  FailureOr<Value> below =
      b.op<tc::WhereOp>({b.op<tc::LessEqualOp>({*v, b.scalar(*x, lo)}), b.scalar(*x, 0.0),
                         b.scalar(*x, std::numeric_limits<double>::quiet_NaN())});
  FailureOr<Value> outside =
      b.op<tc::WhereOp>({b.op<tc::GreaterEqualOp>({*v, b.scalar(*x, hi)}), b.scalar(*x, 1.0),
                         below});
  return bindOutput(ctx, b.op<tc::WhereOp>({inside, t, outside}));
}

/// HardSwish x * max(0, min(1, x / 6 + 1/2)), as PyTorch computes it:
/// x * c / 6 with c = x + 3 clamped to [0, 6]. c is chosen by tc.where on x
/// (0 below -3, x + 3 up to 3, 6 above and at NaN), so the gradient is
/// PyTorch's hardswish_backward: 0 below -3, x / 3 + 1/2 on [-3, 3]
/// (-1/2 and 3/2 at the bounds), 1 above 3 and at NaN. A clip of x + 3 would
/// round x + 3 to 6 for x just above 3 and pass NaN into the gradient.
LogicalResult convertHardSwish(NodeContext &ctx) {
  FailureOr<Value> x = floatInput(ctx);
  if (failed(x))
    return failure();
  OpChain b(ctx);
  FailureOr<Value> ramp =
      b.op<tc::WhereOp>({b.op<tc::LessOp>({*x, b.scalar(*x, -3.0)}), b.scalar(*x, 0.0),
                         b.op<tc::AddOp>({*x, b.scalar(*x, 3.0)})});
  FailureOr<Value> c = b.op<tc::WhereOp>(
      {b.op<tc::LessEqualOp>({*x, b.scalar(*x, 3.0)}), ramp, b.scalar(*x, 6.0)});
  return bindOutput(ctx, b.op<tc::DivOp>({b.op<tc::MulOp>({*x, c}), b.scalar(*x, 6.0)}));
}

} // namespace trainc::frontend

//===----------------------------------------------------------------------===//
// The other activations, decomposed into tc ops with gradient rules. Each
// is written as PyTorch computes it (a tc.where on the input's sign picks
// the branch), so autodiff gives PyTorch's gradient, at 0 included; the
// pointwise ops fuse into one kernel.
//===----------------------------------------------------------------------===//

namespace {

/// x > 0 ? x : alpha * (exp(x / inputScale) - 1), times `scale`: Elu
/// (scale 1, inputScale 1), Selu and Celu (inputScale alpha), as PyTorch's
/// elu kernel with its poscoef, negcoef and negiptcoef.
FailureOr<Value> eluOf(OpChain &b, Value x, double alpha, double scale, double inputScale) {
  FailureOr<Value> scaled = inputScale == 1.0 ? FailureOr<Value>(x)
                                              : b.op<tc::DivOp>({x, b.scalar(x, inputScale)});
  FailureOr<Value> negative = b.op<tc::MulOp>(
      {b.op<tc::SubOp>({b.op<tc::ExpOp>({scaled}), b.scalar(x, 1.0)}), b.scalar(x, alpha)});
  FailureOr<Value> y =
      b.op<tc::WhereOp>({b.op<tc::GreaterOp>({x, b.scalar(x, 0.0)}), x, negative});
  return scale == 1.0 ? y : b.op<tc::MulOp>({y, b.scalar(x, scale)});
}

/// PyTorch's softplus (beta 1, threshold 20): x above 20, else
/// log(1 + exp(x)), whose gradient is sigmoid(x). ONNX's Softplus has no
/// threshold; past 20 the two differ by less than exp(-20) relative.
FailureOr<Value> softplusOf(OpChain &b, Value x) {
  FailureOr<Value> smooth =
      b.op<tc::LogOp>({b.op<tc::AddOp>({b.op<tc::ExpOp>({x}), b.scalar(x, 1.0)})});
  return b.op<tc::WhereOp>({b.op<tc::GreaterOp>({x, b.scalar(x, 20.0)}), x, smooth});
}

} // namespace

namespace trainc::frontend {

LogicalResult convertElu(NodeContext &ctx) {
  FailureOr<Value> x = floatInput(ctx);
  if (failed(x))
    return failure();
  OpChain b(ctx);
  return bindOutput(ctx, eluOf(b, *x, ctx.attrFloat("alpha", 1.0f), 1.0, 1.0));
}

/// Selu's defaults are the exact constants PyTorch uses (in f32).
LogicalResult convertSelu(NodeContext &ctx) {
  FailureOr<Value> x = floatInput(ctx);
  if (failed(x))
    return failure();
  OpChain b(ctx);
  return bindOutput(ctx, eluOf(b, *x, ctx.attrFloat("alpha", 1.67326319217681884765625f),
                         ctx.attrFloat("gamma", 1.05070102214813232421875f), 1.0));
}

LogicalResult convertCelu(NodeContext &ctx) {
  FailureOr<Value> x = floatInput(ctx);
  if (failed(x))
    return failure();
  const float alpha = ctx.attrFloat("alpha", 1.0f);
  if (!(alpha != 0.0f))
    return ctx.error("alpha must not be 0");
  OpChain b(ctx);
  return bindOutput(ctx, eluOf(b, *x, alpha, 1.0, alpha));
}

LogicalResult convertSoftplus(NodeContext &ctx) {
  FailureOr<Value> x = floatInput(ctx);
  if (failed(x))
    return failure();
  OpChain b(ctx);
  return bindOutput(ctx, softplusOf(b, *x));
}

/// Mish x * tanh(softplus(x)) (ONNX 18; older exports spell the same ops).
LogicalResult convertMish(NodeContext &ctx) {
  FailureOr<Value> x = floatInput(ctx);
  if (failed(x))
    return failure();
  OpChain b(ctx);
  return bindOutput(ctx, b.op<tc::MulOp>({*x, b.op<tc::TanhOp>({softplusOf(b, *x)})}));
}

/// Softsign x / (1 + |x|).
LogicalResult convertSoftsign(NodeContext &ctx) {
  FailureOr<Value> x = floatInput(ctx);
  if (failed(x))
    return failure();
  OpChain b(ctx);
  return bindOutput(ctx, b.op<tc::DivOp>(
                       {*x, b.op<tc::AddOp>({b.op<tc::AbsOp>({*x}), b.scalar(*x, 1.0)})}));
}

/// ThresholdedRelu x > alpha ? x : 0.
LogicalResult convertThresholdedRelu(NodeContext &ctx) {
  FailureOr<Value> x = floatInput(ctx);
  if (failed(x))
    return failure();
  OpChain b(ctx);
  return bindOutput(ctx, b.op<tc::WhereOp>({b.op<tc::GreaterOp>(
                                          {*x, b.scalar(*x, ctx.attrFloat("alpha", 1.0f))}),
                                      *x, b.scalar(*x, 0.0)}));
}

/// PRelu x > 0 ? x : slope * x, the slope broadcast to x (a learned
/// parameter per channel, [C, 1, 1], as nn.PReLU exports it): autodiff sums
/// its gradient over the broadcast axes, as PyTorch's prelu_backward does.
LogicalResult convertPRelu(NodeContext &ctx) {
  FailureOr<Value> x = floatInput(ctx);
  FailureOr<Value> slope = ctx.input(1);
  if (failed(x) || failed(slope))
    return failure();
  if (cast<RankedTensorType>(slope->getType()).getElementType() !=
      cast<RankedTensorType>(x->getType()).getElementType())
    return ctx.error("the slope's element type must be the input's");
  OpChain b(ctx);
  return bindOutput(ctx, b.op<tc::WhereOp>({b.op<tc::GreaterOp>({*x, b.scalar(*x, 0.0)}), *x,
                                      b.op<tc::MulOp>({*slope, *x})}));
}

} // namespace trainc::frontend
