// RUN: trainc-opt %s --trainc-loss="loss=mse" --trainc-fold-bias-bn --trainc-autodiff | FileCheck %s

// The phases as trainc compile runs them: the folded conv bias still gets a
// gradient, exactly 0, so that the optimizer (momentum, weight decay) treats
// it as PyTorch does; the running mean takes the bias back.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[B:[^:]*]]: tensor<3xf32> {tc.folded_bias, tc.param = @conv.bias}
// CHECK-SAME: {tc.grad = @conv.bias, tc.output = "grad.conv.bias"}
// CHECK: tc.conv %{{[^,]*}}, %{{[^ ]*}} {
// CHECK: %[[ZERO:.*]] = tc.constant dense<0.000000e+00> : tensor<3xf32>
// CHECK: return %{{[^,]*}}, %{{[^,]*}}, %[[ZERO]], %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^ ]*}} :
tc.param @conv.weight trainable : tensor<3x2x3x3xf32>
tc.param @conv.bias trainable : tensor<3xf32>
tc.param @bn.scale trainable : tensor<3xf32>
tc.param @bn.bias trainable : tensor<3xf32>
tc.param @bn.mean : tensor<3xf32>
tc.param @bn.var : tensor<3xf32>
func.func @forward(%x: tensor<4x2x5x5xf32> {tc.input = "x"}, %w: tensor<3x2x3x3xf32> {tc.param = @conv.weight},
                   %cb: tensor<3xf32> {tc.param = @conv.bias}, %s: tensor<3xf32> {tc.param = @bn.scale},
                   %b: tensor<3xf32> {tc.param = @bn.bias}, %m: tensor<3xf32> {tc.param = @bn.mean},
                   %v: tensor<3xf32> {tc.param = @bn.var}) -> (tensor<4x3x3x3xf32> {tc.output = "y"}) {
  %c = tc.conv %x, %w, %cb {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<4x2x5x5xf32>, tensor<3x2x3x3xf32>, tensor<3xf32>) -> tensor<4x3x3x3xf32>
  %y, %rm, %rv = tc.batch_norm %c, %s, %b, %m, %v {momentum = 0.9 : f32}
      : (tensor<4x3x3x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
      -> (tensor<4x3x3x3xf32>, tensor<3xf32>, tensor<3xf32>)
  return %y : tensor<4x3x3x3xf32>
}
