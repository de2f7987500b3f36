//===- ConvertRecurrent.cpp - RNN, GRU and LSTM as an unrolled time loop --===//
//
// ONNX's recurrent ops become tc ops at import, one time step after another,
// as cuDNN and PyTorch's CPU path compute them:
//
//   * the input projection of every time step in one GEMM up front,
//     X [T*B, I] x W^T plus both biases (where they add outside a gate);
//   * per step, the recurrent GEMM h x R^T with the step's projection as its
//     C operand, the gates as slices of it, and the cell's pointwise ops,
//     which the fusion pass makes one kernel;
//   * Y as the concatenation of the steps' hidden states.
//
// Autodiff then gives the backward through time from the values the forward
// saved (the gates' activations), and the gradients of W and R are the sums
// of the steps' GEMMs. The loop is unrolled because the sequence length is
// static once the model is imported; kMaxUnrolledSteps bounds the program a
// node can become.
//
//===----------------------------------------------------------------------===//

#include "frontend/OpChain.h"

#include "ir/ShapeLogic.h"

#include "llvm/ADT/StringExtras.h"

#include <optional>

using namespace mlir;
using namespace trainc;
using namespace trainc::frontend;

namespace {

/// Most cells (time steps times directions) one node unrolls into.
constexpr int64_t kMaxUnrolledSteps = 4096;

enum class Cell { Rnn, Gru, Lstm };

/// The activations the recurrent ops name that exporters emit (PyTorch:
/// Sigmoid, Tanh, and Relu for nn.RNN(nonlinearity='relu')).
enum class Activation { Sigmoid, Tanh, Relu };

struct Spec {
  Cell cell = Cell::Lstm;
  /// Gates per cell: 1 (RNN), 3 (GRU: z, r, h), 4 (LSTM: i, o, f, c).
  int64_t gates = 4;
  int64_t steps = 0, batch = 0, inputSize = 0, hidden = 0, directions = 1;
  /// direction = "reverse" (one direction, walked from the last step).
  bool reverse = false;
  /// layout = 1: X [B, T, I], Y [B, T, D, H], states [B, D, H].
  bool batchFirst = false;
  std::optional<float> clip;
  bool linearBeforeReset = false;
  /// Per direction, the cell's functions in ONNX's order (f; f, g; f, g, h).
  SmallVector<SmallVector<Activation, 3>, 2> activations;
};

/// A direction's weights, prepared once for all its steps.
struct DirectionWeights {
  /// [T, B, G*H] (or [B, T, G*H] batch first): X W^T + the biases outside
  /// the reset gate.
  Value projection;
  /// [G*H, H] (for GRU without linear_before_reset: its z and r rows).
  Value recurrent;
  /// GRU without linear_before_reset: R's h rows, [H, H].
  Value recurrentH;
  /// GRU with linear_before_reset: the h gate's recurrent bias, [H].
  Value recurrentBiasH;
  /// LSTM peepholes, [H] each.
  Value peepholeI, peepholeO, peepholeF;
};

/// A direction's state between steps; a null value is zero (the initial
/// state a model passes as zeros, which needs no recurrent GEMM).
struct State {
  Value h, c;
};

int64_t functionsPerCell(Cell cell) {
  return cell == Cell::Rnn ? 1 : cell == Cell::Gru ? 2 : 3;
}

FailureOr<SmallVector<SmallVector<Activation, 3>, 2>> parseActivations(NodeContext &ctx,
                                                                       const Spec &spec) {
  const int64_t perCell = functionsPerCell(spec.cell);
  std::vector<std::string> names;
  if (const onnx::AttributeProto *a = ctx.attr("activations")) {
    for (const std::string &s : a->strings())
      names.push_back(s);
    if (static_cast<int64_t>(names.size()) != perCell * spec.directions)
      return ctx.error("activations lists " + llvm::Twine(names.size()) + " functions; " +
                       ctx.opType() + " with " + llvm::Twine(spec.directions) +
                       " direction(s) takes " + llvm::Twine(perCell * spec.directions));
  } else {
    static const char *const defaults[3][3] = {
        {"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};
    for (int64_t d = 0; d < spec.directions; ++d)
      for (int64_t i = 0; i < perCell; ++i)
        names.push_back(defaults[perCell - 1][i]);
  }
  if (ctx.attr("activation_alpha") || ctx.attr("activation_beta"))
    return ctx.error("activation_alpha and activation_beta are not supported (Sigmoid, "
                     "Tanh and Relu take none)");
  SmallVector<SmallVector<Activation, 3>, 2> result(spec.directions);
  for (size_t i = 0; i < names.size(); ++i) {
    std::string lower = llvm::StringRef(names[i]).lower();
    std::optional<Activation> act;
    if (lower == "sigmoid")
      act = Activation::Sigmoid;
    else if (lower == "tanh")
      act = Activation::Tanh;
    else if (lower == "relu")
      act = Activation::Relu;
    if (!act)
      return ctx.error("activation '" + names[i] +
                       "' is not supported (Sigmoid, Tanh and Relu are)");
    result[i / perCell].push_back(*act);
  }
  return result;
}

/// The shape of X, W, R and the attributes, checked against each other.
FailureOr<Spec> parseSpec(NodeContext &ctx) {
  Spec spec;
  llvm::StringRef op = ctx.opType();
  spec.cell = op == "RNN" ? Cell::Rnn : op == "GRU" ? Cell::Gru : Cell::Lstm;
  spec.gates = spec.cell == Cell::Rnn ? 1 : spec.cell == Cell::Gru ? 3 : 4;
  const int64_t layout = ctx.attrInt("layout", 0);
  if (layout != 0 && layout != 1)
    return ctx.error("layout must be 0 or 1, got " + llvm::Twine(layout));
  spec.batchFirst = layout == 1;
  std::string direction = ctx.attrString("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    return ctx.error("direction '" + direction +
                     "' is not one of forward, reverse, bidirectional");
  spec.directions = direction == "bidirectional" ? 2 : 1;
  spec.reverse = direction == "reverse";
  if (spec.cell == Cell::Lstm && ctx.attrInt("input_forget", 0) != 0)
    return ctx.error("input_forget (coupled input and forget gates) is not supported");
  spec.linearBeforeReset = spec.cell == Cell::Gru && ctx.attrInt("linear_before_reset", 0) != 0;
  if (ctx.attr("clip")) {
    const float clip = ctx.attrFloat("clip", 0.0f);
    if (!(clip > 0.0f) || !std::isfinite(clip))
      return ctx.error("clip must be a positive finite threshold, got " + std::to_string(clip));
    spec.clip = clip;
  }

  FailureOr<RankedTensorType> x = ctx.inputType(0), w = ctx.inputType(1), r = ctx.inputType(2);
  if (failed(x) || failed(w) || failed(r))
    return failure();
  if (x->getRank() != 3 || !x->getElementType().isF32())
    return ctx.error("X must be a float32 tensor of rank 3, got " + shape::format(x->getShape()));
  ArrayRef<int64_t> xs = x->getShape();
  spec.steps = spec.batchFirst ? xs[1] : xs[0];
  spec.batch = spec.batchFirst ? xs[0] : xs[1];
  spec.inputSize = xs[2];
  if (r->getRank() != 3)
    return ctx.error("R must be [num_directions, " + llvm::Twine(spec.gates) +
                     "*hidden_size, hidden_size], got " + shape::format(r->getShape()));
  spec.hidden = r->getShape()[2];
  if (ctx.attr("hidden_size") && ctx.attrInt("hidden_size", 0) != spec.hidden)
    return ctx.error("hidden_size " + llvm::Twine(ctx.attrInt("hidden_size", 0)) +
                     " is not R's last axis " + llvm::Twine(spec.hidden));
  if (spec.steps < 1 || spec.batch < 1 || spec.inputSize < 1 || spec.hidden < 1)
    return ctx.error("X " + shape::format(xs) + " and R " + shape::format(r->getShape()) +
                     " must have no empty axis");
  if (spec.steps * spec.directions > kMaxUnrolledSteps)
    return ctx.error(llvm::Twine(spec.steps) + " time steps in " + llvm::Twine(spec.directions) +
                     " direction(s) exceed the " + llvm::Twine(kMaxUnrolledSteps) +
                     " cells one node may unroll into");
  const int64_t gh = spec.gates * spec.hidden;
  auto expect = [&](unsigned i, llvm::StringRef name, ArrayRef<int64_t> want) -> LogicalResult {
    if (!ctx.hasInput(i))
      return success();
    FailureOr<RankedTensorType> t = ctx.inputType(i);
    if (failed(t))
      return failure();
    if (t->getShape() != want)
      return ctx.error(name + " must be " + shape::format(want) + ", got " +
                       shape::format(t->getShape()));
    if (t->getElementType() != x->getElementType())
      return ctx.error(name + " must have X's element type");
    return success();
  };
  const int64_t d = spec.directions;
  SmallVector<int64_t> stateShape =
      spec.batchFirst ? SmallVector<int64_t>{spec.batch, d, spec.hidden}
                      : SmallVector<int64_t>{d, spec.batch, spec.hidden};
  if (failed(expect(1, "W", {d, gh, spec.inputSize})) ||
      failed(expect(2, "R", {d, gh, spec.hidden})) || failed(expect(3, "B", {d, 2 * gh})) ||
      failed(expect(5, "initial_h", stateShape)) ||
      (spec.cell == Cell::Lstm && (failed(expect(6, "initial_c", stateShape)) ||
                                   failed(expect(7, "P", {d, 3 * spec.hidden})))))
    return failure();
  FailureOr<SmallVector<SmallVector<Activation, 3>, 2>> acts = parseActivations(ctx, spec);
  if (failed(acts))
    return failure();
  spec.activations = std::move(*acts);
  return spec;
}

/// Whether input `i` is absent or a constant of zeros.
bool absentOrZero(NodeContext &ctx, unsigned i) {
  if (!ctx.hasInput(i))
    return true;
  const Tensor *t = ctx.constant(i);
  if (!t)
    return false;
  for (int64_t k = 0; k < t->numElements(); ++k)
    if (t->real(k) != 0.0)
      return false;
  return true;
}

/// Direction `d`'s slice of a [D, ...] (or, with `batchFirst`, [B, D, ...])
/// input, as `shape`.
FailureOr<Value> directionOf(OpChain &b, unsigned input, int64_t d, int64_t axis,
                             ArrayRef<int64_t> shape) {
  NodeContext &ctx = b.node();
  FailureOr<Value> v = ctx.input(input);
  if (failed(v))
    return failure();
  const int64_t count = cast<RankedTensorType>(v->getType()).getShape()[axis];
  return b.reshape(count == 1 ? v : b.slice(v, axis, d, d + 1), shape);
}

FailureOr<DirectionWeights> prepareDirection(OpChain &b, const Spec &spec, int64_t d, Value x) {
  NodeContext &ctx = b.node();
  const int64_t h = spec.hidden, gh = spec.gates * h;
  DirectionWeights dw;
  FailureOr<Value> w = directionOf(b, 1, d, 0, {gh, spec.inputSize});
  FailureOr<Value> r = directionOf(b, 2, d, 0, {gh, h});
  if (failed(w) || failed(r))
    return failure();
  // The biases that add outside the reset gate join the projection's GEMM.
  FailureOr<Value> bias = Value();
  if (ctx.hasInput(3)) {
    FailureOr<Value> both = directionOf(b, 3, d, 0, {2 * gh});
    FailureOr<Value> wb = b.slice(both, 0, 0, gh), rb = b.slice(both, 0, gh, 2 * gh);
    if (spec.linearBeforeReset) {
      bias = b.concat({b.op<tc::AddOp>({b.slice(wb, 0, 0, 2 * h), b.slice(rb, 0, 0, 2 * h)}),
                       b.slice(wb, 0, 2 * h, 3 * h)},
                      0);
      FailureOr<Value> rbh = b.slice(rb, 0, 2 * h, 3 * h);
      if (failed(rbh))
        return failure();
      dw.recurrentBiasH = *rbh;
    } else {
      bias = b.op<tc::AddOp>({wb, rb});
    }
  }
  FailureOr<Value> flat = b.reshape(x, {spec.steps * spec.batch, spec.inputSize});
  if (failed(bias) || failed(flat))
    return failure();
  SmallVector<FailureOr<Value>> operands = {flat, w};
  if (*bias)
    operands.push_back(bias);
  FailureOr<Value> proj = b.op<tc::GemmOp>(operands, {ctx.namedBool("trans_b", true)});
  proj = b.reshape(proj, spec.batchFirst ? SmallVector<int64_t>{spec.batch, spec.steps, gh}
                                         : SmallVector<int64_t>{spec.steps, spec.batch, gh});
  if (failed(proj))
    return failure();
  dw.projection = *proj;
  if (spec.cell == Cell::Gru && !spec.linearBeforeReset) {
    FailureOr<Value> rzr = b.slice(r, 0, 0, 2 * h), rh = b.slice(r, 0, 2 * h, 3 * h);
    if (failed(rzr) || failed(rh))
      return failure();
    dw.recurrent = *rzr;
    dw.recurrentH = *rh;
  } else {
    dw.recurrent = *r;
  }
  if (spec.cell == Cell::Lstm && ctx.hasInput(7)) {
    FailureOr<Value> p = directionOf(b, 7, d, 0, {3 * h});
    FailureOr<Value> pi = b.slice(p, 0, 0, h), po = b.slice(p, 0, h, 2 * h),
                     pf = b.slice(p, 0, 2 * h, 3 * h);
    if (failed(pi) || failed(po) || failed(pf))
      return failure();
    dw.peepholeI = *pi;
    dw.peepholeO = *po;
    dw.peepholeF = *pf;
  }
  return dw;
}

/// One of the cell's functions, after the cell clip where the node has one.
FailureOr<Value> activate(OpChain &b, const Spec &spec, Activation act, FailureOr<Value> v) {
  if (spec.clip)
    v = b.op<tc::ClipOp>({v}, {b.node().namedF32("min", -*spec.clip),
                               b.node().namedF32("max", *spec.clip)});
  switch (act) {
  case Activation::Sigmoid:
    return b.op<tc::SigmoidOp>({v});
  case Activation::Tanh:
    return b.op<tc::TanhOp>({v});
  case Activation::Relu:
    return b.op<tc::ReluOp>({v});
  }
  return failure();
}

/// `h` x R^T (+ c): the recurrent GEMM of a step, or `c` alone (or null)
/// when the state is zero.
FailureOr<Value> recurrentProduct(OpChain &b, Value h, Value r, Value c) {
  if (!h)
    return c;
  SmallVector<FailureOr<Value>> operands = {h, r};
  if (c)
    operands.push_back(c);
  return b.op<tc::GemmOp>(operands, {b.node().namedBool("trans_b", true)});
}

/// a + b where a null operand is zero.
FailureOr<Value> addOrKeep(OpChain &b, FailureOr<Value> x, Value y) {
  if (failed(x) || !y)
    return x;
  if (!*x)
    return y;
  return b.op<tc::AddOp>({x, y});
}

FailureOr<State> lstmStep(OpChain &b, const Spec &spec, const DirectionWeights &dw,
                          ArrayRef<Activation> act, Value xt, State prev) {
  const int64_t h = spec.hidden;
  FailureOr<Value> pre = recurrentProduct(b, prev.h, dw.recurrent, xt);
  // ONNX's gate order: input, output, forget, cell.
  FailureOr<Value> i = b.slice(pre, 1, 0, h), o = b.slice(pre, 1, h, 2 * h),
                   g = b.slice(pre, 1, 3 * h, 4 * h);
  // The forget gate only matters against a cell state that is not zero.
  FailureOr<Value> f = prev.c ? b.slice(pre, 1, 2 * h, 3 * h) : FailureOr<Value>(Value());
  if (dw.peepholeI && prev.c) {
    i = b.op<tc::AddOp>({i, b.op<tc::MulOp>({dw.peepholeI, prev.c})});
    f = b.op<tc::AddOp>({f, b.op<tc::MulOp>({dw.peepholeF, prev.c})});
  }
  i = activate(b, spec, act[0], i);
  g = activate(b, spec, act[1], g);
  FailureOr<Value> c = b.op<tc::MulOp>({i, g});
  if (prev.c)
    c = b.op<tc::AddOp>({b.op<tc::MulOp>({activate(b, spec, act[0], f), prev.c}), c});
  if (dw.peepholeO)
    o = b.op<tc::AddOp>({o, b.op<tc::MulOp>({dw.peepholeO, c})});
  FailureOr<Value> hNext = b.op<tc::MulOp>({activate(b, spec, act[0], o), activate(b, spec, act[2], c)});
  if (failed(hNext) || failed(c))
    return failure();
  return State{*hNext, *c};
}

FailureOr<State> gruStep(OpChain &b, const Spec &spec, const DirectionWeights &dw,
                         ArrayRef<Activation> act, Value xt, State prev) {
  const int64_t h = spec.hidden;
  // Gate order: update z, reset r, hidden h; recurrent parts null while
  // the state is zero.
  Value rec[3];
  if (prev.h) {
    FailureOr<Value> all = recurrentProduct(b, prev.h, dw.recurrent, Value());
    for (int64_t k = 0; k < (spec.linearBeforeReset ? 3 : 2); ++k) {
      FailureOr<Value> part = b.slice(all, 1, k * h, (k + 1) * h);
      if (failed(part))
        return failure();
      rec[k] = *part;
    }
  }
  auto gate = [&](int64_t k) { return addOrKeep(b, b.slice(xt, 1, k * h, (k + 1) * h), rec[k]); };
  FailureOr<Value> z = activate(b, spec, act[0], gate(0));
  FailureOr<Value> r = activate(b, spec, act[0], gate(1));
  FailureOr<Value> hidden = Value();
  if (spec.linearBeforeReset) {
    // r * (h R_h^T + Rb_h), as PyTorch's GRU.
    FailureOr<Value> hr = addOrKeep(b, rec[2], dw.recurrentBiasH);
    if (succeeded(hr) && *hr)
      hidden = b.op<tc::MulOp>({r, hr});
  } else if (prev.h) {
    // (r * h) R_h^T.
    hidden = b.op<tc::GemmOp>({b.op<tc::MulOp>({r, prev.h}), dw.recurrentH},
                              {b.node().namedBool("trans_b", true)});
  }
  if (failed(hidden))
    return failure();
  FailureOr<Value> n =
      activate(b, spec, act[1], addOrKeep(b, b.slice(xt, 1, 2 * h, 3 * h), *hidden));
  // (1 - z) * n + z * h, as PyTorch computes it: n + z * (h - n).
  FailureOr<Value> hNext =
      prev.h ? b.op<tc::AddOp>({n, b.op<tc::MulOp>({z, b.op<tc::SubOp>({prev.h, n})})})
             : b.op<tc::SubOp>({n, b.op<tc::MulOp>({z, n})});
  if (failed(hNext))
    return failure();
  return State{*hNext, Value()};
}

FailureOr<State> rnnStep(OpChain &b, const Spec &spec, const DirectionWeights &dw,
                         ArrayRef<Activation> act, Value xt, State prev) {
  FailureOr<Value> hNext = activate(b, spec, act[0], recurrentProduct(b, prev.h, dw.recurrent, xt));
  if (failed(hNext))
    return failure();
  return State{*hNext, Value()};
}

/// Direction `d` over every step: the hidden state of each step (in time
/// order) and the final state.
struct DirectionResult {
  SmallVector<Value> outputs;
  State last;
};

FailureOr<DirectionResult> runDirection(OpChain &b, const Spec &spec, int64_t d, Value x,
                                        Value lengths) {
  NodeContext &ctx = b.node();
  FailureOr<DirectionWeights> dw = prepareDirection(b, spec, d, x);
  if (failed(dw))
    return failure();
  const int64_t stateAxis = spec.batchFirst ? 1 : 0;
  const SmallVector<int64_t> stateShape = {spec.batch, spec.hidden};
  State state;
  if (!absentOrZero(ctx, 5)) {
    FailureOr<Value> h0 = directionOf(b, 5, d, stateAxis, stateShape);
    if (failed(h0))
      return failure();
    state.h = *h0;
  }
  if (spec.cell == Cell::Lstm && !absentOrZero(ctx, 6)) {
    FailureOr<Value> c0 = directionOf(b, 6, d, stateAxis, stateShape);
    if (failed(c0))
      return failure();
    state.c = *c0;
  }
  const bool backwards = spec.reverse || d == 1;
  const int64_t timeAxis = spec.batchFirst ? 1 : 0;
  ArrayRef<Activation> act = spec.activations[d];
  DirectionResult result;
  result.outputs.resize(spec.steps);
  for (int64_t k = 0; k < spec.steps; ++k) {
    const int64_t t = backwards ? spec.steps - 1 - k : k;
    FailureOr<Value> xt = b.reshape(b.slice(dw->projection, timeAxis, t, t + 1),
                                    {spec.batch, spec.gates * spec.hidden});
    if (failed(xt))
      return failure();
    FailureOr<State> next = spec.cell == Cell::Lstm ? lstmStep(b, spec, *dw, act, *xt, state)
                            : spec.cell == Cell::Gru ? gruStep(b, spec, *dw, act, *xt, state)
                                                     : rnnStep(b, spec, *dw, act, *xt, state);
    if (failed(next))
      return failure();
    Value y = next->h;
    if (lengths) {
      // Past a sequence's length its state stays and its output is 0.
      Tensor step = Tensor::fromIntegers(DType::I32, {}, {t});
      Value stepValue =
          ctx.builder().create<tc::ConstantOp>(ctx.loc(), toAttribute(ctx.context(), step));
      FailureOr<Value> live =
          b.reshape(b.op<tc::LessOp>({stepValue, lengths}), {spec.batch, 1});
      auto keep = [&](Value fresh, Value old) -> FailureOr<Value> {
        return b.op<tc::WhereOp>({live, fresh, old ? old : b.scalar(fresh, 0.0)});
      };
      FailureOr<Value> out = keep(next->h, Value());
      FailureOr<Value> h = state.h ? keep(next->h, state.h) : out;
      FailureOr<Value> c = next->c ? keep(next->c, state.c) : FailureOr<Value>(Value());
      if (failed(out) || failed(h) || failed(c))
        return failure();
      y = *out;
      next = State{*h, *c};
    }
    result.outputs[t] = y;
    state = *next;
  }
  result.last = state;
  return result;
}

/// The node's sequence_lens, or null where it is absent or every length is
/// the whole sequence.
FailureOr<Value> sequenceLengths(NodeContext &ctx, const Spec &spec) {
  if (!ctx.hasInput(4))
    return Value();
  FailureOr<RankedTensorType> type = ctx.inputType(4);
  if (failed(type))
    return failure();
  if (type->getShape() != ArrayRef<int64_t>{spec.batch} ||
      !type->getElementType().isSignlessInteger(32))
    return ctx.error("sequence_lens must be int32 [" + llvm::Twine(spec.batch) + "], got " +
                     shape::format(type->getShape()));
  if (const Tensor *lens = ctx.constant(4)) {
    bool whole = true;
    for (int64_t k = 0; k < lens->numElements(); ++k) {
      const int64_t n = lens->integer(k);
      if (n < 1 || n > spec.steps)
        return ctx.error("sequence_lens[" + llvm::Twine(k) + "] = " + llvm::Twine(n) +
                         " is not within [1, " + llvm::Twine(spec.steps) + "]");
      whole = whole && n == spec.steps;
    }
    if (whole)
      return Value();
  }
  return ctx.input(4);
}

/// Joins per-direction [B, H] states as [D, B, H] (or [B, D, H]).
FailureOr<Value> stackDirections(OpChain &b, const Spec &spec, ArrayRef<Value> parts) {
  SmallVector<FailureOr<Value>> lifted;
  for (Value v : parts)
    lifted.push_back(b.reshape(v, spec.batchFirst
                                      ? SmallVector<int64_t>{spec.batch, 1, spec.hidden}
                                      : SmallVector<int64_t>{1, spec.batch, spec.hidden}));
  return b.concat(lifted, spec.batchFirst ? 1 : 0);
}

/// Y: [T, D, B, H] (or [B, T, D, H]) from every direction's step outputs.
FailureOr<Value> stackOutputs(OpChain &b, const Spec &spec,
                              ArrayRef<DirectionResult> directions) {
  const int64_t bsz = spec.batch, h = spec.hidden;
  SmallVector<FailureOr<Value>> steps;
  for (int64_t t = 0; t < spec.steps; ++t) {
    SmallVector<FailureOr<Value>> parts;
    for (const DirectionResult &dir : directions)
      parts.push_back(b.reshape(dir.outputs[t], spec.batchFirst
                                                    ? SmallVector<int64_t>{bsz, 1, 1, h}
                                                    : SmallVector<int64_t>{1, 1, bsz, h}));
    steps.push_back(b.concat(parts, spec.batchFirst ? 2 : 1));
  }
  return b.concat(steps, spec.batchFirst ? 1 : 0);
}

} // namespace

/// RNN, GRU and LSTM (every direction, both layouts, initial states,
/// sequence_lens, peepholes, cell clip, GRU's linear_before_reset).
LogicalResult trainc::frontend::convertRecurrent(NodeContext &ctx) {
  FailureOr<Spec> spec = parseSpec(ctx);
  if (failed(spec))
    return failure();
  // About 16 tc ops a cell, with its share of the outputs.
  if (failed(ctx.chargeUnrolling(16 * spec->steps * spec->directions, "unrolling its time steps")))
    return failure();
  FailureOr<Value> x = ctx.input(0);
  FailureOr<Value> lengths = sequenceLengths(ctx, *spec);
  if (failed(x) || failed(lengths))
    return failure();
  OpChain b(ctx);
  SmallVector<DirectionResult, 2> directions;
  for (int64_t d = 0; d < spec->directions; ++d) {
    FailureOr<DirectionResult> dir = runDirection(b, *spec, d, *x, *lengths);
    if (failed(dir))
      return failure();
    directions.push_back(std::move(*dir));
  }
  if (ctx.outputUsed(0)) {
    FailureOr<Value> y = stackOutputs(b, *spec, directions);
    if (failed(y))
      return failure();
    ctx.setOutput(0, *y);
  }
  for (unsigned i = 1; i < ctx.numOutputs() && i <= (spec->cell == Cell::Lstm ? 2u : 1u); ++i) {
    if (!ctx.outputUsed(i))
      continue;
    SmallVector<Value, 2> last;
    for (const DirectionResult &dir : directions)
      last.push_back(i == 1 ? dir.last.h : dir.last.c);
    FailureOr<Value> stacked = stackDirections(b, *spec, last);
    if (failed(stacked))
      return failure();
    ctx.setOutput(i, *stacked);
  }
  return success();
}
