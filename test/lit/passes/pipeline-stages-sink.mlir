// RUN: trainc-opt %s --trainc-pipeline-stages="boundaries=fc1" | FileCheck %s --check-prefix=SINK

// An op that reads only a parameter (as the mixed-precision phase's weight
// casts, placed first in @loss) goes with the layer that reads it: w2 and
// its negation belong to stage 1, not to the first stage.
// SINK-LABEL: func.func @stage0_loss(
// SINK-SAME: {tc.param = @w1})
// SINK-NOT: tc.neg
// SINK-LABEL: func.func @stage1_loss(
// SINK-SAME: %[[W2:[^:]+]]: tensor<3x8xf32> {tc.param = @w2}
// SINK: %[[N:.*]] = tc.neg %[[W2]]
// SINK-NEXT: tc.gemm %{{.*}}, %[[N]]
module attributes {tc.batch_size = 4 : i64} {
  tc.param @w1 trainable : tensor<8x8xf32> = dense<0.1> : tensor<8x8xf32>
  tc.param @w2 trainable : tensor<3x8xf32> = dense<0.3> : tensor<3x8xf32>
  func.func @loss(%x: tensor<4x8xf32> {tc.input = "x"}, %label: tensor<4xi64> {tc.label = "label"},
                  %w1: tensor<8x8xf32> {tc.param = @w1}, %w2: tensor<3x8xf32> {tc.param = @w2})
      -> (tensor<f32> {tc.output = "loss"}, tensor<4xf32> {tc.output = "sample_losses", tc.sample_losses}) {
    %nw2 = tc.neg %w2 : tensor<3x8xf32> loc("neg")
    %h1 = tc.gemm %x, %w1 {trans_b = true} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("fc1")
    %r1 = tc.relu %h1 : tensor<4x8xf32> loc("relu1")
    %h2 = tc.gemm %r1, %nw2 {trans_b = true} : (tensor<4x8xf32>, tensor<3x8xf32>) -> tensor<4x3xf32> loc("fc2")
    %l = tc.softmax_cross_entropy %h2, %label {ignore_index = -100 : i64, reduction = "none"} : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<4xf32> loc("ce")
    %sum = tc.reduce_sum %l {axes = array<i64>, keepdims = false} : (tensor<4xf32>) -> tensor<f32> loc("ce")
    return %sum, %l : tensor<f32>, tensor<4xf32>
  }
}
