// RUN: trainc-opt %s -split-input-file -verify-diagnostics

// One case per shape-function error of tc.argmax and tc.argmin
// (ir/TcOpsIndexing.cpp).

func.func @argmax_axis(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tc.argmax %x {axis = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x1xi64>
  return
}

// -----

func.func @argmin_empty_axis(%x: tensor<2x0xf32>) {
  // expected-error @+2 {{axis 1 is empty}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tc.argmin %x {axis = 1 : i64} : (tensor<2x0xf32>) -> tensor<2x1xi64>
  return
}

// -----

func.func @argmax_result(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'tc.argmax' op inferred type(s) 'tensor<2xi64>' are incompatible with return type(s) of operation 'tensor<2x1xi64>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tc.argmax %x {axis = 1 : i64, keepdims = false} : (tensor<2x3xf32>) -> tensor<2x1xi64>
  return
}

// -----

func.func @argmax_bool(%x: tensor<2x3xi1>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of}}
  %0 = tc.argmax %x {axis = 1 : i64} : (tensor<2x3xi1>) -> tensor<2x1xi64>
  return
}
