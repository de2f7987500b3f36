//===- ScalarExpr.cpp - one element of a pointwise op, as C++ -------------===//

#include "codegen/ScalarExpr.h"

#include "codegen/IndexKernels.h"
#include "codegen/ProgramEmitter.h"

#include "ir/TcOps.h"

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

FailureOr<std::string> trainc::codegen::scalarExpression(Operation *op, ArrayRef<std::string> a,
                                                         StringRef index) {
  Type inElem = cast<ShapedType>(op->getOperand(0).getType()).getElementType();
  Type outElem = cast<ShapedType>(op->getResult(0).getType()).getElementType();
  bool isFloat = isa<FloatType>(inElem);
  // f16 and bf16 elements are computed in float (loaded as float, rounded
  // only where stored or cast).
  bool f32 = isFloat && !inElem.isF64();
  std::string t = valueType(inElem);
  // f32 exp, log, pow, erf and tanh are the runtime's (generated.h: the
  // same bits vectorized or not); the rest are exact in libm.
  auto fn = [&](StringRef name) {
    if (f32 && llvm::is_contained({"exp", "log", "pow", "erf", "tanh"}, name))
      return ("trainc_" + name + "f").str();
    return (name + (f32 ? "f" : "")).str();
  };
  StringRef mnemonic = op->getName().stripDialect();

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
           literal(1.0 / (1.0 - static_cast<double>(ratio)), f32) + " : " + t + "(0))";
  }
  if (mnemonic == "neg") return "-" + a[0];
  if (mnemonic == "abs")
    return isFloat ? fn("fabs") + "(" + a[0] + ")"
                   : "(" + a[0] + " < 0 ? -" + a[0] + " : " + a[0] + ")";
  // Comparison-based ops propagate NaN as PyTorch does: each test is
  // written so that a NaN operand selects the NaN (relu(-0) is -0, a tie of
  // max/min selects the first operand, as std::max/std::min in ATen).
  if (mnemonic == "relu")
    return "(" + a[0] + " < " + t + "(0) ? " + t + "(0) : " + a[0] + ")";
  if (mnemonic == "sigmoid")
    return f32 ? "trainc::gen::sigmoid(" + a[0] + ")" : "1.0 / (1.0 + exp(-" + a[0] + "))";
  if (mnemonic == "tanh" || mnemonic == "erf" || mnemonic == "exp" || mnemonic == "log" ||
      mnemonic == "sqrt" || mnemonic == "ceil" || mnemonic == "floor")
    return fn(mnemonic) + "(" + a[0] + ")";
  if (mnemonic == "reciprocal") return t + "(1) / " + a[0];
  if (mnemonic == "not") return "!" + a[0];
  // sign keeps NaN (both tests fail: a - a); round is rint under the default
  // rounding mode, halves to even as ONNX Round.
  if (mnemonic == "sign")
    return isFloat ? "(" + a[0] + " > " + t + "(0) ? " + t + "(1) : " + a[0] + " < " + t +
                         "(0) ? " + t + "(-1) : " + a[0] + " - " + a[0] + ")"
                   : "(" + a[0] + " > 0 ? " + t + "(1) : " + a[0] + " < 0 ? " + t + "(-1) : " +
                         t + "(0))";
  if (mnemonic == "round") return fn("rint") + "(" + a[0] + ")";
  if (auto gelu = dyn_cast<tc::GeluOp>(op)) {
    if (!f32)
      return op->emitError("codegen supports f32 gelu only");
    return (gelu.getApproximate() == "tanh" ? "trainc::gen::geluTanh(" : "trainc::gen::geluErf(") +
           a[0] + ")";
  }
  if (auto leaky = dyn_cast<tc::LeakyReluOp>(op)) // NaN fails the test and is scaled: NaN
    return "(" + a[0] + " >= " + t + "(0) ? " + a[0] + " : " +
           literal(leaky.getAlpha().convertToFloat(), f32) + " * " + a[0] + ")";
  if (auto clip = dyn_cast<tc::ClipOp>(op)) {
    // NaN fails both tests and passes through (torch.clamp).
    std::string e = a[0];
    if (auto lo = clip.getMin())
      e = "(" + e + " < " + literal(lo->convertToFloat(), f32) + " ? " +
          literal(lo->convertToFloat(), f32) + " : " + e + ")";
    if (auto hi = clip.getMax())
      e = "(" + e + " > " + literal(hi->convertToFloat(), f32) + " ? " +
          literal(hi->convertToFloat(), f32) + " : " + e + ")";
    return e;
  }
  if (mnemonic == "add") return a[0] + " + " + a[1];
  if (mnemonic == "sub") return a[0] + " - " + a[1];
  if (mnemonic == "mul") return a[0] + " * " + a[1];
  if (mnemonic == "div") return a[0] + " / " + a[1];
  if (mnemonic == "pow") return fn("pow") + "(" + a[0] + ", " + a[1] + ")";
  if (mnemonic == "max" || mnemonic == "min") {
    // b when it wins or is NaN, else a (NaN included): torch.maximum/minimum.
    std::string wins = mnemonic == "max" ? a[0] + " < " + a[1] : a[1] + " < " + a[0];
    if (isFloat)
      wins += " || " + a[1] + " != " + a[1];
    return "(" + wins + " ? " + a[1] + " : " + a[0] + ")";
  }
  if (mnemonic == "equal") return a[0] + " == " + a[1];
  if (mnemonic == "less") return a[0] + " < " + a[1];
  if (mnemonic == "less_equal") return a[0] + " <= " + a[1];
  if (mnemonic == "greater") return a[0] + " > " + a[1];
  if (mnemonic == "greater_equal") return a[0] + " >= " + a[1];
  if (mnemonic == "and") return a[0] + " && " + a[1];
  if (mnemonic == "or") return a[0] + " || " + a[1];
  if (mnemonic == "where") return a[0] + " ? " + a[1] + " : " + a[2];
  if (auto mod = dyn_cast<tc::ModOp>(op))
    return modExpr(a[0], a[1], isFloat, f32, mod.getFmod(), t);
  if (mnemonic == "cast")
    return outElem.isInteger(1) ? a[0] + " != 0"
                                : "static_cast<" + cType(outElem) + ">(" + a[0] + ")";
  return op->emitError("codegen has no pointwise rule for ") << op->getName();
}
