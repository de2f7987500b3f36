//===- ScalarSemantics.h - what a pointwise tc op computes per element -*- C++ -*-===//
//
// The value of one result element of each pointwise op, written once, over
// an algebra of scalars S:
//   - codegen instantiates it with C++ expressions (codegen/ScalarExpr.cpp:
//     the kernels' element code),
//   - the importer with host numbers, to fold ops on constants
//     (frontend/ConvertElementwise.cpp: shape arithmetic, masks).
// So a constant the importer folds and the kernel that computes the same op
// at run time agree, NaN included: comparisons are written so that a NaN
// operand selects the NaN, as PyTorch does (relu(NaN) and max(x, NaN) are
// NaN, sign keeps NaN).
//
// An algebra S has a value type S::Value and:
//   bool isFloat()                    the operands are floats
//   Value constant(int v)             0, 1 or -1 in the operands' type
//   Value neg(Value), logicalNot(Value)
//   Value binary(ScalarBinary, Value, Value)
//   Value fn(ScalarFn, Value) and fn(ScalarFn::Pow, Value, Value)
//   Value select(Value c, Value x, Value y)
//
// An op with an attribute (leaky_relu, clip, gelu, cast, mod) keeps its rule
// in codegen: the importer does not fold it.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_IR_SCALARSEMANTICS_H
#define TRAINC_IR_SCALARSEMANTICS_H

#include "ir/TcOps.h"

#include "llvm/ADT/ArrayRef.h"

#include <optional>

namespace trainc::tc {

enum class ScalarBinary {
  Add, Sub, Mul, Div,
  Less, LessEqual, Greater, GreaterEqual, Equal, NotEqual,
  And, Or,
};

/// The functions an element calls (exact in libm, or the runtime's f32
/// versions: generated.h).
enum class ScalarFn {
  Exp, Log, Sqrt, Tanh, Erf, Ceil, Floor, Rint, Fabs, Sigmoid, Pow,
  Sin, Cos, Tan, Atan, Asin, Acos, Sinh, Cosh,
};

/// ScalarSemantics<Op>::apply(s, a): the element of Op's result from its
/// operands' elements a[0], a[1], ... An op without a specialization has no
/// element rule here.
template <class OpTy> struct ScalarSemantics;

#define TC_SCALAR_SEMANTICS(OpTy, ...)                                         \
  template <> struct ScalarSemantics<OpTy> {                                   \
    template <class S>                                                         \
    static typename S::Value apply(S &s, llvm::ArrayRef<typename S::Value> a) { \
      using B [[maybe_unused]] = ScalarBinary;                                 \
      using F [[maybe_unused]] = ScalarFn;                                     \
      return __VA_ARGS__;                                                      \
    }                                                                          \
  };

TC_SCALAR_SEMANTICS(NegOp, s.neg(a[0]))
TC_SCALAR_SEMANTICS(AbsOp, s.isFloat() ? s.fn(F::Fabs, a[0])
                                       : s.select(s.binary(B::Less, a[0], s.constant(0)),
                                                  s.neg(a[0]), a[0]))
TC_SCALAR_SEMANTICS(ReluOp, s.select(s.binary(B::Less, a[0], s.constant(0)), s.constant(0), a[0]))
TC_SCALAR_SEMANTICS(SigmoidOp, s.fn(F::Sigmoid, a[0]))
TC_SCALAR_SEMANTICS(TanhOp, s.fn(F::Tanh, a[0]))
TC_SCALAR_SEMANTICS(ErfOp, s.fn(F::Erf, a[0]))
TC_SCALAR_SEMANTICS(SinOp, s.fn(F::Sin, a[0]))
TC_SCALAR_SEMANTICS(CosOp, s.fn(F::Cos, a[0]))
TC_SCALAR_SEMANTICS(TanOp, s.fn(F::Tan, a[0]))
TC_SCALAR_SEMANTICS(AtanOp, s.fn(F::Atan, a[0]))
TC_SCALAR_SEMANTICS(AsinOp, s.fn(F::Asin, a[0]))
TC_SCALAR_SEMANTICS(AcosOp, s.fn(F::Acos, a[0]))
TC_SCALAR_SEMANTICS(SinhOp, s.fn(F::Sinh, a[0]))
TC_SCALAR_SEMANTICS(CoshOp, s.fn(F::Cosh, a[0]))
TC_SCALAR_SEMANTICS(ExpOp, s.fn(F::Exp, a[0]))
TC_SCALAR_SEMANTICS(LogOp, s.fn(F::Log, a[0]))
TC_SCALAR_SEMANTICS(SqrtOp, s.fn(F::Sqrt, a[0]))
TC_SCALAR_SEMANTICS(CeilOp, s.fn(F::Ceil, a[0]))
TC_SCALAR_SEMANTICS(FloorOp, s.fn(F::Floor, a[0]))
// rint under the default rounding mode: halves to even, as ONNX Round.
TC_SCALAR_SEMANTICS(RoundOp, s.fn(F::Rint, a[0]))
TC_SCALAR_SEMANTICS(ReciprocalOp, s.binary(B::Div, s.constant(1), a[0]))
TC_SCALAR_SEMANTICS(NotOp, s.logicalNot(a[0]))
// Both tests fail for NaN, which a - a keeps; -0 and 0 give 0.
TC_SCALAR_SEMANTICS(SignOp,
                    s.select(s.binary(B::Greater, a[0], s.constant(0)), s.constant(1),
                             s.select(s.binary(B::Less, a[0], s.constant(0)), s.constant(-1),
                                      s.isFloat() ? s.binary(B::Sub, a[0], a[0])
                                                  : s.constant(0))))
TC_SCALAR_SEMANTICS(AddOp, s.binary(B::Add, a[0], a[1]))
TC_SCALAR_SEMANTICS(SubOp, s.binary(B::Sub, a[0], a[1]))
TC_SCALAR_SEMANTICS(MulOp, s.binary(B::Mul, a[0], a[1]))
TC_SCALAR_SEMANTICS(DivOp, s.binary(B::Div, a[0], a[1]))
TC_SCALAR_SEMANTICS(PowOp, s.fn(F::Pow, a[0], a[1]))
// b when it wins or is NaN, else a (a NaN a included; a tie keeps a):
// torch.maximum and torch.minimum.
TC_SCALAR_SEMANTICS(MaxOp,
                    s.select(s.isFloat() ? s.binary(B::Or, s.binary(B::Less, a[0], a[1]),
                                                    s.binary(B::NotEqual, a[1], a[1]))
                                         : s.binary(B::Less, a[0], a[1]),
                             a[1], a[0]))
TC_SCALAR_SEMANTICS(MinOp,
                    s.select(s.isFloat() ? s.binary(B::Or, s.binary(B::Less, a[1], a[0]),
                                                    s.binary(B::NotEqual, a[1], a[1]))
                                         : s.binary(B::Less, a[1], a[0]),
                             a[1], a[0]))
TC_SCALAR_SEMANTICS(EqualOp, s.binary(B::Equal, a[0], a[1]))
TC_SCALAR_SEMANTICS(LessOp, s.binary(B::Less, a[0], a[1]))
TC_SCALAR_SEMANTICS(LessEqualOp, s.binary(B::LessEqual, a[0], a[1]))
TC_SCALAR_SEMANTICS(GreaterOp, s.binary(B::Greater, a[0], a[1]))
TC_SCALAR_SEMANTICS(GreaterEqualOp, s.binary(B::GreaterEqual, a[0], a[1]))
TC_SCALAR_SEMANTICS(AndOp, s.binary(B::And, a[0], a[1]))
TC_SCALAR_SEMANTICS(OrOp, s.binary(B::Or, a[0], a[1]))
TC_SCALAR_SEMANTICS(WhereOp, s.select(a[0], a[1], a[2]))

#undef TC_SCALAR_SEMANTICS

/// The ops with a ScalarSemantics.
template <class... Ops> struct OpList {};
using ScalarSemanticsOps =
    OpList<NegOp, AbsOp, ReluOp, SigmoidOp, TanhOp, ErfOp, ExpOp, LogOp, SqrtOp, CeilOp, FloorOp,
           RoundOp, ReciprocalOp, NotOp, SignOp, AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp,
           EqualOp, LessOp, LessEqualOp, GreaterOp, GreaterEqualOp, AndOp, OrOp, WhereOp, SinOp,
           CosOp, TanOp, AtanOp, AsinOp, AcosOp, SinhOp, CoshOp>;

template <class S, class... Ops>
std::optional<typename S::Value> applyScalarSemantics(OpList<Ops...>, mlir::Operation *op, S &s,
                                                      llvm::ArrayRef<typename S::Value> a) {
  std::optional<typename S::Value> result;
  (void)((mlir::isa<Ops>(op) ? (result = ScalarSemantics<Ops>::apply(s, a), true) : false) ||
         ...);
  return result;
}

/// The element of `op`'s result by its ScalarSemantics, or none when it has
/// none.
template <class S>
std::optional<typename S::Value> scalarSemantics(mlir::Operation *op, S &s,
                                                 llvm::ArrayRef<typename S::Value> a) {
  return applyScalarSemantics(ScalarSemanticsOps(), op, s, a);
}

template <class... Ops> bool isOneOf(OpList<Ops...>, llvm::StringRef name) {
  return ((name == Ops::getOperationName()) || ...);
}
/// Whether the op named `name` (tc.relu) has a ScalarSemantics.
inline bool hasScalarSemantics(llvm::StringRef name) {
  return isOneOf(ScalarSemanticsOps(), name);
}

} // namespace trainc::tc

#endif // TRAINC_IR_SCALARSEMANTICS_H
