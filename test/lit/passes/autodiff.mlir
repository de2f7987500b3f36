// RUN: trainc-opt %s --split-input-file --trainc-autodiff --verify-diagnostics | FileCheck %s

// Linear -> ReLU -> loss. The bias gradient sums the output gradient over the
// batch; ReLU stops it where its output is not positive (and passes it at
// NaN, as threshold_backward on the result); the weight gradient of x W^T
// is dY^T x.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: -> (tensor<f32> {tc.output = "loss"}, tensor<3x4xf32> {tc.grad = @w, tc.output = "grad.w"}, tensor<3xf32> {tc.grad = @b, tc.output = "grad.b"})
// CHECK: %[[Y:.*]] = tc.gemm %arg0, %arg1, %arg2 {trans_b = true}
// CHECK: %[[R:.*]] = tc.relu %[[Y]]
// CHECK: %[[ONE:.*]] = tc.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[DR:.*]] = tc.expand
// CHECK: %[[NONPOS:.*]] = tc.less_equal %[[R]], %{{.*}} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xi1>
// CHECK: %[[DY:.*]] = tc.where %[[NONPOS]], %{{.*}}, %[[DR]]
// CHECK: %[[DW:.*]] = tc.gemm %[[DY]], %arg0 {trans_a = true} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
// CHECK: %[[DB:.*]] = tc.reduce_sum %[[DY]] {axes = array<i64: 0>, keepdims = false} : (tensor<2x3xf32>) -> tensor<3xf32>
// CHECK: return %{{.*}}, %[[DW]], %[[DB]]
tc.param @w trainable : tensor<3x4xf32>
tc.param @b trainable : tensor<3xf32>
func.func @loss(%x: tensor<2x4xf32> {tc.input = "x"}, %w: tensor<3x4xf32> {tc.param = @w},
                %b: tensor<3xf32> {tc.param = @b}) -> (tensor<f32> {tc.output = "loss"}) {
  %y = tc.gemm %x, %w, %b {trans_b = true} : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %r = tc.relu %y : tensor<2x3xf32>
  %l = tc.reduce_sum %r {axes = array<i64>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A frozen parameter, a parameter with no path to the loss, and data inputs
// get no gradient code; a parameter read twice gets the sum of both paths.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: -> (tensor<f32> {tc.output = "loss"}, tensor<4xf32> {tc.grad = @twice, tc.output = "grad.twice"})
// CHECK-NOT: grad.frozen
// CHECK-NOT: grad.unused
// CHECK: tc.constant dense<1.000000e+00>
// CHECK: %[[A:.*]] = tc.mul %{{.*}}, %arg0
// CHECK: %[[B:.*]] = tc.add %{{.*}}, %[[A]]
// CHECK: return %{{.*}}, %[[B]]
tc.param @twice trainable : tensor<4xf32>
tc.param @frozen : tensor<4xf32>
tc.param @unused trainable : tensor<4xf32>
func.func @loss(%x: tensor<4xf32> {tc.input = "x"}, %t: tensor<4xf32> {tc.param = @twice},
                %f: tensor<4xf32> {tc.param = @frozen}, %u: tensor<4xf32> {tc.param = @unused})
    -> (tensor<f32> {tc.output = "loss"}, tensor<4xf32> {tc.output = "side"}) {
  %m = tc.mul %t, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %a = tc.add %m, %t : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %g = tc.mul %a, %f : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %l = tc.reduce_sum %g {axes = array<i64>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  %side = tc.neg %u : tensor<4xf32>
  return %l, %side : tensor<f32>, tensor<4xf32>
}

// -----

// Without @loss there is nothing to differentiate: the pass must not fire.
// CHECK-LABEL: func.func @forward
// CHECK-NOT: func.func @train_step
func.func @forward(%x: tensor<4xf32> {tc.input = "x"}) -> (tensor<4xf32> {tc.output = "y"}) {
  return %x : tensor<4xf32>
}


// -----

// A training-mode batch norm differentiates through tc.batch_norm_backward
// with the same sample mask; its running-statistics updates pass through
// after the gradients. The embedding table gets a scatter-add gradient, the
// indices none.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: -> (tensor<f32> {tc.output = "loss"}, tensor<5x3xf32> {tc.grad = @table, tc.output = "grad.table"}, tensor<3xf32> {tc.grad = @scale, tc.output = "grad.scale"}, tensor<3xf32> {tc.output = "mean", tc.update = @mean})
// CHECK: %[[E:.*]] = tc.gather %arg3, %arg0
// CHECK: %[[Y:.*]], %[[RM:.*]], %{{.*}} = tc.batch_norm %[[E]], %arg4, %arg4, %arg5, %arg5, %arg1 {training = true}
// CHECK: %[[DX:.*]], %[[DS:.*]], %[[DB:.*]] = tc.batch_norm_backward %[[E]], %arg4, %{{.*}}, %arg1 :
// CHECK: %[[DS2:.*]] = tc.add %[[DS]], %[[DB]]
// CHECK: %[[DT:.*]] = tc.gather_backward %[[DX]], %arg0 {axis = 0 : i64, data_shape = array<i64: 5, 3>}
// CHECK: return %{{.*}}, %[[DT]], %[[DS2]], %[[RM]]
tc.param @table trainable : tensor<5x3xf32>
tc.param @scale trainable : tensor<3xf32>
tc.param @mean : tensor<3xf32>
func.func @loss(%idx: tensor<4xi64> {tc.input = "idx"}, %w: tensor<4xf32> {tc.sample_weights},
                %label: tensor<4x3xf32> {tc.label = "label"},
                %t: tensor<5x3xf32> {tc.param = @table}, %s: tensor<3xf32> {tc.param = @scale},
                %m: tensor<3xf32> {tc.param = @mean})
    -> (tensor<f32> {tc.output = "loss"}, tensor<3xf32> {tc.output = "mean", tc.update = @mean}) {
  %e = tc.gather %t, %idx {axis = 0 : i64} : (tensor<5x3xf32>, tensor<4xi64>) -> tensor<4x3xf32>
  %y, %rm, %rv = tc.batch_norm %e, %s, %s, %m, %m, %w {training = true}
      : (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<4xf32>)
      -> (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>)
  %d = tc.sub %y, %label : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %l = tc.reduce_sum %d {axes = array<i64>, keepdims = false} : (tensor<4x3xf32>) -> tensor<f32>
  return %l, %rm : tensor<f32>, tensor<3xf32>
}

// -----

// Layer norm: one tc.layer_norm_backward gives the input, scale and bias
// gradients.
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[DX:[^,]*]], %[[DG:[^,]*]], %[[DB:[^ ]*]] = tc.layer_norm_backward %arg0, %arg1, %{{.*}} {axis = 1 : i64}
// CHECK: return %{{.*}}, %[[DG]], %[[DB]]
tc.param @g trainable : tensor<8xf32>
tc.param @b trainable : tensor<8xf32>
func.func @loss(%x: tensor<4x8xf32> {tc.input = "x"}, %g: tensor<8xf32> {tc.param = @g},
                %b: tensor<8xf32> {tc.param = @b}) -> (tensor<f32> {tc.output = "loss"}) {
  %y = tc.layer_norm %x, %g, %b {axis = 1 : i64}
      : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %s = tc.mul %y, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %l = tc.reduce_sum %s {axes = array<i64>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A weight shared by a batch ([2, 5, 4] x [4, 3]): its gradient is one GEMM
// over the 10 rows of x and dY ([10, 4]^T [10, 3]), not a [2, 4, 3] product
// summed over the batch. A weight used transposed ([3, 4], trans_b) gets
// dY^T x. A batched right operand (not shared) keeps the per-entry product and
// the sum.
// CHECK-LABEL: func.func @train_step(
// CHECK: %[[DV:.*]] = tc.matmul %arg0, %[[DY:.*]] {trans_a = true} : (tensor<2x5x4xf32>, tensor<2x5x3xf32>) -> tensor<2x4x3xf32>
// CHECK: %[[XA:.*]] = tc.reshape %arg0 {shape = array<i64: 10, 4>} : (tensor<2x5x4xf32>) -> tensor<10x4xf32>
// CHECK: %[[DYA:.*]] = tc.reshape %[[DY]] {shape = array<i64: 10, 3>} : (tensor<2x5x3xf32>) -> tensor<10x3xf32>
// CHECK: %[[DWT:.*]] = tc.matmul %[[DYA]], %[[XA]] {trans_a = true} : (tensor<10x3xf32>, tensor<10x4xf32>) -> tensor<3x4xf32>
// CHECK: %[[XB:.*]] = tc.reshape %arg0 {shape = array<i64: 10, 4>}
// CHECK: %[[DYB:.*]] = tc.reshape %[[DY]] {shape = array<i64: 10, 3>}
// CHECK: %[[DW:.*]] = tc.matmul %[[XB]], %[[DYB]] {trans_a = true} : (tensor<10x4xf32>, tensor<10x3xf32>) -> tensor<4x3xf32>
// CHECK-NOT: tc.reduce_sum
// CHECK: return %{{.*}}, %[[DW]], %[[DWT]], %[[DV]]
tc.param @w trainable : tensor<4x3xf32>
tc.param @wt trainable : tensor<3x4xf32>
tc.param @v trainable : tensor<2x4x3xf32>
func.func @loss(%x: tensor<2x5x4xf32> {tc.input = "x"}, %w: tensor<4x3xf32> {tc.param = @w},
                %wt: tensor<3x4xf32> {tc.param = @wt}, %v: tensor<2x4x3xf32> {tc.param = @v})
    -> (tensor<f32> {tc.output = "loss"}) {
  %y = tc.matmul %x, %w : (tensor<2x5x4xf32>, tensor<4x3xf32>) -> tensor<2x5x3xf32>
  %z = tc.matmul %x, %wt {trans_b = true} : (tensor<2x5x4xf32>, tensor<3x4xf32>) -> tensor<2x5x3xf32>
  %u = tc.matmul %x, %v : (tensor<2x5x4xf32>, tensor<2x4x3xf32>) -> tensor<2x5x3xf32>
  %s = tc.add %y, %z : (tensor<2x5x3xf32>, tensor<2x5x3xf32>) -> tensor<2x5x3xf32>
  %t = tc.add %s, %u : (tensor<2x5x3xf32>, tensor<2x5x3xf32>) -> tensor<2x5x3xf32>
  %l = tc.reduce_sum %t {axes = array<i64>, keepdims = false} : (tensor<2x5x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
