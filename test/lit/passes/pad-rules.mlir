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

// A chain of 24 residual blocks (relu, then add of the block's input)
// between two products: each add has two paths back to the first
// product's padded output, so the search for a known zero tail visits
// every value once (not 2^24 paths) and reaches 48 ops back: the hidden
// activation stays padded, and only the boundary is copied.
// CHECK-LABEL: func.func @residual_chain(
// CHECK: tc.gemm {{.*}} -> tensor<4x88xf32>
// CHECK-NOT: tc.slice
// CHECK-NOT: tc.pad %{{[0-9]+}} 
// CHECK: %[[W2:.*]] = tc.pad %arg2
// CHECK-NEXT: tc.gemm %{{[0-9]+}}, %[[W2]] {{.*}} : (tensor<4x88xf32>, tensor<16x88xf32>) -> tensor<4x16xf32>
func.func @residual_chain(%x: tensor<4x20xf32>, %w1: tensor<84x20xf32>, %w2: tensor<10x84xf32>) -> tensor<4x10xf32> {
  %s0 = tc.gemm %x, %w1 {trans_b = true} : (tensor<4x20xf32>, tensor<84x20xf32>) -> tensor<4x84xf32>
  %r1 = tc.relu %s0 : tensor<4x84xf32>
  %s1 = tc.add %r1, %s0 : (tensor<4x84xf32>, tensor<4x84xf32>) -> tensor<4x84xf32>
  %r2 = tc.relu %s1 : tensor<4x84xf32>
  %s2 = tc.add %r2, %s1 : (tensor<4x84xf32>, tensor<4x84xf32>) -> tensor<4x84xf32>
  %r3 = tc.relu %s2 : tensor<4x84xf32>
  %s3 = tc.add %r3, %s2 : (tensor<4x84xf32>, tensor<4x84xf32>) -> tensor<4x84xf32>
  %r4 = tc.relu %s3 : tensor<4x84xf32>
  %s4 = tc.add %r4, %s3 : (tensor<4x84xf32>, tensor<4x84xf32>) -> tensor<4x84xf32>
  %r5 = tc.relu %s4 : tensor<4x84xf32>
  %s5 = tc.add %r5, %s4 : (tensor<4x84xf32>, tensor<4x84xf32>) -> tensor<4x84xf32>
  %r6 = tc.relu %s5 : tensor<4x84xf32>
  %s6 = tc.add %r6, %s5 : (tensor<4x84xf32>, tensor<4x84xf32>) -> tensor<4x84xf32>
  %r7 = tc.relu %s6 : tensor<4x84xf32>
  %s7 = tc.add %r7, %s6 : (tensor<4x84xf32>, tensor<4x84xf32>) -> tensor<4x84xf32>
  %r8 = tc.relu %s7 : tensor<4x84xf32>
  %s8 = tc.add %r8, %s7 : (tensor<4x84xf32>, tensor<4x84xf32>) -> tensor<4x84xf32>
  %r9 = tc.relu %s8 : tensor<4x84xf32>
  %s9 = tc.add %r9, %s8 : (tensor<4x84xf32>, tensor<4x84xf32>) -> tensor<4x84xf32>
  %r10 = tc.relu %s9 : tensor<4x84xf32>
  %s10 = tc.add %r10, %s9 : (tensor<4x84xf32>, tensor<4x84xf32>) -> tensor<4x84xf32>
  %r11 = tc.relu %s10 : tensor<4x84xf32>
  %s11 = tc.add %r11, %s10 : (tensor<4x84xf32>, tensor<4x84xf32>) -> tensor<4x84xf32>
  %r12 = tc.relu %s11 : tensor<4x84xf32>
  %s12 = tc.add %r12, %s11 : (tensor<4x84xf32>, tensor<4x84xf32>) -> tensor<4x84xf32>
  %r13 = tc.relu %s12 : tensor<4x84xf32>
  %s13 = tc.add %r13, %s12 : (tensor<4x84xf32>, tensor<4x84xf32>) -> tensor<4x84xf32>
  %r14 = tc.relu %s13 : tensor<4x84xf32>
  %s14 = tc.add %r14, %s13 : (tensor<4x84xf32>, tensor<4x84xf32>) -> tensor<4x84xf32>
  %r15 = tc.relu %s14 : tensor<4x84xf32>
  %s15 = tc.add %r15, %s14 : (tensor<4x84xf32>, tensor<4x84xf32>) -> tensor<4x84xf32>
  %r16 = tc.relu %s15 : tensor<4x84xf32>
  %s16 = tc.add %r16, %s15 : (tensor<4x84xf32>, tensor<4x84xf32>) -> tensor<4x84xf32>
  %r17 = tc.relu %s16 : tensor<4x84xf32>
  %s17 = tc.add %r17, %s16 : (tensor<4x84xf32>, tensor<4x84xf32>) -> tensor<4x84xf32>
  %r18 = tc.relu %s17 : tensor<4x84xf32>
  %s18 = tc.add %r18, %s17 : (tensor<4x84xf32>, tensor<4x84xf32>) -> tensor<4x84xf32>
  %r19 = tc.relu %s18 : tensor<4x84xf32>
  %s19 = tc.add %r19, %s18 : (tensor<4x84xf32>, tensor<4x84xf32>) -> tensor<4x84xf32>
  %r20 = tc.relu %s19 : tensor<4x84xf32>
  %s20 = tc.add %r20, %s19 : (tensor<4x84xf32>, tensor<4x84xf32>) -> tensor<4x84xf32>
  %r21 = tc.relu %s20 : tensor<4x84xf32>
  %s21 = tc.add %r21, %s20 : (tensor<4x84xf32>, tensor<4x84xf32>) -> tensor<4x84xf32>
  %r22 = tc.relu %s21 : tensor<4x84xf32>
  %s22 = tc.add %r22, %s21 : (tensor<4x84xf32>, tensor<4x84xf32>) -> tensor<4x84xf32>
  %r23 = tc.relu %s22 : tensor<4x84xf32>
  %s23 = tc.add %r23, %s22 : (tensor<4x84xf32>, tensor<4x84xf32>) -> tensor<4x84xf32>
  %r24 = tc.relu %s23 : tensor<4x84xf32>
  %s24 = tc.add %r24, %s23 : (tensor<4x84xf32>, tensor<4x84xf32>) -> tensor<4x84xf32>
  %y = tc.gemm %s24, %w2 {trans_b = true} : (tensor<4x84xf32>, tensor<10x84xf32>) -> tensor<4x10xf32>
  return %y : tensor<4x10xf32>
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
