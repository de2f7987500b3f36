// RUN: trainc-opt %s --split-input-file --trainc-loss="loss=mse" --verify-diagnostics | FileCheck %s

// @loss is the training forward: the batch norm switches to batch statistics
// over the real rows (the sample mask, not the weights: a sample of weight 0
// is in PyTorch's batch statistics), and its updated running statistics
// become results that write the parameters back. @forward keeps inference
// mode.
// CHECK-LABEL: func.func @forward(
// CHECK: tc.batch_norm %arg0, %arg1, %arg2, %arg3, %arg4 :
// CHECK-LABEL: func.func @loss(
// CHECK-SAME: %[[X:[^:]*]]: tensor<4x3x2x2xf32> {tc.input = "x"}, %{{.*}}: tensor<4x3x2x2xf32> {tc.label = "label"}, %[[W:[^:]*]]: tensor<4xf32> {tc.sample_weights}, %[[MASK:[^:]*]]: tensor<4xf32> {tc.sample_mask}
// CHECK-SAME: -> (tensor<f32> {tc.output = "loss"}, tensor<4xf32> {tc.output = "sample_losses", tc.sample_losses}, tensor<4x3x2x2xf32> {tc.output = "y"}, tensor<3xf32> {tc.output = "bn.mean", tc.update = @bn.mean}, tensor<3xf32> {tc.output = "bn.var", tc.update = @bn.var})
// CHECK: %[[Y:.*]], %[[RM:.*]], %[[RV:.*]] = tc.batch_norm %[[X]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[MASK]] {training = true}
//   The sum normalization divides by the weights, not by the mask.
// CHECK: %[[NUM:.*]] = tc.reduce_sum %{{.*}} {axes = array<i64>, keepdims = false}
// CHECK: %[[DEN:.*]] = tc.reduce_sum %[[W]] {axes = array<i64>, keepdims = false}
// CHECK: %[[LOSS:.*]] = tc.div %[[NUM]], %[[DEN]]
// CHECK: return %[[LOSS]], %{{.*}}, %[[Y]], %[[RM]], %[[RV]]
tc.param @bn.scale trainable : tensor<3xf32>
tc.param @bn.bias trainable : tensor<3xf32>
tc.param @bn.mean : tensor<3xf32>
tc.param @bn.var : tensor<3xf32>
func.func @forward(%x: tensor<4x3x2x2xf32> {tc.input = "x"}, %s: tensor<3xf32> {tc.param = @bn.scale},
                   %b: tensor<3xf32> {tc.param = @bn.bias}, %m: tensor<3xf32> {tc.param = @bn.mean},
                   %v: tensor<3xf32> {tc.param = @bn.var}) -> (tensor<4x3x2x2xf32> {tc.output = "y"}) {
  %y, %rm, %rv = tc.batch_norm %x, %s, %b, %m, %v {momentum = 0.9 : f32}
      : (tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
      -> (tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>)
  return %y : tensor<4x3x2x2xf32>
}

// -----

// Two batch norms cannot share one running statistic: each would overwrite
// the other's update.
tc.param @s trainable : tensor<3xf32>
tc.param @m : tensor<3xf32>
tc.param @v : tensor<3xf32>
func.func @forward(%x: tensor<4x3xf32> {tc.input = "x"}, %s: tensor<3xf32> {tc.param = @s},
                   %m: tensor<3xf32> {tc.param = @m}, %v: tensor<3xf32> {tc.param = @v})
    -> (tensor<4x3xf32> {tc.output = "y"}) {
  %y, %rm, %rv = tc.batch_norm %x, %s, %s, %m, %v
      : (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
      -> (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>)
  // expected-error @+1 {{running statistic @m is read by more than one batch norm; each needs its own}}
  %z, %rm2, %rv2 = tc.batch_norm %y, %s, %s, %m, %v
      : (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
      -> (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>)
  return %z : tensor<4x3xf32>
}
