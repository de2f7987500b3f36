// RUN: trainc-opt %s --split-input-file --verify-diagnostics | FileCheck %s

// Gradient ops of convolution and pooling round-trip; their result shapes are
// the forward op's input (or weight) shapes.
// CHECK-LABEL: func.func @conv_grads
// CHECK: tc.conv_backward_data {{.*}} -> tensor<2x3x8x8xf32>
// CHECK: tc.conv_backward_filter {{.*}} -> tensor<4x3x3x3xf32>
func.func @conv_grads(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %dy: tensor<2x4x4x4xf32>)
    -> (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) {
  // 8 + 1 + 1 - 3 = 7, / 2 = 3, + 1 = 4 per axis (stride 2, pads 1).
  %dx = tc.conv_backward_data %dy, %w {input_shape = array<i64: 2, 3, 8, 8>, strides = array<i64: 2, 2>,
                                        pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<2x4x4x4xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32>
  %dw = tc.conv_backward_filter %x, %dy {weight_shape = array<i64: 4, 3, 3, 3>, strides = array<i64: 2, 2>,
                                          pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<2x3x8x8xf32>, tensor<2x4x4x4xf32>) -> tensor<4x3x3x3xf32>
  return %dx, %dw : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>
}

// CHECK-LABEL: func.func @pool_grads
// CHECK: tc.max_pool_backward {{.*}} -> tensor<1x2x6x6xf32>
// CHECK: tc.avg_pool_backward {{.*}} -> tensor<1x2x6x6xf32>
func.func @pool_grads(%x: tensor<1x2x6x6xf32>, %dy: tensor<1x2x3x3xf32>)
    -> (tensor<1x2x6x6xf32>, tensor<1x2x6x6xf32>) {
  %a = tc.max_pool_backward %x, %dy {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>,
                                     pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<1x2x6x6xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x6x6xf32>
  %b = tc.avg_pool_backward %dy {input_shape = array<i64: 1, 2, 6, 6>, kernel_shape = array<i64: 2, 2>,
                                 strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>}
      : (tensor<1x2x3x3xf32>) -> tensor<1x2x6x6xf32>
  return %a, %b : tensor<1x2x6x6xf32>, tensor<1x2x6x6xf32>
}

// -----

// The result gradient must have the shape the forward conv produces.
func.func @wrong_dy(%w: tensor<4x3x3x3xf32>, %dy: tensor<2x4x5x5xf32>) -> tensor<2x3x8x8xf32> {
  // expected-error @+2 {{the result gradient has shape 2x4x5x5 but the forward op produces 2x4x4x4}}
  // expected-error @+1 {{failed to infer returned types}}
  %dx = tc.conv_backward_data %dy, %w {input_shape = array<i64: 2, 3, 8, 8>, strides = array<i64: 2, 2>,
                                        pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<2x4x5x5xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32>
  return %dx : tensor<2x3x8x8xf32>
}

// -----

// Gradient ops of batch norm, gather and slice.
// CHECK-LABEL: func.func @more_grads
// CHECK: tc.batch_norm_backward {{.*}} -> (tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>)
// CHECK: tc.gather_backward {{.*}} -> tensor<7x5xf32>
// CHECK: tc.slice_backward {{.*}} -> tensor<2x7xf32>
func.func @more_grads(%x: tensor<4x3x2x2xf32>, %s: tensor<3xf32>, %w: tensor<4xf32>,
                      %de: tensor<2x6x5xf32>, %idx: tensor<2x6xi64>, %ds: tensor<2x3xf32>)
    -> (tensor<4x3x2x2xf32>, tensor<7x5xf32>, tensor<2x7xf32>) {
  %dx, %dscale, %dbias = tc.batch_norm_backward %x, %s, %x, %w {epsilon = 1.0e-05 : f32}
      : (tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<4x3x2x2xf32>, tensor<4xf32>)
      -> (tensor<4x3x2x2xf32>, tensor<3xf32>, tensor<3xf32>)
  %dt = tc.gather_backward %de, %idx {axis = 0 : i64, data_shape = array<i64: 7, 5>}
      : (tensor<2x6x5xf32>, tensor<2x6xi64>) -> tensor<7x5xf32>
  %dv = tc.slice_backward %ds {input_shape = array<i64: 2, 7>, starts = array<i64: 0, 0>,
                               ends = array<i64: 2, 6>, steps = array<i64: 1, 2>}
      : (tensor<2x3xf32>) -> tensor<2x7xf32>
  return %dx, %dt, %dv : tensor<4x3x2x2xf32>, tensor<7x5xf32>, tensor<2x7xf32>
}

// -----

func.func @bad_mask(%x: tensor<4x3xf32>, %s: tensor<3xf32>, %w: tensor<3xf32>) -> tensor<4x3xf32> {
  // expected-error @+2 {{sample_mask must have one 'f32' per sample (4)}}
  // expected-error @+1 {{failed to infer returned types}}
  %dx, %a, %b = tc.batch_norm_backward %x, %s, %x, %w
      : (tensor<4x3xf32>, tensor<3xf32>, tensor<4x3xf32>, tensor<3xf32>) -> (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>)
  return %dx : tensor<4x3xf32>
}

// -----

func.func @bad_gather_grad(%de: tensor<2x6x5xf32>, %idx: tensor<2x5xi64>) -> tensor<7x5xf32> {
  // expected-error @+2 {{the result gradient has shape 2x6x5 but the gather has 2x5x5}}
  // expected-error @+1 {{failed to infer returned types}}
  %dt = tc.gather_backward %de, %idx {axis = 0 : i64, data_shape = array<i64: 7, 5>}
      : (tensor<2x6x5xf32>, tensor<2x5xi64>) -> tensor<7x5xf32>
  return %dt : tensor<7x5xf32>
}

// -----

func.func @bad_slice_grad(%ds: tensor<2x4xf32>) -> tensor<2x7xf32> {
  // expected-error @+2 {{the result gradient has shape 2x4 but the slice has 2x3}}
  // expected-error @+1 {{failed to infer returned types}}
  %dv = tc.slice_backward %ds {input_shape = array<i64: 2, 7>, starts = array<i64: 0, 0>,
                               ends = array<i64: 2, 6>, steps = array<i64: 1, 2>}
      : (tensor<2x4xf32>) -> tensor<2x7xf32>
  return %dv : tensor<2x7xf32>
}

// -----

// The layer norm gradient: dx has the input's type, dscale and dbias the
// scale's; dy must match the input.
// CHECK-LABEL: func.func @layer_norm_grads
// CHECK: tc.layer_norm_backward {{.*}} -> (tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32>)
func.func @layer_norm_grads(%x: tensor<2x16x32xf32>, %g: tensor<32xf32>, %dy: tensor<2x16x32xf32>)
    -> (tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32>) {
  %dx, %dg, %db = tc.layer_norm_backward %x, %g, %dy {axis = 2 : i64, epsilon = 1.0e-05 : f32}
      : (tensor<2x16x32xf32>, tensor<32xf32>, tensor<2x16x32xf32>)
      -> (tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32>)
  return %dx, %dg, %db : tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32>
}

// -----

func.func @layer_norm_grad_mismatch(%x: tensor<2x16x32xf32>, %g: tensor<32xf32>, %dy: tensor<2x32xf32>) {
  // expected-error @+2 {{the result gradient must have the input's type}}
  // expected-error @+1 {{'tc.layer_norm_backward' op failed to infer returned types}}
  %dx, %dg, %db = tc.layer_norm_backward %x, %g, %dy {axis = 2 : i64}
      : (tensor<2x16x32xf32>, tensor<32xf32>, tensor<2x32xf32>)
      -> (tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32>)
  return
}
