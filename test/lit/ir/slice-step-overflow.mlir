// RUN: trainc-opt %s | FileCheck %s
//
// The slice length is computed without int64 overflow when |step| is close
// to 2^63. A step of INT64_MAX over [0:4] takes element 0 only, and
// [3:-1:INT64_MIN] takes element 3 only, so both results have 1 element and
// the ops are accepted with that type. (ONNX models do use INT64_MAX/INT64_MIN
// as "infinite" slice bounds, and a huge step is how one element is taken.)

// CHECK-LABEL: func.func @huge_positive_step
// CHECK: tc.slice %{{[^ ]+}} {ends = array<i64: 4>, starts = array<i64: 0>, steps = array<i64: 9223372036854775807>} : (tensor<4xf32>) -> tensor<1xf32>
func.func @huge_positive_step(%x: tensor<4xf32>) -> tensor<1xf32> {
  %0 = tc.slice %x {starts = array<i64: 0>, ends = array<i64: 4>, steps = array<i64: 9223372036854775807>}
      : (tensor<4xf32>) -> tensor<1xf32>
  return %0 : tensor<1xf32>
}

// CHECK-LABEL: func.func @huge_negative_step
// CHECK: tc.slice %{{[^ ]+}} {ends = array<i64: -1>, starts = array<i64: 3>, steps = array<i64: -9223372036854775808>} : (tensor<4xf32>) -> tensor<1xf32>
func.func @huge_negative_step(%x: tensor<4xf32>) -> tensor<1xf32> {
  %0 = tc.slice %x {starts = array<i64: 3>, ends = array<i64: -1>, steps = array<i64: -9223372036854775808>}
      : (tensor<4xf32>) -> tensor<1xf32>
  return %0 : tensor<1xf32>
}
