// RUN: not trainc-opt %s --trainc-autodiff 2>&1 | FileCheck %s

// An op without a gradient rule on a differentiated path is an error naming
// the ONNX node. The backward ops have none (no second-order gradients).
tc.param @g trainable : tensor<1x1x4x4xf32>
func.func @loss(%x: tensor<1x1x4x4xf32> {tc.input = "x"}, %dy: tensor<1x1x2x2xf32> {tc.input = "dy"},
                %g: tensor<1x1x4x4xf32> {tc.param = @g}) -> (tensor<f32> {tc.output = "loss"}) {
  // CHECK: error: loc("pool_grad"): no gradient rule for tc.max_pool_backward (ONNX node 'pool_grad'), which lies between a trainable parameter and the loss
  %p = tc.mul %x, %g : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %d = tc.max_pool_backward %p, %dy {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32> loc("pool_grad")
  %l = tc.reduce_sum %d {axes = array<i64>, keepdims = false} : (tensor<1x1x4x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
