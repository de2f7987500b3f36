// RUN: trainc-opt %s --split-input-file --trainc-optimizer | FileCheck %s --check-prefix=SGD
// RUN: trainc-opt %s --split-input-file --trainc-optimizer="optimizer=sgd nesterov=true" | FileCheck %s --check-prefix=NESTEROV
// RUN: trainc-opt %s --split-input-file --trainc-optimizer="optimizer=adamw no-decay=none" | FileCheck %s --check-prefix=ADAMW
// RUN: trainc-opt %s --split-input-file --trainc-optimizer="optimizer=adam" | FileCheck %s --check-prefix=ADAM
// RUN: not trainc-opt %s --split-input-file --trainc-optimizer="optimizer=lion" 2>&1 | FileCheck %s --check-prefix=KIND
// KIND: --optimizer must be sgd, adam, adamw, lamb, lars or kfac, got 'lion'

// Stochastic gradient descent: the gradient output becomes the updated
// parameter and the momentum buffer, from one fused tc.sgd_update whose
// hyperparameters are runtime scalars.
// SGD-LABEL: func.func @train_step(
// SGD-SAME: %[[P:arg1]]: tensor<3xf32> {tc.param = @w}
// SGD-SAME: %[[LR:.*]]: tensor<f32> {tc.hyper = #tc.hyper<lr>}, %[[WD:.*]]: tensor<f32> {tc.hyper = #tc.hyper<weight_decay>}, %[[M:.*]]: tensor<f32> {tc.hyper = #tc.hyper<momentum>}, %[[B:.*]]: tensor<3xf32> {tc.state = "momentum.w", tc.state_role = #tc.state_role<momentum>}
// SGD-SAME: -> (tensor<f32> {tc.output = "loss"}, tensor<3xf32> {tc.output = "param.w", tc.update = @w}, tensor<3xf32> {tc.output = "momentum.w", tc.state_update = "momentum.w"})
// SGD-SAME: tc.optimizer = #tc.optimizer<sgd>
// SGD: %[[NP:[^,]*]], %[[NB:[^ ]*]] = tc.sgd_update %[[P]], %[[GRAD:[^,]*]], %[[B]], %[[LR]], %[[M]], %[[WD]] :
// SGD-NOT: nesterov
// SGD: return %{{.*}}, %[[NP]], %[[NB]]
//
//   Nesterov: a flag of the update.
// NESTEROV: tc.sgd_update {{.*}} {nesterov}
//
//   AdamW: decoupled decay, two moments, 1 - beta1/2 as hyperparameters; the
//   step count as state, from which the step size and the square root of
//   the second bias correction are computed on the device (in f64).
// ADAMW-LABEL: func.func @train_step(
// ADAMW-SAME: %[[P:arg1]]: tensor<3xf32> {tc.param = @w}
// ADAMW-SAME: %[[T:arg2]]: tensor<f32> {tc.state = "adam.step", tc.state_role = #tc.state_role<adam.step>}
// ADAMW-SAME: {tc.hyper = #tc.hyper<one_minus_beta1>}
// ADAMW-SAME: {tc.hyper = #tc.hyper<one_minus_beta2>}
// ADAMW-SAME: {tc.hyper = #tc.hyper<beta1>}
// ADAMW-SAME: {tc.hyper = #tc.hyper<beta2>}
// ADAMW-SAME: {tc.hyper = #tc.hyper<eps>}
// ADAMW-SAME: %[[M:[^:]*]]: tensor<3xf32> {tc.state = "exp_avg.w", tc.state_role = #tc.state_role<exp_avg>}
// ADAMW-SAME: %[[V:[^:]*]]: tensor<3xf32> {tc.state = "exp_avg_sq.w", tc.state_role = #tc.state_role<exp_avg_sq>}
// ADAMW-SAME: tc.optimizer = #tc.optimizer<adamw>
// ADAMW: %[[T1:.*]] = tc.add %[[T]], %{{.*}} : (tensor<f32>, tensor<f32>) -> tensor<f32>
// ADAMW: tc.pow {{.*}} : (tensor<f64>, tensor<f64>) -> tensor<f64>
// ADAMW: %[[STEP:.*]] = tc.cast %{{.*}} {to = f32} : (tensor<f64>) -> tensor<f32>
// ADAMW: %[[BC2:.*]] = tc.cast %{{.*}} {to = f32} : (tensor<f64>) -> tensor<f32>
// ADAMW: %[[NP:[^,]*]], %[[NM:[^,]*]], %[[NV:[^ ]*]] = tc.adam_update %[[P]], %{{[^,]*}}, %[[M]], %[[V]], %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[STEP]], %[[BC2]] {decoupled}
// ADAMW: return %{{.*}}, %[[NP]], %[[T1]], %[[NM]], %[[NV]]
//   Adam: L2 weight decay in the gradient (no decoupled flag).
// ADAM: tc.adam_update
// ADAM-NOT: decoupled
// ADAM-SAME: -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
tc.param @w trainable : tensor<3xf32>
func.func @train_step(%x: tensor<3xf32> {tc.input = "x"}, %w: tensor<3xf32> {tc.param = @w})
    -> (tensor<f32> {tc.output = "loss"}, tensor<3xf32> {tc.grad = @w, tc.output = "grad.w"}) {
  %p = tc.mul %x, %w : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %l = tc.reduce_sum %p {axes = array<i64>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
  return %l, %x : tensor<f32>, tensor<3xf32>
}

// -----

// Already rewritten (it returns updates): the pass must not fire again.
// SGD-LABEL: func.func @train_step(%arg0: tensor<3xf32>)
// SGD-NOT: tc.hyper
tc.param @v trainable : tensor<3xf32>
func.func @train_step(%w: tensor<3xf32>) -> (tensor<f32> {tc.output = "loss"}, tensor<3xf32> {tc.update = @v}) {
  %l = tc.reduce_sum %w {axes = array<i64>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
  return %l, %w : tensor<f32>, tensor<3xf32>
}
