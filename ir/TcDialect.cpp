//===- TcDialect.cpp - the tc dialect -------------------------------------===//

#include "ir/TcDialect.h"
#include "ir/TcAttrs.h"
#include "ir/TcOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace trainc::tc;

#include "ir/TcOpsDialect.cpp.inc"
#include "ir/TcEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "ir/TcAttrs.cpp.inc"

void TcDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "ir/TcOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "ir/TcAttrs.cpp.inc"
      >();
}

Location trainc::tc::phaseLoc(const std::string &name, Location from, StepPhase phase) {
  MLIRContext *ctx = from.getContext();
  Location marked = FusedLoc::get(ctx, {from}, StepPhaseAttr::get(ctx, phase));
  return NameLoc::get(StringAttr::get(ctx, name), marked);
}

namespace {
std::optional<StepPhase> markOf(Location loc) {
  if (auto fused = dyn_cast<FusedLoc>(loc))
    if (auto mark = dyn_cast_or_null<StepPhaseAttr>(fused.getMetadata()))
      return mark.getValue();
  return std::nullopt;
}
} // namespace

std::optional<StepPhase> trainc::tc::markedPhase(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return markOf(name.getChildLoc());
  if (std::optional<StepPhase> mark = markOf(loc))
    return mark;
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (std::optional<StepPhase> mark = markedPhase(inner))
        return mark;
  return std::nullopt;
}

LogicalResult TcDialect::verifyRegionArgAttribute(Operation *op, unsigned region,
                                                  unsigned argIndex,
                                                  NamedAttribute attr) {
  if (attr.getName() == trainc::tc::kInputAttrName ||
      attr.getName() == trainc::tc::kLabelAttrName) {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitError() << "'" << attr.getName().getValue()
                             << "' must name the model input with a string";
    return success();
  }
  if (attr.getName() == kHyperAttrName) {
    if (!isa<HyperAttr>(attr.getValue()))
      return op->emitError() << "'" << attr.getName().getValue()
                             << "' must be a hyperparameter such as #tc.hyper<lr>";
    return success();
  }
  if (attr.getName() == kStateAttrName || attr.getName() == kStateRoleAttrName) {
    bool name = attr.getName() == kStateAttrName;
    if (name ? !isa<StringAttr>(attr.getValue()) : !isa<StateRoleAttr>(attr.getValue()))
      return op->emitError() << "'" << attr.getName().getValue() << "' must be "
                             << (name ? "the state's name" : "a role such as #tc.state_role<exp_avg>");
    auto function = dyn_cast<FunctionOpInterface>(op);
    if (function && !function.getArgAttr(argIndex, name ? kStateRoleAttrName : kStateAttrName))
      return op->emitError() << "argument " << argIndex << " has '" << attr.getName().getValue()
                             << "' without '"
                             << (name ? kStateRoleAttrName : kStateAttrName).data() << "'";
    return success();
  }
  if (attr.getName() == kStateInitAttrName) {
    if (!isa<FloatAttr>(attr.getValue()))
      return op->emitError() << "'" << attr.getName().getValue()
                             << "' must be the state's initial value (a float)";
    return success();
  }
  if (attr.getName() == trainc::tc::kSampleWeightsAttrName ||
      attr.getName() == trainc::tc::kSampleMaskAttrName ||
      attr.getName() == trainc::tc::kDropoutKeyAttrName ||
      attr.getName() == trainc::tc::kFoldedBiasAttrName) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError() << "'" << attr.getName().getValue() << "' is a unit attribute";
    return success();
  }
  if (attr.getName() != trainc::tc::kParamAttrName)
    return op->emitError() << "unknown tc argument attribute '" << attr.getName().getValue() << "'";
  auto symbol = dyn_cast<FlatSymbolRefAttr>(attr.getValue());
  if (!symbol)
    return op->emitError() << "'" << attr.getName().getValue()
                           << "' must be a symbol reference to a tc.param";
  auto param = SymbolTable::lookupNearestSymbolFrom<ParamOp>(op, symbol);
  if (!param)
    return op->emitError() << "argument " << argIndex << " refers to " << symbol
                           << ", which is not a tc.param of this module";
  Region &body = op->getRegion(region);
  if (!body.empty() && body.getArgument(argIndex).getType() != param.getType())
    return op->emitError() << "argument " << argIndex << " has type "
                           << body.getArgument(argIndex).getType() << " but "
                           << symbol << " is " << param.getType();
  return success();
}

LogicalResult TcDialect::verifyRegionResultAttribute(Operation *op, unsigned,
                                                     unsigned, NamedAttribute attr) {
  if (attr.getName() == kGradAttrName || attr.getName() == kUpdateAttrName) {
    if (!isa<FlatSymbolRefAttr>(attr.getValue()))
      return op->emitError() << "'" << attr.getName().getValue() << "' must name a tc.param";
    return success();
  }
  if (attr.getName() == kStateUpdateAttrName) {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitError() << "'tc.state_update' must be a name";
    return success();
  }
  if (attr.getName() == kSampleLossesAttrName) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError() << "'tc.sample_losses' is a unit attribute";
    return success();
  }
  // K-FAC's captured rows (autodiff's, for the optimizer phase).
  if (attr.getName() == kKfacInputAttrName || attr.getName() == kKfacOutputGradAttrName ||
      attr.getName() == kKfacBiasAttrName) {
    if (!isa<FlatSymbolRefAttr>(attr.getValue()))
      return op->emitError() << "'" << attr.getName().getValue() << "' must name a tc.param";
    return success();
  }
  if (attr.getName() == kKfacLayoutAttrName || attr.getName() == kKfacSamplesAttrName) {
    if (!isa<StringAttr, IntegerAttr>(attr.getValue()))
      return op->emitError() << "'" << attr.getName().getValue() << "' must be a layout name "
                             << "or a sample count";
    return success();
  }
  if (attr.getName() != trainc::tc::kOutputAttrName)
    return op->emitError() << "unknown tc result attribute '" << attr.getName().getValue() << "'";
  if (!isa<StringAttr>(attr.getValue()))
    return op->emitError() << "'" << attr.getName().getValue()
                           << "' must name the model output with a string";
  return success();
}
