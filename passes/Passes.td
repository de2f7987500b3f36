//===- Passes.td - trainc passes ---------------------------*- tablegen -*-===//

#ifndef TRAINC_PASSES_TD
#define TRAINC_PASSES_TD

include "mlir/Pass/PassBase.td"

def FoldBiasBeforeBatchNorm : Pass<"trainc-fold-bias-bn", "mlir::ModuleOp"> {
  let summary = "drop the bias of a conv/gemm that feeds a training-mode batch_norm";
  let description = [{
    In training mode BatchNormalization subtracts the batch mean per channel, so
    a per-channel bias added just before it cancels exactly; computing it (and
    its gradient) is wasted work. The pass removes the bias operand of
    `tc.conv` (and the `C` operand of `tc.gemm` when it is a per-column vector
    feeding a batch_norm over [N, C]) when the op's only user is a
    `tc.batch_norm {training = true}` on the same channel axis. The parameter
    stays in the module, so the exported model keeps it unchanged.

    Before:
    ```mlir
    %y = tc.conv %x, %w, %b {...} : (...) -> tensor<2x64x8x8xf32>
    %z, %m, %v = tc.batch_norm %y, %g, %beta, %rm, %rv {training = true} : ...
    ```
    After:
    ```mlir
    %y = tc.conv %x, %w {...} : (...) -> tensor<2x64x8x8xf32>
    %z, %m, %v = tc.batch_norm %y, %g, %beta, %rm, %rv {training = true} : ...
    ```
    It must not fire for inference-mode batch_norm (the running mean does not
    cancel the bias) or when the conv result has other users.
  }];
}

def PlanMemory : Pass<"trainc-plan", "mlir::ModuleOp"> {
  let summary = "static schedule and one memory arena with compile-time offsets";
  let description = [{
    Plans the memory of every function: the op order is the schedule; every
    tensor an op produces gets a byte offset in one arena, and buffers whose
    lifetimes do not overlap share memory (greedy by size, best fit, offsets
    aligned to 256 bytes). Views do not get buffers of their own: a
    `tc.reshape` (and an inference-mode `tc.dropout`) aliases its operand, and
    the running-statistics results of an inference-mode `tc.batch_norm` alias
    its mean and variance operands; an alias keeps its buffer alive.
    Function arguments and constants live outside the arena.

    Each planned op gets `tc.offsets` (one byte offset per result, -1 for a
    result that aliases another buffer); each function gets `tc.arena_bytes`.

    ```mlir
    %0 = tc.relu %x {tc.offsets = array<i64: 0>} : tensor<2x64xf32>
    %1 = tc.relu %0 {tc.offsets = array<i64: 512>} : tensor<2x64xf32>
    %2 = tc.relu %1 {tc.offsets = array<i64: 0>} : tensor<2x64xf32>  // %0 is dead: reuse
    ```
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", /*default=*/"256",
           "byte alignment of every buffer offset">
  ];
}

#endif // TRAINC_PASSES_TD
