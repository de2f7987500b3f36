// RUN: trainc-opt %s | FileCheck %s
// RUN: trainc-opt %s | trainc-opt | FileCheck %s

// Round trip of tc.argmax, tc.argmin, tc.gather_elements and
// tc.gather_elements_backward. The result types were computed by
// hand; the verifier checks each against the op's shape function.

// CHECK-LABEL: func.func @arg
// CHECK: tc.argmax %{{.*}} {axis = 1 : i64, keepdims = false} : (tensor<2x7xi32>) -> tensor<2xi64>
// CHECK: tc.argmin %{{.*}} {axis = 0 : i64, select_last_index = true} : (tensor<3x4xf32>) -> tensor<1x4xi64>
// CHECK: tc.argmax %{{.*}} {axis = 2 : i64} : (tensor<2x3x5xi64>) -> tensor<2x3x1xi64>
func.func @arg(%ids: tensor<2x7xi32>, %x: tensor<3x4xf32>, %l: tensor<2x3x5xi64>)
    -> (tensor<2xi64>, tensor<1x4xi64>, tensor<2x3x1xi64>) {
  %0 = tc.argmax %ids {axis = 1 : i64, keepdims = false} : (tensor<2x7xi32>) -> tensor<2xi64>
  %1 = tc.argmin %x {axis = 0 : i64, select_last_index = true} : (tensor<3x4xf32>) -> tensor<1x4xi64>
  %2 = tc.argmax %l {axis = 2 : i64} : (tensor<2x3x5xi64>) -> tensor<2x3x1xi64>
  return %0, %1, %2 : tensor<2xi64>, tensor<1x4xi64>, tensor<2x3x1xi64>
}

// GatherElements of [2, 4, 8] scores along axis 2 by [2, 4, 4] indices (the
// result has their shape), and its gradient back to [2, 4, 8].
// CHECK-LABEL: func.func @gather_elements
// CHECK: tc.gather_elements %{{.*}}, %{{.*}} {axis = 2 : i64} : (tensor<2x4x8xf32>, tensor<2x4x4xi64>) -> tensor<2x4x4xf32>
// CHECK: tc.gather_elements %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<3x2xi64>, tensor<5x1xi32>) -> tensor<5x1xi64>
// CHECK: tc.gather_elements_backward %{{.*}}, %{{.*}} {axis = 2 : i64, data_shape = array<i64: 2, 4, 8>} : (tensor<2x4x4xf32>, tensor<2x4x4xi64>) -> tensor<2x4x8xf32>
func.func @gather_elements(%s: tensor<2x4x8xf32>, %i: tensor<2x4x4xi64>, %t: tensor<3x2xi64>,
                           %j: tensor<5x1xi32>, %dy: tensor<2x4x4xf32>)
    -> (tensor<2x4x4xf32>, tensor<5x1xi64>, tensor<2x4x8xf32>) {
  %0 = tc.gather_elements %s, %i {axis = 2 : i64} : (tensor<2x4x8xf32>, tensor<2x4x4xi64>) -> tensor<2x4x4xf32>
  %1 = tc.gather_elements %t, %j {axis = 0 : i64} : (tensor<3x2xi64>, tensor<5x1xi32>) -> tensor<5x1xi64>
  %2 = tc.gather_elements_backward %dy, %i {axis = 2 : i64, data_shape = array<i64: 2, 4, 8>}
      : (tensor<2x4x4xf32>, tensor<2x4x4xi64>) -> tensor<2x4x8xf32>
  return %0, %1, %2 : tensor<2x4x4xf32>, tensor<5x1xi64>, tensor<2x4x8xf32>
}
