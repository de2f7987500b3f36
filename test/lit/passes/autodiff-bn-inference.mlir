// RUN: trainc-opt %s --trainc-autodiff --verify-diagnostics

// A batch norm left in inference mode on a differentiated path has no rule:
// the loss phase is what puts batch norms in training mode.
tc.param @s trainable : tensor<3xf32>
tc.param @m : tensor<3xf32>
tc.param @v : tensor<3xf32>
func.func @loss(%x: tensor<4x3xf32> {tc.input = "x"}, %s: tensor<3xf32> {tc.param = @s},
                %m: tensor<3xf32> {tc.param = @m}, %v: tensor<3xf32> {tc.param = @v})
    -> (tensor<f32> {tc.output = "loss"}) {
  // expected-error @+1 {{'tc.batch_norm' op in inference mode has no gradient rule (the loss phase switches batch norms to training mode)}}
  %y, %rm, %rv = tc.batch_norm %x, %s, %s, %m, %v
      : (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
      -> (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>)
  %l = tc.reduce_sum %y {axes = array<i64>, keepdims = false} : (tensor<4x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
