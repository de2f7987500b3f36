//===- TcInterfaces.td - interfaces of the tc dialect ------*- tablegen -*-===//

#ifndef TRAINC_IR_TCINTERFACES_TD
#define TRAINC_IR_TCINTERFACES_TD

include "mlir/IR/OpBase.td"

def Tc_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::trainc::tc";
  let description = [{
    The reverse-mode rule of a differentiable op: given the gradients of the
    loss with respect to the op's results (null where a result has none),
    builds tc ops at the builder's insertion point that compute the gradients
    with respect to its operands. A null entry marks an operand that is not
    differentiable (integer indices, labels). Gradients of broadcast operands
    are summed back to the operand's shape.
  }];
  let methods = [
    InterfaceMethod<
      "Builds the operand gradients from the result gradients.",
      "::llvm::LogicalResult", "buildGradients",
      (ins "::mlir::OpBuilder &":$builder,
           "::llvm::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>
  ];
}

def Tc_TiedOpInterface : OpInterface<"TiedOpInterface"> {
  let cppNamespace = "::trainc::tc";
  let description = [{
    Results that share an operand's buffer, in one of two ways. A view is
    the operand's bytes themselves, nothing computed (a reshape, dropout and
    batch norm's running statistics outside training). A replacement is the
    operand's next value, written over it in place (an optimizer update's
    parameter and state, an accumulated gradient, training batch norm's
    running statistics: each element reads its old value, then writes the
    new one). Liveness, the memory plan and codegen place buffers through
    this interface alone; an op that ties a result and does not say so here
    gets a buffer of its own.
  }];
  let methods = [
    InterfaceMethod<
      "The operand whose buffer result `index` is (a view), or null.",
      "::mlir::Value", "getViewSource", (ins "unsigned":$index), [{}],
      [{ return nullptr; }]>,
    InterfaceMethod<
      "Where view result `index` starts in its source's buffer, in elements.",
      "int64_t", "getViewOffset", (ins "unsigned":$index), [{}],
      [{ return 0; }]>,
    InterfaceMethod<
      "The operand whose buffer result `index` overwrites with its next value, or null.",
      "::mlir::Value", "getReplacedOperand", (ins "unsigned":$index), [{}],
      [{ return nullptr; }]>
  ];
}

#endif // TRAINC_IR_TCINTERFACES_TD
