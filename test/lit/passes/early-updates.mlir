// RUN: trainc-opt %s --trainc-optimizer="optimizer=sgd early-updates=true" --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s
// RUN: trainc-opt %s --trainc-optimizer="optimizer=sgd early-updates=true clip-grad-norm=1.0" | FileCheck %s --check-prefix=CLIP
// RUN: trainc-opt %s --trainc-optimizer="optimizer=sgd" --mlir-print-debuginfo --mlir-print-local-scope | FileCheck %s --check-prefix=LATE
// RUN: trainc-opt %s --trainc-optimizer="optimizer=sgd early-updates=true clip-grad-value=0.5" | FileCheck %s --check-prefix=VALUE
// RUN: trainc-opt %s --trainc-optimizer="optimizer=sgd early-updates=true grad-norm=true" | FileCheck %s --check-prefix=NORM
// RUN: not trainc-opt %s --trainc-optimizer="optimizer=sgd clip-grad-value=0.5 clip-grad-norm=1.0" 2>&1 | FileCheck %s --check-prefix=BOTH

// Early updates: w2's gradient is complete after the first backward op and
// the backward never reads w2 again, so its update runs right there and the
// gradient's buffer is free for the rest of the backward. w1's update waits
// for the backward's last read of w1 (the gradient of x), after its own
// gradient. Updates that follow the same op keep their order.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[G2:.*]] = tc.mul %arg0, %arg0 {{.*}}loc("backward of b"(fused<#tc.phase<backward>>["b"]))
// CHECK-NEXT: tc.sgd_update %arg2, %[[G2]]
// CHECK-NEXT: %[[G1:.*]] = tc.add %arg0, %[[G2]] {{.*}}loc("backward of a"(fused<#tc.phase<backward>>["a"]))
// CHECK-NEXT: tc.mul %[[G1]], %arg1 {{.*}}loc("backward of x"(fused<#tc.phase<backward>>["x"]))
// CHECK-NEXT: tc.sgd_update %arg1, %[[G1]]
// CHECK-NEXT: return
//
// Must not move: clipping scales every gradient by a factor that needs all
// of them, so the updates stay after it.
// CLIP: tc.min
// CLIP-NEXT: tc.sgd_update %arg1
// CLIP-NEXT: tc.sgd_update %arg2
//
// Clipping by value (clip_grad_value_) clamps each gradient on its own: a
// tc.clip per gradient that moves with its update, which still runs early.
// VALUE: %[[G2:.*]] = tc.mul %arg0, %arg0
// VALUE-NEXT: %[[C2:.*]] = tc.clip %[[G2]] {max = 5.000000e-01 : f32, min = -5.000000e-01 : f32}
// VALUE-NEXT: tc.sgd_update %arg2, %[[C2]]
// VALUE: %[[G1:.*]] = tc.add %arg0, %[[G2]]
// VALUE: %[[C1:.*]] = tc.clip %[[G1]]
// VALUE: tc.sgd_update %arg1, %[[C1]]
// BOTH: error: --clip-grad-value must be positive, and excludes --clip-grad-norm
//
// The gradient norm for the log (grad-norm) does not hold the gradients
// back: each one's norm follows it at once, the updates still run early,
// the norm of those norms comes after the last, and it is kept as the
// grad_norm state.
// NORM-LABEL: func.func @train_step
// NORM-SAME: tc.state = "grad_norm", tc.state_role = #tc.state_role<grad_norm>
// NORM: %[[G2:.*]] = tc.mul %arg0, %arg0
// NORM-NEXT: %[[N2:.*]] = tc.global_norm %[[G2]] : (tensor<3xf32>) -> tensor<f32>
// NORM-NEXT: tc.sgd_update %arg2, %[[G2]]
// NORM-NEXT: %[[G1:.*]] = tc.add %arg0, %[[G2]]
// NORM-NEXT: %[[N1:.*]] = tc.global_norm %[[G1]] : (tensor<3xf32>) -> tensor<f32>
// NORM-NEXT: %[[NORM:.*]] = tc.global_norm %[[N1]], %[[N2]] : (tensor<f32>, tensor<f32>) -> tensor<f32>
// NORM: tc.sgd_update %arg1, %[[G1]]
// NORM: return {{.*}}%[[NORM]]
//
// Without the option the updates run together at the end.
// LATE: tc.mul %{{.*}}, %arg1 {{.*}}loc("backward of x"(fused<#tc.phase<backward>>["x"]))
// LATE-NEXT: tc.sgd_update %arg1
// LATE-NEXT: tc.sgd_update %arg2
tc.param @w1 trainable : tensor<3xf32>
tc.param @w2 trainable : tensor<3xf32>
func.func @train_step(%x: tensor<3xf32> {tc.input = "x"}, %w1: tensor<3xf32> {tc.param = @w1},
                      %w2: tensor<3xf32> {tc.param = @w2})
    -> (tensor<f32> {tc.output = "loss"}, tensor<3xf32> {tc.grad = @w1, tc.output = "grad.w1"},
        tensor<3xf32> {tc.grad = @w2, tc.output = "grad.w2"}, tensor<3xf32> {tc.output = "dx"}) {
  %p = tc.mul %x, %w1 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32> loc("a")
  %q = tc.mul %p, %w2 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32> loc("b")
  %l = tc.reduce_sum %q {axes = array<i64>, keepdims = false} : (tensor<3xf32>) -> tensor<f32> loc("loss")
  %g2 = tc.mul %x, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32> loc("backward of b"(fused<#tc.phase<backward>>["b"]))
  %g1 = tc.add %x, %g2 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32> loc("backward of a"(fused<#tc.phase<backward>>["a"]))
  %dx = tc.mul %g1, %w1 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32> loc("backward of x"(fused<#tc.phase<backward>>["x"]))
  return %l, %g1, %g2, %dx : tensor<f32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}
