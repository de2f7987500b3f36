// RUN: trainc-opt %s --split-input-file --trainc-autodiff | FileCheck %s

// Three slices of one parameter along axis 1, at [0, 2), [3, 5) and [5, 6):
// their gradients are one tc.concat of the pieces and zeros for the gap
// [2, 3) and the tail [6, 8), not three full-size tc.slice_backward summed
// by tc.add.
// CHECK-LABEL: func.func @train_step(
// CHECK-NOT: tc.slice_backward
// CHECK: %[[GAP:.*]] = tc.constant dense<0.000000e+00> : tensor<4x1xf32>
// CHECK: %[[TAIL:.*]] = tc.constant dense<0.000000e+00> : tensor<4x2xf32>
// CHECK: %[[G:.*]] = tc.concat %{{.*}}, %[[GAP]], %{{.*}}, %{{.*}}, %[[TAIL]] {axis = 1 : i64} : (tensor<4x2xf32>, tensor<4x1xf32>, tensor<4x2xf32>, tensor<4x1xf32>, tensor<4x2xf32>) -> tensor<4x8xf32>
// CHECK-NOT: tc.add
// CHECK: return %{{.*}}, %[[G]]
tc.param @w trainable : tensor<4x8xf32>
func.func @loss(%w: tensor<4x8xf32> {tc.param = @w}) -> (tensor<f32> {tc.output = "loss"}) {
  %a = tc.slice %w {starts = array<i64: 0, 5>, ends = array<i64: 4, 6>, steps = array<i64: 1, 1>} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %b = tc.slice %w {starts = array<i64: 0, 0>, ends = array<i64: 4, 2>, steps = array<i64: 1, 1>} : (tensor<4x8xf32>) -> tensor<4x2xf32>
  %c = tc.slice %w {starts = array<i64: 0, 3>, ends = array<i64: 4, 5>, steps = array<i64: 1, 1>} : (tensor<4x8xf32>) -> tensor<4x2xf32>
  %sa = tc.reduce_sum %a {axes = array<i64>, keepdims = false} : (tensor<4x1xf32>) -> tensor<f32>
  %bc = tc.mul %b, %c : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  %sb = tc.reduce_sum %bc {axes = array<i64>, keepdims = false} : (tensor<4x2xf32>) -> tensor<f32>
  %l = tc.add %sa, %sb : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Must not merge: overlapping slices ([0, 3) and [2, 4)), a slice with a
// step, and a slice cut on two axes each keep their tc.slice_backward and
// are summed by tc.add; the gradient of a value read by other ops too is
// added to theirs.
// CHECK-LABEL: func.func @train_step(
// CHECK-NOT: tc.concat
// CHECK-COUNT-4: tc.slice_backward
// CHECK-NOT: tc.concat
// CHECK: return
tc.param @w trainable : tensor<4x4xf32>
func.func @loss(%w: tensor<4x4xf32> {tc.param = @w}) -> (tensor<f32> {tc.output = "loss"}) {
  %a = tc.slice %w {starts = array<i64: 0, 0>, ends = array<i64: 4, 3>, steps = array<i64: 1, 1>} : (tensor<4x4xf32>) -> tensor<4x3xf32>
  %b = tc.slice %w {starts = array<i64: 0, 2>, ends = array<i64: 4, 4>, steps = array<i64: 1, 1>} : (tensor<4x4xf32>) -> tensor<4x2xf32>
  %c = tc.slice %w {starts = array<i64: 0, 0>, ends = array<i64: 4, 4>, steps = array<i64: 2, 1>} : (tensor<4x4xf32>) -> tensor<2x4xf32>
  %d = tc.slice %w {starts = array<i64: 1, 1>, ends = array<i64: 3, 3>, steps = array<i64: 1, 1>} : (tensor<4x4xf32>) -> tensor<2x2xf32>
  %e = tc.exp %w : tensor<4x4xf32>
  %sa = tc.reduce_sum %a {axes = array<i64>, keepdims = false} : (tensor<4x3xf32>) -> tensor<f32>
  %sb = tc.reduce_sum %b {axes = array<i64>, keepdims = false} : (tensor<4x2xf32>) -> tensor<f32>
  %sc = tc.reduce_sum %c {axes = array<i64>, keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
  %sd = tc.reduce_sum %d {axes = array<i64>, keepdims = false} : (tensor<2x2xf32>) -> tensor<f32>
  %se = tc.reduce_sum %e {axes = array<i64>, keepdims = false} : (tensor<4x4xf32>) -> tensor<f32>
  %l1 = tc.add %sa, %sb : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %l2 = tc.add %sc, %sd : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %l3 = tc.add %l1, %l2 : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %l = tc.add %l3, %se : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %l : tensor<f32>
}
