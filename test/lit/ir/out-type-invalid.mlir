// RUN: trainc-opt %s -split-input-file -verify-diagnostics

// What the verifier refuses about out_type, the f32 result of a
// low-precision tc.matmul / tc.gemm / reduction.

func.func @f32_operands(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) {
  // expected-error @+2 {{out_type 'f32' needs f16 or bf16 operands, got 'f32'}}
  // expected-error @+1 {{'tc.matmul' op failed to infer returned types}}
  %0 = tc.matmul %a, %b {out_type = f32} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @c_type(%a: tensor<2x3xbf16>, %b: tensor<3x4xbf16>, %c: tensor<4xbf16>) {
  // expected-error @+2 {{C has element type 'bf16' but the result has 'f32'}}
  // expected-error @+1 {{'tc.gemm' op failed to infer returned types}}
  %0 = tc.gemm %a, %b, %c {out_type = f32} : (tensor<2x3xbf16>, tensor<3x4xbf16>, tensor<4xbf16>) -> tensor<2x4xf32>
  return
}

// -----

func.func @not_f32(%a: tensor<2x3xbf16>, %b: tensor<3x4xbf16>) {
  // expected-error @+1 {{attribute 'out_type' failed to satisfy constraint: type attribute of 32-bit float}}
  %0 = tc.matmul %a, %b {out_type = f16} : (tensor<2x3xbf16>, tensor<3x4xbf16>) -> tensor<2x4xf16>
  return
}

// -----

func.func @mixed_operands(%a: tensor<2x3xbf16>, %b: tensor<3x4xf32>) {
  // expected-error @+2 {{the right operand has element type 'f32' but the left operand has 'bf16'}}
  // expected-error @+1 {{'tc.matmul' op failed to infer returned types}}
  %0 = tc.matmul %a, %b {out_type = f32} : (tensor<2x3xbf16>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @reduce_f32_input(%a: tensor<2x3xf32>) {
  // expected-error @+2 {{out_type 'f32' needs f16 or bf16 operands, got 'f32'}}
  // expected-error @+1 {{'tc.reduce_sum' op failed to infer returned types}}
  %0 = tc.reduce_sum %a {axes = array<i64: 1>, keepdims = false, out_type = f32} : (tensor<2x3xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @reduce_not_f32(%a: tensor<2x3xbf16>) {
  // expected-error @+1 {{attribute 'out_type' failed to satisfy constraint: type attribute of 32-bit float}}
  %0 = tc.reduce_mean %a {axes = array<i64: 1>, keepdims = false, out_type = f16} : (tensor<2x3xbf16>) -> tensor<2xf16>
  return
}
