//===- ScalarExpr.cpp - one element of a pointwise op, as C++ -------------===//

#include "codegen/ScalarExpr.h"

#include "codegen/IndexKernels.h"
#include "codegen/ProgramEmitter.h"

#include "ir/TcOps.h"

#include "llvm/ADT/TypeSwitch.h"

#include <optional>

using namespace mlir;
using namespace trainc;
using namespace trainc::codegen;

std::string trainc::codegen::splatLiteral(DenseElementsAttr value) {
  Type e = value.getElementType();
  if (e.isInteger(1))
    return value.getSplatValue<bool>() ? "true" : "false";
  if (auto i = dyn_cast<IntegerType>(e)) {
    int64_t v = value.getSplatValue<APInt>().getSExtValue();
    // INT64_MIN has no literal of its own: write it as an expression.
    if (v == INT64_MIN)
      return "(-INT64_C(9223372036854775807) - 1)";
    return (i.getWidth() == 64 ? "INT64_C(" : "int32_t(") + std::to_string(v) + ")";
  }
  // A 16-bit float constant is computed with as a float.
  return literal(value.getSplatValue<APFloat>().convertToDouble(), !e.isF64());
}

namespace {

/// What every element rule reads: the operands' expressions, the element
/// types and the function names to call.
struct Element {
  ArrayRef<std::string> a;
  bool isFloat, f32;
  /// The operands' value type (float for 16-bit floats).
  std::string t;
  Type outElem;
  StringRef index;

  /// f32 exp, log, pow, erf and tanh are the runtime's (generated.h: the
  /// same bits vectorized or not); the rest are exact in libm.
  std::string fn(StringRef name) const {
    if (f32 && llvm::is_contained({"exp", "log", "pow", "erf", "tanh"}, name))
      return ("trainc_" + name + "f").str();
    return (name + (f32 ? "f" : "")).str();
  }
  std::string call(StringRef name) const { return fn(name) + "(" + a[0] + ")"; }
};

using Rule = FailureOr<std::string>;

/// Comparison-based ops propagate NaN as PyTorch does: each test is written
/// so that a NaN operand selects the NaN (relu(-0) is -0, a tie of max/min
/// selects the first operand, as std::max/std::min in ATen).
std::optional<Rule> unaryRule(Operation *op, const Element &e) {
  ArrayRef<std::string> a = e.a;
  const std::string &t = e.t;
  return llvm::TypeSwitch<Operation *, std::optional<Rule>>(op)
      .Case([&](tc::NegOp) { return "-" + a[0]; })
      .Case([&](tc::AbsOp) {
        return e.isFloat ? e.fn("fabs") + "(" + a[0] + ")"
                         : "(" + a[0] + " < 0 ? -" + a[0] + " : " + a[0] + ")";
      })
      .Case([&](tc::ReluOp) { return "(" + a[0] + " < " + t + "(0) ? " + t + "(0) : " + a[0] + ")"; })
      .Case([&](tc::SigmoidOp) {
        return e.f32 ? "trainc::gen::sigmoid(" + a[0] + ")" : "1.0 / (1.0 + exp(-" + a[0] + "))";
      })
      .Case([&](tc::TanhOp) { return e.call("tanh"); })
      .Case([&](tc::ErfOp) { return e.call("erf"); })
      .Case([&](tc::ExpOp) { return e.call("exp"); })
      .Case([&](tc::LogOp) { return e.call("log"); })
      .Case([&](tc::SqrtOp) { return e.call("sqrt"); })
      .Case([&](tc::CeilOp) { return e.call("ceil"); })
      .Case([&](tc::FloorOp) { return e.call("floor"); })
      .Case([&](tc::ReciprocalOp) { return t + "(1) / " + a[0]; })
      .Case([&](tc::NotOp) { return "!" + a[0]; })
      // sign keeps NaN (both tests fail: a - a); round is rint under the
      // default rounding mode, halves to even as ONNX Round.
      .Case([&](tc::SignOp) {
        return e.isFloat ? "(" + a[0] + " > " + t + "(0) ? " + t + "(1) : " + a[0] + " < " + t +
                               "(0) ? " + t + "(-1) : " + a[0] + " - " + a[0] + ")"
                         : "(" + a[0] + " > 0 ? " + t + "(1) : " + a[0] + " < 0 ? " + t +
                               "(-1) : " + t + "(0))";
      })
      .Case([&](tc::RoundOp) { return e.call("rint"); })
      .Case([&](tc::GeluOp gelu) -> std::optional<Rule> {
        if (!e.f32)
          return Rule(op->emitError("codegen supports f32 gelu only"));
        return (gelu.getApproximate() == "tanh" ? "trainc::gen::geluTanh("
                                                : "trainc::gen::geluErf(") + a[0] + ")";
      })
      .Case([&](tc::LeakyReluOp leaky) { // NaN fails the test and is scaled: NaN
        return "(" + a[0] + " >= " + t + "(0) ? " + a[0] + " : " +
               literal(leaky.getAlpha().convertToFloat(), e.f32) + " * " + a[0] + ")";
      })
      .Case([&](tc::ClipOp clip) {
        // NaN fails both tests and passes through (torch.clamp).
        std::string x = a[0];
        if (auto lo = clip.getMin())
          x = "(" + x + " < " + literal(lo->convertToFloat(), e.f32) + " ? " +
              literal(lo->convertToFloat(), e.f32) + " : " + x + ")";
        if (auto hi = clip.getMax())
          x = "(" + x + " > " + literal(hi->convertToFloat(), e.f32) + " ? " +
              literal(hi->convertToFloat(), e.f32) + " : " + x + ")";
        return x;
      })
      .Case([&](tc::CastOp) {
        return e.outElem.isInteger(1) ? a[0] + " != 0"
                                      : "static_cast<" + cType(e.outElem) + ">(" + a[0] + ")";
      })
      .Default([](Operation *) { return std::nullopt; });
}

std::optional<Rule> binaryRule(Operation *op, const Element &e) {
  ArrayRef<std::string> a = e.a;
  // b when it wins or is NaN, else a (NaN included): torch.maximum/minimum.
  auto select = [&](std::string wins) {
    if (e.isFloat)
      wins += " || " + a[1] + " != " + a[1];
    return "(" + wins + " ? " + a[1] + " : " + a[0] + ")";
  };
  return llvm::TypeSwitch<Operation *, std::optional<Rule>>(op)
      .Case([&](tc::AddOp) { return a[0] + " + " + a[1]; })
      .Case([&](tc::SubOp) { return a[0] + " - " + a[1]; })
      .Case([&](tc::MulOp) { return a[0] + " * " + a[1]; })
      .Case([&](tc::DivOp) { return a[0] + " / " + a[1]; })
      .Case([&](tc::PowOp) { return e.fn("pow") + "(" + a[0] + ", " + a[1] + ")"; })
      .Case([&](tc::MaxOp) { return select(a[0] + " < " + a[1]); })
      .Case([&](tc::MinOp) { return select(a[1] + " < " + a[0]); })
      .Case([&](tc::EqualOp) { return a[0] + " == " + a[1]; })
      .Case([&](tc::LessOp) { return a[0] + " < " + a[1]; })
      .Case([&](tc::LessEqualOp) { return a[0] + " <= " + a[1]; })
      .Case([&](tc::GreaterOp) { return a[0] + " > " + a[1]; })
      .Case([&](tc::GreaterEqualOp) { return a[0] + " >= " + a[1]; })
      .Case([&](tc::AndOp) { return a[0] + " && " + a[1]; })
      .Case([&](tc::OrOp) { return a[0] + " || " + a[1]; })
      .Case([&](tc::WhereOp) { return a[0] + " ? " + a[1] + " : " + a[2]; })
      .Case([&](tc::ModOp mod) { return modExpr(a[0], a[1], e.isFloat, e.f32, mod.getFmod(), e.t); })
      .Default([](Operation *) { return std::nullopt; });
}

} // namespace

FailureOr<std::string> trainc::codegen::scalarExpression(Operation *op, ArrayRef<std::string> a,
                                                         StringRef index) {
  Type inElem = cast<ShapedType>(op->getOperand(0).getType()).getElementType();
  // f16 and bf16 elements are computed in float (loaded as float, rounded
  // only where stored or cast).
  bool isFloat = isa<FloatType>(inElem);
  Element e{a, isFloat, isFloat && !inElem.isF64(), valueType(inElem),
            cast<ShapedType>(op->getResult(0).getType()).getElementType(), index};
  if (isa<tc::ExpandOp>(op))
    return a[0]; // the operand is read broadcast to the group's shape
  if (auto dropout = dyn_cast<tc::DropoutOp>(op)) {
    // Each element redraws its keep decision from the step's key
    // (trainc::random), so the gradient's dropout of dy applies the
    // forward's mask. A multiplication by 0, not a select, drops an
    // element: NaN and infinity stay NaN, as in PyTorch's input * mask *
    // scale.
    float ratio = dropout.getRatio().convertToFloat();
    return a[0] + " * (trainc::random::dropoutKeeps(" + a[1] + ", " +
           std::to_string(dropout.getStream()) + "u, " + index.str() + ", " +
           literal(ratio, true) + ") ? " +
           literal(1.0 / (1.0 - static_cast<double>(ratio)), e.f32) + " : " + e.t + "(0))";
  }
  if (std::optional<Rule> rule = unaryRule(op, e))
    return *rule;
  if (std::optional<Rule> rule = binaryRule(op, e))
    return *rule;
  return op->emitError("codegen has no pointwise rule for ") << op->getName();
}
