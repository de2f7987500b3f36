//===- TcBase.td - the tc dialect and its type constraints -*- tablegen -*-===//
//
// The `tc` dialect is trainc's tensor IR: one op per mathematical operation of
// a training step, on statically shaped tensors, with ONNX node names kept as
// locations.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_IR_TCBASE_TD
#define TRAINC_IR_TCBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/CommonAttrConstraints.td"

def Tc_Dialect : Dialect {
  let name = "tc";
  let cppNamespace = "::trainc::tc";
  let summary = "Tensor ops of a training step, imported from ONNX";
  let description = [{
    The `tc` dialect models a whole training step (forward, loss, backward,
    optimizer update) on statically shaped tensors. Every op has one shape
    function (`inferReturnTypes`) that both the verifier and later phases use,
    so an op can never carry a result type that disagrees with its operands.

    Element types are `f32`, `f16`, `bf16`, `f64`, `i64`, `i32` and `i1`.
    Parameters of the model are `tc.param` symbols; `func.func @forward` takes
    them as arguments marked `{tc.param = @name}`.
  }];
  // Inherent attributes live in the attribute dictionary, so that the importer
  // can build any op generically from an attribute list.
  let usePropertiesForAttributes = 0;
  // Its attributes (TcAttrs.td) print as #tc.<mnemonic><...>.
  let useDefaultAttributePrinterParser = 1;
  // Checks the `tc.param`, `tc.input` and `tc.output` function attributes.
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Tc_AnyElement : AnyTypeOf<[F32, F16, BF16, F64, I64, I32, I1]>;
def Tc_Tensor : StaticShapeTensorOf<[F32, F16, BF16, F64, I64, I32, I1]>;
def Tc_FloatTensor : StaticShapeTensorOf<[F32, F16, BF16, F64]>;
def Tc_NumericTensor : StaticShapeTensorOf<[F32, F16, BF16, F64, I64, I32]>;
def Tc_IndexTensor : StaticShapeTensorOf<[I64, I32]>;
def Tc_BoolTensor : StaticShapeTensorOf<[I1]>;

//===----------------------------------------------------------------------===//
// Traits
//===----------------------------------------------------------------------===//

// An op whose every result element depends only on the operand elements at the
// same (broadcast) index. The fusion phase groups chains of them into one kernel.
def Tc_Pointwise : NativeOpTrait<"Pointwise"> {
  let cppNamespace = "::trainc::tc::OpTrait";
}

// An optimizer's update of one parameter: operand 0 is the parameter, 1 its
// gradient, result 0 the parameter's next value (the others its state's).
// Liveness, the update scheduling and codegen find updates by this trait.
def Tc_ParamUpdate : NativeOpTrait<"ParamUpdate"> {
  let cppNamespace = "::trainc::tc::OpTrait";
}

// A GEMM or a convolution: the mixed-precision phase gives it 16-bit
// operands and f32 accumulation, remat recomputes it only under a memory
// budget.
def Tc_Contraction : NativeOpTrait<"Contraction"> {
  let cppNamespace = "::trainc::tc::OpTrait";
}

// An op the runtime has bf16 and fp16 kernels of (codegen refuses 16-bit
// operands of any other library op; the mixed-precision phase gives it its
// 16-bit operands as they are).
def Tc_LowPrecisionKernel : NativeOpTrait<"LowPrecisionKernel"> {
  let cppNamespace = "::trainc::tc::OpTrait";
}

// A pointwise op with f(0) = 0 (f(0, 0) = 0 for two operands): the pad
// phase knows a zero tail of its operands stays zero.
def Tc_KeepsZero : NativeOpTrait<"KeepsZero"> {
  let cppNamespace = "::trainc::tc::OpTrait";
}

// Autocast classes (the mixed-precision phase; PyTorch's autocast lists):
// an op that keeps its input's type (views, data movement, pooling), and
// one that computes in f32 whatever its operands (exp, log, pow,
// reciprocal). Contractions run in the low type (Tc_Contraction); other
// pointwise ops take their widest float operand's type; every other op
// reads f32.
def Tc_AutocastFollow : NativeOpTrait<"AutocastFollow"> {
  let cppNamespace = "::trainc::tc::OpTrait";
}
def Tc_AutocastF32 : NativeOpTrait<"AutocastF32"> {
  let cppNamespace = "::trainc::tc::OpTrait";
}
// A non-pointwise op that computes in its widest float operand's type, as
// pointwise ops do (dropout, concat).
def Tc_AutocastWidest : NativeOpTrait<"AutocastWidest"> {
  let cppNamespace = "::trainc::tc::OpTrait";
}
// Batch norm: its input keeps its type, its statistics and affine
// parameters are f32 (cuDNN's and oneDNN's mixed batch norm).
def Tc_AutocastNorm : NativeOpTrait<"AutocastNorm"> {
  let cppNamespace = "::trainc::tc::OpTrait";
}

// Recompute cost classes (the remat phase). Views (TiedOpInterface) are
// free, pointwise ops cost one pass, contractions are recomputed only under
// a memory budget (Tc_Contraction), and any op without a class is never
// recomputed.
// An op that moves elements without arithmetic (transpose, expand, slice,
// concat, gather): one pass, as a pointwise op.
def Tc_DataMovement : NativeOpTrait<"DataMovement"> {
  let cppNamespace = "::trainc::tc::OpTrait";
}
// A library op that reads its input once or twice (norms, softmaxes,
// pooling).
def Tc_Normalization : NativeOpTrait<"Normalization"> {
  let cppNamespace = "::trainc::tc::OpTrait";
}

#endif // TRAINC_IR_TCBASE_TD
