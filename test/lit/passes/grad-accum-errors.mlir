// RUN: not trainc-opt %s --split-input-file --trainc-grad-accum=micro-batches=0 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not trainc-opt %s --split-input-file --trainc-optimizer --trainc-grad-accum=micro-batches=2 2>&1 | FileCheck %s --check-prefix=LATE
// RUN: not trainc-opt %s --split-input-file --trainc-grad-accum=micro-batches=2 2>&1 | FileCheck %s --check-prefix=NOGRAD

// ZERO: --grad-accum must be at least 1, got 0
//
// After the optimizer the step no longer returns gradients to accumulate.
// LATE: gradient accumulation runs before the optimizer phase
//
// A step that returns no gradient has nothing to accumulate: an error, not
// a silent no-op.
// NOGRAD: gradient accumulation: @train_step returns no gradient
tc.param @v : tensor<3xf32>
func.func @train_step(%x: tensor<3xf32> {tc.input = "x"}, %v: tensor<3xf32> {tc.param = @v})
    -> (tensor<f32> {tc.output = "loss"}) {
  %p = tc.mul %x, %v : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %l = tc.reduce_sum %p {axes = array<i64>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
