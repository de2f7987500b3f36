// RUN: trainc-opt %s --trainc-fold-bias-bn --split-input-file | FileCheck %s

// The conv's bias cancels in a training-mode batch_norm: it is dropped.
// CHECK-LABEL: func.func @conv_training
// CHECK: %[[Y:.*]] = tc.conv %arg0, %arg1 {
// CHECK-SAME: -> tensor<2x4x8x8xf32>
// CHECK: tc.batch_norm %[[Y]]
func.func @conv_training(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>,
                         %g: tensor<4xf32>, %beta: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>)
    -> tensor<2x4x8x8xf32> {
  %y = tc.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
  %z, %rm, %rv = tc.batch_norm %y, %g, %beta, %m, %v {training = true}
      : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
      -> (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>)
  return %z : tensor<2x4x8x8xf32>
}

// -----

// Inference-mode batch_norm subtracts the running mean, which does not cancel
// the bias: the pass must not fire.
// CHECK-LABEL: func.func @conv_inference
// CHECK: tc.conv %arg0, %arg1, %arg2
func.func @conv_inference(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>,
                          %g: tensor<4xf32>, %beta: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>)
    -> tensor<2x4x8x8xf32> {
  %y = tc.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
  %z, %rm, %rv = tc.batch_norm %y, %g, %beta, %m, %v
      : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
      -> (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>)
  return %z : tensor<2x4x8x8xf32>
}

// -----

// The conv result is also returned, so the bias is observable: keep it.
// CHECK-LABEL: func.func @conv_other_user
// CHECK: tc.conv %arg0, %arg1, %arg2
func.func @conv_other_user(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>,
                           %g: tensor<4xf32>, %beta: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>)
    -> (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) {
  %y = tc.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
  %z, %rm, %rv = tc.batch_norm %y, %g, %beta, %m, %v {training = true}
      : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
      -> (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>)
  return %z, %y : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>
}

// -----

// A gemm whose [C] bias feeds batch_norm over [N, C]: the bias is dropped and
// beta goes with it.
// CHECK-LABEL: func.func @gemm_training
// CHECK: %[[Y:.*]] = tc.gemm %arg0, %arg1 {trans_b = true}
// CHECK: tc.batch_norm %[[Y]]
func.func @gemm_training(%x: tensor<8x16xf32>, %w: tensor<4x16xf32>, %b: tensor<4xf32>,
                         %g: tensor<4xf32>, %beta: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>)
    -> tensor<8x4xf32> {
  %y = tc.gemm %x, %w, %b {trans_b = true, beta = 1.0 : f32}
      : (tensor<8x16xf32>, tensor<4x16xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  %z, %rm, %rv = tc.batch_norm %y, %g, %beta, %m, %v {training = true}
      : (tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
      -> (tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return %z : tensor<8x4xf32>
}

// -----

// A [N, C] bias differs per sample, so batch_norm does not cancel it.
// CHECK-LABEL: func.func @gemm_per_sample_bias
// CHECK: tc.gemm %arg0, %arg1, %arg2
func.func @gemm_per_sample_bias(%x: tensor<8x16xf32>, %w: tensor<4x16xf32>, %b: tensor<8x4xf32>,
                                %g: tensor<4xf32>, %beta: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>)
    -> tensor<8x4xf32> {
  %y = tc.gemm %x, %w, %b {trans_b = true}
      : (tensor<8x16xf32>, tensor<4x16xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %z, %rm, %rv = tc.batch_norm %y, %g, %beta, %m, %v {training = true}
      : (tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
      -> (tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return %z : tensor<8x4xf32>
}
