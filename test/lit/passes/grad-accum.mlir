// RUN: trainc-opt %s --trainc-grad-accum=micro-batches=4 --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s
// RUN: trainc-opt %s --trainc-grad-accum=micro-batches=4 --trainc-optimizer | FileCheck %s --check-prefix=SGD
// RUN: trainc-opt %s --trainc-grad-accum | FileCheck %s --check-prefix=ONE

// Each gradient goes into its accumulator state just after the op that
// completes it (w2's after the first backward op, not at the return), in
// both functions; @accumulate_step returns the accumulators as state
// updates, @train_step hands them on as the gradients and returns them as
// state updates too (the sums are then written in place).
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[W:arg3]]: tensor<f32> {tc.hyper = #tc.hyper<grad_accum.weight>}
// CHECK-SAME: %[[K:arg4]]: tensor<f32> {tc.hyper = #tc.hyper<grad_accum.keep>}
// CHECK-SAME: %[[A1:arg5]]: tensor<3xf32> {tc.state = "grad_accum.w1", tc.state_role = #tc.state_role<grad_accum>}
// CHECK-SAME: %[[A2:arg6]]: tensor<3xf32> {tc.state = "grad_accum.w2", tc.state_role = #tc.state_role<grad_accum>}
// CHECK-SAME: -> (tensor<f32> {tc.output = "loss"}, tensor<3xf32> {tc.grad = @w1, tc.output = "grad.w1"}, tensor<3xf32> {tc.grad = @w2, tc.output = "grad.w2"}, tensor<3xf32> {tc.output = "grad_accum.w1", tc.state_update = "grad_accum.w1"}, tensor<3xf32> {tc.output = "grad_accum.w2", tc.state_update = "grad_accum.w2"})
// CHECK-SAME: tc.grad_accum = 4
// CHECK: %[[G2:.*]] = tc.mul %arg0, %arg0 {{.*}}loc("backward of b"(fused<#tc.phase<backward>>["b"]))
// CHECK-NEXT: %[[T2:.*]] = tc.accumulate_grad %[[A2]], %[[G2]], %[[W]], %[[K]] {{.*}}loc("gradient accumulation of w2"("backward of b"(fused<#tc.phase<backward>>["b"])))
// CHECK-NEXT: %[[G1:.*]] = tc.add %arg0, %[[G2]] {{.*}}loc("backward of a"(fused<#tc.phase<backward>>["a"]))
// CHECK-NEXT: %[[T1:.*]] = tc.accumulate_grad %[[A1]], %[[G1]], %[[W]], %[[K]]
// CHECK: return %{{.*}}, %[[T1]], %[[T2]], %[[T1]], %[[T2]] :
// CHECK-LABEL: func.func @accumulate_step(
// CHECK-SAME: {tc.state = "grad_accum.w2", tc.state_role = #tc.state_role<grad_accum>}
// CHECK-SAME: -> (tensor<f32> {tc.output = "loss"}, tensor<3xf32> {tc.output = "grad_accum.w1", tc.state_update = "grad_accum.w1"}, tensor<3xf32> {tc.output = "grad_accum.w2", tc.state_update = "grad_accum.w2"})
// CHECK-NOT: tc.grad_accum
// CHECK: tc.accumulate_grad
// CHECK: tc.accumulate_grad
// CHECK: return
//
// The optimizer then updates from the accumulated gradients; the
// accumulate step has no update and no optimizer hyperparameter.
// SGD-LABEL: func.func @train_step(
// SGD: %[[T2:.*]] = tc.accumulate_grad
// SGD: tc.sgd_update %{{.*}}, %[[T2]]
// SGD: return {{.*}} : tensor<f32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
// SGD-LABEL: func.func @accumulate_step(
// SGD-NOT: tc.hyper = #tc.hyper<lr>
// SGD-NOT: tc.sgd_update
// SGD: return
//
// Must not fire with K = 1 (the default).
// ONE-NOT: accumulate
tc.param @w1 trainable : tensor<3xf32>
tc.param @w2 trainable : tensor<3xf32>
func.func @train_step(%x: tensor<3xf32> {tc.input = "x"}, %w1: tensor<3xf32> {tc.param = @w1},
                      %w2: tensor<3xf32> {tc.param = @w2})
    -> (tensor<f32> {tc.output = "loss"}, tensor<3xf32> {tc.grad = @w1, tc.output = "grad.w1"},
        tensor<3xf32> {tc.grad = @w2, tc.output = "grad.w2"}) {
  %p = tc.mul %x, %w1 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %q = tc.mul %p, %w2 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %l = tc.reduce_sum %q {axes = array<i64>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
  %g2 = tc.mul %x, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32> loc("backward of b"(fused<#tc.phase<backward>>["b"]))
  %g1 = tc.add %x, %g2 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32> loc("backward of a"(fused<#tc.phase<backward>>["a"]))
  %dx = tc.mul %g1, %w1 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32> loc("backward of x"(fused<#tc.phase<backward>>["x"]))
  return %l, %g1, %g2 : tensor<f32>, tensor<3xf32>, tensor<3xf32>
}

