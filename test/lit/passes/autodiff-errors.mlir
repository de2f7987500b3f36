// RUN: not trainc-opt %s --trainc-autodiff 2>&1 | FileCheck %s

// An op without a gradient rule on a differentiated path is an error naming
// the ONNX node.
tc.param @w trainable : tensor<2x1x3x3xf32>
func.func @loss(%x: tensor<1x1x4x4xf32> {tc.input = "x"}, %w: tensor<2x1x3x3xf32> {tc.param = @w})
    -> (tensor<f32> {tc.output = "loss"}) {
  // CHECK: error: loc("conv1"): no gradient rule for tc.conv (ONNX node 'conv1'), which lies between a trainable parameter and the loss
  %y = tc.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<1x1x4x4xf32>, tensor<2x1x3x3xf32>) -> tensor<1x2x2x2xf32> loc("conv1")
  %l = tc.reduce_sum %y {axes = array<i64>, keepdims = false} : (tensor<1x2x2x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
