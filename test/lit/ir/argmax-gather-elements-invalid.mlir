// RUN: trainc-opt %s -split-input-file -verify-diagnostics

// One case per shape-function error of tc.argmax, tc.argmin,
// tc.top_k, tc.gather_elements and tc.gather_elements_backward
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

// -----

func.func @gather_elements_rank(%d: tensor<4x4xf32>, %i: tensor<4xi64>) {
  // expected-error @+2 {{indices have rank 1 but data has rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tc.gather_elements %d, %i {axis = 1 : i64} : (tensor<4x4xf32>, tensor<4xi64>) -> tensor<4xf32>
  return
}

// -----

func.func @gather_elements_longer(%d: tensor<4x4xf32>, %i: tensor<5x2xi64>) {
  // expected-error @+2 {{indices have shape 5x2, longer than data 4x4 on axis 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tc.gather_elements %d, %i {axis = 1 : i64} : (tensor<4x4xf32>, tensor<5x2xi64>) -> tensor<5x2xf32>
  return
}

// -----

func.func @gather_elements_axis(%d: tensor<4x4xf32>, %i: tensor<4x4xi64>) {
  // expected-error @+2 {{axis -1 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tc.gather_elements %d, %i {axis = -1 : i64} : (tensor<4x4xf32>, tensor<4x4xi64>) -> tensor<4x4xf32>
  return
}

// -----

func.func @gather_elements_backward_grad(%dy: tensor<4x3xf32>, %i: tensor<4x2xi64>) {
  // expected-error @+2 {{the result gradient has shape 4x3 but indices have 4x2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tc.gather_elements_backward %dy, %i {axis = 1 : i64, data_shape = array<i64: 4, 4>}
      : (tensor<4x3xf32>, tensor<4x2xi64>) -> tensor<4x4xf32>
  return
}

// -----

func.func @top_k_too_many(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{k = 4 is not within [1, 3] (the axis)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tc.top_k %x {axis = 1 : i64, k = 4 : i64} : (tensor<2x3xf32>) -> tensor<2x4xi64>
  return
}

// -----

func.func @top_k_axis(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{axis -1 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tc.top_k %x {axis = -1 : i64, k = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x1xi64>
  return
}
