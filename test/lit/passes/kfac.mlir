// RUN: trainc-opt %s --split-input-file --trainc-autodiff="kfac=true" | FileCheck %s --check-prefix=CAPTURE
// RUN: trainc-opt %s --split-input-file --trainc-autodiff | FileCheck %s --check-prefix=PLAIN
// RUN: trainc-opt %s --split-input-file --trainc-autodiff="kfac=true" --trainc-optimizer="optimizer=kfac" | FileCheck %s --check-prefix=KFAC

// A Linear layer (Gemm with a bias) and a per-channel scale. With kfac,
// autodiff returns the Gemm's input rows (with the weight's layout, the
// batch and the bias) and its output gradient; the scale is no layer.
// CAPTURE-LABEL: func.func @train_step(
// CAPTURE-SAME: tensor<2x4xf32> {tc.kfac_bias = @b, tc.kfac_input = @w, tc.kfac_layout = "out_in", tc.kfac_samples = 2 : i64, tc.output = "kfac.input.w"}, tensor<2x3xf32> {tc.kfac_output_grad = @w, tc.output = "kfac.output_grad.w"})
// CAPTURE-NOT: tc.kfac_input = @s
// CAPTURE: tc.expand
// CAPTURE: %[[DY:.*]] = tc.mul %{{.*}}, %arg3
// CAPTURE: return %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %arg0, %[[DY]]
//
//   Without kfac nothing is captured.
// PLAIN-LABEL: func.func @train_step(
// PLAIN-NOT: tc.kfac
//
//   The optimizer phase: A = decay A + (1 - decay) [x 1]^T [x 1] / N and
//   G = decay G + (1 - decay) N dy^T dy from the identity states, their
//   damped inverses, V = G^-1 [dW db] A^-1, the KL clip, and SGD's update on
//   V's columns; the scale keeps its plain gradient. The captured rows are
//   no results any more.
// KFAC-LABEL: func.func @train_step(
// KFAC-SAME: %[[DECAY:arg4]]: tensor<f32> {tc.hyper = #tc.hyper<kfac.stat_decay>}
// KFAC-SAME: %[[DAMP:arg5]]: tensor<f32> {tc.hyper = #tc.hyper<kfac.damping>}
// KFAC-SAME: %[[INV:arg6]]: tensor<f32> {tc.hyper = #tc.hyper<kfac.invert>}
// KFAC-SAME: %[[A:arg7]]: tensor<5x5xf32> {tc.state = "kfac.a.w", tc.state_role = #tc.state_role<kfac.a>}
// KFAC-SAME: %[[AI:arg8]]: tensor<5x5xf32> {tc.state = "kfac.a_inverse.w", tc.state_role = #tc.state_role<kfac.a_inverse>}
// KFAC-SAME: %[[G:arg9]]: tensor<3x3xf32> {tc.state = "kfac.g.w", tc.state_role = #tc.state_role<kfac.g>}
// KFAC-SAME: %[[GI:arg10]]: tensor<3x3xf32> {tc.state = "kfac.g_inverse.w", tc.state_role = #tc.state_role<kfac.g_inverse>}
// KFAC-SAME: {tc.hyper = #tc.hyper<kfac.kl_clip>}
// KFAC-NOT: kfac.input
// KFAC-SAME: tc.optimizer = #tc.optimizer<kfac>
// KFAC: tc.expand
// KFAC: %[[DY:.*]] = tc.mul %{{.*}}, %arg3
// KFAC: %[[DW:.*]] = tc.gemm %[[DY]], %arg0 {trans_a = true}
// KFAC: %[[DB:.*]] = tc.reduce_sum %[[DY]] {axes = array<i64: 0>
// KFAC: %[[X1:.*]] = tc.concat %arg0, %{{.*}} {axis = 1 : i64} : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x5xf32>
// KFAC: %[[AB:.*]] = tc.gemm %[[X1]], %[[X1]] {alpha = 5.000000e-01 : f32, trans_a = true}
// KFAC: %[[GB:.*]] = tc.gemm %[[DY]], %[[DY]] {alpha = 2.000000e+00 : f32, trans_a = true}
// KFAC: %[[KEEP:.*]] = tc.sub %{{.*}}, %[[DECAY]]
// KFAC: %[[OLDA:.*]] = tc.mul %[[A]], %[[DECAY]]
// KFAC: %[[NEWA:.*]] = tc.mul %[[AB]], %[[KEEP]]
// KFAC: %[[NA:.*]] = tc.add %[[OLDA]], %[[NEWA]]
// KFAC: %[[NAI:.*]] = tc.damped_inverse %[[NA]], %[[DAMP]], %[[INV]], %[[AI]]
// KFAC: %[[NG:.*]] = tc.add
// KFAC: %[[NGI:.*]] = tc.damped_inverse %[[NG]], %[[DAMP]], %[[INV]], %[[GI]]
// KFAC: %[[FULL:.*]] = tc.concat %[[DW]], %{{.*}} {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3x1xf32>) -> tensor<3x5xf32>
// KFAC: %[[R:.*]] = tc.gemm %[[FULL]], %[[NAI]]
// KFAC: %[[V:.*]] = tc.gemm %[[NGI]], %[[R]]
// KFAC: tc.mul %[[V]], %[[FULL]]
// KFAC: %[[NU:.*]] = tc.min
// KFAC: %[[SCALED:.*]] = tc.mul %[[V]], %[[NU]]
// KFAC: %[[VW:.*]] = tc.slice %[[SCALED]] {ends = array<i64: 3, 4>, starts = array<i64: 0, 0>
// KFAC: tc.sgd_update %arg1, %[[VW]],
// KFAC: tc.sgd_update %arg3, %{{.*}},
// KFAC: return %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[NA]], %[[NAI]], %[[NG]], %[[NGI]],
tc.param @w trainable : tensor<3x4xf32>
tc.param @b trainable : tensor<3xf32>
tc.param @s trainable : tensor<3xf32>
func.func @loss(%x: tensor<2x4xf32> {tc.input = "x"}, %w: tensor<3x4xf32> {tc.param = @w},
                %b: tensor<3xf32> {tc.param = @b}, %s: tensor<3xf32> {tc.param = @s})
    -> (tensor<f32> {tc.output = "loss"}) {
  %y = tc.gemm %x, %w, %b {trans_b = true} : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %z = tc.mul %y, %s : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %l = tc.reduce_sum %z {axes = array<i64>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A grouped convolution has no one pair of factors: nothing is captured,
// its weight takes plain SGD, and the step says why (for compile's notes).
// CAPTURE-LABEL: func.func @train_step(
// CAPTURE-NOT: tc.kfac_input
// CAPTURE-SAME: tc.kfac_plain = ["k: a grouped convolution"]
// KFAC-LABEL: func.func @train_step(
// KFAC-NOT: kfac.a
// KFAC-SAME: tc.kfac_plain = ["k: a grouped convolution"]
// KFAC: tc.sgd_update %arg1, %{{.*}},
tc.param @k trainable : tensor<4x1x3x3xf32>
func.func @loss(%x: tensor<2x2x5x5xf32> {tc.input = "x"}, %k: tensor<4x1x3x3xf32> {tc.param = @k})
    -> (tensor<f32> {tc.output = "loss"}) {
  %y = tc.conv %x, %k {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<2x2x5x5xf32>, tensor<4x1x3x3xf32>) -> tensor<2x4x3x3xf32>
  %l = tc.reduce_sum %y {axes = array<i64>, keepdims = false} : (tensor<2x4x3x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// An ungrouped convolution: its rows are the patches (a convolution with a
// one-hot kernel of C kh kw = 18 channels), [N H' W', 18], and the output
// gradient's [N H' W', M].
// CAPTURE-LABEL: func.func @train_step(
// CAPTURE-SAME: tensor<18x18xf32> {tc.kfac_input = @k, tc.kfac_layout = "conv", tc.kfac_samples = 2 : i64
// CAPTURE-SAME: tensor<18x4xf32> {tc.kfac_output_grad = @k
// CAPTURE: %[[P:.*]] = tc.conv %arg0, %{{.*}} {{.*}} : (tensor<2x2x5x5xf32>, tensor<18x2x3x3xf32>) -> tensor<2x18x3x3xf32>
// CAPTURE: tc.transpose %[[P]] {perm = array<i64: 0, 2, 3, 1>}
tc.param @k trainable : tensor<4x2x3x3xf32>
func.func @loss(%x: tensor<2x2x5x5xf32> {tc.input = "x"}, %k: tensor<4x2x3x3xf32> {tc.param = @k})
    -> (tensor<f32> {tc.output = "loss"}) {
  %y = tc.conv %x, %k {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x2x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<2x4x3x3xf32>
  %l = tc.reduce_sum %y {axes = array<i64>, keepdims = false} : (tensor<2x4x3x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
