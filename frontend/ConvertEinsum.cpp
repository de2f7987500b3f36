//===- ConvertEinsum.cpp - ONNX Einsum as transposes and a matmul ---------===//
//
// Einsum is decomposed at import into ops that have gradient rules: with two
// operands each letter is a batch letter (both inputs and the output), a
// contracted letter (both inputs, not the output) or a free letter of one
// input (that input and the output); a letter of one input only that the
// output lacks is summed out first. The operands are transposed to
// [batch, free, contracted] and [batch, contracted, free], reshaped to one
// 3-D batched tc.matmul, and the product is reshaped and transposed to the
// output order. One operand is a tc.reduce_sum and a tc.transpose.
// Ellipses, repeated letters within one term (diagonals) and more than two
// operands are refused, naming the node.
//
//===----------------------------------------------------------------------===//

#include "frontend/Importer.h"

#include "ir/ShapeLogic.h"
#include "ir/TcOps.h"

#include <cctype>

using namespace mlir;
using namespace trainc;
using namespace trainc::frontend;

namespace {

struct Equation {
  SmallVector<std::string> inputs;
  std::string output;
};

/// Parses an ONNX Einsum equation: letters are case-sensitive, spaces are
/// ignored, "->" and the output are optional (implicit: the letters that
/// occur once, in alphabetical order).
FailureOr<Equation> parseEquation(NodeContext &ctx, llvm::StringRef text) {
  std::string eq;
  for (char c : text)
    if (c != ' ')
      eq.push_back(c);
  Equation result;
  llvm::StringRef rest(eq);
  auto [lhs, rhs] = rest.split("->");
  bool explicitOutput = rest.contains("->");
  SmallVector<llvm::StringRef> terms;
  lhs.split(terms, ',', /*MaxSplit=*/-1, /*KeepEmpty=*/true);
  auto checkTerm = [&](llvm::StringRef term) -> LogicalResult {
    for (auto [i, c] : llvm::enumerate(term))
      if (c != '.' && term.find(c, i + 1) != llvm::StringRef::npos)
        return ctx.error("equation '" + text + "': letter '" + llvm::Twine(c) +
                         "' repeats within term '" + term +
                         "' (diagonals are not supported)");
    if (term.contains("..."))
      return ctx.error("equation '" + text + "': ellipsis (...) is not supported");
    for (char c : term)
      if (!std::isalpha(static_cast<unsigned char>(c)))
        return ctx.error("equation '" + text + "': '" + llvm::Twine(c) +
                         "' is not a letter");
    return success();
  };
  for (llvm::StringRef term : terms) {
    if (failed(checkTerm(term)))
      return failure();
    result.inputs.push_back(term.str());
  }
  if (explicitOutput) {
    if (rhs.contains("->"))
      return ctx.error("equation '" + text + "' has two '->'");
    if (failed(checkTerm(rhs)))
      return failure();
    result.output = rhs.str();
  } else {
    std::string all;
    for (const std::string &t : result.inputs)
      all += t;
    for (char c : all)
      if (llvm::count(all, c) == 1)
        result.output.push_back(c);
    llvm::sort(result.output);
  }
  for (char c : result.output)
    if (llvm::none_of(result.inputs, [&](const std::string &t) {
          return t.find(c) != std::string::npos;
        }))
      return ctx.error("equation '" + text + "': output letter '" + llvm::Twine(c) +
                       "' is in no input");
  return result;
}

FailureOr<Value> transposed(NodeContext &ctx, Value v, ArrayRef<int64_t> perm) {
  bool identity = true;
  for (auto [i, p] : llvm::enumerate(perm))
    identity &= static_cast<int64_t>(i) == p;
  if (identity)
    return v;
  FailureOr<Operation *> op = ctx.create<tc::TransposeOp>(v, {ctx.namedArray("perm", perm)});
  return failed(op) ? FailureOr<Value>(failure()) : (*op)->getResult(0);
}

FailureOr<Value> reshaped(NodeContext &ctx, Value v, ArrayRef<int64_t> shape) {
  if (cast<RankedTensorType>(v.getType()).getShape() == shape)
    return v;
  FailureOr<Operation *> op = ctx.create<tc::ReshapeOp>(v, {ctx.namedArray("shape", shape)});
  return failed(op) ? FailureOr<Value>(failure()) : (*op)->getResult(0);
}

/// Sums `term`'s letters that `keep` lacks out of `v` and drops them from
/// `term`.
FailureOr<Value> sumOut(NodeContext &ctx, Value v, std::string &term,
                        llvm::function_ref<bool(char)> keep) {
  SmallVector<int64_t> axes;
  std::string kept;
  for (auto [i, c] : llvm::enumerate(term)) {
    if (keep(c))
      kept.push_back(c);
    else
      axes.push_back(static_cast<int64_t>(i));
  }
  if (axes.empty())
    return v;
  term = kept;
  FailureOr<Operation *> op = ctx.create<tc::ReduceSumOp>(
      v, {ctx.namedArray("axes", axes), ctx.namedBool("keepdims", false)});
  return failed(op) ? FailureOr<Value>(failure()) : (*op)->getResult(0);
}

/// The permutation that takes `from`'s letter order to `to`'s.
SmallVector<int64_t> permutation(llvm::StringRef from, llvm::StringRef to) {
  SmallVector<int64_t> perm;
  for (char c : to)
    perm.push_back(static_cast<int64_t>(from.find(c)));
  return perm;
}

bool has(llvm::StringRef s, char c) { return s.contains(c); }

} // namespace

LogicalResult trainc::frontend::convertEinsum(NodeContext &ctx) {
  std::string text = ctx.attrString("equation", "");
  if (text.empty())
    return ctx.error("needs an 'equation' attribute");
  FailureOr<Equation> eq = parseEquation(ctx, text);
  if (failed(eq))
    return failure();
  size_t n = eq->inputs.size();
  if (n != ctx.numInputs())
    return ctx.error("equation '" + text + "' has " + llvm::Twine(n) + " term(s) for " +
                     llvm::Twine(ctx.numInputs()) + " input(s)");
  if (n != 1 && n != 2)
    return ctx.error("equation '" + text + "': only one or two operands are supported, got " +
                     llvm::Twine(n));
  const std::string &out = eq->output;

  // Letter sizes, checked to agree across inputs.
  llvm::DenseMap<char, int64_t> size;
  SmallVector<Value> values;
  for (size_t k = 0; k < n; ++k) {
    FailureOr<Value> v = ctx.input(k);
    if (failed(v))
      return failure();
    ArrayRef<int64_t> shape = cast<RankedTensorType>(v->getType()).getShape();
    if (shape.size() != eq->inputs[k].size())
      return ctx.error("equation '" + text + "': term '" + eq->inputs[k] + "' has " +
                       llvm::Twine(eq->inputs[k].size()) + " letters for input " +
                       llvm::Twine(k) + " of rank " + llvm::Twine(shape.size()));
    for (auto [c, d] : llvm::zip(eq->inputs[k], shape)) {
      auto [it, inserted] = size.try_emplace(c, d);
      if (!inserted && it->second != d)
        return ctx.error("equation '" + text + "': letter '" + llvm::Twine(c) +
                         "' has sizes " + llvm::Twine(it->second) + " and " + llvm::Twine(d));
    }
    values.push_back(*v);
  }
  if (n == 2 && cast<RankedTensorType>(values[0].getType()).getElementType() !=
                    cast<RankedTensorType>(values[1].getType()).getElementType())
    return ctx.error("operands have different element types");
  auto sizesOf = [&](llvm::StringRef letters) {
    SmallVector<int64_t> shape;
    for (char c : letters)
      shape.push_back(size[c]);
    return shape;
  };
  auto product = [&](llvm::StringRef letters) {
    int64_t p = 1;
    for (char c : letters)
      p *= size[c];
    return p;
  };

  if (n == 1) {
    std::string term = eq->inputs[0];
    FailureOr<Value> v = sumOut(ctx, values[0], term, [&](char c) { return has(out, c); });
    if (failed(v))
      return failure();
    FailureOr<Value> y = transposed(ctx, *v, permutation(term, out));
    if (failed(y))
      return failure();
    ctx.setOutput(0, *y);
    return success();
  }

  std::string a = eq->inputs[0], b = eq->inputs[1];
  // A letter of one input only that the output lacks is summed out first.
  FailureOr<Value> lhs = sumOut(ctx, values[0], a, [&](char c) { return has(out, c) || has(b, c); });
  if (failed(lhs))
    return failure();
  FailureOr<Value> rhs = sumOut(ctx, values[1], b, [&](char c) { return has(out, c) || has(a, c); });
  if (failed(rhs))
    return failure();
  std::string batch, contracted, freeA, freeB;
  for (char c : a) {
    if (has(b, c))
      (has(out, c) ? batch : contracted).push_back(c);
    else
      freeA.push_back(c);
  }
  for (char c : b)
    if (!has(a, c))
      freeB.push_back(c);

  // [batch, freeA, contracted] x [batch, contracted, freeB] as one 3-D matmul.
  std::string lhsOrder = batch + freeA + contracted, rhsOrder = batch + contracted + freeB;
  int64_t nb = product(batch), m = product(freeA), kk = product(contracted), nn = product(freeB);
  FailureOr<Value> l = transposed(ctx, *lhs, permutation(a, lhsOrder));
  if (failed(l) || failed(l = reshaped(ctx, *l, {nb, m, kk})))
    return failure();
  FailureOr<Value> r = transposed(ctx, *rhs, permutation(b, rhsOrder));
  if (failed(r) || failed(r = reshaped(ctx, *r, {nb, kk, nn})))
    return failure();
  FailureOr<Operation *> mm = ctx.create<tc::MatMulOp>(ValueRange{*l, *r});
  if (failed(mm))
    return failure();
  std::string productOrder = batch + freeA + freeB;
  FailureOr<Value> y = reshaped(ctx, (*mm)->getResult(0), sizesOf(productOrder));
  if (failed(y) || failed(y = transposed(ctx, *y, permutation(productOrder, out))))
    return failure();
  ctx.setOutput(0, *y);
  return success();
}
