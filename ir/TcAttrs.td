//===- TcAttrs.td - attributes of the tc dialect -----------*- tablegen -*-===//
//
// Attributes that only the compiler makes. A model's strings (node, input
// and initializer names) become NameLocs and string attributes, never these,
// so what they mark cannot be forged by naming a node.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_IR_TCATTRS_TD
#define TRAINC_IR_TCATTRS_TD

include "TcBase.td"
include "mlir/IR/EnumAttr.td"

def Tc_StepPhase : I32EnumAttr<"StepPhase",
    "the part of the training step that a phase derived an op for", [
  I32EnumAttrCase<"Backward", 0, "backward">,
  I32EnumAttrCase<"Recompute", 1, "recompute">
]> {
  let cppNamespace = "::trainc::tc";
  let genSpecializedAttr = 0;
}

// The metadata of the fused location that autodiff (backward) and remat
// (recompute) put under the NameLoc of every op they create:
//   loc("backward of fc2"(fused<#tc.phase<backward>>["fc2"]))
// Liveness, remat and padding tell the backward from the forward by it.
def Tc_StepPhaseAttr : EnumAttr<Tc_Dialect, Tc_StepPhase, "phase"> {
  let summary = "marks a location as the backward's or remat's";
  let assemblyFormat = "`<` $value `>`";
}

#endif // TRAINC_IR_TCATTRS_TD
