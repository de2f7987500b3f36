// RUN: trainc-opt %s --split-input-file --trainc-loss="loss=output output=total" --verify-diagnostics | FileCheck %s

// The model computes its own scalar loss ("total"): @loss returns it first,
// and no label or weight input is added.
// CHECK-LABEL: func.func @loss(%arg0: tensor<2x3xf32> {tc.input = "x"}, %arg1: tensor<2xi64> {tc.input = "y"})
// CHECK-SAME: -> (tensor<f32> {tc.output = "loss"}, tensor<2x3xf32> {tc.output = "scores"}, tensor<f32> {tc.output = "total"})
// CHECK: %[[L:.*]] = tc.softmax_cross_entropy
// CHECK: return %[[L]], %{{.*}}, %[[L]] : tensor<f32>, tensor<2x3xf32>, tensor<f32>
func.func @forward(%x: tensor<2x3xf32> {tc.input = "x"}, %y: tensor<2xi64> {tc.input = "y"})
    -> (tensor<2x3xf32> {tc.output = "scores"}, tensor<f32> {tc.output = "total"}) {
  %s = tc.relu %x : tensor<2x3xf32>
  %l = tc.softmax_cross_entropy %s, %y : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
  return %s, %l : tensor<2x3xf32>, tensor<f32>
}

// -----

// Already attached: the pass must not fire again.
// CHECK-LABEL: func.func @loss(%arg0: tensor<2xf32>) -> tensor<f32>
// CHECK-NEXT: %[[S:.*]] = tc.reduce_sum %arg0
// CHECK-NEXT: return %[[S]]
// CHECK-NOT: func.func @loss
func.func @forward(%x: tensor<2xf32> {tc.input = "x"}) -> (tensor<f32> {tc.output = "total"}) {
  %s = tc.reduce_sum %x {axes = array<i64>, keepdims = false} : (tensor<2xf32>) -> tensor<f32>
  return %s : tensor<f32>
}
func.func @loss(%x: tensor<2xf32>) -> tensor<f32> {
  %s = tc.reduce_sum %x {axes = array<i64>, keepdims = false} : (tensor<2xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// expected-error @+1 {{the model has no output named 'total'}}
func.func @forward(%x: tensor<2xf32> {tc.input = "x"}) -> (tensor<2xf32> {tc.output = "y"}) {
  return %x : tensor<2xf32>
}
