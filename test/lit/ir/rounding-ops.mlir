// RUN: trainc-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// Round trip of tc.sign (float and integer), tc.ceil, tc.floor and tc.round,
// and the element types they refuse: ceil/floor/round are float only, sign
// is numeric (not i1).

// CHECK-LABEL: func.func @rounding
// CHECK: tc.sign %{{.*}} : tensor<2x3xf32>
// CHECK: tc.sign %{{.*}} : tensor<4xi64>
// CHECK: tc.ceil %{{.*}} : tensor<2x3xf32>
// CHECK: tc.floor %{{.*}} : tensor<2x3xf32>
// CHECK: tc.round %{{.*}} : tensor<2x3xf64>
func.func @rounding(%x: tensor<2x3xf32>, %i: tensor<4xi64>, %d: tensor<2x3xf64>)
    -> (tensor<2x3xf32>, tensor<4xi64>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf64>) {
  %0 = tc.sign %x : tensor<2x3xf32>
  %1 = tc.sign %i : tensor<4xi64>
  %2 = tc.ceil %x : tensor<2x3xf32>
  %3 = tc.floor %x : tensor<2x3xf32>
  %4 = tc.round %d : tensor<2x3xf64>
  return %0, %1, %2, %3, %4 : tensor<2x3xf32>, tensor<4xi64>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf64>
}

// -----

func.func @ceil_int(%i: tensor<4xi64>) {
  // expected-error @+1 {{must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values}}
  %0 = tc.ceil %i : tensor<4xi64>
  return
}

// -----

func.func @round_int(%i: tensor<4xi32>) {
  // expected-error @+1 {{must be statically shaped tensor of 32-bit float}}
  %0 = tc.round %i : tensor<4xi32>
  return
}

// -----

func.func @sign_bool(%b: tensor<4xi1>) {
  // expected-error @+1 {{must be statically shaped tensor of}}
  %0 = tc.sign %b : tensor<4xi1>
  return
}
