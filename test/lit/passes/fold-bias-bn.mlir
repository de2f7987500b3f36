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

// -----

// The updated running mean is returned: PyTorch's running mean still contains
// the bias, so (1 - momentum) * bias is added back; the bias argument is
// marked so that autodiff gives it the gradient 0.
// CHECK-LABEL: func.func @conv_running_mean
// CHECK-SAME: %[[B:[^:]*]]: tensor<4xf32> {tc.folded_bias}
// CHECK: %[[Y:.*]] = tc.conv %arg0, %arg1 {
// CHECK: %[[Z:[^,]*]], %[[RM:[^,]*]], %[[RV:[^ ]*]] = tc.batch_norm %[[Y]]
// CHECK: %[[SHARE:.*]] = tc.constant dense<0.199999988> : tensor<f32>
// CHECK: %[[T:.*]] = tc.mul %[[B]], %[[SHARE]]
// CHECK: %[[RM2:.*]] = tc.add %[[RM]], %[[T]]
// CHECK: return %[[Z]], %[[RM2]], %[[RV]]
func.func @conv_running_mean(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>,
                             %g: tensor<4xf32>, %beta: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>)
    -> (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>) {
  %y = tc.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
  %z, %rm, %rv = tc.batch_norm %y, %g, %beta, %m, %v {training = true, momentum = 0.8 : f32}
      : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
      -> (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>)
  return %z, %rm, %rv : tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// A [1, C] gemm bias scaled by beta = 2: the running mean gets back
// (1 - 0.9) * 2 * bias, reshaped to [C].
// CHECK-LABEL: func.func @gemm_running_mean
// CHECK: %[[Y:.*]] = tc.gemm %arg0, %arg1 {trans_b = true}
// CHECK: %{{[^,]*}}, %[[RM:[^,]*]], %{{.*}} = tc.batch_norm %[[Y]]
// CHECK: %[[B:.*]] = tc.reshape %arg2 {shape = array<i64: 6>}
// CHECK: %[[SHARE:.*]] = tc.constant dense<0.200000048> : tensor<f32>
// CHECK: %[[T:.*]] = tc.mul %[[B]], %[[SHARE]]
// CHECK: %[[RM2:.*]] = tc.add %[[RM]], %[[T]]
// CHECK: return %{{.*}}, %[[RM2]]
func.func @gemm_running_mean(%x: tensor<4x5xf32>, %w: tensor<6x5xf32>, %b: tensor<1x6xf32>,
                             %g: tensor<6xf32>, %beta: tensor<6xf32>, %m: tensor<6xf32>, %v: tensor<6xf32>)
    -> (tensor<4x6xf32>, tensor<6xf32>) {
  %y = tc.gemm %x, %w, %b {trans_b = true, beta = 2.0 : f32}
      : (tensor<4x5xf32>, tensor<6x5xf32>, tensor<1x6xf32>) -> tensor<4x6xf32>
  %z, %rm, %rv = tc.batch_norm %y, %g, %beta, %m, %v {training = true}
      : (tensor<4x6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>)
      -> (tensor<4x6xf32>, tensor<6xf32>, tensor<6xf32>)
  return %z, %rm : tensor<4x6xf32>, tensor<6xf32>
}

// -----

// A one-element bias broadcast over all columns also cancels, but it is not
// a per-channel vector the running mean can take back: left alone.
// CHECK-LABEL: func.func @gemm_scalar_bias
// CHECK: tc.gemm %arg0, %arg1, %arg2
// CHECK-NOT: tc.folded_bias
func.func @gemm_scalar_bias(%x: tensor<4x5xf32>, %w: tensor<6x5xf32>, %b: tensor<1xf32>,
                            %g: tensor<6xf32>, %beta: tensor<6xf32>, %m: tensor<6xf32>, %v: tensor<6xf32>)
    -> (tensor<4x6xf32>, tensor<6xf32>) {
  %y = tc.gemm %x, %w, %b {trans_b = true}
      : (tensor<4x5xf32>, tensor<6x5xf32>, tensor<1xf32>) -> tensor<4x6xf32>
  %z, %rm, %rv = tc.batch_norm %y, %g, %beta, %m, %v {training = true}
      : (tensor<4x6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>)
      -> (tensor<4x6xf32>, tensor<6xf32>, tensor<6xf32>)
  return %z, %rm : tensor<4x6xf32>, tensor<6xf32>
}
