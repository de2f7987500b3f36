//===- StepAbi.h - the training step's arguments, typed --------*- C++ -*-===//
//
// The optimizer, gradient-accumulation, data-parallel and autodiff phases
// add hyperparameters and optimizer state to @train_step as arguments; these
// are the one way to write and read them. A hyperparameter argument carries
// `tc.hyper = #tc.hyper<lr>`; a state argument carries its name (that of its
// checkpoint entry) in `tc.state`, its role in `tc.state_role` and, when it
// does not start at 0, `tc.state_init`. The enums mirror the runtime's
// (runtime/include/trainc_rt/abi.h).
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_IR_STEPABI_H
#define TRAINC_IR_STEPABI_H

#include "ir/TcAttrs.h"
#include "runtime/include/trainc_rt/abi.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>

namespace trainc::tc {

/// The name of a state of `role` for the parameter `param`: "exp_avg.fc1.w";
/// for the step's scalars (no parameter) the role's name alone.
std::string stateName(StateRole role, llvm::StringRef param = {});

/// The hyperparameter or the state role argument `index` of `func` carries.
std::optional<Hyper> argHyper(mlir::func::FuncOp func, unsigned index);
std::optional<StateRole> argStateRole(mlir::func::FuncOp func, unsigned index);

/// The argument of `func` that is hyperparameter `hyper`, or null.
mlir::BlockArgument findHyper(mlir::func::FuncOp func, Hyper hyper);
/// The first state argument of `func` with `role`, or null (the scalars:
/// the loss scale and its counters, Adam's step count).
mlir::BlockArgument findState(mlir::func::FuncOp func, StateRole role);

/// Appends to `func` the f32 scalar argument of hyperparameter `hyper`, or
/// returns the one it has.
mlir::BlockArgument getOrAddHyper(mlir::func::FuncOp func, Hyper hyper);
/// Appends to `func` a state argument of `type`, `role` and `param` (see
/// stateName), starting at `init` (0 when absent).
mlir::BlockArgument addState(mlir::func::FuncOp func, mlir::Type type, StateRole role,
                             llvm::StringRef param = {}, std::optional<float> init = {});

/// Whether `result` is a function output its op writes directly into the
/// output's buffer (the loss, the per-sample losses, a forward output):
/// returned once, in a named slot (tc.output) that is no parameter or state
/// update, and
/// neither a constant, a view nor an in-place update. The memory plan gives it no arena
/// space and the generated function copies nothing at its end.
bool isPlacedOutput(mlir::OpResult result);

/// The optimizer @train_step updates with (tc.optimizer), if the optimizer
/// phase ran; the mixed precision of the module (tc.precision, fp32 when
/// absent).
std::optional<Optimizer> stepOptimizer(mlir::func::FuncOp step);
Precision modulePrecision(mlir::ModuleOp module);

/// The runtime's enum of a tc one and back: they agree value for value
/// (test/unit/AbiTest.cpp).
inline rt::Hyper toRuntime(Hyper h) { return static_cast<rt::Hyper>(h); }
inline rt::StateRole toRuntime(StateRole r) { return static_cast<rt::StateRole>(r); }
inline rt::Optimizer toRuntime(Optimizer o) { return static_cast<rt::Optimizer>(o); }
inline rt::Precision toRuntime(Precision p) { return static_cast<rt::Precision>(p); }
inline Optimizer fromRuntime(rt::Optimizer o) { return static_cast<Optimizer>(o); }
inline Precision fromRuntime(rt::Precision p) { return static_cast<Precision>(p); }

} // namespace trainc::tc

#endif // TRAINC_IR_STEPABI_H
