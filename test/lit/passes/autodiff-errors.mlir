// RUN: not trainc-opt %s --trainc-autodiff 2>&1 | FileCheck %s

// An op without a gradient rule on a differentiated path is an error naming
// the ONNX node.
tc.param @g trainable : tensor<4xf32>
func.func @loss(%x: tensor<2x4xf32> {tc.input = "x"}, %g: tensor<4xf32> {tc.param = @g})
    -> (tensor<f32> {tc.output = "loss"}) {
  // CHECK: error: loc("max1"): no gradient rule for tc.reduce_max (ONNX node 'max1'), which lies between a trainable parameter and the loss
  %p = tc.mul %x, %g : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %y = tc.reduce_max %p {axes = array<i64: 1>, keepdims = false} : (tensor<2x4xf32>) -> tensor<2xf32> loc("max1")
  %l = tc.reduce_sum %y {axes = array<i64>, keepdims = false} : (tensor<2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
