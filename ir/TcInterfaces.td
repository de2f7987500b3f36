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

#endif // TRAINC_IR_TCINTERFACES_TD
