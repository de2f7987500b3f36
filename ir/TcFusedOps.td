//===- TcFusedOps.td - kernel groups of the tc dialect -----*- tablegen -*-===//
//
// `tc.fused` holds a group of pointwise ops that code generation turns into
// one kernel (in the spirit of IREE's flow.dispatch.region): the fusion phase
// forms the groups, the planner allocates only their results, the emitter
// composes the kernel from the ops' scalar expressions.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_IR_TCFUSEDOPS_TD
#define TRAINC_IR_TCFUSEDOPS_TD

def Tc_FusedOp : Op<Tc_Dialect, "fused",
    [IsolatedFromAbove, SingleBlockImplicitTerminator<"YieldOp">,
     RecursiveMemoryEffects,
     DeclareOpInterfaceMethods<Tc_TiedOpInterface, ["getReplacedOperand"]>]> {
  let summary = "a group of pointwise ops computed by one kernel";
  let description = [{
    The region computes its results element by element over one iteration
    shape (the shape of every result): each op inside is pointwise (or a
    training dropout, or an expand), its operands are block arguments (the
    group's inputs, read with numpy broadcasting to the iteration shape),
    splat constants (inlined as literals by code generation) or results of
    earlier ops of the group. Values computed inside and not yielded are
    intermediates: they live in registers and take no memory.

    The first op may be an f32 `tc.matmul`, the group's GEMM: the group is
    then the GEMM with its epilogue. The library GEMM writes the product
    into a yielded f32 result, and the pointwise ops after it finish each
    block of that result in place right after the GEMM computed it (CPU), or
    inside the cuBLASLt call (bias, ReLU and accumulation epilogues) or in
    the kernel launched after it (CUDA). The product is not a result and
    takes no memory of its own.

    The group may instead hold one f32 normalization (tc.batch_norm,
    tc.layer_norm and their backwards), its head. The pointwise ops before
    it are its prologue: they compute the operand it streams (a forward
    norm's input, a backward norm's result gradient), which is a result,
    since the norm reads it twice (its statistics, then each element).
    The ops after it are its epilogue, which reads the norm's first result.
    The runtime's norm runs the prologue on each plane (batch norm: one
    sample's channel) or row (layer norm) just before it reads it, and the
    epilogue on each plane or row just after it wrote it, on the same
    thread (CPU; CUDA launches them before and after the norm). The norm's
    other results (the running statistics, the scale and bias gradients)
    are results of the group too, of their own shapes; a training batch
    norm's running statistics replace their operands in place as before.
    `kernel` names the group after what it computes; the emitted kernel is
    `kNN_<kernel>`.

    ```mlir
    %r = tc.fused "add_relu" (%x, %b) : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32> {
    ^bb0(%a0: tensor<8x64xf32>, %a1: tensor<64xf32>):
      %0 = tc.add %a0, %a1 : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32>
      %1 = tc.relu %0 : tensor<8x64xf32>
      tc.yield %1 : tensor<8x64xf32>
    }

    %h = tc.fused "matmul_add_relu" (%x, %w, %b) : (tensor<8x32xf32>, tensor<32x64xf32>, tensor<64xf32>) -> tensor<8x64xf32> {
    ^bb0(%a0: tensor<8x32xf32>, %a1: tensor<32x64xf32>, %a2: tensor<64xf32>):
      %0 = tc.matmul %a0, %a1 : (tensor<8x32xf32>, tensor<32x64xf32>) -> tensor<8x64xf32>
      %1 = tc.add %0, %a2 : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32>
      %2 = tc.relu %1 : tensor<8x64xf32>
      tc.yield %2 : tensor<8x64xf32>
    }

    %y, %rm, %rv = tc.fused "batch_norm_relu" (%x, %g, %b, %m, %v) : (...) -> (tensor<8x64x16x16xf32>, tensor<64xf32>, tensor<64xf32>) {
    ^bb0(...):
      %0:3 = tc.batch_norm %a0, %a1, %a2, %a3, %a4 {training = true} : ...
      %1 = tc.relu %0#0 : tensor<8x64x16x16xf32>
      tc.yield %1, %0#1, %0#2 : ...
    }
    ```
  }];
  let arguments = (ins StrAttr:$kernel, Variadic<Tc_Tensor>:$inputs);
  let results = (outs Variadic<Tc_Tensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $kernel `(` $inputs `)` attr-dict `:` functional-type($inputs, $results) $body
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    mlir::Block &getBlock() { return getBody().front(); }
    /// The verifier's checks of a normalization heading the group.
    mlir::LogicalResult verifyNormHead(mlir::Operation *head);
    /// The shape every result of the group has (but a normalization head's
    /// statistics and parameter gradients).
    llvm::ArrayRef<int64_t> getIterationShape() {
      return mlir::cast<mlir::RankedTensorType>(getResult(0).getType()).getShape();
    }
  }];
}

def Tc_YieldOp : Op<Tc_Dialect, "yield", [Pure, Terminator, HasParent<"FusedOp">]> {
  let summary = "the results of a tc.fused group";
  let arguments = (ins Variadic<Tc_Tensor>:$values);
  let builders = [OpBuilder<(ins), [{ /* nothing yielded */ }]>];
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

#endif // TRAINC_IR_TCFUSEDOPS_TD
