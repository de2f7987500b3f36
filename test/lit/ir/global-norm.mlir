// RUN: trainc-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// tc.global_norm: the norm of every element of its f32 operands together, a
// tensor<f32>; it round-trips, and an op without operands or with another
// element type is refused.

// CHECK-LABEL: func.func @norm
// CHECK: tc.global_norm %arg0, %arg1 : (tensor<2x3xf32>, tensor<f32>) -> tensor<f32>
func.func @norm(%a: tensor<2x3xf32>, %b: tensor<f32>) -> tensor<f32> {
  %0 = tc.global_norm %a, %b : (tensor<2x3xf32>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @bf16(%a: tensor<4xbf16>) -> tensor<f32> {
  // expected-error @+1 {{operands must be f32, got 'tensor<4xbf16>'}}
  %0 = tc.global_norm %a : (tensor<4xbf16>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @none() -> tensor<f32> {
  // expected-error @+1 {{needs at least one operand}}
  %0 = tc.global_norm : () -> tensor<f32>
  return %0 : tensor<f32>
}
