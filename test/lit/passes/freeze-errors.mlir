// RUN: trainc-opt %s --split-input-file --trainc-autodiff="freeze=^conv" --verify-diagnostics
// RUN: not trainc-opt %s --trainc-autodiff="freeze=(" 2>&1 | FileCheck %s --check-prefix=BAD

// A --freeze that matches no trainable parameter is a typo, not a no-op.
// BAD: --freeze='(' is not a regular expression
tc.param @fc.w trainable : tensor<3xf32>
// expected-error @+1 {{--freeze='^conv' matches no trainable parameter}}
func.func @loss(%x: tensor<3xf32> {tc.input = "x"}, %a: tensor<3xf32> {tc.param = @fc.w})
    -> (tensor<f32> {tc.output = "loss"}) {
  %h = tc.mul %x, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %l = tc.reduce_sum %h {axes = array<i64>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
