// RUN: trainc-opt %s -split-input-file -verify-diagnostics

// What the verifier refuses about tc.matmul's trans_a / trans_b flags: a
// 1-D operand has no second axis to swap, and the contraction is checked on
// the operands as the flags transpose them.

func.func @trans_a_vector(%a: tensor<4xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+2 {{trans_a needs an operand of rank >= 2, got 4}}
  // expected-error @+1 {{'tc.matmul' op failed to infer returned types}}
  %0 = tc.matmul %a, %b {trans_a = true} : (tensor<4xf32>, tensor<4x5xf32>) -> tensor<5xf32>
  return
}

// -----

func.func @trans_b_vector(%a: tensor<3x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{trans_b needs an operand of rank >= 2, got 4}}
  // expected-error @+1 {{'tc.matmul' op failed to infer returned types}}
  %0 = tc.matmul %a, %b {trans_b = true} : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3xf32>
  return
}

// -----

// Without the flag this product is fine; with trans_b it contracts 4 with 5.
func.func @trans_b_contraction(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+2 {{contraction dimensions differ: 3x4 times 5x4 (operands as transposed by trans_a/trans_b)}}
  // expected-error @+1 {{'tc.matmul' op failed to infer returned types}}
  %0 = tc.matmul %a, %b {trans_b = true} : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  return
}

// -----

// The declared result must be the transposed product's: [2, 5, 3], not [2, 3, 5].
func.func @trans_a_result(%a: tensor<2x3x5xf32>, %b: tensor<2x3x7xf32>) {
  // expected-error @+2 {{'tc.matmul' op inferred type(s) 'tensor<2x5x7xf32>' are incompatible with return type(s) of operation 'tensor<2x3x7xf32>'}}
  // expected-error @+1 {{'tc.matmul' op failed to infer returned types}}
  %0 = tc.matmul %a, %b {trans_a = true} : (tensor<2x3x5xf32>, tensor<2x3x7xf32>) -> tensor<2x3x7xf32>
  return
}

// -----

func.func @trans_not_bool(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+1 {{'tc.matmul' op attribute 'trans_a' failed to satisfy constraint: bool attribute}}
  %0 = tc.matmul %a, %b {trans_a = 1 : i64} : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  return
}
