// RUN: trainc-opt %s -split-input-file -verify-diagnostics
//
// The window output size is computed with int64 overflow checks on
// dilation * (kernel - 1) + 1 and, in ceil mode, on room + stride - 1.
//
// 1. A 5-wide window with dilation 2^62 spans 2^64 + 1 elements, so it does
//    not fit an axis of size 4: max_pool and conv reject it.
// 2. In ceil mode with stride INT64_MAX, a 2-wide window over 4 elements has
//    ceil(2 / stride) + 1 = 2 starts; the second starts at INT64_MAX >= 4 and
//    is dropped, so the output has 1 element and the op is accepted.

func.func @max_pool_dilation_overflow(%x: tensor<1x1x4xf32>) {
  // expected-error @+2 {{does not fit}}
  // expected-error @+1 {{'tc.max_pool' op failed to infer returned types}}
  %0 = tc.max_pool %x {kernel_shape = array<i64: 5>, strides = array<i64: 1>, pads = array<i64: 0, 0>,
                       dilations = array<i64: 4611686018427387904>}
      : (tensor<1x1x4xf32>) -> tensor<1x1x4xf32>
  return
}

// -----

func.func @conv_dilation_overflow(%x: tensor<1x1x4xf32>, %w: tensor<1x1x5xf32>) {
  // expected-error @+2 {{does not fit}}
  // expected-error @+1 {{'tc.conv' op failed to infer returned types}}
  %0 = tc.conv %x, %w {strides = array<i64: 1>, pads = array<i64: 0, 0>, dilations = array<i64: 4611686018427387904>}
      : (tensor<1x1x4xf32>, tensor<1x1x5xf32>) -> tensor<1x1x4xf32>
  return
}

// -----

// Valid: no diagnostic expected.
func.func @max_pool_ceil_huge_stride(%x: tensor<1x1x4xf32>) -> tensor<1x1x1xf32> {
  %0 = tc.max_pool %x {kernel_shape = array<i64: 2>, strides = array<i64: 9223372036854775807>, pads = array<i64: 0, 0>,
                       dilations = array<i64: 1>, ceil_mode = true}
      : (tensor<1x1x4xf32>) -> tensor<1x1x1xf32>
  return %0 : tensor<1x1x1xf32>
}
