// RUN: trainc-opt %s --trainc-optimizer="optimizer=lamb" | FileCheck %s --check-prefix=LAMB
// RUN: trainc-opt %s --trainc-optimizer="optimizer=lars" | FileCheck %s --check-prefix=LARS
// RUN: trainc-opt %s --trainc-optimizer="optimizer=lars no-decay=^w" | FileCheck %s --check-prefix=REGEX
// RUN: trainc-opt %s --trainc-optimizer="optimizer=adamw no-decay=none" | FileCheck %s --check-prefix=NONE
// RUN: trainc-opt %s --trainc-optimizer="optimizer=sgd" | FileCheck %s --check-prefix=NONE
// RUN: not trainc-opt %s --trainc-optimizer="optimizer=lars no-decay=zzz" 2>&1 | FileCheck %s --check-prefix=NOMATCH
// RUN: not trainc-opt %s --trainc-optimizer="optimizer=lamb no-decay=(" 2>&1 | FileCheck %s --check-prefix=BADREGEX

// Parameter groups: under lamb (and adamw, lars) the default --no-decay=1d
// puts the rank-1 @b in the group: its update reads the weight decay 0 (a
// constant), without layer adaptation, and its tc.param is marked
// no_decay. The updates with weight decay come first, so that each group
// is one run of updates (one multi-tensor kernel); the results keep the
// parameters' order.
// LAMB: tc.param @w2 trainable : tensor<2x3xf32>
// LAMB: tc.param @b trainable no_decay : tensor<3xf32>
// LAMB-LABEL: func.func @train_step(
// LAMB-SAME: %[[W:arg1]]: tensor<2x3xf32> {tc.param = @w2}, %[[B:arg2]]: tensor<3xf32> {tc.param = @b}
// LAMB-SAME: %[[T:arg3]]: tensor<f32> {tc.state = "adam.step", tc.state_role = #tc.state_role<adam.step>}
// LAMB-SAME: %[[LR:arg6]]: tensor<f32> {tc.hyper = #tc.hyper<lr>}, %[[WD:arg7]]: tensor<f32> {tc.hyper = #tc.hyper<weight_decay>}
// LAMB-SAME: tc.optimizer = #tc.optimizer<lamb>
//   The bias corrections, from the step count (LAMB's m_hat is m / bc1).
// LAMB: %[[BC1:.*]] = tc.cast %{{.*}} {to = f32} : (tensor<f64>) -> tensor<f32>
// LAMB: %[[BC2:.*]] = tc.cast %{{.*}} {to = f32} : (tensor<f64>) -> tensor<f32>
// LAMB: %[[NW:[^,]*]], %[[MW:[^,]*]], %[[VW:[^ ]*]] = tc.lamb_update %[[W]], %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[LR]], %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[WD]], %[[BC1]], %[[BC2]] {layer_adaptation}
// LAMB: %[[ZERO:.*]] = tc.constant dense<0.000000e+00> : tensor<f32>
// LAMB: %[[NB:[^,]*]], %[[MB:[^,]*]], %[[VB:[^ ]*]] = tc.lamb_update %[[B]], {{.*}}, %[[ZERO]], %[[BC1]], %[[BC2]] :
// LAMB: return %{{[^,]*}}, %[[NW]], %[[NB]], %{{[^,]*}}, %[[MW]], %[[VW]], %[[MB]], %[[VB]]
//
//   Under lars: momentum, the trust coefficient and eps; @b without adaptation.
// LARS: tc.param @b trainable no_decay
// LARS-LABEL: func.func @train_step(
// LARS-SAME: {tc.hyper = #tc.hyper<momentum>}
// LARS-SAME: {tc.hyper = #tc.hyper<trust_coefficient>}
// LARS-SAME: {tc.hyper = #tc.hyper<eps>}
// LARS: tc.lars_update %arg1, {{.*}} {layer_adaptation}
// LARS: tc.lars_update %arg2,
// LARS-NOT: layer_adaptation
// LARS-SAME: -> (tensor<3xf32>, tensor<3xf32>)
//
//   A regular expression, searched in the names: @w2 is in the group.
// REGEX: tc.param @w2 trainable no_decay
// REGEX: tc.param @b trainable :
// REGEX: tc.lars_update %arg2, {{.*}} {layer_adaptation}
// REGEX: tc.lars_update %arg1,
// REGEX-NOT: layer_adaptation
//
//   Must not fire: --no-decay=none, and sgd's default (PyTorch's one group).
// NONE-NOT: no_decay
// NONE-NOT: tc.constant dense<0.000000e+00>
// NONE: return
//
// NOMATCH: error: --no-decay='zzz' matches no trained parameter
// BADREGEX: error: --no-decay='(' is neither 1d, none nor a regular expression: parentheses not balanced
tc.param @w2 trainable : tensor<2x3xf32>
tc.param @b trainable : tensor<3xf32>
func.func @train_step(%x: tensor<2x3xf32> {tc.input = "x"}, %w: tensor<2x3xf32> {tc.param = @w2},
                      %b: tensor<3xf32> {tc.param = @b})
    -> (tensor<f32> {tc.output = "loss"}, tensor<2x3xf32> {tc.grad = @w2, tc.output = "grad.w2"},
        tensor<3xf32> {tc.grad = @b, tc.output = "grad.b"}) {
  %p = tc.mul %x, %w : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %l = tc.reduce_sum %p {axes = array<i64>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
  %g = tc.reduce_sum %x {axes = array<i64: 0>, keepdims = false} : (tensor<2x3xf32>) -> tensor<3xf32>
  return %l, %x, %g : tensor<f32>, tensor<2x3xf32>, tensor<3xf32>
}
