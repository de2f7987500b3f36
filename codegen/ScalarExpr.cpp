//===- ScalarExpr.cpp - one element of a pointwise op, as C++ -------------===//

#include "codegen/ScalarExpr.h"

#include "codegen/IndexKernels.h"
#include "codegen/ProgramEmitter.h"

#include "ir/ScalarSemantics.h"
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

/// A C++ expression and the precedence of its outermost operator (16: a
/// name, literal, call or parenthesized expression; 3: a conditional).
struct CExpr {
  std::string text;
  int precedence = 16;
};

/// ScalarSemantics' algebra of C++ expressions in the element type of `e`:
/// parentheses only where C++'s precedence needs them.
struct CAlgebra {
  using Value = CExpr;
  const Element &e;

  static std::string operand(const CExpr &x, int precedence) {
    return x.precedence < precedence ? "(" + x.text + ")" : x.text;
  }
  bool isFloat() const { return e.isFloat; }
  CExpr constant(int v) const { return {e.t + "(" + std::to_string(v) + ")"}; }
  // A unary operand is parenthesized unless it is a name, literal or call
  // ("-" + "-x" would read as a decrement).
  CExpr neg(const CExpr &x) const { return {"-" + operand(x, 16), 15}; }
  CExpr logicalNot(const CExpr &x) const { return {"!" + operand(x, 16), 15}; }
  /// C++'s spelling and precedence of a binary operator.
  static std::pair<const char *, int> cOperator(tc::ScalarBinary op) {
    using B = tc::ScalarBinary;
    switch (op) {
    case B::Add: return {"+", 12};
    case B::Sub: return {"-", 12};
    case B::Mul: return {"*", 13};
    case B::Div: return {"/", 13};
    case B::Less: return {"<", 10};
    case B::LessEqual: return {"<=", 10};
    case B::Greater: return {">", 10};
    case B::GreaterEqual: return {">=", 10};
    case B::Equal: return {"==", 9};
    case B::NotEqual: return {"!=", 9};
    case B::And: return {"&&", 5};
    case B::Or: return {"||", 4};
    }
    llvm_unreachable("a binary operator without a spelling");
  }
  CExpr binary(tc::ScalarBinary op, const CExpr &x, const CExpr &y) const {
    auto [symbol, precedence] = cOperator(op);
    // Left-associative: a right operand of the same precedence needs them.
    return {operand(x, precedence) + " " + symbol + " " + operand(y, precedence + 1),
            precedence};
  }
  /// libm's name of a function (without the f32 suffix).
  static const char *cFunction(tc::ScalarFn f) {
    using F = tc::ScalarFn;
    switch (f) {
    case F::Exp: return "exp";
    case F::Log: return "log";
    case F::Sqrt: return "sqrt";
    case F::Tanh: return "tanh";
    case F::Erf: return "erf";
    case F::Ceil: return "ceil";
    case F::Floor: return "floor";
    case F::Rint: return "rint";
    case F::Fabs: return "fabs";
    case F::Pow: return "pow";
    case F::Sin: return "sin";
    case F::Cos: return "cos";
    case F::Tan: return "tan";
    case F::Atan: return "atan";
    case F::Asin: return "asin";
    case F::Acos: return "acos";
    case F::Sinh: return "sinh";
    case F::Cosh: return "cosh";
    case F::Sigmoid: break; // composed below
    }
    llvm_unreachable("sigmoid has no libm function");
  }
  CExpr fn(tc::ScalarFn f, const CExpr &x) const {
    using F = tc::ScalarFn;
    if (f == F::Sigmoid)
      return e.f32 ? CExpr{"trainc::gen::sigmoid(" + x.text + ")"}
                   : binary(tc::ScalarBinary::Div, {"1.0"},
                            binary(tc::ScalarBinary::Add, {"1.0"}, fn(F::Exp, neg(x))));
    return {e.fn(cFunction(f)) + "(" + x.text + ")"};
  }
  CExpr fn(tc::ScalarFn f, const CExpr &x, const CExpr &y) const {
    return {e.fn(cFunction(f)) + "(" + x.text + ", " + y.text + ")"};
  }
  CExpr select(const CExpr &c, const CExpr &x, const CExpr &y) const {
    return {operand(c, 4) + " ? " + x.text + " : " + operand(y, 3), 3};
  }
};

using Rule = FailureOr<std::string>;

/// The ops whose element needs an attribute; the others' are their
/// ScalarSemantics.
std::optional<Rule> attributeRule(Operation *op, const Element &e) {
  ArrayRef<std::string> a = e.a;
  const std::string &t = e.t;
  return llvm::TypeSwitch<Operation *, std::optional<Rule>>(op)
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
  CAlgebra algebra{e};
  SmallVector<CExpr> operands;
  for (const std::string &text : a)
    operands.push_back({text, StringRef(text).starts_with("-") ? 15 : 16});
  if (std::optional<CExpr> element = tc::scalarSemantics(op, algebra, ArrayRef(operands)))
    return element->precedence <= 3 ? "(" + element->text + ")" : element->text;
  if (std::optional<Rule> rule = attributeRule(op, e))
    return *rule;
  return op->emitError("codegen has no pointwise rule for ") << op->getName();
}
