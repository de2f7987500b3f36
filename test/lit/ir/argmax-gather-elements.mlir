// RUN: trainc-opt %s | FileCheck %s
// RUN: trainc-opt %s | trainc-opt | FileCheck %s

// Round trip of tc.argmax and tc.argmin. The result types were computed by
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
