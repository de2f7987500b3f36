// RUN: trainc-opt %s --trainc-pad --canonicalize --cse | FileCheck %s
// RUN: trainc-opt %s --trainc-pad="multiple=16" --canonicalize --cse | FileCheck %s --check-prefix=SIXTEEN

// The rules of the pad phase on single functions (passes/pad.mlir has a
// trained model).

// A sigmoid is not zero at zero: the hidden activation is cropped and
// padded again before the second product, which must not read sigmoid(0).
// CHECK-LABEL: func.func @sigmoid_between(
// CHECK: %[[H:.*]] = tc.gemm {{.*}} -> tensor<4x88xf32>
// CHECK-NEXT: %[[S:.*]] = tc.sigmoid %[[H]] : tensor<4x88xf32>
// CHECK-NEXT: %[[C:.*]] = tc.slice %[[S]] {ends = array<i64: 4, 84>, {{.*}}} : (tensor<4x88xf32>) -> tensor<4x84xf32>
// CHECK-NEXT: %[[P:.*]] = tc.pad %[[C]] {pads = array<i64: 0, 0, 0, 4>} : (tensor<4x84xf32>) -> tensor<4x88xf32>
// CHECK: tc.gemm %[[P]],
func.func @sigmoid_between(%x: tensor<4x20xf32>, %w1: tensor<84x20xf32>, %w2: tensor<10x84xf32>) -> tensor<4x10xf32> {
  %h = tc.gemm %x, %w1 {trans_b = true} : (tensor<4x20xf32>, tensor<84x20xf32>) -> tensor<4x84xf32>
  %s = tc.sigmoid %h : tensor<4x84xf32>
  %y = tc.gemm %s, %w2 {trans_b = true} : (tensor<4x84xf32>, tensor<10x84xf32>) -> tensor<4x10xf32>
  return %y : tensor<4x10xf32>
}

// Conv(3 -> 6, bias) -> ReLU -> MaxPool -> Conv(6 -> 16): channels padded
// to 8; the padded channels are zero (zero weights and bias) through the
// relu and the pooling, so the second conv reads the pooled tensor as it is.
// CHECK-LABEL: func.func @conv_chain(
// CHECK: %[[X:.*]] = tc.pad %arg0 {pads = array<i64: 0, 0, 0, 0, 0, 5, 0, 0>} : (tensor<2x3x8x8xf32>) -> tensor<2x8x8x8xf32>
// CHECK-NEXT: %[[W:.*]] = tc.pad %arg1 {pads = array<i64: 0, 0, 0, 0, 2, 5, 0, 0>} : (tensor<6x3x3x3xf32>) -> tensor<8x8x3x3xf32>
// CHECK-NEXT: %[[B:.*]] = tc.pad %arg2 {pads = array<i64: 0, 2>} : (tensor<6xf32>) -> tensor<8xf32>
// CHECK-NEXT: %[[C:.*]] = tc.conv %[[X]], %[[W]], %[[B]] {{.*}} -> tensor<2x8x8x8xf32>
// CHECK-NEXT: %[[R:.*]] = tc.relu %[[C]] : tensor<2x8x8x8xf32>
// CHECK-NEXT: %[[P:.*]] = tc.max_pool %[[R]] {{.*}} : (tensor<2x8x8x8xf32>) -> tensor<2x8x4x4xf32>
// CHECK-NEXT: %[[W2:.*]] = tc.pad %arg3 {pads = array<i64: 0, 0, 0, 0, 0, 2, 0, 0>} : (tensor<16x6x3x3xf32>) -> tensor<16x8x3x3xf32>
// CHECK-NEXT: %[[Y:.*]] = tc.conv %[[P]], %[[W2]] {{.*}} -> tensor<2x16x4x4xf32>
// CHECK-NEXT: return %[[Y]]
// With 16, the second conv's 16 output channels stay.
// SIXTEEN-LABEL: func.func @conv_chain(
// SIXTEEN: tc.conv {{.*}} : (tensor<2x16x8x8xf32>, tensor<16x16x3x3xf32>, tensor<16xf32>) -> tensor<2x16x8x8xf32>
// SIXTEEN: tc.conv {{.*}} : (tensor<2x16x4x4xf32>, tensor<16x16x3x3xf32>) -> tensor<2x16x4x4xf32>
// SIXTEEN-NEXT: return
func.func @conv_chain(%x: tensor<2x3x8x8xf32>, %w1: tensor<6x3x3x3xf32>, %b1: tensor<6xf32>, %w2: tensor<16x6x3x3xf32>) -> tensor<2x16x4x4xf32> {
  %c = tc.conv %x, %w1, %b1 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<2x3x8x8xf32>, tensor<6x3x3x3xf32>, tensor<6xf32>) -> tensor<2x6x8x8xf32>
  %r = tc.relu %c : tensor<2x6x8x8xf32>
  %p = tc.max_pool %r {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<2x6x8x8xf32>) -> tensor<2x6x4x4xf32>
  %y = tc.conv %p, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<2x6x4x4xf32>, tensor<16x6x3x3xf32>) -> tensor<2x16x4x4xf32>
  return %y : tensor<2x16x4x4xf32>
}

// Not fired: dimensions already multiples of 8, a grouped (depthwise)
// convolution, and a product of two batched operands (attention scores).
// CHECK-LABEL: func.func @aligned(
// CHECK-NOT: tc.pad
// CHECK-NOT: tc.slice
// CHECK: return
func.func @aligned(%x: tensor<4x16xf32>, %w: tensor<8x16xf32>) -> tensor<4x8xf32> {
  %y = tc.gemm %x, %w {trans_b = true} : (tensor<4x16xf32>, tensor<8x16xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
// CHECK-LABEL: func.func @grouped(
// CHECK-NOT: tc.pad
// CHECK-NOT: tc.slice
// CHECK: return
func.func @grouped(%x: tensor<2x6x8x8xf32>, %w: tensor<6x1x3x3xf32>) -> tensor<2x6x8x8xf32> {
  %y = tc.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 6 : i64}
      : (tensor<2x6x8x8xf32>, tensor<6x1x3x3xf32>) -> tensor<2x6x8x8xf32>
  return %y : tensor<2x6x8x8xf32>
}
// CHECK-LABEL: func.func @attention(
// CHECK-NOT: tc.pad
// CHECK-NOT: tc.slice
// CHECK: return
func.func @attention(%q: tensor<2x5x12xf32>, %k: tensor<2x5x12xf32>) -> tensor<2x5x5xf32> {
  %s = tc.matmul %q, %k {trans_b = true} : (tensor<2x5x12xf32>, tensor<2x5x12xf32>) -> tensor<2x5x5xf32>
  return %s : tensor<2x5x5xf32>
}
