//===- ConvertElementwise.cpp - pointwise ONNX ops ------------------------===//
//
// Unary, binary (broadcasting), variadic and select ops. When every input is a
// host constant the op folds on the host (this is how the shape arithmetic
// PyTorch exports disappears); otherwise it becomes the matching tc op.
//
//===----------------------------------------------------------------------===//

#include "frontend/Importer.h"
#include "frontend/ModelLoader.h"

#include "ir/ShapeLogic.h"
#include "ir/TcOps.h"

#include "llvm/ADT/StringSwitch.h"

#include <cmath>
#include <cstring>
#include <limits>

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

LogicalResult bind(NodeContext &ctx, FailureOr<Value> value) {
  if (failed(value))
    return failure();
  ctx.setOutput(0, *value);
  return success();
}

enum class Kind { Unary, Arith, Compare, Logical };

struct ElementwiseRule {
  Kind kind;
  EmitFn emit;
  /// Host evaluation for folding, on doubles (floats) or integers.
  double (*real)(double, double);
  int64_t (*integer)(int64_t, int64_t);
};

double fdiv(double a, double b) { return a / b; }
int64_t idiv(int64_t a, int64_t b) { return b == 0 ? 0 : a / b; }
double erfOf(double a, double) { return std::erf(a); }
double sigmoidOf(double a, double) { return 1.0 / (1.0 + std::exp(-a)); }
/// NaN stays NaN; -0 and 0 give 0 (ONNX Sign, torch.sign).
double signOf(double a, double) { return a > 0 ? 1.0 : a < 0 ? -1.0 : a - a; }

const ElementwiseRule *ruleFor(llvm::StringRef op) {
  static const llvm::StringMap<ElementwiseRule> rules = {
      {"Relu", {Kind::Unary, emitOp<tc::ReluOp>, [](double a, double) { return a > 0 ? a : 0.0; }, nullptr}},
      {"Sigmoid", {Kind::Unary, emitOp<tc::SigmoidOp>, sigmoidOf, nullptr}},
      {"Tanh", {Kind::Unary, emitOp<tc::TanhOp>, [](double a, double) { return std::tanh(a); }, nullptr}},
      {"Erf", {Kind::Unary, emitOp<tc::ErfOp>, erfOf, nullptr}},
      {"Exp", {Kind::Unary, emitOp<tc::ExpOp>, [](double a, double) { return std::exp(a); }, nullptr}},
      {"Log", {Kind::Unary, emitOp<tc::LogOp>, [](double a, double) { return std::log(a); }, nullptr}},
      {"Sqrt", {Kind::Unary, emitOp<tc::SqrtOp>, [](double a, double) { return std::sqrt(a); }, nullptr}},
      {"Reciprocal", {Kind::Unary, emitOp<tc::ReciprocalOp>, [](double a, double) { return 1.0 / a; }, nullptr}},
      {"Neg", {Kind::Unary, emitOp<tc::NegOp>, [](double a, double) { return -a; },
               [](int64_t a, int64_t) { return -a; }}},
      {"Abs", {Kind::Unary, emitOp<tc::AbsOp>, [](double a, double) { return std::fabs(a); },
               [](int64_t a, int64_t) { return a < 0 ? -a : a; }}},
      {"Sign", {Kind::Unary, emitOp<tc::SignOp>, signOf,
                [](int64_t a, int64_t) -> int64_t { return (a > 0) - (a < 0); }}},
      {"Ceil", {Kind::Unary, emitOp<tc::CeilOp>, [](double a, double) { return std::ceil(a); }, nullptr}},
      {"Floor", {Kind::Unary, emitOp<tc::FloorOp>, [](double a, double) { return std::floor(a); }, nullptr}},
      {"Round", {Kind::Unary, emitOp<tc::RoundOp>, [](double a, double) { return std::nearbyint(a); }, nullptr}},
      {"Not", {Kind::Unary, emitOp<tc::NotOp>, nullptr, [](int64_t a, int64_t) -> int64_t { return !a; }}},
      {"Add", {Kind::Arith, emitOp<tc::AddOp>, [](double a, double b) { return a + b; },
               [](int64_t a, int64_t b) { return a + b; }}},
      {"Sub", {Kind::Arith, emitOp<tc::SubOp>, [](double a, double b) { return a - b; },
               [](int64_t a, int64_t b) { return a - b; }}},
      {"Mul", {Kind::Arith, emitOp<tc::MulOp>, [](double a, double b) { return a * b; },
               [](int64_t a, int64_t b) { return a * b; }}},
      {"Div", {Kind::Arith, emitOp<tc::DivOp>, fdiv, idiv}},
      {"Pow", {Kind::Arith, emitOp<tc::PowOp>, [](double a, double b) { return std::pow(a, b); }, nullptr}},
      {"Max", {Kind::Arith, emitOp<tc::MaxOp>, [](double a, double b) { return std::fmax(a, b); },
               [](int64_t a, int64_t b) { return a > b ? a : b; }}},
      {"Min", {Kind::Arith, emitOp<tc::MinOp>, [](double a, double b) { return std::fmin(a, b); },
               [](int64_t a, int64_t b) { return a < b ? a : b; }}},
      {"Sum", {Kind::Arith, emitOp<tc::AddOp>, [](double a, double b) { return a + b; },
               [](int64_t a, int64_t b) { return a + b; }}},
      {"Equal", {Kind::Compare, emitOp<tc::EqualOp>, [](double a, double b) -> double { return a == b; },
                 [](int64_t a, int64_t b) -> int64_t { return a == b; }}},
      {"Less", {Kind::Compare, emitOp<tc::LessOp>, [](double a, double b) -> double { return a < b; },
                [](int64_t a, int64_t b) -> int64_t { return a < b; }}},
      {"LessOrEqual", {Kind::Compare, emitOp<tc::LessEqualOp>, [](double a, double b) -> double { return a <= b; },
                       [](int64_t a, int64_t b) -> int64_t { return a <= b; }}},
      {"Greater", {Kind::Compare, emitOp<tc::GreaterOp>, [](double a, double b) -> double { return a > b; },
                   [](int64_t a, int64_t b) -> int64_t { return a > b; }}},
      {"GreaterOrEqual", {Kind::Compare, emitOp<tc::GreaterEqualOp>, [](double a, double b) -> double { return a >= b; },
                          [](int64_t a, int64_t b) -> int64_t { return a >= b; }}},
      {"And", {Kind::Logical, emitOp<tc::AndOp>, nullptr, [](int64_t a, int64_t b) -> int64_t { return a && b; }}},
      {"Or", {Kind::Logical, emitOp<tc::OrOp>, nullptr, [](int64_t a, int64_t b) -> int64_t { return a || b; }}},
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
    return failed(x) ? failure() : bind(ctx, rule->emit(ctx, *x));
  }
  auto operands = binaryOperands(ctx, 0, 1);
  return failed(operands) ? failure() : bind(ctx, rule->emit(ctx, *operands));
}

/// Max, Min, Sum, Mean with any number of inputs: a chain of binary ops.
LogicalResult trainc::frontend::convertVariadic(NodeContext &ctx) {
  bool mean = ctx.opType() == "Mean";
  const ElementwiseRule *rule = ruleFor(mean ? "Sum" : ctx.opType());
  if (ctx.numInputs() < 1)
    return ctx.error("expects at least one input");
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

/// Builds single-result tc ops for one node, stopping at the first failure
/// (each call after a failure returns failure too).
class OpChain {
public:
  explicit OpChain(NodeContext &ctx) : ctx(ctx) {}

  template <typename OpTy> FailureOr<Value> op(llvm::ArrayRef<FailureOr<Value>> operands) {
    SmallVector<Value> values;
    for (const FailureOr<Value> &v : operands) {
      if (failed(v))
        return failure();
      values.push_back(*v);
    }
    return emitOp<OpTy>(ctx, values);
  }

  /// A rank-0 constant of `like`'s element type.
  Value scalar(Value like, double value) {
    Type element = cast<RankedTensorType>(like.getType()).getElementType();
    Tensor t = Tensor::scalarReal(fromMlirType(element).value_or(DType::F32), value);
    return ctx.builder().create<tc::ConstantOp>(ctx.loc(), toAttribute(ctx.context(), t));
  }

private:
  NodeContext &ctx;
};

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
  return bind(ctx, b.op<tc::WhereOp>({inside, t, outside}));
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
  return bind(ctx, b.op<tc::DivOp>({b.op<tc::MulOp>({*x, c}), b.scalar(*x, 6.0)}));
}

} // namespace trainc::frontend
