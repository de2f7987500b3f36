// RUN: not trainc-opt %s --trainc-autodiff 2>&1 | FileCheck %s

// An op without a gradient rule on a differentiated path is an error naming
// the ONNX node.
tc.param @g trainable : tensor<4xf32>
func.func @loss(%x: tensor<2x4xf32> {tc.input = "x"}, %g: tensor<4xf32> {tc.param = @g})
    -> (tensor<f32> {tc.output = "loss"}) {
  // CHECK: error: loc("ln1"): no gradient rule for tc.layer_norm (ONNX node 'ln1'), which lies between a trainable parameter and the loss
  %y = tc.layer_norm %x, %g {axis = 1 : i64} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32> loc("ln1")
  %l = tc.reduce_sum %y {axes = array<i64>, keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
