//===- StepAbi.cpp - the training step's arguments, typed -----------------===//

#include "ir/StepAbi.h"
#include "ir/TcOps.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace trainc::tc {

std::string stateName(StateRole role, llvm::StringRef param) {
  std::string name = stringifyStateRole(role).str();
  if (!param.empty())
    name += "." + param.str();
  return name;
}

std::optional<Hyper> argHyper(func::FuncOp func, unsigned index) {
  if (auto attr = func.getArgAttrOfType<HyperAttr>(index, kHyperAttrName))
    return attr.getValue();
  return std::nullopt;
}

std::optional<StateRole> argStateRole(func::FuncOp func, unsigned index) {
  if (auto attr = func.getArgAttrOfType<StateRoleAttr>(index, kStateRoleAttrName))
    return attr.getValue();
  return std::nullopt;
}

BlockArgument findHyper(func::FuncOp func, Hyper hyper) {
  for (BlockArgument arg : func.getArguments())
    if (argHyper(func, arg.getArgNumber()) == hyper)
      return arg;
  return nullptr;
}

BlockArgument findState(func::FuncOp func, StateRole role) {
  for (BlockArgument arg : func.getArguments())
    if (argStateRole(func, arg.getArgNumber()) == role)
      return arg;
  return nullptr;
}

BlockArgument getOrAddHyper(func::FuncOp func, Hyper hyper) {
  if (BlockArgument arg = findHyper(func, hyper))
    return arg;
  Builder b(func.getContext());
  unsigned index = func.getNumArguments();
  (void)func.insertArgument(
      index, RankedTensorType::get({}, b.getF32Type()),
      b.getDictionaryAttr(b.getNamedAttr(kHyperAttrName, HyperAttr::get(b.getContext(), hyper))),
      func.getLoc());
  return func.getArgument(index);
}

BlockArgument addState(func::FuncOp func, Type type, StateRole role, llvm::StringRef param,
                       std::optional<float> init) {
  Builder b(func.getContext());
  SmallVector<NamedAttribute> attrs = {
      b.getNamedAttr(kStateAttrName, b.getStringAttr(stateName(role, param))),
      b.getNamedAttr(kStateRoleAttrName, StateRoleAttr::get(b.getContext(), role))};
  if (init)
    attrs.push_back(b.getNamedAttr(kStateInitAttrName, b.getF32FloatAttr(*init)));
  unsigned index = func.getNumArguments();
  (void)func.insertArgument(index, type, b.getDictionaryAttr(attrs), func.getLoc());
  return func.getArgument(index);
}

std::optional<Optimizer> stepOptimizer(func::FuncOp step) {
  if (auto attr = step->getAttrOfType<OptimizerAttr>(kOptimizerAttrName))
    return attr.getValue();
  return std::nullopt;
}

Precision modulePrecision(ModuleOp module) {
  if (auto attr = module->getAttrOfType<PrecisionAttr>(kPrecisionAttrName))
    return attr.getValue();
  return Precision::Fp32;
}

bool isPlacedOutput(OpResult result) {
  auto func = dyn_cast<func::FuncOp>(result.getOwner()->getParentOp());
  // A constant lives with the parameters (or is a literal): its output is
  // a copy.
  if (!func || viewSource(result) || replacedOperand(result) ||
      isa<AllReduceOp, ConstantOp>(result.getOwner()))
    return false;
  auto ret = dyn_cast<func::ReturnOp>(func.getBody().front().getTerminator());
  if (!ret || llvm::count(ret.getOperands(), result) != 1)
    return false;
  unsigned slot = llvm::find(ret.getOperands(), result) - ret.getOperands().begin();
  return func.getResultAttr(slot, kOutputAttrName) && !func.getResultAttr(slot, kUpdateAttrName) &&
         !func.getResultAttr(slot, kStateUpdateAttrName) &&
         !llvm::any_of(result.getUsers(), [](Operation *user) { return isa<SendOp>(user); });
}

} // namespace trainc::tc
