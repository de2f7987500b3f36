// RUN: trainc-opt %s --trainc-mixed-precision="precision=bf16 legalize-step=1" --split-input-file | FileCheck %s
// RUN: trainc-opt %s --trainc-mixed-precision="precision=fp32 legalize-step=1" --split-input-file | FileCheck %s --check-prefix=FP32

// After autodiff: a bias gradient sums a bf16 dy. The reduction reads dy as
// it is (out_type = f32: no f32 copy of dy) and its result goes back to the
// type the gradient rule gave it for its bf16 readers; the f32 kernel of a softmax gets an f32
// operand instead.
// CHECK-LABEL: func.func @train_step
// CHECK-NOT: tc.cast %arg0
// CHECK: %[[W:.*]] = tc.cast %arg1 {to = f32} : (tensor<16x8xbf16>) -> tensor<16x8xf32>
// CHECK-NOT: tc.cast %arg0
// CHECK: %[[S:.*]] = tc.reduce_sum %arg0 {axes = array<i64: 0>, keepdims = false, out_type = f32} : (tensor<16x8xbf16>) -> tensor<8xf32>
// CHECK: %[[B:.*]] = tc.cast %[[S]] {to = bf16} : (tensor<8xf32>) -> tensor<8xbf16>
// CHECK: %[[M:.*]] = tc.reduce_max %arg0 {axes = array<i64: 1>, out_type = f32} : (tensor<16x8xbf16>) -> tensor<16x1xf32>
// CHECK: %[[MB:.*]] = tc.cast %[[M]] {to = bf16}
// CHECK: %[[Y:.*]] = tc.softmax %[[W]] {axis = 1 : i64} : tensor<16x8xf32>
// CHECK: %[[YB:.*]] = tc.cast %[[Y]] {to = bf16}
// CHECK: return %[[B]], %[[MB]], %[[YB]]
// FP32-LABEL: func.func @train_step
// FP32-NOT: out_type
// FP32-NOT: tc.cast
// FP32: return
func.func @train_step(%arg0: tensor<16x8xbf16>, %arg1: tensor<16x8xbf16>) -> (tensor<8xbf16>, tensor<16x1xbf16>, tensor<16x8xbf16>) {
  %0 = tc.reduce_sum %arg0 {axes = array<i64: 0>, keepdims = false} : (tensor<16x8xbf16>) -> tensor<8xbf16>
  %1 = tc.reduce_max %arg0 {axes = array<i64: 1>, keepdims = true} : (tensor<16x8xbf16>) -> tensor<16x1xbf16>
  %2 = tc.softmax %arg1 {axis = 1 : i64} : tensor<16x8xbf16>
  return %0, %1, %2 : tensor<8xbf16>, tensor<16x1xbf16>, tensor<16x8xbf16>
}

// -----

// An f32 reduction (the gradient of an f32 parameter's use) is left alone.
// CHECK-LABEL: func.func @train_step
// CHECK-NOT: out_type
// CHECK-NOT: tc.cast
// CHECK: tc.reduce_sum %arg0 {axes = array<i64: 0>, keepdims = false} : (tensor<16x8xf32>) -> tensor<8xf32>
func.func @train_step(%arg0: tensor<16x8xf32>) -> tensor<8xf32> {
  %0 = tc.reduce_sum %arg0 {axes = array<i64: 0>, keepdims = false} : (tensor<16x8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// A bias gradient widened again for its f32 parameter (the gradient of the
// parameter's cast) takes the reduction's f32 result: no bf16 round trip.
// CHECK-LABEL: func.func @train_step
// CHECK-NEXT: %[[S:.*]] = tc.reduce_sum %arg0 {axes = array<i64: 0>, keepdims = false, out_type = f32} : (tensor<16x8xbf16>) -> tensor<8xf32>
// CHECK-NOT: to = bf16
// CHECK: return %[[S]] : tensor<8xf32>
func.func @train_step(%arg0: tensor<16x8xbf16>) -> tensor<8xf32> {
  %0 = tc.reduce_sum %arg0 {axes = array<i64: 0>, keepdims = false} : (tensor<16x8xbf16>) -> tensor<8xbf16>
  %1 = tc.cast %0 {to = f32} : (tensor<8xbf16>) -> tensor<8xf32>
  return %1 : tensor<8xf32>
}
