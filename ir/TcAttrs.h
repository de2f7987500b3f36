//===- TcAttrs.h - attributes of the tc dialect ----------------*- C++ -*-===//
//
// The step-phase mark of locations (TcAttrs.td): what autodiff and remat
// created, told apart from the forward without reading any name.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_IR_TCATTRS_H
#define TRAINC_IR_TCATTRS_H

#include "ir/TcDialect.h"

#include "mlir/IR/Attributes.h"
#include "mlir/IR/Location.h"

#include <optional>
#include <string>

#include "ir/TcEnums.h.inc"
#define GET_ATTRDEF_CLASSES
#include "ir/TcAttrs.h.inc"

namespace trainc::tc {

/// The location of an op that `phase` derives from the op at `from`:
/// NameLoc(`name`) over a fused location marked #tc.phase<phase> that holds
/// `from`. The name is for readers; the mark is what phases test.
mlir::Location phaseLoc(const std::string &name, mlir::Location from, StepPhase phase);

/// The phase `loc` was marked with: a NameLoc directly over a marked fused
/// location, a marked fused location, or a fused location (several fused ops)
/// that holds one. A name alone, such as an ONNX node called "backward of x",
/// marks nothing.
std::optional<StepPhase> markedPhase(mlir::Location loc);

} // namespace trainc::tc

#endif // TRAINC_IR_TCATTRS_H
