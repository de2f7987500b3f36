//===- KernelGroups.cpp - generated element kernels -----------------------===//
//
// Pointwise ops and tc.fused groups, training-mode dropout and the fused
// optimizer updates: each becomes one generated kernel (KernelWriter) whose
// element body the two targets share.
//
//===----------------------------------------------------------------------===//

#include "codegen/Escape.h"
#include "codegen/IndexKernels.h"
#include "codegen/ProgramEmitter.h"

using namespace mlir;
using namespace trainc;
using namespace trainc::codegen;

/// Training-mode dropout: each element redraws its keep decision from the
/// step's key (trainc::random), so the gradient's dropout of dy applies the
/// forward's mask.
LogicalResult ProgramEmitter::emitDropout(tc::DropoutOp op) {
  Type elem = cast<ShapedType>(op.getType()).getElementType();
  bool f32 = elem.isF32();
  float ratio = op.getRatio().convertToFloat();
  std::string t = cType(elem);
  // A multiplication by 0, not a select, drops an element: NaN and
  // infinity stay NaN, as in PyTorch's input * mask * scale.
  std::string code = "  out[i] = in[i] * (trainc::random::dropoutKeeps(key, " +
                     std::to_string(op.getStream()) + "u, i, " + literal(ratio, true) +
                     ") ? " + literal(1.0 / (1.0 - static_cast<double>(ratio)), f32) +
                     " : " + t + "(0));\n";
  std::vector<std::string> comment = {
      opComment(op), "keeps an element with probability 1 - " + literal(ratio, true) +
                         " (stream " + std::to_string(op.getStream()) + ")"};
  std::string name = kernels.addKernel(
      "dropout", comment, {{t, "in", false}, {"int64_t", "key", false}, {t, "out", true}},
      countOf(op.getResult()), code);
  call(name + "(ctx, " + ptr(op.getInput()) + ", " + ptr(op.getKey()) + ", " +
       ptr(op.getResult()) + ")");
  return success();
}

/// A fused optimizer update: one kernel reads the parameter, its gradient
/// and its state once and writes their next values (in place when planned
/// so; the body reads every element before it writes it).
LogicalResult ProgramEmitter::emitUpdate(Operation *op) {
  bool sgd = isa<tc::SgdUpdateOp>(op);
  bool decoupled = !sgd && cast<tc::AdamUpdateOp>(op).getDecoupled();
  std::vector<std::string> tensors =
      sgd ? std::vector<std::string>{"param", "grad", "buf"}
          : std::vector<std::string>{"param", "grad", "m", "v"};
  std::vector<std::string> scalars =
      sgd ? std::vector<std::string>{"lr", "momentum", "wd"}
          : std::vector<std::string>{"lr",  "beta1", "beta2", "omb1",   "omb2",
                                     "eps", "wd",    "step",  "bc2sqrt"};
  if (op->getNumOperands() > tensors.size() + scalars.size())
    scalars.push_back("scale");
  std::vector<KernelParam> kparams;
  for (const std::string &t : tensors)
    kparams.push_back({"float", t, false});
  for (const std::string &h : scalars)
    kparams.push_back({"float", h, false});
  std::vector<std::string> outs = sgd ? std::vector<std::string>{"param_out", "buf_out"}
                                      : std::vector<std::string>{"param_out", "m_out", "v_out"};
  for (const std::string &o : outs)
    kparams.push_back({"float", o, true});
  std::string g = scalars.back() == "scale" ? "grad[i] * scale[0]" : "grad[i]";
  std::string code;
  if (sgd) {
    bool nesterov = cast<tc::SgdUpdateOp>(op).getNesterov();
    code = "  const float p = param[i];\n"
           "  const float d = " + g + " + wd[0] * p;\n"
           "  const float b = momentum[0] * buf[i] + d;\n"
           "  param_out[i] = p - lr[0] * " + (nesterov ? "(d + momentum[0] * b)" : "b") + ";\n"
           "  buf_out[i] = b;\n";
  } else {
    // PyTorch's order (torch.optim.Adam, _single_tensor_adam): omb1/omb2
    // are 1 - beta1/2, step is lr / bias_correction1 and bc2sqrt is
    // sqrt(bias_correction2), each computed in double by the trainer.
    code = std::string("  float p = param[i], g = ") + g + ";\n" +
           (decoupled ? "  p = p * (1.0f - lr[0] * wd[0]);\n"
                      : "  (void)lr; // in step\n  g = g + wd[0] * p;\n") +
           "  const float m1 = beta1[0] * m[i] + omb1[0] * g;\n"
           "  const float v1 = beta2[0] * v[i] + (omb2[0] * g) * g;\n"
           "  param_out[i] = p - (step[0] * m1) / (sqrtf(v1) / bc2sqrt[0] + eps[0]);\n"
           "  m_out[i] = m1;\n"
           "  v_out[i] = v1;\n";
  }
  std::vector<std::string> comment = {opComment(op)};
  bool anyInPlace = llvm::any_of(op->getResults(), [&](Value r) { return inPlace.contains(r); });
  if (anyInPlace)
    comment.push_back("in place: the results overwrite the parameter and its state");
  std::string name = kernels.addKernel(
      sgd ? "sgd_update" : (decoupled ? "adamw_update" : "adam_update"), comment, kparams,
      countOf(op->getResult(0)), code, /*mayAlias=*/true);
  std::string args = "ctx";
  for (Value v : op->getOperands())
    args += ", " + ptr(v);
  for (Value r : op->getResults())
    args += ", " + ptr(r);
  call(name + "(" + args + ")");
  return success();
}

LogicalResult ProgramEmitter::emitPointwise(Operation *op) {
  Value result = op->getResult(0);
  ArrayRef<int64_t> out = shapeOf(result);
  Type outElem = cast<ShapedType>(result.getType()).getElementType();
  bool needsCoords = false;
  for (Value v : op->getOperands())
    needsCoords |= shapeOf(v) != out && countOf(v) != 1;

  std::vector<KernelParam> kparams;
  std::string code;
  if (needsCoords) {
    SmallVector<bool> used(out.size(), false);
    for (Value v : op->getOperands())
      if (shapeOf(v) != out && countOf(v) != 1)
        for (auto [d, stride] : llvm::enumerate(broadcastStrides(shapeOf(v), out)))
          used[d] = used[d] || stride != 0;
    code += decomposeIndex(out, "i", "c", "  ", used);
  }
  std::vector<std::string> a;
  for (auto [k, v] : llvm::enumerate(op->getOperands())) {
    std::string name = "in" + std::to_string(k);
    kparams.push_back({cType(v.getType()), name, false});
    std::string index = shapeOf(v) == out ? "i"
                        : countOf(v) == 1  ? "0"
                                           : linearIndex(broadcastStrides(shapeOf(v), out), 0, "c");
    code += "  const " + cType(v.getType()) + " a" + std::to_string(k) + " = " + name + "[" +
            index + "];\n";
    a.push_back("a" + std::to_string(k));
  }
  kparams.push_back({cType(result.getType()), "out", true});

  Type inElem = cast<ShapedType>(op->getOperand(0).getType()).getElementType();
  bool f32 = inElem.isF32();
  std::string t = cType(inElem);
  auto fn = [&](StringRef name) { return (name + (f32 ? "f" : "")).str(); };
  std::string expr;
  StringRef mnemonic = op->getName().stripDialect();
  if (mnemonic == "neg") expr = "-" + a[0];
  else if (mnemonic == "abs") expr = isa<FloatType>(inElem) ? fn("fabs") + "(" + a[0] + ")"
                                                            : "(" + a[0] + " < 0 ? -" + a[0] + " : " + a[0] + ")";
  // Comparison-based ops propagate NaN as PyTorch does: each test is
  // written so that a NaN operand selects the NaN (relu(-0) is -0, a tie of
  // max/min selects the first operand, as std::max/std::min in ATen).
  else if (mnemonic == "relu") expr = "(" + a[0] + " < " + t + "(0) ? " + t + "(0) : " + a[0] + ")";
  else if (mnemonic == "sigmoid") expr = f32 ? "trainc::gen::sigmoid(" + a[0] + ")"
                                             : "1.0 / (1.0 + exp(-" + a[0] + "))";
  else if (mnemonic == "tanh" || mnemonic == "erf" || mnemonic == "exp" ||
           mnemonic == "log" || mnemonic == "sqrt")
    expr = fn(mnemonic) + "(" + a[0] + ")";
  else if (mnemonic == "reciprocal") expr = t + "(1) / " + a[0];
  else if (mnemonic == "not") expr = "!" + a[0];
  // sign keeps NaN (both tests fail: a - a); round is rint under the default
  // rounding mode, halves to even as ONNX Round.
  else if (mnemonic == "sign")
    expr = isa<FloatType>(inElem)
               ? "(" + a[0] + " > " + t + "(0) ? " + t + "(1) : " + a[0] + " < " + t + "(0) ? " + t +
                     "(-1) : " + a[0] + " - " + a[0] + ")"
               : "(" + a[0] + " > 0 ? " + t + "(1) : " + a[0] + " < 0 ? " + t + "(-1) : " + t + "(0))";
  else if (mnemonic == "ceil" || mnemonic == "floor")
    expr = fn(mnemonic) + "(" + a[0] + ")";
  else if (mnemonic == "round") expr = fn("rint") + "(" + a[0] + ")";
  else if (auto gelu = dyn_cast<tc::GeluOp>(op)) {
    if (!f32)
      return op->emitError("codegen supports f32 gelu only");
    expr = (gelu.getApproximate() == "tanh" ? "trainc::gen::geluTanh(" : "trainc::gen::geluErf(") +
           a[0] + ")";
  } else if (auto leaky = dyn_cast<tc::LeakyReluOp>(op)) {
    // NaN fails the test and is scaled: NaN.
    expr = "(" + a[0] + " >= " + t + "(0) ? " + a[0] + " : " +
           literal(leaky.getAlpha().convertToFloat(), f32) + " * " + a[0] + ")";
  } else if (auto clip = dyn_cast<tc::ClipOp>(op)) {
    // NaN fails both tests and passes through (torch.clamp).
    expr = a[0];
    if (auto lo = clip.getMin())
      expr = "(" + expr + " < " + literal(lo->convertToFloat(), f32) + " ? " +
             literal(lo->convertToFloat(), f32) + " : " + expr + ")";
    if (auto hi = clip.getMax())
      expr = "(" + expr + " > " + literal(hi->convertToFloat(), f32) + " ? " +
             literal(hi->convertToFloat(), f32) + " : " + expr + ")";
  } else if (mnemonic == "add") expr = a[0] + " + " + a[1];
  else if (mnemonic == "sub") expr = a[0] + " - " + a[1];
  else if (mnemonic == "mul") expr = a[0] + " * " + a[1];
  else if (mnemonic == "div") expr = a[0] + " / " + a[1];
  else if (mnemonic == "pow") expr = fn("pow") + "(" + a[0] + ", " + a[1] + ")";
  else if (mnemonic == "max" || mnemonic == "min") {
    // b when it wins or is NaN, else a (NaN included): torch.maximum/minimum.
    std::string wins = mnemonic == "max" ? a[0] + " < " + a[1] : a[1] + " < " + a[0];
    if (isa<FloatType>(inElem))
      wins += " || " + a[1] + " != " + a[1];
    expr = "(" + wins + " ? " + a[1] + " : " + a[0] + ")";
  }
  else if (mnemonic == "equal") expr = a[0] + " == " + a[1];
  else if (mnemonic == "less") expr = a[0] + " < " + a[1];
  else if (mnemonic == "less_equal") expr = a[0] + " <= " + a[1];
  else if (mnemonic == "greater") expr = a[0] + " > " + a[1];
  else if (mnemonic == "greater_equal") expr = a[0] + " >= " + a[1];
  else if (mnemonic == "and") expr = a[0] + " && " + a[1];
  else if (mnemonic == "or") expr = a[0] + " || " + a[1];
  else if (mnemonic == "where") expr = a[0] + " ? " + a[1] + " : " + a[2];
  else if (auto mod = dyn_cast<tc::ModOp>(op))
    expr = modExpr(a[0], a[1], isa<FloatType>(inElem), f32, mod.getFmod(), t);
  else if (mnemonic == "cast")
    expr = outElem.isInteger(1) ? a[0] + " != 0" : "static_cast<" + cType(outElem) + ">(" + a[0] + ")";
  else
    return op->emitError("codegen has no pointwise rule for ") << op->getName();
  code += "  out[i] = " + expr + ";\n";

  std::vector<std::string> comment = {opComment(op)};
  std::string name = kernels.addKernel(mnemonic, comment, kparams, countOf(result), code);
  std::string args = "ctx";
  for (Value v : op->getOperands())
    args += ", " + ptr(v);
  call(name + "(" + args + ", " + ptr(result) + ")");
  return success();
}

