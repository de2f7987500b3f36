// RUN: trainc-opt %s --trainc-fuse --split-input-file | FileCheck %s
// RUN: trainc-opt %s --trainc-fuse=epilogues=false --split-input-file | FileCheck %s --check-prefix=OFF

// A linear layer: the matmul heads the bias + relu group, whose inputs are
// the bias, then the GEMM's operands. The product is not a result.
// CHECK-LABEL: func.func @linear_relu
// CHECK: %[[G:.*]] = tc.fused "matmul_add_relu"(%arg2, %arg0, %arg1) : (tensor<64xf32>, tensor<8x32xf32>, tensor<32x64xf32>) -> tensor<8x64xf32> {
// CHECK-NEXT: ^bb0(%[[B:.*]]: tensor<64xf32>, %[[X:.*]]: tensor<8x32xf32>, %[[W:.*]]: tensor<32x64xf32>):
// CHECK-NEXT: %[[P:.*]] = tc.matmul %[[X]], %[[W]]
// CHECK-NEXT: %[[S:.*]] = tc.add %[[P]], %[[B]]
// CHECK-NEXT: %[[R:.*]] = tc.relu %[[S]]
// CHECK-NEXT: tc.yield %[[R]] : tensor<8x64xf32>
// CHECK-NOT: tc.matmul
// CHECK: return %[[G]]
// OFF-LABEL: func.func @linear_relu
// OFF: tc.matmul
// OFF: tc.fused "add_relu"
func.func @linear_relu(%x: tensor<8x32xf32>, %w: tensor<32x64xf32>, %b: tensor<64xf32>) -> tensor<8x64xf32> {
  %0 = tc.matmul %x, %w : (tensor<8x32xf32>, tensor<32x64xf32>) -> tensor<8x64xf32>
  %1 = tc.add %0, %b : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32>
  %2 = tc.relu %1 : tensor<8x64xf32>
  return %2 : tensor<8x64xf32>
}

// -----

// ONNX Gemm (alpha 1, beta 1, bias C) heads the relu after it; the GEMM
// call adds C. A lone Gemm stays a library op.
// CHECK-LABEL: func.func @gemm_bias
// CHECK: tc.fused "gemm_relu"(%arg0, %arg1, %arg2)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tc.gemm %{{.*}}, %{{.*}}, %{{.*}} {trans_b = true}
// CHECK-NEXT: tc.relu
// CHECK: %[[L:.*]] = tc.gemm
// CHECK: return %{{.*}}, %[[L]]
// OFF-LABEL: func.func @gemm_bias
// OFF-NOT: tc.fused
func.func @gemm_bias(%x: tensor<8x32xf32>, %w: tensor<64x32xf32>, %b: tensor<64xf32>) -> (tensor<8x64xf32>, tensor<8x64xf32>) {
  %0 = tc.gemm %x, %w, %b {trans_b = true} : (tensor<8x32xf32>, tensor<64x32xf32>, tensor<64xf32>) -> tensor<8x64xf32>
  %1 = tc.relu %0 : tensor<8x64xf32>
  %2 = tc.gemm %x, %w, %b {trans_b = true} : (tensor<8x32xf32>, tensor<64x32xf32>, tensor<64xf32>) -> tensor<8x64xf32>
  return %1, %2 : tensor<8x64xf32>, tensor<8x64xf32>
}

// -----

// Backward: the input gradient of a linear layer summed with the gradient
// that reaches the same value along a residual path: accumulation into the
// GEMM's output (cuBLASLt beta = 1).
// CHECK-LABEL: func.func @gradient_sum
// CHECK: tc.fused "matmul_add"(%arg2, %arg0, %arg1) : (tensor<2x16x32xf32>, tensor<2x16x64xf32>, tensor<32x64xf32>) -> tensor<2x16x32xf32>
// CHECK: tc.matmul %{{.*}}, %{{.*}} {trans_b = true} : (tensor<2x16x64xf32>, tensor<32x64xf32>) -> tensor<2x16x32xf32>
func.func @gradient_sum(%dy: tensor<2x16x64xf32>, %w: tensor<32x64xf32>, %g: tensor<2x16x32xf32>) -> tensor<2x16x32xf32> {
  %0 = tc.matmul %dy, %w {trans_b = true} : (tensor<2x16x64xf32>, tensor<32x64xf32>) -> tensor<2x16x32xf32>
  %1 = tc.add %g, %0 : (tensor<2x16x32xf32>, tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
  return %1 : tensor<2x16x32xf32>
}

// -----

// Must not fire: the product is also returned (saved for the backward), so
// it needs its own buffer; the add stays a lone kernel.
// CHECK-LABEL: func.func @product_saved
// CHECK: %[[P:.*]] = tc.matmul
// CHECK-NOT: tc.fused
// CHECK: tc.add %[[P]]
// CHECK: return
func.func @product_saved(%x: tensor<8x32xf32>, %w: tensor<32x64xf32>, %b: tensor<64xf32>) -> (tensor<8x64xf32>, tensor<8x64xf32>) {
  %0 = tc.matmul %x, %w : (tensor<8x32xf32>, tensor<32x64xf32>) -> tensor<8x64xf32>
  %1 = tc.add %0, %b : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32>
  return %1, %0 : tensor<8x64xf32>, tensor<8x64xf32>
}

// -----

// Two products one group reads (a - b of two linear layers): the first
// heads it, the second stays a library call whose value is an input.
// CHECK-LABEL: func.func @two_products
// CHECK: %[[P2:.*]] = tc.matmul %arg0, %arg2
// CHECK: tc.fused "matmul_sub"(%[[P2]], %arg0, %arg1)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tc.matmul
// CHECK-NEXT: tc.sub
func.func @two_products(%x: tensor<8x32xf32>, %w: tensor<32x64xf32>, %w2: tensor<32x64xf32>) -> tensor<8x64xf32> {
  %0 = tc.matmul %x, %w : (tensor<8x32xf32>, tensor<32x64xf32>) -> tensor<8x64xf32>
  %1 = tc.matmul %x, %w2 : (tensor<8x32xf32>, tensor<32x64xf32>) -> tensor<8x64xf32>
  %2 = tc.sub %0, %1 : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  return %2 : tensor<8x64xf32>
}

// -----

// Must not fire: two groups (of two shapes) read the product; a product
// broadcast into a larger group ([1,64] into [8,64]); a product only a
// library op reads; a group with no f32 result to compute in; a scaled ONNX
// Gemm (alpha 0.5).
// CHECK-LABEL: func.func @no_epilogue
// CHECK-COUNT-4: tc.matmul
// CHECK: tc.gemm
// CHECK-NOT: "matmul_
func.func @no_epilogue(%x: tensor<8x32xf32>, %w: tensor<32x64xf32>, %r: tensor<1x32xf32>,
                       %y: tensor<8x64xf32>, %w2: tensor<64x32xf32>, %z: tensor<8x64xf32>,
                       %t: tensor<2x8x64xf32>)
    -> (tensor<8x64xf32>, tensor<2x8x64xf32>, tensor<8x64xf32>, tensor<64xf32>, tensor<8x64xi1>, tensor<8x64xf32>) {
  %0 = tc.matmul %x, %w : (tensor<8x32xf32>, tensor<32x64xf32>) -> tensor<8x64xf32>
  %1 = tc.exp %0 : tensor<8x64xf32>
  %2 = tc.add %0, %t : (tensor<8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  %3 = tc.matmul %r, %w : (tensor<1x32xf32>, tensor<32x64xf32>) -> tensor<1x64xf32>
  %4 = tc.add %y, %3 : (tensor<8x64xf32>, tensor<1x64xf32>) -> tensor<8x64xf32>
  %5 = tc.matmul %x, %w : (tensor<8x32xf32>, tensor<32x64xf32>) -> tensor<8x64xf32>
  %6 = tc.reduce_sum %5 {axes = array<i64: 0>, keepdims = false} : (tensor<8x64xf32>) -> tensor<64xf32>
  %7 = tc.matmul %x, %w : (tensor<8x32xf32>, tensor<32x64xf32>) -> tensor<8x64xf32>
  %8 = tc.greater %7, %z : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xi1>
  %9 = tc.gemm %x, %w2 {alpha = 5.000000e-01 : f32, trans_b = true} : (tensor<8x32xf32>, tensor<64x32xf32>) -> tensor<8x64xf32>
  return %1, %2, %4, %6, %8, %9 : tensor<8x64xf32>, tensor<2x8x64xf32>, tensor<8x64xf32>, tensor<64xf32>, tensor<8x64xi1>, tensor<8x64xf32>
}
