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

#endif // TRAINC_PASSES_TD
