// RUN: trainc-opt %s --split-input-file --verify-diagnostics | FileCheck %s

// padding_index on tc.gather and tc.gather_backward round-trips.
// CHECK-LABEL: func.func @padding
// CHECK: tc.gather %{{[^ ]+}}, %{{[^ ]+}} {axis = 0 : i64, padding_index = 3 : i64}
// CHECK: tc.gather_backward %{{[^ ]+}}, %{{[^ ]+}} {axis = 0 : i64, data_shape = array<i64: 7, 4>, padding_index = 3 : i64}
func.func @padding(%t: tensor<7x4xf32>, %i: tensor<2x5xi64>, %dy: tensor<2x5x4xf32>)
    -> (tensor<2x5x4xf32>, tensor<7x4xf32>) {
  %e = tc.gather %t, %i {axis = 0 : i64, padding_index = 3 : i64}
      : (tensor<7x4xf32>, tensor<2x5xi64>) -> tensor<2x5x4xf32>
  %dt = tc.gather_backward %dy, %i {axis = 0 : i64, data_shape = array<i64: 7, 4>, padding_index = 3 : i64}
      : (tensor<2x5x4xf32>, tensor<2x5xi64>) -> tensor<7x4xf32>
  return %e, %dt : tensor<2x5x4xf32>, tensor<7x4xf32>
}

// -----

func.func @negative(%t: tensor<7x4xf32>, %i: tensor<2x5xi64>) -> tensor<2x5x4xf32> {
  // expected-error @+1 {{attribute 'padding_index' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %e = tc.gather %t, %i {axis = 0 : i64, padding_index = -1 : i64}
      : (tensor<7x4xf32>, tensor<2x5xi64>) -> tensor<2x5x4xf32>
  return %e : tensor<2x5x4xf32>
}

// -----

func.func @negative_backward(%dy: tensor<2x5x4xf32>, %i: tensor<2x5xi64>) -> tensor<7x4xf32> {
  // expected-error @+1 {{attribute 'padding_index' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %dt = tc.gather_backward %dy, %i {axis = 0 : i64, data_shape = array<i64: 7, 4>, padding_index = -2 : i64}
      : (tensor<2x5x4xf32>, tensor<2x5xi64>) -> tensor<7x4xf32>
  return %dt : tensor<7x4xf32>
}
