// The gradient of a tc.scatter_elements with reduction "none" (see
// scatter-elements.onnxtxt).
tc.param @d trainable : tensor<2x6xf32>
tc.param @u trainable : tensor<2x2xf32>
func.func @loss(%d: tensor<2x6xf32> {tc.param = @d}, %u: tensor<2x2xf32> {tc.param = @u},
                %idx: tensor<2x2xi64> {tc.input = "idx"}) -> (tensor<f32> {tc.output = "loss"}) {
  %s = tc.scatter_elements %d, %idx, %u {axis = 1 : i64, reduction = "none"} : (tensor<2x6xf32>, tensor<2x2xi64>, tensor<2x2xf32>) -> tensor<2x6xf32>
  %e = tc.exp %s : tensor<2x6xf32>
  %l = tc.reduce_sum %e {axes = array<i64>, keepdims = false} : (tensor<2x6xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
