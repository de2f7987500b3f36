// RUN: trainc-opt %s --split-input-file --trainc-autodiff="freeze=^fc1\." --verify-diagnostics | FileCheck %s --check-prefix=FREEZE
// RUN: trainc-opt %s --split-input-file --trainc-autodiff --trainc-optimizer="clip-grad-norm=2.5" | FileCheck %s --check-prefix=CLIP
// RUN: trainc-opt %s --split-input-file --trainc-autodiff --trainc-optimizer | FileCheck %s --check-prefix=NOCLIP

// --freeze: fc1.* get no gradient (and so no update); fc2.* still do.
// FREEZE-LABEL: func.func @train_step(
// FREEZE-SAME: -> (tensor<f32> {tc.output = "loss"}, tensor<3xf32> {tc.grad = @fc2.w, tc.output = "grad.fc2.w"})
// FREEZE-NOT: grad.fc1
//
// --clip-grad-norm: one global norm over both gradients (tc.global_norm), a coefficient
// min(max_grad_norm / (norm + 1e-6), 1) scaling each, and the compiled norm
// kept on the function.
// CLIP-LABEL: func.func @train_step(
// CLIP-SAME: %[[MAX:[^:]*]]: tensor<f32> {tc.hyper = #tc.hyper<max_grad_norm>}
// CLIP-SAME: attributes {tc.clip_grad_norm = 2.500000e+00 : f64
// CLIP: %[[NORM:.*]] = tc.global_norm %[[G1:[0-9a-z]+]], %[[G2:[0-9a-z]+]] : (tensor<3xf32>, tensor<3xf32>) -> tensor<f32>
// CLIP: %[[EPS:.*]] = tc.constant dense<9.99999997E-7>
// CLIP: %[[DEN:.*]] = tc.add %[[NORM]], %[[EPS]]
// CLIP: %[[RATIO:.*]] = tc.div %[[MAX]], %[[DEN]]
// CLIP: %[[COEF:.*]] = tc.min %[[RATIO]], %{{.*}}
//   The factor scales each gradient inside its fused update.
// CLIP: tc.sgd_update %{{[^,]*}}, %[[G1]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[COEF]] :
// CLIP: tc.sgd_update %{{[^,]*}}, %[[G2]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[COEF]] :
//
// Without the option nothing is clipped.
// NOCLIP-LABEL: func.func @train_step(
// NOCLIP-NOT: max_grad_norm
// NOCLIP-NOT: tc.clip_grad_norm
tc.param @fc1.w trainable : tensor<3xf32>
tc.param @fc2.w trainable : tensor<3xf32>
func.func @loss(%x: tensor<3xf32> {tc.input = "x"}, %a: tensor<3xf32> {tc.param = @fc1.w},
                %b: tensor<3xf32> {tc.param = @fc2.w}) -> (tensor<f32> {tc.output = "loss"}) {
  %h = tc.mul %x, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %y = tc.mul %h, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %l = tc.reduce_sum %y {axes = array<i64>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
