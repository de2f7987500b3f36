// RUN: trainc-opt %s -split-input-file -verify-diagnostics

// What the verifier refuses about a tc.fused group headed by a matmul (a
// GEMM and its epilogue): the product is computed in a yielded f32 result,
// so it cannot be yielded itself, a group without an f32 result has nowhere
// to compute it, and it must have the group's iteration shape.

func.func @product_yielded(%x: tensor<8x32xf32>, %w: tensor<32x64xf32>) -> tensor<8x64xf32> {
  %0:2 = tc.fused "matmul_relu" (%x, %w) : (tensor<8x32xf32>, tensor<32x64xf32>) -> (tensor<8x64xf32>, tensor<8x64xf32>) {
  ^bb0(%a: tensor<8x32xf32>, %b: tensor<32x64xf32>):
    // expected-error @+1 {{heading a tc.fused group is not one of its results}}
    %p = tc.matmul %a, %b : (tensor<8x32xf32>, tensor<32x64xf32>) -> tensor<8x64xf32>
    %r = tc.relu %p : tensor<8x64xf32>
    tc.yield %r, %p : tensor<8x64xf32>, tensor<8x64xf32>
  }
  return %0#0 : tensor<8x64xf32>
}

// -----

func.func @no_f32_result(%x: tensor<8x32xf32>, %w: tensor<32x64xf32>, %y: tensor<8x64xf32>) -> tensor<8x64xi1> {
  %0 = tc.fused "matmul_greater" (%x, %w, %y) : (tensor<8x32xf32>, tensor<32x64xf32>, tensor<8x64xf32>) -> tensor<8x64xi1> {
  ^bb0(%a: tensor<8x32xf32>, %b: tensor<32x64xf32>, %c: tensor<8x64xf32>):
    // expected-error @+1 {{heads a tc.fused group without an f32 result to compute in}}
    %p = tc.matmul %a, %b : (tensor<8x32xf32>, tensor<32x64xf32>) -> tensor<8x64xf32>
    %g = tc.greater %p, %c : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xi1>
    tc.yield %g : tensor<8x64xi1>
  }
  return %0 : tensor<8x64xi1>
}

// -----

func.func @broadcast_product(%r: tensor<1x32xf32>, %w: tensor<32x64xf32>, %y: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %0 = tc.fused "matmul_add" (%r, %w, %y) : (tensor<1x32xf32>, tensor<32x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32> {
  ^bb0(%a: tensor<1x32xf32>, %b: tensor<32x64xf32>, %c: tensor<8x64xf32>):
    // expected-error @+1 {{heading a tc.fused group computes 'tensor<1x64xf32>', not the group's iteration shape}}
    %p = tc.matmul %a, %b : (tensor<1x32xf32>, tensor<32x64xf32>) -> tensor<1x64xf32>
    %s = tc.add %c, %p : (tensor<8x64xf32>, tensor<1x64xf32>) -> tensor<8x64xf32>
    tc.yield %s : tensor<8x64xf32>
  }
  return %0 : tensor<8x64xf32>
}

// -----

func.func @matmul_not_first(%x: tensor<8x64xf32>, %w: tensor<64x64xf32>) -> tensor<8x64xf32> {
  %0 = tc.fused "relu_matmul" (%x, %w) : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32> {
  ^bb0(%a: tensor<8x64xf32>, %b: tensor<64x64xf32>):
    %r = tc.relu %a : tensor<8x64xf32>
    // expected-error @+1 {{cannot be part of a tc.fused group (not pointwise)}}
    %p = tc.matmul %r, %b : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
    tc.yield %p : tensor<8x64xf32>
  }
  return %0 : tensor<8x64xf32>
}
